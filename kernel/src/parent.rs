//! The kernel ends when the process that started it is gone, as ipykernel's parent poller
//! does: a client killed without a shutdown request (`kill -9`, a crash) must not leave an
//! orphaned kernel computing for nobody.
//!
//! Two signs, checked twice a second: the kernel's parent process changed (the parent died
//! and the kernel was re-parented), or the process that `JPY_PARENT_PID` names (jupyter_client
//! sets it when it launches a kernel) no longer exists. The messaging protocol does not ask a
//! kernel to stop when heartbeats stop (ipykernel does not), so dx does not either.

use std::time::Duration;

/// How often the parent is looked at.
const POLL: Duration = Duration::from_millis(500);

/// Returns when the parent process is gone; never, where processes cannot be watched.
pub async fn gone() {
    let Some(watch) = Watch::start() else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(POLL).await;
        if !watch.parent_alive() {
            return;
        }
    }
}

/// What is known about the parent when the kernel starts.
struct Watch {
    /// The parent process id at start.
    parent: u32,
    /// The process jupyter_client says launched the kernel.
    launcher: Option<u32>,
}

impl Watch {
    #[cfg(unix)]
    fn start() -> Option<Watch> {
        let launcher = std::env::var("JPY_PARENT_PID")
            .ok()
            .and_then(|pid| pid.trim().parse().ok())
            .filter(|&pid: &u32| pid > 1);
        Some(Watch {
            parent: std::os::unix::process::parent_id(),
            launcher,
        })
    }

    #[cfg(not(unix))]
    fn start() -> Option<Watch> {
        None
    }

    #[cfg(unix)]
    fn parent_alive(&self) -> bool {
        if std::os::unix::process::parent_id() != self.parent {
            return false;
        }
        // `/proc` answers without signalling; where it is absent only the re-parenting counts.
        let proc = std::path::Path::new("/proc");
        match self.launcher {
            Some(pid) if proc.join("self").exists() => proc.join(pid.to_string()).exists(),
            _ => true,
        }
    }

    #[cfg(not(unix))]
    fn parent_alive(&self) -> bool {
        true
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_live_parent_is_alive_and_a_missing_launcher_is_not() {
        let parent = std::os::unix::process::parent_id();
        let alive = Watch {
            parent,
            launcher: Some(parent),
        };
        assert!(alive.parent_alive());
        // A process id above the kernel's maximum never names a process.
        let missing = Watch {
            parent,
            launcher: Some(u32::MAX - 1),
        };
        assert!(!missing.parent_alive());
        let reparented = Watch {
            parent: parent + 1,
            launcher: None,
        };
        assert!(!reparented.parent_alive());
    }
}

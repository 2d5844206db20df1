//! The thread that owns the session. Requests are closures run on it in order; the async side
//! awaits their results, so the control channel (interrupt, shutdown) stays responsive while a
//! cell runs. The session's interrupt flag is shared with the control channel.

use std::sync::mpsc;

use std::sync::Arc;

use dx_lang::exec::progress::Progress;
use dx_lang::session::{InterruptFlag, Output, Session, SessionConfig};

/// Stack size of the session's thread: deeply nested programs recurse deeply in the compiler.
const SESSION_STACK_BYTES: usize = 256 << 20;

type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// A handle on the session's thread.
pub struct Worker {
    jobs: mpsc::Sender<Job>,
    interrupt: InterruptFlag,
    progress: Arc<Progress>,
}

impl Worker {
    /// Starts the thread and the session on it; returns what loading the prelude reported.
    pub fn spawn(config: SessionConfig) -> std::io::Result<(Worker, Vec<Output>)> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("dx-session".into())
            .stack_size(SESSION_STACK_BYTES)
            .spawn(move || {
                let mut session = Session::new(config);
                let startup = session.startup_outputs().to_vec();
                let handles = (session.interrupt_flag(), session.progress(), startup);
                if ready_tx.send(handles).is_err() {
                    return;
                }
                for job in job_rx {
                    job(&mut session);
                }
            })?;
        let (interrupt, progress, startup) = ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("the session did not start"))?;
        let worker = Worker {
            jobs,
            interrupt,
            progress,
        };
        Ok((worker, startup))
    }

    /// The flag that stops the running cell at its next check.
    pub fn interrupt_flag(&self) -> InterruptFlag {
        self.interrupt.clone()
    }

    /// How far the running block has got.
    pub fn progress(&self) -> Arc<Progress> {
        self.progress.clone()
    }

    /// Runs `job` on the session's thread and waits for its result; `None` if the job
    /// panicked (the session catches its own failures: this is the last resort) or the thread
    /// is gone.
    pub async fn run<T, F>(&self, job: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Session) -> T + Send + 'static,
    {
        let (res_tx, res_rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |session| {
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(session)));
            let _ = res_tx.send(res.ok());
        });
        self.jobs.send(job).ok()?;
        res_rx.await.ok().flatten()
    }
}

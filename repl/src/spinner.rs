//! A spinner on stderr for work that takes more than about a second: a braille wheel, what is
//! running and the elapsed time, redrawn ten times a second on one line and cleared when the
//! work ends. It draws only when stderr is a terminal, so piped output never contains it.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Work shorter than this shows no spinner.
const DELAY: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(100);
const FRAMES: [char; 8] = ['⣾', '⣽', '⣻', '⢿', '⡿', '⣟', '⣯', '⣷'];

pub struct Spinner {
    enabled: bool,
    running: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Spinner {
    /// A spinner that draws when stderr is a terminal.
    pub fn new() -> Spinner {
        Spinner {
            enabled: std::io::stderr().is_terminal(),
            running: None,
        }
    }

    /// Starts spinning for `label` (after `DELAY`); stops the previous spin first.
    pub fn start(&mut self, label: String) {
        self.stop();
        if !self.enabled {
            return;
        }
        let done = Arc::new(AtomicBool::new(false));
        let done_in_thread = done.clone();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("dx-spinner".into())
            .spawn(move || spin(&label, started, &done_in_thread));
        if let Ok(thread) = thread {
            self.running = Some((done, thread));
        }
    }

    /// Stops spinning and clears the spinner's line.
    pub fn stop(&mut self) {
        if let Some((done, thread)) = self.running.take() {
            done.store(true, Ordering::SeqCst);
            let _ = thread.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spin(label: &str, started: Instant, done: &AtomicBool) {
    let mut drawn = false;
    let mut frame = 0;
    while !done.load(Ordering::SeqCst) {
        let elapsed = started.elapsed();
        if elapsed >= DELAY {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(
                stderr,
                "\r\x1b[2K{} {label} {:.1} s",
                FRAMES[frame % FRAMES.len()],
                elapsed.as_secs_f64()
            );
            let _ = stderr.flush();
            drawn = true;
            frame += 1;
        }
        std::thread::sleep(TICK);
    }
    if drawn {
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K");
        let _ = stderr.flush();
    }
}

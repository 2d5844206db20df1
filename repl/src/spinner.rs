//! Progress of work that takes more than about a second, on stderr (indicatif): what is
//! running and the elapsed time, and a bar where the engine knows how far it has got (the
//! iterations of the outermost sequential loop, else the steps of the schedule). Redrawn ten
//! times a second and cleared when the work ends. It draws only when stderr is a terminal,
//! so piped output never contains it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dx_lang::exec::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Work shorter than this shows nothing.
const DELAY: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(100);

pub struct Spinner {
    enabled: bool,
    progress: Arc<Progress>,
    running: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Spinner {
    /// Progress of the session that `progress` belongs to, drawn when stderr is a terminal.
    pub fn new(progress: Arc<Progress>) -> Spinner {
        Spinner {
            enabled: std::io::stderr().is_terminal(),
            progress,
            running: None,
        }
    }

    /// Starts showing `label` (after `DELAY`); stops the previous one first.
    pub fn start(&mut self, label: String) {
        self.stop();
        if !self.enabled {
            return;
        }
        let done = Arc::new(AtomicBool::new(false));
        let done_in_thread = done.clone();
        let progress = self.progress.clone();
        let thread = std::thread::Builder::new()
            .name("dx-progress".into())
            .spawn(move || show(&label, &progress, &done_in_thread));
        if let Ok(thread) = thread {
            self.running = Some((done, thread));
        }
    }

    /// Stops and clears the line.
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

fn show(label: &str, progress: &Progress, done: &AtomicBool) {
    let started = Instant::now();
    while started.elapsed() < DELAY {
        if done.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(TICK);
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_message(label.to_string());
    bar.enable_steady_tick(TICK);
    let spinning = ProgressStyle::with_template("{spinner} {msg} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let counting =
        ProgressStyle::with_template("{spinner} {msg} {elapsed} [{bar:30}] {pos}/{len} {prefix}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(spinning.clone());
    let mut counted = false;
    while !done.load(Ordering::SeqCst) {
        match progress.snapshot().bar() {
            Some((position, total, unit)) => {
                if !counted {
                    bar.set_style(counting.clone());
                    counted = true;
                }
                bar.set_length(total);
                bar.set_position(position);
                bar.set_prefix(unit);
            }
            None if counted => {
                bar.set_style(spinning.clone());
                counted = false;
            }
            None => {}
        }
        std::thread::sleep(TICK);
    }
    bar.finish_and_clear();
}

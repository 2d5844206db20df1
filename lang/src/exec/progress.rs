//! How far a run has got, for front-ends that show progress while a block runs: the steps of
//! the schedule done so far (the fused engine) and the iterations of the outermost sequential
//! loop running now (a `fold` or `scan` on the bulk evaluator or in a schedule's loop step).
//! The engine writes it with relaxed atomic stores; a front-end's thread reads it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of a run; zero totals mean "not known".
#[derive(Debug, Default)]
pub struct Progress {
    steps_done: AtomicU64,
    steps_total: AtomicU64,
    loop_done: AtomicU64,
    loop_total: AtomicU64,
    /// Loops entered and not left: only the outermost one counts.
    loop_depth: AtomicU64,
}

/// A snapshot: `(done, total)` of the schedule's steps and of the outermost loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub steps: Option<(u64, u64)>,
    pub loop_iterations: Option<(u64, u64)>,
}

impl Snapshot {
    /// What a progress bar shows: `(done, total, unit)`, the outermost loop's iterations
    /// when one runs, else the schedule's steps; `None` when neither is known.
    pub fn bar(&self) -> Option<(u64, u64, &'static str)> {
        match (self.loop_iterations, self.steps) {
            (Some((done, total)), _) => Some((done, total, "loop steps")),
            (None, Some((done, total))) => Some((done, total, "schedule steps")),
            (None, None) => None,
        }
    }
}

impl Progress {
    /// Forgets the last run (a new block starts).
    pub fn reset(&self) {
        for counter in [
            &self.steps_done,
            &self.steps_total,
            &self.loop_done,
            &self.loop_total,
            &self.loop_depth,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let pair = |done: &AtomicU64, total: &AtomicU64| {
            let total = total.load(Ordering::Relaxed);
            (total > 0).then(|| (done.load(Ordering::Relaxed).min(total), total))
        };
        Snapshot {
            steps: pair(&self.steps_done, &self.steps_total),
            loop_iterations: pair(&self.loop_done, &self.loop_total),
        }
    }

    /// A schedule of `total` steps starts.
    pub(crate) fn schedule(&self, total: usize) {
        self.steps_total.store(total as u64, Ordering::Relaxed);
        self.steps_done.store(0, Ordering::Relaxed);
    }

    pub(crate) fn step_done(&self, done: usize) {
        self.steps_done.store(done as u64, Ordering::Relaxed);
    }

    /// A loop of `total` iterations starts; returns whether it is the outermost one (which
    /// then reports its iterations and must call `leave_loop`; inner ones too).
    pub(crate) fn enter_loop(&self, total: usize) -> bool {
        let outermost = self.loop_depth.fetch_add(1, Ordering::Relaxed) == 0;
        if outermost {
            self.loop_total.store(total as u64, Ordering::Relaxed);
            self.loop_done.store(0, Ordering::Relaxed);
        }
        outermost
    }

    pub(crate) fn iteration(&self, done: usize) {
        self.loop_done.store(done as u64, Ordering::Relaxed);
    }

    pub(crate) fn leave_loop(&self, outermost: bool) {
        self.loop_depth.fetch_sub(1, Ordering::Relaxed);
        if outermost {
            self.loop_total.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_outermost_loop_counts() {
        let progress = Progress::default();
        assert_eq!(progress.snapshot(), Snapshot::default());
        progress.schedule(4);
        progress.step_done(1);
        let outer = progress.enter_loop(100);
        progress.iteration(10);
        // An inner loop does not report its iterations (`Exec::loop_iteration` asks
        // `enter_loop` first) and leaving it keeps the outer loop's total.
        let inner = progress.enter_loop(7);
        progress.leave_loop(inner);
        assert!(outer && !inner);
        assert_eq!(progress.snapshot().steps, Some((1, 4)));
        assert_eq!(progress.snapshot().loop_iterations, Some((10, 100)));
        assert_eq!(progress.snapshot().bar(), Some((10, 100, "loop steps")));
        progress.leave_loop(outer);
        assert_eq!(progress.snapshot().loop_iterations, None);
        progress.reset();
        assert_eq!(progress.snapshot(), Snapshot::default());
    }
}

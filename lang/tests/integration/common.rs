//! Set-up shared by the integration tests that drive a `Session`.

use std::sync::atomic::Ordering;
use std::time::Duration;

use dx_lang::core::ir::{Expr, Program};
use dx_lang::core::visit::reachable_blocks;
use dx_lang::ops::testgen;
use dx_lang::session::{Engine, Output, Session, SessionConfig};

/// A session with the prelude, running on `engine`.
pub fn session(engine: Engine) -> Session {
    Session::new(SessionConfig {
        engine,
        ..SessionConfig::default()
    })
}

/// Every output of a source, in order.
pub fn outputs(session: &mut Session, src: &str) -> Vec<Output> {
    session
        .eval_source(src)
        .into_iter()
        .flat_map(|chunk| chunk.outputs)
        .collect()
}

/// Every output of a source whose evaluation is interrupted (as by Ctrl-C) after `delay`.
pub fn outputs_interrupted_after(session: &mut Session, delay: Duration, src: &str) -> Vec<Output> {
    let flag = session.interrupt_flag();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(delay);
        flag.store(true, Ordering::Relaxed);
    });
    let got = outputs(session, src);
    stopper.join().unwrap();
    got
}

/// The printed text of the last output of a source, which must be a value (a table's text
/// form included).
pub fn value(session: &mut Session, src: &str) -> String {
    let got = outputs(session, src);
    match got.last() {
        Some(Output::Value(text) | Output::Table { text, .. }) => text.clone(),
        other => panic!("expected a value from {src:?}, got {other:?} (all: {got:?})"),
    }
}

/// The last output of a source, which must be an error, rendered with its carets.
pub fn error(session: &mut Session, src: &str) -> String {
    let got = outputs(session, src);
    match got.last() {
        Some(output @ Output::Error(_)) => dx_lang::display::render_output(output, src),
        other => panic!("expected an error from {src:?}, got {other:?} (all: {got:?})"),
    }
}

/// Each source ends in an error whose rendering contains its text and shows carets.
pub fn assert_errors(session: &mut Session, cases: &[(&str, &str)]) {
    for (src, expected) in cases {
        let text = error(session, src);
        assert!(text.contains(expected), "{src}: {text}");
        assert!(text.contains('^'), "{src}: no carets in {text}");
    }
}

/// The last output of a source as text (a value, a type, help…), which must not be an error.
pub fn printed(session: &mut Session, src: &str) -> String {
    let got = outputs(session, src);
    match got.last() {
        Some(Output::Error(diag)) => panic!("{src:?} failed: {diag:?}"),
        Some(output) => dx_lang::display::render_output(output, src),
        None => panic!("no output from {src:?}"),
    }
}

/// `work` run in a rayon pool of `threads` threads (the engines run their parallel loops in
/// the current pool).
pub fn on_threads<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(work)
}

/// `value` of a source in a new session on `engine`, run on `threads` threads.
pub fn value_on(engine: Engine, threads: usize, src: &str) -> String {
    on_threads(threads, || value(&mut session(engine), src))
}

/// The text of stage `stage` of `:p expr`.
pub fn stage_text(session: &mut Session, stage: &str, expr: &str) -> String {
    let got = outputs(
        session,
        &format!(":stages on {stage}\n:p {expr}\n:stages off\n"),
    );
    got.iter()
        .find_map(|output| match output {
            Output::Stage { name, text } if name == stage => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {stage} stage in {got:?}"))
}

/// The number of statements matching `pred` in every block reachable from `main`.
pub fn count_stmts(program: &Program, pred: impl Fn(&Expr) -> bool) -> usize {
    reachable_blocks(program, program.main)
        .into_iter()
        .flat_map(|block| program.blocks[block].stmts.iter())
        .filter(|stmt| pred(&stmt.expr))
        .count()
}

/// `|a - b|` relative to `max(|a|, |b|, 1)`.
pub fn rel_err(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

// ---------------------------------------------------------------------------------------------
// A small deterministic PRNG: the SplitMix64 of the library's test generator, with the draws
// these tests make.

pub struct Rng(testgen::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(testgen::Rng::new(seed))
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform(0.0, 1.0) < p
    }

    /// An index drawn with the given weights.
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut pick = self.uniform(0.0, total);
        for (position, weight) in weights.iter().enumerate() {
            if pick < *weight {
                return position;
            }
            pick -= weight;
        }
        weights.len() - 1
    }
}

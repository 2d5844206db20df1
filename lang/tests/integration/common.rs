//! Set-up shared by the integration tests that drive a `Session`.

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

/// The last output of a source as text (a value, a type, help…), which must not be an error.
pub fn printed(session: &mut Session, src: &str) -> String {
    let got = outputs(session, src);
    match got.last() {
        Some(Output::Error(diag)) => panic!("{src:?} failed: {diag:?}"),
        Some(output) => dx_lang::display::render_output(output, src),
        None => panic!("no output from {src:?}"),
    }
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

/// `|a - b|` relative to `max(|a|, |b|, 1)`.
pub fn rel_err(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

// ---------------------------------------------------------------------------------------------
// A small deterministic PRNG (SplitMix64).

pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
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

//! Set-up shared by the integration tests that drive a `Session`.

#![allow(dead_code)] // Each test crate uses its own part.

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

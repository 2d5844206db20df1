//! What a session shows: the outputs of a block (values, stages, timings, errors, plots) and
//! its diagnostics as data (a kind, a stable code, spans). The session produces them; the
//! renderers of this module and the front ends show them.

use std::time::Duration;

pub use crate::code::{Code, ErrorKind};
use crate::passes::pipeline::Ice;
use crate::syntax::Span;

/// A user-facing error: its code, its message and the span it is about; an internal error
/// of a pass also carries the [`Ice`] itself (the pass, what is wrong, the IR).
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: Code,
    pub message: String,
    pub span: Option<Span>,
    /// Other spans the error is about, each with what it shows.
    pub labels: Vec<crate::syntax::Label>,
    pub ice: Option<Box<Ice>>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>, span: Option<Span>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            span,
            labels: Vec::new(),
            ice: None,
        }
    }

    /// The stage of dx that reported it.
    pub fn kind(&self) -> ErrorKind {
        self.code.kind()
    }
}

/// One output of a block, in the order it is shown.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A printed value (`:p`, bare expression), already formatted (may span several lines).
    Value(String),
    /// A printed type (`:t`).
    Type(String),
    /// An error.
    Error(Diagnostic),
    /// An IR stage dump (`%passes`, `:stages`).
    Stage { name: String, text: String },
    /// `%time` / `%bench`: `runs` is `Some(n)` for a benchmark (the time is the median).
    Timing {
        bench_name: Option<String>,
        compile: Duration,
        run: Duration,
        runs: Option<usize>,
    },
    /// Any other text (`:p "text"`).
    Text(String),
    /// A message about the session rather than a result (e.g. from `import`); front-ends show
    /// it on stderr where they have one.
    Warning(String),
    /// A table as a grid where the medium can draw one (`:table`; 2-D values): `text` is its
    /// text form (box-drawn for `:table`, the value for a printed value).
    Table { text: String, grid: super::Grid },
    /// A figure (`:plot`, `:plotgrad`, `:html` of a plot); its text form is braille.
    Plot(super::Figure),
    /// An image (`:html` of an image).
    Image(super::Image),
    /// A vector drawing (`:html` of a diagram): SVG in a notebook, braille as text.
    Drawing(super::Drawing),
    /// HTML markup (`:html` of a string): a notebook renders it, other media show the text.
    Html(String),
}

/// Formats a duration as docs/language.md shows it: `3.217 ms`, `41.6 us`, `12 ns`, `1.5 s`.
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos() as f64;
    let (value, unit) = if nanos < 1e3 {
        (nanos, "ns")
    } else if nanos < 1e6 {
        (nanos / 1e3, "us")
    } else if nanos < 1e9 {
        (nanos / 1e6, "ms")
    } else {
        (nanos / 1e9, "s")
    };
    // Four significant digits without trailing zeros (`%.4g`): `3.217 ms`, `41.6 us`.
    let text = format!("{value:.4}");
    let digits_before_point = text.find('.').unwrap_or(text.len());
    let decimals = 4usize.saturating_sub(digits_before_point);
    let mut text = format!("{value:.decimals$}");
    if text.contains('.') {
        text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{text} {unit}")
}

//! A session: the top-level environment of a REPL, a script or a notebook, and the evaluation
//! of blocks in it. Front-ends (`repl`, `kernel`) talk only to this module, with plain data:
//! source text goes in; structured outputs come out and are rendered by `display`.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::syntax::{Chunk, Span};

/// Options of a session.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Report out-of-range reads as errors instead of reading zero (`--strict`).
    pub strict: bool,
    /// Load `stdlib/prelude.dx` when the session starts.
    pub prelude: bool,
    /// Summarise tables of more than 1000 elements (REPL and notebook; not `dx run`).
    pub summarise_tables: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig { strict: false, prelude: true, summarise_tables: false }
    }
}

/// Which stage of the front end or the pipeline reported an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Parse,
    Type,
    Runtime,
    /// A bug in dx (an internal compiler error); the session stays usable.
    Internal,
}

/// A user-facing error with the span it is about.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub kind: ErrorKind,
    pub message: String,
    pub span: Option<Span>,
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
    Timing { bench_name: Option<String>, compile: Duration, run: Duration, runs: Option<usize> },
    /// Any other text (e.g. a message from `import`).
    Text(String),
}

/// The result of one chunk of a source.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkResult {
    pub chunk: Chunk,
    pub outputs: Vec<Output>,
}

/// A flag that, once set, stops the running computation at its next check.
pub type InterruptFlag = Arc<AtomicBool>;

/// Formats a duration as LANGUAGE.md §1 shows it: `3.217 ms`, `41.6 us`, `12 ns`, `1.5 s`.
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
    let text = format!("{value:.4}");
    let digits_before_point = text.find('.').unwrap_or(text.len());
    let decimals = 4usize.saturating_sub(digits_before_point);
    format!("{value:.decimals$} {unit}")
}

/// A session: top-level values, definitions and settings that persist between blocks.
pub struct Session {
    config: SessionConfig,
    interrupt: InterruptFlag,
    stages: Vec<String>,
}

impl Session {
    pub fn new(config: SessionConfig) -> Session {
        Session { config, interrupt: InterruptFlag::default(), stages: Vec::new() }
    }

    /// Evaluates every block of a source (a file, a REPL entry, a cell) in order and returns
    /// one result per chunk, prose and blank chunks included (with no outputs).
    pub fn eval_source(&mut self, src: &str) -> Vec<ChunkResult> {
        // Placeholder until the checker and lowering land: echoes the chunks.
        let _ = (&self.config, src);
        Vec::new()
    }

    /// The flag that interrupts the running computation (Ctrl-C, Jupyter interrupt).
    pub fn interrupt_flag(&self) -> InterruptFlag {
        self.interrupt.clone()
    }

    /// Names for tab completion: values, functions and aliases in scope, and built-ins.
    pub fn completion_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Stages to show before the result of every following block (`:stages on …`); empty
    /// for `:stages off`.
    pub fn set_stages(&mut self, stages: Vec<String>) {
        self.stages = stages;
    }

    /// `--strict` / `%strict`: out-of-range reads become errors.
    pub fn set_strict(&mut self, strict: bool) {
        self.config.strict = strict;
    }
}

//! What a session shows: the outputs of a block (values, stages, timings, errors, plots) and
//! its diagnostics as data (a kind, a stable code, spans). The session produces them; the
//! renderers of this module and the front ends show them.

use std::time::Duration;

use crate::passes::pipeline::Ice;
use crate::syntax::Span;

/// Which stage of the front end or the pipeline reported an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Parse,
    Type,
    Runtime,
    /// A bug in dx (an internal compiler error); the session stays usable.
    Internal,
    /// A program that cannot be exported (`:export`, `dx export`).
    Export,
}

/// What a diagnostic reports, as a stable code: each origin of an error keeps its code (the
/// language server shows it, tests and fuzzers match on it), and each code has one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// Text that does not parse.
    Syntax,
    /// The input ends inside a construct (the REPL reads another line).
    Incomplete,
    /// A stage `%passes` or `:stages on` does not know.
    UnknownStage,
    /// A type error found by the checker (one not of the kinds below).
    Type,
    /// Two types that must be one are not.
    Mismatch,
    /// A type without the interface an operation needs.
    NoInstance,
    /// A name nothing in scope defines.
    Unbound,
    /// A name declared, bound or defined twice in one place.
    Duplicate,
    /// An effect used outside its handler, a reference escaping it, effects wider than
    /// declared.
    Effect,
    /// Another number of arguments than a function, constructor or built-in takes.
    Arity,
    /// A type that cannot be inferred where it is needed: an annotation fixes it.
    NeedsAnnotation,
    /// A pattern that can fail where it must not, or a `case` that misses a constructor.
    Pattern,
    /// A program the checker accepts that lowering cannot compile.
    Unsupported,
    /// An error raised while the program runs (`error`, a strict out-of-range read).
    Runtime,
    /// A file that cannot be read or written.
    File,
    /// The run was interrupted (Ctrl-C, a kernel interrupt).
    Interrupted,
    /// A value larger than the memory left.
    OutOfMemory,
    /// A program that cannot be exported (`:export`, `dx export`).
    Export,
    /// A pass broke an invariant: the diagnostic carries the [`Ice`].
    Ice,
    /// The parser met a parse tree it does not expect.
    ParserBug,
    /// Lowering met a typed program it does not expect.
    LowerBug,
    /// dx panicked; the session may be inconsistent.
    Panic,
    /// Any other failure of dx itself (a thread that could not start).
    Internal,
}

impl Code {
    /// The code as shown: a letter for the kind and a number that never changes.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Syntax => "P0001",
            Code::Incomplete => "P0002",
            Code::UnknownStage => "P0003",
            Code::Type => "T0001",
            Code::Unsupported => "T0002",
            Code::Mismatch => "T0003",
            Code::NoInstance => "T0004",
            Code::Unbound => "T0005",
            Code::Duplicate => "T0006",
            Code::Effect => "T0007",
            Code::Arity => "T0008",
            Code::NeedsAnnotation => "T0009",
            Code::Pattern => "T0010",
            Code::Runtime => "R0001",
            Code::File => "R0002",
            Code::Interrupted => "R0003",
            Code::OutOfMemory => "R0004",
            Code::Export => "X0001",
            Code::Ice => "I0001",
            Code::ParserBug => "I0002",
            Code::LowerBug => "I0003",
            Code::Panic => "I0004",
            Code::Internal => "I0005",
        }
    }

    pub fn kind(self) -> ErrorKind {
        match self {
            Code::Syntax | Code::Incomplete | Code::UnknownStage => ErrorKind::Parse,
            Code::Type
            | Code::Unsupported
            | Code::Mismatch
            | Code::NoInstance
            | Code::Unbound
            | Code::Duplicate
            | Code::Effect
            | Code::Arity
            | Code::NeedsAnnotation
            | Code::Pattern => ErrorKind::Type,
            Code::Runtime | Code::File | Code::Interrupted | Code::OutOfMemory => {
                ErrorKind::Runtime
            }
            Code::Export => ErrorKind::Export,
            Code::Ice | Code::ParserBug | Code::LowerBug | Code::Panic | Code::Internal => {
                ErrorKind::Internal
            }
        }
    }
}

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

//! Diagnostic codes: what an error reports, as a stable code, and the kind of error each code
//! is. At the bottom of the crate so that every stage's error can carry its code (the
//! checker's `TypeError`, the session's `Diagnostic`) without a table from one to the other.

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
    /// The checker met a state of its own it does not expect.
    CheckerBug,
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
            Code::CheckerBug => "I0006",
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
            Code::Ice
            | Code::ParserBug
            | Code::LowerBug
            | Code::CheckerBug
            | Code::Panic
            | Code::Internal => ErrorKind::Internal,
        }
    }
}

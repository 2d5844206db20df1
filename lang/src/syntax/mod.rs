//! The front end's first stage: splitting a source into blocks and parsing each block.
//!
//! Pipeline, one module each:
//!
//! - `chunks`: splits a file, REPL entry or notebook cell into prose, comment, blank and code
//!   chunks (docs/language.md) and decides whether a REPL entry is complete (`entry_status`).
//! - `parser` (`parse_code`): a code block's pragma lines, then its declaration, through
//!   - `lexer`: token boundaries, comments and indentation, for
//!   - `layout`: indentation made explicit as block markers, and the resource limits
//!     (Note [Parser limits]: nesting deeper than 128, or about 2000 operators in a row, is an
//!     error rather than a stack overflow), then
//!   - `dx.pest` and pest's `PrattParser` for operator precedence, then the AST (`ast`).
//!
//! Guarantees: no input makes these functions panic, overflow the stack or take more than
//! linear-ish time; every span (in the AST and in errors) is an absolute byte range into the
//! source text given, on `char` boundaries.
//!
//! Not handled yet: `:plot … > file.png` (the `>` parses as a comparison); a line that starts
//! with a binary operator at the column of a let-block's items starts a new item (indent it
//! more to continue the line above); `:stages on …`/`:stages off` are parsed as `:stages expr`
//! (the session should recognise them first).

pub mod ast;
mod chunks;
pub mod escape;
mod hints;
mod layout;
mod lexer;
mod parser;
pub mod print;
pub mod sexp;
pub mod span;
#[cfg(test)]
mod tests;

pub use chunks::{entry_status, split_chunks, EntryStatus};
pub use parser::{parse_code, parse_expr};
pub use span::{Label, Span};

/// A parse error: what kind it is, a message and the span it is about.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub message: String,
    pub span: Span,
}

/// What a [`ParseError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// Text that does not parse.
    Syntax,
    /// The input ended too early (an unclosed bracket, a `def` without a body): the REPL
    /// waits for more lines.
    Incomplete,
    /// A bug in the parser: a parse tree the grammar should not give.
    Internal,
}

impl ParseError {
    pub fn new(kind: ParseErrorKind, message: impl Into<String>, span: Span) -> ParseError {
        ParseError {
            kind,
            message: message.into(),
            span,
        }
    }

    pub fn is_incomplete(&self) -> bool {
        self.kind == ParseErrorKind::Incomplete
    }
}

/// One chunk of a source file, in order. Reprinting every chunk's text (`&src[span]`) and
/// dropping old output lines (`> …`) gives back the file without its outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    pub kind: ChunkKind,
    /// The chunk's lines, including their final newline (absent at the end of a file
    /// without a trailing newline). For code, the pragma lines before the block are included.
    pub span: Span,
}

// A file has few chunks and they are short-lived, so the size of `Code` does not matter;
// boxing it would only add noise at every match.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ChunkKind {
    /// A `'` prose block.
    Prose,
    /// Column-0 comment lines (`#` or `--`) outside any block.
    Comment,
    /// Blank lines between blocks.
    Blank,
    /// A code block with its pragmas, parsed (or the reason it does not parse).
    Code(Result<ast::CodeBlock, ParseError>),
}

//! The front end's first stage: splitting a source into blocks and parsing each block.

pub mod ast;
mod chunks;
mod layout;
mod lexer;
mod parser;
pub mod span;
#[cfg(test)]
mod tests;

pub use chunks::{entry_status, split_chunks, EntryStatus};
pub use parser::{parse_code, parse_expr};
pub use span::Span;

/// A parse error: a message and the span it is about. `incomplete` is set when the error is
/// that the input ended too early (an unclosed bracket, a `def` without a body), which the REPL
/// uses to wait for more lines.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub message: String,
    pub span: Span,
    pub incomplete: bool,
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

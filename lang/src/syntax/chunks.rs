//! Splitting a source (a file, a REPL entry, a notebook cell) into chunks (docs/language.md), and
//! deciding whether a REPL entry is complete.
//!
//! Line rules, by the line's first character:
//!
//! - `>` at column 0 is old output: it belongs to no chunk (it is dropped).
//! - `'` starts a prose chunk that runs to the next empty line (a line of spaces is prose, as
//!   in Dex). A `>` line inside it is output like any other (dropped); the prose goes on after
//!   it as a second `Prose` chunk.
//! - `#` or `--` at column 0 is a comment line; consecutive ones form one `Comment` chunk.
//! - `%` at column 0 is a pragma; consecutive pragma lines attach to the code block that starts
//!   on the next line. Pragmas with no block right after them form a code chunk of their own,
//!   whose parse fails (`expected a block after the pragma`).
//! - Any other non-blank column-0 line starts a code block, which continues over the following
//!   indented lines, and over blank lines and column-0 comment lines that are followed by an
//!   indented line.
//! - A column-0 line that starts with a closing bracket (`)` or `]`) or a comma continues the
//!   block before it, as an indented line does (Dex's style of a multi-line argument list whose
//!   `)` is in column 0, or of a table whose lines start with `,`); with no block before it,
//!   it is a code block of its own (whose parse fails).
//! - The lines a string literal of a code line spans (Dex's multi-line strings) continue its
//!   block, whatever they start with.
//! - Runs of blank lines are `Blank` chunks.
//! - Indented lines that follow no block form a code chunk that fails with
//!   `unexpected indentation` (or a `Comment` chunk when they hold only comments).
//!
//! Guarantee: concatenating `&src[chunk.span]` over the chunks gives `src` without its `>`
//! lines.

use super::parser::parse_code;
use super::{Chunk, ChunkKind, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineKind {
    Blank,
    Output,
    Prose,
    Comment,
    Pragma,
    Indented,
    /// A column-0 line starting with `)`, `]` or `,`: it continues the block before it.
    Closer,
    Code,
}

struct Line {
    start: usize,
    /// End of the line including its `\n` (if any).
    end: usize,
    kind: LineKind,
}

fn classify(text: &str) -> LineKind {
    let content = text.trim_end_matches(['\n', '\r']);
    if content.trim_matches([' ', '\t', '\r']).is_empty() {
        return LineKind::Blank;
    }
    match content.as_bytes()[0] {
        b'>' => LineKind::Output,
        b'\'' => LineKind::Prose,
        b'#' => LineKind::Comment,
        b'-' if content.starts_with("--") => LineKind::Comment,
        b'%' | b'@' => LineKind::Pragma,
        b' ' | b'\t' => LineKind::Indented,
        // A line that closes a bracket, or goes on with the items of one (`, 2 ]`, Dex's
        // style for long tables).
        b')' | b']' | b',' => LineKind::Closer,
        _ => LineKind::Code,
    }
}

fn lines(src: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    // Whether a string literal of a code line is still open: the lines it spans continue
    // its block, whatever they start with.
    let mut in_string = false;
    while start < src.len() {
        let end = src[start..]
            .find('\n')
            .map_or(src.len(), |offset| start + offset + 1);
        let text = &src[start..end];
        let kind = match in_string {
            true => LineKind::Indented,
            false => classify(text),
        };
        if matches!(kind, LineKind::Code | LineKind::Indented | LineKind::Closer) {
            in_string = string_open_after(text, in_string);
        }
        lines.push(Line { start, end, kind });
        start = end;
    }
    lines
}

/// Whether a string literal is open at the end of a code line that starts inside one
/// (`open`) or not: `"` opens and closes, `\` escapes inside, a character literal (`'"'`)
/// and a comment (`--`, `#` outside a string) hold no quote.
fn string_open_after(text: &str, open: bool) -> bool {
    let bytes = text.as_bytes();
    let mut open = open;
    let mut at = 0;
    while at < bytes.len() {
        match (open, bytes[at]) {
            (true, b'\\') => at += 1,
            (true, b'"') | (false, b'"') => open = !open,
            (false, b'\'') => {
                let literal = match (bytes.get(at + 1), bytes.get(at + 2), bytes.get(at + 3)) {
                    (Some(b'\\'), Some(_), Some(b'\'')) => 4,
                    (Some(b), Some(b'\''), _) if *b != b'\n' => 3,
                    _ => 1,
                };
                at += literal;
                continue;
            }
            (false, b'#') => return false,
            (false, b'-') if bytes.get(at + 1) == Some(&b'-') => return false,
            _ => {}
        }
        at += 1;
    }
    open
}

/// Is this indented line only a comment?
fn is_comment_only(text: &str) -> bool {
    let trimmed = text.trim_start_matches([' ', '\t', '\r']);
    trimmed.starts_with('#') || trimmed.starts_with("--") || trimmed.trim().is_empty()
}

/// The index one past the last line of the block whose first line is `first`.
fn block_end(lines: &[Line], first: usize) -> usize {
    let mut next = first + 1;
    loop {
        match lines.get(next).map(|line| line.kind) {
            Some(LineKind::Indented | LineKind::Closer) => next += 1,
            Some(LineKind::Blank | LineKind::Comment) => {
                let mut ahead = next;
                while matches!(
                    lines.get(ahead).map(|line| line.kind),
                    Some(LineKind::Blank | LineKind::Comment)
                ) {
                    ahead += 1;
                }
                if lines.get(ahead).map(|line| line.kind) == Some(LineKind::Indented) {
                    next = ahead;
                } else {
                    return next;
                }
            }
            _ => return next,
        }
    }
}

/// Splits `src` into chunks and parses each code block. See the module documentation.
pub fn split_chunks(src: &str) -> Vec<Chunk> {
    let lines = lines(src);
    let mut chunks = Vec::new();
    let mut index = 0;
    // Set when an output line interrupted a prose block: the prose goes on after it.
    let mut in_prose = false;
    let span_of = |first: usize, end: usize| Span::new(lines[first].start, lines[end - 1].end);
    while index < lines.len() {
        let first = index;
        let kind = match lines[first].kind {
            LineKind::Blank | LineKind::Output => lines[first].kind,
            _ if in_prose => LineKind::Prose,
            other => other,
        };
        in_prose = false;
        let end = match kind {
            LineKind::Output => {
                index += 1;
                in_prose = matches!(chunks.last(), Some(Chunk { kind: ChunkKind::Prose, span }) if span.end as usize == lines[first].start);
                continue;
            }
            LineKind::Blank => run_end(&lines, first, |line| line.kind == LineKind::Blank),
            // Prose runs to an output line or an empty one: Dex ends it at two line breaks in
            // a row (`consumeTillBreak`), so a line of spaces inside a paragraph is prose.
            LineKind::Prose => run_end(&lines, first, |line| match line.kind {
                LineKind::Output => false,
                LineKind::Blank => !src[line.start..line.end]
                    .trim_end_matches(['\n', '\r'])
                    .is_empty(),
                _ => true,
            }),
            LineKind::Comment => run_end(&lines, first, |line| line.kind == LineKind::Comment),
            LineKind::Pragma => {
                let pragmas_end = run_end(&lines, first, |line| line.kind == LineKind::Pragma);
                if lines.get(pragmas_end).map(|line| line.kind) == Some(LineKind::Code) {
                    block_end(&lines, pragmas_end)
                } else {
                    pragmas_end
                }
            }
            LineKind::Code | LineKind::Indented | LineKind::Closer => block_end(&lines, first),
        };
        let span = span_of(first, end);
        let chunk_kind = match kind {
            LineKind::Blank => ChunkKind::Blank,
            LineKind::Prose => ChunkKind::Prose,
            LineKind::Comment => ChunkKind::Comment,
            LineKind::Indented if is_comment_only_chunk(src, &lines[first..end]) => {
                ChunkKind::Comment
            }
            _ => ChunkKind::Code(parse_code(src, span)),
        };
        chunks.push(Chunk {
            kind: chunk_kind,
            span,
        });
        index = end;
    }
    chunks
}

fn is_comment_only_chunk(src: &str, lines: &[Line]) -> bool {
    lines
        .iter()
        .all(|line| is_comment_only(&src[line.start..line.end]))
}

/// The index one past the run of lines, starting at `first`, that satisfy `keep`.
fn run_end(lines: &[Line], first: usize, keep: impl Fn(&Line) -> bool) -> usize {
    let mut end = first + 1;
    while end < lines.len() && keep(&lines[end]) {
        end += 1;
    }
    end
}

/// Whether a REPL entry can run as it is, or the REPL should read more lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryStatus {
    Complete,
    Incomplete,
}

/// Decides whether a REPL entry is complete.
///
/// `Incomplete` when the last code block's parse error says the input ended too early (and no
/// prose follows it: only comments or blank lines, which more indented lines could still
/// continue), or, as in IPython, when the entry has several lines and its last line is indented
/// and not blank, so that a multi-line `def` runs only after an empty line. Earlier blocks do
/// not count: a column-0 line after them has already ended them, so no further input could
/// complete them. Any other parse error is `Complete`: the entry runs and shows the error.
pub fn entry_status(src: &str) -> EntryStatus {
    let mut last_incomplete = false;
    for chunk in split_chunks(src) {
        match chunk.kind {
            ChunkKind::Code(Err(err)) => last_incomplete = err.is_incomplete(),
            ChunkKind::Code(Ok(_)) | ChunkKind::Prose => last_incomplete = false,
            ChunkKind::Comment | ChunkKind::Blank => {}
        }
    }
    if last_incomplete {
        return EntryStatus::Incomplete;
    }
    let mut entry_lines = src.split('\n');
    let last_line = entry_lines.next_back().unwrap_or("");
    let several_lines = src.contains('\n');
    let last_is_indented = last_line.starts_with([' ', '\t']) && !last_line.trim().is_empty();
    if several_lines && last_is_indented {
        return EntryStatus::Incomplete;
    }
    EntryStatus::Complete
}

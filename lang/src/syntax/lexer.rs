//! A small lexer used by the layout pass (`layout.rs`), not by the grammar itself.
//!
//! It finds token boundaries, comments and the indentation of each line, which is all the layout
//! pass needs: which token ends a line (`=`, a lambda `.`, `then`, `else` open a block), where
//! brackets open and close, and where comments are (the layout pass blanks them out). The
//! grammar (`dx.pest`) re-reads the text with the same token rules; where the two disagree on
//! malformed input, the grammar reports the error.
//!
//! Guarantees: tokens are in source order, do not overlap, start and end on `char` boundaries,
//! and carry absolute byte offsets into the source. Comments (`#` or `--` to the end of the line)
//! are returned separately. A tab in indentation advances the column to the next multiple of 8.

use super::Span;
use super::{ParseError, ParseErrorKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokKind {
    /// An identifier or keyword (`x`, `for`, `Float`).
    Ident,
    /// An integer or float literal (`3`, `1.`, `2.5e3`).
    Number,
    /// A string literal.
    Str,
    /// `(` or `[`.
    Open(u8),
    /// `)` or `]`.
    Close(u8),
    Comma,
    /// A single `=` (not `==` or `=>`).
    Equals,
    /// A standalone `.`: the dot of a lambda or `for` head.
    Dot,
    /// Operators and other punctuation (`+`, `::`, `->`, `:`, ...).
    Op,
    /// A character the language never uses outside strings and comments (`{`, `}`, `;`); the
    /// layout pass reserves these as its block markers.
    Reserved,
    /// Any other character, left to the grammar to reject.
    Other,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: TokKind,
    pub start: usize,
    pub end: usize,
    /// Whether this is the first token on its line.
    pub first_on_line: bool,
    /// The indentation width of the token's line (meaningful for the first token of a line).
    pub col: u32,
}

impl Token {
    pub fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }

    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }
}

pub(crate) struct Lexed {
    pub tokens: Vec<Token>,
    /// Byte ranges of comments, in order.
    pub comments: Vec<(usize, usize)>,
    /// Byte ranges of effect rows (`{State h}`): no tokens for the layout rule, and passed to
    /// the grammar with their braces as `ROW_OPEN`/`ROW_CLOSE`.
    pub rows: Vec<(usize, usize)>,
}

pub(crate) fn is_ident_start(ch: char) -> bool {
    ch.is_alphabetic() || ch == '_'
}

pub(crate) fn is_ident_continue(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_' || ch == '\''
}

/// The width of the indentation of a line (tabs to the next multiple of 8).
pub(crate) fn indent_width(line: &str) -> u32 {
    let mut col = 0u32;
    for byte in line.bytes() {
        match byte {
            b' ' => col += 1,
            b'\t' => col = (col / 8 + 1) * 8,
            _ => break,
        }
    }
    col
}

/// Lexes `src[start..end]`; `start` is taken to be the start of a line.
pub(crate) fn lex(src: &str, start: usize, end: usize) -> Result<Lexed, ParseError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let mut rows = Vec::new();
    let mut pos = start;
    let mut line_start = start;
    let mut first_on_line = true;
    while pos < end {
        let byte = bytes[pos];
        match byte {
            b'\n' => {
                pos += 1;
                line_start = pos;
                first_on_line = true;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                pos += 1;
                continue;
            }
            b'#' => {
                let comment_end = line_end(bytes, pos, end);
                comments.push((pos, comment_end));
                pos = comment_end;
                continue;
            }
            b'-' if bytes.get(pos + 1) == Some(&b'-') && pos + 1 < end => {
                let comment_end = line_end(bytes, pos, end);
                comments.push((pos, comment_end));
                pos = comment_end;
                continue;
            }
            b'{' => {
                // An effect row (`-> {State h} Float`): the layout rule reads over it as over a
                // comment; the grammar reads it (`eff_row`).
                if let Some(row_end) = effect_row_end(bytes, pos, end) {
                    rows.push((pos, row_end));
                    pos = row_end;
                    continue;
                }
            }
            _ => {}
        }
        let (kind, token_end) = lex_token(src, pos, end)?;
        let col = if first_on_line {
            indent_width(&src[line_start..pos])
        } else {
            0
        };
        tokens.push(Token {
            kind,
            start: pos,
            end: token_end,
            first_on_line,
            col,
        });
        first_on_line = false;
        pos = token_end;
    }
    Ok(Lexed {
        tokens,
        comments,
        rows,
    })
}

fn line_end(bytes: &[u8], from: usize, end: usize) -> usize {
    let mut pos = from;
    while pos < end && bytes[pos] != b'\n' {
        pos += 1;
    }
    pos
}

/// The characters operators are made of.
fn is_symbol(byte: u8) -> bool {
    matches!(
        byte,
        b'+' | b'-'
            | b'*'
            | b'/'
            | b'<'
            | b'>'
            | b'='
            | b'!'
            | b'&'
            | b'|'
            | b'.'
            | b'~'
            | b'^'
            | b'%'
            | b'?'
            | b'@'
            | b':'
            | b'$'
    )
}

/// Lexes one token starting at `pos` (which is not whitespace or a comment).
fn lex_token(src: &str, pos: usize, end: usize) -> Result<(TokKind, usize), ParseError> {
    let bytes = src.as_bytes();
    let at = |offset: usize| -> u8 {
        if pos + offset < end {
            bytes[pos + offset]
        } else {
            0
        }
    };
    let byte = bytes[pos];
    let op = |len: usize| Ok((TokKind::Op, pos + len));
    match byte {
        b'0'..=b'9' => Ok((TokKind::Number, lex_number(bytes, pos, end))),
        b'"' => {
            let mut cursor = pos + 1;
            while cursor < end {
                match bytes[cursor] {
                    b'"' => return Ok((TokKind::Str, cursor + 1)),
                    b'\\' if cursor + 1 < end => cursor += 2,
                    _ => cursor += 1,
                }
            }
            // A string may span lines: in the REPL, more input may close it.
            Err(ParseError {
                message: "unterminated string".to_string(),
                span: Span::new(pos, pos + 1),
                kind: ParseErrorKind::Incomplete,
            })
        }
        // A character literal `'a'`, `'\n'` (a `'` elsewhere is left to the grammar).
        b'\'' => {
            // An escape is one character or a run of up to three digits or capitals
            // (`'\n'`, `'\210'`, `'\NUL'`): the closing quote is the first after it.
            let escape_len = (3..=5)
                .take_while(|&end| (3..end).all(|k| at(k).is_ascii_alphanumeric()))
                .find(|&end| at(end) == b'\'')
                .map(|end| end + 1);
            let len = match (at(1), at(2)) {
                (b'\\', second) if second != b'\n' && second != 0 => escape_len,
                (first, b'\'') if first != b'\n' && first != b'\'' && first != 0 => Some(3),
                _ => None,
            };
            match len {
                Some(len) => Ok((TokKind::Str, pos + len)),
                None => Ok((TokKind::Other, pos + 1)),
            }
        }
        b'(' | b'[' => Ok((TokKind::Open(byte), pos + 1)),
        b')' | b']' => Ok((TokKind::Close(byte), pos + 1)),
        b'{' | b'}' | b';' => Ok((TokKind::Reserved, pos + 1)),
        b',' => Ok((TokKind::Comma, pos + 1)),
        b'\\' => Ok((TokKind::Op, pos + 1)),
        // A run of operator symbols is one token (`.*`, `<=`, a user operator `./`); a `.` alone
        // is the dot of a lambda or `for` head (or of a field), a `=` alone a binding's.
        byte if is_symbol(byte) => {
            let mut end_pos = pos;
            while end_pos < end
                && is_symbol(bytes[end_pos])
                && !(bytes[end_pos] == b'-'
                    && end_pos + 1 < end
                    && bytes[end_pos + 1] == b'-'
                    && end_pos > pos)
            {
                end_pos += 1;
            }
            let kind = match &bytes[pos..end_pos] {
                b"." => TokKind::Dot,
                b"=" => TokKind::Equals,
                _ => TokKind::Op,
            };
            Ok((kind, end_pos))
        }
        b'`' => op(1),
        _ => {
            let ch = src[pos..].chars().next().unwrap_or('\0');
            if is_ident_start(ch) {
                let mut cursor = pos + ch.len_utf8();
                for next in src[cursor..end].chars() {
                    if !is_ident_continue(next) {
                        break;
                    }
                    cursor += next.len_utf8();
                }
                Ok((TokKind::Ident, cursor))
            } else {
                Ok((TokKind::Other, pos + ch.len_utf8().max(1)))
            }
        }
    }
}

/// A number: `digits ("." !("*" | ".") digits* exponent? | exponent)?`, as in `dx.pest`.
fn lex_number(bytes: &[u8], pos: usize, end: usize) -> usize {
    let byte_at = |index: usize| -> u8 {
        if index < end {
            bytes[index]
        } else {
            0
        }
    };
    let mut cursor = pos;
    while byte_at(cursor).is_ascii_digit() {
        cursor += 1;
    }
    if byte_at(cursor) == b'.' && !matches!(byte_at(cursor + 1), b'*' | b'.') {
        cursor += 1;
        while byte_at(cursor).is_ascii_digit() {
            cursor += 1;
        }
    }
    if matches!(byte_at(cursor), b'e' | b'E') {
        let mut exponent = cursor + 1;
        if matches!(byte_at(exponent), b'+' | b'-') {
            exponent += 1;
        }
        if byte_at(exponent).is_ascii_digit() {
            while byte_at(exponent).is_ascii_digit() {
                exponent += 1;
            }
            cursor = exponent;
        }
    }
    cursor
}

/// The bytes an effect row's braces become in the text the grammar reads: `{` and `}` are the
/// layout's block markers.
pub const ROW_OPEN: u8 = 0x02;
pub const ROW_CLOSE: u8 = 0x03;

/// The end of an effect row starting at `pos` (at a `{`): `{}`, `{State h}`,
/// `{Accum h, IO|eff}`, `{|eff}` — names separated by commas and spaces, an optional `|` and
/// a name, on one line. `None` when the braces hold anything else.
fn effect_row_end(bytes: &[u8], pos: usize, end: usize) -> Option<usize> {
    let mut at = pos + 1;
    let mut seen_bar = false;
    // Whether the previous byte was part of a name (a name starts with a letter).
    let mut in_name = false;
    while at < end {
        let byte = bytes[at];
        match byte {
            b'}' => return Some(at + 1),
            b'|' if !seen_bar => seen_bar = true,
            b',' | b' ' | b'\t' => {}
            _ if byte.is_ascii_alphabetic() || byte == b'_' => {}
            _ if in_name && (byte.is_ascii_digit() || byte == b'\'') => {}
            _ => return None,
        }
        in_name = byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'\'';
        at += 1;
    }
    None
}

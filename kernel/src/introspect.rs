//! The kernel's answers about code that is not run: `is_complete` (the REPL's own rules),
//! `complete` (the REPL's completion, at the cursor) and `inspect` (the type of the name under
//! the cursor).
//!
//! Jupyter counts cursor positions in Unicode code points (protocol 5.2+); `dx_lang` counts
//! bytes. The conversions happen here, at the edge.

use dx_lang::complete::{complete_at, names_before, word_at};
use dx_lang::syntax::{entry_status, split_chunks, ChunkKind, EntryStatus};
use jupyter_protocol::IsCompleteReplyStatus;

/// One level of indentation, suggested for the next line of an incomplete entry.
const INDENT: &str = "  ";

/// Whether a cell is ready to run: incomplete when the REPL would wait for more lines, invalid
/// when a block of it cannot parse whatever follows, complete otherwise.
pub fn is_complete(code: &str) -> (IsCompleteReplyStatus, String) {
    if entry_status(code) == EntryStatus::Incomplete {
        return (IsCompleteReplyStatus::Incomplete, INDENT.to_string());
    }
    let invalid = split_chunks(code)
        .iter()
        .any(|chunk| matches!(&chunk.kind, ChunkKind::Code(Err(err)) if !err.is_incomplete()));
    if invalid {
        (IsCompleteReplyStatus::Invalid, String::new())
    } else {
        (IsCompleteReplyStatus::Complete, String::new())
    }
}

/// A completion: the matches and the range of characters they replace.
#[derive(Debug, PartialEq, Eq)]
pub struct Completion {
    pub matches: Vec<String>,
    pub cursor_start: usize,
    pub cursor_end: usize,
}

/// Completes the word before character `cursor_pos` of `code` with commands, keywords,
/// `names` (the session's) and the names the cell binds before the cursor; the replaced range
/// runs to the end of the word under the cursor.
pub fn complete(code: &str, cursor_pos: usize, names: &[String]) -> Completion {
    let pos = byte_offset(code, cursor_pos);
    let mut names = names.to_vec();
    names.extend(names_before(code, pos));
    let (start, matches) = complete_at(code, pos, &names);
    let end = word_at(code, pos).end.max(pos);
    Completion {
        matches,
        cursor_start: char_offset(code, start),
        cursor_end: char_offset(code, end),
    }
}

/// The name under (or just before) character `cursor_pos` of `code`, if any.
pub fn name_at(code: &str, cursor_pos: usize) -> Option<&str> {
    let range = word_at(code, byte_offset(code, cursor_pos));
    let name = &code[range];
    let starts_well = name
        .chars()
        .next()
        .is_some_and(|ch| ch.is_alphabetic() || ch == '_');
    starts_well.then_some(name)
}

/// The byte offset of character `chars` of `text` (its length past the end).
fn byte_offset(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(idx, _)| idx)
}

/// The number of characters before byte `bytes` of `text`.
fn char_offset(text: &str, bytes: usize) -> usize {
    text[..bytes.min(text.len())].chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completeness_follows_the_repl() {
        assert_eq!(is_complete(":p 1 + 2").0, IsCompleteReplyStatus::Complete);
        assert_eq!(is_complete(":p (1 +").0, IsCompleteReplyStatus::Incomplete);
        assert_eq!(
            is_complete("def f(x: Float) -> Float =").0,
            IsCompleteReplyStatus::Incomplete
        );
        assert_eq!(is_complete(":p 1 +* )").0, IsCompleteReplyStatus::Invalid);
    }

    #[test]
    fn completion_counts_characters() {
        let names = vec!["xs".to_string(), "xy".to_string()];
        let done = complete("é = x", 5, &names);
        assert_eq!(done.matches, ["xs", "xy"]);
        assert_eq!((done.cursor_start, done.cursor_end), (4, 5));
        let inside = complete(":p xs + 1", 4, &names);
        assert_eq!(inside.matches, ["xs", "xy"]);
        assert_eq!((inside.cursor_start, inside.cursor_end), (3, 5));
    }

    #[test]
    fn completion_knows_the_names_of_the_cell() {
        let cell = "loss_scale = 2.0\n:p loss_";
        let done = complete(cell, cell.chars().count(), &["log".to_string()]);
        assert_eq!(done.matches, ["loss_scale"]);
    }

    #[test]
    fn names_under_the_cursor() {
        assert_eq!(name_at(":p sum xs", 5), Some("sum"));
        assert_eq!(name_at(":p sum xs", 9), Some("xs"));
        assert_eq!(name_at(":p 1.5", 5), None);
        assert_eq!(name_at("", 0), None);
    }
}

//! Positions: LSP counts lines and UTF-16 code units (its default encoding); dx counts bytes.
//! The conversions happen here, at the edge.

use dx_lang::syntax::span::floor_char_boundary;
use lsp_types::{Position, Range};

/// The byte offset of an LSP position in `text` (clamped to the text and to its line).
pub fn offset(text: &str, position: Position) -> usize {
    let mut line_start = 0;
    for _ in 0..position.line {
        match text[line_start..].find('\n') {
            Some(idx) => line_start += idx + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |idx| line_start + idx);
    let mut units = 0;
    for (idx, ch) in text[line_start..line_end].char_indices() {
        if units >= position.character as usize {
            return line_start + idx;
        }
        units += ch.len_utf16();
    }
    line_end
}

/// The LSP position of byte `offset` of `text`.
pub fn position(text: &str, offset: usize) -> Position {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    let character: usize = before[line_start..].chars().map(char::len_utf16).sum();
    Position::new(line as u32, character as u32)
}

/// The LSP range of bytes `start..end` of `text`.
pub fn range(text: &str, span: std::ops::Range<usize>) -> Range {
    Range::new(position(text, span.start), position(text, span.end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_positions_round_trip() {
        let text = "a = 1\nπ𝛑 = 2\nlast";
        for (byte, _) in text.char_indices().chain([(text.len(), ' ')]) {
            assert_eq!(offset(text, position(text, byte)), byte, "{byte}");
        }
        // `𝛑` is two UTF-16 units.
        assert_eq!(
            position(text, text.find(" = 2").expect("there")),
            Position::new(1, 3)
        );
        assert_eq!(offset(text, Position::new(9, 0)), text.len());
        assert_eq!(offset(text, Position::new(0, 99)), 5);
    }
}

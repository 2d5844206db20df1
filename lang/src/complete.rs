//! Completion of the text before a cursor: REPL commands after a `:` at the start of an entry,
//! keywords and the names a session knows elsewhere. Shared by the terminal REPL and the
//! Jupyter kernel, so both offer the same words.
//!
//! Positions are byte offsets into the entry; front-ends that count in characters (Jupyter)
//! convert at their edge.

use crate::syntax::span::floor_char_boundary;

/// Commands offered after a `:` at the start of an entry (docs/language.md and §7, and the
/// REPL's own).
pub const COMMANDS: [&str; 10] = [
    ":p",
    ":t",
    ":plot",
    ":plotgrad",
    ":table",
    ":stages",
    ":help",
    ":export",
    ":load",
    ":quit",
];

/// Keywords offered with the session's names.
pub const KEYWORDS: [&str; 7] = ["def", "for", "if", "then", "else", "import", "given"];

/// Whether a character can be part of a name.
pub fn is_name_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_' || ch == '\''
}

/// The byte range of the name around byte `pos` of `text` (empty when there is none).
pub fn word_at(text: &str, pos: usize) -> std::ops::Range<usize> {
    let pos = floor_char_boundary(text, pos);
    let start = text[..pos]
        .char_indices()
        .rev()
        .take_while(|&(_, ch)| is_name_char(ch))
        .last()
        .map_or(pos, |(idx, _)| idx);
    let end = text[pos..]
        .char_indices()
        .find(|&(_, ch)| !is_name_char(ch))
        .map_or(text.len(), |(idx, _)| pos + idx);
    start..end
}

/// What completing at byte `pos` of `entry` offers: the start of the text to replace and the
/// replacements, sorted. An empty word offers nothing (the REPL indents there instead).
pub fn complete_at(entry: &str, pos: usize, names: &[String]) -> (usize, Vec<String>) {
    let pos = floor_char_boundary(entry, pos);
    let before = &entry[..pos];
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    let start = word_at(before, pos).start;
    let word = &before[start..];
    let line_before_word = &before[line_start..start];

    // `:command` at the start of an entry.
    if start > 0 && line_start == 0 && line_before_word.trim_start() == ":" {
        let prefix = format!(":{word}");
        let commands = COMMANDS
            .iter()
            .filter(|command| command.starts_with(&prefix))
            .map(|command| command.to_string());
        return (start - 1, commands.collect());
    }
    if word.is_empty() {
        return (pos, Vec::new());
    }
    let mut candidates: Vec<String> = KEYWORDS
        .iter()
        .map(|keyword| keyword.to_string())
        .chain(names.iter().cloned())
        .filter(|name| name.starts_with(word))
        .collect();
    candidates.sort();
    candidates.dedup();
    (start, candidates)
}

/// The names that the blocks of `code` before byte `pos` define at the top level (`def`s,
/// values, aliases), and the parameters of a `def` whose block holds `pos`: what a cell being
/// edited has bound before the cursor, though the session has not run it yet. Blocks that do
/// not parse are skipped.
pub fn names_before(code: &str, pos: usize) -> Vec<String> {
    let mut names = Vec::new();
    for chunk in crate::syntax::split_chunks(code) {
        let range = chunk.span.range();
        if range.start >= pos {
            break;
        }
        let crate::syntax::ChunkKind::Code(Ok(block)) = &chunk.kind else {
            continue;
        };
        names.extend(
            block
                .decl
                .defined_names()
                .iter()
                .map(|ident| ident.name.clone()),
        );
        if let crate::syntax::ast::Decl::Def(def) = &block.decl {
            if pos <= range.end {
                let params = def.params.iter().flat_map(|param| param.pat.names());
                names.extend(params.map(|ident| ident.name.clone()));
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["square", "sum", "softmax", "xs"]
            .iter()
            .map(|name| name.to_string())
            .collect()
    }

    fn complete(line: &str) -> (usize, Vec<String>) {
        complete_at(line, line.len(), &names())
    }

    #[test]
    fn completes_names_and_keywords() {
        assert_eq!(
            complete(":p s"),
            (3, vec!["softmax".into(), "square".into(), "sum".into()])
        );
        assert_eq!(complete("y = sq"), (4, vec!["square".into()]));
        assert_eq!(complete("d"), (0, vec!["def".into()]));
        assert_eq!(complete("for i. x"), (7, vec!["xs".into()]));
        assert_eq!(complete("sum (x"), (5, vec!["xs".into()]));
        assert_eq!(complete("x = "), (4, vec![]));
    }

    #[test]
    fn names_bound_earlier_in_the_cell() {
        let cell = "def cube(v: Float) -> Float =\n  v * v * v\n\nweights = [1., 2.]\n:p cu";
        let names = names_before(cell, cell.len());
        assert_eq!(names, ["cube", "weights"]);
        assert_eq!(
            complete_at(cell, cell.len(), &names),
            (cell.len() - 2, vec!["cube".into()])
        );
        // Names after the cursor are not offered; a def's parameters are, inside its block.
        assert_eq!(names_before(cell, 0), Vec::<String>::new());
        assert_eq!(names_before(cell, 36), ["cube", "v"]);
        // A block that does not parse is skipped.
        assert_eq!(names_before("a = (\n\nb = 1\n", 12), ["b"]);
    }

    #[test]
    fn completes_commands_at_the_start_of_an_entry() {
        assert_eq!(
            complete(":pl"),
            (0, vec![":plot".into(), ":plotgrad".into()])
        );
        assert_eq!(
            complete(":"),
            (0, COMMANDS.iter().map(|c| c.to_string()).collect())
        );
        assert_eq!(complete(":q"), (0, vec![":quit".into()]));
    }

    #[test]
    fn the_cursor_may_be_inside_a_word_or_a_character() {
        assert_eq!(
            complete_at("sq + 1", 2, &names()),
            (0, vec!["square".into()])
        );
        assert_eq!(word_at("a + squa", 6), 4..8);
        assert_eq!(word_at("é", 1), 0..2);
        assert_eq!(complete_at("é", 1, &names()), (0, vec![]));
        assert_eq!(complete_at("xs", 99, &names()), (0, vec!["xs".into()]));
    }
}

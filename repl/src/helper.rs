//! The rustyline helper of the REPL: multi-line entry (an entry goes on while
//! `entry_status` says it is incomplete) and tab completion of REPL commands, keywords and the
//! names the session knows.

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper, Highlighter, Hinter};

use crate::repl::{parse_command, Command};
use dx_lang::syntax::{entry_status, EntryStatus};

/// Commands offered after a `:` at the start of an entry.
pub const COMMANDS: [&str; 9] = [
    ":p",
    ":t",
    ":plot",
    ":plotgrad",
    ":table",
    ":stages",
    ":help",
    ":load",
    ":quit",
];

/// Keywords offered with the session's names.
pub const KEYWORDS: [&str; 7] = ["def", "for", "if", "then", "else", "import", "given"];

/// What Tab inserts at the start of a line: one level of indentation.
const INDENT: &str = "  ";

#[derive(Helper, Hinter, Highlighter)]
pub struct DxHelper {
    /// Names in scope in the session, refreshed after every entry.
    pub names: Vec<String>,
    files: FilenameCompleter,
}

impl DxHelper {
    pub fn new(names: Vec<String>) -> DxHelper {
        DxHelper {
            names,
            files: FilenameCompleter::new(),
        }
    }
}

/// Whether an entry is finished. REPL-only commands are one line long; anything else is up to
/// the language's rules.
pub fn is_complete(entry: &str) -> bool {
    match parse_command(entry) {
        Command::Eval => entry_status(entry) == EntryStatus::Complete,
        _ => true,
    }
}

impl Validator for DxHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if is_complete(ctx.input()) {
            ValidationResult::Valid(None)
        } else {
            ValidationResult::Incomplete
        })
    }
}

fn is_name_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_' || ch == '\''
}

/// What to complete at byte `pos` of `line` (the whole entry so far): the start of the text
/// to replace and the replacements, sorted. Kept apart from rustyline so it can be tested.
pub fn complete_at(line: &str, pos: usize, names: &[String]) -> (usize, Vec<String>) {
    let before = &line[..pos];
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    let start = before
        .char_indices()
        .rev()
        .take_while(|&(_, ch)| is_name_char(ch))
        .last()
        .map_or(pos, |(idx, _)| idx);
    let word = &before[start..];
    let line_before_word = &before[line_start..start];

    // `:command` at the start of an entry.
    if start > 0 && line_start == 0 && line_before_word.trim_start() == ":" {
        let prefix = format!(":{word}");
        let commands = COMMANDS
            .iter()
            .filter(|command| command.starts_with(&prefix))
            .map(|c| c.to_string());
        return (start - 1, commands.collect());
    }
    // Tab in the indentation of a line indents.
    if word.is_empty() && line_before_word.trim().is_empty() {
        return (pos, vec![INDENT.to_owned()]);
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

impl Completer for DxHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if let Command::Load(_) = parse_command(&line[..pos]) {
            return self.files.complete(line, pos, ctx);
        }
        let (start, candidates) = complete_at(line, pos, &self.names);
        let pairs = candidates
            .into_iter()
            .map(|candidate| Pair {
                display: candidate.clone(),
                replacement: candidate,
            })
            .collect();
        Ok((start, pairs))
    }
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
    fn tab_at_the_start_of_a_line_indents() {
        assert_eq!(
            complete("def f(x: Float) -> Float =\n"),
            (27, vec![INDENT.into()])
        );
        assert_eq!(complete(""), (0, vec![INDENT.into()]));
        assert_eq!(complete("x = "), (4, vec![]));
    }

    #[test]
    fn repl_commands_are_complete_entries() {
        assert!(is_complete(":help"));
        assert!(is_complete(":load some file.dx"));
        assert!(is_complete(":stages on bot core"));
        assert!(is_complete(":q"));
    }
}

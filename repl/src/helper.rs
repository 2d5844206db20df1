//! The rustyline helper of the REPL: when an entry is complete (`is_complete`, used by
//! `entry.rs`) and tab completion of REPL commands, keywords and the
//! names the session knows.

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::validate::Validator;
use rustyline::{Context, Helper, Highlighter, Hinter};

use crate::repl::{parse_command, Command};
use dx_lang::complete;
use dx_lang::syntax::{entry_status, EntryStatus};

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

/// Every line is accepted as typed: the REPL reads an entry one line at a time (with a `...`
/// prompt for the further lines) and `EntryReader` decides where it ends.
impl Validator for DxHelper {}

/// What Tab completes at byte `pos` of `line` (the whole entry so far): in the indentation of a
/// line it indents; elsewhere it completes as `dx_lang::complete` says.
pub fn complete_at(line: &str, pos: usize, names: &[String]) -> (usize, Vec<String>) {
    let before = &line[..pos];
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    if before[line_start..].trim().is_empty() {
        return (pos, vec![INDENT.to_owned()]);
    }
    complete::complete_at(line, pos, names)
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
    fn completes_names_and_commands() {
        assert_eq!(complete("y = sq"), (4, vec!["square".into()]));
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

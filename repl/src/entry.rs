//! How the REPL gathers lines into entries, the same way for a terminal and for piped input:
//! lines are joined while the entry is incomplete (`is_complete`), and an empty line ends
//! the entry whatever its state, so that an entry that cannot be completed (an unclosed `(`,
//! a trailing operator) is submitted and gets its parse error instead of waiting forever.

use crate::helper::is_complete;

/// The lines of the entry being typed.
#[derive(Debug, Default)]
pub struct EntryReader {
    entry: String,
}

impl EntryReader {
    /// Whether lines of an unfinished entry have been read (the prompt is then `...`).
    pub fn is_continuing(&self) -> bool {
        !self.entry.is_empty()
    }

    /// Adds one line (or several, from a recalled multi-line history entry); returns the entry
    /// when it is ready to run.
    pub fn push_line(&mut self, line: &str) -> Option<String> {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            // An empty line: nothing to do at the prompt, the end of the entry after it.
            return self.take();
        }
        self.entry.push_str(line);
        if is_complete(&self.entry) {
            self.take()
        } else {
            self.entry.push('\n');
            None
        }
    }

    /// The unfinished entry (at the end of input), if any; the reader is empty afterwards.
    pub fn take(&mut self) -> Option<String> {
        let entry = std::mem::take(&mut self.entry);
        let entry = entry.trim_end_matches('\n');
        (!entry.trim().is_empty()).then(|| entry.to_owned())
    }

    /// Forgets the unfinished entry (Ctrl-C, or a line that could not be read).
    pub fn abandon(&mut self) {
        self.entry.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(lines: &[&str]) -> Vec<String> {
        let mut reader = EntryReader::default();
        let mut out: Vec<String> = lines
            .iter()
            .filter_map(|line| reader.push_line(line))
            .collect();
        out.extend(reader.take());
        out
    }

    #[test]
    fn a_complete_line_is_an_entry() {
        assert_eq!(entries(&[":p 1", "", ":p 2"]), vec![":p 1", ":p 2"]);
    }

    #[test]
    fn an_indented_block_ends_at_an_empty_line() {
        let lines = ["def f(x: Float) -> Float =", "  x", "", ":p f 1.0"];
        assert_eq!(
            entries(&lines),
            vec!["def f(x: Float) -> Float =\n  x", ":p f 1.0"]
        );
    }

    #[test]
    fn an_empty_line_submits_an_entry_that_cannot_be_completed() {
        let mut reader = EntryReader::default();
        assert_eq!(reader.push_line(":p (1.0 +"), None);
        assert!(reader.is_continuing());
        assert_eq!(reader.push_line("   "), Some(":p (1.0 +".to_owned()));
        assert!(!reader.is_continuing());
        assert_eq!(reader.push_line(""), None, "an empty prompt stays empty");
    }

    #[test]
    fn an_unclosed_bracket_continues_on_the_next_line() {
        assert_eq!(
            entries(&[":p (1.0 +", "  2.0)", "", ":p 3"]),
            vec![":p (1.0 +\n  2.0)", ":p 3"]
        );
    }

    #[test]
    fn abandoning_forgets_the_lines() {
        let mut reader = EntryReader::default();
        assert_eq!(reader.push_line(":p [1,"), None);
        reader.abandon();
        assert_eq!(reader.take(), None);
    }
}

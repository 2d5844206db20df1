//! The inputs executed in this kernel (`history_request`): ranges, tails and glob searches over
//! one session, numbered from 1 as the execution counts are.

use jupyter_protocol::{HistoryEntry, HistoryRequest};

/// The session number reported in history entries (one session per kernel process).
const SESSION: usize = 1;

#[derive(Default)]
pub struct History {
    inputs: Vec<String>,
}

impl History {
    pub fn push(&mut self, input: String) {
        self.inputs.push(input);
    }

    /// The entries a request asks for, oldest first. Outputs are not kept, so an entry with
    /// `output` asked for has an empty output.
    pub fn entries(&self, request: &HistoryRequest) -> Vec<HistoryEntry> {
        let numbered = self
            .inputs
            .iter()
            .enumerate()
            .map(|(idx, input)| (idx + 1, input));
        let (selected, output): (Vec<(usize, &String)>, bool) = match request {
            HistoryRequest::Range {
                start,
                stop,
                output,
                ..
            } => {
                // IPython's ranges: `stop` is exclusive; negative bounds count from the end;
                // a `stop` of 0 runs to the end.
                let len = self.inputs.len() as i64;
                let resolve = |bound: i32| {
                    let bound = i64::from(bound);
                    if bound < 0 {
                        len + bound + 1
                    } else {
                        bound
                    }
                };
                let start = resolve(*start).max(1);
                let stop = match resolve(*stop) {
                    stop if stop <= 0 => len + 1,
                    stop => stop.min(len + 1),
                };
                let selected = numbered
                    .filter(|(number, _)| (start..stop).contains(&(*number as i64)))
                    .collect();
                (selected, *output)
            }
            HistoryRequest::Tail { n, output, .. } => {
                let n = usize::try_from(*n).unwrap_or(0);
                let all: Vec<_> = numbered.collect();
                let skip = all.len().saturating_sub(n);
                (all.into_iter().skip(skip).collect(), *output)
            }
            HistoryRequest::Search {
                pattern,
                unique,
                output,
                n,
                ..
            } => {
                let mut found: Vec<(usize, &String)> = numbered
                    .filter(|(_, input)| glob_matches(pattern, input))
                    .collect();
                if *unique {
                    let mut seen = std::collections::HashSet::new();
                    found.reverse();
                    found.retain(|(_, input)| seen.insert(input.as_str()));
                    found.reverse();
                }
                if let Ok(n) = usize::try_from(*n) {
                    if n > 0 {
                        found.drain(..found.len().saturating_sub(n));
                    }
                }
                (found, *output)
            }
        };
        selected
            .into_iter()
            .map(|(number, input)| {
                if output {
                    HistoryEntry::InputOutput(SESSION, number, (input.clone(), String::new()))
                } else {
                    HistoryEntry::Input(SESSION, number, input.clone())
                }
            })
            .collect()
    }
}

/// IPython's history search pattern: `*` matches any text, `?` one character; the pattern
/// matches the whole input.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // matches[j]: the pattern so far matches text[..j].
    let mut matches = vec![false; text.len() + 1];
    matches[0] = true;
    for &pattern_char in &pattern {
        let mut next = vec![false; text.len() + 1];
        for j in 0..=text.len() {
            next[j] = match pattern_char {
                '*' => matches[j] || (j > 0 && next[j - 1]),
                '?' => j > 0 && matches[j - 1],
                ch => j > 0 && matches[j - 1] && text[j - 1] == ch,
            };
        }
        matches = next;
    }
    matches[text.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> History {
        let mut history = History::default();
        for input in [":p 1", "x = 2", ":p x", ":p 1"] {
            history.push(input.into());
        }
        history
    }

    fn inputs(entries: Vec<HistoryEntry>) -> Vec<(usize, String)> {
        entries
            .into_iter()
            .map(|entry| match entry {
                HistoryEntry::Input(_, number, input) => (number, input),
                HistoryEntry::InputOutput(_, number, (input, _)) => (number, input),
            })
            .collect()
    }

    #[test]
    fn globs() {
        assert!(glob_matches("*", ""));
        assert!(glob_matches(":p*", ":p x"));
        assert!(glob_matches("?=*", "x= 1") && !glob_matches("?=*", "xx= 1"));
        assert!(!glob_matches(":t*", ":p x"));
    }

    #[test]
    fn tail_range_and_search() {
        let history = history();
        let tail = HistoryRequest::Tail {
            n: 2,
            output: false,
            raw: true,
        };
        assert_eq!(
            inputs(history.entries(&tail)),
            [(3, ":p x".into()), (4, ":p 1".into())]
        );
        let range = HistoryRequest::Range {
            session: None,
            start: 2,
            stop: 4,
            output: true,
            raw: true,
        };
        assert_eq!(
            inputs(history.entries(&range)),
            [(2, "x = 2".into()), (3, ":p x".into())]
        );
        let search = HistoryRequest::Search {
            pattern: ":p*".into(),
            unique: true,
            output: false,
            raw: true,
            n: 0,
        };
        assert_eq!(
            inputs(history.entries(&search)),
            [(3, ":p x".into()), (4, ":p 1".into())]
        );
    }
}

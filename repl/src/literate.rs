//! The literate format of `dx run` and `dx test` (docs/language.md): a source printed back chunk
//! by chunk, with the outputs of each block right after it as `> ` lines, and the comparison
//! that `dx test` makes between a file and its regenerated text.
//!
//! These are pure functions over the source text and the session's results. The renderer of
//! one output is a parameter, so that the formatting can be tested without evaluating.

use dx_lang::session::{ChunkResult, Output, Progress, Session};

/// Renders one output as plain text (possibly several lines, no `> ` prefix), given the source
/// its spans point into.
pub type Render<'a> = &'a dyn Fn(&Output, &str) -> String;

/// Evaluates a source, or returns `None` if the evaluation panicked. The session catches its
/// own failures; this is the last resort that keeps `dx test` going to the next file and the
/// REPL alive (the panic hook has already printed the message).
pub fn eval_guarded(session: &mut Session, src: &str) -> Option<Vec<ChunkResult>> {
    eval_guarded_with(session, src, &mut |_| {})
}

/// `eval_guarded`, reporting progress as `Session::eval_source_with` does.
pub fn eval_guarded_with(
    session: &mut Session,
    src: &str,
    on_progress: &mut dyn FnMut(Progress),
) -> Option<Vec<ChunkResult>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        session.eval_source_with(src, on_progress)
    }))
    .ok()
}

/// Prefix of the timing lines that `dx test` leaves out of the comparison. The `> name` line
/// that `%bench "name"` prints before them is real output and is compared.
const TIMING_PREFIXES: [&str; 2] = ["> Compile time:", "> Run time:"];

/// The text of a chunk. Spans come from the session and point into `src`; an out-of-range span
/// (a library bug) prints nothing rather than panicking.
fn chunk_text<'src>(src: &'src str, result: &ChunkResult) -> &'src str {
    src.get(result.chunk.span.range()).unwrap_or("")
}

/// `dx run`: every chunk's text, each followed by its outputs as `> ` lines. On a file whose
/// outputs are current, this gives back the file unchanged.
pub fn literate(src: &str, results: &[ChunkResult], render: Render) -> String {
    let mut text = String::with_capacity(src.len());
    for result in results {
        text.push_str(&literate_chunk(src, result, render));
    }
    text
}

/// One chunk of `literate`: its text, then its outputs as `> ` lines.
pub fn literate_chunk(src: &str, result: &ChunkResult, render: Render) -> String {
    let mut text = chunk_text(src, result).to_string();
    if result.outputs.is_empty() {
        return text;
    }
    // The last chunk of a file may lack its newline; outputs start on a line of their own.
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for output in &result.outputs {
        push_output_lines(&mut text, &render(output, src));
    }
    text
}

/// Appends a rendered output to `text` as `> ` lines, an empty line as a bare `>`.
pub fn push_output_lines(text: &mut String, output: &str) {
    for line in output.lines() {
        if line.is_empty() {
            text.push_str(">\n");
        } else {
            text.push_str("> ");
            text.push_str(line);
            text.push('\n');
        }
    }
}

/// `dx run --outfmt result-only` for one chunk: its outputs, one after the other.
pub fn result_only_chunk(src: &str, result: &ChunkResult, render: Render) -> String {
    let mut text = String::new();
    for output in &result.outputs {
        text.push_str(&render(output, src));
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

/// `dx run --outfmt result-only`: only the outputs, one after the other, without `> ` (`dx run`
/// prints it chunk by chunk).
#[cfg(test)]
pub fn result_only(src: &str, results: &[ChunkResult], render: Render) -> String {
    results
        .iter()
        .map(|result| result_only_chunk(src, result, render))
        .collect()
}

/// Whether any block reported an error (`dx run` then exits with status 1).
pub fn has_errors(results: &[ChunkResult]) -> bool {
    results
        .iter()
        .flat_map(|result| &result.outputs)
        .any(|output| matches!(output, Output::Error(_)))
}

/// The result of comparing a test file with its regenerated text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestOutcome {
    Pass,
    /// `diff` is a unified diff from the file (`---`) to the regenerated text (`+++`).
    Fail {
        diff: String,
    },
}

/// The lines that `dx test` compares: everything but timing lines, each ending in a newline
/// (so a missing newline at the end of the file, or `\r\n` line ends, do not count).
fn comparable_lines(text: &str) -> String {
    let mut lines = String::with_capacity(text.len());
    for line in text.lines() {
        if TIMING_PREFIXES
            .iter()
            .any(|prefix| line.starts_with(prefix))
        {
            continue;
        }
        lines.push_str(line);
        lines.push('\n');
    }
    lines
}

/// `dx test`: compares a file (`expected`) with the text `dx run` regenerates from it
/// (`actual`), ignoring timing lines on both sides. `name` labels the diff.
pub fn compare(name: &str, expected: &str, actual: &str) -> TestOutcome {
    let expected = comparable_lines(expected);
    let actual = comparable_lines(actual);
    if expected == actual {
        return TestOutcome::Pass;
    }
    let diff = similar::TextDiff::from_lines(&expected, &actual)
        .unified_diff()
        .context_radius(3)
        .header(name, &format!("{name} (regenerated)"))
        .to_string();
    TestOutcome::Fail { diff }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use dx_lang::display::render_output;
    use dx_lang::session::{Code, Diagnostic};
    use dx_lang::syntax::{Chunk, ChunkKind, ParseError, ParseErrorKind, Span};

    use super::*;

    fn code_kind() -> ChunkKind {
        // The formatting does not look inside a code chunk; an unparsed block will do.
        ChunkKind::Code(Err(ParseError {
            message: String::new(),
            span: Span::default(),
            kind: ParseErrorKind::Syntax,
        }))
    }

    /// Splits `src` into chunks at the given texts (which must appear in order), attaching the
    /// outputs to each. Text not covered (old `> ` lines) belongs to no chunk, as in the library.
    fn chunks(src: &str, parts: Vec<(&str, ChunkKind, Vec<Output>)>) -> Vec<ChunkResult> {
        let mut offset = 0;
        parts
            .into_iter()
            .map(|(text, kind, outputs)| {
                let start = offset
                    + src[offset..]
                        .find(text)
                        .expect("chunk text is in the source");
                offset = start + text.len();
                ChunkResult {
                    chunk: Chunk {
                        kind,
                        span: Span::new(start, offset),
                    },
                    outputs,
                }
            })
            .collect()
    }

    fn value(text: &str) -> Output {
        Output::Value(text.to_owned())
    }

    fn timing(bench_name: Option<&str>) -> Output {
        Output::Timing {
            bench_name: bench_name.map(str::to_owned),
            compile: Duration::from_millis(3),
            run: Duration::from_micros(41),
            runs: bench_name.map(|_| 83),
        }
    }

    #[test]
    fn outputs_follow_their_block_and_replace_old_outputs() {
        let src = "' Some prose.\n\n:p 1.0 + 2.0\n> 7.\n\nx = 1\n:p [1., 2.]\n";
        let results = chunks(
            src,
            vec![
                ("' Some prose.\n", ChunkKind::Prose, vec![]),
                ("\n", ChunkKind::Blank, vec![]),
                (":p 1.0 + 2.0\n", code_kind(), vec![value("3.")]),
                ("\n", ChunkKind::Blank, vec![]),
                ("x = 1\n", code_kind(), vec![]),
                (":p [1., 2.]\n", code_kind(), vec![value("[1., 2.]")]),
            ],
        );
        assert_eq!(
            literate(src, &results, &render_output),
            "' Some prose.\n\n:p 1.0 + 2.0\n> 3.\n\nx = 1\n:p [1., 2.]\n> [1., 2.]\n"
        );
    }

    #[test]
    fn a_file_with_current_outputs_is_a_quine() {
        let src = "-- comment\n:p 1.0 + 2.0\n> 3.\n\n:t 1\n> Nat\n";
        let results = chunks(
            src,
            vec![
                ("-- comment\n", ChunkKind::Comment, vec![]),
                (":p 1.0 + 2.0\n", code_kind(), vec![value("3.")]),
                ("\n", ChunkKind::Blank, vec![]),
                (":t 1\n", code_kind(), vec![Output::Type("Nat".to_owned())]),
            ],
        );
        assert_eq!(literate(src, &results, &render_output), src);
    }

    #[test]
    fn multi_line_outputs_prefix_every_line_and_empty_lines_become_bare_markers() {
        let src = ":p x\n";
        let results = chunks(src, vec![(":p x\n", code_kind(), vec![value("a\n\nb\n")])]);
        assert_eq!(
            literate(src, &results, &render_output),
            ":p x\n> a\n>\n> b\n"
        );
    }

    #[test]
    fn outputs_start_on_a_new_line_at_the_end_of_a_file_without_newline() {
        let src = "x = 1\n:p x";
        let results = chunks(
            src,
            vec![
                ("x = 1\n", code_kind(), vec![]),
                (":p x", code_kind(), vec![value("1")]),
            ],
        );
        assert_eq!(
            literate(src, &results, &render_output),
            "x = 1\n:p x\n> 1\n"
        );
        // Without outputs the file is printed as it is.
        let results = chunks(
            src,
            vec![
                ("x = 1\n", code_kind(), vec![]),
                (":p x", code_kind(), vec![]),
            ],
        );
        assert_eq!(literate(src, &results, &render_output), src);
    }

    #[test]
    fn result_only_prints_the_outputs_without_markers() {
        let src = "' prose\n:p 1\n:p 2\n";
        let results = chunks(
            src,
            vec![
                ("' prose\n", ChunkKind::Prose, vec![]),
                (":p 1\n", code_kind(), vec![value("1")]),
                (":p 2\n", code_kind(), vec![value("[2,\n 3]")]),
            ],
        );
        assert_eq!(result_only(src, &results, &render_output), "1\n[2,\n 3]\n");
    }

    #[test]
    fn errors_are_detected() {
        let src = ":p y\n";
        let error = Output::Error(Diagnostic::new(
            Code::Type,
            "unbound variable y".to_owned(),
            None,
        ));
        let results = chunks(src, vec![(":p y\n", code_kind(), vec![error])]);
        assert!(has_errors(&results));
        assert_eq!(
            literate(src, &results, &render_output),
            ":p y\n> Type error: unbound variable y\n"
        );
        let results = chunks(src, vec![(":p y\n", code_kind(), vec![value("1")])]);
        assert!(!has_errors(&results));
    }

    #[test]
    fn timing_lines_print_after_the_other_outputs() {
        let src = "%bench \"sum\"\n:p 1\n";
        let results = chunks(
            src,
            vec![(src, code_kind(), vec![value("1"), timing(Some("sum"))])],
        );
        let text = literate(src, &results, &render_output);
        assert!(
            text.starts_with("%bench \"sum\"\n:p 1\n> 1\n> sum\n> Compile time: "),
            "{text}"
        );
    }

    #[test]
    fn comparison_ignores_timing_lines_on_both_sides() {
        let expected = "%time\n:p 1\n> 1\n> Compile time: 3.217 ms\n> Run time: 41.6 us\n";
        let actual = "%time\n:p 1\n> 1\n> Compile time: 2.9 ms\n> Run time: 40.02 us\n";
        assert_eq!(compare("t.dx", expected, actual), TestOutcome::Pass);
        // A file written without timing lines still passes.
        assert_eq!(
            compare("t.dx", "%time\n:p 1\n> 1\n", actual),
            TestOutcome::Pass
        );
    }

    #[test]
    fn comparison_keeps_the_bench_name_line() {
        let expected = "%bench \"a\"\n:p 1\n> 1\n> a\n> Compile time: 1 ms\n> Run time: 2 ms (based on 5 runs)\n";
        let actual = "%bench \"b\"\n:p 1\n> 1\n> b\n> Compile time: 1 ms\n> Run time: 3 ms (based on 9 runs)\n";
        let TestOutcome::Fail { diff } = compare("t.dx", expected, actual) else {
            panic!("the bench names differ");
        };
        assert!(diff.contains("-> a\n") && diff.contains("+> b\n"), "{diff}");
        assert!(!diff.contains("Run time"), "{diff}");
    }

    #[test]
    fn a_wrong_output_gives_a_unified_diff_with_file_names() {
        let expected = ":p 1.0 + 2.0\n> 4.\n";
        let actual = ":p 1.0 + 2.0\n> 3.\n";
        let TestOutcome::Fail { diff } = compare("arith.dx", expected, actual) else {
            panic!("the outputs differ");
        };
        assert_eq!(
            diff,
            "--- arith.dx\n+++ arith.dx (regenerated)\n@@ -1,2 +1,2 @@\n :p 1.0 + 2.0\n-> 4.\n+> 3.\n"
        );
    }

    #[test]
    fn comparison_ignores_a_missing_final_newline_and_crlf() {
        assert_eq!(
            compare("t.dx", ":p 1\n> 1", ":p 1\n> 1\n"),
            TestOutcome::Pass
        );
        assert_eq!(
            compare("t.dx", ":p 1\r\n> 1\r\n", ":p 1\n> 1\n"),
            TestOutcome::Pass
        );
    }
}

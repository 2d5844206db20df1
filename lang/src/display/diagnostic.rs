//! Diagnostics and block outputs as plain text (docs/language.md and §5): the error line, then
//! the source lines of the span with carets under the spanned characters.
//!
//! Assumes spans are byte offsets into `src` (`syntax::Span`) but does not trust them: an
//! offset past the end or inside a character is moved back to the nearest character
//! boundary, and a reversed span is put in order. Guarantees no trailing whitespace on any
//! line and no trailing newline; the front-ends add their `> ` prefixes per line.
//!
//! A label (a secondary span of the error, `Diagnostic::labels`) follows the error's own
//! snippet with `-` marks and its note on the last mark row. Written here rather than with
//! ariadne or codespan-reporting: literate files keep Dex's format (the error line, then the
//! bare source lines with carets: no gutter, no line numbers, no colour), which neither
//! prints.
//!
//! Not handled yet: columns are counted in characters, so carets under wide characters
//! (CJK, emoji) or combining marks do not line up in a terminal. A tab is shown as one space,
//! so that the carets line up whatever the tab width.

// Note [Caret rows]
// ~~~~~~~~~~~~~~~~~
// Each source line the span touches becomes one row: the line, then `^` under the
// characters of the span on that line. Line terminators are not characters of a line, so a
// line the span only crosses (a blank line, or the end of the first line when the span starts
// at its newline) has no carets; such rows at either end are dropped, and a blank row in the
// middle is shown without a caret line. A span with no characters left (zero-width, or only
// newlines) gets one caret where it starts, which is after the last character when it starts
// at the end of a line. An offset at the very end of a source that ends with a newline
// belongs to the last line, so "unexpected end of input" points after its last character.

use super::output::{format_duration, Diagnostic, ErrorKind, Output};
use crate::syntax::span::floor_char_boundary;
use crate::syntax::Span;

/// Lines of a multi-line span shown before `...`.
const MAX_SPAN_LINES: usize = 4;

/// A diagnostic as text: `Type error: <message>`, then the spanned source lines with carets.
/// See Note [Caret rows].
pub fn render_diagnostic(diag: &Diagnostic, src: &str) -> String {
    let mut res = format!("{}: {}", error_label(diag.kind()), diag.message);
    let marked = diag.span.map(|span| (span, '^', ""));
    let labels = diag
        .labels
        .iter()
        .map(|label| (label.span, '-', label.message.as_str()));
    for (span, mark, note) in marked.into_iter().chain(labels) {
        for line in span_snippet(src, span, mark, note) {
            res.push('\n');
            res.push_str(&line);
        }
    }
    trim_line_ends(&res)
}

/// One output of a block as plain text, without the `> ` prefixes of the front-ends.
pub fn render_output(output: &Output, src: &str) -> String {
    match output {
        Output::Value(text)
        | Output::Type(text)
        | Output::Text(text)
        | Output::Warning(text)
        | Output::Table { text, .. }
        | Output::Html(text) => text.clone(),
        Output::Plot(figure) => figure.to_text(),
        Output::Image(image) => image.to_text(),
        Output::Drawing(drawing) => drawing.to_text(),
        Output::Error(diag) => render_diagnostic(diag, src),
        Output::Stage { name, text } => {
            let text = text.trim_end_matches('\n');
            if text.is_empty() {
                format!("=== {name} ===")
            } else {
                format!("=== {name} ===\n{text}")
            }
        }
        Output::Timing {
            bench_name,
            compile,
            run,
            runs,
        } => {
            let mut res = String::new();
            if let Some(name) = bench_name {
                res.push_str(name);
                res.push('\n');
            }
            res.push_str("Compile time: ");
            res.push_str(&format_duration(*compile));
            res.push_str("\nRun time: ");
            res.push_str(&format_duration(*run));
            if let Some(n_runs) = runs {
                res.push_str(&format!(" (based on {n_runs} runs)"));
            }
            res
        }
    }
}

fn error_label(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Parse => "Parse error",
        ErrorKind::Type => "Type error",
        ErrorKind::Runtime => "Runtime error",
        ErrorKind::Internal => "Internal error",
        ErrorKind::Export => "Export error",
    }
}

fn trim_line_ends(text: &str) -> String {
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line of the source: `start..content_end` is its text, without `\n` or `\r\n`.
#[derive(Clone, Copy, Debug)]
struct SourceLine {
    start: usize,
    content_end: usize,
}

/// The lines of a source; a source ending with a newline has no empty line after it, and an
/// empty source has one empty line.
fn source_lines(src: &str) -> Vec<SourceLine> {
    let bytes = src.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    for (byte_idx, &byte) in bytes.iter().enumerate() {
        if byte == b'\n' {
            let has_cr = byte_idx > start && bytes[byte_idx - 1] == b'\r';
            let content_end = if has_cr { byte_idx - 1 } else { byte_idx };
            lines.push(SourceLine { start, content_end });
            start = byte_idx + 1;
        }
    }
    if start < src.len() || lines.is_empty() {
        lines.push(SourceLine {
            start,
            content_end: src.len(),
        });
    }
    lines
}

/// The index of the line holding byte `offset`: the last line starting at or before it.
fn line_idx_of(lines: &[SourceLine], offset: usize) -> usize {
    lines
        .partition_point(|line| line.start <= offset)
        .saturating_sub(1)
}

/// The column (in characters) of byte `offset` on `line`, clamped to the line's text.
fn column(src: &str, line: SourceLine, offset: usize) -> usize {
    let offset = offset.clamp(line.start, line.content_end);
    src[line.start..offset].chars().count()
}

/// A caret row: one source line and the columns `from..to` under which carets go.
struct CaretRow {
    line: SourceLine,
    from: usize,
    to: usize,
}

/// The source lines of a span, each followed by its carets (`mark`s: `^` under the error's
/// span, `-` under a label's), `note` after the last. See Note [Caret rows].
fn span_snippet(src: &str, span: Span, mark: char, note: &str) -> Vec<String> {
    let lines = source_lines(src);
    let (start, end) = {
        let start = floor_char_boundary(src, span.start as usize);
        let end = floor_char_boundary(src, span.end as usize);
        (start.min(end), start.max(end))
    };
    let first_idx = line_idx_of(&lines, start);
    let last_idx = if end > start {
        line_idx_of(&lines, end - 1)
    } else {
        first_idx
    };

    let mut rows: Vec<CaretRow> = lines[first_idx..=last_idx]
        .iter()
        .map(|&line| CaretRow {
            line,
            from: column(src, line, start),
            to: column(src, line, end),
        })
        .collect();
    let is_marked = |row: &CaretRow| row.to > row.from;
    let n_leading_blank = rows.iter().take_while(|row| !is_marked(row)).count();
    rows.drain(..n_leading_blank);
    let n_kept = rows
        .iter()
        .rposition(is_marked)
        .map_or(0, |row_idx| row_idx + 1);
    rows.truncate(n_kept);
    if rows.is_empty() {
        let line = lines[first_idx];
        let from = column(src, line, start);
        rows.push(CaretRow {
            line,
            from,
            to: from + 1,
        });
    }

    let mut res = Vec::new();
    let shown = rows.len().min(MAX_SPAN_LINES);
    for (number, row) in rows.iter().take(shown).enumerate() {
        let text: String = src[row.line.start..row.line.content_end]
            .chars()
            .map(|ch| if ch == '\t' { ' ' } else { ch })
            .collect();
        res.push(text.trim_end().to_string());
        if row.to > row.from {
            let last = number + 1 == shown && !note.is_empty();
            res.push(format!(
                "{}{}{}",
                " ".repeat(row.from),
                mark.to_string().repeat(row.to - row.from),
                if last {
                    format!(" {note}")
                } else {
                    String::new()
                }
            ));
        }
    }
    if rows.len() > MAX_SPAN_LINES {
        res.push("...".to_string());
    }
    res
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use expect_test::{expect, Expect};

    use super::*;
    use crate::display::output::Code;

    /// The span of the `occurrence`-th (from 0) match of `needle` in `src`.
    fn span_of(src: &str, needle: &str, occurrence: usize) -> Span {
        let (start, _) = src
            .match_indices(needle)
            .nth(occurrence)
            .expect("needle is in src");
        Span::new(start, start + needle.len())
    }

    fn check_diagnostic(src: &str, code: Code, span: Option<Span>, expect: Expect) {
        let diag = Diagnostic::new(code, "message", span);
        let text = render_diagnostic(&diag, src);
        for line in text.lines() {
            assert_eq!(line, line.trim_end(), "trailing whitespace in {text:?}");
        }
        expect.assert_eq(&text);
    }

    /// `check_diagnostic` of an error in `src` at each span, against that span's snapshot.
    fn check_spans<const N: usize>(src: &str, code: Code, cases: [(Span, Expect); N]) {
        for (span, expect) in cases {
            check_diagnostic(src, code, Some(span), expect);
        }
    }

    #[test]
    fn labels_follow_the_error_with_dashes_and_their_note() {
        let src = "(a, b,\n  a) = (1, 2, 3)\n";
        let diag = Diagnostic {
            labels: vec![crate::syntax::Label::new(
                span_of(src, "a", 0),
                "first bound here",
            )],
            ..Diagnostic::new(Code::Type, "`a` is bound twice", Some(span_of(src, "a", 1)))
        };
        expect![[r#"
            Type error: `a` is bound twice
              a) = (1, 2, 3)
              ^
            (a, b,
             - first bound here"#]]
        .assert_eq(&render_diagnostic(&diag, src));
    }

    #[test]
    fn example_from_the_brief() {
        let src = "x = 1\n:p y + 1\n";
        let diag = Diagnostic::new(
            Code::Type,
            "unbound variable `y`".to_string(),
            Some(span_of(src, "y", 0)),
        );
        expect![[r#"
            Type error: unbound variable `y`
            :p y + 1
               ^"#]]
        .assert_eq(&render_diagnostic(&diag, src));
    }

    #[test]
    fn error_kinds() {
        let labels: Vec<String> = [Code::Syntax, Code::Type, Code::Runtime, Code::Internal]
            .into_iter()
            .map(|code| render_diagnostic(&Diagnostic::new(code, "m", None), ""))
            .collect();
        expect![[r#"
            Parse error: m
            Type error: m
            Runtime error: m
            Internal error: m"#]]
        .assert_eq(&labels.join("\n"));
    }

    #[test]
    fn without_a_span_only_the_message() {
        check_diagnostic(
            "x = 1\n",
            Code::Runtime,
            None,
            expect!["Runtime error: message"],
        );
    }

    #[test]
    fn non_ascii_text_before_the_span() {
        // `é`, `λ` and `→` are 2 or 3 bytes each but one column.
        let src = "café = 1\n:p λ→é (café + ŷ)\n";
        check_spans(
            src,
            Code::Type,
            [
                (
                    span_of(src, "ŷ", 0),
                    expect![[r#"
                        Type error: message
                        :p λ→é (café + ŷ)
                                       ^"#]],
                ),
                (
                    span_of(src, "café + ŷ", 0),
                    expect![[r#"
                        Type error: message
                        :p λ→é (café + ŷ)
                                ^^^^^^^^"#]],
                ),
            ],
        );
    }

    #[test]
    fn zero_width_spans() {
        check_spans(
            "x = (1 +\ny = 2",
            Code::Syntax,
            [
                // At the end of a line: after its last character.
                (
                    Span::new(8, 8),
                    expect![[r#"
                        Parse error: message
                        x = (1 +
                                ^"#]],
                ),
                // Inside a line.
                (
                    Span::new(4, 4),
                    expect![[r#"
                        Parse error: message
                        x = (1 +
                            ^"#]],
                ),
            ],
        );
        let src = "x = (1 +\n";
        check_spans(
            src,
            Code::Syntax,
            [
                // At the end of a source ending with a newline: after the last line.
                (
                    Span::new(src.len(), src.len()),
                    expect![[r#"
                        Parse error: message
                        x = (1 +
                                ^"#]],
                ),
                // A span of only the newline is shown as its start.
                (
                    Span::new(8, 9),
                    expect![[r#"
                        Parse error: message
                        x = (1 +
                                ^"#]],
                ),
            ],
        );
        check_diagnostic(
            "",
            Code::Syntax,
            Some(Span::new(0, 0)),
            expect![[r#"
                Parse error: message

                ^"#]],
        );
    }

    #[test]
    fn multi_line_spans() {
        let src = "def f(x: Float) -> Float =\n  y = x * 2.\n\n  ŷ + zz\n:p f 1.\n";
        let from_y = span_of(src, "y = x", 0).start as usize;
        let to_zz = span_of(src, "zz", 0).end as usize;
        let from_newline = span_of(src, "\n", 0).start as usize;
        let past_y_hat = span_of(src, "ŷ", 0).end as usize + 1;
        check_spans(
            src,
            Code::Type,
            [
                (
                    Span::new(from_y, to_zz),
                    expect![[r#"
                        Type error: message
                          y = x * 2.
                          ^^^^^^^^^^

                          ŷ + zz
                        ^^^^^^^^"#]],
                ),
                // Starting at the newline of a line: that line has no spanned characters, so
                // it is dropped.
                (
                    Span::new(from_newline, past_y_hat),
                    expect![[r#"
                        Type error: message
                          y = x * 2.
                        ^^^^^^^^^^^^

                          ŷ + zz
                        ^^^^"#]],
                ),
            ],
        );
    }

    #[test]
    fn long_spans_show_four_lines() {
        let src = "xs = for i.\n  a = 1\n  b = 2\n  c = 3\n  d = 4\n  a + b\n";
        check_diagnostic(
            src,
            Code::Type,
            Some(Span::new(5, src.len() - 1)),
            expect![[r#"
                Type error: message
                xs = for i.
                     ^^^^^^
                  a = 1
                ^^^^^^^
                  b = 2
                ^^^^^^^
                  c = 3
                ^^^^^^^
                ..."#]],
        );
    }

    #[test]
    fn tabs_crlf_and_trailing_whitespace() {
        let src = "x = 1   \r\n\tz = \ty + 1\r\n";
        check_spans(
            src,
            Code::Type,
            [
                (
                    span_of(src, "y", 0),
                    expect![[r#"
                        Type error: message
                         z =  y + 1
                              ^"#]],
                ),
                // Carets under trailing spaces stay, the spaces in the source line do not.
                (
                    Span::new(5, 10),
                    expect![[r#"
                        Type error: message
                        x = 1
                             ^^^"#]],
                ),
            ],
        );
    }

    #[test]
    fn bad_spans_do_not_panic() {
        // Inside `é`, past the end, reversed.
        check_spans(
            "é = 1\n",
            Code::Internal,
            [
                (
                    Span::new(1, 2),
                    expect![[r#"
                        Internal error: message
                        é = 1
                        ^"#]],
                ),
                (
                    Span::new(100, 200),
                    expect![[r#"
                        Internal error: message
                        é = 1
                             ^"#]],
                ),
                (
                    Span::new(6, 0),
                    expect![[r#"
                        Internal error: message
                        é = 1
                        ^^^^^"#]],
                ),
            ],
        );
    }

    #[test]
    fn multi_line_messages_lose_trailing_whitespace() {
        let diag = Diagnostic::new(Code::Type, "expected  \n  Float32 ".to_string(), None);
        assert_eq!(
            render_diagnostic(&diag, ""),
            "Type error: expected\n  Float32"
        );
    }

    fn check_output(output: Output, expect: Expect) {
        expect.assert_eq(&render_output(&output, "x = 1\n:p y\n"));
    }

    #[test]
    fn outputs() {
        check_output(Output::Value("[1., 2.]".to_string()), expect!["[1., 2.]"]);
        check_output(
            Output::Type("((Fin 3) => Float32)".to_string()),
            expect!["((Fin 3) => Float32)"],
        );
        check_output(
            Output::Text("line 1\nline 2".to_string()),
            expect![[r#"
            line 1
            line 2"#]],
        );
        check_output(
            Output::Error(Diagnostic::new(
                Code::Type,
                "unbound variable `y`".to_string(),
                Some(Span::new(9, 10)),
            )),
            expect![[r#"
                Type error: unbound variable `y`
                :p y
                   ^"#]],
        );
        check_output(
            Output::Stage {
                name: "core".to_string(),
                text: "%0 = add 1 2\n%0\n".to_string(),
            },
            expect![[r#"
                === core ===
                %0 = add 1 2
                %0"#]],
        );
        check_output(
            Output::Stage {
                name: "fused".to_string(),
                text: String::new(),
            },
            expect!["=== fused ==="],
        );
    }

    #[test]
    fn timings() {
        check_output(
            Output::Timing {
                bench_name: None,
                compile: Duration::from_micros(3217),
                run: Duration::from_nanos(41_630),
                runs: None,
            },
            expect![[r#"
                Compile time: 3.217 ms
                Run time: 41.63 us"#]],
        );
        check_output(
            Output::Timing {
                bench_name: Some("matmul".to_string()),
                compile: Duration::from_micros(3217),
                run: Duration::from_micros(12_080),
                runs: Some(83),
            },
            expect![[r#"
                matmul
                Compile time: 3.217 ms
                Run time: 12.08 ms (based on 83 runs)"#]],
        );
    }
}

//! A cell's outputs as IOPub message contents: each medium gets the form it suits (the same
//! text as the terminal in `text/plain`, plus HTML tables, collapsible stage dumps and inline
//! plots where a notebook can show them).

use base64::Engine as _;
use dx_lang::display::{escape_html, render_diagnostic, render_output};
use dx_lang::session::{ChunkResult, Diagnostic, ErrorKind, Output};
use dx_lang::syntax::ChunkKind;
use jupyter_protocol::{
    DisplayData, ErrorOutput, ExecuteResult, ExecutionCount, JupyterMessageContent, Media,
    MediaType, StreamContent, Transient,
};

const RED_BOLD: &str = "\x1b[1;31m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

/// The IOPub messages of one chunk of a cell: a prose block as Markdown, a code block's outputs.
pub fn chunk_messages(
    result: &ChunkResult,
    src: &str,
    execution_count: ExecutionCount,
) -> Vec<JupyterMessageContent> {
    if let ChunkKind::Prose = result.chunk.kind {
        let text = src.get(result.chunk.span.range()).unwrap_or("");
        return vec![display(vec![
            MediaType::Plain(text.trim_end().to_string()),
            MediaType::Markdown(prose_markdown(text)),
        ])];
    }
    result
        .outputs
        .iter()
        .map(|output| output_messages(output, src, execution_count))
        .collect()
}

/// A prose block as Markdown: its text without the `'` that starts it (docs/language.md).
pub fn prose_markdown(text: &str) -> String {
    text.strip_prefix('\'')
        .unwrap_or(text)
        .trim_end()
        .to_string()
}

/// The IOPub message of one output of a cell whose source is `src`.
pub fn output_messages(
    output: &Output,
    src: &str,
    execution_count: ExecutionCount,
) -> JupyterMessageContent {
    match output {
        Output::Value(text) | Output::Type(text) => {
            execute_result(execution_count, vec![MediaType::Plain(text.clone())])
        }
        Output::Text(text) => StreamContent::stdout(&with_newline(text)).into(),
        Output::Warning(text) => StreamContent::stderr(&with_newline(text)).into(),
        Output::Table { text, grid } => execute_result(
            execution_count,
            vec![
                MediaType::Plain(text.clone()),
                MediaType::Html(grid.to_html()),
            ],
        ),
        Output::Plot(figure) => {
            let mut media = vec![
                MediaType::Plain(figure.to_text()),
                MediaType::Png(base64::engine::general_purpose::STANDARD.encode(figure.to_png())),
            ];
            // A heatmap's SVG would hold a second image of its cells: the PNG is enough.
            if figure.svg_is_small() {
                media.push(MediaType::Svg(figure.to_svg()));
            }
            display(media)
        }
        Output::Image(image) => display(vec![
            MediaType::Plain(image.to_text()),
            MediaType::Png(base64::engine::general_purpose::STANDARD.encode(image.to_png())),
        ]),
        Output::Drawing(drawing) => display(vec![
            MediaType::Plain(drawing.to_text()),
            MediaType::Html(drawing.to_svg()),
        ]),
        Output::Html(markup) => display(vec![
            MediaType::Plain(markup.clone()),
            MediaType::Html(markup.clone()),
        ]),
        Output::Error(diag) => error_output(diag, src).into(),
        Output::Stage { name, text } => display(vec![
            MediaType::Plain(render_output(output, src)),
            MediaType::Html(format!(
                "<details><summary><code>{}</code></summary><pre>{}</pre></details>",
                escape_html(name),
                escape_html(text.trim_end_matches('\n'))
            )),
        ]),
        Output::Timing { .. } => display(vec![
            MediaType::Plain(render_output(output, src)),
            MediaType::Html(timing_html(&render_output(output, src))),
        ]),
    }
}

/// An error as Jupyter shows it: the ename is the kind of error, the evalue its message, and
/// the traceback the terminal's text (source lines and carets) in colour.
pub fn error_output(diag: &Diagnostic, src: &str) -> ErrorOutput {
    let text = render_diagnostic(diag, src);
    let mut lines = text.lines();
    let mut traceback = Vec::new();
    if let Some(first) = lines.next() {
        traceback.push(match first.split_once(": ") {
            Some((label, rest)) => format!("{RED_BOLD}{label}:{RESET} {rest}"),
            None => first.to_string(),
        });
    }
    for line in lines {
        if !line.is_empty() && line.trim_start().chars().all(|ch| ch == '^') {
            traceback.push(format!("{RED}{line}{RESET}"));
        } else {
            traceback.push(line.to_string());
        }
    }
    ErrorOutput {
        ename: error_name(diag.kind()).to_string(),
        evalue: diag.message.clone(),
        traceback,
    }
}

/// The `ename` of an error: the kind of error, as one word.
fn error_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Parse => "ParseError",
        ErrorKind::Type => "TypeError",
        ErrorKind::Runtime => "RuntimeError",
        ErrorKind::Internal => "InternalError",
        ErrorKind::Export => "ExportError",
    }
}

fn execute_result(
    execution_count: ExecutionCount,
    content: Vec<MediaType>,
) -> JupyterMessageContent {
    ExecuteResult {
        execution_count,
        data: Media { content },
        metadata: Default::default(),
        // `null` fails the schema of jupyter_kernel_test (a known pitfall of the crate).
        transient: Some(Transient::default()),
    }
    .into()
}

fn display(content: Vec<MediaType>) -> JupyterMessageContent {
    DisplayData {
        data: Media { content },
        metadata: Default::default(),
        transient: None,
    }
    .into()
}

/// `Compile time: …` / `Run time: …` lines (and a benchmark's name) as a small table.
fn timing_html(text: &str) -> String {
    let mut html = String::from("<table>");
    for line in text.lines() {
        match line.split_once(": ") {
            Some((what, time)) => html.push_str(&format!(
                "<tr><th style=\"text-align:left\">{}</th><td style=\"text-align:right\">{}</td></tr>",
                escape_html(what),
                escape_html(time)
            )),
            None => html.push_str(&format!(
                "<tr><th colspan=\"2\" style=\"text-align:left\">{}</th></tr>",
                escape_html(line)
            )),
        }
    }
    html.push_str("</table>");
    html
}

fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dx_lang::syntax::Span;

    #[test]
    fn errors_keep_the_terminal_text_with_coloured_carets() {
        let src = ":p 1 + True\n";
        let diag = Diagnostic::new(dx_lang::session::Code::Type, "no", Some(Span::new(7, 11)));
        let error = error_output(&diag, src);
        assert_eq!(error.ename, "TypeError");
        assert_eq!(error.evalue, "no");
        assert_eq!(
            error.traceback[0],
            format!("{RED_BOLD}Type error:{RESET} no")
        );
        assert!(error.traceback.iter().any(|line| line.contains("^^^^")));
    }

    #[test]
    fn prose_becomes_markdown() {
        assert_eq!(
            prose_markdown("'# Title\nSome *text*.\n"),
            "# Title\nSome *text*."
        );
        assert_eq!(prose_markdown("'one line"), "one line");
    }

    #[test]
    fn timings_are_a_table() {
        assert!(timing_html("Compile time: 1 ms\nRun time: 2 us")
            .contains("<td style=\"text-align:right\">2 us</td>"));
    }
}

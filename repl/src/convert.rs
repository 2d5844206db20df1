//! `dx convert`: a literate `.dx` file to a Jupyter notebook and back (issue 8 §5).
//!
//! - Prose blocks become Markdown cells (without the `'` that starts them); a Markdown cell
//!   becomes one prose block per paragraph.
//! - Code blocks (and comment lines) become code cells; the `> ` lines after a block become the
//!   cell's output (one `stdout` stream, so that Jupyter shows them as text).
//! - Back from a notebook, every output with text (streams, `text/plain` results and displays,
//!   error tracebacks without their colours) becomes `> ` lines, as `dx run` prints them.
//!
//! dx → ipynb → dx is the identity: the blank lines after each cell (`gap`) and a missing final
//! newline are kept in the cell's `metadata.dx`. A notebook made in Jupyter has none: its cells
//! are separated by one blank line.

use dx_lang::syntax::{split_chunks, ChunkKind};
use serde_json::{json, Map, Value};

use crate::literate::push_output_lines;

/// Blank text between cells when a cell's metadata says nothing (a notebook made in Jupyter).
const DEFAULT_GAP: &str = "\n";

/// A literate `.dx` source as an nbformat 4 notebook.
pub fn dx_to_notebook(src: &str) -> Value {
    let chunks = split_chunks(src);
    let mut cells: Vec<Value> = Vec::new();
    let mut leading = String::new();
    let mut covered = 0;
    for chunk in &chunks {
        let range = chunk.span.range();
        // `>` lines are in no chunk: they are the outputs of the cell before them.
        if range.start > covered {
            let outputs = &src[covered..range.start];
            push_outputs(&mut cells, outputs);
        }
        covered = range.end;
        let text = &src[range];
        match &chunk.kind {
            ChunkKind::Blank => match cells.last_mut() {
                Some(cell) => add_gap(cell, text),
                None => leading.push_str(text),
            },
            ChunkKind::Prose => cells.push(new_cell(
                "markdown",
                text.strip_prefix('\'').unwrap_or(text),
            )),
            ChunkKind::Code(_) | ChunkKind::Comment => cells.push(new_cell("code", text)),
        }
    }
    if covered < src.len() {
        push_outputs(&mut cells, &src[covered..]);
    }
    let mut metadata = json!({
        "kernelspec": {"name": "dx", "display_name": "dx", "language": "dx"},
        "language_info": {"name": "dx", "file_extension": ".dx"},
    });
    if !leading.is_empty() {
        metadata["dx"] = json!({ "leading": leading });
    }
    json!({"nbformat": 4, "nbformat_minor": 5, "metadata": metadata, "cells": cells})
}

/// A cell with `text` as its source; its metadata notes a missing final newline, and (until a
/// blank chunk says otherwise) that no blank line follows it.
fn new_cell(cell_type: &str, text: &str) -> Value {
    let (source, newline) = match text.strip_suffix('\n') {
        Some(source) => (source, true),
        None => (text, false),
    };
    let mut dx = Map::new();
    if !newline {
        dx.insert("newline".into(), Value::Bool(false));
    }
    dx.insert("gap".into(), Value::String(String::new()));
    let mut cell = json!({
        "cell_type": cell_type,
        "id": format!("cell-{}", rand_id(source)),
        "metadata": {"dx": dx},
        "source": source,
    });
    if cell_type == "code" {
        cell["outputs"] = json!([]);
        cell["execution_count"] = Value::Null;
    }
    cell
}

/// A short id for a cell, made from its text (nbformat 4.5 wants one; it need not be random).
fn rand_id(source: &str) -> String {
    let hash = source
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
        });
    format!("{hash:016x}")
}

/// Records the blank text after a cell.
fn add_gap(cell: &mut Value, text: &str) {
    if let Some(dx) = cell["metadata"]["dx"].as_object_mut() {
        let gap = format!(
            "{}{text}",
            dx.get("gap").and_then(Value::as_str).unwrap_or("")
        );
        dx.insert("gap".into(), Value::String(gap));
    }
}

/// Adds `> ` lines as the stdout output of the last code cell.
fn push_outputs(cells: &mut [Value], lines: &str) {
    let text: String = lines
        .lines()
        .map(|line| {
            let line = line.strip_prefix('>').unwrap_or(line);
            let line = line.strip_prefix(' ').unwrap_or(line);
            format!("{line}\n")
        })
        .collect();
    if let Some(cell) = cells
        .iter_mut()
        .rev()
        .find(|cell| cell["cell_type"] == "code")
    {
        if let Some(outputs) = cell["outputs"].as_array_mut() {
            outputs.push(json!({"output_type": "stream", "name": "stdout", "text": text}));
        }
    }
}

/// A notebook as a literate `.dx` source, or why it is not a notebook.
pub fn notebook_to_dx(notebook: &Value) -> Result<String, String> {
    let cells = notebook["cells"]
        .as_array()
        .ok_or("not a Jupyter notebook: no `cells` list")?;
    let mut src = notebook["metadata"]["dx"]["leading"]
        .as_str()
        .unwrap_or("")
        .to_string();
    for (idx, cell) in cells.iter().enumerate() {
        let source = text_of(&cell["source"]);
        let dx = &cell["metadata"]["dx"];
        let newline = dx["newline"].as_bool().unwrap_or(true);
        match cell["cell_type"].as_str() {
            Some("markdown") => {
                let paragraphs: Vec<String> = source
                    .split("\n\n")
                    .map(|paragraph| {
                        format!("'{}", paragraph.strip_prefix('\'').unwrap_or(paragraph))
                    })
                    .collect();
                src.push_str(&paragraphs.join("\n\n"));
            }
            Some("code") => src.push_str(&source),
            // Raw cells have no place in a `.dx` file.
            _ => continue,
        }
        if newline {
            src.push('\n');
        }
        for output in cell["outputs"].as_array().into_iter().flatten() {
            push_output_lines(&mut src, &output_text(output));
        }
        let last = idx + 1 == cells.len();
        src.push_str(
            dx["gap"]
                .as_str()
                .unwrap_or(if last { "" } else { DEFAULT_GAP }),
        );
    }
    Ok(src)
}

/// nbformat's multi-line strings are a string or a list of strings.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// The text of one output, as `dx run` would print it.
fn output_text(output: &Value) -> String {
    match output["output_type"].as_str() {
        Some("stream") => text_of(&output["text"]),
        Some("execute_result" | "display_data") => text_of(&output["data"]["text/plain"]),
        Some("error") => {
            let lines: Vec<String> = output["traceback"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(strip_ansi)
                .collect();
            lines.join("\n")
        }
        _ => String::new(),
    }
}

/// Text without ANSI colour sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut res = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\x1b' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            res.push(ch);
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(src: &str) {
        let notebook = dx_to_notebook(src);
        assert_eq!(
            notebook_to_dx(&notebook).as_deref(),
            Ok(src),
            "{notebook:#}"
        );
    }

    #[test]
    fn literate_files_round_trip() {
        round_trip("'# Title\nSome prose.\n\n:p 1.0\n> 1.\n\nx = 2\n\n\n-- a comment\n:p x\n> 2\n");
        round_trip("\n\n:p 1\n>\n> two\n");
        round_trip(":p 1");
        round_trip("def f(x: Float) -> Float =\n  y = x\n\n  y\n\n:p f 1.0\n");
        round_trip("");
    }

    #[test]
    fn blocks_become_cells_and_outputs_become_streams() {
        let notebook = dx_to_notebook("'Prose\n\n:p 1.0\n> 1.\n");
        let cells = notebook["cells"].as_array().expect("cells");
        assert_eq!(cells[0]["cell_type"], "markdown");
        assert_eq!(cells[0]["source"], "Prose");
        assert_eq!(cells[1]["source"], ":p 1.0");
        assert_eq!(cells[1]["outputs"][0]["text"], "1.\n");
    }

    #[test]
    fn notebook_outputs_become_output_lines() {
        let notebook = json!({"cells": [
            {"cell_type": "markdown", "source": ["# T\n", "\n", "more"], "metadata": {}},
            {"cell_type": "code", "source": ":p x + True", "metadata": {}, "outputs": [
                {"output_type": "error", "ename": "TypeError", "evalue": "e",
                 "traceback": ["\u{1b}[1;31mType error:\u{1b}[0m e", "\u{1b}[31m^^\u{1b}[0m"]},
                {"output_type": "display_data", "data": {"text/plain": ["a\n", "b"]}}
            ]}
        ]});
        assert_eq!(
            notebook_to_dx(&notebook).as_deref(),
            Ok("'# T\n\n'more\n\n:p x + True\n> Type error: e\n> ^^\n> a\n> b\n")
        );
        assert!(notebook_to_dx(&json!({})).is_err());
    }
}

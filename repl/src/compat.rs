//! Temporary stand-ins for `dx_lang::syntax::entry_status` and
//! `dx_lang::display::render_output`, which are being written in the library.
//! TODO: delete this module once they land and import them from the library instead.

use dx_lang::session::Output;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryStatus {
    Complete,
    Incomplete,
}

/// Whether a REPL entry is complete: brackets balance, and the last line is neither indented
/// nor ends with `=` (an indented block ends with an empty line).
pub fn entry_status(src: &str) -> EntryStatus {
    let mut depth: i64 = 0;
    for ch in src.chars() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
    }
    let last_line = src.rsplit('\n').next().unwrap_or("");
    let ends_block = last_line.trim().is_empty() && src.contains('\n');
    let open = depth > 0
        || last_line.trim_end().ends_with('=')
        || (last_line.starts_with([' ', '\t']) && !ends_block);
    if open && !ends_block {
        EntryStatus::Incomplete
    } else {
        EntryStatus::Complete
    }
}

pub fn render_output(output: &Output, _src: &str) -> String {
    match output {
        Output::Value(text) | Output::Type(text) | Output::Text(text) => text.clone(),
        Output::Error(diagnostic) => format!("{:?} error: {}", diagnostic.kind, diagnostic.message),
        Output::Stage { name, text } => format!("{name}:\n{text}"),
        Output::Timing { bench_name, compile, run, runs } => {
            let mut text = String::new();
            if let Some(name) = bench_name {
                text.push_str(name);
                text.push('\n');
            }
            let compile = dx_lang::session::format_duration(*compile);
            let run = dx_lang::session::format_duration(*run);
            text.push_str(&format!("Compile time: {compile}\nRun time: {run}"));
            if let Some(runs) = runs {
                text.push_str(&format!(" (based on {runs} runs)"));
            }
            text
        }
    }
}

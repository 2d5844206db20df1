//! A temporary stand-in for `dx_lang::syntax::entry_status`, which is being written in the
//! library. TODO: delete this module once it lands and import it from the library instead.

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

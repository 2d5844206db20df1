//! Editor support through real clients: `dx lsp` driven by pytest-lsp (diagnostics as you
//! type, hover, completion, go to definition, document symbols), the Pygments lexer the kernel
//! names in `language_info`, and the TextMate grammar. The Python side is `tests/editors/`,
//! run with pytest from the tests' pinned venv (`.ci/python-venv`).

mod common;

use std::process::Command;

use common::{python, workspace_root};

#[test]
fn editors_get_a_language_server_a_lexer_and_a_grammar() {
    let output = Command::new(python())
        .args(["-m", "pytest", "-v", "-p", "no:cacheprovider", "."])
        .current_dir(workspace_root().join("repl/tests/editors"))
        .env("DX_BIN", env!("CARGO_BIN_EXE_dx"))
        .env("DX_HISTORY", "")
        .output()
        .expect("the venv's python runs");
    let report = String::from_utf8_lossy(&output.stdout);
    println!("{report}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "the editor tests failed:\n{report}"
    );
    assert!(!report.contains("skipped"), "a test was skipped:\n{report}");
    assert!(report.contains("7 passed"), "every test ran:\n{report}");
}

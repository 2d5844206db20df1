//! Editor support through real clients: `dx lsp` driven by pytest-lsp (diagnostics as you
//! type, hover, completion, go to definition, document symbols), the Pygments lexer the kernel
//! names in `language_info`, and the TextMate grammar. The Python side is `tests/editors/`,
//! run with pytest from the tests' pinned venv (`.ci/python-venv`).

mod common;

use common::{run_python, workspace_root};

#[test]
fn editors_get_a_language_server_a_lexer_and_a_grammar() {
    let dir = workspace_root().join("repl/tests/editors");
    let args = ["-m", "pytest", "-v", "-p", "no:cacheprovider", "."];
    let (passed, report) = run_python(&args, &dir, env!("CARGO_BIN_EXE_dx"));
    println!("{report}");
    assert!(passed, "the editor tests failed:\n{report}");
    assert!(!report.contains("skipped"), "a test was skipped:\n{report}");
    assert!(report.contains("9 passed"), "every test ran:\n{report}");
}

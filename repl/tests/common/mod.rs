//! What the tests that talk to Python share: the pinned venv `.ci/python-venv` makes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repl/ is inside the workspace")
        .to_path_buf()
}

/// The test venv's Python (NumPy, Jupyter clients; `repl/tests/python-requirements.txt`),
/// made by `.ci/python-venv` when missing. Failing to make it fails the test: nothing is
/// skipped.
pub fn python() -> PathBuf {
    let script = workspace_root().join(".ci/python-venv");
    let output = Command::new("bash")
        .arg(&script)
        .output()
        .expect("bash runs .ci/python-venv");
    assert!(
        output.status.success(),
        "could not make the tests' Python venv (run `.ci/python-venv`, which needs python3 \
         with venv and, the first time, PyPI):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// Runs `command` and returns what it printed on stdout; fails the test if it fails, with what
/// it printed (`what` names it in that message).
#[allow(dead_code)] // Not every test file that includes this module runs commands this way.
pub fn stdout_of_success(command: &mut Command, what: &str) -> String {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("{what} does not start: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Runs the venv's Python with `args` in `dir`, with `DX_BIN` naming the `dx` under test;
/// returns whether it succeeded and what it printed (stdout, then stderr).
#[allow(dead_code)] // Not every test file that includes this module runs Python scripts.
pub fn run_python(args: &[&str], dir: &Path, dx: &str) -> (bool, String) {
    let output = Command::new(python())
        .args(args)
        .current_dir(dir)
        .env("DX_BIN", dx)
        .env("DX_HISTORY", "")
        .output()
        .expect("the venv's python runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), report)
}

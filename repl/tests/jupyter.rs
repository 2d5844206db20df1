//! The Jupyter kernel against real clients: `jupyter_kernel_test` with a sample for every test
//! it has, `jupyter_client` (interrupt, errors, stop-on-error, a forged signature) and
//! `nbclient` (the tour notebook; the pixels of a `:plotgrad`). The Python side is
//! `tests/jupyter/test_dx_kernel.py`.
//!
//! The Python venv is the tests' pinned one, made by `.ci/python-venv` (run here when it is
//! missing; it needs PyPI the first time). A failure to make it fails this test: nothing is skipped.

mod common;

use std::process::Command;

use common::{python, stdout_of_success, workspace_root};

#[test]
fn real_jupyter_clients_pass() {
    let python = python();
    let jupyter = tempfile::tempdir().expect("a temporary directory");
    let dx = env!("CARGO_BIN_EXE_dx");
    let prefix = jupyter.path().join("prefix");
    stdout_of_success(
        Command::new(dx)
            .args(["kernel", "install", "--prefix"])
            .arg(&prefix),
        "dx kernel install",
    );
    let tests_dir = workspace_root().join("repl/tests/jupyter");
    let output = Command::new(&python)
        .args([
            "-m",
            "unittest",
            "-v",
            "test_dx_kernel",
            "test_kernel_lifecycle",
        ])
        .current_dir(&tests_dir)
        .env("JUPYTER_PATH", prefix.join("share/jupyter"))
        .env("JUPYTER_DATA_DIR", jupyter.path().join("data"))
        .env("JUPYTER_CONFIG_DIR", jupyter.path().join("config"))
        .env("JUPYTER_RUNTIME_DIR", jupyter.path().join("runtime"))
        .env("JUPYTER_PLATFORM_DIRS", "1")
        .env("DX_TOUR", workspace_root().join("examples/tour.ipynb"))
        .env("DX_HISTORY", "")
        .env("DX_BIN", dx)
        .output()
        .expect("the venv's python runs");
    let report = String::from_utf8_lossy(&output.stderr);
    println!("{}{report}", String::from_utf8_lossy(&output.stdout));
    assert!(
        output.status.success(),
        "the Python tests failed:\n{report}"
    );
    assert!(
        !report.contains("skipped"),
        "a Python test was skipped:\n{report}"
    );
}

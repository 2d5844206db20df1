//! The libraries' values against NumPy and JAX (issue 47): each `tests/libraries/NAME.dx`
//! imports a library, computes values with it and saves them with `save_npy`; `NAME.py` beside
//! it, run afterwards in the same folder by the tests' Python venv, computes the same values
//! with NumPy (or `jax.numpy`/`jax.scipy`) and fails unless they agree; the files the scripts
//! read are in `tests/libraries/data/`. The literate tests of `tests/dx/` show the same
//! libraries as a reader sees them; these check their numbers.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn library_checks() -> Vec<PathBuf> {
    let dir = common::workspace_root().join("tests/libraries");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/libraries is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "dx"))
        .collect();
    scripts.sort();
    scripts
}

/// Runs `script` with the `dx` under test in `dir` (a fresh copy, so that its `.npy` files
/// land there); panics with dx's output when it fails.
fn run_dx(script: &Path, dir: &Path) {
    let copy = dir.join(script.file_name().expect("a file name"));
    std::fs::copy(script, &copy).expect("copy the script");
    // The files the scripts read (`netpbm`'s images).
    let data = script.with_file_name("data");
    if data.is_dir() {
        std::fs::create_dir_all(dir.join("data")).expect("a data folder");
        for entry in std::fs::read_dir(&data).expect("tests/libraries/data is readable") {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().expect("a file name");
            std::fs::copy(&path, dir.join("data").join(name)).expect("copy a data file");
        }
    }
    common::stdout_of_success(
        Command::new(env!("CARGO_BIN_EXE_dx"))
            .arg("run")
            .arg(&copy)
            .env("DX_HISTORY", ""),
        &format!("dx run {}", script.display()),
    );
}

#[test]
fn every_library_agrees_with_numpy() {
    let scripts = library_checks();
    assert!(!scripts.is_empty(), "tests/libraries has no checks");
    let mut failures = Vec::new();
    for script in &scripts {
        let name = script.file_stem().expect("a stem").to_string_lossy();
        let dir = std::env::temp_dir().join(format!("dx-library-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        run_dx(script, &dir);
        let checker = script.with_extension("py");
        assert!(
            checker.exists(),
            "{} has no {}",
            script.display(),
            checker.display()
        );
        let checker = checker.to_string_lossy().to_string();
        let (ok, report) = common::run_python(&[&checker], &dir, env!("CARGO_BIN_EXE_dx"));
        if !ok {
            failures.push(format!("{name}:\n{report}"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

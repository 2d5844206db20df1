//! Every literate `.dx` file in `tests/dx/` and `examples/` must reproduce itself under
//! `dx test` (docs/language.md): its `> ` outputs are what dx prints today.

use std::path::PathBuf;
use std::process::Command;

fn dx_files() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["tests/dx", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|ext| ext == "dx") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn literate_files_are_quines() {
    let files = dx_files();
    assert!(
        files.len() >= 3,
        "expected the literate test files, found {files:?}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_dx"))
        .arg("test")
        .args(&files)
        .output()
        .expect("dx runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "dx test failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("{} passed, 0 failed", files.len())),
        "{stdout}"
    );
}

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
    dx_test_passes(&files);
}

/// `dx test` of literate files reproduces every one of them.
fn dx_test_passes(files: &[PathBuf]) {
    let output = Command::new(env!("CARGO_BIN_EXE_dx"))
        .arg("test")
        .args(files)
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

/// docs/adding-a-primitive.md walks through the code of one primitive: every line it quotes
/// from a file (a ```` ```rust path ```` block) is in that file, in the quoted order, and its
/// session (the ```` ```dx ```` block) reproduces itself under `dx test`.
#[test]
fn the_guide_to_adding_a_primitive_quotes_the_code_as_it_is() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let guide = std::fs::read_to_string(root.join("docs/adding-a-primitive.md")).unwrap();
    let mut quoted_files = 0;
    let mut sessions = Vec::new();
    let mut lines = guide.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim().strip_prefix("```") else {
            continue;
        };
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|line| line.trim() != "```")
            .collect();
        match info.split_once(' ') {
            Some(("rust", path)) => {
                let source = std::fs::read_to_string(root.join(path))
                    .unwrap_or_else(|error| panic!("{path}: {error}"));
                let mut source_lines = source.lines().map(str::trim);
                for quoted in block.iter().map(|line| line.trim()) {
                    assert!(
                        source_lines.any(|line| line == quoted),
                        "{path} has no line `{quoted}` after the ones quoted before it"
                    );
                }
                quoted_files += 1;
            }
            _ if info == "dx" => {
                let indent = block[0].len() - block[0].trim_start().len();
                let text: Vec<&str> = block.iter().map(|line| &line[indent..]).collect();
                sessions.push(text.join("\n") + "\n");
            }
            _ => {}
        }
    }
    assert!(quoted_files >= 5, "{quoted_files} quoted files");
    assert_eq!(sessions.len(), 1);
    let dir = std::env::temp_dir().join(format!("dx-guide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("adding_a_primitive.dx");
    std::fs::write(&file, &sessions[0]).unwrap();
    dx_test_passes(&[file]);
    std::fs::remove_dir_all(&dir).ok();
}

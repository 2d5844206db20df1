//! `dx convert`: every literate file of `examples/` and `tests/dx/` survives dx → ipynb → dx
//! unchanged, and the tour notebook (outputs made by the kernel) converts to a `.dx` file whose
//! outputs are exactly what `dx run` prints: the notebook and the terminal show the same things.

use std::path::{Path, PathBuf};
use std::process::Command;

fn dx(args: &[&Path]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dx"))
        .args(args)
        .output()
        .expect("dx runs")
}

fn literate_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["examples", "tests/dx"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("the directory exists") {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|ext| ext == "dx") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_literate_file_round_trips_through_a_notebook() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let notebook = dir.path().join("file.ipynb");
    let back = dir.path().join("back.dx");
    let files = literate_files();
    assert!(files.len() >= 3, "examples and tests are found");
    for file in files {
        let to_notebook = dx(&[Path::new("convert"), &file, &notebook]);
        assert!(
            to_notebook.status.success(),
            "{}: {to_notebook:?}",
            file.display()
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&notebook).expect("written"))
                .expect("the notebook is JSON");
        assert_eq!(json["nbformat"], 4);
        let to_dx = dx(&[Path::new("convert"), &notebook, &back]);
        assert!(to_dx.status.success(), "{}: {to_dx:?}", file.display());
        let original = std::fs::read_to_string(&file).expect("readable");
        let round_tripped = std::fs::read_to_string(&back).expect("written");
        assert_eq!(round_tripped, original, "{} changed", file.display());
    }
}

#[test]
fn the_tour_notebook_shows_what_dx_run_prints() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let tour = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tour.ipynb");
    let tour_dx = dir.path().join("tour.dx");
    let converted = dx(&[Path::new("convert"), &tour, &tour_dx]);
    assert!(converted.status.success(), "{converted:?}");
    let test = dx(&[Path::new("test"), &tour_dx]);
    assert!(
        test.status.success(),
        "{}",
        String::from_utf8_lossy(&test.stdout)
    );
}

#[test]
fn convert_needs_a_dx_and_a_notebook() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("a.txt");
    std::fs::write(&file, "x").expect("write");
    let wrong = dx(&[Path::new("convert"), &file, &dir.path().join("b.dx")]);
    assert_eq!(wrong.status.code(), Some(2));
    let not_json = dir.path().join("bad.ipynb");
    std::fs::write(&not_json, "{").expect("write");
    let bad = dx(&[Path::new("convert"), &not_json, &dir.path().join("b.dx")]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not JSON"));
}

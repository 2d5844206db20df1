//! `.npy` and CSV round trips with NumPy keep every bit (issue 10): dx writes random tables,
//! NumPy reads them, checks that the CSV and `.npy` copies agree bit for bit and writes them
//! back; dx reads NumPy's files and compares them with the originals.
//!
//! The Python is the tests' pinned venv (`.ci/python-venv`, made on first use); without it the
//! test fails and says how to get one.

mod common;

use std::path::Path;
use std::process::Command;

fn dx_run(dir: &Path, src: &str) -> String {
    let file = dir.join("script.dx");
    std::fs::write(&file, src).expect("write the script");
    common::stdout_of_success(
        Command::new(env!("CARGO_BIN_EXE_dx")).arg("run").arg(&file),
        "dx run",
    )
}

const NUMPY_SIDE: &str = r#"
import sys, numpy as np
d = sys.argv[1]
for name, dtype in [("f32", np.float32), ("f64", np.float64), ("i32", np.int32)]:
    a = np.load(f"{d}/{name}.npy")
    assert a.dtype == dtype and a.shape == (7, 5), (name, a.dtype, a.shape)
    c = np.loadtxt(f"{d}/{name}.csv", delimiter=",", dtype=dtype)
    assert c.shape == (7, 5), (name, c.shape)
    assert (a.view(np.uint8) == c.view(np.uint8)).all(), name
    np.save(f"{d}/{name}_back.npy", a)
    with open(f"{d}/{name}_back.csv", "w") as f:
        for row in a:
            f.write(",".join(repr(x.item()) if dtype != np.int32 else str(x) for x in row) + "\n")
print("numpy ok")
"#;

#[test]
fn npy_and_csv_round_trips_through_numpy_keep_every_bit() {
    let python = common::python();
    let dir = std::env::temp_dir().join(format!("dx-numpy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let tables = "\
f32 = for i:(Fin 7) j:(Fin 5). randn (ixkey (new_key 1) (i, j)) * 1000.0
f64 = for i:(Fin 7) j:(Fin 5). (cast (randn (ixkey (new_key 2) (i, j))) :: Float64) / 3.0
i32 = for i:(Fin 7) j:(Fin 5). f_to_i (randn (ixkey (new_key 3) (i, j)) * 100000.0)
";
    let writes = "\
save_npy \"f32.npy\" f32
save_csv \"f32.csv\" f32
save_npy \"f64.npy\" f64
save_csv \"f64.csv\" f64
save_npy \"i32.npy\" i32
save_csv \"i32.csv\" i32
";
    dx_run(&dir, &format!("{tables}{writes}"));
    common::stdout_of_success(
        Command::new(&python).arg("-c").arg(NUMPY_SIDE).arg(&dir),
        "the NumPy side",
    );
    let reads = "\
a : (Fin 7)=>(Fin 5)=>Float = load_npy \"f32_back.npy\"
b : (Fin 7)=>(Fin 5)=>Float = load_csv \"f32_back.csv\"
c : (Fin 7)=>(Fin 5)=>Float64 = load_npy \"f64_back.npy\"
d : (Fin 7)=>(Fin 5)=>Float64 = load_csv \"f64_back.csv\"
e : (Fin 7)=>(Fin 5)=>Int = load_npy \"i32_back.npy\"
f : (Fin 7)=>(Fin 5)=>Int = load_csv \"i32_back.csv\"
:p all for i. all for j. a[i, j] == f32[i, j] && b[i, j] == f32[i, j] && c[i, j] == f64[i, j] && d[i, j] == f64[i, j] && e[i, j] == i32[i, j] && f[i, j] == i32[i, j]
";
    let stdout = dx_run(&dir, &format!("{tables}{reads}"));
    assert!(stdout.ends_with("> True\n"), "{stdout}");
}

//! Numerical edge cases against JAX (issue 49): `logsumexp`, `softmax` and `logsoftmax` with
//! infinities, ties and NaNs of `min`/`max`/`maximum`/`minimum` and their derivatives, empty
//! reductions, and `hessian`, `value_and_grad` and `jacobian` of tuples. The cases and the
//! comparison are in `tests/jax/edges.py`, which computes JAX's values in the tests' pinned
//! venv (`.ci/python-venv`) and runs the same expressions through `dx`.

mod common;

use std::process::Command;

use common::{python, workspace_root};

#[test]
fn edge_cases_agree_with_jax() {
    let output = Command::new(python())
        .arg(workspace_root().join("repl/tests/jax/edges.py"))
        .env("DX_BIN", env!("CARGO_BIN_EXE_dx"))
        .env("DX_HISTORY", "")
        .output()
        .expect("the venv's python runs");
    let report = String::from_utf8_lossy(&output.stdout);
    println!("{report}{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "dx differs from JAX:\n{report}");
}

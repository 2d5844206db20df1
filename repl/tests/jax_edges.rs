//! Numerical edge cases against JAX (issue 49): `logsumexp`, `softmax` and `logsoftmax` with
//! infinities, ties and NaNs of `min`/`max`/`maximum`/`minimum` and their derivatives, empty
//! reductions, and `hessian`, `value_and_grad` and `jacobian` of tuples. The cases and the
//! comparison are in `tests/jax/edges.py`, which computes JAX's values in the tests' pinned
//! venv (`.ci/python-venv`) and runs the same expressions through `dx`.

mod common;

use common::{run_python, workspace_root};

#[test]
fn edge_cases_agree_with_jax() {
    let dir = workspace_root().join("repl/tests/jax");
    let (passed, report) = run_python(&["edges.py"], &dir, env!("CARGO_BIN_EXE_dx"));
    println!("{report}");
    assert!(passed, "dx differs from JAX:\n{report}");
}

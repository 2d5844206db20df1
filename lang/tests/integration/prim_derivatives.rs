//! Table-driven derivative tests: every differentiable scalar built-in, in reverse mode
//! (`grad`) and forward mode (`deriv`), against central finite differences in Float64.

use dx_lang::core::value::{ArrayData, Value};
use dx_lang::session::{Session, SessionConfig};

/// Each entry is a function body in `x` (a Float64 scalar).
const FUNCTIONS: &[&str] = &[
    "sqrt x",
    "exp x",
    "exp2 x",
    "log x",
    "log2 x",
    "log10 x",
    "log1p x",
    "expm1 x",
    "sin x",
    "cos x",
    "tan x",
    "tanh x",
    "sinh x",
    "cosh x",
    "atan x",
    "abs x",
    "neg x",
    "sq x",
    "pow x 2.5",
    "pow 2.5 x",
    "pow x x",
    "atan2 x 0.7",
    "atan2 0.7 x",
    "x `mod` 0.7",
    "min x 0.3",
    "max x 0.3",
    "x / 1.7",
    "1.7 / x",
    "x * x * x",
    "x - 2.0 * x",
    "floor x",
    "select(x > 1.0, x * x, 3.0 * x)",
    "(i_to_f (f_to_i x) :: Float64)",
];

// Points away from the discontinuities of `mod`, `floor`, `select` and `min`/`max` ties.
const POINTS: &[f64] = &[0.37, 1.3, 2.2];

fn scalar(value: &Value) -> f64 {
    match value {
        Value::Array(array) => match &*array.data {
            ArrayData::F64(data) => data[0],
            other => panic!("expected a Float64, got {other:?}"),
        },
        Value::Tuple(_) => panic!("expected a scalar"),
    }
}

#[test]
fn every_scalar_builtin_differentiates_like_finite_differences() {
    let mut session = Session::new(SessionConfig::default());
    let mut checked = 0;
    for body in FUNCTIONS {
        for point in POINTS {
            let f = |at: f64| format!("(\\x:Float64. {body}) ({at:?} :: Float64)");
            let mut eval = |src: &str| -> f64 {
                let (_, value) = session
                    .evaluate(src)
                    .unwrap_or_else(|err| panic!("{src}: {}", err.message));
                scalar(&value)
            };
            let step = 1e-6;
            let finite = (eval(&f(point + step)) - eval(&f(point - step))) / (2.0 * step);
            let lambda = format!("(\\x:Float64. {body})");
            let at = format!("({point:?} :: Float64)");
            let reverse = eval(&format!("grad {lambda} {at}"));
            let forward = eval(&format!("deriv {lambda} {at}"));
            let scale = finite.abs().max(1.0);
            assert!(
                (reverse - finite).abs() <= 1e-6 * scale,
                "grad of {body} at {point}: {reverse} vs {finite}"
            );
            assert!(
                (forward - finite).abs() <= 1e-6 * scale,
                "deriv of {body} at {point}: {forward} vs {finite}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, FUNCTIONS.len() * POINTS.len());
}

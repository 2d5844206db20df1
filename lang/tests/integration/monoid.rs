//! `reduce` and `assoc_scan` over user monoids (issue 11, [Paszke21]), through the session:
//!
//! - the issue's acceptance block, on all three engines;
//! - gradients and JVPs of random closed monoids built from `+`, `×`, `max`, `min` and tuples
//!   against central finite differences in Float64, on random arrays with zeros (ties of
//!   `max`/`min` are kinks: there the gradient must be a subgradient);
//! - nesting (cumulative products of cumulative products, [Paszke21] §4), inside `for` too;
//! - the gradient of `logsumexp` is `softmax`;
//! - the structure of the `transposed` stage of a `cumprod` gradient (a right scan, no loop);
//! - the reference interpreter, the bulk evaluator and the fused engine agree bit for bit, on
//!   any number of threads, on arrays of several chunks (Note [Monoid order]);
//! - the BOT of a reduce or scan inside `for` (no `build1` left, the values of each row);
//! - printed IR with monoid statements parses back to the same text.

use crate::common::{count_stmts, outputs, rel_err, session, stage_text, value, value_on, Rng};
use dx_lang::core::ir::Expr;
use dx_lang::core::value::{ArrayData, Value};
use dx_lang::session::{Engine, Session};

/// Tolerances and steps, in one place (docs/architecture.md).
mod tol {
    /// The step of central finite differences.
    pub const FD_STEP: f64 = 1e-6;
    /// Relative error allowed between a derivative and its finite difference.
    pub const FD_REL: f64 = 1e-6;
    /// How far apart the values under `max`/`min` must be for finite differences.
    pub const TIE_MARGIN: f64 = 1e-3;
    /// Relative error allowed between the gradient of `logsumexp` and `softmax` (Float64).
    pub const SOFTMAX_REL: f64 = 1e-12;
}

fn numbers(value: &Value) -> Vec<f64> {
    match value {
        Value::Tuple(items) => items.iter().flat_map(numbers).collect(),
        Value::Array(array) => match &*array.data {
            ArrayData::F64(values) => values.clone(),
            ArrayData::F32(values) => values.iter().map(|value| f64::from(*value)).collect(),
            other => panic!("expected floats, found {:?}", other.elem()),
        },
    }
}

fn eval_numbers(session: &mut Session, expr: &str) -> Vec<f64> {
    let (_, value) = session
        .evaluate(expr)
        .unwrap_or_else(|diag| panic!("{expr}: {:?} error: {}", diag.kind(), diag.message));
    numbers(&value)
}

/// A `(Fin n)=>Float64` table literal.
fn table_lit(values: &[f64]) -> String {
    let items: Vec<String> = values.iter().map(|value| format!("{value:?}")).collect();
    format!(
        "([{}] :: (Fin {})=>Float64)",
        items.join(", "),
        values.len()
    )
}

#[test]
fn acceptance_block_of_the_issue() {
    let cases = [
        (":p cumprod [2., 3., 4.]", "[2., 6., 24.]"),
        (
            ":p grad (\\x. sum (cumprod x)) [2., 3., 4.]",
            "[16., 10., 6.]",
        ),
        (
            ":p grad (\\x. sum (cumprod x)) [2., 0., 4.]",
            "[1., 10., 0.]",
        ),
        (":p reduce([1., 2., 3.], 0.0, \\a b. a + b + a * b)", "23."),
    ];
    for engine in [Engine::Fused, Engine::Bulk, Engine::Reference] {
        let mut session = session(engine);
        for (src, expected) in cases {
            assert_eq!(value(&mut session, src), expected, "{src} on {engine:?}");
        }
    }
}

/// A closed monoid as dx source: element type (`Float64` leaves), identity, operator, and
/// whether it has kinks (`max`, `min`).
#[derive(Clone, Debug)]
struct Monoid {
    arity: usize,
    identity: String,
    op: String,
    kinked: bool,
}

/// A random scalar monoid, or a pair of them (the product monoid), or affine-map composition
/// `(a1, a2) ⊙ (b1, b2) = (a1 b1, a2 b1 + b2)` (not commutative).
fn random_monoid(rng: &mut Rng) -> Monoid {
    const SCALAR: [(&str, &str, bool); 5] = [
        ("0.0", "L + R", false),
        ("1.0", "L * R", false),
        ("0.0", "L + R + L * R", false),
        ("-infinity", "max L R", true),
        ("infinity", "min L R", true),
    ];
    let scalar = |rng: &mut Rng, left: &str, right: &str| {
        let (identity, op, kinked) = SCALAR[rng.below(SCALAR.len())];
        let op = op.replace('L', left).replace('R', right);
        (identity.to_string(), op, kinked)
    };
    match rng.below(3) {
        0 => {
            let (identity, op, kinked) = scalar(rng, "a", "b");
            Monoid {
                arity: 1,
                identity,
                op: format!("\\a b. {op}"),
                kinked,
            }
        }
        1 => {
            let (id1, op1, kinked1) = scalar(rng, "a1", "b1");
            let (id2, op2, kinked2) = scalar(rng, "a2", "b2");
            Monoid {
                arity: 2,
                identity: format!("({id1}, {id2})"),
                op: format!("\\(a1, a2) (b1, b2). ({op1}, {op2})"),
                kinked: kinked1 || kinked2,
            }
        }
        _ => Monoid {
            arity: 2,
            identity: "(1.0, 0.0)".to_string(),
            op: "\\(a1, a2) (b1, b2). (a1 * b1, a2 * b1 + b2)".to_string(),
            kinked: false,
        },
    }
}

/// A scalar function of `x` through the monoid: its elements are made from `x` (a pair from
/// `x[i]` and `sin x[i]`), reduced or scanned, and summed with weights.
fn monoid_function(monoid: &Monoid, scan: bool) -> String {
    let elements = if monoid.arity == 1 {
        "x".to_string()
    } else {
        "(for i. (x[i], sin x[i]))".to_string()
    };
    let prim = if scan { "assoc_scan" } else { "reduce" };
    let combined = format!("{prim}({elements}, {}, {})", monoid.identity, monoid.op);
    let weigh = match (scan, monoid.arity) {
        (false, 1) => "ys",
        (false, _) => "fst ys + 0.5 * snd ys",
        (true, 1) => "sum (for i. ys[i] * n_to_f (ordinal i + 1))",
        (true, _) => "sum (for i. fst ys[i] * n_to_f (ordinal i + 1) + 0.5 * snd ys[i])",
    };
    format!("\\x. (\\ys. {weigh}) ({combined})")
}

/// A random point of `n` values in [-1.5, 1.5], with zeros; for a monoid with kinks the values
/// are kept `TIE_MARGIN` apart (so that finite differences are valid).
fn random_point(rng: &mut Rng, n: usize, kinked: bool) -> Vec<f64> {
    loop {
        let point: Vec<f64> = (0..n)
            .map(|_| {
                if rng.below(4) == 0 {
                    0.0
                } else {
                    rng.uniform(-1.5, 1.5)
                }
            })
            .collect();
        if !kinked {
            return point;
        }
        let mut all: Vec<f64> = point.iter().flat_map(|x| [*x, x.sin()]).collect();
        all.sort_by(f64::total_cmp);
        if all
            .windows(2)
            .all(|pair| pair[1] - pair[0] > tol::TIE_MARGIN)
        {
            return point;
        }
    }
}

/// `grad f` and `jvp f` along a random direction against central finite differences.
fn check_against_fd(session: &mut Session, rng: &mut Rng, func: &str, point: &[f64]) {
    let h = tol::FD_STEP;
    let f_at = |session: &mut Session, at: &[f64]| {
        eval_numbers(session, &format!("({func}) {}", table_lit(at)))[0]
    };
    let grad = eval_numbers(session, &format!("grad ({func}) {}", table_lit(point)));
    assert_eq!(grad.len(), point.len(), "{func}");
    for axis in 0..point.len() {
        let mut plus = point.to_vec();
        plus[axis] += h;
        let mut minus = point.to_vec();
        minus[axis] -= h;
        let fd = (f_at(session, &plus) - f_at(session, &minus)) / (2.0 * h);
        assert!(
            rel_err(grad[axis], fd) < tol::FD_REL,
            "{func} at {point:?}: component {axis} of the gradient is {}, finite differences {fd}",
            grad[axis]
        );
    }
    let direction: Vec<f64> = (0..point.len()).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let jvp = eval_numbers(
        session,
        &format!(
            "jvp ({func}) {} {}",
            table_lit(point),
            table_lit(&direction)
        ),
    );
    let along = |scale: f64| -> Vec<f64> {
        point
            .iter()
            .zip(&direction)
            .map(|(x, d)| x + scale * d)
            .collect()
    };
    let fd = (f_at(session, &along(h)) - f_at(session, &along(-h))) / (2.0 * h);
    assert!(
        rel_err(jvp[0], fd) < tol::FD_REL,
        "{func} at {point:?} along {direction:?}: jvp {}, finite differences {fd}",
        jvp[0]
    );
}

#[test]
fn random_monoids_against_finite_differences() {
    let mut rng = Rng::new(11);
    let mut session = session(Engine::Fused);
    for case in 0..24 {
        let monoid = random_monoid(&mut rng);
        let n = 1 + rng.below(6);
        let point = random_point(&mut rng, n, monoid.kinked);
        let func = monoid_function(&monoid, case % 2 == 0);
        check_against_fd(&mut session, &mut rng, &func, &point);
    }
}

#[test]
fn at_ties_the_gradient_of_maximum_is_a_subgradient() {
    let mut session = session(Engine::Fused);
    for point in [
        [1.0, 3.0, 3.0, 2.0],
        [0.0, 0.0, 0.0, 0.0],
        [5.0, 1.0, 5.0, 5.0],
    ] {
        for func in [
            "maximum",
            "minimum",
            "\\x. reduce(x, -infinity, \\a b. max a b)",
        ] {
            let grad = eval_numbers(
                &mut session,
                &format!("grad ({func}) {}", table_lit(&point)),
            );
            let total: f64 = grad.iter().sum();
            assert!(
                (total - 1.0).abs() < 1e-12 && grad.iter().all(|g| *g >= 0.0),
                "grad {func} at {point:?} = {grad:?}"
            );
            let extreme = if func == "minimum" {
                point.iter().copied().fold(f64::INFINITY, f64::min)
            } else {
                point.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            };
            for (g, x) in grad.iter().zip(&point) {
                assert!(
                    *g == 0.0 || *x == extreme,
                    "grad {func} at {point:?} = {grad:?}"
                );
            }
        }
    }
}

/// [Paszke21] §4's cumulative products of cumulative products, and zeros in them.
#[test]
fn nested_cumulative_products() {
    let mut session = session(Engine::Fused);
    // z = cumprod (cumprod x): z2 = x0³ x1² x2, so d(sum z)/dx = [1 + 2x0x1 + 3x0²x1²x2, …].
    assert_eq!(
        value(
            &mut session,
            ":p grad (\\x. sum (cumprod (cumprod x))) [2., 3., 4.]"
        ),
        "[445., 196., 72.]"
    );
    let mut rng = Rng::new(3);
    for _ in 0..4 {
        let point = random_point(&mut rng, 5, false);
        check_against_fd(
            &mut session,
            &mut rng,
            "\\x. sum (cumprod (cumprod (cumprod x)))",
            &point,
        );
        check_against_fd(
            &mut session,
            &mut rng,
            "\\x. sum (for i:(Fin 2). sum (cumprod (for j. x[j] * n_to_f (ordinal i + 1))))",
            &point,
        );
    }
}

/// Second derivatives: the gradient program holds a right scan (`assoc_scan_right` over ⊗),
/// which is differentiated again (its JVP and its mirrored transpose).
#[test]
fn derivatives_of_derivatives_of_scans() {
    let mut session = session(Engine::Fused);
    let mut rng = Rng::new(9);
    for _ in 0..3 {
        let point = random_point(&mut rng, 4, false);
        for func in [
            "\\x. (\\g. sum (for i. g[i] * x[i])) (grad (\\y. sum (for j. (cumprod y)[j] * n_to_f (ordinal j + 1))) x)",
            "\\x. sum (grad (\\y. reduce(y, 0.0, \\a b. a + b + a * b)) x)",
            "\\x. sum (grad (\\y. logsumexp (for i. y[i] * y[i])) x)",
            // A scan inside a loop body whose array depends on the carry.
            "\\x. fold(0.1, \\i:(Fin 3) c. c * 0.5 + sum (cumprod (for j. x[j] + c)))",
        ] {
            check_against_fd(&mut session, &mut rng, func, &point);
        }
    }
}

/// The prelude's `logsumexp` (two passes) and `logsumexp_online` (a reduce over the online
/// (max, sum) monoid, differentiated by [Paszke21]'s rule) have `softmax` as their gradient.
#[test]
fn the_gradient_of_logsumexp_is_softmax() {
    let mut session = session(Engine::Fused);
    let mut rng = Rng::new(5);
    for n in [1, 2, 7, 40, 3000] {
        let point: Vec<f64> = (0..n).map(|_| rng.uniform(-30.0, 30.0)).collect();
        let softmax = eval_numbers(&mut session, &format!("softmax {}", table_lit(&point)));
        for function in ["logsumexp", "logsumexp_online"] {
            let grad = eval_numbers(
                &mut session,
                &format!("grad {function} {}", table_lit(&point)),
            );
            assert_eq!(grad.len(), n);
            for (g, s) in grad.iter().zip(&softmax) {
                assert!(
                    rel_err(*g, *s) < tol::SOFTMAX_REL,
                    "{function}: {grad:?} vs {softmax:?}"
                );
            }
        }
    }
}

/// [Paszke21] Thm 3.7: the reverse derivative of a scan is a right scan over ⊗, not a loop.
#[test]
fn the_transposed_stage_of_a_cumprod_gradient_is_a_parallel_scan() {
    let mut session = session(Engine::Fused);
    let text = stage_text(
        &mut session,
        "transposed",
        "grad (\\x. sum (cumprod x)) [2., 0., 4.]",
    );
    assert!(text.contains("= assoc_scan_right ("), "{text}");
    for keyword in ["= scan ", "= fold "] {
        assert!(!text.contains(keyword), "{keyword} in\n{text}");
    }
}

/// The prelude's `prod` is a `reduce` (a parallel tree), and so is its gradient's primal
/// pass: no sequential loop in either stage.
#[test]
fn prod_and_its_gradient_are_monoid_reductions() {
    let mut session = session(Engine::Fused);
    for (stage, expr, monoid) in [
        ("core", "prod [2., 3., 4.]", "= reduce ("),
        (
            "transposed",
            "grad (\\x. prod x) [2., 0., 4.]",
            "= assoc_scan_right (",
        ),
    ] {
        let text = stage_text(&mut session, stage, expr);
        assert!(text.contains(monoid), "{expr}:\n{text}");
        for keyword in ["= scan ", "= fold "] {
            assert!(!text.contains(keyword), "{keyword} in {expr}:\n{text}");
        }
    }
}

const ENGINE_DEFS: &str = "n = 5000\nx : (Fin n)=>Float = for i. sin (n_to_f (ordinal i)) + 1.0\n";

/// Several chunks of Note [Monoid order], float operators that are not exactly associative.
const ENGINE_EXPRS: [&str; 5] = [
    "reduce(x, 0.0, \\a b. a + b + a * b * 0.001)",
    "sum (assoc_scan(x, 1.0, \\a b. a * b))",
    "sum (cumsum x)",
    "(logsumexp x, argmax x, argmin x, maximum x)",
    "grad (\\y. sum (cumprod (for i. y[i] * 0.999))) x",
];

/// Monoids over the rows of 2-D arrays (from `for` over a reduce or scan): lanes across the
/// trailing axis, more lanes than one line holds, several chunks with a shorter last one,
/// tuple operators, right scans (from gradients), and sizes that run in parallel; 1-D arrays
/// of many chunks (a line across chunks, the first chunk among them). The whole arrays are
/// compared.
const WIDE_DEFS: &str = "tall : (Fin 2100)=>(Fin 40)=>Float = for i j. sin (n_to_f (ordinal i * 40 + ordinal j)) + 1.0\nwide : (Fin 40)=>(Fin 1100)=>Float = for i j. cos (n_to_f (ordinal i * 1100 + ordinal j)) * 0.5 + 1.0\nlong : (Fin 40000)=>Float = for i. sin (n_to_f (ordinal i)) * 0.001 + 1.0\nmid : (Fin 20000)=>Float = for i. cos (n_to_f (ordinal i))\n";

const WIDE_EXPRS: [&str; 9] = [
    "cumsum long",
    "grad (\\y. sum (cumprod y)) long",
    "(argmax mid, logsumexp mid, cumsum mid)",
    "for j. cumsum (for i. tall[i, j])",
    "for j. (argmax (for i. tall[i, j]), logsumexp (for i. tall[i, j]))",
    "for j. cumprod (for i. wide[i, j])",
    "for j. reduce((for i. wide[i, j]), 0.0, \\a b. a + b + a * b * 0.001)",
    "grad (\\y. sum (for j. sum (cumprod (for i. y[i, j] * 0.999)))) tall",
    "grad (\\y. sum (for j. sum (cumprod (for i. y[i, j])))) wide",
];

#[test]
fn engines_and_thread_counts_agree_bit_for_bit() {
    check_engines_agree(ENGINE_DEFS, &ENGINE_EXPRS);
}

#[test]
fn wide_and_tall_monoids_agree_bit_for_bit() {
    check_engines_agree(WIDE_DEFS, &WIDE_EXPRS);
}

/// The fused engine on 1, 2 and 4 threads and the bulk evaluator print the reference
/// interpreter's value of each expression.
fn check_engines_agree(defs: &str, exprs: &[&str]) {
    for expr in exprs {
        let src = format!("{defs}:p {expr}\n");
        let reference = value_on(Engine::Reference, 1, &src);
        assert!(!reference.contains("rror"), "{expr}: {reference}");
        for threads in [1, 2, 4] {
            assert_eq!(
                value_on(Engine::Fused, threads, &src),
                reference,
                "{expr}, {threads} threads"
            );
        }
        assert_eq!(
            value_on(Engine::Bulk, 3, &src),
            reference,
            "{expr} on the bulk evaluator"
        );
    }
}

/// BOT: a reduce or scan inside `for` becomes one reduce (scan) of the transposed batched
/// array, with the value of each row.
#[test]
fn reduce_and_scan_inside_for_are_batched() {
    let defs =
        "m : (Fin 3)=>(Fin 4)=>Float = [[1., 2., 3., 4.], [2., 0., 1., 5.], [0.5, 0.5, 2., -1.]]\n";
    let cases = [
        (
            "for i. reduce(m[i], 0.0, \\a b. a + b + a * b)",
            "[119., 35., -1.]",
        ),
        (
            "for i. cumprod m[i]",
            "[[1., 2., 6., 24.], [2., 0., 0., 0.], [0.5, 0.25, 0.5, -0.5]]",
        ),
        ("for i. argmax m[i]", "[3, 3, 2]"),
        (
            "grad (\\y. sum (for i. reduce(y[i], 1.0, \\a b. a * b))) m",
            "[[24., 12., 8., 6.], [0., 10., 0., 0.], [-1., -1., -0.25, 0.5]]",
        ),
    ];
    for engine in [Engine::Fused, Engine::Reference] {
        let mut session = session(engine);
        outputs(&mut session, defs);
        for (expr, expected) in cases {
            assert_eq!(
                value(&mut session, &format!(":p {expr}")),
                expected,
                "{expr}"
            );
        }
    }
    let mut session = session(Engine::Fused);
    outputs(&mut session, defs);
    for (expr, _) in cases {
        let (_, piped) = session.compile_expr(expr).expect("compiles");
        assert_eq!(
            count_stmts(&piped, |expr| matches!(expr, Expr::Build1(_))),
            0,
            "{expr}"
        );
        assert!(
            count_stmts(&piped, |expr| matches!(expr, Expr::Monoid(_))) >= 1,
            "{expr}"
        );
    }
}

#[test]
fn monoid_statements_print_and_parse_back() {
    let mut session = session(Engine::Fused);
    for expr in [
        "grad (\\x. sum (cumprod x)) [2., 0., 4.]",
        "for i:(Fin 2). argmax [[1., 2.], [4., 3.]][i]",
        "jvp logsumexp [1., 2.] [0.5, 1.]",
    ] {
        let (core, piped) = session.compile_expr(expr).expect("compiles");
        for program in [core, piped] {
            let text = program.to_string();
            let parsed = dx_lang::core::parse::parse_program(&text)
                .unwrap_or_else(|err| panic!("{err}\n{text}"));
            assert_eq!(parsed.to_string(), text);
        }
    }
}

#[test]
fn a_closure_over_an_outer_value_is_refused() {
    let mut session = session(Engine::Fused);
    let got = outputs(
        &mut session,
        "c = 2.0\n:p reduce([1., 2.], 0.0, \\a b. a + c * b)\n",
    );
    let text = format!("{got:?}");
    assert!(text.contains("must be closed"), "{text}");
    // The session goes on.
    assert_eq!(value(&mut session, ":p cumsum [1., 2.]"), "[1., 3.]");
}

/// An `if` in an operator runs both branches and selects (`ops::monoid::if_convert`), also
/// under differentiation.
#[test]
fn an_if_in_the_operator_is_if_converted() {
    let mut session = session(Engine::Fused);
    assert_eq!(
        value(
            &mut session,
            ":p reduce([1, 5, 3], 0, \\a b. if a > b then a else b)"
        ),
        "5"
    );
    let mut rng = Rng::new(13);
    let point = random_point(&mut rng, 5, true);
    check_against_fd(
        &mut session,
        &mut rng,
        "\\x. (\\ms. fst ms + log (snd ms)) (reduce(for i. (x[i], 1.0), (-infinity, 0.0), \
         \\(m1, s1) (m2, s2). if m1 > m2 then (m1, s1 + s2 * exp (m2 - m1)) \
         else (m2, s2 + s1 * exp (m1 - m2))))",
        &point,
    );
}

/// `e` is the result of an empty array (Note [Monoid order]), so its derivative is the
/// derivative of that result, in both modes and through a selection operator too; over a
/// non-empty array `e` is not used and gets none.
#[test]
fn the_derivative_of_an_empty_reduction_is_that_of_its_identity() {
    let cases = [
        (
            "grad (\\x. reduce((for i:(Fin 0). 1.0), 2.0 * x, \\a b. a + b)) 3.0",
            "2.",
        ),
        (
            "grad (\\x. reduce((for i:(Fin 0). x), x * x, max)) 3.0",
            "6.",
        ),
        (
            "jvp (\\x. reduce((for i:(Fin 0). x), 5.0 * x, \\a b. a * b)) 3.0 1.0",
            "5.",
        ),
        (
            "grad (\\x. reduce([x, 1.0], 2.0 * x, \\a b. a + b)) 3.0",
            "1.",
        ),
        (
            "grad (\\x. sum (assoc_scan((for i:(Fin 0). x), 2.0 * x, \\a b. a + b))) 3.0",
            "0.",
        ),
    ];
    for engine in [Engine::Fused, Engine::Reference] {
        for (expr, expected) in cases {
            let got = value(&mut session(engine), &format!(":p {expr}\n"));
            assert_eq!(got, expected, "{expr} on {engine:?}");
        }
    }
}

/// Over elements that are tables the operator runs as a sequential fold or scan, in the same
/// order as over scalars: the first element starts it and `e` is only the result of an empty
/// table, so an `e` that is not an identity gives the value it gives over scalars.
#[test]
fn over_table_elements_the_identity_is_used_only_for_empty_tables() {
    let add = "\\a b. for i. a[i] + b[i]";
    let cases = [
        ("reduce([1., 3.], 10., \\a b. a + b)".to_string(), "4."),
        (
            format!("reduce([[1., 2.], [3., 4.]], [10., 10.], {add})"),
            "[4., 6.]",
        ),
        (
            format!("assoc_scan([[1., 2.], [3., 4.]], [10., 10.], {add})"),
            "[[1., 2.], [4., 6.]]",
        ),
        (
            format!("reduce((for i:(Fin 0). [1., 2.]), [10., 10.], {add})"),
            "[10., 10.]",
        ),
    ];
    for engine in [Engine::Fused, Engine::Reference] {
        for (expr, expected) in &cases {
            let got = value(&mut session(engine), &format!(":p {expr}\n"));
            assert_eq!(got, *expected, "{expr} on {engine:?}");
        }
    }
}

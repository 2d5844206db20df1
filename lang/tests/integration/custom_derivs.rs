//! User-defined derivatives (`custom_vjp`, `ops::custom`) through the whole pipeline: the
//! rule is what reverse mode uses (a deliberately scaled rule scales the gradient), in every
//! reverse-mode entry point and under `for`; the function is itself when not differentiated;
//! the rule shows in the `linear` and `transposed` stages; forward mode is refused at its
//! position.

use crate::common::{error, session, stage_text, value};
use dx_lang::session::Engine;

/// softplus, naive and with a stable rule; `f_bwd2` is deliberately twice the derivative.
const SOFTPLUS: &str = "\
def f(x: Float) -> Float = log (1.0 + exp x)
def f_fwd(x: Float) -> (Float, Float) = (f x, x)
def f_bwd(res: Float, ct: Float) -> Float = ct / (1.0 + exp (-res))
def f_bwd2(res: Float, ct: Float) -> Float = 2.0 * ct / (1.0 + exp (-res))
g = custom_vjp(f, f_fwd, f_bwd)
h = custom_vjp(f, f_fwd, f_bwd2)
xs = [0.2, 1.7, -2.4]
def sigmoid(x: Float) -> Float = 1.0 / (1.0 + exp (-x))
";

const ENGINES: [Engine; 2] = [Engine::Reference, Engine::Fused];

/// Each expression has its expected value after the definitions of `SOFTPLUS`, on every
/// engine (each in a new session).
fn check(cases: &[(&str, &str)]) {
    for engine in ENGINES {
        for (expr, expected) in cases {
            let mut session = session(engine);
            value(&mut session, &format!("{SOFTPLUS}:p 0\n"));
            assert_eq!(
                value(&mut session, &format!(":p {expr}\n")),
                *expected,
                "{expr} on {engine:?}"
            );
        }
    }
}

#[test]
fn the_rule_gives_the_gradient_where_the_naive_one_overflows() {
    check(&[
        // exp 100 overflows in float32: the naive gradient is inf / inf.
        ("isnan (grad f 100.0)", "True"),
        ("grad g 100.0", "1."),
        ("abs (grad g 3.0 - sigmoid 3.0) < 1.0e-6", "True"),
        ("g 3.0 == f 3.0", "True"),
    ]);
}

#[test]
fn the_custom_rule_is_the_one_used_by_every_reverse_mode_entry_point() {
    check(&[
        ("grad h 0.0", "1."),
        ("value_and_grad h 0.0", "(0.6931472, 1.)"),
        ("(snd (vjp h 0.0)) 3.0", "3."),
        // The rule inside a differentiated `for` (batched), and a derivative inside a `for`.
        (
            "all for i. abs ((grad (\\x. sum (for j. h x[j])) xs)[i] - 2.0 * sigmoid xs[i]) < 1.0e-6",
            "True",
        ),
        (
            "all for i. abs ((for j. grad h xs[j])[i] - 2.0 * sigmoid xs[i]) < 1.0e-6",
            "True",
        ),
        // With other operations around it: d/dx (g x * x) = sigmoid x * x + f x.
        (
            "all for i. abs ((grad (\\x. sum (for j. g x[j] * x[j])) xs)[i] - (sigmoid xs[i] * xs[i] + f xs[i])) < 1.0e-5",
            "True",
        ),
    ]);
}

#[test]
fn a_straight_through_estimator_rounds_forward_and_passes_the_gradient_back() {
    let src = "\
def rnd(x: n=>Float) -> n=>Float = for i. round x[i]
def rnd_fwd(x: n=>Float) -> (n=>Float, ()) = (rnd x, ())
def rnd_bwd(r: (), ct: n=>Float) -> n=>Float = ct
def ste(x: n=>Float) -> n=>Float = custom_vjp(rnd, rnd_fwd, rnd_bwd) x
";
    for engine in ENGINES {
        let mut session = session(engine);
        value(&mut session, &format!("{src}:p 0\n"));
        assert_eq!(
            value(&mut session, ":p ste [0.2, 1.7, -2.4]\n"),
            "[0., 2., -2.]"
        );
        assert_eq!(
            value(
                &mut session,
                ":p grad (\\x. sum (ste x)) [0.2, 1.7, -2.4]\n"
            ),
            "[1., 1., 1.]"
        );
        // Without the rule, round has a zero derivative.
        assert_eq!(
            value(
                &mut session,
                ":p grad (\\x. sum (rnd x)) [0.2, 1.7, -2.4]\n"
            ),
            "[0., 0., 0.]"
        );
    }
}

#[test]
fn the_rule_shows_in_the_linear_and_transposed_stages() {
    // A cube whose (wrong on purpose) rule uses `cos`, which the cube never does.
    let src = "\
def cube(x: Float) -> Float = x * x * x
def cube_fwd(x: Float) -> (Float, Float) = (cube x, x)
def cube_bwd(res: Float, ct: Float) -> Float = ct * cos res
c = custom_vjp(cube, cube_fwd, cube_bwd)
";
    let mut session = session(Engine::Reference);
    value(&mut session, &format!("{src}:p 0\n"));
    let linear = stage_text(&mut session, "linear", "grad c 1.0");
    assert!(linear.contains("custom_linear ("), "{linear}");
    let transposed = stage_text(&mut session, "transposed", "grad c 1.0");
    assert!(transposed.contains("custom_linear_t ("), "{transposed}");
    assert!(transposed.contains("cos"), "{transposed}");
    assert_eq!(value(&mut session, ":p grad c 1.0\n"), "0.5403023");
    // Not differentiated, it is the cube, and no rule is left in the program.
    let bot = stage_text(&mut session, "bot", "c 2.0");
    assert!(!bot.contains("custom") && !bot.contains("cos"), "{bot}");
}

#[test]
fn forward_mode_through_a_custom_vjp_is_an_error_at_its_position() {
    let mut session = session(Engine::Reference);
    value(&mut session, &format!("{SOFTPLUS}:p 0\n"));
    for src in [
        ":p jvp g 1.0 1.0\n",
        ":p deriv g 1.0\n",
        ":p grad (\\x. deriv g x) 1.0\n",
    ] {
        let text = error(&mut session, src);
        assert!(text.contains("custom-linearization"), "{src}: {text}");
        assert!(text.contains('^'), "{src}: no carets in {text}");
    }
    // Forward over reverse differentiates the rule itself: d/dx sigmoid x.
    assert_eq!(
        value(
            &mut session,
            ":p abs (deriv (\\x. grad g x) 0.0 - 0.25) < 1.0e-6\n"
        ),
        "True"
    );
}

/// Dex's `custom-linearization` (`custom_jvp` in the IR): a rule deliberately three times the
/// derivative, with an `if` over the tangents, so that every result shows it was used.
const RELU: &str = "\
def relu(x: n=>Float) -> n=>Float given (n|Ix) = for i. max x[i] 0.0
def relu_lin(x: n=>Float) -> (n=>Float, (n=>Float) -> n=>Float) given (n|Ix) =
  (relu x, \\t. for i. if x[i] > 0.0 then 3.0 * t[i] else 0.0)
custom-linearization relu relu_lin
xs = [-1.0, 2.0, 0.5]
";

#[test]
fn a_custom_linearization_is_the_derivative_in_both_modes_on_every_engine() {
    for engine in ENGINES {
        let mut session = session(engine);
        value(&mut session, &format!("{RELU}:p 0\n"));
        for (expr, expected) in [
            ("relu xs", "[0., 2., 0.5]"),
            ("grad (\\x. sum (relu x)) xs", "[0., 3., 3.]"),
            ("jvp relu xs [1.0, 1.0, 2.0]", "[0., 3., 6.]"),
            ("(snd (vjp relu xs)) [1.0, 2.0, 3.0]", "[0., 6., 9.]"),
            // Under a vectorised `for`, around other operations, and forward over reverse.
            (
                "for j:(Fin 2). grad (\\x. sum (relu x)) [-1.0, 2.0 * n_to_f (ordinal j) - 1.0]",
                "[[0., 0.], [0., 3.]]",
            ),
            ("deriv (\\y. sum (relu [y, 2.0 * y]) * y) 1.0", "12."),
            (
                "deriv (\\y. sum (grad (\\x. sum (relu x) * y) xs)) 1.0",
                "6.",
            ),
        ] {
            assert_eq!(
                value(&mut session, &format!(":p {expr}\n")),
                expected,
                "{expr} on {engine:?}"
            );
        }
    }
}

#[test]
fn the_linearization_shows_in_the_linear_and_transposed_stages() {
    // A cube whose (wrong on purpose) linear map scales by `cos x`, which the cube never uses.
    let src = "\
def cube(x: Float) -> Float = x * x * x
def cube_lin(x: Float) -> (Float, Float -> Float) = (cube x, \\t. t * cos x)
custom-linearization cube cube_lin
";
    let mut session = session(Engine::Reference);
    value(&mut session, &format!("{src}:p 0\n"));
    for stage in ["linear", "transposed"] {
        let text = stage_text(&mut session, stage, "grad cube 1.0");
        assert!(text.contains("cos"), "{stage}: {text}");
        assert!(
            !text.contains("custom"),
            "{stage}: the rule is inlined: {text}"
        );
    }
    assert_eq!(value(&mut session, ":p grad cube 1.0\n"), "0.5403023");
    assert_eq!(value(&mut session, ":p deriv cube 1.0\n"), "0.5403023");
    // Not differentiated, it is the cube, and no rule is left in the program.
    let bot = stage_text(&mut session, "bot", "cube 2.0");
    assert!(!bot.contains("custom") && !bot.contains("cos"), "{bot}");
    assert_eq!(value(&mut session, ":p cube 2.0\n"), "8.");
}

#[test]
fn a_linear_map_that_is_not_linear_is_an_error_at_the_use() {
    let mut session = session(Engine::Reference);
    for (lin, problem) in [
        ("\\t. t * t", "`mul` of linear values only"),
        (
            "\\t. t + 1.0",
            "`add` of a tangent and a value that is not one",
        ),
        ("\\t. exp t", "`exp` of a linear value"),
        (
            "\\t. yield_state 0.0 \\r. for_ i:(Fin 3). r := get r + t",
            "loops over tangents",
        ),
    ] {
        let src = format!(
            "def g(x: Float) -> Float = x\n\
             def g_lin(x: Float) -> (Float, Float -> Float) = (x, {lin})\n\
             custom-linearization g g_lin\n"
        );
        value(&mut session, &format!("{src}:p 0\n"));
        for use_site in [":p grad g 1.0\n", ":p deriv g 1.0\n"] {
            let text = error(&mut session, use_site);
            assert!(text.contains(problem), "{lin} in {use_site}: {text}");
            assert!(text.contains('^'), "{lin}: no carets in {text}");
        }
    }
    // A linearization of the wrong type, and a name that is not a function.
    value(&mut session, "def h(x: Float) -> Float = x\n:p 0\n");
    let text = error(&mut session, "custom-linearization h h\n");
    assert!(text.contains("expected type"), "{text}");
    let text = error(&mut session, "y = 1.0\ncustom-linearization y h\n");
    assert!(text.contains("`y` is a value"), "{text}");
}

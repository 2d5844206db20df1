//! Fuzzing the whole front end through a `Session`: random programs built from dx's grammar
//! (most of them ill-typed) must never make dx panic or report an internal error — every
//! problem is a parse, type or runtime error with a position.

use dx_lang::session::{ErrorKind, Output, Session, SessionConfig};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A random expression of the language, as text, from a small grammar.
fn expr(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("x".to_string()),
        Just("xs".to_string()),
        Just("m".to_string()),
        Just("k".to_string()),
        Just("1".to_string()),
        Just("2.5".to_string()),
        Just("True".to_string()),
        Just("(3 @ Fin 4)".to_string()),
        Just("[1., 2., 3., 4.]".to_string()),
        Just("iota (Fin 4)".to_string()),
        Just("i".to_string()),
        Just("j".to_string()),
        Just("()".to_string()),
        Just("(+)".to_string()),
        Just("[+1, 2, 3, 4]".to_string()),
        Just("[]".to_string()),
        Just("9999999999".to_string()),
        Just("(iota _)".to_string()),
        Just("(1 @ _)".to_string()),
        Just("(coerce_table _ xs)".to_string()),
        Just("(curry_table (coerce_table (Fin 2, Fin 2) xs))".to_string()),
        Just("(==)".to_string()),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    // One strategy for the sub-expressions, shared (a `BoxedStrategy` is reference counted):
    // building a fresh one per use would make the generator's size exponential in the depth.
    let shared = expr(depth - 1);
    let sub = || shared.clone();
    prop_oneof![
        3 => leaf,
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a} + {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a} * {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a} / {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a} < {b})")),
        1 => sub().prop_map(|a| format!("(for i. {a})")),
        1 => sub().prop_map(|a| format!("(for i:(Fin 4) j. {a})")),
        1 => sub().prop_map(|a| format!("(sum {a})")),
        1 => sub().prop_map(|a| format!("(n_to_f (ordinal {a}))")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("{a}[{b}]")),
        1 => (sub(), sub(), sub()).prop_map(|(c, a, b)| format!("(if {c} then {a} else {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("(fold({a}, \\i c. c + {b}))")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a}, {b})")),
        1 => sub().prop_map(|a| format!("(fst {a})")),
        1 => sub().prop_map(|a| format!("((\\y. y * {a}) {a})")),
        1 => sub().prop_map(|a| format!("(map (\\y. y + 1.0) {a})")),
        1 => sub().prop_map(|a| format!("(maximum {a})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("(select({a}, {b}, {b}))")),
        1 => sub().prop_map(|a| format!("(grad (\\y. sum (for i. y[i] * {a})) xs)")),
        1 => sub().prop_map(|a| format!("(deriv (\\y. y * {a}) x)")),
        1 => sub().prop_map(|a| format!("(jvp (\\y. {a}) xs xs)")),
        1 => sub().prop_map(|a| format!("(grad (\\y. fold(y, \\i:(Fin 2) c. c * {a})) x)")),
        // Syntax and typing of issue 9.
        1 => sub().prop_map(|a| format!("({a} :: Float)")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a} == {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a} <= {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("((*) {a} {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("(max {a} {b})")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("({a} - {b})")),
        1 => sub().prop_map(|a| format!("(0.5 .* {a})")),
        1 => sub().prop_map(|a| format!("(mean {a})")),
        1 => sub().prop_map(|a| format!("(for _:(Fin 2). {a})")),
        1 => sub().prop_map(|a| format!("(from_ordinal(n=Fin 4, {a}))")),
        1 => sub().prop_map(|a| format!("(linspace(n=_, 0.0, {a}) :: (Fin 3)=>Float)")),
        1 => sub().prop_map(|a| format!("(coerce_table (Fin 2, Fin 2) {a})")),
        1 => sub().prop_map(|a| format!("(grad (\\y. select ({a} < y) (sum y) 0.0) xs)")),
        1 => sub().prop_map(|a| format!("(grad (\\y. if y == {a} then sum y else 1.0) xs)")),
        1 => (sub(), sub()).prop_map(|(a, b)| format!("((\\(p, _). p) ({a}, {b}))")),
        // Named arguments that fill implicit variables (issue 10), sizes or not.
        1 => sub().prop_map(|a| format!("(split_key(n={a}, new_key k))")),
        1 => sub().prop_map(|a| format!("(mean(n=Fin 4, {a}))")),
    ]
    .boxed()
}

const PRELUDE: &str =
    "x = 1.5\nxs = [1., 2., 3., 4.]\nm = for i:(Fin 2) j:(Fin 4). n_to_f (ordinal j)\nk = 3\n";

#[test]
fn random_programs_never_cause_internal_errors() {
    let session = std::cell::RefCell::new(Session::new(SessionConfig::default()));
    let setup = session.borrow_mut().eval_source(PRELUDE);
    assert!(
        setup.iter().all(|chunk| chunk.outputs.is_empty()),
        "{setup:?}"
    );
    let config = Config {
        cases: 3000,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let counts = std::cell::Cell::new([0usize; 2]);
    runner
        .run(
            &(
                expr(4),
                // The last form puts the expression at the end of a let-block whose
                // bindings are separated by `;` on one line.
                prop_oneof![
                    Just(":p "),
                    Just(":t "),
                    Just("y = "),
                    Just(":p\n  z = x; w = (z, ())\n  "),
                ],
            ),
            |(text, command)| {
                let src = format!("{command}{text}\n");
                for chunk in session.borrow_mut().eval_source(&src) {
                    for output in &chunk.outputs {
                        if let Output::Error(diag) = output {
                            prop_assert!(
                                diag.kind() != ErrorKind::Internal,
                                "internal error on {src:?}: {}",
                                diag.message
                            );
                            prop_assert!(
                                diag.span.is_some(),
                                "error without a position on {src:?}: {}",
                                diag.message
                            );
                            let [errors, successes] = counts.get();
                            counts.set([errors + 1, successes]);
                        } else {
                            let [errors, successes] = counts.get();
                            counts.set([errors, successes + 1]);
                        }
                    }
                }
                Ok(())
            },
        )
        .unwrap();
    // The generator must exercise both paths; otherwise this test proves little.
    let [errors, successes] = counts.get();
    assert!(
        errors > 20 && successes > 20,
        "errors/successes: {errors}/{successes}"
    );
}

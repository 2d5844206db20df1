//! Errors and types in the user's terms (issue 9): a number added to a table says how to write
//! what was meant, and the suggested code runs; a table indexed by pairs prints its index set
//! in one pair of brackets, and the printed type reads back.

use crate::common::{error, printed, session, value};
use dx_lang::session::{Engine, Session};

/// The code an error message suggests: the backquoted texts after "write".
fn suggestions(message: &str) -> Vec<String> {
    let (_, advice) = message
        .split_once("write ")
        .unwrap_or_else(|| panic!("no suggestion in {message:?}"));
    let advice = advice.lines().next().unwrap_or_default();
    advice
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn a_number_added_to_a_table_suggests_a_for_and_the_suggestion_runs() {
    let mut session = session(Engine::Fused);
    value(&mut session, "xs = [1., 2., 3.]\n:p xs\n");
    let src = ":p xs + 1\n";
    let message = error(&mut session, src);
    assert_eq!(
        message,
        "Type error: `+` adds values of one type, but this is a number and the other operand a \
         table of type ((Fin 3) => Float32): to apply it to every element, write \
         `for i. xs[i] + 1`\n\
         :p xs + 1\n\
         \x20       ^"
    );
    for code in suggestions(&message) {
        assert_eq!(value(&mut session, &format!(":p {code}\n")), "[2., 3., 4.]");
    }
}

/// The error of `src` suggests exactly `expected` (code), and each suggestion prints `value_text`.
fn suggestions_run(session: &mut Session, src: &str, expected: &[&str], value_text: &str) {
    let message = error(session, src);
    let codes = suggestions(&message);
    assert_eq!(codes, expected, "{message}");
    for code in codes {
        assert_eq!(
            value(session, &format!(":p {code}\n")),
            value_text,
            "{code}"
        );
    }
}

#[test]
fn a_scalar_variable_with_a_table_suggests_the_elementwise_form_and_it_runs() {
    // The operand is a variable, not a number: the types alone say what was meant.
    let mut session = session(Engine::Fused);
    value(&mut session, "xs = [1., 2., 3.]\n:p xs\n");
    value(&mut session, "y = 2.0\n:p y\n");
    let message = error(&mut session, ":p xs - y\n");
    assert!(message.contains("this is a scalar"), "{message}");
    assert!(message.ends_with(":p xs - y\n\x20       ^"), "{message}");
    suggestions_run(
        &mut session,
        ":p xs - y\n",
        &["for i. xs[i] - y"],
        "[-1., 0., 1.]",
    );
    suggestions_run(
        &mut session,
        ":p y * xs\n",
        &["y .* xs", "for i. y * xs[i]"],
        "[2., 4., 6.]",
    );
    // Inside a function, a local scalar.
    let message = error(
        &mut session,
        "def f(a: Float, t: (Fin 2)=>Float) -> (Fin 2)=>Float = t + a\n",
    );
    assert!(message.contains("write `for i. t[i] + a`"), "{message}");
}

#[test]
fn a_table_scaled_by_a_number_suggests_dot_star_for_every_axis() {
    let mut session = session(Engine::Fused);
    value(
        &mut session,
        "m = [[1., 2.], [3., 4.]]\nns = [1, 2, 3]\n:p m\n",
    );
    suggestions_run(
        &mut session,
        ":p 2.0 * m\n",
        &["2.0 .* m", "for i j. 2.0 * m[i, j]"],
        "[[2., 4.], [6., 8.]]",
    );
    // `.*` scales floats only: for a table of integers only the `for` is suggested.
    suggestions_run(
        &mut session,
        ":p ns * 2\n",
        &["for i. ns[i] * 2"],
        "[2, 4, 6]",
    );
    // The number on the left of `-` stays on the left.
    suggestions_run(
        &mut session,
        ":p 10.0 - m\n",
        &["for i j. 10.0 - m[i, j]"],
        "[[9., 8.], [7., 6.]]",
    );
}

#[test]
fn a_pair_indexed_table_type_prints_once_bracketed_and_reads_back() {
    let mut session = session(Engine::Fused);
    let printed_ty = printed(&mut session, ":t for p:(Fin 2, Fin 3). 1.0\n");
    assert_eq!(printed_ty, "((Fin 2, Fin 3) => Float32)");
    // The printed type, written as an annotation, is the same type.
    let again = printed(
        &mut session,
        &format!("ys : {printed_ty} = for p. 1.0\n:t ys\n"),
    );
    assert_eq!(again, printed_ty);
    let help = printed(&mut session, ":help curry_table\n");
    assert_eq!(
        help.lines().next(),
        Some("curry_table : (((a, b) => c) -> (a => b => c))"),
        "{help}"
    );
}

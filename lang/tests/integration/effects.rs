//! Effects (docs/language.md, Effects) through the whole pipeline: an effectful program gives what the
//! same program written without effects gives, on every engine and thread count, its
//! gradients agree with finite differences, and its errors and interruptions are reported.

use std::time::Duration;

use crate::common::{
    assert_errors, outputs, outputs_interrupted_after, session, value, value_on, Rng,
};
use dx_lang::session::{Engine, ErrorKind, Output};

/// `n` floats drawn uniformly in `[-2, 2)`, as a table literal.
fn floats(draws: &mut Rng, n: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|_| format!("{:.4}", draws.uniform(-2.0, 2.0)))
        .collect();
    format!("[{}]", items.join(", "))
}

fn nats(draws: &mut Rng, n: usize, below: usize) -> String {
    let items: Vec<String> = (0..n).map(|_| draws.below(below).to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// Random data of a few sizes, as top-level definitions: deterministic, so that the data
/// differ between tables but not between runs.
fn data(seed: u64) -> String {
    let mut draws = Rng::new(seed);
    let n = 3 + draws.below(60);
    let m = 2 + draws.below(9);
    let rows = 2 + draws.below(5);
    let matrix: Vec<String> = (0..rows).map(|_| floats(&mut draws, m)).collect();
    format!(
        "N = Fin {n}\nM = Fin {m}\nws : N=>Float = {}\nbins : N=>Nat = {}\n\
         mat : (Fin {rows})=>M=>Float = [{}]\npos : N=>Float = for i. abs ws[i] + 0.5\n",
        floats(&mut draws, n),
        nats(&mut draws, n, m),
        matrix.join(", ")
    )
}

/// Each effectful expression and the pure expression it must equal (within rounding: the
/// order of a sum may differ).
const PAIRS: [(&str, &str); 10] = [
    (
        "yield_accum (AddMonoid Float) \\h. for i. h!(bins[i] @ M) += ws[i]",
        "for k:M. sum for i. select (bins[i] == ordinal k) ws[i] 0.0",
    ),
    (
        "yield_accum (AddMonoid Float) \\acc. for i. for j. acc!i += mat[i, j]",
        "for i. sum mat[i]",
    ),
    (
        "yield_accum (AddMonoid Float) \\acc. for i. for j. acc!j += mat[i, j] * mat[i, j]",
        "for j. sum for i. mat[i, j] * mat[i, j]",
    ),
    (
        "with_state 0.0 \\t. for i. \n  t := get t + ws[i]\n  get t",
        "snd (scan 0.0 \\i c. (c + ws[i], c + ws[i]))",
    ),
    (
        "yield_state (for i:(Fin 2). for j:M. 0.0) \\r. for_ i. for_ j. r!i!j := mat[(ordinal i) @ _, j] * 2.0",
        "for i:(Fin 2). for j:M. mat[(ordinal i) @ _, j] * 2.0",
    ),
    (
        "yield_accum (AddMonoid Float) \\acc. for i. if ws[i] > 0.0 then acc += ws[i] else ()",
        "sum for i. max ws[i] 0.0",
    ),
    (
        "for i. yield_state pos[i] \\x. while \\.\n    x' = 0.5 * (get x + pos[i] / get x)\n    \
         d = abs (x' - get x)\n    x := x'\n    d > 0.00001",
        "for i. sqrt pos[i]",
    ),
    (
        "yield_state 0.0 \\s. for_ i. case catch (\\. if ws[i] < -1.0 then throw () else ws[i]) of\n    \
         Just(v) -> s := get s + v\n    Nothing -> ()",
        "sum for i. select (ws[i] < -1.0) 0.0 ws[i]",
    ),
    (
        "for i. n_to_f (iter \\k. if n_to_f k * 0.25 >= pos[i] then Done k else Continue)",
        "for i. n_to_f (f_to_n (ceil (pos[i] * 4.0)))",
    ),
    (
        "run_accum (MulMonoid Float) \\p. for i. p += pos[i] / (pos[i] + 0.1)",
        "((for i. ()), prod for i. pos[i] / (pos[i] + 0.1))",
    ),
];

#[test]
fn effectful_programs_equal_their_pure_versions_on_every_engine_and_thread_count() {
    for seed in 0..6 {
        let defs = data(seed);
        for (effectful, pure) in PAIRS {
            let src = format!("{defs}:p ({effectful}) ~~ ({pure})\n");
            for (engine, threads) in [
                (Engine::Reference, 1),
                (Engine::Bulk, 2),
                (Engine::Fused, 1),
                (Engine::Fused, 3),
            ] {
                assert_eq!(
                    value_on(engine, threads, &src),
                    "True",
                    "{effectful}\n  vs {pure}\n  on {engine:?} with {threads} threads, data:\n{defs}"
                );
            }
        }
    }
}

#[test]
fn accumulation_gives_the_same_bits_on_any_number_of_threads() {
    let defs = data(11);
    for (effectful, _) in &PAIRS[..3] {
        let src = format!("{defs}:p {effectful}\n");
        let reference = value(&mut session(Engine::Reference), &src);
        for threads in [1, 2, 4] {
            let fused = value_on(Engine::Fused, threads, &src);
            assert_eq!(fused, reference, "{effectful} on {threads} threads");
        }
    }
}

/// Functions with effects inside and a finite-difference check of their gradients.
const GRADIENTS: [&str; 4] = [
    // A weighted histogram, then a nonlinearity of its bins.
    "def f(w: N=>Float) -> Float =\n  h = yield_accum (AddMonoid Float) \\h. for i. h!(bins[i] @ M) += w[i] * w[i]\n  sum for k. sin h[k]\n",
    // State threaded through a sequential loop.
    "def f(w: N=>Float) -> Float =\n  yield_state 0.5 \\s. for_ i. s := tanh (get s * w[i] + 0.1)\n",
    // A data-dependent loop per element: its derivative is that of the steps it took.
    "def f(w: N=>Float) -> Float =\n  sum for i. yield_state (abs w[i] + 0.5) \\x. while \\.\n    x' = 0.5 * (get x + (abs w[i] + 0.5) / get x)\n    d = abs (x' - get x)\n    x := x'\n    d > 0.00001\n",
    // State and accumulation together, with a branch.
    "def f(w: N=>Float) -> Float =\n  yield_accum (AddMonoid Float) \\acc. with_state 1.0 \\s. for_ i.\n    s := get s * 0.9 + w[i]\n    if w[i] > 0.0 then acc += get s * w[i] else acc += 0.5 * w[i]\n",
];

#[test]
fn gradients_through_effects_agree_with_finite_differences() {
    for seed in [1, 2] {
        let defs = data(seed);
        for def in GRADIENTS {
            for engine in [Engine::Reference, Engine::Fused] {
                let mut session = session(engine);
                let src = format!(
                    "{defs}{def}\
                     h = 0.001\n\
                     fd = for k:N. (f (for i. select (i == k) (ws[i] + h) ws[i]) - f (for i. select (i == k) (ws[i] - h) ws[i])) / (2.0 * h)\n\
                     g = grad f ws\n\
                     :p all for k. abs (g[k] - fd[k]) <= 0.02 + 0.02 * abs fd[k]\n"
                );
                assert_eq!(
                    value(&mut session, &src),
                    "True",
                    "{def} on {engine:?}: grad {} vs fd {}",
                    value(&mut session, ":p g"),
                    value(&mut session, ":p fd")
                );
            }
        }
    }
}

#[test]
fn misuse_of_references_is_an_error_at_its_position() {
    let mut session = session(Engine::Fused);
    let cases = [
        (
            ":p yield_accum (AddMonoid Float) \\acc.\n  acc := 1.0\n",
            "`:=` writes a `State` reference",
        ),
        (
            ":p with_state 0.0 \\ref.\n  ref += 1.0\n",
            "`+=` adds to an accumulator",
        ),
        (
            ":p yield_accum (AddMonoid Float) \\acc.\n  acc += 1.0\n  get acc\n",
            "an accumulator cannot be read",
        ),
        (":p 1.0 := 2.0\n", "Type error"),
        (":p (throw () :: Float)\n", "outside every `catch`"),
        (
            ":p with_state 1.0 \\r. r\n",
            "a reference escapes its handler",
        ),
        (
            "def leak(x: Float) -> Float =\n  r = with_state x \\r. r\n  x\n:p leak 1.0\n",
            "a reference escapes its handler",
        ),
        (
            ":p with_state 0.0 \\r. grad (\\x.\n  r := x\n  x * x) 1.0\n",
            "cannot write a reference from outside it",
        ),
    ];
    assert_errors(&mut session, &cases);
}

#[test]
fn error_reports_the_first_failing_call_and_the_session_goes_on() {
    let mut session = session(Engine::Fused);
    let src = "xs = [1.0, -2.0, 3.0]\n\
               def safe_log(x: Float) -> Float =\n  if x > 0.0 then log x else error \"log of a non-positive number\"\n\
               :p for i. safe_log xs[i]\n";
    let got = outputs(&mut session, src);
    match got.last() {
        Some(Output::Error(diag)) => {
            assert_eq!(diag.kind(), ErrorKind::Runtime);
            assert_eq!(diag.message, "in `safe_log`: log of a non-positive number");
        }
        other => panic!("expected a runtime error, got {other:?}"),
    }
    // Not reached: no error.
    assert_eq!(
        value(&mut session, ":p for i. safe_log (abs xs[i])"),
        "[0., 0.6931472, 1.098612]"
    );
    // A function with an `error` call can be differentiated.
    assert_eq!(value(&mut session, ":p grad safe_log 2.0"), "0.5");
}

#[test]
fn prints_come_out_in_program_order_with_their_own_texts_on_every_engine() {
    for engine in [Engine::Fused, Engine::Reference] {
        let mut session = session(engine);
        let src = ":p\n  for_ i:(Fin 1003).\n    print (\"line \" <> show (ordinal i))\n    \
                   if ordinal i == 1 then print \"odd\"\n  print \"last\"\n  7\n";
        let texts: Vec<String> = outputs(&mut session, src)
            .into_iter()
            .filter_map(|output| match output {
                Output::Text(text) => Some(text),
                _ => None,
            })
            .collect();
        // The first 1000 of the 1005 lines are kept: line 0, line 1, odd, line 2, …, line 998.
        let mut expected = vec![
            "line 0".to_string(),
            "line 1".to_string(),
            "odd".to_string(),
        ];
        expected.extend((2..999).map(|i| format!("line {i}")));
        expected.push("(and 5 more printed lines, not kept)".to_string());
        assert_eq!(texts, expected, "{engine:?}");
    }
}

#[test]
fn interrupt_stops_a_while_that_never_ends() {
    for engine in [Engine::Fused, Engine::Reference] {
        let mut session = session(engine);
        let got = outputs_interrupted_after(
            &mut session,
            Duration::from_millis(300),
            ":p yield_state 0.0 \\x.\n  while \\.\n    x := get x + 1.0\n    get x > -1.0\n",
        );
        match &got[0] {
            Output::Error(diag) => assert_eq!(diag.kind(), ErrorKind::Runtime, "{engine:?}"),
            other => panic!("expected an interruption on {engine:?}, got {other:?}"),
        }
        assert_eq!(value(&mut session, ":p 1.0 + 1.0"), "2.");
    }
}

#[test]
fn a_for_that_only_accumulates_stays_parallel_and_one_that_writes_state_runs_in_order() {
    let mut session = session(Engine::Fused);
    outputs(&mut session, &data(3));
    let core = crate::common::stage_text(
        &mut session,
        "core",
        "yield_accum (AddMonoid Float) \\h. for i. h!(bins[i] @ M) += ws[i]",
    );
    assert!(
        core.contains("build1") && core.contains("scatter"),
        "{core}"
    );
    assert!(!core.contains("scan") && !core.contains("fold"), "{core}");
    let core = crate::common::stage_text(
        &mut session,
        "core",
        "yield_state 0.0 \\s. for_ i. s := get s * 0.5 + ws[i]",
    );
    assert!(core.contains("fold") || core.contains("scan"), "{core}");
    let core = crate::common::stage_text(
        &mut session,
        "core",
        "yield_accum (AddMonoid Float) \\acc. for i. for j. acc!i += mat[i, j]",
    );
    assert!(
        core.contains("sumOuter") && !core.contains("scatter"),
        "{core}"
    );
}

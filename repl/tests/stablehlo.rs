//! Export to StableHLO (issue 12), checked by XLA: every exported module parses with jaxlib's
//! MLIR bindings, and run on XLA's CPU backend (through jax, `stablehlo/xla.py`) it gives dx's
//! values: random programs of `ops::testgen` and their gradients, the examples' loss functions
//! and their gradients, `vjp f` (arguments and seed in, results and cotangents out), generic
//! functions typed by example arguments, and the MLP's gradient with its batch axis sharded over
//! four simulated devices.
//!
//! Each test writes its cases to a folder (module, inputs and dx's results as `.npy`) and runs
//! `stablehlo/check.py` on it once, in the tests' pinned venv (`.ci/python-venv`; made on first
//! use, failing the test when it cannot be made).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use dx_lang::core::ir::{AdMode, Atom, Derivative, Expr, Program, Stmt};
use dx_lang::core::parse::parse_program;
use dx_lang::core::value::{Array, ArrayData, Value};
use dx_lang::data::{self, Format};
use dx_lang::export::stablehlo::{self, Input};
use dx_lang::export::{bulk_passes, ExportError};
use dx_lang::ops::interp::{self, InterpConfig};
use dx_lang::ops::testgen::{random_inputs, random_program, GenConfig};
use dx_lang::ops::verify::expr_types;
use dx_lang::passes::pipeline;
use dx_lang::session::{Output, Session, SessionConfig};

/// A fresh folder for a test's cases.
fn case_folder(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dx-stablehlo-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

/// Writes one case: the module, its inputs and dx's results.
fn write_case(dir: &Path, name: &str, module: &str, inputs: &[Array], expected: &[Array]) {
    let case = dir.join(name);
    std::fs::create_dir_all(&case).expect("a case folder");
    std::fs::write(case.join("module.mlir"), module).expect("write the module");
    for (prefix, arrays) in [("in", inputs), ("out", expected)] {
        for (position, array) in arrays.iter().enumerate() {
            data::save(
                Format::Npy,
                &case.join(format!("{prefix}{position}.npy")),
                array,
            )
            .expect("write an array");
        }
    }
}

/// Runs `check.py` on a folder of cases; fails the test with its report.
fn check_on_xla(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> String {
    let script = common::workspace_root().join("repl/tests/stablehlo/check.py");
    let stdout = common::stdout_of_success(
        Command::new(common::python())
            .arg(script)
            .arg(dir)
            .args(extra)
            .envs(env.iter().copied()),
        "the check against XLA",
    );
    // The cases stay for a look when the check fails.
    let _ = std::fs::remove_dir_all(dir);
    stdout
}

/// The bulk IR of a core program (the pipeline's rewrites: derivatives, BOT, simplification).
fn bulk(program: &Program) -> Program {
    pipeline::run(program, bulk_passes(), &[])
        .unwrap_or_else(|ice| panic!("the pipeline failed:\n{ice}"))
        .program
}

/// A program computing `program`'s results and the cotangents of its inputs (`vjp`), for
/// cotangent seeds that are extra inputs.
fn with_vjp(program: &Program) -> Program {
    let mut program = program.clone();
    let func = program.main;
    let params = program.inputs.clone();
    program.blocks[func].params = params.clone();
    let primals: Vec<Atom> = params
        .iter()
        .map(|&param| {
            let ty = program.var_ty(param).clone();
            Atom::Var(program.new_var(ty, "x"))
        })
        .collect();
    let results = program.blocks[func].results.clone();
    let seeds: Vec<Atom> = results
        .iter()
        .map(|atom| {
            let ty = program.atom_ty(atom);
            Atom::Var(program.new_var(ty, "ct"))
        })
        .collect();
    let expr = Expr::Derivative(Derivative {
        mode: AdMode::Vjp,
        primals: primals.clone(),
        seeds: seeds.clone(),
        func,
    });
    let tys = expr_types(&program, &expr).expect("a vjp of a verified program is typed");
    let binders: Vec<_> = tys.into_iter().map(|ty| program.new_var(ty, "d")).collect();
    let main = program.new_block();
    program.blocks[main].stmts.push(Stmt {
        binders: binders.clone(),
        expr,
    });
    program.blocks[main].results = binders.iter().map(|&var| Atom::Var(var)).collect();
    program.main = main;
    program.inputs = primals
        .iter()
        .chain(&seeds)
        .map(|atom| match atom {
            Atom::Var(var) => *var,
            Atom::Lit(_) => unreachable!("made as variables above"),
        })
        .collect();
    program
}

/// Exports a core program with every input a parameter; returns the module and dx's values on
/// `inputs` (the reference interpreter on the exported bulk program).
fn export_with_values(
    program: &Program,
    inputs: &[Array],
) -> Result<(String, Vec<Array>), ExportError> {
    let bulk = bulk(program);
    let params = vec![Input::Param; bulk.inputs.len()];
    let module = stablehlo::module(&bulk, &params)?;
    let config = InterpConfig {
        strict: false,
        interrupt: None,
    };
    let values = interp::run(&bulk, inputs, &config)
        .unwrap_or_else(|err| panic!("the interpreter failed: {err:?}\n{bulk}"));
    Ok((module, values))
}

/// How many random programs (each also with its gradient).
const N_RANDOM: u64 = 200;

#[test]
fn random_programs_and_their_gradients_give_dx_values_on_xla() {
    let dir = case_folder("random");
    // The reverse sweep of a `while` keeps a number of carries known only as it runs, which
    // StableHLO's static shapes cannot hold (an export error, tested in `export::tests`
    // with the export of a forward `while`), so these programs have none.
    let config = GenConfig {
        whiles: false,
        ..GenConfig::default()
    };
    let mut n_cases = 0;
    for seed in 0..N_RANDOM {
        let program = random_program(seed, &config);
        let inputs = random_inputs(&program, seed);
        let (module, values) = export_with_values(&program, &inputs)
            .unwrap_or_else(|err| panic!("seed {seed}: {err}\n{}", bulk(&program)));
        write_case(
            &dir,
            &format!("program{seed:04}"),
            &module,
            &inputs,
            &values,
        );
        n_cases += 1;
        let has_float_input = program
            .inputs
            .iter()
            .any(|&var| program.var_ty(var).elem.is_float());
        if !has_float_input {
            continue;
        }
        let gradient = with_vjp(&program);
        let inputs = random_inputs(&gradient, seed);
        let (module, values) = export_with_values(&gradient, &inputs)
            .unwrap_or_else(|err| panic!("seed {seed} (vjp): {err}\n{}", bulk(&gradient)));
        write_case(&dir, &format!("vjp{seed:04}"), &module, &inputs, &values);
        n_cases += 1;
    }
    let report = check_on_xla(&dir, &[], &[]);
    assert!(
        report.contains(&format!("{n_cases} of {n_cases} cases agree")),
        "{report}"
    );
}

/// The arrays of a value, leaf by leaf (tuples flattened in order), as `@main` takes them.
fn leaves(value: &Value, out: &mut Vec<Array>) {
    match value {
        Value::Array(array) => out.push(array.clone()),
        Value::Tuple(items) => items.iter().for_each(|item| leaves(item, out)),
    }
}

/// A session that has run an example file (which must run without errors).
fn example_session(file: &str) -> Session {
    let path = common::workspace_root().join("examples").join(file);
    let src = std::fs::read_to_string(&path).expect("read the example");
    let mut session = Session::new(SessionConfig::default());
    session.set_data_dir(path.parent().map(Path::to_path_buf));
    eval_without_errors(&mut session, &src, file);
    session
}

/// Evaluates `src` (from `what`) in a session; it must run without errors.
fn eval_without_errors(session: &mut Session, src: &str, what: &str) {
    for result in session.eval_source(src) {
        for output in &result.outputs {
            assert!(!matches!(output, Output::Error(_)), "{what}: {output:?}");
        }
    }
}

/// Exports `export` from a session and writes a case: `@main`'s inputs are the values of
/// `args` (dx expressions), and the expected results dx's value of `expected`.
fn write_session_case(
    dir: &Path,
    name: &str,
    session: &mut Session,
    export: &str,
    args: &[&str],
    expected: &str,
) {
    let module = session
        .export(export)
        .unwrap_or_else(|diag| panic!("{name}: cannot export `{export}`: {}", diag.message));
    let mut inputs = Vec::new();
    for arg in args {
        let (_, value) = session
            .evaluate(arg)
            .unwrap_or_else(|diag| panic!("{name}: {arg}: {}", diag.message));
        leaves(&value, &mut inputs);
    }
    let (_, value) = session
        .evaluate(expected)
        .unwrap_or_else(|diag| panic!("{name}: {expected}: {}", diag.message));
    let mut results = Vec::new();
    leaves(&value, &mut results);
    write_case(dir, name, &module, &inputs, &results);
}

/// `args` as one application's arguments: `(a) (b)`.
fn applied(args: &[&str]) -> String {
    args.iter()
        .map(|arg| format!("({arg})"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Exports `function` (with `examples`, applied to its arguments, which fix the types of a
/// generic function; `@main` takes them as inputs) and writes a case with dx's value of
/// `function args…`.
fn write_function_case(
    dir: &Path,
    name: &str,
    session: &mut Session,
    function: &str,
    args: &[&str],
    examples: bool,
) {
    let call = format!("({function}) {}", applied(args));
    let export = match examples {
        true => format!("{function} {}", applied(args)),
        false => function.to_string(),
    };
    write_session_case(dir, name, session, &export, args, &call);
}

/// `(y, pullback seed)` for `pair` = `vjp f x` or `linearize f x` written out: the value the
/// exported derivative returns.
fn pulled_back(pair: &str, seed: &str) -> String {
    format!("(fst ({pair}), (snd ({pair})) ({seed}))")
}

/// Exports `vjp function` and writes a case with dx's own `vjp` applied in dx: the value
/// `(y, pullback ct)` of `(y, pullback) = vjp function x`, for `@main(x…, ct…)`.
fn write_vjp_case(
    dir: &Path,
    name: &str,
    session: &mut Session,
    function: &str,
    arg: &str,
    seed: &str,
) {
    let vjp = format!("vjp ({function}) ({arg})");
    let expected = pulled_back(&vjp, seed);
    write_session_case(
        dir,
        name,
        session,
        &format!("vjp {function}"),
        &[arg, seed],
        &expected,
    );
}

/// A function to export and the arguments (dx expressions) to call it with.
type Call = (&'static str, &'static [&'static str]);

#[test]
fn the_examples_losses_and_gradients_give_dx_values_on_xla() {
    let dir = case_folder("examples");
    // Each file, definitions added to it (none, or functions of its values), and the
    // functions exported with their arguments.
    let cases: &[(&str, &str, &[Call])] = &[
        (
            "mlp.dx",
            "",
            &[
                ("loss", &["params0"]),
                ("grad loss", &["params0"]),
                ("train_step", &["params0"]),
                ("accuracy", &["trained_60"]),
            ],
        ),
        (
            "regression.dx",
            "def loss_vjp(params: (Float, Float), ct: Float) -> (Float, Float) =\n  \
             (snd (vjp loss params)) ct\n",
            &[
                ("loss", &["(0.5, -0.25)"]),
                ("grad loss", &["(0.5, -0.25)"]),
                ("loss_vjp", &["(0.5, -0.25)", "2.0"]),
            ],
        ),
        ("nnmf.dx", "", &[("loss", &["H0"]), ("grad loss", &["H0"])]),
        ("ode.dx", "", &[("final_x", &["0.2"]), ("grad final_x", &["0.2"])]),
        (
            "monte_carlo.dx",
            "def estimate(k: Key) -> (Float, (Fin N)=>Float) =\n  [kx, ky] = split_key k\n  \
             (4.0 * mean for i:(Fin N). b_to_f (sq (rand (ixkey kx i)) + sq (rand (ixkey ky i)) < 1.0), \
             for i:(Fin N). randn (ixkey k i))\n",
            &[("estimate", &["new_key 7"])],
        ),
    ];
    let mut n_cases = 0;
    for (file, extra, functions) in cases {
        let mut session = example_session(file);
        eval_without_errors(&mut session, extra, file);
        for (function, args) in *functions {
            let name = format!(
                "{}-{}",
                file.trim_end_matches(".dx"),
                function.replace(' ', "_")
            );
            write_function_case(&dir, &name, &mut session, function, args, false);
            n_cases += 1;
        }
    }
    let report = check_on_xla(&dir, &[], &[]);
    assert!(
        report.contains(&format!("{n_cases} of {n_cases} cases agree")),
        "{report}"
    );
}

/// Functions, tuples of arrays in and out, for the export forms below.
const FUNCTIONS: &str = "\
def wave(x: Float) -> Float = sin x * x
def mix(p: (Float, (Fin 3)=>Float)) -> (Float, (Fin 3)=>Float) =
  (a, v) = p
  (a * sum v, for i. sq v[i] * a + exp v[i])
def total(xs: n=>Float) -> Float given (n|Ix) = sum (for i. sq xs[i] * xs[i])
def wsum(w: n=>Float, xs: n=>Float) -> Float given (n|Ix) = sum (for i. w[i] * tanh xs[i])
xs0 = [0.5, -1.0, 2.0, 0.25, 1.5]
";

#[test]
fn exported_vjps_give_dx_vjp_values_on_xla() {
    let dir = case_folder("vjp");
    let mut session = Session::new(SessionConfig::default());
    eval_without_errors(&mut session, FUNCTIONS, "FUNCTIONS");
    write_vjp_case(&dir, "wave", &mut session, "wave", "0.7", "1.5");
    write_vjp_case(
        &dir,
        "mix",
        &mut session,
        "mix",
        "(0.5, [1.0, -2.0, 0.25])",
        "(2.0, [0.5, 1.0, -1.0])",
    );
    // `linearize f` has the same form: its second result is the tangent map.
    let linearize = "linearize (mix) ((0.5, [1.0, -2.0, 0.25]))";
    write_session_case(
        &dir,
        "mix-linearize",
        &mut session,
        "linearize mix",
        &["(0.5, [1.0, -2.0, 0.25])", "(1.0, [0.0, 0.5, 2.0])"],
        &pulled_back(linearize, "1.0, [0.0, 0.5, 2.0]"),
    );
    // The MLP's loss: its pullback of 1.0 is the gradient of the parameters.
    let mut mlp = example_session("mlp.dx");
    write_vjp_case(&dir, "mlp-loss", &mut mlp, "loss", "params0", "1.0");
    let report = check_on_xla(&dir, &[], &[]);
    assert!(report.contains("4 of 4 cases agree"), "{report}");
}

#[test]
fn example_arguments_fix_the_types_of_generic_functions_on_xla() {
    let dir = case_folder("examples-args");
    let mut session = Session::new(SessionConfig::default());
    eval_without_errors(&mut session, FUNCTIONS, "FUNCTIONS");
    // `f x0 y0`: `f` at the types of the examples (the values are `@main`'s inputs here).
    for (name, function, args) in [
        ("total", "total", &["xs0"][..]),
        ("grad-total", "grad total", &["xs0"][..]),
        ("wsum", "wsum", &["[1.0, 2.0, 3.0]", "[0.1, 0.2, 0.3]"][..]),
        (
            "grad-wsum",
            "grad (wsum [1.0, 2.0, 3.0])",
            &["[0.1, 0.2, 0.3]"][..],
        ),
    ] {
        write_function_case(&dir, name, &mut session, function, args, true);
    }
    // The sizes are the examples' own: five elements here.
    let module = session.export("grad total xs0").expect("exports");
    assert!(
        module.contains("@main(%arg0: tensor<5xf32>) -> (tensor<5xf32>)"),
        "{module}"
    );
    // `vjp` with an example argument.
    let vjp = "vjp total xs0";
    write_session_case(
        &dir,
        "vjp-total",
        &mut session,
        vjp,
        &["xs0", "2.0"],
        &pulled_back(vjp, "2.0"),
    );
    // The REPL command gives the same module.
    let mut command = String::new();
    for result in session.eval_source(":export grad total xs0\n") {
        for output in result.outputs {
            match output {
                Output::Text(text) => command = text,
                other => panic!("{other:?}"),
            }
        }
    }
    assert_eq!(command, module);
    let report = check_on_xla(&dir, &[], &[]);
    assert!(report.contains("5 of 5 cases agree"), "{report}");
}

/// Monoid operations and the data they run on (issue 11): sums and maxima, the online
/// logsumexp, scans of affine maps (integers: exact), tables of 1000 elements (not a power of
/// two), rows of matrices, single elements and empty tables.
const MONOIDS: &str = "\
def rsum(xs: n=>Float) -> Float given (n|Ix) = reduce(xs, 0.0, \\a b. a + b)
def isum(xs: n=>Int) -> Int given (n|Ix) = reduce(xs, 0, \\a b. a + b)
def rmax(xs: n=>Float) -> Float given (n|Ix) = reduce(xs, -infinity, \\a b. max a b)
def imax(xs: n=>Int) -> Int given (n|Ix) = reduce(xs, 1000000, \\a b. max a b)
def rprod(xs: n=>Float) -> Float given (n|Ix) = reduce(xs, 1.0, \\a b. a * b)
def rany(bs: n=>Bool) -> Bool given (n|Ix) = reduce(bs, False, \\a b. a || b)
def lse(xs: n=>Float) -> Float given (n|Ix) =
  (m, s) = reduce(for i. (xs[i], 1.0), (-infinity, 0.0), \\(m1, s1) (m2, s2).
    m12 = max m1 m2
    (m12, s1 * exp (m1 - m12) + s2 * exp (m2 - m12)))
  m + log s
def compose(f: (Int, Int), g: (Int, Int)) -> (Int, Int) =
  (a, b) = f
  (c, d) = g
  (a * c, b * c + d)
def affine_scan(ps: n=>Int, qs: n=>Int) -> (n=>Int, n=>Int) given (n|Ix) =
  ys = assoc_scan(for i. (ps[i], qs[i]), (1, 0), \\f g. compose f g)
  (for i. fst ys[i], for i. snd ys[i])
def affine_reduce(ps: n=>Int, qs: n=>Int) -> (Int, Int) given (n|Ix) =
  reduce(for i. (ps[i], qs[i]), (1, 0), \\f g. compose f g)
def rows_cumsum(m: n=>k=>Float) -> n=>k=>Float given (n|Ix, k|Ix) = for i. cumsum m[i]
def rows_sum(m: n=>k=>Float) -> n=>Float given (n|Ix, k|Ix) = for i. rsum m[i]
def rows_argmax(m: n=>k=>Float) -> n=>k given (n|Ix, k|Ix) = for i. argmax m[i]
def rows_affine(ps: n=>k=>Int, qs: n=>k=>Int) -> n=>k=>Int given (n|Ix, k|Ix) =
  for i. snd (affine_scan ps[i] qs[i])
def rows_lse(m: n=>k=>Float) -> n=>Float given (n|Ix, k|Ix) = for i. lse m[i]
def sum_cumprod(xs: n=>Float) -> Float given (n|Ix) = sum (cumprod xs)
def thrice(xs: n=>Float) -> n=>Float given (n|Ix) = apply_n(3, xs, \\ys. cumsum ys)
ordinals = for i:(Fin 1000). n_to_i (ordinal i)
ints = for i. mod (ordinals[i] * 37) 101 - 50
signs = for i. select (mod ordinals[i] 3 == 0) (-1) 1
floats = for i. sin (0.01 * i_to_f ordinals[i]) + 0.5
near_one = for i. 1.0 + 0.001 * cos (i_to_f ordinals[i])
ties = for i. i_to_f (mod ordinals[i] 7)
one_true = for i. ordinals[i] == 500
mat = for i:(Fin 3). for j:(Fin 5). 0.5 * n_to_f (ordinal i * 5 + ordinal j) - 3.0
imat = for i:(Fin 3). for j:(Fin 5). n_to_i (ordinal i * 5 + ordinal j) - 7
smat = for i:(Fin 3). for j:(Fin 5). select (ordinal j == 2) (-1) 1
none = for i:(Fin 0). 1.5
inone = for i:(Fin 0). (3 :: Int)
";

#[test]
fn monoids_give_dx_values_on_xla() {
    let dir = case_folder("monoids");
    let mut session = Session::new(SessionConfig::default());
    eval_without_errors(&mut session, MONOIDS, "MONOIDS");
    let cases: &[(&str, &str, &[&str])] = &[
        ("sum", "rsum", &["floats"]),
        ("sum-int", "isum", &["ints"]),
        ("max", "rmax", &["floats"]),
        // `e` is not an identity of `max`: dx uses it only for an empty table.
        ("max-int", "imax", &["ints"]),
        ("prod", "rprod", &["near_one"]),
        ("any", "rany", &["one_true"]),
        ("logsumexp", "lse", &["floats"]),
        ("logsumexp-grad", "grad lse", &["floats"]),
        ("cumsum", "cumsum", &["floats"]),
        ("cumprod", "cumprod", &["near_one"]),
        ("affine-scan", "affine_scan", &["signs", "ints"]),
        ("affine-reduce", "affine_reduce", &["signs", "ints"]),
        ("argmax-ties", "argmax", &["ties"]),
        ("rows-cumsum", "rows_cumsum", &["mat"]),
        ("rows-sum", "rows_sum", &["mat"]),
        ("rows-logsumexp", "rows_lse", &["mat"]),
        // A scan inside a loop's body.
        ("cumsum-thrice", "thrice", &["near_one"]),
        ("rows-argmax", "rows_argmax", &["mat"]),
        ("rows-affine", "rows_affine", &["smat", "imat"]),
        ("one-cumsum", "cumsum", &["[2.5]"]),
        ("one-max", "imax", &["[(3 :: Int)]"]),
        (
            "one-affine",
            "affine_scan",
            &["[(2 :: Int)]", "[(5 :: Int)]"],
        ),
        ("empty-sum", "rsum", &["none"]),
        ("empty-max", "imax", &["inone"]),
        ("empty-cumsum", "cumsum", &["none"]),
        ("empty-affine", "affine_reduce", &["inone", "inone"]),
    ];
    for (name, function, args) in cases {
        write_function_case(&dir, name, &mut session, function, args, true);
    }
    // The gradient of a scan is a right scan (over a non-commutative operator).
    for (name, x) in [
        ("sum-cumprod-vjp", "near_one"),
        ("sum-cumprod-vjp-zero", "[2., 0., 4.]"),
    ] {
        let vjp = format!("vjp sum_cumprod ({x})");
        write_session_case(
            &dir,
            name,
            &mut session,
            &vjp,
            &[x, "2.0"],
            &pulled_back(&vjp, "2.0"),
        );
    }
    // A right scan as the IR writes it (the surface language has none), of affine maps
    // (exact), at lengths 1000, 7, 1 and 0.
    let right_lengths = [1000, 7, 1, 0];
    for n in right_lengths {
        let program = parse_program(&format!(
            "program(%0_a: [{n}]i64, %1_b: [{n}]i64) {{
               %2: [{n}]i64, %3: [{n}]i64 = assoc_scan_right (%0_a, %1_b) (1:i64, 0:i64)
                 (\\%4_a: []i64, %5_b: []i64, %6_c: []i64, %7_d: []i64 ->
                 %8: []i64 = mul %4_a %6_c
                 %9: []i64 = mul %5_b %6_c
                 %10: []i64 = add %9 %7_d
                 in %8, %10)
               in %2, %3
             }}"
        ))
        .expect("the right scan parses");
        let signs: Vec<i64> = (0..n as i64)
            .map(|i| if i % 3 == 0 { -1 } else { 1 })
            .collect();
        let offsets: Vec<i64> = (0..n as i64).map(|i| (i * 37) % 101 - 50).collect();
        let inputs = [
            Array::new(vec![n], ArrayData::I64(signs)),
            Array::new(vec![n], ArrayData::I64(offsets)),
        ];
        let (module, values) =
            export_with_values(&program, &inputs).unwrap_or_else(|err| panic!("{err}"));
        write_case(
            &dir,
            &format!("right-affine-{n}"),
            &module,
            &inputs,
            &values,
        );
    }
    let n_cases = cases.len() + 2 + right_lengths.len();
    let report = check_on_xla(&dir, &[], &[]);
    assert!(
        report.contains(&format!("{n_cases} of {n_cases} cases agree")),
        "{report}"
    );
}

#[test]
fn a_cumsum_of_a_million_elements_exports_without_a_loop() {
    let mut session = Session::new(SessionConfig::default());
    let src = "def big(xs: (Fin 1000000)=>Float) -> (Fin 1000000)=>Float = cumsum xs\n";
    eval_without_errors(&mut session, src, "big");
    let module = session.export("big").expect("exports");
    assert!(!module.contains("stablehlo.while"), "{module}");
    assert!(module.contains("\"stablehlo.slice\""), "{module}");
}

#[test]
fn an_example_argument_that_does_not_fit_is_a_type_error_at_it() {
    let mut session = Session::new(SessionConfig::default());
    let src = format!("{FUNCTIONS}:export wsum [1.0, 2.0] xs0\n");
    let results = session.eval_source(&src);
    let errors: Vec<String> = results
        .iter()
        .flat_map(|result| &result.outputs)
        .filter(|output| matches!(output, Output::Error(_)))
        .map(|output| dx_lang::display::render_output(output, &src))
        .collect();
    assert_eq!(
        errors,
        [
            "Type error: expected type ((Fin 2) => Float32), found ((Fin 5) => Float32)\n\
          :export wsum [1.0, 2.0] xs0\n\
          \x20                       ^^^"
        ]
    );
}

#[test]
fn the_mlp_gradient_sharded_over_four_devices_gives_dx_values() {
    let dir = case_folder("sharded");
    // `batch_grad`: the gradient of the example's loss with the batch as arguments.
    let mut session = example_session("mlp.dx");
    write_function_case(
        &dir,
        "mlp-batch_grad",
        &mut session,
        "batch_grad",
        &["xs", "labels", "params0"],
        false,
    );
    // The batch version is the example's own gradient.
    let (_, own) = session
        .evaluate("grad loss params0")
        .expect("the example's gradient");
    let (_, batch) = session
        .evaluate("batch_grad xs labels params0")
        .expect("the batch gradient");
    assert_eq!(own, batch);
    let report = check_on_xla(
        &dir,
        &["--shard", "4", "--sharded-args", "0,1"],
        &[("XLA_FLAGS", "--xla_force_host_platform_device_count=4")],
    );
    assert!(report.contains("1 of 1 cases agree"), "{report}");
}

/// The training script of docs/scaling.md's worked example (its `python` block that starts
/// with `# train_mlp.py`).
fn worked_example_script() -> String {
    let doc = std::fs::read_to_string(common::workspace_root().join("docs/scaling.md"))
        .expect("read docs/scaling.md");
    let start = doc
        .find("```python\n# train_mlp.py")
        .expect("docs/scaling.md has the training script")
        + "```python\n".len();
    let end = start + doc[start..].find("```").expect("the script's block ends");
    doc[start..end].to_string()
}

#[test]
fn the_worked_example_of_docs_scaling_trains_the_mlp_on_xla() {
    let dir = case_folder("worked-example");
    let mut session = example_session("mlp.dx");
    let module = session.export("batch_grad").expect("batch_grad exports");
    std::fs::write(dir.join("mlp_grad.mlir"), module).expect("write the module");
    std::fs::write(dir.join("train_mlp.py"), worked_example_script()).expect("write the script");
    let stdout = common::stdout_of_success(
        Command::new(common::python())
            .arg(dir.join("train_mlp.py"))
            .arg(dir.join("mlp_grad.mlir"))
            .env(
                "PYTHONPATH",
                common::workspace_root().join("repl/tests/stablehlo"),
            )
            .env("XLA_FLAGS", "--xla_force_host_platform_device_count=4"),
        "the worked example",
    );
    let accuracy: f64 = stdout
        .trim()
        .rsplit(' ')
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("no accuracy in {stdout:?}"));
    assert!(stdout.contains("on 4 device(s)"), "{stdout}");
    assert!(accuracy >= 0.9, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

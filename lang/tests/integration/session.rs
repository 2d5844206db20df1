//! The session façade: start-up, outputs as data, and the session surviving errors.

use std::time::Duration;

use crate::common::{outputs, outputs_interrupted_after};
use dx_lang::session::{ErrorKind, Output, Redefinition, Session, SessionConfig};

#[test]
fn prelude_loads_without_errors() {
    let session = Session::new(SessionConfig::default());
    assert_eq!(session.startup_outputs(), &[] as &[Output]);
    let names = session.completion_names();
    for name in ["mean", "softmax", "sum", "fold", "linspace"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
}

#[test]
fn outputs_are_structured() {
    let mut session = Session::new(SessionConfig::default());
    let got = outputs(&mut session, "x = [1., 2.]\n:p x\n:t x\n:p y\n");
    assert_eq!(got[0], Output::Value("[1., 2.]".into()));
    assert_eq!(got[1], Output::Type("((Fin 2) => Float32)".into()));
    match &got[2] {
        Output::Error(diag) => {
            assert_eq!(diag.kind(), ErrorKind::Type);
            let span = diag.span.expect("a type error has a span");
            assert_eq!(span.range(), 26..27);
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn time_pragma_reports_timings() {
    let mut session = Session::new(SessionConfig::default());
    let got = outputs(&mut session, "%time\n:p sum (for i:(Fin 1000). 1.0)\n");
    assert_eq!(got[0], Output::Value("1000.".into()));
    assert!(
        matches!(
            got[1],
            Output::Timing {
                bench_name: None,
                runs: None,
                ..
            }
        ),
        "{got:?}"
    );
}

#[test]
fn bench_pragma_runs_several_times() {
    let mut session = Session::new(SessionConfig::default());
    let got = outputs(
        &mut session,
        "%bench \"small\"\n:p sum (for i:(Fin 10). 1.0)\n",
    );
    match &got[1] {
        Output::Timing {
            bench_name: Some(name),
            runs: Some(runs),
            ..
        } => {
            assert_eq!(name, "small");
            assert!(*runs >= 5);
        }
        other => panic!("expected a bench timing, got {other:?}"),
    }
}

#[test]
fn interrupt_stops_a_long_computation() {
    let mut session = Session::new(SessionConfig::default());
    let got = outputs_interrupted_after(
        &mut session,
        Duration::from_millis(200),
        // Minutes of work: a compiled loop of 2·10⁹ steps alone ends in about a second.
        ":p fold(0.0, \\j:(Fin 100) c. fold(c, \\i:(Fin 2000000000) d. d + 1.0))\n",
    );
    match &got[0] {
        Output::Error(diag) => assert_eq!(diag.kind(), ErrorKind::Runtime),
        other => panic!("expected an interruption, got {other:?}"),
    }
    // The session is still usable.
    assert_eq!(
        outputs(&mut session, ":p 1.0 + 1.0\n"),
        vec![Output::Value("2.".into())]
    );
}

#[test]
fn a_million_element_for_runs_as_one_fused_kernel() {
    let mut session = Session::new(SessionConfig::default());
    let got = outputs(&mut session, "n = 1000000\nxs : (Fin n)=>Float64 = for i. n_to_f (ordinal i)\n:p sum for i. xs[i] * 2.0 + 1.0\n");
    assert_eq!(got, vec![Output::Value("1000000000000.".into())], "{got:?}");
    let report = session.last_run().expect("the expression ran");
    assert_eq!(report.engine, dx_lang::session::Engine::Fused);
    assert_eq!((report.kernels, report.matmuls), (1, 0), "{report:?}");
    assert_eq!(
        report.statements, 0,
        "nothing ran on the bulk evaluator: {report:?}"
    );
}

#[test]
fn every_engine_agrees_with_the_interpreter_on_the_literate_tests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for dir in ["tests/dx", "examples"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "dx") {
                continue; // e.g. `examples/data/`
            }
            // Data files are found relative to the script, as `dx run` does.
            let data_dir = path.parent().map(std::path::Path::to_path_buf);
            let src = std::fs::read_to_string(&path).unwrap();
            let reference_config = SessionConfig {
                engine: dx_lang::session::Engine::Reference,
                ..SessionConfig::default()
            };
            let mut reference = Session::new(reference_config);
            reference.set_data_dir(data_dir.clone());
            let strip_timing = |outputs: Vec<Output>| -> Vec<Output> {
                outputs
                    .into_iter()
                    .filter(|output| !matches!(output, Output::Timing { .. }))
                    .collect()
            };
            let expected = strip_timing(outputs(&mut reference, &src));
            for engine in [
                dx_lang::session::Engine::Fused,
                dx_lang::session::Engine::Bulk,
            ] {
                let mut session = Session::new(SessionConfig {
                    engine,
                    ..SessionConfig::default()
                });
                session.set_data_dir(data_dir.clone());
                assert_eq!(
                    strip_timing(outputs(&mut session, &src)),
                    expected,
                    "{engine:?} on {}",
                    entry.path().display()
                );
            }
        }
    }
}

/// In the REPL a new definition replaces the old one (docs/language.md): re-running an entry
/// works, and what was computed or checked against the old definition keeps its meaning.
#[test]
fn repl_definitions_replace_and_dependents_keep_theirs() {
    let mut session = Session::new(SessionConfig::default());
    let src = "def f(x: Float) -> Float = x + 1.0\n\
               def g(x: Float) -> Float = f x * 10.0\n\
               v = f 1.0\n\
               def f(x: Float) -> Float = x + 100.0\n\
               n = 1\n\
               n = 2\n\
               :p (f 1.0, g 1.0, v, n)\n";
    let got = outputs(&mut session, src);
    assert_eq!(got, vec![Output::Value("(101., 20., 2., 2)".into())]);
}

/// A type that names a top-level value (`Element names`, Note [Value parameters]) is of the
/// value it named: once the REPL replaces that value by one of another type, reading it through
/// the type is an error, not a read of the new value at the old indices. One of the same type
/// is read.
#[test]
fn a_type_naming_a_redefined_value_does_not_read_the_new_one() {
    let mut session = Session::new(SessionConfig::default());
    let src = "import set\n\
               names = to_set [20, 10, 30]\n\
               p : Element names = from_just (member 30 names)\n\
               :p value p\n\
               names = to_set [5, 6]\n\
               :p value p\n\
               names = to_set [7, 8, 9]\n\
               :p value p\n";
    let got = outputs(&mut session, src);
    assert_eq!(got[0], Output::Value("30".into()), "{got:?}");
    match &got[1] {
        Output::Error(diag) => assert!(
            diag.message
                .contains("`names` was redefined after a type named it"),
            "{diag:?}"
        ),
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(got[2], Output::Value("9".into()), "{got:?}");
}

/// In a script a second definition of a name is an error at the second one; the first
/// stays in force.
#[test]
fn script_definitions_are_made_once() {
    let config = SessionConfig {
        redefinition: Redefinition::Refuse,
        ..SessionConfig::default()
    };
    let mut session = Session::new(config);
    let src = "n = 1\nn = 2\n:p n\n";
    let got = outputs(&mut session, src);
    match &got[0] {
        Output::Error(diag) => {
            assert_eq!(diag.kind(), ErrorKind::Type);
            assert!(
                diag.message.contains("already defined on line 1"),
                "{diag:?}"
            );
            assert_eq!(diag.span.map(|span| span.range()), Some(6..7));
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(got[1], Output::Value("1".into()));
}

#[test]
fn number_elements_of_a_table_keep_their_own_values_and_positions() {
    // A table of plain numbers is data (`ExprKind::Numbers`): the checker types one number of
    // each form (`2`, `-2`, `2.5`, `-2.5`) and checks each integer's range at its position.
    let src = ":p [1, -2, 3, -4]\n:p [0.5, -1, 2.5, -3.5, 4]\n:p [1, 2, 3, 4294967296, 5]\n";
    let mut session = Session::new(SessionConfig::default());
    let got = outputs(&mut session, src);
    assert_eq!(got[0], Output::Value("[1, -2, 3, -4]".into()));
    assert_eq!(got[1], Output::Value("[0.5, -1., 2.5, -3.5, 4.]".into()));
    let Output::Error(diag) = &got[2] else {
        panic!("expected an error, got {:?}", got[2]);
    };
    assert!(diag.message.contains("does not fit"), "{diag:?}");
    let at = src.find("4294967296").unwrap();
    assert_eq!(diag.span.map(|span| span.range()), Some(at..at + 10));
}

#[test]
fn a_long_table_literal_is_parsed_checked_and_lowered_in_linear_time() {
    // 30 000 elements: a second or two in a debug build when every stage is linear in the
    // literal's length; the quadratic front end that issue 9 reports took minutes here. The
    // sum is 0 + 1 + … + 6 over and over: 4285 full rounds of 21, then 0 + 1 + 2 + 3 + 4.
    let n_elems = 30_000;
    let items: Vec<String> = (0..n_elems).map(|idx| (idx % 7).to_string()).collect();
    let src = format!(":p sum [{}]\n", items.join(", "));
    let mut session = Session::new(SessionConfig::default());
    let got = outputs(&mut session, &src);
    assert_eq!(got, vec![Output::Value((4285 * 21 + 10).to_string())]);
}

/// `dex_test_mode()` gives the session's test mode (`DEX_TEST_MODE` in the environment by
/// default), and a block compiled under each mode picks its own size.
#[test]
fn dex_test_mode_is_the_sessions_test_mode() {
    for test_mode in [false, true] {
        let mut session = Session::new(SessionConfig {
            test_mode,
            ..SessionConfig::default()
        });
        outputs(&mut session, "n = if dex_test_mode() then 3 else 5");
        let size = crate::common::value(&mut session, "size (Fin n)");
        assert_eq!(size, if test_mode { "3" } else { "5" });
    }
}

/// A struct's methods are definitions with names no program can write (`Thing.incby`):
/// completion offers the struct and its fields' functions, not those names.
#[test]
fn completion_leaves_out_the_definitions_methods_make() {
    let mut session = Session::new(SessionConfig::default());
    let src = "struct Thing =\n  x : Float\n\n  def twice() -> Float = 2.0 * self.x\n";
    outputs(&mut session, src);
    assert_eq!(
        crate::common::value(&mut session, "Thing(1.5).twice()"),
        "3."
    );
    let names = session.completion_names();
    assert!(names.iter().any(|name| name == "Thing"), "{names:?}");
    assert!(
        !names.iter().any(|name| name.contains("twice")),
        "{names:?}"
    );
}

/// Each origin of an error has its stable code, and each code its kind.
#[test]
fn errors_carry_the_code_of_their_origin() {
    use dx_lang::session::Code;
    let cases = [
        (":p (1 + 2\n", Code::Incomplete),
        (":p 1 + )\n", Code::Syntax),
        ("%passes core bogus\n:p 1\n", Code::UnknownStage),
        (":p 1 + True\n", Code::NoInstance),
        (":p (\\x:Int. x) True\n", Code::Mismatch),
        (":p doubel 2\n", Code::Unbound),
        (":p (\\(a, a). a) (1, 2)\n", Code::Duplicate),
        (":p [1.0, 2.0].z\n", Code::Type),
        (":p throw ()\n", Code::Effect),
        (":p (\\x:Int. x) 1 2\n", Code::Arity),
        (":p for i. 1.0\n", Code::NeedsAnnotation),
        (":p (\\(Just x). x) (Just 1)\n", Code::Pattern),
        (":p Fin2 3\n", Code::Unbound),
        (":p (error \"boom\") + 1.0\n", Code::Runtime),
        (
            "xs : (Fin 2)=>Float = load_npy \"no-such-file.npy\"\n",
            Code::File,
        ),
    ];
    for (src, code) in cases {
        let mut session = Session::new(SessionConfig::default());
        let errors: Vec<_> = outputs(&mut session, src)
            .into_iter()
            .filter_map(|output| match output {
                Output::Error(diag) => Some(diag),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 1, "{src:?}: {errors:?}");
        assert_eq!(errors[0].code, code, "{src:?}: {errors:?}");
        assert!(errors[0].ice.is_none());
    }
    // Codes are distinct, and the kind shown ("Type error: …") is the code's.
    let all = [
        Code::Syntax,
        Code::Incomplete,
        Code::UnknownStage,
        Code::Type,
        Code::Unsupported,
        Code::Mismatch,
        Code::NoInstance,
        Code::Unbound,
        Code::Duplicate,
        Code::Effect,
        Code::Arity,
        Code::NeedsAnnotation,
        Code::Pattern,
        Code::Runtime,
        Code::File,
        Code::Interrupted,
        Code::OutOfMemory,
        Code::Export,
        Code::Ice,
        Code::ParserBug,
        Code::LowerBug,
        Code::CheckerBug,
        Code::Panic,
        Code::Internal,
    ];
    // docs/editors.md lists every code a user can meet.
    let guide = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/editors.md"),
    )
    .unwrap();
    for code in all.iter().filter(|code| code.kind() != ErrorKind::Internal) {
        assert!(
            guide.contains(&format!("| `{}` |", code.as_str())),
            "docs/editors.md does not list {code:?}"
        );
    }
    let mut texts: Vec<&str> = all.iter().map(|code| code.as_str()).collect();
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), all.len());
    for code in all {
        let letter = match code.kind() {
            ErrorKind::Parse => 'P',
            ErrorKind::Type => 'T',
            ErrorKind::Runtime => 'R',
            ErrorKind::Export => 'X',
            ErrorKind::Internal => 'I',
        };
        assert!(code.as_str().starts_with(letter), "{code:?}");
    }
}

/// A top-level value's `Nat` fields are sizes in later blocks (Note [Static leaves of
/// top-level values]); a new value under the name replaces them, and a value without the
/// field leaves none behind.
#[test]
fn a_redefined_value_gives_its_own_field_sizes() {
    let mut session = Session::new(SessionConfig::default());
    let program = "struct Cam =\n  pixels : Nat\n  width : Float\n\n\
                   cam = Cam(4, 0.5)\n\n:p size (Fin cam.pixels)\n\n\
                   cam = Cam(2, 0.5)\n\n:p size (Fin cam.pixels)\n\n\
                   cam = (3, 1.0)\n\n:p size (Fin cam.pixels)\n";
    let got = outputs(&mut session, program);
    let values: Vec<&Output> = got
        .iter()
        .filter(|out| matches!(out, Output::Value(_) | Output::Error(_)))
        .collect();
    assert_eq!(values[0], &Output::Value("4".into()));
    assert_eq!(values[1], &Output::Value("2".into()));
    match values[2] {
        Output::Error(diag) => assert!(diag.message.contains("no field `pixels`"), "{diag:?}"),
        other => panic!("expected an error, got {other:?}"),
    }
}

//! The standard library through the session (issue 10): random tables run as one parallel
//! kernel and every engine draws the same bits; every prelude definition is documented for
//! `:help`; data files load and save relative to the script's folder, with errors that name
//! the file and both shapes.

use crate::common::{outputs, session, stage_text, value};
use dx_lang::session::{Engine, ErrorKind, Output};

const RANDOM_TABLE: &str =
    "for i:(Fin 3000) j:(Fin 7). (rand (ixkey (new_key 11) (i, j)), randn (ixkey (new_key 3) (i, j)))";

#[test]
fn a_random_table_is_hashed_in_one_parallel_kernel() {
    let mut session = session(Engine::Fused);
    let fused = stage_text(
        &mut session,
        "fused",
        "sum (for i:(Fin 3000) j:(Fin 7). rand (ixkey (new_key 11) (i, j)))",
    );
    // The hash runs once per element, inside one kernel over the whole table (the engine may
    // hoist index arithmetic into a kernel of its own).
    assert_eq!(fused.matches("threefry2x32").count(), 1, "{fused}");
    let kernel_of_hash = fused
        .lines()
        .take_while(|line| !line.contains("threefry2x32"))
        .filter(|line| line.trim_start().starts_with("kernel"))
        .last()
        .expect("a kernel holds the hash");
    assert!(kernel_of_hash.contains("over [3000, 7]"), "{fused}");
    let report = session.last_run().expect("a run report");
    assert_eq!(report.build1_fallbacks, 0, "{fused}");
}

#[test]
fn every_engine_draws_the_same_bits() {
    let texts: Vec<String> = [Engine::Reference, Engine::Bulk, Engine::Fused]
        .into_iter()
        .map(|engine| value(&mut session(engine), &format!(":p {RANDOM_TABLE}\n")))
        .collect();
    assert_eq!(texts[0], texts[1], "bulk evaluator");
    assert_eq!(texts[0], texts[2], "fused engine");
}

#[test]
fn issue_10_test_vectors() {
    let mut session = session(Engine::Fused);
    assert_eq!(
        value(&mut session, ":p (hash 0 0, hash 123 456)\n"),
        // Words print in hexadecimal, as Dex's.
        format!(
            "({:#x}, {:#x})",
            0x6b20_0159_99ba_4efe_u64, 0x5009_45c5_65c9_8701_u64
        )
    );
    assert_eq!(
        value(
            &mut session,
            ":p for i:(Fin 3) j:(Fin 2). rand (ixkey (new_key 11) (i, j))\n"
        ),
        "[[0.1513238, 0.07557154], [0.1075971, 0.2888795], [0.5509554, 0.56872]]"
    );
}

/// The names the prelude defines (`def name(` at the start of a line; an operator's
/// `def (<>)(` is named `<>`).
fn prelude_defs() -> Vec<String> {
    include_str!("../../../stdlib/prelude.dx")
        .lines()
        .filter_map(|line| line.strip_prefix("def "))
        .filter_map(|rest| match rest.strip_prefix('(') {
            Some(operator) => operator.split(')').next(),
            None => rest.split('(').next(),
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_prelude_definition_has_help() {
    let mut session = session(Engine::Fused);
    let names = prelude_defs();
    assert!(names.len() > 40, "{names:?}");
    for name in names {
        let reference = match name.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            true => name.clone(),
            false => format!("({name})"),
        };
        let got = outputs(&mut session, &format!(":help {reference}\n"));
        let [Output::Text(text)] = got.as_slice() else {
            panic!(":help {name} gave {got:?}");
        };
        let (signature, doc) = text.split_once('\n').expect("a signature line and a doc");
        assert!(signature.starts_with(&format!("{name} : ")), "{text}");
        assert!(
            !doc.contains("no documentation") && doc.len() > 10,
            ":help {name}: {text}"
        );
    }
    let got = outputs(&mut session, ":help rand\n");
    assert_eq!(
        got,
        [Output::Text(
            "rand : (Word64 -> Float32)\nA uniform `Float` in [0, 1): the low 23 bits of the key \
             as the mantissa of a number in\n[1, 2), minus 1 (Dex's `rand`)."
                .into()
        )]
    );
}

#[test]
fn help_documents_definitions_of_the_session_too() {
    let mut session = session(Engine::Fused);
    let got = outputs(
        &mut session,
        "-- Twice `x`.\ndef twice(x: Float) -> Float = 2.0 * x\n\n:help twice\n:help 1 + 2\n",
    );
    assert_eq!(
        got[0],
        Output::Text("twice : (Float32 -> Float32)\nTwice `x`.".into())
    );
    assert!(matches!(&got[1], Output::Error(diag) if diag.kind() == ErrorKind::Type));
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dx-stdlib-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

#[test]
fn data_round_trips_relative_to_the_script_folder() {
    let dir = temp_dir("round-trip");
    let mut session = session(Engine::Fused);
    session.set_data_dir(Some(dir.clone()));
    let src = "xs = for i:(Fin 4) j:(Fin 3). randn (ixkey (new_key 1) (i, j))\n\
               save_npy \"xs.npy\" xs\n\
               save_csv \"xs.csv\" xs\n\
               ys : (Fin 4)=>(Fin 3)=>Float = load_npy \"xs.npy\"\n\
               zs : (Fin 4)=>(Fin 3)=>Float = load_csv \"xs.csv\"\n\
               :p all for i. all for j. xs[i, j] == ys[i, j] && xs[i, j] == zs[i, j]\n";
    let got = outputs(&mut session, src);
    assert_eq!(got, [Output::Value("True".into())]);
    assert!(dir.join("xs.npy").exists() && dir.join("xs.csv").exists());
}

#[test]
fn a_wrong_declared_shape_names_the_file_and_both_shapes() {
    let dir = temp_dir("shapes");
    let mut session = session(Engine::Fused);
    session.set_data_dir(Some(dir));
    let src = "save_npy \"m.npy\" (for i:(Fin 2) j:(Fin 3). n_to_f (ordinal i))\n\
               m : (Fin 3)=>(Fin 2)=>Float = load_npy \"m.npy\"\n\
               :p m\n";
    let got = outputs(&mut session, src);
    let Output::Error(diag) = &got[0] else {
        panic!("expected an error, got {got:?}");
    };
    assert_eq!(diag.kind(), ErrorKind::Runtime);
    assert_eq!(
        diag.message,
        "load_npy \"m.npy\": expected shape (3, 2) (the declared type), found shape (2, 3)"
    );
    let span = diag.span.expect("the error points at the call");
    assert_eq!(&src[span.range()], "load_npy \"m.npy\"");
    // The session goes on; `m` was not bound.
    assert!(matches!(&got[1], Output::Error(diag) if diag.kind() == ErrorKind::Type));
}

/// Keys computed apart from dx: a Python transcription of Random123's threefry2x32_20
/// (checked on issue 10's vectors `hash 0 0` and `hash 123 456`), `hash k i` for `k = new_key 0`
/// and `i` = 0, 1, 2.
const KEYS_OF_NEW_KEY_0: [u64; 3] = [
    17_892_382_483_726_427_379,
    5_814_079_105_949_211_768,
    12_195_075_923_062_932_764,
];

/// Dex's `split_key(n=2, k)`: a named argument fills the definition's implicit index set `n`,
/// with a size (`2` for `Fin 2`, as docs/language.md spells it) or the index set itself, wherever
/// it stands among the arguments.
#[test]
fn split_key_takes_its_size_by_name() {
    let mut session = session(Engine::Fused);
    let keys = |n: usize| {
        let items: Vec<String> = KEYS_OF_NEW_KEY_0[..n]
            .iter()
            .map(|key| format!("{key:#x}"))
            .collect();
        format!("[{}]", items.join(", "))
    };
    assert_eq!(
        value(&mut session, ":p split_key(n=2, new_key 0)\n"),
        keys(2)
    );
    assert_eq!(
        value(&mut session, ":p split_key(n=Fin 3, new_key 0)\n"),
        keys(3)
    );
    assert_eq!(
        value(
            &mut session,
            "three = 3\n:p split_key(new_key 0, n=three)\n"
        ),
        keys(3)
    );
    assert_eq!(
        crate::common::printed(&mut session, ":t split_key(n=2, new_key 0)\n"),
        "((Fin 2) => Word64)"
    );
    // The implicit index set of a signature (no `given`) can be named as well, in a local
    // definition too.
    assert_eq!(
        value(
            &mut session,
            ":p\n  def count(x: m=>Float) -> Nat = size m\n  count(m=Fin 4, for i. 1.0)\n"
        ),
        "4"
    );
}

#[test]
fn a_named_argument_that_names_nothing_is_an_error_at_the_name() {
    let mut session = session(Engine::Fused);
    assert_eq!(
        crate::common::error(&mut session, ":p split_key(m=2, new_key 0)\n"),
        "Type error: `split_key` has no parameter or implicit variable `m` here (this argument \
         is `k`; its implicit variable is `n`)\n\
         :p split_key(m=2, new_key 0)\n\
         \x20            ^"
    );
    assert_eq!(
        crate::common::error(&mut session, ":p split_key(new_key 0, m=2)\n"),
        "Type error: too many arguments: `split_key` takes 1 argument; its implicit variable \
         is `n`\n\
         :p split_key(new_key 0, m=2)\n\
         \x20                       ^"
    );
    assert_eq!(
        crate::common::error(&mut session, ":p split_key(n=True, new_key 0)\n"),
        "Type error: an implicit variable takes a type (`n=Fin 2`) or a size (`n=2`, for \
         `Fin 2`)\n\
         :p split_key(n=True, new_key 0)\n\
         \x20              ^^^^"
    );
    // The size must agree with what the context asks for.
    let mismatch = crate::common::error(&mut session, "[a, b, c] = split_key(n=2, new_key 0)\n");
    assert!(mismatch.starts_with("Type error:"), "{mismatch}");
}

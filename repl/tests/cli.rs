//! Tests of the `dx` command line: arguments, exit statuses, `dx run`, `dx test` and the REPL
//! reading from a pipe. Tests marked "evaluates" need the library's evaluator.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn dx() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dx"));
    // Keep the tests away from the user's history and terminal settings.
    command.env("DX_HISTORY", "").env_remove("NO_COLOR");
    command
}

fn run(args: &[&str]) -> Output {
    dx().args(args).output().expect("dx starts")
}

fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    run_with_stdin_bytes(args, stdin.as_bytes())
}

fn run_with_stdin_bytes(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = dx()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dx starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("dx finishes")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Writes `text` to `name` in a fresh temporary directory.
fn dx_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the .dx file");
    (dir, path)
}

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

#[test]
fn help_lists_the_commands_and_exit_statuses() {
    let output = run(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    for expected in [
        "Usage:",
        "run",
        "test",
        "--strict",
        "--no-prelude",
        "Exit status",
        "2  usage",
    ] {
        assert!(
            text.contains(expected),
            "--help lacks {expected:?}:\n{text}"
        );
    }
    let output = run(&["run", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).contains("--outfmt"));
}

#[test]
fn version_prints_the_package_version() {
    let output = run(&["--version"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output).trim(),
        format!("dx {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_missing_file_is_a_usage_error() {
    for args in [
        vec!["run", "/nonexistent/missing.dx"],
        vec!["/nonexistent/missing.dx"],
        vec!["test", "/nonexistent/missing.dx"],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "dx {args:?}");
        let err = stderr(&output);
        assert!(
            err.starts_with("dx: error: cannot read /nonexistent/missing.dx"),
            "{err}"
        );
    }
}

/// `--threads N` sets the engine's threads; the printed results (sums in dx's fixed order,
/// parallel scans) are the same on any number of them.
#[test]
fn threads_change_no_result() {
    let program = "\
xs = for i:(Fin 300000). sin (n_to_f (ordinal i) * 0.001) * 1.7

:p sum for i. xs[i] * xs[i]
> 

:p sum (cumsum xs)
> 

:p maximum (for i. xs[i] - 0.5 * xs[i] * xs[i])
> 
";
    let (_dir, path) = dx_file("threads.dx", program);
    let outputs: Vec<String> = ["1", "2", "3"]
        .iter()
        .map(|threads| {
            let output = run(&["--threads", threads, path_arg(&path)]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            stdout(&output)
        })
        .collect();
    let results = outputs[0]
        .lines()
        .filter(|line| line.starts_with("> "))
        .count();
    assert_eq!(results, 3, "{}", outputs[0]);
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
}

/// `dx_test_mode()` reads `DEX_TEST_MODE` from the environment, as Dex's: Dex's examples pick
/// their small sizes under test.
#[test]
fn dex_test_mode_reads_the_environment() {
    let program = "n = if dex_test_mode() then 3 else 5\n\n:p for i:(Fin n). ordinal i\n";
    let (_dir, path) = dx_file("test_mode.dx", program);
    let printed = |set: bool| {
        let mut command = dx();
        command.env_remove("DEX_TEST_MODE").arg(path_arg(&path));
        if set {
            command.env("DEX_TEST_MODE", "t");
        }
        let output = command.output().expect("dx starts");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output)
    };
    assert!(
        printed(false).contains("> [0, 1, 2, 3, 4]"),
        "{}",
        printed(false)
    );
    assert!(printed(true).contains("> [0, 1, 2]\n"), "{}", printed(true));
}

/// `--threads N` starts N engine threads (named `dx-worker-K`), whatever the machine has:
/// the piped REPL answers one entry, and its threads are counted in `/proc` before it ends.
#[cfg(target_os = "linux")]
#[test]
fn threads_start_that_many_workers() {
    use std::io::{BufRead, BufReader};
    for threads in [1usize, 3] {
        let mut child = dx()
            .args(["--threads", &threads.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dx starts");
        let mut stdin = child.stdin.take().expect("stdin is piped");
        stdin
            .write_all(b":p sum for i:(Fin 100000). 1.0\n\n")
            .expect("write an entry");
        let mut answer = String::new();
        BufReader::new(child.stdout.take().expect("stdout is piped"))
            .read_line(&mut answer)
            .expect("read the answer");
        assert_eq!(answer.trim(), "100000.");
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).expect("/proc");
        let workers = tasks
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|name| name.starts_with("dx-worker-"))
            .count();
        drop(stdin);
        assert!(child.wait().expect("dx ends").success());
        assert_eq!(workers, threads, "--threads {threads}");
    }
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        vec!["--threads", "0"],
        vec!["--frobnicate"],
        vec!["run"],
        vec!["test"],
        vec!["run", "a.dx", "--outfmt", "xml"],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "dx {args:?}");
        assert!(
            stderr(&output).starts_with("dx: error:"),
            "{}",
            stderr(&output)
        );
        assert!(stdout(&output).is_empty());
    }
}

#[test]
fn test_reports_a_stale_output_with_a_diff() {
    // An output line after a comment belongs to no block, so `dx run` drops it.
    let (_dir, path) = dx_file("stale.dx", "-- a comment\n> stale output\n");
    let output = run(&["test", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let name = path.display().to_string();
    assert!(text.contains(&format!("--- {name}\n")), "{text}");
    assert!(
        text.contains(&format!("+++ {name} (regenerated)\n")),
        "{text}"
    );
    assert!(text.contains("-> stale output\n"), "{text}");
    assert!(text.contains(&format!("FAIL {name}\n")), "{text}");
    assert!(text.ends_with("0 passed, 1 failed\n"), "{text}");
}

#[test]
fn test_reports_a_wrong_output_with_a_diff() {
    // Evaluates.
    let (_dir, path) = dx_file("wrong.dx", "' Arithmetic.\n\n:p 1.0 + 2.0\n> 4.\n");
    let output = run(&["test", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let text = stdout(&output);
    let name = path.display().to_string();
    let diff = format!(
        "--- {name}\n+++ {name} (regenerated)\n@@ -1,4 +1,4 @@\n ' Arithmetic.\n \n :p 1.0 + 2.0\n-> 4.\n+> 3.\n"
    );
    assert!(text.starts_with(&diff), "{text}");
    assert!(
        text.ends_with(&format!("FAIL {name}\n0 passed, 1 failed\n")),
        "{text}"
    );
}

#[test]
fn test_passes_files_with_current_outputs_and_ignores_timings() {
    // Evaluates.
    let (dir, good) = dx_file("good.dx", ":p 1.0 + 2.0\n> 3.\n");
    let timed = dir.path().join("timed.dx");
    std::fs::write(
        &timed,
        "%time\n:p 2.0 * 3.0\n> 6.\n> Compile time: 1.000 ms\n> Run time: 1.000 us\n",
    )
    .expect("write timed.dx");
    let output = run(&["test", path_arg(&good), path_arg(&timed)]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert_eq!(
        text,
        format!(
            "PASS {}\nPASS {}\n2 passed, 0 failed\n",
            good.display(),
            timed.display()
        )
    );
}

#[test]
fn run_reproduces_a_file_of_prose_comments_and_blank_lines() {
    // Evaluates (needs the library to split the file into chunks).
    let text = "' # A title\nSome prose with $x^2$ maths.\n\n-- a comment\n# another comment\n\n\n' More prose.\n";
    let (_dir, path) = dx_file("prose.dx", text);
    let output = run(&["run", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), text);
    // `dx FILE.dx` is the same as `dx run FILE.dx`.
    let output = run(&[path_arg(&path)]);
    assert_eq!(stdout(&output), text);
}

#[test]
fn run_regenerates_outputs_and_is_a_quine() {
    // Evaluates.
    let (_dir, path) = dx_file("quine.dx", "x = 2.0\n:p x * 3.0\n> 1.\n\n:p x + 1.0\n");
    let output = run(&["run", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let regenerated = stdout(&output);
    assert_eq!(
        regenerated,
        "x = 2.0\n:p x * 3.0\n> 6.\n\n:p x + 1.0\n> 3.\n"
    );
    std::fs::write(&path, &regenerated).expect("rewrite quine.dx");
    assert_eq!(stdout(&run(&["run", path_arg(&path)])), regenerated);

    let output = run(&["run", path_arg(&path), "--outfmt", "result-only"]);
    assert_eq!(stdout(&output), "6.\n3.\n");
}

#[test]
fn run_exits_with_1_when_a_block_fails() {
    // Evaluates.
    let (_dir, path) = dx_file("error.dx", ":p undefined_name\n\n:p 1.0 + 2.0\n");
    let output = run(&["run", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.starts_with(":p undefined_name\n> "), "{text}");
    assert!(
        text.ends_with("\n:p 1.0 + 2.0\n> 3.\n"),
        "the file goes on after an error: {text}"
    );
}

#[test]
fn piped_repl_prints_results_without_prompts_or_colours() {
    // Evaluates.
    let output = run_with_stdin(&[], ":p 1.0 + 2.0\n");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "3.\n");
    assert!(!stderr(&output).contains('\x1b'));
}

#[test]
fn piped_repl_reads_multi_line_entries() {
    // Evaluates.
    let input = "def f(x: Float) -> Float =\n  y = x * x\n  y + 1.0\n\n:p f 2.0\n";
    let output = run_with_stdin(&[], input);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "5.\n");
}

#[test]
fn piped_repl_submits_an_incomplete_entry_at_an_empty_line() {
    // Evaluates.
    let output = run_with_stdin(&[], ":p (1.0 +\n\n:p 2.0\n");
    assert_eq!(output.status.code(), Some(1), "an entry failed");
    let text = stdout(&output);
    assert!(text.starts_with("Parse error: unclosed '('"), "{text:?}");
    assert!(text.ends_with("\n2.\n"), "the next entry runs: {text:?}");
}

#[test]
fn piped_repl_skips_a_byte_order_mark_and_reports_a_line_that_is_not_utf8() {
    // Evaluates.
    let output = run_with_stdin_bytes(&[], b"\xef\xbb\xbf:p 1.0\n:p 2.\xff\n:p 3.0\n");
    assert_eq!(output.status.code(), Some(1), "bad input is a failure");
    assert_eq!(
        stdout(&output),
        "1.\nInput error: not UTF-8: byte 0xff on line 2, column 6; the entry it belongs to is \
         skipped\n3.\n"
    );
}

#[test]
fn a_file_may_start_with_a_byte_order_mark_and_must_be_utf8() {
    // Evaluates.
    let (_dir, path) = dx_file("bom.dx", "\u{feff}:p 1.0 + 1.0\n> 2.\n");
    let output = run(&["test", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));

    let (_dir, path) = dx_file("latin1.dx", ":p 1.0\n");
    std::fs::write(&path, b":p 1.0\n\n:p \"caf\xe9\"\n").expect("write the file");
    let output = run(&["run", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(2));
    let message = format!(
        "dx: error: {} is not UTF-8: byte 0xe9 on line 3, column 8\n",
        path.display()
    );
    assert_eq!(stderr(&output), message);
}

#[test]
fn piped_repl_handles_its_own_commands() {
    let output = run_with_stdin(&[], ":help\n:quit\n:help\n");
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(
        text.starts_with("Commands:\n"),
        "no prompt before the output: {text:?}"
    );
    assert_eq!(text.matches("Commands:").count(), 1, ":quit stops reading");
    assert!(!text.contains('\x1b'), "no colours into a pipe: {text:?}");
    assert!(!text.contains(">=>"), "no prompts into a pipe: {text:?}");

    let output = run_with_stdin(&[], ":load /nonexistent/missing.dx\n:p 1\n");
    assert_eq!(output.status.code(), Some(1), "the entry failed");
    assert!(stdout(&output).starts_with("cannot read /nonexistent/missing.dx"));
    assert!(
        stdout(&output).ends_with("\n1\n"),
        "a REPL error does not end the REPL"
    );
}

#[test]
fn piped_repl_exits_with_1_when_a_block_fails_as_run_does() {
    let output = run_with_stdin(&[], ":p 1 + True\n:p 2\n");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).ends_with("\n2\n"),
        "later entries still run"
    );
    let output = run_with_stdin(&[], ":p 2\n");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn help_after_a_redefinition_does_not_show_the_old_documentation() {
    let input = ":help dot\ndef dot(x: Float, y: Float) -> Float = x * y\n:help dot\n";
    let text = stdout(&run_with_stdin(&[], input));
    assert_eq!(text.matches("The inner product").count(), 1, "{text}");
    assert!(
        text.ends_with("dot : (Float32 -> (Float32 -> Float32))\n(no documentation)\n"),
        "{text}"
    );
}

#[test]
fn empty_input_ends_the_repl_quietly() {
    let output = run_with_stdin(&[], "");
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).is_empty());
    assert!(stderr(&output).is_empty());
}

#[test]
fn export_writes_a_function_as_a_stablehlo_module() {
    let (dir, path) = dx_file(
        "f.dx",
        "def f(x: (Fin 3)=>Float, c: Float) -> (Float, (Fin 3)=>Float) =\n  (sum x, c .* x)\n",
    );
    let out = dir.path().join("f.mlir");
    let output = run(&["export", path_arg(&path), "f", "-o", path_arg(&out)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let module = std::fs::read_to_string(&out).expect("the module was written");
    assert!(
        module.contains(
            "func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<f32>) -> (tensor<f32>, tensor<3xf32>)"
        ),
        "{module}"
    );
    // Without -o the module goes to stdout; a gradient is a function too.
    let output = run(&["export", path_arg(&path), "grad (\\x. fst (f x 2.0))"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("@main(%arg0: tensor<3xf32>) -> (tensor<3xf32>)"));
    // `vjp f` takes the cotangent seed after the arguments and returns the cotangents after
    // the results; example arguments fix the types of a generic function.
    let (_dir, path) = dx_file(
        "g.dx",
        "def g(x: n=>Float) -> Float given (n|Ix) = sum x
xs = [1.0, 2.0]
",
    );
    let output = run(&["export", path_arg(&path), "vjp g xs"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(
            "@main(%arg0: tensor<2xf32>, %arg1: tensor<f32>) -> (tensor<f32>, tensor<2xf32>)"
        ),
        "{}",
        stdout(&output)
    );
}

#[test]
fn export_errors_say_what_and_where() {
    let (_dir, path) = dx_file(
        "g.dx",
        "xs = [1.0, 2.0]\ndef app(f: Float -> Float) -> Float = f 1.0\ndef sq2(x: Float) -> Float = x * x\n\
         def pair(x: Float) -> (Float -> Float, Float) = (\\y. y * x, x)\n\
         def total(v: n=>Float) -> Float given (n|Ix) = sum v\n",
    );
    let cases = [
        ("xs", "Export error: only a function can be exported", "^^"),
        (
            "app",
            "Export error: cannot export a function with an argument of type (Float32 -> Float32)",
            "^^^",
        ),
        ("nope", "Type error: unbound variable `nope`", "^^^^"),
        (
            "pair",
            "Export error: cannot export a function whose result holds a function",
            "^^^^",
        ),
        (
            "total",
            "Export error: the argument types of this function are not fixed (its type is \
             ((a => Float32) -> Float32)): give example arguments whose types fix them, \
             `:export f x0 y0`",
            "^^^^^",
        ),
        // A derivative of a generic function is refused as the function is, at the whole
        // expression (it was an inference error).
        (
            "grad total",
            "Export error: the argument types of this function are not fixed (its type is \
             ((a => Float32) -> (a => Float32)))",
            "^^^^^^^^^^",
        ),
        (
            "vjp total",
            "Export error: the argument types of this function are not fixed",
            "^^^^^^^^^",
        ),
        (
            "sq2 xs",
            "Type error: expected type Float32, found ((Fin 2) => Float32)",
            "    ^^",
        ),
    ];
    for (name, expected, carets) in cases {
        let output = run(&["export", path_arg(&path), name]);
        assert_eq!(output.status.code(), Some(1), "{name}");
        let text = stderr(&output);
        assert!(text.contains(expected), "{name}: {text}");
        assert!(
            text.contains(&format!("{name}\n{carets}\n")),
            "{name}: not at its position in {text}"
        );
        assert!(stdout(&output).is_empty());
    }
    let (_dir, broken) = dx_file("h.dx", "def f(x: Float) -> Float = x + True\n");
    let output = run(&["export", path_arg(&broken), "f"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("has errors; nothing exported"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_plot_saves_to_a_file_named_after_a_trailing_for_body() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let png = dir.path().join("a.png");
    let svg = dir.path().join("h.svg");
    let input = format!(
        ":plot for i:(Fin 9). n_to_f (ordinal i) * 2.0 > \"{}\"\n:plot for i:(Fin 300) j:(Fin 300). n_to_f (ordinal i * ordinal j) > \"{}\"\n",
        png.display(),
        svg.display()
    );
    let output = run_with_stdin(&[], &input);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let bytes = std::fs::read(&png).expect("the PNG was written");
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG file");
    let text = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert_eq!(text.matches("<image").count(), 1, "the cells are one image");
    assert!(
        text.len() < 400_000,
        "a 300×300 heatmap is small: {} bytes",
        text.len()
    );
}

#[test]
fn import_finds_the_library_path_then_the_shipped_libraries_then_the_scripts_folder() {
    // A module of the user's, beside the script.
    let (dir, script) = dx_file(
        "main.dx",
        "import mymod\n:p twice 2.0\nimport plot\n:t y_plot [1., 2.]\nimport nothing_here\nimport badmod\n",
    );
    // An error in the user's own module is the user's, of its own kind.
    std::fs::write(
        dir.path().join("badmod.dx"),
        "def bad(x: Float) -> Float = x + True\n",
    )
    .expect("write the module");
    std::fs::write(
        dir.path().join("mymod.dx"),
        "def twice(x: Float) -> Float = 2.0 * x\n",
    )
    .expect("write the module");
    let output = dx().arg("run").arg(&script).output().expect("dx runs");
    let text = stdout(&output);
    assert!(text.contains("> 4.\n"), "{text}");
    assert!(
        text.contains("> (Plot (Fin 2) Float32 Float32 ())"),
        "{text}"
    );
    assert!(text.contains("> no library named `nothing_here`"), "{text}");
    assert!(
        text.contains("> Type error: in library `badmod`:\n> Type error:"),
        "{text}"
    );
    // `DX_LIBRARY_PATH` comes first: it can replace a shipped library.
    let output = run_with_library_path(
        &script,
        &[
            ("plot.dx", "def y_plot(x: Float) -> Float = 3.0 * x\n"),
            ("mymod.dx", "def twice(x: Float) -> Float = 20.0 * x\n"),
        ],
    );
    let text = stdout(&output);
    assert!(text.contains("> 40.\n"), "{text}");
    // The replaced `plot`'s `y_plot` takes a `Float`.
    assert!(
        text.contains("> Type error: expected type Float32"),
        "{text}"
    );
}

#[test]
fn run_reports_what_loading_the_prelude_reported() {
    // A prelude on `DX_LIBRARY_PATH` replaces the shipped one; its errors are dx's to report
    // (on standard error) before the script runs, as the REPL reports them.
    let (_dir, script) = dx_file("main.dx", ":p 1 + 1\n");
    let output = run_with_library_path(
        &script,
        &[("prelude.dx", "def broken(x: Float) -> Float = x + True\n")],
    );
    let errors = stderr(&output);
    assert!(errors.contains("in library `prelude`"), "{errors}");
    assert!(errors.contains("x + True"), "{errors}");
    assert!(stdout(&output).contains("> 2\n"), "{}", stdout(&output));
}

/// `dx run script` with `DX_LIBRARY_PATH` naming a folder of the given library files.
fn run_with_library_path(script: &std::path::Path, files: &[(&str, &str)]) -> Output {
    let library = tempfile::tempdir().expect("temporary directory");
    for (name, text) in files {
        std::fs::write(library.path().join(name), text).expect("write the library");
    }
    dx().arg("run")
        .arg(script)
        .env("DX_LIBRARY_PATH", library.path())
        .output()
        .expect("dx runs")
}

//! Tests of the interactive REPL in a real pseudo-terminal (rexpect): multi-line entries,
//! Ctrl-C, Ctrl-D and the history file. Tests marked "evaluates" need the library's evaluator.

use std::path::Path;
use std::process::Command;

use rexpect::process::WaitStatus;
use rexpect::session::{spawn_command, PtySession};

const TIMEOUT_MS: u64 = 30_000;

/// Starts the REPL in a pty with its history in `dir` and no colours.
fn spawn_repl(dir: &Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dx"));
    command
        .env("DX_HISTORY", dir.join("history.txt"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    let mut repl = spawn_command(command, Some(TIMEOUT_MS)).expect("dx starts in a pty");
    repl.exp_string(">=> ").expect("first prompt");
    repl
}

/// Text as rexpect sees it: it reads the pty's bytes as Latin-1 characters.
fn pty_text(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

/// Ctrl-D at an empty prompt ends the REPL with status 0. The prompt is awaited first: a
/// Ctrl-D that arrives before the line editor has the terminal in raw mode (the prompt is
/// drawn after that) belongs to the terminal's line discipline, which may drop it.
fn quit_with_ctrl_d(mut repl: PtySession) {
    repl.exp_string(">=> ").expect("the prompt before Ctrl-D");
    repl.send_control('d').expect("send Ctrl-D");
    repl.exp_eof().expect("dx exits after Ctrl-D");
    match repl.process().wait() {
        Ok(WaitStatus::Exited(_, code)) => assert_eq!(code, 0),
        other => panic!("dx did not exit normally: {other:?}"),
    }
}

/// A loop of minutes (one compiled loop of 2·10⁹ steps takes about a second): Ctrl-C must
/// stop it, not race its end.
const LONG_LOOP: &str = r"fold(0.0, \j:(Fin 100) c. fold(c, \i:(Fin 2000000000) d. d + 1.0))";

#[test]
fn multi_line_definition_then_use() {
    // Evaluates.
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line("def f(x: Float) -> Float =").expect("type");
    repl.send_line("  y = x * x").expect("type");
    repl.send_line("  y + 1.0").expect("type");
    repl.send_line("").expect("type");
    repl.send_line(":p f 2.0").expect("type");
    repl.exp_string("5.").expect("f 2.0 is 5.");
    quit_with_ctrl_d(repl);
}

#[test]
fn further_lines_get_a_continuation_prompt_and_an_empty_line_submits() {
    // Evaluates.
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    // An entry that goes on: `...` prompts its further lines.
    repl.send_line(":p (1.0 +").expect("type");
    repl.exp_string("... ").expect("a continuation prompt");
    repl.send_line("  2.0)").expect("type");
    repl.exp_string("... ")
        .expect("an indented line may be followed by more");
    repl.send_line("").expect("type");
    repl.exp_string("3.")
        .expect("the two lines ran as one entry");
    repl.exp_string(">=> ").expect("the main prompt is back");
    // An entry that cannot be completed runs at an empty line and reports where it stops.
    repl.send_line(":p [1.0,").expect("type");
    repl.exp_string("... ").expect("a continuation prompt");
    repl.send_line("").expect("type");
    repl.exp_string("Parse error: unclosed '['")
        .expect("the empty line submitted the entry");
    repl.exp_string(">=> ").expect("the main prompt is back");
    repl.send_line(":p 2.0 * 3.0").expect("type");
    repl.exp_string("6.").expect("the session goes on");
    quit_with_ctrl_d(repl);
}

#[test]
fn ctrl_c_abandons_the_entry_and_keeps_the_session() {
    // Evaluates.
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line(":p (1.0 +").expect("type");
    // Ctrl-C goes to the line editor once it reads the continuation line (before that the
    // terminal is not in raw mode and the keystroke is a signal, not an edit).
    repl.exp_string("... ").expect("a continuation prompt");
    repl.send_control('c').expect("send Ctrl-C");
    repl.exp_string("^C").expect("Ctrl-C is acknowledged");
    repl.send_line(":p 2.0 * 3.0").expect("type");
    repl.exp_string("6.").expect("the session survived Ctrl-C");
    quit_with_ctrl_d(repl);
}

#[test]
fn ctrl_c_interrupts_a_computation_and_keeps_the_session() {
    // Evaluates.
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line("x = 2.0").expect("type");
    repl.send_line(&format!(":p {LONG_LOOP}")).expect("type");
    // Once the line editor has shown the entry, let it hand the entry over, so that Ctrl-C
    // reaches the computation as a signal rather than the editor as a key.
    repl.exp_string("d + 1.0))").expect("the entry is echoed");
    std::thread::sleep(std::time::Duration::from_millis(500));
    repl.send_control('c').expect("send Ctrl-C");
    repl.exp_string("interrupted")
        .expect("the computation stops");
    repl.send_line(":p x * 3.0").expect("type");
    repl.exp_string("6.").expect("the session kept its values");
    quit_with_ctrl_d(repl);
}

#[test]
fn ctrl_c_interrupts_a_long_fused_kernel_and_keeps_the_session() {
    // Evaluates. The inner sums are one fused reduction over 10¹⁰ points (nothing of that
    // size is allocated), which runs for minutes unless it is stopped.
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line("x = 2.0").expect("type");
    repl.send_line(
        r":p sum for i:(Fin 100000). sum for j:(Fin 100000). sin (n_to_f (ordinal i + ordinal j))",
    )
    .expect("type");
    repl.exp_string("ordinal j))").expect("the entry is echoed");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    repl.send_control('c').expect("send Ctrl-C");
    repl.exp_string("interrupted").expect("the kernel stops");
    repl.send_line(":p x * 3.0").expect("type");
    repl.exp_string("6.").expect("the session kept its values");
    quit_with_ctrl_d(repl);
}

#[test]
fn ctrl_c_abandons_a_partial_entry_before_a_command() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line(":p (1.0 +").expect("type");
    // Ctrl-C goes to the line editor once it reads the continuation line (before that the
    // terminal is not in raw mode and the keystroke is a signal, not an edit).
    repl.exp_string("... ").expect("a continuation prompt");
    repl.send_control('c').expect("send Ctrl-C");
    repl.exp_string("^C").expect("Ctrl-C is acknowledged");
    repl.send_line(":help").expect("type");
    repl.exp_string("Commands:")
        .expect(":help runs as a fresh entry after Ctrl-C");
    quit_with_ctrl_d(repl);
}

#[test]
fn ctrl_d_exits_and_the_history_is_saved() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line(":help").expect("type");
    repl.exp_string(":quit, :q").expect("help text");
    quit_with_ctrl_d(repl);
    let history = std::fs::read_to_string(dir.path().join("history.txt")).expect("history file");
    assert!(history.lines().any(|line| line == ":help"), "{history:?}");

    // The next session starts with that history: Up recalls the entry.
    let mut repl = spawn_repl(dir.path());
    repl.send("\x1b[A\r").expect("Up, Enter");
    repl.flush().expect("flush");
    repl.exp_string("Commands:")
        .expect("the recalled :help runs");
    quit_with_ctrl_d(repl);
}

#[test]
fn quit_command_exits() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line(":quit").expect("type");
    repl.exp_eof().expect("dx exits after :quit");
    match repl.process().wait() {
        Ok(WaitStatus::Exited(_, code)) => assert_eq!(code, 0),
        other => panic!("dx did not exit normally: {other:?}"),
    }
}

#[test]
fn plots_are_braille_and_long_work_shows_a_spinner() {
    // Evaluates.
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut repl = spawn_repl(dir.path());
    repl.send_line(":plotgrad sin 0.0 6.28").expect("type");
    // The first row of the drawing: the axis label, the axis and sin's first braille cells.
    repl.exp_string(&pty_text(" 1 ┤⠉⠉⠒⠢⣄"))
        .expect("a braille drawing");
    repl.exp_string(&pty_text("● sin   ○ sin′"))
        .expect("the legend names f and f′");
    repl.send_line(&format!(":p {LONG_LOOP}")).expect("type");
    repl.exp_string("d + 1.0))").expect("the entry is echoed");
    repl.exp_regex(r"running [0-9]+s")
        .expect("a spinner with the elapsed time after a second");
    repl.send_control('c').expect("send Ctrl-C");
    repl.exp_string("interrupted")
        .expect("the computation stops");
    quit_with_ctrl_d(repl);
}

#[test]
fn dx_run_prints_each_block_as_it_ends_and_names_the_interrupted_one() {
    // Evaluates.
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("long.dx");
    std::fs::write(&file, format!(":p 1.0 + 2.0\n\n:p {LONG_LOOP}\n\n:p 5.0\n"))
        .expect("write the script");
    let mut command = Command::new(env!("CARGO_BIN_EXE_dx"));
    command.arg("run").arg(&file).env("NO_COLOR", "1");
    let mut run = spawn_command(command, Some(TIMEOUT_MS)).expect("dx run starts in a pty");
    run.exp_string("> 3.")
        .expect("the first block's output comes at once");
    run.exp_regex(r"block 2/3 \(line 3\) [0-9]+s")
        .expect("a spinner names the running block");
    // The engine knows the outer loop's length: a bar of its steps.
    run.exp_regex(r"\[[=> ]+\] [0-9]+/100 loop steps")
        .expect("a progress bar of the loop's steps");
    run.send_control('c').expect("send Ctrl-C");
    run.exp_string("interrupted while running block 2 of 3 (line 3")
        .expect("the interrupted block is named");
    run.exp_eof().expect("dx run stops");
    match run.process().wait() {
        Ok(WaitStatus::Exited(_, code)) => assert_eq!(code, 130),
        other => panic!("dx run did not exit after the interrupt: {other:?}"),
    }
}

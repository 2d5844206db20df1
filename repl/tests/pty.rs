//! Tests of the interactive REPL in a real pseudo-terminal (rexpect): multi-line entries,
//! Ctrl-C, Ctrl-D and the history file. Tests marked "evaluates" need the library's evaluator.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rexpect::process::WaitStatus;
use rexpect::session::{spawn_command, PtySession};
use tempfile::TempDir;

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

/// Starts the REPL with its history in a new temporary directory, which the caller keeps for
/// as long as the REPL runs.
fn start_repl() -> (TempDir, PtySession) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let repl = spawn_repl(dir.path());
    (dir, repl)
}

/// Typing into the pty and waiting for what the program answers.
trait Terminal {
    /// Types `line` and Enter.
    fn type_line(&mut self, line: &str);
    /// Waits for `text`; `what` says what it shows, for a failure's message.
    fn wait_for(&mut self, text: &str, what: &str);
}

impl Terminal for PtySession {
    fn type_line(&mut self, line: &str) {
        self.send_line(line).expect("type");
    }

    fn wait_for(&mut self, text: &str, what: &str) {
        self.exp_string(text).expect(what);
    }
}

/// Text as rexpect sees it: it reads the pty's bytes as Latin-1 characters.
fn pty_text(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

/// Waits for the end of `program` (`what` names it) and checks that it exited with `code`.
fn assert_exits_with(program: &mut PtySession, code: i32, what: &str) {
    program.exp_eof().expect(what);
    match program.process().wait() {
        Ok(WaitStatus::Exited(_, status)) => assert_eq!(status, code),
        other => panic!("dx did not exit with {code}: {other:?}"),
    }
}

/// Ctrl-D at an empty prompt ends the REPL with status 0. The prompt is awaited first: a
/// Ctrl-D that arrives before the line editor has the terminal in raw mode (the prompt is
/// drawn after that) belongs to the terminal's line discipline, which may drop it.
fn quit_with_ctrl_d(mut repl: PtySession) {
    repl.wait_for(">=> ", "the prompt before Ctrl-D");
    repl.send_control('d').expect("send Ctrl-D");
    assert_exits_with(&mut repl, 0, "dx exits after Ctrl-D");
}

/// In a new REPL, starts an entry that goes on (`:p (1.0 +`) and abandons it with Ctrl-C,
/// then types `line` and waits for `answer` (`what` says what it shows). Ctrl-C goes to the
/// line editor once it reads the continuation line (before that the terminal is not in raw
/// mode and the keystroke is a signal, not an edit).
fn abandon_a_partial_entry_then(line: &str, answer: &str, what: &str) {
    let (_dir, mut repl) = start_repl();
    repl.type_line(":p (1.0 +");
    repl.wait_for("... ", "a continuation prompt");
    repl.send_control('c').expect("send Ctrl-C");
    repl.wait_for("^C", "Ctrl-C is acknowledged");
    repl.type_line(line);
    repl.wait_for(answer, what);
    quit_with_ctrl_d(repl);
}

/// In a new REPL, defines `x`, starts printing `entry` (a long computation, whose text ends in
/// `echo_end`) and interrupts it with Ctrl-C after `delay`; the session keeps `x`. Once the
/// line editor has shown the entry, the delay lets it hand the entry over, so that Ctrl-C
/// reaches the computation as a signal rather than the editor as a key.
fn interrupt_and_go_on(entry: &str, echo_end: &str, delay: Duration) {
    let (_dir, mut repl) = start_repl();
    repl.type_line("x = 2.0");
    repl.type_line(&format!(":p {entry}"));
    repl.wait_for(echo_end, "the entry is echoed");
    std::thread::sleep(delay);
    repl.send_control('c').expect("send Ctrl-C");
    repl.wait_for("interrupted", "the computation stops");
    repl.type_line(":p x * 3.0");
    repl.wait_for("6.", "the session kept its values");
    quit_with_ctrl_d(repl);
}

/// A loop of minutes (one compiled loop of 2·10⁹ steps takes about a second): Ctrl-C must
/// stop it, not race its end.
const LONG_LOOP: &str = r"fold(0.0, \j:(Fin 100) c. fold(c, \i:(Fin 2000000000) d. d + 1.0))";

#[test]
fn multi_line_definition_then_use() {
    // Evaluates.
    let (_dir, mut repl) = start_repl();
    repl.type_line("def f(x: Float) -> Float =");
    repl.type_line("  y = x * x");
    repl.type_line("  y + 1.0");
    repl.type_line("");
    repl.type_line(":p f 2.0");
    repl.wait_for("5.", "f 2.0 is 5.");
    quit_with_ctrl_d(repl);
}

#[test]
fn further_lines_get_a_continuation_prompt_and_an_empty_line_submits() {
    // Evaluates.
    let (_dir, mut repl) = start_repl();
    // An entry that goes on: `...` prompts its further lines.
    repl.type_line(":p (1.0 +");
    repl.wait_for("... ", "a continuation prompt");
    repl.type_line("  2.0)");
    repl.wait_for("... ", "an indented line may be followed by more");
    repl.type_line("");
    repl.wait_for("3.", "the two lines ran as one entry");
    repl.wait_for(">=> ", "the main prompt is back");
    // An entry that cannot be completed runs at an empty line and reports where it stops.
    repl.type_line(":p [1.0,");
    repl.wait_for("... ", "a continuation prompt");
    repl.type_line("");
    repl.wait_for(
        "Parse error: unclosed '['",
        "the empty line submitted the entry",
    );
    repl.wait_for(">=> ", "the main prompt is back");
    repl.type_line(":p 2.0 * 3.0");
    repl.wait_for("6.", "the session goes on");
    quit_with_ctrl_d(repl);
}

#[test]
fn ctrl_c_abandons_the_entry_and_keeps_the_session() {
    // Evaluates.
    abandon_a_partial_entry_then(":p 2.0 * 3.0", "6.", "the session survived Ctrl-C");
}

#[test]
fn ctrl_c_interrupts_a_computation_and_keeps_the_session() {
    // Evaluates.
    interrupt_and_go_on(LONG_LOOP, "d + 1.0))", Duration::from_millis(500));
}

#[test]
fn ctrl_c_interrupts_a_long_fused_kernel_and_keeps_the_session() {
    // Evaluates. The inner sums are one fused reduction over 10¹⁰ points (nothing of that
    // size is allocated), which runs for minutes unless it is stopped.
    interrupt_and_go_on(
        r"sum for i:(Fin 100000). sum for j:(Fin 100000). sin (n_to_f (ordinal i + ordinal j))",
        "ordinal j))",
        Duration::from_millis(1500),
    );
}

#[test]
fn ctrl_c_abandons_a_partial_entry_before_a_command() {
    abandon_a_partial_entry_then(
        ":help",
        "Commands:",
        ":help runs as a fresh entry after Ctrl-C",
    );
}

#[test]
fn ctrl_d_exits_and_the_history_is_saved() {
    let (dir, mut repl) = start_repl();
    repl.type_line(":help");
    repl.wait_for(":quit, :q", "help text");
    quit_with_ctrl_d(repl);
    let history = std::fs::read_to_string(dir.path().join("history.txt")).expect("history file");
    assert!(history.lines().any(|line| line == ":help"), "{history:?}");

    // The next session starts with that history: Up recalls the entry.
    let mut repl = spawn_repl(dir.path());
    repl.send("\x1b[A\r").expect("Up, Enter");
    repl.flush().expect("flush");
    repl.wait_for("Commands:", "the recalled :help runs");
    quit_with_ctrl_d(repl);
}

#[test]
fn quit_command_exits() {
    let (_dir, mut repl) = start_repl();
    repl.type_line(":quit");
    assert_exits_with(&mut repl, 0, "dx exits after :quit");
}

#[test]
fn plots_are_braille_and_long_work_shows_a_spinner() {
    // Evaluates.
    let (_dir, mut repl) = start_repl();
    repl.type_line(":plotgrad sin 0.0 6.28");
    // The first row of the drawing: the axis label, the axis and sin's first braille cells.
    repl.wait_for(&pty_text(" 1 ┤⠉⠉⠒⠢⣄"), "a braille drawing");
    repl.wait_for(&pty_text("● sin   ○ sin′"), "the legend names f and f′");
    repl.type_line(&format!(":p {LONG_LOOP}"));
    repl.wait_for("d + 1.0))", "the entry is echoed");
    repl.exp_regex(r"running [0-9]+s")
        .expect("a spinner with the elapsed time after a second");
    repl.send_control('c').expect("send Ctrl-C");
    repl.wait_for("interrupted", "the computation stops");
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
    run.wait_for("> 3.", "the first block's output comes at once");
    run.exp_regex(r"block 2/3 \(line 3\) [0-9]+s")
        .expect("a spinner names the running block");
    // The engine knows the outer loop's length: a bar of its steps.
    run.exp_regex(r"\[[=> ]+\] [0-9]+/100 loop steps")
        .expect("a progress bar of the loop's steps");
    run.send_control('c').expect("send Ctrl-C");
    run.wait_for(
        "interrupted while running block 2 of 3 (line 3",
        "the interrupted block is named",
    );
    assert_exits_with(&mut run, 130, "dx run stops");
}

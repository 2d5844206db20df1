//! The interactive REPL: reads entries (several lines while `entry_status` says an entry is
//! incomplete), handles the REPL's own commands (`:help`, `:load`, `:quit`, `:stages on|off`)
//! and hands everything else to the session, printing its outputs.
//!
//! With a terminal on stdin it uses rustyline (history, completion, multi-line editing); with
//! a pipe it reads lines directly and prints no prompts. Colours are used only when stdout is a
//! terminal and `NO_COLOR` is unset.
//!
//! Ctrl-C at the prompt abandons the current entry. Ctrl-C during an evaluation sets the
//! session's interrupt flag; the computation stops at its next check and the session stays
//! usable. A second Ctrl-C during the same evaluation exits, for computations that do not check.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use dx_lang::session::{InterruptFlag, Output, Session, SessionConfig};
use rustyline::config::{ColorMode, CompletionType};
use rustyline::error::ReadlineError;
use rustyline::history::{DefaultHistory, History};
use rustyline::{Config, Editor};

use crate::cli::Status;
use crate::entry::EntryReader;
use crate::helper::DxHelper;
use crate::spinner::Spinner;
use dx_lang::display::render_output;

const PROMPT: &str = ">=> ";
const PROMPT_BOLD: &str = "\x1b[1m>=> \x1b[0m";
/// The prompt of the further lines of an unfinished entry.
const CONTINUATION: &str = "... ";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

/// Exit status after an interrupt that the computation did not honour (as shells report SIGINT).
const INTERRUPTED_STATUS: i32 = 130;

const HELP: &str = "\
Commands:
  :p EXPR              print the value of EXPR (a bare expression does the same)
  :t EXPR              print the type of EXPR
  :plot EXPR           plot a 1-D table, (xs, ys), or a 2-D table as a heatmap
  :plotgrad F LO HI    plot F and its derivative over [LO, HI]
  :table EXPR          show a table as a grid
  :stages EXPR         show every compiler stage for EXPR
  :stages on STAGE...  show these stages (parse typed core bot linear transposed simp fused run
                       stablehlo) before every following result; :stages off stops
  :export F [X...]     F (a function, e.g. `loss` or `grad loss`) as a StableHLO module;
                       example arguments X... fix its argument types (a generic F);
                       `vjp f` exports as (x..., ct...) -> (f x..., pullback ct...)
  :load FILE           evaluate a .dx file in this session
  :help                this help
  :help NAME           the type of NAME and its documentation
  :quit, :q            leave (Ctrl-D also leaves)

A definition or block goes on over indented lines (the prompt is then `...`); an empty
line ends it and runs it, complete or not.
Tab completes names, keywords and commands. Ctrl-C abandons the current entry or
interrupts a running computation.

Examples:
  :p 1.0 + 2.0
  xs = [1., 2., 3.]
  :p sum xs
  :t for i. xs[i] * 2.0
  def square(x: Float) -> Float = x * x
  :p grad(\\x. square x, 3.0)";

/// An entry the REPL handles itself, or `Eval` for anything the session evaluates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Quit,
    /// `:load FILE` (the file name as typed, possibly empty).
    Load(String),
    StagesOn(Vec<String>),
    StagesOff,
    Eval,
}

/// Recognises the REPL's own commands. `:stages EXPR` and every other `:` command are the
/// language's and go to the session.
pub fn parse_command(entry: &str) -> Command {
    let entry = entry.trim();
    let (word, rest) = match entry.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (entry, ""),
    };
    match word {
        ":help" | ":h" | ":?" if rest.is_empty() => Command::Help,
        ":quit" | ":q" if rest.is_empty() => Command::Quit,
        ":load" if !rest.contains('\n') => {
            Command::Load(rest.trim_matches(|ch| ch == '"' || ch == '\'').to_owned())
        }
        ":stages" => {
            let mut words = rest.split_whitespace();
            match words.next() {
                Some("on") => Command::StagesOn(words.map(str::to_owned).collect()),
                Some("off") if words.next().is_none() => Command::StagesOff,
                _ => Command::Eval,
            }
        }
        _ => Command::Eval,
    }
}

/// Whether to use colours: stdout is a terminal and `NO_COLOR` is unset or empty.
fn colours_wanted() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    std::io::stdout().is_terminal() && !no_color
}

/// The history file: `$DX_HISTORY` if set (empty disables history), else `history.txt` in the
/// user's data directory.
fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("DX_HISTORY") {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let dirs = directories::ProjectDirs::from("", "", "dx")?;
    Some(dirs.data_dir().join("history.txt"))
}

enum Flow {
    Continue,
    Quit,
}

struct Repl {
    session: Session,
    colour: bool,
    /// Whether stdin is a terminal (which echoes `^C` without a newline).
    interactive: bool,
    interrupt: InterruptFlag,
    /// Set while the session evaluates, so that Ctrl-C knows what to stop.
    evaluating: Arc<AtomicBool>,
    /// Whether some entry reported an error (piped input then exits with `Failure`, as
    /// `dx run` does).
    failed: bool,
}

impl Repl {
    /// Handles one complete entry.
    fn handle(&mut self, entry: &str) -> Flow {
        match parse_command(entry) {
            Command::Help => println!("{HELP}"),
            Command::Quit => return Flow::Quit,
            Command::Load(file) if file.is_empty() => self.print_error("usage: :load FILE"),
            Command::Load(file) => match std::fs::read_to_string(&file) {
                Ok(src) => self.eval(&src),
                Err(err) => self.print_error(&format!("cannot read {file}: {err}")),
            },
            Command::StagesOn(stages) if stages.is_empty() => {
                self.print_error("usage: :stages on STAGE... (e.g. :stages on core bot)")
            }
            Command::StagesOn(stages) => self.session.set_stages(stages),
            Command::StagesOff => self.session.set_stages(Vec::new()),
            Command::Eval => {
                let mut src = entry.to_owned();
                if !src.ends_with('\n') {
                    src.push('\n');
                }
                self.eval(&src);
            }
        }
        let _ = std::io::stdout().flush();
        Flow::Continue
    }

    /// Evaluates a source in the session and prints its outputs.
    fn eval(&mut self, src: &str) {
        self.interrupt.store(false, Ordering::SeqCst);
        self.evaluating.store(true, Ordering::SeqCst);
        let mut spinner = Spinner::new(self.session.progress());
        spinner.start("running".to_owned());
        let results = crate::literate::eval_guarded(&mut self.session, src);
        spinner.stop();
        self.evaluating.store(false, Ordering::SeqCst);
        if self.interactive && self.interrupt.load(Ordering::SeqCst) {
            // The terminal echoed `^C`; start the outputs on a line of their own.
            println!();
        }
        let Some(results) = results else {
            self.failed = true;
            self.print_error(
                "Internal error: the evaluation panicked; the session may be inconsistent",
            );
            return;
        };
        for output in results.iter().flat_map(|result| &result.outputs) {
            self.failed |= matches!(output, Output::Error(_));
            let mut text = match output {
                // In colour, each series of a plot has its own.
                Output::Plot(figure) if self.colour => figure.to_ansi(),
                Output::Image(image) if self.colour => image.to_ansi(),
                _ => render_output(output, src),
            };
            if !text.ends_with('\n') {
                text.push('\n');
            }
            if matches!(output, Output::Error(_)) && self.colour {
                println!("{RED}{}{RESET}", text.trim_end_matches('\n'));
            } else {
                print!("{text}");
            }
        }
    }

    fn print_error(&mut self, message: &str) {
        self.failed = true;
        if self.colour {
            println!("{RED}{message}{RESET}");
        } else {
            println!("{message}");
        }
    }
}

/// Prints what the session reported while loading the prelude (a bug in dx, or in a changed
/// library), on standard error.
pub fn report_startup(session: &Session) {
    for output in session.startup_outputs() {
        eprintln!("{}", render_output(output, ""));
    }
}

/// Runs the REPL until `:quit` or end of input.
pub fn run(config: SessionConfig) -> Status {
    let session = Session::new(config);
    report_startup(&session);
    let interactive = std::io::stdin().is_terminal();
    let mut repl = Repl {
        interrupt: session.interrupt_flag(),
        session,
        colour: colours_wanted(),
        interactive,
        evaluating: Arc::new(AtomicBool::new(false)),
        failed: false,
    };
    install_interrupt_handler(&repl, interactive);
    if interactive {
        match interactive_loop(&mut repl) {
            Ok(()) => return Status::Success,
            Err(err) => {
                // Without a usable terminal, fall back to plain line reading.
                eprintln!("dx: warning: line editing unavailable ({err})");
            }
        }
    }
    piped_loop(&mut repl)
}

fn install_interrupt_handler(repl: &Repl, interactive: bool) {
    let interrupt = repl.interrupt.clone();
    let evaluating = repl.evaluating.clone();
    let installed = ctrlc::set_handler(move || {
        if evaluating.load(Ordering::SeqCst) {
            if interrupt.swap(true, Ordering::SeqCst) {
                eprintln!("\ndx: interrupted again; exiting");
                std::process::exit(INTERRUPTED_STATUS);
            }
        } else if !interactive {
            std::process::exit(INTERRUPTED_STATUS);
        }
        // At the prompt, rustyline sees Ctrl-C as a key, not as a signal.
    });
    if let Err(err) = installed {
        eprintln!("dx: warning: Ctrl-C will not interrupt computations ({err})");
    }
}

fn interactive_loop(repl: &mut Repl) -> rustyline::Result<()> {
    let config = Config::builder()
        .auto_add_history(false)
        .max_history_size(10_000)?
        .history_ignore_space(true)
        .completion_type(CompletionType::List)
        .color_mode(if repl.colour {
            ColorMode::Enabled
        } else {
            ColorMode::Disabled
        })
        .build();
    let mut editor: Editor<DxHelper, DefaultHistory> = Editor::with_config(config)?;
    editor.set_helper(Some(DxHelper::new(repl.session.completion_names())));
    let history = history_path();
    if let Some(path) = &history {
        // A missing or unreadable history is not worth a message.
        let _ = editor.load_history(path);
    }
    let prompt = (PROMPT, if repl.colour { PROMPT_BOLD } else { PROMPT });
    // Lines are read one at a time, so that the further lines of an entry get their own
    // prompt; `EntryReader` decides where an entry ends.
    let mut reader = EntryReader::default();
    loop {
        let line = if reader.is_continuing() {
            editor.readline(CONTINUATION)
        } else {
            editor.readline(&prompt)
        };
        match line {
            Ok(line) => {
                let Some(entry) = reader.push_line(&line) else {
                    continue;
                };
                save_history(&mut editor, history.as_ref(), &entry);
                let flow = repl.handle(&entry);
                if let Some(helper) = editor.helper_mut() {
                    helper.names = repl.session.completion_names();
                }
                if let Flow::Quit = flow {
                    return Ok(());
                }
            }
            Err(ReadlineError::Interrupted) => {
                // The abandoned text stays on the screen; say that it was abandoned.
                reader.abandon();
                println!("^C");
            }
            Err(ReadlineError::Eof) => {
                // As for piped input, an unfinished entry runs (and reports its error).
                if let Some(entry) = reader.take() {
                    repl.handle(&entry);
                }
                return Ok(());
            }
            Err(err) => return Err(err),
        }
    }
}

fn save_history(
    editor: &mut Editor<DxHelper, DefaultHistory>,
    path: Option<&PathBuf>,
    entry: &str,
) {
    let _ = editor.history_mut().add(entry);
    if let Some(path) = path {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.append_history(path);
    }
}

/// Reads entries from a non-terminal stdin with the same rule as the editor (`EntryReader`).
/// An incomplete entry at the end of input is evaluated (and reports its error) rather than
/// dropped. A byte-order mark at the start is skipped. A line that is not UTF-8 is reported
/// (which byte, on which line), its entry is abandoned and reading goes on; the exit status
/// is then `Failure`, as it is when an entry reported an error.
fn piped_loop(repl: &mut Repl) -> Status {
    let mut stdin = std::io::stdin().lock();
    let mut reader = EntryReader::default();
    let mut status = Status::Success;
    let mut bytes = Vec::new();
    for line_number in 1.. {
        bytes.clear();
        match stdin.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => {
                repl.print_error(&format!("dx: cannot read the input: {err}"));
                return Status::Failure;
            }
        }
        let line = match std::str::from_utf8(&bytes) {
            Ok(line) if line_number == 1 => line.strip_prefix('\u{feff}').unwrap_or(line),
            Ok(line) => line,
            Err(err) => {
                repl.print_error(&not_utf8_message(&bytes, line_number, &err));
                reader.abandon();
                status = Status::Failure;
                continue;
            }
        };
        if let Some(entry) = reader.push_line(line) {
            if let Flow::Quit = repl.handle(&entry) {
                return piped_status(repl, status);
            }
        }
    }
    if let Some(entry) = reader.take() {
        repl.handle(&entry);
    }
    piped_status(repl, status)
}

/// Piped input exits with `Failure` when an entry failed, as `dx run` does with a block.
fn piped_status(repl: &Repl, status: Status) -> Status {
    if repl.failed {
        Status::Failure
    } else {
        status
    }
}

/// Says which byte of which input line is not UTF-8.
fn not_utf8_message(bytes: &[u8], line_number: usize, err: &std::str::Utf8Error) -> String {
    let at = crate::cli::not_utf8_at(bytes, err, line_number);
    format!("Input error: not UTF-8: {at}; the entry it belongs to is skipped")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repl_commands_are_recognised() {
        assert_eq!(parse_command(":help"), Command::Help);
        assert_eq!(parse_command("  :q "), Command::Quit);
        assert_eq!(parse_command(":quit"), Command::Quit);
        assert_eq!(
            parse_command(":load examples/a.dx"),
            Command::Load("examples/a.dx".into())
        );
        assert_eq!(
            parse_command(":load \"my file.dx\""),
            Command::Load("my file.dx".into())
        );
        assert_eq!(parse_command(":load"), Command::Load(String::new()));
        assert_eq!(
            parse_command(":stages on bot core"),
            Command::StagesOn(vec!["bot".into(), "core".into()])
        );
        assert_eq!(parse_command(":stages off"), Command::StagesOff);
    }

    #[test]
    fn language_commands_go_to_the_session() {
        assert_eq!(parse_command(":p 1.0 + 2.0"), Command::Eval);
        assert_eq!(parse_command(":stages sum [1., 2.]"), Command::Eval);
        assert_eq!(parse_command(":t x"), Command::Eval);
        assert_eq!(parse_command("x = 1"), Command::Eval);
        assert_eq!(parse_command(":quitx"), Command::Eval);
    }
}

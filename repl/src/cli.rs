//! Command-line arguments and dispatch to the REPL, `dx run` and `dx test`.
//!
//! Exit statuses are part of the interface (scripts rely on them): see [`Status`] and the
//! `--help` text.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};
use dx_lang::display::render_output;
use dx_lang::session::{Redefinition, Session, SessionConfig};

use crate::literate::{self, TestOutcome};

/// The exit status of `dx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Everything ran; every test passed.
    Success = 0,
    /// `dx test` found differences, or a block of `dx run` reported an error.
    Failure = 1,
    /// Bad command line, or a file that cannot be read.
    Usage = 2,
}

const AFTER_HELP: &str = "\
Without a command, dx starts the interactive REPL (type :help there).
`dx FILE.dx` is short for `dx run FILE.dx`.

Exit status:
  0  success (and every test passed)
  1  `dx test`: some file's regenerated output differs from the file;
     `dx run`: some block reported an error (its output is still printed)
  2  usage error, or a file could not be read";

#[derive(Parser, Debug)]
#[command(
    name = "dx",
    version,
    about = "dx: a Dex-like differentiable array language (REPL, script runner, test runner)",
    after_help = AFTER_HELP
)]
struct Cli {
    /// Report out-of-range table reads as errors instead of reading zero.
    #[arg(long, global = true)]
    strict: bool,

    /// Do not load the prelude (stdlib/prelude.dx).
    #[arg(long, global = true)]
    no_prelude: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a literate .dx file and print it back with every output regenerated.
    Run {
        /// The .dx file to run.
        file: PathBuf,

        /// `literate`: the file with outputs as `> ` lines; `result-only`: just the outputs.
        #[arg(long, value_enum, default_value_t = OutFormat::Literate)]
        outfmt: OutFormat,
    },
    /// Run .dx files and compare the regenerated outputs with the ones written in them
    /// (timing lines are ignored).
    Test {
        /// The .dx files to test.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OutFormat {
    Literate,
    ResultOnly,
}

/// Parses the command line and runs the command; returns the exit status.
pub fn main(args: Vec<OsString>) -> Status {
    let cli = match Cli::try_parse_from(expand_shorthand(args)) {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // `--help` and `--version`.
            let _ = err.print();
            return Status::Success;
        }
        Err(err) => {
            // clap's text starts with `error: `.
            eprint!("dx: {}", err.render());
            return Status::Usage;
        }
    };
    // The REPL summarises tables and lets a definition replace an earlier one; scripts print
    // tables whole and define each name once.
    let session_config = |interactive: bool| SessionConfig {
        strict: cli.strict,
        prelude: !cli.no_prelude,
        summarise_tables: interactive,
        redefinition: if interactive {
            Redefinition::Replace
        } else {
            Redefinition::Refuse
        },
        ..SessionConfig::default()
    };
    match cli.command {
        None => crate::repl::run(session_config(true)),
        Some(Command::Run { file, outfmt }) => run_file(&file, outfmt, session_config(false)),
        Some(Command::Test { files }) => test_files(&files, &session_config(false)),
    }
}

/// Turns `dx [FLAGS] FILE.dx …` into `dx [FLAGS] run FILE.dx …`.
fn expand_shorthand(mut args: Vec<OsString>) -> Vec<OsString> {
    let first_positional = args.iter().enumerate().skip(1).find(|(_, arg)| {
        let arg = arg.to_string_lossy();
        arg != "--strict" && arg != "--no-prelude"
    });
    if let Some((idx, arg)) = first_positional {
        let arg = arg.to_string_lossy();
        let is_command = matches!(arg.as_ref(), "run" | "test" | "help");
        if !arg.starts_with('-') && !is_command && arg.ends_with(".dx") {
            args.insert(idx, OsString::from("run"));
        }
    }
    args
}

/// Reads a source file; a UTF-8 byte-order mark at its start is skipped.
fn read_source(path: &Path) -> Result<String, Status> {
    let src = std::fs::read_to_string(path).map_err(|err| {
        eprintln!("dx: error: cannot read {}: {err}", path.display());
        Status::Usage
    })?;
    Ok(match src.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => src,
    })
}

fn run_file(path: &Path, outfmt: OutFormat, config: SessionConfig) -> Status {
    let src = match read_source(path) {
        Ok(src) => src,
        Err(status) => return status,
    };
    let mut session = Session::new(config);
    session.set_data_dir(path.parent().map(Path::to_path_buf));
    let Some(results) = literate::eval_guarded(&mut session, &src) else {
        eprintln!("dx: error: internal error while running {}", path.display());
        return Status::Failure;
    };
    let text = match outfmt {
        OutFormat::Literate => literate::literate(&src, &results, &render_output),
        OutFormat::ResultOnly => literate::result_only(&src, &results, &render_output),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        // A closed pipe (`dx run f.dx | head`) is not worth a message.
        return Status::Failure;
    }
    if literate::has_errors(&results) {
        Status::Failure
    } else {
        Status::Success
    }
}

fn test_files(paths: &[PathBuf], config: &SessionConfig) -> Status {
    let mut n_passed = 0;
    let mut n_failed = 0;
    let mut status = Status::Success;
    for path in paths {
        let name = path.display().to_string();
        let src = match read_source(path) {
            Ok(src) => src,
            Err(read_status) => {
                println!("FAIL {name}");
                n_failed += 1;
                status = status.max(read_status);
                continue;
            }
        };
        // Each file gets a fresh session, as `dx run` would.
        let mut session = Session::new(config.clone());
        session.set_data_dir(path.parent().map(Path::to_path_buf));
        let Some(results) = literate::eval_guarded(&mut session, &src) else {
            eprintln!("dx: error: internal error while running {name}");
            println!("FAIL {name}");
            n_failed += 1;
            status = status.max(Status::Failure);
            continue;
        };
        let actual = literate::literate(&src, &results, &render_output);
        match literate::compare(&name, &src, &actual) {
            TestOutcome::Pass => {
                println!("PASS {name}");
                n_passed += 1;
            }
            TestOutcome::Fail { diff } => {
                print!("{diff}");
                println!("FAIL {name}");
                n_failed += 1;
                status = status.max(Status::Failure);
            }
        }
    }
    println!("{n_passed} passed, {n_failed} failed");
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(args: &[&str]) -> Vec<String> {
        let args = args.iter().map(OsString::from).collect();
        expand_shorthand(args)
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn shorthand_inserts_run_before_a_dx_file() {
        assert_eq!(expand(&["dx", "a.dx"]), ["dx", "run", "a.dx"]);
        assert_eq!(
            expand(&["dx", "--strict", "a.dx", "--outfmt", "result-only"]),
            ["dx", "--strict", "run", "a.dx", "--outfmt", "result-only"]
        );
    }

    #[test]
    fn shorthand_leaves_commands_and_flags_alone() {
        assert_eq!(expand(&["dx"]), ["dx"]);
        assert_eq!(expand(&["dx", "run", "a.dx"]), ["dx", "run", "a.dx"]);
        assert_eq!(
            expand(&["dx", "test", "a.dx", "b.dx"]),
            ["dx", "test", "a.dx", "b.dx"]
        );
        assert_eq!(expand(&["dx", "--help"]), ["dx", "--help"]);
        assert_eq!(expand(&["dx", "notes.txt"]), ["dx", "notes.txt"]);
    }

    #[test]
    fn command_line_parses() {
        let cli = Cli::try_parse_from(["dx", "run", "a.dx", "--outfmt", "result-only", "--strict"])
            .expect("valid command line");
        assert!(cli.strict);
        assert!(matches!(
            cli.command,
            Some(Command::Run {
                outfmt: OutFormat::ResultOnly,
                ..
            })
        ));
        assert!(
            Cli::try_parse_from(["dx", "test"]).is_err(),
            "test needs a file"
        );
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}

//! Command-line arguments and dispatch to the REPL, `dx run`, `dx test` and `dx export`.
//!
//! Exit statuses are part of the interface (scripts rely on them): see [`Status`] and the
//! `--help` text.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};
use dx_lang::display::render_output;
use dx_lang::session::{Progress, Redefinition, Session, SessionConfig};
use dx_lang::syntax::ChunkKind;
use std::sync::atomic::Ordering;

use crate::literate::{self, TestOutcome};
use crate::spinner::Spinner;

/// Exit status after an interrupt (as shells report SIGINT).
const INTERRUPTED_STATUS: i32 = 130;

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

    /// Threads for parallel kernels (default: RAYON_NUM_THREADS, else one per core). Results
    /// are the same bits on any number.
    #[arg(long, global = true, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,

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
    /// Convert a literate .dx file to a Jupyter notebook (.ipynb) or back, by the files'
    /// extensions: prose and Markdown cells, code blocks and code cells, `> ` lines and outputs.
    Convert {
        /// The file to read (.dx or .ipynb).
        from: PathBuf,
        /// The file to write (.ipynb or .dx).
        to: PathBuf,
    },
    /// Write a function of a .dx file as a StableHLO module (MLIR text) for XLA, IREE and other
    /// compilers: `@main` takes the function's arguments (tuples flattened), and the file's
    /// top-level values it reads are embedded as constants. See docs/scaling.md.
    Export {
        /// The .dx file that defines the function (it is run first).
        file: PathBuf,
        /// The function: a top-level name, or an expression such as "grad loss" or "vjp loss",
        /// possibly with example arguments that fix its argument types ("f xs0").
        name: String,
        /// Where to write the module (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Run the Jupyter kernel (`dx kernel --connection-file FILE`, as Jupyter starts it), or
    /// install or remove its kernelspec.
    Kernel(KernelArgs),
    /// Run the language server on stdin and stdout, for editors (see docs/editors.md):
    /// diagnostics as you type, hover, completion, go to definition, document symbols.
    Lsp,
}

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct KernelArgs {
    /// The connection file Jupyter wrote for this kernel.
    #[arg(long)]
    connection_file: Option<PathBuf>,

    #[command(subcommand)]
    action: Option<KernelAction>,
}

#[derive(Subcommand, Debug)]
enum KernelAction {
    /// Install the kernelspec `dx` (default: in the user's Jupyter data directory).
    Install(InstallArgs),
    /// Remove the kernelspec `dx`.
    Uninstall(InstallArgs),
}

#[derive(clap::Args, Debug)]
#[group(multiple = false)]
struct InstallArgs {
    /// The user's Jupyter data directory (the default; `$JUPYTER_DATA_DIR` when set).
    #[arg(long)]
    user: bool,
    /// The active Python environment (`$VIRTUAL_ENV` or `$CONDA_PREFIX`).
    #[arg(long)]
    sys_prefix: bool,
    /// `DIR/share/jupyter`.
    #[arg(long, value_name = "DIR")]
    prefix: Option<PathBuf>,
}

impl InstallArgs {
    fn location(&self) -> dx_kernel::InstallLocation {
        match (&self.prefix, self.sys_prefix) {
            (Some(prefix), _) => dx_kernel::InstallLocation::Prefix(prefix.clone()),
            (None, true) => dx_kernel::InstallLocation::SysPrefix,
            (None, false) => dx_kernel::InstallLocation::User,
        }
    }
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
    // The pool is made here even without `--threads` (0: rayon's default count), so that its
    // threads carry their names (`dx-worker-N`) in profiles and debuggers.
    if let Err(err) = dx_lang::exec::set_threads(cli.threads.map_or(0, usize::from)) {
        let count = cli
            .threads
            .map_or("the default number of".to_string(), |n| n.to_string());
        eprintln!("dx: error: cannot start {count} threads: {err}");
        return Status::Usage;
    }
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
        Some(Command::Kernel(args)) => kernel(args, session_config(true)),
        Some(Command::Lsp) => match dx_lsp::run() {
            Ok(()) => Status::Success,
            Err(err) => {
                eprintln!("dx lsp: error: {err:#}");
                Status::Failure
            }
        },
        Some(Command::Convert { from, to }) => convert(&from, &to),
        Some(Command::Export { file, name, output }) => {
            export(&file, &name, output.as_deref(), session_config(false))
        }
    }
}

/// A session for running the file `path`: relative file names start from its folder; what
/// loading the prelude reported goes to standard error.
fn file_session(path: &Path, config: SessionConfig) -> Session {
    let mut session = Session::new(config);
    crate::repl::report_startup(&session);
    session.set_data_dir(path.parent().map(Path::to_path_buf));
    session
}

/// `dx export FILE NAME [-o OUT]`: runs the file, then writes `NAME` as a StableHLO module.
fn export(path: &Path, name: &str, output: Option<&Path>, config: SessionConfig) -> Status {
    let src = match read_source(path) {
        Ok(src) => src,
        Err(status) => return status,
    };
    let mut session = file_session(path, config);
    let results = session.eval_source(&src);
    if literate::has_errors(&results) {
        for output in results.iter().flat_map(|result| &result.outputs) {
            if matches!(output, dx_lang::session::Output::Error(_)) {
                let text = render_output(output, &src);
                eprintln!("{}", text.trim_end());
            }
        }
        eprintln!("dx: error: {} has errors; nothing exported", path.display());
        return Status::Failure;
    }
    let module = match session.export(name) {
        Ok(module) => module,
        Err(diag) => {
            eprintln!("{}", dx_lang::display::render_diagnostic(&diag, name));
            return Status::Failure;
        }
    };
    let written = match output {
        Some(out) => std::fs::write(out, &module)
            .map_err(|err| format!("cannot write {}: {err}", out.display())),
        None => std::io::stdout()
            .write_all(module.as_bytes())
            .map_err(|err| format!("cannot write the module: {err}")),
    };
    match written {
        Ok(()) => Status::Success,
        Err(message) => {
            eprintln!("dx: error: {message}");
            Status::Failure
        }
    }
}

/// `dx convert FROM TO`: `.dx` to `.ipynb` or `.ipynb` to `.dx`.
fn convert(from: &Path, to: &Path) -> Status {
    let src = match read_source(from) {
        Ok(src) => src,
        Err(status) => return status,
    };
    let is = |path: &Path, ext: &str| path.extension().is_some_and(|found| found == ext);
    let converted = if is(from, "dx") && is(to, "ipynb") {
        let notebook = crate::convert::dx_to_notebook(&src);
        serde_json::to_string_pretty(&notebook)
            .map(|text| text + "\n")
            .map_err(|err| err.to_string())
    } else if is(from, "ipynb") && is(to, "dx") {
        serde_json::from_str(&src)
            .map_err(|err| format!("{} is not JSON: {err}", from.display()))
            .and_then(|notebook| crate::convert::notebook_to_dx(&notebook))
    } else {
        eprintln!("dx: error: `dx convert` turns a .dx file into a .ipynb file or back");
        return Status::Usage;
    };
    let written = converted.and_then(|text| {
        std::fs::write(to, text).map_err(|err| format!("cannot write {}: {err}", to.display()))
    });
    match written {
        Ok(()) => Status::Success,
        Err(message) => {
            eprintln!("dx: error: {message}");
            Status::Failure
        }
    }
}

/// `dx kernel …`: runs the Jupyter kernel, or installs or removes its kernelspec.
fn kernel(args: KernelArgs, config: SessionConfig) -> Status {
    let res = match (args.action, args.connection_file) {
        (Some(KernelAction::Install(place)), _) => {
            dx_kernel::install(&place.location()).map(|dir| {
                println!("Installed the dx kernelspec in {}", dir.display());
            })
        }
        (Some(KernelAction::Uninstall(place)), _) => {
            dx_kernel::uninstall(&place.location()).map(|dir| match dir {
                Some(dir) => println!("Removed the dx kernelspec from {}", dir.display()),
                None => println!("No dx kernelspec is installed there"),
            })
        }
        (None, Some(connection_file)) => dx_kernel::run(&connection_file, config),
        (None, None) => Err(anyhow::anyhow!("`dx kernel` needs --connection-file FILE")),
    };
    match res {
        Ok(()) => Status::Success,
        Err(err) => {
            eprintln!("dx: error: {err:#}");
            Status::Failure
        }
    }
}

/// Turns `dx [FLAGS] FILE.dx …` into `dx [FLAGS] run FILE.dx …`.
fn expand_shorthand(mut args: Vec<OsString>) -> Vec<OsString> {
    // The global flags, and `--threads`'s value when it is the next argument.
    let mut skip_value = false;
    let first_positional = args.iter().enumerate().skip(1).find(|(_, arg)| {
        let arg = arg.to_string_lossy();
        let is_value = std::mem::replace(&mut skip_value, arg == "--threads");
        !is_value
            && arg != "--strict"
            && arg != "--no-prelude"
            && arg != "--threads"
            && !arg.starts_with("--threads=")
    });
    if let Some((idx, arg)) = first_positional {
        let arg = arg.to_string_lossy();
        let is_command = matches!(arg.as_ref(), "run" | "test" | "kernel" | "convert" | "help");
        if !arg.starts_with('-') && !is_command && arg.ends_with(".dx") {
            args.insert(idx, OsString::from("run"));
        }
    }
    args
}

/// Reads a source file; a UTF-8 byte-order mark at its start is skipped, and text that is not
/// UTF-8 is an error that says where.
fn read_source(path: &Path) -> Result<String, Status> {
    let bytes = std::fs::read(path).map_err(|err| {
        eprintln!("dx: error: cannot read {}: {err}", path.display());
        Status::Usage
    })?;
    let src = String::from_utf8(bytes).map_err(|err| {
        let where_ = not_utf8_at(err.as_bytes(), &err.utf8_error(), 1);
        eprintln!("dx: error: {} is not UTF-8: {where_}", path.display());
        Status::Usage
    })?;
    Ok(match src.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => src,
    })
}

/// Where text whose first line is `first_line` stops being UTF-8: "byte 0xff on line 2,
/// column 6" (columns from 1, in characters).
pub fn not_utf8_at(bytes: &[u8], err: &std::str::Utf8Error, first_line: usize) -> String {
    let valid = String::from_utf8_lossy(&bytes[..err.valid_up_to()]);
    let line = first_line + valid.matches('\n').count();
    let column = valid.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    let byte = bytes.get(err.valid_up_to()).copied().unwrap_or(0);
    format!("byte 0x{byte:02x} on line {line}, column {column}")
}

/// `dx run`: prints each block's output as soon as the block has run (the quine order is the
/// file's order), with a spinner saying which block runs when stderr is a terminal. The first
/// Ctrl-C stops the running block; what ran is printed, the interrupted block is named, and dx
/// exits with status 130. A second Ctrl-C exits at once.
fn run_file(path: &Path, outfmt: OutFormat, config: SessionConfig) -> Status {
    let src = match read_source(path) {
        Ok(src) => src,
        Err(status) => return status,
    };
    let mut session = file_session(path, config);
    let interrupt = session.interrupt_flag();
    let handler_flag = interrupt.clone();
    let _ = ctrlc::set_handler(move || {
        if handler_flag.swap(true, Ordering::SeqCst) {
            std::process::exit(INTERRUPTED_STATUS);
        }
    });
    let render_chunk = match outfmt {
        OutFormat::Literate => literate::literate_chunk,
        OutFormat::ResultOnly => literate::result_only_chunk,
    };
    let mut spinner = Spinner::new(session.progress());
    let mut stdout = std::io::stdout().lock();
    let mut closed = false;
    let mut running = (0, 0, 0);
    let results = literate::eval_guarded_with(&mut session, &src, &mut |progress| match progress {
        Progress::Started {
            block,
            n_blocks,
            chunk,
        } => {
            let line = src[..chunk.span.range().start.min(src.len())]
                .lines()
                .count()
                + 1;
            running = (block, n_blocks, line);
            spinner.start(format!("block {block}/{n_blocks} (line {line})"));
        }
        Progress::Finished(result) => {
            spinner.stop();
            let text = render_chunk(&src, result, &render_output);
            // A closed pipe (`dx run f.dx | head`) is not worth a message.
            closed = closed
                || stdout
                    .write_all(text.as_bytes())
                    .and_then(|()| stdout.flush())
                    .is_err();
            if interrupt.load(Ordering::SeqCst) && matches!(result.chunk.kind, ChunkKind::Code(_)) {
                let (block, n_blocks, line) = running;
                eprintln!(
                    "dx: interrupted while running block {block} of {n_blocks} (line {line} of {})",
                    path.display()
                );
                std::process::exit(INTERRUPTED_STATUS);
            }
        }
    });
    let Some(results) = results else {
        eprintln!("dx: error: internal error while running {}", path.display());
        return Status::Failure;
    };
    if closed || literate::has_errors(&results) {
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
        let mut session = file_session(path, config.clone());
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
        assert_eq!(
            expand(&["dx", "--threads", "2", "a.dx"]),
            ["dx", "--threads", "2", "run", "a.dx"]
        );
        assert_eq!(
            expand(&["dx", "--threads=3", "--strict", "a.dx"]),
            ["dx", "--threads=3", "--strict", "run", "a.dx"]
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
        let cli = Cli::try_parse_from(["dx", "test", "a.dx", "--threads", "4"]).expect("valid");
        assert_eq!(cli.threads, Some(4));
        for threads in ["0", "-1", "many"] {
            assert!(
                Cli::try_parse_from(["dx", "--threads", threads]).is_err(),
                "--threads {threads}"
            );
        }
        let cli = Cli::try_parse_from(["dx", "kernel", "--connection-file", "k.json"])
            .expect("kernel command line");
        assert!(matches!(
            cli.command,
            Some(Command::Kernel(KernelArgs {
                connection_file: Some(_),
                action: None
            }))
        ));
        let cli = Cli::try_parse_from(["dx", "kernel", "install", "--prefix", "/tmp/p"])
            .expect("install command line");
        let Some(Command::Kernel(KernelArgs {
            action: Some(KernelAction::Install(place)),
            ..
        })) = cli.command
        else {
            panic!("`dx kernel install` parses as an install");
        };
        assert_eq!(
            place.location(),
            dx_kernel::InstallLocation::Prefix(PathBuf::from("/tmp/p"))
        );
        assert!(
            Cli::try_parse_from(["dx", "kernel", "install", "--user", "--sys-prefix"]).is_err()
        );
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}

//! A session: the top-level environment of a REPL, a script or a notebook, and the evaluation
//! of blocks in it. Front-ends (`repl`, `kernel`) talk only to this module, with plain data:
//! source text goes in; structured outputs come out and are rendered by `display`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::check::builtins::Builtin;
use crate::check::env::GlobalEnv;
use crate::check::infer::Infer;
use crate::check::typed::{DefInfo, TExpr, TKind, TPat, TStmt};
use crate::check::types::{BaseTy, Ty};
use crate::check::TypeError;
use crate::core::ir::Program;
use crate::core::value::{Array, Value};
use crate::data::DataOp;
pub use crate::display::output::{format_duration, Code, Diagnostic, ErrorKind, Output};
use crate::display::{format_value, DisplayValue};
use crate::exec::tensor::Tensor;
use crate::exec::{CompileLoops, ExecConfig};
use crate::export::stablehlo::Input;
use crate::ops::interp::{self, InterpConfig, InterpError};
use crate::passes::lower::{
    leaf_types, scalar_leaves, GlobalValue, LowerError, LowerErrorKind, Lowerer,
};
use crate::passes::lower_effects::{SiteKind, PRINT_LOG_LINES};
use crate::passes::pipeline::{self, Ice};
use crate::passes::PIPELINE;
use crate::syntax::ast::{CodeBlock, Command, Decl, Ident, LetBinding, Pattern, Pragma};
use crate::syntax::{Chunk, ChunkKind, Span};

pub use check::{Checked, Symbol, SymbolKind};

mod check;
mod diagram;
mod export;
mod html;
mod rich;
mod run_stage;

/// Options of a session.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Report out-of-range reads as errors instead of reading zero (`--strict`).
    pub strict: bool,
    /// Load `stdlib/prelude.dx` when the session starts.
    pub prelude: bool,
    /// Summarise tables of more than 1000 elements (REPL and notebook; not `dx run`).
    pub summarise_tables: bool,
    /// Which engine runs the compiled programs.
    pub engine: Engine,
    /// What a second top-level definition of a name does.
    pub redefinition: Redefinition,
    /// Dex's test mode, what `dex_test_mode()` gives: by default, whether the environment
    /// variable `DEX_TEST_MODE` is set when the session is configured.
    pub test_mode: bool,
}

/// What a second top-level definition of a name does (docs/language.md, as Dex).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Redefinition {
    /// The REPL and notebooks: the new definition replaces the old one (re-running a cell
    /// works); what was computed from the old one keeps its value.
    #[default]
    Replace,
    /// A script (`dx run`, `dx test`): an error naming both places.
    Refuse,
}

/// The engine that runs compiled programs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// The fused engine (`exec/fused.rs`): the main block as loop kernels and matrix
    /// products (`passes::fuse`), in parallel. `--strict` runs on `Bulk` instead.
    #[default]
    Fused,
    /// The bulk evaluator (`exec`): one whole-array operation at a time, in parallel.
    Bulk,
    /// The reference interpreter (`ops::interp`): element by element; the tests' oracle.
    Reference,
}

impl Engine {
    /// How messages name the engine.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Fused => "fused engine",
            Engine::Bulk => "bulk evaluator",
            Engine::Reference => "reference interpreter",
        }
    }
}

/// What ran the last evaluated expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunReport {
    pub engine: Engine,
    /// Statements the bulk evaluator executed (0 for the reference interpreter).
    pub statements: usize,
    /// Fused kernels and matrix products run (the fused engine only).
    pub kernels: usize,
    pub matmuls: usize,
    /// `build1` statements the bulk evaluator had to run element by element.
    pub build1_fallbacks: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            strict: false,
            prelude: true,
            summarise_tables: false,
            engine: Engine::Fused,
            redefinition: Redefinition::Replace,
            test_mode: std::env::var_os("DEX_TEST_MODE").is_some(),
        }
    }
}

/// The result of one chunk of a source.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkResult {
    pub chunk: Chunk,
    pub outputs: Vec<Output>,
}

/// What `Session::eval_source_with` reports while it runs a source.
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// Code block `block` (from 1) of `n_blocks` starts.
    Started {
        block: usize,
        n_blocks: usize,
        chunk: &'a Chunk,
    },
    /// A chunk (code, prose, comment or blank) has run.
    Finished(&'a ChunkResult),
}

/// A flag that, once set, stops the running computation at its next check.
pub type InterruptFlag = Arc<AtomicBool>;

/// The median of some times (the upper one of an even count), zero for none.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Each step's median time over several runs of a schedule (one list of step times each).
fn median_steps(runs: &[Vec<Duration>]) -> Vec<Duration> {
    let steps = runs.iter().map(Vec::len).min().unwrap_or(0);
    (0..steps)
        .map(|step| median(runs.iter().map(|run| run[step]).collect()))
        .collect()
}

/// Loops of scalars, monoid chunk folds and small kernels run as machine code
/// (`exec::CompileLoops::Long`), unless the environment sets `DX_NO_JIT` (to compare against
/// the register interpreter and the lanes with one binary) or `DX_JIT_ALL` (everything that
/// can compile does, at its first launch: to measure the compiled path where the policy
/// keeps the lanes).
fn compile_loops() -> CompileLoops {
    if std::env::var_os("DX_NO_JIT").is_some() {
        CompileLoops::Never
    } else if std::env::var_os("DX_JIT_ALL").is_some() {
        CompileLoops::Always
    } else {
        CompileLoops::Long
    }
}

#[cfg(test)]
mod tests {
    use super::{format_duration, Output, Session, SessionConfig};
    use std::time::Duration;

    /// `settle`: a result that is an input unchanged keeps the input's buffer; a new name for
    /// either, or a value made from them, never changes the other.
    #[test]
    fn a_result_that_is_an_input_shares_its_buffer_safely() {
        let mut session = Session::new(SessionConfig::default());
        let run = |session: &mut Session, src: &str| -> Vec<Output> {
            session
                .eval_source(src)
                .into_iter()
                .flat_map(|chunk| chunk.outputs)
                .collect()
        };
        let defs = "N = Fin 50000\n\
                    y = for i:N. n_to_f (ordinal i)\n\
                    def loss(v: N=>Float) -> Float = sum for i. v[i] * y[i]\n\
                    g = grad loss y\n\
                    h = for i. y[i] * 2.0\n";
        assert_eq!(run(&mut session, defs), vec![]);
        let leaf = |session: &Session, name: &str| session.values[name].1[0].clone();
        // The gradient of a linear function is its coefficients: the session's `y` itself.
        assert!(leaf(&session, "g").is_same_array(&leaf(&session, "y")));
        assert!(!leaf(&session, "h").is_same_array(&leaf(&session, "y")));
        // Replacing `y` (its buffer is shared with `g`, so it is not recycled) and then
        // making new arrays of its size leaves `g` as it was.
        let more = "y = for i:N. 7.0\n\
                    z = for i:N. 5.0 * y[i]\n\
                    :p (g[3@N], y[3@N], z[3@N])\n";
        let got = run(&mut session, more);
        assert_eq!(got, vec![Output::Value("(3., 7., 35.)".into())]);
    }

    #[test]
    fn durations_print_like_the_language_reference() {
        assert_eq!(format_duration(Duration::from_nanos(3_217_000)), "3.217 ms");
        assert_eq!(format_duration(Duration::from_nanos(41_600)), "41.6 us");
        assert_eq!(
            format_duration(Duration::from_nanos(12_080_000)),
            "12.08 ms"
        );
        assert_eq!(format_duration(Duration::from_nanos(12)), "12 ns");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5 s");
    }
}

/// A session: top-level values, definitions and settings that persist between blocks.
pub struct Session {
    config: SessionConfig,
    interrupt: InterruptFlag,
    /// How far the running block has got, for front-ends to show (`exec::progress`).
    progress: Arc<crate::exec::progress::Progress>,
    stages: Vec<String>,
    env: GlobalEnv,
    /// Top-level values: their type and their arrays (one per leaf of the type), as engine
    /// values, so that a block reading them does not copy them.
    values: HashMap<String, (Ty, Vec<Tensor>)>,
    imported: HashSet<String>,
    /// What loading the prelude reported (nothing, when the prelude is sound).
    startup: Vec<Output>,
    last_run: Option<RunReport>,
    /// Documentation of definitions: the comment lines right above a `def` (`:help name`).
    docs: HashMap<String, String>,
    /// The folder relative paths of data files are resolved in (the script's folder).
    /// The line of each top-level name the user's source defined (`Redefinition::Refuse`).
    defined_at: HashMap<String, usize>,
    /// Libraries being loaded (their names are not the user's definitions).
    loading_libraries: usize,
    /// The errors of the block being evaluated after its first one (several independent
    /// type errors are reported together).
    more_errors: Vec<Diagnostic>,
}

// Note [Where libraries are found]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `import name` loads `name.dx` from the first place that has it:
// 1. the folders of the environment variable `DX_LIBRARY_PATH` (separated as `PATH` is), so
//    that a library can be changed and tried without rebuilding dx, or a shipped one replaced;
// 2. the libraries shipped inside the binary (`STDLIB`), so that dx works from any folder;
// 3. the script's folder (the current one in the REPL and the kernel): a user's own modules.
// A library is loaded once per session; its definitions are not the user's (redefining one
// is allowed).

/// The environment variable naming folders searched first by `import`.
pub const LIBRARY_PATH_VAR: &str = "DX_LIBRARY_PATH";

/// The libraries shipped inside the binary. See Note [Where libraries are found].
const STDLIB: &[(&str, &str)] = &[
    ("prelude", include_str!("../../stdlib/prelude.dx")),
    ("plot", include_str!("../../stdlib/plot.dx")),
    ("png", include_str!("../../stdlib/png.dx")),
    ("netpbm", include_str!("../../stdlib/netpbm.dx")),
    ("complex", include_str!("../../stdlib/complex.dx")),
    ("fft", include_str!("../../stdlib/fft.dx")),
    ("linalg", include_str!("../../stdlib/linalg.dx")),
    ("sort", include_str!("../../stdlib/sort.dx")),
    ("set", include_str!("../../stdlib/set.dx")),
    ("stats", include_str!("../../stdlib/stats.dx")),
    ("diagram", include_str!("../../stdlib/diagram.dx")),
];

/// What loading the prelude leaves in a session (`Session::load_prelude`).
struct LoadedPrelude {
    env: GlobalEnv,
    values: HashMap<String, (Ty, Vec<Tensor>)>,
    imported: HashSet<String>,
    docs: HashMap<String, String>,
    startup: Vec<Output>,
}

/// Stack size for evaluating a block: deeply nested programs recurse deeply.
const EVAL_STACK_BYTES: usize = 256 << 20;

impl Session {
    pub fn new(config: SessionConfig) -> Session {
        let load_prelude = config.prelude;
        let mut session = Session {
            config,
            interrupt: InterruptFlag::default(),
            progress: Arc::default(),
            stages: Vec::new(),
            env: GlobalEnv::default(),
            values: HashMap::new(),
            imported: HashSet::new(),
            startup: Vec::new(),
            last_run: None,
            docs: HashMap::new(),
            defined_at: HashMap::new(),
            loading_libraries: 0,
            more_errors: Vec::new(),
        };
        if load_prelude {
            session.load_prelude();
        }
        session.env.test_mode = session.config.test_mode;
        session
    }

    /// Loads the prelude: checked once per process and copied into each new session, unless
    /// `DX_LIBRARY_PATH` may hold another one (Note [Where libraries are found]).
    fn load_prelude(&mut self) {
        static LOADED: std::sync::OnceLock<LoadedPrelude> = std::sync::OnceLock::new();
        if std::env::var_os(LIBRARY_PATH_VAR).is_some() {
            self.startup = self.import("prelude");
            return;
        }
        let loaded = LOADED.get_or_init(|| {
            let mut fresh = Session::new(SessionConfig {
                prelude: false,
                ..self.config.clone()
            });
            let startup = fresh.import("prelude");
            LoadedPrelude {
                env: fresh.env,
                values: fresh.values,
                imported: fresh.imported,
                docs: fresh.docs,
                startup,
            }
        });
        self.env = loaded.env.clone();
        self.values = loaded.values.clone();
        self.imported = loaded.imported.clone();
        self.docs = loaded.docs.clone();
        self.startup = loaded.startup.clone();
    }

    /// Evaluates every block of a source (a file, a REPL entry, a cell) in order and returns
    /// one result per chunk, prose and blank chunks included (with no outputs).
    pub fn eval_source(&mut self, src: &str) -> Vec<ChunkResult> {
        self.eval_source_with(src, &mut |_| {})
    }

    /// `eval_source`, telling `on_progress` when each code block starts and each chunk ends,
    /// so that front-ends can show output as soon as a block has run, and a spinner meanwhile.
    pub fn eval_source_with(
        &mut self,
        src: &str,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Vec<ChunkResult> {
        self.eval_chunks(src, false, on_progress)
    }

    /// `eval_source_with` for a notebook cell: as IPython does, the first block that reports
    /// an error (an interrupt included) ends the cell; the blocks after it are not run and
    /// have no result.
    pub fn eval_cell_with(
        &mut self,
        src: &str,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Vec<ChunkResult> {
        self.eval_chunks(src, true, on_progress)
    }

    fn eval_chunks(
        &mut self,
        src: &str,
        stop_after_error: bool,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Vec<ChunkResult> {
        self.interrupt.store(false, Ordering::Relaxed);
        let chunks = crate::syntax::split_chunks(src);
        let n_blocks = chunks
            .iter()
            .filter(|chunk| matches!(chunk.kind, ChunkKind::Code(_)))
            .count();
        let mut results = Vec::new();
        let mut block_idx = 0;
        // The comment chunk just before the current chunk: the documentation of a `def`.
        let mut comment: Option<String> = None;
        for chunk in chunks {
            let doc = comment.take();
            let outputs = match &chunk.kind {
                ChunkKind::Code(Ok(block)) => {
                    block_idx += 1;
                    self.progress.reset();
                    on_progress(Progress::Started {
                        block: block_idx,
                        n_blocks,
                        chunk: &chunk,
                    });
                    let outputs = self.eval_block_guarded(src, block);
                    if !outputs
                        .iter()
                        .any(|output| matches!(output, Output::Error(_)))
                    {
                        self.record_docs(&block.decl, doc);
                    }
                    outputs
                }
                ChunkKind::Code(Err(err)) => {
                    block_idx += 1;
                    vec![Output::Error(parse_error(err))]
                }
                ChunkKind::Comment => {
                    comment = Some(doc_text(&src[chunk.span.range()]));
                    Vec::new()
                }
                ChunkKind::Prose | ChunkKind::Blank => Vec::new(),
            };
            let failed = outputs
                .iter()
                .any(|output| matches!(output, Output::Error(_)));
            let result = ChunkResult { chunk, outputs };
            on_progress(Progress::Finished(&result));
            results.push(result);
            if failed && stop_after_error {
                break;
            }
        }
        results
    }

    /// Keeps the documentation of what a block defined: the comment above a `def`, a
    /// `struct`/`data`/`enum`, an `interface` or a type alias (for its name; a struct's
    /// constructor shares it). A name defined again without one loses the old text (`:help`
    /// would describe another thing).
    fn record_docs(&mut self, decl: &Decl, doc: Option<String>) {
        for ident in decl.defined_names() {
            self.docs.remove(&ident.name);
        }
        let named = match decl {
            Decl::Def(_)
            | Decl::Data(_)
            | Decl::Interface(_)
            | Decl::TypeAlias(_)
            | Decl::Instance(_) => decl.defined_names().first().copied(),
            Decl::Let(_)
            | Decl::Command { .. }
            | Decl::Import(_)
            | Decl::CustomLinearization { .. } => None,
        };
        if let (Some(name), Some(doc)) = (named, doc) {
            self.docs.insert(name.name.clone(), doc);
        }
    }

    /// What ran the most recently evaluated expression (which engine, how many statements).
    pub fn last_run(&self) -> Option<RunReport> {
        self.last_run
    }

    /// Errors reported while loading the prelude (shown by the front-ends at start-up).
    pub fn startup_outputs(&self) -> &[Output] {
        &self.startup
    }

    /// The flag that interrupts the running computation (Ctrl-C, Jupyter interrupt).
    pub fn interrupt_flag(&self) -> InterruptFlag {
        self.interrupt.clone()
    }

    /// How far the running block has got (schedule steps, loop iterations), for a front-end's
    /// thread to show while the session's thread computes; reset when each block starts.
    pub fn progress(&self) -> Arc<crate::exec::progress::Progress> {
        self.progress.clone()
    }

    /// Names for tab completion: values, functions and aliases in scope, and built-ins.
    pub fn completion_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.env.names().cloned().collect();
        names.extend(Builtin::names().map(str::to_string));
        names.sort();
        names.dedup();
        names
    }

    /// Stages to show before the result of every following block (`:stages on …`); empty
    /// for `:stages off`.
    pub fn set_stages(&mut self, stages: Vec<String>) {
        self.stages = stages;
    }

    /// The folder that relative paths of `load_npy`, `save_csv`, … start from (the folder of
    /// the script being run); the working directory when unset.
    pub fn set_data_dir(&mut self, dir: Option<PathBuf>) {
        self.env.data_dir = dir;
    }

    /// `--strict` / `%strict`: out-of-range reads become errors.
    pub fn set_strict(&mut self, strict: bool) {
        self.config.strict = strict;
    }

    /// Evaluates one expression (source text) and returns its value as arrays with its type,
    /// for tools and tests that want numbers rather than text.
    pub fn evaluate(&mut self, expr_src: &str) -> Result<(Ty, Value), Diagnostic> {
        let texpr = self.check_expr(expr_src)?;
        let cx = BlockCx {
            strict: self.config.strict,
            stages: Vec::new(),
            bench: None,
        };
        let (arrays, ty, _) = self.run_to_arrays(&texpr, &cx)?;
        let value = structure(&ty, arrays);
        Ok((ty, value))
    }

    /// Compiles one expression and returns its core program and the program that runs (after
    /// the BOT and simplification), for tests and tools
    /// that inspect the IR: operation counts, costs.
    pub fn compile_expr(&mut self, expr_src: &str) -> Result<(Program, Program), Diagnostic> {
        let texpr = self.check_expr(expr_src)?;
        let compiled = self.compile(&texpr, &[])?;
        Ok((compiled.core, compiled.piped.program))
    }

    fn check_expr(&mut self, expr_src: &str) -> Result<TExpr, Diagnostic> {
        let expr = parse_expr(expr_src)?;
        Infer::new(&mut self.env)
            .infer_top_expr(&expr)
            .map_err(|err| type_error(&mut self.more_errors, err))
    }

    /// Loads a standard library once.
    fn import(&mut self, name: &str) -> Vec<Output> {
        if !self.imported.insert(name.to_string()) {
            return Vec::new();
        }
        let Some((text, shipped)) = self.library_source(name) else {
            self.imported.remove(name);
            return vec![Output::Warning(format!("no library named `{name}`"))];
        };
        let text = text.as_str();
        let mut outputs = Vec::new();
        self.loading_libraries += 1;
        let results = self.eval_source(text);
        self.loading_libraries -= 1;
        for result in results {
            for output in result.outputs {
                if let Output::Error(diag) = output {
                    // An error in a shipped library is dx's bug; in the user's own, the
                    // user's error, of its own kind.
                    let rendered = crate::display::render_diagnostic(&diag, text);
                    let (code, message) = if shipped {
                        (Code::Internal, format!("in library `{name}`: {rendered}"))
                    } else {
                        (diag.code, format!("in library `{name}`:\n{rendered}"))
                    };
                    outputs.push(Output::Error(Diagnostic::new(code, message, None)));
                }
            }
        }
        outputs
    }

    /// The text of the library `import name` loads, and whether it is one shipped with dx.
    /// See Note [Where libraries are found].
    fn library_source(&self, name: &str) -> Option<(String, bool)> {
        let file = format!("{name}.dx");
        let read = |dir: &std::path::Path| std::fs::read_to_string(dir.join(&file)).ok();
        let search_path = std::env::var_os(LIBRARY_PATH_VAR).unwrap_or_default();
        let user = |text| (text, false);
        std::env::split_paths(&search_path)
            .filter(|dir| !dir.as_os_str().is_empty())
            .find_map(|dir| read(&dir))
            .map(user)
            .or_else(|| {
                STDLIB
                    .iter()
                    .find(|(lib, _)| *lib == name)
                    .map(|(_, text)| (text.to_string(), true))
            })
            .or_else(|| {
                read(
                    self.env
                        .data_dir
                        .as_deref()
                        .unwrap_or(std::path::Path::new(".")),
                )
                .map(user)
            })
    }

    /// Evaluates a block on a thread with a large stack; a panic becomes an internal error
    /// and the session stays usable.
    fn eval_block_guarded(&mut self, src: &str, block: &CodeBlock) -> Vec<Output> {
        let res = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("dx-eval".into())
                .stack_size(EVAL_STACK_BYTES)
                .spawn_scoped(scope, || {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        self.eval_block(src, block)
                    }))
                })
                .map(|handle| handle.join())
        });
        match res {
            Ok(Ok(Ok(outputs))) => outputs,
            Ok(Ok(Err(panic))) | Ok(Err(panic)) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                vec![Output::Error(Diagnostic::new(
                    Code::Panic,
                    format!("dx panicked: {message}"),
                    None,
                ))]
            }
            Err(err) => vec![internal(format!(
                "could not start the evaluation thread: {err}"
            ))],
        }
    }

    fn eval_block(&mut self, src: &str, block: &CodeBlock) -> Vec<Output> {
        let mut outputs = Vec::new();
        self.more_errors.clear();
        let names = block.decl.defined_names();
        if let Err(diag) = self.check_redefinition(&names) {
            outputs.push(Output::Error(diag));
            return outputs;
        }
        let mut timing = None;
        let mut strict = self.config.strict;
        let mut stages = self.stages.clone();
        for pragma in &block.pragmas {
            match pragma {
                Pragma::Time => timing = Some(None),
                Pragma::Bench(name) => timing = Some(Some(name.clone())),
                Pragma::Strict => strict = true,
                Pragma::NoInline => {}
                Pragma::Passes(names) => {
                    if let Some(unknown) = names
                        .iter()
                        .find(|name| !all_stages().contains(&name.name.as_str()))
                    {
                        outputs.push(Output::Error(unknown_stage(&unknown.name, unknown.span)));
                        return outputs;
                    }
                    stages.extend(names.iter().map(|name| name.name.clone()))
                }
            }
        }
        if let Decl::Command {
            command: Command::Stages,
            expr,
            ..
        } = &block.decl
        {
            if stages_setting(expr).is_none() {
                stages = overview_stages().into_iter().map(String::from).collect();
            }
        }
        if stages.iter().any(|stage| stage == "parse") {
            outputs.push(Output::Stage {
                name: "parse".into(),
                text: crate::syntax::print::print_block(block),
            });
        }
        let cx = BlockCx {
            strict,
            stages,
            bench: timing.clone(),
        };
        let res = match &block.decl {
            Decl::Def(def) => self.define(def),
            Decl::Instance(instance) if instance.named.is_some() => {
                match crate::check::named_instance_def(instance) {
                    Ok(def) => self.define(&def),
                    Err(err) => Err(type_error(&mut self.more_errors, err)),
                }
            }
            Decl::CustomLinearization { func, lin } => {
                match crate::check::custom_linearization_def(&self.env, func, lin) {
                    Ok(def) => self.define(&def),
                    Err(err) => Err(type_error(&mut self.more_errors, err)),
                }
            }
            Decl::Let(binding) => match data_call(&binding.value) {
                Some(call) => self.load_data(binding, &call),
                None => self.eval_let(binding, &cx),
            },
            Decl::Command {
                command: Command::Print,
                expr,
                ..
            } if data_call(expr).is_some() => match data_call(expr) {
                Some(call) => self.save_data(&call, &cx),
                None => Ok(Evaluated::default()),
            },
            Decl::Command {
                command: Command::Stages,
                expr,
                ..
            } if stages_setting(expr).is_some() => {
                // `:stages on core bot` / `:stages off`: a setting, not an expression.
                let stages = stages_setting(expr).unwrap_or_default();
                match stages
                    .iter()
                    .find(|name| !all_stages().contains(&name.as_str()))
                {
                    Some(unknown) => Err(unknown_stage(unknown, expr.span)),
                    None => {
                        self.stages = stages;
                        Ok(Evaluated::default())
                    }
                }
            }
            Decl::Command {
                command: Command::Help,
                expr,
                ..
            } => self.help(expr),
            Decl::Command {
                command: Command::Export,
                expr,
                ..
            } => self.export_command(expr).map(|module| Evaluated {
                outputs: vec![Output::Text(module)],
                ..Default::default()
            }),
            Decl::Command {
                command: Command::Type,
                expr,
                ..
            } => {
                let mut infer = Infer::new(&mut self.env);
                match infer.infer_top_type(expr) {
                    Ok(ty) => Ok(Evaluated {
                        outputs: vec![Output::Type(ty.to_string())],
                        ..Default::default()
                    }),
                    Err(err) => Err(type_error(&mut self.more_errors, err)),
                }
            }
            Decl::Command { command, expr, .. } if rich::is_rich(*command, expr) => {
                self.eval_rich(src, *command, expr, &cx)
            }
            Decl::Command { command, expr, .. } => {
                let mut infer = Infer::new(&mut self.env);
                match infer.infer_top_expr(expr) {
                    Err(err) => Err(type_error(&mut self.more_errors, err)),
                    Ok(texpr) => match command {
                        Command::Type | Command::Help => Ok(Evaluated {
                            outputs: vec![Output::Type(texpr.ty.to_string())],
                            ..Default::default()
                        }),
                        Command::Print | Command::Stages => {
                            self.run_expr(&texpr, &cx).map(|(output, mut evaluated)| {
                                evaluated.outputs.push(output);
                                evaluated
                            })
                        }
                        Command::Plot
                        | Command::PlotGrad
                        | Command::Table
                        | Command::Html
                        | Command::Export => {
                            Err(internal_diagnostic(
                                "`rich::is_rich` takes every rich command, and `:export` has its own arm",
                            ))
                        }
                    },
                }
            }
            Decl::Import(name) => Ok(Evaluated {
                outputs: self.import(&name.name),
                ..Default::default()
            }),
            Decl::Data(data) => {
                let declared = Infer::new(&mut self.env).declare_data(data);
                let declared = declaration(declared, &mut self.more_errors);
                // Its methods are definitions of their own (`Thing.incby`).
                crate::check::struct_method_defs(data)
                    .iter()
                    .fold(declared, |res, def| res.and_then(|_| self.define(def)))
            }
            Decl::Interface(interface) => {
                let declared = Infer::new(&mut self.env).declare_interface(interface);
                declaration(declared, &mut self.more_errors)
            }
            Decl::Instance(instance) => {
                let replace = self.config.redefinition == Redefinition::Replace;
                let declared = Infer::new(&mut self.env).declare_instance(instance, replace);
                declaration(declared, &mut self.more_errors)
            }
            Decl::TypeAlias(alias) => {
                let declared = Infer::new(&mut self.env).declare_alias(alias);
                declaration(declared, &mut self.more_errors)
            }
        };
        match res {
            Ok(evaluated) => {
                self.record_definitions(src, &names);
                outputs.extend(evaluated.outputs);
                if let Some(bench_name) = timing {
                    outputs.push(Output::Timing {
                        bench_name: bench_name.clone(),
                        compile: evaluated.compile,
                        run: evaluated.run,
                        runs: evaluated.runs.filter(|_| bench_name.is_some()),
                    });
                }
            }
            Err(diag) => {
                outputs.push(Output::Error(diag));
                outputs.extend(self.more_errors.drain(..).map(Output::Error));
            }
        }
        outputs
    }

    /// `xs : T = load_npy "file"` (or `load_csv`): reads one table of the declared type.
    fn load_data(
        &mut self,
        binding: &LetBinding,
        call: &DataCall,
    ) -> Result<Evaluated, Diagnostic> {
        let type_error_at =
            |span: Span, message: String| Diagnostic::new(Code::Type, message, Some(span));
        let name = call.op.name();
        let DataOp::Load(format) = call.op else {
            return Err(type_error_at(
                call.span,
                format!(
                    "`{name}` writes a file; use it as a block of its own: `{name} \"file\" xs`"
                ),
            ));
        };
        if call.value.is_some() {
            return Err(type_error_at(
                call.span,
                format!("`{name}` takes only a file name"),
            ));
        }
        let Some(ty_expr) = &binding.ty else {
            return Err(type_error_at(
                binding.span,
                format!("declare the type of the data `{name}` reads, e.g. `xs : (Fin 150)=>(Fin 4)=>Float = {name} \"{}\"`", call.path),
            ));
        };
        if !matches!(binding.pat, Pattern::Var(_)) {
            return Err(type_error_at(
                binding.pat.span(),
                format!("bind what `{name}` reads to one name"),
            ));
        }
        let ty = Infer::new(&mut self.env)
            .infer_top_type_expr(ty_expr)
            .map_err(|err| type_error(&mut self.more_errors, err))?;
        let leaf = match leaf_types(&ty).as_deref() {
            Ok([leaf]) if !ty.contains_fun() => leaf.clone(),
            _ => {
                return Err(type_error_at(
                    ty_expr.span,
                    format!("`{name}` reads one table of numbers, not a value of type {ty}"),
                ))
            }
        };
        let path = self.data_path(&call.path);
        let array = crate::data::load(format, &path, &leaf).map_err(|message| {
            Diagnostic::new(
                Code::File,
                format!("{name} \"{}\": {message}", call.path),
                Some(call.span),
            )
        })?;
        self.bind_top(&binding.pat, &ty, vec![Tensor::from(array)]);
        Ok(Evaluated::default())
    }

    /// `save_npy "file" xs` (or `save_csv`): evaluates `xs` and writes it.
    fn save_data(&mut self, call: &DataCall, cx: &BlockCx) -> Result<Evaluated, Diagnostic> {
        let name = call.op.name();
        let (DataOp::Save(format), Some(value)) = (call.op, call.value) else {
            return Err(Diagnostic::new(
                Code::Type,
                format!("`{name}` needs a file name and a table: `{name} \"file\" xs`"),
                Some(call.span),
            ));
        };
        let texpr = Infer::new(&mut self.env)
            .infer_top_expr(value)
            .map_err(|err| type_error(&mut self.more_errors, err))?;
        let (arrays, _, evaluated) = self.run_to_arrays(&texpr, cx)?;
        let [array] = arrays.as_slice() else {
            return Err(Diagnostic::new(
                Code::Type,
                format!(
                    "`{name}` writes one table of numbers, not a value of type {}",
                    texpr.ty
                ),
                Some(value.span),
            ));
        };
        let path = self.data_path(&call.path);
        crate::data::save(format, &path, array).map_err(|message| {
            Diagnostic::new(
                Code::File,
                format!("{name} \"{}\": {message}", call.path),
                Some(call.span),
            )
        })?;
        Ok(evaluated)
    }

    /// A data file's path: relative paths start from the script's folder.
    fn data_path(&self, path: &str) -> PathBuf {
        match &self.env.data_dir {
            Some(dir) if Path::new(path).is_relative() => dir.join(path),
            _ => PathBuf::from(path),
        }
    }

    /// `:help name`: the name's type and the comment lines written above its definition.
    fn help(&mut self, expr: &crate::syntax::ast::Expr) -> Result<Evaluated, Diagnostic> {
        let crate::syntax::ast::ExprKind::Var(ident) = &expr.kind else {
            return Err(Diagnostic::new(
                Code::Type,
                "`:help` takes a name, e.g. `:help mean`",
                Some(expr.span),
            ));
        };
        let ty = Infer::new(&mut self.env)
            .infer_top_type(expr)
            .map_err(|err| type_error(&mut self.more_errors, err))?;
        let doc = match self.docs.get(&ident.name) {
            Some(doc) => doc.clone(),
            None => match crate::check::builtin_docs::builtin_doc(&ident.name) {
                Some(doc) => format!("{doc}\nA built-in (see docs/language.md)."),
                None => "(no documentation)".to_string(),
            },
        };
        Ok(Evaluated {
            outputs: vec![Output::Text(format!("{} : {ty}\n{doc}", ident.name))],
            ..Default::default()
        })
    }

    /// In a script, a name may be defined once (as in Dex).
    fn check_redefinition(&self, names: &[&Ident]) -> Result<(), Diagnostic> {
        if self.config.redefinition == Redefinition::Replace || self.loading_libraries > 0 {
            return Ok(());
        }
        for ident in names {
            if let Some(line) = self.defined_at.get(&ident.name) {
                return Err(Diagnostic::new(
                    Code::Type,
                    format!(
                        "`{}` is already defined on line {line}; a script defines each name once",
                        ident.name
                    ),
                    Some(ident.span),
                ));
            }
        }
        Ok(())
    }

    fn record_definitions(&mut self, src: &str, names: &[&Ident]) {
        if self.loading_libraries > 0 {
            return;
        }
        for ident in names {
            let start = (ident.span.start as usize).min(src.len());
            let line = src.as_bytes()[..start]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            self.defined_at.insert(ident.name.clone(), line);
        }
    }

    /// A `def` (or the definition a named instance stands for): checked and put in scope.
    fn define(&mut self, def: &crate::syntax::ast::FunDef) -> Result<Evaluated, Diagnostic> {
        match Infer::new(&mut self.env).infer_top_def(def) {
            Ok(info) => {
                self.env.define(&def.name.name, info);
                Ok(Evaluated::default())
            }
            Err(err) => Err(type_error(&mut self.more_errors, err)),
        }
    }

    fn eval_let(&mut self, binding: &LetBinding, cx: &BlockCx) -> Result<Evaluated, Diagnostic> {
        let mut infer = Infer::new(&mut self.env);
        if let Some(alias) = infer.try_alias(binding) {
            alias.map_err(|err| type_error(&mut self.more_errors, err))?;
            return Ok(Evaluated::default());
        }
        let (pat, texpr) = infer
            .infer_top_let(binding)
            .map_err(|err| type_error(&mut self.more_errors, err))?;
        if texpr.ty.contains_fun() {
            // A value holding functions: each name becomes a definition, inlined where it is
            // used (`(y, pullback) = vjp f x` projects its part of the value there).
            for (local, name, ty) in pat.vars(&texpr.ty) {
                let body = match &pat {
                    TPat::Var(..) => texpr.clone(),
                    _ => TExpr {
                        kind: TKind::Block {
                            stmts: vec![TStmt::Let {
                                pat: pat.clone(),
                                value: texpr.clone(),
                            }],
                            result: Box::new(TExpr {
                                kind: TKind::Local(local),
                                ty: ty.clone(),
                                span: binding.span,
                            }),
                        },
                        ty: ty.clone(),
                        span: binding.span,
                    },
                };
                let info = DefInfo {
                    name: name.clone(),
                    vars: Vec::new(),
                    implicit: Vec::new(),
                    ty,
                    span: binding.span,
                    body,
                    nullary: false,
                };
                self.env.define(&name, info);
            }
            return Ok(Evaluated::default());
        }
        let (tensors, ty, evaluated) = self.run_to_tensors(&texpr, cx)?;
        self.bind_top(&binding.pat, &ty, tensors);
        Ok(evaluated)
    }

    /// Binds the names of a top-level pattern to parts of a value.
    fn bind_top(&mut self, pat: &Pattern, ty: &Ty, tensors: Vec<Tensor>) {
        match (pat, ty) {
            (Pattern::Var(ident), _) => {
                self.env.unbind(&ident.name);
                // Note [Static leaves of top-level values]
                // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
                // A top-level value is computed before any later block is compiled, so its
                // `Nat`s are constants there: `Fin numPix` of a top-level `numPix`, and
                // `Fin camera.numPix` of a field, read as a size, also through a function's
                // parameter (`take_picture camera` where it uses `Fin c.numPix`). Each `Nat`
                // that is not inside a table is kept under its leaf name (`camera.numPix`).
                for (leaf, tensor) in scalar_leaves(ty, &ident.name).into_iter().zip(&tensors) {
                    if let (Some(true), Some(crate::core::ir::Scalar::U32(n))) =
                        (leaf.scalar.map(|ty| ty == Ty::nat()), tensor.as_scalar())
                    {
                        self.env.static_nats.insert(leaf.name, n as u64);
                    }
                }
                self.env.values.insert(ident.name.clone(), ty.clone());
                let replaced = self
                    .values
                    .insert(ident.name.clone(), (ty.clone(), tensors));
                // The buffers of the value the name held serve the next kernel outputs.
                for tensor in replaced.into_iter().flat_map(|(_, tensors)| tensors) {
                    crate::exec::pool::give(tensor);
                }
            }
            (Pattern::Tuple(pats, _), Ty::Tuple(items)) => {
                let mut rest = tensors.into_iter();
                for (pat, item) in pats.iter().zip(items) {
                    let count = leaf_types(item).map(|leaves| leaves.len()).unwrap_or(0);
                    let part: Vec<Tensor> = rest.by_ref().take(count).collect();
                    self.bind_top(pat, item, part);
                }
            }
            (Pattern::Table(pats, _), Ty::Table(_, elem)) => {
                for (position, pat) in pats.iter().enumerate() {
                    let rows: Vec<Tensor> =
                        tensors.iter().map(|tensor| tensor.row(position)).collect();
                    self.bind_top(pat, elem, rows);
                }
            }
            // A constructor pattern of a type with one constructor: its fields, as a tuple's.
            (Pattern::Con { args, span, .. }, Ty::Data(data)) if !data.def.is_tagged() => {
                let fields = Pattern::Tuple(args.clone(), *span);
                self.bind_top(&fields, &Ty::Tuple(data.fields(0)), tensors);
            }
            _ => {}
        }
    }

    /// Compiles and runs an expression; returns its printed value, as a grid too when it is
    /// 2-D (a notebook shows it as a table).
    fn run_expr(&mut self, texpr: &TExpr, cx: &BlockCx) -> Result<(Output, Evaluated), Diagnostic> {
        let (value, evaluated) = self.run_display(texpr, cx)?;
        let text = format_value(&value, self.config.summarise_tables);
        // The grid is a second view (a notebook's HTML table): summarised even where the text
        // is whole, so that it costs little next to the text.
        let grid = match rich::is_vector(&value) {
            true => None,
            false => crate::display::Grid::from_value(&value, true),
        };
        let output = match grid {
            Some(grid) => Output::Table { text, grid },
            None => Output::Value(text),
        };
        Ok((output, evaluated))
    }

    /// Compiles and runs an expression; returns its value arranged for display.
    fn run_display(
        &mut self,
        texpr: &TExpr,
        cx: &BlockCx,
    ) -> Result<(DisplayValue, Evaluated), Diagnostic> {
        if texpr.ty.contains_fun() {
            return Err(Diagnostic::new(
                Code::Type,
                format!(
                    "a function cannot be printed (its type is {}); use `:t` to see its type",
                    texpr.ty
                ),
                Some(texpr.span),
            ));
        }
        let (arrays, ty, evaluated) = self.run_to_arrays(texpr, cx)?;
        let value = to_display(
            &ty,
            &arrays
                .iter()
                .map(|array| (array, 0usize, 0usize))
                .collect::<Vec<_>>(),
        );
        Ok((value, evaluated))
    }

    /// Compiles and runs an expression; returns its leaves as core row-major arrays.
    fn run_to_arrays(
        &mut self,
        texpr: &TExpr,
        cx: &BlockCx,
    ) -> Result<(Vec<Array>, Ty, Evaluated), Diagnostic> {
        let (tensors, ty, evaluated) = self.run_to_tensors(texpr, cx)?;
        Ok((
            tensors.into_iter().map(Tensor::into_array).collect(),
            ty,
            evaluated,
        ))
    }

    /// Compiles and runs an expression (timing it under `%bench`, recording the stages asked
    /// for); returns its leaves as the engine left them (see `settle`).
    fn run_to_tensors(
        &mut self,
        texpr: &TExpr,
        cx: &BlockCx,
    ) -> Result<(Vec<Tensor>, Ty, Evaluated), Diagnostic> {
        let mut evaluated = Evaluated::default();
        let compile_start = Instant::now();
        let Compiled {
            core,
            result_ty,
            inputs,
            input_names,
            piped,
            sites,
        } = self.compile(texpr, &cx.stages)?;
        evaluated.compile = compile_start.elapsed();
        for stage in cx
            .stages
            .iter()
            .filter(|stage| !["parse", "run"].contains(&stage.as_str()))
        {
            let text = match stage.as_str() {
                "typed" => {
                    crate::check::print::print_typed(texpr, &|local| self.env.local_name(local))
                }
                "core" => core.to_string(),
                other if other == crate::export::STAGE => {
                    // The inputs (the session's values) stay parameters of `@main`; a comment
                    // says which values they hold (tools that run the module read it).
                    let params = vec![Input::Param; piped.program.inputs.len()];
                    match crate::export::stablehlo::module(&piped.program, &params) {
                        Ok(module) if input_names.is_empty() => module,
                        Ok(module) => format!(
                            "// @main's parameters: {}\n{module}",
                            parameter_names(&input_names)
                        ),
                        Err(err) => err.to_string(),
                    }
                }
                other => {
                    let texts: Vec<&str> = piped
                        .stages
                        .iter()
                        .filter(|dump| dump.stage == other)
                        .map(|dump| dump.text.as_str())
                        .collect();
                    match other {
                        _ if !texts.is_empty() => texts.join("\n"),
                        _ if crate::passes::derivatives::STEPS
                            .iter()
                            .any(|step| step.name == other) =>
                        {
                            "(no derivative is taken in this block)".to_string()
                        }
                        _ => format!("(the `{other}` stage is not available yet)"),
                    }
                }
            };
            evaluated.outputs.push(Output::Stage {
                name: stage.clone(),
                text,
            });
        }
        let program = piped.program;
        let schedule = piped.schedule;
        let pass_times = piped.times;
        let engine = match self.config.engine {
            // Strict out-of-range errors come in the interpreter's order only from the bulk
            // evaluator (its Note [Strict errors in bulk]).
            Engine::Fused if cx.strict => Engine::Bulk,
            engine => engine,
        };
        let interrupt = Some(self.interrupt.clone());
        let progress = self.progress.clone();
        // `%bench` runs the block many times: what its first run compiles, the others reuse.
        let prepared = schedule
            .as_ref()
            .map(|schedule| crate::exec::Prepared::new(&program, schedule));
        let run = || -> Result<(Vec<Tensor>, RunReport, Vec<Duration>), InterpError> {
            match engine {
                Engine::Fused => {
                    let config = ExecConfig {
                        strict: false,
                        compile_loops: compile_loops(),
                        interrupt: interrupt.clone(),
                        progress: Some(progress.clone()),
                        ..ExecConfig::default()
                    };
                    let prepared = prepared.as_ref().expect("the pipeline ends with `fuse`");
                    let (tensors, report) = prepared.run(inputs.clone(), &config)?;
                    let run_report = RunReport {
                        engine,
                        statements: report.statements,
                        kernels: report.kernels,
                        matmuls: report.matmuls,
                        build1_fallbacks: report.build1_fallbacks,
                    };
                    Ok((settle(tensors, &inputs), run_report, report.step_times))
                }
                Engine::Bulk => {
                    let config = ExecConfig {
                        strict: cx.strict,
                        compile_loops: compile_loops(),
                        interrupt: interrupt.clone(),
                        progress: Some(progress.clone()),
                        ..ExecConfig::default()
                    };
                    let (tensors, report) =
                        crate::exec::run_tensors(&program, inputs.clone(), &config)?;
                    let report = RunReport {
                        engine,
                        statements: report.statements,
                        kernels: 0,
                        matmuls: 0,
                        build1_fallbacks: report.build1_fallbacks,
                    };
                    Ok((settle(tensors, &inputs), report, Vec::new()))
                }
                Engine::Reference => {
                    let config = InterpConfig {
                        strict: cx.strict,
                        interrupt: interrupt.clone(),
                    };
                    let inputs: Vec<Array> = inputs.iter().map(Tensor::to_array).collect();
                    let arrays = interp::run(&program, &inputs, &config)?;
                    Ok((
                        arrays.into_iter().map(Tensor::from).collect(),
                        RunReport {
                            engine,
                            statements: 0,
                            kernels: 0,
                            matmuls: 0,
                            build1_fallbacks: 0,
                        },
                        Vec::new(),
                    ))
                }
            }
        };
        let show_run = cx.stages.iter().any(|stage| stage == "run");
        let bench = cx.bench.as_ref().is_some_and(Option::is_some);
        // The block's runs start on a thread of the pool, which hands the block over once,
        // not once a kernel (Note [One hand-off a run] in `exec`).
        let runs = crate::exec::on_pool(|| -> Result<_, InterpError> {
            let run_start = Instant::now();
            let first = run()?;
            let first_time = run_start.elapsed();
            let mut times = Vec::new();
            let mut runs_steps = Vec::new();
            let bench_start = Instant::now();
            while bench && (times.len() < 5 || bench_start.elapsed() < Duration::from_secs(1)) {
                let start = Instant::now();
                let (tensors, _, steps) = run()?;
                times.push(start.elapsed());
                if show_run {
                    runs_steps.push(steps);
                }
                // As a program called again would: this run's results are dropped, and their
                // buffers serve the next run's outputs (`exec::pool`).
                tensors.into_iter().for_each(crate::exec::pool::give);
            }
            Ok((first, first_time, times, runs_steps))
        });
        let ((tensors, report, mut step_times), first_time, times, runs_steps) =
            runs.map_err(|err| runtime_error(err, &program))?;
        evaluated.run = first_time;
        self.last_run = Some(report);
        if bench {
            evaluated.runs = Some(times.len());
            evaluated.run = median(times);
            // The `run` stage of a timed block shows each step's median over the timed runs,
            // not the first run's (cold caches, fresh pages).
            if show_run {
                step_times = median_steps(&runs_steps);
            }
        }
        if show_run {
            let text = match (&schedule, engine) {
                (Some(schedule), Engine::Fused) => {
                    run_stage::render(&program, schedule, &pass_times, &step_times, evaluated.runs)
                }
                _ => format!(
                    "(the `run` stage profiles the fused engine; this block ran on the {} in {})",
                    engine.name(),
                    format_duration(evaluated.run)
                ),
            };
            evaluated.outputs.push(Output::Stage {
                name: "run".to_string(),
                text,
            });
        }
        let mut tensors = tensors;
        // Note [The print log] in `passes/lower_effects.rs`: its number of lines, the site of
        // each line, and the texts of the prints with computed texts.
        let buffers = crate::passes::lower_effects::print_buffers(&sites);
        let log = match sites.iter().any(|site| site.kind == SiteKind::Print) {
            true => tensors.split_off(tensors.len() - 2 - 2 * buffers.len()),
            false => Vec::new(),
        };
        // The first texts of the `error`s with computed texts: each a `List Char`, its length
        // and its characters.
        let n_texts = sites
            .iter()
            .filter(|site| site.kind == SiteKind::Error && site.text_cell.is_some())
            .count();
        let mut texts = tensors.split_off(tensors.len() - 2 * n_texts).into_iter();
        let counts = tensors.split_off(tensors.len() - sites.len());
        // Note [Runtime errors]: the first `error` reached stops the block.
        for (site, count) in sites.iter().zip(counts) {
            if site.kind != SiteKind::Error {
                continue;
            }
            let mut message = site.text.clone();
            if site.text_cell.is_some() {
                let chars = texts.nth(1).map(|chars| chars.to_array());
                message.push_str(&chars.map_or_else(String::new, |chars| {
                    computed_text(&chars, 0, chars.data.len())
                }));
            }
            if count
                .to_array()
                .as_scalar()
                .and_then(|count| count.int_value())
                > Some(0)
            {
                return Err(Diagnostic::new(Code::Runtime, message, Some(site.span)));
            }
        }
        if let [count, lines, buffer_tensors @ ..] = log.as_slice() {
            let count = count.to_array().as_scalar().and_then(|n| n.int_value());
            let count = count.unwrap_or(0).max(0) as usize;
            let lines = lines.to_array();
            let chars: Vec<Array> = buffer_tensors
                .iter()
                .skip(1)
                .step_by(2)
                .map(|chars| chars.to_array())
                .collect();
            for line in 0..count.min(PRINT_LOG_LINES) {
                let site = lines.data.get(line).int_value().unwrap_or(0).max(0) as usize;
                let Some(site) = sites.get(site) else {
                    continue;
                };
                let mut text = site.text.clone();
                let buffer = site
                    .text_cell
                    .and_then(|cell| buffers.iter().position(|&other| other == cell));
                if let Some(chars) = buffer.and_then(|buffer| chars.get(buffer)) {
                    let width = chars.shape.get(1..).map_or(1, |rest| rest.iter().product());
                    text.push_str(&computed_text(chars, line * width, width));
                }
                evaluated.outputs.push(Output::Text(text));
            }
            if count > PRINT_LOG_LINES {
                let more = count - PRINT_LOG_LINES;
                evaluated.outputs.push(Output::Text(format!(
                    "(and {more} more printed line{}, not kept)",
                    if more == 1 { "" } else { "s" }
                )));
            }
        }
        Ok((tensors, result_ty, evaluated))
    }

    /// A top-level value as lowering sees it: its type and the types of its arrays.
    fn global_value(&self, name: &str) -> Option<GlobalValue<'_>> {
        self.values.get(name).map(|(ty, tensors)| GlobalValue {
            ty,
            leaves: tensors
                .iter()
                .map(|tensor| crate::core::ir::ArrTy::new(tensor.shape().to_vec(), tensor.elem()))
                .collect(),
            arrays: Some(Box::new(|| tensors.iter().map(Tensor::to_array).collect())),
        })
    }

    /// Lowers a checked expression and runs the pipeline on it, recording the stages in
    /// `wanted`.
    fn compile(&self, texpr: &TExpr, wanted: &[String]) -> Result<Compiled, Diagnostic> {
        let lookup = |name: &str| self.global_value(name);
        let mut lowerer = Lowerer::new(&self.env, &lookup);
        lowerer.lower_main(texpr).map_err(lower_error)?;
        // The sizes of the block's own values (`n = c.numPix`, `Fin n`) are constants now.
        let result_ty = match lowerer.concrete(&texpr.ty, texpr.span) {
            Ok(ty) => ty,
            // A size of the value that lowering cannot tell would print it wrongly.
            Err(err) if has_local_size(&texpr.ty) => return Err(lower_error(err)),
            Err(_) => texpr.ty.clone(),
        };
        let sites = lowerer.runtime_sites();
        let inputs: Vec<Tensor> = lowerer
            .inputs
            .iter()
            .flat_map(|(name, _)| self.values[name].1.iter().cloned())
            .collect();
        let input_names = lowerer
            .inputs
            .iter()
            .map(|(name, vars)| (name.clone(), vars.len()))
            .collect();
        let core = lowerer.program;
        let piped = pipeline::run(&core, PIPELINE, wanted).map_err(ice)?;
        Ok(Compiled {
            core,
            result_ty,
            inputs,
            input_names,
            piped,
            sites,
        })
    }
}

/// Whether a type has a size that a local of the block gives (`Fin n` for `n = …`).
fn has_local_size(ty: &Ty) -> bool {
    ty.any(&mut |inner| matches!(inner, Ty::Fin(size) if size.any_local(&mut |_| true)))
}

/// The diagnostic of a parse error.
pub(crate) fn parse_error(err: &crate::syntax::ParseError) -> Diagnostic {
    use crate::syntax::ParseErrorKind;
    let code = match err.kind {
        ParseErrorKind::Syntax => Code::Syntax,
        ParseErrorKind::Incomplete => Code::Incomplete,
        ParseErrorKind::Internal => Code::ParserBug,
    };
    Diagnostic::new(code, err.message.clone(), Some(err.span))
}

/// The error for a stage name `%passes` or `:stages on` does not know.
fn unknown_stage(name: &str, span: crate::syntax::Span) -> Diagnostic {
    Diagnostic::new(
        Code::UnknownStage,
        format!(
            "unknown stage `{name}`; the stages are {}",
            all_stages().join(" ")
        ),
        Some(span),
    )
}

/// Every stage a block can show, in order: the front end's, then the pipeline's (the steps
/// inside its passes too), then the run.
fn all_stages() -> Vec<&'static str> {
    block_stages(pipeline::stages())
}

/// The stages `:stages expr` shows: those of [`all_stages`] but the steps inside passes.
fn overview_stages() -> Vec<&'static str> {
    block_stages(pipeline::overview_stages())
}

/// The front end's stages, then `pipeline`'s, then the run.
fn block_stages(pipeline: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
    ["parse", "typed", "core"]
        .into_iter()
        .chain(pipeline)
        .chain(["run"])
        .collect()
}

/// Reads `on stage…` / `off` after `:stages`.
fn stages_setting(expr: &crate::syntax::ast::Expr) -> Option<Vec<String>> {
    use crate::syntax::ast::ExprKind;
    let (head, args) = expr.spine();
    let names = args
        .iter()
        .map(|arg| match &arg.kind {
            ExprKind::Var(ident) => Some(ident.name.clone()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()?;
    match &head.kind {
        ExprKind::Var(ident) if ident.name == "off" && names.is_empty() => Some(Vec::new()),
        ExprKind::Var(ident) if ident.name == "on" => Some(names),
        _ => None,
    }
}

/// `x, params (4 arrays)`: the values behind `@main`'s parameters, in order.
fn parameter_names(names: &[(String, usize)]) -> String {
    names
        .iter()
        .map(|(name, n_arrays)| match n_arrays {
            1 => name.clone(),
            n => format!("{name} ({n} arrays)"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A compiled block: its core IR, what the pipeline made of it, and the values of its inputs.
struct Compiled {
    core: Program,
    /// The block's type with the sizes its own values give made constants.
    result_ty: Ty,
    inputs: Vec<Tensor>,
    /// The session values the inputs hold, in order, with their number of arrays.
    input_names: Vec<(String, usize)>,
    piped: pipeline::Compiled,
    /// The block's `error` and `print` calls, whose counts are the program's last results.
    sites: Vec<crate::passes::lower_effects::Site>,
}

/// One expression (source text) parsed, or its parse error.
fn parse_expr(expr_src: &str) -> Result<crate::syntax::ast::Expr, Diagnostic> {
    crate::syntax::parse_expr(expr_src).map_err(|err| parse_error(&err))
}

/// An internal compiler error as the user sees it (the session stays usable).
fn ice(ice: Ice) -> Diagnostic {
    Diagnostic {
        ice: Some(Box::new(ice.clone())),
        ..Diagnostic::new(Code::Ice, ice.to_string(), None)
    }
}

/// Per-block settings from pragmas.
#[derive(Clone, Debug)]
struct BlockCx {
    strict: bool,
    stages: Vec<String>,
    bench: Option<Option<String>>,
}

/// What evaluating a block produced, with its timings.
#[derive(Default)]
struct Evaluated {
    outputs: Vec<Output>,
    compile: Duration,
    run: Duration,
    runs: Option<usize>,
}

fn internal_diagnostic(message: &str) -> Diagnostic {
    Diagnostic::new(Code::Internal, message.to_string(), None)
}

fn internal(message: String) -> Output {
    Output::Error(Diagnostic::new(Code::Internal, message, None))
}

/// The diagnostic of a type error; the declaration's other errors go to `more`.
/// A declaration's outcome as a block's: nothing to show, or its type error (`type_error`).
fn declaration(
    declared: Result<(), TypeError>,
    more: &mut Vec<Diagnostic>,
) -> Result<Evaluated, Diagnostic> {
    declared
        .map(|()| Evaluated::default())
        .map_err(|err| type_error(more, err))
}

fn type_error(more: &mut Vec<Diagnostic>, err: TypeError) -> Diagnostic {
    let diagnostic = |err: TypeError| Diagnostic {
        labels: err.labels,
        ..Diagnostic::new(err.kind, err.message, Some(err.span))
    };
    more.extend(err.also.into_iter().map(diagnostic));
    diagnostic(TypeError {
        also: Vec::new(),
        ..err
    })
}

/// A lowering error: the user's (with its span) or dx's (an internal error in `lower`).
fn lower_error(err: LowerError) -> Diagnostic {
    match err.kind {
        LowerErrorKind::Unsupported => {
            Diagnostic::new(Code::Unsupported, err.message, Some(err.span))
        }
        LowerErrorKind::File => Diagnostic::new(Code::File, err.message, Some(err.span)),
        // A bug in dx, found before there is IR to show: the span is the useful part.
        LowerErrorKind::Bug => Diagnostic::new(
            Code::LowerBug,
            format!("`{}`: {}", pipeline::LOWER, err.message),
            Some(err.span),
        ),
    }
}

fn runtime_error(err: InterpError, program: &Program) -> Diagnostic {
    let (code, span) = match &err {
        InterpError::OutOfRange { var, .. } => {
            (Code::Runtime, program.source_map.get(var).copied())
        }
        InterpError::TooLarge { var, .. } => {
            (Code::OutOfMemory, program.source_map.get(var).copied())
        }
        InterpError::Interrupted => (Code::Interrupted, None),
    };
    let message = match &err {
        InterpError::OutOfRange { index, shape, .. } => {
            format!("index {index:?} is out of range for a table of shape {shape:?}")
        }
        InterpError::TooLarge {
            op,
            shape,
            bytes,
            available,
            ..
        } => format!(
            "not enough memory: `{op}` would allocate {} for a table of shape {shape:?}, but \
             only {} is available",
            crate::ops::interp::format_bytes(*bytes),
            crate::ops::interp::format_bytes(u128::from(*available))
        ),
        InterpError::Interrupted => "interrupted".to_string(),
    };
    Diagnostic::new(code, message, span)
}

/// A call of a data built-in at the top of a block: `load_npy "file"`, `save_csv "file" xs`.
struct DataCall<'a> {
    op: DataOp,
    path: String,
    /// The table to write (saves only).
    value: Option<&'a crate::syntax::ast::Expr>,
    span: Span,
}

/// Recognises `op "file"` and `op "file" value` (also written `op("file", value)`).
fn data_call(expr: &crate::syntax::ast::Expr) -> Option<DataCall<'_>> {
    use crate::syntax::ast::{ExprKind, Lit};
    let ExprKind::App {
        func,
        arg,
        name: None,
    } = &expr.kind
    else {
        return None;
    };
    let (head, path_arg, value) = match &func.kind {
        ExprKind::App {
            func: head,
            arg: path_arg,
            name: None,
        } => (&**head, &**path_arg, Some(&**arg)),
        _ => (&**func, &**arg, None),
    };
    let (ExprKind::Var(ident), ExprKind::Lit(Lit::Str(path))) = (&head.kind, &path_arg.kind) else {
        return None;
    };
    Some(DataCall {
        op: DataOp::from_name(&ident.name)?,
        path: path.clone(),
        value,
        span: expr.span,
    })
}

/// The text of comment lines without their `--` or `#` markers (one space after the marker is
/// dropped too).
fn doc_text(comment: &str) -> String {
    comment
        .lines()
        .map(|line| {
            let line = line.trim_end();
            let text = line
                .strip_prefix("--")
                .or_else(|| line.strip_prefix('#'))
                .unwrap_or(line);
            text.strip_prefix(' ').unwrap_or(text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Groups the arrays of a value by its tuple structure (tables of tuples are tuples of
/// tables).
fn structure(ty: &Ty, arrays: Vec<Array>) -> Value {
    fn go(ty: &Ty, arrays: &mut std::vec::IntoIter<Array>) -> Value {
        match ty {
            Ty::Tuple(items) => Value::Tuple(items.iter().map(|item| go(item, arrays)).collect()),
            Ty::Data(data) => go(&data.repr(), arrays),
            Ty::Table(_, elem) if matches!(**elem, Ty::Tuple(_) | Ty::Table(..)) => {
                go(elem, arrays)
            }
            _ => Value::Array(arrays.next().expect("one array per leaf of the type")),
        }
    }
    go(ty, &mut arrays.into_iter())
}

/// The results of a run as the session keeps them. A result that is one of the block's
/// inputs unchanged (`grad` of a linear function hands back a session value) stays that
/// value, sharing its buffer: values are immutable, so a copy would only cost time and
/// memory. Any other result becomes a row-major array that owns its buffer alone (a view
/// into a bigger buffer is copied out, so that it does not keep the whole buffer alive).
fn settle(results: Vec<Tensor>, inputs: &[Tensor]) -> Vec<Tensor> {
    results
        .into_iter()
        .map(
            |result| match inputs.iter().any(|input| input.is_same_array(&result)) {
                true => result,
                false => Tensor::from(result.into_array()),
            },
        )
        .collect()
}

/// Arranges the arrays of a value for printing, following its type. Each leaf is an array,
/// the flat offset of the current sub-array in it, and how many of its axes are consumed.
fn to_display(ty: &Ty, leaves: &[(&Array, usize, usize)]) -> DisplayValue {
    display_at(ty, leaves, &[])
}

/// `to_display` inside tables whose rows are at positions `rows` (outermost first): a table
/// over a range of an enclosing table's index shows the range's elements, not its padding
/// (Note [Ranges]).
fn display_at(ty: &Ty, leaves: &[(&Array, usize, usize)], rows: &[usize]) -> DisplayValue {
    match ty {
        Ty::Tuple(items) => DisplayValue::Tuple(display_parts(items, leaves, rows)),
        Ty::Table(ix, elem) => {
            let padded = crate::passes::lower::ix_size(ix).unwrap_or(0);
            let size = match &**ix {
                Ty::Range {
                    kind,
                    bound: crate::check::types::Bound::Outer(k, _),
                    ..
                } => match rows.len().checked_sub(1 + *k as usize) {
                    Some(at) => range_len(*kind, rows[at], padded),
                    None => padded,
                },
                _ => padded,
            };
            let items = (0..size)
                .map(|position| {
                    let sub: Vec<(&Array, usize, usize)> = leaves
                        .iter()
                        .map(|(array, offset, axis)| {
                            let row_len: usize = array.shape[axis + 1..].iter().product();
                            (*array, offset + position * row_len, axis + 1)
                        })
                        .collect();
                    let mut inner_rows = rows.to_vec();
                    inner_rows.push(position);
                    display_at(elem, &sub, &inner_rows)
                })
                .collect();
            DisplayValue::Table(items)
        }
        // See Note [Data representation]: the tag, then every constructor's fields.
        Ty::Data(data) => {
            let (con, mut rest) = match data.def.is_tagged() {
                false => (0, leaves),
                true => {
                    let tag = match leaves.first() {
                        Some((array, offset, _)) => array.data.get(*offset).int_value(),
                        None => None,
                    };
                    let con = tag
                        .map_or(0, |tag| tag as usize)
                        .min(data.def.cons.len() - 1);
                    let mut rest = leaves.get(1..).unwrap_or_default();
                    for other in 0..con {
                        let count = n_leaves(&Ty::Tuple(data.fields(other))).min(rest.len());
                        rest = &rest[count..];
                    }
                    (con, rest)
                }
            };
            let fields = data.fields(con);
            let count = n_leaves(&Ty::Tuple(fields.clone())).min(rest.len());
            rest = &rest[..count];
            let name = data.def.cons[con].name.clone();
            let parts = display_parts(&fields, rest, rows);
            // A string (the prelude's `List Char`, `Char` being `Word8`) prints as one: `"abc"`.
            match (data.def.name.as_str(), data.args.first(), parts.get(1)) {
                ("List", Some(Ty::Base(BaseTy::Word8)), Some(DisplayValue::Table(chars))) => {
                    DisplayValue::Text(string_text(chars))
                }
                _ if data.def.kind == crate::check::data::DataKind::Struct => {
                    DisplayValue::Struct(name, parts)
                }
                _ => DisplayValue::Con(name, parts),
            }
        }
        _ => {
            let (array, offset, _) = leaves[0];
            let scalar = array.data.get(offset);
            match ty {
                Ty::Base(BaseTy::Word8) => DisplayValue::Text(char_text(scalar)),
                Ty::Base(base) if base.is_word() => {
                    DisplayValue::Text(format!("0x{:x}", scalar.bits()))
                }
                _ => DisplayValue::Scalar(scalar),
            }
        }
    }
}

/// The parts of a tuple or the fields of a constructor, each from its leaves in order.
fn display_parts(
    items: &[Ty],
    leaves: &[(&Array, usize, usize)],
    rows: &[usize],
) -> Vec<DisplayValue> {
    let mut rest = leaves;
    let mut out = Vec::new();
    for item in items {
        let count = n_leaves(item).min(rest.len());
        out.push(display_at(item, &rest[..count], rows));
        rest = &rest[count..];
    }
    out
}

/// The number of elements of a range of the index at position `bound` of a set of `total`.
fn range_len(kind: crate::check::types::RangeKind, bound: usize, total: usize) -> usize {
    use crate::check::types::RangeKind;
    match kind {
        RangeKind::UpTo => (bound + 1).min(total),
        RangeKind::Before => bound.min(total),
        RangeKind::From => total.saturating_sub(bound),
        RangeKind::After => total.saturating_sub(bound + 1),
    }
}

fn n_leaves(ty: &Ty) -> usize {
    leaf_types(ty).map(|leaves| leaves.len()).unwrap_or(0)
}

/// The text of a character table computed by a program, its unused places (`'\x00'`, Note
/// [Texts of run-time values]) left out.
fn computed_text(chars: &Array, start: usize, len: usize) -> String {
    let bytes: Vec<u8> = (start..(start + len).min(chars.data.len()))
        .filter_map(|offset| chars.data.get(offset).int_value())
        .map(|code| code as u8)
        .filter(|&byte| byte != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A string as Dex prints it: its characters between double quotes, escaped as in source.
fn string_text(chars: &[DisplayValue]) -> String {
    let bytes = chars.iter().filter_map(|item| match item {
        DisplayValue::Text(quoted) => crate::syntax::escape::char_byte(quoted),
        _ => None,
    });
    // The unused places of a `show` are zero bytes (Note [Texts of run-time values]).
    crate::syntax::escape::quoted_bytes(bytes.filter(|&byte| byte != 0))
}

/// A character (a `Word8`) as Dex prints it: `'a'`, `'\n'`, `'\210'`.
fn char_text(scalar: crate::core::ir::Scalar) -> String {
    crate::syntax::escape::quoted_char(scalar.int_value().unwrap_or(0) as u8)
}

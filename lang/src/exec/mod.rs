//! The engine: runs a block's schedule (`run_fused`: the kernels of `fused.rs` over lanes,
//! compiled loops of `jit.rs`/`loop_jit.rs`, faer's matrix products), and, for the statements
//! fusion leaves whole and for `--strict`, the bulk evaluator (`run`), which runs core IR one
//! bulk operation at a time on ndarray + rayon. What follows is about the bulk evaluator.
//!
//! The bulk evaluator is the engine's first stage (docs/architecture.md, "The engine"): every statement of the bulk IR
//! that the BOT produces (`passes/bot.rs`: elementwise `prim`s over whole arrays, `sumOuter`,
//! `gather`/`scatter` with scalar index functions, `index`, tables, `replicate`, `tr`,
//! `reshape`, `iota`, `cond`, `fold`, `scan`) becomes one whole-array operation on
//! `tensor::Tensor` values (`ArcArray`s, so sharing a variable is cheap). Fusion comes later.
//!
//! Assumes: the program is verified (`ops::verify`) and `inputs` match `program.inputs` in
//! number and type; a violated assumption is a caller bug and panics with a message saying so.
//! Unlike the verifier, `prim` operands of rank 0 broadcast against the others (the BOT emits
//! that for literals and unbatched scalars).
//!
//! Guarantees: the results equal `ops::interp`'s exactly, errors included (see
//! Note [Strict errors in bulk]). `sumOuter` adds in dx's summation order (`reduce.rs`, the
//! tree of `prim::sum_order`) and `scatter` collisions in index order, as the interpreter
//! does, so float results agree bit for bit, on any number of threads. The interrupt flag is checked before every
//! statement (at every nesting level) and once per iteration of `build1`, `fold`, `scan` and
//! per point of a per-point index function (every `scalar_loop::INTERRUPT_PERIOD`
//! iterations of a loop on scalars).
//!
//! A `fold` or `scan` whose body holds only scalars runs on scalar registers instead of
//! arrays (`scalar_loop`), counted in `ExecReport::scalar_loops`.
//!
//! Memory: a value is dropped after its last use, and an elementwise `prim` writes its result
//! into a dead operand's buffer when nothing else shares it (Note [Releasing values]).
//!
//! Index functions (`gather`/`scatter` bodies) run in bulk: see Note [Batched blocks].
//! A body that cannot run batched (it contains `build1`, `gather`, `scatter`, `fold` or `scan`
//! depending on the index) runs per point instead, counted in
//! `ExecReport::index_fn_fallbacks`. `build1` itself is not expected after the BOT; it runs
//! per index and is counted in `ExecReport::build1_fallbacks`.
//!
//! The fused engine (`fused.rs`) runs kernels and matrix products and hands this evaluator the
//! statements it does not fuse. Does not handle yet: keeping `replicate` as a broadcast view
//! (it is materialised), parallel `scatter`.

// Note [Batched blocks]
// ~~~~~~~~~~~~~~~~~~~~~
// An index function `λ[i…]. ix` of a gather over the leading shape `G` is evaluated once for
// all points of `G`: each param is bound to an `I64` array of shape `G` holding its coordinate
// (an iota grid), and every statement runs in *batch mode*, the runtime reading of the BOT's
// batching rules ([Smeding25] Fig 9): a variable is *batched* (shape `G ++ its declared shape`,
// one value per point) or *unbatched* (its declared shape, the same at every point). A
// statement none of whose operands, nor free variables of its blocks, are batched runs
// normally. A batched `prim` broadcasts its unbatched operands; `index` becomes a row gather;
// `table`, `replicate`, `tr`, `reshape` and `sumOuter` act on the axes after the batch axes;
// `cond` with a batched condition runs both branches, each under a mask of the points that
// take it (a branch that no point takes is skipped), and selects per point.
//
// Note [Releasing values]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A variable of a block (a param, a binder, or an input for `main`) is removed from the
// environment right after the last statement of the block that uses it, directly or in a
// nested block (`dying_vars`); block results are kept. An elementwise `prim` removes its dying
// operands before it runs, so that an operand whose buffer nobody else holds is overwritten
// with the result instead of allocating a new array (`elementwise::map2_same`). Variables
// bound outside the block are never released by it: a loop body runs again.

// Note [Strict errors in bulk]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The interpreter runs an index function point by point in row-major order and, for a
// gather, reads the source right after each point's index function; the first out-of-range
// read stops it. In batch mode every statement runs for all points, so errors are not raised
// but recorded in the `Batch` with the point they happen at, keeping the smallest point and,
// between equal points, the first recorded (statements are recorded in program order, and the
// gather's own read after its body). Only points active under the current mask record
// errors, so an untaken branch never fails. At points before the first failing point every
// value equals the interpreter's, so the recorded error is exactly the one it raises. An
// unbatched statement that fails would fail at every point: it is recorded at the first active
// point, and its binders get zeros (their values can only matter at later points).

mod elementwise;
mod fused;
mod indexing;
mod jit;
pub(crate) mod lanes;
mod loop_blocks;
mod loop_jit;
mod memory;
mod monoid;
mod monoid_jit;
pub mod pool;
pub mod progress;
mod reduce;
mod register_code;
mod scalar_loop;
mod statement;
pub mod tensor;
#[cfg(test)]
mod tests;
mod transpose;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::core::ids::IdVec;
use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Program, Scalar, Stmt, VarId};
use crate::core::kernel::Schedule;
use crate::core::value::{Array, ArrayData};
use crate::core::visit::var_of;
use crate::core::visit::{expr_atoms, expr_blocks};
use crate::ops::bulk::Stop;
use crate::ops::gather_scatter::point_reads;
use crate::ops::interp::InterpError;
use crate::ops::operation;
use indexing::{IndexCol, IntCol, Rows};
use scalar_loop::{CompiledLoop, LoopRun};
use statement::StmtRun;
use tensor::{from_vec, replicate, stack, standard_slice, Tensor};

/// Arrays with at least this many elements are processed in parallel.
pub const PAR_THRESHOLD: usize = 32 * 1024;
/// The smallest piece of work handed to one rayon task.
pub const MIN_CHUNK: usize = 4096;

/// Runs the engine's parallel work (kernels, matrix products, monoids) on `threads` threads
/// from now on (`dx --threads N`); 0 or no call: rayon's count, `RAYON_NUM_THREADS`, else one
/// per core. Results do not depend on it (Note [Summation order], Note [Monoid order]). Must be
/// called before anything runs; an error says why the pool could not be set.
pub fn set_threads(threads: usize) -> Result<(), String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|index| format!("dx-worker-{index}"))
        .build_global()
        .map_err(|err| err.to_string())
}

/// Runs `run` on a thread of rayon's pool, the caller waiting once for the whole of it (a
/// no-op on a thread of the pool).
///
/// Note [One hand-off a run]: a parallel loop started from a thread outside the pool (the
/// session's `dx-eval` thread) is injected into the pool, wakes a worker and puts the caller
/// to sleep until the loop ends, every time: futex wakes and waits were about a quarter of
/// the samples of the gradient of `maximum` on 10^6 floats (three kernels). A loop started
/// on a worker pushes its halves onto that worker's own deque, and the other worker, idle
/// since the last kernel, is often still spinning. The hand-off itself costs about 10 us
/// here (a block that runs no kernel: 0.55 us on the calling thread, 10 us handed over), so
/// the session hands a block over once, its `%bench` runs included.
pub fn on_pool<R: Send>(run: impl FnOnce() -> R + Send) -> R {
    match rayon::current_thread_index() {
        Some(_) => run(),
        None => rayon::scope(|_| run()),
    }
}

/// How to run the evaluator.
#[derive(Clone, Debug, Default)]
pub struct ExecConfig {
    /// Report out-of-range reads as errors instead of reading zero.
    pub strict: bool,
    /// Which loops of scalars and monoid chunk folds run as machine code (`loop_jit`,
    /// `monoid_jit`).
    pub compile_loops: CompileLoops,
    /// Set from another thread to stop the run with `InterpError::Interrupted`.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Where the run reports how far it has got (`progress`), for another thread to show.
    pub progress: Option<Arc<progress::Progress>>,
    /// Floating-point operations of a matrix-product panel between interrupt checks;
    /// `None`: `fused::PANEL_FLOPS`. Tests make it small so that products run in panels.
    pub panel_flops: Option<usize>,
}

/// Which `fold`s and `scan`s of scalars run their steps as machine code (`loop_jit`) rather
/// than on `register_code`'s register file, which monoid statements with few lanes fold their
/// chunks as machine code (`monoid_jit`) rather than on lanes, and which kernels run as
/// machine code (Note [Compiled kernels] in `fused/compiled.rs`); the results are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompileLoops {
    /// Loops whose body has run `scalar_loop::JIT_MIN_ITERATIONS` steps (monoid operators
    /// that have folded as many elements; small kernels launched `COMPILE_AFTER_LAUNCHES`
    /// times, and large ones where the lanes pay per output, a launch weighing as its
    /// outputs), this run and earlier.
    #[default]
    Long,
    /// Every loop (tests).
    Always,
    Never,
}

impl CompileLoops {
    /// Whether code that has done `work` more steps (loop steps, elements folded) runs as
    /// machine code: with `Long`, once `done` (its count over this run and earlier ones,
    /// updated here) reaches `scalar_loop::JIT_MIN_ITERATIONS`.
    pub(super) fn compiles(self, done: &AtomicUsize, work: usize) -> bool {
        self.compiles_after(done, work, scalar_loop::JIT_MIN_ITERATIONS)
    }

    /// `compiles`, with `Long` waiting for `least` work rather than a loop's.
    pub(super) fn compiles_after(self, done: &AtomicUsize, work: usize, least: usize) -> bool {
        match self {
            CompileLoops::Never => false,
            CompileLoops::Always => true,
            CompileLoops::Long => {
                let before = done.fetch_add(work, Ordering::Relaxed);
                before.saturating_add(work) >= least
            }
        }
    }
}

/// What a run did, for tests that check that a program ran in bulk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecReport {
    /// Statements executed (a statement in a loop body counts once per iteration).
    pub statements: usize,
    /// `build1` statements executed by the per-index fallback.
    pub build1_fallbacks: usize,
    /// `gather`/`scatter` index functions executed point by point instead of in bulk.
    pub index_fn_fallbacks: usize,
    /// `gather`/`scatter` index functions whose indices were taken from the tables they read
    /// (`table_read_columns`), without running them.
    pub index_fns_read: usize,
    /// Fused kernels and matrix products run (by `run_fused`).
    pub kernels: usize,
    pub matmuls: usize,
    /// Row groups run (`Step::Rows`; their kernels count among `kernels`).
    pub row_groups: usize,
    /// `fold`/`scan` statements whose bodies ran on scalar registers (`scalar_loop`).
    pub scalar_loops: usize,
    /// Of those, the loops whose carry-free operations ran a block of iterations at a time
    /// (`loop_blocks`).
    pub blocked_loops: usize,
    /// Of those, the loops whose steps ran as machine code (`loop_jit`).
    pub compiled_loops: usize,
    /// Monoid statements whose chunks were folded as machine code (`monoid_jit`).
    pub compiled_monoids: usize,
    /// Kernel launches that ran as machine code (Note [Compiled kernels] in
    /// `fused/compiled.rs`).
    pub compiled_kernels: usize,
    /// The time each step of the main block's schedule took (by `run_fused`; the `run`
    /// stage derives what the steps moved from the schedule).
    pub step_times: Vec<std::time::Duration>,
}

/// Runs `program` on `inputs` (bound to `program.inputs` in order) and returns the results of
/// `program.main`.
pub fn run(
    program: &Program,
    inputs: &[Array],
    config: &ExecConfig,
) -> Result<Vec<Array>, InterpError> {
    run_with_report(program, inputs, config).map(|(results, _)| results)
}

/// `run`, also returning what the run did.
pub fn run_with_report(
    program: &Program,
    inputs: &[Array],
    config: &ExecConfig,
) -> Result<(Vec<Array>, ExecReport), InterpError> {
    let inputs = inputs.iter().map(Tensor::from_array).collect();
    let (results, report) = run_tensors(program, inputs, config)?;
    Ok((
        results.into_iter().map(Tensor::into_array).collect(),
        report,
    ))
}

/// `run_with_report` on engine values (no conversion of inputs or results).
pub fn run_tensors(
    program: &Program,
    inputs: Vec<Tensor>,
    config: &ExecConfig,
) -> Result<(Vec<Tensor>, ExecReport), InterpError> {
    run_inner(program, inputs, config, false)
}

/// Runs `program` as `schedule` (its main block fused by `passes::fuse`) on the fused engine
/// (`exec/fused.rs`); the results equal `run`'s.
pub fn run_fused(
    program: &Program,
    schedule: &Schedule,
    inputs: &[Array],
    config: &ExecConfig,
) -> Result<(Vec<Array>, ExecReport), InterpError> {
    let inputs: Vec<Tensor> = inputs.iter().map(Tensor::from_array).collect();
    let (results, report) = run_fused_tensors(program, schedule, inputs, config)?;
    Ok((
        results.into_iter().map(Tensor::into_array).collect(),
        report,
    ))
}

/// `run_fused` on engine values: no conversion of inputs or results (a session's values are
/// tensors, so a run does not copy its inputs).
pub fn run_fused_tensors(
    program: &Program,
    schedule: &Schedule,
    inputs: Vec<Tensor>,
    config: &ExecConfig,
) -> Result<(Vec<Tensor>, ExecReport), InterpError> {
    Prepared::new(program, schedule).run(inputs, config)
}

/// A program and its schedule prepared for many runs on the fused engine: what the first
/// run compiles (loop bodies on scalar registers and as machine code, `scalar_loop`) the
/// next runs reuse, as a JAX function compiled once runs many times.
pub struct Prepared<'p> {
    program: &'p Program,
    schedule: &'p Schedule,
    loops: CompiledLoops,
}

impl<'p> Prepared<'p> {
    pub fn new(program: &'p Program, schedule: &'p Schedule) -> Prepared<'p> {
        Prepared {
            program,
            schedule,
            loops: CompiledLoops::default(),
        }
    }

    /// Runs the program on `inputs` (`run_fused_tensors`).
    pub fn run(
        &self,
        inputs: Vec<Tensor>,
        config: &ExecConfig,
    ) -> Result<(Vec<Tensor>, ExecReport), InterpError> {
        let mut cx = Exec::new(self.program, config, &self.loops, inputs, false);
        cx.add_loop_schedules(self.schedule);
        let results = cx.run_schedule(self.schedule, Vec::new(), true);
        cx.finish(results)
    }
}

/// One program's sequential code compiled as it first runs: loop bodies compiled to scalar
/// operations (`scalar_loop`), by body (`None` for a body that is not all scalars), and
/// monoid operators' chunk folds (`monoid`), by operator, direction (from the right) and
/// number of lanes, and how each kernel is launched.
#[derive(Default)]
struct CompiledLoops {
    bodies: Mutex<HashMap<BlockId, Option<Arc<CompiledLoop>>>>,
    monoids: Mutex<HashMap<(BlockId, bool, usize), Arc<monoid::CompiledMonoid>>>,
    /// How each kernel is launched (Note [Launch plans] in `fused.rs`).
    launches: fused::LaunchPlans,
}

/// `run_tensors`; with `batch_build1`, `build1` runs in batch mode too (Note [Batched
/// blocks]), which lets the tests check batch mode on the rich bodies of random `build1`s.
fn run_inner(
    program: &Program,
    inputs: Vec<Tensor>,
    config: &ExecConfig,
    batch_build1: bool,
) -> Result<(Vec<Tensor>, ExecReport), InterpError> {
    let loops = CompiledLoops::default();
    let mut cx = Exec::new(program, config, &loops, inputs, batch_build1);
    let results = cx.eval_block(program.main, Vec::new(), None);
    cx.finish(results)
}

fn filled<K: crate::core::ids::Id, V: Clone>(len: usize, value: V) -> IdVec<K, V> {
    let mut vec = IdVec::new();
    for _ in 0..len {
        vec.push(value.clone());
    }
    vec
}

/// The value of a variable, and whether it is batched (see Note [Batched blocks]).
#[derive(Clone, Debug)]
struct Slot {
    tensor: Tensor,
    batched: bool,
}

impl Slot {
    fn plain(tensor: Tensor) -> Slot {
        Slot {
            tensor,
            batched: false,
        }
    }

    fn batched(tensor: Tensor) -> Slot {
        Slot {
            tensor,
            batched: true,
        }
    }
}

type Res<T> = Result<T, Stop>;

/// The state of batch mode: the points, which of them are active, and the first strict
/// error (see Note [Strict errors in bulk]).
struct Batch {
    shape: Vec<usize>,
    n_points: usize,
    /// Row-major over the points; `None` when every point is active.
    mask: Option<Arc<Vec<bool>>>,
    first_error: Option<(usize, InterpError)>,
}

impl Batch {
    fn new(shape: &[usize]) -> Batch {
        Batch {
            shape: shape.to_vec(),
            n_points: shape.iter().product(),
            mask: None,
            first_error: None,
        }
    }

    fn first_active(&self) -> Option<usize> {
        match &self.mask {
            None => (self.n_points > 0).then_some(0),
            Some(mask) => mask.iter().position(|&active| active),
        }
    }

    fn record(&mut self, point: usize, error: InterpError) {
        if self
            .first_error
            .as_ref()
            .is_none_or(|(first, _)| point < *first)
        {
            self.first_error = Some((point, error));
        }
    }

    /// The batch shape followed by `shape`.
    fn batched_shape(&self, shape: &[usize]) -> Vec<usize> {
        let mut res = self.shape.clone();
        res.extend_from_slice(shape);
        res
    }
}

struct Exec<'a> {
    program: &'a Program,
    config: &'a ExecConfig,
    /// The current value of each variable. As in the interpreter, a nested block overwrites
    /// only its own variables.
    env: IdVec<VarId, Option<Slot>>,
    /// Free variables of each block (computed when batch mode first needs them).
    free_vars: IdVec<BlockId, Option<Vec<VarId>>>,
    /// Per block and statement, the variables whose last use it is (see Note [Releasing
    /// values]; computed when the block first runs).
    dying: IdVec<BlockId, Option<Arc<Vec<Vec<VarId>>>>>,
    /// Loop bodies compiled to scalar operations, kept for the program's next runs.
    scalar_bodies: &'a CompiledLoops,
    /// The schedules of loop bodies (`fused.rs`; empty on the bulk evaluator), by body.
    loop_schedules: HashMap<BlockId, &'a Schedule>,
    /// Per scheduled block, what running each step needs (`Exec::schedule_steps`).
    schedule_steps: HashMap<BlockId, Arc<Vec<fused::StepFacts>>>,
    report: ExecReport,
    /// `ExecReport::compiled_kernels`, counted where kernels launch (by reference).
    compiled_kernels: AtomicUsize,
    /// Run `build1` in batch mode (tests only, see `run_inner`).
    batch_build1: bool,
}

impl<'a> Exec<'a> {
    /// The results of a run of the main block, and the report.
    fn finish(self, results: Res<Vec<Slot>>) -> Result<(Vec<Tensor>, ExecReport), InterpError> {
        let report = ExecReport {
            compiled_kernels: self.compiled_kernels.into_inner(),
            ..self.report
        };
        match results {
            Ok(results) => Ok((
                results.into_iter().map(|slot| slot.tensor).collect(),
                report,
            )),
            Err(Stop::Error(error)) => Err(error),
            Err(Stop::Unbatchable) => {
                unreachable!("exec: only batch mode reports Unbatchable, and it catches it")
            }
        }
    }

    /// Registers the schedules of the loop bodies of `schedule`, at every depth.
    fn add_loop_schedules(&mut self, schedule: &'a Schedule) {
        for body in &schedule.loop_bodies {
            self.loop_schedules.insert(body.block, body);
            self.add_loop_schedules(body);
        }
    }

    fn new(
        program: &'a Program,
        config: &'a ExecConfig,
        scalar_bodies: &'a CompiledLoops,
        inputs: Vec<Tensor>,
        batch_build1: bool,
    ) -> Exec<'a> {
        assert_eq!(
            inputs.len(),
            program.inputs.len(),
            "exec::run: the program takes {} inputs but {} were given",
            program.inputs.len(),
            inputs.len()
        );
        let mut cx = Exec {
            program,
            config,
            env: filled(program.vars.len(), None),
            free_vars: filled(program.blocks.len(), None),
            dying: filled(program.blocks.len(), None),
            scalar_bodies,
            loop_schedules: HashMap::new(),
            schedule_steps: HashMap::new(),
            report: ExecReport::default(),
            compiled_kernels: AtomicUsize::new(0),
            batch_build1,
        };
        for (&var, tensor) in program.inputs.iter().zip(inputs) {
            debug_assert_eq!(
                (tensor.shape(), tensor.elem()),
                (&program.var_ty(var).shape[..], program.var_ty(var).elem),
                "input {var} has the wrong type"
            );
            cx.env[var] = Some(Slot::plain(tensor));
        }
        cx
    }
}

impl Exec<'_> {
    /// A sequential loop of `size` iterations starts (`progress`); returns whether it is the
    /// outermost one.
    fn enter_loop(&self, size: usize) -> bool {
        self.config
            .progress
            .as_ref()
            .is_some_and(|progress| progress.enter_loop(size))
    }

    /// Iteration `i` of a loop starts: reports it (for the outermost loop) and checks for an
    /// interrupt.
    fn loop_iteration(&self, outermost: bool, i: usize) -> Res<()> {
        if outermost {
            if let Some(progress) = &self.config.progress {
                progress.iteration(i);
            }
        }
        self.check_interrupt()
    }

    fn leave_loop(&self, outermost: bool) {
        if let Some(progress) = &self.config.progress {
            progress.leave_loop(outermost);
        }
    }

    fn check_interrupt(&self) -> Res<()> {
        Ok(self.interrupted()?)
    }

    fn interrupted(&self) -> Result<(), InterpError> {
        match &self.config.interrupt {
            Some(flag) if flag.load(Ordering::Relaxed) => Err(InterpError::Interrupted),
            _ => Ok(()),
        }
    }

    fn slot(&self, atom: &Atom) -> Slot {
        match atom {
            Atom::Var(var) => self.env[*var].clone().unwrap_or_else(|| {
                panic!("exec: {var} is used before it is bound (the verifier rules this out)")
            }),
            Atom::Lit(scalar) => Slot::plain(Tensor::scalar(*scalar)),
        }
    }

    fn tensor(&self, atom: &Atom) -> Tensor {
        self.slot(atom).tensor
    }

    fn binder_ty(&self, stmt: &Stmt, position: usize) -> &ArrTy {
        let var = stmt.binders.get(position).unwrap_or_else(|| {
            panic!("exec: statement lacks binder {position} (the verifier rules this out)")
        });
        self.program.var_ty(*var)
    }

    /// Binds the block's params to `args`, runs its statements (in batch mode when `batch`
    /// is given) and returns its results.
    fn eval_block(
        &mut self,
        block_id: BlockId,
        args: Vec<Slot>,
        mut batch: Option<&mut Batch>,
    ) -> Res<Vec<Slot>> {
        let program = self.program;
        let block = &program.blocks[block_id];
        assert_eq!(
            block.params.len(),
            args.len(),
            "exec: {block_id} called with wrong arity"
        );
        for (&param, arg) in block.params.iter().zip(args) {
            self.env[param] = Some(arg);
        }
        let dying = self.dying_vars(block_id);
        for (stmt, dying) in block.stmts.iter().zip(dying.iter()) {
            let values = self.eval_stmt(stmt, batch.as_deref_mut(), dying)?;
            debug_assert_eq!(values.len(), stmt.binders.len());
            for (&binder, value) in stmt.binders.iter().zip(values) {
                self.env[binder] = Some(value);
            }
            self.release(dying);
        }
        Ok(block.results.iter().map(|atom| self.slot(atom)).collect())
    }

    /// The variables of `block_id` whose last use is each of its statements, memoised.
    fn dying_vars(&mut self, block_id: BlockId) -> Arc<Vec<Vec<VarId>>> {
        if let Some(dying) = &self.dying[block_id] {
            return dying.clone();
        }
        let program = self.program;
        let block = &program.blocks[block_id];
        let mut uses = Vec::with_capacity(block.stmts.len());
        for stmt in &block.stmts {
            let mut used: Vec<VarId> = expr_atoms(&stmt.expr)
                .into_iter()
                .filter_map(var_of)
                .collect();
            for nested in expr_blocks(&stmt.expr) {
                used.extend_from_slice(block_free_vars(program, nested, &mut self.free_vars));
            }
            uses.push((used, stmt.binders.clone()));
        }
        let dying = last_uses(program, block_id, uses);
        let dying = Arc::new(dying);
        self.dying[block_id] = Some(dying.clone());
        dying
    }

    /// Forgets variables that no later statement uses (Note [Releasing values]).
    /// Drops the values of `dying`; the buffers they owned alone go to the pool for the
    /// next kernel outputs (`pool`).
    fn release(&mut self, dying: &[VarId]) {
        for &var in dying {
            if let Some(slot) = self.env[var].take() {
                pool::give(slot.tensor);
            }
        }
    }

    fn eval_stmt(
        &mut self,
        stmt: &Stmt,
        mut batch: Option<&mut Batch>,
        dying: &[VarId],
    ) -> Res<Vec<Slot>> {
        self.check_interrupt()?;
        self.report.statements += 1;
        let batched = batch.is_some() && self.is_batched(stmt);
        let mut run = StmtRun {
            cx: self,
            stmt,
            batch: if batched { batch.as_deref_mut() } else { None },
            dying,
            results: Vec::new(),
        };
        let ran = operation(&stmt.expr).run(&mut run);
        let results = run.results;
        match (ran, batch) {
            (Ok(()), _) => Ok(results),
            // An unbatched statement in batch mode: see Note [Strict errors in bulk].
            (Err(Stop::Error(error @ InterpError::OutOfRange { .. })), Some(batch)) if !batched => {
                if let Some(point) = batch.first_active() {
                    batch.record(point, error);
                }
                Ok(stmt
                    .binders
                    .iter()
                    .map(|&var| Slot::plain(Tensor::zeros(self.program.var_ty(var))))
                    .collect())
            }
            (Err(stop), _) => Err(stop),
        }
    }

    /// One step of a loop: the body's schedule when the fuser made one (Note [Loop bodies] in
    /// `passes/fuse/`), else its statements one by one.
    fn run_loop_body(&mut self, body: BlockId, args: Vec<Slot>) -> Res<Vec<Slot>> {
        match self.loop_schedules.get(&body).copied() {
            Some(schedule) => self.run_schedule(schedule, args, false),
            None => self.eval_block(body, args, None),
        }
    }

    /// Runs a while's body from `carry` until its condition is false, checking the interrupt
    /// flag every step: the final carries and, when `keep`, the carries entering each step
    /// (for `while_reverse`'s backward sweep).
    fn run_while(
        &mut self,
        mut carry: Vec<Slot>,
        body: BlockId,
        keep: bool,
    ) -> Res<(Vec<Slot>, Vec<Vec<Slot>>)> {
        let mut trajectory = Vec::new();
        loop {
            self.check_interrupt()?;
            if keep {
                trajectory.push(carry.clone());
            }
            let mut results = self.run_loop_body(body, carry)?;
            let go = as_bool(&results.remove(0).tensor);
            carry = results;
            if !go {
                return Ok((carry, trajectory));
            }
        }
    }

    /// Runs a `fold` or `scan` on scalar registers if its body is all scalars (see
    /// `scalar_loop`); `None` if it is not.
    fn scalar_loop(
        &mut self,
        size: usize,
        init: &[Atom],
        body: BlockId,
    ) -> Res<Option<Vec<Tensor>>> {
        let program = self.program;
        let compiled = self
            .scalar_bodies
            .bodies
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(body)
            .or_insert_with(|| CompiledLoop::new(program, body).map(Arc::new))
            .clone();
        let Some(compiled) = compiled else {
            return Ok(None);
        };
        let scalar_of = |cx: &Exec, atom: &Atom| {
            cx.tensor(atom).as_scalar().unwrap_or_else(|| {
                panic!("exec: {atom:?} is not a scalar (the loop body's params are scalars)")
            })
        };
        let run = LoopRun {
            size,
            init: init.iter().map(|atom| scalar_of(self, atom)).collect(),
            outer_scalars: compiled
                .body
                .code
                .outer_scalars
                .iter()
                .map(|(var, _)| scalar_of(self, &Atom::Var(*var)))
                .collect(),
            tables: compiled
                .body
                .code
                .tables
                .iter()
                .map(|var| self.tensor(&Atom::Var(*var)))
                .collect(),
            strict: self.config.strict,
            compile: self.config.compile_loops,
            check_interrupt: &|| self.interrupted(),
        };
        let ran = scalar_loop::run(&compiled, run)?;
        self.report.blocked_loops += usize::from(ran.blocked);
        self.report.compiled_loops += usize::from(ran.compiled);
        self.report.statements += size * compiled.body.code.ops.len();
        self.report.scalar_loops += 1;
        Ok(Some(ran.results))
    }

    /// `parts` stacked along a new outermost axis; the binder's type gives the shape of an
    /// empty stack.
    fn stacked(&self, stmt: &Stmt, position: usize, parts: &[Tensor]) -> Tensor {
        if parts.is_empty() {
            Tensor::zeros(self.binder_ty(stmt, position))
        } else {
            stack(0, parts)
        }
    }

    /// `build1` per index (not expected after the BOT; counted in the report).
    fn build1_fallback(&mut self, stmt: &Stmt, size: usize, body: BlockId) -> Res<Vec<Tensor>> {
        self.report.build1_fallbacks += 1;
        let mut parts: Vec<Vec<Tensor>> = vec![Vec::with_capacity(size); stmt.binders.len()];
        for i in 0..size {
            self.check_interrupt()?;
            let results =
                self.eval_block(body, vec![Slot::plain(Tensor::index(i as i64))], None)?;
            for (parts, result) in parts.iter_mut().zip(results) {
                parts.push(result.tensor);
            }
        }
        Ok(parts
            .iter()
            .enumerate()
            .map(|(position, parts)| self.stacked(stmt, position, parts))
            .collect())
    }

    /// `build1` in batch mode, or per index if the body cannot run batched.
    fn build1_batched(&mut self, stmt: &Stmt, size: usize, body: BlockId) -> Res<Vec<Tensor>> {
        let mut batch = Batch::new(&[size]);
        let args = vec![Slot::batched(coordinates(&[size], 0))];
        match self.eval_block(body, args, Some(&mut batch)) {
            Ok(results) => match batch.first_error {
                Some((_, error)) => Err(error.into()),
                None => Ok(results
                    .into_iter()
                    .map(|slot| {
                        if slot.batched {
                            slot.tensor
                        } else {
                            slot.tensor
                                .broadcast_to(&batch.batched_shape(slot.tensor.shape()))
                        }
                    })
                    .collect()),
            },
            Err(Stop::Unbatchable) => self.build1_fallback(stmt, size, body),
            Err(error) => Err(error),
        }
    }

    /// `index t [ix…]` with scalar indices: a zero-copy sub-array, or zeros (a strict error)
    /// when an index is out of range.
    fn index_plain(
        &self,
        array: &Tensor,
        index: &[i64],
        reader: VarId,
        res_ty: &ArrTy,
    ) -> Res<Tensor> {
        let shape = array.shape();
        let in_range = index
            .iter()
            .zip(shape)
            .all(|(&i, &dim)| usize::try_from(i).is_ok_and(|i| i < dim));
        if in_range {
            return Ok(tensor::map_tensor!(array, a => {
                let mut a = a.clone();
                for &i in index {
                    a = a.index_axis_move(ndarray::Axis(0), i as usize);
                }
                a
            }));
        }
        if self.config.strict {
            return Err(InterpError::OutOfRange {
                var: reader,
                index: index.to_vec(),
                shape: shape.to_vec(),
            }
            .into());
        }
        Ok(Tensor::zeros(res_ty))
    }

    /// `gather sh t (λ[i…]. ix)`.
    fn gather(&mut self, stmt: &Stmt, shape: &[usize], array: &Atom, body: BlockId) -> Res<Tensor> {
        let array = self.tensor(array);
        let block = &self.program.blocks[body];
        let grid = &shape[..block.params.len()];
        let source_shape = array.shape().to_vec();
        let n_lead = block.results.len();
        let n_sub: usize = source_shape[n_lead..].iter().product();
        let read_check = self
            .config
            .strict
            .then(|| (stmt.binders[0], source_shape.clone()));
        let rows = self.index_fn(body, grid, &source_shape[..n_lead], read_check)?;
        Ok(indexing::gather_rows(&array, n_sub, &rows, shape))
    }

    /// `scatter sh t (λ[i…]. ix)`.
    fn scatter(&mut self, shape: &[usize], array: &Atom, body: BlockId) -> Res<Tensor> {
        let (array, n_sub, rows) = self.scattered_rows(shape, array, body)?;
        Ok(indexing::scatter_rows(&array, n_sub, &rows, shape))
    }

    /// `scatter shape array body` added into `into` (of `shape`) in place, as a schedule's
    /// `Step::ScatterAdd` runs it.
    pub(super) fn scatter_add(
        &mut self,
        shape: &[usize],
        array: &Atom,
        body: BlockId,
        into: Tensor,
    ) -> Res<Tensor> {
        let (array, n_sub, rows) = self.scattered_rows(shape, array, body)?;
        Ok(indexing::add_rows_into(&array, n_sub, &rows, into))
    }

    /// The scattered array, the length of its rows (its trailing axes) and the targets of its
    /// rows (the index function at every point of its leading axes).
    fn scattered_rows(
        &mut self,
        shape: &[usize],
        array: &Atom,
        body: BlockId,
    ) -> Res<(Tensor, usize, Rows)> {
        let array = self.tensor(array);
        let (n_sub, rows) = self.scatter_targets(shape, array.shape(), body)?;
        Ok((array, n_sub, rows))
    }

    /// For a scatter of an array of `array_shape` into `shape` by the index function `body`:
    /// the length of the array's rows (its trailing axes) and their targets.
    pub(super) fn scatter_targets(
        &mut self,
        shape: &[usize],
        array_shape: &[usize],
        body: BlockId,
    ) -> Res<(usize, Rows)> {
        let block = &self.program.blocks[body];
        let n_params = block.params.len();
        let n_lead = block.results.len();
        let grid = array_shape[..n_params].to_vec();
        let n_sub: usize = array_shape[n_params..].iter().product();
        // Out-of-range targets are dropped, in strict mode too (dropping is not a read).
        let rows = self.index_fn(body, &grid, &shape[..n_lead], None)?;
        Ok((n_sub, rows))
    }

    /// Evaluates the index function `body` at every point of `grid` and returns its results
    /// as indices into the leading axes `target_lead` of an array. With `read_check =
    /// Some((reader, shape))`, an out-of-range result is a strict error reading an array of
    /// `shape`, ordered with the body's own errors as the interpreter orders them.
    fn index_fn(
        &mut self,
        body: BlockId,
        grid: &[usize],
        target_lead: &[usize],
        read_check: Option<(VarId, Vec<usize>)>,
    ) -> Res<Rows> {
        if let Some(cols) = self.table_read_columns(body, grid) {
            self.report.index_fns_read += 1;
            // The body cannot fail (its reads are at the points themselves); the indices
            // it gives still may be out of range.
            let rows = Rows::new(cols, target_lead.to_vec(), grid.iter().product());
            return match out_of_range_read(&rows, read_check) {
                Some((_, error)) => Err(error.into()),
                None => Ok(rows),
            };
        }
        let mut batch = Batch::new(grid);
        let args = (0..grid.len())
            .map(|axis| Slot::batched(coordinates(grid, axis)))
            .collect();
        match self.eval_block(body, args, Some(&mut batch)) {
            Ok(results) => {
                let cols: Vec<IndexCol> = results
                    .iter()
                    .map(|slot| IndexCol::of_tensor(&slot.tensor))
                    .collect();
                let rows = Rows::new(cols, target_lead.to_vec(), batch.n_points);
                if let Some((point, error)) = out_of_range_read(&rows, read_check) {
                    batch.record(point, error);
                }
                match batch.first_error {
                    Some((_, error)) => Err(error.into()),
                    None => Ok(rows),
                }
            }
            Err(Stop::Unbatchable) => self.index_fn_per_point(body, grid, target_lead, read_check),
            Err(error) => Err(error),
        }
    }

    /// The index columns of an index function whose results are read from integer tables at
    /// the points themselves (`gather_scatter::point_reads`): the tables, when they hold one
    /// unbatched value per point of `grid`. `None` for any other function.
    fn table_read_columns(&self, body: BlockId, grid: &[usize]) -> Option<Vec<IndexCol>> {
        let (tables, reads) = point_reads(self.program, body)?;
        let table = |var: VarId| {
            let slot = self.env[var].as_ref()?;
            (!slot.batched && slot.tensor.shape() == grid).then_some(&slot.tensor)
        };
        if !tables.into_iter().all(|var| table(var).is_some()) {
            return None;
        }
        (reads.into_iter())
            .map(|read| {
                let table = table(read.table)?;
                let as_index = read.cast || table.elem() == Elem::I64;
                IndexCol::of_int_table(as_index.then_some(table)?)
            })
            .collect()
    }

    /// `index_fn` point by point, for bodies that batch mode cannot run.
    fn index_fn_per_point(
        &mut self,
        body: BlockId,
        grid: &[usize],
        target_lead: &[usize],
        read_check: Option<(VarId, Vec<usize>)>,
    ) -> Res<Rows> {
        self.report.index_fn_fallbacks += 1;
        let n_points: usize = grid.iter().product();
        let n_results = self.program.blocks[body].results.len();
        let mut columns: Vec<Vec<i64>> = vec![Vec::with_capacity(n_points); n_results];
        for point in 0..n_points {
            self.check_interrupt()?;
            let args = unravel(point, grid)
                .into_iter()
                .map(|i| Slot::plain(Tensor::index(i)))
                .collect();
            let index: Vec<i64> = self
                .eval_block(body, args, None)?
                .iter()
                .map(|slot| as_index(&slot.tensor))
                .collect();
            if let Some((reader, shape)) = &read_check {
                let in_range = index
                    .iter()
                    .zip(target_lead)
                    .all(|(&i, &dim)| usize::try_from(i).is_ok_and(|i| i < dim));
                if !in_range {
                    return Err(InterpError::OutOfRange {
                        var: *reader,
                        index,
                        shape: shape.clone(),
                    }
                    .into());
                }
            }
            for (column, i) in columns.iter_mut().zip(index) {
                column.push(i);
            }
        }
        let cols = columns
            .into_iter()
            .map(|column| IndexCol::PerPoint(IntCol::I64(from_vec(&[n_points], column))))
            .collect();
        Ok(Rows::new(cols, target_lead.to_vec(), n_points))
    }

    // Batch mode (Note [Batched blocks]).

    fn var_batched(&self, var: VarId) -> bool {
        self.env[var].as_ref().is_some_and(|slot| slot.batched)
    }

    /// Whether a statement depends on a batched variable, directly or through a free
    /// variable of one of its blocks.
    fn is_batched(&mut self, stmt: &Stmt) -> bool {
        let direct = expr_atoms(&stmt.expr).iter().any(|atom| match atom {
            Atom::Var(var) => self.var_batched(*var),
            Atom::Lit(_) => false,
        });
        direct
            || expr_blocks(&stmt.expr).into_iter().any(|block| {
                let free = block_free_vars(self.program, block, &mut self.free_vars);
                free.iter()
                    .any(|&var| self.env[var].as_ref().is_some_and(|slot| slot.batched))
            })
    }

    /// An operand broadcast to its batched shape.
    fn lifted(&self, atom: &Atom, batch: &Batch) -> Tensor {
        let slot = self.slot(atom);
        if slot.batched {
            slot.tensor
        } else {
            slot.tensor
                .broadcast_to(&batch.batched_shape(slot.tensor.shape()))
        }
    }

    /// Batched `index t [ix…]`: row `ix(p)` of `t` (of `t(p)` when `t` is batched) at each
    /// point `p`.
    fn index_batched(
        &self,
        stmt: &Stmt,
        array: &Atom,
        index: &[Atom],
        batch: &mut Batch,
    ) -> Tensor {
        let source = self.slot(array);
        let source_shape = self.program.atom_ty(array).shape;
        let n_index = index.len();
        let index_slots: Vec<Slot> = index.iter().map(|atom| self.slot(atom)).collect();
        let mut cols = Vec::with_capacity(n_index + 1);
        let mut lead = Vec::with_capacity(n_index + 1);
        if source.batched {
            cols.push(IndexCol::Point);
            lead.push(batch.n_points);
        }
        for (slot, &dim) in index_slots.iter().zip(&source_shape) {
            cols.push(IndexCol::of_tensor(&slot.tensor));
            lead.push(dim);
        }
        let rows = Rows::new(cols, lead, batch.n_points);
        if self.config.strict {
            let mask = batch.mask.as_deref().map(Vec::as_slice);
            if let Some(point) = rows.first_out_of_range(mask) {
                let error = InterpError::OutOfRange {
                    var: stmt.binders[0],
                    index: rows.index_at(point, usize::from(source.batched)),
                    shape: source_shape.clone(),
                };
                batch.record(point, error);
            }
        }
        let n_sub: usize = source_shape[n_index..].iter().product();
        let shape = batch.batched_shape(&source_shape[n_index..]);
        indexing::gather_rows(&source.tensor, n_sub, &rows, &shape)
    }

    /// Batched `cond`: with an unbatched condition, the taken branch in batch mode; with a
    /// batched one, each branch under the mask of its points, then a select per point.
    fn cond_batched(
        &mut self,
        stmt: &Stmt,
        cond: &Atom,
        then_block: BlockId,
        else_block: BlockId,
        batch: &mut Batch,
    ) -> Res<Vec<Slot>> {
        let cond = self.slot(cond);
        if !cond.batched {
            let taken = if as_bool(&cond.tensor) {
                then_block
            } else {
                else_block
            };
            return self.eval_block(taken, Vec::new(), Some(batch));
        }
        let Tensor::Bool(cond) = cond.tensor else {
            panic!("exec: cond on a non-Bool value (the verifier rules this out)");
        };
        let taken: Vec<bool> = standard_slice(&cond).into_owned();
        let outer_mask = batch.mask.clone();
        let active = |point: usize| outer_mask.as_ref().is_none_or(|mask| mask[point]);
        let then_mask: Vec<bool> = (0..batch.n_points).map(|p| active(p) && taken[p]).collect();
        let else_mask: Vec<bool> = (0..batch.n_points)
            .map(|p| active(p) && !taken[p])
            .collect();
        let mut branch =
            |cx: &mut Self, block: BlockId, mask: Vec<bool>| -> Res<Option<Vec<Slot>>> {
                if !mask.contains(&true) {
                    return Ok(None);
                }
                batch.mask = Some(Arc::new(mask));
                let res = cx.eval_block(block, Vec::new(), Some(batch));
                batch.mask = outer_mask.clone();
                res.map(Some)
            };
        let then_results = branch(self, then_block, then_mask)?;
        let else_results = branch(self, else_block, else_mask)?;
        Ok(match (then_results, else_results) {
            (Some(results), None) | (None, Some(results)) => results,
            // No point is active: the values are never observed.
            (None, None) => stmt
                .binders
                .iter()
                .map(|&var| Slot::plain(Tensor::zeros(self.program.var_ty(var))))
                .collect(),
            (Some(then_results), Some(else_results)) => then_results
                .into_iter()
                .zip(else_results)
                .zip(&stmt.binders)
                .map(|((then_slot, else_slot), &var)| {
                    let ty = self.program.var_ty(var);
                    let shape = batch.batched_shape(&ty.shape);
                    let cond = Tensor::Bool(cond.clone()).with_unit_axes(ty.rank());
                    let Tensor::Bool(cond) = cond else {
                        unreachable!("with_unit_axes keeps the element type")
                    };
                    Slot::batched(elementwise::select(
                        &cond,
                        &then_slot.tensor,
                        &else_slot.tensor,
                        &shape,
                    ))
                })
                .collect(),
        })
    }
}

/// The free variables of a block (used inside it, nested blocks included, but bound outside
/// it), memoised per block.
/// Note [Releasing values]: for each item of `block_id` in order (a statement, or a step of
/// its schedule), given as the variables it reads and those it binds, the variables of the
/// block whose last use it is (or that it binds and nothing reads). Params (and `main`'s
/// inputs) and binders are the block's own; the block's results are kept.
pub(super) fn last_uses(
    program: &Program,
    block_id: BlockId,
    items: Vec<(Vec<VarId>, Vec<VarId>)>,
) -> Vec<Vec<VarId>> {
    let block = &program.blocks[block_id];
    let mut local: HashSet<VarId> = block.params.iter().copied().collect();
    if block_id == program.main {
        local.extend(&program.inputs);
    }
    let kept: HashSet<VarId> = block.results.iter().copied().filter_map(var_of).collect();
    let mut last_use: HashMap<VarId, usize> = HashMap::new();
    for (item_idx, (reads, binders)) in items.iter().enumerate() {
        for var in reads {
            if local.contains(var) {
                last_use.insert(*var, item_idx);
            }
        }
        for &binder in binders {
            local.insert(binder);
            last_use.insert(binder, item_idx);
        }
    }
    let mut dying = vec![Vec::new(); items.len()];
    for (var, item_idx) in last_use {
        if !kept.contains(&var) {
            dying[item_idx].push(var);
        }
    }
    for vars in &mut dying {
        vars.sort();
    }
    dying
}

fn block_free_vars<'m>(
    program: &Program,
    block_id: BlockId,
    memo: &'m mut IdVec<BlockId, Option<Vec<VarId>>>,
) -> &'m [VarId] {
    if memo[block_id].is_none() {
        let block = &program.blocks[block_id];
        let mut bound: HashSet<VarId> = block.params.iter().copied().collect();
        let mut free = Vec::new();
        let mut seen = HashSet::new();
        let mut use_var = |var: VarId, bound: &HashSet<VarId>, free: &mut Vec<VarId>| {
            if !bound.contains(&var) && seen.insert(var) {
                free.push(var);
            }
        };
        for stmt in &block.stmts {
            for atom in expr_atoms(&stmt.expr) {
                if let Atom::Var(var) = atom {
                    use_var(var, &bound, &mut free);
                }
            }
            for nested in expr_blocks(&stmt.expr) {
                for var in block_free_vars(program, nested, memo).to_vec() {
                    use_var(var, &bound, &mut free);
                }
            }
            bound.extend(&stmt.binders);
        }
        for atom in &block.results {
            if let Atom::Var(var) = atom {
                use_var(*var, &bound, &mut free);
            }
        }
        memo[block_id] = Some(free);
    }
    memo[block_id]
        .as_deref()
        .expect("the free variables were just computed")
}

/// `tr_perm` on the axes after the first `n_batch`: result axis `n_batch + a` is input axis
/// `n_batch + perm[a]`; the other axes stay. Zero-copy.
/// A literal table of constants, built in one pass (a literal of 10⁶ numbers would otherwise
/// make a tensor per element and stack them); `None` when an element is a variable.
fn constant_table(atoms: &[Atom]) -> Option<Tensor> {
    let Some(Atom::Lit(first)) = atoms.first() else {
        return None;
    };
    let mut data = ArrayData::with_capacity(first.elem(), atoms.len());
    for atom in atoms {
        let Atom::Lit(scalar) = atom else {
            return None;
        };
        data.push(*scalar);
    }
    Some(Tensor::from(Array::new(vec![atoms.len()], data)))
}

fn transpose(tensor: &Tensor, n_batch: usize, perm: &[usize]) -> Tensor {
    let axes: Vec<usize> = (0..n_batch)
        .chain(perm.iter().map(|&axis| n_batch + axis))
        .chain(n_batch + perm.len()..tensor.rank())
        .collect();
    tensor.permute(&axes)
}

/// With `read_check = Some((reader, shape))` (a gather in strict mode), the first point whose
/// row is out of range and the error of reading it from `reader`, an array of `shape`.
fn out_of_range_read(
    rows: &Rows,
    read_check: Option<(VarId, Vec<usize>)>,
) -> Option<(usize, InterpError)> {
    let (reader, shape) = read_check?;
    let point = rows.first_out_of_range(None)?;
    let error = InterpError::OutOfRange {
        var: reader,
        index: rows.index_at(point, 0),
        shape,
    };
    Some((point, error))
}

/// The `I64` array of shape `grid` whose element at each point is its coordinate on `axis`.
fn coordinates(grid: &[usize], axis: usize) -> Tensor {
    let n_points: usize = grid.iter().product();
    let run: usize = grid[axis + 1..].iter().product();
    let period = grid[axis] * run;
    let mut data = vec![0i64; n_points];
    if n_points > 0 {
        // Each period holds runs of 0, 1, …, grid[axis] - 1.
        let fill = |chunk: &mut [i64]| {
            for (i, same) in (0i64..).zip(chunk.chunks_mut(run)) {
                same.fill(i);
            }
        };
        if n_points >= PAR_THRESHOLD {
            data.par_chunks_mut(period).for_each(fill);
        } else {
            data.chunks_mut(period).for_each(fill);
        }
    }
    Tensor::I64(from_vec(grid, data))
}

fn as_index(tensor: &Tensor) -> i64 {
    match tensor.as_scalar() {
        Some(Scalar::I64(i)) => i,
        other => panic!("exec: index {other:?} is not an i64 scalar (the verifier rules this out)"),
    }
}

fn as_bool(tensor: &Tensor) -> bool {
    match tensor.as_scalar() {
        Some(Scalar::Bool(b)) => b,
        other => panic!("exec: cond on {other:?} (the verifier rules this out)"),
    }
}

/// The multi-index of row-major flat offset `flat` in `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<i64> {
    let mut index = vec![0i64; shape.len()];
    for (slot, &dim) in index.iter_mut().zip(shape).rev() {
        *slot = (flat % dim) as i64;
        flat /= dim;
    }
    index
}

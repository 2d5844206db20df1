//! The fused engine: runs a [`Schedule`] (`core/kernel.rs`, made by `passes/fuse/`).
//!
//! Kernels run as a vectorised interpreter (`lanes.rs`): the iteration space is cut into lines
//! of at most `LINE` points along one axis, every node of the body is computed for a whole line
//! with one tight loop, and lines run in parallel on rayon with per-task scratch lanes (no
//! allocation per line). Reads resolve their affine coordinates to a start offset and a step
//! once per line, so a read is a contiguous copy, a strided copy or a splat.
//!
//! A kernel of fewer points than a line that a prepared program launches often (a loop of
//! small steps), and one whose lines would hold many short sums, is compiled to machine code
//! instead, a run of outputs one loop with every node in a machine register (`compiled.rs`,
//! Note [Compiled kernels]).
//!
//! Reductions (`Kernel::reduce`) add in dx's summation order (Note [Summation order]), in one
//! of two layouts that give the same bits: along the reduced axis, leaf by leaf, when the
//! output is narrow (a whole-array sum); or across the output's last axis, one row of lane
//! accumulators per leaf position, when it is wide (`sumOuter` of a matrix). Long sums are
//! cut into aligned runs of leaves (complete subtrees), so the result does not depend on the
//! number of threads.
//!
//! `MatMul` steps call `faer` on zero-copy strided views of the operands, one product per
//! point of the batch axes, in row panels so that an interrupt stops them quickly.
//! `Rows` steps run their kernels a block of rows at a time (`rows.rs`), each output computed
//! by the same per-row and per-output code as a kernel alone (`map_row`, `sum_along`,
//! `fold_output`).
//! `Stmt` steps run on the bulk evaluator (`exec/mod.rs`) in the same environment.
//!
//! Memory: before a step allocates, the sizes of the variables it materialises are checked
//! against the memory available (`check_size`): too large a request is a runtime error, not an
//! abort. A value is dropped after the last step that reads it.

mod compiled;
#[cfg(test)]
pub(in crate::exec) use compiled::COMPILE_AFTER_LAUNCHES;
mod monoid;
pub(in crate::exec) use monoid::Fused;
mod prefetch;
mod rows;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::lanes::{
    eval_prim, exp_of_difference, match_column, with_column, with_operands, Column, ColumnRef,
    Lane, LaneElem, LaneRef, LINE,
};
use super::reduce::{tree_sum, ColumnSums, RUN_LEVEL, SUM_RUN};
use super::tensor::{with_tensor, Element, Tensor};
use super::{Exec, Res, Slot, PAR_THRESHOLD};
use crate::core::digits;
use crate::core::ir::{Atom, Program, Scalar, Scatter, VarId};
use crate::core::kernel::{
    Affine, Coord, Kernel, MatMul, MatOperand, MonoidStep, Node, NodeId, Reduction, Schedule, Step,
};
use crate::ops::interp::InterpError;
use crate::ops::monoid::CHUNK_ROWS;
use crate::passes::fuse::row_major_strides;
use crate::prim::sum_order::{self, TreeSum};
use crate::prim::Prim;
use crate::prim::{Max, Min, Select};
use prefetch::Stream;

/// Outputs at least this wide are summed across the output (see the module documentation).
const WIDE: usize = 64;
/// Fewest points of the lines down axis 0 that an elementwise kernel with transposed reads
/// runs (`map_down`): a shorter line pays a line's fixed cost (about a microsecond for a
/// kernel of eight nodes) for a few dozen points, more than gathering the strided reads
/// along the last axis costs. kmeans' gradient maps the ties' shares over `[32, 100000]`
/// reading the distances `[100000, 32]` transposed: 100000 lines of 32 took 151 ms.
pub(super) const DOWN_LINE: usize = 256;
/// Points of an elementwise kernel's row that one task computes when rows are long.
const PIECE: usize = 16 * LINE;
/// Floating-point operations of a matrix-product panel between interrupt checks: ~15 ms
/// at this machine's f32 rate (~140 GFLOP/s), under 100 ms down to ~21 GFLOP/s. Each panel
/// is a call of faer, which packs the right operand anew and shares out its own work, so
/// panels cost: a 1024² f32 product in panels of 256 rows ran at 0.90 of one call (faer
/// alone, 15 interleaved rounds), and was 0.90 of it in dx.
pub(super) const PANEL_FLOPS: usize = 1 << 31;
/// Elements of the left operand's and the output's rows that one panel reads and writes at
/// most (64 MB of f32): a skinny product (small `n` and depth) is bound by memory, not by
/// its operations.
const PANEL_ELEMENTS: usize = 1 << 24;
/// Fewest rows of a panel, whatever its width and depth (a multiple of faer's row tiles).
const MIN_PANEL_ROWS: usize = 32;

/// Rows of each panel of an `m`-row product of width `n` and depth `depth`: as many as
/// `budget` operations and `PANEL_ELEMENTS` allow, at least `MIN_PANEL_ROWS` and at least 1.
fn panel_rows(m: usize, n: usize, depth: usize, budget: usize) -> usize {
    let row_flops = 2usize.saturating_mul(n).saturating_mul(depth).max(1);
    let row_elements = n.saturating_add(depth).max(1);
    (budget / row_flops)
        .min(PANEL_ELEMENTS / row_elements)
        .max(MIN_PANEL_ROWS)
        .min(m)
        .max(1)
}

// Note [Products in bands]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// One large product ran as one faer call split over the threads by faer. Two sequential
// calls, each on its own thread and half of the rows, are faster: f32 1024³ 222–229 GFLOP/s
// one call, 258–261 in halves; the MLP's 1024×784×256, 245–256 against 277–283 (faer alone
// in a scratch crate, 15 rounds each, interleaved). So the rows are cut into one band per
// thread, and each band runs its panels with sequential calls.
//
// Bands cut the longer side of the output: a product with more columns than rows is
// computed as `cᵀ = bᵀ aᵀ`. The MLP's weight gradient `Σ_b d[b, h] x[b, i]` (256 × 784,
// depth 1024) ran at 168–179 GFLOP/s in two bands of 128 rows, 251–260 in two of 392
// columns; 1024 × 784 × 256 the other way round, 310 in rows against 284–290 in columns;
// square products are the same either way (faer alone, 30 rounds each).
//
// The bits must not depend on the number of threads. faer sums each output element in an
// order that does not depend on the rows of the call, with one exception: a call of one
// row is a matrix-vector product, summed otherwise (checked on f32 products up to 1024³
// in calls of 2 to 512 rows: the bits of one call, and of faer's own threading; one row
// differs). And a call of at most 16³ multiply-adds takes faer's small-matrix path. So
// bands and panels split their rows evenly (`even_rows`: no one-row remainder), a band
// has `MIN_PANEL_ROWS` rows and `THREAD_WORK` multiply-adds at least, and a product with too
// few rows for two such bands keeps faer's threading.

/// The number of bands of an `m`-row product of `row_work` multiply-adds a row on
/// `threads` threads (Note [Products in bands]), if two or more.
fn band_count(m: usize, row_work: usize, threads: usize) -> Option<usize> {
    let by_work = m.saturating_mul(row_work) / THREAD_WORK;
    let count = threads.min(m / MIN_PANEL_ROWS).min(by_work);
    (count > 1).then_some(count)
}

/// Fewest multiply-adds worth a thread: a smaller product runs on one, a band has as many.
const THREAD_WORK: usize = 1 << 18;

/// `rows` cut into `pieces` runs whose lengths differ by one at most.
fn even_rows(rows: Range<usize>, pieces: usize) -> impl Iterator<Item = Range<usize>> {
    let (start, len, pieces) = (rows.start, rows.len(), pieces.clamp(1, rows.len().max(1)));
    (0..pieces).map(move |piece| start + piece * len / pieces..start + (piece + 1) * len / pieces)
}

// Note [Batched products]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A contraction with batch axes is one product per batch: gmm's `Q_k (x_i - μ_k)` is 50
// products of 10000 × 64 by 64 × 64, whose operand and output rows are strided by the batch
// axis in the middle (`[10000, 50, 64]`). Run one after the other, each split by faer over
// the threads, they ran at 33 GFLOP/s (f64; faer's square products: 76): faer synchronises
// its threads per small product, and each product sweeps its rows across the whole 256 MB
// array. When one operand of each product is small (a quarter of `PANEL_CACHE` at most; it
// is made the right one, computing `cᵀ = bᵀ aᵀ` if need be, so that a call of a panel's
// rows repacks little), each call runs on one thread, and the threads take panels of rows,
// each computing its panel of every batch before the next: the panel's rows of all batches
// are near each other in memory (`batched_panel_rows` keeps them to about 1 MB). faer alone
// on that shape: 40-47 GFLOP/s in panels of 16-32 rows against 32 one product after the
// other, the same bits (each output element is one dot product in faer's order, however
// panels fall and whichever thread runs it); in dx the product went from 146 to 114 ms.
// The choice depends on the shapes only, never on the number of threads. A panel is also
// the unit of interrupt checks.

/// Rows of each panel of a batched product (Note [Batched products]): a panel's rows of
/// every batch (left operand and output, `elem_bytes` each) fill about `PANEL_CACHE` bytes,
/// with at least `MIN_PANEL_ROWS` rows so that faer's packing of the right operand pays.
fn batched_panel_rows(
    m: usize,
    n: usize,
    depth: usize,
    n_batches: usize,
    elem_bytes: usize,
) -> usize {
    let row_bytes = n_batches
        .saturating_mul(n.saturating_add(depth))
        .saturating_mul(elem_bytes)
        .max(1);
    (PANEL_CACHE / row_bytes).max(MIN_PANEL_ROWS).min(m).max(1)
}

/// Bytes of a batched product's panel (Note [Batched products]): about a core's L2 cache.
const PANEL_CACHE: usize = 1 << 20;

// Note [Long batched products]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The other batched shape of gmm's gradient: `Σₙ g[n, k, i] d[n, k, j]`, 50 products of
// 64 × 10000 by 10000 × 64, contracted over the long axis in front of the batch axis. Each
// product alone reads a 512-byte run of every 25.6 KB row of both 256 MB operands: 50
// sweeps through memory at 26 GFLOP/s. When each product's output is small, the depth is
// cut into chunks of `long_products` rows, and a thread takes a group of batches through
// the chunks in order, adding each chunk's product into its output (`Accum::Add`): the
// threads stream through the operands side by side, every line read once. faer alone on
// that shape: 165 ms one product after the other, 68 ms in chunks of 64 rows. The chunks
// change the order of each sum (a sum of chunk products, each in faer's order), but only
// by the shapes: the groups are the threads' shares of the batches and change no bits.

/// Rows of each depth chunk of a long batched product (Note [Long batched products]):
/// both operands' chunks about `PANEL_CACHE / 16` bytes, when the product's output is
/// small and its depth at least four chunks long.
fn long_products(m: usize, n: usize, depth: usize, elem_bytes: usize) -> Option<usize> {
    let out_bytes = m.saturating_mul(n).saturating_mul(elem_bytes);
    let row_bytes = m.saturating_add(n).saturating_mul(elem_bytes).max(1);
    let chunk = (PANEL_CACHE / 16 / row_bytes).max(MIN_PANEL_ROWS);
    (out_bytes <= PANEL_CACHE / 4 && depth >= 4 * chunk).then_some(chunk)
}

/// The output buffer of a matrix product, written by disjoint calls on several threads.
struct OutPtr<T>(*mut T);

// SAFETY: the calls of one product write disjoint elements (Note [Batched products]).
unsafe impl<T: Send> Send for OutPtr<T> {}
unsafe impl<T: Send> Sync for OutPtr<T> {}

impl<T> OutPtr<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

impl Exec<'_> {
    /// Runs `schedule` with its block's params bound to `args` and returns the block's
    /// results; with `profile`, records the time of each step (`ExecReport::step_times`).
    pub(super) fn run_schedule(
        &mut self,
        schedule: &Schedule,
        args: Vec<Slot>,
        profile: bool,
    ) -> Res<Vec<Slot>> {
        let program = self.program;
        let block = &program.blocks[schedule.block];
        for (&param, arg) in block.params.iter().zip(args) {
            self.env[param] = Some(arg);
        }
        let steps = self.schedule_steps(schedule);
        // The main schedule's steps are the run's progress (loop bodies' are not).
        let progress = self
            .config
            .progress
            .as_ref()
            .filter(|_| schedule.block == program.main);
        if let Some(progress) = progress {
            progress.schedule(schedule.steps.len());
        }
        for (idx, (step, facts)) in schedule.steps.iter().zip(steps.iter()).enumerate() {
            let dying = &facts.dying;
            if let Some(progress) = progress {
                progress.step_done(idx);
            }
            self.check_interrupt()?;
            for &var in &facts.large {
                check_size(program, var, || step_op(step, block))?;
            }
            let start = profile.then(Instant::now);
            match step {
                Step::Kernel(kernel) => {
                    let tensor = self.run_kernel(kernel)?;
                    self.env[kernel.output.0] = Some(Slot::plain(tensor));
                    self.report.kernels += 1;
                }
                Step::Rows(rows) => {
                    let scatter = match rows.scatter_add {
                        Some(stmt) => Some(self.row_scatter(&block.stmts[stmt], rows)?),
                        None => None,
                    };
                    for (var, tensor) in self.run_rows(rows, scatter.as_ref())? {
                        self.env[var] = Some(Slot::plain(tensor));
                    }
                    self.report.kernels += rows.kernels.len();
                    self.report.row_groups += 1;
                }
                Step::MatMul(matmul) => {
                    let tensor = self.run_matmul(matmul)?;
                    self.env[matmul.out] = Some(Slot::plain(tensor));
                    self.report.matmuls += 1;
                }
                Step::Monoid(monoid) => {
                    self.report.statements += 1;
                    self.report.kernels += monoid.consumers.len();
                    for (var, tensor) in self.run_monoid(monoid, schedule.block)? {
                        self.env[var] = Some(Slot::plain(tensor));
                    }
                }
                Step::ScatterAdd { stmt, into } => {
                    let Some(Scatter { shape, array, body }) =
                        Scatter::of(&block.stmts[*stmt].expr)
                    else {
                        unreachable!("fuse adds scatters in place")
                    };
                    let target = self.env[*into].take().expect("computed by the step before");
                    let sum = self.scatter_add(shape, array, *body, target.tensor)?;
                    self.env[*into] = Some(Slot::plain(sum));
                }
                Step::Stmt(index) => {
                    let stmt = &block.stmts[*index];
                    let values = self.eval_stmt(stmt, None, dying)?;
                    for (&binder, value) in stmt.binders.iter().zip(values) {
                        self.env[binder] = Some(value);
                    }
                }
            }
            if let Some(start) = start {
                self.report.step_times.push(start.elapsed());
            }
            self.release(dying);
        }
        Ok(block.results.iter().map(|atom| self.slot(atom)).collect())
    }

    /// For each step of `schedule`, what running it needs besides the step, worked out at the
    /// schedule's first run and kept (a loop body runs its schedule at every step).
    fn schedule_steps(&mut self, schedule: &Schedule) -> Arc<Vec<StepFacts>> {
        if let Some(steps) = self.schedule_steps.get(&schedule.block) {
            return steps.clone();
        }
        let program = self.program;
        let (reads_outputs, large): (Vec<_>, Vec<_>) = (schedule.steps.iter())
            .map(|step| {
                let outputs = step.outputs(program, schedule.block);
                let large = (outputs.iter().copied())
                    .filter(|&var| may_be_too_large(program, var))
                    .collect();
                ((step.reads(program, schedule.block), outputs), large)
            })
            .unzip();
        let dying = super::last_uses(program, schedule.block, reads_outputs);
        let steps: Arc<Vec<StepFacts>> = Arc::new(
            (dying.into_iter().zip(large))
                .map(|(dying, large)| StepFacts { dying, large })
                .collect(),
        );
        self.schedule_steps.insert(schedule.block, steps.clone());
        steps
    }

    pub(super) fn interrupt_requested(&self) -> bool {
        self.config
            .interrupt
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }

    /// The value of `var` in row-major layout: borrowed when it is in that layout.
    fn standard_ref(&self, var: VarId) -> Cow<'_, Tensor> {
        let slot = self.env[var].as_ref().unwrap_or_else(|| {
            panic!("exec: {var} is used before it is bound (the verifier rules this out)")
        });
        match with_tensor!(&slot.tensor, array => array.is_standard_layout()) {
            true => Cow::Borrowed(&slot.tensor),
            false => Cow::Owned(slot.tensor.to_standard_layout()),
        }
    }

    /// The value of `var` in row-major layout.
    fn standard(&self, var: VarId) -> Tensor {
        let tensor = self.tensor(&Atom::Var(var));
        tensor.to_standard_layout()
    }

    fn run_kernel(&self, kernel: &Kernel) -> Res<Tensor> {
        if let Some((var, axes)) = kernel.permutation() {
            let source = self.standard(var);
            let fits = axes
                .iter()
                .zip(kernel.out_shape())
                .all(|(&axis, &dim)| source.shape().get(axis) == Some(&dim));
            if let Some(tensor) = fits
                .then(|| super::transpose::permuted(&source, &axes))
                .flatten()
            {
                return Ok(tensor);
            }
        }
        let binding = Binding {
            moves: true,
            ..Binding::alone(kernel)
        };
        let plan = self.launch_plan(kernel, binding);
        let moved_last = plan.moved_last;
        let elem = kernel.nodes[kernel.output.1].1;
        let mut out = super::pool::take(elem, kernel.out_shape().iter().product());
        // Note [Compiled kernels]: a small kernel launched often runs compiled before it is
        // bound (its launch is short), a large one after, where the lanes would pay per
        // output. A launch that leaves an axis runs on lanes, from a fresh buffer as any.
        let small = kernel.shape.iter().product::<usize>() < LINE;
        let policy = self.config.compile_loops;
        let compiled = small
            .then(|| (plan.compilation).at_launch(policy, self.program, kernel, &plan.held, 1))
            .flatten();
        if let Some(compiled) = compiled {
            // Its inputs are read where they are when they are row-major (a loop body's
            // small kernels: no list of borrowed values at every launch).
            let ran = match self.held_pointers(&plan) {
                Some((pointers, count)) => {
                    compiled.run(pointers[..count].iter().copied(), out.as_mut(), 0)
                }
                None => {
                    let inputs = launch_inputs(self, &plan);
                    let bases = (inputs.iter())
                        .map(|input| compiled::shifted_base(tensor_values(input), 0));
                    compiled.run(bases, out.as_mut(), 0)
                }
            };
            if ran {
                return self.ran_compiled(kernel, out);
            }
            out = super::pool::take(elem, out.len());
        }
        let inputs = launch_inputs(self, &plan);
        let launch = Launch::bind(kernel, plan, &inputs);
        if let Some(compiled) = (!small).then(|| launch.compiled(self, false)).flatten() {
            if launch.run_compiled(compiled, &mut out, self) {
                return self.ran_compiled(kernel, out);
            }
            out = super::pool::take(elem, out.len());
        }
        match kernel.reduce {
            None => with_column!(&mut out, values => launch.map(values, self)),
            Some(Reduction::Sum) => with_column!(&mut out, values => launch.reduce(values, self)),
            Some(selection) => launch.fold_selection(&mut out, selection, self),
        }
        if self.interrupt_requested() {
            return Err(InterpError::Interrupted.into());
        }
        Ok(match moved_last {
            None => out.into_tensor(kernel.out_shape()),
            Some(axis) => moved_back(out, kernel.out_shape(), axis - 1),
        })
    }

    /// The output `out` of `kernel`, which ran compiled (counted in the report).
    fn ran_compiled(&self, kernel: &Kernel, out: Column) -> Res<Tensor> {
        self.compiled_kernels.fetch_add(1, Ordering::Relaxed);
        if self.interrupt_requested() {
            return Err(InterpError::Interrupted.into());
        }
        Ok(out.into_tensor(kernel.out_shape()))
    }

    fn run_matmul(&self, matmul: &MatMul) -> Res<Tensor> {
        let out_shape: Vec<usize> = (matmul.out_axes().iter())
            .map(|&axis| matmul.shape[axis])
            .collect();
        let summed_shape: Vec<usize> = (matmul.summed.iter())
            .map(|&axis| matmul.shape[axis])
            .collect();
        // The first product overwrites every element (`Accum::Replace`), so a kept buffer
        // serves; every other term, and every other point of the summed axes, adds one
        // product into it (Note [Sums of products] in `passes::fuse::contraction`).
        let mut out = super::pool::take(matmul.elem, out_shape.iter().product());
        let mut accum = Accum::Replace;
        for (lhs, rhs) in matmul.terms() {
            let (lhs_data, rhs_data) = (self.standard(lhs.var), self.standard(rhs.var));
            for point in 0..summed_shape.iter().product() {
                let coords = unravel(point, &summed_shape);
                let at: Vec<(usize, i64)> = matmul.summed.iter().copied().zip(coords).collect();
                let product = Product {
                    operands: (lhs, rhs),
                    at: &at,
                    accum,
                };
                match &mut out {
                    Column::F32(values) => {
                        let data = (f32::of(&lhs_data), f32::of(&rhs_data));
                        matmul_typed(matmul, &product, data, values, self)?
                    }
                    Column::F64(values) => {
                        let data = (f64::of(&lhs_data), f64::of(&rhs_data));
                        matmul_typed(matmul, &product, data, values, self)?
                    }
                    other => unreachable!(
                        "fuse makes matrix products of floats only, not {:?}",
                        other.elem()
                    ),
                }
                accum = Accum::Add;
            }
        }
        Ok(out.into_tensor(&out_shape))
    }
}

/// What a step is called in error messages.
fn step_op(step: &Step, block: &crate::core::ir::Block) -> String {
    match step {
        Step::Kernel(Kernel {
            reduce: Some(reduction),
            ..
        }) => reduction.name().to_string(),
        Step::Kernel(_) | Step::Rows(_) => "for".to_string(),
        Step::MatMul(_) => "matrix product".to_string(),
        Step::Stmt(index)
        | Step::Monoid(MonoidStep { stmt: index, .. })
        | Step::ScatterAdd { stmt: index, .. } => {
            crate::core::print::expr_name(&block.stmts[*index].expr).to_string()
        }
    }
}

/// What running a step of a schedule needs besides the step (`Exec::schedule_steps`).
pub(super) struct StepFacts {
    /// The variables of the block read for the last time by the step (or bound by it and
    /// never read): dropped after it (Note [Releasing values]). The block's results, and
    /// variables from outside a loop body, are kept.
    dying: Vec<VarId>,
    /// The outputs `check_size` may refuse.
    large: Vec<VarId>,
}

/// Values smaller than this are always made (`check_size`).
const ALWAYS_MADE_BYTES: u128 = 256 << 20;

/// Whether `check_size` may refuse `var` (its type is static).
fn may_be_too_large(program: &Program, var: VarId) -> bool {
    program.var_ty(var).n_bytes() >= ALWAYS_MADE_BYTES
}

/// Refuses to make `var` when it is larger than the memory available
/// (`InterpError::TooLarge`); small values are always allowed.
pub fn check_size(
    program: &Program,
    var: VarId,
    op: impl FnOnce() -> String,
) -> Result<(), InterpError> {
    if !may_be_too_large(program, var) {
        return Ok(());
    }
    let ty = program.var_ty(var);
    let bytes = ty.n_bytes();
    let mut available = super::memory::available();
    if bytes > u128::from(available) {
        // The buffers kept for reuse are memory too.
        super::pool::clear();
        available = super::memory::available();
    }
    if bytes > u128::from(available) {
        return Err(InterpError::TooLarge {
            var,
            op: op(),
            shape: ty.shape.clone(),
            bytes,
            available,
        });
    }
    Ok(())
}

/// A read resolved against the actual buffer: `start + Σ axis_steps[a] * base[a]` plus
/// `Σ value(node) * stride` for computed coordinates.
#[derive(Clone)]
struct ReadPlan {
    tensor: usize,
    offset: isize,
    axis_steps: Vec<isize>,
    node_coords: Vec<(NodeId, isize)>,
    /// The `Coord::Masked` and `Coord::Wrapped` coordinates (counted as plain affines in
    /// `offset` and `axis_steps`).
    bounded: Vec<Bounded>,
    /// Whether its runs are prefetched (Note [Prefetching streams]): in reductions that
    /// are not members of a row group (`Launch::without_prefetch`).
    prefetch: bool,
}

impl ReadPlan {
    /// The positions of row `q` of `line` (`points` from its first point along its axis)
    /// where every masked coordinate is in range: one range, since each is affine (possibly
    /// with its start past its end, which is empty too).
    fn in_range(&self, line: &Line<'_>, q: usize, points: usize) -> Range<usize> {
        let mut valid = 0..points;
        for coord in &self.bounded {
            let Bound::Masked { dim } = coord.bound else {
                continue;
            };
            let (start, step) = line.affine_along(coord.constant, &coord.steps, q);
            let range = affine_in_range(start, step, dim, points);
            valid = valid.start.max(range.start)..valid.end.min(range.end);
        }
        valid
    }

    /// At position `p` of row `q` of `line`: what the wrapped coordinates take off the
    /// unwrapped address, and the first position after `p` where that changes
    /// (`usize::MAX`: never). Note [Wrapped reads] in `passes::fuse`.
    fn wrap_shift(&self, line: &Line<'_>, q: usize, p: usize) -> (isize, usize) {
        let (mut shift, mut next) = (0isize, usize::MAX);
        for coord in &self.bounded {
            let Bound::Wrapped { period, stride } = coord.bound else {
                continue;
            };
            let (start, step) = line.affine_along(coord.constant, &coord.steps, q);
            let value = start + step * p as i64;
            let turns = value.div_euclid(period);
            shift -= (turns * period) as isize * stride;
            let floor = turns * period;
            let left = match step.cmp(&0) {
                std::cmp::Ordering::Greater => (floor + period - value + step - 1) / step,
                std::cmp::Ordering::Less => (value - floor) / -step + 1,
                std::cmp::Ordering::Equal => continue,
            };
            next = next.min(p + left as usize);
        }
        (shift, next)
    }
}

/// An affine coordinate of a read that the engine bounds along each line: the affine's
/// constant and coefficient per axis of the kernel, and how it is bounded.
#[derive(Clone)]
struct Bounded {
    constant: i64,
    steps: Vec<i64>,
    bound: Bound,
}

#[derive(Clone, Copy)]
enum Bound {
    /// `Coord::Masked`: the value read is zero outside `0..dim`.
    Masked { dim: i64 },
    /// `Coord::Wrapped`: taken modulo `period`, on an axis of `stride` in the variable read.
    Wrapped { period: i64, stride: isize },
}

/// The positions `p` in `0..points` with `0 <= start + step * p < dim`.
fn affine_in_range(start: i64, step: i64, dim: i64, points: usize) -> Range<usize> {
    let ceil_div = |a: i64, b: i64| -((-a).div_euclid(b));
    let n = points as i64;
    let (low, high) = match step.cmp(&0) {
        std::cmp::Ordering::Equal if (0..dim).contains(&start) => (0, n),
        std::cmp::Ordering::Equal => (0, 0),
        std::cmp::Ordering::Greater => (
            ceil_div(-start, step),
            (dim - 1 - start).div_euclid(step) + 1,
        ),
        std::cmp::Ordering::Less => (
            ceil_div(start - dim + 1, -step),
            start.div_euclid(-step) + 1,
        ),
    };
    let low = low.clamp(0, n);
    low as usize..high.clamp(low, n) as usize
}

/// A task's working space for a kernel's lines: a lane per node, and for a node whose line is
/// a contiguous run of an input (`Launch::read_line`, or a `select` that picks such a run
/// whole), that `Run`: the operations read it in place, not through a copy in the lane; and
/// for each read, the runs it has read so far in this task (Note [Prefetching streams]).
struct Scratch {
    /// The `LaunchPlan::scratch_key` of the plan it was made for: kept for its next launch
    /// when dropped, unless 0.
    key: u64,
    lanes: Vec<Lane>,
    runs: Vec<Option<Run>>,
    streams: Vec<Stream>,
    /// The coordinates of a line's first point (`Scratch::at`).
    base: Vec<i64>,
}

/// A line that is a contiguous run of an input, read in place: the read node whose plan
/// names the input, and the run's first position in it.
#[derive(Clone, Copy, Debug)]
struct Run {
    read: usize,
    start: usize,
}

impl Drop for Scratch {
    /// Keeps the scratch for the next launch of its plan, with the lanes as they are (a
    /// literal's set); the oldest kept one, or one not kept, gives its lanes back. When the
    /// thread ends, the kept ones are dropped with its storage, their lanes with them.
    fn drop(&mut self) {
        let lanes = std::mem::take(&mut self.lanes);
        if self.key == 0 {
            Lane::give_back(lanes);
            return;
        }
        if KEPT.try_with(|_| ()).is_err() {
            return;
        }
        let kept = Scratch {
            key: self.key,
            lanes,
            runs: std::mem::take(&mut self.runs),
            streams: std::mem::take(&mut self.streams),
            base: std::mem::take(&mut self.base),
        };
        let oldest = KEPT.with_borrow_mut(|spare| {
            spare.push(kept);
            (spare.len() > KEPT_SCRATCHES).then(|| spare.remove(0))
        });
        if let Some(mut oldest) = oldest {
            oldest.key = 0;
        }
    }
}

impl Scratch {
    /// `f(scratch, base)` where `base` is `lead`, then the coordinates of row-major position
    /// `flat` in `shape`, then `trail`: built in a buffer the task reuses, so that its rows
    /// and runs allocate nothing.
    fn at<R>(
        &mut self,
        lead: &[i64],
        (flat, shape): (usize, &[usize]),
        trail: &[i64],
        f: impl FnOnce(&mut Scratch, &mut [i64]) -> R,
    ) -> R {
        let mut base = std::mem::take(&mut self.base);
        base.clear();
        base.extend_from_slice(lead);
        let start = base.len();
        base.resize(start + shape.len(), 0);
        unravel_into(flat, shape, &mut base[start..]);
        base.extend_from_slice(trail);
        let result = f(self, &mut base);
        self.base = base;
        result
    }
}

/// A kernel bound to its inputs: its plan (Note [Launch plans]) and what it reads.
struct Launch<'k> {
    kernel: &'k Kernel,
    plan: Arc<LaunchPlan>,
    /// What the reads read (`ReadPlan::tensor` indexes it).
    sources: Vec<Source<'k>>,
    /// By candidate of the plan: the point mask it is at this launch, if any.
    points: Vec<Option<PointMask>>,
}

// Note [Lines of rows]
// ~~~~~~~~~~~~~~~~~~~~
// Every line pays a fixed cost before its loops run: each node's read is resolved to a run
// or a copy, its primitive dispatched, its operands bound (50-100 ns here). Lines of `LINE`
// points along a kernel's last axis pay it once per 1024 points, or once per row when the
// rows are shorter: a row-wise softmax over 4096 rows of 1000 pays it 4096 times in each of
// its maps, and a map that streams memory was measured 1.35x faster in lines of 4096 points
// than of 1024 (`2 x` over 10^7 floats, the gradient of a sum of squares).
//
// So an elementwise kernel's lines are as long as its lanes allow: `LANE_BYTES` (a third of
// a core's L1 cache) over the bytes of one point of every lane a line writes (a literal's,
// an unread node's, a run's read in place and an output written in place need none;
// `line_points`), within `LINE..=MAX_LINE` points: `2 x` runs lines of 16384 points, `exp
// (x[r, c] - m[r])` of 4096 (measured alone, filling 8 rows of `m` to a lane of 32 KB per
// line cost a third more than 2 rows). And where its rows (the last axis) are shorter
// than that, a line holds several consecutive rows of the axis before it, in row-major order
// in every lane (`Line::rows`): the primitives run over all of its points in one loop each,
// and only reads, indices and point masks work row by row. A read contiguous across the rows
// is still read in place; one that is the same along each row (`m[r]` in `exp (x[r, c] -
// m[r])`) fills its row of the lane. The values are the same: each point is computed by the
// same operations from the same operands.
//
// A reduction along axis 0 whose axis fits in one line of `LINE` points (a row-wise sum or
// maximum of 4096 rows of 1000) takes the rows of its line from consecutive outputs along
// its last axis (`reduce_in_lines`): each output's row is then summed (folded) alone, as its
// one line would be, so the bits are those of one line per output. Longer reductions keep
// lines of at most `LINE` points along axis 0. A reduction across its output (a column sum
// of a `[1024, 256]` table) takes several rows of axis 0 per line of a segment, each row
// then added to the segment's accumulators in order (`rows_across`), as its own line was.

/// Bytes of the lanes a line writes (Note [Lines of rows]).
const LANE_BYTES: usize = 16 << 10;
/// Most points of a line.
const MAX_LINE: usize = 16 * LINE;

// Note [The exp of a difference]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A softmax, `logsumexp` and their gradients compute `exp (x - max x)` over every element:
// as two nodes, a line is a pass of `sub` into a lane and a pass of `exp` over it. When the
// difference is a float `sub` that only the `exp` reads, the `exp` computes it on the fly
// (`lanes::exp_of_difference`): the difference is rounded to its type as `sub` rounds it, so
// the bits are those of the two passes, and the `sub` node computes nothing.

// Note [Uniform coordinates]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A coordinate computed by nodes (`Coord::Node`) is read as a gather: an address per point,
// then a load per point. When the nodes depend on no point (a rank-0 read and literals),
// their lane is a splat: the row of a loop's stored carries that a step of its reverse
// sweep reads (`carries[min (max (n - 1 - k) 0) (n - 1), i0]`, every gradient of a loop
// over tables) is one row for the whole launch. Such a coordinate times its stride moves
// the read's start (`read_typed`), and the read is a run like an affine one: read in place
// when contiguous, copied otherwise. The values are those of the gather.

// Note [Point masks]
// ~~~~~~~~~~~~~~~~~~
// The gradients of shifts and scans select at one row: `select (eq (iota n) 0) a b` (the
// first row of a shifted array, Thm 3.7's first case). Computed as written, each line makes
// an `i64` lane of indices, compares it with the constant and blends: three passes over the
// line for at most one point where the mask holds. A comparison `eq`/`ne` of an index node
// with a value known when the kernel launches (an integer literal, or a read of a rank-0
// integer variable: the one-hot gradient of `maximum` selects at `first`, the position a
// reduction found) is a *point mask*, also through an integer cast of the index that is exact
// at every point of the kernel (`ordinal i == k` compares a `u32`): each line finds in O(1)
// where its affine index takes that value (at most one position), and its lane is a splat
// when the line misses it, which `select` then turns into a copy of one operand. A node that only point masks read
// (the index, its cast, the value) is never computed. The bits are those of the comparison.

/// `index == value` (or `!=` with `!equal`), where `index` is an `Index` node.
#[derive(Clone, Copy, Debug)]
struct PointMask {
    index: usize,
    value: i64,
    equal: bool,
}

/// The point mask node `node` of `kernel` is, if it is one (Note [Point masks]); `known`
/// gives the value of a node that is the same at every point of the launch, if it is an
/// integer known now. What `Launch::bind` finds for each of its plan's candidates.
#[cfg(test)]
fn point_mask(
    kernel: &Kernel,
    node: &Node,
    known: impl Fn(NodeId) -> Option<i64>,
) -> Option<PointMask> {
    let (index, value, equal) = mask_candidate(kernel, node)?;
    Some(PointMask {
        index: index.0 as usize,
        value: known(value)?,
        equal,
    })
}

/// A comparison that may be a point mask (Note [Point masks]): its node, its index node
/// (after an exact cast), the node of the value compared with, and whether it tests
/// equality.
#[derive(Clone, Copy)]
struct MaskCandidate {
    node: usize,
    index: usize,
    value: NodeId,
    equal: bool,
}

impl MaskCandidate {
    /// The point mask it is where the value it compares with is `value`.
    fn with_value(self, value: i64) -> PointMask {
        PointMask {
            index: self.index,
            value,
            equal: self.equal,
        }
    }
}

/// Whether `node` is a point mask when the value it compares with is known: an `eq` or `ne`
/// of an exact index (`exact_index`) and another node. Its index node, the other node, and
/// whether it tests equality.
fn mask_candidate(kernel: &Kernel, node: &Node) -> Option<(NodeId, NodeId, bool)> {
    let Node::Prim(prim @ (Prim::Eq | Prim::Ne), operands) = node else {
        return None;
    };
    let [a, b] = operands[..] else {
        return None;
    };
    let (index, value) = match (exact_index(kernel, a), exact_index(kernel, b)) {
        (Some(index), _) => (index, b),
        (_, Some(index)) => (index, a),
        _ => return None,
    };
    Some((index, value, *prim == Prim::Eq))
}

/// The index node whose values `node` has: an index, or an integer cast of one whose values
/// at every point of the kernel the cast keeps (non-negative and within the type).
fn exact_index(kernel: &Kernel, node: NodeId) -> Option<NodeId> {
    match &kernel.nodes[node].0 {
        Node::Index(_) => Some(node),
        Node::Prim(Prim::Cast(elem), operands) => {
            let [index] = operands[..] else {
                return None;
            };
            let Node::Index(affine) = &kernel.nodes[index].0 else {
                return None;
            };
            let (_, limit) = elem.int_range()?;
            let (low, high) = affine.bounds(&kernel.shape)?;
            (low >= 0 && high <= limit).then_some(index)
        }
        _ => None,
    }
}

/// The flat offset `k` whose row-major digits are all the computed coordinates (nodes and
/// wrapped affines) of a read of `coords` in a variable of shape `dims` (Note [Row-major
/// digits] in `core::digits`), in units of the last one's stride, and the axes they are;
/// `None` unless they are consecutive axes and the digits of one non-negative affine
/// function of the kernel's coordinates below their size. Such a gather (a pair index set,
/// `concat`) is then an affine read, a contiguous run along `k`, not a division and a
/// remainder per element.
fn digits_of_one_offset(
    kernel: &Kernel,
    coords: &[Coord],
    dims: &[usize],
) -> Option<(Range<usize>, Affine)> {
    /// A value of the digits' computation: a node, or a wrapped coordinate's affine
    /// (`Base`) and the wrapped coordinate itself (its `mod`), by axis.
    #[derive(Clone, Copy)]
    enum Digit {
        Node(NodeId),
        Unwrapped(usize),
        Wrapped(usize),
    }
    let digits: Vec<(usize, Digit)> = (coords.iter().enumerate())
        .filter_map(|(axis, coord)| match coord {
            Coord::Node(node) => Some((axis, Digit::Node(*node))),
            Coord::Wrapped(..) => Some((axis, Digit::Wrapped(axis))),
            Coord::Affine(_) | Coord::Masked(..) => None,
        })
        .collect();
    let (&(first, _), &(last, _)) = (digits.first()?, digits.last()?);
    if last - first + 1 != digits.len() {
        return None;
    }
    let constant = |node: Digit| match node {
        Digit::Node(node) => match &kernel.nodes[node].0 {
            Node::Index(affine) if affine.terms.is_empty() => Some(affine.constant),
            Node::Lit(scalar) => scalar.int_value(),
            _ => None,
        },
        Digit::Unwrapped(_) | Digit::Wrapped(_) => None,
    };
    let base = |affine: &Affine| match affine.bounds(&kernel.shape) {
        Some((low, high)) => digits::Step::Base {
            base: affine.clone(),
            low,
            high,
        },
        None => digits::Step::Opaque,
    };
    let nodes: Vec<Digit> = digits.iter().map(|&(_, digit)| digit).collect();
    let flat = digits::row_major_offset(&nodes, &dims[first..=last], |digit| match digit {
        Digit::Node(node) => match &kernel.nodes[node].0 {
            Node::Index(affine) => base(affine),
            Node::Prim(prim, operands) => {
                let operands: Vec<Digit> = operands.iter().map(|&o| Digit::Node(o)).collect();
                digits::Step::of_prim(*prim, &operands, constant)
            }
            _ => digits::Step::Opaque,
        },
        Digit::Unwrapped(axis) | Digit::Wrapped(axis) => {
            let Coord::Wrapped(affine, period) = &coords[axis] else {
                unreachable!("only wrapped coordinates are viewed by axis")
            };
            match digit {
                Digit::Wrapped(_) => digits::Step::Mod(Digit::Unwrapped(axis), *period as i64),
                _ => base(affine),
            }
        }
    })?;
    Some((first..last + 1, flat))
}

/// A variable a kernel reads: its values (the row-major elements of its value, found once
/// per launch rather than per line), or in a row group, the output of an earlier member (its
/// block's part is in `Line::group`, at this index).
enum Source<'t> {
    Values(ColumnRef<'t>),
    Member(usize),
}

impl Exec<'_> {
    /// The data of the values `plan` reads from the environment, in `launch_inputs`' order,
    /// when each is in row-major layout and they fit `compiled::SMALL` pointers on the stack
    /// (as many as a compiled launch keeps there).
    fn held_pointers(&self, plan: &LaunchPlan) -> Option<([*const u8; compiled::SMALL], usize)> {
        let mut pointers = [std::ptr::null(); compiled::SMALL];
        let mut count = 0;
        for var in plan.inputs() {
            let slot = self.env[var].as_ref()?;
            let data = with_tensor!(&slot.tensor, array => array
                .as_slice()
                .map(|values| values.as_ptr().cast::<u8>()))?;
            *pointers.get_mut(count)? = data;
            count += 1;
        }
        Some((pointers, count))
    }
}

/// The values of the variables a launch by `plan` reads from its inputs (not from earlier
/// row group members), in the order of `LaunchPlan::held`, in row-major layout.
fn launch_inputs<'e>(exec: &'e Exec<'_>, plan: &LaunchPlan) -> Vec<Cow<'e, Tensor>> {
    plan.inputs().map(|var| exec.standard_ref(var)).collect()
}

/// How a kernel is bound: the variables of the row group members before it (whose outputs
/// it reads from `Line::group`), the first of its axes that `merge_axes` may merge into the
/// one before, whether its reads may be prefetched (Note [Prefetching streams]), and whether
/// its plan may move an output axis last (Note [Sums across a middle axis]; the launch's
/// caller then puts its output back in order).
#[derive(Clone, Copy)]
struct Binding<'m> {
    members: &'m [VarId],
    first_merged: usize,
    prefetch: bool,
    moves: bool,
}

impl Binding<'static> {
    /// A kernel launched on its own: a reduction's axis 0 is not merged.
    fn alone(kernel: &Kernel) -> Binding<'static> {
        Binding {
            members: &[],
            first_merged: usize::from(kernel.reduce.is_some()),
            prefetch: true,
            moves: false,
        }
    }
}

impl Exec<'_> {
    /// The plan of `kernel` bound by `binding`: made at its first launch, then kept (Note
    /// [Launch plans]).
    fn launch_plan(&self, kernel: &Kernel, binding: Binding<'_>) -> Arc<LaunchPlan> {
        let key = (
            std::ptr::from_ref(kernel) as usize,
            binding.members.len(),
            binding.first_merged,
            binding.prefetch,
            binding.moves,
        );
        let mut plans =
            (self.scalar_bodies.launches.0.lock()).unwrap_or_else(|poisoned| poisoned.into_inner());
        let plan = (plans.entry(key))
            .or_insert_with(|| Arc::new(LaunchPlan::new(self.program, kernel, binding)));
        plan.clone()
    }
}

// Note [Launch plans]
// ~~~~~~~~~~~~~~~~~~~
// Binding a kernel to its inputs resolves each read to an offset and a step per axis, merges
// axes, finds the exps of differences and the nodes no line computes, and sizes the lines:
// work that depends on the kernel and on the types of the variables it reads, not on their
// values, and that costs microseconds. A loop of small steps launches the same kernels
// thousands of times (ADBench's LSTM: 1023 steps of kernels over 14 points, where binding was
// a third of the run). So the first launch of a kernel in a prepared program makes its
// `LaunchPlan`, kept in `LaunchPlans` by the kernel's address (the schedule is borrowed for
// the prepared program's life, so an address names one kernel), and every launch after it
// only finds its values: each variable's elements and the values point masks compare with
// (Note [Point masks]), read at the launch. Which nodes are point masks decides which nodes
// no line computes and so the lines' length: the plan assumes that every comparison of an
// exact index with a literal integer or a rank-0 integer input is one, and a launch where one
// is not (a `Word64` above `i64::MAX`) binds with a plan of its own.
//
// A launch's lanes (`Scratch`) are the other fixed cost: a lane per node, literals set. The
// lanes of a kernel of fewer points than a line (`KEPT_SCRATCH_BYTES` in all, lanes no
// longer than the kernel has points) are kept on the thread when the launch ends and taken back, as they are, by the
// next launch of the same plan (`KEPT`, by `LaunchPlan::scratch_key`; every line writes a
// lane before reading it, and literals are never written). Measured on lstm's loop of 1023
// small steps (release build, alternating runs of the binaries): primal 41 -> 25 ms with
// plans, -> 16 ms with kept lanes, -> 14 ms with inputs borrowed rather than cloned
// (`launch_inputs`); gradient 307 -> 99 ms.

/// How to launch a kernel, found once (Note [Launch plans]). `shape` is the kernel's
/// iteration space with adjacent axes merged where every read and index moves through them
/// as through one axis (so an elementwise kernel over `[n, 2]` runs lines of `2n` points, not
/// `n` lines of 2).
#[derive(Clone)]
pub(super) struct LaunchPlan {
    shape: Vec<usize>,
    /// The variables the reads read, in the order of `Launch::sources`, each with its
    /// position among the row group members before the kernel, if it is one.
    held: Vec<(VarId, Option<usize>)>,
    reads: Vec<Option<ReadPlan>>,
    /// `Node::Index` affines over `shape`, by node.
    indices: Vec<Option<Affine>>,
    /// The comparisons that may be point masks.
    candidates: Vec<MaskCandidate>,
    /// By node: its position among the candidates, if it is one.
    candidate_of: Vec<Option<usize>>,
    /// Which candidates the plan takes as point masks.
    masks: Vec<bool>,
    /// By node: an index that only point masks read, or a difference that only its `exp`
    /// reads, so that no line computes its lane.
    unread: Vec<bool>,
    /// By node: the operands `(a, b)` of an `exp (sub a b)` computed in one pass (Note [The
    /// exp of a difference]).
    differences: Vec<Option<(NodeId, NodeId)>>,
    /// Points of an elementwise kernel's lines (Note [Lines of rows]).
    line: usize,
    /// Points of the lanes: `line`, or all of the kernel's when it has fewer (no line is
    /// longer).
    lane_points: usize,
    /// This plan among all plans made in the process (never 0), when its launches keep
    /// their scratch for the next launch (`KEPT_SCRATCH_BYTES`); 0 when they do not.
    scratch_key: u64,
    /// The kernel compiled, once it has been launched often enough (Note [Compiled
    /// kernels]).
    compilation: Arc<compiled::Compilation>,
    /// The kernel axis moved to the end of `shape` (before merging), if any: the launch
    /// then writes its output with that axis last (Note [Sums across a middle axis]).
    moved_last: Option<usize>,
}

/// The most bytes of lanes a launch keeps for the next launch of its plan, if its kernel has
/// fewer points than a line (Note [Launch plans]): small kernels, where making the lanes
/// costs as much as running them. Longer kernels give their lanes back for any kernel to use.
const KEPT_SCRATCH_BYTES: usize = 64 << 10;
/// The most scratches kept on a thread.
const KEPT_SCRATCHES: usize = 64;

thread_local! {
    /// Scratches of finished launches on this thread, by `LaunchPlan::scratch_key`.
    static KEPT: std::cell::RefCell<Vec<Scratch>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The launch plans of one prepared program, by kernel address, number of row group members
/// before it, first merged axis and prefetching (Note [Launch plans]).
#[derive(Default)]
pub(super) struct LaunchPlans(PlanMap);

/// Keyed by Fx hashes: a SipHash of the key was 3 % of a loop of small steps (lstm's
/// gradient), and addresses need no defence against chosen keys.
type PlanMap =
    std::sync::Mutex<rustc_hash::FxHashMap<(usize, usize, usize, bool, bool), Arc<LaunchPlan>>>;

impl LaunchPlan {
    /// The plan of `kernel` bound by `binding`, reading variables of the types `program`
    /// gives them.
    fn new(program: &Program, kernel: &Kernel, binding: Binding<'_>) -> LaunchPlan {
        let Binding {
            members,
            first_merged,
            prefetch,
            moves,
        } = binding;
        let mut held: Vec<(VarId, Option<usize>)> = Vec::new();
        let rank = kernel.shape.len();
        let reads: Vec<Option<ReadPlan>> = kernel
            .nodes
            .values()
            .map(|(node, _)| {
                let Node::Read { var, coords, .. } = node else {
                    return None;
                };
                let tensor = match held.iter().position(|(held_var, _)| held_var == var) {
                    Some(position) => position,
                    None => {
                        let member = members.iter().position(|member| member == var);
                        held.push((*var, member));
                        held.len() - 1
                    }
                };
                let dims = &program.var_ty(*var).shape;
                let strides = row_major_strides(dims);
                let mut plan = ReadPlan {
                    tensor,
                    offset: 0,
                    axis_steps: vec![0; rank],
                    node_coords: Vec::new(),
                    bounded: Vec::new(),
                    prefetch: prefetch && kernel.reduce.is_some() && prefetch::enabled(),
                };
                // Note [Row-major digits]: the axes whose coordinates are the digits of one
                // affine offset are read at that offset.
                let digits = digits_of_one_offset(kernel, coords, dims);
                let (digit_axes, flat) = digits.unwrap_or((0..0, Affine::default()));
                if let Some(last) = digit_axes.clone().last() {
                    let stride = strides[last] as isize;
                    plan.offset += flat.constant as isize * stride;
                    for &(axis, coeff) in &flat.terms {
                        plan.axis_steps[axis] += coeff as isize * stride;
                    }
                }
                for (axis_of_var, (coord, &stride)) in coords.iter().zip(&strides).enumerate() {
                    if digit_axes.contains(&axis_of_var) {
                        continue;
                    }
                    let stride = stride as isize;
                    match coord {
                        Coord::Affine(affine)
                        | Coord::Masked(affine, _)
                        | Coord::Wrapped(affine, _) => {
                            let bound = match coord {
                                Coord::Masked(_, dim) => Some(Bound::Masked { dim: *dim as i64 }),
                                Coord::Wrapped(_, period) => Some(Bound::Wrapped {
                                    period: *period as i64,
                                    stride,
                                }),
                                _ => None,
                            };
                            if let Some(bound) = bound {
                                plan.bounded.push(Bounded {
                                    constant: affine.constant,
                                    steps: (0..rank).map(|axis| affine.coeff(axis)).collect(),
                                    bound,
                                });
                            }
                            plan.offset += affine.constant as isize * stride;
                            for &(axis, coeff) in &affine.terms {
                                plan.axis_steps[axis] += coeff as isize * stride;
                            }
                        }
                        Coord::Node(node) => plan.node_coords.push((*node, stride)),
                    }
                }
                Some(plan)
            })
            .collect();
        let indices = kernel
            .nodes
            .values()
            .map(|(node, _)| match node {
                Node::Index(affine) => Some(affine.clone()),
                _ => None,
            })
            .collect();
        // The output node is computed as written (`eval_line_into_at` applies its primitive
        // to its operands' lanes).
        let root = kernel.output.1 .0 as usize;
        let candidates: Vec<MaskCandidate> = (kernel.nodes.values().enumerate())
            .filter(|&(index, _)| index != root)
            .filter_map(|(index, (node, _))| {
                let (index_node, value, equal) = mask_candidate(kernel, node)?;
                Some(MaskCandidate {
                    node: index,
                    index: index_node.0 as usize,
                    value,
                    equal,
                })
            })
            .collect();
        // Every candidate comparing with a literal integer or a rank-0 integer input.
        let masks = (candidates.iter())
            .map(|candidate| match &kernel.nodes[candidate.value] {
                (Node::Lit(scalar), _) => scalar.int_value().is_some(),
                (Node::Read { var, coords, .. }, elem) => {
                    coords.is_empty() && elem.is_integer() && !members.contains(var)
                }
                _ => false,
            })
            .collect();
        let mut candidate_of = vec![None; kernel.nodes.len()];
        for (position, candidate) in candidates.iter().enumerate() {
            candidate_of[candidate.node] = Some(position);
        }
        let mut plan = LaunchPlan {
            shape: kernel.shape.clone(),
            held,
            reads,
            indices,
            candidates,
            candidate_of,
            masks,
            unread: Vec::new(),
            differences: exp_differences(kernel),
            line: LINE,
            lane_points: LINE,
            scratch_key: 0,
            compilation: Arc::default(),
            moved_last: None,
        };
        if let Some(axis) = moves.then(|| plan.axis_across(kernel)).flatten() {
            plan.move_last(axis);
        }
        plan.merge_axes(first_merged);
        plan.find_unread(kernel);
        // The lanes' bytes, counting every node's as a full lane.
        let bytes: usize = (kernel.nodes.values())
            .map(|(_, elem)| elem.bytes() * plan.lane_points)
            .sum();
        if plan.lane_points < LINE && bytes <= KEPT_SCRATCH_BYTES {
            static PLANS: AtomicU64 = AtomicU64::new(1);
            plan.scratch_key = PLANS.fetch_add(1, Ordering::Relaxed);
        }
        plan
    }

    /// `unread` and `line` for the plan's `masks`: whether a line needs a node's lane. The
    /// root's, and its operands' (nodes come after their operands), but for the operands of
    /// point masks, and for a difference whose `exp` reads its operands instead.
    fn find_unread(&mut self, kernel: &Kernel) {
        let root = kernel.output.1 .0 as usize;
        let nodes: Vec<&Node> = kernel.nodes.values().map(|(node, _)| node).collect();
        let mut masked = vec![false; nodes.len()];
        for (candidate, &mask) in self.candidates.iter().zip(&self.masks) {
            masked[candidate.node] = mask;
        }
        let mut read = vec![false; nodes.len()];
        read[root] = true;
        for index in (0..nodes.len()).rev() {
            if !read[index] || masked[index] {
                continue;
            }
            match nodes[index] {
                Node::Prim(..) if self.differences[index].is_some() => {
                    let (a, b) = self.differences[index].expect("a difference");
                    read[a.0 as usize] = true;
                    read[b.0 as usize] = true;
                }
                Node::Prim(_, operands) => {
                    for operand in operands {
                        read[operand.0 as usize] = true;
                    }
                }
                Node::Read { .. } => {
                    let plan = self.reads[index].as_ref().expect("every read has a plan");
                    for &(operand, _) in &plan.node_coords {
                        read[operand.0 as usize] = true;
                    }
                }
                Node::Lit(_) | Node::Index(_) => {}
            }
        }
        self.unread = read.iter().map(|&read| !read).collect();
        self.line = self.line_points(kernel);
        self.lane_points = self.line.min(self.shape.iter().product());
    }

    /// This plan with other candidates taken as point masks.
    fn with_masks(&self, kernel: &Kernel, masks: Vec<bool>) -> LaunchPlan {
        let mut plan = LaunchPlan {
            masks,
            scratch_key: 0,
            ..self.clone()
        };
        plan.find_unread(kernel);
        plan
    }

    /// Points of the lines of a kernel (of its lanes; Note [Lines of rows]): as many as fit
    /// `LANE_BYTES` of the lanes a line writes: every node's but a literal's, an unread
    /// node's, a read's that is a run in place on lines of rows (contiguous along the line's
    /// axis and across its rows), and the root's of an elementwise kernel (its line is
    /// written into the output).
    fn line_points(&self, kernel: &Kernel) -> usize {
        let (nodes, last) = (&kernel.nodes, self.shape.len().saturating_sub(1));
        let (inner, outer) = match kernel.reduce {
            Some(_) => (0, last),
            None => (last, last.saturating_sub(1)),
        };
        let in_place = |plan: &ReadPlan| {
            plan.node_coords.is_empty()
                && !(plan.bounded.iter()).any(|coord| matches!(coord.bound, Bound::Masked { .. }))
                && plan.axis_steps.get(inner) == Some(&1)
                && (outer == inner || plan.axis_steps[outer] == self.shape[inner] as isize)
        };
        let root = kernel.output.1 .0 as usize;
        let written_out = kernel.reduce.is_none() && root + 1 == nodes.len();
        let bytes: usize = (nodes.values().enumerate())
            .filter(|&(index, (node, _))| match node {
                Node::Lit(_) => false,
                _ if self.unread[index] => false,
                Node::Read { .. } => !self.reads[index].as_ref().is_some_and(in_place),
                Node::Prim(..) => !(written_out && index == root),
                Node::Index(_) => true,
            })
            .map(|(_, (_, elem))| elem.bytes())
            .sum();
        (LANE_BYTES / bytes.max(1)).clamp(LINE, MAX_LINE)
    }

    /// The output axis that a sum's lines run across instead of its last (Note [Sums
    /// across a middle axis]), if any.
    fn axis_across(&self, kernel: &Kernel) -> Option<usize> {
        let last = self.shape.len().checked_sub(1)?;
        let long_sum = kernel.reduce == Some(Reduction::Sum) && self.shape[0] >= WIDE;
        if !long_sum || last < 2 || self.shape[last] >= WIDE {
            return None;
        }
        let along = self.strided_reads(0);
        if along == 0 {
            return None;
        }
        (1..last)
            .filter(|&axis| self.shape[axis] >= WIDE && self.strided_reads(axis) <= along)
            .max_by_key(|&axis| self.shape[axis])
    }

    /// The variables a launch reads from the environment (not from earlier row group
    /// members), in the order of `held`.
    fn inputs(&self) -> impl Iterator<Item = VarId> + '_ {
        (self.held.iter())
            .filter(|(_, member)| member.is_none())
            .map(|&(var, _)| var)
    }

    /// How many reads move by more than one element a step of `axis`.
    fn strided_reads(&self, axis: usize) -> usize {
        (self.reads.iter().flatten())
            .filter(|plan| !matches!(plan.axis_steps[axis], 0 | 1))
            .count()
    }

    /// Moves kernel axis `axis` to the end of the iteration space (`moved_last`).
    fn move_last(&mut self, axis: usize) {
        fn rotate<T>(values: &mut [T], axis: usize) {
            values[axis..].rotate_left(1);
        }
        let rank = self.shape.len();
        rotate(&mut self.shape, axis);
        for plan in self.reads.iter_mut().flatten() {
            rotate(&mut plan.axis_steps, axis);
            for coord in &mut plan.bounded {
                rotate(&mut coord.steps, axis);
            }
        }
        for affine in self.indices.iter_mut().flatten() {
            for (term_axis, _) in &mut affine.terms {
                *term_axis = moved_last_position(*term_axis, axis, rank);
            }
            affine.terms.sort_unstable();
        }
        self.moved_last = Some(axis);
    }

    /// Merges axis `a - 1` into axis `a` (for `a` from the last down to `first + 1`) when
    /// every read steps through axis `a - 1` exactly `shape[a]` times as far as through `a`,
    /// and so does every index: then the two loops are one loop over their product.
    fn merge_axes(&mut self, first: usize) {
        let mut axis = self.shape.len();
        while axis > first + 1 {
            axis -= 1;
            let (outer, inner) = (axis - 1, axis);
            let extent = self.shape[inner];
            let reads_merge = self.reads.iter().flatten().all(|plan| {
                plan.axis_steps[outer] == plan.axis_steps[inner] * extent as isize
                    && (plan.bounded.iter())
                        .all(|coord| coord.steps[outer] == coord.steps[inner] * extent as i64)
            });
            let indices_merge = self
                .indices
                .iter()
                .flatten()
                .all(|affine| affine.coeff(outer) == affine.coeff(inner) * extent as i64);
            if !(reads_merge && indices_merge) {
                continue;
            }
            self.shape[outer] *= extent;
            self.shape.remove(inner);
            for plan in self.reads.iter_mut().flatten() {
                plan.axis_steps.remove(outer);
                for coord in &mut plan.bounded {
                    coord.steps.remove(outer);
                }
            }
            for affine in self.indices.iter_mut().flatten() {
                affine.terms = affine
                    .terms
                    .iter()
                    .filter(|&&(term_axis, _)| term_axis != outer)
                    .map(|&(term_axis, coeff)| {
                        (
                            if term_axis > outer {
                                term_axis - 1
                            } else {
                                term_axis
                            },
                            coeff,
                        )
                    })
                    .collect();
            }
        }
    }
}

impl<'k> Launch<'k> {
    /// The launch of `kernel` by `plan` (`Exec::launch_plan`), reading `inputs`
    /// (`launch_inputs`), and the outputs of earlier row group members from `Line::group`.
    fn bind(
        kernel: &'k Kernel,
        plan: Arc<LaunchPlan>,
        inputs: &'k [Cow<'_, Tensor>],
    ) -> Launch<'k> {
        let mut inputs = inputs.iter();
        let sources: Vec<Source<'k>> = (plan.held.iter())
            .map(|&(_, member)| match member {
                Some(member) => Source::Member(member),
                None => {
                    let tensor = inputs.next().expect("launch_inputs has every read");
                    Source::Values(tensor_values(tensor))
                }
            })
            .collect();
        let known = |node: NodeId| match &kernel.nodes[node].0 {
            Node::Lit(scalar) => scalar.int_value(),
            Node::Read { coords, .. } if coords.is_empty() => {
                let read: &ReadPlan = plan.reads[node.0 as usize].as_ref()?;
                match sources[read.tensor] {
                    Source::Values(ColumnRef::I64(values)) => values.first().copied(),
                    Source::Values(ColumnRef::I32(values)) => values.first().map(|&v| v.into()),
                    Source::Values(ColumnRef::U32(values)) => values.first().map(|&v| v.into()),
                    Source::Values(ColumnRef::U64(values)) => {
                        values.first().and_then(|&v| i64::try_from(v).ok())
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let points: Vec<Option<PointMask>> = (plan.candidates.iter())
            .map(|candidate| Some(candidate.with_value(known(candidate.value)?)))
            .collect();
        let plan = match points
            .iter()
            .map(Option::is_some)
            .eq(plan.masks.iter().copied())
        {
            true => plan,
            false => {
                Arc::new(plan.with_masks(kernel, points.iter().map(Option::is_some).collect()))
            }
        };
        Launch {
            kernel,
            plan,
            sources,
            points,
        }
    }

    fn scratch(&self) -> Scratch {
        let key = self.plan.scratch_key;
        let kept = (key != 0).then(|| {
            KEPT.with_borrow_mut(|spare| {
                let position = spare.iter().rposition(|scratch| scratch.key == key)?;
                Some(spare.swap_remove(position))
            })
        });
        if let Some(mut scratch) = kept.flatten() {
            scratch.runs.fill(None);
            scratch.streams.fill(Stream::default());
            return scratch;
        }
        // A literal's lane is its splat, set once: no line writes it again; an unread node's
        // is never written.
        let lanes: Vec<Lane> = (self.kernel.nodes.values().zip(&self.plan.unread))
            .map(|((node, elem), &unread)| match node {
                Node::Lit(scalar) => {
                    let mut lane = Lane::with_points(*elem, 1);
                    lane.column.set(0, *scalar);
                    lane
                }
                _ if unread => Lane::with_points(*elem, 1),
                _ => Lane::reused(*elem, self.plan.lane_points),
            })
            .collect();
        Scratch {
            key,
            runs: vec![None; lanes.len()],
            streams: vec![Stream::default(); lanes.len()],
            lanes,
            base: Vec::new(),
        }
    }

    /// The values of node `node` along the current line of `len` points, as the operations
    /// after it read them: its lane, or the run of an input it reads in place.
    fn operand<'a>(
        &'a self,
        lanes: &'a [Lane],
        runs: &[Option<Run>],
        node: usize,
        len: usize,
    ) -> LaneRef<'a> {
        self.operand_in(lanes, runs, node, len, &[])
    }

    /// `operand` on a line of a row group member (whose reads of earlier members' outputs
    /// are runs of `group`).
    fn operand_in<'a>(
        &'a self,
        lanes: &'a [Lane],
        runs: &[Option<Run>],
        node: usize,
        len: usize,
        group: &[GroupRead<'a>],
    ) -> LaneRef<'a> {
        match runs[node] {
            None => lanes[node].as_ref(),
            Some(Run { read, start }) => {
                let plan = self.plan.reads[read].as_ref().expect("a run is of a read");
                LaneRef {
                    splat: false,
                    column: self.source(plan.tensor, group).data.run(start, len),
                }
            }
        }
    }

    /// The lanes of the operands `a`, `b` of node `index`, an `exp (sub a b)` (Note [The exp
    /// of a difference]).
    fn difference_operands<'a>(
        &'a self,
        lanes: &'a [Lane],
        runs: &[Option<Run>],
        index: usize,
        line: &Line<'a>,
    ) -> (LaneRef<'a>, LaneRef<'a>) {
        let (a, b) = self.plan.differences[index].expect("an exp of a difference");
        let operand =
            |node: NodeId| self.operand_in(lanes, runs, node.0 as usize, line.len, line.group);
        (operand(a), operand(b))
    }

    /// The values of source `tensor` (`ReadPlan::tensor`): a bound value whole, or the
    /// block's part of an earlier row group member's output.
    fn source<'a>(&'a self, tensor: usize, group: &[GroupRead<'a>]) -> GroupRead<'a> {
        match self.sources[tensor] {
            Source::Values(data) => GroupRead { data, origin: 0 },
            Source::Member(member) => group[member],
        }
    }

    /// `operand` of the kernel's output node.
    fn root<'a>(&'a self, scratch: &'a Scratch, len: usize) -> LaneRef<'a> {
        self.root_in(scratch, len, &[])
    }

    /// `root` on a line of a row group member.
    fn root_in<'a>(
        &'a self,
        scratch: &'a Scratch,
        len: usize,
        group: &[GroupRead<'a>],
    ) -> LaneRef<'a> {
        let root = self.kernel.output.1 .0 as usize;
        self.operand_in(&scratch.lanes, &scratch.runs, root, len, group)
    }

    /// Computes every node along the line of `len` points starting at `base` and moving
    /// along `axis` (`None`: a single point); the output node is then `root`.
    fn eval_line(&self, scratch: &mut Scratch, base: &[i64], axis: Option<usize>, len: usize) {
        self.eval_line_at(scratch, &Line::new(base, axis, len, &[]));
    }

    /// `eval_line` along `line`.
    fn eval_line_at(&self, scratch: &mut Scratch, line: &Line<'_>) {
        self.eval_nodes(scratch, 0..self.kernel.nodes.len(), line);
    }

    /// Computes the nodes `nodes` (in order) along `line`.
    fn eval_nodes(&self, scratch: &mut Scratch, nodes: Range<usize>, line: &Line<'_>) {
        for index in nodes {
            self.eval_node(scratch, index, line);
        }
    }

    /// `eval_line` storing the output node's values into `dst` (`len` points). When the
    /// output is the last node and computed, it is computed into `dst` directly: no lane
    /// and no copy between the kernel's arithmetic and its output.
    fn eval_line_into<T: LaneElem>(
        &self,
        scratch: &mut Scratch,
        base: &[i64],
        axis: Option<usize>,
        dst: &mut [T],
    ) {
        self.eval_line_into_at(scratch, &Line::new(base, axis, dst.len(), &[]), dst);
    }

    /// `eval_line_into` along `line` (as long as `dst`).
    fn eval_line_into_at<T: LaneElem>(
        &self,
        scratch: &mut Scratch,
        line: &Line<'_>,
        dst: &mut [T],
    ) {
        let len = dst.len();
        let root = self.kernel.output.1 .0 as usize;
        let (root_node, _) = &self.kernel.nodes[self.kernel.output.1];
        match root_node {
            Node::Prim(..)
                if root + 1 == self.kernel.nodes.len() && self.plan.differences[root].is_some() =>
            {
                self.eval_nodes(scratch, 0..root, line);
                let (a, b) = self.difference_operands(&scratch.lanes, &scratch.runs, root, line);
                if exp_of_difference(a, b, T::wrap_mut(dst), len) {
                    let value = dst[0];
                    dst.fill(value);
                }
            }
            Node::Prim(prim, operands) if root + 1 == self.kernel.nodes.len() => {
                self.eval_nodes(scratch, 0..root, line);
                let (lanes, runs) = (&scratch.lanes[..], &scratch.runs[..]);
                let operand = |k: usize| {
                    self.operand_in(lanes, runs, operands[k].0 as usize, len, line.group)
                };
                let splat = with_operands(operands.len(), operand, |operands| {
                    eval_prim(*prim, operands, T::wrap_mut(dst), len)
                });
                if splat {
                    let value = dst[0];
                    dst.fill(value);
                }
            }
            _ => {
                self.eval_line_at(scratch, line);
                self.root_in(scratch, len, line.group).copy_to(dst);
            }
        }
    }

    /// Computes node `index` along the line (its operands are computed).
    fn eval_node(&self, scratch: &mut Scratch, index: usize, line: &Line<'_>) {
        let len = line.len;
        scratch.runs[index] = None;
        if self.plan.unread[index] {
            return;
        }
        if let Some(point) = self.plan.candidate_of[index].and_then(|c| self.points[c]) {
            let affine = self.plan.indices[point.index]
                .as_ref()
                .expect("an index node");
            point_line(affine, point, line, &mut scratch.lanes[index]);
            return;
        }
        match &self.kernel.nodes[NodeId(index as u32)].0 {
            Node::Lit(_) => {} // set by `scratch`
            Node::Index(_) => {
                let affine = self.plan.indices[index].as_ref().expect("an index node");
                index_line(affine, line, &mut scratch.lanes[index]);
            }
            Node::Read { .. } => self.read_line(scratch, index, line),
            Node::Prim(Prim::Select, operands)
                if self.select_run(scratch, index, operands, line) => {}
            Node::Prim(..) if self.plan.differences[index].is_some() => {
                let (before, rest) = scratch.lanes.split_at_mut(index);
                let (a, b) = self.difference_operands(before, &scratch.runs, index, line);
                rest[0].splat = exp_of_difference(a, b, rest[0].column.as_mut(), len);
            }
            Node::Prim(prim, operands) => {
                let (before, rest) = scratch.lanes.split_at_mut(index);
                let (before, runs) = (&*before, &scratch.runs[..]);
                let operand = |k: usize| {
                    self.operand_in(before, runs, operands[k].0 as usize, len, line.group)
                };
                with_operands(operands.len(), operand, |operands| {
                    rest[0].eval(*prim, operands, len)
                });
            }
        }
    }

    /// A `select` (node `index`) whose condition is the same along the line picks one
    /// operand whole: when that operand is a run read in place, so is the select's line (no
    /// copy; the gradients of shifts and scans select a shifted read everywhere but at one
    /// point, Note [Point masks]). Whether it did so.
    fn select_run(
        &self,
        scratch: &mut Scratch,
        index: usize,
        operands: &[NodeId],
        line: &Line<'_>,
    ) -> bool {
        let (lanes, runs) = (&scratch.lanes[..], &scratch.runs[..]);
        let cond = self.operand_in(lanes, runs, operands[0].0 as usize, line.len, line.group);
        if !cond.splat {
            return false;
        }
        let chosen = if cond.get(0) == Scalar::Bool(true) {
            operands[1]
        } else {
            operands[2]
        };
        scratch.runs[index] = scratch.runs[chosen.0 as usize];
        scratch.runs[index].is_some()
    }

    /// `Node::Read` number `index` along the line: a contiguous run entirely in range is
    /// read in place (`Scratch::runs`), anything else is copied into the node's lane.
    fn read_line(&self, scratch: &mut Scratch, index: usize, line: &Line<'_>) {
        let plan = self.plan.reads[index]
            .as_ref()
            .expect("every read has a plan");
        let (before, rest) = scratch.lanes.split_at_mut(index);
        let (before, runs) = (&*before, &scratch.runs[..]);
        let coord =
            |node: NodeId| self.operand_in(before, runs, node.0 as usize, line.len, line.group);
        let out = &mut rest[0];
        let input = self.source(plan.tensor, line.group);
        let stream = &mut scratch.streams[index];
        scratch.runs[index] = match_column!(ColumnRef, input.data, data => {
            let start = read_typed(plan, data, input.origin, &coord, line, out);
            if let (Some(start), true) = (start, plan.prefetch) {
                stream.advance(data, start, line.len);
            }
            start.map(|start| Run { read: index, start })
        });
    }

    /// An elementwise kernel: every output element from its point.
    fn map<T: LaneElem>(&self, out: &mut [T], exec: &Exec<'_>) {
        let shape = &self.plan.shape;
        if shape.is_empty() {
            let mut lanes = self.scratch();
            self.eval_line_into(&mut lanes, &[], None, &mut out[..1]);
            return;
        }
        let last = shape.len() - 1;
        let row_len = shape[last];
        if row_len == 0 || out.is_empty() {
            return;
        }
        let long_columns = shape[0] >= DOWN_LINE;
        if last > 0 && ((self.strided_across() && long_columns) || self.short_rows()) {
            self.map_down(out, exec);
            return;
        }
        // A piece of a row: `dst` is the row's output from point `start` on.
        let run_piece = |lanes: &mut Scratch, row: usize, start: usize, dst: &mut [T]| {
            if !exec.interrupt_requested() {
                self.map_row(lanes, row, start, dst, &[]);
            }
        };
        // Whole rows from row `row` on (`dst` holds them).
        let run_rows = |lanes: &mut Scratch, row: usize, dst: &mut [T]| {
            if !exec.interrupt_requested() {
                self.map_rows(lanes, row, dst, &[]);
            }
        };
        let rows_per_line = self.rows_per_line();
        if out.len() < PAR_THRESHOLD {
            let mut lanes = self.scratch();
            run_rows(&mut lanes, 0, out);
        } else if row_len <= PIECE {
            out.par_chunks_mut(row_len * rows_per_line)
                .enumerate()
                .with_min_len(self.plan.line.div_ceil(row_len * rows_per_line))
                .for_each_init(
                    || self.scratch(),
                    |lanes, (chunk, dst)| run_rows(lanes, chunk * rows_per_line, dst),
                );
        } else {
            // Long rows (a 1-D kernel is one row) are cut into pieces, so that they too run
            // on every thread.
            self.for_each_piece(out, row_len, PIECE, run_piece);
        }
    }

    /// Points `start..` of row `row` (a row-major position over the axes before the last) of
    /// an elementwise kernel into `dst`, in lines along the last axis.
    fn map_row<T: LaneElem>(
        &self,
        lanes: &mut Scratch,
        row: usize,
        start: usize,
        dst: &mut [T],
        group: &[GroupRead<'_>],
    ) {
        let last = self.plan.shape.len() - 1;
        lanes.at(&[], (row, &self.plan.shape[..last]), &[0], |lanes, base| {
            for offset in (0..dst.len()).step_by(self.plan.line) {
                let len = self.plan.line.min(dst.len() - offset);
                base[last] = (start + offset) as i64;
                let line = Line::new(base, Some(last), len, group);
                self.eval_line_into_at(lanes, &line, &mut dst[offset..offset + len]);
            }
        })
    }

    /// Rows of an elementwise kernel from row `row` on (a row-major position over the axes
    /// before the last) into `dst` (whole rows), in lines of `rows_per_line` rows where they
    /// are short (Note [Lines of rows]); a line's rows share their coordinates on the axes
    /// before the last but one.
    fn map_rows<T: LaneElem>(
        &self,
        lanes: &mut Scratch,
        row: usize,
        dst: &mut [T],
        group: &[GroupRead<'_>],
    ) {
        let last = self.plan.shape.len() - 1;
        let row_len = self.plan.shape[last];
        let per_line = self.rows_per_line();
        if per_line == 1 {
            for (offset, dst) in dst.chunks_mut(row_len).enumerate() {
                self.map_row(lanes, row + offset, 0, dst, group);
            }
            return;
        }
        let (outer, outer_len) = (last - 1, self.plan.shape[last - 1]);
        let (mut row, mut rest) = (row, dst);
        while !rest.is_empty() {
            let count = (per_line.min(outer_len - row % outer_len)).min(rest.len() / row_len);
            let (line_dst, after) = rest.split_at_mut(count * row_len);
            lanes.at(&[], (row, &self.plan.shape[..last]), &[0], |lanes, base| {
                let line = Line {
                    base,
                    axis: Some(last),
                    len: count * row_len,
                    rows: (count > 1).then_some(LineRows { axis: outer, count }),
                    group,
                };
                self.eval_line_into_at(lanes, &line, line_dst);
            });
            row += count;
            rest = after;
        }
    }

    /// Rows of an elementwise kernel per line (Note [Lines of rows]): as many as fit in a
    /// line, or one when it has a single axis.
    fn rows_per_line(&self) -> usize {
        match self.plan.shape[..] {
            [.., _, row_len] if row_len > 0 => (self.plan.line / row_len).max(1),
            _ => 1,
        }
    }

    /// Runs `f(lanes, row, start, piece)` in parallel over the pieces of `piece_len` points of
    /// each row of `row_len` points of `out` (`start`: the piece's first point in its row),
    /// with scratch lanes per task.
    fn for_each_piece<T: LaneElem>(
        &self,
        out: &mut [T],
        row_len: usize,
        piece_len: usize,
        f: impl Fn(&mut Scratch, usize, usize, &mut [T]) + Sync + Send,
    ) {
        out.par_chunks_mut(row_len)
            .enumerate()
            .flat_map(|(row, dst)| {
                dst.par_chunks_mut(piece_len)
                    .enumerate()
                    .map(move |(piece, dst)| (row, piece * piece_len, dst))
            })
            .for_each_init(
                || self.scratch(),
                |lanes, (row, start, dst)| f(lanes, row, start, dst),
            );
    }

    /// Whether an elementwise kernel's rows (its last axis, after `merge_axes`) are too short
    /// for lines along them and axis 0 is longer: a `[1024, 10]` kernel that reads a
    /// `[1024]` operand along its rows would be 1024 lines of 10 points, each paying a line's
    /// fixed cost, where lines down axis 0 are 10 lines of 1024.
    fn short_rows(&self) -> bool {
        let width = self.plan.shape[self.plan.shape.len() - 1];
        width < WIDE && self.plan.shape[0] > width
    }

    /// An elementwise kernel whose reads are strided across its last axis but not down axis
    /// 0 (transposed operands): lines run down axis 0, a band of rows at a time, and each
    /// line is stored down a column of the band; a task visits the band's columns in order,
    /// so consecutive lines fill the same cache lines of the output.
    fn map_down<T: LaneElem>(&self, out: &mut [T], exec: &Exec<'_>) {
        let shape = &self.plan.shape;
        let inner_shape = &shape[1..];
        let inner: usize = inner_shape.iter().product();
        let run_band = |lanes: &mut Scratch, first_row: usize, band: &mut [T]| {
            let len = band.len() / inner;
            let mut base = vec![0i64; shape.len()];
            for point in 0..inner {
                if point % WIDE == 0 && exec.interrupt_requested() {
                    return;
                }
                unravel_into(point, inner_shape, &mut base[1..]);
                for start in (0..len).step_by(LINE) {
                    let line = LINE.min(len - start);
                    base[0] = (first_row + start) as i64;
                    self.eval_line(lanes, &base, Some(0), line);
                    let column = band[(start * inner + point)..].iter_mut().step_by(inner);
                    match self.root(lanes, line).values::<T>(line) {
                        Err(value) => column.take(line).for_each(|slot| *slot = value),
                        Ok(values) => column.zip(values).for_each(|(slot, &value)| *slot = value),
                    }
                }
            }
        };
        let band_rows = if out.len() < PAR_THRESHOLD {
            shape[0]
        } else {
            LINE.min(shape[0].div_ceil(4 * rayon::current_num_threads().max(1)))
                .max(1)
        };
        out.par_chunks_mut(band_rows * inner)
            .enumerate()
            .for_each_init(
                || self.scratch(),
                |lanes, (band, dst)| run_band(lanes, band * band_rows, dst),
            );
    }

    /// A reduction kernel: each output element is the sum over axis 0 of its points.
    fn reduce<T: LaneElem>(&self, out: &mut [T], exec: &Exec<'_>) {
        if out.is_empty() {
            return;
        }
        if self.plan.shape[0] == 0 {
            out.fill(T::default());
            return;
        }
        if self.runs_across() {
            self.reduce_across(out, exec);
        } else {
            self.reduce_along(out, exec);
        }
    }

    // Note [Sums across a middle axis]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    // A long sum whose output's last axis is narrow runs along its summed axis 0, one
    // output a line; where its reads are strided along axis 0 each term is a gather from
    // another page. nbody's gradient sums `Σ_i (p[i, d] − p[j, d]) f[i, j]` (with its
    // transposed twin) into `[n, 3]`: along `i`, `f[i, j]` moves by a row of 8 kB a term,
    // and 87 % of the run waited on those loads. When another output axis is wide and is
    // strided in no more reads than axis 0, the plan of a kernel launched alone moves that
    // axis last (`LaunchPlan::move_last`) and the sum runs across it (`reduce_across`): a
    // line is a segment of `j` over a few rows of `i`, `f[i, j]` a run, and `f[j, i]` a
    // gather from the same cache lines row after row. The output comes out with the axis
    // last and is put back in order (`moved_back`, a copy of the small output). Each
    // output's terms are added in the same order either way (Note [Summation order]).

    /// Whether a reduction's lines run across its output's last axis (wide enough, and not
    /// `strided_across` unless the reduced axis is too short for lines along it: a
    /// contraction of depth 10 would be a line of 10 points per output element, each
    /// paying a line's fixed cost) rather than along the reduced axis 0.
    fn runs_across(&self) -> bool {
        let wide = self.plan.shape[1..]
            .last()
            .is_some_and(|&width| width >= WIDE);
        wide && (self.plan.shape[0] < WIDE || !self.strided_across())
    }

    /// Whether lines across the output (along the last axis) would read more operands with
    /// a stride than lines along the summed axis 0: a sum over the rows of a transposed read
    /// (`sum for j. exp (x[i, j] - m[i])` batched over `i`) then reads each line's points
    /// from as many cache lines and pages. Both ways add in the same order.
    fn strided_across(&self) -> bool {
        let last = self.plan.shape.len() - 1;
        self.plan.strided_reads(last) > self.plan.strided_reads(0)
    }

    /// Sums along axis 0, one output at a time, in parallel over aligned runs of leaves
    /// (or over lines of several outputs, `reduce_in_lines`).
    fn reduce_along<T: LaneElem>(&self, out: &mut [T], exec: &Exec<'_>) {
        if self.outputs_per_line() > 1 {
            return self.each_output_line(out, exec, |values| self.line_sum(values));
        }
        let n_rows = self.plan.shape[0];
        let n_runs = n_rows.div_ceil(SUM_RUN);
        let run_sum = |lanes: &mut Scratch, task: usize| -> T {
            self.sum_run(lanes, task / n_runs, task % n_runs, &[], exec)
        };
        let run_sums = self.tasks(out.len() * n_runs, out.len() * n_rows, run_sum);
        for (slot, runs) in out.iter_mut().zip(run_sums.chunks(n_runs)) {
            *slot = self.combine_run_sums(runs.iter().copied());
        }
    }

    /// The sum of one output whose values along axis 0 are `values` (`Err`: a splat), all on
    /// one line: as `sum_along` adds a line (one run, which `combine_run_sums` keeps as is).
    fn line_sum<T: LaneElem>(&self, values: Result<&[T], T>) -> T {
        let spread;
        let values = match values {
            Ok(values) => values,
            Err(value) => {
                spread = vec![value; self.plan.shape[0]];
                &spread[..]
            }
        };
        tree_sum(values)
    }

    /// The fold with `S` of one output whose values along axis 0 are `values` (`Err`: a
    /// splat), all on one line: as `fold_output` folds a chunk of one line.
    fn line_fold<T: LaneElem, S: Select<T>>(&self, values: Result<&[T], T>) -> T {
        match values {
            Ok(values) => S::fold(None, values),
            // A splat is equal values: two combine as many do (idempotent).
            Err(value) => S::fold(None, &[value, value][..self.plan.shape[0].min(2)]),
        }
        .unwrap_or_default()
    }

    /// Outputs per line of a reduction along axis 0 (Note [Lines of rows]): as many as fit in
    /// a line when the reduced axis fits in one line of `LINE` points (and is not empty),
    /// else one.
    fn outputs_per_line(&self) -> usize {
        match self.plan.shape[..] {
            [depth, .., _] if (1..=LINE).contains(&depth) => (self.plan.line / depth).max(1),
            _ => 1,
        }
    }

    /// Outputs from row-major position `first` on of a reduction along axis 0, into `dst`, in
    /// lines of `outputs_per_line` consecutive outputs along the last axis (Note [Lines of
    /// rows]); `reduce(values)` is one output from the values of its points (`Err`: a splat).
    fn reduce_in_lines<T: LaneElem>(
        &self,
        scratch: &mut Scratch,
        first: usize,
        dst: &mut [T],
        group: &[GroupRead<'_>],
        reduce: impl Fn(Result<&[T], T>) -> T,
    ) {
        let (depth, last) = (self.plan.shape[0], self.plan.shape.len() - 1);
        let (per_line, width) = (self.outputs_per_line(), self.plan.shape[last]);
        let (mut output, mut rest) = (first, dst);
        while !rest.is_empty() {
            let count = (per_line.min(width - output % width)).min(rest.len());
            let (line_dst, after) = rest.split_at_mut(count);
            scratch.at(
                &[0],
                (output, &self.plan.shape[1..]),
                &[],
                |scratch, base| {
                    let line = Line {
                        base,
                        axis: Some(0),
                        len: count * depth,
                        rows: (count > 1).then_some(LineRows { axis: last, count }),
                        group,
                    };
                    self.eval_line_at(scratch, &line);
                    let root = self.root_in(scratch, line.len, group).values::<T>(line.len);
                    for (q, slot) in line_dst.iter_mut().enumerate() {
                        *slot = reduce(root.map(|values| &values[q * depth..(q + 1) * depth]));
                    }
                },
            );
            output += count;
            rest = after;
        }
    }

    /// `reduce_in_lines` over all of `out`, in parallel over lines when the kernel is large.
    fn each_output_line<T: LaneElem>(
        &self,
        out: &mut [T],
        exec: &Exec<'_>,
        reduce: impl Fn(Result<&[T], T>) -> T + Sync + Send,
    ) {
        let per_line = self.outputs_per_line();
        let line = |scratch: &mut Scratch, (index, dst): (usize, &mut [T])| {
            if !exec.interrupt_requested() {
                self.reduce_in_lines(scratch, index * per_line, dst, &[], &reduce);
            }
        };
        if out.len() * self.plan.shape[0] < PAR_THRESHOLD {
            let mut scratch = self.scratch();
            line(&mut scratch, (0, out));
        } else {
            (out.par_chunks_mut(per_line).enumerate()).for_each_init(|| self.scratch(), line);
        }
    }

    /// The sum of output `output` of a reduction, along axis 0, one run after another.
    fn sum_along<T: LaneElem>(
        &self,
        lanes: &mut Scratch,
        output: usize,
        group: &[GroupRead<'_>],
        exec: &Exec<'_>,
    ) -> T {
        let n_runs = self.plan.shape[0].div_ceil(SUM_RUN);
        self.combine_run_sums((0..n_runs).map(|run| self.sum_run(lanes, output, run, group, exec)))
    }

    /// The sum of run `run` (`SUM_RUN` points of axis 0, a complete subtree of dx's order)
    /// of output `output` of a reduction.
    fn sum_run<T: LaneElem>(
        &self,
        lanes: &mut Scratch,
        output: usize,
        run: usize,
        group: &[GroupRead<'_>],
        exec: &Exec<'_>,
    ) -> T {
        let n_rows = self.plan.shape[0];
        let product = self.product_root();
        lanes.at(&[0], (output, &self.plan.shape[1..]), &[], |lanes, base| {
            let mut tree = TreeSum::new();
            let end = ((run + 1) * SUM_RUN).min(n_rows);
            let mut spread = Vec::new();
            for start in (run * SUM_RUN..end).step_by(LINE) {
                if exec.interrupt_requested() {
                    break;
                }
                let len = LINE.min(end - start);
                base[0] = start as i64;
                let line = Line::new(base, Some(0), len, group);
                if let Some(product) = product {
                    if self.sum_products(lanes, &line, product, &mut tree) {
                        continue;
                    }
                    self.eval_nodes(lanes, product.0..product.0 + 1, &line);
                } else {
                    self.eval_line_at(lanes, &line);
                }
                let values = match self.root_in(lanes, len, group).values::<T>(len) {
                    Ok(values) => values,
                    Err(value) => {
                        spread.clear();
                        spread.resize(len, value);
                        &spread[..]
                    }
                };
                T::leaf_sums(values, |sum| tree.push_leaf(sum, T::add));
            }
            tree.finish(T::add).unwrap_or_default()
        })
    }

    /// Adds the leaves of a line whose output node `root` is `mul x y` (`product_root`) to
    /// `tree`, each product added as it is computed (the same bits as storing the products
    /// in the root's lane and summing that), if both operands are runs, not splats. Leaves the
    /// nodes before the root computed either way.
    fn sum_products<T: LaneElem>(
        &self,
        scratch: &mut Scratch,
        line: &Line<'_>,
        (root, x, y): (usize, usize, usize),
        tree: &mut TreeSum<T>,
    ) -> bool {
        self.eval_nodes(scratch, 0..root, line);
        let (lanes, runs, len) = (&scratch.lanes[..], &scratch.runs[..], line.len);
        let operand = |node| self.operand_in(lanes, runs, node, len, line.group);
        let (Ok(xs), Ok(ys)) = (operand(x).values::<T>(len), operand(y).values::<T>(len)) else {
            return false;
        };
        T::leaf_sums_of_products(xs, ys, |sum| tree.push_leaf(sum, T::add));
        true
    }

    /// `(root, x, y)` when the output node `root` is `mul x y` and the last node (a sum of
    /// products: `sum_run` adds them as it computes them).
    fn product_root(&self) -> Option<(usize, usize, usize)> {
        let root = self.kernel.output.1 .0 as usize;
        match &self.kernel.nodes[self.kernel.output.1].0 {
            Node::Prim(Prim::Mul, operands) if root + 1 == self.kernel.nodes.len() => {
                Some((root, operands[0].0 as usize, operands[1].0 as usize))
            }
            _ => None,
        }
    }

    /// The sum of one output from the sums of its runs (`sum_run`), in dx's order.
    fn combine_run_sums<T: LaneElem>(&self, runs: impl ExactSizeIterator<Item = T>) -> T {
        let partial = !self.plan.shape[0].is_multiple_of(SUM_RUN);
        sum_order::combine_runs(runs, RUN_LEVEL, partial, T::add).unwrap_or_default()
    }

    /// Sums along axis 0 for a segment of the output's last axis at a time: the leaf's lane
    /// accumulators and the pending partial sums are rows across the segment.
    fn reduce_across<T: LaneElem>(&self, out: &mut [T], exec: &Exec<'_>) {
        let n_rows = self.plan.shape[0];
        let segment = |lanes: &mut Scratch, base: &mut [i64], dst: &mut [T]| {
            let len = dst.len();
            let mut sums = ColumnSums::new(len);
            for rows in self.lines_across(0..n_rows, len) {
                if exec.interrupt_requested() {
                    return;
                }
                self.rows_across::<T>(lanes, base, rows, len, |row| sums.add_row(row));
            }
            sums.finish(dst);
        };
        self.for_each_segment(out, segment);
    }

    /// The rows `rows` of axis 0 cut into lines of rows of segments of `len` points across
    /// the last axis (Note [Lines of rows]).
    fn lines_across(&self, rows: Range<usize>, len: usize) -> impl Iterator<Item = Range<usize>> {
        let per_line = (self.plan.line / len.max(1)).max(1);
        let end = rows.end;
        rows.step_by(per_line)
            .map(move |first| first..(first + per_line).min(end))
    }

    /// The kernel's values on the rows `rows` of a segment of `len` points from `base`
    /// across the last axis, in one line: `row(values)` for each row in order, with its `len`
    /// values or `Err(value)` when the line is a splat.
    fn rows_across<T: LaneElem>(
        &self,
        scratch: &mut Scratch,
        base: &mut [i64],
        rows: Range<usize>,
        len: usize,
        mut row: impl FnMut(Result<&[T], T>),
    ) {
        base[0] = rows.start as i64;
        let count = rows.len();
        let line = Line {
            base,
            axis: Some(self.plan.shape.len() - 1),
            len: count * len,
            rows: (count > 1).then_some(LineRows { axis: 0, count }),
            group: &[],
        };
        self.eval_line_at(scratch, &line);
        let values = self.root(scratch, line.len).values::<T>(line.len);
        for q in 0..count {
            row(values.map(|values| &values[q * len..(q + 1) * len]));
        }
    }

    /// `task(lanes, t)` for every `t` in `0..n_tasks`, in parallel when the kernel does
    /// `work` points or more (`PAR_THRESHOLD`), with scratch lanes per rayon task.
    fn tasks<R: Send>(
        &self,
        n_tasks: usize,
        work: usize,
        task: impl Fn(&mut Scratch, usize) -> R + Sync + Send,
    ) -> Vec<R> {
        if work < PAR_THRESHOLD {
            let mut lanes = self.scratch();
            (0..n_tasks).map(|t| task(&mut lanes, t)).collect()
        } else {
            (0..n_tasks)
                .into_par_iter()
                .map_init(|| self.scratch(), task)
                .collect()
        }
    }

    /// Runs `segment(lanes, base, dst)` over the segments of the rows of `out` (each as wide
    /// as the last axis; `base`: the iteration coordinates of the segment's first point, row
    /// 0 of axis 0) for a reduction over axis 0: segments of `LINE` in order when the work is
    /// small, else in parallel segments narrow enough to give every thread some.
    fn for_each_segment<T: LaneElem>(
        &self,
        out: &mut [T],
        segment: impl Fn(&mut Scratch, &mut [i64], &mut [T]) + Sync + Send,
    ) {
        let (n_rows, width) = (
            self.plan.shape[0],
            self.plan.shape[self.plan.shape.len() - 1],
        );
        let prefix_shape = &self.plan.shape[1..self.plan.shape.len() - 1];
        let segment = |lanes: &mut Scratch, prefix: usize, start: usize, dst: &mut [T]| {
            lanes.at(
                &[0],
                (prefix, prefix_shape),
                &[start as i64],
                |lanes, base| segment(lanes, base, dst),
            )
        };
        let work = out.len() * n_rows;
        // A read that gathers across the segment touches a cache line (and a page) per
        // point, and the next row the same ones: few enough to stay in the L1 cache and
        // its TLB.
        let longest = if self.gathers_across() { WIDE } else { LINE };
        if work < PAR_THRESHOLD {
            let mut lanes = self.scratch();
            for (prefix, row) in out.chunks_mut(width).enumerate() {
                for (seg, dst) in row.chunks_mut(longest).enumerate() {
                    segment(&mut lanes, prefix, seg * longest, dst);
                }
            }
        } else {
            let seg_len = longest.min(
                width
                    .div_ceil(rayon::current_num_threads().max(1))
                    .max(WIDE),
            );
            self.for_each_piece(out, width, seg_len, segment);
        }
    }

    /// Whether some read of a reduction moves by a cache line or more a point across the
    /// output's last axis.
    fn gathers_across(&self) -> bool {
        let last = self.plan.shape.len() - 1;
        (self.plan.reads.iter().zip(self.kernel.nodes.values())).any(|(plan, (_, elem))| {
            plan.as_ref().is_some_and(|plan| {
                plan.axis_steps[last].unsigned_abs() * elem.bytes() >= prefetch::CACHE_LINE
            })
        })
    }
}

impl Launch<'_> {
    /// A `max`/`min` reduction kernel (`Reduction::Max`, `Reduction::Min`) into `out`.
    fn fold_selection(&self, out: &mut Column, selection: Reduction, exec: &Exec<'_>) {
        if let (Column::I64(values), Some((cond, none))) = (&mut *out, self.first_index()) {
            if !values.is_empty() && !self.runs_across() {
                return self.find_first(values, cond, none, exec);
            }
        }
        macro_rules! typed {
            ($($variant:ident: $ty:ty),*) => {
                match out {
                    $(Column::$variant(values) => match selection {
                        Reduction::Max => self.fold::<$ty, Max>(values, exec),
                        _ => self.fold::<$ty, Min>(values, exec),
                    },)*
                    Column::Bool(_) => unreachable!("selections fold numbers"),
                }
            };
        }
        typed!(F32: f32, F64: f64, I32: i32, I64: i64, U32: u32, U64: u64);
    }

    /// Folds axis 0 with `S`, a `max` or `min`: exactly associative and commutative (Note
    /// [Float selections] in `prim::arith`), so any order gives the bits of the reference
    /// `reduce` (Note [Monoid order] in `ops::monoid`). Chunks of `CHUNK_ROWS` rows, then the
    /// chunk totals; laid out like the sums: across the output's last axis when it is wide,
    /// else along axis 0 (`strided_across`), each line folded in vector lanes (`Select::fold`).
    fn fold<T: LaneElem, S: Select<T>>(&self, out: &mut [T], exec: &Exec<'_>) {
        if out.is_empty() {
            return;
        }
        if self.runs_across() {
            self.fold_across(out, S::combine, exec);
        } else {
            self.fold_along::<T, S>(out, exec);
        }
    }

    /// `fold` one output at a time, in parallel over (output, chunk) pairs (or over lines of
    /// several outputs, `reduce_in_lines`).
    fn fold_along<T: LaneElem, S: Select<T>>(&self, out: &mut [T], exec: &Exec<'_>) {
        if self.outputs_per_line() > 1 {
            return self.each_output_line(out, exec, |values| self.line_fold::<T, S>(values));
        }
        self.each_chunk_along(out, S::combine, |scratch, base, _, rows| {
            self.fold_chunk::<T, S>(scratch, base, rows, &[], exec)
        });
    }

    /// The fold of output `output` along axis 0, one chunk after another (as
    /// `each_chunk_along` combines them).
    fn fold_output<T: LaneElem, S: Select<T>>(
        &self,
        scratch: &mut Scratch,
        output: usize,
        group: &[GroupRead<'_>],
        exec: &Exec<'_>,
    ) -> T {
        let n_rows = self.plan.shape[0];
        scratch.at(
            &[0],
            (output, &self.plan.shape[1..]),
            &[],
            |scratch, base| {
                (0..n_rows.div_ceil(CHUNK_ROWS))
                    .map(|index| {
                        let rows = index * CHUNK_ROWS..((index + 1) * CHUNK_ROWS).min(n_rows);
                        self.fold_chunk::<T, S>(scratch, base, rows, group, exec)
                    })
                    .reduce(S::combine)
                    .unwrap_or_default()
            },
        )
    }

    /// The fold of rows `rows` of axis 0 at `base` (axis 0 free for it).
    fn fold_chunk<T: LaneElem, S: Select<T>>(
        &self,
        scratch: &mut Scratch,
        base: &mut [i64],
        rows: Range<usize>,
        group: &[GroupRead<'_>],
        exec: &Exec<'_>,
    ) -> T {
        let mut total: Option<T> = None;
        for start in rows.clone().step_by(LINE) {
            if exec.interrupt_requested() {
                break;
            }
            let len = LINE.min(rows.end - start);
            base[0] = start as i64;
            self.eval_line_at(scratch, &Line::new(base, Some(0), len, group));
            total = match self.root_in(scratch, len, group).values::<T>(len) {
                Ok(values) => S::fold(total, values),
                // A splat is `len` equal values: two combine as many do (idempotent).
                Err(value) => S::fold(total, &[value, value][..len.min(2)]),
            };
        }
        total.unwrap_or_default()
    }

    /// Folds axis 0 for one output at a time: `chunk(scratch, base, output, rows)` gives the
    /// total of the rows `rows` of one chunk of output number `output` (`base`: its
    /// coordinates, axis 0 free for the caller), in parallel over (output, chunk) pairs; the
    /// chunk totals of each output are then combined in chunk order.
    fn each_chunk_along<T, C>(
        &self,
        out: &mut [T],
        combine: C,
        chunk: impl Fn(&mut Scratch, &mut [i64], usize, Range<usize>) -> T + Sync + Send,
    ) where
        T: LaneElem,
        C: Fn(T, T) -> T,
    {
        let n_rows = self.plan.shape[0];
        let out_shape = &self.plan.shape[1..];
        let n_chunks = n_rows.div_ceil(CHUNK_ROWS);
        let chunk_total = |scratch: &mut Scratch, task: usize| -> T {
            let (output, index) = (task / n_chunks, task % n_chunks);
            let rows = index * CHUNK_ROWS..((index + 1) * CHUNK_ROWS).min(n_rows);
            scratch.at(&[0], (output, out_shape), &[], |scratch, base| {
                chunk(scratch, base, output, rows)
            })
        };
        let totals = self.tasks(out.len() * n_chunks, out.len() * n_rows, chunk_total);
        for (slot, chunks) in out.iter_mut().zip(totals.chunks(n_chunks)) {
            *slot = chunks[1..]
                .iter()
                .fold(chunks[0], |acc, &total| combine(acc, total));
        }
    }

    /// A `min` fold of `select c i0 none` where `i0` is the coordinate on axis 0 and `none`
    /// is at least every such coordinate: the first row where `c` holds, else `none` (the
    /// derivative of a `max` or `min` reduction sends its cotangent to the first maximum
    /// this way). Returns the node of `c` and `none`.
    fn first_index(&self) -> Option<(usize, i64)> {
        let nodes = &self.kernel.nodes;
        let (Node::Prim(Prim::Select, operands), _) = &nodes[self.kernel.output.1] else {
            return None;
        };
        let [cond, index, none] = operands[..] else {
            return None;
        };
        let on_axis_0 =
            matches!(&nodes[index].0, Node::Index(affine) if *affine == Affine::axis(0));
        let last_row = self.plan.shape[0] as i64 - 1;
        match (&nodes[none].0, self.kernel.reduce) {
            (Node::Lit(Scalar::I64(none)), Some(Reduction::Min))
                if on_axis_0 && *none >= last_row =>
            {
                Some((cond.0 as usize, *none))
            }
            _ => None,
        }
    }

    /// `fold_along` of a `first_index` kernel: each chunk evaluates only the condition's
    /// nodes and stops at the first row where it holds (rows come in order within a chunk),
    /// so no index lanes are made or folded, and a row whose first maximum comes early is
    /// not read to its end. Chunks share the earliest row found so far for each output: a
    /// chunk stops (giving `none`) once its next line starts after it, since a later row
    /// cannot be the first. The same result as the fold, bit for bit (it is an integer, and
    /// the chunk holding the first row never stops early: it starts before every row found).
    fn find_first(&self, out: &mut [i64], cond: usize, none: i64, exec: &Exec<'_>) {
        let earliest: Vec<AtomicI64> = out.iter().map(|_| AtomicI64::new(none)).collect();
        self.each_chunk_along(out, Ord::min, |scratch, base, output, rows| {
            for start in rows.clone().step_by(LINE) {
                // Relaxed: a stale value only means reading more than needed.
                if exec.interrupt_requested()
                    || start as i64 > earliest[output].load(Ordering::Relaxed)
                {
                    break;
                }
                let len = LINE.min(rows.end - start);
                base[0] = start as i64;
                let line = Line::new(base, Some(0), len, &[]);
                self.eval_nodes(scratch, 0..cond + 1, &line);
                let holds = self.operand(&scratch.lanes, &scratch.runs, cond, len);
                let found = match holds.values::<bool>(len) {
                    Ok(holds) => holds.iter().position(|&holds| holds),
                    Err(holds) => holds.then_some(0),
                };
                if let Some(at) = found {
                    let row = (start + at) as i64;
                    earliest[output].fetch_min(row, Ordering::Relaxed);
                    return row;
                }
            }
            none
        });
    }

    /// `fold` for a segment of the output's last axis at a time: the chunk's accumulators
    /// and the folded totals are rows across the segment.
    fn fold_across<T, C>(&self, out: &mut [T], combine: C, exec: &Exec<'_>)
    where
        T: LaneElem,
        C: Fn(T, T) -> T + Copy + Sync + Send,
    {
        let n_rows = self.plan.shape[0];
        let segment = |lanes: &mut Scratch, base: &mut [i64], dst: &mut [T]| {
            let len = dst.len();
            let mut chunk_acc = [T::default(); LINE];
            for first_row in (0..n_rows).step_by(CHUNK_ROWS) {
                let chunk = first_row..(first_row + CHUNK_ROWS).min(n_rows);
                let mut first = true;
                for rows in self.lines_across(chunk, len) {
                    if exec.interrupt_requested() {
                        return;
                    }
                    let acc = &mut chunk_acc[..len];
                    self.rows_across::<T>(lanes, base, rows, len, |row| {
                        match (std::mem::take(&mut first), row) {
                            (true, Err(value)) => acc.fill(value),
                            (true, Ok(values)) => acc.copy_from_slice(values),
                            (false, Err(value)) => acc
                                .iter_mut()
                                .for_each(|slot| *slot = combine(*slot, value)),
                            (false, Ok(values)) => acc
                                .iter_mut()
                                .zip(values)
                                .for_each(|(slot, &value)| *slot = combine(*slot, value)),
                        }
                    });
                }
                let (acc, totals) = (&chunk_acc[..len], &mut *dst);
                if first_row == 0 {
                    totals.copy_from_slice(acc);
                } else {
                    totals
                        .iter_mut()
                        .zip(acc)
                        .for_each(|(slot, &value)| *slot = combine(*slot, value));
                }
            }
        };
        self.for_each_segment(out, segment);
    }
}

/// The coordinates of row-major position `flat` in `shape`.
fn unravel(flat: usize, shape: &[usize]) -> Vec<i64> {
    let mut coords = vec![0i64; shape.len()];
    unravel_into(flat, shape, &mut coords);
    coords
}

/// `unravel` into `coords` (as long as `shape`).
fn unravel_into(mut flat: usize, shape: &[usize], coords: &mut [i64]) {
    for (coord, &dim) in coords.iter_mut().zip(shape).rev() {
        *coord = (flat % dim.max(1)) as i64;
        flat /= dim.max(1);
    }
}

/// An affine function along a line: its value at the line's first point `base` and its
/// step from a point to the next along `axis` (0 for a single point).
fn affine_line(affine: &Affine, base: &[i64], axis: Option<usize>) -> (i64, i64) {
    let start = affine.constant
        + affine
            .terms
            .iter()
            .map(|&(term_axis, coeff)| coeff * base[term_axis])
            .sum::<i64>();
    (start, axis.map_or(0, |axis| affine.coeff(axis)))
}

/// `Node::Index`: an affine function of the coordinates, along the line.
fn index_line(affine: &Affine, line: &Line<'_>, out: &mut Lane) {
    let (start, step) = affine_line(affine, line.base, line.axis);
    let row_step = line.row_step(|axis| affine.coeff(axis));
    let values = i64::values_mut(&mut out.column);
    if step == 0 && row_step == 0 {
        values[0] = start;
        out.splat = true;
    } else {
        let rows = values[..line.len].chunks_mut(line.row_len());
        for (q, row) in rows.enumerate() {
            let row_start = start + row_step * q as i64;
            for (position, slot) in row.iter_mut().enumerate() {
                *slot = row_start + step * position as i64;
            }
        }
        out.splat = false;
    }
}

/// The lane of point mask `point` along the line (Note [Point masks]): a splat where the
/// line misses the point.
fn point_line(affine: &Affine, point: PointMask, line: &Line<'_>, out: &mut Lane) {
    let (start, step) = affine_line(affine, line.base, line.axis);
    let row_step = line.row_step(|axis| affine.coeff(axis));
    let row_len = line.row_len();
    let hit = |q: usize| match (point.value.checked_sub(start + row_step * q as i64), step) {
        (Some(0), 0) => Hit::Every,
        (Some(offset), step)
            if step != 0
                && offset % step == 0
                && (0..row_len as i64).contains(&(offset / step)) =>
        {
            Hit::One((offset / step) as usize)
        }
        _ => Hit::None,
    };
    let first = hit(0);
    let values = bool::values_mut(&mut out.column);
    let rows = line.row_count();
    if matches!(first, Hit::Every | Hit::None) && (1..rows).all(|q| hit(q) == first) {
        values[0] = (first == Hit::Every) == point.equal;
        out.splat = true;
        return;
    }
    for (q, row) in values[..line.len].chunks_mut(row_len).enumerate() {
        match hit(q) {
            Hit::Every => row.fill(point.equal),
            Hit::None => row.fill(!point.equal),
            Hit::One(position) => {
                row.fill(!point.equal);
                row[position] = point.equal;
            }
        }
    }
    out.splat = false;
}

/// Where a line meets the point of a point mask.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hit {
    /// At every point (the index is constant along the line and equal to the point).
    Every,
    /// At this position alone.
    One(usize),
    None,
}

/// The line a kernel is computing: `len` points from `base` along `axis` (`None`: one point),
/// or with `rows`, `len` points in rows of `len / rows.count` along `axis`, row `q` starting
/// `q` further along `rows.axis` (Note [Lines of rows]); and in a row group, the block's part
/// of the earlier members' outputs.
struct Line<'a> {
    base: &'a [i64],
    axis: Option<usize>,
    len: usize,
    rows: Option<LineRows>,
    group: &'a [GroupRead<'a>],
}

/// The rows of a line of rows: how many, and the axis from one to the next.
#[derive(Clone, Copy, Debug)]
struct LineRows {
    axis: usize,
    count: usize,
}

impl<'a> Line<'a> {
    fn new(
        base: &'a [i64],
        axis: Option<usize>,
        len: usize,
        group: &'a [GroupRead<'a>],
    ) -> Line<'a> {
        Line {
            base,
            axis,
            len,
            rows: None,
            group,
        }
    }

    /// Points of each row (all of them for a line of one row).
    fn row_len(&self) -> usize {
        self.rows.map_or(self.len, |rows| self.len / rows.count)
    }

    fn row_count(&self) -> usize {
        self.rows.map_or(1, |rows| rows.count)
    }

    /// An affine function (`constant`, coefficient `steps[axis]` per axis) along row `q`:
    /// its value at the row's first point and its step along the line.
    fn affine_along(&self, constant: i64, steps: &[i64], q: usize) -> (i64, i64) {
        let start = constant
            + steps.iter().zip(self.base).map(|(s, c)| s * c).sum::<i64>()
            + self.row_step(|axis| steps[axis]) * q as i64;
        (start, self.axis.map_or(0, |axis| steps[axis]))
    }

    /// The step from a row's first point to the next row's of a function with coefficient
    /// `coeff(axis)` on each axis (0 for a line of one row).
    fn row_step<C>(&self, coeff: impl Fn(usize) -> C) -> C
    where
        C: Default,
    {
        self.rows.map_or(C::default(), |rows| coeff(rows.axis))
    }
}

/// A row group member's output as the later members read it: the rows of the current
/// block, which start at row-major position `origin` of the whole output.
#[derive(Clone, Copy)]
struct GroupRead<'a> {
    data: ColumnRef<'a>,
    origin: isize,
}

/// `Node::Read` of `data` along `line` into `out`, or `Some(start)` without copying when the
/// line reads `data[start..start + len]` (contiguous, across its rows too, every point in
/// range). `data` holds the variable from row-major position `origin` on; `coord` gives the
/// values of the nodes that compute coordinates.
fn read_typed<'a, T: LaneElem>(
    plan: &ReadPlan,
    data: &[T],
    origin: isize,
    coord: &dyn Fn(NodeId) -> LaneRef<'a>,
    line: &Line<'_>,
    out: &mut Lane,
) -> Option<usize> {
    let Line {
        base, axis, len, ..
    } = *line;
    // Computed coordinates that are the same at every point of the line move the start
    // (Note [Uniform coordinates]).
    let uniform: Option<isize> = (plan.node_coords.iter())
        .map(|&(node, stride)| {
            let value = coord(node).values::<i64>(len).err()?;
            Some(value as isize * stride)
        })
        .sum();
    let start = plan.offset - origin
        + uniform.unwrap_or(0)
        + plan
            .axis_steps
            .iter()
            .zip(base)
            .map(|(&step, &coord)| step * coord as isize)
            .sum::<isize>();
    let step = axis.map_or(0, |axis| plan.axis_steps[axis]);
    let row_step = line.row_step(|axis| plan.axis_steps[axis]);
    let still = |steps: &[i64]| {
        axis.is_none_or(|axis| steps[axis] == 0) && line.row_step(|axis| steps[axis]) == 0
    };
    let splat = step == 0
        && row_step == 0
        && uniform.is_some()
        && plan.bounded.iter().all(|coord| still(&coord.steps));
    out.splat = splat;
    let (row_len, rows) = if splat {
        (1, 1)
    } else {
        (line.row_len(), line.row_count())
    };
    // The wraps' shift where it is the same over the whole line.
    let (shift, _) = plan.wrap_shift(line, 0, 0);
    let unbroken = |q: usize| {
        let (row_shift, next) = plan.wrap_shift(line, q, 0);
        row_shift == shift && next >= row_len
    };
    if uniform.is_some()
        && !splat
        && step == 1
        && (rows == 1 || row_step == row_len as isize)
        && (0..rows).all(|q| plan.in_range(line, q, row_len) == (0..row_len) && unbroken(q))
    {
        return Some((start + shift) as usize);
    }
    let values = &mut T::values_mut(&mut out.column)[..row_len * rows];
    for (q, row) in values.chunks_mut(row_len).enumerate() {
        let valid = plan.in_range(line, q, row_len);
        let coords = |node: NodeId| match coord(node).values::<i64>(len) {
            Ok(coords) => Ok(&coords[q * row_len..(q + 1) * row_len]),
            Err(coord) => Err(coord),
        };
        let coords: Option<&dyn Fn(NodeId) -> Result<&'a [i64], i64>> = match uniform {
            Some(_) => None,
            None => Some(&coords),
        };
        values_outside(row, &valid).for_each(|value| *value = T::default());
        // Pieces between the wraps of the wrapped coordinates (one piece without them).
        let mut low = valid.start;
        while low < valid.end {
            let (shift, next) = plan.wrap_shift(line, q, low);
            let high = next.min(valid.end);
            let row_start = start + row_step * q as isize + shift;
            read_piece(plan, data, row_start, step, low..high, coords, row);
            low = high;
        }
    }
    None
}

/// The elements of `values` outside `valid`.
fn values_outside<'v, T>(
    values: &'v mut [T],
    valid: &Range<usize>,
) -> impl Iterator<Item = &'v mut T> {
    let (before, rest) = values.split_at_mut(valid.start.min(values.len()));
    let after = rest.get_mut(valid.len()..).unwrap_or_default();
    before.iter_mut().chain(after)
}

/// Positions `piece` of one row of `read_typed` into `values`: the point at position `p`
/// reads `data[start + step * p]` (plus its node coordinates, `coords`, unless they are
/// uniform and in `start`).
fn read_piece<'c, T: LaneElem>(
    plan: &ReadPlan,
    data: &[T],
    start: isize,
    step: isize,
    piece: Range<usize>,
    coords: Option<&dyn Fn(NodeId) -> Result<&'c [i64], i64>>,
    values: &mut [T],
) {
    let (low, high) = (piece.start, piece.end);
    let first = start + step * low as isize;
    let Some(coords) = coords else {
        match step {
            0 => values[low..high].fill(data[first as usize]),
            1 => {
                let first = first as usize;
                values[low..high].copy_from_slice(&data[first..first + (high - low)]);
            }
            -1 => {
                // A run read backwards (`xs[n - 1 - i]`: the cotangents of a reverse-mode
                // loop).
                let lowest = first as usize + 1 - (high - low);
                let run = data[lowest..=first as usize].iter().rev();
                for (slot, &value) in values[low..high].iter_mut().zip(run) {
                    *slot = value;
                }
            }
            _ => {
                for (q, slot) in values[low..high].iter_mut().enumerate() {
                    *slot = data[(first + step * q as isize) as usize];
                }
            }
        }
        return;
    };
    // A gather: the addresses first, a coordinate at a time (loops that vectorise), then the
    // loads; `LINE` points at a time.
    let mut buffer = [0isize; LINE];
    for piece in (low..high).step_by(LINE) {
        let end = (piece + LINE).min(high);
        let addresses = &mut buffer[..end - piece];
        for (q, address) in addresses.iter_mut().enumerate() {
            *address = start + step * (piece + q) as isize;
        }
        for &(node, stride) in &plan.node_coords {
            match coords(node) {
                Err(coord) => {
                    let shift = coord as isize * stride;
                    addresses.iter_mut().for_each(|address| *address += shift);
                }
                Ok(coords) => {
                    for (address, &coord) in addresses.iter_mut().zip(&coords[piece..end]) {
                        *address += coord as isize * stride;
                    }
                }
            }
        }
        for (slot, &address) in values[piece..end].iter_mut().zip(addresses.iter()) {
            *slot = data[address as usize];
        }
    }
}

/// By node of `kernel`: the operands `(a, b)` of an `exp (sub a b)` of floats whose `sub`
/// nothing else reads (Note [The exp of a difference]).
fn exp_differences(kernel: &Kernel) -> Vec<Option<(NodeId, NodeId)>> {
    let mut uses = vec![0usize; kernel.nodes.len()];
    for (node, _) in kernel.nodes.values() {
        for operand in node.operands() {
            uses[operand.0 as usize] += 1;
        }
    }
    let root = kernel.output.1;
    kernel
        .nodes
        .values()
        .map(|(node, elem)| {
            let Node::Prim(Prim::Exp, operands) = node else {
                return None;
            };
            let difference = operands[0];
            match &kernel.nodes[difference] {
                (Node::Prim(Prim::Sub, pair), sub_elem)
                    if elem.is_float()
                        && sub_elem == elem
                        && difference != root
                        && uses[difference.0 as usize] == 1 =>
                {
                    Some((pair[0], pair[1]))
                }
                _ => None,
            }
        })
        .collect()
}

/// Where axis `k` of `rank` axes is once axis `moved` is moved last (the others keep their
/// order).
fn moved_last_position(k: usize, moved: usize, rank: usize) -> usize {
    match k.cmp(&moved) {
        std::cmp::Ordering::Less => k,
        std::cmp::Ordering::Equal => rank - 1,
        std::cmp::Ordering::Greater => k - 1,
    }
}

/// The output of shape `shape` from `out`, which holds it with its axis `axis` moved last
/// (Note [Sums across a middle axis]).
fn moved_back(out: Column, shape: &[usize], axis: usize) -> Tensor {
    let mut moved = shape.to_vec();
    moved[axis..].rotate_left(1);
    let axes: Vec<usize> = (0..shape.len())
        .map(|k| moved_last_position(k, axis, shape.len()))
        .collect();
    let tensor = out.into_tensor(&moved);
    super::transpose::permuted(&tensor, &axes)
        .unwrap_or_else(|| tensor.permute(&axes).to_standard_layout())
}

/// The values of a kernel input (row-major).
fn tensor_values(tensor: &Tensor) -> ColumnRef<'_> {
    with_tensor!(tensor, array => LaneElem::wrap(
        array.as_slice().expect("kernel inputs are in standard layout")
    ))
}

/// Strides of `operand`'s reads along each iteration axis, and its start offset.
fn operand_strides(
    program_shape: &[usize],
    operand: &MatOperand,
    rank: usize,
) -> (isize, Vec<isize>) {
    let strides = row_major_strides(program_shape);
    let mut offset = 0isize;
    let mut steps = vec![0isize; rank];
    for (affine, &stride) in operand.coords.iter().zip(&strides) {
        offset += affine.constant as isize * stride as isize;
        for &(axis, coeff) in &affine.terms {
            steps[axis] += coeff as isize * stride as isize;
        }
    }
    (offset, steps)
}

/// The element types `faer` multiplies.
trait GemmElem: Element {
    /// `c = factor * a * b` (`Accum::Replace`) or `c += factor * a * b` (`Accum::Add`).
    fn gemm(
        c: MatMut<'_, Self>,
        accum: Accum,
        operands: (MatRef<'_, Self>, MatRef<'_, Self>),
        factor: f64,
        par: Par,
    );
}

macro_rules! gemm_elem {
    ($($ty:ty),*) => {$(
        impl GemmElem for $ty {
            fn gemm(
                c: MatMut<'_, Self>,
                accum: Accum,
                (a, b): (MatRef<'_, Self>, MatRef<'_, Self>),
                factor: f64,
                par: Par,
            ) {
                // A power of two (`MatMul::factor`): exact in either type.
                faer::linalg::matmul::matmul(c, accum, a, b, factor as $ty, par);
            }
        }
    )*};
}

gemm_elem!(f32, f64);

/// One call of `matmul_typed`: a term's operands at one point of the summed axes (`at`,
/// `(axis, coordinate)`), replacing or adding to the output.
struct Product<'a> {
    operands: (&'a MatOperand, &'a MatOperand),
    at: &'a [(usize, i64)],
    accum: Accum,
}

fn matmul_typed<T: GemmElem>(
    matmul: &MatMul,
    this: &Product<'_>,
    (lhs, rhs): (Option<&super::tensor::Nd<T>>, Option<&super::tensor::Nd<T>>),
    out: &mut [T],
    exec: &Exec<'_>,
) -> Res<()> {
    let (Some(lhs), Some(rhs)) = (lhs, rhs) else {
        unreachable!("matrix-product operands have the product's element type (verified IR)")
    };
    let rank = matmul.shape.len();
    // Each operand: its data, and its offset (at the summed axes' point) and steps along
    // every axis of the iteration.
    let placed = |data: &super::tensor::Nd<T>, operand: &MatOperand| {
        let (mut offset, steps) = operand_strides(data.shape(), operand, rank);
        for &(axis, coord) in this.at {
            offset += steps[axis] * coord as isize;
        }
        (offset, steps)
    };
    let mut a_operand = (
        lhs.as_slice().expect("standard layout"),
        placed(lhs, this.operands.0),
    );
    let mut b_operand = (
        rhs.as_slice().expect("standard layout"),
        placed(rhs, this.operands.1),
    );
    // The output's strides along the iteration axes: none along the summed ones.
    let out_axes = matmul.out_axes();
    let out_dims: Vec<usize> = out_axes.iter().map(|&axis| matmul.shape[axis]).collect();
    let mut out_strides = vec![0isize; rank];
    for (&axis, stride) in out_axes.iter().zip(row_major_strides(&out_dims)) {
        out_strides[axis] = stride as isize;
    }
    let depth = matmul.shape[0];
    let extent = |axis: Option<usize>| axis.map_or(1, |axis| matmul.shape[axis]);
    let step = |steps: &[isize], axis: Option<usize>| axis.map_or(0, |axis| steps[axis]);
    let batch_shape: Vec<usize> = matmul
        .batch_axes
        .iter()
        .map(|&axis| matmul.shape[axis])
        .collect();
    let n_batches: usize = batch_shape.iter().product();
    // Note [Batched products]: many products run in parallel with each other, one thread
    // each, a panel of rows of every product before the next panel; the product is computed
    // as `cᵀ = bᵀ aᵀ` (the operands and the row and column axes swapped) when that makes the
    // right operand the small one. Other products are swapped so when that makes the rows
    // the longer side (Note [Products in bands]).
    let elem_bytes = std::mem::size_of::<T>();
    let small =
        |width: usize| depth.saturating_mul(width).saturating_mul(elem_bytes) <= PANEL_CACHE / 4;
    let (mut m_axis, mut n_axis) = (matmul.m_axis, matmul.n_axis);
    let batched = n_batches > 1 && (small(extent(n_axis)) || small(extent(m_axis)));
    let swap = if batched {
        !small(extent(n_axis))
    } else {
        extent(n_axis) > extent(m_axis)
    };
    if swap {
        std::mem::swap(&mut m_axis, &mut n_axis);
        std::mem::swap(&mut a_operand, &mut b_operand);
    }
    let (m, n) = (extent(m_axis), extent(n_axis));
    let (a_data, (a_offset, a_axis_steps)) = (a_operand.0, &a_operand.1);
    let (b_data, (b_offset, b_axis_steps)) = (b_operand.0, &b_operand.1);
    // The strides of the product `c = a b` along (rows, columns): a's rows and depth, b's
    // depth and columns, c's rows and columns.
    let a_steps = (step(a_axis_steps, m_axis), a_axis_steps[0]);
    let b_steps = (b_axis_steps[0], step(b_axis_steps, n_axis));
    let c_steps = (step(&out_strides, m_axis), step(&out_strides, n_axis));
    // Note [Long batched products]: the rows of each depth chunk, when they run so.
    let chunk = (n_batches > 1 && !batched)
        .then(|| long_products(m, n, depth, elem_bytes))
        .flatten();
    let panel = if batched {
        batched_panel_rows(m, n, depth, n_batches, elem_bytes)
    } else {
        panel_rows(m, n, depth, exec.config.panel_flops.unwrap_or(PANEL_FLOPS))
    };
    let big = !batched && chunk.is_none() && m * n * depth >= THREAD_WORK;
    let band_count = big
        .then(|| band_count(m, n * depth, rayon::current_num_threads()))
        .flatten();
    let par = if big && band_count.is_none() {
        Par::rayon(0)
    } else {
        Par::Seq
    };
    let out = OutPtr(out.as_mut_ptr());
    // Batch `batch`'s product of the rows `rows` over the depth `depths`, into its output
    // (`accum`).
    let product = |batch: usize, rows: Range<usize>, depths: Range<usize>, accum: Accum| {
        let coords = unravel(batch, &batch_shape);
        let shift = |steps: &[isize]| -> isize {
            matmul
                .batch_axes
                .iter()
                .zip(&coords)
                .map(|(&axis, &coord)| steps[axis] * coord as isize)
                .sum()
        };
        let (a_start, b_start) = (
            *a_offset + shift(a_axis_steps),
            *b_offset + shift(b_axis_steps),
        );
        let (row, depth) = (rows.start as isize, depths.start as isize);
        // SAFETY: every view stays inside its buffer: the coordinates of the product's
        // iteration space are in range for each operand (fuse keeps every read in range),
        // and the output view covers `rows × n` elements of `out` at the output's own
        // row-major strides; two calls that run at once write disjoint elements (each
        // element of the output is one row and column of one batch, and the calls of one
        // batch's depth chunks run in order on one thread).
        unsafe {
            let a = MatRef::<T>::from_raw_parts(
                a_data
                    .as_ptr()
                    .offset(a_start + a_steps.0 * row + a_steps.1 * depth),
                rows.len(),
                depths.len(),
                a_steps.0,
                a_steps.1,
            );
            let b = MatRef::<T>::from_raw_parts(
                b_data.as_ptr().offset(b_start + b_steps.0 * depth),
                depths.len(),
                n,
                b_steps.0,
                b_steps.1,
            );
            let c = MatMut::<T>::from_raw_parts_mut(
                out.get().offset(shift(&out_strides) + c_steps.0 * row),
                rows.len(),
                n,
                c_steps.0,
                c_steps.1,
            );
            T::gemm(c, accum, (a, b), matmul.factor(), par);
        }
    };
    let interrupted = || exec.interrupt_requested();
    if batched {
        (0..m.div_ceil(panel)).into_par_iter().for_each(|number| {
            if !interrupted() {
                let rows = number * panel..(number * panel + panel).min(m);
                (0..n_batches).for_each(|batch| product(batch, rows.clone(), 0..depth, this.accum));
            }
        });
    } else if let Some(chunk) = chunk {
        // Note [Long batched products]: a group of batches per thread, each group through
        // the depth a chunk at a time.
        let groups = rayon::current_num_threads().clamp(1, n_batches);
        (0..groups).into_par_iter().for_each(|group| {
            let batches = group * n_batches / groups..(group + 1) * n_batches / groups;
            for start in (0..depth).step_by(chunk) {
                if interrupted() {
                    return;
                }
                let accum = if start == 0 { this.accum } else { Accum::Add };
                for batch in batches.clone() {
                    product(batch, 0..m, start..(start + chunk).min(depth), accum);
                }
            }
        });
    } else {
        // Note [Products in bands]: a band of rows per thread (one band without threads),
        // each in panels of even rows.
        let bands: Vec<Range<usize>> = even_rows(0..m, band_count.unwrap_or(1)).collect();
        let band_of = |task: usize| {
            let (batch, band) = (task / bands.len(), bands[task % bands.len()].clone());
            let panels = band.len().div_ceil(panel);
            for rows in even_rows(band, panels) {
                if interrupted() {
                    return;
                }
                product(batch, rows, 0..depth, this.accum);
            }
        };
        let tasks = n_batches * bands.len();
        if bands.len() > 1 {
            (0..tasks).into_par_iter().for_each(band_of);
        } else {
            (0..tasks).for_each(band_of);
        }
    }
    if interrupted() {
        return Err(InterpError::Interrupted.into());
    }
    Ok(())
}

#[cfg(test)]
pub(in crate::exec) mod tests {
    use super::PointMask;
    use super::{affine_in_range, digits_of_one_offset, index_line, point_line, point_mask, Line};
    use super::{band_count, even_rows, long_products, panel_rows};
    use super::{read_typed, ReadPlan};
    use super::{MIN_PANEL_ROWS, PANEL_ELEMENTS, PANEL_FLOPS};
    use crate::core::ir::{Elem, Scalar};
    use crate::core::kernel::{Affine, Node, NodeId, Step};
    use crate::exec::lanes::Lane;
    use crate::exec::lanes::LaneElem;

    /// Programs whose one kernel compares an index (through a cast or not) with a value
    /// known at launch, and whether that comparison is a point mask: only where the cast
    /// keeps every value of the index.
    pub(in crate::exec) const POINT_MASK_CASES: [(&str, bool); 5] = [
        ("%2: [{n}]i64 = iota {n}\n%3: [{n}]i64 = replicate {n} %0", true),
        (
            "%4: [{n}]i64 = iota {n}\n%2: [{n}]u32 = cast_u32 %4\n%3: [{n}]u32 = replicate {n} %1",
            true,
        ),
        (
            "%4: [{n}]i64 = iota {n}\n%2: [{n}]i32 = cast_i32 %4\n%3: [{n}]i32 = replicate {n} 7:i32",
            true,
        ),
        // The cast of an index computed by arithmetic (which might wrap): no point mask.
        (
            "%5: [{n}]i64 = iota {n}\n%10: [{n}]i64 = replicate {n} 3:i64\n%4: [{n}]i64 = sub %5 %10\n%2: [{n}]u32 = cast_u32 %4\n%3: [{n}]u32 = replicate {n} %1",
            false,
        ),
        (
            "%5: [{n}]i64 = iota {n}\n%10: [{n}]i64 = replicate {n} 4294967293:i64\n%4: [{n}]i64 = add %5 %10\n%2: [{n}]u32 = cast_u32 %4\n%3: [{n}]u32 = replicate {n} %1",
            false,
        ),
    ];

    /// Gathers from a `[40, 30]` array whose index functions (`%2` the output's index) give
    /// its two coordinates, each with the flat offset its coordinates are the digits of, if
    /// they are (Note [Row-major digits]).
    pub(in crate::exec) const DIGIT_CASES: [(&str, usize, Option<i64>); 8] = [
        ("%3: []i64 = idiv %2 30:i64\n%4: []i64 = mod %2 30:i64\nin %3, %4", 1200, Some(0)),
        ("%5: []i64 = idiv %2 30:i64\n%3: []i64 = mod %5 40:i64\n%4: []i64 = mod %2 30:i64\nin %3, %4", 1200, Some(0)),
        ("%5: []u32 = cast_u32 %2\n%6: []u32 = idiv %5 30:u32\n%7: []u32 = mod %5 30:u32\n%3: []i64 = cast_i64 %6\n%4: []i64 = cast_i64 %7\nin %3, %4", 1200, Some(0)),
        ("%5: []i64 = add %2 5:i64\n%3: []i64 = idiv %5 30:i64\n%4: []i64 = mod %5 30:i64\nin %3, %4", 1195, Some(5)),
        // The second digit is of another modulus, or of another offset.
        ("%3: []i64 = idiv %2 30:i64\n%4: []i64 = mod %2 25:i64\nin %3, %4", 1200, None),
        ("%5: []i64 = add %2 1:i64\n%3: []i64 = idiv %2 30:i64\n%4: []i64 = mod %5 30:i64\nin %3, %4", 1199, None),
        // The offset passes the array's size (the first digit wraps around).
        ("%5: []i64 = idiv %2 30:i64\n%3: []i64 = mod %5 40:i64\n%4: []i64 = mod %2 30:i64\nin %3, %4", 1300, None),
        // The digits of a row of 30 in a row of 15.
        ("%3: []i64 = idiv %2 15:i64\n%4: []i64 = mod %2 15:i64\nin %3, %4", 600, None),
    ];

    /// nbody's gradient at `n` bodies (Note [Sums across a middle axis]): a pair's
    /// difference `p[i, d] − p[j, d]` scaled by a factor `f[i, j]` that is not light (a
    /// square root, so materialised), doubled (`add x x`), and summed over `i` at `[i, j, d]`
    /// and at `[j, i, d]` into `[n, 3]`.
    pub(in crate::exec) fn pair_sum_program(n: usize) -> String {
        format!(
            "program(%0: [{n}, 3]f32, %1: [{n}, {n}]f32) {{
               %2: [{n}, {n}, 3]f32 = replicate {n} %0
               %3: [{n}, {n}, 3]f32 = tr [1, 0] %2
               %4: [{n}, {n}, 3]f32 = sub %3 %2
               %5: [{n}, {n}]f32 = sqrt %1
               %6: [3, {n}, {n}]f32 = replicate 3 %5
               %7: [{n}, {n}, 3]f32 = tr [1, 2, 0] %6
               %8: [{n}, {n}, 3]f32 = mul %4 %7
               %9: [{n}, {n}, 3]f32 = add %8 %8
               %10: [{n}, {n}, 3]f32 = neg %9
               %11: [{n}, {n}, 3]f32 = tr [1, 0] %9
               %12: [{n}, {n}, 3]f32 = add %10 %11
               %13: [{n}, 3]f32 = sumOuter %12
               in %13
             }}"
        )
    }

    /// Note [Light values] and Note [Sums across a middle axis]: the pair terms are computed
    /// by the sum that reads them (no `[n, n, 3]` array is written), and a launch of that sum
    /// alone moves its `j` axis last, where its `f[i, j]` is a run; bound otherwise (a monoid
    /// consumer's plan), or over a short `j`, it keeps its axes.
    #[test]
    fn long_sums_over_narrow_outputs_run_across_a_middle_axis() {
        use super::{Binding, LaunchPlan};
        for (n, moved) in [(200, Some(1)), (40, None)] {
            let program = crate::core::parse::parse_program(&pair_sum_program(n)).unwrap();
            crate::ops::verify::verify(&program).unwrap();
            let schedule = crate::passes::fuse::run(&program);
            let text = schedule.display(&program).to_string();
            let [Step::Kernel(factor), Step::Kernel(sum)] = &schedule.steps[..] else {
                panic!("the factor's kernel and the sum's:\n{text}");
            };
            assert!(factor.reduce.is_none() && sum.reduce.is_some(), "{text}");
            let alone = Binding::alone(sum);
            let moving = Binding {
                moves: true,
                ..alone
            };
            let plan = LaunchPlan::new(&program, sum, moving);
            assert_eq!(plan.moved_last, moved, "{text}");
            if moved.is_some() {
                assert_eq!(plan.shape, [n, 3, n]);
            }
            assert_eq!(LaunchPlan::new(&program, sum, alone).moved_last, None);
        }
    }

    pub(in crate::exec) fn digit_program(body: &str, n: usize) -> String {
        format!(
            "program(%0: [40, 30]f32) {{\n%1: [{n}]f32 = gather [{n}] %0 (\\%2: []i64 ->\n{body})\nin %1\n}}"
        )
    }

    #[test]
    fn reads_at_the_digits_of_an_offset_are_affine_where_the_layout_agrees() {
        for (body, n, expected) in DIGIT_CASES {
            let program = crate::core::parse::parse_program(&digit_program(body, n)).unwrap();
            crate::ops::verify::verify(&program).unwrap();
            let schedule = crate::passes::fuse::run(&program);
            let [Step::Kernel(kernel)] = &schedule.steps[..] else {
                panic!("one kernel:\n{}", schedule.display(&program));
            };
            let reads: Vec<_> = (kernel.nodes.values())
                .filter_map(|(node, _)| match node {
                    Node::Read { coords, .. } => Some(coords),
                    _ => None,
                })
                .collect();
            let [coords] = reads[..] else {
                panic!("one read:\n{}", schedule.display(&program));
            };
            let expected = expected.map(|constant| Affine {
                constant,
                terms: vec![(0, 1)],
            });
            assert_eq!(
                digits_of_one_offset(kernel, coords, &[40, 30]).map(|(_, flat)| flat),
                expected,
                "{}",
                schedule.display(&program)
            );
        }
    }

    /// The program of a `POINT_MASK_CASES` body: a one-hot select from inputs `%0: []i64`
    /// and `%1: []u32`.
    pub(in crate::exec) fn point_mask_program(body: &str, n: usize) -> String {
        format!(
            "program(%0: []i64, %1: []u32) {{\n{}\n%6: [{n}]bool = eq %2 %3\n%7: [{n}]f32 = replicate {n} 1.0:f32\n%8: [{n}]f32 = replicate {n} 0.0:f32\n%9: [{n}]f32 = select %6 %7 %8\nin %9\n}}",
            body.replace("{n}", &n.to_string())
        )
    }

    #[test]
    fn comparisons_of_an_index_with_a_known_value_are_point_masks_where_casts_are_exact() {
        for (body, expected) in POINT_MASK_CASES {
            let text = point_mask_program(body, 10);
            let program = crate::core::parse::parse_program(&text).unwrap();
            crate::ops::verify::verify(&program).unwrap();
            let schedule = crate::passes::fuse::run(&program);
            let [Step::Kernel(kernel)] = &schedule.steps[..] else {
                panic!("one kernel:\n{}", schedule.display(&program));
            };
            let masks = (kernel.nodes.values())
                .filter(|(node, _)| matches!(node, Node::Prim(..)))
                .filter_map(|(node, _)| {
                    point_mask(kernel, node, |other| {
                        (!matches!(kernel.nodes[other].0, Node::Index(_))).then_some(3)
                    })
                })
                .count();
            assert_eq!(
                masks,
                usize::from(expected),
                "{}",
                schedule.display(&program)
            );
        }
        // The `u32` cast of an index whose values it does not keep (negative ones, or past
        // 2^32): no point mask.
        let program =
            crate::core::parse::parse_program(&point_mask_program(POINT_MASK_CASES[1].0, 10))
                .unwrap();
        let schedule = crate::passes::fuse::run(&program);
        let [Step::Kernel(kernel)] = &schedule.steps[..] else {
            panic!("one kernel:\n{}", schedule.display(&program));
        };
        for (constant, coeff, expected) in [
            (0, 1, true),
            (4294967286, 1, true),
            (4294967287, 1, false),
            (-1, 1, false),
            (9, -1, true),
            (8, -1, false),
        ] {
            let mut kernel = kernel.clone();
            let eq = (kernel.nodes.iter())
                .find(|(_, (node, _))| matches!(node, Node::Prim(crate::prim::Prim::Eq, _)))
                .map(|(id, _)| id)
                .expect("an eq node");
            for id in 0..kernel.nodes.len() {
                if let Node::Index(affine) = &mut kernel.nodes[NodeId(id as u32)].0 {
                    *affine = Affine {
                        constant,
                        terms: vec![(0, coeff)],
                    };
                }
            }
            let node = kernel.nodes[eq].0.clone();
            let mask = point_mask(&kernel, &node, |_| Some(3));
            assert_eq!(mask.is_some(), expected, "{constant} + {coeff} i");
        }
    }

    #[test]
    fn affine_bounds_are_the_brute_force_ones() {
        let shape = [3, 4];
        for constant in [-5, 0, 9] {
            for a in -2..=2 {
                for b in -3..=3 {
                    let terms = [(0, a), (1, b)].into_iter().filter(|t| t.1 != 0).collect();
                    let affine = Affine { constant, terms };
                    let values: Vec<i64> = (0..3)
                        .flat_map(|i| (0..4).map(move |j| constant + a * i + b * j))
                        .collect();
                    let expected = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
                    assert_eq!(affine.bounds(&shape), Some(expected), "{affine}");
                }
            }
        }
        let huge = Affine {
            constant: i64::MAX - 1,
            terms: vec![(0, 1)],
        };
        assert_eq!(huge.bounds(&shape), None);
        assert_eq!(Affine::axis(1).bounds(&[3, 0]), None);
    }

    /// Note [Uniform coordinates]: a read whose computed coordinate is a splat is a run at
    /// the start it moves to, read in place when contiguous; a coordinate that varies along
    /// the line is still gathered. The values are those of the gather.
    #[test]
    fn reads_at_uniform_computed_coordinates_are_runs() {
        let data: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        let plan = |axis_step: isize| ReadPlan {
            tensor: 0,
            offset: 5,
            axis_steps: vec![axis_step],
            node_coords: vec![(NodeId(0), 100)],
            bounded: Vec::new(),
            prefetch: false,
        };
        let base = [10];
        let line = Line::new(&base, Some(0), 50, &[]);
        // The row: 3 at every point (a splat), or 3 and 4 in turn.
        let mut row = Lane::new(Elem::I64);
        for (p, value) in i64::values_mut(&mut row.column)[..50]
            .iter_mut()
            .enumerate()
        {
            *value = 3 + (p % 2) as i64;
        }
        let expected = |p: usize, step: usize, row: &Lane| {
            let at = if row.splat { 3 } else { 3 + p % 2 };
            (5 + 100 * at + step * (10 + p)) as f32
        };
        for splat in [true, false] {
            row.splat = splat;
            let coord = |_: NodeId| row.as_ref();
            let mut out = Lane::new(Elem::F32);
            // Contiguous: in place at the moved start when the coordinate is uniform.
            let start = read_typed(&plan(1), &data, 0, &coord, &line, &mut out);
            if splat {
                assert_eq!(start, Some(5 + 300 + 10));
            } else {
                assert_eq!(start, None);
                for p in 0..50 {
                    assert_eq!(f32::values_mut(&mut out.column)[p], expected(p, 1, &row));
                }
            }
            // Strided: copied, the gather's values either way.
            let mut out = Lane::new(Elem::F32);
            assert_eq!(
                read_typed(&plan(2), &data, 0, &coord, &line, &mut out),
                None
            );
            for p in 0..50 {
                assert_eq!(f32::values_mut(&mut out.column)[p], expected(p, 2, &row));
            }
        }
    }

    #[test]
    fn point_masks_are_the_comparisons_of_their_index_lanes() {
        for constant in [-9, -1, 0, 2, 7] {
            for step in -3..=3 {
                for value in [-7, -1, 0, 1, 4, 6, 9, i64::MAX] {
                    for len in [1, 5, 8] {
                        for equal in [true, false] {
                            let affine = Affine {
                                constant,
                                terms: vec![(0, 2), (1, step)]
                                    .into_iter()
                                    .filter(|t| t.1 != 0)
                                    .collect(),
                            };
                            let base = [-1, 0];
                            let point = PointMask {
                                index: 0,
                                value,
                                equal,
                            };
                            let line = Line::new(&base, Some(1), len, &[]);
                            let mut mask = Lane::new(Elem::Bool);
                            point_line(&affine, point, &line, &mut mask);
                            let mut index = Lane::new(Elem::I64);
                            index_line(&affine, &line, &mut index);
                            let at = |lane: &Lane, p: usize| lane.as_ref().get(p);
                            for p in 0..len {
                                let expected = (at(&index, p) == Scalar::I64(value)) == equal;
                                assert_eq!(
                                    at(&mask, p),
                                    Scalar::Bool(expected),
                                    "{affine} = {value} ({equal}) at {p} of {len}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_in_range_part_of_an_affine_line_is_the_brute_force_one() {
        for start in -12..12 {
            for step in -4..=4 {
                for dim in [1, 3, 7] {
                    for points in [0, 1, 5, 9] {
                        let expected: Vec<usize> = (0..points)
                            .filter(|&p| (0..dim).contains(&(start + step * p as i64)))
                            .collect();
                        let got: Vec<usize> = affine_in_range(start, step, dim, points).collect();
                        assert_eq!(
                            got, expected,
                            "start {start} step {step} dim {dim} points {points}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn panels_take_as_many_rows_as_their_budget_allows() {
        // A 1024² f32 product is one panel; a product of 8192² by 8192² is cut into panels
        // of at most the budget, except that a panel has at least `MIN_PANEL_ROWS` rows.
        assert_eq!(panel_rows(1024, 1024, 1024, PANEL_FLOPS), 1024);
        assert_eq!(panel_rows(1024, 256, 784, PANEL_FLOPS), 1024);
        let rows = panel_rows(4096, 2048, 2048, PANEL_FLOPS);
        assert!(
            rows < 4096 && 2 * rows * 2048 * 2048 <= PANEL_FLOPS,
            "{rows}"
        );
        assert_eq!(panel_rows(8192, 8192, 8192, PANEL_FLOPS), MIN_PANEL_ROWS);
        // A skinny product: few operations a row, so its rows are limited by the elements
        // they move.
        let rows = panel_rows(10_000_000, 4, 64, PANEL_FLOPS);
        assert!(
            rows < 10_000_000 && rows * (4 + 64) <= PANEL_ELEMENTS,
            "{rows}"
        );
        assert_eq!(panel_rows(70, 48, 40, 1), MIN_PANEL_ROWS);
        // Fewer rows than the minimum, none at all, and empty rows: the loop over panels
        // needs a step of at least one.
        assert_eq!(panel_rows(6, 48, 40, 1), 6);
        assert_eq!(panel_rows(0, 48, 40, 1), 1);
        assert_eq!(panel_rows(100, 0, 40, PANEL_FLOPS), 100);
    }

    #[test]
    fn long_products_are_cut_into_depth_chunks_when_their_output_is_small() {
        // gmm's gradient: 64 × 64 outputs over 10000 points, f64; in f32 twice the rows.
        assert_eq!(long_products(64, 64, 10_000, 8), Some(64));
        assert_eq!(long_products(64, 64, 10_000, 4), Some(128));
        // Too short to pay for more than a few calls, or outputs too large to stay in cache
        // while the chunks stream by (one chunk's product then is a product of its own).
        assert_eq!(long_products(64, 64, 255, 8), None);
        assert_eq!(long_products(64, 64, 256, 8), Some(64));
        assert_eq!(long_products(256, 784, 1_000_000, 4), None);
        // Wide outputs still get chunks of `MIN_PANEL_ROWS` rows at least.
        assert_eq!(long_products(8, 4000, 100_000, 4), Some(MIN_PANEL_ROWS));
    }

    #[test]
    fn bands_and_panels_split_rows_evenly() {
        let runs =
            |rows: std::ops::Range<usize>, pieces| even_rows(rows, pieces).collect::<Vec<_>>();
        assert_eq!(runs(0..1024, 3), [0..341, 341..682, 682..1024]);
        assert_eq!(runs(10..17, 2), [10..13, 13..17]);
        // Never more pieces than rows (no empty one), and one piece at least.
        assert_eq!(runs(0..2, 5), [0..1, 1..2]);
        assert_eq!(runs(0..5, 0), vec![0..5]);
        // A band per thread when every band has `MIN_PANEL_ROWS` rows and `THREAD_WORK`
        // multiply-adds; otherwise faer's own threading.
        assert_eq!(band_count(1024, 784 * 256, 2), Some(2));
        assert_eq!(band_count(1024, 784 * 256, 1), None);
        assert_eq!(band_count(1024, 784 * 256, 64), Some(32));
        assert_eq!(band_count(63, 1 << 20, 2), None);
        assert_eq!(band_count(100_000, 8, 2), Some(2));
        assert_eq!(band_count(40_000, 8, 4), None);
    }
}

//! Monoid statements (`reduce`, `assoc_scan`, `assoc_scan_right`) on typed lanes: the engine's
//! evaluation of Note [Monoid order] (`ops::monoid`), bit for bit the reference evaluation's.
//!
//! The fold of one chunk at one lane is sequential by definition, so parallelism and
//! vectorisation come from the *pairs* (chunk, lane): a line is up to `LINE` pairs, and the
//! operator, compiled once by `ops::scalar_code`, runs each of its statements as one typed
//! loop over the line (`lanes::eval_prim`, the engine's primitive loops), row after row of the
//! chunks. A reduction over the rows of `[n, m]` arrays is `m` lanes wide; a 1-D one is
//! `n / CHUNK_ROWS` lanes (its chunks) wide. Tasks on rayon are blocks of chunks × lanes.
//! Which task or line computes a pair does not change its value, so the results are the
//! same bits on any number of threads.
//!
//! With few lanes (a reduction or scan of a vector), a line's pairs lie in different chunks
//! and each row of it would be gathered across chunks; such statements run their pairs as
//! compiled chains instead (`monoid_jit`, `CompiledMonoid`), each reading its own chunk in
//! place, once the operator has been compiled (`CompileLoops`).
//!
//! On chains, an operand of a vector may be *produced*: computed a group of chunks at a time
//! into a small buffer just before the folds read it (`GroupKernels`, the producer kernels of
//! Note [Monoid steps] in `passes::fuse::monoid`); a scan's result may be *consumed*: stored
//! by the rescan into a small buffer that the consumer kernels read right after (Note
//! [Monoid consumers]); and results nobody reads are not stored.
//!
//! Does not handle yet: producers and consumers on lanes (many lanes; the caller
//! materialises their arrays).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use ndarray::{ArrayViewMut2, Axis};
use rayon::prelude::*;

use super::lanes::{match_column, with_column, with_operands, Column, Lane, LaneElem, LINE};
use super::monoid_jit::{ChainCode, ChunkFolds};
use super::tensor::{with_tensor, Tensor};
use super::{CompileLoops, PAR_THRESHOLD};
use crate::core::ir::{BlockId, Elem, MonoidKind, Program, Scalar};
use crate::ops::interp::InterpError;
use crate::ops::monoid::CHUNK_ROWS;
use crate::ops::scalar_code::{Op, Operand, ScalarCode};

/// Evaluates a monoid statement over `arrays` (any layout) with identities `init`, on
/// compiled chains (`compiled`, of the statement's operator and direction) where they
/// serve; the results, and whether they were computed on chains. `interrupted` is polled
/// once per line or group of chains.
pub(super) fn eval(
    program: &Program,
    kind: MonoidKind,
    arrays: &[Tensor],
    init: &[Tensor],
    op: BlockId,
    compiled: Option<&CompiledMonoid>,
    interrupted: &(dyn Fn() -> bool + Sync),
) -> Result<(Vec<Tensor>, bool), InterpError> {
    let code = LaneCode::new(&ScalarCode::operator(program, op));
    let shape = arrays[0].shape().to_vec();
    let rest = &shape[1..];
    let n_rows = shape[0];
    let m: usize = rest.iter().product();
    if n_rows == 0 || m == 0 {
        let results = match kind {
            MonoidKind::Reduce => init.to_vec(),
            MonoidKind::Scan | MonoidKind::ScanRight => code
                .columns(0)
                .into_iter()
                .map(|column| column.into_tensor(&shape))
                .collect(),
        };
        return Ok((results, false));
    }
    let arrays: Vec<Tensor> = arrays.iter().map(Tensor::to_standard_layout).collect();
    if let Some(compiled) = compiled {
        let inputs: Vec<Input> = arrays.iter().map(Input::Array).collect();
        let kept = vec![Kept::Stored; arrays.len()];
        let chains = Chained {
            compiled,
            kernels: &NoKernels,
            kept: &kept,
        };
        if let Some(res) = eval_on_chains(program, kind, &shape, &inputs, op, &chains, interrupted)
        {
            let stored = |results: Vec<Option<Tensor>>| {
                let results = results.into_iter();
                (
                    results
                        .map(|r| r.expect("every result is stored"))
                        .collect(),
                    true,
                )
            };
            return res.map(stored);
        }
    }
    let run = Run::new(&code, kind, &shape, interrupted);
    eval_lanes(&run, kind, &arrays, &shape).map(|results| (results, false))
}

/// An array operand of a monoid statement on compiled chains.
pub(super) enum Input<'a> {
    /// Its values, in row-major layout.
    Array(&'a Tensor),
    /// Computed where the folds read it by producer number `usize` (`GroupKernels::produce`).
    Produced(usize),
}

/// The kernels that run on each group of chunks of a vector's statement (`exec::fused`'s,
/// Notes [Monoid steps] and [Monoid consumers] in `passes::fuse::monoid`): producers compute
/// operands before the folds read them, consumers read results after the rescan stored them.
pub(super) trait GroupKernels: Sync {
    /// A task's scratch space.
    type Work: Send;
    fn work(&self) -> Self::Work;
    /// Elements `rows` of producer `which`'s vector into the first `rows.len()` of `out`.
    fn produce(&self, work: &mut Self::Work, which: usize, rows: Range<usize>, out: &mut Column);
    /// Runs the consumers on elements `rows`, whose consumed results (`Kept::Consumed`) are
    /// the first `rows.len()` of `results` (by component; the others empty).
    fn consume(&self, work: &mut Self::Work, rows: Range<usize>, results: &[Column]);
}

/// No producers and no consumers: every operand is an array, no result is consumed.
struct NoKernels;

impl GroupKernels for NoKernels {
    type Work = ();
    fn work(&self) {}
    fn produce(&self, _: &mut (), which: usize, _: Range<usize>, _: &mut Column) {
        unreachable!("no producer {which}: every operand is an array")
    }
    fn consume(&self, _: &mut (), _: Range<usize>, _: &[Column]) {
        unreachable!("no consumers: no result is consumed")
    }
}

/// What becomes of a result of a statement on chains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kept {
    /// Stored into an array of the results.
    Stored,
    /// A scan's result computed a group of chunks at a time for the consumers
    /// (`GroupKernels::consume`), never stored whole.
    Consumed,
    /// Not stored: nothing reads it.
    Dropped,
}

/// How a statement runs on chains: its compiled folds, the kernels of its groups of chunks,
/// and what becomes of each result.
pub(super) struct Chained<'a, P> {
    pub compiled: &'a CompiledMonoid,
    pub kernels: &'a P,
    /// By result; the stored ones are `Some` in the results.
    pub kept: &'a [Kept],
}

/// Evaluates a monoid statement over operands of shape `shape` on compiled chains, storing
/// the results `chained.kept` asks for and running the consumers; `None` if the chains do
/// not serve: an empty or wide (`CHAIN_LANES` lanes or more) statement, produced operands or
/// consumed results of more than one lane, a consumed result of a `reduce`, or folds that
/// cannot be compiled.
pub(super) fn eval_on_chains<P: GroupKernels>(
    program: &Program,
    kind: MonoidKind,
    shape: &[usize],
    inputs: &[Input],
    op: BlockId,
    chained: &Chained<'_, P>,
    interrupted: &(dyn Fn() -> bool + Sync),
) -> Option<Result<Vec<Option<Tensor>>, InterpError>> {
    let m: usize = shape[1..].iter().product();
    let produced = inputs
        .iter()
        .any(|input| matches!(input, Input::Produced(_)));
    let consumed = chained.kept.contains(&Kept::Consumed);
    if shape[0] == 0
        || m == 0
        || m >= CHAIN_LANES
        || ((produced || consumed) && m != 1)
        || (consumed && kind == MonoidKind::Reduce)
    {
        return None;
    }
    let code = LaneCode::new(&ScalarCode::operator(program, op));
    let run = Run::new(&code, kind, shape, interrupted);
    run.eval_chains(chained, kind, inputs, shape)
}

/// The evaluation on lanes: steps (1) and (3) on lines of pairs, step (2) in chunk order.
fn eval_lanes(
    run: &Run,
    kind: MonoidKind,
    arrays: &[Tensor],
    shape: &[usize],
) -> Result<Vec<Tensor>, InterpError> {
    let (code, m, n_rows, rest) = (run.code, run.m, run.n_rows, &shape[1..]);
    let tasks = run.tasks();
    let stop = || InterpError::Interrupted;
    // (1) The total of every (chunk, lane) pair, indexed `chunk * m + lane`.
    let task_totals = run.map_tasks(&tasks, |task, work| run.totals(task, arrays, work))?;
    let mut totals = code.columns(run.n_chunks * m);
    for (task, parts) in tasks.iter().zip(task_totals) {
        for (position, (chunk, lane)) in task.pairs().enumerate() {
            for (total, part) in totals.iter_mut().zip(&parts) {
                total.set(chunk * m + lane, part.get(position));
            }
        }
    }
    // (2) The totals folded in chunk order: the result of `reduce`, the carries of a scan.
    let (folded, carries) = run.fold_totals(&totals).ok_or_else(stop)?;
    if kind == MonoidKind::Reduce {
        return Ok(folded
            .into_iter()
            .map(|column| column.into_tensor(rest))
            .collect());
    }
    // (3) Every chunk rescanned from its carry, into its block of the outputs. The blocks
    // cover the outputs, so kept buffers serve (fresh ones cost a page fault per 4 KB).
    let mut outputs = code.pooled_columns(n_rows * m);
    let mut blocks: Vec<Vec<BlockMut>> = tasks.iter().map(|_| Vec::new()).collect();
    for output in &mut outputs {
        for (task_blocks, block) in blocks.iter_mut().zip(split_blocks(output, m, &tasks)) {
            task_blocks.push(block);
        }
    }
    let work: Vec<(&Task, Vec<BlockMut>)> = tasks.iter().zip(blocks).collect();
    let rescan = |(task, mut blocks): (&Task, Vec<BlockMut>), work: &mut Work| {
        run.rescan(task, arrays, &carries, &mut blocks, work)
    };
    if run.parallel {
        work.into_par_iter()
            .map_init(|| code.work(), |work, item| rescan(item, work))
            .collect::<Option<Vec<()>>>()
    } else {
        let mut scratch = code.work();
        work.into_iter()
            .map(|item| rescan(item, &mut scratch))
            .collect::<Option<Vec<()>>>()
    }
    .ok_or_else(stop)?;
    Ok(outputs
        .into_iter()
        .map(|column| column.into_tensor(shape))
        .collect())
}

/// Statements with fewer lanes than this run their pairs as compiled chains (when the
/// operator has been compiled): the lanes' lines would cross chunks.
pub(super) const CHAIN_LANES: usize = 16;

/// A monoid operator's chunk folds as machine code for one direction and number of lanes
/// (`monoid_jit`), compiled when a statement first needs them and kept across runs of a
/// prepared program.
pub(super) struct CompiledMonoid {
    code: ChainCode,
    /// Bytes from a pair's element of each component to the same lane's in the next chunk.
    chain_bytes: Vec<i32>,
    /// The folds by the components they store (none for totals, all or the read ones for
    /// scans) and width (`code.chains()` chains or one); `None` inside if they cannot be
    /// compiled.
    folds: Mutex<HashMap<FoldsKey, Option<Arc<ChunkFolds>>>>,
    /// Elements folded so far (`CompileLoops::compiles`).
    elements_run: AtomicUsize,
}

/// Compiled folds by the components they store (a mask) and whether they fold
/// `ChainCode::chains` chains (else one).
type FoldsKey = (u64, bool);

impl CompiledMonoid {
    /// The folds of operator `op` over arrays of `m` lanes (at most `CHAIN_LANES`).
    pub fn new(program: &Program, op: BlockId, from_right: bool, m: usize) -> CompiledMonoid {
        let code = ChainCode::new(&ScalarCode::operator(program, op), from_right);
        let lanes = m.min(CHAIN_LANES);
        let chain_bytes = (0..code.k)
            .map(|c| {
                i32::try_from(CHUNK_ROWS * lanes * code.elem(c).bytes())
                    .expect("a chunk of fewer than CHAIN_LANES lanes is a few kilobytes")
            })
            .collect();
        CompiledMonoid {
            code,
            chain_bytes,
            folds: Mutex::default(),
            elements_run: AtomicUsize::new(0),
        }
    }

    /// Whether a statement over `elements` elements runs on compiled chains under
    /// `policy` (counting elements as loops count steps).
    pub fn wanted(&self, policy: CompileLoops, elements: usize) -> bool {
        policy.compiles(&self.elements_run, elements)
    }

    /// The folds of `code.chains()` chains and of one, storing the components in the mask
    /// `stores`.
    fn folds(&self, stores: u64) -> Option<[Arc<ChunkFolds>; 2]> {
        let mut folds = self
            .folds
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut compiled = |wide: bool| {
            let chains = if wide { self.code.chains() } else { 1 };
            folds
                .entry((stores, wide))
                .or_insert_with(|| {
                    ChunkFolds::new(&self.code, chains, &self.chain_bytes, stores).map(Arc::new)
                })
                .clone()
        };
        Some([compiled(true)?, compiled(false)?])
    }
}

/// A call of the compiled folds: lane `lane` of `count` consecutive chunks from `chunk`
/// (`ChainCode::chains`, or one), each of `rows` rows; `first` for the first chunk in fold
/// order when rescanning (it starts from its first row, not from a carry).
struct Chains {
    lane: usize,
    chunk: usize,
    count: usize,
    rows: usize,
    first: bool,
}

impl Chains {
    /// The rows the group's chains cover (one lane: elements).
    fn rows(&self) -> Range<usize> {
        let first = self.chunk * CHUNK_ROWS;
        first..first + (self.count - 1) * CHUNK_ROWS + self.rows
    }
}

/// Where an array's elements are: the address of the first and the size of one.
#[derive(Clone, Copy)]
struct Place {
    address: usize,
    size: usize,
}

/// Where the folds read an operand: in place, or from a task's buffer that a producer fills
/// for each group of chains.
#[derive(Clone, Copy)]
enum ChainSource {
    Array(Place),
    Produced { which: usize, size: usize },
}

/// Where the rescan's folds store a result: in place into its array, into a task's buffer
/// for the consumers, or nowhere.
#[derive(Clone, Copy)]
enum ChainTarget {
    Array(Place),
    Consumed { size: usize },
    Nowhere,
}

/// A task's space on chains: the group kernels', by component the buffer of a produced
/// operand and of a consumed result (empty for the others), and the arguments of a call of
/// the folds.
struct ChainWork<W> {
    kernels: W,
    buffers: Vec<Column>,
    results: Vec<Column>,
    regs: Vec<u64>,
    srcs: Vec<*const u8>,
    dsts: Vec<*mut u8>,
}

impl Run<'_> {
    /// Steps (1) and (3) of Note [Monoid order] by compiled chains, each pair folded in
    /// place; step (2) as on lanes. `None` if the folds cannot be compiled.
    fn eval_chains<P: GroupKernels>(
        &self,
        chained: &Chained<'_, P>,
        kind: MonoidKind,
        inputs: &[Input],
        shape: &[usize],
    ) -> Option<Result<Vec<Option<Tensor>>, InterpError>> {
        let totals_folds = chained.compiled.folds(0)?;
        let scan_folds = match kind {
            MonoidKind::Reduce => None,
            MonoidKind::Scan | MonoidKind::ScanRight => {
                let mask = (0..chained.kept.len())
                    .filter(|&c| chained.kept[c] != Kept::Dropped)
                    .fold(0u64, |mask, c| mask | 1 << c);
                Some(chained.compiled.folds(mask)?)
            }
        };
        let code = &chained.compiled.code;
        let sources: Vec<ChainSource> = inputs
            .iter()
            .enumerate()
            .map(|(c, input)| match input {
                Input::Array(array) => ChainSource::Array(Place {
                    address: with_tensor!(array, a => a.as_ptr() as usize),
                    size: array.elem().bytes(),
                }),
                &Input::Produced(which) => ChainSource::Produced {
                    which,
                    size: code.elem(c).bytes(),
                },
            })
            .collect();
        let direction = if self.from_right { -1 } else { 1 };
        let strides = (0..code.k)
            .map(|c| direction * (self.m * code.elem(c).bytes()) as i64)
            .collect();
        let folds = FoldsRun {
            code,
            kernels: chained.kernels,
            sources: &sources,
            kept: chained.kept,
            strides,
            wide: code.chains(),
        };
        Some(self.run_chains(&folds, totals_folds, scan_folds, shape))
    }

    fn run_chains<P: GroupKernels>(
        &self,
        folds: &FoldsRun<'_, P>,
        totals_folds: [Arc<ChunkFolds>; 2],
        scan_folds: Option<[Arc<ChunkFolds>; 2]>,
        shape: &[usize],
    ) -> Result<Vec<Option<Tensor>>, InterpError> {
        let code = folds.code;
        // (1) The total of every pair.
        let groups = self.chain_groups(false, folds.wide);
        let parts = self.map_groups(folds, &groups, |work, group| {
            let compiled = &totals_folds[usize::from(group.count == 1)];
            self.fold_chains(folds, compiled, work, group, None, None, true)
        })?;
        let mut totals = self.code.columns(self.n_chunks * self.m);
        for (group, bits) in groups.iter().zip(parts) {
            for chain in 0..group.count {
                let at = (group.chunk + chain) * self.m + group.lane;
                for (c, total) in totals.iter_mut().enumerate() {
                    total.set(
                        at,
                        Scalar::from_bits(code.elem(c), bits[chain * code.k + c]),
                    );
                }
            }
        }
        // (2) As on lanes.
        let (folded, carries) = self.fold_totals(&totals).ok_or(InterpError::Interrupted)?;
        let stored = |c: usize| folds.kept[c] == Kept::Stored;
        let Some(scan_folds) = scan_folds else {
            return Ok(folded
                .into_iter()
                .enumerate()
                .map(|(c, column)| stored(c).then(|| column.into_tensor(&shape[1..])))
                .collect());
        };
        // (3) Every chunk rescanned from its carry, in place into the outputs it stores, the
        // consumed results into the task's buffers for the consumers.
        let mut outputs: Vec<Option<Column>> = (0..folds.kept.len())
            .map(|c| stored(c).then(|| super::pool::take(code.elem(c), self.n_rows * self.m)))
            .collect();
        let targets: Vec<ChainTarget> = (outputs.iter_mut().zip(folds.kept).enumerate())
            .map(|(c, (column, kept))| match (column, kept) {
                (Some(column), _) => ChainTarget::Array(Place {
                    address: match_column!(Column, column, values => values.as_mut_ptr() as usize),
                    size: column.elem().bytes(),
                }),
                (None, Kept::Consumed) => ChainTarget::Consumed {
                    size: code.elem(c).bytes(),
                },
                // Never written: the folds store only the components in their mask.
                (None, _) => ChainTarget::Nowhere,
            })
            .collect();
        let groups = self.chain_groups(true, folds.wide);
        self.map_groups(folds, &groups, |work, group| {
            let compiled = &scan_folds[usize::from(group.count == 1)];
            let (targets, carries) = (Some(&targets[..]), Some(&carries[..]));
            self.fold_chains(folds, compiled, work, group, targets, carries, group.first)
        })?;
        Ok(outputs
            .into_iter()
            .map(|column| column.map(|column| column.into_tensor(shape)))
            .collect())
    }

    /// The calls that fold every pair, lane by lane: the full chunks in groups of `wide`,
    /// and one at a time the chunks left over, a shorter last chunk and, when rescanning,
    /// the first chunk in fold order.
    fn chain_groups(&self, rescan: bool, wide: usize) -> Vec<Chains> {
        let full = self.n_rows / CHUNK_ROWS;
        let first_chunk = if self.from_right {
            self.n_chunks - 1
        } else {
            0
        };
        let first = |chunk: usize| rescan && chunk == first_chunk;
        let mut groups = Vec::new();
        for lane in 0..self.m {
            let single = |chunk: usize| Chains {
                lane,
                chunk,
                count: 1,
                rows: (self.n_rows - chunk * CHUNK_ROWS).min(CHUNK_ROWS),
                first: first(chunk),
            };
            // The full chunks that have a carry: all but the first or last when rescanning.
            let lo = usize::from(first(0)).min(full);
            let hi = if full > 0 && first(full - 1) {
                full - 1
            } else {
                full
            }
            .max(lo);
            for start in (lo..hi).step_by(wide) {
                if hi - start >= wide {
                    groups.push(Chains {
                        lane,
                        chunk: start,
                        count: wide,
                        rows: CHUNK_ROWS,
                        first: false,
                    });
                } else {
                    groups.extend((start..hi).map(single));
                }
            }
            groups.extend(
                (0..lo)
                    .chain(hi..full)
                    .chain(full..self.n_chunks)
                    .map(single),
            );
        }
        groups
    }

    /// `f` of every group with a task's space, in parallel if the statement is large;
    /// stops when interrupted.
    fn map_groups<P: GroupKernels, R: Send>(
        &self,
        folds: &FoldsRun<'_, P>,
        groups: &[Chains],
        f: impl Fn(&mut ChainWork<P::Work>, &Chains) -> R + Sync,
    ) -> Result<Vec<R>, InterpError> {
        let each = |work: &mut ChainWork<P::Work>, group: &Chains| {
            (!(self.interrupted)()).then(|| f(work, group))
        };
        let res = if self.parallel {
            groups
                .par_iter()
                .map_init(|| folds.work(), each)
                .collect::<Option<Vec<R>>>()
        } else {
            let mut work = folds.work();
            groups
                .iter()
                .map(|group| each(&mut work, group))
                .collect::<Option<Vec<R>>>()
        };
        res.ok_or(InterpError::Interrupted)
    }

    /// Folds one group's pairs over their rows (from the first row with `first`, else from
    /// their carries), storing every partial result where `targets` says if given; the
    /// accumulators at the end, chain-major. Produced operands are computed first, for the
    /// group's rows, into the task's buffers; the consumers run last on the consumed
    /// results.
    #[allow(clippy::too_many_arguments)]
    fn fold_chains<P: GroupKernels>(
        &self,
        folds: &FoldsRun<'_, P>,
        compiled: &ChunkFolds,
        work: &mut ChainWork<P::Work>,
        group: &Chains,
        targets: Option<&[ChainTarget]>,
        carries: Option<&[Column]>,
        first: bool,
    ) -> Vec<u64> {
        let code = folds.code;
        let (k, n_regs) = (code.k, code.n_regs());
        let ChainWork {
            kernels,
            buffers,
            results,
            regs,
            srcs,
            dsts,
        } = work;
        regs.clear();
        regs.extend(code.register_files(group.count));
        let row = group.chunk * CHUNK_ROWS + if self.from_right { group.rows - 1 } else { 0 };
        let at = row * self.m + group.lane;
        let rows = group.rows();
        srcs.clear();
        for (source, buffer) in folds.sources.iter().zip(buffers.iter_mut()) {
            srcs.push(match *source {
                ChainSource::Array(place) => (place.address + at * place.size) as *const u8,
                ChainSource::Produced { which, size } => {
                    // One lane (`eval_on_chains`): the group's rows are its elements.
                    folds.kernels.produce(kernels, which, rows.clone(), buffer);
                    let base = match_column!(Column, buffer, values => values.as_ptr() as usize);
                    (base + (at - rows.start) * size) as *const u8
                }
            });
        }
        dsts.clear();
        let mut consumed = false;
        for (target, buffer) in targets.unwrap_or_default().iter().zip(results.iter_mut()) {
            dsts.push(match *target {
                ChainTarget::Array(place) => (place.address + at * place.size) as *mut u8,
                ChainTarget::Consumed { size } => {
                    consumed = true;
                    let base =
                        match_column!(Column, buffer, values => values.as_mut_ptr() as usize);
                    (base + (at - rows.start) * size) as *mut u8
                }
                ChainTarget::Nowhere => std::ptr::null_mut(),
            });
        }
        if let (Some(carries), false) = (carries, first) {
            for chain in 0..group.count {
                let pair = (group.chunk + chain) * self.m + group.lane;
                for (c, carry) in carries.iter().enumerate() {
                    regs[chain * n_regs + code.acc[c]] = carry.get(pair).bits();
                }
            }
        }
        let mut side = code.side();
        // SAFETY: `regs` holds a file of `code` per chain; the chains are consecutive chunks
        // of one lane (the distance the folds were compiled for, `CompiledMonoid::new`), the
        // rows of each lie within its chunk of the arrays (row-major, `m` lanes) or of the
        // group's produced and consumed buffers (one lane, the group's rows) and of the
        // outputs the folds store (as large as the arrays), and the pairs of different groups
        // are different.
        unsafe {
            compiled.run(
                code,
                regs,
                &mut side,
                srcs,
                dsts,
                &folds.strides,
                first,
                group.rows,
            );
        }
        if consumed {
            folds.kernels.consume(kernels, rows, results);
        }
        (0..group.count)
            .flat_map(|chain| (0..k).map(move |c| (chain, c)))
            .map(|(chain, c)| regs[chain * n_regs + code.acc[c]])
            .collect()
    }
}

/// What the chain folds of one statement read and keep: the operator's code, where each
/// operand is, the kernels of its groups, and what becomes of each result.
struct FoldsRun<'a, P> {
    code: &'a ChainCode,
    kernels: &'a P,
    sources: &'a [ChainSource],
    kept: &'a [Kept],
    /// By component, bytes from a row to the next in fold order.
    strides: Vec<i64>,
    /// Chains per call of the wide folds.
    wide: usize,
}

impl<P: GroupKernels> FoldsRun<'_, P> {
    /// A task's space: a buffer of a group's rows for each produced operand and each
    /// consumed result.
    fn work(&self) -> ChainWork<P::Work> {
        let buffer = |c: usize, wanted: bool| {
            let len = if wanted { self.wide * CHUNK_ROWS } else { 0 };
            Column::with_len(self.code.elem(c), len)
        };
        let buffers = (self.sources.iter().enumerate())
            .map(|(c, source)| buffer(c, matches!(source, ChainSource::Produced { .. })))
            .collect();
        let results = (self.kept.iter().enumerate())
            .map(|(c, &kept)| buffer(c, kept == Kept::Consumed))
            .collect();
        ChainWork {
            kernels: self.kernels.work(),
            buffers,
            results,
            regs: Vec::new(),
            srcs: Vec::new(),
            dsts: Vec::new(),
        }
    }
}

/// An operand of a lane operation: a register or a constant (a splat lane).
#[derive(Clone, Copy, Debug)]
enum Src {
    Reg(usize),
    Const(usize),
}

#[derive(Clone, Debug)]
enum Step {
    Copy {
        dst: usize,
        src: Src,
    },
    Prim {
        dst: usize,
        prim: crate::prim::Prim,
        args: Vec<Src>,
    },
}

/// A monoid operator on lanes: registers `0..k` hold the left operands, `k..2k` the right
/// ones (`ops::scalar_code`'s numbering).
struct LaneCode {
    k: usize,
    reg_elems: Vec<Elem>,
    consts: Vec<Lane>,
    steps: Vec<Step>,
    results: Vec<Src>,
}

/// The scratch space of one task: a lane per register, the next accumulator, and the input
/// offsets of the current line.
struct Work {
    regs: Vec<Lane>,
    next: Vec<Lane>,
    offsets: Vec<usize>,
    /// Offsets of a line's carries.
    aux: Vec<usize>,
    /// For lines across chunks, `TILE_ROWS` rows of each component (row-major by row, then
    /// position in the line), loaded or stored at once so that each pair's rows are read as
    /// one run of consecutive elements (a few cache lines) rather than a page per row.
    tiles: Vec<Column>,
    out_tiles: Vec<Column>,
}

impl Drop for Work {
    fn drop(&mut self) {
        for tile in self.tiles.drain(..).chain(self.out_tiles.drain(..)) {
            super::pool::give_column(tile);
        }
    }
}

impl LaneCode {
    fn new(code: &ScalarCode) -> LaneCode {
        let mut consts = Vec::new();
        let mut src = |operand: &Operand| match operand {
            Operand::Reg(reg) => Src::Reg(*reg),
            Operand::Const(scalar) => {
                let mut lane = Lane::new(scalar.elem());
                lane.column.set(0, *scalar);
                consts.push(lane);
                Src::Const(consts.len() - 1)
            }
        };
        let steps = code
            .ops
            .iter()
            .map(|op| match op {
                Op::Copy { dst, src: from } => Step::Copy {
                    dst: *dst,
                    src: src(from),
                },
                Op::Prim { dst, prim, args } => Step::Prim {
                    dst: *dst,
                    prim: *prim,
                    args: args.iter().map(&mut src).collect(),
                },
                Op::Read { .. } => unreachable!("a monoid operator reads no tables"),
            })
            .collect();
        let results = code.results.iter().map(&mut src).collect();
        LaneCode {
            k: code.params.len() / 2,
            reg_elems: code.reg_elems.clone(),
            consts,
            steps,
            results,
        }
    }

    fn work(&self) -> Work {
        Work {
            regs: self.reg_elems.iter().map(|elem| Lane::new(*elem)).collect(),
            next: self.reg_elems[..self.k]
                .iter()
                .map(|elem| Lane::new(*elem))
                .collect(),
            offsets: Vec::with_capacity(LINE),
            aux: Vec::with_capacity(LINE),
            // Kept buffers (`Work` gives them back when dropped): rayon makes a `Work` for
            // every split of a parallel pass, and fresh memory for its tiles would cost a
            // page fault per 4 KB each time.
            tiles: self.pooled_columns(TILE_ROWS * LINE),
            out_tiles: self.pooled_columns(TILE_ROWS * LINE),
        }
    }

    /// `columns` from the buffer pool: unspecified contents, for a caller that writes
    /// every element before reading it.
    fn pooled_columns(&self, len: usize) -> Vec<Column> {
        self.reg_elems[..self.k]
            .iter()
            .map(|&elem| super::pool::take(elem, len))
            .collect()
    }

    /// A column of `len` values per component (the operands' element types).
    fn columns(&self, len: usize) -> Vec<Column> {
        self.reg_elems[..self.k]
            .iter()
            .map(|elem| Column::with_len(*elem, len))
            .collect()
    }

    fn lane<'a>(&'a self, regs: &'a [Lane], src: Src) -> &'a Lane {
        match src {
            Src::Reg(reg) => &regs[reg],
            Src::Const(index) => &self.consts[index],
        }
    }

    /// Runs the operator on the first `len` points of the registers and moves its results
    /// into the registers from `acc`: `acc = acc ⊙ item` with `acc == 0`, `item ⊙ acc` with
    /// `acc == k`.
    fn apply(&self, work: &mut Work, acc: usize, len: usize) {
        for step in &self.steps {
            match step {
                Step::Copy { dst, src } => {
                    let mut out = take(&mut work.regs[*dst]);
                    assign(&mut out, self.lane(&work.regs, *src), len);
                    work.regs[*dst] = out;
                }
                Step::Prim { dst, prim, args } => {
                    let mut out = take(&mut work.regs[*dst]);
                    let regs = &work.regs[..];
                    let lane = |position: usize| self.lane(regs, args[position]).as_ref();
                    with_operands(args.len(), lane, |operands| out.eval(*prim, operands, len));
                    work.regs[*dst] = out;
                }
            }
        }
        for (next, result) in work.next.iter_mut().zip(&self.results) {
            assign(next, self.lane(&work.regs, *result), len);
        }
        for (reg, next) in work.regs[acc..acc + self.k].iter_mut().zip(&mut work.next) {
            std::mem::swap(reg, next);
        }
    }
}

/// A lane moved out of its register (no allocation), to be written while the others are read.
fn take(lane: &mut Lane) -> Lane {
    std::mem::replace(
        lane,
        Lane {
            splat: true,
            column: Column::Bool(Vec::new()),
        },
    )
}

/// `dst = src` on the first `len` points.
fn assign(dst: &mut Lane, src: &Lane, len: usize) {
    fn typed<T: LaneElem>(dst: &mut Column, values: &[T]) {
        T::values_mut(dst)[..values.len()].copy_from_slice(values);
    }
    dst.splat = src.splat;
    let n = if src.splat { 1 } else { len };
    with_column!(&src.column, values => typed(&mut dst.column, &values[..n]));
}

/// `dst[range] = src[range]`, spreading `dst` first if it is a splat.
fn assign_range(dst: &mut Lane, src: &Lane, range: Range<usize>, len: usize) {
    fn typed<T: LaneElem>(
        dst: &mut Lane,
        from: &[T],
        splat: bool,
        range: Range<usize>,
        len: usize,
    ) {
        let values = T::values_mut(&mut dst.column);
        if dst.splat {
            let value = values[0];
            values[..len].fill(value);
            dst.splat = false;
        }
        for position in range {
            values[position] = from[if splat { 0 } else { position }];
        }
    }
    with_column!(&src.column, from => typed(dst, from, src.splat, range, len));
}

/// Two distinct registers, mutably.
fn two_mut(regs: &mut [Lane], a: usize, b: usize) -> (&mut Lane, &mut Lane) {
    if a < b {
        let (low, high) = regs.split_at_mut(b);
        (&mut low[a], &mut high[0])
    } else {
        let (low, high) = regs.split_at_mut(a);
        (&mut high[0], &mut low[b])
    }
}

/// Rows of a chunk loaded or stored together by lines across chunks.
const TILE_ROWS: usize = 64;

/// The side of the square blocks in which tile loads and stores transpose: a block reads
/// each of its source runs whole (one cache line of f32) before it writes any, so the
/// sources stay in cache even when the chunks' rows lie 4 KB apart and share one L1 set,
/// and it writes whole runs of the destination. (Moving one pair at a time wrote each
/// value of a pair to another cache line of the tile.)
const TRANSPOSE_BLOCK: usize = 16;

/// Calls `each(pairs, rows)` for the blocks of a `rows × len` tile, `TRANSPOSE_BLOCK` pairs
/// by `TRANSPOSE_BLOCK` rows at a time (fewer at the edges).
fn for_each_block(len: usize, n_rows: usize, mut each: impl FnMut(Range<usize>, Range<usize>)) {
    for first_pair in (0..len).step_by(TRANSPOSE_BLOCK) {
        let pairs = first_pair..(first_pair + TRANSPOSE_BLOCK).min(len);
        for first_row in (0..n_rows).step_by(TRANSPOSE_BLOCK) {
            each(
                pairs.clone(),
                first_row..(first_row + TRANSPOSE_BLOCK).min(n_rows),
            );
        }
    }
}

/// The rows of the tile holding `row`, in a chunk of `rows` rows.
fn tile_of(row: usize, rows: usize) -> Range<usize> {
    let start = row - row % TILE_ROWS;
    start..(start + TILE_ROWS).min(rows)
}

/// `tile[(r - rows.start) * len + j] = array[offsets[j] + r * m]` for the rows `rows`: per
/// pair, a run of consecutive elements (`m == 1`) or of one stride.
fn load_tile(array: &Tensor, offsets: &[usize], m: usize, rows: Range<usize>, tile: &mut Column) {
    fn typed<T: LaneElem>(
        data: &[T],
        offsets: &[usize],
        m: usize,
        rows: Range<usize>,
        tile: &mut Column,
    ) {
        let len = offsets.len();
        let tile = T::values_mut(tile);
        for_each_block(len, rows.len(), |pairs, tile_rows| {
            let mut block = [[T::default(); TRANSPOSE_BLOCK]; TRANSPOSE_BLOCK];
            for (by_pair, &offset) in block.iter_mut().zip(&offsets[pairs.clone()]) {
                let first = offset + (rows.start + tile_rows.start) * m;
                if m == 1 && tile_rows.len() == TRANSPOSE_BLOCK {
                    // A pair's rows are consecutive elements: one copy of a known length
                    // (vector moves, not a call).
                    by_pair.copy_from_slice(&data[first..first + TRANSPOSE_BLOCK]);
                } else {
                    for (slot, b) in by_pair.iter_mut().zip(0..tile_rows.len()) {
                        *slot = data[first + b * m];
                    }
                }
            }
            for (at, b) in tile_rows.clone().enumerate() {
                let dst = &mut tile[b * len + pairs.start..][..pairs.len()];
                for (slot, by_pair) in dst.iter_mut().zip(&block) {
                    *slot = by_pair[at];
                }
            }
        });
    }
    with_tensor!(array, a => typed(
        a.as_slice().expect("monoid inputs are in row-major layout"),
        offsets,
        m,
        rows,
        tile,
    ))
}

/// `out = tile[at..at + len]`.
fn load_run(tile: &Column, at: usize, len: usize, out: &mut Lane) {
    fn typed<T: LaneElem>(values: &[T], out: &mut Lane) {
        T::values_mut(&mut out.column)[..values.len()].copy_from_slice(values);
        out.splat = false;
    }
    with_column!(tile, values => typed(&values[at..at + len], out));
}

/// Values that lines load from: the input arrays (row-major) and the chunk totals.
trait Source {
    /// `out[j] = self[offsets[j] + shift]`, or a slice copy when `contiguous`.
    fn load(&self, offsets: &[usize], shift: usize, contiguous: bool, out: &mut Lane);
}

fn load_typed<T: LaneElem>(
    data: &[T],
    offsets: &[usize],
    shift: usize,
    contiguous: bool,
    out: &mut Lane,
) {
    let dst = &mut T::values_mut(&mut out.column)[..offsets.len()];
    if contiguous {
        let start = offsets[0] + shift;
        dst.copy_from_slice(&data[start..start + offsets.len()]);
    } else {
        for (slot, offset) in dst.iter_mut().zip(offsets) {
            *slot = data[offset + shift];
        }
    }
    out.splat = false;
}

impl Source for Tensor {
    fn load(&self, offsets: &[usize], shift: usize, contiguous: bool, out: &mut Lane) {
        with_tensor!(self, a => load_typed(
            a.as_slice().expect("monoid inputs are in row-major layout"),
            offsets,
            shift,
            contiguous,
            out,
        ))
    }
}

impl Source for Column {
    fn load(&self, offsets: &[usize], shift: usize, contiguous: bool, out: &mut Lane) {
        with_column!(self, values => load_typed(values, offsets, shift, contiguous, out))
    }
}

/// A block of chunks × lanes, all chunks of `rows` rows.
#[derive(Clone, Debug)]
struct Task {
    chunks: Range<usize>,
    rows: usize,
    lanes: Range<usize>,
}

impl Task {
    /// The task's pairs (chunk, lane), chunk-major.
    fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.chunks
            .clone()
            .flat_map(move |chunk| self.lanes.clone().map(move |lane| (chunk, lane)))
    }

    fn n_pairs(&self) -> usize {
        self.chunks.len() * self.lanes.len()
    }

    /// Its lines: ranges of positions in `pairs()`.
    fn lines(&self, line_len: usize) -> impl Iterator<Item = Range<usize>> {
        let n = self.n_pairs();
        (0..n)
            .step_by(line_len)
            .map(move |start| start..(start + line_len).min(n))
    }

    /// The (chunk, lane) of position `position` of `pairs()`.
    fn pair(&self, position: usize) -> (usize, usize) {
        let width = self.lanes.len();
        (
            self.chunks.start + position / width,
            self.lanes.start + position % width,
        )
    }
}

/// One evaluation's shape and settings.
struct Run<'a> {
    code: &'a LaneCode,
    from_right: bool,
    /// Lanes: the product of the trailing axes.
    m: usize,
    n_chunks: usize,
    n_rows: usize,
    parallel: bool,
    interrupted: &'a (dyn Fn() -> bool + Sync),
}

impl<'a> Run<'a> {
    /// The evaluation of a `kind` statement over arrays of shape `shape` (not empty).
    fn new(
        code: &'a LaneCode,
        kind: MonoidKind,
        shape: &[usize],
        interrupted: &'a (dyn Fn() -> bool + Sync),
    ) -> Run<'a> {
        let n_rows = shape[0];
        let m = shape[1..].iter().product();
        Run {
            code,
            from_right: kind == MonoidKind::ScanRight,
            m,
            n_chunks: n_rows.div_ceil(CHUNK_ROWS),
            n_rows,
            parallel: n_rows * m >= PAR_THRESHOLD,
            interrupted,
        }
    }

    /// Blocks of chunks × lanes: the full chunks, then the last chunk if it is shorter;
    /// lanes in segments of at most `LINE`; small blocks of chunks when there are few lanes,
    /// enough of them to keep every thread busy.
    fn tasks(&self) -> Vec<Task> {
        let full = self.n_rows / CHUNK_ROWS;
        let segment = self.m.min(LINE);
        let threads = if self.parallel {
            rayon::current_num_threads().max(1)
        } else {
            1
        };
        let per_task = (LINE / segment).min(full.div_ceil(4 * threads)).max(1);
        let mut tasks = Vec::new();
        let mut push = |chunks: Range<usize>, rows: usize| {
            for start in (0..self.m).step_by(segment) {
                tasks.push(Task {
                    chunks: chunks.clone(),
                    rows,
                    lanes: start..(start + segment).min(self.m),
                });
            }
        };
        for start in (0..full).step_by(per_task) {
            push(start..(start + per_task).min(full), CHUNK_ROWS);
        }
        if !self.n_rows.is_multiple_of(CHUNK_ROWS) {
            push(full..full + 1, self.n_rows % CHUNK_ROWS);
        }
        tasks
    }

    fn map_tasks<R: Send>(
        &self,
        tasks: &[Task],
        f: impl Fn(&Task, &mut Work) -> Option<R> + Sync,
    ) -> Result<Vec<R>, InterpError> {
        let res = if self.parallel {
            tasks
                .par_iter()
                .map_init(|| self.code.work(), |work, task| f(task, work))
                .collect::<Option<Vec<R>>>()
        } else {
            let mut work = self.code.work();
            tasks
                .iter()
                .map(|task| f(task, &mut work))
                .collect::<Option<Vec<R>>>()
        };
        res.ok_or(InterpError::Interrupted)
    }

    /// The registers of the accumulator and of the next element.
    fn sides(&self) -> (usize, usize) {
        let k = self.code.k;
        if self.from_right {
            (k, 0)
        } else {
            (0, k)
        }
    }

    /// Row offsets of a chunk of `rows` rows in fold order.
    fn order(&self, rows: usize) -> Box<dyn Iterator<Item = usize>> {
        if self.from_right {
            Box::new((0..rows).rev())
        } else {
            Box::new(0..rows)
        }
    }

    /// Sets `work.offsets` to the row-0 input offsets of a line's pairs; whether they are
    /// consecutive (one chunk).
    fn line_offsets(&self, task: &Task, line: &Range<usize>, work: &mut Work) -> bool {
        work.offsets.clear();
        for position in line.clone() {
            let (chunk, lane) = task.pair(position);
            work.offsets.push(chunk * CHUNK_ROWS * self.m + lane);
        }
        task.pair(line.start).0 == task.pair(line.end - 1).0
    }

    /// Folds each line of a task over its chunk's rows, calling `each(row, work)` after every
    /// row with the accumulator in its registers; `start(work)` is called after the first
    /// row (to combine the carry). `None` once interrupted.
    fn fold_lines(
        &self,
        task: &Task,
        arrays: &[Tensor],
        work: &mut Work,
        mut line_done: impl FnMut(&Range<usize>, &mut Work),
        mut first_row: impl FnMut(&Range<usize>, &mut Work),
        mut each_row: impl FnMut(&Range<usize>, usize, bool, &mut Work),
    ) -> Option<()> {
        let (acc, item) = self.sides();
        for line in task.lines(LINE) {
            if (self.interrupted)() {
                return None;
            }
            let len = line.len();
            let contiguous = self.line_offsets(task, &line, work);
            let mut tile_rows = 0..0;
            for (position, row) in self.order(task.rows).enumerate() {
                let target = if position == 0 { acc } else { item };
                if !contiguous && !tile_rows.contains(&row) {
                    tile_rows = tile_of(row, task.rows);
                    let Work { offsets, tiles, .. } = &mut *work;
                    for (array, tile) in arrays.iter().zip(tiles.iter_mut()) {
                        load_tile(array, offsets, self.m, tile_rows.clone(), tile);
                    }
                }
                for (component, array) in arrays.iter().enumerate() {
                    let Work {
                        regs,
                        offsets,
                        tiles,
                        ..
                    } = &mut *work;
                    let reg = &mut regs[target + component];
                    if contiguous {
                        array.load(offsets, row * self.m, true, reg);
                    } else {
                        let at = (row - tile_rows.start) * len;
                        load_run(&tiles[component], at, len, reg);
                    }
                }
                if position == 0 {
                    first_row(&line, work);
                } else {
                    self.code.apply(work, acc, len);
                }
                each_row(&line, row, contiguous, work);
            }
            line_done(&line, work);
        }
        Some(())
    }

    /// Step (1): the total of each pair of a task, one column per component in `pairs()`
    /// order.
    fn totals(&self, task: &Task, arrays: &[Tensor], work: &mut Work) -> Option<Vec<Column>> {
        let (acc, _) = self.sides();
        let mut totals = self.code.columns(task.n_pairs());
        self.fold_lines(
            task,
            arrays,
            work,
            |line, work| {
                for (component, total) in totals.iter_mut().enumerate() {
                    store_column(total, line.start, &work.regs[acc + component], line.len());
                }
            },
            |_, _| {},
            |_, _, _, _| {},
        )?;
        Some(totals)
    }

    /// Step (2): the totals folded in chunk order per lane: the folds (the result of a
    /// `reduce`), and the carry into each chunk (indexed `chunk * m + lane`; none for the
    /// first chunk in fold order).
    fn fold_totals(&self, totals: &[Column]) -> Option<(Vec<Column>, Vec<Column>)> {
        let (acc, item) = self.sides();
        let mut folded = self.code.columns(self.m);
        let mut carries = self.code.columns(self.n_chunks * self.m);
        let mut work = self.code.work();
        for start in (0..self.m).step_by(LINE) {
            if (self.interrupted)() {
                return None;
            }
            let len = LINE.min(self.m - start);
            work.offsets.clear();
            work.offsets.extend(start..start + len);
            for (position, chunk) in self.order(self.n_chunks).enumerate() {
                let target = if position == 0 { acc } else { item };
                if position > 0 {
                    for (component, carry) in carries.iter_mut().enumerate() {
                        store_column(
                            carry,
                            chunk * self.m + start,
                            &work.regs[acc + component],
                            len,
                        );
                    }
                }
                for (component, total) in totals.iter().enumerate() {
                    let Work { regs, offsets, .. } = &mut work;
                    total.load(offsets, chunk * self.m, true, &mut regs[target + component]);
                }
                if position > 0 {
                    self.code.apply(&mut work, acc, len);
                }
            }
            for (component, fold) in folded.iter_mut().enumerate() {
                store_column(fold, start, &work.regs[acc + component], len);
            }
        }
        Some((folded, carries))
    }

    /// Step (3): each chunk of a task scanned from `carry ⊙ first element` (the first
    /// element alone in the first chunk in fold order), every partial result stored.
    fn rescan(
        &self,
        task: &Task,
        arrays: &[Tensor],
        carries: &[Column],
        blocks: &mut [BlockMut],
        work: &mut Work,
    ) -> Option<()> {
        let (acc, item) = self.sides();
        let k = self.code.k;
        let first_chunk = if self.from_right {
            self.n_chunks - 1
        } else {
            0
        };
        // A line's positions whose chunk is the first in fold order (no carry).
        let uncarried = |line: &Range<usize>| -> Range<usize> {
            let positions = line
                .clone()
                .filter(|&position| task.pair(position).0 == first_chunk);
            let (lo, hi) =
                positions.fold((usize::MAX, 0), |(lo, hi), p| (lo.min(p), hi.max(p + 1)));
            if lo == usize::MAX {
                0..0
            } else {
                lo - line.start..hi - line.start
            }
        };
        self.fold_lines(
            task,
            arrays,
            work,
            |_, _| {},
            |line, work| {
                let skip = uncarried(line);
                if skip.len() == line.len() {
                    return;
                }
                // The first element was loaded into the accumulator's registers: move it to
                // the other side, load the carries, combine, and keep the element alone where
                // there is no carry.
                let len = line.len();
                work.aux.clear();
                work.aux.extend(line.clone().map(|position| {
                    let (chunk, lane) = task.pair(position);
                    chunk * self.m + lane
                }));
                for (component, carry) in carries.iter().enumerate() {
                    let (acc_reg, item_reg) =
                        two_mut(&mut work.regs, acc + component, item + component);
                    assign(item_reg, acc_reg, len);
                    carry.load(&work.aux, 0, false, acc_reg);
                }
                self.code.apply(work, acc, len);
                for component in 0..k {
                    let (acc_reg, item_reg) =
                        two_mut(&mut work.regs, acc + component, item + component);
                    assign_range(acc_reg, item_reg, skip.clone(), len);
                }
            },
            |line, row, contiguous, work| {
                let Work {
                    regs, out_tiles, ..
                } = work;
                let acc_regs = &regs[acc..acc + k];
                if contiguous {
                    for (block, lane) in blocks.iter_mut().zip(acc_regs) {
                        block.store(task, line, &Stored::Row { row, lane });
                    }
                    return;
                }
                // Across chunks: into the tile, written out once its last row (in fold
                // order) is done.
                let rows = tile_of(row, task.rows);
                let len = line.len();
                for (tile, lane) in out_tiles.iter_mut().zip(acc_regs) {
                    store_column(tile, (row - rows.start) * len, lane, len);
                }
                let last = if self.from_right {
                    row == rows.start
                } else {
                    row + 1 == rows.end
                };
                if last {
                    for (block, tile) in blocks.iter_mut().zip(out_tiles.iter()) {
                        let rows = rows.clone();
                        block.store(task, line, &Stored::Tile { rows, tile });
                    }
                }
            },
        )
    }
}

/// `column[start..start + len] = lane`.
fn store_column(column: &mut Column, start: usize, lane: &Lane, len: usize) {
    with_column!(column, values => lane.as_ref().copy_to(&mut values[start..start + len]))
}

/// A task's block of one output: rows of its chunks × its lanes.
enum BlockMut<'a> {
    F32(ArrayViewMut2<'a, f32>),
    F64(ArrayViewMut2<'a, f64>),
    I32(ArrayViewMut2<'a, i32>),
    I64(ArrayViewMut2<'a, i64>),
    U32(ArrayViewMut2<'a, u32>),
    U64(ArrayViewMut2<'a, u64>),
    Bool(ArrayViewMut2<'a, bool>),
}

/// What a line stores into a block.
enum Stored<'a> {
    /// Row offset `row` of a line within one chunk (its lanes contiguous).
    Row { row: usize, lane: &'a Lane },
    /// The rows `rows` of a line across chunks, from a tile (see `Work::tiles`).
    Tile {
        rows: Range<usize>,
        tile: &'a Column,
    },
}

impl BlockMut<'_> {
    /// Stores a line's values into the rows of their chunks.
    fn store(&mut self, task: &Task, line: &Range<usize>, stored: &Stored) {
        fn typed<T: LaneElem>(
            block: &mut ArrayViewMut2<'_, T>,
            task: &Task,
            line: &Range<usize>,
            stored: &Stored,
        ) {
            let chunk_row = |chunk: usize| (chunk - task.chunks.start) * task.rows;
            match stored {
                Stored::Row { row, lane } => {
                    let (chunk, lane_start) = task.pair(line.start);
                    let mut dst = block.row_mut(chunk_row(chunk) + row);
                    let dst = dst.as_slice_mut().expect("a block's rows are contiguous");
                    let from = lane_start - task.lanes.start;
                    lane.as_ref().copy_to(&mut dst[from..from + line.len()]);
                }
                Stored::Tile { rows, tile } => {
                    let values = T::values(tile);
                    let len = line.len();
                    // Where pair `j` of the line lies in the block: (its chunk's first row, column).
                    let place = |j: usize| {
                        let (chunk, lane) = task.pair(line.start + j);
                        (chunk_row(chunk), lane - task.lanes.start)
                    };
                    for_each_block(len, rows.len(), |pairs, tile_rows| {
                        let mut by_pair = [[T::default(); TRANSPOSE_BLOCK]; TRANSPOSE_BLOCK];
                        for (at, b) in tile_rows.clone().enumerate() {
                            let src = &values[b * len + pairs.start..][..pairs.len()];
                            for (run, &value) in by_pair.iter_mut().zip(src) {
                                run[at] = value;
                            }
                        }
                        let (row_step, width) = (block.strides()[0], block.ncols());
                        let dst = block.as_slice_mut().filter(|_| row_step == width as isize);
                        match dst {
                            // Row-major: pair `j`'s rows are `width` apart from its first.
                            Some(dst) => {
                                for (run, (chunk_row, lane)) in by_pair.iter().zip(pairs.map(place))
                                {
                                    let first =
                                        (chunk_row + rows.start + tile_rows.start) * width + lane;
                                    if width == 1 && tile_rows.len() == TRANSPOSE_BLOCK {
                                        dst[first..first + TRANSPOSE_BLOCK].copy_from_slice(run);
                                        continue;
                                    }
                                    let slots = dst[first..].iter_mut().step_by(width);
                                    for (slot, &value) in slots.zip(&run[..tile_rows.len()]) {
                                        *slot = value;
                                    }
                                }
                            }
                            None => {
                                for (run, (chunk_row, lane)) in by_pair.iter().zip(pairs.map(place))
                                {
                                    for (&value, b) in run.iter().zip(tile_rows.clone()) {
                                        block[[chunk_row + rows.start + b, lane]] = value;
                                    }
                                }
                            }
                        }
                    });
                }
            }
        }
        match self {
            BlockMut::F32(block) => typed(block, task, line, stored),
            BlockMut::F64(block) => typed(block, task, line, stored),
            BlockMut::I32(block) => typed(block, task, line, stored),
            BlockMut::I64(block) => typed(block, task, line, stored),
            BlockMut::U32(block) => typed(block, task, line, stored),
            BlockMut::U64(block) => typed(block, task, line, stored),
            BlockMut::Bool(block) => typed(block, task, line, stored),
        }
    }
}

/// Splits an output (`n_rows × m`, row-major) into the tasks' blocks, in task order (tasks
/// are chunk-major, their lane segments in order).
fn split_blocks<'a>(output: &'a mut Column, m: usize, tasks: &[Task]) -> Vec<BlockMut<'a>> {
    fn typed<'a, T: LaneElem>(
        values: &'a mut [T],
        m: usize,
        tasks: &[Task],
        wrap: fn(ArrayViewMut2<'a, T>) -> BlockMut<'a>,
    ) -> Vec<BlockMut<'a>> {
        let n_rows = values.len() / m;
        let mut rest = ArrayViewMut2::from_shape((n_rows, m), values)
            .expect("an output has n_rows × m elements");
        let mut blocks = Vec::with_capacity(tasks.len());
        let mut position = 0;
        while position < tasks.len() {
            let rows = tasks[position].chunks.len() * tasks[position].rows;
            let (mut band, below) = rest.split_at(Axis(0), rows);
            rest = below;
            while position < tasks.len() && tasks[position].lanes.end <= m {
                let width = tasks[position].lanes.len();
                let (block, right) = band.split_at(Axis(1), width);
                band = right;
                blocks.push(wrap(block));
                let done = tasks[position].lanes.end == m;
                position += 1;
                if done {
                    break;
                }
            }
        }
        blocks
    }
    match output {
        Column::F32(values) => typed(values, m, tasks, BlockMut::F32),
        Column::F64(values) => typed(values, m, tasks, BlockMut::F64),
        Column::I32(values) => typed(values, m, tasks, BlockMut::I32),
        Column::I64(values) => typed(values, m, tasks, BlockMut::I64),
        Column::U32(values) => typed(values, m, tasks, BlockMut::U32),
        Column::U64(values) => typed(values, m, tasks, BlockMut::U64),
        Column::Bool(values) => typed(values, m, tasks, BlockMut::Bool),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::core::value::{Array, ArrayData};
    use crate::ops::monoid::tests::{affine_program, check_exact_monoid};

    /// Runs a monoid statement on the engine: on lanes, or on compiled chains where they
    /// serve (`chains`).
    fn run_engine(
        program: &Program,
        op: BlockId,
        kind: MonoidKind,
        arrays: &[Array],
        init: &[Array],
        chains: bool,
        interrupted: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Array>, InterpError> {
        let arrays: Vec<Tensor> = arrays.iter().map(Tensor::from_array).collect();
        let init: Vec<Tensor> = init.iter().map(Tensor::from_array).collect();
        let m = arrays[0].shape()[1..].iter().product();
        let compiled = CompiledMonoid::new(program, op, kind == MonoidKind::ScanRight, m);
        let compiled = chains.then_some(&compiled);
        let (res, on_chains) = eval(program, kind, &arrays, &init, op, compiled, interrupted)?;
        let n: usize = arrays[0].shape().iter().product();
        assert_eq!(on_chains, chains && n > 0 && m < CHAIN_LANES);
        Ok(res.iter().map(Tensor::to_array).collect())
    }

    #[test]
    fn lanes_and_chains_match_sequential_folds_and_scans_on_any_number_of_threads() {
        let (program, op) = affine_program();
        for (threads, chains) in [(1, false), (2, false), (4, false), (1, true), (2, true)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool");
            pool.install(|| {
                check_exact_monoid(&|kind, arrays, init| {
                    run_engine(&program, op, kind, arrays, init, chains, &|| false)
                        .expect("not interrupted")
                })
            });
        }
    }

    #[test]
    fn an_interrupted_monoid_stops_with_an_error() {
        let (program, op) = affine_program();
        let n = 64 * CHUNK_ROWS;
        let ones = || Array::new(vec![n], ArrayData::I64(vec![1; n]));
        let init = [
            Array::new(Vec::new(), ArrayData::I64(vec![1])),
            Array::new(Vec::new(), ArrayData::I64(vec![0])),
        ];
        let flag = AtomicBool::new(true);
        for kind in [MonoidKind::Reduce, MonoidKind::Scan, MonoidKind::ScanRight] {
            for chains in [false, true] {
                let res = run_engine(
                    &program,
                    op,
                    kind,
                    &[ones(), ones()],
                    &init,
                    chains,
                    &|| flag.load(Ordering::Relaxed),
                );
                assert!(matches!(res, Err(InterpError::Interrupted)), "{kind:?}");
            }
        }
    }
}

//! Fusion: the main block of a verified bulk program becomes a [`Schedule`] of loop kernels,
//! matrix products and statements left to the bulk evaluator (`core/kernel.rs`).
//!
//! The BOT unfuses ([Smeding25] §9): every `for` becomes a chain of whole-array operations, each a
//! pass over memory, with `replicate`s and `tr`s materialised between them. Fusion puts the
//! chains back together, following [Shaikhha23] §5.1's loop fusion (Fig 8) in the form docs/architecture.md
//! gives it:
//!
//! - *Pull* operations (elementwise `prim`s, `replicate`, `tr`, `reshape`, `iota`, `index`, and
//!   `gather` whose index function is scalar code) fuse into their consumer: the consumer
//!   asks for the producer's element at some coordinates, and the producer's expression is
//!   built at those coordinates (`Fuser::pull`). `replicate` drops a coordinate, `tr` permutes
//!   them, `reshape` recomputes them from the flat offset, `iota` is a coordinate, `gather`
//!   runs its index function on them; so views cost nothing and no intermediate array is made.
//! - A reduction (`sumOuter`, or a `reduce` whose operator is `max`/`min`,
//!   `ops::reduction_of`) is a kernel whose body is its producer, pulled over the producer's
//!   own shape, reduced over axis 0.
//! - A reduction whose body is the product of two reads that broadcast along different axes
//!   is a contraction: a (batched) matrix product (`MatMul`), when it is big enough to pay.
//!   A batch of dot products that is the diagonal of an earlier product of the same
//!   operands reads that diagonal (`diagonal`, Note [Diagonals of products]).
//! - Everything else (`fold`, `scan`, `cond`, `scatter`, literal tables, gathers whose index
//!   function has blocks) stays a bulk statement (`Step::Stmt`), whose inputs and outputs
//!   are materialised.
//!
//! Which variables are materialised (Note [Materialise or recompute]) decides the kernels: one
//! per materialised variable bound by a pull or reduction statement. A scatter whose one
//! reader adds it to something is added into that reader's output in place (`scatter_add`,
//! Note [Scatters added in place]). Consecutive kernels over the same rows run together a
//! block of rows at a time, and what only they read stays block-sized (`rows`, Note [Row
//! groups]). Each block's schedule is made by the steps of [`REWRITES`], run by the
//! pipeline's driver with the schedule verifier after each: the kernels of the statements
//! (`fuse_kernels`), then the rewrites above in order, each a stage of its own.
//!
//! Assumes a verified bulk program (no `build1` in `main`; loop bodies are fused, other nested blocks are not).
//! Guarantees: running the schedule gives the values of running the program, bit for bit, for
//! every kernel and within the matrix-product bound for `MatMul` steps (the product's sums run
//! in `faer`'s order, not dx's); every coordinate a `Read` uses is in range (a gather or
//! `index` that may read out of range masks the read and gives zero there, Note [Masked
//! reads]).
//!
//! The bodies of `fold`s and `scan`s over tables get schedules of their own (Note [Loop
//! bodies]).
//!
//! Does not handle yet (TODO(fusion)): `cond` branches and index functions with blocks (they
//! run on the bulk evaluator), several outputs per kernel (sibling fusion), reductions fused
//! into reductions, strict mode (the session runs `--strict` on the bulk evaluator).

// Note [Materialise or recompute]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A variable bound in `main` is materialised when it is a result of `main`, is bound by a
// reduction or a bulk statement, is read by a bulk statement or by a nested block, or is the
// array of a `gather`/`index` inside an index function. Otherwise (a pull statement) it is
// inlined into its readers unless that would compute it more than once per element it has:
// its *weight*, the number of times its element is computed when inlined, is the sum over its
// readers of 1 for a materialised reader and, for an inlined reader, the reader's own weight,
// times `count` through `replicate` and times 2 through `gather` (whose index function may
// read an element many times) unless its index function is a signed permutation of its
// params, a reversal or a shift, which reads each element once (`ops::recompute_factor`).
// Readers that end up in one kernel through elementwise statements only count once: they
// ask for the element at the kernel's own coordinates, and the kernel shares that node.
// The same holds through a view that reads each element once (`tr`, `reshape`, a
// permutation `gather`): every reader below it asks at the same moved coordinates. A
// reduction reads its array at its kernel's coordinates too, so the statements under a
// reduction count once for it (`u[i] * v[j]`, read three times by NNMF's gradient, is
// computed once per point, not materialised: a pass writing 64 MB). Views (`replicate`,
// `tr`, `reshape`, `iota`, `index`, `gather`, copies) and rank-0 values are always inlined:
// they compute nothing per element (a rank-0 value is computed once per line of the kernel). A view of
// indices and literals alone (`replicate` of a literal, `iota`) that a bulk statement needs
// materialised is still computed by the kernels that read it: a splat or an index instead of
// a pass of reads (the constant cotangent a scan's gradient starts from). A pull
// variable computed from indices and literals alone (a mask such as `eq (iota n) 0`) is
// inlined up to `INDEX_ONLY_RECOMPUTE` computations: it reads no memory. A *light* pull
// variable (Note [Light values]) is inlined while its extra computations stay within
// `LIGHT_OPS` operations: computed again, it reads what reading it would. A small one (Note
// [Small values]) is inlined while computing it again costs less than a launch. Any other
// pull variable is inlined when its weight is at most 1.
//
// Note [Light values]
// ~~~~~~~~~~~~~~~~~~~
// The gradient of `maximum` (JAX's, ties sharing evenly: `ops::monoid`'s `selected_tangent`)
// reads the indicator `select (eq x (replicate m)) 1 0` twice: the tie count sums it and the
// shares multiply it. Materialised, the indicator costs a kernel, a pass writing it and a
// pass reading it back; computed by both readers, each reads `x` where it would have read
// the indicator, and nothing is written. A pull variable is light when its element is
// computed by at most `LIGHT_OPS` cheap primitives (comparisons, logic, selections, casts,
// `+ - *`, negation, `abs`, `min`, `max`: no division, transcendental function or random
// bits) from at most one array read at the variable's own points (through elementwise
// statements, `tr` and `reshape`), besides literals, rank-0 values, values of indices and
// literals alone, and broadcasts (`replicate`, which reads an array smaller than the
// variable). Its operands that are pull variables must be light themselves: otherwise
// inlining it could bring their reads along. A broadcast of a pull variable that is not
// light is a read: broadcast at least twice, that variable is materialised (nbody's
// gradient scales `p[i, d] − p[j, d]` by a pair's factor `f[i, j]` broadcast along `d`,
// and sums the product at `[i, j, d]` and at `[j, i, d]`: computed twice, it no longer
// writes and reads back an `[n, n, 3]` array). A light variable of `ops` operations inlined
// into `w` readers costs `(w - 1) * ops` extra operations per element against a kernel, a
// write and a read of it: it is inlined while that is at most `LIGHT_OPS`. So a value of
// four operations is computed twice at most, and one of a single operation up to five
// times: state_sim's backward step scales a cotangent (`0.01 * ct`) that the next kernel
// reads at its point and at both neighbours; three multiplications a point cost less than
// a kernel of their own (three launches a step became two).
//
// Note [Small values]
// ~~~~~~~~~~~~~~~~~~~~
// A kernel launch has a fixed cost (its plan looked up, an output buffer, the value it
// becomes, the step's bookkeeping: a few hundred nanoseconds) that a small kernel's work does
// not cover, and a loop of small steps pays it at every step for every value its body
// materialises: the reverse step of lstm's layer scan (vectors of 14) was 24 kernels, each
// exponential, reciprocal and sum of the gates a kernel of its own because several results
// of the step read it. A pull variable of at most `SMALL_POINTS` elements is inlined while
// computing it again in each reader costs at most `LAUNCH_OPS` element operations,
// `(weight - 1) * ops * elements`, counting a costly primitive (division, transcendental
// function, random bits: a compiled kernel calls a function computing a polynomial)
// `COSTLY_OPS` cheap ones. lstm's reverse layer step is now twelve kernels: its seven
// results and five gates read by more readers than that allows. Each variable is bounded on
// its own, so the extra work is at most `LAUNCH_OPS` per variable, against a launch saved
// per variable.
// Measured on lstm (dx-only, alternating runs, with the inputs of small compiled kernels
// read in place, `Exec::held_pointers`): gradient 40 -> 30 ms, primal 6.9 -> 6.1 ms
// (with `COSTLY_OPS` = 8, every gate recomputed, the maths calls cost what the launches
// saved).

// Note [Masked reads]
// ~~~~~~~~~~~~~~~~~~~
// A coordinate computed by an index function or taken from an `index` operand may be out of
// range; the read must then give zero ([Smeding25] §5.2). Such a coordinate `c` on an axis of
// size `d` is clamped to `0..d` before it is used, and the value read through it is replaced
// by zero where `0 <= c < d` fails (`select`). A coordinate whose range is known from the
// iteration space (an affine one) is not checked. An affine coordinate that may leave its
// axis (a shift, `x[i + 1]`) of a variable read as it is becomes `Coord::Masked`: the engine
// computes the in-range part of each line once and reads only there, zero elsewhere. So every
// `Read` of the schedule reads in range. Views below the gather see only in-range
// coordinates, except views that only move coordinates (elementwise maps, `replicate`,
// `transpose`): they take the masked coordinate down to their own reads, and the gather's
// `select` discards what they compute outside the range (the transpose of a stencil,
// `Σ_a ct[j − a, a]` of a product, reads runs instead of clamped gathers).

mod contraction;
mod diagonal;
mod monoid;
mod rows;
mod scale;
mod scatter_add;

pub use rows::MIN_ROW_POINTS;

use std::collections::{HashMap, HashSet};

use super::pipeline::{run_passes, stages_of, Compilation, Ice, Log, Pass};
use crate::core::ids::IdVec;
use crate::core::ir::{Atom, Block, BlockId, Elem, Expr, Monoid, Program, Scalar, VarId};
use crate::core::kernel::{
    Affine, Coord, IndexValue, Kernel, Node, NodeId, Reduction, Schedule, Step,
};
use crate::core::visit::{collect_expr_uses, collect_uses, var_of};
use crate::core::visit::{expr_atoms, expr_blocks};
use crate::ops::{self, Element, FusionClass, Move};
use crate::prim::{cast_scalar, Prim};

pub const PASS: Pass<Compilation> = Pass {
    name: "fused",
    description: "fuse bulk operations into loop kernels and matrix products ([Shaikhha23] §5.1)",
    run: |compilation, _, log| {
        compilation.schedule = Some(schedule(&compilation.program, log)?);
        Ok(())
    },
    postcondition: None,
    nested: || stages_of(REWRITES),
    overview: true,
};

/// The steps of fusion, run on the schedule of each block (a loop body's before the block
/// that holds the loop): the kernels and products of its statements, then the rewrites of
/// the schedule, in order.
pub const REWRITES: &[Pass<Schedule>] = &[
    Pass::step(
        "fuse_kernels",
        "the statements as kernels, matrix products and bulk steps",
        |schedule, program, log| {
            (schedule.steps, schedule.loop_bodies) = kernels(program, schedule.block, log)?;
            Ok(())
        },
    ),
    Pass::step(
        "fuse_sums",
        "a product and the sums of it become one product summed over their axes",
        |schedule, program, _| {
            rewrite_steps(schedule, |block, steps| {
                contraction::sums_of_products(program, block, steps)
            })
        },
    ),
    Pass::step(
        "fuse_products",
        "batched dot products read from the diagonal of an earlier product",
        |schedule, _, _| rewrite_steps(schedule, |_, steps| diagonal::reuse_products(steps)),
    ),
    Pass::step(
        "fuse_scales",
        "kernels that scale a product become the product's scale",
        |schedule, program, _| {
            rewrite_steps(schedule, |block, steps| {
                scale::fold_scales(program, block, steps)
            })
        },
    ),
    Pass::step(
        "fuse_monoids",
        "the consumers of a monoid step join it",
        |schedule, program, _| {
            rewrite_steps(schedule, |block, steps| {
                monoid::fuse_consumers(program, block, steps)
            })
        },
    ),
    Pass::step(
        "fuse_scatters",
        "scatters added into their reader's output in place",
        |schedule, program, _| {
            rewrite_steps(schedule, |block, steps| {
                scatter_add::add_scatters_in_place(program, block, steps)
            })
        },
    ),
    Pass::step(
        "fuse_rows",
        "kernels over the same rows run a block of rows at a time",
        |schedule, program, _| {
            rewrite_steps(schedule, |block, steps| {
                rows::group_rows(program, block, steps)
            })
        },
    ),
];

/// Replaces the steps of `schedule` by `rewrite` of them (given the block and the steps).
fn rewrite_steps(
    schedule: &mut Schedule,
    rewrite: impl FnOnce(BlockId, Vec<Step>) -> Vec<Step>,
) -> Result<(), Ice> {
    let steps = std::mem::take(&mut schedule.steps);
    schedule.steps = rewrite(schedule.block, steps);
    Ok(())
}

/// A contraction runs as a matrix product when it has at least this many multiply-adds and
/// a reduced axis of at least `MATMUL_MIN_DEPTH`; smaller ones stay loop kernels. At 2^15
/// the small MLP's (batch 32, 64-32-10) three products of 10 240 multiply-adds ran as loop
/// kernels of short lines in 29, 41 and 85 us; as faer products they take 0.8-1.4 us.
pub const MATMUL_MIN_WORK: usize = 1 << 12;
pub const MATMUL_MIN_DEPTH: usize = 8;

/// Fuses the main block of `program`, and the bodies of its loops over tables.
pub fn schedule(program: &Program, log: &mut Log) -> Result<Schedule, Ice> {
    schedule_block(program, program.main, log)
}

/// [`schedule`] without a log, for tests; a broken check panics.
#[cfg(test)]
pub fn run(program: &Program) -> Schedule {
    schedule(program, &mut Log::default()).unwrap_or_else(|ice| panic!("{ice}"))
}

/// The schedule of `block`, made by the steps of [`REWRITES`].
fn schedule_block(program: &Program, block: BlockId, log: &mut Log) -> Result<Schedule, Ice> {
    let mut schedule = Schedule {
        block,
        steps: Vec::new(),
        loop_bodies: Vec::new(),
    };
    run_passes(&mut schedule, program, REWRITES, log)?;
    Ok(schedule)
}

/// The statements of `block` as kernels, matrix products and bulk statements, and a
/// schedule for the body of each `fold`/`scan` among the bulk statements that computes
/// tables (Note [Loop bodies]).
fn kernels(
    program: &Program,
    block: BlockId,
    log: &mut Log,
) -> Result<(Vec<Step>, Vec<Schedule>), Ice> {
    let fuser = Fuser::new(program, block);
    let mut steps = Vec::new();
    let mut loop_bodies = Vec::new();
    for (stmt_idx, stmt) in fuser.block.stmts.iter().enumerate() {
        match fuser.kinds[stmt_idx] {
            FusionClass::Bulk if Monoid::of(&stmt.expr).is_some() => {
                steps.extend(monoid::monoid_steps(&fuser, stmt_idx));
            }
            FusionClass::Bulk => {
                for body in ops::operation(&stmt.expr).loop_bodies() {
                    if !all_scalars(program, body) {
                        loop_bodies.push(schedule_block(program, body, log)?);
                    }
                }
                steps.push(Step::Stmt(stmt_idx));
            }
            FusionClass::Reduce => {
                let Some((array, reduction)) = crate::ops::reduction_of(program, &stmt.expr) else {
                    unreachable!("a reduction")
                };
                let shape = program.atom_ty(&array).shape;
                let mut builder = KernelBuilder::new(&fuser, shape.clone());
                let root = builder.pull_atom(&array, identity_coords(shape.len()));
                let kernel = builder.finish(Some(reduction), stmt.binders[0], root);
                steps.push(match contraction::as_matmul(program, &kernel) {
                    Some(matmul) => Step::MatMul(matmul),
                    None => Step::Kernel(kernel),
                });
            }
            FusionClass::Pull | FusionClass::View => {
                let binder = stmt.binders[0];
                if !fuser.materialised.contains(&binder) {
                    continue;
                }
                let shape = program.var_ty(binder).shape.clone();
                let mut builder = KernelBuilder::new(&fuser, shape.clone());
                let root = builder.pull_expr(&stmt.expr, binder, identity_coords(shape.len()));
                steps.push(Step::Kernel(builder.finish(None, binder, root)));
            }
        }
    }
    Ok((steps, loop_bodies))
}

// Note [Loop bodies]
// ~~~~~~~~~~~~~~~~~~
// A `fold`, `scan` or `while` runs its body once per step (a `while_reverse` its forward
// step, then its backward step). A body whose values are all scalars runs on
// scalar registers (`exec::scalar_loop`), so it gets no schedule. Any other body (a training
// step updating weight tables, the backward scan of a gradient through a loop) is fused like
// `main`: its params and the variables it uses from outside are inputs (reads), and each
// step of the loop runs the body's kernels instead of one bulk operation per statement.

/// Whether every value of a block (params, binders, results) is a scalar and it has no nested
/// blocks: a loop body `exec::scalar_loop` runs on registers.
fn all_scalars(program: &Program, block: BlockId) -> bool {
    let block = &program.blocks[block];
    let scalar = |var: &VarId| program.var_ty(*var).rank() == 0;
    block.params.iter().all(scalar)
        && block
            .results
            .iter()
            .all(|atom| program.atom_ty(atom).rank() == 0)
        && block
            .stmts
            .iter()
            .all(|stmt| stmt.binders.iter().all(scalar) && expr_blocks(&stmt.expr).is_empty())
}

/// The coordinates `i0, i1, …` of the iteration space itself.
fn identity_coords(rank: usize) -> Vec<Coord> {
    (0..rank)
        .map(|axis| Coord::Affine(Affine::axis(axis)))
        .collect()
}

struct Fuser<'a> {
    program: &'a Program,
    /// The block being fused (`main` or a loop body).
    block: &'a Block,
    /// How each statement is treated: its operation's fusion class (`ops::fusion_class`).
    kinds: Vec<FusionClass>,
    /// The statement of the block binding each variable.
    def: HashMap<VarId, usize>,
    materialised: HashSet<VarId>,
    /// Views of indices and literals (`replicate` of a literal, `iota`): kernels compute them
    /// where they read them even when a bulk statement needs them materialised (Note
    /// [Materialise or recompute]).
    free: HashSet<VarId>,
    /// How many statements of the block (and its results) read each variable.
    uses: HashMap<VarId, usize>,
    /// Operands that a monoid statement (by index) computes itself (Note [Monoid steps]).
    fused_operands: HashSet<(VarId, usize)>,
}

impl<'a> Fuser<'a> {
    /// The fuser of `block` (`main` or a loop body).
    fn new(program: &'a Program, block: BlockId) -> Fuser<'a> {
        let block = &program.blocks[block];
        let mut def = HashMap::new();
        for (stmt_idx, stmt) in block.stmts.iter().enumerate() {
            for &binder in &stmt.binders {
                def.insert(binder, stmt_idx);
            }
        }
        let kinds = block
            .stmts
            .iter()
            .map(|stmt| crate::ops::fusion_class(program, &stmt.expr))
            .collect();
        let mut fuser = Fuser {
            program,
            block,
            kinds,
            def,
            materialised: HashSet::new(),
            free: HashSet::new(),
            uses: uses(program, block),
            fused_operands: HashSet::new(),
        };
        let index_only = fuser.index_only();
        fuser.fused_operands = monoid::fused_operands(&fuser, &index_only);
        let forced = fuser.forced();
        let light = fuser.light(&index_only, &forced);
        fuser.materialised = fuser.choose_materialised(&index_only, &light, forced);
        fuser.free = index_only
            .into_iter()
            .filter(|var| fuser.kinds[fuser.def[var]] == FusionClass::View)
            .collect();
        fuser
    }

    /// The statement of a variable that kernels compute where they read it (`None`: they
    /// read it, materialised or an input).
    fn inlined_def(&self, var: VarId) -> Option<usize> {
        self.def
            .get(&var)
            .copied()
            .filter(|_| !self.materialised.contains(&var) || self.free.contains(&var))
    }

    /// The pull and view variables computed from indices and literals alone (`iota`, masks
    /// such as `eq (iota n) 0`): inlined, they read no memory.
    fn index_only(&self) -> HashSet<VarId> {
        let mut index_only = HashSet::new();
        for (stmt_idx, stmt) in self.block.stmts.iter().enumerate() {
            if !matches!(self.kinds[stmt_idx], FusionClass::View | FusionClass::Pull) {
                continue;
            }
            let mut uses: Vec<VarId> = expr_atoms(&stmt.expr)
                .into_iter()
                .filter_map(var_of)
                .collect();
            for block in expr_blocks(&stmt.expr) {
                collect_uses(self.program, block, &mut uses);
            }
            if uses.iter().all(|var| index_only.contains(var)) {
                index_only.extend(stmt.binders.iter().copied());
            }
        }
        index_only
    }

    /// The variables materialised whatever their readers (Note [Materialise or recompute]):
    /// the block's results, what reductions and bulk statements bind, what nested blocks
    /// read, the operands of bulk statements they do not fuse, and slices that are operands
    /// of matrix products (Note [Slices of products]).
    fn forced(&self) -> HashSet<VarId> {
        let program = self.program;
        let mut forced: HashSet<VarId> = self
            .block
            .results
            .iter()
            .copied()
            .filter_map(var_of)
            .collect();
        forced.extend(contraction::sliced_operands(self));
        for (stmt_idx, stmt) in self.block.stmts.iter().enumerate() {
            if matches!(
                self.kinds[stmt_idx],
                FusionClass::Bulk | FusionClass::Reduce
            ) {
                forced.extend(&stmt.binders);
            }
            let mut nested_uses = Vec::new();
            for block in expr_blocks(&stmt.expr) {
                collect_uses(program, block, &mut nested_uses);
            }
            forced.extend(
                nested_uses
                    .into_iter()
                    .filter(|var| self.def.contains_key(var)),
            );
            if self.kinds[stmt_idx] == FusionClass::Bulk {
                forced.extend(
                    expr_atoms(&stmt.expr)
                        .into_iter()
                        .filter_map(var_of)
                        .filter(|&var| !self.fused_operands.contains(&(var, stmt_idx))),
                );
            }
        }
        forced
    }

    /// The light pull variables of the block and the operations computing their elements
    /// (Note [Light values]); a `forced` variable is read, never recomputed.
    fn light(&self, index_only: &HashSet<VarId>, forced: &HashSet<VarId>) -> HashMap<VarId, usize> {
        let program = self.program;
        // For each pull or view variable that can be part of a light value: the cheap
        // operations computing its element, and the array it reads at its own points.
        let mut parts: HashMap<VarId, LightPart> = HashMap::new();
        let part_of = |parts: &HashMap<VarId, LightPart>, atom: &Atom| -> Option<LightPart> {
            let Atom::Var(var) = atom else {
                return Some(LightPart::default());
            };
            if program.var_ty(*var).rank() == 0 || index_only.contains(var) {
                return Some(LightPart::default());
            }
            match self.def.get(var) {
                Some(&stmt_idx)
                    if matches!(self.kinds[stmt_idx], FusionClass::Pull | FusionClass::View)
                        && !forced.contains(var) =>
                {
                    parts.get(var).copied()
                }
                // An input, or materialised whatever its readers (`forced`).
                _ => Some(LightPart {
                    ops: 0,
                    read: Some(*var),
                }),
            }
        };
        let mut light = HashMap::new();
        for stmt in &self.block.stmts {
            let binder = stmt.binders[0];
            let element = ops::operation(&stmt.expr).element();
            let part = match element {
                // An operand given twice (`add x x`) is one node of the kernel.
                Some(Element::Apply(prim, operands)) if cheap(prim) => {
                    (operands.iter().enumerate())
                        .filter(|&(k, atom)| !operands[..k].contains(atom))
                        .try_fold(LightPart { ops: 1, read: None }, |acc, (_, atom)| {
                            acc.join(part_of(&parts, atom)?)
                        })
                }
                // Each element once, at moved points.
                Some(Element::Moved {
                    array,
                    moved: Move::Same | Move::Permute(_) | Move::Reshape(_),
                }) => part_of(&parts, &array),
                // A broadcast: what it reads is smaller than its readers. A pull value
                // that is not light, broadcast `count >= 2` times, is read by the
                // broadcast's readers at least `count` times, so it is materialised: the
                // broadcast reads it.
                Some(Element::Moved {
                    array,
                    moved: Move::DropFirst { count },
                }) => part_of(&parts, &array)
                    .or_else(|| (count >= 2 && self.is_pull(&array)).then(LightPart::default))
                    .map(|part| LightPart {
                        ops: part.ops,
                        read: None,
                    }),
                _ => None,
            };
            let Some(part) = part.filter(|part| part.ops <= LIGHT_OPS) else {
                continue;
            };
            parts.insert(binder, part);
            if matches!(element, Some(Element::Apply(..))) {
                light.insert(binder, part.ops);
            }
        }
        light
    }

    /// Whether `atom` is a variable of the block bound by a pull statement.
    fn is_pull(&self, atom: &Atom) -> bool {
        var_of(*atom)
            .and_then(|var| self.def.get(&var))
            .is_some_and(|&stmt_idx| self.kinds[stmt_idx] == FusionClass::Pull)
    }

    /// Note [Materialise or recompute].
    fn choose_materialised(
        &self,
        index_only: &HashSet<VarId>,
        light: &HashMap<VarId, usize>,
        forced: HashSet<VarId>,
    ) -> HashSet<VarId> {
        let program = self.program;
        // Readers, from the last statement back (readers come after what they read).
        let mut readers: HashMap<VarId, Readers> = HashMap::new();
        let mut materialised = HashSet::new();
        for (stmt_idx, stmt) in self.block.stmts.iter().enumerate().rev() {
            let kind = self.kinds[stmt_idx];
            let binder = stmt.binders[0];
            let own = readers.remove(&binder).unwrap_or_default();
            let weight = own.weight();
            let inlined = matches!(kind, FusionClass::View | FusionClass::Pull)
                && !forced.contains(&binder)
                && (kind == FusionClass::View
                    || program.var_ty(binder).rank() == 0
                    || weight <= 1
                    || (index_only.contains(&binder) && weight <= INDEX_ONLY_RECOMPUTE)
                    || light.get(&binder).is_some_and(|&ops| {
                        weight.saturating_sub(1).saturating_mul(ops) <= LIGHT_OPS
                    })
                    || small_recompute(program, stmt, weight) <= LAUNCH_OPS);
            let own = if inlined {
                own
            } else {
                materialised.extend(stmt.binders.iter().copied());
                Readers {
                    roots: HashSet::from([(binder, Vec::new())]),
                    other: 0,
                }
            };
            let factor = crate::ops::recompute_factor(program, &stmt.expr);
            // A variable read twice by one statement is still computed once for it (the
            // kernel shares equal nodes).
            let mut operands: Vec<VarId> = match crate::ops::reduction_of(program, &stmt.expr) {
                // A selection `reduce` does not read its identity (the array is not empty).
                Some((array, _)) => var_of(array).into_iter().collect(),
                None => expr_atoms(&stmt.expr)
                    .into_iter()
                    .filter_map(var_of)
                    .collect(),
            };
            operands.sort();
            operands.dedup();
            for var in operands {
                let entry = readers.entry(var).or_default();
                if kind == FusionClass::Pull || kind == FusionClass::Reduce {
                    // Same coordinates as the reader (a reduction's kernel reads its array
                    // at the kernel's own coordinates): one node per kernel it ends up in.
                    entry.roots.extend(own.roots.iter().cloned());
                    entry.other += own.other;
                } else if kind == FusionClass::View && factor == 1 {
                    // A view that reads each element once moves the coordinates the same
                    // way for every kernel point: one node per path through it.
                    entry.roots.extend(own.roots.iter().map(|(root, views)| {
                        let mut views = views.clone();
                        views.push(binder);
                        (*root, views)
                    }));
                    entry.other += own.other;
                } else {
                    entry.other += own.weight().saturating_mul(factor).max(1);
                }
            }
        }
        materialised.extend(forced);
        materialised
    }
}

/// How many statements of `block` (and its results, as one more reader) read each variable,
/// counting the uses of their nested blocks.
fn uses(program: &Program, block: &Block) -> HashMap<VarId, usize> {
    let mut uses = HashMap::new();
    for stmt in &block.stmts {
        let mut vars = Vec::new();
        collect_expr_uses(program, &stmt.expr, &mut vars);
        vars.sort();
        vars.dedup();
        for var in vars {
            *uses.entry(var).or_insert(0) += 1;
        }
    }
    let mut results: Vec<VarId> = block.results.iter().copied().filter_map(var_of).collect();
    results.sort();
    results.dedup();
    for var in results {
        *uses.entry(var).or_insert(0) += 1;
    }
    uses
}

/// The readers of a variable, for its weight (Note [Materialise or recompute]).
#[derive(Clone, Debug, Default)]
struct Readers {
    /// Kernels (by their materialised variable) that compute its element at one set of
    /// coordinates each, with the views on the way (in order from the kernel): through
    /// elementwise statements and views that read each element once, so a kernel computes
    /// it once per distinct path.
    roots: HashSet<(VarId, Vec<VarId>)>,
    /// Computations of its element along other paths (through views that read elements
    /// several times, times their `ops::recompute_factor`).
    other: usize,
}

impl Readers {
    /// How many times its element is computed if it is inlined.
    fn weight(&self) -> usize {
        self.roots.len().saturating_add(self.other)
    }
}

/// The element operations computing a small variable again costs where its `weight`
/// readers each compute it (Note [Small values]): `usize::MAX` for a variable of more than
/// `SMALL_POINTS` elements.
fn small_recompute(program: &Program, stmt: &crate::core::ir::Stmt, weight: usize) -> usize {
    let points: usize = program.var_ty(stmt.binders[0]).shape.iter().product();
    if points > SMALL_POINTS {
        return usize::MAX;
    }
    let ops = match ops::operation(&stmt.expr).element() {
        Some(Element::Apply(prim, _)) if !cheap(prim) => COSTLY_OPS,
        _ => 1,
    };
    (weight.saturating_sub(1))
        .saturating_mul(ops)
        .saturating_mul(points)
}

/// Elements of the largest variable Note [Small values] recomputes rather than materialises.
const SMALL_POINTS: usize = 256;
/// About the fixed cost of a kernel launch, in element operations (Note [Small values]).
const LAUNCH_OPS: usize = 1024;
/// A division, transcendental function or random draw, in cheap operations.
const COSTLY_OPS: usize = 32;

/// How many times an index-only pull variable (Note [Materialise or recompute]) may be
/// recomputed per element before it is materialised instead.
const INDEX_ONLY_RECOMPUTE: usize = 8;

/// The most cheap operations that compute the element of a light value, and the most extra
/// operations per element its readers may spend computing it again (Note [Light values]).
const LIGHT_OPS: usize = 4;

/// What computing the element of a value takes, for Note [Light values]: its cheap
/// operations, and the one array it reads at its own points (if any).
#[derive(Clone, Copy, Debug, Default)]
struct LightPart {
    ops: usize,
    read: Option<VarId>,
}

impl LightPart {
    /// The parts of two operands of one value together; `None` when they read two arrays.
    fn join(self, other: LightPart) -> Option<LightPart> {
        let read = match (self.read, other.read) {
            (Some(a), Some(b)) if a != b => return None,
            (a, b) => a.or(b),
        };
        Some(LightPart {
            ops: self.ops + other.ops,
            read,
        })
    }
}

/// Whether a primitive is cheap enough to compute twice rather than write and read back
/// (Note [Light values]): no division, transcendental function or random bits.
fn cheap(prim: Prim) -> bool {
    use crate::prim::{ArithOp, Family};
    match prim.family() {
        Family::Compare(_) | Family::Convert(_) => true,
        Family::Arith(op) => match op {
            ArithOp::Add
            | ArithOp::Sub
            | ArithOp::Mul
            | ArithOp::Neg
            | ArithOp::Abs
            | ArithOp::Min
            | ArithOp::Max => true,
            ArithOp::Div | ArithOp::Mod | ArithOp::IDiv => false,
        },
        Family::Math(_) | Family::Random(_) | Family::Text(_) => false,
    }
}

// Note [Index arithmetic]
// ~~~~~~~~~~~~~~~~~~~~~~~
// An index function computes a read's coordinates from the result's, often through other
// integer types: `x[unsafe_from_ordinal n (i_to_n (9 - n_to_i (ordinal i)))]` casts the
// index to `Nat` (u32) and `Int` (i32), subtracts, and casts back to an `i64` coordinate.
// Such arithmetic is kept as an `Affine` (exact integers) while every value it takes over
// the kernel's points fits the type of each step, checked by the affine's bounds: then no
// step wraps around, the casts change no value, and the coordinate is the affine function
// itself (here `9 - i`, a backward run), so the read needs no range mask or clamp. A step
// that may wrap (`ordinal i - 5` as a `Nat`) is computed by nodes, as the program says.
//
// Note [Wrapped reads]
// ~~~~~~~~~~~~~~~~~~~~
// A ring's neighbour is read at `(i + 1) mod n` (periodic boundaries: every stencil on a
// torus, a rotation of a table). Computed by nodes, each point pays an integer division and
// a gather. But `a mod p` of an exact affine `a` that is never negative over the kernel is
// `a - p·k` on each run of points where `k = a div p` is constant: a contiguous (or strided)
// read, broken where `a` crosses a multiple of `p`. Such a coordinate stays symbolic
// (`IndexValue::Wrapped`, also through casts that keep every value below `p`) and becomes
// `Coord::Wrapped` on an axis that holds `0..p` (views pass it on: a gather's parameter,
// `tr`; `reshape` and `iota` compute it by nodes); the engine cuts each line at
// the wraps and reads every piece as an affine read. Where `a` never reaches `p` the `mod`
// is the affine itself. So that pieces are long, the period must be at least
// `WRAP_MIN_RUN` times every coefficient of `a`; a shorter one is computed by nodes.

/// Fewest points of a piece between two wraps of a `Coord::Wrapped` coordinate along any
/// axis (Note [Wrapped reads]).
const WRAP_MIN_RUN: u64 = 16;

/// A value inside an index function while it is inlined: index arithmetic stays affine as
/// long as it is exact (Note [Index arithmetic]), and an exact non-negative affine modulo a
/// constant stays symbolic too (Note [Wrapped reads]).
#[derive(Clone, Debug)]
enum Sym {
    /// Symbolic, with no node.
    Index(IndexValue),
    Node(NodeId),
}

impl Sym {
    fn affine(affine: Affine) -> Sym {
        Sym::Index(IndexValue::Affine(affine))
    }

    /// A coordinate given to an inlined view (never a masked one: those are only made for
    /// direct reads).
    fn of_coord(coord: &Coord) -> Sym {
        match coord {
            Coord::Affine(affine) => Sym::affine(affine.clone()),
            Coord::Node(node) => Sym::Node(*node),
            Coord::Wrapped(affine, period) => {
                Sym::Index(IndexValue::Wrapped(affine.clone(), *period as i64))
            }
            Coord::Masked(..) => unreachable!("masked coordinates are only made for direct reads"),
        }
    }
}

/// A hashable form of a node, for sharing equal nodes within a kernel (floats by their bits).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum NodeKey {
    Lit(Elem, u64),
    Index(Affine),
    Read(VarId, Vec<Coord>),
    Prim(Prim, Vec<NodeId>),
}

fn node_key(node: &Node) -> NodeKey {
    match node {
        Node::Lit(scalar) => NodeKey::Lit(scalar.elem(), scalar.bits()),
        Node::Index(affine) => NodeKey::Index(affine.clone()),
        Node::Read { var, coords, .. } => NodeKey::Read(*var, coords.clone()),
        Node::Prim(prim, operands) => NodeKey::Prim(*prim, operands.clone()),
    }
}

struct KernelBuilder<'f, 'a> {
    fuser: &'f Fuser<'a>,
    shape: Vec<usize>,
    nodes: IdVec<NodeId, (Node, Elem)>,
    shared: HashMap<NodeKey, NodeId>,
    pulled: HashMap<(VarId, Vec<Coord>), NodeId>,
    /// The least and greatest values of integer nodes of index functions over the kernel,
    /// where known (Note [Index arithmetic]).
    ranges: HashMap<NodeId, (i64, i64)>,
}

impl<'f, 'a> KernelBuilder<'f, 'a> {
    fn new(fuser: &'f Fuser<'a>, shape: Vec<usize>) -> Self {
        KernelBuilder {
            fuser,
            shape,
            nodes: IdVec::new(),
            shared: HashMap::new(),
            pulled: HashMap::new(),
            ranges: HashMap::new(),
        }
    }

    fn finish(self, reduce: Option<Reduction>, out: VarId, root: NodeId) -> Kernel {
        Kernel {
            shape: self.shape,
            reduce,
            nodes: self.nodes,
            output: (out, root),
        }
    }

    fn node(&mut self, node: Node, elem: Elem) -> NodeId {
        let key = node_key(&node);
        if let Some(&id) = self.shared.get(&key) {
            return id;
        }
        let id = self.nodes.push((node, elem));
        self.shared.insert(key, id);
        id
    }

    fn lit(&mut self, scalar: Scalar) -> NodeId {
        self.node(Node::Lit(scalar), scalar.elem())
    }

    fn prim(&mut self, prim: Prim, operands: Vec<NodeId>, elem: Elem) -> NodeId {
        self.node(Node::Prim(prim, operands), elem)
    }

    /// A coordinate as an `I64` node.
    fn coord_node(&mut self, coord: &Coord) -> NodeId {
        self.sym_node(&Sym::of_coord(coord))
    }

    /// The element of `atom` at `coords` (one per axis of the atom).
    fn pull_atom(&mut self, atom: &Atom, coords: Vec<Coord>) -> NodeId {
        match atom {
            Atom::Lit(scalar) => self.lit(*scalar),
            Atom::Var(var) => self.pull_var(*var, coords),
        }
    }

    fn pull_var(&mut self, var: VarId, coords: Vec<Coord>) -> NodeId {
        let program = self.fuser.program;
        debug_assert_eq!(
            coords.len(),
            program.var_ty(var).rank(),
            "coordinates of {var}"
        );
        let Some(stmt_idx) = self.fuser.inlined_def(var) else {
            let elem = program.var_ty(var).elem;
            return self.node(Node::Read { var, coords }, elem);
        };
        let key = (var, coords);
        if let Some(&node) = self.pulled.get(&key) {
            return node;
        }
        let stmt = &self.fuser.block.stmts[stmt_idx];
        let node = self.pull_expr(&stmt.expr, var, key.1.clone());
        self.pulled.insert(key, node);
        node
    }

    /// The element at `coords` of the value `expr` binds to `binder` (a pull statement).
    fn pull_expr(&mut self, expr: &Expr, binder: VarId, coords: Vec<Coord>) -> NodeId {
        let program = self.fuser.program;
        let elem = program.var_ty(binder).elem;
        let Some(element) = ops::operation(expr).element() else {
            unreachable!("fuse: {binder} is not bound by a pull statement")
        };
        match element {
            Element::Moved { array, moved } => {
                let inner = match moved {
                    Move::Same => coords,
                    Move::DropFirst { .. } => coords[1..].to_vec(),
                    Move::Permute(perm) => {
                        let mut inner = coords.clone();
                        for (axis, &from) in perm.iter().enumerate() {
                            inner[from] = coords[axis].clone();
                        }
                        inner
                    }
                    Move::Reshape(shape) => {
                        let inner_shape = program.atom_ty(&array).shape;
                        self.reshape_coords(&coords, shape, &inner_shape)
                    }
                };
                self.pull_atom(&array, inner)
            }
            Element::Apply(prim, operands) => {
                let operands = operands
                    .iter()
                    .map(|atom| {
                        // Rank-0 operands broadcast (the BOT emits them for scalars).
                        let operand_coords = if program.atom_ty(atom).rank() == 0 {
                            Vec::new()
                        } else {
                            coords.clone()
                        };
                        self.pull_atom(atom, operand_coords)
                    })
                    .collect();
                self.prim(prim, operands, elem)
            }
            Element::FirstCoordinate => self.coord_node(&coords[0]),
            Element::Indexed { array, index } => {
                let array_shape = program.atom_ty(&array).shape;
                let leading: Vec<Sym> = index
                    .iter()
                    .map(|atom| match atom {
                        Atom::Lit(Scalar::I64(value)) => Sym::affine(Affine::constant(*value)),
                        other => Sym::Node(self.pull_atom(other, Vec::new())),
                    })
                    .collect();
                self.masked_read(&array, &array_shape, leading, &coords, elem)
            }
            Element::Gathered { array, index_fn } => {
                // The index function's params are the leading coordinates of the result; the
                // rest index the sub-array it reads.
                let array_shape = program.atom_ty(&array).shape;
                let block = &program.blocks[index_fn];
                let n_leading = block.params.len();
                let mut env: HashMap<VarId, Sym> = HashMap::new();
                for (&param, coord) in block.params.iter().zip(&coords[..n_leading]) {
                    env.insert(param, Sym::of_coord(coord));
                }
                for stmt in &block.stmts {
                    let value = self.index_fn_stmt(&stmt.expr, stmt.binders[0], &env);
                    env.insert(stmt.binders[0], value);
                }
                let leading: Vec<Sym> = block
                    .results
                    .iter()
                    .map(|atom| self.sym_of(atom, &env))
                    .collect();
                self.masked_read(&array, &array_shape, leading, &coords[n_leading..], elem)
            }
        }
    }

    /// The value of an atom inside an inlined index function.
    fn sym_of(&mut self, atom: &Atom, env: &HashMap<VarId, Sym>) -> Sym {
        match atom {
            Atom::Lit(scalar) => match scalar.int_value() {
                Some(value) => Sym::affine(Affine::constant(value)),
                None => Sym::Node(self.lit(*scalar)),
            },
            Atom::Var(var) => match env.get(var) {
                Some(sym) => sym.clone(),
                // A variable of the block or from outside it (a scalar, so no coordinates).
                None => Sym::Node(self.pull_var(*var, Vec::new())),
            },
        }
    }

    fn sym_node(&mut self, sym: &Sym) -> NodeId {
        match sym {
            Sym::Index(IndexValue::Affine(affine)) => {
                self.node(Node::Index(affine.clone()), Elem::I64)
            }
            Sym::Node(node) => *node,
            Sym::Index(IndexValue::Wrapped(affine, period)) => {
                let index = self.node(Node::Index(affine.clone()), Elem::I64);
                let period_lit = self.lit(Scalar::I64(*period));
                let node = self.prim(Prim::Mod, vec![index, period_lit], Elem::I64);
                self.ranges.insert(node, (0, period - 1));
                node
            }
        }
    }

    /// `sym_node` for a value of type `elem`: an affine or wrapped value of another integer
    /// type is an index cast to it (exact: it fits, `index_value`), a constant
    /// affine one a literal.
    fn sym_node_of(&mut self, sym: &Sym, elem: Elem) -> NodeId {
        match sym {
            Sym::Index(IndexValue::Affine(affine)) if elem != Elem::I64 => {
                if affine.terms.is_empty() {
                    return self.lit(cast_scalar(Scalar::I64(affine.constant), elem));
                }
                let index = self.sym_node(sym);
                self.prim(Prim::Cast(elem), vec![index], elem)
            }
            Sym::Index(IndexValue::Wrapped(_, period)) if elem != Elem::I64 => {
                let index = self.sym_node(sym);
                let node = self.prim(Prim::Cast(elem), vec![index], elem);
                self.ranges.insert(node, (0, period - 1));
                node
            }
            _ => self.sym_node(sym),
        }
    }

    /// The values a sym takes over the kernel, where known.
    fn sym_range(&self, sym: &Sym) -> Option<(i64, i64)> {
        match sym {
            Sym::Index(IndexValue::Affine(affine)) => affine.bounds(&self.shape),
            Sym::Node(node) => self.ranges.get(node).copied(),
            Sym::Index(IndexValue::Wrapped(_, period)) => Some((0, period - 1)),
        }
    }

    /// `prim` of `operands` as an index value of type `elem` over the kernel, if it is one
    /// (`IndexValue::of_prim`, Notes [Index arithmetic] and [Wrapped reads]); a wrapped one
    /// only with a period long against its coefficients.
    fn index_value(&self, prim: Prim, operands: &[Sym], elem: Elem) -> Option<Sym> {
        let values: Vec<Option<&IndexValue>> = (operands.iter())
            .map(|sym| match sym {
                Sym::Index(value) => Some(value),
                Sym::Node(_) => None,
            })
            .collect();
        let value = IndexValue::of_prim(prim, &values, elem, &self.shape)?;
        let long = match &value {
            IndexValue::Affine(_) => true,
            IndexValue::Wrapped(affine, period) => (affine.terms.iter()).all(|&(_, coeff)| {
                coeff.unsigned_abs().saturating_mul(WRAP_MIN_RUN) <= *period as u64
            }),
        };
        long.then_some(Sym::Index(value))
    }

    /// The values `prim` of `operands` takes over the kernel as an integer of type `elem`:
    /// known for a non-negative dividend divided by a positive constant (`idiv`, `mod`,
    /// both exact there) and for casts that keep every value (Note [Index arithmetic]).
    fn prim_range(&self, prim: Prim, operands: &[Sym], elem: Elem) -> Option<(i64, i64)> {
        let (least, greatest) = elem.int_range()?;
        let (low, high) = self.sym_range(operands.first()?)?;
        let divisor = || match operands.get(1) {
            Some(Sym::Index(IndexValue::Affine(affine)))
                if affine.terms.is_empty() && affine.constant > 0 =>
            {
                Some(affine.constant)
            }
            _ => None,
        };
        let (low, high) = match prim {
            Prim::Cast(_) => (low, high),
            Prim::IDiv if low >= 0 => (low / divisor()?, high / divisor()?),
            Prim::Mod if low >= 0 && high < divisor()? => (low, high),
            Prim::Mod if low >= 0 => (0, divisor()? - 1),
            _ => return None,
        };
        (least <= low && high <= greatest).then_some((low, high))
    }

    /// One statement of an inlined index function (`ops::gather_scatter::is_scalar_code`).
    fn index_fn_stmt(&mut self, expr: &Expr, binder: VarId, env: &HashMap<VarId, Sym>) -> Sym {
        let program = self.fuser.program;
        let elem = program.var_ty(binder).elem;
        match ops::operation(expr).element() {
            Some(Element::Moved {
                array,
                moved: Move::Same,
            }) => self.sym_of(&array, env),
            Some(Element::Apply(prim, operands)) => {
                let syms: Vec<Sym> = operands.iter().map(|atom| self.sym_of(atom, env)).collect();
                if let Some(value) = self.index_value(prim, &syms, elem) {
                    return value;
                }
                let nodes = (syms.iter().zip(operands))
                    .map(|(sym, atom)| self.sym_node_of(sym, program.atom_ty(atom).elem))
                    .collect();
                let node = self.prim(prim, nodes, elem);
                if let Some(range) = self.prim_range(prim, &syms, elem) {
                    self.ranges.insert(node, range);
                }
                Sym::Node(node)
            }
            Some(Element::Indexed { array, index }) => {
                let array_shape = program.atom_ty(&array).shape;
                let leading: Vec<Sym> = index.iter().map(|atom| self.sym_of(atom, env)).collect();
                Sym::Node(self.masked_read(&array, &array_shape, leading, &[], elem))
            }
            _ => unreachable!("fuse: {expr:?} is not scalar code (is_scalar_code)"),
        }
    }

    /// `array[leading…, rest…]`, zero where a leading coordinate is out of range (Note [Masked
    /// reads]).
    fn masked_read(
        &mut self,
        array: &Atom,
        array_shape: &[usize],
        leading: Vec<Sym>,
        rest: &[Coord],
        elem: Elem,
    ) -> NodeId {
        if array_shape[..leading.len()].contains(&0) {
            // Every read of an empty axis is out of range.
            return self.lit(Scalar::zero(elem));
        }
        let mut coords = Vec::with_capacity(array_shape.len());
        let mut in_range: Option<NodeId> = None;
        let direct = self.reads_directly(array);
        for (sym, &dim) in leading.iter().zip(array_shape) {
            match sym {
                Sym::Index(IndexValue::Affine(affine)) if self.known_in_range(affine, dim) => {
                    coords.push(Coord::Affine(affine.clone()));
                }
                // The engine finds the in-range part of each line itself.
                Sym::Index(IndexValue::Affine(affine)) if direct => {
                    coords.push(Coord::Masked(affine.clone(), dim));
                }
                // A view that only moves coordinates passes the mask to its reads, which then
                // read runs (zero outside); what it computes from those zeros is discarded.
                Sym::Index(IndexValue::Affine(affine)) if self.moves_coordinates(array) => {
                    let ok = self.in_range(sym, dim);
                    in_range = Some(match in_range {
                        Some(previous) => self.prim(Prim::And, vec![previous, ok], Elem::Bool),
                        None => ok,
                    });
                    coords.push(Coord::Masked(affine.clone(), dim));
                }
                // A view passes it on to the read below (no zeros to keep, unlike a mask).
                Sym::Index(IndexValue::Wrapped(affine, period)) if *period <= dim as i64 => {
                    coords.push(Coord::Wrapped(affine.clone(), *period as usize));
                }
                Sym::Node(_) | Sym::Index(IndexValue::Wrapped(..))
                    if self
                        .sym_range(sym)
                        .is_some_and(|(low, high)| low >= 0 && high < dim as i64) =>
                {
                    coords.push(Coord::Node(self.sym_node(sym)));
                }
                _ => {
                    let ok = self.in_range(sym, dim);
                    in_range = Some(match in_range {
                        Some(previous) => self.prim(Prim::And, vec![previous, ok], Elem::Bool),
                        None => ok,
                    });
                    let value = self.sym_node(sym);
                    let zero = self.lit(Scalar::I64(0));
                    let last = self.lit(Scalar::I64(dim as i64 - 1));
                    let low = self.prim(Prim::Max, vec![value, zero], Elem::I64);
                    let clamped = self.prim(Prim::Min, vec![low, last], Elem::I64);
                    coords.push(Coord::Node(clamped));
                }
            }
        }
        coords.extend_from_slice(rest);
        let value = self.pull_atom(array, coords);
        match in_range {
            None => value,
            Some(ok) => {
                let zero = self.lit(Scalar::zero(elem));
                self.prim(Prim::Select, vec![ok, value, zero], elem)
            }
        }
    }

    /// `0 <= sym < dim`.
    fn in_range(&mut self, sym: &Sym, dim: usize) -> NodeId {
        let value = self.sym_node(sym);
        let zero = self.lit(Scalar::I64(0));
        let dim_lit = self.lit(Scalar::I64(dim as i64));
        let above = self.prim(Prim::Ge, vec![value, zero], Elem::Bool);
        let below = self.prim(Prim::Lt, vec![value, dim_lit], Elem::Bool);
        self.prim(Prim::And, vec![above, below], Elem::Bool)
    }

    /// Whether pulling `atom` at some coordinates reads its operands only at those
    /// coordinates, moved (elementwise primitives, `replicate`, `transpose`): a masked
    /// coordinate can then reach the reads below it (Note [Masked reads]), where a view
    /// with an index function or a reshape needs coordinates in range.
    fn moves_coordinates(&self, atom: &Atom) -> bool {
        let Atom::Var(var) = atom else {
            return true;
        };
        let Some(stmt_idx) = self.fuser.inlined_def(*var) else {
            return true;
        };
        match ops::operation(&self.fuser.block.stmts[stmt_idx].expr).element() {
            Some(Element::Moved {
                array,
                moved: Move::Same | Move::DropFirst { .. } | Move::Permute(_),
            }) => self.moves_coordinates(&array),
            Some(Element::Apply(_, operands)) => operands
                .iter()
                .all(|operand| self.moves_coordinates(operand)),
            _ => false,
        }
    }

    /// Whether `atom` is read as it is (a materialised variable or an input), so that the
    /// coordinates given to `pull_atom` are those of its `Read`.
    fn reads_directly(&self, atom: &Atom) -> bool {
        matches!(atom, Atom::Var(var) if self.fuser.inlined_def(*var).is_none())
    }

    fn known_in_range(&self, affine: &Affine, dim: usize) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        (affine.bounds(&self.shape)).is_some_and(|(low, high)| low >= 0 && high < dim as i64)
    }

    /// The coordinates in `inner_shape` of the element at `coords` of the same data seen with
    /// `shape` (row-major order is kept by `reshape`).
    fn reshape_coords(
        &mut self,
        coords: &[Coord],
        shape: &[usize],
        inner_shape: &[usize],
    ) -> Vec<Coord> {
        let strides = row_major_strides(shape);
        let inner_strides = row_major_strides(inner_shape);
        let affine: Option<Affine> =
            coords
                .iter()
                .zip(&strides)
                .try_fold(Affine::default(), |acc, (coord, &stride)| match coord {
                    Coord::Affine(affine) => affine.scaled_plus(stride as i64, &acc),
                    Coord::Node(_) | Coord::Masked(..) | Coord::Wrapped(..) => None,
                });
        if let Some(flat) = &affine {
            if let Some(split) = split_affine(flat, &inner_strides, inner_shape, &self.shape) {
                return split.into_iter().map(Coord::Affine).collect();
            }
        }
        // The general case: flat offset, then division and remainder per axis.
        let mut flat = self.lit(Scalar::I64(0));
        for (coord, &stride) in coords.iter().zip(&strides) {
            let value = self.coord_node(coord);
            let stride = self.lit(Scalar::I64(stride as i64));
            let term = self.prim(Prim::Mul, vec![value, stride], Elem::I64);
            flat = self.prim(Prim::Add, vec![flat, term], Elem::I64);
        }
        inner_shape
            .iter()
            .zip(&inner_strides)
            .map(|(&dim, &stride)| {
                let stride = self.lit(Scalar::I64(stride as i64));
                let dim = self.lit(Scalar::I64(dim as i64));
                let quotient = self.prim(Prim::IDiv, vec![flat, stride], Elem::I64);
                Coord::Node(self.prim(Prim::Mod, vec![quotient, dim], Elem::I64))
            })
            .collect()
    }
}

/// Row-major strides of a shape, in elements.
/// The variables that `block` returns (which a later step of the schedule cannot take
/// over or drop).
fn result_vars(program: &Program, block: BlockId) -> HashSet<VarId> {
    (program.blocks[block].results.iter())
        .filter_map(|atom| var_of(*atom))
        .collect()
}

pub fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

/// Splits an affine flat offset into row-major coordinates (`flat / stride % dim` per axis)
/// when each is itself affine over the iteration space `space`: every term's coefficient
/// must be a multiple of the axis stride, or contribute less than a stride in total.
fn split_affine(
    flat: &Affine,
    strides: &[usize],
    dims: &[usize],
    space: &[usize],
) -> Option<Vec<Affine>> {
    if space.contains(&0) || flat.constant < 0 {
        return None;
    }
    strides
        .iter()
        .zip(dims)
        .map(|(&stride, &dim)| {
            let stride = stride as i64;
            // flat = stride * q + r with q affine and 0 <= r < stride everywhere.
            let mut quotient = Affine::constant(flat.constant / stride);
            let mut rest = Affine::constant(flat.constant % stride);
            for &(axis, coeff) in &flat.terms {
                if coeff % stride == 0 {
                    quotient = Affine::axis(axis).scaled_plus(coeff / stride, &quotient)?;
                } else {
                    rest = Affine::axis(axis).scaled_plus(coeff, &rest)?;
                }
            }
            let (low, high) = rest.bounds(space)?;
            if low < 0 || high >= stride {
                return None;
            }
            // quotient mod dim: drop terms that are multiples of dim, then it must fit.
            let dim = dim as i64;
            let mut kept = Affine::constant(quotient.constant.rem_euclid(dim));
            for &(axis, coeff) in &quotient.terms {
                if coeff % dim != 0 {
                    kept = Affine::axis(axis).scaled_plus(coeff, &kept)?;
                }
            }
            let (low, high) = kept.bounds(space)?;
            (low >= 0 && high < dim).then_some(kept)
        })
        .collect()
}

//! The kernel IR: what the `fuse` pass (`passes/fuse/`) makes of a bulk program's main block
//! and of its loop bodies over tables, and what the engine (`exec/fused.rs`) runs.
//!
//! A [`Schedule`] is a block's statements regrouped into steps, in an order that respects
//! every dependency. Each step computes one or more *materialised* variables of the bulk
//! program (so buffers are named by the bulk program's own `VarId`s and the `fused` stage reads
//! next to the `simp` stage):
//!
//! - [`Kernel`]: one loop nest over an iteration space, whose body is a DAG of scalar
//!   [`Node`]s: reads of materialised variables at coordinates computed from the iteration
//!   coordinates, literals, index arithmetic and elementwise primitives. Every pull operation
//!   of the bulk IR (elementwise `prim`s, `replicate`, `tr`, `reshape`, `iota`, `index`,
//!   `gather` with a scalar index function) has disappeared into the coordinates and the DAG:
//!   no intermediate array exists. A kernel with `reduce` sums its body over axis 0 of the
//!   iteration space in dx's summation order (`prim::sum_order`), which is how `sumOuter`
//!   absorbs its producer, or folds it with `max`/`min` to the bits of a monoid `reduce`
//!   ([`Reduction`]).
//! - [`MatMul`]: a reduction kernel whose body is the product of two reads, recognised as a
//!   (batched) matrix product and run on `faer`.
//! - [`Rows`]: consecutive kernels over the same rows (their outputs' axis 0) run a block of
//!   rows at a time, each member on the block before the next, so that what one member writes
//!   the next reads from cache; an output read only inside the group lives in a block-sized
//!   buffer and is never materialised (Note [Row groups] in `passes::fuse::rows`).
//! - [`Step::ScatterAdd`]: a scatter added in place into the output of the kernel before it,
//!   which read the scatter as zero (Note [Scatters added in place] in `passes::fuse`).
//! - [`MonoidStep`]: a monoid `reduce`/`assoc_scan` of a vector with the producers of its
//!   arrays fused into its chunk loop (no intermediate array), the maps that consume a
//!   scan's results fused into its rescan, and the results nobody reads not stored (Notes
//!   [Monoid steps] and [Monoid consumers] in `passes::fuse::monoid`).
//! - [`Step::Stmt`]: a statement the fuser leaves to the bulk evaluator (`fold`, `scan`,
//!   `cond`, `scatter`, literal tables, other monoid statements, and gathers whose index
//!   function is not scalar code).
//!   A `fold`/`scan` whose body computes tables has a schedule of its own
//!   ([`Schedule::loop_bodies`]), which the engine runs at each step of the loop.
//!
//! Invariants (`passes::fuse` establishes them; the random-program tests run every schedule
//! they make, and `core::verify_schedule` checks them after each step of fusion): every
//! variable a step reads is an input or is computed by an earlier step; node operands
//! precede their node; coordinates have one entry per axis of the variable read, and every
//! coordinate is in range (out-of-range reads are masked where they arise; the verifier
//! checks those it can: affine ones).
//!
//! `Schedule::display` prints a schedule (the `fused` stage); `core::parse_schedule` reads
//! the text back.

use std::fmt;

use super::ids::IdVec;
use super::ir::{Atom, BlockId, Elem, Program, Scalar, VarId};
use super::print::{atom_text, scalar_text, shape_text, stmt_text, var_text as var_name};
use super::visit::collect_expr_uses;
use super::visit::{expr_atoms, expr_blocks};
use crate::define_id;
use crate::prim::Prim;

define_id!(
    /// A node of a kernel's scalar DAG.
    NodeId,
    "v"
);

/// An integer-affine function of the iteration coordinates: `constant + Σ coeff · i[axis]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Affine {
    pub constant: i64,
    /// `(axis, coeff)`, sorted by axis, no zero coefficients.
    pub terms: Vec<(usize, i64)>,
}

impl Affine {
    pub fn constant(value: i64) -> Affine {
        Affine {
            constant: value,
            terms: Vec::new(),
        }
    }

    pub fn axis(axis: usize) -> Affine {
        Affine {
            constant: 0,
            terms: vec![(axis, 1)],
        }
    }

    /// `self * factor + other`, normalised, or `None` where a number overflows (the caller
    /// then treats the index as not affine).
    pub fn scaled_plus(&self, factor: i64, other: &Affine) -> Option<Affine> {
        let mut terms = Vec::with_capacity(self.terms.len() + other.terms.len());
        for &(axis, coeff) in &self.terms {
            terms.push((axis, coeff.checked_mul(factor)?));
        }
        terms.extend(other.terms.iter().copied());
        terms.sort_by_key(|&(axis, _)| axis);
        let mut merged: Vec<(usize, i64)> = Vec::with_capacity(terms.len());
        for (axis, coeff) in terms {
            match merged.last_mut() {
                Some((last, sum)) if *last == axis => *sum = sum.checked_add(coeff)?,
                _ => merged.push((axis, coeff)),
            }
        }
        merged.retain(|&(_, coeff)| coeff != 0);
        Some(Affine {
            constant: self
                .constant
                .checked_mul(factor)?
                .checked_add(other.constant)?,
            terms: merged,
        })
    }

    /// The least and greatest values over the points of `shape`: `None` on overflow or when
    /// `shape` has no points.
    pub fn bounds(&self, shape: &[usize]) -> Option<(i64, i64)> {
        let (mut low, mut high) = (self.constant, self.constant);
        for &(axis, coeff) in &self.terms {
            let last = i64::try_from(shape.get(axis)?.checked_sub(1)?).ok()?;
            let reach = coeff.checked_mul(last)?;
            if reach < 0 {
                low = low.checked_add(reach)?;
            } else {
                high = high.checked_add(reach)?;
            }
        }
        Some((low, high))
    }

    /// `prim` of integer operands (`None`: not affine) as an affine function, if it is one
    /// and is exact over the points of `shape`: it takes only values `elem` holds there, so no
    /// operation on the way wrapped around (Note [Index arithmetic] in `passes::fuse`). A cast
    /// keeps its operand; `add`, `sub`, `neg` and `mul` by a constant combine theirs.
    pub fn of_prim(
        prim: Prim,
        operands: &[Option<&Affine>],
        elem: Elem,
        shape: &[usize],
    ) -> Option<Affine> {
        let operand = |position: usize| operands.get(position).copied().flatten();
        let constant = |affine: &Affine| affine.terms.is_empty().then_some(affine.constant);
        let zero = Affine::default();
        let affine = match prim {
            Prim::Cast(_) if operands.len() == 1 => operand(0)?.clone(),
            Prim::Add => operand(0)?.scaled_plus(1, operand(1)?)?,
            Prim::Sub => operand(1)?.scaled_plus(-1, operand(0)?)?,
            Prim::Neg => operand(0)?.scaled_plus(-1, &zero)?,
            Prim::Mul => {
                let (a, b) = (operand(0)?, operand(1)?);
                match (constant(a), constant(b)) {
                    (Some(factor), _) => b.scaled_plus(factor, &zero)?,
                    (None, Some(factor)) => a.scaled_plus(factor, &zero)?,
                    (None, None) => return None,
                }
            }
            _ => return None,
        };
        let (least, greatest) = elem.int_range()?;
        let (low, high) = affine.bounds(shape)?;
        (least <= low && high <= greatest).then_some(affine)
    }

    /// The coefficient of `axis`.
    pub fn coeff(&self, axis: usize) -> i64 {
        self.terms
            .iter()
            .find(|&&(term_axis, _)| term_axis == axis)
            .map_or(0, |&(_, coeff)| coeff)
    }
}

/// An exact integer value of index arithmetic over an iteration space: an affine function
/// (`Affine::of_prim`), or one that is never negative there taken modulo a constant period
/// (Note [Wrapped reads] in `passes::fuse`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IndexValue {
    Affine(Affine),
    /// `affine mod period`, the affine never negative over the space.
    Wrapped(Affine, i64),
}

impl IndexValue {
    /// The affine function, and the period it is taken modulo if there is one.
    pub fn parts(&self) -> (&Affine, Option<i64>) {
        match self {
            IndexValue::Affine(affine) => (affine, None),
            IndexValue::Wrapped(affine, period) => (affine, Some(*period)),
        }
    }

    /// `prim` of `operands` (`None`: not an index value) as an index value of type `elem`
    /// over the points of `shape`, if it is one: `Affine::of_prim`'s arithmetic, `mod` of a
    /// non-negative affine by a positive constant (the affine itself where it stays below
    /// the constant), and a cast of a wrapped value to a type that holds every value it
    /// takes.
    pub fn of_prim(
        prim: Prim,
        operands: &[Option<&IndexValue>],
        elem: Elem,
        shape: &[usize],
    ) -> Option<IndexValue> {
        let affines: Vec<Option<&Affine>> = (operands.iter())
            .map(|operand| match operand {
                Some(IndexValue::Affine(affine)) => Some(affine),
                _ => None,
            })
            .collect();
        if let Some(affine) = Affine::of_prim(prim, &affines, elem, shape) {
            return Some(IndexValue::Affine(affine));
        }
        let (_, greatest) = elem.int_range()?;
        match (prim, operands) {
            (Prim::Mod, [Some(IndexValue::Affine(affine)), Some(IndexValue::Affine(divisor))]) => {
                let period = divisor.terms.is_empty().then_some(divisor.constant)?;
                let (low, high) = affine.bounds(shape)?;
                if period <= 0 || low < 0 {
                    return None;
                }
                Some(if high < period {
                    IndexValue::Affine(affine.clone())
                } else {
                    IndexValue::Wrapped(affine.clone(), period)
                })
            }
            (Prim::Cast(_), [Some(IndexValue::Wrapped(affine, period))])
                if period - 1 <= greatest =>
            {
                Some(IndexValue::Wrapped(affine.clone(), *period))
            }
            _ => None,
        }
    }
}

/// Where a read looks along one axis of the variable it reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Coord {
    /// An affine function of the iteration coordinates.
    Affine(Affine),
    /// A value computed by an `I64` node (an index function's result, an `index` operand).
    Node(NodeId),
    /// An affine function that may leave the axis (`dim` long): the read gives zero where it
    /// does (Note [Masked reads] in `passes::fuse`).
    Masked(Affine, usize),
    /// An affine function taken modulo a period no longer than the axis: `affine mod period`,
    /// where the affine is never negative over the iteration space (a ring's neighbour,
    /// `x[(i + 1) mod n]`; Note [Wrapped reads] in `passes::fuse`).
    Wrapped(Affine, usize),
}

/// One scalar operation of a kernel body, evaluated at every point of the iteration space.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Lit(Scalar),
    /// An `I64` index: an affine function of the iteration coordinates.
    Index(Affine),
    /// A read of a materialised variable; every coordinate is in range.
    Read {
        var: VarId,
        coords: Vec<Coord>,
    },
    /// An elementwise primitive; rank-0 operands are simply scalars here.
    Prim(Prim, Vec<NodeId>),
}

impl Node {
    /// The nodes this node reads: a primitive's operands, a read's computed coordinates.
    pub fn operands(&self) -> Vec<NodeId> {
        match self {
            Node::Prim(_, operands) => operands.clone(),
            Node::Read { coords, .. } => coords
                .iter()
                .filter_map(|coord| match coord {
                    Coord::Node(node) => Some(*node),
                    Coord::Affine(_) | Coord::Masked(..) | Coord::Wrapped(..) => None,
                })
                .collect(),
            Node::Lit(_) | Node::Index(_) => Vec::new(),
        }
    }
}

/// How a reducing kernel combines its body's values over axis 0 of its iteration space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// A sum in dx's summation order (`prim::sum_order`): `sumOuter` with its producer.
    Sum,
    /// `max acc x` / `min acc x`: a `reduce` whose operator is a selection
    /// (`ops::monoid::selection`) with its producer. Exactly associative and commutative
    /// (Note [Float selections] in `prim::arith`), so any fold order gives the bits of
    /// Note [Monoid order] (`ops::monoid`).
    Max,
    Min,
}

impl Reduction {
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Max => "max",
            Reduction::Min => "min",
        }
    }
}

/// A fused loop nest: see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The iteration space. With `reduce`, axis 0 is reduced and the output has the rest.
    pub shape: Vec<usize>,
    pub reduce: Option<Reduction>,
    /// The body in dependency order, with each node's element type.
    pub nodes: IdVec<NodeId, (Node, Elem)>,
    /// The materialised variable and the node whose value (or sum) it holds.
    pub output: (VarId, NodeId),
}

/// An operand of a matrix product: a variable read at affine coordinates (no checks).
#[derive(Clone, Debug, PartialEq)]
pub struct MatOperand {
    pub var: VarId,
    pub coords: Vec<Affine>,
}

/// `out[o] = Σ_k lhs[k, o] * rhs[k, o]` over the iteration space `[k] ++ shape(out)`, where
/// the output axes split into an `m` axis (read by `lhs` only), an `n` axis (read by `rhs`
/// only) and batch axes (read by both): a batch of matrix products. With `more` terms and
/// `summed` axes, `out[o] = Σ_t Σ_s Σ_k lhs_t[k, s, o] * rhs_t[k, s, o]`: the products of
/// every term and every point of the summed axes added into the output (Note [Sums of
/// products] in `passes::fuse::contraction`).
#[derive(Clone, Debug, PartialEq)]
pub struct MatMul {
    pub shape: Vec<usize>,
    pub out: VarId,
    pub elem: Elem,
    pub lhs: MatOperand,
    pub rhs: MatOperand,
    /// Iteration axes (never 0) of the output's rows and columns; `None` is a size-1 axis.
    pub m_axis: Option<usize>,
    pub n_axis: Option<usize>,
    pub batch_axes: Vec<usize>,
    /// The product is `2^scale` times the sum of the operands' products: a doubled or
    /// power-of-two-scaled operand, folded in (Note [Scaled products] in
    /// `passes::fuse::scale`).
    pub scale: i32,
    /// Further terms `(lhs, rhs)` added to the first, with the same axes in the same roles.
    pub more: Vec<(MatOperand, MatOperand)>,
    /// Iteration axes besides 0 that are summed (not the output's), in order.
    pub summed: Vec<usize>,
}

impl MatMul {
    /// The factor `2^scale`.
    pub fn factor(&self) -> f64 {
        2f64.powi(self.scale)
    }

    /// The terms: `(lhs, rhs)`, then `more`.
    pub fn terms(&self) -> impl Iterator<Item = (&MatOperand, &MatOperand)> {
        std::iter::once((&self.lhs, &self.rhs)).chain(self.more.iter().map(|(l, r)| (l, r)))
    }

    /// Whether the product is one term summed over axis 0 only (the products whose
    /// diagonals `fuse_products` reads).
    pub fn is_single(&self) -> bool {
        self.more.is_empty() && self.summed.is_empty()
    }

    /// The iteration axes that are the output's, in order.
    pub fn out_axes(&self) -> Vec<usize> {
        (1..self.shape.len())
            .filter(|axis| !self.summed.contains(axis))
            .collect()
    }
}

/// Kernels run together a block of rows at a time (Note [Row groups] in
/// `passes::fuse::rows`). Every kernel's output has `rows` as its axis 0, which is iteration
/// axis 0 of a map and axis 1 of a reduction (`Rows::row_axis`); a kernel reads the output
/// of an earlier member only in the row it computes.
#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    pub rows: usize,
    pub kernels: Vec<Kernel>,
    /// By kernel: its output is read only by later members, so it is never materialised.
    pub local: Vec<bool>,
    /// A scatter (statement index) added in place into the last member's output block by
    /// block, each point into the row its first index names (Note [Scatters added in place]
    /// in `passes::fuse::scatter_add`).
    pub scatter_add: Option<usize>,
}

impl Rows {
    /// The iteration axis of `kernel` that runs over the rows.
    pub fn row_axis(kernel: &Kernel) -> usize {
        usize::from(kernel.reduce.is_some())
    }

    /// Every member's output, materialised or local.
    pub fn made(&self) -> Vec<VarId> {
        self.kernels.iter().map(|kernel| kernel.output.0).collect()
    }

    /// The outputs the group materialises.
    pub fn outputs(&self) -> Vec<VarId> {
        self.kernels
            .iter()
            .zip(&self.local)
            .filter(|(_, &local)| !local)
            .map(|(kernel, _)| kernel.output.0)
            .collect()
    }

    /// The variables the group reads from outside it, without repeats.
    pub fn reads(&self) -> Vec<VarId> {
        let made = self.made();
        let mut vars = Vec::new();
        for var in self.kernels.iter().flat_map(Kernel::reads) {
            if !made.contains(&var) && !vars.contains(&var) {
                vars.push(var);
            }
        }
        vars
    }
}

/// A monoid statement (`reduce`, `assoc_scan`, `assoc_scan_right`) of a block run with some of
/// its array operands computed where its chunk folds read them (Note [Monoid steps] in
/// `passes::fuse::monoid`).
#[derive(Clone, Debug, PartialEq)]
pub struct MonoidStep {
    /// The statement's index in its block.
    pub stmt: usize,
    /// Kernels (maps over the operand's shape) that compute array operands of the statement;
    /// each output is an operand that is never materialised (the engine materialises it only
    /// when the statement cannot run on compiled chains).
    pub producers: Vec<Kernel>,
    /// By binder of the statement: whether it is stored and bound (a result of the block, or
    /// read by a later step). The others are not stored: nothing reads them, or only the
    /// consumers do.
    pub live: Vec<bool>,
    /// Maps over the statement's shape, each run on a group of chunks right after the
    /// rescan computed the group's results, reading the results they consume there (at
    /// their own point, and nothing else reads them) and the rest from before the step
    /// (Note [Monoid consumers] in `passes::fuse::monoid`). Their outputs are materialised.
    pub consumers: Vec<Kernel>,
}

impl MonoidStep {
    /// The variables the step binds: the live binders and the consumers' outputs.
    pub fn outputs(&self, program: &Program, block: BlockId) -> Vec<VarId> {
        let binders = &program.blocks[block].stmts[self.stmt].binders;
        binders
            .iter()
            .zip(&self.live)
            .filter(|(_, &live)| live)
            .map(|(&var, _)| var)
            .chain(self.consumers.iter().map(|kernel| kernel.output.0))
            .collect()
    }

    /// By binder of the statement: whether a consumer reads it.
    pub fn consumed(&self, program: &Program, block: BlockId) -> Vec<bool> {
        let mut consumed = vec![false; program.blocks[block].stmts[self.stmt].binders.len()];
        for consumer in &self.consumers {
            for component in self.members(program, block, consumer) {
                consumed[component] = true;
            }
        }
        consumed
    }

    /// The components of the statement (indices of its binders) that `consumer` reads: the
    /// results it takes from the rescan.
    pub fn members(&self, program: &Program, block: BlockId, consumer: &Kernel) -> Vec<usize> {
        let binders = &program.blocks[block].stmts[self.stmt].binders;
        let reads = consumer.reads();
        (0..binders.len())
            .filter(|&component| reads.contains(&binders[component]))
            .collect()
    }

    /// The variables the step reads: the statement's, but for the operands its producers
    /// compute, and what the producers and the consumers read, but for the statement's own
    /// binders.
    pub fn reads(&self, program: &Program, block: BlockId) -> Vec<VarId> {
        let made: Vec<VarId> = (self.producers.iter().map(|k| k.output.0))
            .chain(
                program.blocks[block].stmts[self.stmt]
                    .binders
                    .iter()
                    .copied(),
            )
            .collect();
        let mut vars: Vec<VarId> = Vec::new();
        let kernel_reads = self.producers.iter().chain(&self.consumers);
        for var in Step::Stmt(self.stmt)
            .reads(program, block)
            .into_iter()
            .chain(kernel_reads.flat_map(Kernel::reads))
        {
            if !made.contains(&var) && !vars.contains(&var) {
                vars.push(var);
            }
        }
        vars
    }
}

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Kernel(Kernel),
    MatMul(MatMul),
    Rows(Rows),
    Monoid(MonoidStep),
    /// Statement `index` of the main block, run by the bulk evaluator.
    Stmt(usize),
    /// Statement `stmt` of the block, a scatter, added into the value of `into` in place: the
    /// kernel before it computed `into` reading the scatter as zero (Note [Scatters added in
    /// place] in `passes::fuse::scatter_add`). Binds nothing.
    ScatterAdd {
        stmt: usize,
        into: VarId,
    },
}

impl Step {
    /// The variables this step of a schedule of `block` binds.
    pub fn outputs(&self, program: &Program, block: BlockId) -> Vec<VarId> {
        match self {
            Step::Kernel(kernel) => vec![kernel.output.0],
            Step::MatMul(matmul) => vec![matmul.out],
            Step::Rows(rows) => rows.outputs(),
            Step::Monoid(monoid) => monoid.outputs(program, block),
            Step::Stmt(index) => program.blocks[block].stmts[*index].binders.clone(),
            Step::ScatterAdd { .. } => Vec::new(),
        }
    }

    /// The variables this step of a schedule of `block` reads (for a statement, also those
    /// its inner blocks use).
    pub fn reads(&self, program: &Program, block: BlockId) -> Vec<VarId> {
        match self {
            Step::Kernel(kernel) => kernel.reads(),
            Step::Rows(rows) => {
                let mut vars = rows.reads();
                // The scatter's array may be a member's output, which the group makes.
                let made = rows.made();
                if let Some(stmt) = rows.scatter_add {
                    for var in Step::Stmt(stmt).reads(program, block) {
                        if !vars.contains(&var) && !made.contains(&var) {
                            vars.push(var);
                        }
                    }
                }
                vars
            }
            Step::Monoid(monoid) => monoid.reads(program, block),
            Step::MatMul(matmul) => {
                let mut vars = Vec::new();
                for (lhs, rhs) in matmul.terms() {
                    for var in [lhs.var, rhs.var] {
                        if !vars.contains(&var) {
                            vars.push(var);
                        }
                    }
                }
                vars
            }
            Step::ScatterAdd { stmt, into } => {
                let mut vars = Step::Stmt(*stmt).reads(program, block);
                vars.push(*into);
                vars
            }
            Step::Stmt(index) => {
                let mut vars = Vec::new();
                collect_expr_uses(
                    program,
                    &program.blocks[block].stmts[*index].expr,
                    &mut vars,
                );
                let mut seen = Vec::new();
                vars.retain(|var| {
                    let new = !seen.contains(var);
                    seen.push(*var);
                    new
                });
                vars
            }
        }
    }

    /// Floating-point operations of a matrix product (2 per multiply-add); `None` for other
    /// steps, which are measured in bytes moved.
    pub fn flops(&self) -> Option<u64> {
        match self {
            Step::MatMul(matmul) => Some(
                2 * matmul.terms().count() as u64
                    * matmul.shape.iter().map(|&dim| dim as u64).product::<u64>(),
            ),
            Step::Kernel(_)
            | Step::Rows(_)
            | Step::Monoid(_)
            | Step::Stmt(_)
            | Step::ScatterAdd { .. } => None,
        }
    }
}

/// A block of a bulk program as steps (see the module documentation): the main block, or
/// the body of a loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// The block whose statements the steps compute, and whose params and results the
    /// schedule has.
    pub block: BlockId,
    pub steps: Vec<Step>,
    /// The schedules of the bodies of the `fold`s and `scan`s this schedule leaves to the
    /// bulk evaluator (`Step::Stmt`) whose bodies compute tables: each iteration runs its
    /// body's schedule. (Loops over scalars run on scalar registers instead,
    /// `exec::scalar_loop`.)
    pub loop_bodies: Vec<Schedule>,
}

impl Kernel {
    /// The variables the kernel reads, in node order, without repeats.
    pub fn reads(&self) -> Vec<VarId> {
        let mut vars = Vec::new();
        for (node, _) in self.nodes.values() {
            if let Node::Read { var, .. } = node {
                if !vars.contains(var) {
                    vars.push(*var);
                }
            }
        }
        vars
    }

    /// `Some((var, axes))` when the kernel only permutes the axes of `var`: output axis `a`
    /// is axis `axes[a]` of `var` (a materialised `tr`).
    pub fn permutation(&self) -> Option<(VarId, Vec<usize>)> {
        if self.reduce.is_some() || self.nodes.len() != 1 {
            return None;
        }
        self.permuted_read(self.output.1)
    }

    /// `Some((var, axes))` when node `node` reads `var` at the kernel's point with its axes
    /// permuted: kernel axis `a` is axis `axes[a]` of `var` (whose extents the kernel does
    /// not know: a caller compares them).
    pub fn permuted_read(&self, node: NodeId) -> Option<(VarId, Vec<usize>)> {
        let (Node::Read { var, coords }, _) = &self.nodes[node] else {
            return None;
        };
        if coords.len() != self.shape.len() {
            return None;
        }
        let mut axes = vec![usize::MAX; coords.len()];
        for (d, coord) in coords.iter().enumerate() {
            let Coord::Affine(affine) = coord else {
                return None;
            };
            let [(axis, 1)] = affine.terms[..] else {
                return None;
            };
            if affine.constant != 0 || axes[axis] != usize::MAX {
                return None;
            }
            axes[axis] = d;
        }
        Some((*var, axes))
    }

    /// The kernel with `output` as its output node and only the nodes that node depends on,
    /// in their order (renumbered).
    pub fn with_output(&self, output: NodeId) -> Kernel {
        let mut live = vec![false; self.nodes.len()];
        live[output.0 as usize] = true;
        for (id, (node, _)) in self.nodes.iter().collect::<Vec<_>>().into_iter().rev() {
            if live[id.0 as usize] {
                for operand in node.operands() {
                    live[operand.0 as usize] = true;
                }
            }
        }
        let mut renumbered: Vec<Option<NodeId>> = vec![None; self.nodes.len()];
        let mut nodes = IdVec::new();
        for (id, (node, elem)) in self.nodes.iter() {
            if !live[id.0 as usize] {
                continue;
            }
            let new_id = |old: &NodeId| renumbered[old.0 as usize].expect("operands come first");
            let node = match node {
                Node::Prim(prim, operands) => {
                    Node::Prim(*prim, operands.iter().map(new_id).collect())
                }
                Node::Read { var, coords } => Node::Read {
                    var: *var,
                    coords: coords
                        .iter()
                        .map(|coord| match coord {
                            Coord::Node(o) => Coord::Node(new_id(o)),
                            other => other.clone(),
                        })
                        .collect(),
                },
                other => other.clone(),
            };
            renumbered[id.0 as usize] = Some(nodes.push((node, *elem)));
        }
        Kernel {
            shape: self.shape.clone(),
            reduce: self.reduce,
            nodes,
            output: (self.output.0, renumbered[output.0 as usize].expect("live")),
        }
    }

    /// The shape of the output variable.
    pub fn out_shape(&self) -> &[usize] {
        if self.reduce.is_some() {
            &self.shape[1..]
        } else {
            &self.shape
        }
    }
}

impl Schedule {
    /// Counts of each kind of step: (kernels, matrix products, statements left to the bulk
    /// evaluator).
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for step in &self.steps {
            match step {
                Step::Kernel(_) => counts.0 += 1,
                Step::Rows(rows) => counts.0 += rows.kernels.len(),
                Step::MatMul(_) => counts.1 += 1,
                Step::Stmt(_) | Step::Monoid(_) | Step::ScatterAdd { .. } => counts.2 += 1,
            }
        }
        counts
    }

    /// The schedules of the bodies of `step` when it is a loop whose bodies were fused (a
    /// `while_reverse` has two), in the order of its blocks.
    pub fn step_bodies(&self, program: &Program, step: &Step) -> Vec<&Schedule> {
        let Step::Stmt(index) = step else {
            return Vec::new();
        };
        let expr = &program.blocks[self.block].stmts[*index].expr;
        expr_blocks(expr)
            .into_iter()
            .filter_map(|body| self.loop_bodies.iter().find(|inner| inner.block == body))
            .collect()
    }

    /// Prints the schedule with variable names from `program` (the `fused` stage).
    pub fn display<'a>(&'a self, program: &'a Program) -> impl fmt::Display + 'a {
        ScheduleDisplay {
            schedule: self,
            program,
        }
    }
}

struct ScheduleDisplay<'a> {
    schedule: &'a Schedule,
    program: &'a Program,
}

impl fmt::Display for Affine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .terms
            .iter()
            .map(|&(axis, coeff)| match coeff {
                1 => format!("i{axis}"),
                _ => format!("{coeff}*i{axis}"),
            })
            .collect();
        if self.constant != 0 || parts.is_empty() {
            parts.push(self.constant.to_string());
        }
        write!(f, "{}", parts.join(" + "))
    }
}

impl fmt::Display for Coord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Coord::Affine(affine) => write!(f, "{affine}"),
            Coord::Node(node) => write!(f, "{node}"),
            Coord::Masked(affine, dim) => write!(f, "{affine} in 0..{dim}"),
            Coord::Wrapped(affine, period) => write!(f, "({affine}) mod {period}"),
        }
    }
}

impl ScheduleDisplay<'_> {
    /// Prints `kernel` as `kernel k{number}`, indented by `indent` more spaces; `local`
    /// marks an output a row group never materialises.
    fn kernel(
        &self,
        f: &mut fmt::Formatter<'_>,
        number: &str,
        kernel: &Kernel,
        indent: &str,
        local: bool,
    ) -> fmt::Result {
        let program = self.program;
        let reads: Vec<String> = kernel
            .reads()
            .into_iter()
            .map(|var| var_name(program, var))
            .collect();
        let (out, root) = kernel.output;
        let out_ty = program.var_ty(out);
        writeln!(
            f,
            "{indent}  kernel k{number} over {}{}: reads {{{}}} writes {}{}: {}{}",
            shape_text(&kernel.shape),
            kernel.reduce.map_or(String::new(), |reduction| format!(
                " {} i0",
                reduction.name()
            )),
            reads.join(", "),
            if local { "local " } else { "" },
            var_name(program, out),
            shape_text(&out_ty.shape),
            out_ty.elem.name(),
        )?;
        for (node_id, (node, elem)) in kernel.nodes.iter() {
            let text = match node {
                Node::Lit(scalar) => scalar_text(*scalar),
                Node::Index(affine) => format!("index {affine}"),
                Node::Read { var, coords } => {
                    let coords: Vec<String> = coords.iter().map(ToString::to_string).collect();
                    format!("read {}[{}]", var_name(program, *var), coords.join(", "))
                }
                Node::Prim(prim, operands) => {
                    let operands: Vec<String> = operands.iter().map(ToString::to_string).collect();
                    format!("{} {}", prim.name(), operands.join(" "))
                }
            };
            writeln!(f, "{indent}    {node_id}: {} = {text}", elem.name())?;
        }
        writeln!(
            f,
            "{indent}    {} {root}",
            kernel.reduce.map_or("out", Reduction::name)
        )
    }
}

impl fmt::Display for ScheduleDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let program = self.program;
        let schedule = self.schedule;
        let block = &program.blocks[schedule.block];
        let inputs = if schedule.block == program.main {
            &program.inputs
        } else {
            &block.params
        };
        let inputs: Vec<String> = inputs.iter().map(|&var| var_name(program, var)).collect();
        writeln!(f, "schedule({}) {{", inputs.join(", "))?;
        for (number, step) in schedule.steps.iter().enumerate() {
            match step {
                Step::Kernel(kernel) => self.kernel(f, &number.to_string(), kernel, "", false)?,
                Step::Rows(rows) => {
                    writeln!(f, "  rows k{number} over [{}] {{", rows.rows)?;
                    for (member, (kernel, &local)) in
                        rows.kernels.iter().zip(&rows.local).enumerate()
                    {
                        self.kernel(f, &format!("{number}.{member}"), kernel, "  ", local)?;
                    }
                    if let (Some(stmt), Some(last)) = (rows.scatter_add, rows.kernels.last()) {
                        writeln!(
                            f,
                            "    scatter-add by rows into {}: {}",
                            var_name(program, last.output.0),
                            stmt_text(program, &block.stmts[stmt], 2)
                        )?;
                    }
                    writeln!(f, "  }}")?;
                }
                Step::MatMul(matmul) => {
                    let coords = |operand: &MatOperand| -> String {
                        let coords: Vec<String> =
                            operand.coords.iter().map(ToString::to_string).collect();
                        format!("{}[{}]", var_name(program, operand.var), coords.join(", "))
                    };
                    let out_ty = program.var_ty(matmul.out);
                    let factor = match matmul.scale {
                        0 => String::new(),
                        _ => format!("{} * ", matmul.factor()),
                    };
                    let axes = |axes: &[usize]| -> String {
                        let axes: Vec<String> =
                            axes.iter().map(|axis| format!("i{axis}")).collect();
                        axes.join(", ")
                    };
                    let summed = axes(&[&[0], &matmul.summed[..]].concat());
                    // The output axes' roles: `m` and `n` axes and batch axes.
                    let mut roles = String::new();
                    for (role, role_axes) in [
                        ("m", Vec::from_iter(matmul.m_axis)),
                        ("n", Vec::from_iter(matmul.n_axis)),
                        ("batch", matmul.batch_axes.clone()),
                    ] {
                        if !role_axes.is_empty() {
                            roles += &format!(" {role} {}", axes(&role_axes));
                        }
                    }
                    let terms: Vec<String> = (matmul.terms())
                        .map(|(lhs, rhs)| format!("{} * {}", coords(lhs), coords(rhs)))
                        .collect();
                    let terms = match terms.len() {
                        1 => terms.concat(),
                        _ => format!("({})", terms.join(" + ")),
                    };
                    writeln!(
                        f,
                        "  matmul k{number} over {} sum {summed}{roles}: {} = {factor}{terms}: {}{}",
                        shape_text(&matmul.shape),
                        var_name(program, matmul.out),
                        shape_text(&out_ty.shape),
                        out_ty.elem.name(),
                    )?;
                }
                Step::Stmt(index) => {
                    let stmt = &block.stmts[*index];
                    match &schedule.step_bodies(program, step)[..] {
                        // A loop whose bodies run as schedules: the loop, then those schedules.
                        bodies @ [_, ..] => {
                            let binders: Vec<String> = stmt
                                .binders
                                .iter()
                                .map(|&var| var_name(program, var))
                                .collect();
                            let init: Vec<String> = expr_atoms(&stmt.expr)
                                .iter()
                                .map(|atom| atom_text(program, atom))
                                .collect();
                            writeln!(
                                f,
                                "  loop k{number}: {} = {} ({}) each step:",
                                binders.join(", "),
                                crate::core::print::expr_name(&stmt.expr),
                                init.join(", "),
                            )?;
                            for body in bodies {
                                let text = body.display(program).to_string();
                                for line in text.lines() {
                                    writeln!(f, "    {line}")?;
                                }
                            }
                        }
                        [] => writeln!(f, "  bulk k{number}: {}", stmt_text(program, stmt, 1))?,
                    }
                }
                Step::Monoid(monoid) => {
                    let stmt = &block.stmts[monoid.stmt];
                    let consumed = monoid.consumed(program, schedule.block);
                    let names = |consumed_ones: bool| -> Vec<String> {
                        stmt.binders
                            .iter()
                            .zip(&monoid.live)
                            .zip(&consumed)
                            .filter(|((_, &live), &consumed)| !live && consumed == consumed_ones)
                            .map(|((&var, _), _)| var_name(program, var))
                            .collect()
                    };
                    let mut unstored = Vec::new();
                    for (what, vars) in [("unread", names(false)), ("consumed", names(true))] {
                        if !vars.is_empty() {
                            unstored.push(format!("{what}, not stored: {}", vars.join(", ")));
                        }
                    }
                    let unstored = if unstored.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", unstored.join("; "))
                    };
                    writeln!(
                        f,
                        "  monoid k{number}{unstored}: {}",
                        stmt_text(program, stmt, 1)
                    )?;
                    let kernels = (monoid.producers.iter().map(|kernel| (kernel, true)))
                        .chain(monoid.consumers.iter().map(|kernel| (kernel, false)));
                    for (position, (kernel, local)) in kernels.enumerate() {
                        self.kernel(f, &format!("{number}.{position}"), kernel, "  ", local)?;
                    }
                }
                Step::ScatterAdd { stmt, into } => writeln!(
                    f,
                    "  scatter-add k{number} into {}: {}",
                    var_name(program, *into),
                    stmt_text(program, &block.stmts[*stmt], 1)
                )?,
            }
        }
        let results: Vec<String> = block
            .results
            .iter()
            .map(|atom: &Atom| atom_text(program, atom))
            .collect();
        writeln!(f, "  in {}", results.join(", "))?;
        write!(f, "}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `with_output` keeps what the new output depends on, through prim operands and read
    /// coordinates computed by nodes, in order and renumbered, and drops the rest.
    #[test]
    fn a_new_output_keeps_only_what_it_depends_on() {
        let (x, table, out) = (VarId(0), VarId(1), VarId(2));
        let mut nodes = IdVec::new();
        let zero = nodes.push((Node::Lit(Scalar::F32(0.0)), Elem::F32));
        let i = nodes.push((Node::Index(Affine::axis(0)), Elem::I64));
        let read_x = nodes.push((
            Node::Read {
                var: x,
                coords: vec![Coord::Affine(Affine::axis(0))],
            },
            Elem::F32,
        ));
        let picked = nodes.push((
            Node::Read {
                var: table,
                coords: vec![Coord::Node(i)],
            },
            Elem::F32,
        ));
        let product = nodes.push((Node::Prim(Prim::Mul, vec![read_x, picked]), Elem::F32));
        let sum = nodes.push((Node::Prim(Prim::Add, vec![zero, product]), Elem::F32));
        let kernel = Kernel {
            shape: vec![8],
            reduce: None,
            nodes,
            output: (out, sum),
        };
        let pruned = kernel.with_output(product);
        let kept: Vec<Node> = pruned
            .nodes
            .values()
            .map(|(node, _)| node.clone())
            .collect();
        assert_eq!(
            kept,
            vec![
                Node::Index(Affine::axis(0)),
                Node::Read {
                    var: x,
                    coords: vec![Coord::Affine(Affine::axis(0))]
                },
                Node::Read {
                    var: table,
                    coords: vec![Coord::Node(NodeId(0))]
                },
                Node::Prim(Prim::Mul, vec![NodeId(1), NodeId(2)]),
            ]
        );
        assert_eq!(pruned.output, (out, NodeId(3)));
        assert_eq!(kernel.with_output(sum), kernel);
    }

    /// Index arithmetic that overflows `i64` on the way is not affine (`None`), never a
    /// wrapped value or a panic; arithmetic that leaves its type over the shape is not exact.
    #[test]
    fn affine_arithmetic_is_checked() {
        let i = Affine::axis(0);
        let big = Affine::constant(i64::MAX);
        assert_eq!(
            i.scaled_plus(3, &Affine::constant(2)),
            Some(Affine {
                constant: 2,
                terms: vec![(0, 3)]
            })
        );
        assert_eq!(i.scaled_plus(i64::MAX, &i), None, "coefficient overflows");
        assert_eq!(
            big.scaled_plus(1, &Affine::constant(1)),
            None,
            "constant overflows"
        );
        let mul = |a: &Affine, b: &Affine| {
            Affine::of_prim(Prim::Mul, &[Some(a), Some(b)], Elem::I64, &[10])
        };
        assert_eq!(
            mul(&i, &Affine::constant(4)),
            Some(i.scaled_plus(4, &Affine::default()).unwrap())
        );
        assert_eq!(mul(&i, &big), None);
        // `9 - i` over 0..10 fits a u32; `i - 1` does not (it is -1 at 0).
        let sub = |a: &Affine, b: &Affine| {
            Affine::of_prim(Prim::Sub, &[Some(a), Some(b)], Elem::U32, &[10])
        };
        assert!(sub(&Affine::constant(9), &i).is_some());
        assert_eq!(sub(&i, &Affine::constant(1)), None);
    }
}

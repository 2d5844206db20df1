//! Rule homes of IR operations: one module per operation (or family) holding every rule of
//! the operation together — type rule, reference evaluation, batching (BOT), JVP, transpose,
//! cost and fusion class — so that adding an operation is one file and the compiler points
//! at the arms the generic passes need (issue #11 §0).
//!
//! | module | operations |
//! |---|---|
//! | `build` | `build1`, `index`, `iota`, literal tables |
//! | `sum_outer` | `sumOuter` |
//! | `gather_scatter` | `gather`, `scatter` |
//! | `layout` | `replicate`, `tr`, `reshape` |
//! | `cond` | `cond` |
//! | `loops` | `fold`, `scan` |
//! | `while_loop` | `while`, `while_reverse` |
//! | `monoid` | `reduce`, `assoc_scan`, `assoc_scan_right` |
//! | `derivative` | `jvp`/`vjp` statements before the `ad` pass expands them |
//! | `custom` | `custom_vjp`, `custom_linear` (user-defined derivatives) |
//!
//! The elementwise primitives (`Expr::Prim`) have their homes in `prim`, one file per family.
//!
//! Each concern has one generic place that dispatches to the homes with an exhaustive `match`
//! on `Expr` (no `_ =>` arm), so a new variant makes the compiler list every rule it lacks:
//! the type rule in `verify::expr_types`, reference evaluation in `interp::Interp::eval_stmt`,
//! batching in `batch::Batcher::batch_stmt`, JVP and transpose in `ad` (`jvp_stmt`,
//! `transpose_stmt`), cost in `cost`, and here the linearity (`linearity`), the fusion class
//! (`fusion_class`) and the pushing of an index into what defines the array it reads
//! (`push_index`, run by `passes::bot`). The dispatchers live here beside the homes, with the contexts the rules
//! write into (the batching context `batch::Batcher`, the derivative builder `ad::Builder`),
//! so that `core` (the IR) depends on no rule and `ops` on no pass: the passes (`passes::bot`,
//! `passes::derivatives`, …) decide where and in which order the rules run, and the rules of
//! a form that holds blocks (a loop, a conditional) call the dispatchers for their bodies.
//! The verifier, the reference interpreter, the cost model and the random-program generator of
//! tests (which types what it draws by the verifier's rules) are here for the same reason. The
//! engine (`exec`) and the exports keep their kernels of each operation. Generic walks over
//! the atoms and blocks of a statement go through `core::visit`.

pub mod ad;
pub mod batch;
pub mod build;
pub mod cond;
pub mod cost;
pub mod custom;
pub mod derivative;
pub mod gather_scatter;
pub mod interp;
pub mod layout;
pub mod loops;
pub mod monoid;
pub mod sum_outer;
pub mod testgen;
pub mod verify;
pub mod while_loop;

use crate::core::ir::{
    Atom, Build1, CustomJvp, CustomLinear, CustomVjp, Expr, Fold, Gather, Index, Monoid,
    MonoidKind, PrimApp, Program, Replicate, Scan, Scatter, SumOuter, Table, VarId, WhileReverse,
};
use crate::core::kernel::Reduction;

/// How an operation's results depend on its operands, for differentiation (docs/architecture.md:
/// linearity recorded per operation, never discovered at run time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Linearity {
    /// Linear, jointly, in the operands marked `true` (in `core::visit::expr_atoms` order) and
    /// independent of the values of the others (shapes, indices): its JVP is the operation
    /// itself on the tangents, and in a linear program linear variables appear only in the
    /// marked positions.
    Structural(Vec<bool>),
    /// An elementwise primitive: `Prim::linearity`.
    Prim(crate::prim::Linearity),
    /// An operation with blocks whose statements decide its linearity (`cond`, `fold`,
    /// `scan`, the monoid operations): differentiated by a rule of its own in its home. The
    /// operands marked `true` may be linear; the others (a condition) may not.
    Compound(Vec<bool>),
    /// Never differentiated: `build1` (AD runs on BOT output) and `jvp`/`vjp` statements
    /// (expanded before).
    Excluded,
}

/// The linearity of an operation (see `Linearity`).
pub fn linearity(expr: &Expr) -> Linearity {
    let n_operands = crate::core::visit::expr_atoms(expr).len();
    let first_only = || {
        let mut mask = vec![false; n_operands];
        mask[0] = true;
        Linearity::Structural(mask)
    };
    match expr {
        Expr::Atom(_) | Expr::Table(_) => Linearity::Structural(vec![true; n_operands]),
        // `index`: linear in the array, not in the indices.
        Expr::Index(_)
        | Expr::Gather(_)
        | Expr::Scatter(_)
        | Expr::SumOuter(_)
        | Expr::Replicate(_)
        | Expr::Transpose(_)
        | Expr::Reshape(_) => first_only(),
        // An integer result: no tangent, linear in nothing.
        Expr::Iota(_) => Linearity::Structural(Vec::new()),
        Expr::Prim(PrimApp(prim, _)) => Linearity::Prim(prim.linearity()),
        Expr::Cond(_) => Linearity::Compound(vec![false]),
        Expr::Fold(_) | Expr::Scan(_) | Expr::While(_) | Expr::Monoid(_) => {
            Linearity::Compound(vec![true; n_operands])
        }
        // Linear in its seeds, constant in the carries it replays.
        Expr::WhileReverse(WhileReverse { init, seeds, .. }) => {
            Linearity::Compound([vec![false; init.len()], vec![true; seeds.len()]].concat())
        }
        Expr::CustomVjp(CustomVjp { args, .. }) | Expr::CustomJvp(CustomJvp { args, .. }) => {
            Linearity::Compound(vec![true; args.len()])
        }
        // Linear in its tangents (or cotangents), constant in its residuals.
        Expr::CustomLinear(CustomLinear {
            residuals,
            operands,
            ..
        }) => {
            Linearity::Compound([vec![false; residuals.len()], vec![true; operands.len()]].concat())
        }
        Expr::Build1(_) | Expr::Derivative(_) => Linearity::Excluded,
    }
}

/// One [Smeding25] Fig 10 step (Note [Pushing index down] in `ops::build`): `index source
/// index` where `source` is defined by `def`, as the computation of the element read; `None`
/// where no rule applies. `index` is not empty.
pub fn push_index(
    cx: &mut build::IndexPush,
    source: VarId,
    index: &[Atom],
    def: &Expr,
) -> Option<Expr> {
    match def {
        Expr::Index(Index {
            array,
            index: first,
        }) => build::push_into_index(*array, first, index),
        Expr::Table(Table(items)) => build::push_into_table(cx, items, index),
        Expr::SumOuter(SumOuter(inner)) => sum_outer::push_index(cx, *inner, index),
        Expr::Replicate(Replicate { count, array }) => {
            layout::push_into_replicate(cx, *count, *array, index)
        }
        Expr::Prim(PrimApp(prim, args)) => batch::push_into_prim(cx, *prim, args, source, index),
        Expr::Gather(Gather { shape, array, body }) => {
            gather_scatter::push_into_gather(cx, shape, *array, *body, index)
        }
        // No rule (a loop, a scatter or a conditional would be run again for each element
        // read; a layout change is composed where gathers are): the array is read as it is.
        Expr::Atom(_)
        | Expr::Transpose(_)
        | Expr::Reshape(_)
        | Expr::Iota(_)
        | Expr::Build1(_)
        | Expr::Scatter(_)
        | Expr::Monoid(_)
        | Expr::Cond(_)
        | Expr::Fold(_)
        | Expr::Scan(_)
        | Expr::While(_)
        | Expr::WhileReverse(_)
        | Expr::CustomVjp(_)
        | Expr::CustomJvp(_)
        | Expr::CustomLinear(_)
        | Expr::Derivative(_) => None,
    }
}

/// How the fuser (`passes::fuse`) treats a statement of the block it fuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusionClass {
    /// Computes nothing per element (copies, `replicate`, `tr`, `reshape`, `iota`, `index`,
    /// a gather with a scalar index function): always inlined into its readers, which ask
    /// for its element at some coordinates.
    View,
    /// Computes its element from its operands' elements at the same coordinates (elementwise
    /// primitives): inlined into its readers unless that recomputes it.
    Pull,
    /// A reduction over the outer axis (`sumOuter`, a `reduce` over a selection operator;
    /// `reduction_of`): a kernel whose body is its producer.
    Reduce,
    /// A step of its own whose inputs and outputs are materialised (loops, `cond`, `scatter`,
    /// tables, gathers with blocks in their index function, the monoid operations).
    Bulk,
}

/// The fusion class of an operation (see `FusionClass`).
pub fn fusion_class(program: &Program, expr: &Expr) -> FusionClass {
    match expr {
        Expr::Atom(_)
        | Expr::Replicate(_)
        | Expr::Transpose(_)
        | Expr::Reshape(_)
        | Expr::Iota(_)
        | Expr::Index(_) => FusionClass::View,
        Expr::Gather(Gather { body, .. }) => gather_scatter::gather_fusion_class(program, *body),
        Expr::Prim(..) => FusionClass::Pull,
        Expr::SumOuter(_) => FusionClass::Reduce,
        Expr::Monoid(_) if reduction_of(program, expr).is_some() => FusionClass::Reduce,
        Expr::Build1(_)
        | Expr::Scatter(_)
        | Expr::Table(_)
        | Expr::Cond(_)
        | Expr::Fold(_)
        | Expr::Scan(_)
        | Expr::While(_)
        | Expr::WhileReverse(_)
        // A monoid reduce or scan is a step of its own, run in parallel chunks by
        // `exec::monoid`; the producers of a vector's arrays run inside its chunk loop
        // (Note [Monoid steps] in `passes::fuse::monoid`).
        | Expr::Monoid(_)
        | Expr::CustomVjp(_)
        | Expr::CustomJvp(_)
        | Expr::CustomLinear(_)
        | Expr::Derivative(_) => FusionClass::Bulk,
    }
}

/// The array a reduction kernel reduces over its outer axis, and how: `sumOuter`, or a
/// `reduce` of one non-empty array over a selection operator (`monoid::selection`; its
/// identity is then never used).
pub fn reduction_of(program: &Program, expr: &Expr) -> Option<(Atom, Reduction)> {
    match expr {
        Expr::SumOuter(SumOuter(array)) => Some((*array, Reduction::Sum)),
        Expr::Monoid(Monoid {
            kind: MonoidKind::Reduce,
            arrays,
            op,
            ..
        }) if arrays.len() == 1 && program.atom_ty(&arrays[0]).shape[0] > 0 => {
            monoid::selection(program, *op).map(|reduction| (arrays[0], reduction))
        }
        _ => None,
    }
}

/// How many times an operation, inlined into a kernel, computes each element of its operands
/// (Note [Materialise or recompute] in `passes::fuse`): `count` through `replicate`, 2 through
/// `gather` (whose index function may read an element many times; an estimate) unless its
/// index function reads each element at most once (a reversal, a shift, a transposed stencil:
/// `gather_scatter::is_injective`), once otherwise.
pub fn recompute_factor(program: &Program, expr: &Expr) -> usize {
    match expr {
        Expr::Replicate(Replicate { count, .. }) => *count,
        Expr::Gather(Gather { shape, body, .. }) => {
            let points = shape.get(..program.blocks[*body].params.len());
            let once =
                points.is_some_and(|points| gather_scatter::is_injective(program, *body, points));
            if once {
                1
            } else {
                2
            }
        }
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Build1(_)
        | Expr::Index(_)
        | Expr::SumOuter(_)
        | Expr::Scatter(_)
        | Expr::Table(_)
        | Expr::Transpose(_)
        | Expr::Reshape(_)
        | Expr::Cond(_)
        | Expr::Iota(_)
        | Expr::Fold(_)
        | Expr::Scan(_)
        | Expr::While(_)
        | Expr::WhileReverse(_)
        | Expr::Monoid(_)
        | Expr::CustomVjp(_)
        | Expr::CustomJvp(_)
        | Expr::CustomLinear(_)
        | Expr::Derivative(_) => 1,
    }
}

/// The ranges of the index params of an operation's blocks, in order: param `j` of a block
/// of `expr` lies in `0..bounds[j]` (its later params, such as a loop's carries, are not
/// indices). The BOT's index pushing uses them (Note [Pushing index down]).
pub fn index_param_bounds(program: &Program, expr: &Expr) -> Vec<usize> {
    match expr {
        Expr::Build1(Build1 { size, .. })
        | Expr::Fold(Fold { size, .. })
        | Expr::Scan(Scan { size, .. }) => {
            vec![*size]
        }
        // The index function ranges over the leading axes of the result (gather) or of the
        // source (scatter).
        Expr::Gather(Gather { shape, .. }) => shape.clone(),
        Expr::Scatter(Scatter { array, .. }) => program.atom_ty(array).shape,
        // An operator's params are scalar operands, a derivative's function's params values.
        Expr::Monoid(_) | Expr::Derivative(_) => Vec::new(),
        // Their blocks' params are values.
        Expr::CustomVjp(_) | Expr::CustomJvp(_) | Expr::CustomLinear(_) => Vec::new(),
        // A while's params are carries.
        Expr::While(_) | Expr::WhileReverse(_) => Vec::new(),
        Expr::Cond(_)
        | Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Index(_)
        | Expr::SumOuter(_)
        | Expr::Table(_)
        | Expr::Replicate(_)
        | Expr::Transpose(_)
        | Expr::Reshape(_)
        | Expr::Iota(_) => Vec::new(),
    }
}

//! Monoid steps: a `reduce`/`assoc_scan` of a vector computes the arrays it folds where its
//! chunk folds read them, and stores only the results something reads (Note [Monoid steps]).

// Note [Monoid steps]
// ~~~~~~~~~~~~~~~~~~~
// A monoid statement runs in chunks (Note [Monoid order] in `ops::monoid`): the totals of
// the chunks, then, for a scan, every chunk again from its carry. Left to the bulk evaluator,
// its arrays are materialised first: the gradient of `cumprod` wrote the shifted input and a
// table of ones (the constant cotangent) only for the right scan to read them back, twice.
//
// An array operand bound in the block by a pull or view statement, read by this statement
// alone or computed from indices and literals alone (the constant cotangent, which the
// kernels that read it compute too), becomes a *producer*: the kernel that would have materialised it (a map over the
// operand's shape, built as any other kernel, so what it pulls obeys Note [Materialise or
// recompute] with the monoid as its one reader) runs on each group of chunks just before
// the folds read them, into a buffer of a few kilobytes. So the operand costs its own reads
// and arithmetic, twice for a scan (once per pass), and no array. A scan's producer that
// computes a transcendental function (`exp`, `log`, …) or random bits would cost more twice
// than a write and two reads, so it is materialised instead (the same kernel, as a step of
// its own); a `reduce` reads its arrays once, so any producer is fused.
//
// Only vectors (one lane: `[n]`, or `[n, 1, …]`) fuse producers: the compiled chains fold
// each chunk of one lane, and a producer of `m` lanes would compute all of them for each.
// The engine materialises the producers itself when the statement does not run on compiled
// chains (many lanes, or before the folds are compiled), so the values never depend on it.
//
// A scan binds one table per component of its monoid; the gradient's right scan over ⊗
// (seed 000 Thm 3.7) binds three, of which only the cotangents are read. A binder that no
// later statement reads and that is not a result of the block is not stored.

use std::collections::HashSet;

use super::{identity_coords, Fuser, KernelBuilder};
use crate::core::ir::{Expr, MonoidKind, VarId};
use crate::core::kernel::{Kernel, MonoidStep, Node, Step};
use crate::core::visit::var_of;
use crate::ops::FusionClass;
use crate::prim::Family;

/// The array operands of the block's monoid statements that their statement computes
/// (Note [Monoid steps]), with that statement's index; `index_only` are the variables
/// computed from indices and literals alone.
pub(super) fn fused_operands(
    fuser: &Fuser<'_>,
    index_only: &HashSet<VarId>,
) -> HashSet<(VarId, usize)> {
    let program = fuser.program;
    let mut fused = HashSet::new();
    for (stmt_idx, stmt) in fuser.block.stmts.iter().enumerate() {
        let Expr::Monoid { arrays, .. } = &stmt.expr else {
            continue;
        };
        if fuser.kinds[stmt_idx] != FusionClass::Bulk {
            continue;
        }
        for var in arrays.iter().copied().filter_map(var_of) {
            let ty = program.var_ty(var);
            let one_lane = ty.shape.iter().skip(1).product::<usize>() == 1;
            let pulled = fuser.def.get(&var).is_some_and(|&def| {
                matches!(fuser.kinds[def], FusionClass::Pull | FusionClass::View)
            });
            let alone = fuser.uses.get(&var) == Some(&1) || index_only.contains(&var);
            if one_lane && pulled && alone {
                fused.insert((var, stmt_idx));
            }
        }
    }
    fused
}

/// The steps of monoid statement `stmt_idx` (a bulk statement): kernels for the producers
/// that are materialised after all, then the statement, as a `Step::Monoid` when it computes
/// an operand or leaves a result unstored, else as a plain `Step::Stmt`.
pub(super) fn monoid_steps(fuser: &Fuser<'_>, stmt_idx: usize) -> Vec<Step> {
    let program = fuser.program;
    let stmt = &fuser.block.stmts[stmt_idx];
    let Expr::Monoid { kind, arrays, .. } = &stmt.expr else {
        unreachable!("monoid_steps of a monoid statement")
    };
    let mut steps = Vec::new();
    let mut producers: Vec<Kernel> = Vec::new();
    for var in arrays.iter().copied().filter_map(var_of) {
        if !fuser.fused_operands.contains(&(var, stmt_idx))
            || fuser.inlined_def(var).is_none()
            || producers.iter().any(|kernel| kernel.output.0 == var)
        {
            continue;
        }
        let shape = program.var_ty(var).shape.clone();
        let mut builder = KernelBuilder::new(fuser, shape.clone());
        let root = builder.pull_var(var, identity_coords(shape.len()));
        let kernel = builder.finish(None, var, root);
        if *kind != MonoidKind::Reduce && computes_expensive(&kernel) {
            steps.push(Step::Kernel(kernel));
        } else {
            producers.push(kernel);
        }
    }
    let live: Vec<bool> = stmt
        .binders
        .iter()
        .map(|binder| fuser.uses.contains_key(binder))
        .collect();
    steps.push(if producers.is_empty() && live.iter().all(|&live| live) {
        Step::Stmt(stmt_idx)
    } else {
        Step::Monoid(MonoidStep {
            stmt: stmt_idx,
            producers,
            live,
        })
    });
    steps
}

/// Whether a kernel computes a transcendental function or random bits (Note [Monoid steps]).
fn computes_expensive(kernel: &Kernel) -> bool {
    kernel.nodes.values().any(|(node, _)| {
        matches!(node, Node::Prim(prim, _)
            if matches!(prim.family(), Family::Math(_) | Family::Random(_)))
    })
}

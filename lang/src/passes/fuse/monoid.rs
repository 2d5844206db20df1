//! Monoid steps: a `reduce`/`assoc_scan` of a vector computes the arrays it folds where its
//! chunk folds read them, and stores only the results something reads (Note [Monoid steps]);
//! a scan runs the maps that consume its results where its rescan computes them (Note
//! [Monoid consumers]).

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
// ([Paszke21] Thm 3.7) binds three, of which only the cotangents are read. A binder that no
// later statement reads and that is not a result of the block is not stored.

// Note [Monoid consumers]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A scan's rescan (step 3 of Note [Monoid order] in `ops::monoid`) computes its results a
// group of chunks at a time. The map that reads them next (the last kernel of a `cumprod`
// gradient, [Paszke21] Eq 12: `x̄ᵢ = ∂₂ᵀ⊙(…) · ȳᵢ`) would read them back from memory: a write
// and a read of each consumed table for nothing. A later map kernel over the scan's shape
// is a *consumer* of the scan's step when
//
// - it reads results of the scan only at its own point (identity coordinates), so that a
//   group's results are all it needs of them;
// - nothing else reads those results (no other step, not the block's results), so that
//   they need never be stored;
// - whatever else it reads is computed before the scan's step (no step between the two
//   binds it), so that the kernel can run in the scan's place.
//
// It then moves into the scan's step (`MonoidStep::consumers`): the rescan's folds store the
// consumed results into a buffer of the task, and the consumer runs on the group's rows
// right after, reading that buffer, writing its own output (materialised as before). Only
// vectors (one lane) on compiled chains do this; elsewhere the engine stores the consumed
// results, runs the consumer as a kernel and drops them: the same bits.

use std::collections::HashSet;

use super::{identity_coords, Fuser, KernelBuilder};
use crate::core::ir::{BlockId, Monoid, MonoidKind, Program, VarId};
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
        let Some(Monoid { arrays, .. }) = Monoid::of(&stmt.expr) else {
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
    let Some(Monoid { kind, arrays, .. }) = Monoid::of(&stmt.expr) else {
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
            consumers: Vec::new(),
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

/// Moves the map kernels that consume a scan's results into the scan's step (Note [Monoid
/// consumers]).
pub(super) fn fuse_consumers(program: &Program, block: BlockId, mut steps: Vec<Step>) -> Vec<Step> {
    let results = super::result_vars(program, block);
    let mut at = 0;
    while at < steps.len() {
        if let Some(stmt) = vector_scan(program, block, &steps[at]) {
            let mut later = at + 1;
            while later < steps.len() {
                if consumes(program, block, &results, &steps, (at, later), stmt) {
                    let Step::Kernel(kernel) = steps.remove(later) else {
                        unreachable!("a consumer is a kernel")
                    };
                    add_consumer(program, block, &mut steps[at], stmt, kernel);
                } else {
                    later += 1;
                }
            }
        }
        at += 1;
    }
    steps
}

/// The statement of `step` if it is a scan of a vector (one lane) of the block.
fn vector_scan(program: &Program, block: BlockId, step: &Step) -> Option<usize> {
    let stmt = match step {
        Step::Monoid(monoid) => monoid.stmt,
        Step::Stmt(stmt) => *stmt,
        _ => return None,
    };
    let Monoid { kind, arrays, .. } = Monoid::of(&program.blocks[block].stmts[stmt].expr)?;
    let shape = program.atom_ty(&arrays[0]).shape;
    let one_lane = shape.iter().skip(1).product::<usize>() == 1;
    (*kind != MonoidKind::Reduce && one_lane).then_some(stmt)
}

/// Whether step `later` is a consumer of the scan `stmt` of step `at` (Note [Monoid
/// consumers]); `results`: the variables the block returns.
fn consumes(
    program: &Program,
    block: BlockId,
    results: &HashSet<VarId>,
    steps: &[Step],
    (at, later): (usize, usize),
    stmt: usize,
) -> bool {
    let Step::Kernel(kernel) = &steps[later] else {
        return false;
    };
    let block_ref = &program.blocks[block];
    let binders = &block_ref.stmts[stmt].binders;
    let Some(Monoid { arrays, .. }) = Monoid::of(&block_ref.stmts[stmt].expr) else {
        unreachable!("a scan")
    };
    if kernel.reduce.is_some() || kernel.shape != program.atom_ty(&arrays[0]).shape {
        return false;
    }
    let reads = kernel.reads();
    let consumed: Vec<VarId> = reads
        .iter()
        .copied()
        .filter(|var| binders.contains(var))
        .collect();
    if consumed.is_empty() {
        return false;
    }
    let identity = identity_coords(kernel.shape.len());
    let at_own_point = kernel.nodes.values().all(|(node, _)| match node {
        Node::Read { var, coords } => !consumed.contains(var) || *coords == identity,
        _ => true,
    });
    let step_reads = |step: &Step| match step {
        // Its consumers read its binders too.
        Step::Monoid(monoid) => monoid
            .consumers
            .iter()
            .flat_map(Kernel::reads)
            .chain(monoid.reads(program, block))
            .collect(),
        step => step.reads(program, block),
    };
    let read_elsewhere = consumed.iter().any(|var| {
        results.contains(var)
            || (steps.iter().enumerate())
                .any(|(index, step)| index != later && step_reads(step).contains(var))
    });
    let bound_between: HashSet<VarId> = steps[at + 1..later]
        .iter()
        .flat_map(|step| step.outputs(program, block))
        .collect();
    let ready = reads
        .iter()
        .all(|var| binders.contains(var) || !bound_between.contains(var));
    at_own_point && !read_elsewhere && ready
}

/// Makes `kernel` a consumer of the scan `stmt` that `step` runs.
fn add_consumer(program: &Program, block: BlockId, step: &mut Step, stmt: usize, kernel: Kernel) {
    let binders = &program.blocks[block].stmts[stmt].binders;
    if let Step::Stmt(_) = step {
        *step = Step::Monoid(MonoidStep {
            stmt,
            producers: Vec::new(),
            live: vec![true; binders.len()],
            consumers: Vec::new(),
        });
    }
    let Step::Monoid(monoid) = step else {
        unreachable!("a scan's step")
    };
    let reads = kernel.reads();
    for (live, binder) in monoid.live.iter_mut().zip(binders) {
        if reads.contains(binder) {
            *live = false;
        }
    }
    monoid.consumers.push(kernel);
}

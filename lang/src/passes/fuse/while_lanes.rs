//! Which `while` bodies run a block of lanes at a time (Note [Lanes of a while]).

// Note [Lanes of a while]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A `while` under a `for` is batched into one while over all the lanes with an `active` mask
// (`ops::while_loop`, `Batcher::batch_while`): each step computes every lane, keeps the
// carries of the finished lanes (`select active new old`), makes `active' = active && go`,
// and the loop goes on while any lane is active. Newton's method from 10⁶ starting points
// then streams the carries, the loop's inputs and the mask through memory once a step, for as
// many steps as the slowest lane takes.
//
// When each step works on every lane alone, the engine runs a block of lanes through all of
// its steps while it is in cache, then the next block (`exec::lane_blocks`): the inputs are
// read once rather than once a step. Every lane gets the same bits: its step reads only its
// own lane, and once it has finished it keeps its carries whatever the other lanes do; a
// block stops when its own lanes are done, and the whole while would have left them as they
// are from then on.
//
// The rule holds for a while body (its schedule) when
// - the body is the batched form: params `c…, active` (the mask `[n]bool`), results
//   `any, kept…, active'` with `active' = and active go`, `any = gt (sumOuter (cast
//   active')) 0`, and each `kept_j = select m new c_j`, `m` the mask or the mask broadcast
//   along the carry's other axes;
// - every carry has the `n` lanes as axis 0, and every step is a kernel (alone or in a row
//   group without a scatter): a map over the lanes (axis 0 of its iteration space), the count
//   of `active'` (a sum over the lanes), or a kernel over no axes that reads scalars (`any`);
// - the maps and the count read the carries, each other's outputs and the outside variables
//   they give their rows of (`Schedule::lane_inputs`) at their own lane only (coordinate 0 is
//   `i0`), read every other variable at coordinates without `i0`, and never use `i0` as a
//   value (`Node::Index` of axis 0): in a block, `i0` counts from the block's first lane.

use std::collections::HashMap;

use crate::core::ir::{Atom, Elem, Expr, Program, Scalar, VarId};
use crate::core::kernel::{Kernel, Node, Reduction, Schedule, Step};
use crate::core::visit::var_of;
use crate::prim::Prim;

/// Lanes from which a while runs a block of them at a time: fewer stay in cache from one step
/// to the next anyway.
pub(super) const MIN_LANES: usize = 1 << 15;

/// The number of lanes of a while body whose schedule runs a block of lanes at a time, or
/// `None` when the rule of Note [Lanes of a while] does not hold.
pub(super) fn lanes_of_while(program: &Program, schedule: &Schedule) -> Option<usize> {
    let block = &program.blocks[schedule.block];
    let (&active, carries) = block.params.split_last()?;
    let mask_ty = program.var_ty(active);
    let &[n] = mask_ty.shape.as_slice() else {
        return None;
    };
    if mask_ty.elem != Elem::Bool
        || carries
            .iter()
            .any(|&carry| program.var_ty(carry).shape.first() != Some(&n))
    {
        return None;
    }
    let defs: HashMap<VarId, &Expr> = (block.stmts.iter())
        .filter(|stmt| stmt.binders.len() == 1)
        .map(|stmt| (stmt.binders[0], &stmt.expr))
        .collect();
    let def = |atom: &Atom| var_of(*atom).and_then(|var| defs.get(&var).copied());
    let (any, rest) = block.results.split_first()?;
    let (still, kept) = rest.split_last()?;
    if kept.len() != carries.len() {
        return None;
    }
    // active' = and active go
    let Some(Expr::Prim(Prim::And, args)) = def(still) else {
        return None;
    };
    if args.first() != Some(&Atom::Var(active)) {
        return None;
    }
    // any = gt (sumOuter (cast active')) 0
    let Some(Expr::Prim(Prim::Gt, args)) = def(any) else {
        return None;
    };
    let [count, Atom::Lit(Scalar::I64(0))] = args.as_slice() else {
        return None;
    };
    let count_var = var_of(*count)?;
    let Some(Expr::SumOuter(cast)) = def(count) else {
        return None;
    };
    let Some(Expr::Prim(Prim::Cast(Elem::I64), args)) = def(cast) else {
        return None;
    };
    if args[..] != [*still] {
        return None;
    }
    // kept_j = select m new c_j, m the mask or the mask broadcast (statements of the mask
    // and literals only)
    fn is_mask(atom: &Atom, active: VarId, defs: &HashMap<VarId, &Expr>) -> bool {
        *atom == Atom::Var(active)
            || var_of(*atom)
                .and_then(|var| defs.get(&var))
                .is_some_and(|expr| {
                    (crate::core::visit::expr_atoms(expr).iter()).all(|operand| {
                        matches!(operand, Atom::Lit(_)) || is_mask(operand, active, defs)
                    })
                })
    }
    for (kept, &carry) in kept.iter().zip(carries) {
        let Some(Expr::Prim(Prim::Select, args)) = def(kept) else {
            return None;
        };
        let [mask, _, old] = args.as_slice() else {
            return None;
        };
        if *old != Atom::Var(carry) || !is_mask(mask, active, &defs) {
            return None;
        }
    }
    let sliced = schedule.lane_inputs(program, n);
    let mut lane_vars: Vec<VarId> = block.params.clone();
    lane_vars.extend(&sliced);
    for step in &schedule.steps {
        let kernels: Vec<&Kernel> = match step {
            Step::Kernel(kernel) => vec![kernel],
            Step::Rows(rows) if rows.scatter_add.is_none() => rows.kernels.iter().collect(),
            _ => return None,
        };
        for kernel in kernels {
            let over_lanes = match (kernel.shape.as_slice(), kernel.reduce) {
                ([], None) => false,
                ([first, ..], None) if *first == n => true,
                ([first], Some(Reduction::Sum)) if *first == n && kernel.output.0 == count_var => {
                    true
                }
                _ => return None,
            };
            if !reads_own_lanes(program, kernel, over_lanes, &lane_vars) {
                return None;
            }
            if over_lanes && kernel.reduce.is_none() {
                lane_vars.push(kernel.output.0);
            }
        }
    }
    Some(n)
}

/// Whether `kernel` reads the variables with lanes (`lane_vars`) at its own lane and no other
/// at `i0`, and does not use `i0` as a value; a kernel not over the lanes reads scalars only.
fn reads_own_lanes(
    program: &Program,
    kernel: &Kernel,
    over_lanes: bool,
    lane_vars: &[VarId],
) -> bool {
    kernel.nodes.values().all(|(node, _)| match node {
        Node::Index(affine) => affine.coeff(0) == 0,
        Node::Read { var, coords } if !over_lanes => {
            program.var_ty(*var).rank() == 0 && coords.is_empty()
        }
        Node::Read { var, coords } => {
            if lane_vars.contains(var) {
                coords.first().is_some_and(|coord| coord.is_axis(0))
                    && coords[1..].iter().all(|coord| !coord.uses_axis(0))
            } else {
                coords.iter().all(|coord| !coord.uses_axis(0))
            }
        }
        _ => true,
    })
}

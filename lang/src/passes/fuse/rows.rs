//! Row groups: consecutive kernels over the same rows run a block of rows at a time, and what
//! only the group reads is never materialised (Note [Row groups]).

// Note [Row groups]
// ~~~~~~~~~~~~~~~~~
// A row-wise softmax unfuses into a chain of kernels over the same rows: the row maxima (a
// reduction of each row), the shifted exponentials (a map that reads the maxima), their row
// sums, and the quotients. Each kernel is a pass over memory: at 4096 rows of 1000 the
// exponentials (16 MB) are written by one kernel and read back by two others, from memory,
// and the input is read twice. Run a block of rows at a time instead, every member on the
// block before the next block, and each member reads from cache what the one before wrote;
// an output that nothing after the group reads needs only a block of rows, so it is never
// materialised. (This is the row-reduction fusion XLA does for softmax.)
//
// A member may read an earlier member's output only in the row it computes: coordinate 0 of
// the read is exactly the member's row coordinate. Then the members of a block depend on
// nothing outside the block. Members are kernels (not matrix products, scatters or bulk
// statements) whose output has the group's rows as axis 0 with at least `MIN_ROW_POINTS`
// points of iteration per row (a line's fixed cost needs long rows), or maps over the rows
// alone (one line along the block's rows, as the reciprocal of softmax's row sums), that are sums or
// `max`/`min` of floats when they reduce, and whose lines (a map's last axis, a reduction's
// axis 0) read every operand contiguously or not at all: the engine runs members along those
// lines, where alone it might have chosen another layout (`exec::fused`, `map_down`,
// `reduce_across`). A group has at least two members, and its first and last members take
// part: the first's output is read by a later member, the last reads an earlier member's;
// and some member has axes besides the rows, or there are at least `MIN_MAP_GROUP_ROWS` rows
// (maps over the rows alone are elementwise kernels, which run as well on their own while
// what one writes is still in cache when the next reads it; over many rows, as the masked
// Newton step of a `while` under a `for` over 10⁶ lanes, the group keeps the step's
// intermediate in cache and never writes it).
//
// Each member computes the bits it computes alone: a map is pointwise, a sum adds each of its
// outputs in dx's order in every layout, and `max`/`min` are exactly associative.
//
// A scatter added in place into the last member's output (`Step::ScatterAdd`) whose points
// each land in the row their first index names (the one-hot of softmax cross-entropy's
// labels, `(\i -> i, labels[i])`) joins the group: after the last member writes a block, the
// points of the block's rows are added into it while it is in cache, instead of one pass
// afterwards that touches a page of the output per point. Each element receives the same
// additions in the same order as the step after the group would make.

use crate::core::ir::{BlockId, Elem, Program, Scatter, VarId};
use crate::core::kernel::{Coord, Kernel, Node, Reduction, Rows, Step};
use crate::core::visit::{collect_uses, var_of};

use super::row_major_strides;

/// Points of iteration per row below which a kernel does not join a row group.
pub const MIN_ROW_POINTS: usize = 64;
/// Rows from which maps over the rows alone make a group by themselves (Note [Row groups]):
/// an output of that many floats no longer stays in a core's cache from one kernel to the
/// next.
pub const MIN_MAP_GROUP_ROWS: usize = 1 << 15;

/// `steps` (a schedule of `block`) with each maximal run of consecutive kernels that can share
/// their rows made a `Step::Rows`.
pub(super) fn group_rows(program: &Program, block: BlockId, steps: Vec<Step>) -> Vec<Step> {
    let mut grouped = Vec::with_capacity(steps.len());
    let mut rest = &steps[..];
    while let Some(first) = rest.first() {
        let members = group_at(program, rest);
        if members < 2 {
            grouped.push(first.clone());
            rest = &rest[1..];
            continue;
        }
        let kernels: Vec<Kernel> = rest[..members]
            .iter()
            .map(|step| match step {
                Step::Kernel(kernel) => kernel.clone(),
                other => unreachable!("a row group holds kernels, not {other:?}"),
            })
            .collect();
        let mut later = &rest[members..];
        let made: Vec<VarId> = kernels.iter().map(|kernel| kernel.output.0).collect();
        let scatter_add = match later.first() {
            Some(Step::ScatterAdd { stmt, into })
                if Some(into) == made.last() && by_rows(program, block, *stmt, &made) =>
            {
                later = &later[1..];
                Some(*stmt)
            }
            _ => None,
        };
        // Decided after the scatter joins: its array may be a member the group alone reads
        // (the `-1/R` of softmax cross-entropy). The output it is added into is the group's.
        let last = kernels.len() - 1;
        let local = (kernels.iter().enumerate())
            .map(|(member, kernel)| {
                let added_into = scatter_add.is_some() && member == last;
                !added_into && !read_later(program, block, later, kernel.output.0)
            })
            .collect();
        let rows = kernels[0].out_shape()[0];
        grouped.push(Step::Rows(Rows {
            rows,
            kernels,
            local,
            scatter_add,
        }));
        rest = later;
    }
    grouped
}

/// Whether the scatter `stmt` of `block` sends each point to the row its first index names
/// (its index function's first result is its first param), and its index function reads
/// none of the group's outputs `made` (its array may be one): added into a member's output,
/// the points of a block of rows land in that block (Note [Row groups]).
fn by_rows(program: &Program, block: BlockId, stmt: usize, made: &[VarId]) -> bool {
    let Some(scatter) = Scatter::of(&program.blocks[block].stmts[stmt].expr) else {
        return false;
    };
    let mut reads = Vec::new();
    collect_uses(program, scatter.body, &mut reads);
    !reads.iter().any(|var| made.contains(var)) && scatter.keeps_first_index(program)
}

/// How many of the steps from the first make a row group (fewer than 2: none).
fn group_at(program: &Program, steps: &[Step]) -> usize {
    let Some(rows) = member_rows(program, &steps[0]) else {
        return 0;
    };
    let mut made: Vec<VarId> = Vec::new();
    let mut reads_member = Vec::new();
    for step in steps {
        let Step::Kernel(kernel) = step else { break };
        if member_rows(program, step) != Some(rows) {
            break;
        }
        match reads_of_members(kernel, &made) {
            Some(reads) => reads_member.push(reads),
            None => break,
        }
        made.push(kernel.output.0);
    }
    // The last member reads an earlier one's output (else it gains nothing here).
    let mut members = made.len();
    while members > 1 && !reads_member[members - 1] {
        members -= 1;
    }
    // The first member's output is read by a later member.
    let first = made[0];
    let first_read = steps[1..members].iter().any(|step| match step {
        Step::Kernel(kernel) => kernel.reads().contains(&first),
        _ => false,
    });
    // Some member has axes besides the rows, or the rows are too many for one member's
    // output to stay in cache until the next reads it.
    let wide = steps[..members].iter().any(|step| match step {
        Step::Kernel(kernel) => kernel.shape.len() > 1,
        _ => false,
    });
    if first_read && (wide || rows >= MIN_MAP_GROUP_ROWS) {
        members
    } else {
        0
    }
}

/// The row count of a step that can be a member of a row group (Note [Row groups]).
fn member_rows(program: &Program, step: &Step) -> Option<usize> {
    let Step::Kernel(kernel) = step else {
        return None;
    };
    let elem = kernel.nodes[kernel.output.1].1;
    match kernel.reduce {
        None | Some(Reduction::Sum) => {}
        Some(Reduction::Max | Reduction::Min) if matches!(elem, Elem::F32 | Elem::F64) => {}
        Some(_) => return None,
    }
    let rows = *kernel.out_shape().first()?;
    let points: usize = kernel.shape.iter().product();
    let line_axis = if kernel.reduce.is_some() {
        0
    } else {
        kernel.shape.len() - 1
    };
    // A map over the rows alone runs one line along the block's rows.
    let row_map = kernel.shape.len() == 1;
    if rows < 2 || (!row_map && points / rows < MIN_ROW_POINTS) || kernel.permutation().is_some() {
        return None;
    }
    let lines_contiguous = kernel.nodes.values().all(|(node, _)| match node {
        Node::Read { var, coords } => {
            let strides = row_major_strides(&program.var_ty(*var).shape);
            let step: i64 = coords
                .iter()
                .zip(strides)
                .map(|(coord, stride)| match coord {
                    Coord::Affine(affine)
                    | Coord::Masked(affine, _)
                    | Coord::Wrapped(affine, _) => affine.coeff(line_axis) * stride as i64,
                    Coord::Node(_) => 0,
                })
                .sum();
            matches!(step, 0 | 1)
        }
        _ => true,
    });
    lines_contiguous.then_some(rows)
}

/// Whether `kernel` reads any of the outputs `made` by earlier members, or `None` when it
/// reads one outside the row it computes.
fn reads_of_members(kernel: &Kernel, made: &[VarId]) -> Option<bool> {
    let row_axis = Rows::row_axis(kernel);
    let mut reads = false;
    for (node, _) in kernel.nodes.values() {
        let Node::Read { var, coords } = node else {
            continue;
        };
        if !made.contains(var) {
            continue;
        }
        let in_row = matches!(
            coords.first(),
            Some(Coord::Affine(affine)) if affine.constant == 0 && affine.terms == [(row_axis, 1)]
        );
        if !in_row {
            return None;
        }
        reads = true;
    }
    Some(reads)
}

/// Whether `var` is a result of `block` or read by one of the `later` steps.
fn read_later(program: &Program, block: BlockId, later: &[Step], var: VarId) -> bool {
    let result = program.blocks[block]
        .results
        .iter()
        .any(|result| var_of(*result) == Some(var));
    result
        || later
            .iter()
            .any(|step| step.reads(program, block).contains(&var))
}

//! Scatters added in place: `add y (scatter …)` computes `y` and adds the scattered values
//! into it, instead of materialising the mostly-zero scatter and reading it back (Note
//! [Scatters added in place]).

// Note [Scatters added in place]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The transpose of a gather is a scatter ([Smeding25] §6.3): the gradient of `x[r, label r]`
// scatters one value per row into a zero table as large as `x`, and the gradient of `x`
// adds that table to the rest. Materialised, it costs a zeroed table (a pass of writes) and
// its read in the sum (a pass of reads) for a handful of values.
//
// When a scatter's only reader is an elementwise kernel whose output is `add a b` with one
// operand the scatter read at the kernel's own coordinates (read nowhere else), the kernel
// reads zero there and a step after it (`Step::ScatterAdd`) adds the scattered rows into
// the kernel's output in place. The bits are the interpreter's when no two rows land on the
// same element: it computes `(0 + v) + y` where the kernel and the step compute
// `(0 + y) + v`; `+` is commutative, and `0 + z` only turns `-0` into `+0`, which `z + w`
// does not tell apart when the other operand is not `-0` (and both give `+0` when both are
// `-0`). A scatter whose index function returns each of its params as a coordinate of the
// target sends distinct points to distinct elements (injective by construction); only those
// are added in place, since colliding rows would add in another order. Out-of-range targets
// are dropped, as the scatter drops them. When `y` is never `-0` (Note [Sign-clear values]
// in `prim`: softmax cross-entropy's `exp(…) · (1/R) / Σ exp(…)`), `0 + y` is `y`, and the
// kernel computes `y` alone: one operation less a point.

use crate::core::ir::{BlockId, Program, Scalar, Scatter, VarId};
use crate::core::kernel::{Affine, Coord, Kernel, Node, NodeId, Step};
use crate::ops::sign::Defs;
use crate::prim::Prim;

/// `steps` (a schedule of `block`) with each scatter that its one reader can add in place
/// moved after that reader as a `Step::ScatterAdd`.
pub(super) fn add_scatters_in_place(
    program: &Program,
    block: BlockId,
    steps: Vec<Step>,
) -> Vec<Step> {
    let stmts = &program.blocks[block].stmts;
    let results = super::result_vars(program, block);
    let defs = Defs::of_block(program, block);
    let mut steps: Vec<Option<Step>> = steps.into_iter().map(Some).collect();
    // From the last step back: inserting a step after a reader shifts only steps already seen.
    for scatter_at in (0..steps.len()).rev() {
        let Some(Step::Stmt(index)) = steps[scatter_at] else {
            continue;
        };
        let stmt = &stmts[index];
        let Some(scatter) = Scatter::of(&stmt.expr) else {
            continue;
        };
        let var = stmt.binders[0];
        if results.contains(&var) || !scatter.returns_its_params(program) {
            continue;
        }
        let mut readers = (scatter_at + 1..steps.len()).filter(|&at| {
            steps[at]
                .as_ref()
                .is_some_and(|step| step.reads(program, block).contains(&var))
        });
        let (Some(reader_at), None) = (readers.next(), readers.next()) else {
            continue;
        };
        let Some(Step::Kernel(reader)) = &steps[reader_at] else {
            continue;
        };
        let Some(read) = added_read(reader, var) else {
            continue;
        };
        let mut kernel = reader.clone();
        let elem = kernel.nodes[read].1;
        kernel.nodes[read].0 = Node::Lit(Scalar::zero(elem));
        // `0 + y` is `y` when `y` is never `-0` (Note [Sign-clear values] in `prim`): the
        // softmax part of softmax cross-entropy's gradient.
        if let (Node::Prim(Prim::Add, operands), _) = &kernel.nodes[kernel.output.1] {
            let other = operands.iter().copied().find(|&operand| operand != read);
            if let Some(other) = other.filter(|&other| defs.node_clear(&kernel, other)) {
                kernel = kernel.with_output(other);
            }
        }
        let into = kernel.output.0;
        steps[reader_at] = Some(Step::Kernel(kernel));
        steps[scatter_at] = None;
        steps.insert(reader_at + 1, Some(Step::ScatterAdd { stmt: index, into }));
    }
    steps.into_iter().flatten().collect()
}

/// The node of `kernel` that reads `var`, when `kernel` is elementwise over `var`'s shape, its
/// output is `add` with that read as an operand, and nothing else reads `var` or uses the
/// read.
fn added_read(kernel: &Kernel, var: VarId) -> Option<NodeId> {
    if kernel.reduce.is_some() {
        return None;
    }
    let reads: Vec<NodeId> = kernel
        .nodes
        .iter()
        .filter(|(_, (node, _))| matches!(node, Node::Read { var: read, .. } if *read == var))
        .map(|(id, _)| id)
        .collect();
    let [read] = reads[..] else {
        return None;
    };
    let Node::Read { coords, .. } = &kernel.nodes[read].0 else {
        unreachable!("a read")
    };
    let identity = coords.len() == kernel.shape.len()
        && coords
            .iter()
            .enumerate()
            .all(|(axis, coord)| *coord == Coord::Affine(Affine::axis(axis)));
    let (Node::Prim(Prim::Add, operands), _) = &kernel.nodes[kernel.output.1] else {
        return None;
    };
    let uses = (kernel.nodes.values())
        .flat_map(|(node, _)| node.operands())
        .filter(|&operand| operand == read)
        .count();
    (identity && operands.contains(&read) && uses == 1).then_some(read)
}

//! Contractions as matrix products: a reduction kernel whose body is a sum of products of
//! reads (`as_matmul`), and such a kernel with the sums that read it (`sums_of_products`), as
//! one `MatMul` step (Note [Sums of products]).

// Note [Sums of products]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A variable read by several contractions gets, in the gradient, one cotangent that is the
// sum of their transposes: attention's `x` feeds the projections `q`, `k` and `v`, so its
// gradient is `Σ_h Σ_e (w_q[m, h, e] c_q[h, i, e] + w_k[m, h, e] c_k[h, i, e] + w_v[m, h, e]
// c_v[h, e, i])`: a kernel summing a sum of three products over `h` into `[e, i, m]`, then a
// kernel summing that over `e`. A product is recognised only alone and summed over one axis,
// so the first ran as a loop kernel of 4·32·256·128 points (31 of the gradient's 38 ms).
//
// Such a chain is one contraction, `out[o] = Σ_t Σ_{s ∈ S} lhs_t[s, o] * rhs_t[s, o]` over
// the axes `S` every kernel of the chain sums, and runs as matrix products accumulated into
// the output: the longest summed axis is their depth, each value of every other summed axis
// one more product added (`MatMul::summed`), and so is each term (`MatMul::more`). A term's
// operands are put in the order that makes the same axes its rows and its columns as the
// first term's (multiplication commutes exactly); a term whose axes do not split the same
// way, or a depth one operand does not read, is not a contraction. The sums then run in
// faer's order, not dx's: within the matrix-product bound, like every `MatMul` step.
//
// A chain is a reduction kernel (or a product already recognised) whose body is a sum of
// products of reads at affine coordinates, then sum kernels each reading only the one before
// it, at its own coordinates, where nothing else reads the sums between them and they are not
// results of the block (so they are no longer computed at all).

// Note [Slices of products]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A loop's step often multiplies a slice at its own position: an RNN's `Σ_i u[j, i] *
// xs[t, b, i]` reads row `t` of the input, and the reverse loop reads the stored carry of the
// step it undoes (`index carries [99 - k]`). Inlined like any view, the slice's read has a
// computed coordinate, clamped and masked (Note [Masked reads]), so the reduction is no
// product of affine reads and runs as a loop kernel: a 64×128×128 product a step on the lane
// interpreter. A slice at a run-time position that is an operand (through `replicate`s and
// `tr`s) of a product summed by a reduction big enough to be a matrix product is therefore
// materialised: a copy of the slice, read by the product at affine coordinates, so the
// reduction becomes a `MatMul`. The copy is at most `1/MATMUL_MIN_DEPTH` of the product's
// reads. A slice at literal positions is affine already.

use std::collections::HashSet;

use super::{Fuser, MATMUL_MIN_DEPTH, MATMUL_MIN_WORK};
use crate::core::ir::{Atom, BlockId, Elem, Program, VarId};
use crate::core::kernel::{
    Affine, Coord, Kernel, MatMul, MatOperand, Node, NodeId, Reduction, Step,
};
use crate::core::visit::var_of;
use crate::ops::sum_outer::{contraction_roles, AxisRole};
use crate::ops::{self, Element, Move};
use crate::prim::Prim;

/// A contraction being read off a chain of steps: its iteration space, the axes it sums
/// (axis 0 first), its terms and the variable it computes.
struct Chain {
    shape: Vec<usize>,
    summed: Vec<usize>,
    terms: Vec<(MatOperand, MatOperand)>,
    out: VarId,
    elem: Elem,
}

/// A reduction kernel `Σ_0` of a sum of products of reads as a (batched) matrix product, if
/// it is one and big enough to pay (`MATMUL_MIN_DEPTH`, `MATMUL_MIN_WORK`).
pub(super) fn as_matmul(program: &Program, kernel: &Kernel) -> Option<MatMul> {
    Chain::of_kernel(program, kernel)?.into_matmul()
}

/// `steps` with each chain of a contraction and the sums of it (Note [Sums of products]) as
/// one `MatMul` step, where the steps of `block` after it read only the chain's last sum.
pub(super) fn sums_of_products(program: &Program, block: BlockId, steps: Vec<Step>) -> Vec<Step> {
    let results: Vec<VarId> = (program.blocks[block].results.iter())
        .filter_map(|atom| var_of(*atom))
        .collect();
    let mut reads: Vec<Vec<VarId>> = steps
        .iter()
        .map(|step| step.reads(program, block))
        .collect();
    let mut steps: Vec<Option<Step>> = steps.into_iter().map(Some).collect();
    for start in 0..steps.len() {
        let chain = match &steps[start] {
            Some(Step::Kernel(kernel)) => Chain::of_kernel(program, kernel),
            Some(Step::MatMul(product)) => Chain::of_matmul(product),
            _ => None,
        };
        let Some(mut chain) = chain else {
            continue;
        };
        let mut merged = vec![start];
        loop {
            let last = *merged.last().expect("the chain's first step");
            let readers: Vec<usize> = (last + 1..steps.len())
                .filter(|&at| reads[at].contains(&chain.out))
                .collect();
            let [next] = readers[..] else { break };
            let Some(Step::Kernel(sum)) = &steps[next] else {
                break;
            };
            if results.contains(&chain.out) || !chain.absorb(sum) {
                break;
            }
            merged.push(next);
        }
        if merged.len() == 1 {
            continue; // one kernel: `as_matmul` has decided already
        }
        if let Some(product) = chain.into_matmul() {
            let last = merged.pop().expect("a chain of two steps or more");
            for at in merged {
                steps[at] = None;
            }
            let step = Step::MatMul(product);
            reads[last] = step.reads(program, block);
            steps[last] = Some(step);
        }
    }
    steps.into_iter().flatten().collect()
}

/// The slices at run-time positions that are operands of products big enough to be matrix
/// products (Note [Slices of products]): materialised, whatever their readers.
pub(super) fn sliced_operands(fuser: &Fuser) -> HashSet<VarId> {
    let (program, block) = (fuser.program, fuser.block);
    // How the statement that defines `var` computes an element, if it is a view or an
    // elementwise application.
    let element = |var: &VarId| {
        let at = *fuser.def.get(var)?;
        ops::operation(&block.stmts[at].expr).element()
    };
    // The variable a chain of views (`replicate`, `tr`, `reshape`) ending at `var` starts from.
    let through_views = |mut var: VarId| loop {
        match element(&var) {
            Some(Element::Moved {
                array: Atom::Var(inner),
                moved: Move::DropFirst { .. } | Move::Permute(_) | Move::Reshape(_),
            }) => var = inner,
            _ => return var,
        }
    };
    let mut sliced = HashSet::new();
    for stmt in &block.stmts {
        let Some((Atom::Var(summed), Reduction::Sum)) = ops::reduction_of(program, &stmt.expr)
        else {
            continue;
        };
        let shape = &program.var_ty(summed).shape;
        let work: usize = shape.iter().product();
        if shape.first().is_none_or(|&depth| depth < MATMUL_MIN_DEPTH) || work < MATMUL_MIN_WORK {
            continue;
        }
        let Some(Element::Apply(Prim::Mul, operands)) = element(&through_views(summed)) else {
            continue;
        };
        for operand in operands.iter().filter_map(|atom| var_of(*atom)) {
            let start = through_views(operand);
            if let Some(Element::Indexed { index, .. }) = element(&start) {
                let at_run_time = index.iter().any(|atom| matches!(atom, Atom::Var(_)));
                if at_run_time {
                    sliced.insert(start);
                }
            }
        }
    }
    sliced
}

impl Chain {
    /// A reduction kernel `Σ_0` of a sum of products of reads at affine coordinates.
    fn of_kernel(program: &Program, kernel: &Kernel) -> Option<Chain> {
        let out = kernel.output.0;
        let elem = program.var_ty(out).elem;
        if kernel.reduce != Some(Reduction::Sum) || !elem.is_float() {
            return None;
        }
        let mut terms = Vec::new();
        products(kernel, kernel.output.1, &mut terms)?;
        Some(Chain {
            shape: kernel.shape.clone(),
            summed: vec![0],
            terms,
            out,
            elem,
        })
    }

    /// A product already recognised, before anything was folded into it.
    fn of_matmul(product: &MatMul) -> Option<Chain> {
        if product.scale != 0 || !product.summed.is_empty() {
            return None;
        }
        Some(Chain {
            shape: product.shape.clone(),
            summed: vec![0],
            terms: product
                .terms()
                .map(|(l, r)| (l.clone(), r.clone()))
                .collect(),
            out: product.out,
            elem: product.elem,
        })
    }

    /// The chain's iteration axes that are its output's, in order.
    fn out_axes(&self) -> Vec<usize> {
        (0..self.shape.len())
            .filter(|axis| !self.summed.contains(axis))
            .collect()
    }

    /// Takes in `sum` if it sums the chain's output along its axis 0, reading it at its own
    /// coordinates and nothing else.
    fn absorb(&mut self, sum: &Kernel) -> bool {
        let out_axes = self.out_axes();
        let out_shape: Vec<usize> = out_axes.iter().map(|&axis| self.shape[axis]).collect();
        let reads_whole = match &sum.nodes[sum.output.1].0 {
            Node::Read { var, coords } => {
                *var == self.out
                    && coords.len() == sum.shape.len()
                    && (coords.iter().enumerate())
                        .all(|(axis, coord)| *coord == Coord::Affine(Affine::axis(axis)))
            }
            _ => false,
        };
        if sum.reduce != Some(Reduction::Sum) || sum.shape != out_shape || !reads_whole {
            return false;
        }
        self.summed.push(out_axes[0]);
        self.out = sum.output.0;
        true
    }

    /// The chain as one product: its longest summed axis the depth, its other summed axes
    /// accumulated, its terms' operands ordered alike (Note [Sums of products]).
    fn into_matmul(self) -> Option<MatMul> {
        let depth = (self.summed.iter().copied()).max_by_key(|&axis| (self.shape[axis], axis))?;
        // The depth becomes iteration axis 0, the others keep their order.
        let order: Vec<usize> = std::iter::once(depth)
            .chain((0..self.shape.len()).filter(|&axis| axis != depth))
            .collect();
        let mut moved = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            moved[old] = new;
        }
        let shape: Vec<usize> = order.iter().map(|&axis| self.shape[axis]).collect();
        let mut summed: Vec<usize> = (self.summed.iter())
            .filter(|&&axis| axis != depth)
            .map(|&axis| moved[axis])
            .collect();
        summed.sort_unstable();
        let out_axes: Vec<usize> = (1..shape.len()).filter(|a| !summed.contains(a)).collect();
        let mut roles: Option<Vec<AxisRole>> = None;
        let mut terms = Vec::with_capacity(self.terms.len());
        for (lhs, rhs) in &self.terms {
            let (lhs, rhs) = (renumbered(lhs, &moved), renumbered(rhs, &moved));
            let uses = |operand: &MatOperand, axis: usize| {
                operand.coords.iter().any(|affine| affine.coeff(axis) != 0)
            };
            let from: Vec<(bool, bool)> = std::iter::once(0)
                .chain(out_axes.iter().copied())
                .map(|axis| (uses(&lhs, axis), uses(&rhs, axis)))
                .collect();
            let these = contraction_roles(&from, 0)?;
            let swapped: Vec<AxisRole> = these.iter().map(|role| role.swapped()).collect();
            match &roles {
                None => {
                    roles = Some(these);
                    terms.push((lhs, rhs));
                }
                Some(first) if *first == these => terms.push((lhs, rhs)),
                Some(first) if *first == swapped => terms.push((rhs, lhs)),
                Some(_) => return None,
            }
        }
        let roles = roles?;
        let (mut lhs_axes, mut rhs_axes, mut batch_axes) = (Vec::new(), Vec::new(), Vec::new());
        for (&axis, role) in out_axes.iter().zip(roles.into_iter().skip(1)) {
            match role {
                AxisRole::Lhs => lhs_axes.push(axis),
                AxisRole::Rhs => rhs_axes.push(axis),
                AxisRole::Batch => batch_axes.push(axis),
                AxisRole::Contracted => return None,
            }
        }
        // A matrix product has one axis of each operand's own: the longest (the later of
        // equals), so that each product is as large as it can be. An operand's other own axes
        // run as batches in which the other operand stays the same (attention's projections
        // `Σ_m x[i, m] w[m, h, e]`: a product by `w[:, h, :]` for each head).
        let longest =
            |axes: &[usize]| (axes.iter().copied()).max_by_key(|&axis| (shape[axis], axis));
        let (m_axis, n_axis) = (longest(&lhs_axes), longest(&rhs_axes));
        let others = lhs_axes.into_iter().chain(rhs_axes);
        batch_axes.extend(others.filter(|&axis| Some(axis) != m_axis && Some(axis) != n_axis));
        batch_axes.sort_unstable();
        // A batch of dot products (no `m` or `n` axis) streams as well as a product would,
        // and keeps dx's summation order.
        let work = shape.iter().product::<usize>().saturating_mul(terms.len());
        if (m_axis, n_axis) == (None, None) || shape[0] < MATMUL_MIN_DEPTH || work < MATMUL_MIN_WORK
        {
            return None;
        }
        let mut terms = terms.into_iter();
        let (lhs, rhs) = terms.next()?;
        Some(MatMul {
            shape,
            out: self.out,
            elem: self.elem,
            lhs,
            rhs,
            m_axis,
            n_axis,
            batch_axes,
            scale: 0,
            more: terms.collect(),
            summed,
        })
    }
}

/// The two reads of a kernel `Σ_0 read(a) * read(b)` whose coordinates are affine.
pub(super) fn product_reads(kernel: &Kernel) -> Option<(MatOperand, MatOperand)> {
    if kernel.reduce != Some(Reduction::Sum) {
        return None;
    }
    let mut terms = Vec::new();
    products(kernel, kernel.output.1, &mut terms)?;
    match <[_; 1]>::try_from(terms) {
        Ok([product]) => Some(product),
        Err(_) => None,
    }
}

/// The products of reads whose sum is node `node` of `kernel`, pushed onto `terms`; `None`
/// when it is anything else.
fn products(
    kernel: &Kernel,
    node: NodeId,
    terms: &mut Vec<(MatOperand, MatOperand)>,
) -> Option<()> {
    let Node::Prim(prim, operands) = &kernel.nodes[node].0 else {
        return None;
    };
    if *prim == Prim::Add {
        products(kernel, operands[0], terms)?;
        products(kernel, operands[1], terms)
    } else if *prim == Prim::Mul {
        terms.push((read(kernel, operands[0])?, read(kernel, operands[1])?));
        Some(())
    } else {
        None
    }
}

/// Node `node` of `kernel` as a matrix operand: a read at affine coordinates.
fn read(kernel: &Kernel, node: NodeId) -> Option<MatOperand> {
    let Node::Read { var, coords } = &kernel.nodes[node].0 else {
        return None;
    };
    let coords = coords.iter().map(|coord| match coord {
        Coord::Affine(affine) => Some(affine.clone()),
        Coord::Node(_) | Coord::Masked(..) | Coord::Wrapped(..) => None,
    });
    Some(MatOperand {
        var: *var,
        coords: coords.collect::<Option<Vec<_>>>()?,
    })
}

/// `operand` with iteration axis `a` renamed `moved[a]`.
fn renumbered(operand: &MatOperand, moved: &[usize]) -> MatOperand {
    let coords = operand.coords.iter().map(|affine| {
        let mut terms: Vec<(usize, i64)> = affine
            .terms
            .iter()
            .map(|&(axis, coeff)| (moved[axis], coeff))
            .collect();
        terms.sort_unstable_by_key(|&(axis, _)| axis);
        Affine {
            constant: affine.constant,
            terms,
        }
    });
    MatOperand {
        var: operand.var,
        coords: coords.collect(),
    }
}

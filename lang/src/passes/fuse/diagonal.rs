//! Batches of dot products that are the diagonal of a matrix product already computed
//! (Note [Diagonals of products]).

// Note [Diagonals of products]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A batch of dot products `d[b, j] = Σ_n x[n, b, j] y[n, b, j]` stays a reduction kernel (it
// streams as fast as a product would, and keeps dx's summation order: `as_matmul`). But when
// the schedule computes, before it, the product `p[b, i, j] = Σ_n x[n, b, i] y[n, b, j]` of
// the same operands, `d` is `p`'s diagonal `p[b, j, j]`: the same products summed over the
// same axis, in the product's order. The gradient of a map through `diag(e^q) + L` makes
// both (ADBench's GMM: the gradient of `L` is the product, that of `q` the dot products; each
// reads two 256 MB arrays). The kernel becomes a read of the diagonal, so its values are
// the product's: within the matrix-product bound of dx's order, like every `MatMul` step.
//
// The kernel must be exactly `Σ_0 read x * read y` with affine coordinates, and a product
// earlier in the schedule must read the same variables (in either order) such that some
// map `σ` of the product's iteration axes onto the kernel's (axis 0, the summed one, to
// axis 0; the product's `m` and `n` axes to one kernel axis, its batch axes one to one)
// turns the product's coordinates into the kernel's.

use super::contraction::product_reads;
use crate::core::ids::IdVec;
use crate::core::kernel::{Affine, Coord, Kernel, MatMul, MatOperand, Node, Step};

/// `steps` with every batch of dot products that is the diagonal of an earlier `MatMul`
/// step's product replaced by a kernel reading that diagonal.
pub(super) fn reuse_products(steps: Vec<Step>) -> Vec<Step> {
    let mut done: Vec<Step> = Vec::with_capacity(steps.len());
    for step in steps {
        let diagonal = match &step {
            Step::Kernel(kernel) => done.iter().find_map(|earlier| match earlier {
                Step::MatMul(product) => diagonal_read(kernel, product),
                _ => None,
            }),
            _ => None,
        };
        done.push(diagonal.map_or(step, Step::Kernel));
    }
    done
}

/// The kernel reading `product`'s diagonal in place of `kernel`, if `kernel` is a batch of
/// dot products of `product`'s operands along its summed axis.
fn diagonal_read(kernel: &Kernel, product: &MatMul) -> Option<Kernel> {
    if !product.is_single() {
        return None;
    }
    let (x, y) = product_reads(kernel)?;
    let (m, n) = (product.m_axis?, product.n_axis?);
    let rank = product.shape.len();
    if kernel.shape.len() + 1 != rank || kernel.shape[0] != product.shape[0] {
        return None;
    }
    let reads_match = |sigma: &[usize]| {
        let lhs = substituted(&product.lhs, sigma);
        let rhs = substituted(&product.rhs, sigma);
        (lhs.as_ref(), rhs.as_ref()) == (Some(&x), Some(&y))
            || (lhs.as_ref(), rhs.as_ref()) == (Some(&y), Some(&x))
    };
    let sigma = axis_maps(kernel.shape.len(), rank, (m, n)).find(|sigma| {
        (1..rank).all(|axis| product.shape[axis] == kernel.shape[sigma[axis]]) && reads_match(sigma)
    })?;
    // The product's output axes are its iteration axes 1.. in order; the new kernel runs
    // over the kernel's output axes (its iteration axes 1.., renumbered from 0).
    let coords = (1..rank)
        .map(|axis| Coord::Affine(Affine::axis(sigma[axis] - 1)))
        .collect();
    let mut nodes = IdVec::new();
    let read = nodes.push((
        Node::Read {
            var: product.out,
            coords,
        },
        product.elem,
    ));
    Some(Kernel {
        shape: kernel.shape[1..].to_vec(),
        reduce: None,
        nodes,
        output: (kernel.output.0, read),
    })
}

/// Every map `σ` of the product's `rank` iteration axes onto the kernel's `kernel_rank`
/// (as the list of images): axis 0 to 0, `m` and `n` to one axis, every other axis to an
/// axis of its own.
fn axis_maps(
    kernel_rank: usize,
    rank: usize,
    (m, n): (usize, usize),
) -> impl Iterator<Item = Vec<usize>> {
    let free = rank - 1;
    let choices = (kernel_rank - 1).pow(free as u32);
    (0..choices).filter_map(move |mut code| {
        let mut sigma = vec![0; rank];
        for image in sigma.iter_mut().skip(1) {
            *image = 1 + code % (kernel_rank - 1);
            code /= kernel_rank - 1;
        }
        let one_to_one = (1..rank)
            .all(|a| (1..a).all(|b| sigma[a] != sigma[b] || (a, b) == (m, n) || (a, b) == (n, m)));
        (sigma[m] == sigma[n] && one_to_one).then_some(sigma)
    })
}

/// `operand` with each iteration axis `a` renamed `sigma[a]`, if no number overflows.
fn substituted(operand: &MatOperand, sigma: &[usize]) -> Option<MatOperand> {
    let coords = operand
        .coords
        .iter()
        .map(|affine| {
            affine
                .terms
                .iter()
                .try_fold(Affine::constant(affine.constant), |sum, &(axis, coeff)| {
                    Affine::axis(sigma[axis]).scaled_plus(coeff, &sum)
                })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(MatOperand {
        var: operand.var,
        coords,
    })
}

//! Scaled products: an operand of a matrix product that is another value doubled, or
//! multiplied by a power of two, is read as that value and the product scaled (Note [Scaled
//! products]).

// Note [Scaled products]
// ~~~~~~~~~~~~~~~~~~~~~~
// The gradient of `sum (A B)²` is `2 (A B) Bᵀ`: the cotangent of the square is `c + c` (the
// transpose of `c * c`), a kernel that reads the first product and writes a table as large
// (4 MB at 1024², a pass over memory), which only the second product reads. A map kernel
// whose body is `add r r` or `mul r 2^k` of a read `r` of a value `w` at the kernel's own
// point, whose output only matrix products read (no other step, not a result of the block),
// goes away: each product reads `w` instead and is scaled by `2^k` (`MatMul::scale`; faer's
// `alpha`). The read may permute the axes (`b[j, k] * 4.0` materialised as `[k, j]` for the
// product): the product then reads `w` at its coordinates permuted back. Scaling by a power
// of two is exact, so `Σ (2^k w) b = 2^k Σ w b` term by term and sum by sum, in any order
// the product adds in: the values are the kernel's, except where `2^k w` overflows or
// underflows and the product of the unscaled terms does not (or the reverse), which the
// product's bound does not cover either way.

use crate::core::ir::{BlockId, Program, Scalar, VarId};
use crate::core::kernel::{Kernel, MatMul, Node, Step};
use crate::prim::Prim;

/// `steps` with each map kernel of Note [Scaled products] folded into the products that read
/// its output.
pub(super) fn fold_scales(program: &Program, block: BlockId, mut steps: Vec<Step>) -> Vec<Step> {
    let results = super::result_vars(program, block);
    let mut index = 0;
    while index < steps.len() {
        let folded = match &steps[index] {
            Step::Kernel(kernel) => scaled_read(program, kernel)
                .filter(|_| !results.contains(&kernel.output.0))
                .filter(|_| read_by_products_only(program, block, &steps[index + 1..], kernel)),
            _ => None,
        };
        let Some(scaled) = folded else {
            index += 1;
            continue;
        };
        let Step::Kernel(kernel) = steps.remove(index) else {
            unreachable!("a kernel was found here")
        };
        for step in &mut steps[index..] {
            if let Step::MatMul(product) = step {
                rescale(product, kernel.output.0, &scaled);
            }
        }
    }
    steps
}

/// A map kernel's output as `2^scale` times `source` with its axes permuted: kernel axis `a`
/// is axis `axes[a]` of `source` (`Kernel::permuted_read`).
struct Scaled {
    source: VarId,
    axes: Vec<usize>,
    scale: i32,
}

/// The kernel as `Scaled` when it is a map whose body is `add r r` or `mul r c` (either
/// order) for a read `r` that permutes the axes of a value of the kernel's size, and a
/// literal `c = 2^k`.
fn scaled_read(program: &Program, kernel: &Kernel) -> Option<Scaled> {
    if kernel.reduce.is_some() {
        return None;
    }
    let permuted = |node| {
        let (source, axes) = kernel.permuted_read(node)?;
        let shape = &program.var_ty(source).shape;
        let same_extents = (axes.iter().zip(&kernel.shape)).all(|(&axis, &dim)| shape[axis] == dim);
        same_extents.then_some((source, axes))
    };
    let scaled = |(source, axes): (VarId, Vec<usize>), scale| Scaled {
        source,
        axes,
        scale,
    };
    let power = |node| match kernel.nodes[node].0 {
        Node::Lit(scalar) => power_of_two(scalar),
        _ => None,
    };
    match &kernel.nodes[kernel.output.1].0 {
        Node::Prim(Prim::Add, operands) if operands[0] == operands[1] => {
            Some(scaled(permuted(operands[0])?, 1))
        }
        Node::Prim(Prim::Mul, operands) => match (permuted(operands[0]), permuted(operands[1])) {
            (Some(read), None) => Some(scaled(read, power(operands[1])?)),
            (None, Some(read)) => Some(scaled(read, power(operands[0])?)),
            _ => None,
        },
        _ => None,
    }
}

/// `k` when `scalar` is the float `2^k` (a normal number, so that scaling by it is exact
/// wherever the result is normal).
fn power_of_two(scalar: Scalar) -> Option<i32> {
    let (value, normal) = match scalar {
        Scalar::F32(value) => (f64::from(value), value.is_normal()),
        Scalar::F64(value) => (value, value.is_normal()),
        _ => return None,
    };
    let exponent = value.log2().round() as i32;
    (normal && value == 2f64.powi(exponent)).then_some(exponent)
}

/// Whether every step of `later` that reads `kernel`'s output is a matrix product of one
/// term.
fn read_by_products_only(
    program: &Program,
    block: BlockId,
    later: &[Step],
    kernel: &Kernel,
) -> bool {
    let out = kernel.output.0;
    later.iter().all(|step| {
        // A scale multiplies every product the step adds (`MatMul::factor`): a term of
        // a sum of several cannot take it alone.
        matches!(step, Step::MatMul(product) if product.more.is_empty())
            || !step.reads(program, block).contains(&out)
    })
}

/// `product` reading the source of `scaled` wherever it read `var` (the kernel's output),
/// scaled to match.
fn rescale(product: &mut MatMul, var: VarId, scaled: &Scaled) {
    for operand in [&mut product.lhs, &mut product.rhs] {
        if operand.var == var {
            // The product's coordinate of kernel axis `a` is its coordinate of source axis
            // `axes[a]`.
            let mut coords = operand.coords.clone();
            for (coord, &axis) in operand.coords.iter().zip(&scaled.axes) {
                coords[axis] = coord.clone();
            }
            operand.var = scaled.source;
            operand.coords = coords;
            product.scale += scaled.scale;
        }
    }
}

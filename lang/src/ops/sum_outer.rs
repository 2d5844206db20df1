//! `sumOuter t` ([Smeding25] Fig 7): the sum along the outermost axis. Every rule in one place:
//!
//! - type rule: `result_ty` (called by `ops::verify`): `t` has rank ≥ 1 and a numeric
//!   element type;
//! - reference evaluation: `eval` (called by `ops::interp`), in dx's summation order
//!   (`prim::sum_order`, Note [Summation order]);
//! - batching ([Smeding25] Fig 9): `Batcher::batch_sum_outer`; an index pushed into it (Fig
//!   10): `push_index`;
//! - linearity: linear in its array (`ops::linearity`), so its JVP is `sumOuter` of the
//!   tangent ([Smeding25] §6.1); transpose: `Builder::transpose_sum_outer`, a `replicate`;
//! - cost: `cost`, one per input element (`reduce (+)` of [HuotShaikhha] Fig 11);
//! - fusion class: `Reduce` (a kernel whose body is its producer, summed over axis 0);
//! - contraction: `contraction_roles`, when a sum of a product is a matrix product (fusion)
//!   or a `dot_general` (export).

use std::collections::HashMap;

use super::ad::{self, AdResult, Builder, Derivs};
use super::batch::{Batcher, Status};
use super::build::IndexPush;
use super::bulk::{Bulk, Ran};
use super::hlo::{Exported, StableHlo};
use super::interp::{Interp, Res};
use super::rewrite::{Expand, Expansion, Rewrite, Rule};
use super::{layout, Element, FusionClass, Linearity, Move, Operation};
use crate::core::ir::{
    ArrTy, Atom, Elem, Expr, Index, PrimApp, Program, Replicate, Scalar, Stmt, SumOuter, Transpose,
    VarId,
};
use crate::core::value::Array;
use crate::ops::interp::from_scalars;
use crate::ops::verify::{atom_ty, expect_numeric};
use crate::prim::{sum_order, Prim};

/// The part an axis of a product `lhs * rhs` plays when the product is summed over one of its
/// axes, as a contraction (a matrix product, a `dot_general`) sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisRole {
    /// The summed axis, which comes from both operands.
    Contracted,
    /// An axis of both operands that is kept: a batch axis.
    Batch,
    /// An axis of the left operand only.
    Lhs,
    /// An axis of the right operand only.
    Rhs,
}

impl AxisRole {
    /// The role with the operands swapped.
    pub fn swapped(self) -> AxisRole {
        match self {
            AxisRole::Lhs => AxisRole::Rhs,
            AxisRole::Rhs => AxisRole::Lhs,
            role => role,
        }
    }
}

/// When the sum over axis `summed` of a product is a contraction, and the role of each of the
/// product's axes then, given whether each axis comes from the left and from the right
/// operand (`from[axis]`): the summed axis must come from both, every other from at least one
/// (an axis from neither is a broadcast of the product, which no contraction makes). The one
/// statement of what a contraction is: fusion's matrix products (`passes::fuse`, on a kernel's
/// reads) and the export's `dot_general` (`export::contract`, on chains of `replicate` and
/// `tr`) each find where the axes come from in their own IR and ask this.
pub fn contraction_roles(from: &[(bool, bool)], summed: usize) -> Option<Vec<AxisRole>> {
    from.iter()
        .enumerate()
        .map(|(axis, &(lhs, rhs))| match (axis == summed, lhs, rhs) {
            (true, true, true) => Some(AxisRole::Contracted),
            (false, true, true) => Some(AxisRole::Batch),
            (false, true, false) => Some(AxisRole::Lhs),
            (false, false, true) => Some(AxisRole::Rhs),
            (true, _, _) | (false, false, false) => None,
        })
        .collect()
}

pub fn result_ty(program: &Program, array: &Atom) -> Result<ArrTy, String> {
    let ty = atom_ty(program, array)?;
    if ty.rank() == 0 {
        return Err("sumOuter of a rank-0 array".to_string());
    }
    expect_numeric(ty.elem, "sumOuter")?;
    Ok(ArrTy::new(ty.shape[1..].to_vec(), ty.elem))
}

/// Sums along the outermost axis in dx's summation order (`prim::sum_order`), each element of
/// the rest independently; an empty outermost axis gives zeros.
pub fn eval(array: &Array) -> Array {
    let (&n_rows, rest) = array
        .shape
        .split_first()
        .expect("sumOuter of a rank-0 array");
    let n_sub: usize = rest.iter().product();
    let zero = Scalar::zero(array.elem());
    let add = |a: Scalar, b: Scalar| Prim::Add.eval(&[a, b]);
    let mut column = Vec::with_capacity(n_rows);
    let out = (0..n_sub)
        .map(|offset| {
            column.clear();
            column.extend((0..n_rows).map(|row| array.data.get(row * n_sub + offset)));
            sum_order::tree_sum(&column, zero, add)
        })
        .collect();
    from_scalars(rest.to_vec(), array.elem(), out)
}

/// One addition per input element.
pub fn cost(program: &Program, array: &Atom) -> u64 {
    program.atom_ty(array).n_elems() as u64
}

impl Batcher<'_> {
    /// Fig 9: build1 k (λi. sumOuter t) ~> sumOuter (tr (build1 k (λi. t))).
    pub(crate) fn batch_sum_outer(&mut self, array: Atom, binder: VarId) -> Status {
        let bulk = self.force_atom(array);
        let ty = self.program.var_ty(bulk).clone();
        let mut shape = ty.shape.clone();
        shape.swap(0, 1);
        let swapped = self.emit1(
            Expr::from(Transpose {
                perm: vec![1, 0],
                array: Atom::Var(bulk),
            }),
            ArrTy::new(shape, ty.elem),
            "tr",
        );
        let (res_ty, hint) = self.batched_binder(binder);
        Status::Batched(self.emit1(Expr::from(SumOuter(Atom::Var(swapped))), res_ty, &hint))
    }
}

impl Builder<'_> {
    /// sumOuter and replicate are each other's transposes.
    pub(crate) fn transpose_sum_outer(
        &mut self,
        array: Atom,
        ct: Atom,
        cts: &mut HashMap<VarId, Atom>,
    ) {
        self.add_transposed(cts, array, |_, ty| {
            Expr::from(Replicate {
                count: ty.shape[0],
                array: ct,
            })
        });
    }
}

/// index (sumOuter t) ix ~> sumOuter (index (tr_(1..n,0) t) ix) (exact: zeros sum to 0; Note
/// [Pushing index down] in `ops::build`).
pub fn push_index(cx: &mut super::build::IndexPush, inner: Atom, index: &[Atom]) -> Option<Expr> {
    let inner_ty = cx.program.atom_ty(&inner);
    let n = index.len();
    let mut perm: Vec<usize> = (1..=n).collect();
    perm.push(0);
    let mut moved_shape: Vec<usize> = inner_ty.shape[1..=n].to_vec();
    moved_shape.push(inner_ty.shape[0]);
    moved_shape.extend(&inner_ty.shape[n + 1..]);
    let moved = cx.emit(
        Expr::from(Transpose { perm, array: inner }),
        ArrTy::new(moved_shape.clone(), inner_ty.elem),
        "tr",
    );
    let rows_ty = ArrTy::new(moved_shape[n..].to_vec(), inner_ty.elem);
    let rows = cx.emit(
        Expr::from(Index {
            array: moved,
            index: index.to_vec(),
        }),
        rows_ty,
        "ix",
    );
    Some(Expr::from(SumOuter(rows)))
}

impl Operation for SumOuter {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![result_ty(program, &self.0)?])
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![eval(&interp.atom(&self.0))])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_sum_outer(self.0, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        ad::jvp_structural(builder, stmt, tangents)
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_sum_outer(self.0, ct, cts);
        }
        Ok(())
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        cost(program, &self.0)
    }

    fn linearity(&self) -> Linearity {
        Linearity::Structural(vec![true])
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Reduce
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.sum_leading(&self.0)
    }

    fn expand(&self, cx: &mut Expand, stmt: &Stmt) -> Option<Expansion> {
        let summed = sum_of_sums(cx, self, stmt)?;
        cx.fire(Rule::SumOfSums);
        Some(Expansion::Stmts(summed))
    }

    /// `stablehlo.reduce` with an `add` body over axis 0 (a `sumOuter` that is a contraction
    /// is the exporter's `dot_general` and never gets here).
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let array = cx.atom(&self.0)?;
        Ok(vec![cx.reduce_sum(&array, &[0])?])
    }

    fn push_index(&self, cx: &mut IndexPush, _: VarId, index: &[Atom]) -> Option<Expr> {
        push_index(cx, self.0, index)
    }

    /// A sum of sign-clear values is sign-clear (`+0` when empty).
    fn sign_clear(&self, clear: &mut dyn FnMut(&Atom) -> bool) -> bool {
        clear(&self.0)
    }

    /// An integer `sumOuter` of a replicated scalar is a product (integer addition is exact,
    /// also when it wraps; a float sum of copies is not).
    fn simplify(&self, cx: &Rewrite) -> Option<(Rule, Expr)> {
        let Some(Element::Moved {
            array: scalar,
            moved: Move::DropFirst { count },
        }) = super::operation(cx.def(&self.0)?).element()
        else {
            return None;
        };
        let ty = cx.program.atom_ty(&scalar);
        let integer = !ty.elem.is_float() && ty.elem != Elem::Bool;
        (integer && ty.rank() == 0).then(|| {
            let count = crate::prim::cast_scalar(Scalar::I64(count as i64), ty.elem);
            (
                Rule::IntegerSumOfReplicate,
                Expr::from(PrimApp(Prim::Mul, vec![scalar, Atom::Lit(count)])),
            )
        })
    }
}

/// A sum of sums, `sum_outer (tr p₂ (sum_outer (tr p₁ x)))` (`for i j. sum for a. sum for b.
/// x[i, j, a, b]` after the BOT: each `sum` brings its axis to the front and sums it), is one
/// transpose that brings every summed axis to the front, in the order they are summed, and
/// the sums: `sum_outer (sum_outer (tr [b, a, i, j] x))`. Same additions in the same order
/// (each axis is still summed alone, the inner one first), and the result's axes come last
/// and in order, so fuse's kernels run their lines along the result's contiguous last axis
/// (a convolution's `j`, where `x[i + a, j + b]` is a run) instead of along the summed axis
/// that the inner sum left last. Applies where the inner sums have no other reader and some
/// transpose between the sums moves an axis (otherwise the chain is already in this form).
fn sum_of_sums(cx: &mut Expand, sum: &SumOuter, stmt: &Stmt) -> Option<Vec<Stmt>> {
    let (SumOuter(outer), [binder]) = (sum, &stmt.binders[..]) else {
        return None;
    };
    // The permutation before each sum, outermost first, down to the summed table.
    let mut perms: Vec<&[usize]> = Vec::new();
    let mut current = *outer;
    let source = loop {
        let element = cx
            .def(&current)
            .and_then(|def| super::operation(def).element());
        let (perm, inner) = match element {
            Some(Element::Moved {
                array,
                moved: Move::Permute(perm),
            }) if cx.single_use(&current) => (perm, array),
            _ => (&[][..], current),
        };
        perms.push(perm);
        match cx.def(&inner) {
            Some(Expr::SumOuter(SumOuter(arg))) if cx.single_use(&inner) => current = *arg,
            _ => break inner,
        }
    };
    let moved = perms[..perms.len() - 1]
        .iter()
        .any(|perm| !layout::is_identity(perm));
    if perms.len() < 2 || !moved {
        return None;
    }
    let program = &mut *cx.program;
    let source_ty = program.atom_ty(&source);
    let mut axes: Vec<usize> = (0..source_ty.rank()).collect();
    let mut summed = Vec::new();
    for perm in perms.iter().rev() {
        let at = |axis: usize| perm.get(axis).copied().unwrap_or(axis);
        axes = (0..axes.len()).map(|axis| axes[at(axis)]).collect();
        summed.push(axes.remove(0));
    }
    summed.extend(axes);
    let perm = summed;
    let shape: Vec<usize> = perm.iter().map(|&axis| source_ty.shape[axis]).collect();
    let transposed = program.new_var(ArrTy::new(shape.clone(), source_ty.elem), "tr");
    let mut stmts = vec![Stmt {
        binders: vec![transposed],
        expr: Expr::from(Transpose {
            perm,
            array: source,
        }),
    }];
    let mut partial = transposed;
    for depth in 1..perms.len() {
        let ty = ArrTy::new(shape[depth..].to_vec(), source_ty.elem);
        let var = program.new_var(ty, "sum");
        stmts.push(Stmt {
            binders: vec![var],
            expr: Expr::from(SumOuter(Atom::Var(partial))),
        });
        partial = var;
    }
    stmts.push(Stmt {
        binders: vec![*binder],
        expr: Expr::from(SumOuter(Atom::Var(partial))),
    });
    Some(stmts)
}

#[cfg(test)]
mod tests {
    use super::{contraction_roles, AxisRole};

    /// `Σ_j a[i,j] * b[j,k]` over the product's axes (j, i, k) is a contraction; a batch axis
    /// comes from both; a summed axis of one operand only, or a broadcast axis, is not one.
    #[test]
    fn a_summed_product_is_a_contraction_when_each_axis_comes_from_an_operand() {
        use AxisRole::{Batch, Contracted, Lhs, Rhs};
        let matmul = [(true, true), (true, false), (false, true)];
        assert_eq!(
            contraction_roles(&matmul, 0),
            Some(vec![Contracted, Lhs, Rhs])
        );
        let batched = [(true, true), (true, true), (true, false)];
        assert_eq!(
            contraction_roles(&batched, 0),
            Some(vec![Contracted, Batch, Lhs])
        );
        assert_eq!(contraction_roles(&[(true, false), (false, true)], 0), None);
        assert_eq!(contraction_roles(&[(true, true), (false, false)], 0), None);
        assert_eq!(
            contraction_roles(&[(true, false), (true, true)], 1),
            Some(vec![Lhs, Contracted])
        );
    }
}

//! `replicate k t`, `tr_perm t` and `reshape sh t` ([Smeding25] Fig 7): the operations that move
//! elements without computing any. Every rule of the three in one place:
//!
//! - type rule: `replicate_ty`, `transpose_ty`, `reshape_ty` (called by `ops::verify`);
//! - reference evaluation: `eval_replicate`, `eval_transpose`, `eval_reshape` (called by
//!   `ops::interp`);
//! - batching ([Smeding25] Fig 9): `Batcher::batch_replicate`, `batch_transpose`,
//!   `batch_reshape`; an index pushed into a replicate (Fig 10): `push_into_replicate`;
//! - linearity: each is linear in its array (`ops::linearity`), so its JVP is the operation
//!   itself on the tangent ([Smeding25] §6.1, `ops::ad`'s `jvp_linear`); transpose ([Smeding25]
//!   Fig 19): `Builder::transpose_replicate` (a `sumOuter`), `transpose_transpose` (the
//!   inverse permutation), `transpose_reshape` (a reshape back);
//! - cost: the elements of the result (data movement, like Fig 11's shift1L/shift1R;
//!   `ops::cost`);
//! - fusion class: `View` (the fuser recomputes coordinates: `replicate` drops one, `tr`
//!   permutes them, `reshape` recomputes them from the flat offset).

use std::collections::HashMap;

use super::ad::{self, AdResult, Builder, Derivs};
use super::batch::{Batcher, Status};
use super::build::IndexPush;
use super::bulk::{Bulk, Ran};
use super::hlo::{i64_array, Exported, StableHlo};
use super::interp::{Interp, Res};
use super::rewrite::{Rewrite, Rule};
use super::{Element, FusionClass, Linearity, Move, Operation};
use crate::core::ir::{
    ArrTy, Atom, Expr, Index, Program, Replicate, Reshape, Stmt, SumOuter, Transpose, VarId,
};
use crate::core::print::ty_text;
use crate::core::value::{Array, ArrayData};
use crate::ops::interp::{append_range, ravel, unravel};
use crate::ops::verify::{atom_ty, prepend};

/// `replicate k t`: `k ::: shape t`.
pub fn replicate_ty(program: &Program, count: usize, array: &Atom) -> Result<ArrTy, String> {
    Ok(prepend(count, atom_ty(program, array)?))
}

/// `tr perm t`: `perm` is a permutation of `0..m` with m ≤ rank `t`.
pub fn transpose_ty(program: &Program, perm: &[usize], array: &Atom) -> Result<ArrTy, String> {
    let ty = atom_ty(program, array)?;
    let mut seen = vec![false; perm.len()];
    for &axis in perm {
        match seen.get_mut(axis) {
            Some(slot) if !*slot => *slot = true,
            _ => return Err(format!("tr {perm:?} is not a permutation")),
        }
    }
    if perm.len() > ty.rank() {
        return Err(format!("tr {perm:?} of a rank-{} array", ty.rank()));
    }
    let mut shape = ty.shape.clone();
    for (axis, &from) in perm.iter().enumerate() {
        shape[axis] = ty.shape[from];
    }
    Ok(ArrTy::new(shape, ty.elem))
}

/// `reshape sh t`: equal element counts.
pub fn reshape_ty(program: &Program, shape: &[usize], array: &Atom) -> Result<ArrTy, String> {
    let ty = atom_ty(program, array)?;
    let n_elems: usize = shape.iter().product();
    if n_elems != ty.n_elems() {
        return Err(format!(
            "reshape {shape:?} ({n_elems} elements) of {} ({} elements)",
            ty_text(&ty),
            ty.n_elems()
        ));
    }
    Ok(ArrTy::new(shape.to_vec(), ty.elem))
}

pub fn eval_replicate(count: usize, array: &Array) -> Array {
    let mut out = ArrayData::with_capacity(array.elem(), count * array.n_elems());
    for _ in 0..count {
        append_range(&array.data, 0..array.n_elems(), &mut out);
    }
    let mut shape = vec![count];
    shape.extend_from_slice(&array.shape);
    Array::new(shape, out)
}

/// `tr_perm`: result axis `a` is input axis `perm[a]` for `a < perm.len()`; the rest stay.
pub fn eval_transpose(perm: &[usize], array: &Array) -> Array {
    let mut shape = array.shape.clone();
    for (axis, &from) in perm.iter().enumerate() {
        shape[axis] = array.shape[from];
    }
    let n_elems = array.n_elems();
    let mut out = ArrayData::with_capacity(array.elem(), n_elems);
    let mut in_index = vec![0i64; shape.len()];
    for flat in 0..n_elems {
        let out_index = unravel(flat, &shape);
        in_index.copy_from_slice(&out_index);
        for (axis, &from) in perm.iter().enumerate() {
            in_index[from] = out_index[axis];
        }
        let in_flat = ravel(&in_index, &array.shape).expect("transposed index is in range");
        out.push(array.data.get(in_flat));
    }
    Array::new(shape, out)
}

/// `reshape`: the same row-major data under another shape.
pub fn eval_reshape(shape: &[usize], array: Array) -> Array {
    Array {
        shape: shape.to_vec(),
        data: array.data,
    }
}

impl Batcher<'_> {
    /// Fig 9: build1 k (λi. replicate n t) ~> tr (replicate n (build1 k (λi. t))).
    pub(crate) fn batch_replicate(&mut self, count: usize, array: Atom, binder: VarId) -> Status {
        let bulk = self.force_atom(array);
        let (res_ty, hint) = self.batched_binder(binder);
        let mut rep_shape = res_ty.shape.clone();
        rep_shape.swap(0, 1);
        let rep = self.emit1(
            Expr::from(Replicate {
                count,
                array: Atom::Var(bulk),
            }),
            ArrTy::new(rep_shape, res_ty.elem),
            "rep",
        );
        Status::Batched(self.emit1(
            Expr::from(Transpose {
                perm: vec![1, 0],
                array: Atom::Var(rep),
            }),
            res_ty,
            &hint,
        ))
    }

    /// Fig 9: build1 k (λi. tr_b t) ~> tr_(0, b+1) (build1 k (λi. t)).
    pub(crate) fn batch_transpose(&mut self, perm: &[usize], array: Atom, binder: VarId) -> Status {
        let bulk = self.force_atom(array);
        let mut new_perm = vec![0];
        new_perm.extend(perm.iter().map(|axis| axis + 1));
        let (res_ty, hint) = self.batched_binder(binder);
        Status::Batched(self.emit1(
            Expr::from(Transpose {
                perm: new_perm,
                array: Atom::Var(bulk),
            }),
            res_ty,
            &hint,
        ))
    }

    /// Fig 9: build1 k (λi. reshape sh t) ~> reshape (k:::sh) (build1 k (λi. t)).
    pub(crate) fn batch_reshape(&mut self, shape: &[usize], array: Atom, binder: VarId) -> Status {
        let bulk = self.force_atom(array);
        let mut new_shape = vec![self.size];
        new_shape.extend(shape);
        let (res_ty, hint) = self.batched_binder(binder);
        Status::Batched(self.emit1(
            Expr::from(Reshape {
                shape: new_shape,
                array: Atom::Var(bulk),
            }),
            res_ty,
            &hint,
        ))
    }
}

impl Builder<'_> {
    /// sumOuter and replicate are each other's transposes.
    pub(crate) fn transpose_replicate(
        &mut self,
        array: Atom,
        ct: Atom,
        cts: &mut HashMap<VarId, Atom>,
    ) {
        self.add_transposed(cts, array, |_, _| Expr::from(SumOuter(ct)));
    }

    /// The transpose of `tr perm` is `tr` by the inverse permutation.
    pub(crate) fn transpose_transpose(
        &mut self,
        perm: &[usize],
        array: Atom,
        ct: Atom,
        cts: &mut HashMap<VarId, Atom>,
    ) {
        let mut inverse = vec![0; perm.len()];
        for (axis, source) in perm.iter().enumerate() {
            inverse[*source] = axis;
        }
        self.add_transposed(cts, array, |_, _| {
            Expr::from(Transpose {
                perm: inverse,
                array: ct,
            })
        });
    }

    /// The transpose of a reshape is the reshape back to the operand's shape.
    pub(crate) fn transpose_reshape(
        &mut self,
        array: Atom,
        ct: Atom,
        cts: &mut HashMap<VarId, Atom>,
    ) {
        self.add_transposed(cts, array, |_, ty| {
            Expr::from(Reshape {
                shape: ty.shape.clone(),
                array: ct,
            })
        });
    }
}

/// index (replicate k t) (u:ix) ~> index t ix, for u in range (Note [Pushing index down] in
/// `ops::build`).
pub fn push_into_replicate(
    cx: &super::build::IndexPush,
    count: usize,
    inner: Atom,
    index: &[Atom],
) -> Option<Expr> {
    cx.in_range(&index[0], count).then(|| {
        Expr::from(Index {
            array: inner,
            index: index[1..].to_vec(),
        })
    })
}

/// The rules the views `replicate`, `tr` and `reshape` share: they move their one operand's
/// elements (a structural linear operation whose JVP is itself on the tangent, costing an
/// element moved per element of the result, inlined into its readers, with its operand's
/// sign).
macro_rules! view_rules {
    () => {
        fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
            ad::jvp_structural(builder, stmt, tangents)
        }

        fn cost(&self, _: &Program, result_elems: u64) -> u64 {
            result_elems
        }

        fn linearity(&self) -> Linearity {
            Linearity::Structural(vec![true])
        }

        fn fusion_class(&self, _: &Program) -> FusionClass {
            FusionClass::View
        }

        /// It only moves its operand's elements.
        fn sign_clear(&self, clear: &mut dyn FnMut(&Atom) -> bool) -> bool {
            clear(&self.array)
        }
    };
}

impl Operation for Replicate {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![replicate_ty(program, self.count, &self.array)?])
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![eval_replicate(self.count, &interp.atom(&self.array))])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_replicate(self.count, self.array, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_replicate(self.array, ct, cts);
        }
        Ok(())
    }

    view_rules!();

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.replicate(self.count, &self.array)
    }

    /// `stablehlo.broadcast_in_dim` over a new outer axis.
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let val = cx.atom(&self.array)?;
        Ok(vec![cx.broadcast_leading(&val, &[self.count])])
    }

    fn recompute_factor(&self, _: &Program) -> usize {
        self.count
    }

    fn push_index(&self, cx: &mut IndexPush, _: VarId, index: &[Atom]) -> Option<Expr> {
        push_into_replicate(cx, self.count, self.array, index)
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::Moved {
            array: self.array,
            moved: Move::DropFirst { count: self.count },
        })
    }
}

impl Operation for Transpose {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![transpose_ty(program, &self.perm, &self.array)?])
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![eval_transpose(&self.perm, &interp.atom(&self.array))])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_transpose(&self.perm, self.array, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_transpose(&self.perm, self.array, ct, cts);
        }
        Ok(())
    }

    view_rules!();

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.transpose(&self.perm, &self.array)
    }

    /// `stablehlo.transpose` (the permutation completed with the axes it leaves in place).
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let val = cx.atom(&self.array)?;
        let mut full = self.perm.clone();
        full.extend(self.perm.len()..val.ty.rank());
        let shape: Vec<usize> = full.iter().map(|&axis| val.ty.shape[axis]).collect();
        let attrs = format!("{{permutation = {}}}", i64_array(&full));
        let ty = ArrTy::new(shape, val.ty.elem);
        Ok(vec![cx.op("stablehlo.transpose", &[&val], &attrs, ty)])
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::Moved {
            array: self.array,
            moved: Move::Permute(&self.perm),
        })
    }

    /// `tr` of the identity is its operand; `tr` of `tr` is one `tr` (none when the
    /// composition is the identity).
    fn simplify(&self, cx: &Rewrite) -> Option<(Rule, Expr)> {
        if is_identity(&self.perm) {
            return Some((Rule::IdentityTranspose, Expr::from(self.array)));
        }
        let Some(Expr::Transpose(Transpose {
            perm: inner,
            array: source,
        })) = cx.def(&self.array)
        else {
            return None;
        };
        // Result axis a is axis perm[a] of the inner result, which is source axis
        // inner[perm[a]] (axes past a permutation's length stay where they are).
        let rank = self.perm.len().max(inner.len());
        let at = |perm: &[usize], axis: usize| perm.get(axis).copied().unwrap_or(axis);
        let composed: Vec<usize> = (0..rank)
            .map(|axis| at(inner, at(&self.perm, axis)))
            .collect();
        Some(if is_identity(&composed) {
            (Rule::TransposeOfTranspose, Expr::from(*source))
        } else {
            (
                Rule::TransposeOfTranspose,
                Expr::from(Transpose {
                    perm: composed,
                    array: *source,
                }),
            )
        })
    }
}

impl Operation for Reshape {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![reshape_ty(program, &self.shape, &self.array)?])
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![eval_reshape(&self.shape, interp.atom(&self.array))])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_reshape(&self.shape, self.array, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_reshape(self.array, ct, cts);
        }
        Ok(())
    }

    view_rules!();

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.reshape(&self.shape, &self.array)
    }

    /// `stablehlo.reshape`.
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let val = cx.atom(&self.array)?;
        let ty = ArrTy::new(self.shape.clone(), val.ty.elem);
        Ok(vec![cx.op("stablehlo.reshape", &[&val], "", ty)])
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::Moved {
            array: self.array,
            moved: Move::Reshape(&self.shape),
        })
    }

    /// `reshape` to the operand's own shape is the operand; `reshape` of `reshape` is one.
    fn simplify(&self, cx: &Rewrite) -> Option<(Rule, Expr)> {
        if cx.program.atom_ty(&self.array).shape == self.shape {
            return Some((Rule::IdentityReshape, Expr::from(self.array)));
        }
        match cx.def(&self.array) {
            Some(Expr::Reshape(Reshape { array: source, .. })) => Some((
                Rule::ReshapeOfReshape,
                Expr::from(Reshape {
                    shape: self.shape.clone(),
                    array: *source,
                }),
            )),
            _ => None,
        }
    }
}

/// Whether a permutation leaves every axis where it is.
pub fn is_identity(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(axis, &from)| axis == from)
}

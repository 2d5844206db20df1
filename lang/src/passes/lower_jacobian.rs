//! Lowering of `jacobian` and `hessian` (docs/language.md), as JAX's: the argument and the
//! result may be floats, tables of floats or tuples of those. The result holds one block per
//! (output table, input table) pair, `out_shape => in_shape => element`, in a tuple per output
//! of a tuple per input (`check::builtins::jacobian_ty` gives its type).
//!
//! Each block row (reverse mode) or column (forward mode) is the derivative seeded with a unit
//! direction, inside a `for` that the BOT vectorises (the primal part does not depend on the
//! direction and is hoisted out): one `for` per table of the seed. Reverse mode is used unless
//! the input has fewer elements than the output. `hessian f x` is the Jacobian of `grad f`.

use super::lower::{bug, error, Lowerer, Result, SVal};
use super::lower_ad::Signature;
use crate::check::builtins::{AdOp, Builtin};
use crate::check::types::Ty;
use crate::core::ir::{AdMode, ArrTy, Atom, Build1, Elem, Expr, Iota, Reshape, Scalar, Transpose};
use crate::prim::Prim;
use crate::syntax::Span;

impl Lowerer<'_> {
    /// `jacobian f x` for `f : sig.arg -> sig.out`, of type `result_ty`.
    pub(super) fn jacobian(
        &mut self,
        func: SVal,
        x: &SVal,
        sig: &Signature,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let in_leaves = self.leaf_types(&sig.arg, span)?;
        let out_leaves = self.leaf_types(&sig.out, span)?;
        if in_leaves
            .iter()
            .chain(&out_leaves)
            .any(|leaf| !leaf.elem.is_float())
        {
            return error(
                span,
                format!(
                    "`jacobian` differentiates a function from floats to floats (tables and \
                     tuples of floats included), not from {} to {}",
                    sig.arg, sig.out
                ),
            );
        }
        let n_elems = |leaves: &[ArrTy]| leaves.iter().map(ArrTy::n_elems).sum::<usize>();
        let forward = n_elems(&in_leaves) < n_elems(&out_leaves);
        let mut blocks: Vec<Vec<Option<Atom>>> =
            vec![vec![None; in_leaves.len()]; out_leaves.len()];
        if forward {
            for (in_idx, in_leaf) in in_leaves.iter().enumerate() {
                let columns = self.stacked_derivatives(AdMode::Jvp, &func, x, sig, in_idx, span)?;
                for (out_idx, column) in columns.into_iter().enumerate() {
                    let out_leaf = &out_leaves[out_idx];
                    // [in_i…, out_j…] to [out_j…, in_i…].
                    let in_rank = in_leaf.shape.len();
                    let rank = in_rank + out_leaf.shape.len();
                    let perm: Vec<usize> = (in_rank..rank).chain(0..in_rank).collect();
                    let column = self.reshaped(column, in_leaf, out_leaf, span);
                    let shape: Vec<usize> = out_leaf
                        .shape
                        .iter()
                        .chain(&in_leaf.shape)
                        .copied()
                        .collect();
                    let block = if in_rank == 0 || rank == in_rank {
                        column
                    } else {
                        self.emit1(
                            Expr::from(Transpose {
                                perm,
                                array: column,
                            }),
                            ArrTy::new(shape, out_leaf.elem),
                            "jacobian",
                            span,
                        )
                    };
                    blocks[out_idx][in_idx] = Some(block);
                }
            }
        } else {
            for (out_idx, out_leaf) in out_leaves.iter().enumerate() {
                let rows = self.stacked_derivatives(AdMode::Vjp, &func, x, sig, out_idx, span)?;
                for (in_idx, row) in rows.into_iter().enumerate() {
                    blocks[out_idx][in_idx] =
                        Some(self.reshaped(row, out_leaf, &in_leaves[in_idx], span));
                }
            }
        }
        let mut leaves = Vec::new();
        for block in blocks.into_iter().flatten() {
            match block {
                Some(block) => leaves.push(block),
                None => return bug(span, "a block of a Jacobian was not computed"),
            }
        }
        Ok(self.assemble(result_ty, leaves))
    }

    /// `hessian f x`: the Jacobian of `grad f` at `x` (`sig.out` must be a float scalar,
    /// which `grad` checks).
    pub(super) fn hessian(
        &mut self,
        func: SVal,
        func_ty: &Ty,
        x: &SVal,
        sig: &Signature,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let grad_f = SVal::Partial {
            builtin: Builtin::Ad(AdOp::Grad),
            args: vec![func],
            ty: Ty::funs(vec![func_ty.clone(), sig.arg.clone()], sig.arg.clone()),
            span,
        };
        let grad_sig = Signature {
            arg: sig.arg.clone(),
            out: sig.arg.clone(),
        };
        self.jacobian(grad_f, x, &grad_sig, result_ty, span)
    }

    /// The derivatives of `func` at `x` seeded with each unit direction of table `seed_idx` of
    /// the seed (a cotangent of the result in reverse mode, a tangent of the argument in
    /// forward mode; its other tables zero), stacked along a new outer axis: one array per
    /// table of the derived value, of shape `[size of the seed's table, table shape…]`.
    fn stacked_derivatives(
        &mut self,
        mode: AdMode,
        func: &SVal,
        x: &SVal,
        sig: &Signature,
        seed_idx: usize,
        span: Span,
    ) -> Result<Vec<Atom>> {
        let (seed_ty, derived_ty) = match mode {
            AdMode::Vjp => (&sig.out, &sig.arg),
            AdMode::Jvp => (&sig.arg, &sig.out),
        };
        let seed_leaves = self.leaf_types(seed_ty, span)?;
        let derived_leaves = self.leaf_types(derived_ty, span)?;
        let hot_leaf = seed_leaves[seed_idx].clone();
        let size = hot_leaf.n_elems();
        let iota = self.emit1(
            Expr::from(Iota(size)),
            ArrTy::new(vec![size], Elem::I64),
            "iota",
            span,
        );
        let direction = self.program.new_var(ArrTy::scalar(Elem::I64), "k");
        let body = self.in_block(vec![direction], |cx| {
            let direction_rep = cx.broadcast(Atom::Var(direction), &[size], span);
            let hot = cx.prim(Prim::Eq, vec![iota, direction_rep], span)?;
            let one_hot = cx.cast(hot, hot_leaf.elem, span)?;
            let one_hot = if hot_leaf.shape == [size] {
                one_hot
            } else {
                cx.emit1(
                    Expr::from(Reshape {
                        shape: hot_leaf.shape.clone(),
                        array: one_hot,
                    }),
                    hot_leaf.clone(),
                    "unit",
                    span,
                )
            };
            let seeds = seed_leaves
                .iter()
                .enumerate()
                .map(|(idx, leaf)| {
                    if idx == seed_idx {
                        one_hot
                    } else {
                        cx.broadcast(Atom::Lit(Scalar::zero(leaf.elem)), &leaf.shape, span)
                    }
                })
                .collect();
            let seed = cx.assemble(seed_ty, seeds);
            let (_, derived) = cx.derivative(mode, func.clone(), x, &seed, sig, span)?;
            cx.leaves(&derived, span)
        })?;
        let tys = derived_leaves
            .iter()
            .map(|leaf| {
                let shape = std::iter::once(size)
                    .chain(leaf.shape.iter().copied())
                    .collect();
                ArrTy::new(shape, leaf.elem)
            })
            .collect();
        let binders = self.emit(Expr::from(Build1 { size, body }), tys, "jacobian", span);
        Ok(binders.into_iter().map(Atom::Var).collect())
    }

    /// A stack `[size of outer, inner…]` as `[outer…, inner…]`.
    fn reshaped(&mut self, stack: Atom, outer: &ArrTy, inner: &ArrTy, span: Span) -> Atom {
        let shape: Vec<usize> = outer.shape.iter().chain(&inner.shape).copied().collect();
        if outer.shape.len() == 1 {
            return stack;
        }
        self.emit1(
            Expr::from(Reshape {
                shape: shape.clone(),
                array: stack,
            }),
            ArrTy::new(shape, inner.elem),
            "jacobian",
            span,
        )
    }
}

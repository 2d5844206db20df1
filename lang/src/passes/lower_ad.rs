//! Lowering of the differentiation API (LANGUAGE.md §4): `grad`, `jvp`, `vjp`, `linearize`,
//! `transpose_linear`, `deriv`, `deriv_rev`, `jacobian`, `check_deriv`.
//!
//! The function is lowered into a block of its own (its parameters are the leaves of the
//! argument), put through the BOT, differentiated (`passes::ad`), and the derivative
//! statements are copied to the point of use with the actual arguments substituted. The
//! derivative is therefore ordinary bulk IR: a derivative inside a function that is itself
//! differentiated is simply differentiated again (nested AD), and because the inner
//! derivative is taken with respect to its own parameters only, with the outer variables as
//! constants, there is no perturbation confusion (seed 004 §4.3).

use std::collections::HashMap;
use std::rc::Rc;

use super::ad::{self, AdError};
use super::lower::{bug, error, LowerError, Lowerer, Result, SVal};
use crate::check::builtins::AdOp;
use crate::check::types::Ty;
use crate::core::inline::{copy_stmts, rename};
use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Expr, Scalar, Stmt, VarId};
use crate::prim::{Prim, Tangent};
use crate::syntax::Span;

/// A linear map made by differentiation: statements from inputs to outputs, referring to
/// primal values through `subst` (already placed in the program).
#[derive(Debug)]
pub struct LinearFn {
    stmts: Vec<Stmt>,
    inputs: Vec<Option<VarId>>,
    outputs: Vec<Tangent>,
    subst: HashMap<VarId, Atom>,
    out_ty: Ty,
}

fn ad_error(span: Span) -> impl Fn(AdError) -> LowerError {
    move |err| match err {
        AdError::User(message) => LowerError {
            message,
            span,
            bug: false,
        },
        AdError::Bug(message) => LowerError {
            message,
            span,
            bug: true,
        },
    }
}

/// The parameter and result types of a function type.
fn fun_parts(ty: &Ty) -> Option<(&Ty, &Ty)> {
    match ty {
        Ty::Fun { param, result, .. } => Some((param, result)),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The forward derivative of a function block, recorded for the `linear` stage.
    fn jvp_of(&mut self, block: BlockId, span: Span) -> Result<ad::Jvp> {
        let jvp = ad::jvp(&mut self.program, block).map_err(ad_error(span))?;
        let mut params = jvp.params.clone();
        params.extend(jvp.tangent_params.iter().flatten());
        let mut results = jvp.results.clone();
        results.extend(jvp.tangent_results.iter().flatten());
        let text = self.dump(params, &jvp.stmts, results);
        self.derivative_stages.push(("linear", text));
        Ok(jvp)
    }

    /// The transposed derivative, recorded for the `transposed` stage.
    fn vjp_of(&mut self, jvp: &ad::Jvp, span: Span) -> Result<ad::Vjp> {
        let vjp = ad::vjp(&mut self.program, jvp).map_err(ad_error(span))?;
        let mut params = vjp.params.clone();
        params.extend(&vjp.ct_params);
        let mut stmts = vjp.forward.clone();
        stmts.extend(vjp.backward.iter().cloned());
        let mut results = vjp.results.clone();
        results.extend(vjp.grads.iter().flatten());
        let text = self.dump(params, &stmts, results);
        self.derivative_stages.push(("transposed", text));
        Ok(vjp)
    }

    /// A derivative program as text: its parameters as inputs, after clean-up.
    fn dump(&self, params: Vec<VarId>, stmts: &[Stmt], results: Vec<Atom>) -> String {
        let mut program = self.program.clone();
        let main = program.blocks.push(crate::core::ir::Block {
            params: Vec::new(),
            stmts: stmts.to_vec(),
            results,
        });
        program.main = main;
        program.inputs = params;
        super::cleanup::run(&mut program);
        program.to_string()
    }

    pub(super) fn lower_ad(
        &mut self,
        op: AdOp,
        args: Vec<SVal>,
        ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let Some((func_ty, _)) = fun_parts(ty) else {
            return bug(span, "type of a derivative");
        };
        let Some((arg_ty, out_ty)) = fun_parts(func_ty) else {
            return bug(span, "type of a derivative");
        };
        let (arg_ty, out_ty) = (arg_ty.clone(), out_ty.clone());
        let func = args[0].clone();
        match op {
            AdOp::Grad | AdOp::DerivRev => {
                let leaves = self.leaf_types(&out_ty, span)?;
                if leaves.len() != 1 || !leaves[0].shape.is_empty() || !leaves[0].elem.is_float() {
                    return error(span, format!("`grad` needs a function with a scalar float result, not {out_ty}; use `vjp`"));
                }
                let grads = self.gradient(func, &args[1], &arg_ty, span)?;
                Ok(grads)
            }
            AdOp::Jvp | AdOp::Deriv => {
                let tangent = if op == AdOp::Jvp {
                    args[2].clone()
                } else {
                    self.ones_like(&args[1], span)?
                };
                let block = self.function_block(func, &arg_ty, span)?;
                let jvp = self.jvp_of(block, span)?;
                let mut subst = self.bind_params(&jvp.params, &args[1], span)?;
                let tangent_leaves = self.leaves(&tangent, span)?;
                for (param, leaf) in jvp.tangent_params.iter().zip(tangent_leaves) {
                    if let Some(param) = param {
                        subst.insert(*param, leaf);
                    }
                }
                let target = self.block;
                copy_stmts(&mut self.program, &jvp.stmts, target, &mut subst);
                self.outputs(&jvp.tangent_results, &subst, result_ty, span)
            }
            AdOp::Vjp => {
                let block = self.function_block(func, &arg_ty, span)?;
                let jvp = self.jvp_of(block, span)?;
                let vjp = self.vjp_of(&jvp, span)?;
                let mut subst = self.bind_params(&vjp.params, &args[1], span)?;
                let target = self.block;
                copy_stmts(&mut self.program, &vjp.forward, target, &mut subst);
                let primal = self.outputs(
                    &vjp.results
                        .iter()
                        .map(|atom| Some(*atom))
                        .collect::<Vec<_>>(),
                    &subst,
                    &out_ty,
                    span,
                )?;
                let pullback = LinearFn {
                    stmts: vjp.backward,
                    inputs: vjp.ct_params.into_iter().map(Some).collect(),
                    outputs: vjp.grads,
                    subst,
                    out_ty: arg_ty,
                };
                Ok(SVal::Tuple(vec![primal, SVal::Linear(Rc::new(pullback))]))
            }
            AdOp::Linearize => {
                let block = self.function_block(func, &arg_ty, span)?;
                let jvp = self.jvp_of(block, span)?;
                let (forward, linear) = ad::linearize(&mut self.program, &jvp);
                let mut subst = self.bind_params(&jvp.params, &args[1], span)?;
                let target = self.block;
                copy_stmts(&mut self.program, &forward, target, &mut subst);
                let primal = self.outputs(
                    &jvp.results
                        .iter()
                        .map(|atom| Some(*atom))
                        .collect::<Vec<_>>(),
                    &subst,
                    &out_ty,
                    span,
                )?;
                let tangent_map = LinearFn {
                    stmts: linear,
                    inputs: jvp.tangent_params,
                    outputs: jvp.tangent_results,
                    subst,
                    out_ty,
                };
                Ok(SVal::Tuple(vec![
                    primal,
                    SVal::Linear(Rc::new(tangent_map)),
                ]))
            }
            AdOp::TransposeLinear => {
                // A linear function is its own derivative at any point: transpose it at zero.
                let block = self.function_block(func, &arg_ty, span)?;
                let jvp = self.jvp_of(block, span)?;
                let vjp = self.vjp_of(&jvp, span)?;
                let zero = self.zeros_of(&arg_ty, span)?;
                let mut subst = self.bind_params(&vjp.params, &zero, span)?;
                let cts = self.leaves(&args[1], span)?;
                for (param, ct) in vjp.ct_params.iter().zip(cts) {
                    subst.insert(*param, ct);
                }
                let target = self.block;
                copy_stmts(&mut self.program, &vjp.forward, target, &mut subst);
                copy_stmts(&mut self.program, &vjp.backward, target, &mut subst);
                self.outputs(&vjp.grads, &subst, &arg_ty, span)
            }
            AdOp::Jacobian => self.jacobian(func, &args[1], &arg_ty, &out_ty, result_ty, span),
            AdOp::CheckDeriv => self.check_deriv(func, &args[1], &arg_ty, &out_ty, span),
        }
    }

    /// Lowers `func` applied to fresh parameters (one per leaf of `arg_ty`) into a new block
    /// and puts it through the BOT.
    fn function_block(&mut self, func: SVal, arg_ty: &Ty, span: Span) -> Result<BlockId> {
        let leaf_tys = self.leaf_types(arg_ty, span)?;
        let params: Vec<VarId> = leaf_tys
            .into_iter()
            .map(|ty| self.program.new_var(ty, "x"))
            .collect();
        let arg = self.assemble(arg_ty, params.iter().copied().map(Atom::Var).collect());
        let block = self.in_block(params, |cx| {
            let value = cx.apply(func, arg, span)?;
            cx.leaves(&value, span)
        })?;
        super::bot::run_block(&mut self.program, block);
        super::simplify::run_from(&mut self.program, block);
        Ok(block)
    }

    /// Substitutes the argument's leaves for a block's parameters.
    fn bind_params(
        &self,
        params: &[VarId],
        arg: &SVal,
        span: Span,
    ) -> Result<HashMap<VarId, Atom>> {
        let leaves = self.leaves(arg, span)?;
        Ok(params.iter().copied().zip(leaves).collect())
    }

    /// The value of type `ty` whose leaves are `atoms` (renamed through `subst`), with zeros
    /// for the missing ones.
    fn outputs(
        &mut self,
        atoms: &[Tangent],
        subst: &HashMap<VarId, Atom>,
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let leaf_tys = self.leaf_types(ty, span)?;
        let mut leaves = Vec::new();
        for (atom, leaf_ty) in atoms.iter().zip(&leaf_tys) {
            leaves.push(match atom {
                Some(atom) => rename(*atom, subst),
                None => self.broadcast(Atom::Lit(Scalar::zero(leaf_ty.elem)), &leaf_ty.shape, span),
            });
        }
        Ok(self.assemble(ty, leaves))
    }

    fn zeros_of(&mut self, ty: &Ty, span: Span) -> Result<SVal> {
        let nones: Vec<Tangent> = vec![None; self.leaf_types(ty, span)?.len()];
        self.outputs(&nones, &HashMap::new(), ty, span)
    }

    /// A value of the same type with every float element 1 (the tangent of `deriv`).
    fn ones_like(&mut self, value: &SVal, span: Span) -> Result<SVal> {
        match value {
            SVal::Arr(atom) => {
                let ty = self.atom_ty(atom);
                let one = crate::prim::cast_scalar(Scalar::F64(1.0), ty.elem);
                Ok(SVal::Arr(self.broadcast(Atom::Lit(one), &ty.shape, span)))
            }
            SVal::Tuple(items) => Ok(SVal::Tuple(
                items
                    .iter()
                    .map(|item| self.ones_like(item, span))
                    .collect::<Result<_>>()?,
            )),
            _ => bug(span, "ones of a function"),
        }
    }

    /// The gradient of a scalar function at `x` (reverse mode: forward, then backward with a
    /// cotangent of 1).
    fn gradient(&mut self, func: SVal, x: &SVal, arg_ty: &Ty, span: Span) -> Result<SVal> {
        let block = self.function_block(func, arg_ty, span)?;
        let jvp = self.jvp_of(block, span)?;
        let vjp = self.vjp_of(&jvp, span)?;
        let mut subst = self.bind_params(&vjp.params, x, span)?;
        let target = self.block;
        copy_stmts(&mut self.program, &vjp.forward, target, &mut subst);
        let result_elem = self.program.atom_ty(&rename(vjp.results[0], &subst)).elem;
        subst.insert(
            vjp.ct_params[0],
            Atom::Lit(crate::prim::cast_scalar(Scalar::F64(1.0), result_elem)),
        );
        copy_stmts(&mut self.program, &vjp.backward, target, &mut subst);
        self.outputs(&vjp.grads, &subst, arg_ty, span)
    }

    /// Applies a pullback or a tangent map.
    pub(super) fn apply_linear(
        &mut self,
        linear: &LinearFn,
        arg: SVal,
        span: Span,
    ) -> Result<SVal> {
        let mut subst = linear.subst.clone();
        let leaves = self.leaves(&arg, span)?;
        for (input, leaf) in linear.inputs.iter().zip(leaves) {
            if let Some(input) = input {
                subst.insert(*input, leaf);
            }
        }
        let target = self.block;
        copy_stmts(&mut self.program, &linear.stmts, target, &mut subst);
        self.outputs(&linear.outputs, &subst, &linear.out_ty.clone(), span)
    }

    /// `jacobian f x` for `f : n=>s -> m=>s`: one row per output, each the pullback of a
    /// one-hot cotangent (reverse mode, inside a `for` that the BOT vectorises).
    fn jacobian(
        &mut self,
        func: SVal,
        x: &SVal,
        arg_ty: &Ty,
        out_ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let out_leaf = self.leaf_types(out_ty, span)?.remove(0);
        let arg_leaf = self.leaf_types(arg_ty, span)?.remove(0);
        let (n, m) = (arg_leaf.shape[0], out_leaf.shape[0]);
        let block = self.function_block(func, arg_ty, span)?;
        let jvp = self.jvp_of(block, span)?;
        if n < m {
            return self.jacobian_forward(&jvp, x, &arg_leaf, &out_leaf, result_ty, span);
        }
        let vjp = self.vjp_of(&jvp, span)?;
        let mut subst = self.bind_params(&vjp.params, x, span)?;
        let target = self.block;
        copy_stmts(&mut self.program, &vjp.forward, target, &mut subst);
        let (ct_param, grad) = (vjp.ct_params[0], vjp.grads[0]);
        let rows = self.one_hot_loop(
            m,
            out_leaf.elem,
            Some(ct_param),
            &vjp.backward,
            grad,
            &arg_leaf,
            &subst,
            span,
        )?;
        Ok(self.assemble(result_ty, vec![rows]))
    }

    /// Forward-mode Jacobian (fewer inputs than outputs): one column per input, each the
    /// tangent of a one-hot input direction; the primal part is computed once.
    fn jacobian_forward(
        &mut self,
        jvp: &ad::Jvp,
        x: &SVal,
        arg_leaf: &ArrTy,
        out_leaf: &ArrTy,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let (n, m) = (arg_leaf.shape[0], out_leaf.shape[0]);
        let mixed = |stmt: &Stmt| {
            stmt.binders
                .iter()
                .any(|binder| jvp.linear.contains(binder))
                && stmt
                    .binders
                    .iter()
                    .any(|binder| !jvp.linear.contains(binder))
        };
        // Primal statements run once, outside the loop over columns (unless a loop mixes
        // primal and tangent values, in which case everything runs per column).
        let (forward, per_column): (Vec<Stmt>, Vec<Stmt>) = if jvp.stmts.iter().any(mixed) {
            (Vec::new(), jvp.stmts.clone())
        } else {
            jvp.stmts.iter().cloned().partition(|stmt| {
                stmt.binders
                    .iter()
                    .all(|binder| !jvp.linear.contains(binder))
            })
        };
        let mut subst = self.bind_params(&jvp.params, x, span)?;
        let target = self.block;
        copy_stmts(&mut self.program, &forward, target, &mut subst);
        let (tangent_param, tangent_result) = (jvp.tangent_params[0], jvp.tangent_results[0]);
        let columns = self.one_hot_loop(
            n,
            arg_leaf.elem,
            tangent_param,
            &per_column,
            tangent_result,
            out_leaf,
            &subst,
            span,
        )?;
        let rows = self.emit1(
            Expr::Transpose {
                perm: vec![1, 0],
                array: columns,
            },
            ArrTy::new(vec![m, n], out_leaf.elem),
            "jacobian",
            span,
        );
        Ok(self.assemble(result_ty, vec![rows]))
    }

    /// `for k:(Fin size). <stmts with seed := one-hot k>`: the derivative program run once per
    /// unit direction (a row of a reverse-mode Jacobian, a column of a forward-mode one). The
    /// result has shape `[size] ++ output_leaf.shape`.
    #[allow(clippy::too_many_arguments)]
    fn one_hot_loop(
        &mut self,
        size: usize,
        seed_elem: Elem,
        seed: Option<VarId>,
        stmts: &[Stmt],
        output: Tangent,
        output_leaf: &ArrTy,
        subst: &HashMap<VarId, Atom>,
        span: Span,
    ) -> Result<Atom> {
        let iota = self.emit1(
            Expr::Iota(size),
            ArrTy::new(vec![size], Elem::I64),
            "iota",
            span,
        );
        let direction = self.program.new_var(ArrTy::scalar(Elem::I64), "k");
        let body = self.in_block(vec![direction], |cx| {
            let direction_rep = cx.broadcast(Atom::Var(direction), &[size], span);
            let hot = cx.prim(Prim::Eq, vec![iota, direction_rep], span)?;
            let one_hot = cx.cast(hot, seed_elem, span)?;
            let mut inner = subst.clone();
            if let Some(seed) = seed {
                inner.insert(seed, one_hot);
            }
            let target = cx.block;
            copy_stmts(&mut cx.program, stmts, target, &mut inner);
            Ok(vec![match output {
                Some(atom) => rename(atom, &inner),
                None => cx.broadcast(
                    Atom::Lit(Scalar::zero(output_leaf.elem)),
                    &output_leaf.shape,
                    span,
                ),
            }])
        })?;
        let mut shape = vec![size];
        shape.extend(&output_leaf.shape);
        Ok(self.emit1(
            Expr::Build1 { size, body },
            ArrTy::new(shape, output_leaf.elem),
            "jacobian",
            span,
        ))
    }

    /// `check_deriv f x`: the directional derivative along all-ones agrees with a central
    /// finite difference (relative tolerance suited to the float type).
    fn check_deriv(
        &mut self,
        func: SVal,
        x: &SVal,
        arg_ty: &Ty,
        out_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let out_leaf = self.leaf_types(out_ty, span)?.remove(0);
        let (step, tolerance) = match out_leaf.elem {
            Elem::F64 => (1e-6, 1e-5),
            _ => (1e-2, 2e-2),
        };
        let shifted = |cx: &mut Self, sign: f64| -> Result<SVal> {
            let leaves = cx.leaves(x, span)?;
            let mut moved = Vec::new();
            for leaf in leaves {
                let elem = cx.atom_ty(&leaf).elem;
                moved.push(if elem.is_float() {
                    let delta = Atom::Lit(crate::prim::cast_scalar(Scalar::F64(sign * step), elem));
                    cx.prim(Prim::Add, vec![leaf, delta], span)?
                } else {
                    leaf
                });
            }
            Ok(cx.assemble(arg_ty, moved))
        };
        let plus = shifted(self, 1.0)?;
        let minus = shifted(self, -1.0)?;
        let f_plus = self.apply(func.clone(), plus, span)?;
        let f_minus = self.apply(func.clone(), minus, span)?;
        let (SVal::Arr(f_plus), SVal::Arr(f_minus)) = (f_plus, f_minus) else {
            return error(
                span,
                "`check_deriv` needs a function with a scalar float result",
            );
        };
        let difference = self.prim(Prim::Sub, vec![f_plus, f_minus], span)?;
        let width = Atom::Lit(crate::prim::cast_scalar(
            Scalar::F64(2.0 * step),
            out_leaf.elem,
        ));
        let finite = self.prim(Prim::Div, vec![difference, width], span)?;
        let grads = self.gradient(func, x, arg_ty, span)?;
        let mut directional = Atom::Lit(Scalar::zero(out_leaf.elem));
        for leaf in self.leaves(&grads, span)? {
            let ty = self.atom_ty(&leaf);
            if !ty.elem.is_float() {
                continue;
            }
            let total = if ty.shape.is_empty() {
                leaf
            } else {
                let n_elems = ty.n_elems();
                let flat = self.emit1(
                    Expr::Reshape {
                        shape: vec![n_elems],
                        array: leaf,
                    },
                    ArrTy::new(vec![n_elems], ty.elem),
                    "flat",
                    span,
                );
                self.emit1(Expr::SumOuter(flat), ArrTy::scalar(ty.elem), "sum", span)
            };
            let total = self.cast(total, out_leaf.elem, span)?;
            directional = self.prim(Prim::Add, vec![directional, total], span)?;
        }
        let error_size = self.prim(Prim::Sub, vec![finite, directional], span)?;
        let error_size = self.prim(Prim::Abs, vec![error_size], span)?;
        let scale = self.prim(Prim::Abs, vec![directional], span)?;
        let one = Atom::Lit(crate::prim::cast_scalar(Scalar::F64(1.0), out_leaf.elem));
        let scale = self.prim(Prim::Add, vec![one, scale], span)?;
        let tolerance = Atom::Lit(crate::prim::cast_scalar(
            Scalar::F64(tolerance),
            out_leaf.elem,
        ));
        let bound = self.prim(Prim::Mul, vec![tolerance, scale], span)?;
        Ok(SVal::Arr(self.prim(
            Prim::Le,
            vec![error_size, bound],
            span,
        )?))
    }
}

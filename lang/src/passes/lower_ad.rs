//! Lowering of the differentiation API (docs/language.md): `grad`, `jvp`, `vjp`, `linearize`,
//! `transpose_linear`, `deriv`, `deriv_rev`, `check_deriv` (`jacobian` and `hessian` are in
//! `lower_jacobian`).
//!
//! Lowering does not differentiate: each derivative becomes a `jvp` or `vjp` statement
//! holding the function lowered into a block of its own (its parameters are the leaves of
//! the argument), the primal arguments and the seed (a tangent or a cotangent). The `ad`
//! pass (`passes::derivatives`) replaces these statements by derivative programs. A pullback
//! or a tangent map is a compile-time value that emits one such statement where it is
//! applied.

use std::rc::Rc;

use super::lower::{bug, error, Lowerer, Result, SVal};
use crate::check::builtins::AdOp;
use crate::check::types::Ty;
use crate::core::ir::{
    AdMode, ArrTy, Atom, BlockId, CustomJvp, CustomVjp, Derivative, Elem, Expr, Reshape, Scalar,
    SumOuter, VarId,
};
use crate::prim::Prim;
use crate::syntax::Span;

/// A linear map made by differentiation: the pullback of `vjp` (mode `Vjp`) or the tangent
/// map of `linearize` (mode `Jvp`) of `func` at `primal`.
#[derive(Debug)]
pub struct LinearFn {
    mode: AdMode,
    func: SVal,
    primal: SVal,
    arg_ty: Ty,
    out_ty: Ty,
}

/// The parameter and result types of a function type.
fn fun_parts(ty: &Ty) -> Option<(&Ty, &Ty)> {
    match ty {
        Ty::Fun { param, result, .. } => Some((param, result)),
        _ => None,
    }
}

impl Lowerer<'_> {
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
        let sig = Signature {
            arg: arg_ty.clone(),
            out: out_ty.clone(),
        };
        let func = args[0].clone();
        match op {
            AdOp::Grad | AdOp::DerivRev => self.gradient(func, &args[1], &sig, span),
            AdOp::ValueAndGrad => self.value_and_gradient(func, &args[1], &sig, span),
            AdOp::Jvp => Ok(self
                .derivative(AdMode::Jvp, func, &args[1], &args[2], &sig, span)?
                .1),
            AdOp::Deriv => {
                let ones = self.ones_like(&args[1], span)?;
                Ok(self
                    .derivative(AdMode::Jvp, func, &args[1], &ones, &sig, span)?
                    .1)
            }
            AdOp::Vjp | AdOp::Linearize => {
                let primal = self.apply(func.clone(), args[1].clone(), span)?;
                let linear = LinearFn {
                    mode: if op == AdOp::Vjp {
                        AdMode::Vjp
                    } else {
                        AdMode::Jvp
                    },
                    func,
                    primal: args[1].clone(),
                    arg_ty: sig.arg,
                    out_ty: sig.out,
                };
                Ok(SVal::Tuple(vec![primal, SVal::Linear(Rc::new(linear))]))
            }
            AdOp::TransposeLinear => {
                // A linear function is its own derivative at any point: transpose it at zero.
                let zero = self.zeros_of(&sig.arg, span)?;
                Ok(self
                    .derivative(AdMode::Vjp, func, &zero, &args[1], &sig, span)?
                    .1)
            }
            AdOp::Jacobian => self.jacobian(func, &args[1], &sig, result_ty, span),
            AdOp::Hessian => self.hessian(func, func_ty, &args[1], &sig, result_ty, span),
            AdOp::CheckDeriv => self.check_deriv(func, &args[1], &sig, span),
        }
    }

    /// The value of `func` at `x` and its derivative there seeded with `seed`: the tangent of
    /// the result (`Jvp`, `seed` a tangent of `x`) or the cotangent of `x` (`Vjp`, `seed` a
    /// cotangent of the result), as one `jvp`/`vjp` statement for the `ad` pass.
    pub(super) fn derivative(
        &mut self,
        mode: AdMode,
        func: SVal,
        x: &SVal,
        seed: &SVal,
        sig: &Signature,
        span: Span,
    ) -> Result<(SVal, SVal)> {
        self.ad_modes.push(mode);
        let func = self.function_block(func, &sig.arg, span);
        self.ad_modes.pop();
        let func = func?;
        let primals = self.leaves(x, span)?;
        let seeds = self.leaves(seed, span)?;
        let derived_ty = match mode {
            AdMode::Jvp => &sig.out,
            AdMode::Vjp => &sig.arg,
        };
        let mut tys = self.leaf_types(&sig.out, span)?;
        let n_results = tys.len();
        tys.extend(self.leaf_types(derived_ty, span)?);
        let binders = self.emit(
            Expr::from(Derivative {
                mode,
                primals,
                seeds,
                func,
            }),
            tys,
            "d",
            span,
        );
        let atoms: Vec<Atom> = binders.into_iter().map(Atom::Var).collect();
        let value = self.assemble(&sig.out, atoms[..n_results].to_vec());
        let derived = self.assemble(derived_ty, atoms[n_results..].to_vec());
        Ok((value, derived))
    }

    /// Lowers `func` applied to fresh parameters (one per leaf of `arg_ty`) into a new block.
    fn function_block(&mut self, func: SVal, arg_ty: &Ty, span: Span) -> Result<BlockId> {
        let leaf_tys = self.leaf_types(arg_ty, span)?;
        let params: Vec<VarId> = leaf_tys
            .into_iter()
            .map(|ty| self.program.new_var(ty, "x"))
            .collect();
        let arg = self.assemble(arg_ty, params.iter().copied().map(Atom::Var).collect());
        let effects = self.effects_before();
        let block = self.in_block(params, |cx| {
            let value = cx.apply(func, arg, span)?;
            cx.leaves(&value, span)
        });
        self.seal_function(effects, span)?;
        block
    }

    /// `custom_vjp(f, fwd, bwd) x` (`ops::custom`): the three functions lowered into blocks
    /// (`f` and `fwd` of the leaves of `x`, `bwd` of the residuals then the cotangents of the
    /// result) and one `custom_vjp` statement, whose value is `f x`.
    pub(super) fn lower_custom_vjp(
        &mut self,
        args: Vec<SVal>,
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        if self.ad_modes.last() == Some(&AdMode::Jvp) {
            return error(
                span,
                "forward-mode differentiation (`jvp`, `deriv`, `linearize`, `jacobian`) through \
                 a `custom_vjp`: its rule is for reverse mode only; use `grad`, `vjp` or \
                 `value_and_grad`, or give a rule for both modes with `custom-linearization`",
            );
        }
        let mut parts = Vec::new();
        let mut rest = ty;
        for _ in 0..4 {
            let Some((param, result)) = fun_parts(rest) else {
                return bug(span, "type of custom_vjp");
            };
            parts.push(param.clone());
            rest = result;
        }
        let (arg_ty, out_ty) = (parts[3].clone(), rest.clone());
        let Some((_, fwd_out)) = fun_parts(&parts[1]) else {
            return bug(span, "type of custom_vjp's fwd");
        };
        let Ty::Tuple(fwd_parts) = fwd_out else {
            return bug(span, "type of custom_vjp's fwd");
        };
        let res_ty = fwd_parts[1].clone();
        let [func, fwd, bwd, x]: [SVal; 4] = match args.try_into() {
            Ok(args) => args,
            Err(_) => return bug(span, "arguments of custom_vjp"),
        };
        let primal = self.function_block(func, &arg_ty, span)?;
        let fwd = self.function_block(fwd, &arg_ty, span)?;
        let res_tys = self.leaf_types(&res_ty, span)?;
        let out_tys = self.leaf_types(&out_ty, span)?;
        let n_res = res_tys.len();
        let mut params = Vec::new();
        for ty in res_tys {
            params.push(self.program.new_var(ty, "res"));
        }
        for ty in out_tys.iter().cloned() {
            params.push(self.program.new_var(ty, "ct"));
        }
        let atoms: Vec<Atom> = params.iter().copied().map(Atom::Var).collect();
        let res = self.assemble(&res_ty, atoms[..n_res].to_vec());
        let ct = self.assemble(&out_ty, atoms[n_res..].to_vec());
        let bwd = self.in_block(params, |cx| {
            let partial = cx.apply(bwd, res, span)?;
            let value = cx.apply(partial, ct, span)?;
            cx.leaves(&value, span)
        })?;
        let args = self.leaves(&x, span)?;
        let binders = self.emit(
            Expr::from(CustomVjp {
                args,
                primal,
                fwd,
                bwd,
            }),
            out_tys,
            "custom",
            span,
        );
        Ok(self.assemble(&out_ty, binders.into_iter().map(Atom::Var).collect()))
    }

    /// `%custom_linearization<n>(f, g) x1 … xn` (`custom-linearization f g`; `ops::custom`,
    /// Note [Custom linearizations]): `f` lowered into a block of the leaves of the `xs`, `g`
    /// into one of those leaves then a tangent per leaf that gives `f`'s values then their
    /// tangents (`g`'s linear map applied to the tangents), and one `custom_jvp` statement,
    /// whose value is `f x1 … xn`.
    pub(super) fn lower_custom_linearization(
        &mut self,
        args: Vec<SVal>,
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let mut rest = ty;
        let mut arg_tys = Vec::new();
        while let Some((param, result)) = fun_parts(rest) {
            arg_tys.push(param.clone());
            rest = result;
        }
        let out_ty = rest.clone();
        let arg_tys = arg_tys.split_off(2);
        if arg_tys.len() + 2 != args.len() {
            return bug(span, "arguments of a custom linearization");
        }
        let mut args = args.into_iter();
        let (Some(func), Some(lin)) = (args.next(), args.next()) else {
            return bug(span, "arguments of a custom linearization");
        };
        let xs: Vec<SVal> = args.collect();
        let tuple_ty = Ty::Tuple(arg_tys.clone());
        let leaf_tys = self.leaf_types(&tuple_ty, span)?;
        let fresh = |cx: &mut Self, hint: &str| -> Vec<VarId> {
            leaf_tys
                .iter()
                .map(|ty| cx.program.new_var(ty.clone(), hint))
                .collect()
        };
        let split = |cx: &mut Self, vars: &[VarId]| -> Vec<SVal> {
            match cx.assemble(&tuple_ty, vars.iter().copied().map(Atom::Var).collect()) {
                SVal::Tuple(parts) => parts,
                other => vec![other],
            }
        };
        let apply_all = |cx: &mut Self, func: SVal, parts: Vec<SVal>| -> Result<SVal> {
            parts
                .into_iter()
                .try_fold(func, |partial, part| cx.apply(partial, part, span))
        };
        let params = fresh(self, "x");
        let effects = self.effects_before();
        let primal = self.in_block(params.clone(), |cx| {
            let parts = split(cx, &params);
            let value = apply_all(cx, func, parts)?;
            cx.leaves(&value, span)
        });
        self.seal_function(effects, span)?;
        let primal = primal?;
        let mut params = fresh(self, "x");
        let tangents = fresh(self, "t");
        params.extend(&tangents);
        let n_args = tangents.len();
        let effects = self.effects_before();
        let linearized = self.in_block(params.clone(), |cx| {
            let parts = split(cx, &params[..n_args]);
            let pair = apply_all(cx, lin, parts)?;
            let SVal::Tuple(pair) = pair else {
                return bug(span, "a linearization that is not a pair");
            };
            let [value, linear]: [SVal; 2] = match pair.try_into() {
                Ok(pair) => pair,
                Err(_) => return bug(span, "a linearization that is not a pair"),
            };
            let parts = split(cx, &tangents);
            let tangent = apply_all(cx, linear, parts)?;
            let mut results = cx.leaves(&value, span)?;
            results.extend(cx.leaves(&tangent, span)?);
            Ok(results)
        });
        self.seal_function(effects, span)?;
        let lin = linearized?;
        let n_values = self.leaf_types(&out_ty, span)?.len();
        if let Err(problem) =
            crate::ops::custom::check_linearization(&mut self.program, lin, n_args, n_values)
        {
            return error(span, problem);
        }
        let mut atoms = Vec::new();
        for x in &xs {
            atoms.extend(self.leaves(x, span)?);
        }
        let out_tys = self.leaf_types(&out_ty, span)?;
        let binders = self.emit(
            Expr::from(CustomJvp {
                args: atoms,
                primal,
                lin,
            }),
            out_tys,
            "custom",
            span,
        );
        Ok(self.assemble(&out_ty, binders.into_iter().map(Atom::Var).collect()))
    }

    /// A value of type `ty` with every element zero.
    pub(super) fn zeros_of(&mut self, ty: &Ty, span: Span) -> Result<SVal> {
        self.constants_of(ty, 0.0, span)
    }

    /// A value of type `ty` whose every number is `value`.
    pub(super) fn constants_of(&mut self, ty: &Ty, value: f64, span: Span) -> Result<SVal> {
        let leaves = self
            .leaf_types(ty, span)?
            .iter()
            .map(|leaf| {
                let constant = crate::prim::cast_scalar(Scalar::F64(value), leaf.elem);
                self.broadcast(Atom::Lit(constant), &leaf.shape, span)
            })
            .collect();
        Ok(self.assemble(ty, leaves))
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

    /// The gradient of a scalar function at `x`: reverse mode with a cotangent of 1.
    fn gradient(&mut self, func: SVal, x: &SVal, sig: &Signature, span: Span) -> Result<SVal> {
        let one = self.scalar_seed(sig, span)?;
        Ok(self.derivative(AdMode::Vjp, func, x, &one, sig, span)?.1)
    }

    /// The cotangent 1 of a function with a scalar float result (`grad`, `value_and_grad`).
    fn scalar_seed(&mut self, sig: &Signature, span: Span) -> Result<SVal> {
        let leaves = self.leaf_types(&sig.out, span)?;
        if leaves.len() != 1 || !leaves[0].shape.is_empty() || !leaves[0].elem.is_float() {
            return error(
                span,
                format!(
                    "`grad` needs a function with a scalar float result, not {}; use `vjp`",
                    sig.out
                ),
            );
        }
        let one = crate::prim::cast_scalar(Scalar::F64(1.0), leaves[0].elem);
        Ok(SVal::Arr(Atom::Lit(one)))
    }

    /// `value_and_grad f x`: `(f x, grad f x)`, the value being the primal result of the
    /// gradient's own reverse pass (one evaluation of `f`).
    fn value_and_gradient(
        &mut self,
        func: SVal,
        x: &SVal,
        sig: &Signature,
        span: Span,
    ) -> Result<SVal> {
        let one = self.scalar_seed(sig, span)?;
        let (value, grads) = self.derivative(AdMode::Vjp, func, x, &one, sig, span)?;
        Ok(SVal::Tuple(vec![value, grads]))
    }

    /// Applies a pullback or a tangent map.
    pub(super) fn apply_linear(
        &mut self,
        linear: &LinearFn,
        arg: SVal,
        span: Span,
    ) -> Result<SVal> {
        let sig = Signature {
            arg: linear.arg_ty.clone(),
            out: linear.out_ty.clone(),
        };
        let func = linear.func.clone();
        Ok(self
            .derivative(linear.mode, func, &linear.primal, &arg, &sig, span)?
            .1)
    }

    /// `check_deriv f x`: the directional derivative along all-ones agrees with a central
    /// finite difference (relative tolerance suited to the float type).
    fn check_deriv(&mut self, func: SVal, x: &SVal, sig: &Signature, span: Span) -> Result<SVal> {
        let arg_ty = &sig.arg;
        let out_leaf = self.leaf_types(&sig.out, span)?.remove(0);
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
        let grads = self.gradient(func, x, sig, span)?;
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
                    Expr::from(Reshape {
                        shape: vec![n_elems],
                        array: leaf,
                    }),
                    ArrTy::new(vec![n_elems], ty.elem),
                    "flat",
                    span,
                );
                self.emit1(
                    Expr::from(SumOuter(flat)),
                    ArrTy::scalar(ty.elem),
                    "sum",
                    span,
                )
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

/// The argument and result types of the function being differentiated.
pub(super) struct Signature {
    pub(super) arg: Ty,
    pub(super) out: Ty,
}

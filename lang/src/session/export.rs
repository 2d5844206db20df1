//! `:export` and `dx export`: a function of the session as a StableHLO module
//! (docs/scaling.md).
//!
//! What is exported is a function with concrete argument types: a top-level `def`, or any
//! function-valued expression such as `grad f`, typed by its signature. Two forms extend that:
//!
//! - Example arguments: `:export f x0 y0` exports `f` at the types of `x0` and `y0`, which the
//!   checker has unified with `f`'s parameters (so a generic `f` gets concrete sizes, and an
//!   argument that does not fit is the checker's type error at that argument). The examples
//!   are the trailing arguments of the application that are not functions: `grad f xs0`
//!   exports `grad f` at the type of `xs0` (see `exported_function`).
//! - A pullback in the result: `vjp f` returns `(y, pullback)`, which no module can hold; it is
//!   exported as `(x…, ct…) -> (y…, pullback ct…)` (see `Signature`).
//!
//! `@main`'s parameters are the arguments in order, each flattened to its arrays; its results
//! are the (flattened) result. The session values the function reads are constants. The
//! examples' values are not computed: only their types matter.

use super::{ice, internal_diagnostic, lower_error, Code, Diagnostic, Session};
use crate::check::infer::Infer;
use crate::check::typed::{TExpr, TKind, TPat, TStmt};
use crate::check::types::{LocalId, Ty};
use crate::core::ir::ArrTy;
use crate::export::stablehlo::Input;
use crate::passes::lower::{leaf_types, GlobalValue, Lowerer};
use crate::passes::pipeline;
use crate::syntax::ast::Expr;

/// The function `@main` computes: the exported function's parameters and result, and for a
/// function returning a pullback (`vjp f : a -> (b, b -> a)`), the pullback's types.
struct Signature {
    params: Vec<Ty>,
    pullback: Option<Pullback>,
    /// `@main`'s result: the function's result, or `(y, cotangent)` with a pullback.
    result: Ty,
}

/// A result `(primal, seed -> cotangent)`: `@main` takes `seed` after the function's
/// arguments and returns `(primal, cotangent)`.
struct Pullback {
    primal: Ty,
    seed: Ty,
    cotangent: Ty,
}

impl Session {
    /// A function as a StableHLO module (`:export`, `dx export`): `expr_src` is a function
    /// (a top-level name, or `grad f`, `vjp f`…) whose argument types are concrete, possibly
    /// followed by example arguments that fix them (`f x0 y0`). `@main`'s parameters are the
    /// function's arguments (tuples flattened, in order; for `vjp f` then the cotangent
    /// seed); the top-level values the function reads are embedded as constants.
    pub fn export(&mut self, expr_src: &str) -> Result<String, Diagnostic> {
        let expr = super::parse_expr(expr_src)?;
        self.export_command(&expr)
    }

    /// `:export EXPR` in a block. A generic function whose types nothing fixes fails to check
    /// as a whole; the error then says how to fix them.
    pub(super) fn export_command(&mut self, expr: &Expr) -> Result<String, Diagnostic> {
        let texpr = match Infer::new(&mut self.env).infer_top_expr(expr) {
            Ok(texpr) => texpr,
            Err(err) => {
                // The type with what is unknown named (`:t`), when that is all that failed.
                let generic = Infer::new(&mut self.env).infer_top_type(expr);
                return Err(match generic {
                    // It checks once its types may stay open: what failed is only that
                    // nothing fixes them (for `grad g` of a generic `g`, inside it).
                    Ok(ty @ Ty::Fun { .. }) => Diagnostic::new(
                        Code::Export,
                        format!(
                            "the argument types of this function are not fixed (its type is \
                             {ty}): give example arguments whose types fix them, \
                             `:export f x0 y0`"
                        ),
                        Some(expr.span),
                    ),
                    _ => super::type_error(&mut self.more_errors, err),
                });
            }
        };
        self.export_function(&texpr)
    }

    fn export_function(&mut self, texpr: &TExpr) -> Result<String, Diagnostic> {
        let texpr = exported_function(texpr);
        let error = |message: String| Diagnostic::new(Code::Export, message, Some(texpr.span));
        let signature = signature(&texpr.ty).map_err(error)?;
        // `@main`'s parameters: the function's arguments, then a pullback's seed.
        let mut main_params = signature.params.clone();
        main_params.extend(signature.pullback.as_ref().map(|pb| pb.seed.clone()));
        let mut leaves = Vec::new();
        for param in &main_params {
            leaves.push(leaf_types(param).map_err(|why| {
                let generic = param.any(&mut |ty| matches!(ty, Ty::Var(_) | Ty::Rigid(..)));
                let hint = if generic {
                    " (example arguments fix the types: `:export f x0 y0` exports `f` at the \
                     types of `x0` and `y0`)"
                } else {
                    ""
                };
                error(format!(
                    "cannot export a function with an argument of type {param}: {why}{hint}"
                ))
            })?);
        }
        leaf_types(&signature.result).map_err(|why| {
            error(format!(
                "cannot export a function whose result has type {}: {why}",
                signature.result
            ))
        })?;
        // The function applied to one placeholder global per argument (names no source can
        // spell), which lowering turns into inputs.
        let names: Vec<String> = (0..main_params.len())
            .map(|position| format!("argument {position} of the export"))
            .collect();
        let placeholder = |position: usize| TExpr {
            kind: TKind::Global(names[position].clone()),
            ty: main_params[position].clone(),
            span: texpr.span,
        };
        let mut applied = texpr.clone();
        for position in 0..signature.params.len() {
            let Ty::Fun { result, .. } = &applied.ty else {
                return Err(internal_diagnostic("an exported function lost an argument"));
            };
            let result = (**result).clone();
            applied = TExpr {
                kind: TKind::App {
                    func: Box::new(applied),
                    arg: Box::new(placeholder(position)),
                },
                ty: result,
                span: texpr.span,
            };
        }
        if let Some(pullback) = &signature.pullback {
            let seed = placeholder(signature.params.len());
            applied = self.apply_pullback(applied, pullback, seed);
        }
        self.lower_export(&applied, &names, &main_params, &leaves)
    }

    /// The module of `applied`, an expression that reads `@main`'s parameters as the globals
    /// `names` (of types `params`, made of the arrays `leaves`). What StableHLO cannot express
    /// is an error at the exported expression.
    fn lower_export(
        &self,
        applied: &TExpr,
        names: &[String],
        params: &[Ty],
        leaves: &[Vec<ArrTy>],
    ) -> Result<String, Diagnostic> {
        let lookup = |name: &str| match names.iter().position(|arg| arg == name) {
            Some(position) => Some(GlobalValue {
                ty: &params[position],
                leaves: leaves[position].clone(),
                arrays: None,
            }),
            None => self.global_value(name),
        };
        let mut lowerer = Lowerer::new(&self.env, &lookup);
        lowerer.lower_main(applied).map_err(lower_error)?;
        let used = std::mem::take(&mut lowerer.inputs);
        let mut core = lowerer.program;
        // `@main` takes every argument, used or not, in order; then the constants.
        let mut inputs = Vec::new();
        let mut kinds = Vec::new();
        for (name, arg_leaves) in names.iter().zip(leaves) {
            match used.iter().find(|(input, _)| input == name) {
                Some((_, vars)) => inputs.extend(vars.iter().copied()),
                None => {
                    for leaf in arg_leaves {
                        inputs.push(core.new_var(leaf.clone(), "unused"));
                    }
                }
            }
            kinds.extend(arg_leaves.iter().map(|_| Input::Param));
        }
        for (name, vars) in used.iter().filter(|(name, _)| !names.contains(name)) {
            inputs.extend(vars.iter().copied());
            kinds.extend(
                self.values[name]
                    .1
                    .iter()
                    .map(|tensor| Input::Constant(tensor.to_array())),
            );
        }
        core.inputs = inputs;
        let piped = pipeline::run(&core, crate::export::bulk_passes(), &[]).map_err(ice)?;
        crate::export::stablehlo::module(&piped.program, &kinds)
            .map_err(|err| Diagnostic::new(Code::Export, err.to_string(), Some(applied.span)))
    }

    /// `(y, pullback) = applied` then `(y, pullback seed)`.
    fn apply_pullback(&mut self, applied: TExpr, pullback: &Pullback, seed: TExpr) -> TExpr {
        let span = applied.span;
        let mut local = |name: &str| {
            let local = LocalId(self.env.next_local());
            self.env.name_local(local, name);
            local
        };
        let (primal, func) = (local("y"), local("pullback"));
        let local_expr = |local: LocalId, ty: Ty| TExpr {
            kind: TKind::Local(local),
            ty,
            span,
        };
        let pullback_ty = Ty::fun(pullback.seed.clone(), pullback.cotangent.clone());
        let cotangent = TExpr {
            kind: TKind::App {
                func: Box::new(local_expr(func, pullback_ty)),
                arg: Box::new(seed),
            },
            ty: pullback.cotangent.clone(),
            span,
        };
        let result_ty = Ty::Tuple(vec![pullback.primal.clone(), pullback.cotangent.clone()]);
        TExpr {
            kind: TKind::Block {
                stmts: vec![TStmt::Let {
                    pat: TPat::Tuple(vec![
                        TPat::Var(primal, "y".into()),
                        TPat::Var(func, "pullback".into()),
                    ]),
                    value: applied,
                }],
                result: Box::new(TExpr {
                    kind: TKind::Tuple(vec![
                        local_expr(primal, pullback.primal.clone()),
                        cotangent,
                    ]),
                    ty: result_ty.clone(),
                    span,
                }),
            },
            ty: result_ty,
            span,
        }
    }
}

/// The function of `:export F a…`: the expression itself when it is a function; otherwise the
/// application without its trailing arguments that are values (the example arguments), so
/// that `f x0 y0` gives `f`, `grad f xs0` gives `grad f` and `vjp f x0` gives `vjp f`. The
/// checker has unified the function's parameter types with the examples' types.
fn exported_function(texpr: &TExpr) -> &TExpr {
    if matches!(texpr.ty, Ty::Fun { .. }) {
        return texpr;
    }
    let mut current = texpr;
    while let TKind::App { func, arg } = &current.kind {
        if arg.ty.contains_fun() || matches!(arg.kind, TKind::TypeArg) {
            break;
        }
        current = func;
    }
    current
}

/// The parameters and result of an exported function of type `ty`; a result
/// `(y, seed -> cotangent)` (`vjp f`, `linearize f`) becomes a pullback.
fn signature(ty: &Ty) -> Result<Signature, String> {
    let mut params = Vec::new();
    let mut ty = ty;
    // A shape that depends on an argument's value (`(n: Nat) -> (Fin n)=>…`) is not static:
    // `leaf_types` refuses it.
    while let Ty::Fun { param, result, .. } = ty {
        params.push((**param).clone());
        ty = result;
    }
    if params.is_empty() {
        return Err(format!(
            "only a function can be exported, or one applied to example arguments \
             (`:export f x0 y0`); this expression has type {ty}"
        ));
    }
    let pullback = match ty {
        Ty::Tuple(items) if items.len() == 2 && !items[0].contains_fun() => match &items[1] {
            Ty::Fun { param, result, .. } if !param.contains_fun() && !result.contains_fun() => {
                Some(Pullback {
                    primal: items[0].clone(),
                    seed: (**param).clone(),
                    cotangent: (**result).clone(),
                })
            }
            _ => None,
        },
        _ => None,
    };
    if let Some(pullback) = pullback {
        let result = Ty::Tuple(vec![pullback.primal.clone(), pullback.cotangent.clone()]);
        return Ok(Signature {
            params,
            pullback: Some(pullback),
            result,
        });
    }
    if ty.contains_fun() {
        return Err(format!(
            "cannot export a function whose result holds a function (its result has type \
             {ty}); only a result `(y, pullback)` as `vjp f` returns exports, as \
             `(x…, ct…) -> (y…, pullback ct…)`"
        ));
    }
    Ok(Signature {
        params,
        pullback: None,
        result: ty.clone(),
    })
}

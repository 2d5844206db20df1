//! User-defined derivatives: `custom_vjp` (JAX's `custom_vjp`), `custom_jvp` (Dex's
//! `custom-linearization f g`) and the linear map `custom_linear` the differentiation of a
//! `custom_vjp` makes. Their rules (their `impl Operation`):
//!
//! - type rule: `custom_vjp_tys`, `custom_jvp_tys`, `custom_linear_tys`: a `custom_vjp` binds `primal`'s
//!   results, and `fwd`'s first results have the same types; `bwd` takes the residuals (the
//!   rest of `fwd`'s results) then a cotangent per result and returns a cotangent per arg;
//! - printer and parser: `custom_vjp (xs…) (\…primal) (\…fwd) (\…bwd)`,
//!   `custom_jvp (xs…) (\…primal) (\…lin)`,
//!   `custom_linear (res…) (ts…) (\…bwd)`, `custom_linear_t (res…) (cts…) (\…bwd)`
//!   (`core::print`, `core::parse`);
//! - reference evaluation: `eval_block`: a `custom_vjp` is its `primal`, a
//!   transposed `custom_linear` is `bwd`; a `custom_linear` has no forward rule (forward
//!   mode through a `custom_vjp` is refused by lowering, `passes::lower_ad`);
//! - batching (BOT): `Batcher::batch_custom`: the three blocks are batched over the
//!   batch axis (each lane's rule is the user's rule);
//! - JVP: `jvp_custom_vjp` inlines `fwd` (primal values and residuals) and emits a
//!   `custom_linear` of the tangents of the args, linear in them;
//! - transpose: `transpose_custom_linear` emits the transposed `custom_linear` (`bwd` on the
//!   residuals and the cotangents of the results), which `passes::derivatives` inlines once
//!   the `transposed` stage is checked (`inline_custom`);
//! - linearity (`ops::linearity`): `custom_vjp` is compound (differentiated by its rule);
//!   `custom_linear` is linear in its tangents or cotangents, constant in its residuals (a
//!   compound: `bwd`'s statements are the user's and are not checked for linearity);
//! - simplifier: generic (its blocks are simplified like any other);
//! - cost: the primal's (or `bwd`'s);
//! - never met after the `ad` pass: it replaces every `custom_vjp` left (outside a derivative)
//!   by its `primal` (`inline_custom`), so the engines, fusion and the exports need no rule;
//!   fusion class `Bulk`.

use std::collections::HashMap;

use super::ad::{self, tangent_of, AdError, AdResult, Builder, Derivs};
use super::batch::{Batcher, Status};
use super::bulk::{Bulk, Ran};
use super::hlo::{ExportError, Exported, StableHlo};
use super::interp::{Interp, Res};
use super::{FusionClass, Linearity, Operation, StraightLine};
use crate::core::inline::{copy_stmt, rename};
use crate::core::ir::{
    ArrTy, Atom, BlockId, CustomJvp, CustomLinear, CustomVjp, Expr, Program, Scalar, Stmt, VarId,
    CUSTOM_INLINED,
};
use crate::core::value::Array;
use crate::core::visit::{expr_blocks, reachable_blocks};
use crate::ops::cost::block_cost;
use crate::ops::verify::{atom_ty, block, result_tys as block_result_tys, tys_text, var_ty};

/// The types of a block's params.
fn param_tys(program: &Program, id: BlockId) -> Result<Vec<ArrTy>, String> {
    block(program, id)?
        .params
        .iter()
        .map(|&var| var_ty(program, var))
        .collect()
}

fn atoms_tys(program: &Program, atoms: &[Atom]) -> Result<Vec<ArrTy>, String> {
    atoms.iter().map(|atom| atom_ty(program, atom)).collect()
}

fn expect_tys(what: &str, got: &[ArrTy], want: &[ArrTy]) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "{what} have types ({}) but must have types ({})",
            tys_text(got),
            tys_text(want)
        ))
    }
}

/// The type rule of `custom_vjp` (see the module doc).
fn custom_vjp_tys(program: &Program, op: &CustomVjp) -> Result<Vec<ArrTy>, String> {
    let CustomVjp {
        args,
        primal,
        fwd,
        bwd,
    } = op;
    let arg_tys = atoms_tys(program, args)?;
    expect_tys("custom_vjp args", &arg_tys, &param_tys(program, *primal)?)?;
    expect_tys(
        "custom_vjp fwd params",
        &param_tys(program, *fwd)?,
        &arg_tys,
    )?;
    let outs = block_result_tys(program, block(program, *primal)?)?;
    let fwd_outs = block_result_tys(program, block(program, *fwd)?)?;
    if fwd_outs.len() < outs.len() {
        return Err("custom_vjp fwd returns fewer values than primal".into());
    }
    expect_tys("custom_vjp fwd values", &fwd_outs[..outs.len()], &outs)?;
    let bwd_params: Vec<ArrTy> = fwd_outs[outs.len()..]
        .iter()
        .chain(&outs)
        .cloned()
        .collect();
    expect_tys(
        "custom_vjp bwd params",
        &param_tys(program, *bwd)?,
        &bwd_params,
    )?;
    let bwd_outs = block_result_tys(program, block(program, *bwd)?)?;
    expect_tys("custom_vjp bwd results", &bwd_outs, &arg_tys)?;
    Ok(outs)
}

/// The type rule of `custom_jvp` (see the module doc).
fn custom_jvp_tys(program: &Program, op: &CustomJvp) -> Result<Vec<ArrTy>, String> {
    let CustomJvp { args, primal, lin } = op;
    let arg_tys = atoms_tys(program, args)?;
    expect_tys("custom_jvp args", &arg_tys, &param_tys(program, *primal)?)?;
    let doubled = [arg_tys.clone(), arg_tys].concat();
    expect_tys(
        "custom_jvp lin params",
        &param_tys(program, *lin)?,
        &doubled,
    )?;
    let outs = block_result_tys(program, block(program, *primal)?)?;
    let lin_outs = block_result_tys(program, block(program, *lin)?)?;
    expect_tys(
        "custom_jvp lin results",
        &lin_outs,
        &[outs.clone(), outs.clone()].concat(),
    )?;
    Ok(outs)
}

/// The type rule of `custom_linear` (see the module doc).
fn custom_linear_tys(program: &Program, op: &CustomLinear) -> Result<Vec<ArrTy>, String> {
    let CustomLinear {
        transposed,
        residuals,
        operands,
        bwd,
    } = op;
    let params = param_tys(program, *bwd)?;
    let n_res = residuals.len();
    if params.len() < n_res {
        return Err("custom_linear has more residuals than bwd params".into());
    }
    expect_tys(
        "custom_linear residuals",
        &atoms_tys(program, residuals)?,
        &params[..n_res],
    )?;
    let cts = params[n_res..].to_vec();
    let grads = block_result_tys(program, block(program, *bwd)?)?;
    let (ins, outs) = if *transposed {
        (cts, grads)
    } else {
        (grads, cts)
    };
    expect_tys(
        "custom_linear operands",
        &atoms_tys(program, operands)?,
        &ins,
    )?;
    Ok(outs)
}

/// The block a `custom_vjp`, `custom_jvp` or transposed `custom_linear` computes, and its
/// arguments; `None` for a `custom_linear` that is not transposed (it has no forward rule) and
/// other forms.
pub fn eval_block(expr: &Expr) -> Option<(BlockId, Vec<Atom>)> {
    match expr {
        Expr::CustomVjp(CustomVjp { args, primal, .. })
        | Expr::CustomJvp(CustomJvp { args, primal, .. }) => Some((*primal, args.clone())),
        Expr::CustomLinear(linear) => linear.eval_block(),
        _ => None,
    }
}

impl CustomLinear {
    /// `bwd` and its arguments when transposed; `None` otherwise (no forward rule).
    fn eval_block(&self) -> Option<(BlockId, Vec<Atom>)> {
        let args = self.residuals.iter().chain(&self.operands).copied();
        self.transposed.then(|| (self.bwd, args.collect()))
    }
}

/// Why a `custom_linear` that is not transposed cannot run.
pub const NO_FORWARD_RULE: &str = "forward-mode differentiation (jvp) through custom_vjp: it \
                                   defines only a reverse-mode rule";

/// Copies `block`'s statements with its params replaced by `args` (fresh variables for the
/// rest); returns the statements and the renamed results.
pub(crate) fn inline(
    program: &mut Program,
    block: BlockId,
    args: &[Atom],
) -> (Vec<Stmt>, Vec<Atom>) {
    let source = program.blocks[block].clone();
    let mut subst: HashMap<VarId, Atom> = source
        .params
        .iter()
        .copied()
        .zip(args.iter().copied())
        .collect();
    let stmts = source
        .stmts
        .iter()
        .map(|stmt| copy_stmt(program, stmt, &mut subst))
        .collect();
    let results = source
        .results
        .iter()
        .map(|atom| rename(*atom, &subst))
        .collect();
    (stmts, results)
}

/// Replaces, in `stmts` and every block nested in them, each statement that `eval_block`
/// gives a block for (`custom_vjp`, transposed `custom_linear`) by that block inlined.
pub fn inline_custom(program: &mut Program, stmts: Vec<Stmt>) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(stmts.len());
    for stmt in stmts {
        for nested in crate::core::visit::expr_blocks(&stmt.expr) {
            let inner = std::mem::take(&mut program.blocks[nested].stmts);
            program.blocks[nested].stmts = inline_custom(program, inner);
        }
        let Some((block, args)) = eval_block(&stmt.expr) else {
            out.push(stmt);
            continue;
        };
        let (body, results) = inline(program, block, &args);
        let body = inline_custom(program, body);
        out.extend(body);
        for (binder, result) in stmt.binders.iter().zip(results) {
            out.push(Stmt {
                binders: vec![*binder],
                expr: Expr::from(result),
            });
        }
    }
    out
}

/// Whether a `custom_vjp`, `custom_jvp` or `custom_linear` is in `block` or a block nested in
/// it.
pub fn any_custom(program: &Program, block: BlockId) -> bool {
    crate::core::visit::reachable_blocks(program, block)
        .into_iter()
        .any(|id| {
            program.blocks[id].stmts.iter().any(|stmt| {
                matches!(
                    stmt.expr,
                    Expr::CustomVjp(_) | Expr::CustomJvp(_) | Expr::CustomLinear(_)
                )
            })
        })
}

/// The JVP of `ys = custom_vjp (xs…) primal fwd bwd`: `fwd` inlined gives the values and the
/// residuals, and the tangents of `ys` are `custom_linear (res…) (ẋs…) bwd`, whose
/// transpose is `bwd` (JAX's `custom_vjp` rule; the user's `fwd` is not differentiated).
pub(crate) fn jvp_custom_vjp(
    builder: &mut Builder,
    stmt: &Stmt,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let Expr::CustomVjp(CustomVjp { args, fwd, bwd, .. }) = &stmt.expr else {
        unreachable!("jvp_custom_vjp of a custom_vjp")
    };
    let (body, results) = inline(builder.program, *fwd, args);
    builder.stmts.extend(body);
    let n_outs = stmt.binders.len();
    for (binder, value) in stmt.binders.iter().zip(&results) {
        builder.stmts.push(Stmt {
            binders: vec![*binder],
            expr: Expr::from(*value),
        });
    }
    let arg_tangents: Vec<_> = args.iter().map(|atom| tangent_of(tangents, atom)).collect();
    if arg_tangents.iter().all(Option::is_none) {
        return Ok(());
    }
    let mut operands = Vec::with_capacity(args.len());
    for (arg, tangent) in args.iter().zip(arg_tangents) {
        operands.push(match tangent {
            Some(tangent) => tangent,
            None => builder.zeros(&builder.ty(arg)),
        });
    }
    let bwd = crate::core::inline::clone_block(builder.program, *bwd, &mut HashMap::new());
    let tys: Vec<ArrTy> = stmt
        .binders
        .iter()
        .map(|binder| builder.program.var_ty(*binder).clone())
        .collect();
    let tangent_vars = builder.emit(
        Expr::from(CustomLinear {
            transposed: false,
            residuals: results[n_outs..].to_vec(),
            operands,
            bwd,
        }),
        tys,
        "custom_dot",
    );
    for (binder, tangent) in stmt.binders.iter().zip(tangent_vars) {
        if builder.program.var_ty(*binder).elem.is_float() {
            tangents.insert(*binder, Atom::Var(tangent));
        }
    }
    Ok(())
}

// Note [Custom linearizations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Dex's `custom-linearization f g` gives `f` the linearization `g x = (f x, \ẋ. l ẋ)`, with
// `l` linear. Differentiation is linearization then transposition ([Smeding25] §6–7), so the
// user's `g` can stand in for the first step: the JVP of `custom_jvp (xs…) primal lin` is
// `lin` inlined at the args and their tangents. Its statements that use a tangent are the
// tangent statements (linear variables, as `Builder::emit` marks them) and the rest primal
// ones; reverse mode then transposes the user's linear statements by the rules every
// operation has; an `if` over tangents is if-converted, as the JVP of any `cond` is. Lowering
// checks the user's map first (`check_linearization`) and refuses, at the use of `f`, a
// statement that is not linear in the tangents (`ẋ * ẋ`, `ẋ + 1`) or a loop over them,
// since no rule could transpose it.

const VALUE_OF_TANGENTS: &str = "the value a custom-linearization gives depends on the tangents";

/// What is wrong with the way a statement of a user's linear map uses the tangents (the
/// linear variables), in the user's terms: an operation that is not linear in them, or a sum
/// of a tangent and a value that is not one (`t + 1.0` is affine).
fn linear_map_problem(program: &Program, stmt: &Stmt) -> Option<String> {
    let problem = crate::ops::verify::linearity_error(program, stmt).or_else(|| {
        let Some(StraightLine::Apply(prim, args)) = crate::ops::straight_line(&stmt.expr) else {
            return None;
        };
        let linear_prim = matches!(
            crate::ops::linearity(&stmt.expr),
            crate::ops::Linearity::Prim(crate::prim::Linearity::Linear)
        );
        let affine = linear_prim
            && args.iter().any(|atom| program.is_linear(atom))
            && args.iter().any(|atom| {
                !program.is_linear(atom)
                    && program.atom_ty(atom).elem.is_float()
                    && !matches!(atom, Atom::Lit(lit) if *lit == Scalar::zero(lit.elem()))
            });
        affine.then(|| format!("`{}` of a tangent and a value that is not one", prim.name()))
    })?;
    Some(format!(
        "the linear map of a custom-linearization is not linear in the tangents: {problem}"
    ))
}

/// Why a statement whose blocks use the tangents cannot be in a linear map.
fn tangents_inside(expr: &Expr) -> String {
    format!(
        "the linear map of a custom-linearization passes a tangent into a `{}` (loops over \
         tangents are not supported there)",
        crate::core::print::expr_name(expr)
    )
}

/// Whether the blocks of `expr` use a linear variable.
fn uses_linear_inside(program: &Program, expr: &Expr) -> bool {
    let mut uses = Vec::new();
    for nested in crate::core::visit::expr_blocks(expr) {
        crate::core::visit::collect_uses(program, nested, &mut uses);
    }
    uses.iter().any(|var| program.vars[*var].linear)
}

/// Marks linear the binders of the statements of a linear map, as lowering makes it, that
/// use a tangent, and checks each (`linear_map_problem`); a `for` or an `if` over tangents
/// is followed inside (its binders are linear when a result of its blocks is).
fn mark_linear(program: &mut Program, stmts: &[Stmt]) -> Result<(), String> {
    for stmt in stmts {
        let mut linear = crate::core::visit::expr_atoms(&stmt.expr)
            .iter()
            .any(|atom| program.is_linear(atom));
        if uses_linear_inside(program, &stmt.expr) {
            if !super::operation(&stmt.expr).linear_through_blocks() {
                return Err(tangents_inside(&stmt.expr));
            }
            for nested in crate::core::visit::expr_blocks(&stmt.expr) {
                let block = program.blocks[nested].clone();
                mark_linear(program, &block.stmts)?;
                linear |= block.results.iter().any(|atom| program.is_linear(atom));
            }
        }
        for &binder in &stmt.binders {
            program.vars[binder].linear = linear;
        }
        if let Some(problem) = linear_map_problem(program, stmt) {
            return Err(problem);
        }
    }
    Ok(())
}

/// Emits the statements of a user's linear map inlined into a JVP: a statement that uses a
/// tangent binds linear variables, and an `if` over tangents is if-converted (both branches
/// run and their results are selected, as `cond::jvp_cond` does), since a `cond` has no
/// transpose.
fn emit_linear_map(builder: &mut Builder, stmts: Vec<Stmt>) -> Result<(), AdError> {
    for stmt in stmts {
        if uses_linear_inside(builder.program, &stmt.expr) {
            if let Some(emitted) = super::cond::emit_linear_cond(builder, &stmt, emit_linear_map) {
                emitted?;
                continue;
            }
            return Err(AdError::BadCustomRule(tangents_inside(&stmt.expr)));
        }
        let linear = crate::core::visit::expr_atoms(&stmt.expr)
            .iter()
            .any(|atom| builder.is_linear(atom));
        builder.set_linear(&stmt.binders, linear);
        // Lowering refused affine maps; here a missing tangent is a zero that is not a
        // linear variable, so only what transposition needs is checked.
        if let Some(problem) = crate::ops::verify::linearity_error(builder.program, &stmt) {
            return Err(AdError::BadCustomRule(format!(
                "the linear map of a custom-linearization is not linear in the tangents: {problem}"
            )));
        }
        builder.stmts.push(stmt);
    }
    Ok(())
}

/// Checks, as lowering makes it, that the block of a linearization (`lin` of a `custom_jvp`,
/// its last `n_tangents` params the tangents) is linear in the tangents and that its first
/// `n_values` results do not depend on them; the linear flags are cleared after.
pub fn check_linearization(
    program: &mut Program,
    lin: BlockId,
    n_tangents: usize,
    n_values: usize,
) -> Result<(), String> {
    let block = program.blocks[lin].clone();
    let tangents = &block.params[block.params.len() - n_tangents..];
    for &tangent in tangents {
        program.vars[tangent].linear = true;
    }
    let res = mark_linear(program, &block.stmts).and_then(|()| {
        match block.results[..n_values]
            .iter()
            .any(|atom| program.is_linear(atom))
        {
            true => Err(VALUE_OF_TANGENTS.to_string()),
            false => Ok(()),
        }
    });
    let mut defined = std::collections::HashSet::new();
    crate::core::visit::collect_defs(program, lin, &mut defined);
    for var in defined {
        program.vars[var].linear = false;
    }
    res
}

/// The JVP of `ys = custom_jvp (xs…) primal lin`: `lin` inlined at the args and their tangents
/// (zero where an arg has none) gives the values and their tangents (Note [Custom
/// linearizations]).
pub(crate) fn jvp_custom_jvp(
    builder: &mut Builder,
    stmt: &Stmt,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let Expr::CustomJvp(CustomJvp { args, lin, .. }) = &stmt.expr else {
        unreachable!("jvp_custom_jvp of a custom_jvp")
    };
    let mut operands = args.clone();
    for arg in args {
        operands.push(match tangent_of(tangents, arg) {
            Some(tangent) => tangent,
            None => builder.zeros(&builder.ty(arg)),
        });
    }
    let (body, results) = inline(builder.program, *lin, &operands);
    emit_linear_map(builder, body)?;
    let n_outs = stmt.binders.len();
    for (binder, value) in stmt.binders.iter().zip(&results[..n_outs]) {
        if builder.is_linear(value) {
            return Err(AdError::BadCustomRule(VALUE_OF_TANGENTS.into()));
        }
        builder.stmts.push(Stmt {
            binders: vec![*binder],
            expr: Expr::from(*value),
        });
    }
    for (binder, tangent) in stmt.binders.iter().zip(&results[n_outs..]) {
        if builder.program.var_ty(*binder).elem.is_float() && builder.is_linear(tangent) {
            tangents.insert(*binder, *tangent);
        }
    }
    Ok(())
}

/// The transpose of `ts = custom_linear (res…) (ẋs…) bwd`: `custom_linear_t (res…) (cts…)
/// bwd` gives the cotangents of `ẋs` (the cotangents of `ts` that are missing are zero).
pub(crate) fn transpose_custom_linear(
    builder: &mut Builder,
    stmt: &Stmt,
    cts: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let Expr::CustomLinear(CustomLinear {
        transposed: false,
        residuals,
        operands,
        bwd,
    }) = &stmt.expr
    else {
        return Err(AdError::NoRule(
            "transposing a transposed custom_linear (a custom_vjp differentiated twice in \
             reverse mode) is not supported"
                .into(),
        ));
    };
    if stmt.binders.iter().all(|binder| !cts.contains_key(binder)) {
        return Ok(());
    }
    let mut seeds = Vec::with_capacity(stmt.binders.len());
    for binder in &stmt.binders {
        seeds.push(match cts.get(binder) {
            Some(ct) => *ct,
            None => {
                let ty = builder.program.var_ty(*binder).clone();
                builder.zeros(&ty)
            }
        });
    }
    let tys: Vec<ArrTy> = operands.iter().map(|atom| builder.ty(atom)).collect();
    let bwd = crate::core::inline::clone_block(builder.program, *bwd, &mut HashMap::new());
    let grads = builder.emit(
        Expr::from(CustomLinear {
            transposed: true,
            residuals: residuals.clone(),
            operands: seeds,
            bwd,
        }),
        tys,
        "custom_ct",
    );
    for (operand, grad) in operands.iter().zip(grads) {
        if builder.is_linear(operand) {
            builder.add_to(cts, *operand, Atom::Var(grad));
        }
    }
    Ok(())
}

impl Batcher<'_> {
    /// `build1 k (λi. custom_vjp (xs…) p f b)` ~> `custom_vjp (bulk xs…) p' f' b'` (and a
    /// `custom_jvp` likewise) where each block is batched over the batch axis (all its params
    /// and results batched): each lane runs the user's rule.
    pub(crate) fn batch_custom(&mut self, expr: &Expr, binders: &[VarId]) {
        let mut expr = expr.clone();
        crate::core::visit::map_expr_atoms(&mut expr, &mut |atom| Atom::Var(self.force_atom(atom)));
        let mut batched = HashMap::new();
        for block in crate::core::visit::expr_blocks(&expr) {
            let old_params = self.program.blocks[block].params.clone();
            let params: Vec<VarId> = old_params
                .iter()
                .map(|param| {
                    let (ty, hint) = self.batched_binder(*param);
                    let new = self.new_var(ty, &hint);
                    self.env.insert(*param, Status::Batched(new));
                    new
                })
                .collect();
            let n_results = self.program.blocks[block].results.len();
            let new = self.batch_subblock(block, params, &vec![true; n_results]);
            batched.insert(block, new);
        }
        crate::core::visit::map_expr_blocks(&mut expr, &mut |block| batched[&block]);
        let new_binders: Vec<VarId> = binders
            .iter()
            .map(|binder| {
                let (ty, hint) = self.batched_binder(*binder);
                self.new_var(ty, &hint)
            })
            .collect();
        self.emit_to(self.target, new_binders.clone(), expr);
        for (binder, new) in binders.iter().zip(new_binders) {
            self.env.insert(*binder, Status::Batched(new));
        }
    }
}

/// Whether a statement is, or holds in its blocks, a `custom_linear` (which only
/// transposition can run).
pub fn holds_custom_linear(program: &Program, stmt: &Stmt) -> bool {
    let is_custom_linear = |stmt: &Stmt| matches!(stmt.expr, Expr::CustomLinear(_));
    is_custom_linear(stmt)
        || expr_blocks(&stmt.expr).into_iter().any(|block| {
            (reachable_blocks(program, block).into_iter())
                .any(|id| program.blocks[id].stmts.iter().any(is_custom_linear))
        })
}

/// The rules `custom_vjp` and `custom_jvp` share: a primal function applied to `args`, run
/// as it is and differentiated by the user's rule (the first AD step inlines it, so the
/// engine and the exporter never see one; `$name` names it in export errors).
macro_rules! custom_rule_rules {
    ($name:expr) => {
        /// Its primal.
        fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
            let args = interp.atoms(&self.args);
            interp.eval_block(self.primal, args)
        }

        fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
            batcher.batch_custom(&stmt.expr, &stmt.binders);
        }

        fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
            ad::not_a_linear_statement()
        }

        fn cost(&self, program: &Program, _: u64) -> u64 {
            block_cost(program, self.primal)
        }

        /// Differentiated by its rule.
        fn linearity(&self) -> Linearity {
            Linearity::Compound(vec![true; self.args.len()])
        }

        fn fusion_class(&self, _: &Program) -> FusionClass {
            FusionClass::Bulk
        }

        fn run(&self, _: &mut dyn Bulk) -> Ran {
            unreachable!("{}", CUSTOM_INLINED)
        }

        fn export(&self, _: &mut dyn StableHlo, _: &Stmt) -> Exported {
            Err(ExportError::new($name, CUSTOM_INLINED))
        }
    };
}

impl Operation for CustomVjp {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        custom_vjp_tys(program, self)
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        jvp_custom_vjp(builder, stmt, tangents)
    }

    custom_rule_rules!("custom_vjp");
}

impl Operation for CustomJvp {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        custom_jvp_tys(program, self)
    }

    /// `lin` inlined at the args and their tangents.
    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        jvp_custom_jvp(builder, stmt, tangents)
    }

    custom_rule_rules!("custom_jvp");
}

impl Operation for CustomLinear {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        custom_linear_tys(program, self)
    }

    /// `bwd` when transposed; no forward rule otherwise.
    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        let Some((block, args)) = self.eval_block() else {
            unreachable!("{}", NO_FORWARD_RULE)
        };
        let args = interp.atoms(&args);
        interp.eval_block(block, args)
    }

    fn batch(&self, _: &mut Batcher, _: &Stmt) {
        unreachable!("custom_linear exists only inside `ad`")
    }

    fn jvp(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        Err(AdError::NoRule(NO_FORWARD_RULE.into()))
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        transpose_custom_linear(builder, stmt, cts)
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        block_cost(program, self.bwd)
    }

    /// Linear in its tangents (or cotangents), constant in its residuals.
    fn linearity(&self) -> Linearity {
        Linearity::Compound(
            [
                vec![false; self.residuals.len()],
                vec![true; self.operands.len()],
            ]
            .concat(),
        )
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn run(&self, _: &mut dyn Bulk) -> Ran {
        unreachable!("{}", CUSTOM_INLINED)
    }

    fn export(&self, _: &mut dyn StableHlo, _: &Stmt) -> Exported {
        Err(ExportError::new("custom_linear", CUSTOM_INLINED))
    }
}

#[cfg(test)]
mod tests {
    use crate::core::parse::parse_program;
    use crate::core::value::{Array, ArrayData};
    use crate::ops::interp::{self, InterpConfig};
    use crate::passes::pipeline::{self, PIPELINE};

    /// `vjp` of `x ↦ custom_vjp(x ↦ x * x, fwd, bwd) x` whose (wrong on purpose) `bwd` is
    /// `ct * 3`: the gradient is the rule's, not `2x`; the value is the primal's.
    const VJP_OF_CUSTOM: &str = "program(%0_x: []f64) {
           %1_y: []f64, %2_g: []f64 = vjp (%0_x) (1.0:f64) (\\%3_p: []f64 ->
             %4: []f64 = custom_vjp (%3_p) (\\%5: []f64 ->
               %6: []f64 = mul %5 %5
               in %6) (\\%7: []f64 ->
               %8: []f64 = mul %7 %7
               in %8, %7) (\\%9_res: []f64, %10_ct: []f64 ->
               %11: []f64 = mul %10_ct 3.0:f64
               in %11)
             in %4)
           in %1_y, %2_g
         }";

    fn run(text: &str, x: f64) -> Vec<f64> {
        let program = parse_program(text).expect("the test program parses");
        // The printer and the parser agree on custom_vjp.
        assert_eq!(parse_program(&program.to_string()).as_ref(), Ok(&program));
        let stages = ["linear".to_string(), "transposed".to_string()];
        let compiled = pipeline::run(&program, PIPELINE, &stages).expect("compiles");
        assert!(!super::any_custom(&compiled.program, compiled.program.main));
        let transposed = compiled
            .stages
            .iter()
            .find(|dump| dump.stage == "transposed")
            .expect("a transposed stage");
        assert!(
            transposed.text.contains("custom_linear_t"),
            "{}",
            transposed.text
        );
        let input = Array::new(vec![], ArrayData::F64(vec![x]));
        interp::run(&compiled.program, &[input], &InterpConfig::default())
            .expect("runs")
            .iter()
            .map(|array| match &*array.data {
                ArrayData::F64(values) => values[0],
                other => panic!("expected f64, got {other:?}"),
            })
            .collect()
    }

    #[test]
    fn reverse_mode_uses_the_rule_and_the_value_is_the_primal() {
        assert_eq!(run(VJP_OF_CUSTOM, 5.0), vec![25.0, 3.0]);
    }

    #[test]
    fn a_custom_vjp_outside_every_derivative_is_its_primal() {
        let text = "program(%0_x: []f64) {
               %1: []f64 = custom_vjp (%0_x) (\\%2: []f64 ->
                 %3: []f64 = mul %2 %2
                 in %3) (\\%4: []f64 ->
                 %5: []f64 = mul %4 %4
                 in %5, %4) (\\%6_res: []f64, %7_ct: []f64 ->
                 in %7_ct)
               in %1
             }";
        let program = parse_program(text).expect("parses");
        assert_eq!(parse_program(&program.to_string()).as_ref(), Ok(&program));
        let compiled = pipeline::run(&program, PIPELINE, &[]).expect("compiles");
        assert!(!super::any_custom(&compiled.program, compiled.program.main));
        let input = Array::new(vec![], ArrayData::F64(vec![4.0]));
        let out = interp::run(&compiled.program, &[input], &InterpConfig::default()).expect("runs");
        assert!(matches!(&*out[0].data, ArrayData::F64(values) if values == &vec![16.0]));
    }

    /// `x ↦ custom_jvp(x ↦ x * x, lin) x` whose (wrong on purpose) linear map is `t * 3`,
    /// differentiated in `mode`.
    fn custom_jvp_program(mode: &str) -> String {
        format!(
            "program(%0_x: []f64) {{
               %1_y: []f64, %2_d: []f64 = {mode} (%0_x) (1.0:f64) (\\%3_p: []f64 ->
                 %4: []f64 = custom_jvp (%3_p) (\\%5: []f64 ->
                   %6: []f64 = mul %5 %5
                   in %6) (\\%7: []f64, %8_t: []f64 ->
                   %9: []f64 = mul %7 %7
                   %10: []f64 = mul %8_t 3.0:f64
                   in %9, %10)
                 in %4)
               in %1_y, %2_d
             }}"
        )
    }

    #[test]
    fn both_modes_use_the_linearization_and_transpose_it() {
        for mode in ["jvp", "vjp"] {
            let program = parse_program(&custom_jvp_program(mode)).expect("parses");
            // The printer and the parser agree on custom_jvp.
            assert_eq!(parse_program(&program.to_string()).as_ref(), Ok(&program));
            let stages = ["linear".to_string()];
            let compiled = pipeline::run(&program, PIPELINE, &stages).expect("compiles");
            assert!(!super::any_custom(&compiled.program, compiled.program.main));
            let input = Array::new(vec![], ArrayData::F64(vec![5.0]));
            let out =
                interp::run(&compiled.program, &[input], &InterpConfig::default()).expect("runs");
            let values: Vec<f64> = out
                .iter()
                .map(|array| match &*array.data {
                    ArrayData::F64(values) => values[0],
                    other => panic!("expected f64, got {other:?}"),
                })
                .collect();
            assert_eq!(values, vec![25.0, 3.0], "{mode}");
        }
    }
}

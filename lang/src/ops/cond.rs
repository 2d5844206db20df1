//! `cond c u v` ([Smeding25] Fig 7): the conditional. Every rule in one place:
//!
//! - type rule: `result_tys` (called by `ops::verify`): `c` is a `Bool` scalar, both
//!   branches have no params and results of the same types, which are the binders';
//! - reference evaluation: `Interp::eval_cond` runs only the taken branch (equivalent to
//!   [Smeding25]'s strict `cond` because every operation is total);
//! - batching: `Batcher::batch_cond`: with an unbatched condition the branches are batched in
//!   place, with a batched one both run in bulk and are selected ([Smeding25] §5.2);
//! - JVP: `jvp_cond` if-converts: both branches run and their results and tangents are
//!   selected (the strict conditional of [Smeding25] §5.2; not [HuotShaikhha] Fig 10's product by b
//!   and 1−b, which NaN in the untaken branch poisons). So no `cond` is ever linear, and it
//!   has no transpose; in a user's linear map (`custom`) a `cond` over tangents is
//!   if-converted the same way (`emit_linear_cond`);
//! - cost: `cost`, the larger of its branches ([HuotShaikhha] Fig 11 has no conditional; the
//!   condition is an atom, already computed), and a level of nesting;
//! - fusion class: `Bulk` (TODO(fusion): branches run on the bulk evaluator).

use std::collections::HashMap;

use super::ad::{self, AdError, AdResult, Builder, Derivs};
use super::batch::{Batcher, Status};
use super::bulk::{Bulk, Ran};
use super::hlo::{self, Exported, StableHlo};
use super::rewrite::{Expand, Expansion, Rule};
use super::{FusionClass, Linearity, Operation};
use crate::core::inline::clone_block;
use crate::core::ir::{
    ArrTy, Atom, Block, BlockId, Cond, Elem, Expr, PrimApp, Program, Scalar, Stmt, VarId,
};
use crate::core::print::ty_text;
use crate::core::value::Array;
use crate::ops::interp::{Interp, Res};
use crate::ops::verify::{atom_ty, block, result_tys as block_result_tys, tys_text};
use crate::prim::{Emitter, Prim};

pub fn result_tys(
    program: &Program,
    cond: &Atom,
    then_block: BlockId,
    else_block: BlockId,
) -> Result<Vec<ArrTy>, String> {
    let cond_ty = atom_ty(program, cond)?;
    if cond_ty != ArrTy::scalar(Elem::Bool) {
        return Err(format!("cond on {}, not a bool scalar", ty_text(&cond_ty)));
    }
    let then_block = block(program, then_block)?;
    let else_block = block(program, else_block)?;
    if !then_block.params.is_empty() || !else_block.params.is_empty() {
        return Err("cond branches take no params".to_string());
    }
    let then_tys = block_result_tys(program, then_block)?;
    let else_tys = block_result_tys(program, else_block)?;
    if then_tys != else_tys {
        return Err(format!(
            "cond branches have different result types ({}) and ({})",
            tys_text(&then_tys),
            tys_text(&else_tys)
        ));
    }
    Ok(then_tys)
}

impl Interp<'_> {
    /// Runs the taken branch only.
    pub(crate) fn eval_cond(
        &mut self,
        cond: &Atom,
        then_block: BlockId,
        else_block: BlockId,
    ) -> Res<Vec<Array>> {
        let taken = match self.atom(cond).as_scalar() {
            Some(Scalar::Bool(true)) => then_block,
            Some(Scalar::Bool(false)) => else_block,
            other => panic!("interp: cond on {other:?} (the verifier rules this out)"),
        };
        self.eval_block(taken, Vec::new())
    }
}

/// The larger of the two branches.
pub fn cost(program: &Program, then_block: BlockId, else_block: BlockId) -> u64 {
    let block_cost = crate::ops::cost::block_cost;
    block_cost(program, then_block).max(block_cost(program, else_block))
}

impl Batcher<'_> {
    /// `cond` inside a build: with an unbatched condition both branches are batched in place;
    /// with a batched condition both are evaluated in bulk and combined with a strict select
    /// ([Smeding25] §5.2; Fig 9 writes it as `index [u, v] [cond b 0 1]`).
    pub(crate) fn batch_cond(
        &mut self,
        cond: Atom,
        then_block: BlockId,
        else_block: BlockId,
        binders: &[VarId],
    ) {
        let cond_status = self.status(cond);
        if let Status::Unbatched(cond_atom) = cond_status {
            let all_batched = vec![true; binders.len()];
            let then_new = self.batch_subblock(then_block, Vec::new(), &all_batched);
            let else_new = self.batch_subblock(else_block, Vec::new(), &all_batched);
            let new_binders: Vec<VarId> = binders
                .iter()
                .map(|binder| {
                    let ty = self.batched_ty(self.program.var_ty(*binder));
                    let hint = self.program.vars[*binder].hint.clone();
                    self.new_var(ty, &hint)
                })
                .collect();
            self.emit_to(
                self.target,
                new_binders.clone(),
                Expr::from(Cond {
                    cond: cond_atom,
                    then_block: then_new,
                    else_block: else_new,
                }),
            );
            for (binder, new) in binders.iter().zip(new_binders) {
                self.env.insert(*binder, Status::Batched(new));
            }
            return;
        }
        let cond_bulk = self.force(cond_status);
        let then_results = self.inline_block(then_block);
        let else_results = self.inline_block(else_block);
        for ((binder, then_atom), else_atom) in binders.iter().zip(then_results).zip(else_results) {
            let then_bulk = self.force_atom(then_atom);
            let else_bulk = self.force_atom(else_atom);
            let ty = self.batched_ty(self.program.var_ty(*binder));
            let mask = self.broadcast_batch(cond_bulk, &ty.shape[1..]);
            let hint = self.program.vars[*binder].hint.clone();
            let res = self.emit1(
                Expr::from(PrimApp(
                    Prim::Select,
                    vec![Atom::Var(mask), Atom::Var(then_bulk), Atom::Var(else_bulk)],
                )),
                ty,
                &hint,
            );
            self.env.insert(*binder, Status::Batched(res));
        }
    }
}

/// `cond` is if-converted: both branches run (every operation is total) and their results
/// and tangents are selected (the strict conditional of [Smeding25] §5.2).
pub(crate) fn jvp_cond(
    builder: &mut Builder,
    stmt: &Stmt,
    cond: Atom,
    then_block: BlockId,
    else_block: BlockId,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let mut branch_results = Vec::new();
    for block in [then_block, else_block] {
        let copy = clone_block(builder.program, block, &mut HashMap::new());
        let copied: Block = builder.program.blocks[copy].clone();
        ad::jvp_stmts(builder, &copied.stmts, tangents)?;
        branch_results.push(copied.results);
    }
    for (position, binder) in stmt.binders.iter().enumerate() {
        let (a, b) = (branch_results[0][position], branch_results[1][position]);
        let mask = builder.select_into(*binder, cond, [a, b]);
        let ty = builder.program.var_ty(*binder).clone();
        if ty.elem.is_float() {
            let (da, db) = (ad::tangent_of(tangents, &a), ad::tangent_of(tangents, &b));
            if da.is_some() || db.is_some() {
                let da = da.unwrap_or_else(|| builder.zeros(&ty));
                let db = db.unwrap_or_else(|| builder.zeros(&ty));
                let tangent = builder.prim(Prim::Select, &[mask, da, db]);
                tangents.insert(*binder, tangent);
            }
        }
    }
    Ok(())
}

/// A `cond` of a user's linear map (`custom`'s `emit_linear_map`, which is `emit`)
/// if-converted, since a `cond` has no transpose: each branch inlined and emitted by `emit`,
/// then each binder selected as `jvp_cond` does, linear when a selected result is; `None` if
/// `stmt` is no `cond`.
pub(crate) fn emit_linear_cond(
    builder: &mut Builder,
    stmt: &Stmt,
    emit: fn(&mut Builder, Vec<Stmt>) -> Result<(), AdError>,
) -> Option<Result<(), AdError>> {
    let Expr::Cond(Cond {
        cond,
        then_block,
        else_block,
    }) = &stmt.expr
    else {
        return None;
    };
    let mut branches = Vec::new();
    for block in [*then_block, *else_block] {
        let (body, results) = super::custom::inline(builder.program, block, &[]);
        if let Err(error) = emit(builder, body) {
            return Some(Err(error));
        }
        branches.push(results);
    }
    for (position, &binder) in stmt.binders.iter().enumerate() {
        let selected = [branches[0][position], branches[1][position]];
        let linear = selected.iter().any(|atom| builder.is_linear(atom));
        builder.set_linear(&[binder], linear);
        builder.select_into(binder, *cond, selected);
    }
    Some(Ok(()))
}

impl Builder<'_> {
    /// A scalar condition broadcast to a shape.
    pub(crate) fn constant_mask(&mut self, cond: Atom, shape: &[usize]) -> Atom {
        self.broadcast(cond, shape, "mask")
    }

    /// Emits `binder = select mask a b`, `mask` the scalar `cond` broadcast to the binder's
    /// shape; returns the mask.
    fn select_into(&mut self, binder: VarId, cond: Atom, [a, b]: [Atom; 2]) -> Atom {
        let shape = self.program.var_ty(binder).shape.clone();
        let mask = self.constant_mask(cond, &shape);
        self.stmts.push(Stmt {
            binders: vec![binder],
            expr: Expr::from(PrimApp(Prim::Select, vec![mask, a, b])),
        });
        mask
    }
}

impl Operation for Cond {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        result_tys(program, &self.cond, self.then_block, self.else_block)
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        interp.eval_cond(&self.cond, self.then_block, self.else_block)
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        batcher.batch_cond(self.cond, self.then_block, self.else_block, &stmt.binders);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        jvp_cond(
            builder,
            stmt,
            self.cond,
            self.then_block,
            self.else_block,
            tangents,
        )
    }

    /// `jvp_cond` if-converts: no linear `cond` is left to transpose.
    fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        ad::not_a_linear_statement()
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        cost(program, self.then_block, self.else_block)
    }

    /// The condition may not be linear; the branches decide the rest.
    fn linearity(&self) -> Linearity {
        Linearity::Compound(vec![false])
    }

    fn linear_through_blocks(&self) -> bool {
        true
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.cond(&self.cond, self.then_block, self.else_block)
    }

    fn expand(&self, cx: &mut Expand, stmt: &Stmt) -> Option<Expansion> {
        let converted = if_conversion(cx.program, self, stmt)?;
        cx.fire(Rule::CondToSelect);
        Some(Expansion::Stmts(converted))
    }

    /// `stablehlo.if` with the two blocks as its regions.
    fn export(&self, cx: &mut dyn StableHlo, stmt: &Stmt) -> Exported {
        let pred = cx.atom(&self.cond)?;
        let tys = hlo::binder_tys(cx.program(), &stmt.binders);
        let then_region = cx.region(&[], &mut |cx, _| cx.block(self.then_block, &[]))?;
        let else_region = cx.region(&[], &mut |cx, _| cx.block(self.else_block, &[]))?;
        Ok(cx.op_with_regions(
            "stablehlo.if",
            &[&pred],
            "",
            vec![then_region, else_region],
            tys,
        ))
    }
}

/// If-conversion: `if c then (ts…; a…) else (es…; b…)` whose values are scalars and whose
/// branches only apply primitives to scalars is `ts…; es…; select c a b…`. Primitives are
/// total and pure ([Smeding25] §5.2's totality), so evaluating both branches and choosing gives
/// the same values as branching, and a loop body whose only nested blocks were such conds
/// (`max_by`'s `if f x > f y then x else y`, a user's `if c > 0 then …`) becomes
/// straight-line scalar code, which runs on registers (`exec::scalar_loop`). Branches that
/// read tables keep the cond: a read out of range in the branch not taken would be an error
/// in strict mode.
fn if_conversion(program: &Program, cond: &Cond, stmt: &Stmt) -> Option<Vec<Stmt>> {
    let Cond {
        cond,
        then_block,
        else_block,
    } = cond;
    let scalar = |var: &VarId| program.var_ty(*var).rank() == 0;
    if !stmt.binders.iter().all(scalar) {
        return None;
    }
    let branches = [&program.blocks[*then_block], &program.blocks[*else_block]];
    let convertible = branches.iter().all(|branch| {
        (branch.stmts.iter()).all(|inner| {
            super::straight_line(&inner.expr).is_some() && inner.binders.iter().all(scalar)
        })
    });
    if !convertible {
        return None;
    }
    let [then_, else_] = branches.map(|branch| (branch.stmts.clone(), &branch.results[..]));
    Some(both_then_select(*cond, then_, else_, &stmt.binders))
}

/// Both branches' statements, then `select cond a b` for each pair of results: what a `cond`
/// is if-converted to.
fn both_then_select(
    cond: Atom,
    (mut stmts, then_results): (Vec<Stmt>, &[Atom]),
    (else_stmts, else_results): (Vec<Stmt>, &[Atom]),
    binders: &[VarId],
) -> Vec<Stmt> {
    stmts.extend(else_stmts);
    let selects = (binders.iter())
        .zip(then_results.iter().zip(else_results))
        .map(|(binder, (a, b))| Stmt {
            binders: vec![*binder],
            expr: Expr::from(PrimApp(Prim::Select, vec![cond, *a, *b])),
        });
    stmts.extend(selects);
    stmts
}

/// If-converts every `cond` of `block`, nested ones first, whatever its branches compute
/// (`ops::monoid`: an operator is total straight-line code, so both branches may run and
/// each result is a `select`); the branch blocks are left unreachable.
pub(crate) fn if_convert_all(program: &mut Program, block: BlockId) {
    let stmts = std::mem::take(&mut program.blocks[block].stmts);
    let mut out = Vec::with_capacity(stmts.len());
    for stmt in stmts {
        let Expr::Cond(Cond {
            cond,
            then_block,
            else_block,
        }) = stmt.expr
        else {
            out.push(stmt);
            continue;
        };
        let [then_, else_] = [then_block, else_block].map(|branch| {
            if_convert_all(program, branch);
            let branch = &mut program.blocks[branch];
            (std::mem::take(&mut branch.stmts), branch.results.clone())
        });
        out.extend(both_then_select(
            cond,
            (then_.0, &then_.1),
            (else_.0, &else_.1),
            &stmt.binders,
        ));
    }
    program.blocks[block].stmts = out;
}

//! `fold k init (λi carry…. body)` and `scan k init (λi carry…. body)`: the sequential loops
//! ([HuotShaikhha]'s `foldl` and `scanl`; [Shaikhha23] Fig 7's `ifold`). Every rule of the two in one
//! place:
//!
//! - type rule: `fold_tys`, `scan_tys` (called by `ops::verify`): params are an `I64` scalar
//!   then one per carry with the type of its initial value; results are the new carries with
//!   the same types, then for a scan the ys; a scan binds the carries then `k ::: shape of y`
//!   for each y;
//! - reference evaluation: `Interp::eval_fold`, `Interp::eval_scan`;
//! - batching: `Batcher::batch_loop`: a loop inside a build runs once over batched state (the
//!   carries that depend on the batch index get the batch axis, a fixpoint over the body);
//! - JVP: `jvp_loop`, the loop carries the tangents of its float carries along ([Shaikhha23]
//!   Fig 7's forward mode of `ifold`);
//! - transpose: `split_loop` runs the primal part forward as a scan that stacks the carries;
//!   `transpose_loop` runs the iterations backwards, recomputing each from its stacked carry
//!   ([HuotShaikhha] Fig 16's reverse rule for `foldl`), with reads of outer tables hoisted out of
//!   the backward loop (Note [Reads of outer tables in a reversed loop]);
//! - linearity: a differentiated loop is linear in its tangent carries and constant in its
//!   primal ones, so `ops::ad` keeps it whole (`LinearItem::Loop`) rather than transposing
//!   it operand by operand;
//! - cost: `cost`, `size × (cost of the body + elements of the body's results)` ([HuotShaikhha]
//!   Fig 11's per-element moves of map2/reduce/scanl), and a level of nesting;
//! - fusion class: `Bulk`; loop bodies over tables get schedules of their own (`passes::fuse`,
//!   Note [Loop bodies]).
//!
//! Does not handle yet: a read of an outer table inside a loop nested in the body is hoisted
//! out of its own loop only, so its cotangent is a whole-table addition per step of the
//! enclosing loop; a gather whose index function needs a non-scalar value of the carry stays
//! inside the backward loop (a whole-table scatter per step).

use std::collections::{HashMap, HashSet};

use super::ad::{self, AdError, AdResult, Builder, Derivs, LinearItem};
use super::batch::{Batcher, Status};
use super::bulk::{Bulk, Ran};
use super::hlo::{self, Exported, StableHlo, Val};
use super::{Element, FusionClass, Linearity, Operation};
use crate::core::inline::clone_block;
use crate::core::ir::{
    ArrTy, Atom, Block, BlockId, Elem, Expr, Fold, Gather, Index, PrimApp, Program, Scalar, Scan,
    Scatter, Stmt, Transpose, VarId,
};
use crate::core::value::Array;
use crate::core::visit::{collect_uses, expr_atoms, expr_blocks};
use crate::ops::interp::{index_scalar, Interp, Res, Stacked};
use crate::ops::verify::{atom_ty, block, expect_index, prepend, result_tys, tys_text, var_ty};
use crate::prim::{Emitter, Prim};

pub fn fold_tys(program: &Program, init: &[Atom], body: BlockId) -> Result<Vec<ArrTy>, String> {
    let (carry_tys, _) = loop_tys(program, init, body, "fold")?;
    Ok(carry_tys)
}

pub fn scan_tys(
    program: &Program,
    size: usize,
    init: &[Atom],
    body: BlockId,
) -> Result<Vec<ArrTy>, String> {
    let (mut tys, y_tys) = loop_tys(program, init, body, "scan")?;
    tys.extend(y_tys.into_iter().map(|ty| prepend(size, ty)));
    Ok(tys)
}

/// The carry types of a fold/scan, checked against its body, and the types of the body's
/// extra results (the ys of a scan; a fold must have none).
fn loop_tys(
    program: &Program,
    init: &[Atom],
    body: BlockId,
    what: &str,
) -> Result<(Vec<ArrTy>, Vec<ArrTy>), String> {
    let block = block(program, body)?;
    if block.params.len() != 1 + init.len() {
        return Err(format!(
            "{what} body has {} params, expected an index and {} carries",
            block.params.len(),
            init.len()
        ));
    }
    expect_index(
        &var_ty(program, block.params[0])?,
        &format!("the {what} index"),
    )?;
    let carry_tys = carry_tys(program, init, &block.params[1..], what)?;
    let mut results = result_tys(program, block)?;
    let n_carry = carry_tys.len();
    let extra_allowed = what == "scan";
    if results.len() < n_carry || (!extra_allowed && results.len() != n_carry) {
        return Err(format!(
            "{what} body returns {} results for {n_carry} carries",
            results.len()
        ));
    }
    let ys = results.split_off(n_carry);
    check_new_carries(&results, &carry_tys, what)?;
    Ok((carry_tys, ys))
}

/// The types of a loop's initial values, which its body's carry params must have.
pub(crate) fn carry_tys(
    program: &Program,
    init: &[Atom],
    carry_params: &[VarId],
    what: &str,
) -> Result<Vec<ArrTy>, String> {
    let carry_tys = init
        .iter()
        .map(|atom| atom_ty(program, atom))
        .collect::<Result<Vec<_>, _>>()?;
    let param_tys = carry_params
        .iter()
        .map(|&var| var_ty(program, var))
        .collect::<Result<Vec<_>, _>>()?;
    if param_tys != carry_tys {
        return Err(format!(
            "{what} carry params have types ({}) but the initial values ({})",
            tys_text(&param_tys),
            tys_text(&carry_tys)
        ));
    }
    Ok(carry_tys)
}

/// Checks that a loop body returns new carries of the carries' types.
pub(crate) fn check_new_carries(
    results: &[ArrTy],
    carry_tys: &[ArrTy],
    what: &str,
) -> Result<(), String> {
    if results != carry_tys {
        return Err(format!(
            "{what} body returns carries of types ({}) but the carries have types ({})",
            tys_text(results),
            tys_text(carry_tys)
        ));
    }
    Ok(())
}

impl Interp<'_> {
    pub(crate) fn eval_fold(
        &mut self,
        size: usize,
        init: &[Atom],
        body: BlockId,
    ) -> Res<Vec<Array>> {
        let mut carry: Vec<Array> = init.iter().map(|atom| self.atom(atom)).collect();
        for i in 0..size {
            self.check_interrupt()?;
            let mut args = vec![index_scalar(i)];
            args.extend(carry);
            carry = self.eval_block(body, args)?;
        }
        Ok(carry)
    }

    /// The final carry, then the ys stacked along a new outermost axis.
    pub(crate) fn eval_scan(
        &mut self,
        stmt: &Stmt,
        size: usize,
        init: &[Atom],
        body: BlockId,
    ) -> Res<Vec<Array>> {
        let n_carry = init.len();
        let mut carry: Vec<Array> = init.iter().map(|atom| self.atom(atom)).collect();
        let mut stacked: Vec<Stacked> = (n_carry..stmt.binders.len())
            .map(|position| Stacked::new(self.binder_ty(stmt, position)))
            .collect();
        for i in 0..size {
            self.check_interrupt()?;
            let mut args = vec![index_scalar(i)];
            args.extend(carry);
            let mut results = self.eval_block(body, args)?;
            let ys = results.split_off(n_carry);
            carry = results;
            for (out, value) in stacked.iter_mut().zip(&ys) {
                out.append(value);
            }
        }
        carry.extend(stacked.into_iter().map(Stacked::finish));
        Ok(carry)
    }
}

/// `size` runs of a loop body: its work plus moving its results each time.
pub fn cost(program: &Program, size: usize, body: BlockId) -> u64 {
    let results: u64 = program.blocks[body]
        .results
        .iter()
        .map(|atom| program.atom_ty(atom).n_elems() as u64)
        .sum();
    size as u64 * (crate::ops::cost::block_cost(program, body) + results)
}

impl Batcher<'_> {
    /// `fold`/`scan` inside a build: the loop runs once, over batched state. A carry is batched
    /// when its initial value or its update depends on the batch index (a fixpoint over the
    /// body); a scan output likewise.
    pub(crate) fn batch_loop(
        &mut self,
        size: usize,
        init: &[Atom],
        body: BlockId,
        binders: &[VarId],
        is_scan: bool,
    ) {
        let body_block = self.program.blocks[body].clone();
        let n_carries = init.len();
        let (carry_batched, depends) =
            self.batched_carries(&body_block, &[], &[], &body_block.params[1..], 0, init);
        let ys_batched = depends[n_carries..].to_vec();
        // Parameters: the loop index stays unbatched; batched carries get new variables.
        let mut params = vec![body_block.params[0]];
        params.extend(self.batched_params(&body_block.params[1..], &carry_batched));
        let mut result_batched = carry_batched.clone();
        if is_scan {
            result_batched.extend(&ys_batched);
        }
        let new_body = self.batch_subblock(body, params, &result_batched);
        let new_init = self.batched_inits(init, &carry_batched);
        // Binders: batched carries are bulk; batched scan outputs come out as [size, k, …] and
        // are transposed to [k, size, …].
        let mut new_binders = self.batched_binders(&binders[..n_carries], &carry_batched);
        let mut fixups = Vec::new();
        for (binder, is_batched) in binders[n_carries..].iter().zip(&ys_batched) {
            if !is_batched {
                new_binders.push(*binder);
                continue;
            }
            let ty = self.program.var_ty(*binder).clone();
            let hint = self.program.vars[*binder].hint.clone();
            let mut stacked_shape = vec![ty.shape[0], self.size];
            stacked_shape.extend(&ty.shape[1..]);
            let new = self.new_var(ArrTy::new(stacked_shape, ty.elem), &hint);
            new_binders.push(new);
            fixups.push((*binder, new));
        }
        let expr = Expr::sequential_loop(is_scan, size, new_init, new_body);
        self.emit_to(self.target, new_binders, expr);
        for (binder, stacked) in fixups {
            let ty = self.batched_ty(self.program.var_ty(binder));
            let hint = self.program.vars[binder].hint.clone();
            let res = self.emit1(
                Expr::from(Transpose {
                    perm: vec![1, 0],
                    array: Atom::Var(stacked),
                }),
                ty,
                &hint,
            );
            self.env.insert(binder, Status::Batched(res));
        }
    }

    /// Which carries of a loop are batched: those whose initial value depends on the batch
    /// index and, a fixpoint over the body, those whose update depends on a batched value.
    /// `carry_params[j]` is updated by `body.results[first_carry + j]`; `params` are other
    /// params of the body, batched where `params_batched` says. Returns the carries' flags
    /// and, for those, which results of the body depend on the batch index.
    pub(crate) fn batched_carries(
        &self,
        body: &Block,
        params: &[VarId],
        params_batched: &[bool],
        carry_params: &[VarId],
        first_carry: usize,
        init: &[Atom],
    ) -> (Vec<bool>, Vec<bool>) {
        let mut carry_batched: Vec<bool> =
            init.iter().map(|atom| !self.is_unbatched(*atom)).collect();
        let all_params: Vec<VarId> = params.iter().chain(carry_params).copied().collect();
        loop {
            let batched: Vec<bool> = params_batched
                .iter()
                .chain(&carry_batched)
                .copied()
                .collect();
            let depends = self.loop_dependence(body, &all_params, &batched);
            let mut changed = false;
            for (position, flag) in carry_batched.iter_mut().enumerate() {
                if !*flag && depends[first_carry + position] {
                    *flag = true;
                    changed = true;
                }
            }
            if !changed {
                return (carry_batched, depends);
            }
        }
    }

    /// The params of a batched loop body: a batched param gets a new variable with the batch
    /// axis (its status in `env`), an unbatched one stays.
    pub(crate) fn batched_params(&mut self, params: &[VarId], batched: &[bool]) -> Vec<VarId> {
        params
            .iter()
            .zip(batched)
            .map(|(param, is_batched)| {
                if !is_batched {
                    return *param;
                }
                let ty = self.batched_ty(self.program.var_ty(*param));
                let new = self.new_var(ty, "c");
                self.env.insert(*param, Status::Batched(new));
                new
            })
            .collect()
    }

    /// The initial values of a batched loop: the batched ones as bulk arrays.
    pub(crate) fn batched_inits(&mut self, init: &[Atom], batched: &[bool]) -> Vec<Atom> {
        init.iter()
            .zip(batched)
            .map(|(atom, is_batched)| match is_batched {
                true => Atom::Var(self.force_atom(*atom)),
                false => *atom,
            })
            .collect()
    }

    /// The binders of a batched loop's carries: a new bulk variable for each batched one
    /// (its status in `env`), the same binder for the others.
    pub(crate) fn batched_binders(&mut self, binders: &[VarId], batched: &[bool]) -> Vec<VarId> {
        binders
            .iter()
            .zip(batched)
            .map(|(binder, is_batched)| {
                if !is_batched {
                    return *binder;
                }
                let (ty, hint) = self.batched_binder(*binder);
                let new = self.new_var(ty, &hint);
                self.env.insert(*binder, Status::Batched(new));
                new
            })
            .collect()
    }

    /// Which results of a loop body depend on the batch index, given which of `params` do.
    fn loop_dependence(&self, body: &Block, params: &[VarId], batched: &[bool]) -> Vec<bool> {
        let mut dependent: HashSet<VarId> = HashSet::new();
        for (param, is_batched) in params.iter().zip(batched) {
            if *is_batched {
                dependent.insert(*param);
            }
        }
        let depends_atom = |atom: &Atom, dependent: &HashSet<VarId>| match atom {
            Atom::Var(var) => dependent.contains(var) || !self.is_unbatched(*atom),
            Atom::Lit(_) => false,
        };
        for stmt in &body.stmts {
            let mut uses = expr_atoms(&stmt.expr);
            for nested in expr_blocks(&stmt.expr) {
                let mut nested_uses = Vec::new();
                collect_uses(self.program, nested, &mut nested_uses);
                uses.extend(nested_uses.into_iter().map(Atom::Var));
            }
            if uses.iter().any(|atom| depends_atom(atom, &dependent)) {
                dependent.extend(&stmt.binders);
            }
        }
        body.results
            .iter()
            .map(|atom| depends_atom(atom, &dependent))
            .collect()
    }
}

/// A loop carrying primal and tangent values, split for transposition (`ops::ad::split`):
/// its primal part runs forward as a scan that also stacks the carry entering every
/// iteration, and the whole statement is transposed by `transpose_loop`.
fn split_loop(program: &mut Program, stmt: &Stmt) -> (Stmt, LinearItem) {
    // A loop carrying primal and tangent values: run the primal part as a scan that
    // also stacks the carries.
    let shape = loop_shape(stmt, program);
    let body: Block = program.blocks[shape.body].clone();
    let carry_params = body.params[1..=shape.n_carries].to_vec();
    let mut results: Vec<Atom> = body.results[..shape.n_carries].to_vec();
    if shape.is_scan {
        let ys_start = shape.n_carries + shape.n_carry_tangents;
        results.extend(&body.results[ys_start..ys_start + shape.n_ys]);
    }
    results.extend(carry_params.iter().copied().map(Atom::Var));
    let mut params = vec![body.params[0]];
    params.extend(&carry_params);
    // Nested loops contribute their primal scans too.
    let (primal_stmts, _) = ad::split(program, &body.stmts);
    let primal_body = program.blocks.push(Block {
        params,
        stmts: primal_stmts,
        results,
    });
    let mut binders: Vec<VarId> = stmt.binders[..shape.n_carries].to_vec();
    if shape.is_scan {
        let ys_start = shape.n_carries + shape.n_carry_tangents;
        binders.extend(&stmt.binders[ys_start..ys_start + shape.n_ys]);
    }
    let stacked: Vec<VarId> = carry_params
        .iter()
        .map(|param| {
            let ty = program.var_ty(*param).clone();
            let mut stacked_shape = vec![shape.size];
            stacked_shape.extend(&ty.shape);
            program.new_var(ArrTy::new(stacked_shape, ty.elem), "carries")
        })
        .collect();
    binders.extend(&stacked);
    let init = shape.init[..shape.n_carries].to_vec();
    let primal = Stmt {
        binders,
        expr: Expr::from(Scan {
            size: shape.size,
            init,
            body: primal_body,
        }),
    };
    let item = LinearItem::Loop {
        stmt: stmt.clone(),
        stacked,
    };
    (primal, item)
}

/// `fold`/`scan`: the loop carries the tangents of its float carries along (forward mode).
pub(crate) fn jvp_loop(
    builder: &mut Builder,
    stmt: &Stmt,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let (size, init, body, is_scan) = match &stmt.expr {
        Expr::Fold(Fold { size, init, body }) => (*size, init, *body, false),
        Expr::Scan(Scan { size, init, body }) => (*size, init, *body, true),
        _ => unreachable!("only loops reach jvp_loop"),
    };
    let layout = CarryLayout {
        lead_params: 1,
        lead_results: 0,
    };
    jvp_carrying(builder, stmt, init, body, layout, tangents, |init, body| {
        Expr::sequential_loop(is_scan, size, init, body)
    })
}

/// Where a loop body keeps its carries: after `lead_params` params (a fold's index) and after
/// `lead_results` results (a while's condition). The results after the new carries are ys,
/// which the statement binds after its carries.
pub(crate) struct CarryLayout {
    pub(crate) lead_params: usize,
    pub(crate) lead_results: usize,
}

/// The forward derivative of a loop with carries (`fold`, `scan`, `while`): the loop carries
/// the tangents of its float carries along ([Shaikhha23] Fig 7's forward mode of `ifold`). The
/// body's params become `[params…, carry tangents…]`, its results `[lead results…, carries…,
/// carry tangents…, ys…, y tangents…]`, the binders `[carries…, carry tangents…, ys…, y
/// tangents…]`; `rebuild` makes the loop of the new initial values and body.
pub(crate) fn jvp_carrying(
    builder: &mut Builder,
    stmt: &Stmt,
    init: &[Atom],
    body: BlockId,
    layout: CarryLayout,
    tangents: &mut HashMap<VarId, Atom>,
    rebuild: impl FnOnce(Vec<Atom>, BlockId) -> Expr,
) -> Result<(), AdError> {
    // A loop that computes no float (an ordering code, a count) has no tangent: it stays a
    // primal statement, and its body is not differentiated (its reads of differentiated
    // tables would otherwise become linear statements inside a primal loop).
    let has_float_output = stmt
        .binders
        .iter()
        .any(|binder| builder.program.var_ty(*binder).elem.is_float());
    if !has_float_output {
        builder.stmts.push(stmt.clone());
        return Ok(());
    }
    let source: Block = builder.program.blocks[body].clone();
    let n_carries = init.len();
    let float_carries: Vec<usize> = (0..n_carries)
        .filter(|position| builder.ty(&init[*position]).elem.is_float())
        .collect();
    let mut inner = Builder::new(&mut *builder.program);
    let mut inner_tangents = tangents.clone();
    let mut params = source.params.clone();
    for position in &float_carries {
        let param = source.params[layout.lead_params + position];
        let ty = inner.program.var_ty(param).clone();
        let tangent = inner.program.new_linear_var(ty, "c_dot");
        inner_tangents.insert(param, Atom::Var(tangent));
        params.push(tangent);
    }
    ad::jvp_stmts(&mut inner, &source.stmts, &mut inner_tangents)?;
    let mut results = source.results.clone();
    let ys: Vec<Atom> = results.split_off(layout.lead_results + n_carries);
    for position in &float_carries {
        let carry = source.results[layout.lead_results + position];
        let tangent = ad::tangent_of(&inner_tangents, &carry)
            .unwrap_or_else(|| inner.zeros(&inner.ty(&carry)));
        results.push(tangent);
    }
    let float_ys: Vec<usize> = (0..ys.len())
        .filter(|position| inner.ty(&ys[*position]).elem.is_float())
        .collect();
    let mut y_tangents = Vec::new();
    for position in &float_ys {
        let y = ys[*position];
        y_tangents.push(
            ad::tangent_of(&inner_tangents, &y).unwrap_or_else(|| inner.zeros(&inner.ty(&y))),
        );
    }
    results.extend(ys);
    results.extend(y_tangents);
    let stmts = inner.stmts;
    let new_body = builder.program.blocks.push(Block {
        params,
        stmts,
        results,
    });
    // New init and binders: carries, carry tangents, [ys, y tangents].
    let mut new_init = init.to_vec();
    for position in &float_carries {
        let tangent = ad::tangent_of(tangents, &init[*position])
            .unwrap_or_else(|| builder.zeros(&builder.ty(&init[*position])));
        new_init.push(tangent);
    }
    let mut binders: Vec<VarId> = stmt.binders[..n_carries].to_vec();
    let mut new_tangents = Vec::new();
    for position in &float_carries {
        let binder = stmt.binders[*position];
        let ty = builder.program.var_ty(binder).clone();
        let tangent = builder.program.new_var(ty, "c_dot");
        new_tangents.push((binder, tangent));
        binders.push(tangent);
    }
    binders.extend(&stmt.binders[n_carries..]);
    for position in &float_ys {
        let binder = stmt.binders[n_carries + position];
        let ty = builder.program.var_ty(binder).clone();
        let tangent = builder.program.new_var(ty, "y_dot");
        new_tangents.push((binder, tangent));
        binders.push(tangent);
    }
    for (_, tangent) in &new_tangents {
        builder.set_linear(&[*tangent], true);
    }
    let expr = rebuild(new_init, new_body);
    builder.stmts.push(Stmt { binders, expr });
    for (binder, tangent) in new_tangents {
        tangents.insert(binder, Atom::Var(tangent));
    }
    Ok(())
}

/// The positions of a differentiated loop's parts (see `jvp_loop`): the body parameters are
/// `[i, carries…, carry tangents…]`, the results and binders `carries, carry tangents` and,
/// for a scan, `ys, y tangents`.
struct LoopShape {
    size: usize,
    is_scan: bool,
    n_carries: usize,
    n_carry_tangents: usize,
    n_ys: usize,
    init: Vec<Atom>,
    body: BlockId,
}

fn loop_shape(stmt: &Stmt, program: &Program) -> LoopShape {
    let linear = |var: &&VarId| program.vars[**var].linear;
    let (size, init, body, is_scan) = match &stmt.expr {
        Expr::Fold(Fold { size, init, body }) => (*size, init.clone(), *body, false),
        Expr::Scan(Scan { size, init, body }) => (*size, init.clone(), *body, true),
        _ => unreachable!("only loops have a loop shape"),
    };
    let params = &program.blocks[body].params;
    let n_carry_tangents = params[1..].iter().filter(linear).count();
    let n_carries = params.len() - 1 - n_carry_tangents;
    let rest = &stmt.binders[n_carries + n_carry_tangents..];
    let n_ys = rest.iter().filter(|binder| !linear(binder)).count();
    LoopShape {
        size,
        is_scan,
        n_carries,
        n_carry_tangents,
        n_ys,
        init,
        body,
    }
}

// Note [Reads of outer tables in a reversed loop]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A loop body often reads a table from outside the loop: `index xs [i]`
// (`fold(x0, \i c. max c xs[i])`), or, after the BOT, a gather of a row or of a few
// neighbours. The transpose of the read is a scatter into the shape of the whole table (a
// one-hot scatter for `index`, Fig 19). Accumulated in a carry of the backward loop, the
// table's cotangent would cost a zero table, a scatter and an addition of the whole table at
// every step: O(n) per step, O(n²) for the loop.
//
// But the cotangent of a table the body only reads never feeds back into the loop: no
// iteration reads it. So such a read is not transposed inside the loop. The backward loop
// becomes a scan that emits, at every step, the cotangent of the read's result (one element,
// one row, or the gathered elements) as an output; after the loop, one bulk operation puts
// the stacked outputs into the table's cotangent: a `scatter` whose index function gives, for
// backward step `k` (and the gather's own positions), the index the forward iteration
// `i = n-1-k` read. A variable of the body that the index needs is found in one of two ways:
//
// - if scalar statements compute it from the loop index and loop-invariant values (`i`,
//   `i - 1`, `perm[i]`), the index function recomputes it by those statements;
// - otherwise (it depends on the carry) the scan stacks it as one more output, and the index
//   function reads it back. Only scalars are stacked: a gather whose index function needs a
//   carried table stays inside the loop.
//
// Literals and loop-invariant variables are used as they are. When the index is exactly the
// loop index and the table's leading axis is the loop's length, the stacked outputs reversed
// into loop order *are* the contribution, and a `gather` that reverses them replaces the
// scatter. Only the other uses of an outer linear variable (arithmetic on the whole table,
// reads inside nested loops, returning it as a carry) still accumulate in a carry of the
// backward loop.
//
// This is [HuotShaikhha] Fig 16's reverse rule for `foldl` (the cotangent of the array argument is
// `B = map2 (x,y. x*y*z) A_2 A_3`, built by one map from per-element derivatives after the
// backward scan, never a dense array per step), and the sparse adjoint of an index of
// [vanHus] §3.3 (Listings 22–23: a read's adjoint is an (index, value) pair, and the pairs are
// folded into one array adjoint at the end). dx's version differs: the body is arbitrary ANF
// and may read any outer table at any index, not only the element `A[i]` of the array folded
// over, so the pairs are stacked by a sequential backward scan (not a `scanr` of products,
// which needs scalar carries) and placed by one scatter, or a reversing gather. Reads in
// loops nested inside the body are hoisted only out of their own loop: their contributions
// then accumulate per step of the enclosing loop.

/// How a hoisted read reads its table.
enum ReadKind {
    /// `index table [index…]`.
    Index(Vec<Atom>),
    /// `gather shape table body`.
    Gather(BlockId),
}

/// A read in a loop body of a linear table defined outside the loop, hoisted out of the
/// backward loop (Note [Reads of outer tables in a reversed loop]).
struct OuterRead {
    table: VarId,
    /// The read's result in the backward body.
    res: VarId,
    kind: ReadKind,
    /// The variables of the backward body its index needs that depend only on the step.
    recomputed: Vec<VarId>,
    /// The other variables of the backward body its index needs (scalars), to be stacked.
    stacked: Vec<VarId>,
}

/// A hoisted read with a cotangent: the positions among the backward scan's outputs of the
/// read's cotangent and of its stacked variables.
struct HoistedRead {
    read: OuterRead,
    ct_output: usize,
    stacked_outputs: Vec<usize>,
}

/// The backward loop of a transposed loop, as the placing of hoisted reads' cotangents
/// after it sees it.
struct BackwardLoop<'a> {
    body: BlockId,
    /// The body's step parameter `k` (the backward loop runs iteration `i = size-1-k`).
    step: VarId,
    loop_index: Atom,
    size: usize,
    /// The body's variables that depend only on the step (`recomputable_from_step`).
    recomputable: &'a HashSet<VarId>,
    /// The loop's stacked outputs (its binders after the carries).
    outputs: &'a [VarId],
}

/// The transpose of a loop ([HuotShaikhha] Fig 16's reverse rule for `foldl`, on ANF): a loop that
/// runs the iterations backwards; each iteration recomputes its primal values from the
/// stacked carry, then transposes the body's linear statements. Reads of outer linear tables
/// become outputs of the backward loop, which is then a scan (see Note [Reads of outer
/// tables in a reversed loop]); cotangents of the other linear variables the body uses from
/// outside accumulate in extra carries.
pub(crate) fn transpose_loop(
    builder: &mut Builder,
    stmt: &Stmt,
    stacked: &[VarId],
    cts: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let shape = loop_shape(stmt, builder.program);
    let tangent_binders = &stmt.binders[shape.n_carries..shape.n_carries + shape.n_carry_tangents];
    let ys_tangent_binders: Vec<VarId> = if shape.is_scan {
        stmt.binders[shape.n_carries + shape.n_carry_tangents + shape.n_ys..].to_vec()
    } else {
        Vec::new()
    };
    let final_cts: Vec<Option<Atom>> = tangent_binders
        .iter()
        .map(|binder| cts.get(binder).copied())
        .collect();
    let ys_cts: Vec<Option<Atom>> = ys_tangent_binders
        .iter()
        .map(|binder| cts.get(binder).copied())
        .collect();
    if final_cts.iter().chain(&ys_cts).all(Option::is_none) {
        return Ok(());
    }
    let body: Block = builder.program.blocks[shape.body].clone();
    let carry_params = body.params[1..=shape.n_carries].to_vec();
    let tangent_params = body.params[1 + shape.n_carries..].to_vec();
    let (used, free) = outer_linear_uses(builder.program, shape.body);
    // The backward body: params [k, carry cotangents…, carried free cotangents…].
    let index_ty = ArrTy::scalar(crate::core::ir::Elem::I64);
    let k = builder.program.new_var(index_ty.clone(), "k");
    let ct_carry_params = ct_params_of(builder.program, &tangent_params, "ct_c");
    let mut inner = Builder::new(&mut *builder.program);
    let last = Atom::Lit(Scalar::I64(shape.size as i64 - 1));
    let i = inner.emit1(
        Expr::from(PrimApp(Prim::Sub, vec![last, Atom::Var(k)])),
        index_ty,
        "i",
    );
    let mut subst: HashMap<VarId, Atom> = HashMap::new();
    subst.insert(body.params[0], i);
    for (param, stacked) in carry_params.iter().zip(stacked) {
        let ty = inner.program.var_ty(*param).clone();
        let carry = inner.emit1(
            Expr::from(Index {
                array: Atom::Var(*stacked),
                index: vec![i],
            }),
            ty,
            "c",
        );
        subst.insert(*param, carry);
    }
    let (copied, mut items, placeholders) =
        copy_step(&mut inner, &body, &tangent_params, &mut subst);
    let recomputable = recomputable_from_step(inner.program, &inner.stmts, k, stacked);
    let reads = outer_reads(inner.program, &inner.stmts, &copied, &free, &recomputable);
    // The hoisted reads are not transposed here; the free variables used otherwise too
    // keep a carry.
    items.retain(|item| match item {
        LinearItem::Stmt(stmt) => !reads.iter().any(|read| read.res == stmt.binders[0]),
        LinearItem::Loop { .. } | LinearItem::While { .. } => true,
    });
    let carried: Vec<VarId> = free
        .iter()
        .copied()
        .filter(|var| {
            let n_uses = used.iter().filter(|used| *used == var).count();
            let n_reads = reads.iter().filter(|read| read.table == *var).count();
            n_uses > n_reads
        })
        .collect();
    let ct_free_params = ct_params_of(inner.program, &carried, "ct_free");
    let mut inner_cts: HashMap<VarId, Atom> = HashMap::new();
    let tangent_results = &body.results[shape.n_carries..shape.n_carries + shape.n_carry_tangents];
    seed_step(
        &mut inner,
        tangent_results,
        &ct_carry_params,
        &subst,
        &mut inner_cts,
    );
    if shape.is_scan {
        let dys_start = shape.n_carries + shape.n_carry_tangents + shape.n_ys;
        for (position, ct) in ys_cts.iter().enumerate() {
            let Some(ct) = ct else { continue };
            let result = crate::core::inline::rename(body.results[dys_start + position], &subst);
            if inner.is_linear(&result) {
                let ty = inner.ty(&result);
                let ct_i = inner.emit1(
                    Expr::from(Index {
                        array: *ct,
                        index: vec![i],
                    }),
                    ty,
                    "ct_y",
                );
                inner.add_to(&mut inner_cts, result, ct_i);
            }
        }
    }
    let mut results = finish_step(
        &mut inner,
        &items,
        &mut inner_cts,
        &placeholders,
        &carried,
        &ct_free_params,
    )?;
    // The scan outputs: each hoisted read's cotangent, and the variables its index needs
    // that are stacked.
    let n_carried_results = results.len();
    let mut outputs: Vec<Atom> = Vec::new();
    let mut hoisted = Vec::new();
    for read in reads {
        let Some(ct) = inner_cts.get(&read.res).copied() else {
            continue;
        };
        let ct_output = outputs.len();
        outputs.push(ct);
        let stacked_outputs = read
            .stacked
            .iter()
            .map(|var| {
                outputs.push(Atom::Var(*var));
                outputs.len() - 1
            })
            .collect();
        hoisted.push(HoistedRead {
            read,
            ct_output,
            stacked_outputs,
        });
    }
    results.extend(&outputs);
    let inner_stmts = std::mem::take(&mut inner.stmts);
    let mut params = vec![k];
    params.extend(&ct_carry_params);
    params.extend(&ct_free_params);
    let backward_body = builder.program.blocks.push(Block {
        params,
        stmts: inner_stmts,
        results,
    });
    // The backward loop, seeded with the final carry cotangents and zero free cotangents.
    let mut init = Vec::new();
    for (ct, binder) in final_cts.iter().zip(tangent_binders) {
        init.push(match ct {
            Some(ct) => *ct,
            None => builder.zeros(&builder.program.var_ty(*binder).clone()),
        });
    }
    for var in &carried {
        init.push(builder.zeros(&builder.program.var_ty(*var).clone()));
    }
    let mut binder_tys: Vec<ArrTy> = tangent_params
        .iter()
        .map(|param| builder.program.var_ty(*param).clone())
        .collect();
    binder_tys.extend(
        carried
            .iter()
            .map(|var| builder.program.var_ty(*var).clone()),
    );
    for output in &outputs {
        let ty = builder.ty(output);
        let mut stacked_shape = vec![shape.size];
        stacked_shape.extend(&ty.shape);
        binder_tys.push(ArrTy::new(stacked_shape, ty.elem));
    }
    let loop_expr = Expr::sequential_loop(!outputs.is_empty(), shape.size, init, backward_body);
    let binders = builder.emit(loop_expr, binder_tys, "ct_loop");
    // The stacked cotangents are linear, the stacked indices primal.
    builder.set_linear(&binders[..n_carried_results], true);
    for (output, binder) in outputs.iter().zip(&binders[n_carried_results..]) {
        let float = builder.ty(output).elem.is_float();
        builder.set_linear(&[*binder], float);
    }
    let init_tangents = &shape.init[shape.n_carries..];
    for (tangent, ct) in init_tangents.iter().zip(&binders) {
        if builder.is_linear(tangent) {
            builder.add_to(cts, *tangent, Atom::Var(*ct));
        }
    }
    for (var, ct) in carried.iter().zip(&binders[tangent_params.len()..]) {
        builder.add_to(cts, Atom::Var(*var), Atom::Var(*ct));
    }
    let backward = BackwardLoop {
        body: backward_body,
        step: k,
        loop_index: i,
        size: shape.size,
        recomputable: &recomputable,
        outputs: &binders[n_carried_results..],
    };
    for read in &hoisted {
        let contribution = place_read_cts(builder, &backward, read);
        builder.add_to(cts, Atom::Var(read.read.table), contribution);
    }
    Ok(())
}

/// The linear variables a loop body uses from outside it: every use (with repeats), and
/// each variable once, in order of first use.
pub(crate) fn outer_linear_uses(program: &Program, body: BlockId) -> (Vec<VarId>, Vec<VarId>) {
    let mut defined: HashSet<VarId> = HashSet::new();
    crate::core::visit::collect_defs(program, body, &mut defined);
    let mut used = Vec::new();
    crate::core::visit::collect_uses(program, body, &mut used);
    used.retain(|var| program.vars[*var].linear && !defined.contains(var));
    let mut free: Vec<VarId> = Vec::new();
    for var in &used {
        if !free.contains(var) {
            free.push(*var);
        }
    }
    (used, free)
}

/// A new linear variable of the type of each of `vars` (the cotangent params of a backward
/// step).
pub(crate) fn ct_params_of(program: &mut Program, vars: &[VarId], hint: &str) -> Vec<VarId> {
    vars.iter()
        .map(|var| program.new_linear_var(program.var_ty(*var).clone(), hint))
        .collect()
}

/// The start of a backward step of a loop body: its statements copied into `inner` through
/// `subst` (which maps the body's primal params to their values at the step), each tangent
/// param replaced by a new linear placeholder. The copied primal statements are emitted
/// (nested loops as the scans that stack their carries); returns all the copied statements,
/// the linear ones to transpose, and the placeholders.
pub(crate) fn copy_step(
    inner: &mut Builder,
    body: &Block,
    tangent_params: &[VarId],
    subst: &mut HashMap<VarId, Atom>,
) -> (Vec<Stmt>, Vec<LinearItem>, Vec<VarId>) {
    let placeholders = ct_params_of(inner.program, tangent_params, "c_dot");
    for (param, placeholder) in tangent_params.iter().zip(&placeholders) {
        subst.insert(*param, Atom::Var(*placeholder));
    }
    let copied: Vec<Stmt> = (body.stmts.iter())
        .map(|stmt| crate::core::inline::copy_stmt(inner.program, stmt, subst))
        .collect();
    let (forward, items) = ad::split(inner.program, &copied);
    inner.stmts.extend(forward);
    (copied, items, placeholders)
}

/// Seeds a backward step's cotangents: the cotangent param of each carry goes to the body's
/// tangent result for it (renamed through `subst`).
pub(crate) fn seed_step(
    inner: &mut Builder,
    tangent_results: &[Atom],
    ct_params: &[VarId],
    subst: &HashMap<VarId, Atom>,
    inner_cts: &mut HashMap<VarId, Atom>,
) {
    for (result, param) in tangent_results.iter().zip(ct_params) {
        let result = crate::core::inline::rename(*result, subst);
        if inner.is_linear(&result) {
            inner.add_to(inner_cts, result, Atom::Var(*param));
        }
    }
}

/// The end of a backward step: transposes `items`, then gives the step's results, the
/// cotangent of each tangent param (its placeholder; zero without one) and, for each outer
/// linear variable whose cotangent a carry accumulates (`carried`, the carry's param in
/// `ct_free_params`), the running sum.
pub(crate) fn finish_step(
    inner: &mut Builder,
    items: &[LinearItem],
    inner_cts: &mut HashMap<VarId, Atom>,
    placeholders: &[VarId],
    carried: &[VarId],
    ct_free_params: &[VarId],
) -> Result<Vec<Atom>, AdError> {
    ad::transpose_items(inner, items, inner_cts)?;
    let mut results = Vec::new();
    for placeholder in placeholders {
        results.push(match inner_cts.get(placeholder) {
            Some(ct) => *ct,
            None => inner.zeros(&inner.program.var_ty(*placeholder).clone()),
        });
    }
    for (var, param) in carried.iter().zip(ct_free_params) {
        results.push(match inner_cts.get(var).copied() {
            Some(ct) => inner.prim(Prim::Add, &[Atom::Var(*param), ct]),
            None => Atom::Var(*param),
        });
    }
    Ok(results)
}

/// The variables of a backward loop body (`stmts`, run at step `k`) that depend only on `k`
/// and on loop-invariant values: bound by scalar statements without nested blocks whose
/// operands are such variables, literals, or variables from outside the body other than the
/// stacked carries (reading those makes a value depend on the carry). An index function
/// after the loop can recompute them cheaply from the step.
fn recomputable_from_step(
    program: &Program,
    stmts: &[Stmt],
    k: VarId,
    checkpoints: &[VarId],
) -> HashSet<VarId> {
    let mut recomputable = HashSet::from([k]);
    let mut defined: HashSet<VarId> = HashSet::from([k]);
    for stmt in stmts {
        let scalar = stmt
            .binders
            .iter()
            .all(|binder| program.var_ty(*binder).shape.is_empty());
        let simple = super::operation(&stmt.expr).scalar_op();
        let operands_ok =
            crate::core::visit::expr_atoms(&stmt.expr)
                .iter()
                .all(|atom| match atom {
                    Atom::Lit(_) => true,
                    Atom::Var(var) => {
                        recomputable.contains(var)
                            || (!defined.contains(var) && !checkpoints.contains(var))
                    }
                });
        if scalar && simple && operands_ok {
            recomputable.extend(&stmt.binders);
        }
        defined.extend(&stmt.binders);
    }
    recomputable
}

/// The reads of outer linear tables (`free`) among the copied body statements `copied` that
/// can be hoisted out of the backward loop whose primal statements are `forward`: every
/// `index`, and every `gather` whose index function needs only scalars from the backward body
/// (Note [Reads of outer tables in a reversed loop]).
fn outer_reads(
    program: &Program,
    forward: &[Stmt],
    copied: &[Stmt],
    free: &[VarId],
    recomputable: &HashSet<VarId>,
) -> Vec<OuterRead> {
    let body_defined: HashSet<VarId> = forward
        .iter()
        .flat_map(|stmt| stmt.binders.iter().copied())
        .chain(recomputable.iter().copied())
        .collect();
    let mut reads = Vec::new();
    for stmt in copied {
        // The reads are the statements whose element rule reads an array at coordinates
        // they compute: an `index`, a gather.
        let (table, kind, uses) = match super::operation(&stmt.expr).element() {
            Some(Element::Indexed {
                array: Atom::Var(table),
                index,
            }) => {
                let uses = index
                    .iter()
                    .filter_map(|atom| crate::core::visit::var_of(*atom))
                    .collect();
                (table, ReadKind::Index(index.to_vec()), uses)
            }
            Some(Element::Gathered {
                array: Atom::Var(table),
                index_fn,
            }) => {
                let mut uses = Vec::new();
                crate::core::visit::collect_uses(program, index_fn, &mut uses);
                (table, ReadKind::Gather(index_fn), uses)
            }
            _ => continue,
        };
        if !free.contains(&table) {
            continue;
        }
        let mut needed: Vec<VarId> = Vec::new();
        for var in uses {
            if body_defined.contains(&var) && !needed.contains(&var) {
                needed.push(var);
            }
        }
        let (recomputed, stacked): (Vec<VarId>, Vec<VarId>) = needed
            .into_iter()
            .partition(|var| recomputable.contains(var));
        if stacked
            .iter()
            .any(|var| !program.var_ty(*var).shape.is_empty())
        {
            continue;
        }
        reads.push(OuterRead {
            table,
            res: stmt.binders[0],
            kind,
            recomputed,
            stacked,
        });
    }
    reads
}

/// Copies of the backward body's statements that compute `vars` from the step, in order,
/// renamed through `subst` (which maps the step to its new name).
fn recompute_from_step(
    program: &mut Program,
    backward: &BackwardLoop,
    vars: &[VarId],
    subst: &mut HashMap<VarId, Atom>,
) -> Vec<Stmt> {
    let mut needed: HashSet<VarId> = vars.iter().copied().collect();
    let mut chain = Vec::new();
    for stmt in program.blocks[backward.body].stmts.iter().rev() {
        if stmt.binders.iter().any(|binder| needed.contains(binder)) {
            debug_assert!(stmt
                .binders
                .iter()
                .all(|binder| backward.recomputable.contains(binder)));
            for atom in crate::core::visit::expr_atoms(&stmt.expr) {
                if let Atom::Var(var) = atom {
                    if backward.recomputable.contains(&var) {
                        needed.insert(var);
                    }
                }
            }
            chain.push(stmt.clone());
        }
    }
    chain
        .iter()
        .rev()
        .map(|stmt| crate::core::inline::copy_stmt(program, stmt, subst))
        .collect()
}

/// Puts a hoisted read's stacked cotangents (one per backward step) into the shape of the
/// table it read: a scatter whose index function gives, for step `k` (and for a gather, the
/// gather's positions), the index read at that step, or a reversing gather when that index
/// is the loop index `i` itself (Note [Reads of outer tables in a reversed loop]).
fn place_read_cts(builder: &mut Builder, backward: &BackwardLoop, hoisted: &HoistedRead) -> Atom {
    let read = &hoisted.read;
    let table_ty = builder.program.var_ty(read.table).clone();
    let step_ty = builder.program.var_ty(backward.step).clone();
    let step = builder.program.new_var(step_ty.clone(), "k");
    let mut subst: HashMap<VarId, Atom> = HashMap::from([(backward.step, Atom::Var(step))]);
    let mut stmts = recompute_from_step(builder.program, backward, &read.recomputed, &mut subst);
    for (var, position) in read.stacked.iter().zip(&hoisted.stacked_outputs) {
        let ty = builder.program.var_ty(*var).clone();
        let value = builder.program.new_var(ty, "ix");
        stmts.push(Stmt {
            binders: vec![value],
            expr: Expr::from(Index {
                array: Atom::Var(backward.outputs[*position]),
                index: vec![Atom::Var(step)],
            }),
        });
        subst.insert(*var, Atom::Var(value));
    }
    let (index_fn, reverses) = match &read.kind {
        ReadKind::Index(index) => {
            let results = index
                .iter()
                .map(|atom| crate::core::inline::rename(*atom, &subst))
                .collect();
            let index_fn = builder.program.blocks.push(Block {
                params: vec![step],
                stmts,
                results,
            });
            let reverses =
                *index == [backward.loop_index] && table_ty.shape.first() == Some(&backward.size);
            (index_fn, reverses)
        }
        // The gather's index function, with the step as one more leading parameter.
        ReadKind::Gather(body) => {
            let index_fn = clone_block(builder.program, *body, &mut subst);
            let block = &mut builder.program.blocks[index_fn];
            block.params.insert(0, step);
            stmts.append(&mut block.stmts);
            block.stmts = stmts;
            (index_fn, false)
        }
    };
    let stacked_ct = Atom::Var(backward.outputs[hoisted.ct_output]);
    let shape = table_ty.shape.clone();
    let expr = if reverses {
        Expr::from(Gather {
            shape,
            array: stacked_ct,
            body: index_fn,
        })
    } else {
        Expr::from(Scatter {
            shape,
            array: stacked_ct,
            body: index_fn,
        })
    };
    builder.emit1(expr, table_ty, "ct")
}

/// A loop's transpose is `transpose_loop`, run by `ad::transpose_items` on the loop split
/// into its primal scan and its linear part (`ad::LinearItem::Loop`).
/// The rules `fold` and `scan` share: a loop of `size` steps whose body gets the step and the
/// carries, differentiated by `jvp_loop` and split for transposition by `split_loop`; a scan
/// also stacks, over the steps, the body's results after the carries (`$stacks`).
macro_rules! counted_loop_rules {
    ($stacks:expr) => {
        fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
            batcher.batch_loop(self.size, &self.init, self.body, &stmt.binders, $stacks);
        }

        fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
            jvp_loop(builder, stmt, tangents)
        }

        fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
            ad::not_a_linear_statement()
        }

        fn cost(&self, program: &Program, _: u64) -> u64 {
            cost(program, self.size, self.body)
        }

        fn linearity(&self) -> Linearity {
            Linearity::Compound(vec![true; self.init.len()])
        }

        fn fusion_class(&self, _: &Program) -> FusionClass {
            FusionClass::Bulk
        }

        fn split_linear(&self, program: &mut Program, stmt: &Stmt) -> Option<(Stmt, LinearItem)> {
            Some(split_loop(program, stmt))
        }

        fn run(&self, cx: &mut dyn Bulk) -> Ran {
            cx.per_point()?;
            cx.counted_loop(self.size, &self.init, self.body)
        }

        fn export(&self, cx: &mut dyn StableHlo, stmt: &Stmt) -> Exported {
            export_loop(cx, $stacks, self.size, &self.init, self.body, &stmt.binders)
        }

        fn index_param_bounds(&self, _: &Program) -> Vec<usize> {
            vec![self.size]
        }

        fn loop_bodies(&self) -> Vec<BlockId> {
            vec![self.body]
        }
    };
}

impl Operation for Fold {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        fold_tys(program, &self.init, self.body)
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        interp.eval_fold(self.size, &self.init, self.body)
    }

    counted_loop_rules!(false);
}

impl Operation for Scan {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        scan_tys(program, self.size, &self.init, self.body)
    }

    fn eval(&self, interp: &mut Interp, stmt: &Stmt) -> Res<Vec<Array>> {
        interp.eval_scan(stmt, self.size, &self.init, self.body)
    }

    counted_loop_rules!(true);

    /// Without the stacked outputs nothing reads (and the body results that made them); a
    /// scan left with none is a `fold`. (The primal scan of a gradient through a loop stacks
    /// every carry for the backward loop, which often reads only some of them, or none when
    /// the body is linear in its carry.)
    fn prune(&self, program: &mut Program, live: &[bool]) -> Option<(Expr, Vec<bool>)> {
        let n_carries = self.init.len();
        let mut kept = vec![true; live.len()];
        for position in (n_carries..live.len()).rev().filter(|&at| !live[at]) {
            program.blocks[self.body].results.remove(position);
            kept[position] = false;
        }
        if kept.iter().all(|&kept| kept) {
            return None;
        }
        let expr = match kept[n_carries..].iter().any(|&kept| kept) {
            true => Expr::from(self.clone()),
            false => Expr::from(Fold {
                size: self.size,
                init: self.init.clone(),
                body: self.body,
            }),
        };
        Some((expr, kept))
    }
}

/// `fold` / `scan` in StableHLO: a `stablehlo.while` over a counter, the carries and (for a
/// scan) the stacked outputs so far, each step's outputs written with
/// `dynamic_update_slice`.
fn export_loop(
    cx: &mut dyn StableHlo,
    is_scan: bool,
    size: usize,
    init: &[Atom],
    body: BlockId,
    binders: &[VarId],
) -> Exported {
    let n_carry = init.len();
    let counter_ty = ArrTy::scalar(Elem::I64);
    let mut operands = vec![cx.splat(Scalar::I64(0), &[])];
    operands.extend(hlo::atoms(cx, init)?);
    let output_tys = match is_scan {
        true => hlo::binder_tys(cx.program(), &binders[n_carry..]),
        false => Vec::new(),
    };
    for ty in &output_tys {
        operands.push(cx.zeros(ty));
    }
    if size == 0 {
        // No step runs: the carries stay, the outputs are empty (and XLA would reject the
        // body's writes into an empty buffer).
        return Ok(operands[1..].to_vec());
    }
    let tys: Vec<ArrTy> = operands.iter().map(|val| val.ty.clone()).collect();
    let cond_region = cx.region(&tys, &mut |cx, args| {
        let bound = cx.splat(Scalar::I64(size as i64), &[]);
        Ok(vec![cx.compare("LT", &args[0], &bound)])
    })?;
    let body_region = cx.region(&tys, &mut |cx, args| {
        let counter = args[0].clone();
        let results = cx.block(body, &args[..=n_carry])?;
        let step = cx.splat(Scalar::I64(1), &[]);
        let next = cx.op("stablehlo.add", &[&counter, &step], "", counter_ty.clone());
        let mut returned = vec![next];
        returned.extend(results[..n_carry].iter().cloned());
        for (position, y) in results[n_carry..].iter().enumerate() {
            let buffer = &args[1 + n_carry + position];
            let row = cx.broadcast_leading(y, &[1]);
            let zero = cx.splat(Scalar::I64(0), &[]);
            let mut operands: Vec<Val> = vec![buffer.clone(), row, counter.clone()];
            operands.extend(std::iter::repeat_n(zero, y.ty.rank()));
            let refs: Vec<&Val> = operands.iter().collect();
            returned.push(cx.op(
                "stablehlo.dynamic_update_slice",
                &refs,
                "",
                buffer.ty.clone(),
            ));
        }
        Ok(returned)
    })?;
    Ok(cx.while_op(&operands, cond_region, body_region))
}

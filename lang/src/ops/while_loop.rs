//! `while (init…) (λcarry…. body)`: the loop whose trip count depends on the data (a
//! do-while: the body returns `[continue, carry'…]` and runs at least once), and
//! `while_reverse`, the reverse sweep over a while's trajectory that its transpose is. Every
//! rule of the two in one place:
//!
//! - type rule: `while_tys`, `while_reverse_tys` (called by `ops::verify`): a while's params
//!   are one per carry with the type of its initial value (no index), its results a `Bool`
//!   scalar then the new carries; it binds the final carries. A `while_reverse` has a while's
//!   body, and a backward step whose params are the carries then one accumulator per seed
//!   (of the seed's type) and whose results are the new accumulators; it binds the final
//!   accumulators;
//! - reference evaluation: `Interp::eval_while`, `Interp::eval_while_reverse`, checking the
//!   interrupt flag every step, so that a while that never ends can be stopped;
//! - batching: `Batcher::batch_while`: a while inside a build runs once over batched carries
//!   (a fixpoint over the body, as for `fold`). When its condition depends on the batch index
//!   the lanes stop at different steps: the loop gets an `active` mask carry (all true at
//!   first), every step computes the batched body and keeps the carries of finished lanes
//!   (`select active step carry`), `active' = active && continue`, and the loop continues
//!   while any lane is active (`sumOuter (cast active') > 0`). `Batcher::batch_while_reverse`
//!   batches the forward part the same way and gives the backward step the stored mask, with
//!   which it keeps the accumulators of the lanes that had finished at that step;
//! - JVP: `jvp_while` (`loops::jvp_carrying`): the loop carries the tangents of its float
//!   carries along; the condition is the primal body's;
//! - transpose: `split_while` runs the primal while forward; `transpose_while` makes the
//!   `while_reverse` that replays it and runs the transposed steps last to first (Note
//!   [Reverse mode through a while loop]);
//! - linearity: a differentiated while is linear in its tangent carries and constant in its
//!   primal ones, so `ops::ad` keeps it whole (`LinearItem::While`); a `while_reverse` is
//!   linear in its seeds and constant in its initial carries;
//! - simplification: nothing of its own; the simplifier rewrites inside the blocks, and the
//!   clean-up drops a while whose results nothing reads, as every statement is pure (even
//!   one that would never end);
//! - cost: `cost`, `reverse_cost`: the trip count is unknown before the loop runs, so the
//!   cost model assumes `NOMINAL_TRIPS` steps;
//! - fusion class: `Bulk`; bodies over tables get schedules of their own, run once per step
//!   (`passes::fuse`, Note [Loop bodies]); the engine checks the interrupt flag every step;
//! - export: `export::stablehlo` makes a `stablehlo.while` that carries the continue flag
//!   (true at first, so the body runs once before the test); a `while_reverse` has no
//!   StableHLO form (its buffer of carries has no static size) and is an export error.
//!
//! Does not handle yet: forward mode through a `while_reverse` (a second derivative through a
//! while, e.g. a Hessian) is an error of the `ad` pass; reads of outer tables in the body are
//! not hoisted out of the backward loop as `transpose_loop` does for a fold (each backward
//! step adds a whole table's cotangent, Note [Reads of outer tables in a reversed loop]); a
//! while whose body is all scalars runs statement by statement on the engine, not on
//! registers (`exec::scalar_loop` wants a known trip count).

use std::collections::HashMap;

use super::ad::{self, AdError, AdResult, Builder, Derivs, LinearItem};
use super::batch::{Batcher, Status};
use super::bulk::{Bulk, Ran};
use super::hlo::{self, ExportError, Exported, StableHlo};
use super::loops::{self, CarryLayout};
use super::{FusionClass, Linearity, Operation};
use crate::core::inline::clone_block;
use crate::core::ir::{
    ArrTy, Atom, Block, BlockId, Elem, Expr, PrimApp, Program, Scalar, Stmt, SumOuter, VarId,
    While, WhileReverse,
};
use crate::core::print::ty_text;
use crate::core::value::Array;
use crate::ops::interp::{Interp, Res};
use crate::ops::verify::{block, result_tys};
use crate::prim::Prim;

// Note [Reverse mode through a while loop]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A fold is transposed by running its primal part as a scan that stacks the carry entering
// every step, then a backward fold over the stacked carries that recomputes each step's
// primal values and runs its transposed statements (`loops::split_loop`, `transpose_loop`;
// [HuotShaikhha] Fig 16's reverse rule for `foldl`). A while's trip count is known only once it
// has run, and every value of the core IR has a static shape, so no variable can hold its
// stacked carries. The stack therefore lives inside one statement:
//
//     acc… = while_reverse (init…) (seeds…) (λc…. step) (λc… acc…. back)
//
// runs the while `step` from `init` again, keeping the carries entering each step in a
// buffer of the evaluator (a growable list, never an IR value), then folds `back` over them
// from the last step to the first. The transpose of a differentiated while is then:
//
// - forward (`split_while`): the while over the primal carries only, whose final carries the
//   rest of the primal program reads;
// - backward (`transpose_while`): a `while_reverse` from the same initial carries, seeded
//   with the cotangents of the final tangent carries, and with zeros for the cotangents of
//   the outer linear variables the body uses, which `back` accumulates as `transpose_loop`'s
//   backward loop does. `back` is the body copied at the step's carries, its primal
//   statements recomputed and its linear ones transposed (`loops::copy_step`, `finish_step`).
//
// Work: the forward while, the replay and the backward steps, each once per trip, so linear
// in the trip count (one forward pass more than a fold's transpose, the price of values
// without a dynamic size); memory: the carries of every step, as for a fold. Recomputing each
// step's carries from the initial ones (or from sparse checkpoints) instead would be
// quadratic (or n log n). The alternative of a `while` that binds a stack of dynamic length
// would need a dynamic axis in `ArrTy`, which every pass, the engine and the export would
// have to learn.
//
// Batched (a while inside a `for`, differentiated after the BOT): the step of a finished
// lane is `select active step carry`, the identity, so its transposed step passes the
// cotangents through unchanged; the mask is a carry like any other, stored with the others.
// A `while_reverse` inside a build (a `vjp` inside a `for`) is batched like a while, and its
// backward step keeps the accumulators of the lanes that were not active at that step.

/// The number of steps the cost model assumes for a `while` (its trip count is unknown until
/// it runs).
pub const NOMINAL_TRIPS: usize = 16;

/// The type rule of `while (init…) body`: the types of the carries, which it binds.
pub fn while_tys(program: &Program, init: &[Atom], body: BlockId) -> Result<Vec<ArrTy>, String> {
    let block = block(program, body)?;
    if block.params.len() != init.len() {
        return Err(format!(
            "while body has {} params for {} carries",
            block.params.len(),
            init.len()
        ));
    }
    let carry_tys = loops::carry_tys(program, init, &block.params, "while")?;
    let results = result_tys(program, block)?;
    match results.split_first() {
        Some((flag, new)) if *flag == ArrTy::scalar(Elem::Bool) => {
            loops::check_new_carries(new, &carry_tys, "while")?;
        }
        Some((flag, _)) => {
            return Err(format!(
                "the condition of a while must be a bool scalar, not {}",
                ty_text(flag)
            ))
        }
        None => return Err("while body returns no condition".to_string()),
    }
    Ok(carry_tys)
}

/// The type rule of `while_reverse (init…) (seeds…) body back`: the types of the seeds,
/// which it binds.
pub fn while_reverse_tys(
    program: &Program,
    init: &[Atom],
    seeds: &[Atom],
    body: BlockId,
    back: BlockId,
) -> Result<Vec<ArrTy>, String> {
    while_tys(program, init, body)?;
    let back = block(program, back)?;
    if back.params.len() != init.len() + seeds.len() {
        return Err(format!(
            "while_reverse backward step has {} params for {} carries and {} seeds",
            back.params.len(),
            init.len(),
            seeds.len()
        ));
    }
    let (carry_params, acc_params) = back.params.split_at(init.len());
    loops::carry_tys(program, init, carry_params, "while_reverse backward step")?;
    let acc_tys = loops::carry_tys(program, seeds, acc_params, "while_reverse accumulator")?;
    let results = result_tys(program, back)?;
    loops::check_new_carries(&results, &acc_tys, "while_reverse backward step")?;
    Ok(acc_tys)
}

impl Interp<'_> {
    /// `while`: the final carries.
    pub(crate) fn eval_while(&mut self, init: &[Atom], body: BlockId) -> Res<Vec<Array>> {
        Ok(self.run_while(init, body, false)?.0)
    }

    /// `while_reverse`: the while again, keeping the carries entering every step, then the
    /// backward step over them, last to first.
    pub(crate) fn eval_while_reverse(
        &mut self,
        init: &[Atom],
        seeds: &[Atom],
        body: BlockId,
        back: BlockId,
    ) -> Res<Vec<Array>> {
        let (_, trajectory) = self.run_while(init, body, true)?;
        let mut acc: Vec<Array> = seeds.iter().map(|atom| self.atom(atom)).collect();
        for carries in trajectory.into_iter().rev() {
            self.check_interrupt()?;
            let mut args = carries;
            args.extend(acc);
            acc = self.eval_block(back, args)?;
        }
        Ok(acc)
    }

    /// Runs a while's body from `init` until its condition is false: the final carries and,
    /// when `keep`, the carries entering each step.
    fn run_while(
        &mut self,
        init: &[Atom],
        body: BlockId,
        keep: bool,
    ) -> Res<(Vec<Array>, Vec<Vec<Array>>)> {
        let mut carry: Vec<Array> = init.iter().map(|atom| self.atom(atom)).collect();
        let mut trajectory = Vec::new();
        loop {
            self.check_interrupt()?;
            if keep {
                trajectory.push(carry.clone());
            }
            let mut results = self.eval_block(body, carry)?;
            let go = results.remove(0);
            carry = results;
            match go.as_scalar() {
                Some(Scalar::Bool(true)) => {}
                Some(Scalar::Bool(false)) => return Ok((carry, trajectory)),
                other => panic!("interp: while condition {other:?} (the verifier rules this out)"),
            }
        }
    }
}

/// `NOMINAL_TRIPS` runs of the body.
pub fn cost(program: &Program, body: BlockId) -> u64 {
    loops::cost(program, NOMINAL_TRIPS, body)
}

/// `NOMINAL_TRIPS` runs of the body (the replay) and of the backward step.
pub fn reverse_cost(program: &Program, body: BlockId, back: BlockId) -> u64 {
    cost(program, body) + loops::cost(program, NOMINAL_TRIPS, back)
}

impl Batcher<'_> {
    /// `while` inside a build: one while over batched carries, with an `active` mask carry
    /// (last) when the lanes may stop at different steps.
    pub(crate) fn batch_while(&mut self, init: &[Atom], body: BlockId, binders: &[VarId]) {
        let source = self.program.blocks[body].clone();
        let (carry_batched, masked) = self.while_batching(&source, init);
        let (new_init, new_body) = self.batch_step(&source, body, init, &carry_batched, masked);
        let mut new_binders = self.batched_binders(binders, &carry_batched);
        if masked {
            new_binders.push(self.new_var(self.mask_ty(), "active"));
        }
        let expr = Expr::from(While {
            init: new_init,
            body: new_body,
        });
        self.emit_to(self.target, new_binders, expr);
    }

    /// `while_reverse` inside a build: its forward part as `batch_while` makes it, and a
    /// backward step over the batched carries (the mask among them) that keeps the
    /// accumulators of the lanes inactive at its step.
    pub(crate) fn batch_while_reverse(
        &mut self,
        init: &[Atom],
        seeds: &[Atom],
        (body, back): (BlockId, BlockId),
        binders: &[VarId],
    ) {
        let source = self.program.blocks[body].clone();
        let back_source = self.program.blocks[back].clone();
        let (carry_batched, masked) = self.while_batching(&source, init);
        let (new_init, new_body) = self.batch_step(&source, body, init, &carry_batched, masked);
        let (carry_params, acc_params) = back_source.params.split_at(init.len());
        let (mut acc_batched, _) = self.batched_carries(
            &back_source,
            carry_params,
            &carry_batched,
            acc_params,
            0,
            seeds,
        );
        if masked {
            acc_batched = vec![true; seeds.len()];
        }
        let mut params = self.batched_params(carry_params, &carry_batched);
        let active = masked.then(|| self.new_var(self.mask_ty(), "active"));
        params.extend(active);
        let new_acc_params = self.batched_params(acc_params, &acc_batched);
        params.extend(&new_acc_params);
        let new_back = self.batch_subblock(back, params, &acc_batched);
        if let Some(active) = active {
            let results = self.program.blocks[new_back].results.clone();
            let kept = self.keep_finished(new_back, active, &results, &new_acc_params);
            self.program.blocks[new_back].results = kept;
        }
        let new_seeds = self.batched_inits(seeds, &acc_batched);
        let new_binders = self.batched_binders(binders, &acc_batched);
        let expr = Expr::from(WhileReverse {
            init: new_init,
            seeds: new_seeds,
            body: new_body,
            back: new_back,
        });
        self.emit_to(self.target, new_binders, expr);
    }

    fn mask_ty(&self) -> ArrTy {
        ArrTy::new(vec![self.size], Elem::Bool)
    }

    /// Which carries of a while are batched, and whether the loop needs a mask (its
    /// condition depends on the batch index; every carry is then batched, since the lanes'
    /// carries stop changing at different steps).
    fn while_batching(&self, body: &Block, init: &[Atom]) -> (Vec<bool>, bool) {
        let (carries, depends) = self.batched_carries(body, &[], &[], &body.params, 1, init);
        match depends[0] {
            true => (vec![true; init.len()], true),
            false => (carries, false),
        }
    }

    /// The batched body and initial carries of a while. With a mask, the body's params and
    /// results end with the mask, its new carries keep the finished lanes' values, and its
    /// condition is whether any lane is still active.
    fn batch_step(
        &mut self,
        source: &Block,
        body: BlockId,
        init: &[Atom],
        carry_batched: &[bool],
        masked: bool,
    ) -> (Vec<Atom>, BlockId) {
        let mut params = self.batched_params(&source.params, carry_batched);
        let active = masked.then(|| self.new_var(self.mask_ty(), "active"));
        params.extend(active);
        let mut result_batched = vec![masked];
        result_batched.extend(carry_batched);
        let new_body = self.batch_subblock(body, params.clone(), &result_batched);
        let mut new_init = self.batched_inits(init, carry_batched);
        if let Some(active) = active {
            let results = self.program.blocks[new_body].results.clone();
            let (go, steps) = results.split_first().expect("a condition");
            let mut kept = self.keep_finished(new_body, active, steps, &params[..init.len()]);
            let (still, any) = self.in_block(new_body, |batcher| batcher.any_active(active, *go));
            kept.insert(0, any);
            kept.push(still);
            self.program.blocks[new_body].results = kept;
            let all = self.force(Status::Unbatched(Atom::Lit(Scalar::Bool(true))));
            new_init.push(Atom::Var(all));
        }
        (new_init, new_body)
    }

    /// `select active new old` for each value, emitted into `block`: the lanes that are not
    /// active keep their old values.
    fn keep_finished(
        &mut self,
        block: BlockId,
        active: VarId,
        new: &[Atom],
        old: &[VarId],
    ) -> Vec<Atom> {
        self.in_block(block, |batcher| {
            new.iter()
                .zip(old)
                .map(|(new, old)| {
                    let ty = batcher.program.var_ty(*old).clone();
                    let mask = batcher.broadcast_batch(active, &ty.shape[1..]);
                    let args = vec![Atom::Var(mask), *new, Atom::Var(*old)];
                    Atom::Var(batcher.emit1(Expr::from(PrimApp(Prim::Select, args)), ty, "kept"))
                })
                .collect()
        })
    }

    /// `active' = active && go`, and whether any lane of it is true (as `sumOuter (cast
    /// active') > 0`).
    fn any_active(&mut self, active: VarId, go: Atom) -> (Atom, Atom) {
        let still = self.emit1(
            Expr::from(PrimApp(Prim::And, vec![Atom::Var(active), go])),
            self.mask_ty(),
            "active",
        );
        let counts = self.emit1(
            Expr::from(PrimApp(Prim::Cast(Elem::I64), vec![Atom::Var(still)])),
            ArrTy::new(vec![self.size], Elem::I64),
            "cast",
        );
        let count = self.emit1(
            Expr::from(SumOuter(Atom::Var(counts))),
            ArrTy::scalar(Elem::I64),
            "n_active",
        );
        let any = self.emit1(
            Expr::from(PrimApp(
                Prim::Gt,
                vec![Atom::Var(count), Atom::Lit(Scalar::I64(0))],
            )),
            ArrTy::scalar(Elem::Bool),
            "any",
        );
        (Atom::Var(still), Atom::Var(any))
    }

    /// Runs `f` with `block` as the target of the emitted statements.
    fn in_block<T>(&mut self, block: BlockId, f: impl FnOnce(&mut Self) -> T) -> T {
        let outer = std::mem::replace(&mut self.target, block);
        let res = f(self);
        self.target = outer;
        res
    }
}

/// `while`: the loop carries the tangents of its float carries along; the condition is the
/// primal body's.
pub(crate) fn jvp_while(
    builder: &mut Builder,
    stmt: &Stmt,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let Expr::While(While { init, body }) = &stmt.expr else {
        unreachable!("only a while reaches jvp_while")
    };
    let layout = CarryLayout {
        lead_params: 0,
        lead_results: 1,
    };
    loops::jvp_carrying(
        builder,
        stmt,
        init,
        *body,
        layout,
        tangents,
        |init, body| Expr::from(While { init, body }),
    )
}

/// The number of primal carries of a differentiated while (its body's params are the
/// carries, then the tangents of the float ones).
fn n_primal_carries(program: &Program, body: BlockId) -> usize {
    let params = &program.blocks[body].params;
    params
        .iter()
        .filter(|param| !program.vars[**param].linear)
        .count()
}

/// A differentiated while split for transposition (`ops::ad::split`): its primal part runs
/// forward as a while over the primal carries, and the whole statement is transposed by
/// `transpose_while` (Note [Reverse mode through a while loop]).
fn split_while(program: &mut Program, stmt: &Stmt) -> (Stmt, LinearItem) {
    let Expr::While(While { init, body }) = &stmt.expr else {
        unreachable!("only a while reaches split_while")
    };
    let n_carries = n_primal_carries(program, *body);
    let source: Block = program.blocks[*body].clone();
    // Nested loops contribute their primal parts too.
    let (primal_stmts, _) = ad::split(program, &source.stmts);
    let primal_body = program.blocks.push(Block {
        params: source.params[..n_carries].to_vec(),
        stmts: primal_stmts,
        results: source.results[..=n_carries].to_vec(),
    });
    let primal = Stmt {
        binders: stmt.binders[..n_carries].to_vec(),
        expr: Expr::from(While {
            init: init[..n_carries].to_vec(),
            body: primal_body,
        }),
    };
    let item = LinearItem::While {
        stmt: stmt.clone(),
        primal_body,
    };
    (primal, item)
}

/// The transpose of a differentiated while: a `while_reverse` that replays the primal while
/// (`primal_body`, from `split_while`) and runs the transposed steps last to first (Note
/// [Reverse mode through a while loop]).
pub(crate) fn transpose_while(
    builder: &mut Builder,
    stmt: &Stmt,
    primal_body: BlockId,
    cts: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let Expr::While(While { init, body }) = &stmt.expr else {
        unreachable!("only a while reaches transpose_while")
    };
    let n_carries = n_primal_carries(builder.program, *body);
    let tangent_binders = &stmt.binders[n_carries..];
    let final_cts: Vec<Option<Atom>> = tangent_binders
        .iter()
        .map(|binder| cts.get(binder).copied())
        .collect();
    if final_cts.iter().all(Option::is_none) {
        return Ok(());
    }
    let source: Block = builder.program.blocks[*body].clone();
    let (carry_params, tangent_params) = source.params.split_at(n_carries);
    let (_, free) = loops::outer_linear_uses(builder.program, *body);
    // The backward step: params [carries…, carry cotangents…, outer cotangents…].
    let mut subst: HashMap<VarId, Atom> = HashMap::new();
    let mut params: Vec<VarId> = carry_params
        .iter()
        .map(|param| {
            let ty = builder.program.var_ty(*param).clone();
            let new = builder.program.new_var(ty, "c");
            subst.insert(*param, Atom::Var(new));
            new
        })
        .collect();
    let ct_carry_params = loops::ct_params_of(builder.program, tangent_params, "ct_c");
    let ct_free_params = loops::ct_params_of(builder.program, &free, "ct_free");
    let mut inner = Builder::new(&mut *builder.program);
    let (_, items, placeholders) =
        loops::copy_step(&mut inner, &source, tangent_params, &mut subst);
    let mut inner_cts: HashMap<VarId, Atom> = HashMap::new();
    let tangent_results = &source.results[1 + n_carries..];
    loops::seed_step(
        &mut inner,
        tangent_results,
        &ct_carry_params,
        &subst,
        &mut inner_cts,
    );
    let results = loops::finish_step(
        &mut inner,
        &items,
        &mut inner_cts,
        &placeholders,
        &free,
        &ct_free_params,
    )?;
    let stmts = std::mem::take(&mut inner.stmts);
    params.extend(&ct_carry_params);
    params.extend(&ct_free_params);
    let back = builder.program.blocks.push(Block {
        params,
        stmts,
        results,
    });
    // Seeded with the final carries' cotangents and zero outer cotangents.
    let mut seeds = Vec::new();
    let mut tys = Vec::new();
    for (ct, binder) in final_cts.iter().zip(tangent_binders) {
        let ty = builder.program.var_ty(*binder).clone();
        seeds.push(ct.unwrap_or_else(|| builder.zeros(&ty)));
        tys.push(ty);
    }
    for var in &free {
        let ty = builder.program.var_ty(*var).clone();
        seeds.push(builder.zeros(&ty));
        tys.push(ty);
    }
    let replay = clone_block(builder.program, primal_body, &mut HashMap::new());
    let expr = Expr::from(WhileReverse {
        init: init[..n_carries].to_vec(),
        seeds,
        body: replay,
        back,
    });
    let binders = builder.emit(expr, tys, "ct_loop");
    builder.set_linear(&binders, true);
    for (tangent, ct) in init[n_carries..].iter().zip(&binders) {
        if builder.is_linear(tangent) {
            builder.add_to(cts, *tangent, Atom::Var(*ct));
        }
    }
    for (var, ct) in free.iter().zip(&binders[tangent_params.len()..]) {
        builder.add_to(cts, Atom::Var(*var), Atom::Var(*ct));
    }
    Ok(())
}

/// A while's transpose is `transpose_while`, run by `ad::transpose_items` on the loop split
/// into its primal while and its linear part (`ad::LinearItem::While`).
impl Operation for While {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        while_tys(program, &self.init, self.body)
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        interp.eval_while(&self.init, self.body)
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        batcher.batch_while(&self.init, self.body, &stmt.binders);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        jvp_while(builder, stmt, tangents)
    }

    fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        ad::not_a_linear_statement()
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        cost(program, self.body)
    }

    fn linearity(&self) -> Linearity {
        Linearity::Compound(vec![true; self.init.len()])
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn split_linear(&self, program: &mut Program, stmt: &Stmt) -> Option<(Stmt, LinearItem)> {
        Some(split_while(program, stmt))
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.per_point()?;
        cx.while_loop(&self.init, self.body, None)
    }

    /// A `stablehlo.while` whose first loop-carried value is the continue flag, true at first,
    /// so that the body runs once before the condition region first reads it (a do-while);
    /// the body region returns the body's flag and new carries.
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let mut operands = vec![cx.splat(Scalar::Bool(true), &[])];
        operands.extend(hlo::atoms(cx, &self.init)?);
        let tys: Vec<ArrTy> = operands.iter().map(|val| val.ty.clone()).collect();
        let cond_region = cx.region(&tys, &mut |_, args| Ok(vec![args[0].clone()]))?;
        let body_region = cx.region(&tys, &mut |cx, args| cx.block(self.body, &args[1..]))?;
        Ok(cx.while_op(&operands, cond_region, body_region))
    }

    fn loop_bodies(&self) -> Vec<BlockId> {
        vec![self.body]
    }
}

impl Operation for WhileReverse {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        while_reverse_tys(program, &self.init, &self.seeds, self.body, self.back)
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        interp.eval_while_reverse(&self.init, &self.seeds, self.body, self.back)
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        batcher.batch_while_reverse(
            &self.init,
            &self.seeds,
            (self.body, self.back),
            &stmt.binders,
        );
    }

    fn jvp(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        Err(AdError::NoRule(
            "forward mode through the reverse sweep of a while loop (a second derivative \
             through a while) is not supported yet"
                .into(),
        ))
    }

    fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        ad::not_a_linear_statement()
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        reverse_cost(program, self.body, self.back)
    }

    /// Linear in its seeds, constant in the carries it replays.
    fn linearity(&self) -> Linearity {
        Linearity::Compound([vec![false; self.init.len()], vec![true; self.seeds.len()]].concat())
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.per_point()?;
        cx.while_loop(&self.init, self.body, Some((&self.seeds, self.back)))
    }

    fn export(&self, _: &mut dyn StableHlo, _: &Stmt) -> Exported {
        Err(ExportError::new(
            "while_reverse",
            "the reverse sweep of a while keeps the carries of a number of steps known only \
             as it runs, which StableHLO's static shapes cannot hold",
        ))
    }

    fn loop_bodies(&self) -> Vec<BlockId> {
        vec![self.body, self.back]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use crate::core::ir::{Expr, Program, While};
    use crate::core::parse::parse_program;
    use crate::core::value::{Array, ArrayData};
    use crate::exec::{self, ExecConfig, ExecReport};
    use crate::ops::interp::{self, InterpConfig, InterpError};
    use crate::ops::verify::verify;
    use crate::passes::pipeline::{self, PIPELINE};

    fn parse(text: &str) -> Program {
        let program = parse_program(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
        if let Err(errors) = verify(&program) {
            panic!("{errors:?}\n{program}");
        }
        assert_eq!(parse_program(&program.to_string()).as_ref(), Ok(&program));
        program
    }

    fn f64s(values: &[f64]) -> Array {
        Array::new(vec![values.len()], ArrayData::F64(values.to_vec()))
    }

    fn i64s(values: &[i64]) -> Array {
        Array::new(vec![values.len()], ArrayData::I64(values.to_vec()))
    }

    fn floats(array: &Array) -> Vec<f64> {
        match &*array.data {
            ArrayData::F64(values) => values.clone(),
            other => panic!("expected f64, got {other:?}"),
        }
    }

    fn ints(array: &Array) -> Vec<i64> {
        match &*array.data {
            ArrayData::I64(values) => values.clone(),
            other => panic!("expected i64, got {other:?}"),
        }
    }

    fn interp(program: &Program, inputs: &[Array]) -> Vec<Array> {
        interp::run(program, inputs, &InterpConfig::default())
            .unwrap_or_else(|error| panic!("{error}\n{program}"))
    }

    /// The program through the whole pipeline (derivatives, BOT, simplification, fusion),
    /// run by the reference interpreter and by the fused engine, which must agree bit for
    /// bit; the results and the engine's report.
    fn compiled(program: &Program, inputs: &[Array]) -> (Vec<Array>, ExecReport, Program) {
        let compiled = pipeline::run(program, PIPELINE, &[]).unwrap_or_else(|ice| panic!("{ice}"));
        let schedule = compiled.schedule.as_ref().expect("the pipeline fuses");
        let expected = interp(&compiled.program, inputs);
        let (fused, report) =
            exec::run_fused(&compiled.program, schedule, inputs, &ExecConfig::default())
                .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            format!("{expected:?}"),
            format!("{fused:?}"),
            "the engine differs from the interpreter on\n{}",
            compiled.program
        );
        (expected, report, compiled.program)
    }

    fn count(program: &Program, pred: impl Fn(&Expr) -> bool) -> usize {
        crate::core::visit::reachable_blocks(program, program.main)
            .into_iter()
            .flat_map(|block| program.blocks[block].stmts.iter())
            .filter(|stmt| pred(&stmt.expr))
            .count()
    }

    /// The steps of the Collatz sequence from `n` down to 1.
    fn collatz_steps(mut n: i64) -> i64 {
        let mut steps = 0;
        while n != 1 {
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            steps += 1;
        }
        steps
    }

    /// The Collatz steps of every element of `%0_ns` (each at least 2), by a while in a build:
    /// the lanes take different numbers of steps.
    const COLLATZ: &str = r"program(%0_ns: [6]i64) {
  %1_steps: [6]i64 = build1 6 (\%2_i: []i64 ->
    %3_n: []i64 = index %0_ns [%2_i]
    %4_count: []i64, %5_last: []i64 = while (0:i64, %3_n) (\%6_count: []i64, %7_n: []i64 ->
      %8: []i64 = mod %7_n 2:i64
      %9_even: []bool = eq %8 0:i64
      %10: []i64 = idiv %7_n 2:i64
      %11: []i64 = mul %7_n 3:i64
      %12: []i64 = add %11 1:i64
      %13: []i64 = select %9_even %10 %12
      %14: []i64 = add %6_count 1:i64
      %15_go: []bool = gt %13 1:i64
      in %15_go, %14, %13)
    in %4_count)
  in %1_steps
}";

    #[test]
    fn collatz_steps_in_a_build_agree_lane_by_lane() {
        let program = parse(COLLATZ);
        let ns = [27, 2, 3, 97, 871, 6];
        let expected: Vec<i64> = ns.iter().map(|&n| collatz_steps(n)).collect();
        assert_eq!(ints(&interp(&program, &[i64s(&ns)])[0]), expected);
        // Batched: one while over the lanes with a mask of the active ones.
        let (results, _, bulk) = compiled(&program, &[i64s(&ns)]);
        assert_eq!(ints(&results[0]), expected);
        assert_eq!(count(&bulk, |expr| matches!(expr, Expr::Build1(_))), 0);
        assert_eq!(count(&bulk, |expr| matches!(expr, Expr::While(_))), 1);
        // Each lane alone (the build of one lane) gives the same.
        for (n, steps) in ns.iter().zip(&expected) {
            let alone = COLLATZ
                .replace("[6]", "[1]")
                .replace("build1 6", "build1 1");
            let (results, _, _) = compiled(&parse(&alone), &[i64s(&[*n])]);
            assert_eq!(ints(&results[0]), vec![*steps]);
        }
    }

    /// Newton's iteration for `sqrt a` from `a`, until `|x² - a| <= 1e-9 a`.
    const NEWTON: &str = r"program(%0_a: []f64) {
  %1_tol: []f64 = mul %0_a 1e-9:f64
  %2_x: []f64, %3_steps: []i64 = while (%0_a, 0:i64) (\%4_x: []f64, %5_steps: []i64 ->
    %6: []f64 = mul %4_x %4_x
    %7: []f64 = sub %6 %0_a
    %8: []f64 = mul %4_x 2.0:f64
    %9: []f64 = div %7 %8
    %10: []f64 = sub %4_x %9
    %11: []f64 = mul %10 %10
    %12: []f64 = sub %11 %0_a
    %13: []f64 = abs %12
    %14_go: []bool = gt %13 %1_tol
    %15: []i64 = add %5_steps 1:i64
    in %14_go, %10, %15)
  in %2_x, %3_steps
}";

    #[test]
    fn newton_iterates_until_the_residual_is_small() {
        let program = parse(NEWTON);
        for a in [0.5, 2.0, 9.0, 1e4] {
            let input = Array::scalar(crate::core::ir::Scalar::F64(a));
            let results = interp(&program, std::slice::from_ref(&input));
            let x = floats(&results[0])[0];
            assert!((x * x - a).abs() <= 1e-9 * a, "{a}: {x}");
            assert!((x - a.sqrt()).abs() <= 1e-9 * a.sqrt(), "{a}: {x}");
            // The body runs at least once, and more from further away.
            let steps = ints(&results[1])[0];
            assert!(steps >= 1);
            let (fused, _, _) = compiled(&program, &[input]);
            assert_eq!(format!("{fused:?}"), format!("{results:?}"));
        }
    }

    /// A function of `%0_x: ty` (statements ending in the scalar `result`) as a program, and
    /// its derivatives as programs of `jvp`/`vjp` statements: `vjp` binds the value and the
    /// gradient (seed 1), `jvp` the value and the tangent along the input `%1_dx`.
    struct Function {
        primal: String,
        vjp: String,
        jvp: String,
    }

    fn function(ty: &str, stmts: &str, result: &str) -> Function {
        let inner = stmts.replace("%0_x", "%900_p");
        Function {
            primal: format!("program(%0_x: {ty}) {{\n{stmts}\n  in {result}\n}}"),
            vjp: format!(
                "program(%0_x: {ty}) {{\n  %901_y: []f64, %902_g: {ty} = vjp (%0_x) (1.0:f64) \
                 (\\%900_p: {ty} ->\n{inner}\n  in {result})\n  in %901_y, %902_g\n}}"
            ),
            jvp: format!(
                "program(%0_x: {ty}, %1_dx: {ty}) {{\n  %901_y: []f64, %903_t: []f64 = jvp \
                 (%0_x) (%1_dx) (\\%900_p: {ty} ->\n{inner}\n  in {result})\n  in %901_y, \
                 %903_t\n}}"
            ),
        }
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
    }

    /// The gradient and a directional derivative of `f` at `x`, through the whole pipeline,
    /// against central finite differences of the primal program under the interpreter; the
    /// gradient.
    fn check_derivatives(f: &Function, x: &[f64]) -> Vec<f64> {
        let primal = parse(&f.primal);
        let value = |at: &[f64]| floats(&interp(&primal, &[f64s(at)])[0])[0];
        let (results, _, bulk) = compiled(&parse(&f.vjp), &[f64s(x)]);
        assert!(close(floats(&results[0])[0], value(x), 1e-12));
        let grad = floats(&results[1]);
        let h = 1e-6;
        for (axis, g) in grad.iter().enumerate() {
            let mut plus = x.to_vec();
            let mut minus = x.to_vec();
            plus[axis] += h;
            minus[axis] -= h;
            let fd = (value(&plus) - value(&minus)) / (2.0 * h);
            assert!(close(*g, fd, 1e-6), "component {axis}: {g} vs {fd}\n{bulk}");
        }
        let direction: Vec<f64> = (0..x.len()).map(|k| 1.0 - 0.75 * k as f64).collect();
        let (results, _, _) = compiled(&parse(&f.jvp), &[f64s(x), f64s(&direction)]);
        let tangent = floats(&results[1])[0];
        let along: Vec<f64> = (x.iter().zip(&direction)).map(|(x, d)| x + h * d).collect();
        let back: Vec<f64> = (x.iter().zip(&direction)).map(|(x, d)| x - h * d).collect();
        let fd = (value(&along) - value(&back)) / (2.0 * h);
        assert!(close(tangent, fd, 1e-6), "tangent {tangent} vs {fd}");
        let dot: f64 = grad.iter().zip(&direction).map(|(g, d)| g * d).sum();
        assert!(close(tangent, dot, 1e-10), "tangent {tangent} vs {dot}");
        grad
    }

    /// One lane from `x` (an atom), four spaces in: halve `x` until it is at most 1, adding
    /// `x sin x` at every step (the while's results `%5_x`, `%6_s`); `%14` is `x · s` at the
    /// end.
    fn halving_lane(x: &str) -> String {
        format!(
            r"    %5_x: []f64, %6_s: []f64 = while ({x}, 0.0:f64) (\%7_x: []f64, %8_s: []f64 ->
      %9: []f64 = sin %7_x
      %10: []f64 = mul %9 %7_x
      %11: []f64 = add %8_s %10
      %12: []f64 = mul %7_x 0.5:f64
      %13_go: []bool = gt %12 1.0:f64
      in %13_go, %12, %11)
    %14: []f64 = mul %5_x %6_s"
        )
    }

    /// `halving_lane` over the four lanes of `%0_x`, summed into `%15`. The lanes take 1, 3,
    /// 6 and 10 steps (and the trip count does not change within the finite differences'
    /// step).
    fn halving() -> String {
        format!(
            "  %2: [4]f64 = build1 4 (\\%3_i: []i64 ->\n    %4: []f64 = index %0_x [%3_i]\n{}\n    \
             in %14)\n  %15: []f64 = sumOuter %2",
            halving_lane("%4")
        )
    }

    const LANES: [f64; 4] = [1.3, 5.0, 40.0, 700.0];

    #[test]
    fn derivatives_of_a_batched_while_agree_with_finite_differences() {
        let f = function("[4]f64", &halving(), "%15");
        let grad = check_derivatives(&f, &LANES);
        // Reverse mode replays the (masked) while and sweeps back over its steps.
        let compiled = pipeline::run(&parse(&f.vjp), PIPELINE, &[]).unwrap();
        let reverse = |expr: &Expr| matches!(expr, Expr::WhileReverse(_));
        assert_eq!(count(&compiled.program, reverse), 1, "{}", compiled.program);
        assert!(grad.iter().all(|g| g.abs() > 1e-3), "{grad:?}");
    }

    /// A while that reads the differentiated table at its counter and stops when its
    /// accumulator grows too large (here after three of the four elements): the backward
    /// step accumulates the table's cotangent in a carry of the reverse sweep.
    #[test]
    fn derivatives_through_reads_of_an_outer_table_agree_with_finite_differences() {
        let stmts = r"  %2_k: []i64, %3_acc: []f64 = while (0:i64, 1.0:f64) (\%4_k: []i64, %5_acc: []f64 ->
    %6_w: []f64 = index %0_x [%4_k]
    %7: []f64 = mul %5_acc %6_w
    %8: []f64 = sin %6_w
    %9: []f64 = add %7 %8
    %10: []i64 = add %4_k 1:i64
    %11: []bool = lt %10 4:i64
    %12: []bool = lt %9 50.0:f64
    %13_go: []bool = and %11 %12
    in %13_go, %10, %9)";
        let f = function("[4]f64", stmts, "%3_acc");
        let grad = check_derivatives(&f, &[3.0, 4.0, 5.0, 2.0]);
        assert_eq!(grad[3], 0.0, "the last element is never read: {grad:?}");
        assert!(grad[..3].iter().all(|g| g.abs() > 0.1), "{grad:?}");
    }

    /// Loops inside loops: a fold over the table inside a while's body, the while inside a
    /// fold, and the while's trip count depends on the data (capped at 6 steps).
    #[test]
    fn derivatives_of_nested_loops_around_a_while_agree_with_finite_differences() {
        let stmts = r"  %2: []f64 = fold 2 (0.25:f64) (\%3_i: []i64, %4_c: []f64 ->
    %5_x: []f64 = index %0_x [%3_i]
    %6_k: []i64, %7_y: []f64 = while (0:i64, %4_c) (\%8_k: []i64, %9_y: []f64 ->
      %10: []f64 = fold 2 (%9_y) (\%11_j: []i64, %12_d: []f64 ->
        %13: []f64 = index %0_x [%11_j]
        %14: []f64 = mul %12_d %13
        %15: []f64 = cos %14
        %16: []f64 = add %12_d %15
        in %16)
      %17: []f64 = mul %10 0.5:f64
      %18: []i64 = add %8_k 1:i64
      %19: []bool = lt %18 6:i64
      %20: []bool = gt %17 0.9:f64
      %21_go: []bool = and %19 %20
      in %21_go, %18, %17)
    %22: []f64 = mul %7_y %5_x
    in %22)";
        let f = function("[2]f64", stmts, "%2");
        let grad = check_derivatives(&f, &[0.7, -1.3]);
        assert!(grad.iter().all(|g| g.abs() > 1e-3), "{grad:?}");
    }

    /// A while inside a while's body: the backward step of the outer reverse sweep holds the
    /// inner one.
    #[test]
    fn derivatives_of_a_while_in_a_while_agree_with_finite_differences() {
        let stmts = r"  %2_k: []i64, %3_y: []f64 = while (0:i64, 0.5:f64) (\%4_k: []i64, %5_y: []f64 ->
    %6_w: []f64 = index %0_x [%4_k]
    %7_z: []f64 = while (%6_w) (\%8_z: []f64 ->
      %9: []f64 = mul %8_z 0.5:f64
      %10: []f64 = sin %8_z
      %11: []f64 = mul %10 0.01:f64
      %12: []f64 = add %9 %11
      %13_go: []bool = gt %12 0.2:f64
      in %13_go, %12)
    %14: []f64 = mul %5_y %7_z
    %15: []f64 = add %14 %6_w
    %16: []i64 = add %4_k 1:i64
    %17_go: []bool = lt %16 3:i64
    in %17_go, %16, %15)";
        let f = function("[3]f64", stmts, "%3_y");
        let grad = check_derivatives(&f, &[5.0, 12.0, 0.9]);
        assert!(grad.iter().all(|g| g.abs() > 1e-3), "{grad:?}");
        let compiled = pipeline::run(&parse(&f.vjp), PIPELINE, &[]).unwrap();
        let reverse = |expr: &Expr| matches!(expr, Expr::WhileReverse(_));
        assert_eq!(count(&compiled.program, reverse), 2, "{}", compiled.program);
    }

    /// A `vjp` of one lane's function inside a build: the outer BOT batches the
    /// `while_reverse`, whose lanes take different numbers of steps.
    #[test]
    fn reverse_sweeps_in_a_build_agree_with_each_lane_alone() {
        let lane = halving_lane("%0_x");
        let alone = function("[]f64", &lane, "%14");
        let in_build = format!(
            "program(%30_xs: [4]f64) {{\n  %20_g: [4]f64 = build1 4 (\\%21_i: []i64 ->\n    \
             %22: []f64 = index %30_xs [%21_i]\n    %23_y: []f64, %24_g: []f64 = vjp (%22) \
             (1.0:f64) (\\%0_x: []f64 ->\n{lane}\n    in %14)\n    in %24_g)\n  in %20_g\n}}"
        );
        let (results, _, bulk) = compiled(&parse(&in_build), &[f64s(&LANES)]);
        let reverse = |expr: &Expr| matches!(expr, Expr::WhileReverse(_));
        assert_eq!(count(&bulk, reverse), 1, "{bulk}");
        assert_eq!(count(&bulk, |expr| matches!(expr, Expr::Build1(_))), 0);
        let scalar = |x: f64| Array::scalar(crate::core::ir::Scalar::F64(x));
        let vjp = parse(&alone.vjp);
        for (x, g) in LANES.iter().zip(floats(&results[0])) {
            let (lane_results, _, _) = compiled(&vjp, &[scalar(*x)]);
            let expected = floats(&lane_results[1])[0];
            assert!(close(g, expected, 1e-13), "lane at {x}: {g} vs {expected}");
        }
    }

    /// The work of a gradient through a while grows linearly with the trip count: the
    /// forward while, its replay and the backward sweep each run once per trip (Note [Reverse
    /// mode through a while loop]); recomputing each step from the start would quadruple it
    /// when the count doubles. Counted in executed statements, not time.
    #[test]
    fn gradients_through_a_while_cost_linear_in_its_trips() {
        let program = |n: i64| {
            let stmts = format!(
                r"  %5_k: []i64, %6_x: []f64 = while (0:i64, %0_x) (\%7_k: []i64, %8_x: []f64 ->
    %9: []f64 = sin %8_x
    %10: []f64 = mul %9 0.5:f64
    %11: []f64 = add %8_x %10
    %12: []i64 = add %7_k 1:i64
    %13_go: []bool = lt %12 {n}:i64
    in %13_go, %12, %11)"
            );
            function("[]f64", &stmts, "%6_x")
        };
        let scalar = |x: f64| Array::scalar(crate::core::ir::Scalar::F64(x));
        let mut work = Vec::new();
        for n in [100, 200, 400] {
            let (_, report, _) = compiled(&parse(&program(n).vjp), &[scalar(0.3)]);
            work.push(report.statements + report.kernels);
        }
        let ratios: Vec<f64> = work
            .windows(2)
            .map(|pair| pair[1] as f64 / pair[0] as f64)
            .collect();
        eprintln!("gradient through a while: {work:?} statements at 100, 200, 400 trips");
        assert!(
            ratios.iter().all(|ratio| (1.9..=2.1).contains(ratio)),
            "statements run {work:?} at 100, 200, 400 trips (ratios {ratios:?})"
        );
        // And the gradient is right.
        let f = program(10);
        let primal = parse(&f.primal);
        let value = |x: f64| floats(&interp(&primal, &[scalar(x)])[0])[0];
        let (results, _, _) = compiled(&parse(&f.vjp), &[scalar(0.3)]);
        let fd = (value(0.3 + 1e-6) - value(0.3 - 1e-6)) / 2e-6;
        assert!(close(floats(&results[1])[0], fd, 1e-6));
    }

    /// A while that never ends stops when the session's interrupt flag is set, in the
    /// interpreter and in both engines.
    #[test]
    fn interrupt_stops_a_while_that_never_ends() {
        let program = parse(
            r"program(%0_x: []f64) {
  %1: []f64 = while (%0_x) (\%2: []f64 ->
    %3: []f64 = add %2 1.0:f64
    in true, %3)
  in %1
}",
        );
        let input = [Array::scalar(crate::core::ir::Scalar::F64(0.0))];
        let interrupted = |run: &dyn Fn(Arc<AtomicBool>) -> Result<Vec<Array>, InterpError>| {
            let flag = Arc::new(AtomicBool::new(false));
            let setter = flag.clone();
            let stopper = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                setter.store(true, Ordering::Relaxed);
            });
            let res = run(flag);
            stopper.join().unwrap();
            assert_eq!(res, Err(InterpError::Interrupted));
        };
        interrupted(&|flag| {
            let config = InterpConfig {
                strict: false,
                interrupt: Some(flag),
            };
            interp::run(&program, &input, &config)
        });
        let exec_config = |flag| ExecConfig {
            interrupt: Some(flag),
            ..ExecConfig::default()
        };
        interrupted(&|flag| exec::run(&program, &input, &exec_config(flag)));
        let schedule = crate::passes::fuse::run(&program);
        interrupted(&|flag| {
            exec::run_fused(&program, &schedule, &input, &exec_config(flag))
                .map(|(results, _)| results)
        });
    }

    #[test]
    fn ill_typed_whiles_are_refused() {
        // Each program and a part of the verifier's first error on it.
        let cases = [
            (
                r"program(%0: []f64) {
  %1: []f64 = while (%0) (\%2: []f64 ->
    in %2, %2)
  in %1
}",
                "condition of a while must be a bool scalar",
            ),
            (
                r"program(%0: []f64) {
  %1: []f64 = while (%0) (\%2: []f64 ->
    in true, 1:i64)
  in %1
}",
                "returns carries",
            ),
            (
                r"program(%0: []f64) {
  %1: []f64 = while_reverse (%0) (1.0:f64) (\%2: []f64 ->
    in false, %2) (\%3: []f64 ->
    in %3)
  in %1
}",
                "backward step has 1 params",
            ),
        ];
        for (text, expected) in cases {
            let program = parse_program(text).expect("parses");
            let errors: Vec<String> = (verify(&program).expect_err("ill-typed").iter())
                .map(ToString::to_string)
                .collect();
            assert!(errors[0].contains(expected), "{text}: {errors:?}");
        }
    }

    /// The simplifier rewrites inside a while's body and drops a while nothing reads (every
    /// operation is pure); the cost model assumes `NOMINAL_TRIPS` steps.
    #[test]
    fn whiles_are_simplified_dropped_when_unused_and_costed_nominally() {
        let text = r"program(%0_x: []f64) {
  %1: []f64 = while (%0_x) (\%2: []f64 ->
    %3: []f64 = mul %2 1.0:f64
    %4: []f64 = mul %3 0.5:f64
    %5: []bool = gt %4 1.0:f64
    in %5, %4)
  %6: []f64 = while (%0_x) (\%7: []f64 ->
    %8: []bool = lt %7 0.0:f64
    in %8, %7)
  in %1
}";
        let mut program = parse(text);
        // Three scalar statements and two scalar results per step, unrolled 16 times; the
        // second while: one statement and two results.
        let per_step = [3 + 2, 1 + 2];
        let nominal = |n: u64| super::NOMINAL_TRIPS as u64 * n;
        assert_eq!(
            crate::ops::cost::cost(&program),
            nominal(per_step[0]) + nominal(per_step[1])
        );
        let input = [Array::scalar(crate::core::ir::Scalar::F64(6.0))];
        let before = interp(&program, &input);
        crate::passes::simplify::run(&mut program);
        let after = interp(&program, &input);
        assert_eq!(format!("{before:?}"), format!("{after:?}"));
        let whiles: Vec<&Expr> = crate::core::visit::reachable_blocks(&program, program.main)
            .into_iter()
            .flat_map(|block| program.blocks[block].stmts.iter())
            .map(|stmt| &stmt.expr)
            .filter(|expr| matches!(expr, Expr::While(_)))
            .collect();
        assert_eq!(whiles.len(), 1, "{program}");
        let Expr::While(While { body, .. }) = whiles[0] else {
            unreachable!()
        };
        assert_eq!(program.blocks[*body].stmts.len(), 2, "{program}");
    }
}

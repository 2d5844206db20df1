//! The bulk-operation transform (BOT, [Smeding25] §5, Figs 9–11), read on ANF as batching.
//!
//! Input: verified core IR. Output: verified core IR with no `build1` anywhere (Theorem 5.1
//! (1)); `index` survives only on variables (trivially so in ANF, Theorem 5.1 (2)) and inside
//! the index functions of `gather`/`scatter`.
//!
//! `build1 k (λi. body)` is vectorised statement by statement, as JAX's vmap does (docs/architecture.md
//! "BOT as batching"). Every variable of the body gets a *status*:
//! - `Unbatched(atom)`: it does not depend on `i`; its statement is hoisted out of the build
//!   unchanged (Fig 9: `build1 k (λi. t) ~> replicate k t` for `i ∉ FV(t)`, applied lazily —
//!   the replicate is only made where a bulk operation needs it).
//! - `Batched(v)`: `v` is the bulk array, with a new leading axis of size `k`.
//! - `Index(e)`: an integer scalar computed from `i` by index arithmetic, kept symbolic so
//!   that it can become part of a gather's index function (Fig 11: `build1 k (λi. index x ix)
//!   ~> gather (k:::sh) x (λ[i]. ix)`), and only materialised when data needs it.
//!
//! Each statement form has one rule, citing the Fig 9/11 rule it reads, in its operation's
//! home in `ops` (`Batcher::batch_stmt` dispatches to them; elementwise primitives are
//! batched here, `batch_prim`). Builds are
//! transformed innermost first, so a body never contains a `build1` when it is batched.
//! Conditionals with a batched condition become strict selects (§5.2, `ops::cond`).
//! `fold`/`scan` inside a build run once over batched state (the carries that depend on `i`
//! get the batch axis, `ops::loops`); so does a `while`, with a mask of the lanes still
//! running when its condition depends on `i` (`ops::while_loop`).

use std::collections::HashMap;
use std::rc::Rc;

use super::cleanup;
use super::pipeline::{no_stages, Compilation, Pass};
use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Expr, Program, Scalar, Stmt, VarId};
use crate::core::visit::collect_uses;
use crate::core::visit::{expr_atoms, expr_blocks};
use crate::prim::Prim;

pub const PASS: Pass<Compilation> = Pass {
    name: "bot",
    description: "the bulk-operation transform: build1 becomes bulk operations ([Smeding25] §5)",
    run: |compilation, _, _| {
        run_in_place(&mut compilation.program);
        Ok(())
    },
    postcondition: Some(|compilation| normal_form(&compilation.program)),
    nested: no_stages,
    overview: true,
};

/// Runs the BOT on a whole program.
pub fn run(program: &Program) -> Program {
    let mut program = program.clone();
    run_in_place(&mut program);
    program
}

fn run_in_place(program: &mut Program) {
    let main = program.main;
    run_block(program, main);
}

/// Whether a program is in BOT normal form: no `build1` in any reachable block.
pub fn is_normal_form(program: &Program) -> bool {
    normal_form(program).is_ok()
}

/// The BOT's guarantee ([Smeding25] Theorem 5.1): no `build1` in any reachable block.
fn normal_form(program: &Program) -> Result<(), String> {
    let left = crate::core::visit::reachable_blocks(program, program.main)
        .into_iter()
        .any(|block| {
            program.blocks[block]
                .stmts
                .iter()
                .any(|stmt| matches!(stmt.expr, Expr::Build1 { .. }))
        });
    if left {
        Err("a build1 is left".into())
    } else {
        Ok(())
    }
}

/// Runs the BOT on one block (and the blocks nested in it), e.g. a function being
/// differentiated; the block may use variables defined outside it.
pub fn run_block(program: &mut Program, block: BlockId) {
    bot_block(program, block);
    cleanup::run_from(program, block);
    // Pushing an index may create index statements that can be pushed further (bounded).
    for _ in 0..3 {
        push_index(program, block, &mut HashMap::new(), &mut HashMap::new());
    }
    cleanup::run_from(program, block);
    compose_gathers(program, block);
    simplify_gathers(program, block);
    cleanup::run_from(program, block);
}

/// Transforms the builds of a block (and of every block nested in it), innermost first.
fn bot_block(program: &mut Program, block: BlockId) {
    let stmts = std::mem::take(&mut program.blocks[block].stmts);
    for stmt in stmts {
        for nested in expr_blocks(&stmt.expr) {
            bot_block(program, nested);
        }
        match stmt.expr {
            Expr::Build1 { size, body } => {
                let mut batcher = Batcher {
                    program: &mut *program,
                    size,
                    target: block,
                    env: HashMap::new(),
                    iota: None,
                };
                batcher.batch_build(body, &stmt.binders);
            }
            expr => program.blocks[block].stmts.push(Stmt {
                binders: stmt.binders,
                expr,
            }),
        }
    }
}

/// A scalar integer computed from the batch index by index arithmetic.
#[derive(Debug)]
pub(crate) enum IxExpr {
    /// The batch index itself.
    Batch,
    /// A scalar that does not depend on the batch index.
    Atom(Atom),
    Prim(Prim, Vec<Rc<IxExpr>>, Elem),
}

#[derive(Clone, Debug)]
pub(crate) enum Status {
    Unbatched(Atom),
    Batched(VarId),
    Index(Rc<IxExpr>),
}

/// Vectorises the body of one `build1` over its batch axis, emitting into `target`.
pub(crate) struct Batcher<'p> {
    pub(crate) program: &'p mut Program,
    pub(crate) size: usize,
    /// The block that receives the vectorised statements.
    pub(crate) target: BlockId,
    pub(crate) env: HashMap<VarId, Status>,
    /// `iota size`, made once when first needed.
    iota: Option<VarId>,
}

impl Batcher<'_> {
    fn batch_build(&mut self, body: BlockId, binders: &[VarId]) {
        let body_block = self.program.blocks[body].clone();
        // Fig 9: build1 k (λi. i) ~> [0, …, k-1] — kept symbolic until needed.
        self.env
            .insert(body_block.params[0], Status::Index(Rc::new(IxExpr::Batch)));
        for stmt in &body_block.stmts {
            self.batch_stmt(stmt);
        }
        for (binder, result) in binders.iter().zip(&body_block.results) {
            let status = self.status(*result);
            let bulk = self.force(status);
            self.emit_to(self.target, vec![*binder], Expr::Atom(Atom::Var(bulk)));
        }
    }

    // ----- statuses -----

    pub(crate) fn status(&self, atom: Atom) -> Status {
        match atom {
            Atom::Var(var) => self
                .env
                .get(&var)
                .cloned()
                .unwrap_or(Status::Unbatched(atom)),
            Atom::Lit(_) => Status::Unbatched(atom),
        }
    }

    pub(crate) fn is_unbatched(&self, atom: Atom) -> bool {
        matches!(self.status(atom), Status::Unbatched(_))
    }

    /// The batched type and the hint of a statement's binder (for its bulk replacement).
    pub(crate) fn batched_binder(&self, binder: VarId) -> (ArrTy, String) {
        let ty = self.batched_ty(self.program.var_ty(binder));
        (ty, self.program.vars[binder].hint.clone())
    }

    pub(crate) fn batched_ty(&self, ty: &ArrTy) -> ArrTy {
        let mut shape = vec![self.size];
        shape.extend(&ty.shape);
        ArrTy::new(shape, ty.elem)
    }

    pub(crate) fn new_var(&mut self, ty: ArrTy, hint: &str) -> VarId {
        self.program.new_var(ty, hint)
    }

    pub(crate) fn emit_to(&mut self, block: BlockId, binders: Vec<VarId>, expr: Expr) {
        self.program.blocks[block]
            .stmts
            .push(Stmt { binders, expr });
    }

    /// Emits a one-result statement into the target block.
    pub(crate) fn emit1(&mut self, expr: Expr, ty: ArrTy, hint: &str) -> VarId {
        let var = self.new_var(ty, hint);
        self.emit_to(self.target, vec![var], expr);
        var
    }

    /// The bulk array of a value: unbatched values are replicated (Fig 9's leaf rule), index
    /// expressions are computed over `iota k`.
    pub(crate) fn force(&mut self, status: Status) -> VarId {
        match status {
            Status::Batched(var) => var,
            Status::Unbatched(atom) => {
                let ty = self.program.atom_ty(&atom);
                let ty = self.batched_ty(&ty);
                self.emit1(
                    Expr::Replicate {
                        count: self.size,
                        array: atom,
                    },
                    ty,
                    "rep",
                )
            }
            Status::Index(expr) => self.materialise(&expr),
        }
    }

    pub(crate) fn force_atom(&mut self, atom: Atom) -> VarId {
        let status = self.status(atom);
        self.force(status)
    }

    pub(crate) fn materialise(&mut self, expr: &IxExpr) -> VarId {
        match expr {
            IxExpr::Batch => {
                if let Some(iota) = self.iota {
                    return iota;
                }
                let iota = self.emit1(
                    Expr::Iota(self.size),
                    ArrTy::new(vec![self.size], Elem::I64),
                    "iota",
                );
                self.iota = Some(iota);
                iota
            }
            IxExpr::Atom(atom) => self.force(Status::Unbatched(*atom)),
            IxExpr::Prim(prim, args, elem) => {
                let args: Vec<Atom> = args
                    .iter()
                    .map(|arg| Atom::Var(self.materialise(arg)))
                    .collect();
                self.emit1(
                    Expr::Prim(*prim, args),
                    ArrTy::new(vec![self.size], *elem),
                    &prim.name(),
                )
            }
        }
    }

    /// The value of a status inside an index function whose batch parameter is `batch`:
    /// index expressions are emitted as scalar arithmetic, batched arrays are read at the
    /// batch index (the normal form `index x (v ::: ix)` of Theorem 5.1).
    pub(crate) fn in_lambda(&mut self, status: Status, lambda: BlockId, batch: VarId) -> Atom {
        match status {
            Status::Unbatched(atom) => atom,
            Status::Index(expr) => self.emit_ix_in(&expr, lambda, batch),
            Status::Batched(var) => {
                let ty = self.program.var_ty(var).clone();
                let res_ty = ArrTy::new(ty.shape[1..].to_vec(), ty.elem);
                let res = self.new_var(res_ty, "ix");
                self.emit_to(
                    lambda,
                    vec![res],
                    Expr::Index {
                        array: Atom::Var(var),
                        index: vec![Atom::Var(batch)],
                    },
                );
                Atom::Var(res)
            }
        }
    }

    pub(crate) fn emit_ix_in(&mut self, expr: &IxExpr, lambda: BlockId, batch: VarId) -> Atom {
        match expr {
            IxExpr::Batch => Atom::Var(batch),
            IxExpr::Atom(atom) => *atom,
            IxExpr::Prim(prim, args, elem) => {
                let args: Vec<Atom> = args
                    .iter()
                    .map(|arg| self.emit_ix_in(arg, lambda, batch))
                    .collect();
                if let Some(scalars) = args.iter().map(lit_of).collect::<Option<Vec<_>>>() {
                    return Atom::Lit(prim.eval(&scalars));
                }
                let res = self.new_var(ArrTy::scalar(*elem), &prim.name());
                self.emit_to(lambda, vec![res], Expr::Prim(*prim, args));
                Atom::Var(res)
            }
        }
    }

    /// Whether any atom used in a block (recursively) depends on the batch index.
    pub(crate) fn block_depends(&self, block: BlockId) -> bool {
        let block = &self.program.blocks[block];
        block.results.iter().any(|atom| !self.is_unbatched(*atom))
            || block.stmts.iter().any(|stmt| {
                expr_atoms(&stmt.expr)
                    .iter()
                    .any(|atom| !self.is_unbatched(*atom))
                    || expr_blocks(&stmt.expr)
                        .into_iter()
                        .any(|nested| self.block_depends(nested))
            })
    }

    // ----- statements -----

    pub(crate) fn batch_stmt(&mut self, stmt: &Stmt) {
        let depends = expr_atoms(&stmt.expr)
            .iter()
            .any(|atom| !self.is_unbatched(*atom))
            || expr_blocks(&stmt.expr)
                .into_iter()
                .any(|block| self.block_depends(block));
        if !depends {
            // Fig 9, i ∉ FV(t): hoisted out of the build unchanged.
            self.emit_to(self.target, stmt.binders.clone(), stmt.expr.clone());
            return;
        }
        // A single-result operation binds one variable (the verifier checks it).
        let binder = || stmt.binders[0];
        let status = match &stmt.expr {
            Expr::Atom(atom) => self.status(*atom),
            Expr::Prim(prim, args) => self.batch_prim(*prim, args, binder()),
            Expr::Index { array, index } => self.batch_index(*array, index, binder()),
            Expr::SumOuter(array) => self.batch_sum_outer(*array, binder()),
            Expr::Gather { shape, array, body } => {
                self.batch_gather_scatter(true, shape, *array, *body, binder())
            }
            Expr::Scatter { shape, array, body } => {
                self.batch_gather_scatter(false, shape, *array, *body, binder())
            }
            Expr::Table(items) => self.batch_table(items, binder()),
            Expr::Replicate { count, array } => self.batch_replicate(*count, *array, binder()),
            Expr::Transpose { perm, array } => self.batch_transpose(perm, *array, binder()),
            Expr::Reshape { shape, array } => self.batch_reshape(shape, *array, binder()),
            Expr::Cond {
                cond,
                then_block,
                else_block,
            } => {
                self.batch_cond(*cond, *then_block, *else_block, &stmt.binders);
                return;
            }
            Expr::Fold { size, init, body } => {
                self.batch_loop(*size, init, *body, &stmt.binders, false);
                return;
            }
            Expr::Scan { size, init, body } => {
                self.batch_loop(*size, init, *body, &stmt.binders, true);
                return;
            }
            Expr::While { init, body } => {
                self.batch_while(init, *body, &stmt.binders);
                return;
            }
            Expr::WhileReverse {
                init,
                seeds,
                body,
                back,
            } => {
                self.batch_while_reverse(init, seeds, (*body, *back), &stmt.binders);
                return;
            }
            Expr::Monoid {
                kind,
                arrays,
                init,
                op,
            } => {
                self.batch_monoid(*kind, arrays, init, *op, &stmt.binders);
                return;
            }
            Expr::CustomVjp { .. } | Expr::CustomJvp { .. } => {
                self.batch_custom(&stmt.expr, &stmt.binders);
                return;
            }
            Expr::CustomLinear { .. } => unreachable!("custom_linear exists only inside `ad`"),
            Expr::Iota(_) => unreachable!("iota does not depend on the batch index"),
            Expr::Build1 { .. } => unreachable!("builds are transformed innermost first"),
            Expr::Derivative { .. } => unreachable!("{}", crate::core::ir::EXPANDED),
        };
        self.env.insert(binder(), status);
    }

    fn batch_prim(&mut self, prim: Prim, args: &[Atom], binder: VarId) -> Status {
        let statuses: Vec<Status> = args.iter().map(|atom| self.status(*atom)).collect();
        let binder_ty = self.program.var_ty(binder).clone();
        // Integer arithmetic on index scalars stays symbolic (it may end up in an index function).
        let symbolic = binder_ty.shape.is_empty()
            && binder_ty.elem.is_integer()
            && statuses
                .iter()
                .all(|status| !matches!(status, Status::Batched(_)));
        if symbolic {
            let args = statuses
                .into_iter()
                .map(|status| match status {
                    Status::Index(expr) => expr,
                    Status::Unbatched(atom) => Rc::new(IxExpr::Atom(atom)),
                    Status::Batched(_) => unreachable!("checked above"),
                })
                .collect();
            return Status::Index(Rc::new(IxExpr::Prim(prim, args, binder_ty.elem)));
        }
        // Fig 9: build1 k (λi. op t u) ~> op (build1 k (λi. t)) (build1 k (λi. u)).
        let args: Vec<Atom> = statuses
            .into_iter()
            .map(|status| Atom::Var(self.force(status)))
            .collect();
        let hint = self.program.vars[binder].hint.clone();
        Status::Batched(self.emit1(Expr::Prim(prim, args), self.batched_ty(&binder_ty), &hint))
    }

    /// A copy of an index function with a new leading batch parameter, in which uses of the
    /// build's variables are replaced by their values at the batch index.
    pub(crate) fn rebase_lambda(&mut self, body: BlockId) -> BlockId {
        let old = self.program.blocks[body].clone();
        let lambda = self.program.new_block();
        let batch = self.new_var(ArrTy::scalar(Elem::I64), "i");
        let mut params = vec![batch];
        params.extend(&old.params);
        self.program.blocks[lambda].params = params;
        let mut memo: HashMap<VarId, Atom> = HashMap::new();
        for stmt in &old.stmts {
            let mut expr = stmt.expr.clone();
            let atoms: Vec<Atom> = expr_atoms(&expr)
                .into_iter()
                .map(|atom| self.remap_into(&mut memo, lambda, batch, atom))
                .collect();
            let mut position = 0;
            crate::core::visit::map_expr_atoms(&mut expr, &mut |_| {
                position += 1;
                atoms[position - 1]
            });
            // Blocks nested in an index function see the build's variables too.
            for nested in expr_blocks(&expr) {
                let mut uses = Vec::new();
                collect_uses(self.program, nested, &mut uses);
                for var in uses {
                    self.remap_into(&mut memo, lambda, batch, Atom::Var(var));
                }
                crate::core::visit::map_block_atoms(self.program, nested, &mut |atom| match atom {
                    Atom::Var(var) => memo.get(&var).copied().unwrap_or(atom),
                    Atom::Lit(_) => atom,
                });
            }
            self.emit_to(lambda, stmt.binders.clone(), expr);
        }
        let results: Vec<Atom> = old
            .results
            .iter()
            .map(|atom| self.remap_into(&mut memo, lambda, batch, *atom))
            .collect();
        self.program.blocks[lambda].results = results;
        lambda
    }

    /// The value of an atom inside the index function `lambda` (memoised per variable).
    pub(crate) fn remap_into(
        &mut self,
        memo: &mut HashMap<VarId, Atom>,
        lambda: BlockId,
        batch: VarId,
        atom: Atom,
    ) -> Atom {
        let Atom::Var(var) = atom else { return atom };
        if let Some(done) = memo.get(&var) {
            return *done;
        }
        let res = match self.env.get(&var).cloned() {
            Some(status) => self.in_lambda(status, lambda, batch),
            None => atom,
        };
        memo.insert(var, res);
        res
    }

    /// Batches a block's statements into the current target; returns its results.
    pub(crate) fn inline_block(&mut self, block: BlockId) -> Vec<Atom> {
        let block = self.program.blocks[block].clone();
        for stmt in &block.stmts {
            self.batch_stmt(stmt);
        }
        block.results
    }

    /// Batches a nested block into a new block with the given parameters (already bound in
    /// `env`). Results marked in `batched` become bulk arrays; the others are kept as they are
    /// (a loop's unbatched carries).
    pub(crate) fn batch_subblock(
        &mut self,
        block: BlockId,
        params: Vec<VarId>,
        batched: &[bool],
    ) -> BlockId {
        let new_block = self.program.new_block();
        self.program.blocks[new_block].params = params;
        let outer = std::mem::replace(&mut self.target, new_block);
        let outer_iota = self.iota.take();
        let results = self.inline_block(block);
        let results: Vec<Atom> = results
            .into_iter()
            .zip(batched)
            .map(|(atom, is_batched)| {
                if *is_batched {
                    Atom::Var(self.force_atom(atom))
                } else {
                    atom
                }
            })
            .collect();
        self.program.blocks[new_block].results = results;
        self.target = outer;
        self.iota = outer_iota;
        new_block
    }

    /// Broadcasts a `[k]` array to `[k] ++ shape` (batch axis first).
    pub(crate) fn broadcast_batch(&mut self, bulk: VarId, shape: &[usize]) -> VarId {
        if shape.is_empty() {
            return bulk;
        }
        let elem = self.program.var_ty(bulk).elem;
        let mut current = bulk;
        let mut current_shape = vec![self.size];
        for &count in shape.iter().rev() {
            let mut new_shape = vec![count];
            new_shape.extend(&current_shape);
            current = self.emit1(
                Expr::Replicate {
                    count,
                    array: Atom::Var(current),
                },
                ArrTy::new(new_shape.clone(), elem),
                "rep",
            );
            current_shape = new_shape;
        }
        // Now [d1, …, dn, k]: move the batch axis to the front.
        let rank = current_shape.len();
        let mut perm = vec![rank - 1];
        perm.extend(0..rank - 1);
        let mut final_shape = vec![self.size];
        final_shape.extend(shape);
        self.emit1(
            Expr::Transpose {
                perm,
                array: Atom::Var(current),
            },
            ArrTy::new(final_shape, elem),
            "mask",
        )
    }
}

fn lit_of(atom: &Atom) -> Option<Scalar> {
    match atom {
        Atom::Lit(scalar) => Some(*scalar),
        Atom::Var(_) => None,
    }
}

/// Drops identity gathers: `gather sh x (λ[i…]. [i…])` with `sh` the shape of `x` is `x`.
fn simplify_gathers(program: &mut Program, root: BlockId) {
    for block in crate::core::visit::reachable_blocks(program, root) {
        let mut stmts = std::mem::take(&mut program.blocks[block].stmts);
        for stmt in &mut stmts {
            if let Expr::Gather { shape, array, body } = &stmt.expr {
                let lambda = &program.blocks[*body];
                let identity = lambda.stmts.is_empty()
                    && lambda.params.len() == lambda.results.len()
                    && lambda
                        .params
                        .iter()
                        .zip(&lambda.results)
                        .all(|(param, result)| *result == Atom::Var(*param))
                    && program.atom_ty(array).shape == *shape;
                if identity {
                    stmt.expr = Expr::Atom(*array);
                }
            }
        }
        program.blocks[block].stmts = stmts;
    }
}

/// Composes a gather of a gather: `gather sh2 (gather sh1 x g1) g2` reads
/// `x[g1(g2(j))]`, which needs no intermediate array. Where `g2` may leave the range of the
/// inner gather (which reads zero there), the composed index function keeps that: it sends
/// such positions out of the range of `x` (to -1), so the result is exactly the same.
fn compose_gathers(program: &mut Program, root: BlockId) {
    let mut gathers: HashMap<VarId, (Vec<usize>, Atom, BlockId)> = HashMap::new();
    for block in crate::core::visit::reachable_blocks(program, root) {
        for position in 0..program.blocks[block].stmts.len() {
            let stmt = program.blocks[block].stmts[position].clone();
            let Expr::Gather { shape, array, body } = &stmt.expr else {
                continue;
            };
            let mut new_expr = None;
            if let Atom::Var(inner) = array {
                if let Some((inner_shape, source, inner_body)) = gathers.get(inner).cloned() {
                    let composable = program.blocks[inner_body].params.len()
                        == program.blocks[*body].results.len();
                    if composable {
                        let lambda =
                            composed_lambda(program, &inner_shape, inner_body, shape, *body);
                        new_expr = Some(Expr::Gather {
                            shape: shape.clone(),
                            array: source,
                            body: lambda,
                        });
                    }
                }
            }
            if let Some(expr) = new_expr {
                program.blocks[block].stmts[position].expr = expr;
            }
            if let Expr::Gather { shape, array, body } = &program.blocks[block].stmts[position].expr
            {
                gathers.insert(stmt.binders[0], (shape.clone(), *array, *body));
            }
        }
    }
}

/// `λj. let a = g2 j in if a in range of inner_shape then g1 a else -1`.
fn composed_lambda(
    program: &mut Program,
    inner_shape: &[usize],
    inner: BlockId,
    outer_shape: &[usize],
    outer: BlockId,
) -> BlockId {
    use crate::core::inline::{copy_stmts, rename};
    let outer_block = program.blocks[outer].clone();
    let inner_block = program.blocks[inner].clone();
    let lambda = program.new_block();
    let mut subst = HashMap::new();
    let params: Vec<VarId> = outer_block
        .params
        .iter()
        .map(|param| {
            let new = program.new_var(program.var_ty(*param).clone(), "i");
            subst.insert(*param, Atom::Var(new));
            new
        })
        .collect();
    program.blocks[lambda].params = params.clone();
    copy_stmts(program, &outer_block.stmts, lambda, &mut subst);
    let middle: Vec<Atom> = outer_block
        .results
        .iter()
        .map(|atom| rename(*atom, &subst))
        .collect();
    // Which components of the middle index may leave the inner gather's range.
    let mut in_range = Atom::Lit(Scalar::Bool(true));
    let index = ArrTy::scalar(Elem::I64);
    let boolean = ArrTy::scalar(Elem::Bool);
    let emit = |program: &mut Program, prim: Prim, args: Vec<Atom>, ty: &ArrTy| -> Atom {
        let var = program.new_var(ty.clone(), &prim.name());
        program.blocks[lambda].stmts.push(Stmt {
            binders: vec![var],
            expr: Expr::Prim(prim, args),
        });
        Atom::Var(var)
    };
    for (axis, atom) in middle.iter().enumerate() {
        let surely_in_range = match atom {
            Atom::Lit(Scalar::I64(value)) => *value >= 0 && (*value as usize) < inner_shape[axis],
            Atom::Var(var) => {
                params.get(axis) == Some(var) && outer_shape[axis] <= inner_shape[axis]
            }
            Atom::Lit(_) => false,
        };
        if surely_in_range {
            continue;
        }
        let low = emit(
            program,
            Prim::Ge,
            vec![*atom, Atom::Lit(Scalar::I64(0))],
            &boolean,
        );
        let high = emit(
            program,
            Prim::Lt,
            vec![*atom, Atom::Lit(Scalar::I64(inner_shape[axis] as i64))],
            &boolean,
        );
        let both = emit(program, Prim::And, vec![low, high], &boolean);
        in_range = match in_range {
            Atom::Lit(Scalar::Bool(true)) => both,
            previous => emit(program, Prim::And, vec![previous, both], &boolean),
        };
    }
    let mut inner_subst: HashMap<VarId, Atom> =
        inner_block.params.iter().copied().zip(middle).collect();
    copy_stmts(program, &inner_block.stmts, lambda, &mut inner_subst);
    let mut results: Vec<Atom> = inner_block
        .results
        .iter()
        .map(|atom| rename(*atom, &inner_subst))
        .collect();
    if in_range != Atom::Lit(Scalar::Bool(true)) {
        results = results
            .into_iter()
            .map(|atom| {
                emit(
                    program,
                    Prim::Select,
                    vec![in_range, atom, Atom::Lit(Scalar::I64(-1))],
                    &index,
                )
            })
            .collect();
    }
    program.blocks[lambda].results = results;
    lambda
}

// Note [Pushing index down]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Seed 001 Fig 10 pushes `index` into the array expression it reads, so that an element is
// computed instead of a whole array. In ANF every `index` already reads a variable (Theorem
// 5.1 (2) holds by construction), so these rules are optimisations: `index y ix` where `y` is
// defined by a computation becomes that computation on indexed operands. Under total
// semantics (an out-of-range read gives zero) some rules are exact only when the index is in
// range — `op (index a ix) (index b ix)` is `op 0 0`, not 0, out of range — so those apply
// only to indices known to be in range: literals, and the parameters of loops and index
// functions, which range over their sizes. The rules that are always exact apply always.

/// Fig 10 on ANF (see Note [Pushing index down]). `ranges` maps variables known to lie in
/// `0..bound` to the bound; `defs` maps variables to their defining expressions.
fn push_index(
    program: &mut Program,
    block: BlockId,
    ranges: &mut HashMap<VarId, usize>,
    defs: &mut HashMap<VarId, Expr>,
) {
    let stmts = std::mem::take(&mut program.blocks[block].stmts);
    let mut out = Vec::new();
    for mut stmt in stmts {
        for nested in expr_blocks(&stmt.expr) {
            let bounds = crate::ops::index_param_bounds(program, &stmt.expr);
            let params = program.blocks[nested].params.clone();
            for (param, bound) in params.iter().zip(bounds) {
                ranges.insert(*param, bound);
            }
            push_index(program, nested, ranges, defs);
        }
        // Rewrite this statement while a rule applies (each rule reads a smaller producer).
        for _ in 0..8 {
            let Some(rewritten) = push_index_once(program, &stmt, ranges, defs, &mut out) else {
                break;
            };
            stmt.expr = rewritten;
        }
        if let [binder] = stmt.binders[..] {
            defs.insert(binder, stmt.expr.clone());
        }
        out.push(stmt);
    }
    program.blocks[block].stmts = out;
}

fn in_range(atom: &Atom, bound: usize, ranges: &HashMap<VarId, usize>) -> bool {
    match atom {
        Atom::Lit(Scalar::I64(value)) => *value >= 0 && (*value as usize) < bound,
        Atom::Var(var) => ranges.get(var).is_some_and(|known| *known <= bound),
        Atom::Lit(_) => false,
    }
}

/// One Fig 10 step for `index y ix`: a new expression for the statement, with any statements
/// it needs appended to `out` first.
fn push_index_once(
    program: &mut Program,
    stmt: &Stmt,
    ranges: &HashMap<VarId, usize>,
    defs: &HashMap<VarId, Expr>,
    out: &mut Vec<crate::core::ir::Stmt>,
) -> Option<Expr> {
    let Expr::Index { array, index } = &stmt.expr else {
        return None;
    };
    // index t [] ~> t
    if index.is_empty() {
        return Some(Expr::Atom(*array));
    }
    let Atom::Var(source) = array else {
        return None;
    };
    let source_shape = program.var_ty(*source).shape.clone();
    let all_in_range = index
        .iter()
        .zip(&source_shape)
        .all(|(atom, bound)| in_range(atom, *bound, ranges));
    let mut emit = |program: &mut Program, expr: Expr, ty: ArrTy, hint: &str| -> Atom {
        let var = program.new_var(ty, hint);
        out.push(Stmt {
            binders: vec![var],
            expr,
        });
        Atom::Var(var)
    };
    match defs.get(source)? {
        // index (index t u) v ~> index t (u ++ v) (exact).
        Expr::Index {
            array: inner,
            index: first,
        } => {
            let mut joined = first.clone();
            joined.extend(index);
            Some(Expr::Index {
                array: *inner,
                index: joined,
            })
        }
        // index (sumOuter t) ix ~> sumOuter (index (tr_(1..n,0) t) ix) (exact: zeros sum to 0).
        Expr::SumOuter(inner) => {
            let inner_ty = program.atom_ty(inner);
            let n = index.len();
            let mut perm: Vec<usize> = (1..=n).collect();
            perm.push(0);
            let mut moved_shape: Vec<usize> = inner_ty.shape[1..=n].to_vec();
            moved_shape.push(inner_ty.shape[0]);
            moved_shape.extend(&inner_ty.shape[n + 1..]);
            let moved = emit(
                program,
                Expr::Transpose {
                    perm,
                    array: *inner,
                },
                ArrTy::new(moved_shape.clone(), inner_ty.elem),
                "tr",
            );
            let rows_ty = ArrTy::new(moved_shape[n..].to_vec(), inner_ty.elem);
            let rows = emit(
                program,
                Expr::Index {
                    array: moved,
                    index: index.clone(),
                },
                rows_ty,
                "ix",
            );
            Some(Expr::SumOuter(rows))
        }
        // index (replicate k t) (u:ix) ~> index t ix, for u in range.
        Expr::Replicate {
            count,
            array: inner,
        } if in_range(&index[0], *count, ranges) => Some(Expr::Index {
            array: *inner,
            index: index[1..].to_vec(),
        }),
        // index (op t u) ix ~> op (index t ix) (index u ix), for ix in range.
        Expr::Prim(prim, args) if all_in_range => {
            let mut indexed = Vec::new();
            for arg in args {
                let ty = program.atom_ty(arg);
                indexed.push(if ty.shape.len() < index.len() {
                    *arg
                } else {
                    let res_ty = ArrTy::new(ty.shape[index.len()..].to_vec(), ty.elem);
                    emit(
                        program,
                        Expr::Index {
                            array: *arg,
                            index: index.clone(),
                        },
                        res_ty,
                        "ix",
                    )
                });
            }
            Some(Expr::Prim(*prim, indexed))
        }
        // index (gather (k:sh) t f) (u:ix') ~> index (gather sh t (λis. f (u:is))) ix', for u
        // in range; and index (gather [] t (λ[]. ix)) ix' ~> index t (ix ++ ix').
        Expr::Gather {
            shape,
            array: inner,
            body,
        } if shape.is_empty() || in_range(&index[0], shape[0], ranges) => {
            let (shape, inner, body) = (shape.clone(), *inner, *body);
            let old = program.blocks[body].clone();
            if old.params.len() <= 1 {
                // No gather axis is left: read the source directly.
                let mut subst: HashMap<VarId, Atom> = HashMap::new();
                let mut rest_index = index.as_slice();
                if let Some(param) = old.params.first() {
                    subst.insert(*param, index[0]);
                    rest_index = &index[1..];
                }
                for old_stmt in &old.stmts {
                    out.push(crate::core::inline::copy_stmt(
                        program, old_stmt, &mut subst,
                    ));
                }
                let mut joined: Vec<Atom> = old
                    .results
                    .iter()
                    .map(|atom| crate::core::inline::rename(*atom, &subst))
                    .collect();
                joined.extend(rest_index);
                return Some(Expr::Index {
                    array: inner,
                    index: joined,
                });
            }
            let mut subst: HashMap<VarId, Atom> = HashMap::new();
            subst.insert(old.params[0], index[0]);
            let params: Vec<VarId> = old.params[1..]
                .iter()
                .map(|param| {
                    let new = program.new_var(program.var_ty(*param).clone(), "i");
                    subst.insert(*param, Atom::Var(new));
                    new
                })
                .collect();
            let lambda = program.new_block();
            program.blocks[lambda].params = params;
            crate::core::inline::copy_stmts(program, &old.stmts, lambda, &mut subst);
            program.blocks[lambda].results = old
                .results
                .iter()
                .map(|atom| crate::core::inline::rename(*atom, &subst))
                .collect();
            let elem = program.atom_ty(&inner).elem;
            let rest = shape[1..].to_vec();
            let gathered = emit(
                program,
                Expr::Gather {
                    shape: rest.clone(),
                    array: inner,
                    body: lambda,
                },
                ArrTy::new(rest, elem),
                "gather",
            );
            Some(Expr::Index {
                array: gathered,
                index: index[1..].to_vec(),
            })
        }
        // index [t1, …, tk] [u] ~> tu, for a literal u in range.
        Expr::Table(items)
            if matches!(index[0], Atom::Lit(_)) && in_range(&index[0], items.len(), ranges) =>
        {
            let Atom::Lit(Scalar::I64(position)) = index[0] else {
                return None;
            };
            Some(Expr::Index {
                array: items[position as usize],
                index: index[1..].to_vec(),
            })
        }
        _ => None,
    }
}

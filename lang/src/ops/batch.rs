//! The batching context of the bulk-operation transform ([Smeding25] §5, Figs 9–11): the
//! status of every variable of a `build1` body (unbatched, batched, or an index expression of
//! the batch index), emitting vectorised statements, and `Batcher::batch_stmt`, which
//! dispatches each statement to its operation's batching rule in its home
//! (`ops::Operation::batch`). The pass that runs it over a program, and the
//! index-pushing and gather clean-ups after it, are `passes::bot`.

use std::collections::HashMap;
use std::rc::Rc;

use crate::core::ir::{
    ArrTy, Atom, BlockId, Elem, Expr, Index, Iota, PrimApp, Program, Replicate, Scalar, Stmt,
    Transpose, VarId,
};
use crate::core::visit::collect_uses;
use crate::core::visit::{expr_atoms, expr_blocks};
use crate::prim::Prim;

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

impl<'p> Batcher<'p> {
    /// A batcher of the body of a `build1 size` whose vectorised statements go to `target`.
    pub(crate) fn new(program: &'p mut Program, size: usize, target: BlockId) -> Batcher<'p> {
        Batcher {
            program,
            size,
            target,
            env: HashMap::new(),
            iota: None,
        }
    }

    /// Vectorises the body of `build1` (its index the batch index), binding its results
    /// (the bulk arrays) to `binders` in the target block.
    pub(crate) fn batch_build(&mut self, body: BlockId, binders: &[VarId]) {
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
            self.emit_to(self.target, vec![*binder], Expr::from(Atom::Var(bulk)));
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
                    Expr::from(Replicate {
                        count: self.size,
                        array: atom,
                    }),
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
                    Expr::from(Iota(self.size)),
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
                    Expr::from(PrimApp(*prim, args)),
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
                    Expr::from(Index {
                        array: Atom::Var(var),
                        index: vec![Atom::Var(batch)],
                    }),
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
                self.emit_to(lambda, vec![res], Expr::from(PrimApp(*prim, args)));
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
        crate::ops::operation(&stmt.expr).batch(self, stmt);
    }

    /// Binds the status of the one binder of a single-result statement (the verifier checks
    /// that it has one).
    pub(crate) fn bind_one(&mut self, stmt: &Stmt, status: Status) {
        self.env.insert(stmt.binders[0], status);
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
                Expr::from(Replicate {
                    count,
                    array: Atom::Var(current),
                }),
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
            Expr::from(Transpose {
                perm,
                array: Atom::Var(current),
            }),
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

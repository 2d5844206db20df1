//! One statement in the bulk evaluator: the engine's side of `ops::bulk::Bulk`, the
//! vocabulary the forms' engine rules (`Operation::run`) speak. A statement runs on whole
//! arrays, or batched (Note [Batched blocks]): then every operand is lifted to the batch
//! shape and the operation acts on the axes after the batch axes (`lead` of them), which is
//! why one method serves both.

use super::lanes::Column;
use super::{
    as_bool, as_index, constant_table, elementwise, from_vec, fused, monoid, pool, reduce,
    replicate, stack, transpose, Batch, Exec, Res, Slot, Tensor,
};
use crate::core::ir::{ArrTy, Atom, BlockId, Stmt, VarId};
use crate::ops::bulk::{Bulk, Ran, Stop};
use crate::prim::Prim;

/// A statement being run, and the values of its binders once it has run.
pub(super) struct StmtRun<'r, 'a> {
    pub(super) cx: &'r mut Exec<'a>,
    pub(super) stmt: &'r Stmt,
    /// The batch when the statement runs batched; `None` when it runs on whole arrays.
    pub(super) batch: Option<&'r mut Batch>,
    /// The variables whose last use the statement is (Note [Releasing values]).
    pub(super) dying: &'r [VarId],
    pub(super) results: Vec<Slot>,
}

impl StmtRun<'_, '_> {
    /// The number of batch axes in front of every batched operand and result.
    fn lead(&self) -> usize {
        self.batch.as_ref().map_or(0, |batch| batch.shape.len())
    }

    /// An operand, lifted to the batch shape when the statement runs batched.
    fn operand(&self, atom: &Atom) -> Tensor {
        match &self.batch {
            Some(batch) => self.cx.lifted(atom, batch),
            None => self.cx.tensor(atom),
        }
    }

    /// A result's shape: its declared shape, after the batch axes when batched.
    fn result_shape(&self, shape: &[usize]) -> Vec<usize> {
        match &self.batch {
            Some(batch) => batch.batched_shape(shape),
            None => shape.to_vec(),
        }
    }

    fn binder_ty(&self, position: usize) -> &ArrTy {
        self.cx.binder_ty(self.stmt, position)
    }

    /// Binds the one result of the statement.
    fn bind(&mut self, tensor: Tensor) -> Ran {
        let batched = self.batch.is_some();
        self.results.push(Slot { tensor, batched });
        Ok(())
    }

    /// Binds results computed on whole arrays.
    fn bind_all(&mut self, tensors: Vec<Tensor>) -> Ran {
        self.results.extend(tensors.into_iter().map(Slot::plain));
        Ok(())
    }

    fn bound(&mut self, values: Res<Tensor>) -> Ran {
        self.bind(values?)
    }
}

impl Bulk for StmtRun<'_, '_> {
    fn per_point(&self) -> Ran {
        match self.batch {
            Some(_) => Err(Stop::Unbatchable),
            None => Ok(()),
        }
    }

    fn copy(&mut self, atom: &Atom) -> Ran {
        let slot = self.cx.slot(atom);
        self.results.push(slot);
        Ok(())
    }

    fn apply(&mut self, prim: Prim, operands: &[Atom]) -> Ran {
        let operands: Vec<Tensor> = operands.iter().map(|atom| self.cx.tensor(atom)).collect();
        self.cx.release(self.dying);
        let shape = self.result_shape(&self.binder_ty(0).shape);
        self.bind(elementwise::eval_prim(prim, operands, &shape))
    }

    fn index(&mut self, array: &Atom, index: &[Atom]) -> Ran {
        if let Some(batch) = self.batch.as_deref_mut() {
            let read = self.cx.index_batched(self.stmt, array, index, batch);
            return self.bind(read);
        }
        let array = self.cx.tensor(array);
        let index: Vec<i64> = (index.iter())
            .map(|atom| as_index(&self.cx.tensor(atom)))
            .collect();
        // The variable that strict-mode errors name.
        let reader = self.stmt.binders[0];
        let read = self
            .cx
            .index_plain(&array, &index, reader, self.binder_ty(0));
        self.bound(read)
    }

    fn sum_leading(&mut self, array: &Atom) -> Ran {
        self.bind(reduce::sum_axis(&self.operand(array), self.lead()))
    }

    fn stack(&mut self, parts: &[Atom]) -> Ran {
        let table = if parts.is_empty() {
            Tensor::zeros(self.binder_ty(0))
        } else if let Some(table) = constant_table(parts) {
            table
        } else {
            let parts: Vec<Tensor> = parts.iter().map(|atom| self.operand(atom)).collect();
            stack(self.lead(), &parts)
        };
        self.bind(table)
    }

    fn replicate(&mut self, count: usize, array: &Atom) -> Ran {
        self.bind(replicate(&self.operand(array), self.lead(), count))
    }

    fn transpose(&mut self, perm: &[usize], array: &Atom) -> Ran {
        self.bind(transpose(&self.operand(array), self.lead(), perm))
    }

    fn reshape(&mut self, shape: &[usize], array: &Atom) -> Ran {
        let shape = self.result_shape(shape);
        self.bind(self.operand(array).reshape(&shape))
    }

    fn iota(&mut self, size: usize) -> Ran {
        self.bind(Tensor::I64(from_vec(&[size], (0..size as i64).collect())))
    }

    fn cond(&mut self, cond: &Atom, then_block: BlockId, else_block: BlockId) -> Ran {
        let results = match self.batch.as_deref_mut() {
            Some(batch) => self
                .cx
                .cond_batched(self.stmt, cond, then_block, else_block, batch)?,
            None => {
                let taken = if as_bool(&self.cx.tensor(cond)) {
                    then_block
                } else {
                    else_block
                };
                self.cx.eval_block(taken, Vec::new(), None)?
            }
        };
        self.results = results;
        Ok(())
    }

    fn build(&mut self, size: usize, body: BlockId) -> Ran {
        let built = if self.cx.batch_build1 {
            self.cx.build1_batched(self.stmt, size, body)?
        } else {
            self.cx.build1_fallback(self.stmt, size, body)?
        };
        self.bind_all(built)
    }

    fn gather(&mut self, shape: &[usize], array: &Atom, body: BlockId) -> Ran {
        let gathered = self.cx.gather(self.stmt, shape, array, body);
        self.bound(gathered)
    }

    fn scatter(&mut self, shape: &[usize], array: &Atom, body: BlockId) -> Ran {
        let scattered = self.cx.scatter(shape, array, body);
        self.bound(scattered)
    }

    fn counted_loop(&mut self, size: usize, init: &[Atom], body: BlockId) -> Ran {
        if let Some(results) = self.cx.scalar_loop(size, init, body)? {
            return self.bind_all(results);
        }
        let cx = &mut *self.cx;
        let n_carry = init.len();
        let mut carry: Vec<Slot> = init.iter().map(|atom| cx.slot(atom)).collect();
        // Each step's outputs are written into their stacks at once: the step's buffers are
        // free for the next step, and the stacks (a gradient's stored states, as large as
        // the loop is long) come from the pool, not fresh pages.
        let stack_tys: Vec<ArrTy> = (n_carry..self.stmt.binders.len())
            .map(|position| cx.binder_ty(self.stmt, position).clone())
            .collect();
        let mut stacks: Vec<Column> = (stack_tys.iter())
            .map(|ty| pool::take(ty.elem, ty.shape.iter().product()))
            .collect();
        let outermost = cx.enter_loop(size);
        for i in 0..size {
            cx.loop_iteration(outermost, i)?;
            let mut args = vec![Slot::plain(Tensor::index(i as i64))];
            args.extend(carry);
            let mut results = cx.run_loop_body(body, args)?;
            for ((stack, ty), y) in (stacks.iter_mut())
                .zip(&stack_tys)
                .zip(results.split_off(n_carry))
            {
                let step_len: usize = ty.shape[1..].iter().product();
                stack.write_at(i * step_len, &y.tensor);
                pool::give(y.tensor);
            }
            carry = results;
        }
        cx.leave_loop(outermost);
        let mut results: Vec<Tensor> = carry.into_iter().map(|slot| slot.tensor).collect();
        for (stack, ty) in stacks.into_iter().zip(&stack_tys) {
            results.push(stack.into_tensor(&ty.shape));
        }
        self.bind_all(results)
    }

    fn while_loop(
        &mut self,
        init: &[Atom],
        body: BlockId,
        back: Option<(&[Atom], BlockId)>,
    ) -> Ran {
        let cx = &mut *self.cx;
        let carry: Vec<Slot> = init.iter().map(|atom| cx.slot(atom)).collect();
        let (carry, trajectory) = cx.run_while(carry, body, back.is_some())?;
        let Some((seeds, back)) = back else {
            self.results = carry;
            return Ok(());
        };
        let mut acc: Vec<Slot> = seeds.iter().map(|atom| cx.slot(atom)).collect();
        for carries in trajectory.into_iter().rev() {
            cx.check_interrupt()?;
            let mut args = carries;
            args.extend(acc);
            acc = cx.run_loop_body(back, args)?;
        }
        self.results = acc;
        Ok(())
    }

    // Lines of (chunk, lane) pairs on typed lanes, or compiled chains, in the order of
    // Note [Monoid order] (`ops::monoid`).
    fn monoid(&mut self) -> Ran {
        let kept = vec![monoid::Kept::Stored; self.stmt.binders.len()];
        let run = self
            .cx
            .eval_monoid(self.stmt, &fused::Fused::none(), &kept)?;
        let results = (run.results.into_iter())
            .map(|tensor| tensor.expect("every result is stored"))
            .collect();
        self.bind_all(results)
    }
}

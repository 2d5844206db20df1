//! Monoid statements on the fused engine (`Step::Monoid`, Note [Monoid steps] in
//! `passes::fuse::monoid`): the producer kernels compute their operands a group of chunks at
//! a time where the compiled chains read them (`exec::monoid::Produce`), and the results
//! nobody reads are not stored. When the statement does not run on chains (many lanes, or
//! folds not compiled yet), the producers' outputs are materialised first and the statement
//! runs as the bulk evaluator runs it: the same values either way.

use std::ops::Range;
use std::sync::Arc;

use super::{launch_inputs, Launch, Scratch};
use crate::core::ir::{BlockId, Expr, MonoidKind, VarId};
use crate::core::kernel::Kernel;
use crate::core::visit::var_of;
use crate::exec::lanes::{with_column, Column, LaneElem};
use crate::exec::monoid::{self, Chained, CompiledMonoid, Input, Produce};
use crate::exec::tensor::Tensor;
use crate::exec::{CompileLoops, Exec, Res};

/// Producer kernels bound to their inputs.
struct Producers<'k> {
    launches: Vec<Launch<'k>>,
}

impl Produce for Producers<'_> {
    type Work = Vec<Scratch>;

    fn work(&self) -> Vec<Scratch> {
        self.launches.iter().map(Launch::scratch).collect()
    }

    fn produce(&self, work: &mut Vec<Scratch>, which: usize, rows: Range<usize>, out: &mut Column) {
        let launch = &self.launches[which];
        let len = rows.len();
        with_column!(out, values => launch.map_range(&mut work[which], rows, &mut values[..len]));
    }
}

impl Launch<'_> {
    /// The points `range` (row-major positions) of an elementwise kernel into `out`, row
    /// piece by row piece.
    fn map_range<T: LaneElem>(&self, scratch: &mut Scratch, range: Range<usize>, out: &mut [T]) {
        let Some(&row_len) = self.shape.last() else {
            self.eval_line_into(scratch, &[], None, &mut out[..1]);
            return;
        };
        let mut at = range.start;
        while at < range.end {
            let (row, start) = (at / row_len, at % row_len);
            let len = (row_len - start).min(range.end - at);
            let dst = &mut out[at - range.start..][..len];
            self.map_row(scratch, row, start, dst, &[]);
            at += len;
        }
    }
}

impl Exec<'_> {
    /// Runs the monoid statement `expr` with the array operands that `producers` compute
    /// taken from them (`producers` empty: every operand is bound), storing the results in
    /// `stores` (by result; `None` for the others).
    pub(in crate::exec) fn eval_monoid(
        &mut self,
        expr: &Expr,
        producers: &[Kernel],
        stores: &[bool],
    ) -> Res<Vec<Option<Tensor>>> {
        let Expr::Monoid {
            kind,
            arrays,
            init,
            op,
        } = expr
        else {
            unreachable!("eval_monoid of a monoid statement")
        };
        let program = self.program;
        let shape = program.atom_ty(&arrays[0]).shape;
        let compiled = self.compiled_monoid(*kind, *op, &shape);
        // By array operand: the producer computing it, if any.
        let produced: Vec<Option<usize>> = arrays
            .iter()
            .map(|atom| {
                var_of(*atom).and_then(|var| producers.iter().position(|k| k.output.0 == var))
            })
            .collect();
        if let Some(compiled) = compiled.as_deref() {
            if let Some(res) = self.on_chains(expr, &shape, compiled, producers, &produced, stores)
            {
                self.report.compiled_monoids += 1;
                return res;
            }
        }
        // Off chains: the producers' outputs materialised, every result computed.
        let mut tensors = Vec::with_capacity(arrays.len());
        for (atom, which) in arrays.iter().zip(&produced) {
            tensors.push(match *which {
                Some(which) => {
                    let kernel = &producers[which];
                    super::check_size(program, kernel.output.0, "for".to_string())?;
                    self.run_kernel(kernel)?
                }
                None => self.tensor(atom),
            });
        }
        let init: Vec<Tensor> = init.iter().map(|atom| self.tensor(atom)).collect();
        let interrupted = || self.interrupt_requested();
        let compiled = compiled.as_deref();
        let (results, on_chains) =
            monoid::eval(program, *kind, &tensors, &init, *op, compiled, &interrupted)?;
        self.report.compiled_monoids += usize::from(on_chains);
        Ok(results
            .into_iter()
            .zip(stores)
            .map(|(tensor, &stored)| stored.then_some(tensor))
            .collect())
    }

    /// `eval_monoid` on compiled chains with the producers fused (`produced`: by array
    /// operand, its producer); `None` if the chains do not serve (`monoid::eval_on_chains`).
    fn on_chains(
        &self,
        expr: &Expr,
        shape: &[usize],
        compiled: &CompiledMonoid,
        producers: &[Kernel],
        produced: &[Option<usize>],
        stores: &[bool],
    ) -> Option<Res<Vec<Option<Tensor>>>> {
        let Expr::Monoid {
            kind, arrays, op, ..
        } = expr
        else {
            unreachable!("on_chains of a monoid statement")
        };
        let inputs_of: Vec<Vec<(VarId, Tensor)>> = producers
            .iter()
            .map(|kernel| launch_inputs(self, kernel, &[]))
            .collect();
        let launches = producers
            .iter()
            .zip(&inputs_of)
            .map(|(kernel, inputs)| Launch::new(self, kernel, inputs))
            .collect();
        let bound: Vec<Option<Tensor>> = arrays
            .iter()
            .zip(produced)
            .map(|(atom, which)| {
                which
                    .is_none()
                    .then(|| self.tensor(atom).to_standard_layout())
            })
            .collect();
        let inputs: Vec<Input> = bound
            .iter()
            .zip(produced)
            .map(|(tensor, which)| match (tensor, which) {
                (Some(tensor), _) => Input::Array(tensor),
                (None, which) => Input::Produced(which.expect("an unbound operand is produced")),
            })
            .collect();
        let chained = Chained {
            compiled,
            producers: &Producers { launches },
            stores,
        };
        let interrupted = || self.interrupt_requested();
        let res = monoid::eval_on_chains(
            self.program,
            *kind,
            shape,
            &inputs,
            *op,
            &chained,
            &interrupted,
        )?;
        Some(res.map_err(Into::into))
    }

    /// The compiled chain folds of a monoid statement over arrays of `shape`, if the session's
    /// policy compiles them: loops compiled, and enough elements folded
    /// (`CompileLoops::compiles`, counted here). Whether the chains serve the statement (few
    /// lanes) is `monoid::eval_on_chains`'s to say.
    pub(in crate::exec) fn compiled_monoid(
        &self,
        kind: MonoidKind,
        op: BlockId,
        shape: &[usize],
    ) -> Option<Arc<CompiledMonoid>> {
        let lanes: usize = shape.iter().skip(1).product();
        let elements = shape.iter().product();
        let policy = self.config.compile_loops;
        if policy == CompileLoops::Never {
            return None;
        }
        let from_right = kind == MonoidKind::ScanRight;
        let compiled = self
            .scalar_bodies
            .monoids
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry((op, from_right, lanes))
            .or_insert_with(|| Arc::new(CompiledMonoid::new(self.program, op, from_right, lanes)))
            .clone();
        compiled.wanted(policy, elements).then_some(compiled)
    }
}

//! Monoid statements on the fused engine (`Step::Monoid`, Notes [Monoid steps] and [Monoid
//! consumers] in `passes::fuse::monoid`): the producer kernels compute their operands a
//! group of chunks at a time where the compiled chains read them, the consumer kernels read
//! a scan's results right after the rescan computed them (`exec::monoid::GroupKernels`), and
//! the results nobody reads are not stored. When the statement does not run on chains (many
//! lanes, or folds not compiled yet), the producers' outputs are materialised first, the
//! statement runs as the bulk evaluator runs it, and the consumers run as kernels: the same
//! values either way.

use std::ops::Range;
use std::sync::Arc;

use super::{launch_inputs, Binding, GroupRead, Launch, Scratch};
use crate::core::ir::{BlockId, Elem, Monoid, MonoidKind, Program, Stmt, VarId};
use crate::core::kernel::{Kernel, MonoidStep};
use crate::core::visit::var_of;
use crate::exec::lanes::{match_column, with_column, Column, ColumnMut, LaneElem};
use crate::exec::monoid::{self, Chained, CompiledMonoid, GroupKernels, Input, Kept};
use crate::exec::tensor::Tensor;
use crate::exec::{pool, CompileLoops, Exec, Res, Slot};

/// The kernels fused into a monoid statement's run: producers of its array operands, and
/// consumers of its results with the components each reads (`MonoidStep::members`).
pub(in crate::exec) struct Fused<'s> {
    producers: &'s [Kernel],
    consumers: &'s [Kernel],
    members: Vec<Vec<usize>>,
}

impl<'s> Fused<'s> {
    /// No kernels: the statement alone, as the bulk evaluator runs it.
    pub(in crate::exec) fn none() -> Fused<'static> {
        Fused {
            producers: &[],
            consumers: &[],
            members: Vec::new(),
        }
    }

    fn of_step(step: &'s MonoidStep, program: &Program, block: BlockId) -> Fused<'s> {
        Fused {
            producers: &step.producers,
            consumers: &step.consumers,
            members: (step.consumers.iter())
                .map(|consumer| step.members(program, block, consumer))
                .collect(),
        }
    }

    /// What becomes of each result of the statement, by whether it is `live`: stored if so,
    /// else consumed if a consumer reads it, else dropped.
    fn kept(&self, live: &[bool]) -> Vec<Kept> {
        (live.iter().enumerate())
            .map(|(component, &live)| {
                let consumed = self.members.iter().any(|m| m.contains(&component));
                match (live, consumed) {
                    (true, _) => Kept::Stored,
                    (false, true) => Kept::Consumed,
                    (false, false) => Kept::Dropped,
                }
            })
            .collect()
    }
}

/// What a monoid statement's run gives: by component, its result if kept (stored, or
/// consumed off chains), and the consumers' outputs if they ran on the chains.
pub(in crate::exec) struct MonoidRun {
    pub(in crate::exec) results: Vec<Option<Tensor>>,
    consumer_outputs: Option<Vec<(VarId, Tensor)>>,
}

/// Producer and consumer kernels bound to their inputs.
struct Launches<'k> {
    producers: Vec<Launch<'k>>,
    consumers: Vec<Consumer<'k>>,
}

/// A consumer kernel bound to its inputs: its members (`Source::Member`) are the results it
/// consumes, by component of the statement, and it writes the group's rows of `out`.
struct Consumer<'k> {
    launch: Launch<'k>,
    members: Vec<usize>,
    out: SharedColumn,
}

impl GroupKernels for Launches<'_> {
    /// Scratch lanes by producer, then by consumer.
    type Work = Vec<Scratch>;

    fn work(&self) -> Vec<Scratch> {
        let consumers = self.consumers.iter().map(|consumer| &consumer.launch);
        (self.producers.iter().chain(consumers))
            .map(Launch::scratch)
            .collect()
    }

    fn produce(&self, work: &mut Vec<Scratch>, which: usize, rows: Range<usize>, out: &mut Column) {
        let launch = &self.producers[which];
        let len = rows.len();
        with_column!(out, values => launch.map_range(&mut work[which], rows, &mut values[..len], &[]));
    }

    fn consume(&self, work: &mut Vec<Scratch>, rows: Range<usize>, results: &[Column]) {
        let scratches = &mut work[self.producers.len()..];
        for (consumer, scratch) in self.consumers.iter().zip(scratches) {
            let group: Vec<GroupRead> = (consumer.members.iter())
                .map(|&c| GroupRead {
                    data: results[c].as_ref().run(0, rows.len()),
                    origin: rows.start as isize,
                })
                .collect();
            // SAFETY: the groups of a rescan cover different rows (`Run::chain_groups`), each
            // within the column, which outlives the statement's run (`Exec::on_chains` owns it
            // until `eval_on_chains` returns).
            let out = unsafe { consumer.out.rows(rows.clone()) };
            match_column!(ColumnMut, out, values => {
                consumer.launch.map_range(scratch, rows.clone(), values, &group)
            });
        }
    }
}

/// A column that the tasks of a rescan write in different rows: where its elements are.
struct SharedColumn {
    elem: Elem,
    address: usize,
}

impl SharedColumn {
    fn new(column: &mut Column) -> SharedColumn {
        SharedColumn {
            elem: column.elem(),
            address: match_column!(Column, column, values => values.as_mut_ptr() as usize),
        }
    }

    /// Elements `rows` of the column.
    ///
    /// # Safety
    ///
    /// The column is at least `rows.end` long and outlives the slice, and no other slice of
    /// these elements is in use.
    unsafe fn rows<'a>(&self, rows: Range<usize>) -> ColumnMut<'a> {
        unsafe fn typed<'a, T: LaneElem>(address: usize, rows: Range<usize>) -> ColumnMut<'a> {
            let first = (address as *mut T).add(rows.start);
            T::wrap_mut(std::slice::from_raw_parts_mut(first, rows.len()))
        }
        match self.elem {
            Elem::F32 => typed::<f32>(self.address, rows),
            Elem::F64 => typed::<f64>(self.address, rows),
            Elem::I32 => typed::<i32>(self.address, rows),
            Elem::I64 => typed::<i64>(self.address, rows),
            Elem::U32 => typed::<u32>(self.address, rows),
            Elem::U64 => typed::<u64>(self.address, rows),
            Elem::Bool => typed::<bool>(self.address, rows),
        }
    }
}

impl Launch<'_> {
    /// The points `range` (row-major positions) of an elementwise kernel into `out`, row
    /// piece by row piece; a consumer reads its members from `group`.
    fn map_range<T: LaneElem>(
        &self,
        scratch: &mut Scratch,
        range: Range<usize>,
        out: &mut [T],
        group: &[GroupRead<'_>],
    ) {
        let Some(&row_len) = self.plan.shape.last() else {
            self.eval_line_into(scratch, &[], None, &mut out[..1]);
            return;
        };
        let mut at = range.start;
        while at < range.end {
            let (row, start) = (at / row_len, at % row_len);
            let len = (row_len - start).min(range.end - at);
            let dst = &mut out[at - range.start..][..len];
            self.map_row(scratch, row, start, dst, group);
            at += len;
        }
    }
}

impl Exec<'_> {
    /// Runs a monoid step: its statement with the array operands its producers compute taken
    /// from them, and its consumers; the live binders and the consumers' outputs.
    pub(in crate::exec) fn run_monoid(
        &mut self,
        step: &MonoidStep,
        block: BlockId,
    ) -> Res<Vec<(VarId, Tensor)>> {
        let program = self.program;
        let stmt = &program.blocks[block].stmts[step.stmt];
        let fused = Fused::of_step(step, program, block);
        let kept = fused.kept(&step.live);
        let run = self.eval_monoid(stmt, &fused, &kept)?;
        let mut bound = Vec::new();
        let mut consumed = Vec::new();
        for ((&binder, tensor), kept) in stmt.binders.iter().zip(run.results).zip(&kept) {
            match (tensor, kept) {
                (Some(tensor), Kept::Stored) => bound.push((binder, tensor)),
                (Some(tensor), Kept::Consumed) => consumed.push((binder, tensor)),
                _ => {}
            }
        }
        if let Some(outputs) = run.consumer_outputs {
            bound.extend(outputs);
            return Ok(bound);
        }
        // Off chains: the consumers run as kernels, the consumed results bound meanwhile.
        let consumed_vars: Vec<VarId> = consumed.iter().map(|(var, _)| *var).collect();
        for (var, tensor) in consumed {
            self.env[var] = Some(Slot::plain(tensor));
        }
        let outputs = (step.consumers.iter())
            .map(|kernel| Ok((kernel.output.0, self.run_kernel(kernel)?)))
            .collect::<Res<Vec<_>>>();
        for var in consumed_vars {
            self.env[var] = None;
        }
        bound.extend(outputs?);
        Ok(bound)
    }

    /// Runs the monoid statement `stmt` with the array operands that the `fused` producers
    /// compute taken from them, keeping its results as `kept` says: on chains, the stored
    /// results and the outputs of the consumers; off chains, the stored and consumed
    /// results, the consumers not run.
    pub(in crate::exec) fn eval_monoid(
        &mut self,
        stmt: &Stmt,
        fused: &Fused<'_>,
        kept: &[Kept],
    ) -> Res<MonoidRun> {
        let Some(Monoid {
            kind,
            arrays,
            init,
            op,
        }) = Monoid::of(&stmt.expr)
        else {
            unreachable!("eval_monoid of a monoid statement")
        };
        let program = self.program;
        let shape = program.atom_ty(&arrays[0]).shape;
        let compiled = self.compiled_monoid(*kind, *op, &shape);
        // By array operand: the producer computing it, if any.
        let producers = fused.producers;
        let produced: Vec<Option<usize>> = arrays
            .iter()
            .map(|atom| {
                var_of(*atom).and_then(|var| producers.iter().position(|k| k.output.0 == var))
            })
            .collect();
        if let Some(compiled) = compiled.as_deref() {
            if let Some(run) = self.on_chains(stmt, compiled, fused, &produced, kept) {
                self.report.compiled_monoids += 1;
                return run;
            }
        }
        // Off chains: the producers' outputs materialised, every result computed.
        let mut tensors = Vec::with_capacity(arrays.len());
        for (atom, which) in arrays.iter().zip(&produced) {
            tensors.push(match *which {
                Some(which) => {
                    let kernel = &producers[which];
                    super::check_size(program, kernel.output.0, || "for".to_string())?;
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
        let results = (results.into_iter().zip(kept))
            .map(|(tensor, &kept)| (kept != Kept::Dropped).then_some(tensor))
            .collect();
        Ok(MonoidRun {
            results,
            consumer_outputs: None,
        })
    }

    /// `eval_monoid` on compiled chains with the producers and consumers fused (`produced`:
    /// by array operand, its producer): the stored results and the consumers' outputs;
    /// `None` if the chains do not serve (`monoid::eval_on_chains`).
    fn on_chains(
        &self,
        stmt: &Stmt,
        compiled: &CompiledMonoid,
        fused: &Fused<'_>,
        produced: &[Option<usize>],
        kept: &[Kept],
    ) -> Option<Res<MonoidRun>> {
        let (producers, consumers) = (fused.producers, fused.consumers);
        let Some(Monoid {
            kind, arrays, op, ..
        }) = Monoid::of(&stmt.expr)
        else {
            unreachable!("on_chains of a monoid statement")
        };
        let binders = &stmt.binders;
        let shape = self.program.atom_ty(&arrays[0]).shape;
        let producer_plans: Vec<_> = (producers.iter())
            .map(|kernel| self.launch_plan(kernel, Binding::alone(kernel)))
            .collect();
        // A consumer reads the statement's binders as members, its other inputs whole.
        let member_vars: Vec<Vec<VarId>> = (fused.members.iter())
            .map(|members| members.iter().map(|&c| binders[c]).collect())
            .collect();
        let consumer_plans: Vec<_> = (consumers.iter().zip(&member_vars))
            .map(|(kernel, members)| {
                let binding = Binding {
                    members,
                    first_merged: 0,
                    prefetch: true,
                    moves: false,
                };
                self.launch_plan(kernel, binding)
            })
            .collect();
        let producer_inputs: Vec<Vec<_>> = (producer_plans.iter())
            .map(|plan| launch_inputs(self, plan))
            .collect();
        let consumer_inputs: Vec<Vec<_>> = (consumer_plans.iter())
            .map(|plan| launch_inputs(self, plan))
            .collect();
        let mut outputs: Vec<Column> = (consumers.iter())
            .map(|kernel| {
                let elem = kernel.nodes[kernel.output.1].1;
                pool::take(elem, kernel.out_shape().iter().product())
            })
            .collect();
        let consumer_launches = (consumers.iter().zip(consumer_plans).zip(&consumer_inputs))
            .zip(fused.members.iter().zip(&mut outputs))
            .map(|(((kernel, plan), inputs), (members, out))| Consumer {
                launch: Launch::bind(kernel, plan, inputs),
                members: members.clone(),
                out: SharedColumn::new(out),
            })
            .collect();
        let launches = Launches {
            producers: (producers.iter().zip(producer_plans).zip(&producer_inputs))
                .map(|((kernel, plan), inputs)| Launch::bind(kernel, plan, inputs))
                .collect(),
            consumers: consumer_launches,
        };
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
            kernels: &launches,
            kept,
        };
        let interrupted = || self.interrupt_requested();
        let res = monoid::eval_on_chains(
            self.program,
            *kind,
            &shape,
            &inputs,
            *op,
            &chained,
            &interrupted,
        );
        drop(launches);
        let Some(res) = res else {
            outputs.into_iter().for_each(pool::give_column);
            return None;
        };
        let outputs = (consumers.iter().zip(outputs))
            .map(|(kernel, column)| (kernel.output.0, column.into_tensor(kernel.out_shape())))
            .collect();
        Some(res.map_err(Into::into).map(|results| MonoidRun {
            results,
            consumer_outputs: Some(outputs),
        }))
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

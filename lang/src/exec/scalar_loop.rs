//! Loops whose bodies compute only scalars, run on scalar registers instead of arrays.
//!
//! A `fold` or `scan` runs its body once per iteration. Run as whole-array operations (the
//! general path of `exec`), every statement of a body such as `max c xs[i]` allocates a
//! rank-0 array, looks its operands up in the environment and releases them: about a
//! microsecond per statement, which dominates loops of a million steps. A body whose
//! parameters, binders and results are all scalars and whose statements are copies,
//! primitives and scalar reads of tables from outside the body is compiled once
//! (`ops::scalar_code`), resolved to typed operations (`register_code`), and each iteration
//! here runs those operations on a register file: a few nanoseconds a step.
//!
//! A body with operations that do not depend on the carries (reads `xs[i]`, functions of
//! the index) runs them a block of iterations at a time on lanes (`loop_blocks`) when the
//! loop is long enough; each step then runs only the carried operations.
//!
//! Results are bit for bit those of the interpreter (`register_code` and the lanes apply
//! `prim`'s rules).
//! A read out of range gives zero, or in strict mode the same `InterpError::OutOfRange` the
//! general path raises (the first one). The interrupt flag is checked every
//! `INTERRUPT_PERIOD` iterations.
//!
//! Does not handle yet: bodies with any non-scalar value, nested blocks (`cond`, inner loops,
//! gathers) or reads of tables the body computes; those run on the general path.

use std::sync::atomic::AtomicUsize;
use std::sync::OnceLock;

use crate::core::ir::{BlockId, Program, Scalar};
use crate::ops::interp::InterpError;
use crate::ops::scalar_code::ScalarCode;

use super::lanes::Column;
use super::lanes::LINE;
use super::loop_blocks::{BlockPlan, MIN_ITERATIONS};
use super::loop_jit::{CompiledSteps, StepsPlan};
use super::pool;
use super::register_code::{Bits, RegisterCode};
use super::tensor::with_elem_type;
use super::tensor::Tensor;
use super::CompileLoops;

/// Iterations between two checks of the interrupt flag.
pub(super) const INTERRUPT_PERIOD: usize = 1024;

/// Under `CompileLoops::Long`, a loop body's steps are compiled (`loop_jit`, about 0.13 ms)
/// once it has run this many steps, counting the steps of the run at hand and of earlier runs
/// of the same body (a loop inside another loop, or a block `%bench` runs again): a tiered
/// compiler's counter. Fewer steps on `register_code` (about 12 ns each) cost less than
/// compiling.
pub(super) const JIT_MIN_ITERATIONS: usize = 16 * 1024;

/// The values a compiled loop starts from and how it reports.
pub(super) struct LoopRun<'a> {
    pub size: usize,
    /// The initial carries.
    pub init: Vec<Scalar>,
    /// The values of the body's `outer_scalars`.
    pub outer_scalars: Vec<Scalar>,
    /// The tables the body reads (`code.tables`), in any layout.
    pub tables: Vec<Tensor>,
    pub strict: bool,
    /// Whether the steps run as machine code (`loop_jit`).
    pub compile: CompileLoops,
    /// Called every `INTERRUPT_PERIOD` iterations; an error stops the loop.
    pub check_interrupt: &'a dyn Fn() -> Result<(), InterpError>,
}

/// What a step does besides its operations: stack the outputs, and move the new carries
/// that are not computed in place into the carries' registers.
struct StepIo {
    /// (output, register) of the outputs stacked before the operations run
    /// (`RegisterCode::early_outputs`), and of those stacked after.
    early: Vec<(usize, usize)>,
    late: Vec<(usize, usize)>,
    /// (new value, carry) registers of the carries not computed in place, and room for
    /// their values while they move.
    copies: Vec<(usize, usize)>,
    moving: Vec<u64>,
    /// The stacked outputs, in their element types (buffers of the loop's length, from the
    /// `pool`); the first `filled` positions are written.
    ys: Vec<Column>,
    filled: usize,
    /// Per output, the function writing a register's bits into its column.
    put: Vec<Put>,
}

/// Writes register bits at a position of a column of their type.
type Put = fn(&mut Column, usize, u64);

fn put<T: Bits>(column: &mut Column, at: usize, bits: u64) {
    T::values_mut(column)[at] = T::from_reg(bits);
}

impl StepIo {
    fn new(body: &RegisterCode, size: usize) -> StepIo {
        let carries = &body.code.params[1..];
        let (carry_results, ys_results) = body.results.split_at(carries.len());
        let (early, late) = ys_results
            .iter()
            .enumerate()
            .map(|(output, reg)| (output, *reg))
            .partition(|(output, _)| body.early_outputs.contains(&(carries.len() + output)));
        let copies: Vec<(usize, usize)> = carry_results
            .iter()
            .zip(carries)
            .map(|(result, carry)| (*result, *carry))
            .filter(|(result, carry)| result != carry)
            .collect();
        StepIo {
            early,
            late,
            moving: vec![0; copies.len()],
            copies,
            ys: ys_results
                .iter()
                .map(|reg| pool::take(body.reg_elems[*reg], size))
                .collect(),
            filled: 0,
            put: ys_results
                .iter()
                .map(|reg| with_elem_type!(body.reg_elems[*reg], T => put::<T> as Put))
                .collect(),
        }
    }

    #[inline(always)]
    fn before(&mut self, regs: &[u64]) {
        for (output, reg) in &self.early {
            (self.put[*output])(&mut self.ys[*output], self.filled, regs[*reg]);
        }
    }

    #[inline(always)]
    fn after(&mut self, regs: &mut [u64]) {
        for (output, reg) in &self.late {
            (self.put[*output])(&mut self.ys[*output], self.filled, regs[*reg]);
        }
        self.filled += 1;
        match self.copies[..] {
            [] => {}
            [(new, carry)] => regs[carry] = regs[new],
            _ => {
                for (moving, (new, _)) in self.moving.iter_mut().zip(&self.copies) {
                    *moving = regs[*new];
                }
                for ((_, carry), moving) in self.copies.iter().zip(&self.moving) {
                    regs[*carry] = *moving;
                }
            }
        }
    }
}

/// A loop body compiled for `run`.
pub(super) struct CompiledLoop {
    pub body: RegisterCode,
    /// How to run it a block at a time, if that pays.
    blocks: Option<BlockPlan>,
    /// The steps as machine code, compiled when a loop first needs them: the carried
    /// operations of a block's steps (`[0]`), and all operations of single steps (`[1]`).
    /// `None` inside if they cannot be compiled.
    jit: [OnceLock<Option<CompiledSteps>>; 2],
    /// Steps run so far (for `JIT_MIN_ITERATIONS`).
    steps_run: AtomicUsize,
}

impl CompiledLoop {
    /// Compiles a loop body (params: the iteration index, then the carries), or `None` if it
    /// is not all scalars.
    pub fn new(program: &Program, body: BlockId) -> Option<CompiledLoop> {
        let body = RegisterCode::new(ScalarCode::compile(program, body)?);
        let blocks = BlockPlan::new(&body);
        Some(CompiledLoop {
            body,
            blocks,
            jit: Default::default(),
            steps_run: AtomicUsize::new(0),
        })
    }

    /// The plan to run `run` with a block at a time, if it runs so.
    fn blocks(&self, run: &LoopRun) -> Option<&BlockPlan> {
        self.blocks
            .as_ref()
            .filter(|_| !run.strict && run.size >= MIN_ITERATIONS)
    }

    /// The steps of `run` as machine code, if it runs so: with `blocks` (the plan `run`
    /// uses, if any), only the carried operations.
    fn jit(
        &self,
        run: &LoopRun,
        blocks: Option<&BlockPlan>,
        io: &StepIo,
    ) -> Option<&CompiledSteps> {
        if !run.compile.compiles(&self.steps_run, run.size) {
            return None;
        }
        self.jit[usize::from(blocks.is_none())]
            .get_or_init(|| {
                let plan = StepsPlan {
                    instrs: self.body.instrs(blocks.is_some()),
                    imports: blocks.map_or_else(Vec::new, |plan| plan.import_regs().collect()),
                    index: blocks.is_none().then_some(self.body.code.params[0]),
                    early: &io.early,
                    late: &io.late,
                    copies: &io.copies,
                };
                CompiledSteps::new(&self.body, &plan)
            })
            .as_ref()
    }
}

/// What `run` computed, and how.
pub(super) struct Ran {
    /// The final carries, then each output of a scan stacked along a new outermost axis.
    pub results: Vec<Tensor>,
    /// Whether the free operations ran a block at a time (`loop_blocks`).
    pub blocked: bool,
    /// Whether the steps ran as machine code (`loop_jit`).
    pub compiled: bool,
}

/// Runs a compiled loop body `size` times.
pub(super) fn run(compiled: &CompiledLoop, run: LoopRun) -> Result<Ran, InterpError> {
    let body = &compiled.body;
    let tables: Vec<Tensor> = run.tables.iter().map(Tensor::to_standard_layout).collect();
    let mut machine = body.machine(&tables, run.strict);
    let code = &body.code;
    for ((_, reg), value) in code.outer_scalars.iter().zip(&run.outer_scalars) {
        machine.regs[*reg] = value.bits();
    }
    let index_reg = code.params[0];
    let carry_regs = &code.params[1..];
    for (reg, carry) in carry_regs.iter().zip(&run.init) {
        machine.regs[*reg] = carry.bits();
    }
    let mut io = StepIo::new(body, run.size);
    let blocks = compiled.blocks(&run);
    let jit = compiled.jit(&run, blocks, &io);
    if let Some(plan) = blocks {
        let mut lanes = plan.lanes(body, &run.outer_scalars);
        for base in (0..run.size).step_by(LINE) {
            (run.check_interrupt)()?;
            let len = LINE.min(run.size - base);
            plan.compute(body, &mut lanes, &machine.side, base, len);
            if let Some(steps) = jit {
                let (regs, side) = (&mut machine.regs, &mut machine.side);
                steps.run(regs, side, lanes.imported(), &mut io.ys, base, len);
                io.filled += len;
                continue;
            }
            for point in 0..len {
                plan.import(&lanes, point, &mut machine.regs);
                io.before(&machine.regs);
                body.run_carried(&mut machine.regs, &mut machine.side);
                io.after(&mut machine.regs);
            }
        }
    } else if let Some(steps) = jit {
        for base in (0..run.size).step_by(INTERRUPT_PERIOD) {
            (run.check_interrupt)()?;
            if let Some(fault) = machine.side.fault.take() {
                return Err(fault);
            }
            let len = INTERRUPT_PERIOD.min(run.size - base);
            let (regs, side) = (&mut machine.regs, &mut machine.side);
            steps.run(regs, side, &[], &mut io.ys, base, len);
            io.filled += len;
        }
    } else {
        for i in 0..run.size {
            if i % INTERRUPT_PERIOD == 0 {
                (run.check_interrupt)()?;
                if let Some(fault) = machine.side.fault.take() {
                    return Err(fault);
                }
            }
            machine.regs[index_reg] = i as u64;
            io.before(&machine.regs);
            body.run(&mut machine.regs, &mut machine.side);
            io.after(&mut machine.regs);
        }
    }
    if let Some(fault) = machine.side.fault.take() {
        return Err(fault);
    }
    let mut res: Vec<Tensor> = carry_regs
        .iter()
        .map(|reg| Tensor::scalar(Scalar::from_bits(body.elem(*reg), machine.regs[*reg])))
        .collect();
    debug_assert_eq!(io.filled, run.size);
    res.extend(io.ys.into_iter().map(|ys| ys.into_tensor(&[run.size])));
    Ok(Ran {
        results: res,
        blocked: blocks.is_some(),
        compiled: jit.is_some(),
    })
}

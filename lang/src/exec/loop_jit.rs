//! The steps of a scalar loop compiled to machine code (Cranelift), so that the carried
//! chain stays in machine registers.
//!
//! `register_code` runs each operation of a loop body through a function on a register file
//! in memory. A carried chain such as `0.5 * a * a + xs[i]` then pays, per operation, an
//! indirect call and a round trip through memory (a store and a dependent load, about five
//! cycles of store-to-load forwarding on top of the operation's own latency): 13–15 ns a step
//! where XLA's compiled loop takes 4.5–5. Here many steps of a loop become one function:
//! each register is a Cranelift variable, so values stay in machine registers across the
//! operations and across the steps, and the chain costs the operations' latency alone.
//!
//! What the function does per step is what `scalar_loop::run` does: set the free registers
//! the step reads (from the block's imported columns, `loop_blocks`, or the index from the
//! step number), stack the early outputs, run the operations, stack the late outputs, move
//! the new carries into the carries' registers. Operations are emitted as `jit` emits them
//! (inline where exact, else a call of their `register_code` function), so every
//! operation gives the bits the interpreter gives, and any body that `register_code` runs
//! can be compiled.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, SigRef, Type, Value};
use cranelift_frontend::FunctionBuilder;

use super::jit::{from_bits, machine_type, JitFunction, RegVars};
use super::lanes::{match_column, Column};
use super::register_code::{Instr, RegisterCode, Side};
use crate::core::ir::Elem;

/// The compiled steps: `(regs, side, imported, ys, base, len)` runs steps `0..len`, the index
/// (when the function sets it) being `base + step`; `imported[k]` points at the block's
/// `k`-th imported column (register bits), `ys[o]` at the `o`-th output's slot for step 0
/// (values of its element type).
type StepsFn = unsafe extern "C" fn(*mut u64, *mut u8, *const *const u64, *const *mut u8, u64, u64);

/// What the steps do around the operations (`scalar_loop::StepIo`'s plan).
pub(super) struct StepsPlan<'a> {
    /// The operations of a step: all of the body's, or only the carried ones when the free
    /// ones run a block at a time.
    pub instrs: &'a [Instr],
    /// The registers set from the imported columns at each step, in the columns' order.
    pub imports: Vec<usize>,
    /// The index register, set to `base + step` at each step, if the function sets it.
    pub index: Option<usize>,
    /// (output, register) of the outputs stacked before the operations and after them.
    pub early: &'a [(usize, usize)],
    pub late: &'a [(usize, usize)],
    /// (new value, carry) registers of the carries not computed in place.
    pub copies: &'a [(usize, usize)],
}

/// Steps compiled to machine code.
pub(super) struct CompiledSteps {
    function: JitFunction,
    n_imports: usize,
    n_outputs: usize,
}

impl CompiledSteps {
    /// Compiles `plan`'s steps of `body`, or `None` if this machine has no Cranelift back
    /// end or compiling fails (the loop then runs on `register_code`).
    pub fn new(body: &RegisterCode, plan: &StepsPlan) -> Option<CompiledSteps> {
        let function = JitFunction::compile(4, 2, |b, run_instr_sig, ptr| {
            emit(b, &body.reg_elems, plan, run_instr_sig, ptr)
        })?;
        Some(CompiledSteps {
            function,
            n_imports: plan.imports.len(),
            n_outputs: plan.early.len() + plan.late.len(),
        })
    }

    /// Runs steps `base..base + len` on `regs` (the whole register file of `body.machine`),
    /// reading `imported` (one column per `plan.imports`, at least `len` long) and writing
    /// each output's values at positions `base..base + len` of its column in `ys`.
    pub fn run(
        &self,
        regs: &mut [u64],
        side: &mut Side,
        imported: &[Vec<u64>],
        ys: &mut [Column],
        base: usize,
        len: usize,
    ) {
        assert_eq!(imported.len(), self.n_imports);
        assert_eq!(ys.len(), self.n_outputs);
        assert!(imported.iter().all(|column| column.len() >= len));
        assert!(ys.iter().all(|column| column.len() >= base + len));
        let columns: Vec<*const u64> = imported.iter().map(|column| column.as_ptr()).collect();
        let slots: Vec<*mut u8> = ys
            .iter_mut()
            // SAFETY: `base` is within the column (asserted above).
            .map(|column| {
                match_column!(Column, column, values => unsafe {
                    values.as_mut_ptr().add(base).cast::<u8>()
                })
            })
            .collect();
        // SAFETY: the registers are the file the steps were compiled for, the columns hold
        // `len` values and the output columns `len` slots from `base`, each of the output's
        // element type (`StepsPlan`), and `side` outlives the call.
        unsafe {
            // SAFETY: the function was compiled with exactly this signature (`emit`).
            let steps = std::mem::transmute::<*const u8, StepsFn>(self.function.code());
            steps(
                regs.as_mut_ptr(),
                (side as *mut Side).cast(),
                columns.as_ptr(),
                slots.as_ptr(),
                base as u64,
                len as u64,
            );
        }
    }
}

/// Emits the steps' function: its arguments are those of `StepsFn`.
fn emit(
    b: &mut FunctionBuilder,
    elems: &[Elem],
    plan: &StepsPlan,
    run_instr_sig: SigRef,
    ptr: Type,
) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let &[regs, side, imported, ys, base, len] = b.block_params(entry) else {
        unreachable!("the steps take six arguments")
    };
    // Every register the steps touch gets a variable, starting from the file's value.
    let mut touched: Vec<usize> = plan
        .instrs
        .iter()
        .flat_map(|instr| instr.reads().iter().copied().chain([instr.dst]))
        .chain(plan.imports.iter().copied())
        .chain(plan.index)
        .chain(plan.early.iter().chain(plan.late).map(|(_, reg)| *reg))
        .chain(plan.copies.iter().flat_map(|(new, carry)| [*new, *carry]))
        .collect();
    touched.sort_unstable();
    touched.dedup();
    let vars = RegVars::new(b, elems, &touched, (regs, 0), run_instr_sig, ptr);
    let flags = MemFlagsData::trusted();
    let columns: Vec<Value> = (0..plan.imports.len())
        .map(|k| b.ins().load(ptr, flags, imported, 8 * k as i32))
        .collect();
    let n_outputs = plan.early.len() + plan.late.len();
    let slots: Vec<Value> = (0..n_outputs)
        .map(|o| b.ins().load(ptr, flags, ys, 8 * o as i32))
        .collect();
    let step = b.declare_var(types::I64);
    let zero = b.ins().iconst(types::I64, 0);
    b.def_var(step, zero);
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.ins().jump(header, &[]);

    b.switch_to_block(header);
    let k = b.use_var(step);
    let more = b.ins().icmp(IntCC::UnsignedLessThan, k, len);
    b.ins().brif(more, body, &[], exit, &[]);

    b.switch_to_block(body);
    let offset = b.ins().ishl_imm_u(k, 3);
    for (&reg, &column) in plan.imports.iter().zip(&columns) {
        let at = b.ins().iadd(column, offset);
        let bits = b.ins().load(types::I64, flags, at, 0);
        let value = from_bits(b, bits, elems[reg]);
        b.def_var(vars.var(reg), value);
    }
    if let Some(index) = plan.index {
        let i = b.ins().iadd(base, k);
        b.def_var(vars.var(index), i);
    }
    stack(b, &vars, plan.early, &slots, k);
    for instr in plan.instrs {
        vars.instr(b, instr, side);
    }
    stack(b, &vars, plan.late, &slots, k);
    let moving: Vec<Value> = plan
        .copies
        .iter()
        .map(|(new, _)| b.use_var(vars.var(*new)))
        .collect();
    for ((_, carry), value) in plan.copies.iter().zip(moving) {
        b.def_var(vars.var(*carry), value);
    }
    let next = b.ins().iadd_imm_u(k, 1);
    b.def_var(step, next);
    b.ins().jump(header, &[]);

    b.switch_to_block(exit);
    for &reg in &touched {
        vars.store(b, reg);
    }
    b.ins().return_(&[]);
}

/// Stores each `(output, register)`'s value in the output's slot for step `k`.
fn stack(
    b: &mut FunctionBuilder,
    vars: &RegVars,
    outputs: &[(usize, usize)],
    slots: &[Value],
    k: Value,
) {
    for &(output, reg) in outputs {
        let value = b.use_var(vars.var(reg));
        let size = machine_type(vars.elem(reg)).bytes();
        let offset = b.ins().imul_imm_u(k, i64::from(size));
        let at = b.ins().iadd(slots[output], offset);
        let flags = MemFlagsData::trusted();
        b.ins().store(flags, value, at, 0);
    }
}

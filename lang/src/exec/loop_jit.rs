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
//! the new carries into the carries' registers. The arithmetic, comparisons and selects
//! that IEEE and two's complement define exactly are emitted inline; every other operation
//! (float functions, `min`/`max` of floats, divisions, casts, reads of tables) calls its
//! `register_code` function (`Instr::exec`) on the register file, with its operands stored
//! before and its result loaded after. So every operation gives the bits the interpreter
//! gives (NaN payloads aside: which operand's payload a NaN result carries is the
//! hardware's choice in both), and any body that `register_code` runs can be compiled.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, Type, UserFuncName, Value,
};
use std::sync::OnceLock;

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use crate::core::ir::Elem;
use crate::prim::arith::ArithOp;
use crate::prim::compare::CompareOp;
use crate::prim::Family;

use super::lanes::{match_column, Column};
use super::register_code::{Instr, Kind, RegisterCode, Side};

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

/// Steps compiled to machine code, and the memory that holds it.
pub(super) struct CompiledSteps {
    steps: StepsFn,
    module: Option<JITModule>,
    n_imports: usize,
    n_outputs: usize,
}

// SAFETY: after `finalize_definitions` the module is only kept to free its memory when the
// steps drop; the code itself is immutable and reads nothing but its arguments.
unsafe impl Send for CompiledSteps {}
unsafe impl Sync for CompiledSteps {}

impl Drop for CompiledSteps {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: `steps` is the only pointer into the module's memory, and it dies here.
            unsafe { module.free_memory() };
        }
    }
}

impl CompiledSteps {
    /// Compiles `plan`'s steps of `body`, or `None` if this machine has no Cranelift back
    /// end or compiling fails (the loop then runs on `register_code`).
    pub fn new(body: &RegisterCode, plan: &StepsPlan) -> Option<CompiledSteps> {
        let isa = host_isa()?.clone();
        let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let compiled = define(&mut module, body, plan);
        let Some(id) = compiled else {
            // SAFETY: nothing of the module was handed out.
            unsafe { module.free_memory() };
            return None;
        };
        let code = module.get_finalized_function(id);
        // SAFETY: the function was defined with exactly this signature (`define`).
        let steps = unsafe { std::mem::transmute::<*const u8, StepsFn>(code) };
        Some(CompiledSteps {
            steps,
            module: Some(module),
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
            (self.steps)(
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

/// The code generator for this machine (its features detected once), or `None` if Cranelift
/// has no back end for it.
fn host_isa() -> Option<&'static OwnedTargetIsa> {
    static ISA: OnceLock<Option<OwnedTargetIsa>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut flags = settings::builder();
        flags.set("opt_level", "speed").ok()?;
        let verify = if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        };
        flags.set("enable_verifier", verify).ok()?;
        cranelift_native::builder()
            .ok()?
            .finish(settings::Flags::new(flags))
            .ok()
    })
    .as_ref()
}

/// Runs an operation the steps do not emit inline, on the register file (its operands were
/// stored there).
///
/// SAFETY: `instr` points at a live `Instr`, `regs` at `n_regs` registers, `side` at a live
/// `Side`.
unsafe extern "C" fn run_instr(instr: *const Instr, regs: *mut u64, n_regs: usize, side: *mut u8) {
    // SAFETY: as the caller promises.
    let (instr, regs, side) = unsafe {
        (
            &*instr,
            std::slice::from_raw_parts_mut(regs, n_regs),
            &mut *side.cast::<Side>(),
        )
    };
    (instr.exec)(instr, regs, side);
}

/// The machine type of a register of element type `elem`.
fn machine_type(elem: Elem) -> Type {
    match elem {
        Elem::F32 => types::F32,
        Elem::F64 => types::F64,
        Elem::I32 | Elem::U32 => types::I32,
        Elem::I64 | Elem::U64 => types::I64,
        Elem::Bool => types::I8,
    }
}

/// A value of element type `elem` from its register bits (`register_code::Bits`: the bits,
/// zero-extended to 64).
fn from_bits(b: &mut FunctionBuilder, bits: Value, elem: Elem) -> Value {
    match elem {
        Elem::F64 => {
            let flags = MemFlagsData::new();
            b.ins().bitcast(types::F64, flags, bits)
        }
        Elem::F32 => {
            let flags = MemFlagsData::new();
            let word = b.ins().ireduce(types::I32, bits);
            b.ins().bitcast(types::F32, flags, word)
        }
        Elem::I64 | Elem::U64 => bits,
        Elem::I32 | Elem::U32 | Elem::Bool => b.ins().ireduce(machine_type(elem), bits),
    }
}

/// The register bits of `value`, of element type `elem`.
fn to_bits(b: &mut FunctionBuilder, value: Value, elem: Elem) -> Value {
    match elem {
        Elem::F64 => {
            let flags = MemFlagsData::new();
            b.ins().bitcast(types::I64, flags, value)
        }
        Elem::F32 => {
            let flags = MemFlagsData::new();
            let word = b.ins().bitcast(types::I32, flags, value);
            b.ins().uextend(types::I64, word)
        }
        Elem::I64 | Elem::U64 => value,
        Elem::I32 | Elem::U32 | Elem::Bool => b.ins().uextend(types::I64, value),
    }
}

/// Defines the steps' function in `module` and finalises it.
fn define(
    module: &mut JITModule,
    body: &RegisterCode,
    plan: &StepsPlan,
) -> Option<cranelift_module::FuncId> {
    let frontend = module.target_config();
    let ptr = frontend.pointer_type();
    let mut ctx = module.make_context();
    for _ in 0..4 {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    for _ in 0..2 {
        ctx.func.signature.params.push(AbiParam::new(types::I64));
    }
    let id = module
        .declare_function("steps", Linkage::Export, &ctx.func.signature)
        .ok()?;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut run_instr_sig = module.make_signature();
    run_instr_sig.params.extend([AbiParam::new(ptr); 4]);
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let run_instr_sig = b.import_signature(run_instr_sig);
        let mut steps = Steps {
            elems: &body.reg_elems,
            vars: vec![None; body.reg_elems.len()],
            run_instr_sig,
            ptr,
        };
        steps.emit(&mut b, plan);
        b.seal_all_blocks();
        b.finalize(frontend);
    }
    module.define_function(id, &mut ctx).ok()?;
    module.clear_context(&mut ctx);
    module.finalize_definitions().ok()?;
    Some(id)
}

/// The state of emitting one steps function.
struct Steps<'a> {
    elems: &'a [Elem],
    /// The variable of each register the steps touch.
    vars: Vec<Option<Variable>>,
    run_instr_sig: cranelift_codegen::ir::SigRef,
    ptr: Type,
}

impl Steps<'_> {
    fn emit(&mut self, b: &mut FunctionBuilder, plan: &StepsPlan) {
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
        for &reg in &touched {
            let var = b.declare_var(machine_type(self.elems[reg]));
            self.vars[reg] = Some(var);
            let value = self.load(b, regs, reg);
            b.def_var(var, value);
        }
        let flags = MemFlagsData::trusted();
        let columns: Vec<Value> = (0..plan.imports.len())
            .map(|k| b.ins().load(self.ptr, flags, imported, 8 * k as i32))
            .collect();
        let n_outputs = plan.early.len() + plan.late.len();
        let slots: Vec<Value> = (0..n_outputs)
            .map(|o| b.ins().load(self.ptr, flags, ys, 8 * o as i32))
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
            let value = from_bits(b, bits, self.elems[reg]);
            b.def_var(self.var(reg), value);
        }
        if let Some(index) = plan.index {
            let i = b.ins().iadd(base, k);
            b.def_var(self.var(index), i);
        }
        self.stack(b, plan.early, &slots, k);
        for instr in plan.instrs {
            self.instr(b, instr, regs, side);
        }
        self.stack(b, plan.late, &slots, k);
        let moving: Vec<Value> = plan
            .copies
            .iter()
            .map(|(new, _)| b.use_var(self.var(*new)))
            .collect();
        for ((_, carry), value) in plan.copies.iter().zip(moving) {
            b.def_var(self.var(*carry), value);
        }
        let next = b.ins().iadd_imm_u(k, 1);
        b.def_var(step, next);
        b.ins().jump(header, &[]);

        b.switch_to_block(exit);
        for &reg in &touched {
            self.store(b, regs, reg);
        }
        b.ins().return_(&[]);
    }

    fn var(&self, reg: usize) -> Variable {
        self.vars[reg].expect("loop_jit: every register the steps touch has a variable")
    }

    /// The value of register `reg` in the file at `regs`.
    fn load(&self, b: &mut FunctionBuilder, regs: Value, reg: usize) -> Value {
        let flags = MemFlagsData::trusted();
        let bits = b.ins().load(types::I64, flags, regs, 8 * reg as i32);
        from_bits(b, bits, self.elems[reg])
    }

    /// Stores register `reg`'s variable into the file at `regs`.
    fn store(&self, b: &mut FunctionBuilder, regs: Value, reg: usize) {
        let value = b.use_var(self.var(reg));
        let bits = to_bits(b, value, self.elems[reg]);
        let flags = MemFlagsData::trusted();
        b.ins().store(flags, bits, regs, 8 * reg as i32);
    }

    /// Stores each `(output, register)`'s value in the output's slot for step `k`.
    fn stack(
        &self,
        b: &mut FunctionBuilder,
        outputs: &[(usize, usize)],
        slots: &[Value],
        k: Value,
    ) {
        for &(output, reg) in outputs {
            let value = b.use_var(self.var(reg));
            let size = machine_type(self.elems[reg]).bytes();
            let offset = b.ins().imul_imm_u(k, i64::from(size));
            let at = b.ins().iadd(slots[output], offset);
            let flags = MemFlagsData::trusted();
            b.ins().store(flags, value, at, 0);
        }
    }

    /// One operation: inline where `inline` has a rule, else a call of its function.
    fn instr(&self, b: &mut FunctionBuilder, instr: &Instr, regs: Value, side: Value) {
        let reads = instr.reads();
        let args: Vec<Value> = reads.iter().map(|reg| b.use_var(self.var(*reg))).collect();
        let elem = reads.first().map(|reg| self.elems[*reg]);
        if let Some(value) = elem.and_then(|elem| inline(b, instr.kind, elem, &args)) {
            b.def_var(self.var(instr.dst), value);
            return;
        }
        for &reg in reads {
            self.store(b, regs, reg);
        }
        let callee = b.ins().iconst(self.ptr, run_instr as *const () as i64);
        let instr_ptr = b.ins().iconst(self.ptr, instr as *const Instr as i64);
        let n_regs = b.ins().iconst(self.ptr, self.elems.len() as i64);
        b.ins()
            .call_indirect(self.run_instr_sig, callee, &[instr_ptr, regs, n_regs, side]);
        let value = self.load(b, regs, instr.dst);
        b.def_var(self.var(instr.dst), value);
    }
}

/// The inline form of an operation whose first operand is of type `elem`, if it has one.
/// Only what IEEE arithmetic and two's complement define exactly, as `prim` does.
fn inline(b: &mut FunctionBuilder, kind: Kind, elem: Elem, args: &[Value]) -> Option<Value> {
    let prim = match kind {
        Kind::Copy => return Some(args[0]),
        Kind::Read => return None,
        Kind::Prim(prim) => prim,
    };
    let float = matches!(elem, Elem::F32 | Elem::F64);
    let signed = matches!(elem, Elem::I32 | Elem::I64);
    let int = signed || matches!(elem, Elem::U32 | Elem::U64);
    let ins = b.ins();
    Some(match prim.family() {
        Family::Arith(op) if float => match op {
            ArithOp::Add => ins.fadd(args[0], args[1]),
            ArithOp::Sub => ins.fsub(args[0], args[1]),
            ArithOp::Mul => ins.fmul(args[0], args[1]),
            ArithOp::Div => ins.fdiv(args[0], args[1]),
            ArithOp::Neg => ins.fneg(args[0]),
            ArithOp::Abs => ins.fabs(args[0]),
            // Note [Float selections]'s min/max, `mod` and `idiv` run as `prim` defines them.
            ArithOp::Min | ArithOp::Max | ArithOp::Mod | ArithOp::IDiv => return None,
        },
        Family::Arith(op) if int => match op {
            // Wrapping, as `prim`'s integer arithmetic.
            ArithOp::Add => ins.iadd(args[0], args[1]),
            ArithOp::Sub => ins.isub(args[0], args[1]),
            ArithOp::Mul => ins.imul(args[0], args[1]),
            ArithOp::Neg => ins.ineg(args[0]),
            ArithOp::Min if signed => ins.smin(args[0], args[1]),
            ArithOp::Max if signed => ins.smax(args[0], args[1]),
            ArithOp::Min => ins.umin(args[0], args[1]),
            ArithOp::Max => ins.umax(args[0], args[1]),
            ArithOp::Abs | ArithOp::Div | ArithOp::Mod | ArithOp::IDiv => return None,
        },
        Family::Compare(op) => match (op, condition_codes(op)) {
            (_, Some((cc, _, _))) if float => ins.fcmp(cc, args[0], args[1]),
            // Booleans order false < true, as unsigned integers.
            (_, Some((_, cc, _))) if signed => ins.icmp(cc, args[0], args[1]),
            (_, Some((_, _, cc))) => ins.icmp(cc, args[0], args[1]),
            (CompareOp::And, _) => ins.band(args[0], args[1]),
            (CompareOp::Or, _) => ins.bor(args[0], args[1]),
            (CompareOp::Not, _) => ins.icmp_imm_u(IntCC::Equal, args[0], 0),
            (CompareOp::Select, _) => ins.select(args[0], args[1], args[2]),
            _ => return None,
        },
        _ => return None,
    })
}

/// The condition codes of an ordering comparison, as `compare::ordered` defines it: on
/// floats (ordered, except `/=`, which holds of NaN), on signed and on unsigned integers.
/// `None` for the other comparisons.
fn condition_codes(op: CompareOp) -> Option<(FloatCC, IntCC, IntCC)> {
    Some(match op {
        CompareOp::Eq => (FloatCC::Equal, IntCC::Equal, IntCC::Equal),
        CompareOp::Ne => (FloatCC::NotEqual, IntCC::NotEqual, IntCC::NotEqual),
        CompareOp::Lt => (
            FloatCC::LessThan,
            IntCC::SignedLessThan,
            IntCC::UnsignedLessThan,
        ),
        CompareOp::Gt => (
            FloatCC::GreaterThan,
            IntCC::SignedGreaterThan,
            IntCC::UnsignedGreaterThan,
        ),
        CompareOp::Le => (
            FloatCC::LessThanOrEqual,
            IntCC::SignedLessThanOrEqual,
            IntCC::UnsignedLessThanOrEqual,
        ),
        CompareOp::Ge => (
            FloatCC::GreaterThanOrEqual,
            IntCC::SignedGreaterThanOrEqual,
            IntCC::UnsignedGreaterThanOrEqual,
        ),
        CompareOp::And
        | CompareOp::Or
        | CompareOp::Not
        | CompareOp::IsNan
        | CompareOp::IsInf
        | CompareOp::Select => return None,
    })
}

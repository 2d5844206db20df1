//! What the machine-code paths of the engine share (Cranelift): the code generator for this
//! machine, functions that own their compiled code, and the emission of a register file's
//! operations with each register a Cranelift variable.
//!
//! `register_code` resolves scalar code to typed operations on a register file of bit
//! patterns. Compiled code keeps every register it touches in a variable (so in machine
//! registers), emits inline the arithmetic, comparisons and selects that IEEE and two's
//! complement define exactly, and calls every other operation's `register_code` function
//! (`Instr::exec`) on the register file, storing its operands before and loading its result
//! after. So compiled code gives the bits the interpreter gives (NaN payloads aside: which
//! operand's payload a NaN result carries is the hardware's choice in both). Two users:
//! the steps of scalar loops (`loop_jit`) and the chunk folds of monoid statements
//! (`monoid_jit`).

use std::sync::OnceLock;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, SigRef, Signature, Type, UserFuncName, Value,
};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use crate::core::ir::Elem;
use crate::prim::arith::ArithOp;
use crate::prim::compare::CompareOp;
use crate::prim::math::{self, MathOp};
use crate::prim::Family;

use super::register_code::{Instr, Kind, Side};

/// A compiled function and the memory that holds its code.
pub(super) struct JitFunction {
    code: *const u8,
    module: Option<JITModule>,
}

// SAFETY: after `finalize_definitions` the module is only kept to free its memory when the
// function drops; the code itself is immutable and reads nothing but its arguments.
unsafe impl Send for JitFunction {}
unsafe impl Sync for JitFunction {}

impl Drop for JitFunction {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: `code` is the only pointer into the module's memory, and it dies here.
            unsafe { module.free_memory() };
        }
    }
}

impl JitFunction {
    /// Compiles a function of `n_ptrs` pointer arguments then `n_ints` 64-bit integers,
    /// returning nothing, whose body `emit` writes (given the signature of `call_instr`'s
    /// callee and the pointer type); `None` if this machine has no Cranelift back end or
    /// compiling fails.
    pub fn compile(
        n_ptrs: usize,
        n_ints: usize,
        emit: impl FnOnce(&mut FunctionBuilder, SigRef, Type),
    ) -> Option<JitFunction> {
        let isa = host_isa()?.clone();
        let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let Some(id) = define(&mut module, n_ptrs, n_ints, emit) else {
            // SAFETY: nothing of the module was handed out.
            unsafe { module.free_memory() };
            return None;
        };
        Some(JitFunction {
            code: module.get_finalized_function(id),
            module: Some(module),
        })
    }

    /// The address of the compiled code, to be transmuted to the signature it was compiled
    /// with.
    pub fn code(&self) -> *const u8 {
        self.code
    }
}

/// Defines the function in `module` and finalises it.
fn define(
    module: &mut JITModule,
    n_ptrs: usize,
    n_ints: usize,
    emit: impl FnOnce(&mut FunctionBuilder, SigRef, Type),
) -> Option<cranelift_module::FuncId> {
    let frontend = module.target_config();
    let ptr = frontend.pointer_type();
    let mut ctx = module.make_context();
    let params = &mut ctx.func.signature.params;
    params.extend(std::iter::repeat_n(AbiParam::new(ptr), n_ptrs));
    params.extend(std::iter::repeat_n(AbiParam::new(types::I64), n_ints));
    let id = module
        .declare_function("compiled", Linkage::Export, &ctx.func.signature)
        .ok()?;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut run_instr_sig = module.make_signature();
    run_instr_sig.params.extend([AbiParam::new(ptr); 4]);
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let run_instr_sig = b.import_signature(run_instr_sig);
        emit(&mut b, run_instr_sig, ptr);
        b.seal_all_blocks();
        b.finalize(frontend);
    }
    module.define_function(id, &mut ctx).ok()?;
    module.clear_context(&mut ctx);
    module.finalize_definitions().ok()?;
    Some(id)
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
pub(super) fn machine_type(elem: Elem) -> Type {
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
pub(super) fn from_bits(b: &mut FunctionBuilder, bits: Value, elem: Elem) -> Value {
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

/// The registers of one register file as Cranelift variables, and the emission of
/// operations on them.
pub(super) struct RegVars<'a> {
    elems: &'a [Elem],
    /// The variable of each register the code touches.
    vars: Vec<Option<Variable>>,
    /// Where the register file is: a pointer value of the function, and a displacement
    /// from it (files of several chains share one pointer, so it takes one register).
    regs: Value,
    displacement: i32,
    run_instr_sig: SigRef,
    ptr: Type,
}

impl<'a> RegVars<'a> {
    /// Variables for the registers `touched` (of element types `elems`) of the file at
    /// `regs` plus `displacement` bytes, each starting from the file's value.
    pub fn new(
        b: &mut FunctionBuilder,
        elems: &'a [Elem],
        touched: &[usize],
        (regs, displacement): (Value, i32),
        run_instr_sig: SigRef,
        ptr: Type,
    ) -> RegVars<'a> {
        let mut vars = RegVars {
            elems,
            vars: vec![None; elems.len()],
            regs,
            displacement,
            run_instr_sig,
            ptr,
        };
        for &reg in touched {
            let var = b.declare_var(machine_type(elems[reg]));
            vars.vars[reg] = Some(var);
            let value = vars.load(b, reg);
            b.def_var(var, value);
        }
        vars
    }

    /// The displacement of register `reg` from `regs`.
    fn at(&self, reg: usize) -> i32 {
        self.displacement + 8 * reg as i32
    }

    pub fn var(&self, reg: usize) -> Variable {
        self.vars[reg].expect("jit: every register the code touches has a variable")
    }

    pub fn elem(&self, reg: usize) -> Elem {
        self.elems[reg]
    }

    /// The value of register `reg` in the file.
    fn load(&self, b: &mut FunctionBuilder, reg: usize) -> Value {
        let flags = MemFlagsData::trusted();
        let bits = b.ins().load(types::I64, flags, self.regs, self.at(reg));
        from_bits(b, bits, self.elems[reg])
    }

    /// Stores register `reg`'s variable into the file.
    pub fn store(&self, b: &mut FunctionBuilder, reg: usize) {
        let value = b.use_var(self.var(reg));
        let bits = to_bits(b, value, self.elems[reg]);
        let flags = MemFlagsData::trusted();
        b.ins().store(flags, bits, self.regs, self.at(reg));
    }

    /// One operation: inline where `inline` has a rule, a direct call of a float function
    /// (`math_call`), else a call of its function on the file (`side` being the `Side` its
    /// function gets). Returns whether it calls a function.
    pub fn instr(&self, b: &mut FunctionBuilder, instr: &Instr, side: Value) -> bool {
        let reads = instr.reads();
        let args: Vec<Value> = reads.iter().map(|reg| b.use_var(self.var(*reg))).collect();
        let elem = reads.first().map(|reg| self.elems[*reg]);
        if let Some(value) = elem.and_then(|elem| inline(b, instr.kind, elem, &args)) {
            b.def_var(self.var(instr.dst), value);
            return false;
        }
        if let Some(value) = elem.and_then(|elem| self.math_call(b, instr, elem, &args)) {
            b.def_var(self.var(instr.dst), value);
            return true;
        }
        for &reg in reads {
            self.store(b, reg);
        }
        let callee = b.ins().iconst(self.ptr, run_instr as *const () as i64);
        let instr_ptr = b.ins().iconst(self.ptr, instr as *const Instr as i64);
        let n_regs = b.ins().iconst(self.ptr, self.elems.len() as i64);
        let file = b.ins().iadd_imm_u(self.regs, i64::from(self.displacement));
        b.ins()
            .call_indirect(self.run_instr_sig, callee, &[instr_ptr, file, n_regs, side]);
        let value = self.load(b, instr.dst);
        b.def_var(self.var(instr.dst), value);
        true
    }
}

impl RegVars<'_> {
    /// A math operation on floats as a call of `math_f32`/`math_f64` with its operands in
    /// machine registers (the register file's round trip and `run_instr`'s second indirect
    /// call saved); `None` for other operations.
    fn math_call(
        &self,
        b: &mut FunctionBuilder,
        instr: &Instr,
        elem: Elem,
        args: &[Value],
    ) -> Option<Value> {
        instr.math()?;
        let (ty, callee) = match elem {
            Elem::F32 => (types::F32, math_f32 as *const () as i64),
            Elem::F64 => (types::F64, math_f64 as *const () as i64),
            _ => return None,
        };
        let mut signature = Signature::new(b.func.signature.call_conv);
        signature.params.extend([
            AbiParam::new(self.ptr),
            AbiParam::new(ty),
            AbiParam::new(ty),
        ]);
        signature.returns.push(AbiParam::new(ty));
        let signature = b.import_signature(signature);
        let callee = b.ins().iconst(self.ptr, callee);
        let instr_ptr = b.ins().iconst(self.ptr, instr as *const Instr as i64);
        // A unary function ignores its second operand.
        let (x, y) = (args[0], *args.get(1).unwrap_or(&args[0]));
        let call = b.ins().call_indirect(signature, callee, &[instr_ptr, x, y]);
        Some(b.inst_results(call)[0])
    }
}

/// `math::apply` of the operation `instr` (a float function on `f32`s).
///
/// SAFETY: `instr` points at a live `Instr` of a math operation.
unsafe extern "C" fn math_f32(instr: *const Instr, x: f32, y: f32) -> f32 {
    // SAFETY: as the caller promises.
    let op = unsafe { &*instr }
        .math()
        .expect("math_call calls math operations only");
    math::apply(op, x, y)
}

/// `math_f32` on `f64`s.
///
/// SAFETY: as `math_f32`.
unsafe extern "C" fn math_f64(instr: *const Instr, x: f64, y: f64) -> f64 {
    // SAFETY: as the caller promises.
    let op = unsafe { &*instr }
        .math()
        .expect("math_call calls math operations only");
    math::apply(op, x, y)
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
            (CompareOp::IsNan | CompareOp::IsInf, _) => return None,
            // `condition_codes` gives every ordering comparison its codes.
            (
                CompareOp::Eq
                | CompareOp::Ne
                | CompareOp::Lt
                | CompareOp::Gt
                | CompareOp::Le
                | CompareOp::Ge,
                None,
            ) => return None,
        },
        // The maths functions IEEE defines exactly (`prim::math` computes them with `std`'s).
        Family::Math(op) if float => match op {
            MathOp::Sqrt => ins.sqrt(args[0]),
            MathOp::Floor => ins.floor(args[0]),
            MathOp::Ceil => ins.ceil(args[0]),
            MathOp::StopGradient => args[0],
            _ => return None,
        },
        // The lane loops run the others, and arithmetic on `Bool`.
        Family::Arith(_)
        | Family::Math(_)
        | Family::Convert(_)
        | Family::Random(_)
        | Family::Text(_) => return None,
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

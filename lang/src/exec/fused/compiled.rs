//! Kernels compiled to machine code (Cranelift): a kernel's whole iteration space as one
//! loop over its points, each node a value in a machine register (Note [Compiled kernels]).

use std::borrow::Cow;
use std::sync::atomic::AtomicUsize;
use std::sync::OnceLock;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, SigRef, Type, Value};
use cranelift_frontend::FunctionBuilder;

use super::super::jit::{from_bits, machine_type, JitFunction, RegVars};
use super::super::lanes::{match_column, Column};
use super::super::register_code::{Resolved, Side};
use super::super::tensor::{with_tensor, Tensor};
use crate::core::ir::{Elem, Program, VarId};
use crate::core::kernel::{Affine, Coord, Kernel, Node};
use crate::core::scalar_code::{Op, Operand, ScalarCode};
use crate::exec::CompileLoops;
use crate::passes::fuse::row_major_strides;

// Note [Compiled kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The lane interpreter (`lanes.rs`) computes a kernel node by node, each node one tight loop
// over a line of points: its cost per node is a dispatch on the primitive and the element
// type, and a pass over a lane. Over a line of a thousand points that is nothing; over the 14
// points of an LSTM cell, launched at every step of a loop, the dispatch is the run (a third
// of lstm's primal was `eval_nodes`, the nodes' arithmetic a small part of it). A kernel of
// fewer points than a line, launched often enough that compiling pays
// (`COMPILE_AFTER_LAUNCHES`), is compiled instead: one function runs the whole iteration
// space, point by point in row-major order, with every node a Cranelift variable, so a point
// costs its operations and its loads.
//
// The rules stay `prim`'s, as in the compiled loop steps (`loop_jit`): each `Prim` node is
// an operation of `register_code`, emitted inline where IEEE arithmetic and two's complement
// define the result exactly (`jit::RegVars::instr`) and otherwise a call of its typed
// function; `vmath`'s slice functions give the per-element bits, so the values are the lane
// interpreter's bit for bit. A read's offset is its coordinates times the row-major strides
// of the variable read. A masked coordinate (`Coord::Masked`) reads zero where it leaves its
// axis; a wrapped one is taken modulo its period. A computed coordinate (`Coord::Node`) is in
// range by the schedule's invariant; compiled code checks it anyway (a compare per read) and
// reports a point where it is not, and the launch is then run by the interpreter, which
// gives whatever the interpreter gives.
//
// Reductions, row groups and monoid chains keep the interpreter for now.

/// Launches of a kernel after which `CompileLoops::Long` compiles it: about the launches
/// whose interpreter overhead pays for compiling (~0.3 ms for a cell of the LSTM; a launch of
/// it saves a few µs).
pub(in crate::exec) const COMPILE_AFTER_LAUNCHES: usize = 64;

/// The compiled function: `(inputs, out, regs, side, fault)` computes every point of the
/// kernel into `out` (its output's row-major elements), reading `inputs[k]` (the row-major
/// elements of the `k`-th variable the kernel reads, in `LaunchPlan::held`'s order), using
/// `regs` (the register file of the operations it calls) and `side`, and sets `*fault` to 1
/// if a computed coordinate left its axis.
type KernelFn = unsafe extern "C" fn(*const *const u8, *mut u8, *mut u64, *mut u8, *mut u8);

/// A kernel compiled to machine code, with what its code refers to.
pub(super) struct CompiledKernel {
    function: JitFunction,
    /// The typed operations the code calls: it holds their addresses.
    resolved: Resolved,
    inputs: usize,
    points: usize,
}

/// When a plan's kernel is compiled: its launches so far, and the compiled kernel once it is
/// made (`None` inside when it cannot be).
#[derive(Default)]
pub(super) struct Compilation {
    launches: AtomicUsize,
    kernel: OnceLock<Option<CompiledKernel>>,
}

impl Compilation {
    /// The compiled kernel for this launch, counting it: compiled when `policy` says so,
    /// `None` before and when it cannot be compiled.
    pub fn at_launch(
        &self,
        policy: CompileLoops,
        program: &Program,
        kernel: &Kernel,
        held: &[(VarId, Option<usize>)],
    ) -> Option<&CompiledKernel> {
        if policy == CompileLoops::Never {
            return None;
        }
        if let Some(compiled) = self.kernel.get() {
            return compiled.as_ref();
        }
        if !policy.compiles_after(&self.launches, 1, COMPILE_AFTER_LAUNCHES) {
            return None;
        }
        (self.kernel)
            .get_or_init(|| CompiledKernel::new(program, kernel, held))
            .as_ref()
    }
}

impl CompiledKernel {
    /// `kernel` compiled, reading the variables `held` (in that order; `LaunchPlan::held`,
    /// none of them a row group member's) with the types `program` gives them; `None` for a
    /// reduction, or if this machine has no Cranelift back end.
    pub fn new(
        program: &Program,
        kernel: &Kernel,
        held: &[(VarId, Option<usize>)],
    ) -> Option<CompiledKernel> {
        if kernel.reduce.is_some() || held.iter().any(|(_, member)| member.is_some()) {
            return None;
        }
        let resolved = Resolved::new(&prim_code(kernel));
        let reads: Vec<Option<ReadAt>> = (kernel.nodes.values())
            .map(|(node, _)| match node {
                Node::Read { var, .. } => {
                    let shape = program.var_ty(*var).shape.clone();
                    Some(ReadAt {
                        input: held.iter().position(|(held, _)| held == var)?,
                        strides: row_major_strides(&shape),
                        shape,
                    })
                }
                _ => None,
            })
            .collect();
        let all_read = (kernel.nodes.values().zip(&reads))
            .all(|((node, _), read)| !matches!(node, Node::Read { .. }) || read.is_some());
        if !all_read {
            return None;
        }
        let function = JitFunction::compile(5, 0, |b, run_instr_sig, ptr| {
            emit(b, kernel, &resolved, &reads, run_instr_sig, ptr)
        })?;
        Some(CompiledKernel {
            function,
            resolved,
            inputs: held.len(),
            points: kernel.shape.iter().product(),
        })
    }

    /// Computes the kernel's points into `out` from `inputs` (the values of the variables it
    /// reads, in `held`'s order, row-major): `false` if a computed coordinate left its axis,
    /// and `out` is then to be computed another way.
    pub fn run(&self, inputs: &[Cow<'_, Tensor>], out: &mut Column) -> bool {
        assert_eq!(inputs.len(), self.inputs);
        let out: *mut u8 = match_column!(Column, out, values => {
            assert!(values.len() >= self.points);
            values.as_mut_ptr().cast()
        });
        // A launch of a small kernel costs a few hundred nanoseconds: its pointers and
        // registers stay on the stack when they fit.
        let mut pointers = [std::ptr::null::<u8>(); SMALL];
        let mut more_pointers = Vec::new();
        let pointers: &mut [*const u8] = match inputs.len() <= SMALL {
            true => &mut pointers[..inputs.len()],
            false => {
                more_pointers.resize(inputs.len(), std::ptr::null());
                &mut more_pointers
            }
        };
        for (pointer, input) in pointers.iter_mut().zip(inputs) {
            *pointer = with_tensor!(input.as_ref(), a => {
                a.as_slice().expect("launch_inputs are row-major").as_ptr().cast()
            });
        }
        let init = &self.resolved.init;
        let mut regs = [0u64; 4 * SMALL];
        let mut more_regs = Vec::new();
        let regs: &mut [u64] = match init.len() <= regs.len() {
            true => &mut regs[..init.len()],
            false => {
                more_regs.resize(init.len(), 0);
                &mut more_regs
            }
        };
        regs.copy_from_slice(init);
        let mut side = Side::without_tables();
        let mut fault = 0u8;
        // SAFETY: the function was compiled with `KernelFn`'s signature for this kernel; each
        // input holds the row-major elements of the variable the kernel reads (whose shape
        // gave the strides), `out` has a slot for every point, `regs` is the register file
        // of `resolved`, whose operations outlive the call, as `side` and `fault` do.
        unsafe {
            let run = std::mem::transmute::<*const u8, KernelFn>(self.function.code());
            run(
                pointers.as_ptr(),
                out,
                regs.as_mut_ptr(),
                (&mut side as *mut Side).cast(),
                &mut fault,
            );
        }
        fault == 0
    }
}

/// Inputs (and a quarter of the registers) that a launch keeps on the stack.
const SMALL: usize = 16;

/// Where a read node finds its variable: its position among the inputs, and the variable's
/// shape and row-major strides.
struct ReadAt {
    input: usize,
    shape: Vec<usize>,
    strides: Vec<usize>,
}

/// The kernel's `Prim` nodes as register code whose registers are the kernel's nodes.
fn prim_code(kernel: &Kernel) -> ScalarCode {
    let ops = (kernel.nodes.iter())
        .filter_map(|(id, (node, _))| match node {
            Node::Prim(prim, operands) => Some(Op::Prim {
                dst: id.0 as usize,
                prim: *prim,
                args: (operands.iter())
                    .map(|operand| Operand::Reg(operand.0 as usize))
                    .collect(),
            }),
            _ => None,
        })
        .collect();
    ScalarCode {
        reg_elems: kernel.nodes.values().map(|(_, elem)| *elem).collect(),
        params: Vec::new(),
        outer_scalars: Vec::new(),
        tables: Vec::new(),
        ops,
        results: Vec::new(),
    }
}

/// Emits the kernel's function (`KernelFn`).
fn emit(
    b: &mut FunctionBuilder,
    kernel: &Kernel,
    resolved: &Resolved,
    reads: &[Option<ReadAt>],
    run_instr_sig: SigRef,
    ptr: Type,
) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let &[inputs, out, regs, side, fault] = b.block_params(entry) else {
        unreachable!("a compiled kernel takes five arguments")
    };
    let touched: Vec<usize> = (0..kernel.nodes.len()).collect();
    let vars = RegVars::new(
        b,
        &resolved.reg_elems,
        &touched,
        (regs, 0),
        run_instr_sig,
        ptr,
    );
    let flags = MemFlagsData::trusted();
    let bases: Vec<Value> = (0..reads
        .iter()
        .flatten()
        .map(|read| read.input + 1)
        .max()
        .unwrap_or(0))
        .map(|k| b.ins().load(ptr, flags, inputs, 8 * k as i32))
        .collect();
    // Literals, set once.
    for (id, (node, elem)) in kernel.nodes.iter() {
        if let Node::Lit(scalar) = node {
            let bits = b.ins().iconst(types::I64, scalar.bits() as i64);
            let value = from_bits(b, bits, *elem);
            b.def_var(vars.var(id.0 as usize), value);
        }
    }
    let rank = kernel.shape.len();
    let coords: Vec<_> = (0..rank).map(|_| b.declare_var(types::I64)).collect();
    let point = b.declare_var(types::I64);
    let bad = b.declare_var(types::I8);
    let zero = b.ins().iconst(types::I64, 0);
    for &coord in coords.iter().chain([&point]) {
        b.def_var(coord, zero);
    }
    let no = b.ins().iconst(types::I8, 0);
    b.def_var(bad, no);
    let points: usize = kernel.shape.iter().product();
    let body = b.create_block();
    let exit = b.create_block();
    match points {
        0 => b.ins().jump(exit, &[]),
        _ => b.ins().jump(body, &[]),
    };

    b.switch_to_block(body);
    let at: Vec<Value> = coords.iter().map(|&coord| b.use_var(coord)).collect();
    let mut k = 0;
    for (id, (node, elem)) in kernel.nodes.iter() {
        let reg = id.0 as usize;
        match node {
            Node::Lit(_) => {}
            Node::Index(affine) => {
                let value = affine_value(b, affine, &at);
                b.def_var(vars.var(reg), value);
            }
            Node::Read { coords, .. } => {
                let read = reads[reg].as_ref().expect("every read has its input");
                let value = emit_read(b, &vars, read, coords, &at, bases[read.input], *elem, bad);
                b.def_var(vars.var(reg), value);
            }
            Node::Prim(..) => {
                vars.instr(b, &resolved.instrs[k], side);
                k += 1;
            }
        }
    }
    let (_, root) = kernel.output;
    let value = b.use_var(vars.var(root.0 as usize));
    let p = b.use_var(point);
    let size = machine_type(kernel.nodes[root].1).bytes();
    let offset = b.ins().imul_imm_u(p, i64::from(size));
    let slot = b.ins().iadd(out, offset);
    b.ins().store(flags, value, slot, 0);
    // The next point: the row-major odometer, without branches.
    let next = b.ins().iadd_imm_u(p, 1);
    b.def_var(point, next);
    let mut carry = b.ins().iconst(types::I64, 1);
    for axis in (0..rank).rev() {
        let moved = b.ins().iadd(at[axis], carry);
        let wraps = b
            .ins()
            .icmp_imm_u(IntCC::Equal, moved, kernel.shape[axis] as i64);
        let value = b.ins().select(wraps, zero, moved);
        b.def_var(coords[axis], value);
        carry = b.ins().uextend(types::I64, wraps);
    }
    let more = b
        .ins()
        .icmp_imm_u(IntCC::UnsignedLessThan, next, points as i64);
    b.ins().brif(more, body, &[], exit, &[]);

    b.switch_to_block(exit);
    let bad = b.use_var(bad);
    b.ins().store(flags, bad, fault, 0);
    b.ins().return_(&[]);
}

/// `affine` at the point of coordinates `at`.
fn affine_value(b: &mut FunctionBuilder, affine: &Affine, at: &[Value]) -> Value {
    let mut value = b.ins().iconst(types::I64, affine.constant);
    for &(axis, coeff) in &affine.terms {
        let term = b.ins().imul_imm_s(at[axis], coeff);
        value = b.ins().iadd(value, term);
    }
    value
}

/// The value a read node reads at the point of coordinates `at` (Note [Compiled kernels]).
#[allow(clippy::too_many_arguments)]
fn emit_read(
    b: &mut FunctionBuilder,
    vars: &RegVars,
    read: &ReadAt,
    coords: &[Coord],
    at: &[Value],
    base: Value,
    elem: Elem,
    bad: cranelift_frontend::Variable,
) -> Value {
    let mut offset = b.ins().iconst(types::I64, 0);
    // Whether every masked coordinate is on its axis (`None`: there are none).
    let mut inside: Option<Value> = None;
    for ((coord, &stride), &dim) in coords.iter().zip(&read.strides).zip(&read.shape) {
        let position = match coord {
            Coord::Affine(affine) => affine_value(b, affine, at),
            Coord::Wrapped(affine, period) => {
                let value = affine_value(b, affine, at);
                b.ins().urem_imm_u(value, *period as i64)
            }
            Coord::Masked(affine, dim) => {
                let value = affine_value(b, affine, at);
                let on = b
                    .ins()
                    .icmp_imm_u(IntCC::UnsignedLessThan, value, *dim as i64);
                inside = Some(match inside {
                    Some(before) => b.ins().band(before, on),
                    None => on,
                });
                let zero = b.ins().iconst(types::I64, 0);
                b.ins().select(on, value, zero)
            }
            Coord::Node(node) => {
                let value = b.use_var(vars.var(node.0 as usize));
                let off = b
                    .ins()
                    .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, value, dim as i64);
                let before = b.use_var(bad);
                let now = b.ins().bor(before, off);
                b.def_var(bad, now);
                let zero = b.ins().iconst(types::I64, 0);
                b.ins().select(off, zero, value)
            }
        };
        let term = b.ins().imul_imm_u(position, stride as i64);
        offset = b.ins().iadd(offset, term);
    }
    let size = machine_type(elem).bytes();
    let bytes = b.ins().imul_imm_u(offset, i64::from(size));
    let address = b.ins().iadd(base, bytes);
    let value = b
        .ins()
        .load(machine_type(elem), MemFlagsData::trusted(), address, 0);
    match inside {
        None => value,
        Some(inside) => {
            let bits = b.ins().iconst(types::I64, 0);
            let zero = from_bits(b, bits, elem);
            b.ins().select(inside, value, zero)
        }
    }
}

//! Kernels compiled to machine code (Cranelift): a kernel's whole iteration space as one
//! loop over its points, each node a value in a machine register (Note [Compiled kernels]).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::AtomicUsize;
use std::sync::OnceLock;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, Block, InstBuilder, MemFlagsData, SigRef, StackSlot, StackSlotData, StackSlotKind, Type,
    Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};

use super::super::jit::{from_bits, machine_type, JitFunction, RegVars};
use super::super::lanes::{match_column, Column};
use super::super::register_code::{Resolved, Side};
use super::super::tensor::{with_tensor, Tensor};
use crate::core::ir::{Elem, Program, VarId};
use crate::core::kernel::{Affine, Coord, Kernel, Node, Reduction};
use crate::core::scalar_code::{Op, Operand, ScalarCode};
use crate::exec::CompileLoops;
use crate::passes::fuse::row_major_strides;
use crate::prim::sum_order::{self, TreeSum, LANES, LEAF};

// Note [Compiled kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The lane interpreter (`lanes.rs`) computes a kernel node by node, each node one tight loop
// over a line of points: its cost per node is a dispatch on the primitive and the element
// type, and a pass over a lane. Over a line of a thousand points that is nothing; over the 14
// points of an LSTM cell, launched at every step of a loop, the dispatch is the run (a third
// of lstm's primal was `eval_nodes`, the nodes' arithmetic a small part of it). A kernel of
// fewer points than a line, launched often enough that compiling pays
// (`COMPILE_AFTER_LAUNCHES`), is compiled instead: one function runs the whole iteration
// space, point by point in row-major order (a sum's summed axis fastest), with every node a
// Cranelift variable, so a point costs its operations and its loads.
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
// A sum adds its terms in dx's order (Note [Summation order]), so its bits too are the
// lanes'. Selections (`max`/`min`), row groups and monoid chains keep the interpreter for now.

/// Launches of a kernel after which `CompileLoops::Long` compiles it: about the launches
/// whose interpreter overhead pays for compiling (~0.2 ms for a cell of the LSTM; a launch of
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
    /// selection (`max`/`min`), an empty or a `Bool` sum, or if this machine has no
    /// Cranelift back end.
    pub fn new(
        program: &Program,
        kernel: &Kernel,
        held: &[(VarId, Option<usize>)],
    ) -> Option<CompiledKernel> {
        let sum_elem = kernel.nodes[kernel.output.1].1;
        let compiles = match kernel.reduce {
            None => true,
            Some(Reduction::Sum) => kernel.shape[0] > 0 && sum_elem != Elem::Bool,
            Some(Reduction::Max | Reduction::Min) => false,
        };
        if !compiles || held.iter().any(|(_, member)| member.is_some()) {
            return None;
        }
        let resolved = Resolved::new(&prim_code(kernel));
        let reads: Vec<Option<ReadAt>> = (kernel.nodes.values())
            .map(|(node, _)| match node {
                Node::Read { var, .. } => {
                    let shape = program.var_ty(*var).shape.clone();
                    Some(ReadAt {
                        input: (held.iter().position(|(held, _)| held == var))
                            .expect("a launch plan holds every variable its kernel reads"),
                        strides: row_major_strides(&shape),
                        shape,
                    })
                }
                _ => None,
            })
            .collect();
        let function = JitFunction::compile(5, 0, |b, run_instr_sig, ptr| {
            let code = Code {
                kernel,
                resolved: &resolved,
                reads: &reads,
                inputs: held.len(),
            };
            code.emit(b, run_instr_sig, ptr)
        })?;
        Some(CompiledKernel {
            function,
            resolved,
            inputs: held.len(),
            points: kernel.out_shape().iter().product(),
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

/// What the kernel's function is made from.
struct Code<'a> {
    kernel: &'a Kernel,
    /// The `Prim` nodes' operations, in node order.
    resolved: &'a Resolved,
    /// By node: where a read finds its variable.
    reads: &'a [Option<ReadAt>],
    inputs: usize,
}

impl Code<'_> {
    /// Emits the kernel's function (`KernelFn`): one loop over the iteration space, with an
    /// odometer over the axes in `order` (the last fastest). A map stores each point's value
    /// at the point; a sum runs its summed axis 0 fastest, so each output's terms come one
    /// after the other, and adds them in dx's order (Note [Summation order]): term `k` into
    /// accumulator `k mod LANES` of its leaf, a leaf's accumulators combined at its last
    /// term (`sum_order::combine_lanes`) and stored, and an output's leaf sums combined at
    /// its last term by `sum_order::TreeSum` itself, run on the emitted values.
    fn emit(&self, b: &mut FunctionBuilder, run_instr_sig: SigRef, ptr: Type) {
        let kernel = self.kernel;
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let &[inputs, out, regs, side, fault] = b.block_params(entry) else {
            unreachable!("a compiled kernel takes five arguments")
        };
        let touched: Vec<usize> = (0..kernel.nodes.len()).collect();
        let elems = &self.resolved.reg_elems;
        let vars = RegVars::new(b, elems, &touched, (regs, 0), run_instr_sig, ptr);
        let flags = MemFlagsData::trusted();
        let bases: Vec<Value> = (0..self.inputs)
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
        let summed = kernel.reduce.map(|_| kernel.shape[0]);
        let order: Vec<usize> = match summed {
            None => (0..rank).collect(),
            Some(_) => (1..rank).chain([0]).collect(),
        };
        let coords: Vec<Variable> = (0..rank).map(|_| b.declare_var(types::I64)).collect();
        // The iteration and the output position.
        let step = b.declare_var(types::I64);
        let point = b.declare_var(types::I64);
        let bad = b.declare_var(types::I8);
        let zero = b.ins().iconst(types::I64, 0);
        for &var in coords.iter().chain([&step, &point]) {
            b.def_var(var, zero);
        }
        let no = b.ins().iconst(types::I8, 0);
        b.def_var(bad, no);
        let (_, root) = kernel.output;
        let elem = kernel.nodes[root].1;
        let sums = summed.map(|n| Sums::new(b, elem, n, ptr));
        let points: usize = kernel.shape.iter().product();
        let body = b.create_block();
        let next = b.create_block();
        let exit = b.create_block();
        match points {
            0 => b.ins().jump(exit, &[]),
            _ => b.ins().jump(body, &[]),
        };

        b.switch_to_block(body);
        let at: Vec<Value> = coords.iter().map(|&coord| b.use_var(coord)).collect();
        let mut prims = self.resolved.instrs.iter();
        for (id, (node, elem)) in kernel.nodes.iter() {
            let var = vars.var(id.0 as usize);
            match node {
                Node::Lit(_) => {}
                Node::Index(affine) => {
                    let value = affine_value(b, affine, &at);
                    b.def_var(var, value);
                }
                Node::Read { coords, .. } => {
                    let read = self.reads[id.0 as usize].as_ref();
                    let read = read.expect("every read has its input");
                    let base = bases[read.input];
                    let value = emit_read(b, &vars, read, coords, &at, base, *elem, bad);
                    b.def_var(var, value);
                }
                Node::Prim(..) => {
                    let instr = prims.next().expect("an operation per Prim node");
                    vars.instr(b, instr, side);
                }
            }
        }
        let value = b.use_var(vars.var(root.0 as usize));
        match &sums {
            None => {
                store_at(b, out, point, value, elem);
                let p = b.use_var(point);
                let moved = b.ins().iadd_imm_u(p, 1);
                b.def_var(point, moved);
                b.ins().jump(next, &[]);
            }
            Some(sums) => sums.add(b, value, at[0], (out, point), next),
        }

        // The next point: the odometer, without branches.
        b.switch_to_block(next);
        let mut carry = b.ins().iconst(types::I64, 1);
        for &axis in order.iter().rev() {
            let moved = b.ins().iadd(at[axis], carry);
            let dim = kernel.shape[axis] as i64;
            let wraps = b.ins().icmp_imm_u(IntCC::Equal, moved, dim);
            let value = b.ins().select(wraps, zero, moved);
            b.def_var(coords[axis], value);
            carry = b.ins().uextend(types::I64, wraps);
        }
        let k = b.use_var(step);
        let moved = b.ins().iadd_imm_u(k, 1);
        b.def_var(step, moved);
        let more = b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, moved, points as i64);
        b.ins().brif(more, body, &[], exit, &[]);

        b.switch_to_block(exit);
        let bad = b.use_var(bad);
        b.ins().store(flags, bad, fault, 0);
        b.ins().return_(&[]);
    }
}

/// Stores `value` (of element type `elem`) at position `point` of `out`.
fn store_at(b: &mut FunctionBuilder, out: Value, point: Variable, value: Value, elem: Elem) {
    let p = b.use_var(point);
    let offset = b.ins().imul_imm_u(p, i64::from(machine_type(elem).bytes()));
    let slot = b.ins().iadd(out, offset);
    b.ins().store(MemFlagsData::trusted(), value, slot, 0);
}

/// The sums of a summing kernel: the accumulators of the current leaf and the sums of the
/// current output's leaves, in stack slots (Note [Summation order]).
struct Sums {
    elem: Elem,
    /// The pointer type.
    ptr: Type,
    /// Terms per output.
    n: usize,
    lanes: StackSlot,
    leaves: StackSlot,
}

impl Sums {
    /// Slots for sums of `n` terms of type `elem`, the accumulators set to zero.
    fn new(b: &mut FunctionBuilder, elem: Elem, n: usize, ptr: Type) -> Sums {
        let size = machine_type(elem).bytes();
        let slot = |b: &mut FunctionBuilder, count: usize| {
            let data = StackSlotData::new(StackSlotKind::ExplicitSlot, size * count as u32, 3);
            b.create_sized_stack_slot(data)
        };
        let sums = Sums {
            elem,
            ptr,
            n,
            lanes: slot(b, LANES),
            leaves: slot(b, n.div_ceil(LEAF)),
        };
        sums.clear_lanes(b);
        sums
    }

    fn size(&self) -> i32 {
        machine_type(self.elem).bytes() as i32
    }

    fn zero(&self, b: &mut FunctionBuilder) -> Value {
        let bits = b.ins().iconst(types::I64, 0);
        from_bits(b, bits, self.elem)
    }

    fn plus(&self, b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
        match self.elem {
            Elem::F32 | Elem::F64 => b.ins().fadd(x, y),
            // Integer sums wrap, as `prim`'s addition.
            _ => b.ins().iadd(x, y),
        }
    }

    fn clear_lanes(&self, b: &mut FunctionBuilder) {
        let zero = self.zero(b);
        for lane in 0..LANES as i32 {
            b.ins()
                .stack_store(self.ptr, zero, self.lanes, lane * self.size());
        }
    }

    /// Adds term `value` (the `k`-th of its output) to its accumulator; at the last term of
    /// a leaf stores the leaf's sum, at the last of an output stores the output's sum at
    /// `out`'s position `point` and moves it on; then goes to `next`.
    fn add(
        &self,
        b: &mut FunctionBuilder,
        value: Value,
        k: Value,
        (out, point): (Value, Variable),
        next: Block,
    ) {
        let ty = machine_type(self.elem);
        let flags = MemFlagsData::trusted();
        let lane = b.ins().band_imm_u(k, LANES as i64 - 1);
        let offset = b.ins().imul_imm_u(lane, i64::from(self.size()));
        let lanes = b.ins().stack_addr(self.ptr, self.lanes, 0);
        let at = b.ins().iadd(lanes, offset);
        let before = b.ins().load(ty, flags, at, 0);
        let after = self.plus(b, before, value);
        b.ins().store(flags, after, at, 0);
        let in_leaf = b.ins().band_imm_u(k, LEAF as i64 - 1);
        let leaf_ends = b.ins().icmp_imm_u(IntCC::Equal, in_leaf, LEAF as i64 - 1);
        let last = b.ins().icmp_imm_u(IntCC::Equal, k, self.n as i64 - 1);
        let ends = b.ins().bor(leaf_ends, last);
        let leaf_end = b.create_block();
        let output_end = b.create_block();
        b.ins().brif(ends, leaf_end, &[], next, &[]);

        b.switch_to_block(leaf_end);
        let accumulators: [Value; LANES] = std::array::from_fn(|lane| {
            b.ins()
                .stack_load(self.ptr, ty, self.lanes, lane as i32 * self.size())
        });
        let leaf_sum = {
            let b = RefCell::new(&mut *b);
            sum_order::combine_lanes(&accumulators, |x, y| self.plus(&mut b.borrow_mut(), x, y))
        };
        let leaf = b.ins().ushr_imm_u(k, LEAF.trailing_zeros() as i64);
        let offset = b.ins().imul_imm_u(leaf, i64::from(self.size()));
        let leaves = b.ins().stack_addr(self.ptr, self.leaves, 0);
        let at = b.ins().iadd(leaves, offset);
        b.ins().store(flags, leaf_sum, at, 0);
        self.clear_lanes(b);
        b.ins().brif(last, output_end, &[], next, &[]);

        b.switch_to_block(output_end);
        let total = {
            let b = RefCell::new(&mut *b);
            let mut tree = TreeSum::new();
            for leaf in 0..self.n.div_ceil(LEAF) as i32 {
                let sum =
                    b.borrow_mut()
                        .ins()
                        .stack_load(self.ptr, ty, self.leaves, leaf * self.size());
                tree.push_leaf(sum, |x, y| self.plus(&mut b.borrow_mut(), x, y));
            }
            let total = tree.finish(|x, y| self.plus(&mut b.borrow_mut(), x, y));
            total.expect("a sum compiled has terms")
        };
        store_at(b, out, point, total, self.elem);
        let p = b.use_var(point);
        let moved = b.ins().iadd_imm_u(p, 1);
        b.def_var(point, moved);
        b.ins().jump(next, &[]);
    }
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
    bad: Variable,
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

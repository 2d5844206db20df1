//! Kernels compiled to machine code (Cranelift): a kernel's whole iteration space as one
//! loop over its points, each node a value in a machine register (Note [Compiled kernels]).

use std::cell::RefCell;
use std::sync::atomic::AtomicUsize;
use std::sync::OnceLock;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, Block, InstBuilder, MemFlagsData, SigRef, StackSlot, StackSlotData, StackSlotKind, Type,
    Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};
use rayon::prelude::*;

use super::{GroupRead, Launch, PIECE, WIDE};
use crate::core::ir::{Elem, Program, VarId};
use crate::core::kernel::{Affine, Coord, Kernel, Node, Reduction};
use crate::exec::jit::{from_bits, machine_type, JitFunction, RegVars};
use crate::exec::lanes::{match_column, Column, ColumnMut, ColumnRef};
use crate::exec::register_code::{Resolved, Side};
use crate::exec::{CompileLoops, Exec, PAR_THRESHOLD};
use crate::ops::scalar_code::{Op, Operand, ScalarCode};
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
// (`COMPILE_AFTER_LAUNCHES`), is compiled instead: one function runs its outputs, point by
// point in row-major order (a sum's summed axis fastest), with every node a Cranelift
// variable, so a point costs its operations and its loads.
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
// lanes'. A sum of at most `UNROLLED` terms an output has its terms written out, the summed
// coordinate a constant in each, so that Cranelift folds their addresses and keeps the
// accumulators in registers.
//
// The function computes a range of outputs, so a kernel of many outputs runs compiled too,
// split over the threads by runs of outputs (`Launch::run_compiled`), or a block of rows at
// a time in a row group (reading the earlier members' blocks where their rows are). It pays
// where the lanes pay per output rather than per line: a sum of a few terms an output whose
// lines hold many outputs, each then summed alone (`Launch::lanes_pay_per_output`: the
// squared distances `Σ_d (x[i, d] − x[j, d])²` of a pairwise kernel sum, 8 terms an output,
// ran at ~20 ns an output on lanes; krr's primal went from 116–131 to 13–15 ms, nbody's
// from 105–115 to 8, alternating runs of one binary with and without `DX_NO_JIT`), or a row
// group member's map over rows shorter than `WIDE`, whose reads the lanes make row by row
// (nbody's gradient: `(p[i, d] − p[j, d]) f[i, j]` over rows of 3, 146 → 99 ms), unless
// the code calls a maths function per point, which the lanes vectorise (`sqrt`, `floor` and
// `ceil` are instructions). Under `CompileLoops::Always` (tests) every kernel it can compile
// runs compiled. Selections (`max`/`min`) and monoid chains keep the interpreter for now.

/// Launches of a kernel after which `CompileLoops::Long` compiles it: about the launches
/// whose interpreter overhead pays for compiling (~0.2 ms for a cell of the LSTM; a launch of
/// it saves a few µs).
pub(in crate::exec) const COMPILE_AFTER_LAUNCHES: usize = 64;

/// The compiled function: `(inputs, out, regs, side, fault, first, count)` computes the
/// kernel's outputs `first..first + count` (row-major positions in its output) into
/// `out[0..count]`, reading `inputs[k]` (the row-major elements of the `k`-th variable the
/// kernel reads, in `LaunchPlan::held`'s order: element `e` at `inputs[k] + e * size`),
/// using `regs` (the register file of the operations it calls) and `side`, and sets
/// `*fault` to 1 if a computed coordinate left its axis.
type KernelFn =
    unsafe extern "C" fn(*const *const u8, *mut u8, *mut u64, *mut u8, *mut u8, u64, u64);

/// A kernel compiled to machine code, with what its code refers to.
pub(super) struct CompiledKernel {
    function: JitFunction,
    /// The typed operations the code calls: it holds their addresses.
    resolved: Resolved,
    inputs: usize,
    /// Whether the code calls a function at some point (a maths function, an operation
    /// without an inline form), rather than being machine instructions throughout.
    calls: bool,
}

/// When a plan's kernel is compiled: its launches so far (weighted), and the compiled kernel
/// once it is made (`None` inside when it cannot be).
#[derive(Default)]
pub(super) struct Compilation {
    launches: AtomicUsize,
    kernel: OnceLock<Option<CompiledKernel>>,
}

impl Compilation {
    /// The compiled kernel for this launch, counting it as `weight` launches: compiled when
    /// `policy` says so, `None` before and when it cannot be compiled.
    pub fn at_launch(
        &self,
        policy: CompileLoops,
        program: &Program,
        kernel: &Kernel,
        held: &[(VarId, Option<usize>)],
        weight: usize,
    ) -> Option<&CompiledKernel> {
        if policy == CompileLoops::Never {
            return None;
        }
        if let Some(compiled) = self.kernel.get() {
            return compiled.as_ref();
        }
        if !policy.compiles_after(&self.launches, weight, COMPILE_AFTER_LAUNCHES) {
            return None;
        }
        (self.kernel)
            .get_or_init(|| CompiledKernel::new(program, kernel, held))
            .as_ref()
    }
}

/// Most terms of a compiled sum's output (its leaves' sums are kept on the stack).
const MOST_TERMS: usize = 1 << 20;

impl CompiledKernel {
    /// `kernel` compiled, reading the variables `held` (in that order; `LaunchPlan::held`)
    /// with the types `program` gives them; `None` for a selection (`max`/`min`), an empty,
    /// a `Bool` or a very long sum, or if this machine has no Cranelift back end.
    pub fn new(
        program: &Program,
        kernel: &Kernel,
        held: &[(VarId, Option<usize>)],
    ) -> Option<CompiledKernel> {
        let sum_elem = kernel.nodes[kernel.output.1].1;
        let compiles = match kernel.reduce {
            None => true,
            Some(Reduction::Sum) => {
                (1..=MOST_TERMS).contains(&kernel.shape[0]) && sum_elem != Elem::Bool
            }
            Some(Reduction::Max | Reduction::Min) => false,
        };
        if !compiles {
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
        let mut calls = false;
        let function = JitFunction::compile(5, 2, |b, run_instr_sig, ptr| {
            let code = Code {
                kernel,
                resolved: &resolved,
                reads: &reads,
                inputs: held.len(),
            };
            calls = code.emit(b, run_instr_sig, ptr);
        })?;
        Some(CompiledKernel {
            function,
            resolved,
            inputs: held.len(),
            calls,
        })
    }

    /// Whether the code calls a function at some point (see `calls`): where it does, the
    /// lane interpreter's vectorised maths is faster on long lines.
    pub fn calls(&self) -> bool {
        self.calls
    }

    /// Computes the kernel's outputs from row-major position `first` on into `out` (as many
    /// as it holds), reading the variables at `bases` (in `held`'s order: element `e` of the
    /// `k`-th at `bases[k] + e * size`, its part that the launch reads in bounds): `false` if
    /// a computed coordinate left its axis, and `out` is then to be computed another way.
    pub fn run(
        &self,
        bases: impl ExactSizeIterator<Item = *const u8>,
        out: ColumnMut<'_>,
        first: usize,
    ) -> bool {
        assert_eq!(bases.len(), self.inputs);
        let (out, count): (*mut u8, usize) =
            match_column!(ColumnMut, out, values => (values.as_mut_ptr().cast(), values.len()));
        // A launch of a small kernel costs a few hundred nanoseconds: its pointers and
        // registers stay on the stack when they fit.
        let mut pointers = [std::ptr::null::<u8>(); SMALL];
        let mut more_pointers = Vec::new();
        let pointers: &mut [*const u8] = match self.inputs <= SMALL {
            true => &mut pointers[..self.inputs],
            false => {
                more_pointers.resize(self.inputs, std::ptr::null());
                &mut more_pointers
            }
        };
        for (pointer, base) in pointers.iter_mut().zip(bases) {
            *pointer = base;
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
        // base gives the row-major elements of the variable the kernel reads (whose shape
        // gave the strides) wherever this launch's outputs read it, `out` has a slot for each
        // of the `count` outputs, `regs` is the register file of `resolved`, whose operations
        // outlive the call, as `side` and `fault` do.
        unsafe {
            let run = std::mem::transmute::<*const u8, KernelFn>(self.function.code());
            run(
                pointers.as_ptr(),
                out,
                regs.as_mut_ptr(),
                (&mut side as *mut Side).cast(),
                &mut fault,
                first as u64,
                count as u64,
            );
        }
        fault == 0
    }
}

/// The base of a variable (`CompiledKernel::run`) of which `data` holds the elements from
/// row-major position `origin` on: where its element 0 would be.
pub(super) fn shifted_base(data: ColumnRef<'_>, origin: isize) -> *const u8 {
    match_column!(ColumnRef, data, values => {
        values.as_ptr().wrapping_offset(-origin).cast()
    })
}

/// Inputs (and a quarter of the registers) that a launch keeps on the stack.
pub(super) const SMALL: usize = 16;

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
    /// Emits the kernel's function (`KernelFn`); returns whether it calls a function at some
    /// point. The outputs `first..first + count` come one after the other, with an odometer
    /// over the output's axes; a map stores each point's value at its point. A sum adds
    /// each output's terms in dx's order (Note [Summation order]): term `k` into accumulator
    /// `k mod LANES` of its leaf, a leaf's accumulators combined at its last term
    /// (`sum_order::combine_lanes`), and an output's leaf sums combined at its last term by
    /// `sum_order::TreeSum` itself, run on the emitted values. A sum of at most `UNROLLED`
    /// terms has them written out one after the other, each with its own summed coordinate
    /// and accumulator, all in registers (`unrolled_output`); a longer one is a loop over its
    /// terms with the accumulators in stack slots (`Sums`).
    fn emit(&self, b: &mut FunctionBuilder, run_instr_sig: SigRef, ptr: Type) -> bool {
        let kernel = self.kernel;
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let &[inputs, out, regs, side, fault, first, count] = b.block_params(entry) else {
            unreachable!("a compiled kernel takes seven arguments")
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
        let out_axes: Vec<usize> = (usize::from(summed.is_some())..rank).collect();
        let coords: Vec<Variable> = (0..rank).map(|_| b.declare_var(types::I64)).collect();
        // The output position (in `out`), and whether a read left its axis.
        let point = b.declare_var(types::I64);
        let bad = b.declare_var(types::I8);
        let zero = b.ins().iconst(types::I64, 0);
        b.def_var(point, zero);
        let no = b.ins().iconst(types::I8, 0);
        b.def_var(bad, no);
        // The first output's coordinates, from its row-major position.
        let mut rest = first;
        for &axis in out_axes.iter().rev() {
            let dim = kernel.shape[axis].max(1) as i64;
            let coord = b.ins().urem_imm_u(rest, dim);
            b.def_var(coords[axis], coord);
            rest = b.ins().udiv_imm_u(rest, dim);
        }
        if summed.is_some() {
            b.def_var(coords[0], zero);
        }
        let (_, root) = kernel.output;
        let elem = kernel.nodes[root].1;
        let sums = summed
            .filter(|&n| n > UNROLLED)
            .map(|n| Sums::new(b, elem, n, ptr));
        let body = b.create_block();
        let next = b.create_block();
        let exit = b.create_block();
        let empty = kernel.shape.contains(&0);
        match empty {
            true => b.ins().jump(exit, &[]),
            false => b.ins().brif(count, body, &[], exit, &[]),
        };

        b.switch_to_block(body);
        let mut point_code = PointCode {
            code: self,
            vars: &vars,
            bases: &bases,
            side,
            bad,
            calls: false,
        };
        let at: Vec<Value> = coords.iter().map(|&coord| b.use_var(coord)).collect();
        // The odometer's axes, the last fastest.
        let order: Vec<usize> = match (&sums, summed) {
            (None, Some(n)) => {
                let value = point_code.unrolled_output(b, n, &at, elem);
                store_at(b, out, point, value, elem);
                b.ins().jump(next, &[]);
                out_axes
            }
            (None, None) => {
                let value = point_code.value(b, &at);
                store_at(b, out, point, value, elem);
                b.ins().jump(next, &[]);
                out_axes
            }
            (Some(sums), _) => {
                let value = point_code.value(b, &at);
                sums.add(b, value, at[0], (out, point), next);
                out_axes.iter().copied().chain([0]).collect()
            }
        };

        // The next point: the odometer, without branches. An output is done when the
        // point moved on (a map's every point; a long sum's last term).
        b.switch_to_block(next);
        if sums.is_none() {
            let p = b.use_var(point);
            let moved = b.ins().iadd_imm_u(p, 1);
            b.def_var(point, moved);
        }
        let mut carry = b.ins().iconst(types::I64, 1);
        for &axis in order.iter().rev() {
            let moved = b.ins().iadd(at[axis], carry);
            let dim = kernel.shape[axis] as i64;
            let wraps = b.ins().icmp_imm_u(IntCC::Equal, moved, dim);
            let value = b.ins().select(wraps, zero, moved);
            b.def_var(coords[axis], value);
            carry = b.ins().uextend(types::I64, wraps);
        }
        let done = b.use_var(point);
        let more = b.ins().icmp(IntCC::UnsignedLessThan, done, count);
        b.ins().brif(more, body, &[], exit, &[]);

        b.switch_to_block(exit);
        let bad = b.use_var(bad);
        b.ins().store(flags, bad, fault, 0);
        b.ins().return_(&[]);
        point_code.calls
    }
}

/// Terms of a sum's output that compiled code writes out one after the other, rather than
/// looping over them: one leaf's at most (Note [Summation order]).
const UNROLLED: usize = 32;
const _: () = assert!(UNROLLED <= LEAF);

/// What the code of one point is made from, and whether it has called a function so far.
struct PointCode<'a> {
    code: &'a Code<'a>,
    vars: &'a RegVars<'a>,
    bases: &'a [Value],
    side: Value,
    bad: Variable,
    calls: bool,
}

impl PointCode<'_> {
    /// The kernel's value at the point of coordinates `at`: every node, in order.
    fn value(&mut self, b: &mut FunctionBuilder, at: &[Value]) -> Value {
        let (kernel, vars) = (self.code.kernel, self.vars);
        let mut prims = self.code.resolved.instrs.iter();
        for (id, (node, elem)) in kernel.nodes.iter() {
            let var = vars.var(id.0 as usize);
            match node {
                Node::Lit(_) => {}
                Node::Index(affine) => {
                    let value = affine_value(b, affine, at);
                    b.def_var(var, value);
                }
                Node::Read { coords, .. } => {
                    let read = self.code.reads[id.0 as usize].as_ref();
                    let read = read.expect("every read has its input");
                    let base = self.bases[read.input];
                    let value = emit_read(b, vars, read, coords, at, base, *elem, self.bad);
                    b.def_var(var, value);
                }
                Node::Prim(..) => {
                    let instr = prims.next().expect("an operation per Prim node");
                    self.calls |= vars.instr(b, instr, self.side);
                }
            }
        }
        b.use_var(vars.var(kernel.output.1 .0 as usize))
    }

    /// The sum of the `n` (at most `UNROLLED`, so one leaf) terms of the output whose
    /// coordinates are `at` (its summed axis 0 aside), each term's code written out with the
    /// summed coordinate a constant, in dx's order (Note [Summation order]) with the
    /// accumulators in registers.
    fn unrolled_output(
        &mut self,
        b: &mut FunctionBuilder,
        n: usize,
        at: &[Value],
        elem: Elem,
    ) -> Value {
        let zero = zero_of(b, elem);
        let mut point = at.to_vec();
        let mut lanes = [zero; LANES];
        for k in 0..n {
            point[0] = b.ins().iconst(types::I64, k as i64);
            let term = self.value(b, &point);
            lanes[k % LANES] = plus(b, elem, lanes[k % LANES], term);
        }
        let b = RefCell::new(b);
        sum_order::combine_lanes(&lanes, |x, y| plus(&mut b.borrow_mut(), elem, x, y))
    }
}

/// The zero of type `elem`.
fn zero_of(b: &mut FunctionBuilder, elem: Elem) -> Value {
    let bits = b.ins().iconst(types::I64, 0);
    from_bits(b, bits, elem)
}

/// `x + y` on values of type `elem`: integer sums wrap, as `prim`'s addition.
fn plus(b: &mut FunctionBuilder, elem: Elem, x: Value, y: Value) -> Value {
    match elem {
        Elem::F32 | Elem::F64 => b.ins().fadd(x, y),
        _ => b.ins().iadd(x, y),
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

    fn plus(&self, b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
        plus(b, self.elem, x, y)
    }

    fn clear_lanes(&self, b: &mut FunctionBuilder) {
        let zero = zero_of(b, self.elem);
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
            let zero = zero_of(b, elem);
            b.ins().select(inside, value, zero)
        }
    }
}

/// Outputs of a kernel above a line that weigh as one launch of a small kernel in
/// `Compilation::at_launch`: the lane interpreter pays ~20 ns an output where it sums short
/// rows (`Launch::lanes_pay_per_output`), so compiling (~0.2–1 ms) pays after about
/// `COMPILE_AFTER_LAUNCHES` times this many outputs.
const OUTPUTS_PER_LAUNCH: usize = 256;

/// The addresses a compiled kernel's launch reads from, shared by the threads that run it.
struct Bases(Vec<*const u8>);

// SAFETY: the addresses are only read, from inputs the launch borrows while its threads run.
unsafe impl Sync for Bases {}

impl Bases {
    fn iter(&self) -> impl ExactSizeIterator<Item = *const u8> + '_ {
        self.0.iter().copied()
    }
}

impl Launch<'_> {
    /// The kernel compiled, if this launch of a kernel of at least a line's points runs it
    /// so (Note [Compiled kernels]); `in_rows` if it is a row group member. Under
    /// `CompileLoops::Long`, where the lanes pay per output and the compiled code calls no
    /// function per point (the lanes' maths is vectorised).
    pub(super) fn compiled(&self, exec: &Exec<'_>, in_rows: bool) -> Option<&CompiledKernel> {
        let policy = exec.config.compile_loops;
        if policy == CompileLoops::Long && !self.lanes_pay_per_output(in_rows) {
            return None;
        }
        let outputs: usize = self.kernel.out_shape().iter().product();
        let weight = (outputs / OUTPUTS_PER_LAUNCH).max(1);
        let plan = &self.plan;
        let compiled =
            (plan.compilation).at_launch(policy, exec.program, self.kernel, &plan.held, weight)?;
        (policy == CompileLoops::Always || !compiled.calls()).then_some(compiled)
    }

    /// Whether the lane interpreter would pay per output or per short row rather than per
    /// line: a sum of at most `UNROLLED` terms an output whose lines hold several outputs,
    /// each then summed alone (`reduce_in_lines`; a row group member always sums so, a
    /// kernel alone unless its lines run across its output, `runs_across`); or a row group
    /// member's map whose rows are shorter than `WIDE` (its lines hold several rows, and
    /// each read works row by row; alone, such a map runs its lines down axis 0,
    /// `map_down`).
    fn lanes_pay_per_output(&self, in_rows: bool) -> bool {
        match self.kernel.reduce {
            Some(Reduction::Sum) => {
                self.kernel.shape[0] <= UNROLLED
                    && self.outputs_per_line() > 1
                    && (in_rows || !self.runs_across())
            }
            Some(Reduction::Max | Reduction::Min) => false,
            None => match self.plan.shape[..] {
                [_, .., row] => in_rows && row < WIDE,
                _ => false,
            },
        }
    }

    /// Where `compiled` finds each variable the launch reads (`CompiledKernel::run`'s bases):
    /// a bound value, or an earlier row group member's block of rows in `group`.
    pub(super) fn bases<'g>(
        &'g self,
        group: &'g [GroupRead<'g>],
    ) -> impl ExactSizeIterator<Item = *const u8> + 'g {
        (0..self.sources.len()).map(move |source| {
            let read = self.source(source, group);
            shifted_base(read.data, read.origin)
        })
    }

    /// Every output of the kernel (alone) into `out` by `compiled`, in parallel over runs of
    /// outputs when the kernel is large: `false` if a computed coordinate left its axis.
    pub(super) fn run_compiled(
        &self,
        compiled: &CompiledKernel,
        out: &mut Column,
        exec: &Exec<'_>,
    ) -> bool {
        let terms = self
            .kernel
            .reduce
            .map_or(1, |_| self.kernel.shape[0])
            .max(1);
        let bases = Bases(self.bases(&[]).collect());
        let chunk = (PIECE / terms).max(1);
        let run = |first: usize, dst: ColumnMut<'_>| {
            exec.interrupt_requested() || compiled.run(bases.iter(), dst, first)
        };
        if out.len() * terms < PAR_THRESHOLD {
            return run(0, out.as_mut());
        }
        (out.chunks_mut(chunk).into_par_iter().enumerate()).all(|(k, dst)| run(k * chunk, dst))
    }
}

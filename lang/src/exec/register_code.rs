//! Scalar code resolved for many runs: typed operations on a register file of bit patterns.
//!
//! `ops::scalar_code` compiles a scalar block to operations on `Scalar` registers, which
//! `ScalarCode::eval` runs through `Prim::eval`: every operation matches on its operands' types
//! and moves 16-byte enums, about 30 ns a step for a loop body such as `c * xs[i]`. A loop runs
//! its body many times, so here each operation is resolved once, for the element types of its
//! registers, to a monomorphic function on `u64` registers holding each value's bits
//! (`Scalar::bits`, [`Bits`]); literal operands become registers set once, and tables become
//! typed row-major slices read through their strides. A carry whose old value nothing reads
//! after its new one is computed is computed in its own register (`carries_in_place`), so
//! the carried chain does not make a round trip through memory each step.
//!
//! The rules stay `prim`'s: arithmetic is `arith::apply`, float functions `math::apply`,
//! comparisons `compare::ordered`, each applied to typed values, so results are bit for bit
//! those of the interpreter. The rarer primitives (casts, random bits, `isnan`, `isinf`) run
//! through `Prim::eval` on decoded scalars.

use std::cmp::Ordering;

use crate::core::ir::{Elem, Scalar, VarId};
use crate::ops::interp::InterpError;
use crate::ops::scalar_code::{Op, Operand, ScalarCode};
use crate::prim::arith::{self, Arith};
use crate::prim::compare::{self, CompareOp};
use crate::prim::math::{self, Float, MathOp};
use crate::prim::{ArithOp, Family, Prim};

use super::lanes::{ColumnRef, LaneElem};
use super::tensor::{with_elem_type, with_tensor, Tensor};

/// An element type held in a register as its bits (zero-extended, as `Scalar::bits`).
pub(super) trait Bits: LaneElem {
    fn from_reg(bits: u64) -> Self;
    fn into_reg(self) -> u64;
}

macro_rules! bits {
    ($($ty:ty: |$x:ident| $from:expr, $into:expr;)*) => {$(
        impl Bits for $ty {
            #[inline(always)]
            fn from_reg($x: u64) -> Self { $from }
            #[inline(always)]
            fn into_reg(self) -> u64 { let $x = self; $into }
        }
    )*};
}

bits! {
    f32: |x| f32::from_bits(x as u32), u64::from(x.to_bits());
    f64: |x| f64::from_bits(x), x.to_bits();
    i32: |x| x as u32 as i32, u64::from(x as u32);
    i64: |x| x as i64, x as u64;
    u32: |x| x as u32, u64::from(x);
    u64: |x| x, x;
    bool: |x| x != 0, u64::from(x);
}

/// A table the code reads: its elements in row-major order, and its shape.
pub(super) struct Table<'t> {
    values: ColumnRef<'t>,
    shape: &'t [usize],
    /// Row-major strides, in elements.
    strides: Vec<usize>,
}

impl<'t> Table<'t> {
    /// A table over `tensor`, which must be in standard (row-major) layout.
    pub fn new(tensor: &'t Tensor) -> Table<'t> {
        let values = with_tensor!(tensor, a => LaneElem::wrap(
            a.as_slice().expect("register_code: tables are in standard layout (`LoopRun`)")
        ));
        let shape = tensor.shape();
        let mut strides = vec![1; shape.len()];
        for axis in (0..shape.len().saturating_sub(1)).rev() {
            strides[axis] = strides[axis + 1] * shape[axis + 1];
        }
        Table {
            values,
            shape,
            strides,
        }
    }

    /// The elements, in row-major order.
    pub fn values(&self) -> ColumnRef<'t> {
        self.values
    }

    /// The position in `values` of the element at `index` (one coordinate per axis), or
    /// `None` if it is out of range.
    #[inline]
    pub fn offset(&self, index: impl IntoIterator<Item = i64>) -> Option<usize> {
        let mut offset = 0;
        for ((k, dim), stride) in index.into_iter().zip(self.shape).zip(&self.strides) {
            match usize::try_from(k) {
                Ok(k) if k < *dim => offset += k * stride,
                _ => return None,
            }
        }
        Some(offset)
    }
}

/// The state a run of the code works on: its registers, and what operations see besides.
pub(super) struct Machine<'t> {
    pub regs: Vec<u64>,
    pub side: Side<'t>,
}

/// What operations read besides registers, and where a read reports a fault.
pub(super) struct Side<'t> {
    tables: Vec<Table<'t>>,
    /// Report reads out of range as errors (`fault`) instead of reading zero.
    strict: bool,
    /// The first read out of range in strict mode; later operations still run (reading zero)
    /// until the caller looks.
    pub fault: Option<InterpError>,
}

impl<'t> Side<'t> {
    pub fn table(&self, table: usize) -> &Table<'t> {
        &self.tables[table]
    }
}

impl Side<'static> {
    /// The side of code that reads no tables (a monoid operator).
    pub fn without_tables() -> Side<'static> {
        Side {
            tables: Vec::new(),
            strict: false,
            fault: None,
        }
    }
}

/// What one operation needs beyond its registers.
#[derive(Clone, Debug)]
enum Detail {
    None,
    Math(MathOp),
    Compare(CompareOp),
    /// A primitive run through `Prim::eval`, with its operands' element types.
    Generic {
        prim: Prim,
        elems: [Elem; 3],
    },
    Read {
        table: usize,
        index: Vec<usize>,
        /// The reading statement's binder, named by strict-mode errors.
        reader: VarId,
    },
}

/// The typed function of an operation.
pub(super) type Exec = fn(&Instr, &mut [u64], &mut Side);

/// What an operation is, for code generated from it (`loop_jit`).
#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Copy,
    Prim(Prim),
    Read,
}

/// One operation: `exec` applied to it, the registers and the side.
#[derive(Clone)]
pub(super) struct Instr {
    pub exec: Exec,
    pub kind: Kind,
    pub dst: usize,
    /// Operand registers (unused ones repeat the first).
    args: [usize; 3],
    n_args: usize,
    detail: Detail,
}

impl Instr {
    /// The float function of a math operation on floats (`None` for any other operation).
    pub fn math(&self) -> Option<MathOp> {
        match self.detail {
            Detail::Math(op) => Some(op),
            _ => None,
        }
    }

    /// The registers the operation reads, in order: its operands, or a read's index.
    pub fn reads(&self) -> &[usize] {
        match &self.detail {
            Detail::Read { index, .. } => index,
            _ => &self.args[..self.n_args],
        }
    }
}

/// A loop body's `ScalarCode` (params: the index, then the carries; results: the new
/// carries, then the outputs) resolved to typed operations.
pub(super) struct RegisterCode {
    pub code: ScalarCode,
    instrs: Vec<Instr>,
    /// The initial registers: zero, except the literals' registers.
    init: Vec<u64>,
    /// The element type of each register: the code's, then the literals'.
    pub reg_elems: Vec<Elem>,
    /// The register holding each result of the block.
    pub results: Vec<usize>,
    /// The positions among `results` of the outputs that are old carries (a scan stacking
    /// its carries, as a checkpointing scan does): stacked before the step runs, so that the
    /// step may overwrite them (`carries_in_place`).
    pub early_outputs: Vec<usize>,
    /// For each of the code's registers, whether it depends on a carry (the params after the
    /// first, which is the index), directly or through the operations that compute it.
    pub carried: Vec<bool>,
    /// The operations whose results are carried, in order (`loop_blocks`).
    carried_instrs: Vec<Instr>,
}

/// Scalar code's operations resolved to typed functions on a register file: the code's
/// registers, then one register per literal operand.
pub(super) struct Resolved {
    pub instrs: Vec<Instr>,
    /// The initial registers: zero, except the literals' registers.
    pub init: Vec<u64>,
    /// The element type of each register: the code's, then the literals'.
    pub reg_elems: Vec<Elem>,
    /// The register holding each result of the block.
    pub results: Vec<usize>,
}

impl Resolved {
    pub fn new(code: &ScalarCode) -> Resolved {
        let mut init = vec![0; code.reg_elems.len()];
        let mut reg_elems = code.reg_elems.clone();
        let elem_of = |operand: &Operand| match operand {
            Operand::Reg(reg) => code.reg_elems[*reg],
            Operand::Const(scalar) => scalar.elem(),
        };
        let mut register = |operand: &Operand| match operand {
            Operand::Reg(reg) => *reg,
            Operand::Const(scalar) => {
                init.push(scalar.bits());
                reg_elems.push(scalar.elem());
                init.len() - 1
            }
        };
        let mut instrs = Vec::with_capacity(code.ops.len());
        for op in &code.ops {
            let instr = match op {
                Op::Copy { dst, src } => Instr {
                    exec: copy,
                    kind: Kind::Copy,
                    dst: *dst,
                    args: [register(src); 3],
                    n_args: 1,
                    detail: Detail::None,
                },
                Op::Prim { dst, prim, args } => {
                    let mut elems = [Elem::Bool; 3];
                    for (slot, arg) in elems.iter_mut().zip(args) {
                        *slot = elem_of(arg);
                    }
                    let args: Vec<usize> = args.iter().map(&mut register).collect();
                    let (exec, detail) = resolve(*prim, elems);
                    Instr {
                        exec,
                        kind: Kind::Prim(*prim),
                        dst: *dst,
                        args: std::array::from_fn(|k| {
                            args.get(k).or(args.first()).copied().unwrap_or(0)
                        }),
                        n_args: args.len(),
                        detail,
                    }
                }
                Op::Read {
                    dst,
                    reader,
                    table,
                    index,
                    elem,
                } => {
                    let index: Vec<usize> = index.iter().map(&mut register).collect();
                    // A table of rank one is read by the register in `args[0]`.
                    let exec = match index.len() {
                        1 => with_elem_type!(elem, T => read_vector::<T> as Exec),
                        _ => with_elem_type!(elem, T => read::<T> as Exec),
                    };
                    Instr {
                        exec,
                        kind: Kind::Read,
                        dst: *dst,
                        args: [index.first().copied().unwrap_or(0); 3],
                        n_args: index.len(),
                        detail: Detail::Read {
                            table: *table,
                            index,
                            reader: *reader,
                        },
                    }
                }
            };
            instrs.push(instr);
        }
        let results: Vec<usize> = code.results.iter().map(&mut register).collect();
        Resolved {
            instrs,
            init,
            reg_elems,
            results,
        }
    }
}

impl RegisterCode {
    pub fn new(mut code: ScalarCode) -> RegisterCode {
        sink_new_carries(&mut code);
        let Resolved {
            mut instrs,
            init,
            reg_elems,
            mut results,
        } = Resolved::new(&code);
        let carried = carried_registers(&code);
        let early_outputs = early_outputs(&code);
        for (from, to) in carries_in_place(&code, &carried, &early_outputs) {
            let rename = |reg: &mut usize| {
                if *reg == from {
                    *reg = to;
                }
            };
            for instr in &mut instrs {
                rename(&mut instr.dst);
                instr.args.iter_mut().for_each(rename);
                if let Detail::Read { index, .. } = &mut instr.detail {
                    index.iter_mut().for_each(rename);
                }
            }
            results.iter_mut().for_each(rename);
        }
        let carried_instrs = instrs
            .iter()
            .filter(|instr| carried[instr.dst])
            .cloned()
            .collect();
        RegisterCode {
            code,
            instrs,
            init,
            reg_elems,
            results,
            early_outputs,
            carried,
            carried_instrs,
        }
    }

    /// A machine for runs of the code over `tables` (in standard layout, in the order of
    /// `code.tables`).
    pub fn machine<'t>(&self, tables: &'t [Tensor], strict: bool) -> Machine<'t> {
        Machine {
            regs: self.init.clone(),
            side: Side {
                tables: tables.iter().map(Table::new).collect(),
                strict,
                fault: None,
            },
        }
    }

    /// Runs the operations once on `machine`'s registers.
    #[inline]
    pub fn run(&self, regs: &mut [u64], side: &mut Side) {
        for instr in &self.instrs {
            (instr.exec)(instr, regs, side);
        }
    }

    /// Runs only the operations whose results are carried (the others' values are in
    /// `regs` already).
    #[inline]
    pub fn run_carried(&self, regs: &mut [u64], side: &mut Side) {
        for instr in &self.carried_instrs {
            (instr.exec)(instr, regs, side);
        }
    }

    /// The operations, all of them or only the carried ones.
    pub fn instrs(&self, carried_only: bool) -> &[Instr] {
        if carried_only {
            &self.carried_instrs
        } else {
            &self.instrs
        }
    }

    /// The element type of the code's register `reg` (one of `code.reg_elems`).
    pub fn elem(&self, reg: usize) -> Elem {
        self.code.reg_elems[reg]
    }
}

/// Which registers of `code` depend on a carry (see `RegisterCode::carried`).
fn carried_registers(code: &ScalarCode) -> Vec<bool> {
    let mut carried = vec![false; code.reg_elems.len()];
    for reg in &code.params[1..] {
        carried[*reg] = true;
    }
    let any_carried = |carried: &[bool], operands: &[Operand]| {
        operands
            .iter()
            .any(|operand| matches!(operand, Operand::Reg(reg) if carried[*reg]))
    };
    for op in &code.ops {
        carried[op.dst()] = any_carried(&carried, op.operands());
    }
    carried
}

/// Moves the operation computing a carry's new value after the last operation that reads
/// the carry's old value, when none of the operations it passes reads the new value: the
/// carry can then be computed in place (`carries_in_place`). In `scan(0.0, \i c. (c + xs[i],
/// c * 2.0))` the sum moves after the product. Reads are not moved (in strict mode the
/// first read out of range is the error), and nothing else changes order.
fn sink_new_carries(code: &mut ScalarCode) {
    let n_carries = code.params.len() - 1;
    for position in 0..n_carries {
        let carry = Operand::Reg(code.params[1 + position]);
        let Operand::Reg(new) = code.results[position] else {
            continue;
        };
        let Some(defined) = code.ops.iter().position(|op| op.dst() == new) else {
            continue;
        };
        if matches!(code.ops[defined], Op::Read { .. }) {
            continue;
        }
        let Some(last_reader) = code
            .ops
            .iter()
            .rposition(|op| op.operands().contains(&carry))
        else {
            continue;
        };
        let passes_a_reader = code.ops[defined + 1..=last_reader.max(defined)]
            .iter()
            .any(|op| op.operands().contains(&Operand::Reg(new)));
        if last_reader > defined && !passes_a_reader {
            let op = code.ops.remove(defined);
            code.ops.insert(last_reader, op);
        }
    }
}

/// The early outputs of a loop body (see `RegisterCode::early_outputs`).
fn early_outputs(code: &ScalarCode) -> Vec<usize> {
    let carries = &code.params[1..];
    (carries.len()..code.results.len())
        .filter(|position| {
            matches!(code.results[*position], Operand::Reg(reg) if carries.contains(&reg))
        })
        .collect()
}

/// Carries computed in place: pairs `(r, q)` where the operation defining the new value `r`
/// of a carry may write the carry's own register `q` instead, as nothing reads the old value
/// after it (no later operation, no other result but the early outputs). Only carried `r`: a free one is computed
/// a block ahead (`loop_blocks`). The loop then copies nothing for that
/// carry, and the value does not make a round trip through memory each step (the latency
/// of the carried chain is the loop's floor).
fn carries_in_place(code: &ScalarCode, carried: &[bool], early: &[usize]) -> Vec<(usize, usize)> {
    let carries = &code.params[1..];
    let carry_results = &code.results[..carries.len()];
    let mut pairs = Vec::new();
    for (position, (carry, result)) in carries.iter().zip(carry_results).enumerate() {
        let Operand::Reg(new) = *result else {
            continue;
        };
        let Some(defined) = code.ops.iter().position(|op| op.dst() == new) else {
            continue; // a param or an outer scalar
        };
        let reads_carry = |operand: &Operand| *operand == Operand::Reg(*carry);
        let read_later = code.ops[defined + 1..]
            .iter()
            .any(|op| op.operands().iter().any(reads_carry));
        let other_result_reads = code.results.iter().enumerate().any(|(other, result)| {
            other != position && !early.contains(&other) && reads_carry(result)
        });
        if carried[new] && !read_later && !other_result_reads {
            pairs.push((new, *carry));
        }
    }
    pairs
}

/// The typed function and detail of a primitive on operands of types `elems`.
fn resolve(prim: Prim, elems: [Elem; 3]) -> (Exec, Detail) {
    let generic = (generic as Exec, Detail::Generic { prim, elems });
    match prim.family() {
        Family::Arith(op) => {
            let exec = match elems[0] {
                Elem::F32 => arith_exec::<f32>(op),
                Elem::F64 => arith_exec::<f64>(op),
                Elem::I32 => arith_exec::<i32>(op),
                Elem::I64 => arith_exec::<i64>(op),
                Elem::U32 => arith_exec::<u32>(op),
                Elem::U64 => arith_exec::<u64>(op),
                Elem::Bool => return generic,
            };
            (exec, Detail::None)
        }
        Family::Math(op) => {
            let exec = match elems[0] {
                Elem::F32 => math_op::<f32>,
                Elem::F64 => math_op::<f64>,
                _ => return generic,
            };
            (exec, Detail::Math(op))
        }
        Family::Compare(op) => match op {
            CompareOp::Eq
            | CompareOp::Ne
            | CompareOp::Lt
            | CompareOp::Gt
            | CompareOp::Le
            | CompareOp::Ge => (
                with_elem_type!(elems[0], T => compare_op::<T>),
                Detail::Compare(op),
            ),
            CompareOp::And => (and, Detail::None),
            CompareOp::Or => (or, Detail::None),
            CompareOp::Not => (not, Detail::None),
            CompareOp::Select => (select, Detail::None),
            CompareOp::IsNan | CompareOp::IsInf => generic,
        },
        Family::Convert(_) | Family::Random(_) | Family::Text(_) => generic,
    }
}

#[inline(always)]
fn get<T: Bits>(regs: &[u64], reg: usize) -> T {
    T::from_reg(regs[reg])
}

fn copy(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    regs[instr.dst] = regs[instr.args[0]];
}

/// An arithmetic operator known at compile time (one zero-sized type per operator), so that
/// each typed function applies one operator with no dispatch.
trait FixedArith {
    const OP: ArithOp;
}

/// The function applying arithmetic operator `op` to registers of type `T`.
fn arith_exec<T: Bits + Arith>(op: ArithOp) -> Exec {
    macro_rules! fixed {
        ($($op:ident),*) => {
            match op {
                $(ArithOp::$op => {
                    struct Fixed;
                    impl FixedArith for Fixed {
                        const OP: ArithOp = ArithOp::$op;
                    }
                    arith_op::<T, Fixed>
                })*
            }
        };
    }
    fixed!(Add, Sub, Mul, Div, Neg, Abs, Min, Max, Mod, IDiv)
}

fn arith_op<T: Bits + Arith, O: FixedArith>(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    let [x, y, _] = instr.args;
    let res = arith::apply(O::OP, get::<T>(regs, x), get::<T>(regs, y));
    regs[instr.dst] = res.into_reg();
}

fn math_op<T: Bits + Float>(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    let Detail::Math(op) = instr.detail else {
        unreachable!("math_op is resolved for float functions")
    };
    let [x, y, _] = instr.args;
    let res = math::apply(op, get::<T>(regs, x), get::<T>(regs, y));
    regs[instr.dst] = res.into_reg();
}

fn compare_op<T: Bits>(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    let Detail::Compare(op) = instr.detail else {
        unreachable!("compare_op is resolved for comparisons")
    };
    let [x, y, _] = instr.args;
    let ordering: Option<Ordering> = get::<T>(regs, x).partial_cmp(&get::<T>(regs, y));
    regs[instr.dst] = u64::from(compare::ordered(op, ordering));
}

fn and(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    let [x, y, _] = instr.args;
    regs[instr.dst] = u64::from(get::<bool>(regs, x) && get::<bool>(regs, y));
}

fn or(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    let [x, y, _] = instr.args;
    regs[instr.dst] = u64::from(get::<bool>(regs, x) || get::<bool>(regs, y));
}

fn not(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    regs[instr.dst] = u64::from(!get::<bool>(regs, instr.args[0]));
}

/// `select c a b`: the bits of the chosen branch, whatever its type.
fn select(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    let [condition, a, b] = instr.args;
    let chosen = if get::<bool>(regs, condition) { a } else { b };
    regs[instr.dst] = regs[chosen];
}

fn generic(instr: &Instr, regs: &mut [u64], _: &mut Side) {
    let Detail::Generic { prim, elems } = instr.detail else {
        unreachable!("generic is resolved with its primitive")
    };
    let operands: [Scalar; 3] =
        std::array::from_fn(|k| Scalar::from_bits(elems[k], regs[instr.args[k]]));
    regs[instr.dst] = prim.eval(&operands[..instr.n_args]).bits();
}

/// `table[index…]`: zero out of range, and in strict mode the first such read is the fault.
fn read<T: Bits>(instr: &Instr, regs: &mut [u64], side: &mut Side) {
    let Detail::Read { table, index, .. } = &instr.detail else {
        unreachable!("read is resolved with its table")
    };
    let table = &side.tables[*table];
    match table.offset(index.iter().map(|reg| regs[*reg] as i64)) {
        Some(offset) => regs[instr.dst] = T::slice(table.values)[offset].into_reg(),
        None => out_of_range(instr, regs, side),
    }
}

/// `table[k]` of a table of rank one.
fn read_vector<T: Bits>(instr: &Instr, regs: &mut [u64], side: &mut Side) {
    let Detail::Read { table, .. } = instr.detail else {
        unreachable!("read_vector is resolved with its table")
    };
    let values = T::slice(side.tables[table].values);
    // A negative index is a huge `u64`: out of range too.
    match usize::try_from(regs[instr.args[0]])
        .ok()
        .and_then(|k| values.get(k))
    {
        Some(value) => regs[instr.dst] = value.into_reg(),
        None => out_of_range(instr, regs, side),
    }
}

#[cold]
fn out_of_range(instr: &Instr, regs: &mut [u64], side: &mut Side) {
    regs[instr.dst] = 0; // the bits of zero (`False`) in every element type
    let Detail::Read {
        table,
        index,
        reader,
    } = &instr.detail
    else {
        unreachable!("out_of_range is reached from a read")
    };
    if side.strict && side.fault.is_none() {
        side.fault = Some(InterpError::OutOfRange {
            var: *reader,
            index: index.iter().map(|reg| regs[*reg] as i64).collect(),
            shape: side.tables[*table].shape.to_vec(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Bits;
    use crate::core::ir::Scalar;

    /// The typed register encoding (`Bits`) and `Scalar`'s (`bits`, `from_bits`, used by the
    /// generic operations and for a loop's results) must be one encoding.
    #[test]
    fn register_bits_are_scalar_bits() {
        fn agree<T: Bits>(values: &[T]) {
            for value in values {
                let scalar = value.into_scalar();
                assert_eq!(value.into_reg(), scalar.bits(), "{scalar:?}");
                assert_eq!(
                    T::from_reg(scalar.bits()).into_scalar().bits(),
                    scalar.bits()
                );
                assert_eq!(
                    Scalar::from_bits(T::ELEM, value.into_reg()).bits(),
                    scalar.bits()
                );
            }
        }
        agree(&[
            0.0f32,
            -0.0,
            1.5,
            f32::NAN,
            -f32::INFINITY,
            f32::from_bits(0x7fc0_1234),
        ]);
        agree(&[0.0f64, -0.0, -2.25, f64::NAN, f64::MIN_POSITIVE]);
        agree(&[0i32, -1, i32::MIN, i32::MAX]);
        agree(&[0i64, -1, i64::MIN, i64::MAX]);
        agree(&[0u32, u32::MAX]);
        agree(&[0u64, u64::MAX]);
        agree(&[false, true]);
    }
}

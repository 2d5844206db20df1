//! Loops whose bodies compute only scalars, run on scalars instead of arrays.
//!
//! A `fold` or `scan` runs its body once per iteration. Run as whole-array operations (the
//! general path of `exec`), every statement of a body such as `max c xs[i]` allocates a
//! rank-0 array, looks its operands up in the environment and releases them: about a
//! microsecond per statement, which dominates loops of a million steps (`maximum`, and the
//! checkpointing scan and backward scan of its gradient). A body whose parameters, binders and
//! results are all scalars and whose statements are copies, primitives and scalar reads of
//! tables from outside the body is compiled once (`core::scalar_code`) into a list of
//! operations on scalar registers, and each iteration here runs those operations directly.
//!
//! The primitives are evaluated by `Prim::eval`, the rule the reference interpreter uses, so
//! results are bit for bit those of the interpreter. A read out of range gives zero, or in
//! strict mode the same `InterpError::OutOfRange` the general path raises. The interrupt
//! flag is checked every `INTERRUPT_PERIOD` iterations.
//!
//! Does not handle yet: bodies with any non-scalar value, nested blocks (`cond`, inner loops,
//! gathers) or reads of tables the body computes; those run on the general path.

use crate::core::interp::InterpError;
use crate::core::ir::{Elem, Scalar, VarId};
use crate::core::scalar_code::{self, Op, ScalarCode};
use crate::core::value::{Array, ArrayData};

use super::tensor::{with_tensor, Element, Tensor};

/// Iterations between two checks of the interrupt flag.
pub(super) const INTERRUPT_PERIOD: usize = 1024;

/// The values a compiled loop starts from and how it reports.
pub(super) struct LoopRun<'a> {
    pub size: usize,
    /// The initial carries.
    pub init: Vec<Scalar>,
    /// The values of the body's `outer_scalars`.
    pub outer_scalars: Vec<Scalar>,
    pub tables: Vec<Tensor>,
    /// The element types of the stacked outputs of a scan (empty for a fold).
    pub ys_elems: Vec<Elem>,
    pub strict: bool,
    /// Called every `INTERRUPT_PERIOD` iterations; an error stops the loop.
    pub check_interrupt: &'a dyn Fn() -> Result<(), InterpError>,
}

/// Runs a compiled loop body (params: the iteration index, then the carries) `size` times:
/// the final carries, then each output of a scan stacked along a new outermost axis.
pub(super) fn run(body: &ScalarCode, run: LoopRun) -> Result<Vec<Tensor>, InterpError> {
    let mut regs = body.scalar_regs();
    for ((_, reg), value) in body.outer_scalars.iter().zip(&run.outer_scalars) {
        regs[*reg] = *value;
    }
    let n_carries = run.init.len();
    let mut carries = run.init;
    let mut ys: Vec<ArrayData> = run
        .ys_elems
        .iter()
        .map(|elem| ArrayData::with_capacity(*elem, run.size))
        .collect();
    let mut index_buf: Vec<usize> = Vec::new();
    let mut read = |op: &Op, regs: &[Scalar]| -> Result<Scalar, InterpError> {
        let Op::Read {
            reader,
            table,
            index,
            elem,
            ..
        } = op
        else {
            unreachable!("ScalarCode::eval reads only for Op::Read")
        };
        read_table(&run.tables[*table], index, regs, &mut index_buf)
            .map(Ok)
            .unwrap_or_else(|| {
                out_of_range(*reader, *elem, index, regs, &run.tables[*table], run.strict)
            })
    };
    for i in 0..run.size {
        if i % INTERRUPT_PERIOD == 0 {
            (run.check_interrupt)()?;
        }
        regs[body.params[0]] = Scalar::I64(i as i64);
        for (reg, carry) in body.params[1..].iter().zip(&carries) {
            regs[*reg] = *carry;
        }
        body.eval(&mut regs, &mut read)?;
        for (position, result) in body.results.iter().enumerate() {
            let result = scalar_code::value(&regs, result);
            if position < n_carries {
                carries[position] = result;
            } else {
                ys[position - n_carries].push(result);
            }
        }
    }
    let mut res: Vec<Tensor> = carries.into_iter().map(Tensor::scalar).collect();
    res.extend(
        ys.into_iter()
            .map(|data| Tensor::from(Array::new(vec![run.size], data))),
    );
    Ok(res)
}

/// The element of `table` at `index`, or `None` if the index is out of range.
fn read_table(
    table: &Tensor,
    index: &[scalar_code::Operand],
    regs: &[Scalar],
    index_buf: &mut Vec<usize>,
) -> Option<Scalar> {
    let shape = table.shape();
    index_buf.clear();
    for (operand, dim) in index.iter().zip(shape) {
        match scalar_code::value(regs, operand) {
            Scalar::I64(k) if usize::try_from(k).is_ok_and(|k| k < *dim) => {
                index_buf.push(k as usize)
            }
            _ => return None,
        }
    }
    Some(with_tensor!(table, a => a[&index_buf[..]].into_scalar()))
}

/// A read out of range: zero, or in strict mode the general path's error.
fn out_of_range(
    reader: VarId,
    elem: Elem,
    index: &[scalar_code::Operand],
    regs: &[Scalar],
    table: &Tensor,
    strict: bool,
) -> Result<Scalar, InterpError> {
    if !strict {
        return Ok(Scalar::zero(elem));
    }
    Err(InterpError::OutOfRange {
        var: reader,
        index: index
            .iter()
            .map(|operand| match scalar_code::value(regs, operand) {
                Scalar::I64(k) => k,
                other => {
                    panic!(
                        "exec: index {other:?} is not an i64 scalar (the verifier rules this out)"
                    )
                }
            })
            .collect(),
        shape: table.shape().to_vec(),
    })
}

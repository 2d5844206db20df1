//! Loops whose bodies compute only scalars, run on scalars instead of arrays.
//!
//! A `fold` or `scan` runs its body once per iteration. Run as whole-array operations (the
//! general path of `exec`), every statement of a body such as `max c xs[i]` allocates a
//! rank-0 array, looks its operands up in the environment and releases them: about a
//! microsecond per statement, which dominates loops of a million steps (`maximum`, and the
//! checkpointing scan and backward scan of its gradient). A body whose parameters, binders and
//! results are all scalars and whose statements are copies, primitives and scalar reads of
//! tables from outside the body is compiled here once into a list of operations on scalar
//! registers, and each iteration runs those operations directly.
//!
//! The primitives are evaluated by `Prim::eval`, the rule the reference interpreter uses, so
//! results are bit for bit those of the interpreter. A read out of range gives zero, or in
//! strict mode the same `InterpError::OutOfRange` the general path raises. The interrupt
//! flag is checked every `INTERRUPT_PERIOD` iterations.
//!
//! Does not handle yet: bodies with any non-scalar value, nested blocks (`cond`, inner loops,
//! gathers) or reads of tables the body computes; those run on the general path.

use std::collections::HashMap;

use crate::core::interp::InterpError;
use crate::core::ir::{Atom, BlockId, Elem, Expr, Program, Scalar, VarId};
use crate::core::value::{Array, ArrayData};
use crate::prim::Prim;

use super::tensor::{with_tensor, Element, Tensor};

/// Iterations between two checks of the interrupt flag.
pub(super) const INTERRUPT_PERIOD: usize = 1024;

/// An operand of a scalar operation.
#[derive(Clone, Copy, Debug)]
enum Operand {
    Reg(usize),
    Const(Scalar),
}

/// One statement of the body, on registers.
#[derive(Clone, Debug)]
enum Op {
    Copy {
        dst: usize,
        src: Operand,
    },
    Prim {
        dst: usize,
        prim: Prim,
        args: Vec<Operand>,
    },
    /// `index table [index…]` reading one element of an outer table (`tables[table]`);
    /// `reader` is the statement's binder, named by strict-mode errors.
    Read {
        dst: usize,
        reader: VarId,
        table: usize,
        index: Vec<Operand>,
        elem: Elem,
    },
}

/// A loop body compiled to operations on scalar registers.
#[derive(Clone, Debug)]
pub(super) struct ScalarBody {
    n_regs: usize,
    /// The registers of the body's parameters: the iteration index, then the carries.
    params: Vec<usize>,
    /// Scalar variables from outside the body, read once before the loop, and their registers.
    outer_scalars: Vec<(VarId, usize)>,
    /// Tables from outside the body that it reads.
    tables: Vec<VarId>,
    ops: Vec<Op>,
    results: Vec<Operand>,
}

impl ScalarBody {
    /// Compiles `block` if every value in it is a scalar and every statement a copy, a
    /// primitive, or a scalar read of a table defined outside it.
    pub(super) fn compile(program: &Program, block: BlockId) -> Option<ScalarBody> {
        let block = &program.blocks[block];
        let is_scalar = |var: &VarId| program.var_ty(*var).shape.is_empty();
        if !block.params.iter().all(is_scalar) {
            return None;
        }
        let mut compiler = Compiler {
            program,
            regs: HashMap::new(),
            outer_scalars: Vec::new(),
            tables: Vec::new(),
        };
        let params = block
            .params
            .iter()
            .map(|param| compiler.define(*param))
            .collect();
        let mut ops = Vec::new();
        for stmt in &block.stmts {
            let [binder] = stmt.binders[..] else {
                return None;
            };
            if !is_scalar(&binder) {
                return None;
            }
            let op = match &stmt.expr {
                Expr::Atom(atom) => {
                    let src = compiler.operand(atom)?;
                    Op::Copy {
                        dst: compiler.define(binder),
                        src,
                    }
                }
                Expr::Prim(prim, args) => {
                    let args = args
                        .iter()
                        .map(|atom| compiler.operand(atom))
                        .collect::<Option<Vec<_>>>()?;
                    Op::Prim {
                        dst: compiler.define(binder),
                        prim: *prim,
                        args,
                    }
                }
                Expr::Index {
                    array: Atom::Var(table),
                    index,
                } if !compiler.regs.contains_key(table) => {
                    let index = index
                        .iter()
                        .map(|atom| compiler.operand(atom))
                        .collect::<Option<Vec<_>>>()?;
                    let table = compiler.table(*table);
                    Op::Read {
                        dst: compiler.define(binder),
                        reader: binder,
                        table,
                        index,
                        elem: program.var_ty(binder).elem,
                    }
                }
                _ => return None,
            };
            ops.push(op);
        }
        let results = block
            .results
            .iter()
            .map(|atom| compiler.operand(atom))
            .collect::<Option<Vec<_>>>()?;
        Some(ScalarBody {
            n_regs: compiler.regs.len(),
            params,
            outer_scalars: compiler.outer_scalars,
            tables: compiler.tables,
            ops,
            results,
        })
    }

    /// The number of statements one iteration runs.
    pub(super) fn n_stmts(&self) -> usize {
        self.ops.len()
    }

    /// The outer variables the loop reads (scalars, then tables), to be looked up before it
    /// runs.
    pub(super) fn outer_vars(&self) -> (Vec<VarId>, &[VarId]) {
        let scalars = self.outer_scalars.iter().map(|(var, _)| *var).collect();
        (scalars, &self.tables)
    }
}

/// The state of compiling one body: a register per variable (body variables and outer
/// scalars alike).
struct Compiler<'a> {
    program: &'a Program,
    regs: HashMap<VarId, usize>,
    outer_scalars: Vec<(VarId, usize)>,
    tables: Vec<VarId>,
}

impl Compiler<'_> {
    fn define(&mut self, var: VarId) -> usize {
        let reg = self.regs.len();
        self.regs.insert(var, reg);
        reg
    }

    /// An operand; a variable not defined in the body yet is an outer scalar (variables are
    /// defined before they are used), or, if it is not a scalar, the body cannot be compiled.
    fn operand(&mut self, atom: &Atom) -> Option<Operand> {
        match atom {
            Atom::Lit(scalar) => Some(Operand::Const(*scalar)),
            Atom::Var(var) => {
                if let Some(reg) = self.regs.get(var) {
                    return Some(Operand::Reg(*reg));
                }
                if !self.program.var_ty(*var).shape.is_empty() {
                    return None;
                }
                let reg = self.define(*var);
                self.outer_scalars.push((*var, reg));
                Some(Operand::Reg(reg))
            }
        }
    }

    fn table(&mut self, var: VarId) -> usize {
        match self.tables.iter().position(|table| *table == var) {
            Some(position) => position,
            None => {
                self.tables.push(var);
                self.tables.len() - 1
            }
        }
    }
}

/// The values a compiled loop starts from and how it reports.
pub(super) struct LoopRun<'a> {
    pub size: usize,
    /// The initial carries.
    pub init: Vec<Scalar>,
    /// The values of `ScalarBody::outer_vars`.
    pub outer_scalars: Vec<Scalar>,
    pub tables: Vec<Tensor>,
    /// The element types of the stacked outputs of a scan (empty for a fold).
    pub ys_elems: Vec<Elem>,
    pub strict: bool,
    /// Called every `INTERRUPT_PERIOD` iterations; an error stops the loop.
    pub check_interrupt: &'a dyn Fn() -> Result<(), InterpError>,
}

/// Runs a compiled loop body `size` times: the final carries, then each output of a scan
/// stacked along a new outermost axis.
pub(super) fn run(body: &ScalarBody, run: LoopRun) -> Result<Vec<Tensor>, InterpError> {
    let mut regs = vec![Scalar::I64(0); body.n_regs];
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
    let mut operands: Vec<Scalar> = Vec::new();
    let value = |regs: &[Scalar], operand: &Operand| match operand {
        Operand::Reg(reg) => regs[*reg],
        Operand::Const(scalar) => *scalar,
    };
    for i in 0..run.size {
        if i % INTERRUPT_PERIOD == 0 {
            (run.check_interrupt)()?;
        }
        regs[body.params[0]] = Scalar::I64(i as i64);
        for (reg, carry) in body.params[1..].iter().zip(&carries) {
            regs[*reg] = *carry;
        }
        for op in &body.ops {
            match op {
                Op::Copy { dst, src } => regs[*dst] = value(&regs, src),
                Op::Prim { dst, prim, args } => {
                    operands.clear();
                    operands.extend(args.iter().map(|arg| value(&regs, arg)));
                    regs[*dst] = prim.eval(&operands);
                }
                Op::Read {
                    dst,
                    reader,
                    table,
                    index,
                    elem,
                } => {
                    let table = &run.tables[*table];
                    let shape = table.shape();
                    index_buf.clear();
                    let mut in_range = true;
                    for (operand, dim) in index.iter().zip(shape) {
                        match value(&regs, operand) {
                            Scalar::I64(k) if usize::try_from(k).is_ok_and(|k| k < *dim) => {
                                index_buf.push(k as usize)
                            }
                            _ => in_range = false,
                        }
                    }
                    regs[*dst] = if in_range {
                        with_tensor!(table, a => a[&index_buf[..]].into_scalar())
                    } else if run.strict {
                        return Err(InterpError::OutOfRange {
                            var: *reader,
                            index: index
                                .iter()
                                .map(|operand| match value(&regs, operand) {
                                    Scalar::I64(k) => k,
                                    other => panic!(
                                        "exec: index {other:?} is not an i64 scalar (the verifier rules this out)"
                                    ),
                                })
                                .collect(),
                            shape: shape.to_vec(),
                        });
                    } else {
                        Scalar::zero(*elem)
                    };
                }
            }
        }
        for (position, result) in body.results.iter().enumerate() {
            let result = value(&regs, result);
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

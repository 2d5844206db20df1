//! Straight-line scalar code: a block whose values are all scalars, compiled once into
//! operations on numbered registers.
//!
//! One compiler serves every place that runs such a block many times: the bodies of scalar
//! `fold`/`scan` loops in the engine (`exec::scalar_loop`), and the operators of monoid
//! statements, run on `Scalar`s by the reference evaluation (`ops::monoid::eval`) and on typed
//! lanes by the engine (`exec::monoid`). Registers are numbered in definition order: the
//! block's params first (so an operator's left operands are registers `0..k` and its right
//! ones `k..2k`), then outer scalars and binders as they are met.
//!
//! `eval` runs the code on `Scalar`s through `Prim::eval`, the rule the reference interpreter
//! uses, so its results are bit for bit the interpreter's.

use std::collections::HashMap;

use super::{operation, Element, Move};
use crate::core::ir::{Atom, BlockId, Elem, Program, Scalar, VarId};
use crate::prim::Prim;

/// An operand of a scalar operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    Reg(usize),
    Const(Scalar),
}

/// One statement of the code, on registers.
#[derive(Clone, Debug)]
pub enum Op {
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

impl Op {
    /// The register the operation writes.
    pub fn dst(&self) -> usize {
        match self {
            Op::Copy { dst, .. } | Op::Prim { dst, .. } | Op::Read { dst, .. } => *dst,
        }
    }

    /// The operands the operation reads (a read's index).
    pub fn operands(&self) -> &[Operand] {
        match self {
            Op::Copy { src, .. } => std::slice::from_ref(src),
            Op::Prim { args, .. } => args,
            Op::Read { index, .. } => index,
        }
    }
}

/// A scalar block compiled to operations on registers.
#[derive(Clone, Debug)]
pub struct ScalarCode {
    /// The element type of each register.
    pub reg_elems: Vec<Elem>,
    /// The registers of the block's params, in order (`0..params.len()`).
    pub params: Vec<usize>,
    /// Scalar variables from outside the block, to be read before it runs, and their
    /// registers.
    pub outer_scalars: Vec<(VarId, usize)>,
    /// Tables from outside the block that it reads.
    pub tables: Vec<VarId>,
    pub ops: Vec<Op>,
    pub results: Vec<Operand>,
}

impl ScalarCode {
    /// Compiles `block` if every value in it is a scalar and every statement a copy, a
    /// primitive, or a scalar read of a table defined outside it.
    pub fn compile(program: &Program, block: BlockId) -> Option<ScalarCode> {
        let block = &program.blocks[block];
        let is_scalar = |var: &VarId| program.var_ty(*var).shape.is_empty();
        if !block.params.iter().all(is_scalar) {
            return None;
        }
        let mut compiler = Compiler {
            program,
            regs: HashMap::new(),
            reg_elems: Vec::new(),
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
            // The element rule of a scalar operation says what it computes.
            let op = match operation(&stmt.expr).element()? {
                Element::Moved {
                    array,
                    moved: Move::Same,
                } => {
                    let src = compiler.operand(&array)?;
                    Op::Copy {
                        dst: compiler.define(binder),
                        src,
                    }
                }
                Element::Apply(prim, args) => {
                    let args = args
                        .iter()
                        .map(|atom| compiler.operand(atom))
                        .collect::<Option<Vec<_>>>()?;
                    Op::Prim {
                        dst: compiler.define(binder),
                        prim,
                        args,
                    }
                }
                Element::Indexed {
                    array: Atom::Var(table),
                    index,
                } if !compiler.regs.contains_key(&table) => {
                    let index = index
                        .iter()
                        .map(|atom| compiler.operand(atom))
                        .collect::<Option<Vec<_>>>()?;
                    let table = compiler.table(table);
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
        Some(ScalarCode {
            reg_elems: compiler.reg_elems,
            params,
            outer_scalars: compiler.outer_scalars,
            tables: compiler.tables,
            ops,
            results,
        })
    }

    /// Compiles a monoid operator: closed straight-line scalar code (the verifier checks it,
    /// `ops::monoid::check_op_block`).
    pub fn operator(program: &Program, op: BlockId) -> ScalarCode {
        let code = ScalarCode::compile(program, op)
            .expect("a monoid operator is straight-line scalar code (the verifier checks it)");
        assert!(
            code.outer_scalars.is_empty() && code.tables.is_empty(),
            "a monoid operator is closed (the verifier checks it)"
        );
        code
    }

    pub fn n_regs(&self) -> usize {
        self.reg_elems.len()
    }

    /// Runs the code on registers `regs` (params and outer scalars set), reading tables with
    /// `read(op, regs)` (called only for `Op::Read`).
    pub fn eval<E>(
        &self,
        regs: &mut [Scalar],
        mut read: impl FnMut(&Op, &[Scalar]) -> Result<Scalar, E>,
    ) -> Result<(), E> {
        for op in &self.ops {
            match op {
                Op::Copy { dst, src } => regs[*dst] = value(regs, src),
                Op::Prim { dst, prim, args } => {
                    let mut operands = [Scalar::Bool(false); 3];
                    let n = args.len();
                    if n <= operands.len() {
                        for (slot, arg) in operands.iter_mut().zip(args) {
                            *slot = value(regs, arg);
                        }
                        regs[*dst] = prim.eval(&operands[..n]);
                    } else {
                        let operands: Vec<Scalar> =
                            args.iter().map(|arg| value(regs, arg)).collect();
                        regs[*dst] = prim.eval(&operands);
                    }
                }
                Op::Read { dst, .. } => regs[*dst] = read(op, regs)?,
            }
        }
        Ok(())
    }

    /// Registers for one run: each of its register's type, zero.
    pub fn scalar_regs(&self) -> Vec<Scalar> {
        self.reg_elems
            .iter()
            .map(|elem| Scalar::zero(*elem))
            .collect()
    }
}

/// The value of an operand.
pub fn value(regs: &[Scalar], operand: &Operand) -> Scalar {
    match operand {
        Operand::Reg(reg) => regs[*reg],
        Operand::Const(scalar) => *scalar,
    }
}

/// The state of compiling one block: a register per variable (block variables and outer
/// scalars alike).
struct Compiler<'a> {
    program: &'a Program,
    regs: HashMap<VarId, usize>,
    reg_elems: Vec<Elem>,
    outer_scalars: Vec<(VarId, usize)>,
    tables: Vec<VarId>,
}

impl Compiler<'_> {
    fn define(&mut self, var: VarId) -> usize {
        let reg = self.reg_elems.len();
        self.regs.insert(var, reg);
        self.reg_elems.push(self.program.var_ty(var).elem);
        reg
    }

    /// An operand; a variable not defined in the block yet is an outer scalar (variables are
    /// defined before they are used), or, if it is not a scalar, the block cannot be compiled.
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

//! The bulk IR as a StableHLO module: one public `@main` whose parameters are the program's
//! inputs (those marked [`Input::Param`]; the others are embedded as constants) and whose
//! results are the main block's results, a tuple being several results.
//!
//! Assumes verified IR after the BOT (no `build1`, no `jvp`/`vjp`): every variable is an array
//! with a static shape. Each statement is written by its form's export rule
//! (`Operation::export` in the form's home in `ops`: `replicate` → `broadcast_in_dim`, `cond`
//! → `if`, `fold` → `while`, …) through [`Cx`], which implements the rules' vocabulary
//! (`ops::hlo::StableHlo`): the values bound so far, blocks, regions, and the grid of an index
//! function. What is decided here, for the program as a whole:
//!
//! - index functions (of `index`, `gather`, `scatter`) are evaluated over the whole grid of
//!   their parameters (each parameter an `iota`, each statement of the function one bulk
//!   operation: a small `vmap`), giving index tensors for `gather`/`scatter`; only the forms
//!   exported point by point (`Operation::scalar_op`: elementwise operations and
//!   `index`es of arrays defined outside) may appear in them;
//! - a product summed over an axis (through `replicate`s and `tr`s) → `dot_general`
//!   (`contract`), in place of the `sumOuter` and of the statements only it uses.
//!
//! Anything else in an index function, `build1`, `while_reverse` and derivatives are an
//! [`ExportError`] naming the operation.

use std::collections::{HashMap, HashSet};

use super::mlir::{tensor_type, tensor_types, Writer};
use super::{contract, ExportError};
use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Program, Scalar, Stmt, VarId};
use crate::core::print::expr_name;
use crate::core::value::Array;
use crate::ops;
use crate::ops::hlo::{i64_array, list, Exported, Region, StableHlo, Val};

/// How `@main` gets an input of the program.
#[derive(Clone, Debug)]
pub enum Input {
    /// A parameter of `@main` (in the order of the program's inputs).
    Param,
    /// A known value, embedded as a constant.
    Constant(Array),
}

/// The module for `program`; `inputs[k]` says how its `k`-th input is bound. The program is
/// verified first (the mapping relies on the verifier's shape rules), so ill-formed IR is an
/// error too, never a panic.
pub fn module(program: &Program, inputs: &[Input]) -> Result<String, ExportError> {
    if let Err(errors) = crate::ops::verify::verify(program) {
        let first = errors
            .first()
            .map_or_else(String::new, |error| error.to_string());
        return Err(ExportError::new(
            "program",
            format!(
                "the IR is ill-formed ({} errors; first: {first})",
                errors.len()
            ),
        ));
    }
    if inputs.len() != program.inputs.len() {
        return Err(ExportError::new(
            "program",
            format!(
                "{} inputs described for a program with {}",
                inputs.len(),
                program.inputs.len()
            ),
        ));
    }
    let mut cx = Cx {
        program,
        writer: Writer::new(2),
        vals: HashMap::new(),
        grid: Vec::new(),
        lifted: HashSet::new(),
        plan: contract::plan(program),
    };
    let mut params = Vec::new();
    for (&var, input) in program.inputs.iter().zip(inputs) {
        let val = match input {
            Input::Param => {
                let val = Val {
                    name: format!("%arg{}", params.len()),
                    ty: program.var_ty(var).clone(),
                };
                params.push(val.clone());
                val
            }
            Input::Constant(array) => {
                if &array.ty() != program.var_ty(var) {
                    return Err(ExportError::new(
                        "program",
                        format!(
                            "a constant of type {} for an input of type {}",
                            tensor_type(&array.ty()),
                            tensor_type(program.var_ty(var))
                        ),
                    ));
                }
                cx.writer.constant(array)
            }
        };
        cx.vals.insert(var, val);
    }
    let results = cx.block(program.main, &[])?;
    cx.writer.ret("func.return", &results);
    let body = cx.writer.finish();
    let header: Vec<String> = params
        .iter()
        .map(|val| format!("{}: {}", val.name, tensor_type(&val.ty)))
        .collect();
    let result_tys: Vec<ArrTy> = results.iter().map(|val| val.ty.clone()).collect();
    Ok(format!(
        "module @dx_export {{\n  func.func public @main({}) -> ({}) {{\n{body}  }}\n}}\n",
        header.join(", "),
        tensor_types(&result_tys)
    ))
}

/// The state of the mapping.
struct Cx<'a> {
    program: &'a Program,
    writer: Writer,
    vals: HashMap<VarId, Val>,
    /// Inside an index function: the shape of the grid of its parameters; every variable the
    /// function defines (`lifted`) has this shape prepended.
    grid: Vec<usize>,
    lifted: HashSet<VarId>,
    /// The `sumOuter`s exported as `dot_general`, and the statements only they use.
    plan: contract::Plan,
}

impl Cx<'_> {
    /// The values `stmt` binds: a planned contraction, or its form's export rule.
    fn stmt(&mut self, stmt: &Stmt) -> Exported {
        let operation = ops::operation(&stmt.expr);
        if !self.grid.is_empty() && !operation.scalar_op() {
            return Err(ExportError::new(
                expr_name(&stmt.expr),
                "only elementwise operations and `index` are exported inside an index function",
            ));
        }
        if let [binder] = stmt.binders.as_slice() {
            if let Some(contraction) = self.plan.contractions.get(binder).cloned() {
                let ty = self.program.var_ty(*binder);
                return Ok(vec![self.dot_general(&contraction, ty)?]);
            }
        }
        operation.export(self, stmt)
    }

    /// A contraction: `dot_general`, then a `transpose` into the sum's axis order.
    fn dot_general(
        &mut self,
        contraction: &contract::Contraction,
        ty: &ArrTy,
    ) -> Result<Val, ExportError> {
        let lhs = self.atom(&Atom::Var(contraction.lhs))?;
        let rhs = self.atom(&Atom::Var(contraction.rhs))?;
        let fields: Vec<String> = [
            ("lhs_batching_dimensions", &contraction.lhs_batching),
            ("rhs_batching_dimensions", &contraction.rhs_batching),
            ("lhs_contracting_dimensions", &contraction.lhs_contracting),
            ("rhs_contracting_dimensions", &contraction.rhs_contracting),
        ]
        .iter()
        .filter(|(_, axes)| !axes.is_empty())
        .map(|(name, axes)| format!("{name} = {}", list(axes)))
        .collect();
        let attrs = format!(
            "{{dot_dimension_numbers = #stablehlo.dot<{}>}}",
            fields.join(", ")
        );
        let dot_ty = ArrTy::new(contraction.dot_shape.clone(), ty.elem);
        let dot = self.op("stablehlo.dot_general", &[&lhs, &rhs], &attrs, dot_ty);
        if contraction
            .perm
            .iter()
            .enumerate()
            .all(|(axis, &from)| axis == from)
        {
            return Ok(dot);
        }
        let attrs = format!("{{permutation = {}}}", i64_array(&contraction.perm));
        Ok(self.op("stablehlo.transpose", &[&dot], &attrs, ty.clone()))
    }
}

impl StableHlo for Cx<'_> {
    fn program(&self) -> &Program {
        self.program
    }

    fn atom(&mut self, atom: &Atom) -> Result<Val, ExportError> {
        let val = match atom {
            Atom::Lit(scalar) => self.writer.splat(*scalar, &[]),
            Atom::Var(var) => match self.vals.get(var) {
                Some(val) => val.clone(),
                None => {
                    return Err(ExportError::new(
                        format!("%{}", var.0),
                        "used before it is defined (the IR is not verified)",
                    ))
                }
            },
        };
        let lifted = matches!(atom, Atom::Var(var) if self.lifted.contains(var));
        if self.grid.is_empty() || lifted {
            return Ok(val);
        }
        let grid = self.grid.clone();
        Ok(self.broadcast_leading(&val, &grid))
    }

    fn bound(&self, var: VarId) -> Option<Val> {
        self.vals.get(&var).cloned()
    }

    fn computed_in_grid(&self, var: VarId) -> bool {
        self.lifted.contains(&var)
    }

    fn grid(&self) -> &[usize] {
        &self.grid
    }

    fn block(&mut self, block: BlockId, params: &[Val]) -> Exported {
        let program = self.program;
        let block = &program.blocks[block];
        for (&param, val) in block.params.iter().zip(params) {
            self.vals.insert(param, val.clone());
        }
        for stmt in &block.stmts {
            if let [binder] = stmt.binders.as_slice() {
                if self.plan.skipped.contains(binder) {
                    continue;
                }
            }
            let vals = self.stmt(stmt)?;
            if vals.len() != stmt.binders.len() {
                return Err(ExportError::new(
                    expr_name(&stmt.expr),
                    format!("{} values for {} binders", vals.len(), stmt.binders.len()),
                ));
            }
            for (&binder, val) in stmt.binders.iter().zip(vals) {
                if !self.grid.is_empty() {
                    self.lifted.insert(binder);
                }
                self.vals.insert(binder, val);
            }
        }
        block.results.iter().map(|atom| self.atom(atom)).collect()
    }

    fn index_function(&mut self, body: BlockId, grid: &[usize]) -> Exported {
        let saved_grid = std::mem::replace(&mut self.grid, grid.to_vec());
        let saved_lifted = std::mem::take(&mut self.lifted);
        let params = &self.program.blocks[body].params;
        let iotas: Vec<Val> = (0..params.len())
            .map(|axis| {
                self.writer.op(
                    "stablehlo.iota",
                    &[],
                    &format!("{{iota_dimension = {axis} : i64}}"),
                    ArrTy::new(grid.to_vec(), Elem::I64),
                )
            })
            .collect();
        self.lifted.extend(params.iter().copied());
        let res = self.block(body, &iotas);
        self.grid = saved_grid;
        self.lifted = saved_lifted;
        res
    }

    fn region(
        &mut self,
        params: &[ArrTy],
        body: &mut dyn FnMut(&mut dyn StableHlo, Vec<Val>) -> Exported,
    ) -> Result<Region, ExportError> {
        // The writer is moved out while the region is written, so `body` can use `self`.
        let mut writer = std::mem::take(&mut self.writer);
        let res = writer.region(params, |writer, args| {
            std::mem::swap(writer, &mut self.writer);
            let res = body(self, args);
            std::mem::swap(writer, &mut self.writer);
            res.map(|vals| (vals, ()))
        });
        self.writer = writer;
        res.map(|(region, ())| region)
    }

    fn op_with_regions(
        &mut self,
        name: &str,
        operands: &[&Val],
        attrs: &str,
        regions: Vec<Region>,
        results: Vec<ArrTy>,
    ) -> Vec<Val> {
        self.writer
            .op_full(name, operands, attrs, &regions, results)
    }

    fn splat(&mut self, scalar: Scalar, shape: &[usize]) -> Val {
        self.writer.splat(scalar, shape)
    }
}

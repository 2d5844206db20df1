//! The bulk IR as a StableHLO module: one public `@main` whose parameters are the program's
//! inputs (those marked [`Input::Param`]; the others are embedded as constants) and whose
//! results are the main block's results, a tuple being several results.
//!
//! Assumes verified IR after the BOT (no `build1`, no `jvp`/`vjp`): every variable is an array
//! with a static shape. Each statement maps to a few operations:
//!
//! - elementwise `op`s: `prims` (with dx's total semantics);
//! - `replicate` → `broadcast_in_dim`, `tr` → `transpose`, `reshape`, `iota`, a literal table
//!   → `concatenate`, `sumOuter` → `reduce` with an `add` body;
//! - `index`, `gather` and `scatter`: the index functions are evaluated over the whole grid of
//!   their parameters (each parameter an `iota`, each statement of the function one bulk
//!   operation: a small `vmap`), giving index tensors for `gather`/`scatter`. XLA clamps
//!   out-of-range starts, so reads out of range are masked to zero and writes out of range
//!   add zero (dx's total semantics, `core::ir`);
//! - `cond` → `if`; `fold` and `scan` → `while` over a counter (a scan's outputs are written
//!   with `dynamic_update_slice`); a dx `while` → `while` carrying its continue flag, true at
//!   first (a do-while); `while_reverse` (reverse mode through a while) is an error;
//! - a product summed over an axis (through `replicate`s and `tr`s) → `dot_general`
//!   (`contract`).
//!
//! Index functions may hold elementwise operations and `index`es of arrays defined outside
//! them; anything else there, `build1` and derivatives are an [`ExportError`] naming the
//! operation. The monoid operations (`reduce`, `assoc_scan`, `assoc_scan_right`) are
//! `export::monoid`: `reduce` with a commutative operator, and trees of `slice`s and
//! elementwise operations of depth O(log n) otherwise.

use std::collections::{HashMap, HashSet};

use super::mlir::{i64_array, list, tensor_type, tensor_types, Val, Writer};
use super::{contract, prims, ExportError};
use crate::core::ir::{
    ArrTy, Atom, BlockId, Cond, Elem, Expr, Fold, Gather, Index, Iota, Monoid, PrimApp, Program,
    Replicate, Reshape, Scalar, Scan, Scatter, SumOuter, Table, Transpose, VarId, While,
};
use crate::core::print::expr_name;
use crate::core::value::Array;

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
pub(super) struct Cx<'a> {
    pub(super) program: &'a Program,
    pub(super) writer: Writer,
    vals: HashMap<VarId, Val>,
    /// Inside an index function: the shape of the grid of its parameters; every variable the
    /// function defines (`lifted`) has this shape prepended.
    grid: Vec<usize>,
    lifted: HashSet<VarId>,
    /// The `sumOuter`s exported as `dot_general`, and the statements only they use.
    plan: contract::Plan,
}

impl Cx<'_> {
    /// The value of an atom in the current context (outside values broadcast over the grid).
    pub(super) fn atom(&mut self, atom: &Atom) -> Result<Val, ExportError> {
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

    /// `val` repeated over `leading` new outer axes.
    fn broadcast_leading(&mut self, val: &Val, leading: &[usize]) -> Val {
        let mut shape = leading.to_vec();
        shape.extend_from_slice(&val.ty.shape);
        let dims: Vec<usize> = (leading.len()..shape.len()).collect();
        let attrs = format!("{{broadcast_dimensions = {}}}", i64_array(&dims));
        self.writer.op(
            "stablehlo.broadcast_in_dim",
            &[val],
            &attrs,
            ArrTy::new(shape, val.ty.elem),
        )
    }

    /// `val` (of shape `shape[..val.rank]`) repeated over trailing new axes up to `shape`.
    pub(super) fn broadcast_trailing(&mut self, val: &Val, shape: &[usize]) -> Val {
        if val.ty.shape == shape {
            return val.clone();
        }
        let dims: Vec<usize> = (0..val.ty.rank()).collect();
        let attrs = format!("{{broadcast_dimensions = {}}}", i64_array(&dims));
        self.writer.op(
            "stablehlo.broadcast_in_dim",
            &[val],
            &attrs,
            ArrTy::new(shape.to_vec(), val.ty.elem),
        )
    }

    fn zeros(&mut self, ty: &ArrTy) -> Val {
        self.writer.splat(Scalar::zero(ty.elem), &ty.shape)
    }

    /// Maps a block's statements given values for its params; returns its results.
    pub(super) fn block(
        &mut self,
        block: BlockId,
        params: &[Val],
    ) -> Result<Vec<Val>, ExportError> {
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
            let vals = self.expr(&stmt.expr, &stmt.binders)?;
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

    fn expr(&mut self, expr: &Expr, binders: &[VarId]) -> Result<Vec<Val>, ExportError> {
        let program = self.program;
        let in_index_function = !self.grid.is_empty();
        let one = |val: Val| Ok(vec![val]);
        match expr {
            Expr::Atom(atom) => one(self.atom(atom)?),
            Expr::Prim(PrimApp(prim, atoms)) => {
                let args = atoms
                    .iter()
                    .map(|atom| self.atom(atom))
                    .collect::<Result<Vec<_>, _>>()?;
                let shape = args
                    .iter()
                    .map(|arg| arg.ty.shape.clone())
                    .max_by_key(Vec::len)
                    .unwrap_or_default();
                let args: Vec<Val> = args
                    .iter()
                    .map(|arg| match arg.ty.rank() {
                        0 if !shape.is_empty() => {
                            let attrs = "{broadcast_dimensions = array<i64>}";
                            self.writer.op(
                                "stablehlo.broadcast_in_dim",
                                &[arg],
                                attrs,
                                ArrTy::new(shape.clone(), arg.ty.elem),
                            )
                        }
                        _ => arg.clone(),
                    })
                    .collect();
                let elem = match binders.first() {
                    Some(&binder) => program.var_ty(binder).elem,
                    None => return Err(ExportError::new(prim.name(), "no binder")),
                };
                one(prims::emit(&mut self.writer, *prim, &args, elem)?)
            }
            Expr::Index(Index { array, index }) => {
                if let Atom::Var(var) = array {
                    if in_index_function && self.lifted.contains(var) {
                        return Err(ExportError::new(
                            "index",
                            "an index function indexes an array it computes itself",
                        ));
                    }
                }
                let source = match array {
                    Atom::Var(var) => self.vals.get(var).cloned(),
                    Atom::Lit(_) => None,
                };
                let Some(source) = source else {
                    return Err(ExportError::new("index", "indexes a literal"));
                };
                let indices = index
                    .iter()
                    .map(|atom| self.atom(atom))
                    .collect::<Result<Vec<_>, _>>()?;
                let grid = self.grid.clone();
                one(self.gather_rows(&source, &indices, &grid))
            }
            _ if in_index_function => Err(ExportError::new(
                expr_name(expr),
                "only elementwise operations and `index` are exported inside an index function",
            )),
            Expr::SumOuter(_)
                if binders.len() == 1 && self.plan.contractions.contains_key(&binders[0]) =>
            {
                let contraction = self.plan.contractions[&binders[0]].clone();
                one(self.dot_general(&contraction, program.var_ty(binders[0]))?)
            }
            Expr::SumOuter(SumOuter(atom)) => {
                let array = self.atom(atom)?;
                one(self.reduce_sum(&array, &[0]))
            }
            Expr::Gather(Gather { shape, array, body }) => {
                let source = self.atom(array)?;
                let n_params = program.blocks[*body].params.len();
                let grid = shape[..n_params].to_vec();
                let indices = self.index_function(*body, &grid)?;
                one(self.gather_rows(&source, &indices, &grid))
            }
            Expr::Scatter(Scatter { shape, array, body }) => {
                let source = self.atom(array)?;
                let n_params = program.blocks[*body].params.len();
                let grid = source.ty.shape[..n_params].to_vec();
                let indices = self.index_function(*body, &grid)?;
                one(self.scatter_rows(&source, &indices, shape))
            }
            Expr::Table(Table(atoms)) => {
                let Some(&binder) = binders.first() else {
                    return Err(ExportError::new("table", "no binder"));
                };
                let ty = program.var_ty(binder).clone();
                if atoms.is_empty() {
                    return one(self.zeros(&ty));
                }
                let mut rows = Vec::new();
                for atom in atoms {
                    let val = self.atom(atom)?;
                    rows.push(self.broadcast_leading(&val, &[1]));
                }
                let refs: Vec<&Val> = rows.iter().collect();
                one(self
                    .writer
                    .op("stablehlo.concatenate", &refs, "{dimension = 0 : i64}", ty))
            }
            Expr::Replicate(Replicate { count, array }) => {
                let val = self.atom(array)?;
                one(self.broadcast_leading(&val, &[*count]))
            }
            Expr::Transpose(Transpose { perm, array }) => {
                let val = self.atom(array)?;
                let mut full = perm.clone();
                full.extend(perm.len()..val.ty.rank());
                let shape: Vec<usize> = full.iter().map(|&axis| val.ty.shape[axis]).collect();
                let attrs = format!("{{permutation = {}}}", i64_array(&full));
                one(self.writer.op(
                    "stablehlo.transpose",
                    &[&val],
                    &attrs,
                    ArrTy::new(shape, val.ty.elem),
                ))
            }
            Expr::Reshape(Reshape { shape, array }) => {
                let val = self.atom(array)?;
                one(self.writer.op(
                    "stablehlo.reshape",
                    &[&val],
                    "",
                    ArrTy::new(shape.clone(), val.ty.elem),
                ))
            }
            Expr::Iota(Iota(size)) => one(self.writer.op(
                "stablehlo.iota",
                &[],
                "{iota_dimension = 0 : i64}",
                ArrTy::new(vec![*size], Elem::I64),
            )),
            Expr::Cond(Cond {
                cond,
                then_block,
                else_block,
            }) => {
                let pred = self.atom(cond)?;
                let tys: Vec<ArrTy> = binders
                    .iter()
                    .map(|&binder| program.var_ty(binder).clone())
                    .collect();
                let then_region = self.region(&[], |cx, _| cx.block(*then_block, &[]))?;
                let else_region = self.region(&[], |cx, _| cx.block(*else_block, &[]))?;
                Ok(self.writer.op_full(
                    "stablehlo.if",
                    &[&pred],
                    "",
                    &[then_region, else_region],
                    tys,
                ))
            }
            Expr::Fold(Fold { size, init, body }) => {
                self.sequential(false, *size, init, *body, binders)
            }
            Expr::Scan(Scan { size, init, body }) => {
                self.sequential(true, *size, init, *body, binders)
            }
            Expr::While(While { init, body }) => self.while_loop(init, *body),
            Expr::WhileReverse(_) => Err(ExportError::new(
                "while_reverse",
                "the reverse sweep of a while keeps the carries of a number of steps known only \
                 as it runs, which StableHLO's static shapes cannot hold",
            )),
            Expr::Build1(_) => Err(ExportError::new(
                "build1",
                "the BOT leaves no `build1` in the bulk IR; export runs after it",
            )),
            Expr::Derivative(_) => Err(ExportError::new("jvp/vjp", crate::core::ir::EXPANDED)),
            Expr::CustomVjp(_) | Expr::CustomJvp(_) | Expr::CustomLinear(_) => Err(
                ExportError::new("custom_vjp", crate::core::ir::CUSTOM_INLINED),
            ),
            Expr::Monoid(Monoid {
                kind,
                arrays,
                init,
                op,
            }) => self.monoid(*kind, arrays, init, *op),
        }
    }

    /// A region whose block is written by `body` (given the region's arguments).
    pub(super) fn region(
        &mut self,
        params: &[ArrTy],
        body: impl FnOnce(&mut Cx, Vec<Val>) -> Result<Vec<Val>, ExportError>,
    ) -> Result<String, ExportError> {
        // The writer is moved out while the region is written, so `body` can use `self`.
        let mut writer = std::mem::take(&mut self.writer);
        let res = writer.region(params, |writer, args| {
            std::mem::swap(writer, &mut self.writer);
            let res = body(self, args);
            std::mem::swap(writer, &mut self.writer);
            res.map(|vals| (vals, ()))
        });
        self.writer = writer;
        res.map(|(text, ())| text)
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
        let dot = self
            .writer
            .op("stablehlo.dot_general", &[&lhs, &rhs], &attrs, dot_ty);
        if contraction
            .perm
            .iter()
            .enumerate()
            .all(|(axis, &from)| axis == from)
        {
            return Ok(dot);
        }
        let attrs = format!("{{permutation = {}}}", i64_array(&contraction.perm));
        Ok(self
            .writer
            .op("stablehlo.transpose", &[&dot], &attrs, ty.clone()))
    }

    /// Sums over `axes` of `array` (`reduce` with an `add` body; `or` for `Bool`).
    fn reduce_sum(&mut self, array: &Val, axes: &[usize]) -> Val {
        if axes.is_empty() {
            return array.clone();
        }
        let elem = array.ty.elem;
        let scalar = ArrTy::scalar(elem);
        let init = self.zeros(&scalar);
        let op = match elem {
            Elem::Bool => "stablehlo.or",
            _ => "stablehlo.add",
        };
        let (body, ()) = self
            .writer
            .region::<(), ExportError>(&[scalar.clone(), scalar.clone()], |writer, args| {
                let sum = writer.op(op, &[&args[0], &args[1]], "", scalar.clone());
                Ok((vec![sum], ()))
            })
            .unwrap_or_default();
        let shape: Vec<usize> = (0..array.ty.rank())
            .filter(|axis| !axes.contains(axis))
            .map(|axis| array.ty.shape[axis])
            .collect();
        let attrs = format!("{{dimensions = {}}}", i64_array(axes));
        let mut results = self.writer.op_full(
            "stablehlo.reduce",
            &[array, &init],
            &attrs,
            &[body],
            vec![ArrTy::new(shape, elem)],
        );
        results.remove(0)
    }

    /// The results of an index function evaluated over every point of `grid` at once: each
    /// parameter is an `iota` along its axis, each statement one operation on grid-shaped
    /// tensors.
    fn index_function(&mut self, body: BlockId, grid: &[usize]) -> Result<Vec<Val>, ExportError> {
        let saved_grid = std::mem::replace(&mut self.grid, grid.to_vec());
        let saved_lifted = std::mem::take(&mut self.lifted);
        let params: Vec<Val> = (0..self.program.blocks[body].params.len())
            .map(|axis| {
                self.writer.op(
                    "stablehlo.iota",
                    &[],
                    &format!("{{iota_dimension = {axis} : i64}}"),
                    ArrTy::new(grid.to_vec(), Elem::I64),
                )
            })
            .collect();
        for &param in &self.program.blocks[body].params {
            self.lifted.insert(param);
        }
        let res = self.block(body, &params);
        self.grid = saved_grid;
        self.lifted = saved_lifted;
        res
    }

    /// Where every index is in range (`0 ≤ ix < size` of its axis of `shape`), and the
    /// indices stacked along a last axis with out-of-range ones replaced by zero.
    fn checked_indices(&mut self, indices: &[Val], shape: &[usize], grid: &[usize]) -> (Val, Val) {
        let mut valid: Option<Val> = None;
        let mut columns = Vec::new();
        for (axis, index) in indices.iter().enumerate() {
            let zero = self.writer.splat(Scalar::I64(0), grid);
            let size = self.writer.splat(Scalar::I64(shape[axis] as i64), grid);
            let low = prims::compare(&mut self.writer, "GE", index, &zero);
            let high = prims::compare(&mut self.writer, "LT", index, &size);
            let both = self
                .writer
                .op("stablehlo.and", &[&low, &high], "", low.ty.clone());
            valid = Some(match valid {
                None => both,
                Some(previous) => {
                    self.writer
                        .op("stablehlo.and", &[&previous, &both], "", both.ty.clone())
                }
            });
            let mut column_shape = grid.to_vec();
            column_shape.push(1);
            let column = self.writer.op(
                "stablehlo.reshape",
                &[index],
                "",
                ArrTy::new(column_shape, Elem::I64),
            );
            columns.push(column);
        }
        let valid = valid.unwrap_or_else(|| self.writer.splat(Scalar::Bool(true), grid));
        let mut stacked_shape = grid.to_vec();
        stacked_shape.push(indices.len());
        let stacked_ty = ArrTy::new(stacked_shape.clone(), Elem::I64);
        let refs: Vec<&Val> = columns.iter().collect();
        let stacked = match refs.as_slice() {
            [single] => (*single).clone(),
            _ => self.writer.op(
                "stablehlo.concatenate",
                &refs,
                &format!("{{dimension = {} : i64}}", grid.len()),
                stacked_ty.clone(),
            ),
        };
        let mask = self.broadcast_trailing(&valid, &stacked_shape);
        let zero = self.zeros(&stacked_ty);
        let safe = prims::select(&mut self.writer, &mask, &stacked, &zero);
        (valid, safe)
    }

    /// `source[indices…]` for every point of `grid` (each index a tensor of shape `grid`,
    /// indexing the leading axes of `source`): shape `grid ++ source.shape[indices.len()..]`,
    /// zero where an index is out of range.
    fn gather_rows(&mut self, source: &Val, indices: &[Val], grid: &[usize]) -> Val {
        let n_indexed = indices.len();
        let rank = source.ty.rank();
        if n_indexed == 0 {
            return self.broadcast_leading(source, grid);
        }
        let k = grid.len();
        let mut shape = grid.to_vec();
        shape.extend_from_slice(&source.ty.shape[n_indexed..]);
        let ty = ArrTy::new(shape.clone(), source.ty.elem);
        if source.ty.shape[..n_indexed].contains(&0) {
            // Every read is out of range (and XLA rejects slices of an empty axis).
            return self.zeros(&ty);
        }
        let (valid, safe) = self.checked_indices(indices, &source.ty.shape, grid);
        let offset_dims: Vec<usize> = (k..k + rank - n_indexed).collect();
        let indexed: Vec<usize> = (0..n_indexed).collect();
        let mut slice_sizes = vec![1; n_indexed];
        slice_sizes.extend_from_slice(&source.ty.shape[n_indexed..]);
        let attrs = format!(
            "{{dimension_numbers = #stablehlo.gather<{}>, indices_are_sorted = false, \
             slice_sizes = {}}}",
            dimension_fields(
                &[
                    ("offset_dims", &offset_dims),
                    ("collapsed_slice_dims", &indexed),
                    ("start_index_map", &indexed),
                ],
                k
            ),
            i64_array(&slice_sizes)
        );
        let gathered = self
            .writer
            .op("stablehlo.gather", &[source, &safe], &attrs, ty.clone());
        let mask = self.broadcast_trailing(&valid, &shape);
        let zero = self.zeros(&ty);
        prims::select(&mut self.writer, &mask, &gathered, &zero)
    }

    /// Adds each row of `source` (its leading `grid` axes; one index tensor of that shape per
    /// indexed axis of the result) into a zero array of shape `shape`; out-of-range rows add
    /// nothing.
    fn scatter_rows(&mut self, source: &Val, indices: &[Val], shape: &[usize]) -> Val {
        let n_indexed = indices.len();
        let k = source.ty.rank() - (shape.len() - n_indexed);
        let grid = source.ty.shape[..k].to_vec();
        if n_indexed == 0 {
            let axes: Vec<usize> = (0..k).collect();
            return self.reduce_sum(source, &axes);
        }
        let ty = ArrTy::new(shape.to_vec(), source.ty.elem);
        if shape[..n_indexed].contains(&0) || source.ty.shape.contains(&0) {
            // Every write is out of range, or there is nothing to write.
            return self.zeros(&ty);
        }
        let (valid, safe) = self.checked_indices(indices, shape, &grid);
        let mask = self.broadcast_trailing(&valid, &source.ty.shape);
        let zero_updates = self.zeros(&source.ty);
        let updates = prims::select(&mut self.writer, &mask, source, &zero_updates);
        let operand = self.zeros(&ty);
        let scalar = ArrTy::scalar(ty.elem);
        let (body, ()) = self
            .writer
            .region::<(), ExportError>(&[scalar.clone(), scalar.clone()], |writer, args| {
                let sum = writer.op("stablehlo.add", &[&args[0], &args[1]], "", scalar.clone());
                Ok((vec![sum], ()))
            })
            .unwrap_or_default();
        let window: Vec<usize> = (k..source.ty.rank()).collect();
        let indexed: Vec<usize> = (0..n_indexed).collect();
        let attrs =
            format!(
            "{{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<{}>, \
             unique_indices = false}}",
            dimension_fields(&[
                ("update_window_dims", &window),
                ("inserted_window_dims", &indexed),
                ("scatter_dims_to_operand_dims", &indexed),
            ], k)
        );
        let mut results = self.writer.op_full(
            "stablehlo.scatter",
            &[&operand, &safe, &updates],
            &attrs,
            &[body],
            vec![ty],
        );
        results.remove(0)
    }

    /// `fold` / `scan` as a `while` over a counter, the carries and (for a scan) the stacked
    /// outputs so far.
    /// `while`: a `stablehlo.while` whose first loop-carried value is the continue flag, true
    /// at first, so that the body runs once before the condition region first reads it
    /// (a do-while); the body region returns the body's flag and new carries.
    fn while_loop(&mut self, init: &[Atom], body: BlockId) -> Result<Vec<Val>, ExportError> {
        let mut operands = vec![self.writer.splat(Scalar::Bool(true), &[])];
        for atom in init {
            operands.push(self.atom(atom)?);
        }
        let tys: Vec<ArrTy> = operands.iter().map(|val| val.ty.clone()).collect();
        let cond_region = self.region(&tys, |_, args| Ok(vec![args[0].clone()]))?;
        let body_region = self.region(&tys, |cx, args| cx.block(body, &args[1..]))?;
        let refs: Vec<&Val> = operands.iter().collect();
        let results = self.writer.op_full(
            "stablehlo.while",
            &refs,
            "",
            &[cond_region, body_region],
            tys,
        );
        Ok(results[1..].to_vec())
    }

    fn sequential(
        &mut self,
        is_scan: bool,
        size: usize,
        init: &[Atom],
        body: BlockId,
        binders: &[VarId],
    ) -> Result<Vec<Val>, ExportError> {
        let program = self.program;
        let n_carry = init.len();
        let counter_ty = ArrTy::scalar(Elem::I64);
        let mut operands = vec![self.writer.splat(Scalar::I64(0), &[])];
        for atom in init {
            operands.push(self.atom(atom)?);
        }
        let output_tys: Vec<ArrTy> = match is_scan {
            true => binders[n_carry..]
                .iter()
                .map(|&binder| program.var_ty(binder).clone())
                .collect(),
            false => Vec::new(),
        };
        for ty in &output_tys {
            operands.push(self.zeros(ty));
        }
        if size == 0 {
            // No step runs: the carries stay, the outputs are empty (and XLA would reject the
            // body's writes into an empty buffer).
            return Ok(operands[1..].to_vec());
        }
        let tys: Vec<ArrTy> = operands.iter().map(|val| val.ty.clone()).collect();
        let cond_region = self.region(&tys, |cx, args| {
            let bound = cx.writer.splat(Scalar::I64(size as i64), &[]);
            Ok(vec![prims::compare(&mut cx.writer, "LT", &args[0], &bound)])
        })?;
        let body_region = self.region(&tys, |cx, args| {
            let counter = args[0].clone();
            let results = cx.block(body, &args[..=n_carry])?;
            let step = cx.writer.splat(Scalar::I64(1), &[]);
            let next = cx
                .writer
                .op("stablehlo.add", &[&counter, &step], "", counter_ty.clone());
            let mut returned = vec![next];
            returned.extend(results[..n_carry].iter().cloned());
            for (position, y) in results[n_carry..].iter().enumerate() {
                let buffer = &args[1 + n_carry + position];
                let row = cx.broadcast_leading(y, &[1]);
                let zero = cx.writer.splat(Scalar::I64(0), &[]);
                let mut operands: Vec<Val> = vec![buffer.clone(), row, counter.clone()];
                operands.extend(std::iter::repeat_n(zero, y.ty.rank()));
                let refs: Vec<&Val> = operands.iter().collect();
                returned.push(cx.writer.op(
                    "stablehlo.dynamic_update_slice",
                    &refs,
                    "",
                    buffer.ty.clone(),
                ));
            }
            Ok(returned)
        })?;
        let refs: Vec<&Val> = operands.iter().collect();
        let results = self.writer.op_full(
            "stablehlo.while",
            &refs,
            "",
            &[cond_region, body_region],
            tys,
        );
        Ok(results[1..].to_vec())
    }
}

/// The fields of `#stablehlo.gather<…>` / `#stablehlo.scatter<…>`: empty lists are left out
/// (as MLIR prints them), `index_vector_dim` last.
fn dimension_fields(fields: &[(&str, &Vec<usize>)], index_vector_dim: usize) -> String {
    let mut parts: Vec<String> = fields
        .iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(name, values)| format!("{name} = {}", list(values)))
        .collect();
    parts.push(format!("index_vector_dim = {index_vector_dim}"));
    parts.join(", ")
}

//! The vocabulary of the forms' export rules: a StableHLO module being written, as a trait the
//! exporter implements (`export::stablehlo`), so that each home states how its form is written
//! in StableHLO beside its other rules (`Operation::export`) and `ops` does not depend on the
//! exporter. It is `prim::hlo` one level up: that trait writes elementwise operations on values
//! of one shape (the primitives' rules), this one whole operations with attributes, regions and
//! the blocks of the program being exported.
//!
//! Operations are written in MLIR's generic form: a name (`stablehlo.transpose`), operands, an
//! attribute dictionary as text with its braces (`{permutation = array<i64: 1, 0>}`, made with
//! [`i64_array`] and [`list`]), regions and result types. The helpers at the end are the
//! compositions several forms' rules share.

use std::fmt;

use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Program, Scalar, Stmt, VarId};
use crate::core::print::expr_name;
use crate::prim::hlo::Hlo;
use crate::prim::Prim;

/// An SSA value of the module being written: its name and its tensor type.
#[derive(Clone, Debug, PartialEq)]
pub struct Val {
    pub name: String,
    pub ty: ArrTy,
}

/// What an export rule gives: the values of the statement's binders, or why it has none.
pub type Exported = Result<Vec<Val>, ExportError>;

/// A region written by [`StableHlo::region`], for an operation that holds it.
#[derive(Clone, Debug, Default)]
pub struct Region(pub String);

/// Why a program cannot be exported: the operation (as printed IR names it) and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportError {
    pub operation: String,
    pub reason: String,
}

impl ExportError {
    pub fn new(operation: impl Into<String>, reason: impl Into<String>) -> ExportError {
        ExportError {
            operation: operation.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot export `{}` to StableHLO: {}",
            self.operation, self.reason
        )
    }
}

impl std::error::Error for ExportError {}

/// The writer of a `func.func` body, and the exporter's view of the program it maps: its
/// values and blocks. Inside an index function (`StableHlo::grid` not empty) every value is
/// evaluated over the whole grid of the function's parameters at once: [`StableHlo::atom`]
/// broadcasts a value defined outside over the grid.
pub trait StableHlo {
    /// The program being exported.
    fn program(&self) -> &Program;

    /// The value of an atom where it is used (a value from outside an index function
    /// broadcast over its grid).
    fn atom(&mut self, atom: &Atom) -> Result<Val, ExportError>;

    /// The value bound to `var`, as it was bound.
    fn bound(&self, var: VarId) -> Option<Val>;

    /// Whether `var` is computed by the index function being written (so has the grid's axes
    /// in front).
    fn computed_in_grid(&self, var: VarId) -> bool;

    /// Inside an index function: the shape of the grid of its parameters; empty outside.
    fn grid(&self) -> &[usize];

    /// Writes a block's statements given values for its params; its results.
    fn block(&mut self, block: BlockId, params: &[Val]) -> Exported;

    /// The results of the index function `body` evaluated over every point of `grid` at once
    /// (each parameter an `iota` along its axis, each statement one operation on grid-shaped
    /// tensors).
    fn index_function(&mut self, body: BlockId, grid: &[usize]) -> Exported;

    /// A region with one block whose arguments have types `params`, written by `body` (given
    /// the arguments; it returns what the block returns).
    fn region(
        &mut self,
        params: &[ArrTy],
        body: &mut dyn FnMut(&mut dyn StableHlo, Vec<Val>) -> Exported,
    ) -> Result<Region, ExportError>;

    /// Any operation: `attrs` is the attribute dictionary with its braces (or empty).
    fn op_with_regions(
        &mut self,
        name: &str,
        operands: &[&Val],
        attrs: &str,
        regions: Vec<Region>,
        results: Vec<ArrTy>,
    ) -> Vec<Val>;

    /// A constant: one scalar repeated over a shape (a splat).
    fn splat(&mut self, scalar: Scalar, shape: &[usize]) -> Val;

    /// An operation with one result and no regions.
    fn op(&mut self, name: &str, operands: &[&Val], attrs: &str, result: ArrTy) -> Val {
        let mut results = self.op_with_regions(name, operands, attrs, Vec::new(), vec![result]);
        results.remove(0)
    }

    /// `stablehlo.while` over `operands`, the first the loop's own (a counter or a flag) and
    /// the others its carries; the final values of the carries.
    fn while_op(&mut self, operands: &[Val], cond: Region, body: Region) -> Vec<Val> {
        let refs: Vec<&Val> = operands.iter().collect();
        let tys: Vec<ArrTy> = operands.iter().map(|val| val.ty.clone()).collect();
        let results = self.op_with_regions("stablehlo.while", &refs, "", vec![cond, body], tys);
        results[1..].to_vec()
    }

    /// Zeros of a type.
    fn zeros(&mut self, ty: &ArrTy) -> Val {
        self.splat(Scalar::zero(ty.elem), &ty.shape)
    }

    /// `val` repeated over `leading` new outer axes.
    fn broadcast_leading(&mut self, val: &Val, leading: &[usize]) -> Val {
        let mut shape = leading.to_vec();
        shape.extend_from_slice(&val.ty.shape);
        let dims: Vec<usize> = (leading.len()..shape.len()).collect();
        let attrs = format!("{{broadcast_dimensions = {}}}", i64_array(&dims));
        self.op(
            "stablehlo.broadcast_in_dim",
            &[val],
            &attrs,
            ArrTy::new(shape, val.ty.elem),
        )
    }

    /// `val` (of shape `shape[..val.rank]`) repeated over trailing new axes up to `shape`.
    fn broadcast_trailing(&mut self, val: &Val, shape: &[usize]) -> Val {
        if val.ty.shape == shape {
            return val.clone();
        }
        let dims: Vec<usize> = (0..val.ty.rank()).collect();
        let attrs = format!("{{broadcast_dimensions = {}}}", i64_array(&dims));
        self.op(
            "stablehlo.broadcast_in_dim",
            &[val],
            &attrs,
            ArrTy::new(shape.to_vec(), val.ty.elem),
        )
    }

    /// `compare` with a direction (`EQ`, `LT`, …): a `Bool` of the operands' shape.
    fn compare(&mut self, direction: &str, x: &Val, y: &Val) -> Val {
        let attrs =
            format!("{{comparison_direction = #stablehlo<comparison_direction {direction}>}}");
        let ty = ArrTy::new(x.ty.shape.clone(), Elem::Bool);
        self.op("stablehlo.compare", &[x, y], &attrs, ty)
    }

    /// `then` where `cond`, else `otherwise`.
    fn select(&mut self, cond: &Val, then: &Val, otherwise: &Val) -> Val {
        self.op(
            "stablehlo.select",
            &[cond, then, otherwise],
            "",
            then.ty.clone(),
        )
    }

    /// `x ∘ y` for an elementwise StableHLO operation of two operands of one type.
    fn binary(&mut self, name: &str, x: &Val, y: &Val) -> Val {
        self.op(&format!("stablehlo.{name}"), &[x, y], "", x.ty.clone())
    }

    /// Sums over `axes` of `array` (`reduce` with an `add` body; `or` for `Bool`).
    fn reduce_sum(&mut self, array: &Val, axes: &[usize]) -> Result<Val, ExportError> {
        if axes.is_empty() {
            return Ok(array.clone());
        }
        let elem = array.ty.elem;
        let scalar = ArrTy::scalar(elem);
        let init = self.zeros(&scalar);
        let add = match elem {
            Elem::Bool => "or",
            _ => "add",
        };
        let body = self.region(&[scalar.clone(), scalar], &mut |cx, args| {
            Ok(vec![cx.binary(add, &args[0], &args[1])])
        })?;
        let shape: Vec<usize> = (0..array.ty.rank())
            .filter(|axis| !axes.contains(axis))
            .map(|axis| array.ty.shape[axis])
            .collect();
        let attrs = format!("{{dimensions = {}}}", i64_array(axes));
        let mut results = self.op_with_regions(
            "stablehlo.reduce",
            &[array, &init],
            &attrs,
            vec![body],
            vec![ArrTy::new(shape, elem)],
        );
        Ok(results.remove(0))
    }
}

/// `prim` applied to `args` (all of one shape) by the primitive's own export rule.
pub fn apply_prim(cx: &mut dyn StableHlo, prim: Prim, args: &[Val]) -> Result<Val, ExportError> {
    prim.export(&mut Elementwise(cx), args)
        .map_err(|reason| ExportError::new(prim.name(), reason))
}

/// The primitives' vocabulary (`prim::hlo`) on an emitter.
struct Elementwise<'a>(&'a mut dyn StableHlo);

impl Hlo for Elementwise<'_> {
    type Val = Val;

    fn elem(&self, x: &Val) -> Elem {
        x.ty.elem
    }

    fn op(&mut self, name: &str, operands: &[&Val]) -> Val {
        let ty = operands[0].ty.clone();
        self.0.op(&format!("stablehlo.{name}"), operands, "", ty)
    }

    fn compare(&mut self, direction: &str, x: &Val, y: &Val) -> Val {
        self.0.compare(direction, x, y)
    }

    fn select(&mut self, cond: &Val, then: &Val, otherwise: &Val) -> Val {
        self.0.select(cond, then, otherwise)
    }

    fn splat(&mut self, scalar: Scalar, like: &Val) -> Val {
        self.0.splat(scalar, &like.ty.shape)
    }

    fn convert(&mut self, x: &Val, to: Elem) -> Val {
        let ty = ArrTy::new(x.ty.shape.clone(), to);
        self.0.op("stablehlo.convert", &[x], "", ty)
    }

    fn bitcast(&mut self, x: &Val, to: Elem) -> Val {
        let ty = ArrTy::new(x.ty.shape.clone(), to);
        self.0.op("stablehlo.bitcast_convert", &[x], "", ty)
    }
}

/// `array<i64: 1, 2>` (an MLIR dense i64 array attribute).
pub fn i64_array(values: &[usize]) -> String {
    if values.is_empty() {
        return "array<i64>".to_string();
    }
    let items: Vec<String> = values.iter().map(usize::to_string).collect();
    format!("array<i64: {}>", items.join(", "))
}

/// `[1, 2]`, as in the fields of `#stablehlo.gather<…>`.
pub fn list(values: &[usize]) -> String {
    let items: Vec<String> = values.iter().map(usize::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// The values of `atoms` where they are used.
pub fn atoms(cx: &mut dyn StableHlo, atoms: &[Atom]) -> Exported {
    atoms.iter().map(|atom| cx.atom(atom)).collect()
}

/// The type of the value `stmt` binds (verified IR binds one per result).
pub fn result_ty(program: &Program, stmt: &Stmt) -> Result<ArrTy, ExportError> {
    match stmt.binders.first() {
        Some(&binder) => Ok(program.var_ty(binder).clone()),
        None => Err(ExportError::new(expr_name(&stmt.expr), "no binder")),
    }
}

/// The types of `binders`.
pub fn binder_tys(program: &Program, binders: &[VarId]) -> Vec<ArrTy> {
    binders
        .iter()
        .map(|&binder| program.var_ty(binder).clone())
        .collect()
}

//! Elementwise primitives as StableHLO operations. Each family file of `prim` states its
//! primitives' export rule (dx's total semantics written in StableHLO) in the vocabulary of
//! `prim::hlo`; this module gives that vocabulary its MLIR text, on the exporter's [`Writer`].
//!
//! Operands arrive with equal shapes (the verifier's rule for `op`); the result has that shape.

use super::mlir::{Val, Writer};
use super::ExportError;
use crate::core::ir::{ArrTy, Elem, Scalar};
use crate::prim::hlo::Hlo;
use crate::prim::Prim;

/// `prim` applied to `args` (all of one shape); `result` is the result's element type.
pub fn emit(cx: &mut Writer, prim: Prim, args: &[Val], result: Elem) -> Result<Val, ExportError> {
    let val = prim
        .export(cx, args)
        .map_err(|reason| ExportError::new(prim.name(), reason))?;
    debug_assert_eq!(
        val.ty.elem, result,
        "{prim:?} exported with another element type"
    );
    Ok(val)
}

impl Hlo for Writer {
    type Val = Val;

    fn elem(&self, x: &Val) -> Elem {
        x.ty.elem
    }

    fn op(&mut self, name: &str, operands: &[&Val]) -> Val {
        let ty = operands[0].ty.clone();
        Writer::op(self, &format!("stablehlo.{name}"), operands, "", ty)
    }

    fn compare(&mut self, direction: &str, x: &Val, y: &Val) -> Val {
        compare(self, direction, x, y)
    }

    fn select(&mut self, cond: &Val, then: &Val, otherwise: &Val) -> Val {
        select(self, cond, then, otherwise)
    }

    fn splat(&mut self, scalar: Scalar, like: &Val) -> Val {
        Writer::splat(self, scalar, &like.ty.shape)
    }

    fn convert(&mut self, x: &Val, to: Elem) -> Val {
        let ty = ArrTy::new(x.ty.shape.clone(), to);
        Writer::op(self, "stablehlo.convert", &[x], "", ty)
    }

    fn bitcast(&mut self, x: &Val, to: Elem) -> Val {
        let ty = ArrTy::new(x.ty.shape.clone(), to);
        Writer::op(self, "stablehlo.bitcast_convert", &[x], "", ty)
    }
}

/// `compare` with a direction (`EQ`, `LT`, …); the comparison type follows the element type.
pub fn compare(cx: &mut Writer, direction: &str, x: &Val, y: &Val) -> Val {
    let attrs = format!("{{comparison_direction = #stablehlo<comparison_direction {direction}>}}");
    let ty = ArrTy::new(x.ty.shape.clone(), Elem::Bool);
    cx.op("stablehlo.compare", &[x, y], &attrs, ty)
}

pub fn select(cx: &mut Writer, cond: &Val, then: &Val, otherwise: &Val) -> Val {
    cx.op(
        "stablehlo.select",
        &[cond, then, otherwise],
        "",
        then.ty.clone(),
    )
}

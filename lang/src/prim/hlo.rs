//! The vocabulary of the export rules: StableHLO's elementwise operations as a trait the
//! exporter implements (`export/prims.rs`), so that each family file states how its primitives
//! are written in StableHLO beside their other rules, and `prim` does not depend on the
//! exporter. The helpers below are the few compositions several families' rules share.
//!
//! Operands of an operation have one shape (the verifier's rule for `op`); so has its result.

use super::scalar::{Elem, Scalar};

/// StableHLO's elementwise operations on values of one shape.
pub trait Hlo {
    /// A value of the program being written.
    type Val: Clone;
    /// The element type of a value.
    fn elem(&self, x: &Self::Val) -> Elem;
    /// `stablehlo.<name>` of its operands; the result has the first operand's type.
    fn op(&mut self, name: &str, operands: &[&Self::Val]) -> Self::Val;
    /// `stablehlo.compare` with a direction (`EQ`, `NE`, `LT`, `GT`, `LE`, `GE`): a `Bool`.
    fn compare(&mut self, direction: &str, x: &Self::Val, y: &Self::Val) -> Self::Val;
    /// `stablehlo.select`: `then` where `cond`, else `otherwise`.
    fn select(&mut self, cond: &Self::Val, then: &Self::Val, otherwise: &Self::Val) -> Self::Val;
    /// A constant with the shape of `like`.
    fn splat(&mut self, scalar: Scalar, like: &Self::Val) -> Self::Val;
    /// `stablehlo.convert` to another element type.
    fn convert(&mut self, x: &Self::Val, to: Elem) -> Self::Val;
    /// `stablehlo.bitcast_convert` to an element type of the same width.
    fn bitcast(&mut self, x: &Self::Val, to: Elem) -> Self::Val;
}

/// `x` where `mask` is false, zero where it is true.
pub(crate) fn zero_where<E: Hlo>(cx: &mut E, mask: &E::Val, x: &E::Val) -> E::Val {
    let zero = cx.splat(Scalar::zero(cx.elem(x)), x);
    cx.select(mask, &zero, x)
}

/// Where the divisor is zero, and the divisor with its zeros replaced by one (so that the
/// division itself is defined; its result is then replaced by zero).
pub(crate) fn guard_zero<E: Hlo>(cx: &mut E, divisor: &E::Val) -> (E::Val, E::Val) {
    let elem = cx.elem(divisor);
    let zero = cx.splat(Scalar::zero(elem), divisor);
    let is_zero = cx.compare("EQ", divisor, &zero);
    let one = cx.splat(one(elem), divisor);
    let safe = cx.select(&is_zero, &one, divisor);
    (is_zero, safe)
}

/// A non-zero remainder whose sign differs from the divisor's.
pub(crate) fn sign_mismatch<E: Hlo>(cx: &mut E, rem: &E::Val, divisor: &E::Val) -> E::Val {
    let zero = cx.splat(Scalar::zero(cx.elem(rem)), rem);
    let nonzero = cx.compare("NE", rem, &zero);
    let rem_negative = cx.compare("LT", rem, &zero);
    let divisor_negative = cx.compare("LT", divisor, &zero);
    let differ = cx.compare("NE", &rem_negative, &divisor_negative);
    cx.op("and", &[&nonzero, &differ])
}

/// A truncated remainder moved to the divisor's sign (floored `mod`).
pub(crate) fn floor_remainder<E: Hlo>(cx: &mut E, rem: &E::Val, divisor: &E::Val) -> E::Val {
    let adjust = sign_mismatch(cx, rem, divisor);
    let moved = cx.op("add", &[rem, divisor]);
    cx.select(&adjust, &moved, rem)
}

/// One of an element type (`true` for `Bool`).
pub fn one(elem: Elem) -> Scalar {
    match elem {
        Elem::F32 => Scalar::F32(1.0),
        Elem::F64 => Scalar::F64(1.0),
        Elem::I32 => Scalar::I32(1),
        Elem::I64 => Scalar::I64(1),
        Elem::U32 => Scalar::U32(1),
        Elem::U64 => Scalar::U64(1),
        Elem::Bool => Scalar::Bool(true),
    }
}

/// A float of a float element type (`f64` for any other).
pub fn float(elem: Elem, value: f64) -> Scalar {
    match elem {
        Elem::F32 => Scalar::F32(value as f32),
        _ => Scalar::F64(value),
    }
}

/// The smallest and largest value of an integer type, as scalars of that type (`u64`'s for
/// any other).
pub fn int_bounds(elem: Elem) -> (Scalar, Scalar) {
    match elem {
        Elem::I32 => (Scalar::I32(i32::MIN), Scalar::I32(i32::MAX)),
        Elem::I64 => (Scalar::I64(i64::MIN), Scalar::I64(i64::MAX)),
        Elem::U32 => (Scalar::U32(0), Scalar::U32(u32::MAX)),
        _ => (Scalar::U64(0), Scalar::U64(u64::MAX)),
    }
}

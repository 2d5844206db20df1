//! Arithmetic primitives: `add sub mul div neg abs min max mod idiv` on every numeric element
//! type; the result has the operands' element type.
//!
//! Semantics (LANGUAGE.md §4, totality):
//! - Integers wrap on overflow (`add`, `sub`, `mul`, `neg`, `abs`; `neg` and `abs` of the
//!   minimum signed value give it back; `neg` on unsigned types wraps).
//! - `div` on integers truncates toward zero; `idiv` floors; both give 0 on division by zero.
//! - `mod` is floored (the result has the sign of the divisor) and `x mod 0 = 0` on integers; on
//!   floats it is the floored fmod (`x - y * floor(x / y)` computed as `fmod` plus a sign fix),
//!   which is NaN for `y = 0` as IEEE 754 says.
//! - `idiv` on floats is `floor(x / y)`.
//! - `min`/`max` on floats give NaN if either operand is NaN.

use super::{operand_pair, same_elem, PrimTypeError, ScalarRepr};
use crate::core::ir::{Elem, Scalar};

/// The operators of the arithmetic family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Abs,
    Min,
    Max,
    Mod,
    IDiv,
}

/// Arity rule.
pub fn arity(op: ArithOp) -> usize {
    match op {
        ArithOp::Add
        | ArithOp::Sub
        | ArithOp::Mul
        | ArithOp::Div
        | ArithOp::Min
        | ArithOp::Max
        | ArithOp::Mod
        | ArithOp::IDiv => 2,
        ArithOp::Neg | ArithOp::Abs => 1,
    }
}

/// Type rule: all operands share one numeric element type, which is the result's.
pub fn result_elem(op: ArithOp, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    match op {
        ArithOp::Add
        | ArithOp::Sub
        | ArithOp::Mul
        | ArithOp::Div
        | ArithOp::Neg
        | ArithOp::Abs
        | ArithOp::Min
        | ArithOp::Max
        | ArithOp::Mod
        | ArithOp::IDiv => {
            let elem = same_elem(operands)?;
            if elem.is_numeric() {
                Ok(elem)
            } else {
                Err(PrimTypeError(format!(
                    "expects numeric operands, got {}",
                    elem.name()
                )))
            }
        }
    }
}

/// Evaluation rule.
pub fn eval(op: ArithOp, operands: &[Scalar]) -> Scalar {
    match operands.first().map(|scalar| scalar.elem()) {
        Some(Elem::F32) => eval_as::<f32>(op, operands),
        Some(Elem::F64) => eval_as::<f64>(op, operands),
        Some(Elem::I32) => eval_as::<i32>(op, operands),
        Some(Elem::I64) => eval_as::<i64>(op, operands),
        Some(Elem::U32) => eval_as::<u32>(op, operands),
        Some(Elem::U64) => eval_as::<u64>(op, operands),
        Some(Elem::Bool) | None => {
            debug_assert!(false, "{op:?} on non-numeric operands {operands:?}");
            Scalar::Bool(false)
        }
    }
}

fn eval_as<T: Arith>(op: ArithOp, operands: &[Scalar]) -> Scalar {
    let (x, y) = operand_pair::<T>(operands, arity(op) == 2);
    apply(op, x, y).into_scalar()
}

/// `op` on typed operands (`y` is ignored by the unary operators): the evaluation rule for
/// callers that know the element type (`exec::register_code`).
pub(crate) fn apply<T: Arith>(op: ArithOp, x: T, y: T) -> T {
    match op {
        ArithOp::Add => x.add(y),
        ArithOp::Sub => x.sub(y),
        ArithOp::Mul => x.mul(y),
        ArithOp::Div => x.div(y),
        ArithOp::Neg => x.neg(),
        ArithOp::Abs => x.abs(),
        ArithOp::Min => x.min(y),
        ArithOp::Max => x.max(y),
        ArithOp::Mod => x.modulo(y),
        ArithOp::IDiv => x.idiv(y),
    }
}

/// Total arithmetic on one numeric Rust type: the one statement of the arithmetic rules,
/// used by `eval` here and by the engine's typed kernels (`exec/elementwise.rs`).
pub(crate) trait Arith: ScalarRepr {
    fn add(self, other: Self) -> Self;
    fn sub(self, other: Self) -> Self;
    fn mul(self, other: Self) -> Self;
    fn div(self, other: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn min(self, other: Self) -> Self;
    fn max(self, other: Self) -> Self;
    fn modulo(self, other: Self) -> Self;
    fn idiv(self, other: Self) -> Self;
}

macro_rules! arith_signed {
    ($($ty:ty),*) => {$(
        impl Arith for $ty {
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            fn sub(self, other: Self) -> Self { self.wrapping_sub(other) }
            fn mul(self, other: Self) -> Self { self.wrapping_mul(other) }
            fn div(self, other: Self) -> Self {
                if other == 0 { 0 } else { self.wrapping_div(other) }
            }
            fn neg(self) -> Self { self.wrapping_neg() }
            fn abs(self) -> Self { self.wrapping_abs() }
            fn min(self, other: Self) -> Self { Ord::min(self, other) }
            fn max(self, other: Self) -> Self { Ord::max(self, other) }
            fn modulo(self, other: Self) -> Self {
                if other == 0 {
                    return 0;
                }
                // `wrapping_rem` truncates (sign of the dividend); move to the divisor's sign.
                let rem = self.wrapping_rem(other);
                if rem != 0 && ((rem < 0) != (other < 0)) { rem.wrapping_add(other) } else { rem }
            }
            fn idiv(self, other: Self) -> Self {
                if other == 0 {
                    return 0;
                }
                let quot = self.wrapping_div(other);
                let rem = self.wrapping_rem(other);
                if rem != 0 && ((rem < 0) != (other < 0)) { quot.wrapping_sub(1) } else { quot }
            }
        }
    )*};
}

macro_rules! arith_unsigned {
    ($($ty:ty),*) => {$(
        impl Arith for $ty {
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            fn sub(self, other: Self) -> Self { self.wrapping_sub(other) }
            fn mul(self, other: Self) -> Self { self.wrapping_mul(other) }
            fn div(self, other: Self) -> Self { self.checked_div(other).unwrap_or(0) }
            fn neg(self) -> Self { self.wrapping_neg() }
            fn abs(self) -> Self { self }
            fn min(self, other: Self) -> Self { Ord::min(self, other) }
            fn max(self, other: Self) -> Self { Ord::max(self, other) }
            fn modulo(self, other: Self) -> Self { self.checked_rem(other).unwrap_or(0) }
            fn idiv(self, other: Self) -> Self { self.checked_div(other).unwrap_or(0) }
        }
    )*};
}

macro_rules! arith_float {
    ($($ty:ty),*) => {$(
        impl Arith for $ty {
            fn add(self, other: Self) -> Self { self + other }
            fn sub(self, other: Self) -> Self { self - other }
            fn mul(self, other: Self) -> Self { self * other }
            fn div(self, other: Self) -> Self { self / other }
            fn neg(self) -> Self { -self }
            fn abs(self) -> Self { <$ty>::abs(self) }
            // Note [Float selections]: NaN in either operand gives NaN, and -0 counts as
            // smaller than +0, so `min` and `max` are the min and max of a total order: exactly
            // commutative and associative. A reduction over them may then run in any order
            // (vector lanes, any tree) and still give the reference's bits. Written as selects
            // so that loops over them vectorise.
            fn min(self, other: Self) -> Self {
                let equal = <$ty>::from_bits(self.to_bits() | other.to_bits());
                let pick = if self == other { equal } else if self < other { self } else { other };
                if self.is_nan() || other.is_nan() { <$ty>::NAN } else { pick }
            }
            fn max(self, other: Self) -> Self {
                let equal = <$ty>::from_bits(self.to_bits() & other.to_bits());
                let pick = if self == other { equal } else if self > other { self } else { other };
                if self.is_nan() || other.is_nan() { <$ty>::NAN } else { pick }
            }
            fn modulo(self, other: Self) -> Self {
                // `%` is fmod (sign of the dividend); move a non-zero remainder to the divisor's sign.
                let rem = self % other;
                if rem != 0.0 && ((rem < 0.0) != (other < 0.0)) { rem + other } else { rem }
            }
            fn idiv(self, other: Self) -> Self { (self / other).floor() }
        }
    )*};
}

arith_signed!(i32, i64);
arith_unsigned!(u32, u64);
arith_float!(f32, f64);

/// Operand-order rule: `+`, `*`, `min` and `max` are commutative (float `min`/`max` exactly,
/// Note [Float selections]).
pub fn argument_order(op: ArithOp) -> super::ArgumentOrder {
    use super::ArgumentOrder;
    match op {
        ArithOp::Add | ArithOp::Mul | ArithOp::Min | ArithOp::Max => ArgumentOrder::Any,
        ArithOp::Sub
        | ArithOp::Div
        | ArithOp::Neg
        | ArithOp::Abs
        | ArithOp::Mod
        | ArithOp::IDiv => ArgumentOrder::Fixed,
    }
}

/// Differentiability of the arithmetic family.
pub fn linearity(op: ArithOp) -> super::Linearity {
    use super::Linearity;
    match op {
        ArithOp::Add | ArithOp::Sub | ArithOp::Neg => Linearity::Linear,
        ArithOp::Mul | ArithOp::Div => Linearity::Bilinear,
        ArithOp::Abs | ArithOp::Min | ArithOp::Max | ArithOp::Mod => Linearity::Nonlinear,
        ArithOp::IDiv => Linearity::NonDifferentiable,
    }
}

/// JVP rules (seed 001 Fig 15, seed 004 Fig 7).
pub fn jvp(
    op: ArithOp,
    cx: &mut dyn super::Emitter,
    args: &[crate::core::ir::Atom],
    result: crate::core::ir::Atom,
    tangents: &[super::Tangent],
) -> super::Tangent {
    use super::{add_tangents, scale, Prim};
    match op {
        ArithOp::Add => add_tangents(cx, tangents[0], tangents[1]),
        ArithOp::Sub => {
            let minus = tangents[1].map(|t| cx.prim(Prim::Neg, &[t]));
            add_tangents(cx, tangents[0], minus)
        }
        ArithOp::Neg => tangents[0].map(|t| cx.prim(Prim::Neg, &[t])),
        // d(x y) = y dx + x dy
        ArithOp::Mul => {
            let left = scale(cx, args[1], tangents[0]);
            let right = scale(cx, args[0], tangents[1]);
            add_tangents(cx, left, right)
        }
        // d(x / y) = dx / y - (x / y) dy / y
        ArithOp::Div => {
            let left = tangents[0].map(|t| cx.prim(Prim::Div, &[t, args[1]]));
            let right = tangents[1].map(|t| {
                let ratio = cx.prim(Prim::Div, &[result, args[1]]);
                let scaled = cx.prim(Prim::Mul, &[ratio, t]);
                cx.prim(Prim::Neg, &[scaled])
            });
            add_tangents(cx, left, right)
        }
        // d|x| = sign(x) dx, written as a select so that x = 0 picks the positive side.
        ArithOp::Abs => tangents[0].map(|t| {
            let zero = cx.constant(0.0, args[0]);
            let positive = cx.prim(Prim::Ge, &[args[0], zero]);
            let minus = cx.prim(Prim::Neg, &[t]);
            cx.prim(Prim::Select, &[positive, t, minus])
        }),
        // Ties pick the first operand.
        ArithOp::Min | ArithOp::Max => {
            let comparison = if op == ArithOp::Min {
                Prim::Le
            } else {
                Prim::Ge
            };
            let first = cx.prim(comparison, &[args[0], args[1]]);
            let a = tangents[0].unwrap_or_else(|| cx.constant(0.0, args[0]));
            let b = tangents[1].unwrap_or_else(|| cx.constant(0.0, args[0]));
            Some(cx.prim(Prim::Select, &[first, a, b]))
        }
        // x mod y = x - y floor(x / y): d = dx - floor(x / y) dy.
        ArithOp::Mod => {
            let minus = tangents[1].map(|t| {
                let ratio = cx.prim(Prim::Div, &[args[0], args[1]]);
                let floored = cx.prim(Prim::Floor, &[ratio]);
                let scaled = cx.prim(Prim::Mul, &[floored, t]);
                cx.prim(Prim::Neg, &[scaled])
            });
            add_tangents(cx, tangents[0], minus)
        }
        ArithOp::IDiv => None,
    }
}

/// Transpose rules for the linear forms the JVP rules emit.
pub fn transpose(
    op: ArithOp,
    cx: &mut dyn super::Emitter,
    args: &[crate::core::ir::Atom],
    linear: &[bool],
    ct: crate::core::ir::Atom,
) -> Option<Vec<super::Tangent>> {
    use super::Prim;
    Some(match op {
        ArithOp::Add => vec![linear[0].then_some(ct), linear[1].then_some(ct)],
        ArithOp::Sub => vec![
            linear[0].then_some(ct),
            linear[1].then(|| cx.prim(Prim::Neg, &[ct])),
        ],
        ArithOp::Neg => vec![Some(cx.prim(Prim::Neg, &[ct]))],
        ArithOp::Mul => match (linear[0], linear[1]) {
            (true, false) => vec![Some(cx.prim(Prim::Mul, &[ct, args[1]])), None],
            (false, true) => vec![None, Some(cx.prim(Prim::Mul, &[args[0], ct]))],
            _ => return None,
        },
        ArithOp::Div => match (linear[0], linear[1]) {
            (true, false) => vec![Some(cx.prim(Prim::Div, &[ct, args[1]])), None],
            _ => return None,
        },
        ArithOp::Abs | ArithOp::Min | ArithOp::Max | ArithOp::Mod | ArithOp::IDiv => return None,
    })
}

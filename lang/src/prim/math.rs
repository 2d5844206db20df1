//! Math primitives: `sqrt exp exp2 log log2 log10 log1p expm1 sin cos tan tanh sinh cosh atan
//! floor ceil round pow atan2`, on floats only; the result has the operand type and `f32` is
//! computed in `f32`.
//!
//! Semantics: IEEE 754 as implemented by Rust's `std` (`log` of a negative number is NaN, and
//! so on). `round` rounds half away from zero; `pow` is float ^ float (`powf`).

use super::{operand, same_elem, PrimTypeError, ScalarRepr};
use crate::core::ir::{Elem, Scalar};

/// The operators of the math family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathOp {
    Sqrt,
    Exp,
    Exp2,
    Log,
    Log2,
    Log10,
    Log1p,
    Expm1,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sinh,
    Cosh,
    Atan,
    Floor,
    Ceil,
    Round,
    Pow,
    Atan2,
}

/// Arity rule.
pub fn arity(op: MathOp) -> usize {
    match op {
        MathOp::Pow | MathOp::Atan2 => 2,
        MathOp::Sqrt
        | MathOp::Exp
        | MathOp::Exp2
        | MathOp::Log
        | MathOp::Log2
        | MathOp::Log10
        | MathOp::Log1p
        | MathOp::Expm1
        | MathOp::Sin
        | MathOp::Cos
        | MathOp::Tan
        | MathOp::Tanh
        | MathOp::Sinh
        | MathOp::Cosh
        | MathOp::Atan
        | MathOp::Floor
        | MathOp::Ceil
        | MathOp::Round => 1,
    }
}

/// Type rule: all operands share one float element type, which is the result's.
pub fn result_elem(op: MathOp, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    match op {
        MathOp::Sqrt
        | MathOp::Exp
        | MathOp::Exp2
        | MathOp::Log
        | MathOp::Log2
        | MathOp::Log10
        | MathOp::Log1p
        | MathOp::Expm1
        | MathOp::Sin
        | MathOp::Cos
        | MathOp::Tan
        | MathOp::Tanh
        | MathOp::Sinh
        | MathOp::Cosh
        | MathOp::Atan
        | MathOp::Floor
        | MathOp::Ceil
        | MathOp::Round
        | MathOp::Pow
        | MathOp::Atan2 => {
            let elem = same_elem(operands)?;
            if elem.is_float() {
                Ok(elem)
            } else {
                Err(PrimTypeError(format!(
                    "expects float operands, got {}",
                    elem.name()
                )))
            }
        }
    }
}

/// Evaluation rule.
pub fn eval(op: MathOp, operands: &[Scalar]) -> Scalar {
    match operands.first().map(|scalar| scalar.elem()) {
        Some(Elem::F32) => eval_as::<f32>(op, operands),
        Some(Elem::F64) => eval_as::<f64>(op, operands),
        Some(Elem::I32 | Elem::I64 | Elem::U32 | Elem::U64 | Elem::Bool) | None => {
            debug_assert!(false, "{op:?} on non-float operands {operands:?}");
            Scalar::F64(f64::NAN)
        }
    }
}

fn eval_as<T: Float>(op: MathOp, operands: &[Scalar]) -> Scalar {
    let x = |position: usize| operand::<T>(operands, position);
    let res = match op {
        MathOp::Sqrt => x(0).sqrt(),
        MathOp::Exp => x(0).exp(),
        MathOp::Exp2 => x(0).exp2(),
        MathOp::Log => x(0).ln(),
        MathOp::Log2 => x(0).log2(),
        MathOp::Log10 => x(0).log10(),
        MathOp::Log1p => x(0).ln_1p(),
        MathOp::Expm1 => x(0).exp_m1(),
        MathOp::Sin => x(0).sin(),
        MathOp::Cos => x(0).cos(),
        MathOp::Tan => x(0).tan(),
        MathOp::Tanh => x(0).tanh(),
        MathOp::Sinh => x(0).sinh(),
        MathOp::Cosh => x(0).cosh(),
        MathOp::Atan => x(0).atan(),
        MathOp::Floor => x(0).floor(),
        MathOp::Ceil => x(0).ceil(),
        MathOp::Round => x(0).round(),
        MathOp::Pow => x(0).powf(x(1)),
        MathOp::Atan2 => x(0).atan2(x(1)),
    };
    res.into_scalar()
}

/// The float functions of `std`, shared by `f32` and `f64`.
trait Float: ScalarRepr {
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn exp2(self) -> Self;
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp_m1(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn atan(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    /// Half away from zero.
    fn round(self) -> Self;
    fn powf(self, other: Self) -> Self;
    fn atan2(self, other: Self) -> Self;
}

macro_rules! float_impl {
    ($($ty:ident),*) => {$(
        impl Float for $ty {
            fn sqrt(self) -> Self { $ty::sqrt(self) }
            fn exp(self) -> Self { $ty::exp(self) }
            fn exp2(self) -> Self { $ty::exp2(self) }
            fn ln(self) -> Self { $ty::ln(self) }
            fn log2(self) -> Self { $ty::log2(self) }
            fn log10(self) -> Self { $ty::log10(self) }
            fn ln_1p(self) -> Self { $ty::ln_1p(self) }
            fn exp_m1(self) -> Self { $ty::exp_m1(self) }
            fn sin(self) -> Self { $ty::sin(self) }
            fn cos(self) -> Self { $ty::cos(self) }
            fn tan(self) -> Self { $ty::tan(self) }
            fn tanh(self) -> Self { $ty::tanh(self) }
            fn sinh(self) -> Self { $ty::sinh(self) }
            fn cosh(self) -> Self { $ty::cosh(self) }
            fn atan(self) -> Self { $ty::atan(self) }
            fn floor(self) -> Self { $ty::floor(self) }
            fn ceil(self) -> Self { $ty::ceil(self) }
            fn round(self) -> Self { $ty::round(self) }
            fn powf(self, other: Self) -> Self { $ty::powf(self, other) }
            fn atan2(self, other: Self) -> Self { $ty::atan2(self, other) }
        }
    )*};
}

float_impl!(f32, f64);

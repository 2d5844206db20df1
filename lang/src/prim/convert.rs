//! Conversion primitives: `cast_<elem>` from any element type to any element type.
//!
//! Semantics (Rust's `as`, made explicit):
//! - float → int truncates toward zero and saturates at the type's bounds; NaN → 0;
//! - int → int wraps (two's complement reinterpretation of the low bits), int → float rounds
//!   to nearest, f64 → f32 rounds to nearest;
//! - bool → number is 0 or 1; number → bool is `x != 0` (so NaN → true).

use super::hlo::{self, Hlo};
use super::scalar::{Elem, Scalar};
use super::signature::{Interface, Signature, Slot};
use super::PrimTypeError;

/// The operators of the convert family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvertOp {
    Cast(Elem),
}

/// Arity rule.
pub fn arity(op: ConvertOp) -> usize {
    match op {
        ConvertOp::Cast(_) => 1,
    }
}

/// Type rule: any element type converts to any element type.
pub fn result_elem(op: ConvertOp, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    match op {
        ConvertOp::Cast(elem) => match operands {
            [_] => Ok(elem),
            _ => Err(PrimTypeError::operands("one operand", operands)),
        },
    }
}

/// Signature rule: a number to a number.
pub fn signature(op: ConvertOp) -> Signature {
    match op {
        ConvertOp::Cast(_) => Signature {
            interface: Some(Interface::Num),
            ..Signature::fixed(&[Slot::A], Slot::B)
        },
    }
}

/// Evaluation rule.
pub fn eval(op: ConvertOp, operands: &[Scalar]) -> Scalar {
    match op {
        ConvertOp::Cast(elem) => match operands.first() {
            Some(&scalar) => cast_scalar(scalar, elem),
            None => {
                debug_assert!(false, "cast without an operand");
                Scalar::zero(elem)
            }
        },
    }
}

/// Export rule: to `Bool` is `≠ 0`; float → integer truncates toward zero, saturates, and
/// sends NaN to zero; every other conversion is StableHLO's `convert`, which is Rust's `as`.
pub(crate) fn export<E: Hlo>(op: ConvertOp, cx: &mut E, args: &[E::Val]) -> E::Val {
    let ConvertOp::Cast(to) = op;
    let x = &args[0];
    let from = cx.elem(x);
    if from == to {
        return x.clone();
    }
    if to == Elem::Bool {
        let zero = cx.splat(Scalar::zero(from), x);
        return cx.compare("NE", x, &zero);
    }
    if !(from.is_float() && to.is_integer()) {
        return cx.convert(x, to);
    }
    let (min, max) = hlo::int_bounds(to);
    let as_float = |scalar: Scalar| match cast_scalar(scalar, Elem::F64) {
        Scalar::F64(v) => v,
        _ => 0.0,
    };
    // Bounds as floats of the source type: the lower one is exact (0 or −2ᵏ); the upper one
    // may round up to 2ᵏ, so values at or above it are set to the maximum after converting.
    let low = cx.splat(hlo::float(from, as_float(min)), x);
    let high = cx.splat(hlo::float(from, as_float(max)), x);
    let clamped = cx.op("clamp", &[&low, x, &high]);
    let converted = cx.convert(&clamped, to);
    let top = cx.compare("GE", x, &high);
    let max_val = cx.splat(max, &converted);
    let saturated = cx.select(&top, &max_val, &converted);
    let nan = cx.compare("NE", x, x);
    hlo::zero_where(cx, &nan, &saturated)
}

/// Converts a scalar to an element type (see the module header for the rules).
pub fn cast_scalar(scalar: Scalar, elem: Elem) -> Scalar {
    match scalar {
        Scalar::F32(x) => cast_number(x, elem),
        Scalar::F64(x) => cast_number(x, elem),
        Scalar::I32(x) => cast_number(x, elem),
        Scalar::I64(x) => cast_number(x, elem),
        Scalar::U32(x) => cast_number(x, elem),
        Scalar::U64(x) => cast_number(x, elem),
        Scalar::Bool(b) => cast_number(b, elem),
    }
}

/// A Rust element type with its conversion to every element type, by the rules of the
/// module header: Rust's `as` between numbers, `bool` as 0 or 1, `x != 0` to `bool`. The
/// interpreter's casts (`cast_scalar`) and the engine's (`exec`) are these functions.
pub trait Cast: Copy {
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_i32(self) -> i32;
    fn to_i64(self) -> i64;
    fn to_u32(self) -> u32;
    fn to_u64(self) -> u64;
    fn to_bool(self) -> bool;
    /// `x` converted to this type (`x.to_f32()` for `f32`, and so on).
    fn cast_from<T: Cast>(x: T) -> Self;
}

macro_rules! cast_number {
    ($($ty:ty => $to_self:ident),*) => {$(
        #[allow(clippy::unnecessary_cast)]
        impl Cast for $ty {
            fn cast_from<T: Cast>(x: T) -> Self { x.$to_self() }
            fn to_f32(self) -> f32 { self as f32 }
            fn to_f64(self) -> f64 { self as f64 }
            fn to_i32(self) -> i32 { self as i32 }
            fn to_i64(self) -> i64 { self as i64 }
            fn to_u32(self) -> u32 { self as u32 }
            fn to_u64(self) -> u64 { self as u64 }
            #[allow(clippy::float_cmp)]
            fn to_bool(self) -> bool { self != (0 as $ty) }
        }
    )*};
}

cast_number!(
    f32 => to_f32,
    f64 => to_f64,
    i32 => to_i32,
    i64 => to_i64,
    u32 => to_u32,
    u64 => to_u64
);

impl Cast for bool {
    fn cast_from<T: Cast>(x: T) -> Self {
        x.to_bool()
    }
    fn to_f32(self) -> f32 {
        u32::from(self) as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(u32::from(self))
    }
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn to_u32(self) -> u32 {
        u32::from(self)
    }
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn to_bool(self) -> bool {
        self
    }
}

fn cast_number<T: Cast>(x: T, elem: Elem) -> Scalar {
    match elem {
        Elem::F32 => Scalar::F32(x.to_f32()),
        Elem::F64 => Scalar::F64(x.to_f64()),
        Elem::I32 => Scalar::I32(x.to_i32()),
        Elem::I64 => Scalar::I64(x.to_i64()),
        Elem::U32 => Scalar::U32(x.to_u32()),
        Elem::U64 => Scalar::U64(x.to_u64()),
        Elem::Bool => Scalar::Bool(x.to_bool()),
    }
}

/// Casts between float types are linear; every other cast has a zero derivative.
pub fn linearity(op: ConvertOp) -> super::Linearity {
    match op {
        ConvertOp::Cast(elem) if elem.is_float() => super::Linearity::Linear,
        ConvertOp::Cast(_) => super::Linearity::NonDifferentiable,
    }
}

/// JVP: a float-to-float cast casts the tangent; a cast to an integer type has no tangent
/// (a tangent is only ever attached to a float value, so the source is a float here).
pub fn jvp<A: Copy>(
    op: ConvertOp,
    cx: &mut dyn super::Emitter<Atom = A>,
    tangents: &[super::Tangent<A>],
) -> super::Tangent<A> {
    match op {
        ConvertOp::Cast(elem) if elem.is_float() => {
            tangents[0].map(|t| cx.prim(super::Prim::Cast(elem), &[t]))
        }
        ConvertOp::Cast(_) => None,
    }
}

/// Transpose of a float cast: cast the cotangent back to the operand's type.
pub fn transpose<A: Copy>(
    op: ConvertOp,
    cx: &mut dyn super::Emitter<Atom = A>,
    args: &[A],
    linear: &[bool],
    ct: A,
) -> Option<Vec<super::Tangent<A>>> {
    match op {
        ConvertOp::Cast(elem) if elem.is_float() && linear[0] => {
            let source = cx.elem(args[0]);
            Some(vec![Some(cx.prim(super::Prim::Cast(source), &[ct]))])
        }
        ConvertOp::Cast(_) => None,
    }
}

//! Math primitives: `sqrt exp exp2 log log2 log10 log1p expm1 sin cos tan tanh sinh cosh atan
//! floor ceil round pow atan2`, and `stop_gradient` (the identity, with derivative zero), on
//! floats only; the result has the operand type and `f32` is computed in `f32`.
//!
//! Semantics: IEEE 754 as implemented by Rust's `std` (`log` of a negative number is NaN, and
//! so on); `exp`, `log`, `tanh`, `sin`, `cos` and `pow` are `vmath`'s, within 2 ulp of libm. `round` rounds half away from zero; `pow` is float ^ float (`powf`).

use super::hlo::{self, Hlo};
use super::scalar::{Elem, Scalar};
use super::signature::{Interface, Signature};
use super::{operand_pair, same_elem_where, Apply, Lift, PrimTypeError, ScalarRepr};

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
    StopGradient,
}

/// Sign rule (Note [Sign-clear values] in `prim`): `exp`, `exp2` and `cosh` are `+0` or above
/// (or NaN) for every operand; `sqrt`, `tanh` and `stop_gradient` keep a clear sign bit.
pub fn sign_clear(op: MathOp, operands: &[bool]) -> bool {
    match op {
        MathOp::Exp | MathOp::Exp2 | MathOp::Cosh => true,
        MathOp::Sqrt | MathOp::Tanh | MathOp::StopGradient => operands[0],
        MathOp::Log
        | MathOp::Log2
        | MathOp::Log10
        | MathOp::Log1p
        | MathOp::Expm1
        | MathOp::Sin
        | MathOp::Cos
        | MathOp::Tan
        | MathOp::Sinh
        | MathOp::Atan
        | MathOp::Floor
        | MathOp::Ceil
        | MathOp::Round
        | MathOp::Pow
        | MathOp::Atan2 => false,
    }
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
        | MathOp::Round
        | MathOp::StopGradient => 1,
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
        | MathOp::Atan2
        | MathOp::StopGradient => same_elem_where(operands, "float operands", Elem::is_float),
    }
}

/// Signature rule: Dex's `Floating` functions, by their names.
pub fn signature(op: MathOp) -> Signature {
    let name = match op {
        MathOp::Sqrt => "sqrt",
        MathOp::Exp => "exp",
        MathOp::Exp2 => "exp2",
        MathOp::Log => "log",
        MathOp::Log2 => "log2",
        MathOp::Log10 => "log10",
        MathOp::Log1p => "log1p",
        MathOp::Expm1 => "expm1",
        MathOp::Sin => "sin",
        MathOp::Cos => "cos",
        MathOp::Tan => "tan",
        MathOp::Tanh => "tanh",
        MathOp::Sinh => "sinh",
        MathOp::Cosh => "cosh",
        MathOp::Atan => "atan",
        MathOp::Floor => "floor",
        MathOp::Ceil => "ceil",
        MathOp::Round => "round",
        MathOp::Pow => "pow",
        MathOp::Atan2 => "atan2",
        MathOp::StopGradient => "stop_gradient",
    };
    Signature::same(arity(op), Interface::Floating).named(name)
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
    let (x, y) = operand_pair::<T>(operands, arity(op) == 2);
    apply(op, x, y).into_scalar()
}

/// `op` on typed operands (`y` is ignored by the unary functions): the evaluation rule for
/// callers that know the element type (`exec::register_code`).
pub(crate) fn apply<T: Float>(op: MathOp, x: T, y: T) -> T {
    lift(op, Apply { x, y })
}

/// The one table of which function implements each math primitive (see [`Lift`]): `eval`
/// applies it and the engine's kernels are built from it, so a new primitive is added here
/// only.
pub(crate) fn lift<T: Float, L: Lift<T>>(op: MathOp, lift: L) -> L::Output {
    match op {
        MathOp::Sqrt => lift.unary(T::sqrt),
        MathOp::Exp => lift.unary(T::exp),
        MathOp::Exp2 => lift.unary(T::exp2),
        MathOp::Log => lift.unary(T::ln),
        MathOp::Log2 => lift.unary(T::log2),
        MathOp::Log10 => lift.unary(T::log10),
        MathOp::Log1p => lift.unary(T::ln_1p),
        MathOp::Expm1 => lift.unary(T::exp_m1),
        MathOp::Sin => lift.unary(T::sin),
        MathOp::Cos => lift.unary(T::cos),
        MathOp::Tan => lift.unary(T::tan),
        MathOp::Tanh => lift.unary(T::tanh),
        MathOp::Sinh => lift.unary(T::sinh),
        MathOp::Cosh => lift.unary(T::cosh),
        MathOp::Atan => lift.unary(T::atan),
        MathOp::Floor => lift.unary(T::floor),
        MathOp::Ceil => lift.unary(T::ceil),
        MathOp::Round => lift.unary(T::round),
        MathOp::StopGradient => lift.unary(|x| x),
        MathOp::Pow => lift.binary(T::powf),
        MathOp::Atan2 => lift.binary(T::atan2),
    }
}

/// Export rule: StableHLO's operation where it has one with the same meaning; `exp2`,
/// `log2`, `log10`, `sinh`, `cosh` and `atan` written with others; `stop_gradient` is the
/// identity (the `ad` pass erased it; an exported program is differentiated already).
pub(crate) fn export<E: Hlo>(op: MathOp, cx: &mut E, args: &[E::Val]) -> E::Val {
    let x = &args[0];
    let elem = cx.elem(x);
    let scaled_log = |cx: &mut E, ln_base: f64| {
        let log = cx.op("log", &[x]);
        let base = cx.splat(hlo::float(elem, ln_base), x);
        cx.op("divide", &[&log, &base])
    };
    let halve = |cx: &mut E, y: &E::Val| {
        let half = cx.splat(hlo::float(elem, 0.5), y);
        cx.op("multiply", &[y, &half])
    };
    match op {
        MathOp::Sqrt => cx.op("sqrt", &[x]),
        MathOp::Exp => cx.op("exponential", &[x]),
        MathOp::Exp2 => {
            let two = cx.splat(hlo::float(elem, 2.0), x);
            cx.op("power", &[&two, x])
        }
        MathOp::Log => cx.op("log", &[x]),
        MathOp::Log2 => scaled_log(cx, std::f64::consts::LN_2),
        MathOp::Log10 => scaled_log(cx, std::f64::consts::LN_10),
        MathOp::Log1p => cx.op("log_plus_one", &[x]),
        MathOp::Expm1 => cx.op("exponential_minus_one", &[x]),
        MathOp::Sin => cx.op("sine", &[x]),
        MathOp::Cos => cx.op("cosine", &[x]),
        MathOp::Tan => cx.op("tan", &[x]),
        MathOp::Tanh => cx.op("tanh", &[x]),
        MathOp::Sinh => {
            // (expm1 x − expm1 (−x)) / 2 stays accurate near zero, unlike (eˣ − e⁻ˣ) / 2.
            let negated = cx.op("negate", &[x]);
            let up = cx.op("exponential_minus_one", &[x]);
            let down = cx.op("exponential_minus_one", &[&negated]);
            let difference = cx.op("subtract", &[&up, &down]);
            halve(cx, &difference)
        }
        MathOp::Cosh => {
            let negated = cx.op("negate", &[x]);
            let up = cx.op("exponential", &[x]);
            let down = cx.op("exponential", &[&negated]);
            let total = cx.op("add", &[&up, &down]);
            halve(cx, &total)
        }
        MathOp::Atan => {
            let one = cx.splat(hlo::one(elem), x);
            cx.op("atan2", &[x, &one])
        }
        MathOp::Floor => cx.op("floor", &[x]),
        MathOp::Ceil => cx.op("ceil", &[x]),
        // Rust's `round`: halves away from zero.
        MathOp::Round => cx.op("round_nearest_afz", &[x]),
        MathOp::Pow => cx.op("power", &[x, &args[1]]),
        MathOp::Atan2 => cx.op("atan2", &[x, &args[1]]),
        MathOp::StopGradient => x.clone(),
    }
}

/// A slice function: maps a slice of inputs into a slice of outputs of the same length.
pub(crate) type SliceFn<T> = fn(&[T], &mut [T]);

/// The vectorised slice function of a unary math primitive, where `vmath` has one (the same
/// bits as [`lift`]'s function per element); the engine's lanes prefer it.
pub(crate) fn slice_fn<T: Float>(op: MathOp) -> Option<SliceFn<T>> {
    match op {
        MathOp::Exp => Some(T::exp_slice),
        MathOp::Log => Some(T::ln_slice),
        MathOp::Tanh => Some(T::tanh_slice),
        MathOp::Sin => Some(T::sin_slice),
        MathOp::Cos => Some(T::cos_slice),
        MathOp::Sqrt
        | MathOp::Exp2
        | MathOp::Log2
        | MathOp::Log10
        | MathOp::Log1p
        | MathOp::Expm1
        | MathOp::Tan
        | MathOp::Sinh
        | MathOp::Cosh
        | MathOp::Atan
        | MathOp::Floor
        | MathOp::Ceil
        | MathOp::Round
        | MathOp::StopGradient
        | MathOp::Pow
        | MathOp::Atan2 => None,
    }
}

/// The float functions, shared by `f32` and `f64`: `exp`, `log`, `tanh`, `sin`, `cos` and
/// `pow` are `vmath`'s (vectorisable, within 2 ulp of libm; the engine's kernels use the same
/// functions, so there is one meaning), the others `std`'s.
pub(crate) trait Float: ScalarRepr {
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
    // `vmath`'s slice versions of `exp`, `ln`, `tanh`, `sin` and `cos`.
    fn exp_slice(xs: &[Self], out: &mut [Self]);
    fn ln_slice(xs: &[Self], out: &mut [Self]);
    fn tanh_slice(xs: &[Self], out: &mut [Self]);
    fn sin_slice(xs: &[Self], out: &mut [Self]);
    fn cos_slice(xs: &[Self], out: &mut [Self]);
}

macro_rules! float_impl {
    ($($ty:ident: $exp:ident, $log:ident, $tanh:ident, $sin:ident, $cos:ident, $pow:ident;
       $exp_s:ident, $log_s:ident, $tanh_s:ident, $sin_s:ident, $cos_s:ident;)*) => {$(
        impl Float for $ty {
            fn sqrt(self) -> Self { $ty::sqrt(self) }
            fn exp(self) -> Self { super::vmath::$exp(self) }
            fn exp2(self) -> Self { $ty::exp2(self) }
            fn ln(self) -> Self { super::vmath::$log(self) }
            fn log2(self) -> Self { $ty::log2(self) }
            fn log10(self) -> Self { $ty::log10(self) }
            fn ln_1p(self) -> Self { $ty::ln_1p(self) }
            fn exp_m1(self) -> Self { $ty::exp_m1(self) }
            fn sin(self) -> Self { super::vmath::$sin(self) }
            fn cos(self) -> Self { super::vmath::$cos(self) }
            fn tan(self) -> Self { $ty::tan(self) }
            fn tanh(self) -> Self { super::vmath::$tanh(self) }
            fn sinh(self) -> Self { $ty::sinh(self) }
            fn cosh(self) -> Self { $ty::cosh(self) }
            fn atan(self) -> Self { $ty::atan(self) }
            fn floor(self) -> Self { $ty::floor(self) }
            fn ceil(self) -> Self { $ty::ceil(self) }
            fn round(self) -> Self { $ty::round(self) }
            fn powf(self, other: Self) -> Self { super::vmath::$pow(self, other) }
            fn atan2(self, other: Self) -> Self { $ty::atan2(self, other) }
            fn exp_slice(xs: &[Self], out: &mut [Self]) { super::vmath::$exp_s(xs, out) }
            fn ln_slice(xs: &[Self], out: &mut [Self]) { super::vmath::$log_s(xs, out) }
            fn tanh_slice(xs: &[Self], out: &mut [Self]) { super::vmath::$tanh_s(xs, out) }
            fn sin_slice(xs: &[Self], out: &mut [Self]) { super::vmath::$sin_s(xs, out) }
            fn cos_slice(xs: &[Self], out: &mut [Self]) { super::vmath::$cos_s(xs, out) }
        }
    )*};
}

float_impl! {
    f32: exp_f32, log_f32, tanh_f32, sin_f32, cos_f32, pow_f32;
        exp_f32_slice, log_f32_slice, tanh_f32_slice, sin_f32_slice, cos_f32_slice;
    f64: exp_f64, log_f64, tanh_f64, sin_f64, cos_f64, pow_f64;
        exp_f64_slice, log_f64_slice, tanh_f64_slice, sin_f64_slice, cos_f64_slice;
}

/// Differentiability of the math family.
pub fn linearity(op: MathOp) -> super::Linearity {
    use super::Linearity;
    match op {
        MathOp::Floor | MathOp::Ceil | MathOp::Round | MathOp::StopGradient => {
            Linearity::NonDifferentiable
        }
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
        | MathOp::Pow
        | MathOp::Atan2 => Linearity::Nonlinear,
    }
}

/// JVP rules: the tangent is the derivative times the operand's tangent.
pub fn jvp<A: Copy>(
    op: MathOp,
    cx: &mut dyn super::Emitter<Atom = A>,
    args: &[A],
    result: A,
    tangents: &[super::Tangent<A>],
) -> super::Tangent<A> {
    use super::{add_tangents, scale, Prim};
    let x = args[0];
    let unary =
        |cx: &mut dyn super::Emitter<Atom = A>, derivative: A| scale(cx, derivative, tangents[0]);
    match op {
        // d sqrt x = dx / (2 sqrt x); at x = 0 the derivative is taken as 0 (not inf), so
        // that sqrt of a square differentiates to 0 at the origin. The factor is selected on
        // primal values, so the transpose (a multiplication by it) stays finite too.
        MathOp::Sqrt => {
            let two = cx.constant(2.0, x);
            let denominator = cx.prim(Prim::Mul, &[two, result]);
            let one = cx.constant(1.0, x);
            let reciprocal = cx.prim(Prim::Div, &[one, denominator]);
            let zero = cx.constant(0.0, x);
            let at_zero = cx.prim(Prim::Eq, &[result, zero]);
            let factor = cx.prim(Prim::Select, &[at_zero, zero, reciprocal]);
            unary(cx, factor)
        }
        MathOp::Exp => unary(cx, result),
        MathOp::Exp2 => {
            let ln2 = cx.constant(std::f64::consts::LN_2, x);
            let derivative = cx.prim(Prim::Mul, &[result, ln2]);
            unary(cx, derivative)
        }
        MathOp::Log => tangents[0].map(|t| cx.prim(Prim::Div, &[t, x])),
        MathOp::Log2 | MathOp::Log10 => tangents[0].map(|t| {
            let base = if op == MathOp::Log2 {
                std::f64::consts::LN_2
            } else {
                std::f64::consts::LN_10
            };
            let ln_base = cx.constant(base, x);
            let denominator = cx.prim(Prim::Mul, &[x, ln_base]);
            cx.prim(Prim::Div, &[t, denominator])
        }),
        MathOp::Log1p => tangents[0].map(|t| {
            let one = cx.constant(1.0, x);
            let denominator = cx.prim(Prim::Add, &[one, x]);
            cx.prim(Prim::Div, &[t, denominator])
        }),
        MathOp::Expm1 => {
            let one = cx.constant(1.0, x);
            let derivative = cx.prim(Prim::Add, &[result, one]);
            unary(cx, derivative)
        }
        MathOp::Sin => {
            let derivative = cx.prim(Prim::Cos, &[x]);
            unary(cx, derivative)
        }
        // `0 - sin x`, not `-(sin x)`: at `x = 0` the derivative is `0.`, as Dex prints it.
        MathOp::Cos => {
            let sine = cx.prim(Prim::Sin, &[x]);
            let zero = cx.constant(0.0, x);
            let derivative = cx.prim(Prim::Sub, &[zero, sine]);
            unary(cx, derivative)
        }
        // d tan x = 1 + tan² x
        MathOp::Tan => {
            let one = cx.constant(1.0, x);
            let square = cx.prim(Prim::Mul, &[result, result]);
            let derivative = cx.prim(Prim::Add, &[one, square]);
            unary(cx, derivative)
        }
        // d tanh x = 1 - tanh² x
        MathOp::Tanh => {
            let one = cx.constant(1.0, x);
            let square = cx.prim(Prim::Mul, &[result, result]);
            let derivative = cx.prim(Prim::Sub, &[one, square]);
            unary(cx, derivative)
        }
        MathOp::Sinh => {
            let derivative = cx.prim(Prim::Cosh, &[x]);
            unary(cx, derivative)
        }
        MathOp::Cosh => {
            let derivative = cx.prim(Prim::Sinh, &[x]);
            unary(cx, derivative)
        }
        MathOp::Atan => tangents[0].map(|t| {
            let one = cx.constant(1.0, x);
            let square = cx.prim(Prim::Mul, &[x, x]);
            let denominator = cx.prim(Prim::Add, &[one, square]);
            cx.prim(Prim::Div, &[t, denominator])
        }),
        // Zero by definition for `stop_gradient`: no tangent flows through it.
        MathOp::Floor | MathOp::Ceil | MathOp::Round | MathOp::StopGradient => None,
        // d x^y = y x^(y-1) dx + x^y log x dy; the second term only when the exponent has a
        // tangent, so constant exponents of negative bases stay finite.
        MathOp::Pow => {
            let y = args[1];
            let base_term = tangents[0].map(|t| {
                let one = cx.constant(1.0, x);
                let exponent = cx.prim(Prim::Sub, &[y, one]);
                let power = cx.prim(Prim::Pow, &[x, exponent]);
                let derivative = cx.prim(Prim::Mul, &[y, power]);
                cx.prim(Prim::Mul, &[derivative, t])
            });
            let exponent_term = tangents[1].map(|t| {
                let log = cx.prim(Prim::Log, &[x]);
                let derivative = cx.prim(Prim::Mul, &[result, log]);
                cx.prim(Prim::Mul, &[derivative, t])
            });
            add_tangents(cx, base_term, exponent_term)
        }
        // atan2(y, x): d = (x dy - y dx) / (x² + y²)
        MathOp::Atan2 => {
            let (y, x) = (args[0], args[1]);
            let y2 = cx.prim(Prim::Mul, &[y, y]);
            let x2 = cx.prim(Prim::Mul, &[x, x]);
            let norm = cx.prim(Prim::Add, &[x2, y2]);
            let dy_term = tangents[0].map(|t| {
                let coefficient = cx.prim(Prim::Div, &[x, norm]);
                cx.prim(Prim::Mul, &[coefficient, t])
            });
            let dx_term = tangents[1].map(|t| {
                let ratio = cx.prim(Prim::Div, &[y, norm]);
                let coefficient = cx.prim(Prim::Neg, &[ratio]);
                cx.prim(Prim::Mul, &[coefficient, t])
            });
            add_tangents(cx, dy_term, dx_term)
        }
    }
}

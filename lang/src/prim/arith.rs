//! Arithmetic primitives: `add sub mul div neg abs min max mod idiv` on every numeric element
//! type; the result has the operands' element type.
//!
//! Semantics (docs/language.md, totality):
//! - Integers wrap on overflow (`add`, `sub`, `mul`, `neg`, `abs`; `neg` and `abs` of the
//!   minimum signed value give it back; `neg` on unsigned types wraps).
//! - `div` on integers truncates toward zero; `idiv` floors; both give 0 on division by zero.
//! - `mod` is floored (the result has the sign of the divisor) and `x mod 0 = 0` on integers; on
//!   floats it is the floored fmod (`x - y * floor(x / y)` computed as `fmod` plus a sign fix),
//!   which is NaN for `y = 0` as IEEE 754 says.
//! - `idiv` on floats is `floor(x / y)`.
//! - `min`/`max` on floats give NaN if either operand is NaN.

use super::hlo::{self, Hlo};
use super::scalar::{Elem, Scalar};
use super::signature::{ByMethod, Interface, Signature};
use super::{operand_pair, same_elem_where, Apply, Lift, PrimTypeError, ScalarRepr};

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

/// Sign rule (Note [Sign-clear values] in `prim`): sums, products and quotients of values
/// `+0` or above (or NaN) are `+0` or above (or NaN), `+0 + +0` included; `abs` always is;
/// `max` is when either operand is (it is at least that operand, and `-0` is below `+0`),
/// `min` when both are.
pub fn sign_clear(op: ArithOp, operands: &[bool]) -> bool {
    match op {
        ArithOp::Add | ArithOp::Mul | ArithOp::Div | ArithOp::Min => {
            operands.iter().all(|&clear| clear)
        }
        ArithOp::Max => operands.iter().any(|&clear| clear),
        ArithOp::Abs => true,
        ArithOp::Sub | ArithOp::Neg | ArithOp::Mod | ArithOp::IDiv => false,
    }
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
        | ArithOp::IDiv => same_elem_where(operands, "numeric operands", Elem::is_numeric),
    }
}

/// Signature rule: Dex's `Add`, `Sub`, `Mul`, `Fractional` (`/`) for the operators, which
/// read at a user's type through those interfaces' methods; `neg` is `zero - x` there; `min`
/// and `max` need `Ord`, `abs`, `mod` and `idiv` a number.
pub fn signature(op: ArithOp) -> Signature {
    use ByMethod::{Call, Choose, FromZero};
    let infix =
        |interface, symbol, method| Signature::same(2, interface).infix(symbol).by(Call(method));
    let choice = |name, method| {
        Signature::same(2, Interface::Ord)
            .named(name)
            .by(Choose(method))
    };
    match op {
        ArithOp::Add => infix(Interface::Add, "+", "add"),
        ArithOp::Sub => infix(Interface::Sub, "-", "sub"),
        ArithOp::Mul => infix(Interface::Mul, "*", "mul"),
        ArithOp::Div => infix(Interface::Div, "/", "divide"),
        ArithOp::Neg => Signature::same(1, Interface::Sub)
            .named("neg")
            .by(FromZero("sub")),
        ArithOp::Abs => Signature::same(1, Interface::Num).named("abs"),
        ArithOp::Min => choice("min", "<"),
        ArithOp::Max => choice("max", ">"),
        ArithOp::Mod => Signature::same(2, Interface::Num).named("mod"),
        ArithOp::IDiv => Signature::same(2, Interface::Num).named("idiv"),
    }
}

/// Identity rule: the identity of `op` as a monoid on `elem`, if it has one. For floats
/// `add`'s is `-0.0` (`0.0 + -0.0` is `0.0`), and `max`'s `-inf` (NaN still propagates).
pub fn identity(op: ArithOp, elem: Elem) -> Option<Scalar> {
    let (low, high) = hlo::int_bounds(elem);
    let float = |value: f64| Some(hlo::float(elem, value));
    match (op, elem) {
        (ArithOp::Add | ArithOp::Mul, Elem::Bool) => None,
        (ArithOp::Add, Elem::F32 | Elem::F64) => float(-0.0),
        (ArithOp::Add, _) => Some(Scalar::zero(elem)),
        (ArithOp::Mul, _) => Some(hlo::one(elem)),
        (ArithOp::Max, Elem::F32 | Elem::F64) => float(f64::NEG_INFINITY),
        (ArithOp::Min, Elem::F32 | Elem::F64) => float(f64::INFINITY),
        (ArithOp::Max | ArithOp::Min, Elem::Bool) => None,
        (ArithOp::Max, _) => Some(low),
        (ArithOp::Min, _) => Some(high),
        (ArithOp::Sub | ArithOp::Div | ArithOp::Neg | ArithOp::Abs | ArithOp::Mod, _)
        | (ArithOp::IDiv, _) => None,
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
    lift(op, Apply { x, y })
}

/// The one table of which function implements each arithmetic primitive (see [`Lift`]).
pub(crate) fn lift<T: Arith, L: Lift<T>>(op: ArithOp, lift: L) -> L::Output {
    match op {
        ArithOp::Add => lift.binary(T::add),
        ArithOp::Sub => lift.binary(T::sub),
        ArithOp::Mul => lift.binary(T::mul),
        ArithOp::Div => lift.binary(T::div),
        ArithOp::Neg => lift.unary(T::neg),
        ArithOp::Abs => lift.unary(T::abs),
        ArithOp::Min => lift.binary(T::min),
        ArithOp::Max => lift.binary(T::max),
        ArithOp::Mod => lift.binary(T::modulo),
        ArithOp::IDiv => lift.binary(T::idiv),
    }
}

/// Export rule: StableHLO's operations with dx's total semantics. Integer division and `mod`
/// by zero give zero (the divisor is made safe first), `mod` and `idiv` are floored, float
/// `min`/`max` propagate NaN (as StableHLO's do), `abs` of an unsigned value is the value.
pub(crate) fn export<E: Hlo>(op: ArithOp, cx: &mut E, args: &[E::Val]) -> E::Val {
    let x = &args[0];
    let y = || &args[1];
    let elem = cx.elem(x);
    let unsigned = matches!(elem, Elem::U32 | Elem::U64);
    match op {
        ArithOp::Add => cx.op("add", &[x, y()]),
        ArithOp::Sub => cx.op("subtract", &[x, y()]),
        ArithOp::Mul => cx.op("multiply", &[x, y()]),
        ArithOp::Div if elem.is_float() => cx.op("divide", &[x, y()]),
        ArithOp::Div => {
            let (zero_divisor, divisor) = hlo::guard_zero(cx, y());
            let quotient = cx.op("divide", &[x, &divisor]);
            hlo::zero_where(cx, &zero_divisor, &quotient)
        }
        ArithOp::Neg => cx.op("negate", &[x]),
        ArithOp::Abs if unsigned => x.clone(),
        ArithOp::Abs => cx.op("abs", &[x]),
        ArithOp::Min => cx.op("minimum", &[x, y()]),
        ArithOp::Max => cx.op("maximum", &[x, y()]),
        ArithOp::Mod if elem.is_float() => {
            let rem = cx.op("remainder", &[x, y()]);
            hlo::floor_remainder(cx, &rem, y())
        }
        ArithOp::Mod => {
            let (zero_divisor, divisor) = hlo::guard_zero(cx, y());
            let rem = cx.op("remainder", &[x, &divisor]);
            let floored = if unsigned {
                rem
            } else {
                hlo::floor_remainder(cx, &rem, &divisor)
            };
            hlo::zero_where(cx, &zero_divisor, &floored)
        }
        ArithOp::IDiv if elem.is_float() => {
            let quotient = cx.op("divide", &[x, y()]);
            cx.op("floor", &[&quotient])
        }
        ArithOp::IDiv => {
            let (zero_divisor, divisor) = hlo::guard_zero(cx, y());
            let quotient = cx.op("divide", &[x, &divisor]);
            let floored = if unsigned {
                quotient
            } else {
                // Floored division: one less where the truncated remainder is non-zero and
                // its sign differs from the divisor's.
                let rem = cx.op("remainder", &[x, &divisor]);
                let adjust = hlo::sign_mismatch(cx, &rem, &divisor);
                let one = cx.splat(hlo::one(elem), x);
                let less = cx.op("subtract", &[&quotient, &one]);
                cx.select(&adjust, &less, &quotient)
            };
            hlo::zero_where(cx, &zero_divisor, &floored)
        }
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

/// A selection (`Max` or `Min`, Note [Float selections]) as the engine's folds use it:
/// `combine` two values (`Arith::max`/`Arith::min`), or `fold` many into `acc` in any order,
/// with the bits of combining them one by one (`None`: no values and no `acc`), written so
/// that it vectorises.
pub(crate) trait Select<T>: Copy + Send + Sync {
    fn combine(a: T, b: T) -> T;
    fn fold(acc: Option<T>, values: &[T]) -> Option<T>;
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Max;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Min;

macro_rules! select_int {
    ($($ty:ty),*) => {$(
        impl Select<$ty> for Max {
            fn combine(a: $ty, b: $ty) -> $ty { Arith::max(a, b) }
            fn fold(acc: Option<$ty>, values: &[$ty]) -> Option<$ty> {
                values.iter().copied().chain(acc).max()
            }
        }
        impl Select<$ty> for Min {
            fn combine(a: $ty, b: $ty) -> $ty { Arith::min(a, b) }
            fn fold(acc: Option<$ty>, values: &[$ty]) -> Option<$ty> {
                values.iter().copied().chain(acc).min()
            }
        }
    )*};
}

select_int!(i32, i64, u32, u64);

// Note [Float selections] orders floats totally with -0 < +0 and lets NaN absorb: the same
// order as the integers `key(x)` (the bits as a signed integer, with the bits after the sign
// flipped for negative values, so that more negative floats get smaller keys; -0 gets -1 and
// +0 gets 0), apart from NaN. So a fold takes the max (min) of the keys in integer vector
// lanes, notes whether any value is NaN, and maps the best key back to its float.
//
// Most folds take a faster path first: the float order's max (min), one compare-and-select
// (`maxps`) per vector of values, noting NaNs on the side. Without NaN, the float order
// differs from the total one only in ranking -0 and +0 equal, and two distinct floats other
// than those are never equal; so when the best value is not zero, it has the total order's
// bits. Otherwise (a NaN, or a best value of ±0) the fold is redone on the keys. The key
// transform costs five vector operations per vector of values, so the float path is faster
// even on values streamed from L3 (a plain row maximum of 4096×1000 floats on one core:
// 2.0–2.2 ms on keys, 1.5 ms on the float path; 4× on data in L2).
macro_rules! select_float {
    ($($ty:ty: $int:ty, $uint:ty);*) => {$(
        impl Select<$ty> for Max {
            fn combine(a: $ty, b: $ty) -> $ty { Arith::max(a, b) }
            fn fold(acc: Option<$ty>, values: &[$ty]) -> Option<$ty> {
                select_float!(@fold $ty, $int, $uint, acc, values, <$int>::MIN, max, >, NEG_INFINITY)
            }
        }
        impl Select<$ty> for Min {
            fn combine(a: $ty, b: $ty) -> $ty { Arith::min(a, b) }
            fn fold(acc: Option<$ty>, values: &[$ty]) -> Option<$ty> {
                select_float!(@fold $ty, $int, $uint, acc, values, <$int>::MAX, min, <, INFINITY)
            }
        }
    )*};
    (@fold $ty:ty, $int:ty, $uint:ty, $acc:expr, $values:expr, $worst:expr, $select:ident,
     $better:tt, $worst_float:ident) => {{
        let (acc, values): (Option<$ty>, &[$ty]) = ($acc, $values);
        if values.is_empty() {
            return acc;
        }
        // The float order's best, in four vectors of lane accumulators (arrays, which LLVM
        // keeps in registers; a `fold` over a tuple with a float select does not vectorise),
        // and NaNs noted as all-ones masks (the compare's own result: no `and` with 1).
        const WIDTH: usize = 128 / std::mem::size_of::<$ty>();
        let mut best = [<$ty>::$worst_float; WIDTH];
        let mut nans: [$uint; WIDTH] = [0; WIDTH];
        let groups = values.chunks_exact(WIDTH);
        let rest = groups.remainder();
        for group in groups {
            for lane in 0..WIDTH {
                let value = group[lane];
                best[lane] = if value $better best[lane] { value } else { best[lane] };
                nans[lane] |= if value.is_nan() { <$uint>::MAX } else { 0 };
            }
        }
        for (lane, &value) in rest.iter().enumerate() {
            best[lane] = if value $better best[lane] { value } else { best[lane] };
            nans[lane] |= if value.is_nan() { <$uint>::MAX } else { 0 };
        }
        // The lanes' best by halves (five levels of independent selects, not a chain of
        // thirty-two: on rows of 64 floats the chain was most of the fold). Without NaN and
        // ±0 the best of any grouping has the same bits.
        let mut width = WIDTH;
        while width > 1 {
            width /= 2;
            for lane in 0..width {
                let other = best[lane + width];
                best[lane] = if other $better best[lane] { other } else { best[lane] };
            }
        }
        let fast = best[0];
        if fast != 0.0 && nans.iter().fold(0, |any, &nan| any | nan) == 0 {
            return Some(acc.map_or(fast, |acc| Arith::$select(acc, fast)));
        }
        let key = |value: $ty| {
            let bits = value.to_bits() as $int;
            bits ^ (((bits >> (<$int>::BITS - 1)) as $uint) >> 1) as $int
        };
        // One pass with both accumulators: LLVM vectorises this form as reductions (an
        // array of lane accumulators it vectorises across chunks instead, with gathers).
        let (total, nans) = values.iter().fold(($worst, 0u32), |(total, nans), &value| {
            (Ord::$select(total, key(value)), nans | u32::from(value.is_nan()))
        });
        let any_nan = nans != 0;
        // A NaN alone is itself; combined with anything, `Arith`'s NaN.
        let first_nan = any_nan.then(|| values.iter().copied().find(|value| value.is_nan()));
        let folded = match first_nan.flatten() {
            Some(nan) if values.len() == 1 => nan,
            Some(nan) => Arith::$select(nan, nan),
            None => {
                let bits = total ^ (((total >> (<$int>::BITS - 1)) as $uint) >> 1) as $int;
                <$ty>::from_bits(bits as $uint)
            }
        };
        Some(acc.map_or(folded, |acc| Arith::$select(acc, folded)))
    }};
}

select_float!(f32: i32, u32; f64: i64, u64);

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

/// JVP rules ([Smeding25] Fig 15, [Shaikhha23] Fig 7).
pub fn jvp<A: Copy>(
    op: ArithOp,
    cx: &mut dyn super::Emitter<Atom = A>,
    args: &[A],
    result: A,
    tangents: &[super::Tangent<A>],
) -> super::Tangent<A> {
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
        // See Note [Ties of min and max].
        ArithOp::Min | ArithOp::Max => {
            let is_left = cx.prim(Prim::Eq, &[args[0], result]);
            let is_right = cx.prim(Prim::Eq, &[args[1], result]);
            let left = tangents[0].map(|t| {
                let share = tie_share(cx, is_left, is_right, result);
                cx.prim(Prim::Mul, &[share, t])
            });
            let right = tangents[1].map(|t| {
                let share = tie_share(cx, is_right, is_left, result);
                cx.prim(Prim::Mul, &[share, t])
            });
            add_tangents(cx, left, right)
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

// Note [Ties of min and max]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `max x y` (and `min`) passes its tangent on as JAX's `maximum` does: each operand's share
// is 1 when it is the result and the other is not, 1/2 each at a tie, and 0 otherwise, also
// when the result is NaN. So `min a b + max a b = a + b` holds for derivatives too, at ties
// as well, and the derivative is symmetric in the operands. (Giving a tie to the first
// operand, as a select would, makes `d(min x c + max x c)/dx` 2 at `x = c`.) The reductions
// `maximum` and `minimum` share their tangent evenly among the tied elements
// (`ops::monoid`'s `selected_tangent`), as JAX's `max` does.

/// The share of `min`/`max`'s tangent that goes to an operand (Note [Ties of min and max]):
/// `(is_own ? 1 : 0) / (is_other ? 2 : 1)`, where `is_own` says whether the operand equals
/// the result and `is_other` whether the other one does.
fn tie_share<A: Copy>(
    cx: &mut dyn super::Emitter<Atom = A>,
    is_own: A,
    is_other: A,
    result: A,
) -> A {
    use super::Prim;
    let (zero, one, two) = (
        cx.constant(0.0, result),
        cx.constant(1.0, result),
        cx.constant(2.0, result),
    );
    let numerator = cx.prim(Prim::Select, &[is_own, one, zero]);
    let denominator = cx.prim(Prim::Select, &[is_other, two, one]);
    cx.prim(Prim::Div, &[numerator, denominator])
}

/// Transpose rules for the linear forms the JVP rules emit.
pub fn transpose<A: Copy>(
    op: ArithOp,
    cx: &mut dyn super::Emitter<Atom = A>,
    args: &[A],
    linear: &[bool],
    ct: A,
) -> Option<Vec<super::Tangent<A>>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `Select::fold` gives the bits of folding one by one with `Arith`, on values with NaN,
    /// signed zeros, infinities and subnormals, at lengths around the vector lanes.
    #[test]
    fn select_folds_give_the_bits_of_one_by_one_folds() {
        fn check<T: Arith + Copy + std::fmt::Debug>(
            values: &[T],
            acc: Option<T>,
            bits: fn(T) -> u64,
        ) where
            Max: Select<T>,
            Min: Select<T>,
        {
            let one_by_one = |combine: fn(T, T) -> T| {
                values.iter().copied().fold(acc, |total, value| {
                    Some(total.map_or(value, |total| combine(total, value)))
                })
            };
            let same = |a: Option<T>, b: Option<T>| a.map(bits) == b.map(bits);
            assert!(
                same(Max::fold(acc, values), one_by_one(Arith::max)),
                "max of {values:?} from {acc:?}"
            );
            assert!(
                same(Min::fold(acc, values), one_by_one(Arith::min)),
                "min of {values:?} from {acc:?}"
            );
        }
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE / 4.0,
            -f64::MIN_POSITIVE / 4.0,
            f64::MAX,
            f64::MIN,
            2.5,
            -3.75,
            f64::from_bits(0xfff8_0000_0000_0001),
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // A NaN alone keeps its bits; with other values, it gives `Arith`'s NaN.
        let payload = f64::from_bits(0xfff8_0000_0000_0001);
        for values in [vec![payload], vec![payload, 1.0], vec![2.0; 40]] {
            check(&values, None, f64::to_bits);
            check(&values, Some(payload), f64::to_bits);
        }
        // The float path's best value decides: ±0 among negatives, only -inf, ties.
        for values in [
            vec![-1.0, -0.0, -3.0, 0.0, -2.0],
            vec![-1.0, 0.0, -3.0, -0.0, -2.0],
            vec![1.0, -0.0, 3.0, 0.0, 2.0],
            vec![f64::NEG_INFINITY; 70],
            vec![f64::INFINITY; 70],
            vec![-5.0; 33],
        ] {
            for acc in [None, Some(-0.0), Some(0.0), Some(-7.0)] {
                check(&values, acc, f64::to_bits);
                let narrow: Vec<f32> = values.iter().map(|&v| v as f32).collect();
                check(&narrow, acc.map(|a| a as f32), |v: f32| {
                    u64::from(v.to_bits())
                });
            }
        }
        for len in [0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000] {
            for round in 0..40 {
                let values: Vec<f64> = (0..len)
                    .map(|_| {
                        let pick = next();
                        match pick % 10 {
                            0 if round % 4 == 0 => f64::NAN,
                            1..=4 => specials[(pick >> 8) as usize % specials.len()],
                            _ => ((pick >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 100.0,
                        }
                    })
                    .collect();
                let zeros: Vec<f64> = (0..len)
                    .map(|i| if next() % 3 == 0 || i == 0 { -0.0 } else { 0.0 })
                    .collect();
                for acc in [None, Some(-0.0), Some(0.0), Some(f64::NAN), Some(7.0)] {
                    check(&values, acc, f64::to_bits);
                    check(&zeros, acc, f64::to_bits);
                    let narrow: Vec<f32> = values.iter().map(|&v| v as f32).collect();
                    let acc32 = acc.map(|a| a as f32);
                    check(&narrow, acc32, |v: f32| u64::from(v.to_bits()));
                    let ints: Vec<i64> = values.iter().map(|&v| v as i64).collect();
                    check(&ints, acc.map(|a| a as i64), |v: i64| v as u64);
                }
            }
        }
    }
}

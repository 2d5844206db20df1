//! Elementwise primitives as StableHLO operations, with dx's total semantics
//! (`prim/arith.rs`, `prim/math.rs`, `prim/compare.rs`, `prim/convert.rs`): integer division
//! and `mod` by zero give zero, `mod` and `idiv` are floored, float→integer casts truncate
//! toward zero and saturate with NaN → 0, float `min`/`max` propagate NaN (as StableHLO's do).
//!
//! The random-number primitives are written out in 32-bit words, as `prim/random.rs` computes
//! them (Threefry-2x32 with 20 rounds; Dex's bit trick for a float in [0, 1)), so XLA draws
//! the same numbers as dx.
//!
//! Operands arrive with equal shapes (the verifier's rule for `op`); the result has that shape.

use super::mlir::{Val, Writer};
use super::ExportError;
use crate::core::ir::{ArrTy, Elem, Scalar};
use crate::prim::Prim;

/// `prim` applied to `args` (all of one shape); `result` is the result's element type.
pub fn emit(cx: &mut Writer, prim: Prim, args: &[Val], result: Elem) -> Result<Val, ExportError> {
    let arg = |position: usize| args[position].clone();
    let elem = args[0].ty.elem;
    let shape = args[0].ty.shape.clone();
    Ok(match prim {
        Prim::Add => binary(cx, "add", &arg(0), &arg(1)),
        Prim::Sub => binary(cx, "subtract", &arg(0), &arg(1)),
        Prim::Mul => binary(cx, "multiply", &arg(0), &arg(1)),
        Prim::Div if elem.is_float() => binary(cx, "divide", &arg(0), &arg(1)),
        Prim::Div => {
            let (zero_divisor, divisor) = guard_zero(cx, &arg(1));
            let quotient = binary(cx, "divide", &arg(0), &divisor);
            zero_where(cx, &zero_divisor, &quotient)
        }
        Prim::Neg => unary(cx, "negate", &arg(0)),
        Prim::Abs if matches!(elem, Elem::U32 | Elem::U64) => arg(0),
        Prim::Abs => unary(cx, "abs", &arg(0)),
        Prim::Min => binary(cx, "minimum", &arg(0), &arg(1)),
        Prim::Max => binary(cx, "maximum", &arg(0), &arg(1)),
        Prim::Mod if elem.is_float() => {
            let rem = binary(cx, "remainder", &arg(0), &arg(1));
            floor_remainder(cx, &rem, &arg(1))
        }
        Prim::Mod => {
            let (zero_divisor, divisor) = guard_zero(cx, &arg(1));
            let rem = binary(cx, "remainder", &arg(0), &divisor);
            let floored = match elem {
                Elem::U32 | Elem::U64 => rem,
                _ => floor_remainder(cx, &rem, &divisor),
            };
            zero_where(cx, &zero_divisor, &floored)
        }
        Prim::IDiv if elem.is_float() => {
            let quotient = binary(cx, "divide", &arg(0), &arg(1));
            unary(cx, "floor", &quotient)
        }
        Prim::IDiv => {
            let (zero_divisor, divisor) = guard_zero(cx, &arg(1));
            let quotient = binary(cx, "divide", &arg(0), &divisor);
            let floored = match elem {
                Elem::U32 | Elem::U64 => quotient,
                _ => {
                    // Floored division: one less where the truncated remainder is non-zero and
                    // its sign differs from the divisor's.
                    let rem = binary(cx, "remainder", &arg(0), &divisor);
                    let adjust = sign_mismatch(cx, &rem, &divisor);
                    let one = cx.splat(one(elem), &shape);
                    let less = binary(cx, "subtract", &quotient, &one);
                    select(cx, &adjust, &less, &quotient)
                }
            };
            zero_where(cx, &zero_divisor, &floored)
        }
        Prim::Sqrt => unary(cx, "sqrt", &arg(0)),
        Prim::Exp => unary(cx, "exponential", &arg(0)),
        Prim::Exp2 => {
            let two = cx.splat(float(elem, 2.0), &shape);
            binary(cx, "power", &two, &arg(0))
        }
        Prim::Log => unary(cx, "log", &arg(0)),
        Prim::Log2 => scaled_log(cx, &arg(0), std::f64::consts::LN_2),
        Prim::Log10 => scaled_log(cx, &arg(0), std::f64::consts::LN_10),
        Prim::Log1p => unary(cx, "log_plus_one", &arg(0)),
        Prim::Expm1 => unary(cx, "exponential_minus_one", &arg(0)),
        Prim::Sin => unary(cx, "sine", &arg(0)),
        Prim::Cos => unary(cx, "cosine", &arg(0)),
        Prim::Tan => unary(cx, "tan", &arg(0)),
        Prim::Tanh => unary(cx, "tanh", &arg(0)),
        Prim::Sinh => {
            // (expm1 x − expm1 (−x)) / 2 stays accurate near zero, unlike (eˣ − e⁻ˣ) / 2.
            let negated = unary(cx, "negate", &arg(0));
            let up = unary(cx, "exponential_minus_one", &arg(0));
            let down = unary(cx, "exponential_minus_one", &negated);
            let difference = binary(cx, "subtract", &up, &down);
            halve(cx, &difference)
        }
        Prim::Cosh => {
            let negated = unary(cx, "negate", &arg(0));
            let up = unary(cx, "exponential", &arg(0));
            let down = unary(cx, "exponential", &negated);
            let total = binary(cx, "add", &up, &down);
            halve(cx, &total)
        }
        Prim::Atan => {
            let one = cx.splat(one(elem), &shape);
            binary(cx, "atan2", &arg(0), &one)
        }
        Prim::Floor => unary(cx, "floor", &arg(0)),
        Prim::Ceil => unary(cx, "ceil", &arg(0)),
        // Rust's `round`: halves away from zero.
        Prim::Round => unary(cx, "round_nearest_afz", &arg(0)),
        Prim::Pow => binary(cx, "power", &arg(0), &arg(1)),
        Prim::Atan2 => binary(cx, "atan2", &arg(0), &arg(1)),
        // The `ad` pass erases it; an exported program is differentiated already.
        Prim::StopGradient => arg(0),
        Prim::Eq => compare(cx, "EQ", &arg(0), &arg(1)),
        Prim::Ne => compare(cx, "NE", &arg(0), &arg(1)),
        Prim::Lt => compare(cx, "LT", &arg(0), &arg(1)),
        Prim::Gt => compare(cx, "GT", &arg(0), &arg(1)),
        Prim::Le => compare(cx, "LE", &arg(0), &arg(1)),
        Prim::Ge => compare(cx, "GE", &arg(0), &arg(1)),
        Prim::And => binary(cx, "and", &arg(0), &arg(1)),
        Prim::Or => binary(cx, "or", &arg(0), &arg(1)),
        Prim::Not => unary(cx, "not", &arg(0)),
        Prim::IsNan => compare(cx, "NE", &arg(0), &arg(0)),
        Prim::IsInf => {
            let magnitude = unary(cx, "abs", &arg(0));
            let infinity = cx.splat(float(elem, f64::INFINITY), &shape);
            compare(cx, "EQ", &magnitude, &infinity)
        }
        Prim::Select => select(cx, &arg(0), &arg(1), &arg(2)),
        Prim::Cast(to) => cast(cx, &arg(0), to),
        Prim::Threefry2x32 => threefry2x32(cx, &arg(0), &arg(1)),
        Prim::UnitFromBits => unit_from_bits(cx, &arg(0)),
        Prim::Show(_) => {
            return Err(ExportError::new(
                "show",
                "text is not exported: StableHLO has no strings",
            ))
        }
    })
    .inspect(|val| {
        debug_assert_eq!(
            val.ty.elem, result,
            "{prim:?} exported with another element type"
        );
    })
}

/// The rotation distances of Threefry's even and odd groups of four rounds
/// (`prim/random.rs`).
const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
/// The parity constant of Threefry's key schedule.
const KEY_PARITY: u32 = 0x1BD1_1BDA;

fn word_ty(x: &Val, elem: Elem) -> ArrTy {
    ArrTy::new(x.ty.shape.clone(), elem)
}

/// The high and low 32-bit words of `u64`s.
fn split_words(cx: &mut Writer, x: &Val) -> (Val, Val) {
    let thirty_two = cx.splat(Scalar::U64(32), &x.ty.shape);
    let high = binary(cx, "shift_right_logical", x, &thirty_two);
    let high = cx.op("stablehlo.convert", &[&high], "", word_ty(x, Elem::U32));
    let low = cx.op("stablehlo.convert", &[x], "", word_ty(x, Elem::U32));
    (high, low)
}

fn rotate_left(cx: &mut Writer, y: &Val, distance: u32) -> Val {
    let left = cx.splat(Scalar::U32(distance), &y.ty.shape);
    let right = cx.splat(Scalar::U32(32 - distance), &y.ty.shape);
    let up = binary(cx, "shift_left", y, &left);
    let down = binary(cx, "shift_right_logical", y, &right);
    binary(cx, "or", &up, &down)
}

/// Threefry-2x32 of a `u64` key and counter (`prim::threefry2x32`).
fn threefry2x32(cx: &mut Writer, key: &Val, count: &Val) -> Val {
    let shape = key.ty.shape.clone();
    let (key0, key1) = split_words(cx, key);
    let parity = cx.splat(Scalar::U32(KEY_PARITY), &shape);
    let key2 = binary(cx, "xor", &key0, &key1);
    let key2 = binary(cx, "xor", &key2, &parity);
    let schedule = [key0, key1, key2];
    let (x, y) = split_words(cx, count);
    let mut x = binary(cx, "add", &x, &schedule[0]);
    let mut y = binary(cx, "add", &y, &schedule[1]);
    for group in 0..5usize {
        for rotation in ROTATIONS[group % 2] {
            x = binary(cx, "add", &x, &y);
            y = rotate_left(cx, &y, rotation);
            y = binary(cx, "xor", &y, &x);
        }
        x = binary(cx, "add", &x, &schedule[(group + 1) % 3]);
        y = binary(cx, "add", &y, &schedule[(group + 2) % 3]);
        let step = cx.splat(Scalar::U32(group as u32 + 1), &shape);
        y = binary(cx, "add", &y, &step);
    }
    let high = cx.op("stablehlo.convert", &[&x], "", word_ty(&x, Elem::U64));
    let low = cx.op("stablehlo.convert", &[&y], "", word_ty(&y, Elem::U64));
    let thirty_two = cx.splat(Scalar::U64(32), &shape);
    let high = binary(cx, "shift_left", &high, &thirty_two);
    binary(cx, "or", &high, &low)
}

/// Dex's `rand`: `bitcast(0x3F800000 | (k & 0x7FFFFF)) - 1` (`prim::unit_from_bits`).
fn unit_from_bits(cx: &mut Writer, key: &Val) -> Val {
    let shape = key.ty.shape.clone();
    let low = cx.op("stablehlo.convert", &[key], "", word_ty(key, Elem::U32));
    let mantissa = cx.splat(Scalar::U32((1 << 23) - 1), &shape);
    let one_bits = cx.splat(Scalar::U32(0x3F80_0000), &shape);
    let bits = binary(cx, "and", &low, &mantissa);
    let bits = binary(cx, "or", &bits, &one_bits);
    let float = cx.op(
        "stablehlo.bitcast_convert",
        &[&bits],
        "",
        word_ty(key, Elem::F32),
    );
    let one = cx.splat(Scalar::F32(1.0), &shape);
    binary(cx, "subtract", &float, &one)
}

fn unary(cx: &mut Writer, op: &str, x: &Val) -> Val {
    cx.op(&format!("stablehlo.{op}"), &[x], "", x.ty.clone())
}

fn binary(cx: &mut Writer, op: &str, x: &Val, y: &Val) -> Val {
    cx.op(&format!("stablehlo.{op}"), &[x, y], "", x.ty.clone())
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

/// `x` where `mask` is false, zero where it is true.
fn zero_where(cx: &mut Writer, mask: &Val, x: &Val) -> Val {
    let zero = cx.splat(Scalar::zero(x.ty.elem), &x.ty.shape);
    select(cx, mask, &zero, x)
}

/// Where the divisor is zero, and the divisor with its zeros replaced by one (so that the
/// division itself is defined; its result is then replaced by zero).
fn guard_zero(cx: &mut Writer, divisor: &Val) -> (Val, Val) {
    let zero = cx.splat(Scalar::zero(divisor.ty.elem), &divisor.ty.shape);
    let is_zero = compare(cx, "EQ", divisor, &zero);
    let one = cx.splat(one(divisor.ty.elem), &divisor.ty.shape);
    let safe = select(cx, &is_zero, &one, divisor);
    (is_zero, safe)
}

/// A non-zero remainder whose sign differs from the divisor's.
fn sign_mismatch(cx: &mut Writer, rem: &Val, divisor: &Val) -> Val {
    let zero = cx.splat(Scalar::zero(rem.ty.elem), &rem.ty.shape);
    let nonzero = compare(cx, "NE", rem, &zero);
    let rem_negative = compare(cx, "LT", rem, &zero);
    let divisor_negative = compare(cx, "LT", divisor, &zero);
    let differ = compare(cx, "NE", &rem_negative, &divisor_negative);
    binary(cx, "and", &nonzero, &differ)
}

/// A truncated remainder moved to the divisor's sign (floored `mod`).
fn floor_remainder(cx: &mut Writer, rem: &Val, divisor: &Val) -> Val {
    let adjust = sign_mismatch(cx, rem, divisor);
    let moved = binary(cx, "add", rem, divisor);
    select(cx, &adjust, &moved, rem)
}

fn scaled_log(cx: &mut Writer, x: &Val, ln_base: f64) -> Val {
    let log = unary(cx, "log", x);
    let base = cx.splat(float(x.ty.elem, ln_base), &x.ty.shape);
    binary(cx, "divide", &log, &base)
}

fn halve(cx: &mut Writer, x: &Val) -> Val {
    let half = cx.splat(float(x.ty.elem, 0.5), &x.ty.shape);
    binary(cx, "multiply", x, &half)
}

pub(super) fn one(elem: Elem) -> Scalar {
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

pub(super) fn float(elem: Elem, value: f64) -> Scalar {
    match elem {
        Elem::F32 => Scalar::F32(value as f32),
        _ => Scalar::F64(value),
    }
}

/// The smallest and largest value of an integer type, as a scalar of that type.
pub(super) fn int_bounds(elem: Elem) -> (Scalar, Scalar) {
    match elem {
        Elem::I32 => (Scalar::I32(i32::MIN), Scalar::I32(i32::MAX)),
        Elem::I64 => (Scalar::I64(i64::MIN), Scalar::I64(i64::MAX)),
        Elem::U32 => (Scalar::U32(0), Scalar::U32(u32::MAX)),
        _ => (Scalar::U64(0), Scalar::U64(u64::MAX)),
    }
}

/// Rust's `as` (`prim/convert.rs`): to `Bool` is `≠ 0`; float → integer truncates toward
/// zero, saturates, and sends NaN to zero; every other conversion is StableHLO's `convert`.
fn cast(cx: &mut Writer, x: &Val, to: Elem) -> Val {
    let from = x.ty.elem;
    let shape = x.ty.shape.clone();
    let to_ty = ArrTy::new(shape.clone(), to);
    if from == to {
        return x.clone();
    }
    if to == Elem::Bool {
        let zero = cx.splat(Scalar::zero(from), &shape);
        return compare(cx, "NE", x, &zero);
    }
    if !(from.is_float() && to.is_integer()) {
        return cx.op("stablehlo.convert", &[x], "", to_ty);
    }
    let (min, max) = int_bounds(to);
    let as_float = |scalar: Scalar| match scalar {
        Scalar::I32(v) => f64::from(v),
        Scalar::I64(v) => v as f64,
        Scalar::U32(v) => f64::from(v),
        Scalar::U64(v) => v as f64,
        _ => 0.0,
    };
    // Bounds as floats of the source type: the lower one is exact (0 or −2ᵏ); the upper one
    // may round up to 2ᵏ, so values at or above it are set to the maximum after converting.
    let low = cx.splat(float(from, as_float(min)), &shape);
    let high = cx.splat(float(from, as_float(max)), &shape);
    let clamped = cx.op("stablehlo.clamp", &[&low, x, &high], "", x.ty.clone());
    let converted = cx.op("stablehlo.convert", &[&clamped], "", to_ty);
    let top = compare(cx, "GE", x, &high);
    let max_val = cx.splat(max, &shape);
    let saturated = select(cx, &top, &max_val, &converted);
    let nan = compare(cx, "NE", x, x);
    zero_where(cx, &nan, &saturated)
}

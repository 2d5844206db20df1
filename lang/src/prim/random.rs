//! Random-number primitives: the counter-based hash behind Dex's keys and the bit trick that
//! turns a key into a uniform float. Everything else about random numbers (`hash`, `new_key`,
//! `split_key`, `rand`, `randn`, …) is written in dx in the prelude, as in Dex's prelude.
//!
//! - `threefry2x32(key, count)`: Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random
//!   numbers: as easy as 1, 2, 3", SC 2011), as JAX's `threefry_2x32` and Dex's prelude compute
//!   it. A `Word64` is split into two 32-bit words with the high word first: Dex reads the key
//!   as `(low_word k, high_word k)`, and its `low_word` is the *high* 32 bits (`k >> 32`) while
//!   `high_word` is the low 32 bits. The result packs the two output words the same way.
//! - `unit_from_bits(k)`: Dex's `rand`: the low 23 bits of `k` become the mantissa of a
//!   `Float32` in [1, 2) (bit pattern `0x3F800000`), minus 1. The result is in [0, 1) and has
//!   23 random bits.
//!
//! Both are total on every input and have no derivative (their operands are words).

use super::hlo::Hlo;
use super::scalar::{Elem, Scalar};
use super::signature::{Signature, Slot};
use super::{operand, PrimTypeError};

/// The operators of the random family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RandomOp {
    Threefry2x32,
    UnitFromBits,
}

/// Sign rule (Note [Sign-clear values] in `prim`): `rand`'s floats are in [+0, 1).
pub fn sign_clear(op: RandomOp) -> bool {
    match op {
        RandomOp::UnitFromBits => true,
        RandomOp::Threefry2x32 => false,
    }
}

/// Arity rule.
pub fn arity(op: RandomOp) -> usize {
    match op {
        RandomOp::Threefry2x32 => 2,
        RandomOp::UnitFromBits => 1,
    }
}

/// Type rule: `threefry2x32 : (u64, u64) -> u64`, `unit_from_bits : u64 -> f32`.
pub fn result_elem(op: RandomOp, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    let all_words = operands.iter().all(|&elem| elem == Elem::U64);
    if !all_words {
        return Err(PrimTypeError::operands("u64 operands", operands));
    }
    Ok(match op {
        RandomOp::Threefry2x32 => Elem::U64,
        RandomOp::UnitFromBits => Elem::F32,
    })
}

/// Signature rule: words to a word or a `Float32`.
pub fn signature(op: RandomOp) -> Signature {
    match op {
        RandomOp::Threefry2x32 => {
            Signature::fixed(&[Slot::Word64, Slot::Word64], Slot::Word64).named("threefry_2x32")
        }
        RandomOp::UnitFromBits => {
            Signature::fixed(&[Slot::Word64], Slot::Float32).named("unit_from_bits")
        }
    }
}

/// Evaluation rule.
pub fn eval(op: RandomOp, operands: &[Scalar]) -> Scalar {
    match op {
        RandomOp::Threefry2x32 => {
            Scalar::U64(threefry2x32(operand(operands, 0), operand(operands, 1)))
        }
        RandomOp::UnitFromBits => Scalar::F32(unit_from_bits(operand(operands, 0))),
    }
}

/// The parity constant of Threefry's key schedule (Skein's `C240`).
const KEY_PARITY: u32 = 0x1BD1_1BDA;

/// The rotation distances of the even and odd groups of four rounds.
const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// Threefry-2x32, 20 rounds: five groups of four rounds, each followed by a key injection
/// (JAX's `threefry2x32` and Dex's `threefry_2x32`, written once for every engine).
pub fn threefry2x32(key: u64, count: u64) -> u64 {
    let (key0, key1) = ((key >> 32) as u32, key as u32);
    let schedule = [key0, key1, key0 ^ key1 ^ KEY_PARITY];
    let mut x = (count >> 32) as u32;
    let mut y = count as u32;
    x = x.wrapping_add(schedule[0]);
    y = y.wrapping_add(schedule[1]);
    for group in 0..5usize {
        for rotation in ROTATIONS[group % 2] {
            x = x.wrapping_add(y);
            y = y.rotate_left(rotation);
            y ^= x;
        }
        x = x.wrapping_add(schedule[(group + 1) % 3]);
        y = y
            .wrapping_add(schedule[(group + 2) % 3])
            .wrapping_add(group as u32 + 1);
    }
    (u64::from(x) << 32) | u64::from(y)
}

/// Dex's `rand` bit trick: `bitcast(0x3F800000 | (k & 0x7FFFFF)) - 1`.
pub fn unit_from_bits(key: u64) -> f32 {
    const ONE_BITS: u32 = 0x3F80_0000;
    const MANTISSA: u32 = (1 << 23) - 1;
    f32::from_bits(ONE_BITS | (key as u32 & MANTISSA)) - 1.0
}

/// Export rule: both written out in 32-bit words exactly as computed above, so XLA draws the
/// same numbers as dx.
pub(crate) fn export<E: Hlo>(op: RandomOp, cx: &mut E, args: &[E::Val]) -> E::Val {
    match op {
        RandomOp::Threefry2x32 => export_threefry2x32(cx, &args[0], &args[1]),
        RandomOp::UnitFromBits => {
            let key = &args[0];
            let low = cx.convert(key, Elem::U32);
            let mantissa = cx.splat(Scalar::U32((1 << 23) - 1), key);
            let one_bits = cx.splat(Scalar::U32(0x3F80_0000), key);
            let bits = cx.op("and", &[&low, &mantissa]);
            let bits = cx.op("or", &[&bits, &one_bits]);
            let float = cx.bitcast(&bits, Elem::F32);
            let one = cx.splat(Scalar::F32(1.0), key);
            cx.op("subtract", &[&float, &one])
        }
    }
}

/// `threefry2x32` in StableHLO: the words of `u64`s split high first, the rounds as above.
fn export_threefry2x32<E: Hlo>(cx: &mut E, key: &E::Val, count: &E::Val) -> E::Val {
    let split_words = |cx: &mut E, x: &E::Val| {
        let thirty_two = cx.splat(Scalar::U64(32), x);
        let high = cx.op("shift_right_logical", &[x, &thirty_two]);
        (cx.convert(&high, Elem::U32), cx.convert(x, Elem::U32))
    };
    let rotate_left = |cx: &mut E, y: &E::Val, distance: u32| {
        let left = cx.splat(Scalar::U32(distance), y);
        let right = cx.splat(Scalar::U32(32 - distance), y);
        let up = cx.op("shift_left", &[y, &left]);
        let down = cx.op("shift_right_logical", &[y, &right]);
        cx.op("or", &[&up, &down])
    };
    let (key0, key1) = split_words(cx, key);
    let parity = cx.splat(Scalar::U32(KEY_PARITY), &key0);
    let key2 = cx.op("xor", &[&key0, &key1]);
    let key2 = cx.op("xor", &[&key2, &parity]);
    let schedule = [key0, key1, key2];
    let (x, y) = split_words(cx, count);
    let mut x = cx.op("add", &[&x, &schedule[0]]);
    let mut y = cx.op("add", &[&y, &schedule[1]]);
    for group in 0..5usize {
        for rotation in ROTATIONS[group % 2] {
            x = cx.op("add", &[&x, &y]);
            y = rotate_left(cx, &y, rotation);
            y = cx.op("xor", &[&y, &x]);
        }
        x = cx.op("add", &[&x, &schedule[(group + 1) % 3]]);
        y = cx.op("add", &[&y, &schedule[(group + 2) % 3]]);
        let step = cx.splat(Scalar::U32(group as u32 + 1), &y);
        y = cx.op("add", &[&y, &step]);
    }
    let high = cx.convert(&x, Elem::U64);
    let low = cx.convert(&y, Elem::U64);
    let thirty_two = cx.splat(Scalar::U64(32), &high);
    let high = cx.op("shift_left", &[&high, &thirty_two]);
    cx.op("or", &[&high, &low])
}

/// No derivative: the operands are words, which carry no tangents.
pub fn linearity(op: RandomOp) -> super::Linearity {
    match op {
        RandomOp::Threefry2x32 | RandomOp::UnitFromBits => super::Linearity::NonDifferentiable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer tests of Random123 (`kat_vectors`, threefry2x32_20), which JAX's
    /// `test_threefry_2x32` also checks: (counter, key) -> output, words high first.
    #[test]
    fn threefry_matches_the_random123_known_answers() {
        // (counter, key, output), each as (high word, low word).
        type Words = (u32, u32);
        let cases: [(Words, Words, Words); 3] = [
            ((0, 0), (0, 0), (0x6b20_0159, 0x99ba_4efe)),
            (
                (0xffff_ffff, 0xffff_ffff),
                (0xffff_ffff, 0xffff_ffff),
                (0x1cb9_96fc, 0xbb00_2be7),
            ),
            (
                (0x243f_6a88, 0x85a3_08d3),
                (0x1319_8a2e, 0x0370_7344),
                (0xc492_3a9c, 0x483d_f7a0),
            ),
        ];
        let pack = |(high, low): (u32, u32)| (u64::from(high) << 32) | u64::from(low);
        for (count, key, expected) in cases {
            assert_eq!(
                threefry2x32(pack(key), pack(count)),
                pack(expected),
                "count {count:x?}, key {key:x?}"
            );
        }
    }

    /// The vectors of issue 10 (Dex's `hash 0 0` and `hash 123 456`).
    #[test]
    fn dex_hash_vectors() {
        assert_eq!(threefry2x32(0, 0), 0x6b20_0159_99ba_4efe);
        assert_eq!(threefry2x32(123, 456), 0x5009_45c5_65c9_8701);
    }

    #[test]
    fn unit_from_bits_uses_the_low_23_bits() {
        assert_eq!(unit_from_bits(0), 0.0);
        assert_eq!(unit_from_bits(0xFFFF_FFFF_FF80_0000), 0.0);
        assert_eq!(unit_from_bits(0x7F_FFFF), 1.0 - f32::EPSILON);
        assert_eq!(unit_from_bits(1 << 22), 0.5);
    }
}

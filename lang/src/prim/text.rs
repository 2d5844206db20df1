//! Text primitives: the characters of a scalar's printed form, one at a time.
//!
//! `show_<format>(x, k)` is the `k`-th byte of the text of `x` (`0` past its end, and for a
//! negative `k`), so the text of a value is a table built by one elementwise operation over the
//! positions `k` (Note [Texts of run-time values] in `check::show`). The formats are Dex's
//! `show`:
//!
//! - `number`: integers in decimal; floats as C's `%.9g` (`Float32`) or `%.17g` (`Float64`) —
//!   the shortest of fixed and exponent notation with that many significant digits, trailing
//!   zeros dropped (`123.456787`, `65536`, `1e+10`, `nan`, `-inf`), as Dex's `dtoa`;
//! - `hex`: words as `0x4d2`, as dx and Dex print them;
//! - `bool`: `True`, `False`;
//! - `char`: a character as the printer quotes it (`'a'`, `'\n'`, `'\x00'`).
//!
//! Total on every input; no derivative (the result is a character).

use super::scalar::{Elem, Scalar};
use super::signature::{Signature, Slot};
use super::{operand, PrimTypeError};

/// How a scalar is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextOp {
    Number,
    Hex,
    Bool,
    Char,
}

impl TextOp {
    pub const ALL: [TextOp; 4] = [TextOp::Number, TextOp::Hex, TextOp::Bool, TextOp::Char];

    pub fn name(self) -> &'static str {
        match self {
            TextOp::Number => "number",
            TextOp::Hex => "hex",
            TextOp::Bool => "bool",
            TextOp::Char => "char",
        }
    }

    /// The longest text of an `elem` in this format: the capacity of its `show`.
    pub fn width(self, elem: Elem) -> usize {
        match (self, elem) {
            // `-1.17549435e-38`, `-2.2250738585072014e-308`.
            (TextOp::Number, Elem::F32) => 15,
            (TextOp::Number, Elem::F64) => 24,
            (TextOp::Number, Elem::I32) => 11,
            (TextOp::Number, Elem::U32) => 10,
            (TextOp::Number, Elem::I64 | Elem::U64) => 20,
            (TextOp::Number, Elem::Bool) | (TextOp::Bool, _) => 5,
            (TextOp::Hex, Elem::U64 | Elem::I64 | Elem::F64) => 18,
            (TextOp::Hex, _) => 10,
            // `'\SOH'`, `'\210'`
            (TextOp::Char, _) => 6,
        }
    }
}

pub fn arity(_: TextOp) -> usize {
    2
}

/// Type rule: `show_<format> : (a, i64) -> u32` (a character), `a` a scalar the format
/// writes.
pub fn result_elem(op: TextOp, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    let fits = match op {
        TextOp::Number => operands[0] != Elem::Bool,
        TextOp::Hex => matches!(operands[0], Elem::U32 | Elem::U64),
        TextOp::Bool => operands[0] == Elem::Bool,
        TextOp::Char => operands[0] == Elem::U32,
    };
    if !fits || operands[1] != Elem::I64 {
        let expected = match op {
            TextOp::Number => "a number and an i64 position",
            TextOp::Hex => "a u32 or u64 and an i64 position",
            TextOp::Bool => "a bool and an i64 position",
            TextOp::Char => "a u32 and an i64 position",
        };
        return Err(PrimTypeError::operands(expected, operands));
    }
    Ok(Elem::U32)
}

/// Signature rule: not a name of the language (`show` lowers to it): any value and a
/// position to a character code.
pub fn signature(_: TextOp) -> Signature {
    Signature::fixed(&[Slot::A, Slot::Int64], Slot::Nat)
}

/// Evaluation rule.
pub fn eval(op: TextOp, operands: &[Scalar]) -> Scalar {
    let position: i64 = operand(operands, 1);
    let Ok(position) = usize::try_from(position) else {
        return Scalar::U32(0);
    };
    let text = write(op, operands[0]);
    Scalar::U32(
        text.as_bytes()
            .get(position)
            .map_or(0, |&byte| u32::from(byte)),
    )
}

/// The whole text of a scalar in a format.
pub fn write(op: TextOp, x: Scalar) -> String {
    match (op, x) {
        (TextOp::Number, Scalar::F32(v)) => general(f64::from(v), 9),
        (TextOp::Number, Scalar::F64(v)) => general(v, 17),
        (TextOp::Number, Scalar::I32(v)) => v.to_string(),
        (TextOp::Number, Scalar::I64(v)) => v.to_string(),
        (TextOp::Number, Scalar::U32(v)) => v.to_string(),
        (TextOp::Number, Scalar::U64(v)) => v.to_string(),
        (TextOp::Hex, x) => format!("0x{:x}", x.bits()),
        (TextOp::Bool | TextOp::Number, Scalar::Bool(b)) => {
            if b { "True" } else { "False" }.to_string()
        }
        (TextOp::Char, x) => crate::syntax::escape::quoted_char(x.int_value().unwrap_or(0) as u8),
        (TextOp::Bool, x) => x.int_value().is_some_and(|v| v != 0).to_string(),
    }
}

/// C's `%.{digits}g`: `digits` significant digits, in fixed notation when the decimal exponent
/// `e` is in `-4 <= e < digits`, else as `d.ddde±XX`; trailing zeros (and a bare point)
/// dropped.
pub fn general(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // The exponent after rounding to `digits` digits (`9.9999999995` rounds up to `1e+01`).
    let scientific = format!("{:.*e}", digits - 1, v);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("Rust's `{:e}` writes an exponent");
    let exponent: i64 = exponent.parse().expect("an integer exponent");
    if exponent < -4 || exponent >= digits as i64 {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{}e{sign}{:02}",
            trim_fraction(mantissa),
            exponent.unsigned_abs()
        );
    }
    let decimals = (digits as i64 - 1 - exponent).max(0) as usize;
    trim_fraction(&format!("{v:.decimals$}")).to_string()
}

/// `1.2500` → `1.25`, `3.000` → `3`; text without a point is kept.
fn trim_fraction(text: &str) -> &str {
    if !text.contains('.') {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dex's `tests/show-tests.dx` and C's `printf("%.9g")` / `"%.17g"`.
    #[test]
    fn numbers_are_written_as_c_general_format() {
        let f32_cases = [
            (123.456_79_f32, "123.456787"),
            (65536.0, "65536"),
            (1.5, "1.5"),
            (1.0, "1"),
            (-0.0, "-0"),
            (0.1, "0.100000001"),
            (1e10, "1e+10"),
            (1.5e-5, "1.49999996e-05"),
            (0.0001, "9.99999975e-05"),
            (123_456_789.0, "123456792"),
            (1_234_567_890.0, "1.23456794e+09"),
            (f32::MIN_POSITIVE, "1.17549435e-38"),
            (-f32::MIN_POSITIVE, "-1.17549435e-38"),
            (f32::NAN, "nan"),
            (f32::NEG_INFINITY, "-inf"),
        ];
        for (value, expected) in f32_cases {
            assert_eq!(write(TextOp::Number, Scalar::F32(value)), expected);
            assert!(
                expected.len() <= TextOp::Number.width(Elem::F32),
                "{expected}"
            );
        }
        let f64_cases = [
            (f64::from(123.456_79_f32), "123.456787109375"),
            (65536.0, "65536"),
            (0.1, "0.10000000000000001"),
            (-f64::MIN_POSITIVE, "-2.2250738585072014e-308"),
            (1e23, "9.9999999999999992e+22"),
        ];
        for (value, expected) in f64_cases {
            assert_eq!(write(TextOp::Number, Scalar::F64(value)), expected);
            assert!(
                expected.len() <= TextOp::Number.width(Elem::F64),
                "{expected}"
            );
        }
    }

    #[test]
    fn integers_words_and_bools() {
        assert_eq!(write(TextOp::Number, Scalar::I32(-1234)), "-1234");
        assert_eq!(write(TextOp::Number, Scalar::I32(i32::MIN)), "-2147483648");
        assert_eq!(write(TextOp::Number, Scalar::I64(i64::MIN)).len(), 20);
        assert_eq!(write(TextOp::Number, Scalar::U64(u64::MAX)).len(), 20);
        assert_eq!(write(TextOp::Hex, Scalar::U32(1234)), "0x4d2");
        assert_eq!(write(TextOp::Hex, Scalar::U64(u64::MAX)).len(), 18);
        assert_eq!(write(TextOp::Bool, Scalar::Bool(false)), "False");
        assert_eq!(write(TextOp::Char, Scalar::U32(0)), "'\\NUL'");
    }

    #[test]
    fn a_position_past_the_text_or_before_it_is_nul() {
        let at = |k: i64| eval(TextOp::Number, &[Scalar::I32(-12), Scalar::I64(k)]);
        assert_eq!(at(0), Scalar::U32(u32::from(b'-')));
        assert_eq!(at(2), Scalar::U32(u32::from(b'2')));
        assert_eq!(at(3), Scalar::U32(0));
        assert_eq!(at(-1), Scalar::U32(0));
    }
}

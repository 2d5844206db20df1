//! Floats as Dex prints them (docs/language.md): C's `%.7g` for `Float32` and `%.15g` for
//! `Float64`, with `.` appended when the text has no `.`, `e`, `inf` or `nan`.
//!
//! Assumes nothing about its input: every `f32`/`f64` bit pattern is printed. Guarantees the
//! same text as glibc's `printf`, except that every NaN prints as `nan`.
//! See Note [The sign of NaN].

// Note [Rounding as C does]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// glibc rounds the exact binary value of the double to the requested number of significant
// digits, with ties (possible only when the exact value has few enough digits) going to the
// even digit. Rust's `{:.N$e}` does the same, so `%g` is built on it: the value is rounded
// once, to `precision` significant digits in exponential form, and the digits and exponent
// of that text are rearranged into fixed notation when `%g` asks for it. A second rounding
// (say by `{:.N$}`) is never done, so no double-rounding can happen. `f32` is widened to `f64`
// first, exactly, as C promotes a `float` argument of `printf` to `double`.
//
// Note [The sign of NaN]
// ~~~~~~~~~~~~~~~~~~~~~~
// glibc prints a NaN whose sign bit is set as `-nan`. The sign of a NaN is not meaningful
// (x86 produces a negative NaN for `0.0 / 0.0`, constant folding may not) and would make
// output depend on the platform and on the optimiser, so dx prints every NaN as `nan`.

/// A `Float32` as Dex prints it: `%.7g`, then `.` when the text would read as an integer.
pub fn format_f32(x: f32) -> String {
    dex_float(f64::from(x), 7)
}

/// A `Float64` as Dex prints it: `%.15g`, then `.` when the text would read as an integer.
pub fn format_f64(x: f64) -> String {
    dex_float(x, 15)
}

/// `%.{precision}g`, then `.` unless the text has a `.`, an `e`, `inf` or `nan`.
fn dex_float(x: f64, precision: usize) -> String {
    let mut res = format_g(x, precision);
    let reads_as_float =
        res.contains('.') || res.contains('e') || res.contains("inf") || res.contains("nan");
    if !reads_as_float {
        res.push('.');
    }
    res
}

/// C's `printf("%.{precision}g", x)` (a precision of 0 counts as 1, as in C).
/// See Note [Rounding as C does] and Note [The sign of NaN].
pub(crate) fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let precision = precision.max(1);
    // Rounded once, to `precision` significant digits: `-1.234560e-5`, `0.000000e0`.
    let exponential = format!("{:.*e}", precision - 1, x);
    let Some((mantissa, exponent_text)) = exponential.split_once('e') else {
        debug_assert!(
            false,
            "`{{:e}}` always writes an exponent, got {exponential}"
        );
        return exponential;
    };
    let Ok(exponent) = exponent_text.parse::<i32>() else {
        debug_assert!(
            false,
            "`{{:e}}` writes a decimal exponent, got {exponential}"
        );
        return exponential;
    };
    // The `precision` significant digits, without sign or point (all zero for a zero).
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    debug_assert_eq!(digits.len(), precision);

    let mut res = String::with_capacity(precision + 8);
    if mantissa.starts_with('-') {
        res.push('-');
    }
    let precision = precision as i32;
    if exponent < -4 || exponent >= precision {
        // Exponential notation: one digit, the others after a point, then `e±XX`.
        push_digits(&mut res, &digits[..1]);
        push_fraction(&mut res, &digits[1..]);
        res.push('e');
        res.push(if exponent < 0 { '-' } else { '+' });
        res.push_str(&format!("{:02}", exponent.unsigned_abs()));
    } else if exponent >= 0 {
        // Fixed notation, point inside or right after the digits (`exponent < precision`).
        let n_int_digits = exponent as usize + 1;
        push_digits(&mut res, &digits[..n_int_digits]);
        push_fraction(&mut res, &digits[n_int_digits..]);
    } else {
        // Fixed notation, `-4 <= exponent <= -1`: leading zeros after the point.
        res.push('0');
        let mut fraction = vec![b'0'; exponent.unsigned_abs() as usize - 1];
        fraction.extend_from_slice(&digits);
        push_fraction(&mut res, &fraction);
    }
    res
}

fn push_digits(res: &mut String, digits: &[u8]) {
    res.extend(digits.iter().map(|&digit| char::from(digit)));
}

/// `.` and the digits, without trailing zeros; nothing when all of them are zero.
fn push_fraction(res: &mut String, digits: &[u8]) {
    let n_significant = digits
        .iter()
        .rposition(|&digit| digit != b'0')
        .map_or(0, |idx| idx + 1);
    if n_significant > 0 {
        res.push('.');
        push_digits(res, &digits[..n_significant]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::float_cases::{F32_CASES, F64_CASES};
    use super::*;

    /// `print` gives C's text for every bit pattern of `cases`.
    fn check_c_table<B, X>(cases: &[(B, &str)], from_bits: fn(B) -> X, print: fn(X) -> String)
    where
        B: Copy + std::fmt::LowerHex,
        X: Copy + std::fmt::Debug,
    {
        let width = 2 + 2 * std::mem::size_of::<B>();
        let mismatches: Vec<String> = cases
            .iter()
            .filter_map(|&(bits, expected)| {
                let x = from_bits(bits);
                let found = print(x);
                (found != expected)
                    .then(|| format!("{bits:#0width$x} ({x:?}): {found} != {expected}"))
            })
            .collect();
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }

    #[test]
    fn f32_matches_c_table() {
        check_c_table(F32_CASES, f32::from_bits, format_f32);
    }

    #[test]
    fn f64_matches_c_table() {
        check_c_table(F64_CASES, f64::from_bits, format_f64);
    }

    #[test]
    fn f32_examples_from_the_language_reference() {
        let cases: &[(f32, &str)] = &[
            (2.0, "2."),
            (1.1, "1.1"),
            // 3.1416559 (written as bits: that literal has more digits than an f32 holds).
            (f32::from_bits(0x4049_10e4), "3.141656"),
            (2.535_182e-6, "2.535182e-06"),
            (1.0 / 3.0, "0.3333333"),
            (1e10, "1e+10"),
            (-0.0, "-0."),
            (0.0, "0."),
            (100.0, "100."),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1_234_567.0, "1234567."),
            (12_345_678.0, "1.234568e+07"),
            (f32::INFINITY, "inf"),
            (f32::NEG_INFINITY, "-inf"),
            (f32::MAX, "3.402823e+38"),
        ];
        for &(x, expected) in cases {
            assert_eq!(format_f32(x), expected, "{x:?}");
        }
    }

    #[test]
    fn f64_examples() {
        let cases: &[(f64, &str)] = &[
            (2.0, "2."),
            (0.1 + 0.2, "0.3"),
            (1.0 / 3.0, "0.333333333333333"),
            (std::f64::consts::PI, "3.14159265358979"),
            (1e15, "1e+15"),
            (123_456_789_012_345.0, "123456789012345."),
            (-0.0, "-0."),
            (1e-300, "1e-300"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for &(x, expected) in cases {
            assert_eq!(format_f64(x), expected, "{x:?}");
        }
    }

    #[test]
    fn every_nan_prints_as_nan() {
        // See Note [The sign of NaN]: glibc would print `-nan` for the negative ones.
        let negative_nan = f32::from_bits(f32::NAN.to_bits() | 0x8000_0000);
        assert_eq!(format_f32(f32::NAN), "nan");
        assert_eq!(format_f32(negative_nan), "nan");
        assert_eq!(format_f32(f32::from_bits(0x7f80_0001)), "nan");
        assert_eq!(format_f64(-f64::NAN), "nan");
    }

    #[test]
    fn rounding_that_carries_into_a_new_digit_uses_the_new_exponent() {
        // 9999999.5 has 8 significant digits; rounded to 7 it is 1.000000e+07, so `%g` picks
        // exponential notation by the exponent after rounding, not before.
        assert_eq!(format_g(9_999_999.5, 7), "1e+07");
        assert_eq!(format_g(9.999_999_6e-5, 7), "0.0001");
        assert_eq!(format_g(0.999_999_96, 7), "1");
    }

    #[test]
    fn ties_go_to_the_even_digit_as_in_glibc() {
        assert_eq!(format_g(1_234_567.5, 7), "1234568");
        assert_eq!(format_g(1_234_568.5, 7), "1234568");
        assert_eq!(format_g(0.125, 2), "0.12");
        assert_eq!(format_g(0.375, 2), "0.38");
    }

    #[test]
    fn other_precisions_follow_c() {
        assert_eq!(format_g(123_456.0, 0), "1e+05");
        assert_eq!(format_g(0.5, 1), "0.5");
        assert_eq!(format_g(1e100, 3), "1e+100");
        assert_eq!(format_g(-1234.5, 6), "-1234.5");
        assert_eq!(format_g(0.000_123_4, 17), "0.00012339999999999999");
    }
}

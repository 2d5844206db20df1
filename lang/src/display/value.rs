//! Values in Dex format (docs/language.md): scalars, tables `[1., 2.]`, tuples `(1., [2, 3])`,
//! all on one line, as Dex prints them.
//!
//! Assumes the value is regular (the session builds it from a typed runtime value), but does
//! not rely on it: a ragged table prints as it is. Guarantees a single line of text.

// Note [Summarised tables]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The REPL and notebook abbreviate big values (docs/language.md): when a value holds more than
// `SUMMARY_THRESHOLD` scalars in total, every table axis longer than `2 * SUMMARY_EDGE`
// items prints as its first `SUMMARY_EDGE` items, `...`, and its last `SUMMARY_EDGE` items,
// at every nesting level. Whether to abbreviate is decided once, for the whole value, so
// the parts of one value are either all whole or all abbreviated.

use std::fmt::Write as _;

use super::float::{format_f32, format_f64};
use super::DisplayValue;
use crate::core::ir::Scalar;

/// A value with more scalars than this is summarised. See Note [Summarised tables].
pub(super) const SUMMARY_THRESHOLD: usize = 1000;

/// Items kept at each end of a summarised axis. See Note [Summarised tables].
pub(super) const SUMMARY_EDGE: usize = 3;

/// A scalar as Dex prints it: floats by `format_f32`/`format_f64`, integers in decimal,
/// `True`/`False`.
pub fn format_scalar(scalar: Scalar) -> String {
    let mut res = String::new();
    write_scalar(&mut res, scalar);
    res
}

/// A value on one line, as Dex prints it; with `summarise`, a value of more than 1000
/// scalars has its long table axes abbreviated. See Note [Summarised tables].
pub fn format_value(value: &DisplayValue, summarise: bool) -> String {
    let abbreviate = summarise && n_scalars(value) > SUMMARY_THRESHOLD;
    let mut res = String::new();
    write_value(&mut res, value, abbreviate);
    res
}

/// The number of scalars in a value (saturating; only compared with the threshold).
fn n_scalars(value: &DisplayValue) -> usize {
    match value {
        DisplayValue::Scalar(_) | DisplayValue::Text(_) => 1,
        DisplayValue::Table(items)
        | DisplayValue::Tuple(items)
        | DisplayValue::Con(_, items)
        | DisplayValue::Struct(_, items) => items
            .iter()
            .fold(0, |n_elems, item| n_elems.saturating_add(n_scalars(item))),
    }
}

fn write_scalar(res: &mut String, scalar: Scalar) {
    match scalar {
        Scalar::F32(x) => res.push_str(&format_f32(x)),
        Scalar::F64(x) => res.push_str(&format_f64(x)),
        Scalar::I32(n) => push_display(res, n),
        Scalar::I64(n) => push_display(res, n),
        Scalar::U32(n) => push_display(res, n),
        Scalar::U64(n) => push_display(res, n),
        Scalar::Bool(b) => res.push_str(if b { "True" } else { "False" }),
    }
}

fn push_display(res: &mut String, item: impl std::fmt::Display) {
    // Writing to a `String` cannot fail.
    let _ = write!(res, "{item}");
}

fn write_value(res: &mut String, value: &DisplayValue, abbreviate: bool) {
    match value {
        DisplayValue::Scalar(scalar) => write_scalar(res, *scalar),
        DisplayValue::Table(items) => {
            res.push('[');
            if abbreviate && items.len() > 2 * SUMMARY_EDGE {
                let (head, rest) = items.split_at(SUMMARY_EDGE);
                let tail = &rest[rest.len() - SUMMARY_EDGE..];
                write_items(res, head, abbreviate);
                res.push_str(", ..., ");
                write_items(res, tail, abbreviate);
            } else {
                write_items(res, items, abbreviate);
            }
            res.push(']');
        }
        DisplayValue::Tuple(items) => {
            res.push('(');
            write_items(res, items, abbreviate);
            res.push(')');
        }
        DisplayValue::Struct(name, items) => {
            res.push_str(name);
            res.push('(');
            write_items(res, items, abbreviate);
            res.push(')');
        }
        // Dex's form: a constructor with fields in parentheses, the fields by spaces.
        DisplayValue::Con(name, items) if items.is_empty() => res.push_str(name),
        DisplayValue::Con(name, items) => {
            res.push('(');
            res.push_str(name);
            for item in items {
                res.push(' ');
                write_value(res, item, abbreviate);
            }
            res.push(')');
        }
        DisplayValue::Text(text) => res.push_str(text),
    }
}

fn write_items(res: &mut String, items: &[DisplayValue], abbreviate: bool) {
    for (item_idx, item) in items.iter().enumerate() {
        if item_idx > 0 {
            res.push_str(", ");
        }
        write_value(res, item, abbreviate);
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;

    fn f32s(xs: &[f32]) -> DisplayValue {
        DisplayValue::f32_table(xs)
    }

    fn u32s(range: std::ops::Range<u32>) -> DisplayValue {
        DisplayValue::Table(
            range
                .map(|n| DisplayValue::Scalar(Scalar::U32(n)))
                .collect(),
        )
    }

    fn tuple(items: Vec<DisplayValue>) -> DisplayValue {
        DisplayValue::Tuple(items)
    }

    fn scalar(scalar: Scalar) -> DisplayValue {
        DisplayValue::Scalar(scalar)
    }

    fn check_value(value: &DisplayValue, summarise: bool, expect: Expect) {
        expect.assert_eq(&format_value(value, summarise));
    }

    #[test]
    fn scalars() {
        let cases = [
            (Scalar::F32(2.0), "2."),
            (Scalar::F32(2.535_182e-6), "2.535182e-06"),
            (Scalar::F64(0.1), "0.1"),
            (Scalar::F64(1e300), "1e+300"),
            (Scalar::I32(-7), "-7"),
            (Scalar::I32(i32::MIN), "-2147483648"),
            (Scalar::I64(i64::MAX), "9223372036854775807"),
            (Scalar::U32(45), "45"),
            (Scalar::U64(u64::MAX), "18446744073709551615"),
            (Scalar::Bool(true), "True"),
            (Scalar::Bool(false), "False"),
        ];
        for (scalar, expected) in cases {
            assert_eq!(format_scalar(scalar), expected, "{scalar:?}");
        }
    }

    #[test]
    fn tables_and_tuples() {
        check_value(&f32s(&[1.0, 2.0, 3.0]), false, expect!["[1., 2., 3.]"]);
        check_value(
            &DisplayValue::Table(vec![f32s(&[1.0, 2.0]), f32s(&[3.0, 4.0])]),
            false,
            expect!["[[1., 2.], [3., 4.]]"],
        );
        check_value(&DisplayValue::Table(Vec::new()), false, expect!["[]"]);
        check_value(
            &DisplayValue::Table(vec![DisplayValue::Table(Vec::new()); 2]),
            false,
            expect!["[[], []]"],
        );
        check_value(
            &tuple(vec![scalar(Scalar::F32(1.0)), u32s(2..4)]),
            false,
            expect!["(1., [2, 3])"],
        );
        check_value(
            &DisplayValue::Table(vec![
                tuple(vec![scalar(Scalar::F32(1.0)), scalar(Scalar::I32(2))]),
                tuple(vec![scalar(Scalar::F32(3.0)), scalar(Scalar::I32(4))]),
            ]),
            false,
            expect!["[(1., 2), (3., 4)]"],
        );
        check_value(
            &tuple(vec![
                scalar(Scalar::Bool(true)),
                tuple(vec![scalar(Scalar::F64(0.5)), scalar(Scalar::U64(2))]),
            ]),
            false,
            expect!["(True, (0.5, 2))"],
        );
        check_value(&scalar(Scalar::F32(f32::NAN)), true, expect!["nan"]);
    }

    #[test]
    fn small_values_are_never_summarised() {
        // 1000 scalars: at the threshold, not over it.
        let value = u32s(0..1000);
        let text = format_value(&value, true);
        assert!(!text.contains("..."));
        assert!(text.ends_with(", 998, 999]"));
        assert_eq!(text, format_value(&value, false));
    }

    #[test]
    fn big_tables_are_summarised_at_every_level() {
        check_value(
            &u32s(0..1001),
            true,
            expect!["[0, 1, 2, ..., 998, 999, 1000]"],
        );
        let matrix =
            DisplayValue::Table((0..40).map(|row| u32s(row * 100..row * 100 + 30)).collect());
        check_value(
            &matrix,
            true,
            expect![
                "[[0, 1, 2, ..., 27, 28, 29], [100, 101, 102, ..., 127, 128, 129], [200, 201, 202, ..., 227, 228, 229], ..., [3700, 3701, 3702, ..., 3727, 3728, 3729], [3800, 3801, 3802, ..., 3827, 3828, 3829], [3900, 3901, 3902, ..., 3927, 3928, 3929]]"
            ],
        );
        // Axes of at most 6 items are kept whole even when the value is big.
        let tall = DisplayValue::Table((0..200).map(|row| u32s(row * 6..row * 6 + 6)).collect());
        check_value(
            &tall,
            true,
            expect![
                "[[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 16, 17], ..., [1182, 1183, 1184, 1185, 1186, 1187], [1188, 1189, 1190, 1191, 1192, 1193], [1194, 1195, 1196, 1197, 1198, 1199]]"
            ],
        );
        // The count is over the whole value, tuples included; every table in it is abbreviated.
        check_value(
            &tuple(vec![u32s(0..8), u32s(0..995)]),
            true,
            expect!["([0, 1, 2, ..., 5, 6, 7], [0, 1, 2, ..., 992, 993, 994])"],
        );
        assert!(!format_value(&tuple(vec![u32s(0..8), u32s(0..992)]), true).contains("..."));
    }

    #[test]
    fn big_tables_print_whole_without_summarise() {
        let text = format_value(&u32s(0..5000), false);
        assert!(!text.contains("..."));
        assert!(!text.contains('\n'));
        assert_eq!(text.matches(", ").count(), 4999);
    }
}

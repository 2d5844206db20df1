//! Table-driven tests of every primitive's type and evaluation rules.

use super::{Prim, ALL_ELEMS, ALL_PRIMS};
use crate::core::ir::{Elem, Scalar};

use Scalar::{Bool as B, F32, F64, I32, I64, U32, U64};

/// One evaluation case: the primitive, its operands and the expected result.
type Case = (Prim, Vec<Scalar>, Scalar);

fn eval_cases() -> Vec<Case> {
    use Prim::*;
    vec![
        // add / sub / mul: wrap on integers.
        (Add, vec![F32(1.5), F32(2.25)], F32(3.75)),
        (Add, vec![F64(0.1), F64(0.2)], F64(0.1 + 0.2)),
        (Add, vec![I32(i32::MAX), I32(1)], I32(i32::MIN)),
        (Add, vec![I64(-3), I64(5)], I64(2)),
        (Add, vec![U32(u32::MAX), U32(2)], U32(1)),
        (Add, vec![U64(7), U64(8)], U64(15)),
        (Sub, vec![F64(1.0), F64(3.0)], F64(-2.0)),
        (Sub, vec![U32(0), U32(1)], U32(u32::MAX)),
        (Sub, vec![I64(i64::MIN), I64(1)], I64(i64::MAX)),
        (Mul, vec![F32(-2.0), F32(3.5)], F32(-7.0)),
        (Mul, vec![I32(65536), I32(65536)], I32(0)),
        (Mul, vec![U64(3), U64(5)], U64(15)),
        // div: float IEEE; integers truncate, 0 on /0.
        (Div, vec![F64(1.0), F64(4.0)], F64(0.25)),
        (Div, vec![F32(1.0), F32(0.0)], F32(f32::INFINITY)),
        (Div, vec![F64(0.0), F64(0.0)], F64(f64::NAN)),
        (Div, vec![I64(-7), I64(2)], I64(-3)),
        (Div, vec![I64(7), I64(-2)], I64(-3)),
        (Div, vec![I64(7), I64(0)], I64(0)),
        (Div, vec![I32(i32::MIN), I32(-1)], I32(i32::MIN)),
        (Div, vec![U32(7), U32(0)], U32(0)),
        (Div, vec![U64(9), U64(2)], U64(4)),
        // neg: unsigned wraps.
        (Neg, vec![F64(2.5)], F64(-2.5)),
        (Neg, vec![F32(0.0)], F32(-0.0)),
        (Neg, vec![I32(i32::MIN)], I32(i32::MIN)),
        (Neg, vec![I64(4)], I64(-4)),
        (Neg, vec![U32(1)], U32(u32::MAX)),
        (Neg, vec![U64(0)], U64(0)),
        // abs
        (Abs, vec![F64(-2.5)], F64(2.5)),
        (Abs, vec![F32(-0.0)], F32(0.0)),
        (Abs, vec![I64(-4)], I64(4)),
        (Abs, vec![I32(i32::MIN)], I32(i32::MIN)),
        (Abs, vec![U32(4)], U32(4)),
        // min / max: NaN poisons floats.
        (Min, vec![F64(1.0), F64(-1.0)], F64(-1.0)),
        (Min, vec![F64(f64::NAN), F64(1.0)], F64(f64::NAN)),
        (Min, vec![F32(1.0), F32(f32::NAN)], F32(f32::NAN)),
        (Min, vec![I64(-5), I64(3)], I64(-5)),
        (Min, vec![U32(5), U32(3)], U32(3)),
        (Max, vec![F64(1.0), F64(-1.0)], F64(1.0)),
        (Max, vec![F64(1.0), F64(f64::NAN)], F64(f64::NAN)),
        (Max, vec![I32(-5), I32(3)], I32(3)),
        (Max, vec![U64(5), U64(3)], U64(5)),
        // min / max on signed zeros: -0 < +0 whichever operand comes first.
        (Max, vec![F64(-0.0), F64(0.0)], F64(0.0)),
        (Max, vec![F32(0.0), F32(-0.0)], F32(0.0)),
        (Min, vec![F64(0.0), F64(-0.0)], F64(-0.0)),
        (Min, vec![F32(-0.0), F32(0.0)], F32(-0.0)),
        // mod: floored, sign of the divisor, 0 on mod 0 (integers).
        (Mod, vec![I64(7), I64(3)], I64(1)),
        (Mod, vec![I64(-7), I64(3)], I64(2)),
        (Mod, vec![I64(7), I64(-3)], I64(-2)),
        (Mod, vec![I64(-7), I64(-3)], I64(-1)),
        (Mod, vec![I64(-6), I64(3)], I64(0)),
        (Mod, vec![I64(7), I64(0)], I64(0)),
        (Mod, vec![I32(i32::MIN), I32(-1)], I32(0)),
        (Mod, vec![U32(7), U32(0)], U32(0)),
        (Mod, vec![U64(7), U64(3)], U64(1)),
        (Mod, vec![F64(-7.5), F64(2.0)], F64(0.5)),
        (Mod, vec![F64(7.5), F64(-2.0)], F64(-0.5)),
        (Mod, vec![F32(7.5), F32(2.0)], F32(1.5)),
        (Mod, vec![F64(-4.0), F64(2.0)], F64(0.0)),
        (Mod, vec![F64(1.0), F64(0.0)], F64(f64::NAN)),
        // idiv: floored, 0 on /0 (integers).
        (IDiv, vec![I64(7), I64(2)], I64(3)),
        (IDiv, vec![I64(-7), I64(2)], I64(-4)),
        (IDiv, vec![I64(7), I64(-2)], I64(-4)),
        (IDiv, vec![I64(-7), I64(-2)], I64(3)),
        (IDiv, vec![I64(-6), I64(2)], I64(-3)),
        (IDiv, vec![I64(5), I64(0)], I64(0)),
        (IDiv, vec![I32(i32::MIN), I32(-1)], I32(i32::MIN)),
        (IDiv, vec![U32(7), U32(2)], U32(3)),
        (IDiv, vec![U64(7), U64(0)], U64(0)),
        (IDiv, vec![F64(-7.0), F64(2.0)], F64(-4.0)),
        // math, f64 and f32 (f32 computed in f32).
        (Sqrt, vec![F64(9.0)], F64(3.0)),
        (Sqrt, vec![F32(2.0)], F32(2.0f32.sqrt())),
        (Sqrt, vec![F64(-1.0)], F64(f64::NAN)),
        (Exp, vec![F64(0.0)], F64(1.0)),
        (Exp, vec![F32(1.0)], F32(1.0f32.exp())),
        (Exp2, vec![F64(3.0)], F64(8.0)),
        (Log, vec![F64(1.0)], F64(0.0)),
        (Log, vec![F64(0.0)], F64(f64::NEG_INFINITY)),
        (Log, vec![F32(-1.0)], F32(f32::NAN)),
        (Log2, vec![F64(8.0)], F64(3.0)),
        (Log10, vec![F32(1000.0)], F32(3.0)),
        (Log1p, vec![F64(0.0)], F64(0.0)),
        (Log1p, vec![F64(1e-20)], F64(1e-20)),
        (Expm1, vec![F64(1e-20)], F64(1e-20)),
        (Sin, vec![F64(0.5)], F64(0.5f64.sin())),
        (Sin, vec![F32(0.5)], F32(0.5f32.sin())),
        (Cos, vec![F64(0.0)], F64(1.0)),
        (Tan, vec![F64(0.25)], F64(0.25f64.tan())),
        (Tanh, vec![F64(100.0)], F64(1.0)),
        (Sinh, vec![F64(0.0)], F64(0.0)),
        (Cosh, vec![F64(0.0)], F64(1.0)),
        (
            Atan,
            vec![F64(f64::INFINITY)],
            F64(std::f64::consts::FRAC_PI_2),
        ),
        (Floor, vec![F64(-1.5)], F64(-2.0)),
        (Ceil, vec![F32(-1.5)], F32(-1.0)),
        (Round, vec![F64(2.5)], F64(3.0)),
        (Round, vec![F64(-2.5)], F64(-3.0)),
        (Round, vec![F32(0.5)], F32(1.0)),
        (Round, vec![F64(1.4)], F64(1.0)),
        (Pow, vec![F64(2.0), F64(10.0)], F64(1024.0)),
        (Pow, vec![F32(4.0), F32(0.5)], F32(2.0)),
        (Pow, vec![F64(-8.0), F64(1.0 / 3.0)], F64(f64::NAN)),
        (
            Atan2,
            vec![F64(1.0), F64(-1.0)],
            F64(3.0 * std::f64::consts::FRAC_PI_4),
        ),
        // More math cases, so that each primitive has at least two.
        (Exp2, vec![F32(-1.0)], F32(0.5)),
        (Log2, vec![F32(0.25)], F32(-2.0)),
        (Log10, vec![F64(0.01)], F64(-2.0)),
        (Expm1, vec![F32(0.0)], F32(0.0)),
        (Tan, vec![F32(0.0)], F32(0.0)),
        (Tanh, vec![F32(0.0)], F32(0.0)),
        (Sinh, vec![F32(1.0)], F32(1.0f32.sinh())),
        (Cosh, vec![F32(1.0)], F32(1.0f32.cosh())),
        (Atan, vec![F32(0.0)], F32(0.0)),
        (Floor, vec![F32(2.5)], F32(2.0)),
        (Floor, vec![F64(f64::NAN)], F64(f64::NAN)),
        (Ceil, vec![F64(f64::INFINITY)], F64(f64::INFINITY)),
        (Atan2, vec![F32(0.0), F32(1.0)], F32(0.0)),
        (StopGradient, vec![F32(-2.5)], F32(-2.5)),
        (StopGradient, vec![F64(f64::NAN)], F64(f64::NAN)),
        (Not, vec![B(true)], B(false)),
        (Cos, vec![F32(0.5)], F32(0.5f32.cos())),
        // comparisons: any element type; NaN compares unequal.
        (Eq, vec![F64(1.0), F64(1.0)], B(true)),
        (Eq, vec![F64(f64::NAN), F64(f64::NAN)], B(false)),
        (Eq, vec![F32(0.0), F32(-0.0)], B(true)),
        (Eq, vec![I64(3), I64(4)], B(false)),
        (Eq, vec![B(true), B(true)], B(true)),
        (Ne, vec![F64(f64::NAN), F64(f64::NAN)], B(true)),
        (Ne, vec![U32(3), U32(3)], B(false)),
        (Lt, vec![I32(-1), I32(0)], B(true)),
        (Lt, vec![U64(1), U64(0)], B(false)),
        (Lt, vec![F64(f64::NAN), F64(1.0)], B(false)),
        (Lt, vec![B(false), B(true)], B(true)),
        (Gt, vec![F32(2.0), F32(1.0)], B(true)),
        (Gt, vec![F64(f64::NAN), F64(1.0)], B(false)),
        (Le, vec![I64(3), I64(3)], B(true)),
        (Le, vec![F64(f64::NAN), F64(f64::NAN)], B(false)),
        (Ge, vec![I64(2), I64(3)], B(false)),
        (Ge, vec![U32(3), U32(3)], B(true)),
        // logic.
        (And, vec![B(true), B(false)], B(false)),
        (And, vec![B(true), B(true)], B(true)),
        (Or, vec![B(false), B(false)], B(false)),
        (Or, vec![B(false), B(true)], B(true)),
        (Not, vec![B(false)], B(true)),
        (IsNan, vec![F64(f64::NAN)], B(true)),
        (IsNan, vec![F32(1.0)], B(false)),
        (IsInf, vec![F64(f64::NEG_INFINITY)], B(true)),
        (IsInf, vec![F32(f32::INFINITY)], B(true)),
        (IsInf, vec![F64(f64::NAN)], B(false)),
        // select.
        (Select, vec![B(true), F64(1.0), F64(2.0)], F64(1.0)),
        (Select, vec![B(false), I64(1), I64(2)], I64(2)),
        (
            Select,
            vec![B(false), F64(1.0), F64(f64::NAN)],
            F64(f64::NAN),
        ),
        // casts: float→int truncates and saturates, NaN→0; int→int wraps; bool↔number.
        (Cast(Elem::I64), vec![F64(-2.7)], I64(-2)),
        (Cast(Elem::I64), vec![F64(2.7)], I64(2)),
        (Cast(Elem::I32), vec![F64(1e20)], I32(i32::MAX)),
        (Cast(Elem::I32), vec![F32(f32::NEG_INFINITY)], I32(i32::MIN)),
        (Cast(Elem::I64), vec![F64(f64::NAN)], I64(0)),
        (Cast(Elem::U32), vec![F64(-5.0)], U32(0)),
        (Cast(Elem::U64), vec![F32(3.9)], U64(3)),
        (Cast(Elem::I32), vec![I64(1 << 32 | 5)], I32(5)),
        (Cast(Elem::U32), vec![I32(-1)], U32(u32::MAX)),
        (Cast(Elem::I64), vec![U64(u64::MAX)], I64(-1)),
        (Cast(Elem::I32), vec![U32(7)], I32(7)),
        (Cast(Elem::F64), vec![I64(-3)], F64(-3.0)),
        (Cast(Elem::F32), vec![F64(0.1)], F32(0.1)),
        (Cast(Elem::F64), vec![F32(0.5)], F64(0.5)),
        (Cast(Elem::F32), vec![B(true)], F32(1.0)),
        (Cast(Elem::I64), vec![B(false)], I64(0)),
        (Cast(Elem::U64), vec![B(true)], U64(1)),
        (Cast(Elem::Bool), vec![F64(0.0)], B(false)),
        (Cast(Elem::Bool), vec![F64(-0.0)], B(false)),
        (Cast(Elem::Bool), vec![F32(f32::NAN)], B(true)),
        (Cast(Elem::Bool), vec![I64(-2)], B(true)),
        (Cast(Elem::Bool), vec![U32(0)], B(false)),
        (Cast(Elem::Bool), vec![B(true)], B(true)),
        (Cast(Elem::U32), vec![U32(9)], U32(9)),
        // random: Threefry-2x32 known answers (Random123 `kat_vectors`), Dex's `rand` bits.
        (
            Threefry2x32,
            vec![U64(0), U64(0)],
            U64(0x6b20_0159_99ba_4efe),
        ),
        (
            Threefry2x32,
            vec![U64(123), U64(456)],
            U64(0x5009_45c5_65c9_8701),
        ),
        (UnitFromBits, vec![U64(0)], F32(0.0)),
        (UnitFromBits, vec![U64(1 << 22)], F32(0.5)),
    ]
}

/// Equal as values: NaN equals NaN, `-0.0` differs from `0.0`, and floats from transcendental
/// functions may differ in the last few ulps.
fn same(found: Scalar, expected: Scalar) -> bool {
    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a.is_nan() && b.is_nan())
            || (a == b && a.is_sign_negative() == b.is_sign_negative())
            || (a - b).abs() <= rel * a.abs().max(b.abs())
    }
    match (found, expected) {
        (Scalar::F32(a), Scalar::F32(b)) => close(f64::from(a), f64::from(b), 1e-6),
        (Scalar::F64(a), Scalar::F64(b)) => close(a, b, 1e-14),
        (a, b) => a == b,
    }
}

#[test]
fn eval_table() {
    let mut failures = Vec::new();
    for (prim, operands, expected) in eval_cases() {
        let elems: Vec<Elem> = operands.iter().map(|scalar| scalar.elem()).collect();
        match prim.result_elem(&elems) {
            Ok(elem) => assert_eq!(elem, expected.elem(), "{prim:?} {operands:?}: result type"),
            Err(error) => failures.push(format!("{prim:?} {operands:?}: ill-typed: {error}")),
        }
        let found = prim.eval(&operands);
        if !same(found, expected) {
            failures.push(format!(
                "{prim:?} {operands:?}: got {found:?}, expected {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Note [Float selections]: float `min` and `max` are exactly commutative and associative
/// (same bits in every order), on signed zeros, infinities and NaN included, so that reductions
/// over them may run in any order.
#[test]
fn float_selections_are_commutative_and_associative_bit_for_bit() {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MIN_POSITIVE,
    ];
    for prim in [Prim::Min, Prim::Max] {
        let f64_op = |a: f64, b: f64| match prim.eval(&[F64(a), F64(b)]) {
            F64(value) => value.to_bits(),
            other => panic!("{prim:?} gave {other:?}"),
        };
        let f32_op = |a: f64, b: f64| match prim.eval(&[F32(a as f32), F32(b as f32)]) {
            F32(value) => value.to_bits(),
            other => panic!("{prim:?} gave {other:?}"),
        };
        for &a in &specials {
            for &b in &specials {
                assert_eq!(f64_op(a, b), f64_op(b, a), "{prim:?} {a} {b}");
                assert_eq!(f32_op(a, b), f32_op(b, a), "{prim:?} {a} {b} (f32)");
                for &c in &specials {
                    let (ab, bc) = (f64::from_bits(f64_op(a, b)), f64::from_bits(f64_op(b, c)));
                    assert_eq!(f64_op(ab, c), f64_op(a, bc), "{prim:?} {a} {b} {c}");
                    let as_f64 = |bits: u32| f64::from(f32::from_bits(bits));
                    let (ab, bc) = (as_f64(f32_op(a, b)), as_f64(f32_op(b, c)));
                    assert_eq!(f32_op(ab, c), f32_op(a, bc), "{prim:?} {a} {b} {c} (f32)");
                }
            }
        }
    }
}

#[test]
fn every_prim_has_eval_cases() {
    let cases = eval_cases();
    for prim in ALL_PRIMS
        .iter()
        .copied()
        .chain(ALL_ELEMS.iter().map(|&elem| Prim::Cast(elem)))
    {
        let n_cases = cases
            .iter()
            .filter(|(case_prim, _, _)| *case_prim == prim)
            .count();
        // Casts are covered per target type; other primitives need at least two cases.
        let wanted = if matches!(prim, Prim::Cast(_)) { 1 } else { 2 };
        assert!(n_cases >= wanted, "{prim:?} has {n_cases} eval cases");
    }
}

#[test]
fn names_round_trip() {
    for prim in ALL_PRIMS
        .iter()
        .copied()
        .chain(ALL_ELEMS.iter().map(|&elem| Prim::Cast(elem)))
    {
        assert_eq!(Prim::from_name(&prim.name()), Some(prim));
    }
    assert_eq!(Prim::from_name("frobnicate"), None);
    assert_eq!(Prim::from_name("cast_f16"), None);
}

/// Which element types each primitive accepts (all operands of one type, except `select`).
#[test]
fn type_rules_accept_and_reject() {
    use Elem::*;
    for &prim in ALL_PRIMS {
        for &elem in ALL_ELEMS {
            let operands = match prim {
                Prim::Select => vec![Bool, elem, elem],
                _ => vec![elem; prim.arity()],
            };
            let accepted = prim.result_elem(&operands).is_ok();
            let expected = match prim {
                Prim::Add
                | Prim::Sub
                | Prim::Mul
                | Prim::Div
                | Prim::Neg
                | Prim::Abs
                | Prim::Min
                | Prim::Max
                | Prim::Mod
                | Prim::IDiv => elem.is_numeric(),
                Prim::Eq | Prim::Ne | Prim::Lt | Prim::Gt | Prim::Le | Prim::Ge => true,
                Prim::And | Prim::Or | Prim::Not => elem == Bool,
                Prim::Select => true,
                Prim::Cast(_) => true,
                Prim::Threefry2x32 | Prim::UnitFromBits => elem == U64,
                _ => elem.is_float(),
            };
            assert_eq!(accepted, expected, "{prim:?} on {elem:?}");
        }
    }
    for &from in ALL_ELEMS {
        for &to in ALL_ELEMS {
            assert_eq!(Prim::Cast(to).result_elem(&[from]), Ok(to));
        }
    }
}

#[test]
fn type_rules_reject_mixed_and_wrong_arity() {
    assert!(Prim::Add.result_elem(&[Elem::F32, Elem::F64]).is_err());
    assert!(Prim::Lt.result_elem(&[Elem::I64, Elem::I32]).is_err());
    assert!(Prim::Select
        .result_elem(&[Elem::I64, Elem::F64, Elem::F64])
        .is_err());
    assert!(Prim::Select
        .result_elem(&[Elem::Bool, Elem::F64, Elem::F32])
        .is_err());
    assert!(Prim::Neg.result_elem(&[Elem::F64, Elem::F64]).is_err());
    assert!(Prim::Add.result_elem(&[Elem::F64]).is_err());
    assert_eq!(
        Prim::Lt.result_elem(&[Elem::F32, Elem::F32]),
        Ok(Elem::Bool)
    );
    assert_eq!(Prim::IsNan.result_elem(&[Elem::F64]), Ok(Elem::Bool));
    let error = Prim::Sqrt.result_elem(&[Elem::I64]).unwrap_err();
    assert_eq!(error.prim, Some(Prim::Sqrt));
    assert_eq!(
        error.problem,
        super::PrimTypeProblem::Operands {
            expected: "float operands",
            got: vec![Elem::I64]
        }
    );
    assert_eq!(error.to_string(), "sqrt: expects float operands, got i64");
    let mixed = Prim::Add.result_elem(&[Elem::F64, Elem::I64]).unwrap_err();
    assert_eq!(
        mixed.problem,
        super::PrimTypeProblem::Mixed(Elem::F64, Elem::I64)
    );
    let arity = Prim::Add.result_elem(&[Elem::F64]).unwrap_err();
    assert_eq!(
        arity.problem,
        super::PrimTypeProblem::Arity {
            expected: 2,
            got: 1
        }
    );
}

/// `ArgumentOrder::Any` primitives give the same value with swapped operands, and a `Mirror`
/// gives its mirror's value with swapped operands (NaNs compared as NaN, signed zeros by
/// bits).
#[test]
fn argument_orders_hold_on_sample_values() {
    use crate::prim::ArgumentOrder;
    let samples = [
        F64(1.5),
        F64(-2.0),
        F64(0.0),
        F64(-0.0),
        F64(f64::INFINITY),
        F64(f64::NAN),
        I64(3),
        I64(-7),
        B(true),
        B(false),
    ];
    let same = |a: Scalar, b: Scalar| match (a, b) {
        (F64(x), F64(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    };
    let mut n_checked = 0;
    for &prim in ALL_PRIMS {
        let swapped = match prim.argument_order() {
            ArgumentOrder::Any => prim,
            ArgumentOrder::Mirror(mirror) => mirror,
            ArgumentOrder::Fixed => continue,
        };
        for &a in &samples {
            for &b in &samples {
                if prim.result_elem(&[a.elem(), b.elem()]).is_err() {
                    continue;
                }
                let (ab, ba) = (prim.eval(&[a, b]), swapped.eval(&[b, a]));
                assert!(same(ab, ba), "{prim:?} {a:?} {b:?}: {ab:?} vs {ba:?}");
                n_checked += 1;
            }
        }
    }
    assert!(n_checked > 100, "{n_checked}");
}

/// Note [Sign-clear values]: wherever `sign_clear` says a result's sign bit is clear given
/// which operands' are, it is (or the result is a NaN), over special and ordinary floats of
/// both widths: every operand the claim marks clear is drawn from the clear samples, the
/// others from all samples.
#[test]
fn sign_rules_hold_on_special_values() {
    let magnitudes = [
        0.0,
        1e-45,
        1e-30,
        0.5,
        1.0,
        3.0,
        88.0,
        1e30,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
    ];
    let floats = |elem: Elem| -> Vec<Scalar> {
        magnitudes
            .iter()
            .flat_map(|&m| [m, -m])
            .map(|x| match elem {
                Elem::F32 => F32(x as f32),
                _ => F64(x),
            })
            .collect()
    };
    let clear = crate::ops::sign::scalar_clear;
    let mut n_checked = 0;
    for elem in [Elem::F32, Elem::F64] {
        let all = floats(elem);
        let clear_samples: Vec<Scalar> = all.iter().copied().filter(|&x| clear(x)).collect();
        for &prim in ALL_PRIMS {
            let arity = prim.arity();
            let operand_elems: Vec<Elem> = (0..arity)
                .map(|k| {
                    if prim == Prim::Select && k == 0 {
                        Elem::Bool
                    } else {
                        elem
                    }
                })
                .collect();
            if prim.result_elem(&operand_elems) != Ok(elem) {
                continue;
            }
            // Every claim the rule makes: a subset of operands known clear.
            for known in 0..1usize << arity {
                let claim: Vec<bool> = (0..arity).map(|k| known >> k & 1 == 1).collect();
                if !prim.sign_clear(&claim) {
                    continue;
                }
                let choices: Vec<Vec<Scalar>> = (0..arity)
                    .map(|k| match operand_elems[k] {
                        Elem::Bool => vec![B(true), B(false)],
                        _ if claim[k] => clear_samples.clone(),
                        _ => all.clone(),
                    })
                    .collect();
                let mut index = vec![0; arity];
                loop {
                    let operands: Vec<Scalar> = (0..arity).map(|k| choices[k][index[k]]).collect();
                    let result = prim.eval(&operands);
                    assert!(
                        clear(result),
                        "{prim:?} {operands:?} = {result:?}, claim {claim:?}"
                    );
                    n_checked += 1;
                    // The next combination of operands.
                    let Some(k) = (0..arity).find(|&k| index[k] + 1 < choices[k].len()) else {
                        break;
                    };
                    index[k] += 1;
                    index[..k].iter_mut().for_each(|i| *i = 0);
                }
            }
        }
    }
    assert!(n_checked > 3000, "{n_checked}");
}

/// Every family's table of typed functions (`Prim::lift`, which `Prim::eval` and the engine's
/// kernels all read; `eval_cases` check its values) gives each primitive a function of its
/// arity on every element type it takes, except the few the engine runs on its own.
#[test]
fn the_lift_tables_give_each_primitive_a_function_of_its_arity() {
    use super::{Lift, LiftRelation, Lifted};
    /// The number of operands of the function handed over.
    struct Arity;
    impl<T> Lift<T> for Arity {
        type Output = usize;
        fn unary(self, _: impl Fn(T) -> T) -> usize {
            1
        }
        fn binary(self, _: impl Fn(T, T) -> T) -> usize {
            2
        }
    }
    impl<T> LiftRelation<T> for Arity {
        fn relation(self, _: impl Fn(T, T) -> bool) -> usize {
            2
        }
        fn test(self, _: impl Fn(T) -> bool) -> usize {
            1
        }
    }
    fn arity<T: Lifted>(prim: Prim) -> Option<usize> {
        prim.lift::<T, _>(Arity).ok()
    }
    let mut unlifted = Vec::new();
    for prim in ALL_PRIMS.iter().copied() {
        let mut lifted_somewhere = false;
        for &elem in ALL_ELEMS {
            if prim.result_elem(&vec![elem; prim.arity()]).is_err() {
                continue;
            }
            let got = match elem {
                Elem::F32 => arity::<f32>(prim),
                Elem::F64 => arity::<f64>(prim),
                Elem::I32 => arity::<i32>(prim),
                Elem::I64 => arity::<i64>(prim),
                Elem::U32 => arity::<u32>(prim),
                Elem::U64 => arity::<u64>(prim),
                Elem::Bool => arity::<bool>(prim),
            };
            if let Some(got) = got {
                assert_eq!(got, prim.arity(), "{prim:?} on {elem:?}");
                lifted_somewhere = true;
            }
        }
        if !lifted_somewhere {
            unlifted.push(prim);
        }
    }
    use Prim::*;
    assert_eq!(unlifted, [And, Or, Not, Select, Threefry2x32, UnitFromBits]);
}

/// The signatures (`prim::signature`) name every primitive the language can write, by a name
/// or an operator, each name and operator once, with as many operands as the primitive takes.
#[test]
fn signatures_name_each_primitive_once_with_its_arity() {
    let mut seen = std::collections::HashSet::new();
    for prim in ALL_PRIMS.iter().copied() {
        let signature = prim.signature();
        assert_eq!(signature.operands.len(), prim.arity(), "{prim:?}");
        assert!(
            signature.name.is_some() || signature.infix.is_some(),
            "{prim:?} cannot be written"
        );
        for written in [signature.name, signature.infix].into_iter().flatten() {
            assert!(seen.insert(written), "`{written}` names two primitives");
        }
        if let Some(name) = signature.name {
            assert_eq!(Prim::from_surface_name(name), Some(prim));
        }
        if let Some(symbol) = signature.infix {
            assert_eq!(Prim::from_infix(symbol), Some(prim));
        }
    }
}

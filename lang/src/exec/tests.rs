//! Tests of the bulk evaluator: every result and every error must equal the reference
//! interpreter's (`ops::interp`), on hand-written bulk programs, on random programs from
//! `ops::testgen`, and primitive by primitive on edge values.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::elementwise::{eval_prim, generic_binary, generic_ternary, generic_unary};
use super::tensor::{from_vec, Tensor};
use super::{run_inner, run_with_report, CompileLoops, ExecConfig, ExecReport, PAR_THRESHOLD};
use crate::core::ir::{Elem, Program, Scalar};
use crate::core::parse::parse_program;
use crate::core::value::{Array, ArrayData};
use crate::ops::interp::{self, InterpConfig, InterpError};
use crate::ops::testgen::{
    monoid_program, random_array, random_inputs, random_program, GenConfig, MonoidInits, Rng,
};
use crate::ops::verify::verify;
use crate::prim::{Prim, ALL_ELEMS, ALL_PRIMS};

// Helpers.

/// Equal shapes and elements; floats compare by bits, except that any two NaNs are equal.
fn same_array(a: &Array, b: &Array) -> bool {
    fn floats<T: Copy + PartialEq>(xs: &[T], ys: &[T], bits: impl Fn(T) -> (u64, bool)) -> bool {
        xs.len() == ys.len()
            && xs.iter().zip(ys).all(|(&x, &y)| {
                let (x_bits, x_nan) = bits(x);
                let (y_bits, y_nan) = bits(y);
                x_bits == y_bits || (x_nan && y_nan)
            })
    }
    a.shape == b.shape
        && match (&*a.data, &*b.data) {
            (ArrayData::F32(xs), ArrayData::F32(ys)) => {
                floats(xs, ys, |x| (u64::from(x.to_bits()), x.is_nan()))
            }
            (ArrayData::F64(xs), ArrayData::F64(ys)) => {
                floats(xs, ys, |x| (x.to_bits(), x.is_nan()))
            }
            (xs, ys) => xs == ys,
        }
}

fn same_scalar(x: Scalar, y: Scalar) -> bool {
    same_array(&Array::scalar(x), &Array::scalar(y))
}

fn parse(text: &str) -> Program {
    let program = parse_program(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    if let Err(errors) = verify(&program) {
        panic!("{program}\n{errors:?}");
    }
    program
}

/// What `check_with` saw.
struct Checked {
    /// The report of the non-strict run.
    report: ExecReport,
    /// Whether the strict run stopped with an error.
    strict_failed: bool,
}

/// Runs the program through the interpreter and the evaluator, strict and not, with loops
/// of scalars on registers and as machine code, and checks that results and errors agree.
/// The report is that of the non-strict run with loops as machine code.
fn check_with(program: &Program, inputs: &[Array], batch_build1: bool) -> Checked {
    let mut report = None;
    let mut strict_failed = false;
    let runs = [true, false].into_iter().flat_map(|strict| {
        [CompileLoops::Never, CompileLoops::Always].map(|compile_loops| (strict, compile_loops))
    });
    for (strict, compile_loops) in runs {
        let expected = interp::run(
            program,
            inputs,
            &InterpConfig {
                strict,
                interrupt: None,
            },
        );
        let config = ExecConfig {
            strict,
            compile_loops,
            ..ExecConfig::default()
        };
        let tensors = inputs.iter().map(Tensor::from_array).collect();
        let got = run_inner(program, tensors, &config, batch_build1).map(|(results, report)| {
            let arrays: Vec<Array> = results.into_iter().map(Tensor::into_array).collect();
            (arrays, report)
        });
        match (expected, got) {
            (Ok(expected), Ok((got, run_report))) => {
                assert_eq!(expected.len(), got.len());
                for (position, (e, g)) in expected.iter().zip(&got).enumerate() {
                    assert!(
                        same_array(e, g),
                        "result {position} differs (strict: {strict}, {compile_loops:?})\n{program}\ninputs: {inputs:?}\ninterp: {e:?}\nexec:   {g:?}"
                    );
                }
                report = Some(run_report);
            }
            (Err(expected), Err(got)) => {
                assert_eq!(
                    expected, got,
                    "different errors (strict: {strict}, {compile_loops:?})\n{program}\ninputs: {inputs:?}"
                );
                strict_failed = true;
            }
            (expected, got) => panic!(
                "interp gave {expected:?} but exec gave {:?} (strict: {strict}, {compile_loops:?})\n{program}\ninputs: {inputs:?}",
                got.map(|(results, _)| results)
            ),
        }
    }
    Checked {
        report: report.expect("a non-strict run cannot fail"),
        strict_failed,
    }
}

fn check(program: &Program, inputs: &[Array]) -> ExecReport {
    check_with(program, inputs, false).report
}

/// Checks, and asserts that the program ran purely in bulk.
fn check_bulk(program: &Program, inputs: &[Array]) -> ExecReport {
    let report = check(program, inputs);
    assert_eq!(report.build1_fallbacks, 0, "{program}");
    assert_eq!(report.index_fn_fallbacks, 0, "{program}");
    report
}

fn f64s(shape: &[usize], values: &[f64]) -> Array {
    Array::new(shape.to_vec(), ArrayData::F64(values.to_vec()))
}

fn f32s(shape: &[usize], values: &[f32]) -> Array {
    Array::new(shape.to_vec(), ArrayData::F32(values.to_vec()))
}

fn i64s(shape: &[usize], values: &[i64]) -> Array {
    Array::new(shape.to_vec(), ArrayData::I64(values.to_vec()))
}

fn counting(n: usize) -> Vec<f64> {
    (0..n).map(|v| v as f64 * 0.5 - 3.0).collect()
}

fn strict_error(program: &Program, inputs: &[Array]) -> InterpError {
    let config = ExecConfig {
        strict: true,
        ..ExecConfig::default()
    };
    super::run(program, inputs, &config).expect_err("the strict run fails")
}

// Whole-program tests, one construct at a time.

#[test]
fn elementwise_prims_on_whole_arrays() {
    let program = parse(
        "program(%0: [2, 3]f64, %1: [2, 3]f64, %2: [2, 3]i64) {
           %3: [2, 3]f64 = add %0 %1
           %4: [2, 3]f64 = mul %3 %0
           %5: [2, 3]f64 = exp %4
           %6: [2, 3]f64 = div %0 %1
           %7: [2, 3]bool = lt %0 %1
           %8: [2, 3]f64 = select %7 %5 %6
           %9: [2, 3]i64 = cast_i64 %8
           %10: [2, 3]i64 = idiv %9 %2
           %11: [2, 3]i64 = mod %9 %2
           %12: [2, 3]f32 = cast_f32 %6
           %13: [2, 3]f32 = sqrt %12
           %14: [2, 3]f64 = max %6 %0
           %15: [2, 3]bool = not %7
           %16: []i64 = add 3:i64 4:i64
           in %8, %10, %11, %13, %14, %15, %16
         }",
    );
    let inputs = [
        f64s(&[2, 3], &[1.0, -2.0, 0.0, 3.5, 0.0, -1.0]),
        f64s(&[2, 3], &[2.0, 0.0, 0.0, -1.5, -0.0, 4.0]),
        i64s(&[2, 3], &[2, 0, -3, 5, 1, -2]),
    ];
    check_bulk(&program, &inputs);
}

#[test]
fn rank0_operands_broadcast() {
    // The verifier does not accept rank-0 broadcasting yet, so the program is built by hand:
    // `x * 2 + s` with `x : [2, 3]`, `s : []`, against the same with replicated operands.
    let program = parse(
        "program(%0: [2, 3]f64, %1: []f64) {
           %2: [3]f64 = replicate 3 2.0:f64
           %3: [2, 3]f64 = replicate 2 %2
           %4: [3]f64 = replicate 3 %1
           %5: [2, 3]f64 = replicate 2 %4
           %6: [2, 3]f64 = mul %0 %3
           %7: [2, 3]f64 = add %6 %5
           %8: [2, 3]bool = lt %0 %5
           %9: [2, 3]f64 = select %8 %0 %3
           in %7, %9
         }",
    );
    let inputs = [f64s(&[2, 3], &counting(6)), f64s(&[], &[0.25])];
    let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
    let x = Tensor::from_array(&inputs[0]);
    let s = Tensor::from_array(&inputs[1]);
    let two = Tensor::scalar(Scalar::F64(2.0));
    let shape = [2, 3];
    let twice = eval_prim(Prim::Mul, vec![x.clone(), two.clone()], &shape);
    let sum = eval_prim(Prim::Add, vec![twice, s.clone()], &shape);
    let less = eval_prim(Prim::Lt, vec![x.clone(), s], &shape);
    let Tensor::Bool(less) = less else {
        panic!("lt gives bool")
    };
    let selected = super::elementwise::select(&less, &x, &two, &shape);
    assert!(same_array(&sum.into_array(), &expected[0]));
    assert!(same_array(&selected.into_array(), &expected[1]));
}

#[test]
fn sum_outer_adds_in_index_order() {
    // Float addition is not associative: 1e8 + 1 - 1e8 is 0 in f32 but 1 in another order.
    let program = parse(
        "program(%0: [4, 2]f32, %1: [3, 2, 2]f64, %2: [3, 40000]f32, %3: [0, 3]i64) {
           %4: [2]f32 = sumOuter %0
           %5: [2, 2]f64 = sumOuter %1
           %6: [40000]f32 = sumOuter %2
           %7: [3]i64 = sumOuter %3
           %8: [2, 3, 2]f64 = tr [1, 0] %1
           %9: [3, 2]f64 = sumOuter %8
           in %4, %5, %6, %7, %9
         }",
    );
    let mut rng = Rng::new(7);
    let big = random_array(
        &mut rng,
        &crate::core::ir::ArrTy::new(vec![3, 40000], Elem::F32),
    );
    let inputs = [
        f32s(&[4, 2], &[1e8, 0.5, 1.0, 1e-8, -1e8, 3.0, 1.0, -0.5]),
        f64s(
            &[3, 2, 2],
            &[
                0.1, 0.2, 0.3, -0.0, 1e16, 1.0, -1.0, 2.0, -1e16, 1.0, 0.7, 0.0,
            ],
        ),
        big,
        i64s(&[0, 3], &[]),
    ];
    check_bulk(&program, &inputs);
}

#[test]
fn index_reads_sub_arrays_and_zeros_out_of_range() {
    let program = parse(
        "program(%0: [3, 2]f64, %1: []i64) {
           %2: [2]f64 = index %0 [%1]
           %3: []f64 = index %0 [1:i64, %1]
           %4: [2, 3]f64 = tr [1, 0] %0
           %5: [3]f64 = index %4 [1:i64]
           in %2, %3, %5
         }",
    );
    let x = f64s(&[3, 2], &counting(6));
    for i in [0, 2, 3, -1] {
        check_bulk(&program, &[x.clone(), i64s(&[], &[i])]);
    }
    assert_eq!(
        strict_error(&program, &[x, i64s(&[], &[-1])]),
        InterpError::OutOfRange {
            var: crate::core::ir::VarId(2),
            index: vec![-1],
            shape: vec![3, 2],
        }
    );
}

#[test]
fn structural_ops() {
    let program = parse(
        "program(%0: [2, 3]f64, %1: [3]f64) {
           %2: [3, 2]f64 = tr [1, 0] %0
           %3: [6]f64 = reshape [6] %2
           %4: [4, 3]f64 = replicate 4 %1
           %5: [2, 2, 3]f64 = table [%0, %0]
           %6: [3, 2, 2]f64 = tr [2, 0, 1] %5
           %7: [2, 3, 2]f64 = tr [1, 2, 0] %5
           %8: [5]i64 = iota 5
           %9: [0]i64 = iota 0
           %10: [0, 3]f64 = replicate 0 %1
           %11: [3, 2]f64 = reshape [3, 2] %0
           %12: []f64 = index %1 [0:i64]
           %13: [1]f64 = reshape [1] %12
           %14: [3]f64 = table [%12, %12, %12]
           in %2, %3, %4, %6, %7, %8, %9, %10, %11, %13, %14
         }",
    );
    check_bulk(
        &program,
        &[f64s(&[2, 3], &counting(6)), f64s(&[3], &[7.0, 8.0, 9.0])],
    );
}

#[test]
fn gather_with_computed_index_functions() {
    // %5: out[i, j] = x[(i + 1) mod 5 … ] with an index read from `perm` and an outer index.
    let program = parse(
        "program(%0: [5, 3]f64, %1: [4]i64, %2: []i64) {
           %3: [4, 2, 3]f64 = gather [4, 2, 3] %0 (\\%4: []i64, %5: []i64 ->
             %6: []i64 = add %4 %5
             %7: []i64 = mod %6 5:i64
             in %7)
           %8: [4, 3]f64 = gather [4, 3] %0 (\\%9: []i64, %10: []i64 ->
             %11: []i64 = index %1 [%9]
             %12: []i64 = sub %10 %2
             in %11, %12)
           %13: [2, 4]f64 = gather [2, 4] %3 (\\%14: []i64, %15: []i64 ->
             in %15, %14, %2)
           %16: [3, 3]f64 = gather [3, 3] %0 (\\%17: []i64 ->
             in %2)
           %18: []f64 = gather [] %0 (\\ ->
             in 1:i64, 2:i64)
           in %3, %8, %13, %16, %18
         }",
    );
    let x = f64s(&[5, 3], &counting(15));
    for (perm, shift) in [
        ([3, 0, 4, 1], 0),
        ([3, 7, -1, 1], 1),
        ([0, 1, 2, 3], -1),
        ([4, 4, 4, 5], 2),
    ] {
        check_bulk(
            &program,
            &[x.clone(), i64s(&[4], &perm), i64s(&[], &[shift])],
        );
    }
}

#[test]
fn gather_index_function_with_batched_cond() {
    // Points with i < 2 read `perm[i]` and the others `perm[i + 5]`, which is out of range
    // for i ≥ 0 only: the untaken branch must never raise a strict error.
    let program = parse(
        "program(%0: [4, 2]f64, %1: [6]i64) {
           %2: [4, 2]f64 = gather [4, 2] %0 (\\%3: []i64 ->
             %4: []bool = lt %3 2:i64
             %5: []i64 = cond %4 (\\ ->
               %6: []i64 = index %1 [%3]
               in %6) (\\ ->
               %7: []i64 = sub %3 2:i64
               %8: []i64 = index %1 [%7]
               %9: []i64 = add %8 1:i64
               in %9)
             in %5)
           %10: [4]f64 = gather [4] %0 (\\%11: []i64 ->
             %12: []bool = lt %11 9:i64
             %13: []i64 = cond %12 (\\ ->
               in %11) (\\ ->
               %14: []i64 = index %1 [%11]
               in %14)
             in %13, 1:i64)
           in %2, %10
         }",
    );
    let x = f64s(&[4, 2], &counting(8));
    for perm in [[0, 1, 2, 3, 0, 1], [3, -4, 1, 2, 9, 0], [1, 1, 3, 3, 0, 0]] {
        check_bulk(&program, &[x.clone(), i64s(&[6], &perm)]);
    }
}

#[test]
fn strict_errors_come_in_the_interpreters_order() {
    // Point 1 fails in the index function (perm[1 + k] out of range) or in the read
    // (x[perm[…]] out of range), whichever the inputs make first in row-major order.
    let program = parse(
        "program(%0: [3]f64, %1: [4]i64, %2: []i64) {
           %3: [3]f64 = gather [3] %0 (\\%4: []i64 ->
             %5: []i64 = add %4 %2
             %6: []i64 = index %1 [%5]
             in %6)
           in %3
         }",
    );
    let x = f64s(&[3], &[1.0, 2.0, 3.0]);
    let cases = [
        ([0, 5, 1, 2], 0, "read at point 1"),
        ([0, 1, 2, 9], 1, "read at point 2 (perm[3])"),
        ([0, 1, 2, 2], 2, "index at point 2 (perm[4])"),
        ([7, 1, 2, 2], 2, "read at point 0"),
        ([0, 1, 2, 2], -1, "index at point 0 (perm[-1])"),
    ];
    for (perm, shift, what) in cases {
        let inputs = [x.clone(), i64s(&[4], &perm), i64s(&[], &[shift])];
        check_bulk(&program, &inputs);
        assert!(
            matches!(
                strict_error(&program, &inputs),
                InterpError::OutOfRange { .. }
            ),
            "{what}"
        );
    }
}

#[test]
fn scatter_adds_collisions_in_order_and_drops_out_of_range() {
    let program = parse(
        "program(%0: [6, 2]f32, %1: [6]i64, %2: [2, 3]i64) {
           %3: [3, 2]f32 = scatter [3, 2] %0 (\\%4: []i64 ->
             %5: []i64 = index %1 [%4]
             in %5)
           %6: [4, 3]i64 = scatter [4, 3] %2 (\\%7: []i64, %8: []i64 ->
             %9: []i64 = add %7 %8
             in %9, %7)
           %10: [2]f32 = scatter [2] %0 (\\%11: []i64, %12: []i64 ->
             %13: []i64 = idiv %11 3:i64
             in %13)
           in %3, %6, %10
         }",
    );
    let source = f32s(
        &[6, 2],
        &[1e8, 1.0, 1.0, 2.0, -1e8, 3.0, 1.0, 4.0, 0.5, 5.0, -0.5, 6.0],
    );
    for targets in [[0, 0, 0, 0, 1, 1], [2, -1, 2, 3, 2, 0], [1, 1, 1, 1, 1, 1]] {
        let inputs = [
            source.clone(),
            i64s(&[6], &targets),
            i64s(&[2, 3], &[1, 2, 3, 4, 5, 6]),
        ];
        check_bulk(&program, &inputs);
    }
}

#[test]
fn scatters_and_gathers_at_indices_read_from_integer_tables_use_the_tables() {
    // The index functions read their indices from tables of every integer type at the point
    // itself, so the engine takes the tables as they are (no per-point evaluation): the sums,
    // the dropped targets (negative, too large, beyond `i64` for `u64`) and the strict
    // errors of the gathers must still be the interpreter's.
    let program = parse(
        "program(%0: [6, 2]f32, %1: [6]u32, %2: [6]i32, %3: [6]u64, %4: [6]i64) {
           %5: [3, 2]f32 = scatter [3, 2] %0 (\\%6: []i64 ->
             %7: []u32 = index %1 [%6]
             %8: []i64 = cast_i64 %7
             in %8)
           %9: [3]f32 = scatter [3] %0 (\\%10: []i64, %11: []i64 ->
             %12: []i32 = index %2 [%10]
             %13: []i64 = cast_i64 %12
             in %13)
           %14: [3, 2]f32 = scatter [3, 2] %0 (\\%15: []i64 ->
             %16: []u64 = index %3 [%15]
             %17: []i64 = cast_i64 %16
             in %17)
           %18: [6, 2]f32 = gather [6, 2] %5 (\\%19: []i64 ->
             %20: []i64 = index %4 [%19]
             in %20)
           in %5, %9, %14, %18
         }",
    );
    let source = f32s(
        &[6, 2],
        &[1e8, 1.0, 1.0, 2.0, -1e8, 3.0, 1.0, 4.0, 0.5, 5.0, -0.5, 6.0],
    );
    // Targets as u32, i32 and u64, and the gather's reads.
    type Case = ([u32; 6], [i32; 6], [u64; 6], [i64; 6]);
    let cases: [Case; 3] = [
        (
            [0, 0, 0, 0, 1, 1],
            [2, 2, 2, 0, 0, 1],
            [0, 1, 2, 0, 1, 2],
            [0, 1, 2, 2, 1, 0],
        ),
        (
            [2, u32::MAX, 2, 3, 2, 0],
            [2, -1, 2, 3, 2, i32::MIN],
            [u64::MAX, 1 << 63, 1, 1, 3, 0],
            [0, 1, 2, 3, 1, 0],
        ),
        ([1, 1, 1, 1, 1, 1], [1; 6], [2; 6], [-1, 0, 0, 0, 0, 0]),
    ];
    for (u32_targets, i32_targets, u64_targets, reads) in cases {
        let inputs = [
            source.clone(),
            Array::new(vec![6], ArrayData::U32(u32_targets.to_vec())),
            Array::new(vec![6], ArrayData::I32(i32_targets.to_vec())),
            Array::new(vec![6], ArrayData::U64(u64_targets.to_vec())),
            i64s(&[6], &reads),
        ];
        // Two scatters and the gather read their indices at the point itself; the scatter of
        // %9 reads at one of its two indices only, so its function runs.
        assert_eq!(check_bulk(&program, &inputs).index_fns_read, 3);
    }
}

#[test]
fn cond_fold_and_scan_run_bulk_bodies() {
    let program = parse(
        "program(%0: [4, 3]f64, %1: []bool) {
           %20: [3]f64 = index %0 [0:i64]
           %2: [3]f64 = fold 4 (%20) (\\%3: []i64, %4: [3]f64 ->
             %5: [3]f64 = index %0 [%3]
             %6: [3]f64 = add %4 %5
             in %6)
           %7: []f64, %8: [4, 3]f64 = scan 4 (0.0:f64) (\\%9: []i64, %10: []f64 ->
             %11: [3]f64 = gather [3] %0 (\\%12: []i64 ->
               %13: []i64 = sub %9 %12
               in %13, %12)
             %14: []f64 = sumOuter %11
             %15: []f64 = add %10 %14
             in %15, %11)
           %16: [3]f64 = cond %1 (\\ ->
             in %2) (\\ ->
             %17: [3]f64 = index %0 [9:i64]
             in %17)
           in %7, %8, %16
         }",
    );
    let x = f64s(&[4, 3], &counting(12));
    for flag in [true, false] {
        check_bulk(
            &program,
            &[x.clone(), Array::new(vec![], ArrayData::Bool(vec![flag]))],
        );
    }
}

#[test]
fn loops_of_scalars_run_on_registers() {
    // A fold reading an outer table at the loop index, at a computed index that leaves the
    // table for i = 0 and i = 5, and through an outer scalar; a scan with outputs of two
    // element types, one a literal. Both bodies are all scalars; the fold carrying a table
    // is not.
    let program = parse(
        "program(%0: [5]f64, %1: []f64, %2: [2, 3]i64) {
           %3: []f64, %4: []i64 = fold 6 (%1, 0:i64) (\\%5: []i64, %6: []f64, %7: []i64 ->
             %8: []f64 = index %0 [%5]
             %9: []i64 = sub %5 1:i64
             %10: []f64 = index %0 [%9]
             %11: []f64 = mul %8 %10
             %12: []f64 = max %6 %11
             %13: []i64 = index %2 [1:i64, %7]
             %14: []i64 = add %13 %5
             %15: []f64 = add %12 %1
             %16: []f64 = %15
             in %16, %14)
           %17: []f64, %18: [4]f64, %19: [4]bool, %20: [4]i64 = scan 4 (%3) (\\%21: []i64, %22: []f64 ->
             %23: []f64 = sin %22
             %24: []bool = gt %23 0.0:f64
             in %23, %22, %24, 7:i64)
           %25: [5]f64 = fold 2 (%0) (\\%26: []i64, %27: [5]f64 ->
             %28: [5]f64 = exp %27
             in %28)
           in %4, %17, %18, %19, %20, %25
         }",
    );
    let inputs = [
        f64s(&[5], &[0.5, -1.0, 2.0, 0.25, 1.5]),
        Array::scalar(Scalar::F64(0.3)),
        i64s(&[2, 3], &[4, 5, 6, 7, 8, 9]),
    ];
    let report = check_bulk(&program, &inputs);
    assert_eq!(report.scalar_loops, 2);
    // The statement count is the general path's: each loop, then its body per iteration.
    assert_eq!(report.statements, 3 + 6 * 9 + 4 * 2 + 2);
}

#[test]
fn long_loops_run_their_carry_free_operations_in_blocks() {
    // Long loops (three blocks, the last partial) and short ones (one step at a time) of the
    // same bodies: free reads in and out of range (rank one and two), a free cast, `exp`,
    // comparison with an outer scalar, select and literal copy; carried arithmetic and a
    // carried read out of range; a scan whose outputs are free, carried, of three element
    // types, and a literal; carries computed in place and copied (a swap, an old value read
    // by another result); a checkpointing scan (its outputs are the old carries); new carries
    // moved after the last reader of the old value, and one that cannot move past a reader
    // of the new value; reads forwards and backwards (`xs[c - i]`), in range and not.
    let body = |n: usize| {
        format!(
            "%3: []f32, %4: []i64, %5: []f64 = fold {n} (%2, 0:i64, 0.0:f64) (\\%6: []i64, %7: []f32, %8: []i64, %9: []f64 ->
               %10: []f32 = index %0 [%6]
               %11: []i64 = sub %6 3:i64
               %12: []f32 = index %0 [%11]
               %13: []f32 = mul %7 %10
               %14: []f32 = add %13 %12
               %15: []f32 = mul %14 0.5:f32
               %16: []i64 = mod %6 9:i64
               %17: []i64 = mod %8 4:i64
               %18: []f64 = index %1 [%16, %17]
               %19: []f64 = cast_f64 %6
               %20: []f64 = mul %19 0.001:f64
               %21: []f64 = exp %20
               %22: []f64 = add %9 %21
               %23: []f64 = add %22 %18
               %24: []bool = gt %10 %2
               %25: []i64 = select %24 1:i64 2:i64
               %26: []i64 = add %8 %25
               %27: []f64 = index %1 [%16, 1:i64]
               %28: []f64 = add %23 %27
               %29: []f64 = 0.25:f64
               %30: []f64 = mul %28 %29
               in %15, %26, %30)
             %31: []f32, %32: [{n}]f32, %33: [{n}]bool, %34: [{n}]i64, %35: [{n}]f32 = scan {n} (%2) (\\%36: []i64, %37: []f32 ->
               %38: []f32 = index %0 [%36]
               %39: []f32 = mul %38 2.0:f32
               %40: []f32 = max %37 %38
               %41: []bool = lt %37 %38
               %42: []f32 = %38
               in %40, %39, %41, 7:i64, %42)
             %43: []f64, %44: []f64, %45: [{n}]f64 = scan {n} (0.0:f64, 1.0:f64) (\\%46: []i64, %47: []f64, %48: []f64 ->
               %49: []f64 = add %47 %48
               %50: []f64 = mul %49 0.5:f64
               in %48, %50, %47)
             %51: []f32, %52: [{n}]f32 = scan {n} (%2) (\\%53: []i64, %54: []f32 ->
               %55: []f32 = index %0 [%53]
               %56: []f32 = mul %54 %55
               %66: []i64 = sub 2400:i64 %53
               %67: []f32 = index %0 [%66]
               %68: []f32 = add %56 %67
               in %68, %54)
             %57: []f32, %58: [{n}]f32, %59: [{n}]f32 = scan {n} (%2) (\\%60: []i64, %61: []f32 ->
               %62: []f32 = index %0 [%60]
               %63: []f32 = add %61 %62
               %64: []f32 = mul %61 0.5:f32
               %65: []f32 = mul %63 %61
               in %63, %64, %65)"
        )
    };
    let mut rng = Rng::new(11);
    let table = random_array(
        &mut rng,
        &crate::core::ir::ArrTy::new(vec![2600], Elem::F32),
    );
    let grid = f64s(&[7, 3], &counting(21));
    for (n, blocked) in [(2500, 4), (100, 0)] {
        let program = parse(&format!(
            "program(%0: [2600]f32, %1: [7, 3]f64, %2: []f32) {{
               {}
               in %3, %4, %5, %31, %32, %33, %34, %35, %43, %44, %45, %51, %52, %57, %58, %59
             }}",
            body(n)
        ));
        let inputs = [table.clone(), grid.clone(), Array::scalar(Scalar::F32(0.1))];
        let report = check_bulk(&program, &inputs);
        let loops = (
            report.scalar_loops,
            report.blocked_loops,
            report.compiled_loops,
        );
        assert_eq!(loops, (5, blocked, 5));
    }
}

#[test]
fn unbatchable_index_functions_run_per_point() {
    // The index function folds over its own parameter: batch mode has no rule for that.
    let program = parse(
        "program(%0: [6]f64) {
           %1: [4]f64 = gather [4] %0 (\\%2: []i64 ->
             %3: []i64 = fold 3 (%2) (\\%4: []i64, %5: []i64 ->
               %6: []i64 = add %5 %4
               in %6)
             in %3)
           in %1
         }",
    );
    let report = check(&program, &[f64s(&[6], &counting(6))]);
    assert_eq!(report.index_fn_fallbacks, 1);
    assert_eq!(report.build1_fallbacks, 0);
}

#[test]
fn build1_runs_through_the_fallback() {
    let program = parse(
        "program(%0: [3]f64) {
           %1: [3, 2]f64 = build1 3 (\\%2: []i64 ->
             %3: []f64 = index %0 [%2]
             %4: []f64 = mul %3 %3
             %5: [2]f64 = table [%3, %4]
             in %5)
           in %1
         }",
    );
    let report = check(&program, &[f64s(&[3], &[1.0, -2.0, 0.5])]);
    assert_eq!(report.build1_fallbacks, 1);
    let batched = check_with(&program, &[f64s(&[3], &[1.0, -2.0, 0.5])], true);
    assert_eq!(batched.report.build1_fallbacks, 0);
}

#[test]
fn large_arrays_take_the_parallel_paths() {
    let n = 2 * PAR_THRESHOLD + 123;
    let text = format!(
        "program(%0: [{n}]f64, %1: [{n}]i64) {{
           %2: [{n}, 2]f64 = gather [{n}, 2] %0 (\\%3: []i64, %4: []i64 ->
             %5: []i64 = index %1 [%3]
             %6: []i64 = add %5 %4
             in %6)
           %7: [{n}, 2]f64 = exp %2
           %8: [{n}, 2]f64 = mul %7 %2
           %9: [2]f64 = sumOuter %8
           %10: [2, {n}]f64 = tr [1, 0] %8
           %11: [2]f64 = gather [2] %10 (\\%12: []i64 ->
             in %12, 17:i64)
           %13: [2, {n}]f64 = cast_f64 %10
           in %9, %11, %13
         }}"
    );
    let program = parse(&text);
    let mut rng = Rng::new(3);
    let x = random_array(&mut rng, &crate::core::ir::ArrTy::new(vec![n], Elem::F64));
    let perm: Vec<i64> = (0..n as i64)
        .map(|i| (i * 7919) % (n as i64 + 3) - 1)
        .collect();
    check_bulk(&program, &[x, i64s(&[n], &perm)]);
}

/// Runs a one-input program with the interrupt flag set (it must stop), then without it;
/// returns the report of the full run.
fn interrupted_then_run(src: &str, input: Array) -> super::ExecReport {
    let program = parse(src);
    let flag = Arc::new(AtomicBool::new(true));
    let config = ExecConfig {
        interrupt: Some(flag.clone()),
        ..ExecConfig::default()
    };
    assert_eq!(
        super::run(&program, std::slice::from_ref(&input), &config),
        Err(InterpError::Interrupted)
    );
    flag.store(false, Ordering::Relaxed);
    run_with_report(&program, &[input], &config).unwrap().1
}

#[test]
fn interrupt_stops_the_run() {
    let report = interrupted_then_run(
        "program(%0: [3]f64) {
           %1: [3]f64 = fold 1000000 (%0) (\\%2: []i64, %3: [3]f64 ->
             %4: [3]f64 = add %3 %0
             in %4)
           in %1
         }",
        f64s(&[3], &[1.0, 2.0, 3.0]),
    );
    assert_eq!(report.statements, 1 + 1_000_000);
}

#[test]
fn loop_bodies_are_compiled_once_they_have_run_long_enough() {
    // 1000 steps a run: on registers until the prepared program's runs have made
    // `JIT_MIN_ITERATIONS` steps, as machine code from the run that reaches it, with the
    // same results.
    let on_registers = super::scalar_loop::JIT_MIN_ITERATIONS.div_ceil(1000) - 1;
    assert!(on_registers > 0, "the first runs must stay on registers");
    let program = parse(
        "program(%0: [1000]f32) {
           %1: []f32 = fold 1000 (0.0:f32) (\\%2: []i64, %3: []f32 ->
             %4: []f32 = index %0 [%2]
             %5: []f32 = mul %3 %3
             %6: []f32 = mul %5 0.5:f32
             %7: []f32 = add %6 %4
             in %7)
           in %1
         }",
    );
    let schedule = crate::passes::fuse::run(&program);
    let prepared = super::Prepared::new(&program, &schedule);
    let x: Vec<f32> = (0..1000).map(|i| 0.3 * (i as f32 * 0.37).sin()).collect();
    let input = Tensor::from_array(&f32s(&[1000], &x));
    let runs: Vec<(Vec<Array>, usize)> = (0..on_registers + 4)
        .map(|_| {
            let (results, report) = prepared
                .run(vec![input.clone()], &ExecConfig::default())
                .unwrap();
            let results = results.into_iter().map(Tensor::into_array).collect();
            (results, report.compiled_loops)
        })
        .collect();
    let compiled: Vec<usize> = runs.iter().map(|(_, compiled)| *compiled).collect();
    assert_eq!(compiled, [vec![0; on_registers], vec![1; 4]].concat());
    let expected = interp::run(&program, &[f32s(&[1000], &x)], &InterpConfig::default()).unwrap();
    for (results, _) in &runs {
        assert!(same_array(&results[0], &expected[0]));
    }
}

#[test]
fn interrupt_stops_a_loop_of_scalars() {
    let report = interrupted_then_run(
        "program(%0: []f64) {
           %1: []f64 = fold 1000000 (%0) (\\%2: []i64, %3: []f64 ->
             %4: []f64 = add %3 %0
             in %4)
           in %1
         }",
        Array::scalar(Scalar::F64(1.0)),
    );
    assert_eq!((report.statements, report.scalar_loops), (1 + 1_000_000, 1));
}

#[test]
fn conversions_share_memory_where_they_can() {
    let array = f64s(&[2, 3], &counting(6));
    let tensor = Tensor::from(array.clone());
    assert_eq!(tensor.to_array(), array);
    // A sole owner converts without copying.
    let unique = Array::new(vec![2, 3], ArrayData::F64(counting(6)));
    let ArrayData::F64(data) = &*unique.data else {
        unreachable!()
    };
    let address = data.as_ptr();
    let Tensor::F64(nd) = Tensor::from(unique) else {
        unreachable!()
    };
    assert_eq!(nd.as_ptr(), address);
    let back = Tensor::F64(nd).into_array();
    let ArrayData::F64(data) = &*back.data else {
        unreachable!()
    };
    assert_eq!(data.as_ptr(), address);
    // A transposed view converts to row-major order.
    let transposed = Tensor::from_array(&array).permute(&[1, 0]);
    assert_eq!(
        transposed.into_array(),
        f64s(&[3, 2], &[-3.0, -1.5, -2.5, -1.0, -2.0, -0.5])
    );
    let nd = from_vec(&[2, 2], vec![1i64, 2, 3, 4]);
    let row = Tensor::I64(nd.index_axis_move(ndarray::Axis(0), 1));
    assert_eq!(row.into_array(), i64s(&[2], &[3, 4]));
}

// Primitives, on edge values.

fn edge_values(elem: Elem) -> Vec<Scalar> {
    match elem {
        Elem::F32 => [
            0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 3.0, -7.0, 1e30, -1e-30,
        ]
        .into_iter()
        .chain([
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN_POSITIVE,
        ])
        .map(Scalar::F32)
        .collect(),
        Elem::F64 => [
            0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 3.0, -7.0, 1e300, -1e-300,
        ]
        .into_iter()
        .chain([
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN_POSITIVE,
        ])
        .map(Scalar::F64)
        .collect(),
        Elem::I32 => [0, 1, -1, 2, -2, 3, -7, 7, i32::MIN, i32::MAX, i32::MIN + 1]
            .into_iter()
            .map(Scalar::I32)
            .collect(),
        Elem::I64 => [0, 1, -1, 2, -2, 3, -7, 7, i64::MIN, i64::MAX, i64::MIN + 1]
            .into_iter()
            .map(Scalar::I64)
            .collect(),
        Elem::U32 => [0, 1, 2, 3, 7, u32::MAX, u32::MAX - 1]
            .into_iter()
            .map(Scalar::U32)
            .collect(),
        Elem::U64 => [0, 1, 2, 3, 7, u64::MAX, u64::MAX - 1]
            .into_iter()
            .map(Scalar::U64)
            .collect(),
        Elem::Bool => vec![Scalar::Bool(false), Scalar::Bool(true)],
    }
}

fn tensor_of(elem: Elem, scalars: &[Scalar]) -> Tensor {
    let mut data = ArrayData::with_capacity(elem, scalars.len());
    for &scalar in scalars {
        data.push(scalar);
    }
    Tensor::from(Array::new(vec![scalars.len()], data))
}

fn scalars_of(tensor: Tensor) -> Vec<Scalar> {
    let array = tensor.into_array();
    (0..array.n_elems())
        .map(|flat| array.data.get(flat))
        .collect()
}

/// Every operand combination of edge values for `prim` with operand types `elems`, as
/// columns (one per operand).
fn operand_columns(elems: &[Elem]) -> Vec<Vec<Scalar>> {
    let values: Vec<Vec<Scalar>> = elems.iter().map(|&elem| edge_values(elem)).collect();
    let n_rows: usize = values.iter().map(Vec::len).product();
    let mut columns = vec![Vec::with_capacity(n_rows); elems.len()];
    for row in 0..n_rows {
        let mut rest = row;
        for (column, vals) in columns.iter_mut().zip(&values).rev() {
            column.push(vals[rest % vals.len()]);
            rest /= vals.len();
        }
    }
    columns
}

/// The operand element types a primitive accepts (all operands one type, except `select`).
fn operand_elems(prim: Prim) -> Vec<Vec<Elem>> {
    ALL_ELEMS
        .iter()
        .map(|&elem| match prim.arity() {
            3 => vec![Elem::Bool, elem, elem],
            arity => vec![elem; arity],
        })
        .filter(|elems| prim.result_elem(elems).is_ok())
        .collect()
}

#[test]
fn fast_paths_agree_with_prim_eval() {
    let casts = ALL_ELEMS.iter().map(|&elem| Prim::Cast(elem));
    let mut n_checked = 0;
    for prim in ALL_PRIMS.iter().copied().chain(casts) {
        for elems in operand_elems(prim) {
            let columns = operand_columns(&elems);
            let n_rows = columns[0].len();
            let operands: Vec<Tensor> = elems
                .iter()
                .zip(&columns)
                .map(|(&elem, column)| tensor_of(elem, column))
                .collect();
            let expected: Vec<Scalar> = (0..n_rows)
                .map(|row| {
                    let args: Vec<Scalar> = columns.iter().map(|column| column[row]).collect();
                    prim.eval(&args)
                })
                .collect();
            let fast = scalars_of(eval_prim(prim, operands.clone(), &[n_rows]));
            let generic = scalars_of(match &operands[..] {
                [x] => generic_unary(prim, x, &[n_rows]),
                [x, y] => generic_binary(prim, x, y, &[n_rows]),
                [c, x, y] => generic_ternary(prim, c, x, y, &[n_rows]),
                _ => unreachable!("arity is 1 to 3"),
            });
            for row in 0..n_rows {
                let args: Vec<Scalar> = columns.iter().map(|column| column[row]).collect();
                assert!(
                    same_scalar(fast[row], expected[row]),
                    "{} {args:?}: fast path gives {:?}, eval {:?}",
                    prim.name(),
                    fast[row],
                    expected[row]
                );
                assert!(
                    same_scalar(generic[row], expected[row]),
                    "{} {args:?}",
                    prim.name()
                );
            }
            // The last operand as a rank-0 constant (the broadcast path).
            if let Some((last, first)) = columns.split_last() {
                let constant = last[0];
                let mut operands: Vec<Tensor> = elems
                    .iter()
                    .zip(first)
                    .map(|(&elem, column)| tensor_of(elem, column))
                    .collect();
                if !operands.is_empty() {
                    operands.push(Tensor::scalar(constant));
                    let res = scalars_of(eval_prim(prim, operands.clone(), &[n_rows]));
                    for (row, &got) in res.iter().enumerate() {
                        let mut args: Vec<Scalar> =
                            first.iter().map(|column| column[row]).collect();
                        args.push(constant);
                        assert!(
                            same_scalar(got, prim.eval(&args)),
                            "{} {args:?}",
                            prim.name()
                        );
                    }
                }
            }
            n_checked += n_rows;
        }
    }
    assert!(n_checked > 10_000, "only {n_checked} cases");
}

#[test]
fn fast_paths_agree_in_parallel_and_on_strided_operands() {
    // Large random operands (parallel kernels), one of them transposed (the Zip path).
    let mut rng = Rng::new(11);
    let shape = [PAR_THRESHOLD / 64 + 5, 64];
    for prim in [
        Prim::Add,
        Prim::Mul,
        Prim::Div,
        Prim::Max,
        Prim::Exp,
        Prim::Lt,
        Prim::Mod,
    ] {
        for elem in [Elem::F32, Elem::F64, Elem::I64] {
            let elems = vec![elem; prim.arity()];
            if prim.result_elem(&elems).is_err() {
                continue;
            }
            let ty = crate::core::ir::ArrTy::new(vec![shape[1], shape[0]], elem);
            let arrays: Vec<Array> = (0..prim.arity())
                .map(|_| random_array(&mut rng, &ty))
                .collect();
            let operands: Vec<Tensor> = arrays
                .iter()
                .map(|array| Tensor::from_array(array).permute(&[1, 0]))
                .collect();
            let mut contiguous: Vec<Tensor> = operands.clone();
            contiguous[0] = Tensor::from_array(&operands[0].to_array());
            for ops in [&operands, &contiguous] {
                let got = eval_prim(prim, ops.clone(), &shape).into_array();
                let columns: Vec<Array> = ops.iter().map(Tensor::to_array).collect();
                for flat in 0..got.n_elems() {
                    let args: Vec<Scalar> = columns.iter().map(|a| a.data.get(flat)).collect();
                    assert!(
                        same_scalar(got.data.get(flat), prim.eval(&args)),
                        "{}",
                        prim.name()
                    );
                }
            }
        }
    }
}

// Random programs.

fn has_build1(program: &Program) -> bool {
    program.blocks.values().any(|block| {
        block
            .stmts
            .iter()
            .any(|stmt| matches!(stmt.expr, crate::core::ir::Expr::Build1(_)))
    })
}

#[test]
fn random_programs_agree_with_the_interpreter() {
    let config = GenConfig::default();
    let mut n_bulk = 0;
    let mut n_strict_failed = 0;
    let mut n_scalar_loops = 0;
    let mut n_compiled_loops = 0;
    for seed in 0..1500 {
        let program = random_program(seed, &config);
        let inputs = random_inputs(&program, seed);
        let Checked {
            report,
            strict_failed,
        } = check_with(&program, &inputs, false);
        n_strict_failed += usize::from(strict_failed);
        n_scalar_loops += report.scalar_loops;
        n_compiled_loops += report.compiled_loops;
        if !has_build1(&program) {
            n_bulk += 1;
            assert_eq!(report.build1_fallbacks, 0);
            // testgen's index functions are index arithmetic only.
            assert_eq!(report.index_fn_fallbacks, 0, "seed {seed}\n{program}");
        }
    }
    assert!(n_bulk > 300, "only {n_bulk} build1-free programs");
    assert!(
        n_strict_failed > 300,
        "only {n_strict_failed} strict errors compared"
    );
    eprintln!("random programs: {n_scalar_loops} loops ran on scalar registers");
    assert!(
        n_scalar_loops > 50,
        "only {n_scalar_loops} loops ran on scalar registers"
    );
    // Every one of them was also run as machine code (`CompileLoops::Always`).
    assert_eq!(n_compiled_loops, n_scalar_loops);
}

#[test]
fn random_build1_bodies_agree_in_batch_mode() {
    // Running every `build1` in batch mode puts testgen's rich bodies (computed and
    // out-of-range indices, conds on batched conditions, tables, sums, …) through the rules
    // that index functions use.
    // The batch mode runs a `while` in a body lane by lane (the BOT, which runs before the
    // engine, batches it with an active mask), so these bodies have none.
    let config = GenConfig {
        max_depth: 3,
        whiles: false,
        ..GenConfig::default()
    };
    let (mut n_build1, mut n_fallbacks, mut n_strict_failed) = (0, 0, 0);
    for seed in 0..1500 {
        let program = random_program(seed, &config);
        let inputs = random_inputs(&program, seed);
        let checked = check_with(&program, &inputs, true);
        n_build1 += usize::from(has_build1(&program));
        n_fallbacks += checked.report.build1_fallbacks;
        n_strict_failed += usize::from(checked.strict_failed);
    }
    // Most bodies batch (the others nest build1, fold, … on the batched index).
    assert!(
        n_build1 > 300 && n_fallbacks < n_build1 / 3,
        "{n_fallbacks} fallbacks for {n_build1} programs"
    );
    assert!(
        n_strict_failed > 300,
        "only {n_strict_failed} strict errors compared"
    );
}

#[test]
fn dead_operands_are_overwritten_in_place() {
    let program = parse(
        "program(%0: [40000]f64, %4: [40000]f64) {
           %1: [40000]f64 = exp %0
           %2: [40000]f64 = add %4 %1
           %3: [40000]f64 = neg %2
           in %3, %4
         }",
    );
    let values: Vec<f64> = (0..40000).map(|v| f64::from(v) * 1e-4).collect();
    let input = Tensor::F64(from_vec(&[40000], values.clone()));
    let Tensor::F64(nd) = &input else {
        unreachable!()
    };
    let address = nd.as_ptr();
    let other = f64s(&[40000], &counting(40000));
    let inputs = [f64s(&[40000], &values), other.clone()];
    let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
    // The caller keeps the input: it must not change.
    let (shared, _) = super::run_tensors(
        &program,
        vec![input.clone(), Tensor::from_array(&other)],
        &ExecConfig::default(),
    )
    .unwrap();
    assert!(same_array(&shared[0].to_array(), &expected[0]));
    assert_eq!(input.to_array(), f64s(&[40000], &values));
    // The evaluator owns the input: every step reuses its buffer.
    let (owned, _) = super::run_tensors(
        &program,
        vec![input, Tensor::from_array(&other)],
        &ExecConfig::default(),
    )
    .unwrap();
    let Tensor::F64(result) = &owned[0] else {
        panic!("an f64 result")
    };
    assert_eq!(result.as_ptr(), address);
    assert!(same_array(&owned[0].to_array(), &expected[0]));
    assert_eq!(owned[1].to_array(), other);
}

#[test]
fn monoids_on_compiled_chains_give_the_interpreters_bits() {
    // Operators with inline operations, calls (float `max`, `exp`, `min`), literals, mixed
    // component types, selections with ties, and integers; none needs to be associative,
    // since every evaluation follows Note [Monoid order]. `check` runs each with the pairs
    // on compiled chains (`CompileLoops::Always`) and on lanes.
    let ops: [(&[&str], &str); 6] = [
        (
            &["f32"],
            "(\\%2_a: []f32, %3_b: []f32 ->\n  %4: []f32 = add %2_a %3_b\n  in %4)",
        ),
        (
            &["f64"],
            "(\\%2_a: []f64, %3_b: []f64 ->\n  %4: []f64 = mul %2_a %3_b\n  \
             %5: []f64 = div %4 1.0625:f64\n  %6: []f64 = sub %5 %3_b\n  in %6)",
        ),
        (
            &["f32", "f32"],
            "(\\%4_m: []f32, %5_s: []f32, %6_n: []f32, %7_t: []f32 ->\n  \
             %8: []f32 = max %4_m %6_n\n  %9: []f32 = sub %4_m %8\n  %10: []f32 = exp %9\n  \
             %11: []f32 = mul %5_s %10\n  %12: []f32 = sub %6_n %8\n  %13: []f32 = exp %12\n  \
             %14: []f32 = mul %7_t %13\n  %15: []f32 = add %11 %14\n  in %8, %15)",
        ),
        (
            &["f32", "i64"],
            "(\\%4_v: []f32, %5_i: []i64, %6_w: []f32, %7_j: []i64 ->\n  \
             %8: []bool = gt %6_w %4_v\n  %9: []f32 = select %8 %6_w %4_v\n  \
             %10: []i64 = select %8 %7_j %5_i\n  in %9, %10)",
        ),
        (
            &["i32", "u32"],
            "(\\%4_a: []i32, %5_b: []u32, %6_c: []i32, %7_d: []u32 ->\n  \
             %8: []i32 = min %4_a %6_c\n  %9: []i32 = sub %8 3:i32\n  \
             %10: []u32 = max %5_b %7_d\n  %11: []u32 = mul %10 %7_d\n  in %9, %11)",
        ),
        (
            &["bool", "f32"],
            "(\\%4_p: []bool, %5_x: []f32, %6_q: []bool, %7_y: []f32 ->\n  \
             %8: []bool = and %4_p %6_q\n  %9: []f32 = min %5_x %7_y\n  \
             %10: []f32 = select %6_q %9 %5_x\n  in %8, %10)",
        ),
    ];
    let mut rng = Rng::new(29);
    let chunk = crate::ops::monoid::CHUNK_ROWS;
    let shapes: [&[usize]; 5] = [
        &[5],
        &[chunk + 1],
        &[3 * chunk + 17],
        &[2 * chunk + 1, 3],
        &[17 * chunk + 2],
    ];
    for (elems, op) in ops {
        for kind in ["reduce", "assoc_scan", "assoc_scan_right"] {
            for shape in shapes {
                let program = parse(&monoid_program(kind, shape, elems, op, MonoidInits::Params));
                let n: usize = shape.iter().product();
                let mut inputs: Vec<Array> = elems
                    .iter()
                    .map(|elem| monoid_input(&mut rng, elem, shape.to_vec(), n))
                    .collect();
                inputs.extend(
                    elems.iter().map(|elem| {
                        monoid_input(&mut rng, elem, shape[1..].to_vec(), n / shape[0])
                    }),
                );
                let report = check(&program, &inputs);
                assert_eq!(report.compiled_monoids, 1, "{program}");
            }
        }
    }
}

/// Note [Monoid steps]: monoid statements of vectors whose operands are computed by fused
/// producers and whose unread results are not stored give the interpreter's bits, on
/// compiled chains and off them (producers materialised), on 1 and 2 threads; what the
/// fuser makes of each is checked too.
#[test]
fn monoid_producers_and_unread_results_give_the_interpreters_bits() {
    use crate::core::kernel::Step;
    let chunk = crate::ops::monoid::CHUNK_ROWS;
    // The gradient of `sum (cumprod x)` after `simp`: the right scan over ⊗ reads a shifted
    // `x` with a fill (a producer) and the constant cotangent (a view of a literal, also read
    // by the last kernel); only its second result is read. The forward scan reads an input:
    // a plain statement.
    let cumprod_gradient = |n: usize| {
        format!(
            "program(%0: [{n}]f32) {{
               %1: [{n}]f32 = assoc_scan (%0) (1.0:f32) (\\%2: []f32, %3: []f32 ->
                 %4: []f32 = mul %2 %3
                 in %4)
               %5: [{n}]f32 = replicate {n} 1.0:f32
               %6: [{n}]f32 = gather [{n}] %0 (\\%7: []i64 ->
                 %8: []i64 = add %7 1:i64
                 in %8)
               %9: [{n}]i64 = iota {n}
               %10: [{n}]i64 = replicate {n} {last}:i64
               %11: [{n}]bool = eq %9 %10
               %12: [{n}]f32 = select %11 %5 %6
               %13: [{n}]f32, %14: [{n}]f32 = assoc_scan_right (%12, %5) (1.0:f32, 0.0:f32) (\\%15: []f32, %16: []f32, %17: []f32, %18: []f32 ->
                 %19: []f32 = mul %15 %17
                 %20: []f32 = mul %15 %18
                 %21: []f32 = add %20 %16
                 in %19, %21)
               %22: [{n}]f32 = mul %14 %1
               %23: [{n}]f32 = add %22 %5
               in %23
             }}",
            last = n - 1
        )
    };
    // A reduce of a pair whose arrays are an exponential and a product (fused: a reduce
    // reads its arrays once), then a scan of a sine (materialised: a scan computes its
    // producers twice) and of a product (fused), both of its results read.
    let producers = |n: usize| {
        format!(
            "program(%0: [{n}]f32, %1: [{n}]f32) {{
               %2: [{n}]f32 = exp %0
               %3: [{n}]f32 = mul %0 %1
               %25: [{n}]f32 = mul %1 %1
               %4: []f32, %5: []f32 = reduce (%2, %25) (0.0:f32, 0.0:f32) (\\%6: []f32, %7: []f32, %8: []f32, %9: []f32 ->
                 %10: []f32 = add %6 %8
                 %11: []f32 = mul %7 %9
                 %12: []f32 = add %11 %10
                 in %10, %12)
               %13: [{n}]f32 = sin %1
               %24: [{n}]f32 = replicate {n} 0.5:f32
               %14: [{n}]f32 = add %3 %24
               %15: [{n}]f32, %16: [{n}]f32 = assoc_scan (%13, %14) (0.0:f32, 1.0:f32) (\\%17: []f32, %18: []f32, %19: []f32, %20: []f32 ->
                 %21: []f32 = add %17 %19
                 %22: []f32 = mul %18 %20
                 %23: []f32 = sub %22 %21
                 in %21, %23)
               in %4, %5, %15, %16
             }}"
        )
    };
    let mut rng = Rng::new(31);
    for n in [5, 3 * chunk + 17, 17 * chunk + 2] {
        for (text, n_inputs, expected_producers) in [
            (cumprod_gradient(n), 1, [2].as_slice()),
            (producers(n), 2, [2, 1].as_slice()),
        ] {
            let program = parse(&text);
            let schedule = crate::passes::fuse::run(&program);
            let monoid_steps: Vec<_> = schedule
                .steps
                .iter()
                .filter_map(|step| match step {
                    Step::Monoid(monoid) => Some(monoid),
                    _ => None,
                })
                .collect();
            let counts: Vec<usize> = monoid_steps.iter().map(|m| m.producers.len()).collect();
            assert_eq!(counts, expected_producers, "{}", schedule.display(&program));
            if n_inputs == 1 {
                // The right scan's results are not stored: nothing reads the first, the last
                // kernel (its consumer, Note [Monoid consumers]) reads the second where the
                // rescan computes it. Nor is the cotangent table written by a kernel.
                assert_eq!(monoid_steps[0].live, [false, false]);
                assert_eq!(monoid_steps[0].consumers.len(), 1);
                let kernels = schedule
                    .steps
                    .iter()
                    .filter(|step| matches!(step, Step::Kernel(_)));
                assert_eq!(kernels.count(), 0, "{}", schedule.display(&program));
            }
            let inputs: Vec<Array> = (0..n_inputs)
                .map(|_| {
                    let values =
                        (0..n).map(|_| 1.0 + 0.01 * rng.pick(&[-1.0, 0.0, 0.5, 2.0]) as f32);
                    f32s(&[n], &values.collect::<Vec<f32>>())
                })
                .collect();
            let on_chains = monoid_steps.len() + usize::from(n_inputs == 1);
            agrees_on_chains_and_off(&program, &schedule, &inputs, on_chains);
        }
    }
}

/// Runs `schedule` of `program` on 1 and 2 threads with the monoid folds compiled (then
/// `on_chains` statements run on chains) and on 2 without (none does), and asserts the
/// interpreter's bits each time.
fn agrees_on_chains_and_off(
    program: &Program,
    schedule: &crate::core::kernel::Schedule,
    inputs: &[Array],
    on_chains: usize,
) {
    let expected = interp::run(program, inputs, &InterpConfig::default()).unwrap();
    let prepared = super::Prepared::new(program, schedule);
    for (threads, compile_loops) in [
        (1, CompileLoops::Always),
        (2, CompileLoops::Always),
        (2, CompileLoops::Never),
    ] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let config = ExecConfig {
            compile_loops,
            ..ExecConfig::default()
        };
        let tensors: Vec<Tensor> = inputs.iter().map(Tensor::from_array).collect();
        let (results, report) = pool.install(|| prepared.run(tensors, &config)).unwrap();
        let on_chains = if compile_loops == CompileLoops::Always {
            on_chains
        } else {
            0
        };
        assert_eq!(report.compiled_monoids, on_chains, "{threads} threads");
        for (position, (e, g)) in expected.iter().zip(results).enumerate() {
            assert!(
                same_array(e, &g.into_array()),
                "result {position}, {threads} threads, {compile_loops:?}\n{program}"
            );
        }
    }
}

/// Note [Monoid consumers]: a map reading a scan's results at its own point, which nothing
/// else reads, runs in the scan's rescan; a map reading them shifted, results read by two
/// kernels or returned by the block, and a map reading a value computed after the scan stay
/// kernels of their own. The interpreter's bits each way, on chains and off.
#[test]
fn maps_consume_scan_results_only_where_they_can() {
    use crate::core::kernel::Step;
    let chunk = crate::ops::monoid::CHUNK_ROWS;
    let scan = |n: usize| {
        format!(
            "%2: [{n}]f32, %3: [{n}]f32 = assoc_scan (%0, %1) (0.0:f32, 1.0:f32) (\\%4: []f32, %5: []f32, %6: []f32, %7: []f32 ->
                 %8: []f32 = add %4 %6
                 %9: []f32 = mul %5 %7
                 %10: []f32 = add %9 %8
                 in %8, %10)"
        )
    };
    // (body after the scan, results, consumers expected, top-level kernels expected)
    let cases: [(&str, &str, usize, usize); 5] = [
        // Both results, at the point, with an input: one consumer.
        ("%11: [{n}]f32 = mul %2 %3\n%12: [{n}]f32 = add %11 %0", "%12", 1, 0),
        // The second result shifted by one (a masked read): not a consumer.
        (
            "%11: [{n}]f32 = gather [{n}] %3 (\\%13: []i64 ->\n %14: []i64 = add %13 1:i64\n in %14)\n%12: [{n}]f32 = mul %11 %2",
            "%12",
            0,
            1,
        ),
        // The first result read by two materialised kernels: neither consumes it.
        ("%11: [{n}]f32 = mul %2 %0\n%12: [{n}]f32 = add %2 %1", "%11, %12", 0, 2),
        // The first result also returned: stored, so its reader is no consumer.
        ("%11: [{n}]f32 = mul %2 %3", "%11, %2", 0, 1),
        // A reduction computed after the scan, read by the map: the map cannot move.
        (
            "%11: []f32 = sumOuter %3\n%15: [{n}]f32 = replicate {n} %11\n%12: [{n}]f32 = mul %2 %15",
            "%12",
            0,
            2,
        ),
    ];
    let mut rng = Rng::new(7);
    for n in [5, 3 * chunk + 17] {
        for (body, results, consumers, kernels) in cases {
            let body = body.replace("{n}", &n.to_string());
            let text = format!(
                "program(%0: [{n}]f32, %1: [{n}]f32) {{\n{}\n{body}\nin {results}\n}}",
                scan(n)
            );
            let program = parse(&text);
            let schedule = crate::passes::fuse::run(&program);
            let shown = schedule.display(&program).to_string();
            let found: usize = (schedule.steps.iter())
                .map(|step| match step {
                    Step::Monoid(monoid) => monoid.consumers.len(),
                    _ => 0,
                })
                .sum();
            assert_eq!(found, consumers, "{shown}");
            let top = (schedule.steps.iter())
                .filter(|step| matches!(step, Step::Kernel(_)))
                .count();
            assert_eq!(top, kernels, "{shown}");
            let inputs: Vec<Array> = (0..2)
                .map(|_| {
                    let values = (0..n).map(|_| rng.pick(&[-1.0, 0.0, 0.5, 2.0, 1.25]) as f32);
                    f32s(&[n], &values.collect::<Vec<f32>>())
                })
                .collect();
            agrees_on_chains_and_off(&program, &schedule, &inputs, 1);
        }
    }
}

/// Note [Point masks]: a one-hot select at a value known when the kernel launches, through
/// an index cast or not, gives the interpreter's bits, point mask or not, wherever the value
/// is (before the array, at each end, inside, after it, at a wrapped index).
#[test]
fn one_hot_selects_at_known_values_give_the_interpreters_bits() {
    use super::fused::tests::{point_mask_program, POINT_MASK_CASES};
    let n = PAR_THRESHOLD + 37;
    for (body, _) in POINT_MASK_CASES {
        let program = parse(&point_mask_program(body, n));
        let schedule = crate::passes::fuse::run(&program);
        for k in [
            -1,
            0,
            1,
            3,
            n as i64 - 4,
            n as i64 - 1,
            n as i64,
            4294967293,
        ] {
            let inputs = [
                i64s(&[], &[k]),
                Array::new(vec![], ArrayData::U32(vec![k as u32])),
            ];
            agrees_on_chains_and_off(&program, &schedule, &inputs, 0);
        }
    }
}

/// Note [Launch plans]: one prepared program run again and again, each time comparing the
/// index with another `Word64`: the plan made at the first run serves the next ones, and a
/// value no point mask can hold (above `i64::MAX`) binds with a plan of its own, after which
/// the kept plan serves again. Every run gives the interpreter's bits, on 1 and 2 threads.
#[test]
fn a_prepared_program_gives_the_interpreters_bits_run_after_run() {
    let n = PAR_THRESHOLD + 37;
    let program = parse(&format!(
        "program(%0: []u64) {{
           %1: [{n}]i64 = iota {n}
           %2: [{n}]u64 = cast_u64 %1
           %3: [{n}]u64 = replicate {n} %0
           %4: [{n}]bool = eq %2 %3
           %5: [{n}]f32 = replicate {n} 1.0:f32
           %6: [{n}]f32 = replicate {n} 0.0:f32
           %7: [{n}]f32 = select %4 %5 %6
           in %7
         }}"
    ));
    let schedule = crate::passes::fuse::run(&program);
    let prepared = super::Prepared::new(&program, &schedule);
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for k in [3, 1 << 63 | 3, n as u64 - 1, u64::MAX, 0, 1 << 63] {
            let input = Array::new(vec![], ArrayData::U64(vec![k]));
            let expected = interp::run(
                &program,
                std::slice::from_ref(&input),
                &InterpConfig::default(),
            );
            let tensors = vec![Tensor::from_array(&input)];
            let (results, _) = pool
                .install(|| prepared.run(tensors, &ExecConfig::default()))
                .unwrap();
            let got = results.into_iter().next().unwrap().into_array();
            assert!(
                same_array(&expected.unwrap()[0], &got),
                "k = {k}, {threads} threads"
            );
        }
    }
}

/// The results (as arrays) and report of a run of `prepared` on `inputs` with loops, monoid
/// folds and small kernels compiled by `compile_loops`.
fn run_with_compile_loops(
    prepared: &super::Prepared<'_>,
    inputs: &[Array],
    compile_loops: CompileLoops,
) -> (Vec<Array>, ExecReport) {
    let config = ExecConfig {
        compile_loops,
        ..ExecConfig::default()
    };
    let tensors = inputs.iter().map(Tensor::from_array).collect();
    let (results, report) = prepared.run(tensors, &config).unwrap();
    (
        results.into_iter().map(Tensor::into_array).collect(),
        report,
    )
}

/// `run_with_compile_loops` on a pool of `threads` threads.
fn run_on_threads(
    threads: usize,
    prepared: &super::Prepared<'_>,
    inputs: &[Array],
    compile_loops: CompileLoops,
) -> (Vec<Array>, ExecReport) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| run_with_compile_loops(prepared, inputs, compile_loops))
}

/// An elementwise kernel reading an operand transposed runs its lines down axis 0 when that
/// axis is `DOWN_LINE` long or more, else along its rows (gathering the transposed reads):
/// the interpreter's bits either way, on 1 and 2 threads.
#[test]
fn maps_of_transposed_operands_give_the_same_bits_down_or_along() {
    use super::fused::DOWN_LINE;
    for (m, n) in [(32, 5000), (DOWN_LINE, 700), (DOWN_LINE - 1, 300)] {
        let program = parse(&format!(
            "program(%0: [{n}, {m}]f32, %1: [{n}]f32) {{
               %2: [{m}, {n}]f32 = tr [1, 0] %0
               %3: [{m}, {n}]f32 = replicate {m} %1
               %4: [{m}, {n}]bool = lt %2 %3
               %5: [{m}, {n}]f32 = mul %2 %3
               %6: [{m}, {n}]f32 = select %4 %5 %2
               in %6
             }}"
        ));
        let schedule = crate::passes::fuse::run(&program);
        let xs: Vec<f32> = (0..n * m).map(|k| (k as f32 * 0.37).sin()).collect();
        let ys: Vec<f32> = (0..n).map(|k| (k as f32 * 0.11).cos()).collect();
        let inputs = [f32s(&[n, m], &xs), f32s(&[n], &ys)];
        let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
        let prepared = super::Prepared::new(&program, &schedule);
        for threads in [1, 2] {
            let (results, _) = run_on_threads(threads, &prepared, &inputs, CompileLoops::Never);
            assert!(
                same_array(&expected[0], &results[0]),
                "[{m}, {n}], {threads} threads"
            );
        }
    }
}

/// Note [Sums across a middle axis]: nbody's gradient, whose sum runs across its output's
/// middle axis, gives the interpreter's bits on 1 and 2 threads, on lanes and compiled, over
/// a `j` axis long enough for several segments and parallel pieces and one too short to move.
#[test]
fn sums_across_a_middle_axis_add_in_the_summation_order() {
    use super::fused::tests::pair_sum_program;
    for n in [40, 700] {
        let program = parse(&pair_sum_program(n));
        let schedule = crate::passes::fuse::run(&program);
        let ps: Vec<f32> = (0..n * 3).map(|k| (k as f32 * 0.37).sin() * 3.0).collect();
        let fs: Vec<f32> = (0..n * n)
            .map(|k| 1.0 + (k as f32 * 0.11).cos().powi(2) * 10f32.powi(k as i32 % 5 - 2))
            .collect();
        let inputs = [f32s(&[n, 3], &ps), f32s(&[n, n], &fs)];
        let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
        let prepared = super::Prepared::new(&program, &schedule);
        for threads in [1, 2] {
            for compile_loops in [
                CompileLoops::Never,
                CompileLoops::Long,
                CompileLoops::Always,
            ] {
                let (results, _) = run_on_threads(threads, &prepared, &inputs, compile_loops);
                assert!(
                    same_array(&expected[0], &results[0]),
                    "n = {n}, {threads} threads, {compile_loops:?}"
                );
            }
        }
    }
}

/// Note [Compiled kernels]: a loop of small steps launches its body's kernel at every step;
/// under `CompileLoops::Long` the kernel is compiled at its `COMPILE_AFTER_LAUNCHES`-th launch
/// (counting the prepared program's earlier runs), under `Never` it is not, and every run
/// gives the interpreter's bits (a row of an outer table read at the step's index, math
/// functions called from compiled code, exact arithmetic inline).
#[test]
fn small_kernels_launched_often_run_compiled_with_the_interpreters_bits() {
    use super::fused::COMPILE_AFTER_LAUNCHES;
    let steps = 100;
    let program = parse(&format!(
        "program(%0: [14]f32, %1: [{steps}, 14]f32) {{
           %2: [14]f32 = fold {steps} (%0) (\\%3: []i64, %4: [14]f32 ->
             %5: [14]f32 = index %1 [%3]
             %6: [14]f32 = mul %4 %5
             %7: [14]f32 = tanh %6
             %8: [14]f32 = sin %5
             %9: [14]f32 = exp %8
             %10: [14]f32 = div %7 %9
             %11: [14]f32 = add %10 %5
             in %11)
           in %2
         }}"
    ));
    let schedule = crate::passes::fuse::run(&program);
    let prepared = super::Prepared::new(&program, &schedule);
    let carry: Vec<f32> = (0..14).map(|i| 0.1 * (i as f32 * 0.7).cos()).collect();
    let xs: Vec<f32> = (0..steps * 14).map(|i| (i as f32 * 0.37).sin()).collect();
    let inputs = [f32s(&[14], &carry), f32s(&[steps, 14], &xs)];
    let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
    let run = |compile_loops| {
        let (results, report) = run_with_compile_loops(&prepared, &inputs, compile_loops);
        assert!(same_array(&expected[0], &results[0]));
        report.compiled_kernels
    };
    assert_eq!(run(CompileLoops::Never), 0);
    let first = steps - (COMPILE_AFTER_LAUNCHES - 1);
    assert_eq!(run(CompileLoops::Long), first);
    assert_eq!(run(CompileLoops::Long), steps);
    assert_eq!(run(CompileLoops::Never), 0);
}

/// Note [Compiled kernels]: compiled sums add in dx's order (Note [Summation order]): one
/// leaf, a leaf and a part, several leaves, on outputs of one to three columns, of terms
/// whose order shows in the bits (mixed magnitudes and signs, a product computed on the
/// fly) and of wrapping integers; the interpreter's bits with kernels compiled and not.
#[test]
fn compiled_sums_add_in_the_summation_order() {
    use crate::prim::sum_order::LEAF;
    for n in [
        1,
        7,
        8,
        9,
        LEAF - 1,
        LEAF,
        LEAF + 1,
        2 * LEAF + 3,
        5 * LEAF + 1,
    ] {
        // Outputs of a launch: one, a few, and enough for several threads' runs.
        for m in [1, 3, 2500] {
            let program = parse(&format!(
                "program(%0: [{n}, {m}]f32, %1: [{n}, {m}]f32, %2: [{n}, {m}]i64) {{
                   %3: [{n}, {m}]f32 = mul %0 %1
                   %4: [{m}]f32 = sumOuter %3
                   %5: [{n}, {m}]i64 = mul %2 %2
                   %6: [{m}]i64 = sumOuter %5
                   in %4, %6
                 }}"
            ));
            let len = n * m;
            let xs: Vec<f32> = (0..len)
                .map(|k| (k as f32 * 0.7).sin() * 10f32.powi(k as i32 % 9 - 4))
                .collect();
            let ys: Vec<f32> = (0..len).map(|k| (k as f32 * 1.3).cos() * 3.0).collect();
            let ints: Vec<i64> = (0..len as i64).map(|k| k * 0x3_0000_0001 - 7).collect();
            let inputs = [f32s(&[n, m], &xs), f32s(&[n, m], &ys), i64s(&[n, m], &ints)];
            let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
            let schedule = crate::passes::fuse::run(&program);
            let prepared = super::Prepared::new(&program, &schedule);
            for compile_loops in [CompileLoops::Never, CompileLoops::Always] {
                let (results, report) = run_with_compile_loops(&prepared, &inputs, compile_loops);
                // Both sums compile, at any size (`Always`).
                let compiled = usize::from(compile_loops == CompileLoops::Always) * 2;
                assert_eq!(report.compiled_kernels, compiled, "n = {n}, m = {m}");
                for (e, g) in expected.iter().zip(&results) {
                    assert!(same_array(e, g), "n = {n}, m = {m}, {compile_loops:?}");
                }
            }
        }
    }
}

/// Note [Row-major digits]: gathers at the digits of an offset, read as one affine
/// offset or not, give the interpreter's bits (an offset past the array's size wraps around).
#[test]
fn reads_at_the_digits_of_an_offset_give_the_interpreters_bits() {
    use super::fused::tests::{digit_program, DIGIT_CASES};
    let xs: Vec<f32> = (0..1200).map(|i| (i as f32 * 0.37).sin()).collect();
    for (body, n, _) in DIGIT_CASES {
        let program = parse(&digit_program(body, n));
        let schedule = crate::passes::fuse::run(&program);
        agrees_on_chains_and_off(&program, &schedule, &[f32s(&[40, 30], &xs)], 0);
    }
}

/// Values for a monoid test: few distinct ones (ties), zeros of both signs, and a NaN now
/// and then for floats.
fn monoid_input(rng: &mut Rng, elem: &str, shape: Vec<usize>, n: usize) -> Array {
    let floats = [0.0, -0.0, 1.0, -1.5, 0.75, 2.0, 1.0e-3, f64::NAN];
    let data = match elem {
        "f32" => ArrayData::F32((0..n).map(|_| rng.pick(&floats) as f32).collect()),
        "f64" => ArrayData::F64((0..n).map(|_| rng.pick(&floats)).collect()),
        "i64" => ArrayData::I64((0..n).map(|_| rng.below(7) as i64 - 3).collect()),
        "i32" => ArrayData::I32((0..n).map(|_| rng.below(1000) as i32 - 500).collect()),
        "u32" => ArrayData::U32((0..n).map(|_| rng.below(5) as u32 + 1).collect()),
        "bool" => ArrayData::Bool((0..n).map(|_| rng.chance(9, 10)).collect()),
        other => panic!("no inputs of {other}"),
    };
    Array::new(shape, data)
}

/// A `select` whose condition is the same along a line passes the chosen operand's run on in
/// place (`Launch::select_run`): a shifted read selected everywhere but at one point, read by
/// a map and by a sum, on lines that miss the point (the run), hit it (a blend), and end
/// past the input (the masked read is a copy there, so the select copies too); also an
/// operand chosen whole that is a computed lane. The interpreter's bits on 1 and 2 threads.
#[test]
fn selects_of_runs_read_in_place_give_the_interpreters_bits() {
    let shifted = |n: usize, k: i64| {
        format!(
            "program(%0: [{n}]f32, %1: [{n}]f32) {{
               %2: [{n}]f32 = gather [{n}] %0 (\\%3: []i64 ->
                 %4: []i64 = add %3 1:i64
                 in %4)
               %5: [{n}]i64 = iota {n}
               %6: [{n}]i64 = replicate {n} {k}:i64
               %7: [{n}]bool = eq %5 %6
               %8: [{n}]f32 = select %7 %1 %2
               %9: [{n}]f32 = mul %8 %1
               %10: []f32 = sumOuter %8
               %11: [{n}]f32 = exp %1
               %12: [{n}]f32 = select %7 %2 %11
               %13: [{n}]f32 = add %12 %0
               in %9, %10, %13
             }}"
        )
    };
    let mut rng = Rng::new(5);
    let n = PAR_THRESHOLD + 3 * crate::exec::lanes::LINE + 5;
    for k in [-1, 0, 700, 1024, n as i64 - 1, n as i64] {
        let program = parse(&shifted(n, k));
        let schedule = crate::passes::fuse::run(&program);
        let inputs: Vec<Array> = (0..2)
            .map(|_| {
                let values = (0..n).map(|_| rng.pick(&[-1.5, 0.0, -0.0, 0.25, 3.0]) as f32);
                f32s(&[n], &values.collect::<Vec<f32>>())
            })
            .collect();
        agrees_on_chains_and_off(&program, &schedule, &inputs, 0);
    }
}

#[test]
fn matrix_products_in_panels_agree_with_one_call_and_the_interpreter() {
    // 70 rows: in panels of `MIN_PANEL_ROWS` (32, 32, 6) when each panel may do one
    // operation, in one call of faer otherwise. faer sums in its own order, so the results
    // agree within a few ulps of the sum of magnitudes, not bit for bit.
    let program = parse(
        "program(%0: [70, 40]f64, %1: [40, 48]f64) {
           %2: [48, 40]f64 = tr [1, 0] %1
           %3: [48, 70, 40]f64 = replicate 48 %0
           %4: [70, 48, 40]f64 = tr [1, 0] %3
           %5: [70, 48, 40]f64 = replicate 70 %2
           %6: [70, 48, 40]f64 = mul %4 %5
           %7: [40, 70, 48]f64 = tr [2, 0, 1] %6
           %8: [70, 48]f64 = sumOuter %7
           in %8
         }",
    );
    let schedule = crate::passes::fuse::run(&program);
    let matmuls = schedule.steps.iter();
    let matmuls = matmuls.filter(|step| matches!(step, crate::core::kernel::Step::MatMul(_)));
    assert_eq!(matmuls.count(), 1, "{}", schedule.display(&program));
    let a: Vec<f64> = (0..70 * 40).map(|i| (i as f64).sin()).collect();
    let b: Vec<f64> = (0..40 * 48).map(|i| (i as f64 * 3.0).cos()).collect();
    let inputs = [f64s(&[70, 40], &a), f64s(&[40, 48], &b)];
    let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
    let prepared = super::Prepared::new(&program, &schedule);
    let run = |panel_flops| {
        let config = ExecConfig {
            panel_flops,
            ..ExecConfig::default()
        };
        let tensors = inputs.iter().map(Tensor::from_array).collect();
        let (results, _) = prepared.run(tensors, &config).unwrap();
        let result = results.into_iter().next().unwrap().into_array();
        let ArrayData::F64(values) = &*result.data else {
            panic!("a Float64 product, not {result:?}")
        };
        values.clone()
    };
    let (in_panels, in_one_call) = (run(Some(1)), run(None));
    let ArrayData::F64(want) = &*expected[0].data else {
        unreachable!()
    };
    for got in [&in_panels, &in_one_call] {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            // |error| ≤ k · 2⁻⁵² · Σ|a||b| ≤ 40 · 2.2e-16 · 40 for entries of magnitude ≤ 1.
            assert!((g - w).abs() <= 40.0 * 40.0 * 2.3e-16, "{g} vs {w}");
        }
    }
}

/// Reads that run backwards along a line (`xs[c - i]`, the cotangents of a reverse-mode
/// loop put back in order): whole lines, lines partly out of range at either end, and rows
/// of a matrix reversed. The interpreter's bits on 1 and 2 threads.
/// `agrees_on_chains_and_off` for a program of a `[n]` and a `[40, 100]` float input.
fn agrees_on_a_vector_and_a_matrix(program: &Program, n: usize) {
    let schedule = crate::passes::fuse::run(program);
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let m: Vec<f32> = (0..4000).map(|i| (i as f32 * 0.11).cos()).collect();
    let inputs = [f32s(&[n], &xs), f32s(&[40, 100], &m)];
    agrees_on_chains_and_off(program, &schedule, &inputs, 0);
}

/// Kernels that are one read: a copy of an in-place run, a shift that runs past the end, a
/// splat and a strided (transposing) read.
#[test]
fn kernels_that_only_read_agree_with_the_interpreter() {
    let n = 3000;
    let program = parse(&format!(
        "program(%0: [{n}]f32, %1: [40, 100]f32) {{
           %2: [2990]f32 = gather [2990] %0 (\\%3: []i64 ->
             %4: []i64 = add %3 7:i64
             in %4)
           %5: [{n}]f32 = gather [{n}] %0 (\\%6: []i64 ->
             %7: []i64 = add %6 13:i64
             in %7)
           %8: [{n}]f32 = gather [{n}] %0 (\\%9: []i64 -> in 5:i64)
           %10: [100, 40]f32 = gather [100, 40] %1 (\\%11: []i64, %12: []i64 -> in %12, %11)
           in %2, %5, %8, %10
         }}"
    ));
    agrees_on_a_vector_and_a_matrix(&program, n);
}

/// Note [Lines of rows]: maps whose lines hold several rows, with every kind of read a row
/// can make (contiguous across the rows, the same along each row, along the row only,
/// transposed, shifted past either end of its row and past the last row, backwards, at
/// computed columns), indices and point masks of either axis, and lines cut where the axis
/// before the rows ends (`[b, 70, 100]`: rows of the next `b` start a new line), in a kernel
/// alone and in parallel. The interpreter's bits on 1 and 2 threads.
#[test]
fn lines_of_rows_give_the_interpreters_bits() {
    let program = |b: usize| {
        let map = |n: usize, src: &str| {
            format!(
                "%{n}: [{b}, 70, 100]f32 = gather [{b}, 70, 100] %0 (\\%{n}0: []i64, %{n}1: []i64, %{n}2: []i64 ->
                   {src})"
            )
        };
        format!(
            "program(%0: [{b}, 70, 100]f32, %1: [70]f32, %2: [100]f32, %3: [100, 70]f32, %4: [100]i64) {{
               %5: [100, 70]f32 = replicate 100 %1
               %6: [70, 100]f32 = tr [1, 0] %5
               %7: [{b}, 70, 100]f32 = replicate {b} %6
               %8: [{b}, 70, 100]f32 = mul %0 %7
               %9: [{b}, 70, 100]f32 = sub %0 %7
               %10: [{b}, 70, 100]f32 = exp %9
               %11: [70, 100]f32 = replicate 70 %2
               %12: [{b}, 70, 100]f32 = replicate {b} %11
               %13: [70, 100]f32 = tr [1, 0] %3
               %14: [{b}, 70, 100]f32 = replicate {b} %13
               %15: [{b}, 70, 100]f32 = add %12 %14
               %16: [{b}, 70, 100]f32 = add %15 %8
               {}
               {}
               {}
               {}
               %21: [{b}, 70, 100]f32 = add %17 %18
               %22: [{b}, 70, 100]f32 = add %19 %20
               %23: [{b}, 70, 100]f32 = mul %21 %22
               %24: [100]i64 = iota 100
               %25: [70, 100]i64 = replicate 70 %24
               %26: [{b}, 70, 100]i64 = replicate {b} %25
               %27: [70]i64 = iota 70
               %28: [100, 70]i64 = replicate 100 %27
               %29: [70, 100]i64 = tr [1, 0] %28
               %30: [{b}, 70, 100]i64 = replicate {b} %29
               %31: [100]i64 = replicate 100 0:i64
               %40: [70, 100]i64 = replicate 70 %31
               %41: [{b}, 70, 100]i64 = replicate {b} %40
               %32: [{b}, 70, 100]bool = eq %26 %41
               %33: [100]i64 = replicate 100 69:i64
               %42: [70, 100]i64 = replicate 70 %33
               %43: [{b}, 70, 100]i64 = replicate {b} %42
               %34: [{b}, 70, 100]bool = eq %30 %43
               %35: [{b}, 70, 100]f32 = select %32 %16 %23
               %36: [{b}, 70, 100]f32 = select %34 %10 %35
               %37: [{b}, 70, 100]i64 = mul %26 %30
               %38: [{b}, 70, 100]f32 = cast_f32 %37
               %39: [{b}, 70, 100]f32 = add %36 %38
               in %10, %16, %39
             }}",
            map(17, "%175: []i64 = add %172 1:i64\n in %170, %171, %175"),
            map(18, "%185: []i64 = sub %182 3:i64\n in %180, %181, %185"),
            map(19, "%195: []i64 = add %191 1:i64\n %196: []i64 = sub 99:i64 %192\n in %190, %195, %196"),
            map(20, "%205: []i64 = index %4 [%202]\n in %200, %201, %205"),
        )
    };
    let mut rng = Rng::new(11);
    let mut floats = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| rng.pick(&[-1.5, 0.0, -0.0, 0.25, 3.0, 0.7]) as f32)
            .collect()
    };
    let columns: Vec<i64> = (0..100).map(|c| (c * 37 % 130) - 10).collect();
    for b in [3, 5] {
        let text = program(b);
        let program = parse(&text);
        let schedule = crate::passes::fuse::run(&program);
        let inputs = [
            f32s(&[b, 70, 100], &floats(b * 7000)),
            f32s(&[70], &floats(70)),
            f32s(&[100], &floats(100)),
            f32s(&[100, 70], &floats(7000)),
            i64s(&[100], &columns),
        ];
        agrees_on_chains_and_off(&program, &schedule, &inputs, 0);
    }
}

/// Note [Lines of rows]: reductions along an axis that fits in one line take their lines
/// from several consecutive outputs: sums (of a product, of a splat, of a row read
/// transposed) and maxima and minima (of floats with NaNs and zeros of both signs, of
/// integers), alone and as members of row groups, with lines cut where the output's last
/// axis ends, and a reduced axis longer than a line; small and parallel. The interpreter's
/// bits on 1 and 2 threads.
#[test]
fn reductions_in_lines_of_outputs_give_the_interpreters_bits() {
    let program = |b: usize, depth: usize| {
        let select = |n: usize, op: &str, (array, init): (usize, usize), ty: &str| {
            let elem = &ty[ty.len() - 3..];
            format!(
                "%{n}: {ty} = reduce (%{array}) (%{init}) (\\%{n}1: []{elem}, %{n}2: []{elem} ->
                   %{n}3: []{elem} = {op} %{n}1 %{n}2
                   in %{n}3)"
            )
        };
        format!(
            "program(%0: [{b}, 70, {depth}]f32, %1: [70]f32, %2: [{depth}, 70]f32, %3: [{b}, 70, {depth}]i64, %50: []f32) {{
               %4: [{depth}, {b}, 70]f32 = tr [2, 0, 1] %0
               %5: [{b}, 70]f32 = sumOuter %4
               %6: [{depth}, {b}, 70]f32 = mul %4 %4
               %7: [{b}, 70]f32 = sumOuter %6
               %30: [{b}, 70]f32 = replicate {b} %1
               %31: [70]i64 = iota 70
               %32: [{b}, 70]i64 = replicate {b} %31
               %8: [{depth}, {b}, 70]f32 = replicate {depth} %30
               %9: [{b}, 70]f32 = sumOuter %8
               %10: [{b}, {depth}, 70]f32 = replicate {b} %2
               %11: [{depth}, {b}, 70]f32 = tr [1, 0, 2] %10
               %12: [{depth}, {b}, 70]f32 = add %11 %4
               %13: [{b}, 70]f32 = sumOuter %12
               {}
               {}
               %16: [{depth}, {b}, 70]i64 = tr [2, 0, 1] %3
               {}
               %18: [{b}, 70]f32 = add %5 %15
               %21: [{depth}, {b}, 70]f32 = replicate {depth} %18
               %22: [{b}, 70, {depth}]f32 = tr [1, 2, 0] %21
               %23: [{b}, 70, {depth}]f32 = sub %0 %22
               %24: [{b}, 70, {depth}]f32 = exp %23
               %25: [{depth}, {b}, 70]f32 = tr [2, 0, 1] %24
               %26: [{b}, 70]f32 = sumOuter %25
               %27: [{depth}, {b}, 70]f32 = mul %4 %8
               %28: [{b}, 70]f32 = sumOuter %27
               %33: [{depth}, 70, {b}]f32 = tr [2, 1, 0] %0
               %34: [70, {b}]f32 = sumOuter %33
               %35: [{b}]f32 = replicate {b} %50
               %37: [{depth}, {b}]f32 = replicate {depth} %35
               %38: [{b}]f32 = sumOuter %37
               {}
               in %5, %7, %9, %13, %14, %15, %17, %24, %26, %28, %34, %38, %39
             }}",
            select(14, "max", (4, 30), &format!("[{b}, 70]f32")),
            select(15, "min", (12, 30), &format!("[{b}, 70]f32")),
            select(17, "max", (16, 32), &format!("[{b}, 70]i64")),
            select(39, "max", (37, 35), &format!("[{b}]f32")),
        )
    };
    let mut rng = Rng::new(13);
    for (b, depth) in [(3, 100), (5, 100), (2, 1500)] {
        let text = program(b, depth);
        let program = parse(&text);
        let schedule = crate::passes::fuse::run(&program);
        let values = [-1.5, 0.0, -0.0, 0.25, 3.0, 0.7, f64::NAN];
        let mut floats = |n: usize, nan: bool| -> Vec<f32> {
            let values = if nan { &values[..] } else { &values[..6] };
            (0..n).map(|_| rng.pick(values) as f32).collect()
        };
        let n = b * 70 * depth;
        let ints: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 1013 - 500).collect();
        let inputs = [
            f32s(&[b, 70, depth], &floats(n, true)),
            f32s(&[70], &floats(70, false)),
            f32s(&[depth, 70], &floats(depth * 70, false)),
            i64s(&[b, 70, depth], &ints),
            f32s(&[], &[-0.7]),
        ];
        agrees_on_chains_and_off(&program, &schedule, &inputs, 0);
    }
}

#[test]
fn kernels_read_runs_backwards_as_the_interpreter_does() {
    let n = 3000;
    let program = parse(&format!(
        "program(%0: [{n}]f32, %1: [40, 100]f32) {{
           %2: [{n}]f32 = gather [{n}] %0 (\\%3: []i64 ->
             %4: []i64 = sub 2999:i64 %3
             in %4)
           %5: [{n}]f32 = gather [{n}] %0 (\\%6: []i64 ->
             %7: []i64 = sub 2990:i64 %6
             in %7)
           %8: [{n}]f32 = gather [{n}] %0 (\\%9: []i64 ->
             %10: []i64 = sub 3010:i64 %9
             in %10)
           %11: [{n}]f32 = add %5 %8
           %12: [40, 100]f32 = gather [40, 100] %1 (\\%13: []i64, %14: []i64 ->
             %15: []i64 = sub 99:i64 %14
             in %13, %15)
           in %2, %11, %12
         }}"
    ));
    agrees_on_a_vector_and_a_matrix(&program, n);
}

/// Note [Wrapped reads]: reads at an affine modulo a period (a ring's neighbours both ways,
/// a shift of several periods, a step of 2, a backward step, a wrapped row of a matrix and
/// a wrapped column of a transposed one, a sum of products of neighbours, a period too short
/// for long pieces, an affine that never reaches its period) on lines cut at one wrap, at
/// several and at none, on a vector long enough to run in parallel. The interpreter's bits
/// on 1 and 2 threads, and the coordinates that must wrap do.
#[test]
fn wrapped_reads_give_the_interpreters_bits() {
    let n = 40_000;
    let ring = |v: usize, from: usize, offset: i64| {
        format!(
            "%{v}: [{n}]f32 = gather [{n}] %0 (\\%{v}1: []i64 ->
               %{v}2: []u32 = cast_u32 %{v}1
               %{v}3: []u32 = add %{v}2 {offset}:u32
               %{v}4: []u32 = mod %{v}3 {n}:u32
               %{v}5: []i64 = cast_i64 %{v}4
               in %{v}5)
             %{v}6: [{n}]f32 = add %{from} %{v}"
        )
    };
    let program = parse(&format!(
        "program(%0: [{n}]f32, %1: [40, 100]f32) {{
           {}
           {}
           {}
           %40: [{n}]f32 = gather [{n}] %0 (\\%41: []i64 ->
             %42: []i64 = mul %41 2:i64
             %43: []i64 = add %42 5:i64
             %44: []i64 = mod %43 {n}:i64
             in %44)
           %45: [{n}]f32 = gather [{n}] %0 (\\%46: []i64 ->
             %47: []i64 = sub 70000:i64 %46
             %48: []i64 = mod %47 {n}:i64
             in %48)
           %49: [{n}]f32 = add %40 %45
           %50: [40, 100]f32 = gather [40, 100] %1 (\\%51: []i64, %52: []i64 ->
             %53: []i64 = add %51 1:i64
             %54: []i64 = mod %53 40:i64
             %55: []i64 = add %52 30:i64
             %56: []i64 = mod %55 100:i64
             in %54, %56)
           %57: [100, 40]f32 = gather [100, 40] %1 (\\%58: []i64, %59: []i64 ->
             %60: []i64 = add %58 77:i64
             %61: []i64 = mod %60 100:i64
             in %59, %61)
           %62: [{n}]f32 = mul %0 %206
           %63: []f32 = sumOuter %62
           %64: [{n}]f32 = gather [{n}] %0 (\\%65: []i64 ->
             %66: []i64 = mod %65 7:i64
             in %66)
           %67: [{n}]f32 = gather [{n}] %0 (\\%68: []i64 ->
             %69: []i64 = add %68 3:i64
             %70: []i64 = mod %69 50000:i64
             %71: []i64 = min %70 39999:i64
             in %71)
           in %106, %306, %49, %50, %57, %63, %64, %67
         }}",
        ring(10, 0, 1),
        ring(20, 106, n as i64 - 1),
        ring(30, 206, 5 * n as i64 + 3),
    ));
    let schedule = crate::passes::fuse::run(&program);
    let fused = schedule.display(&program).to_string();
    for wrapped in [
        "(i0 + 1) mod 40000",
        "(i0 + 39999) mod 40000",
        "(i0 + 200003) mod 40000",
        "(2*i0 + 5) mod 40000",
        "(-1*i0 + 70000) mod 40000",
        "(i0 + 1) mod 40",
        "(i1 + 30) mod 100",
        "(i0 + 77) mod 100",
    ] {
        assert!(fused.contains(wrapped), "{wrapped} in\n{fused}");
    }
    assert!(
        !fused.contains("mod 7]"),
        "a period of 7 is computed by nodes\n{fused}"
    );
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let m: Vec<f32> = (0..4000).map(|i| (i as f32 * 0.11).cos()).collect();
    agrees_on_chains_and_off(
        &program,
        &schedule,
        &[f32s(&[n], &xs), f32s(&[40, 100], &m)],
        0,
    );
}

/// Note [Row groups]: a scatter added into the last output of a row group, one point per row
/// at a column its index function computes, is added block by block; its array may be an
/// input or a member's output. Labels out of range (negative, past the row) are dropped, a
/// -0 added in place gives the interpreter's +0; bits as the interpreter's on 1 and 2
/// threads. An index function that reads a member's output keeps the scatter after the group.
#[test]
fn scatters_added_by_rows_give_the_interpreters_bits() {
    use crate::core::kernel::Step;
    let program_text = |array: &str, label: &str| {
        format!(
            "program(%0_zs: [301, 100]f32, %1_labels: [301]i64, %2_w: [301]f32) {{
  %3_tr: [100, 301]f32 = tr [1, 0] %0_zs
  %4_sum: [301]f32 = sumOuter %3_tr
  %5_rep: [100, 301]f32 = replicate 100 %4_sum
  %6_tr: [301, 100]f32 = tr [1, 0] %5_rep
  %7_sub: [301, 100]f32 = sub %0_zs %6_tr
  %8_exp: [301, 100]f32 = exp %7_sub
  %9_tr: [100, 301]f32 = tr [1, 0] %8_exp
  %10_sum: [301]f32 = sumOuter %9_tr
  %11_neg: [301]f32 = neg %2_w
  %20_one: [301]i64 = replicate 301 1:i64
  %21_next: [301]i64 = add %1_labels %20_one
  %12_ct: [301, 100]f32 = scatter [301, 100] {array} (\\%13_i: []i64 ->
    %14_ix: []i64 = index {label} [%13_i]
    in %13_i, %14_ix)
  %15_rep: [100, 301]f32 = replicate 100 %10_sum
  %16_tr: [301, 100]f32 = tr [1, 0] %15_rep
  %17_div: [301, 100]f32 = div %8_exp %16_tr
  %18_add: [301, 100]f32 = add %12_ct %17_div
  in %18_add, %21_next
}}
"
        )
    };
    let zs: Vec<f32> = (0..30100).map(|i| (i as f32 * 0.37).sin()).collect();
    let labels: Vec<i64> = (0..301)
        .map(|r| match r % 50 {
            3 => -1,
            4 => 100,
            5 => 1 << 40,
            _ => (r * 7) % 100,
        })
        .collect();
    let w: Vec<f32> = (0..301)
        .map(|r| if r % 9 == 0 { -0.0 } else { (r as f32).cos() })
        .collect();
    let inputs = [
        f32s(&[301, 100], &zs),
        i64s(&[301], &labels),
        f32s(&[301], &w),
    ];
    // (array, label table, whether the scatter joins the group)
    for (array, label, by_rows) in [
        ("%2_w", "%1_labels", true),
        ("%11_neg", "%1_labels", true),
        ("%11_neg", "%21_next", false),
    ] {
        let program = parse(&program_text(array, label));
        let schedule = crate::passes::fuse::run(&program);
        let (mut joined, mut after) = (0, 0);
        for step in &schedule.steps {
            match step {
                Step::Rows(rows) => joined += usize::from(rows.scatter_add.is_some()),
                Step::ScatterAdd { .. } => after += 1,
                _ => {}
            }
        }
        let text = schedule.display(&program).to_string();
        assert_eq!(
            (joined, after),
            (usize::from(by_rows), 1 - usize::from(by_rows)),
            "{text}"
        );
        agrees_on_chains_and_off(&program, &schedule, &inputs, 0);
    }
}

/// Note [Compiled kernels]: under `CompileLoops::Long`, a kernel of many outputs whose lanes
/// would sum them output by output or read them row by row (a short summed axis: the
/// squared distances of a pairwise kernel sum in a row group, and of a k-means step alone;
/// a map over rows of 8 in the row group, as in nbody's gradient) runs compiled at its
/// first launch, in parallel over runs of outputs, with the interpreter's bits on 1 and 2
/// threads; a sum whose lines run along its long summed axis, and a kernel calling a maths
/// function, stay on lanes.
#[test]
fn big_kernels_that_sum_short_rows_run_compiled() {
    use crate::core::kernel::Step;
    let (n, d) = (300, 8);
    let program = parse(&format!(
        "program(%0: [{n}, {d}]f32, %1: [{n}]f32, %20: [3000, {d}]f32, %25: [20, {d}]f32) {{
           %2: [{n}, {n}, {d}]f32 = replicate {n} %0
           %3: [{n}, {n}, {d}]f32 = tr [1, 0, 2] %2
           %4: [{n}, {n}, {d}]f32 = sub %3 %2
           %5: [{n}, {n}, {d}]f32 = mul %4 %4
           %6: [{d}, {n}, {n}]f32 = tr [2, 0, 1] %5
           %7: [{n}, {n}]f32 = sumOuter %6
           %8: [{n}, {n}]f32 = neg %7
           %9: [{n}, {n}]f32 = exp %8
           %10: [{n}, {n}]f32 = replicate {n} %1
           %11: [{n}, {n}]f32 = mul %9 %10
           %12: [{n}, {n}]f32 = tr [1, 0] %11
           %13: [{n}]f32 = sumOuter %12
           %14: [{d}, {n}, {n}]f32 = replicate {d} %7
           %15: [{n}, {n}, {d}]f32 = tr [1, 2, 0] %14
           %16: [{n}, {n}, {d}]f32 = mul %4 %15
           %21: [20, 3000, {d}]f32 = replicate 20 %20
           %22: [3000, 20, {d}]f32 = tr [1, 0, 2] %21
           %23: [3000, 20, {d}]f32 = replicate 3000 %25
           %24: [3000, 20, {d}]f32 = sub %22 %23
           %26: [3000, 20, {d}]f32 = mul %24 %24
           %27: [{d}, 3000, 20]f32 = tr [2, 0, 1] %26
           %28: [3000, 20]f32 = sumOuter %27
           %29: [3000, 20, {d}]f32 = sin %24
           %30: [{d}, 3000, 20]f32 = tr [2, 0, 1] %29
           %31: [3000, 20]f32 = sumOuter %30
           in %13, %16, %28, %31
         }}"
    ));
    let schedule = crate::passes::fuse::run(&program);
    let text = schedule.display(&program).to_string();
    let grouped = (schedule.steps.iter())
        .filter(|step| matches!(step, Step::Rows(rows) if rows.kernels.len() == 3))
        .count();
    let group = "the distances, their exp's sum and `%16` in one row group";
    assert_eq!(grouped, 1, "{group}\n{text}");
    let xs: Vec<f32> = (0..n * d).map(|k| (k as f32 * 0.37).sin()).collect();
    let alpha: Vec<f32> = (0..n).map(|k| 0.01 * (k as f32 * 0.7).sin()).collect();
    let zs: Vec<f32> = (0..3000 * d)
        .map(|k| (k as f32 * 1.3).cos() * 10f32.powi(k as i32 % 7 - 3))
        .collect();
    let cs: Vec<f32> = (0..20 * d).map(|k| (k as f32 * 0.9).sin()).collect();
    let inputs = [
        f32s(&[n, d], &xs),
        f32s(&[n], &alpha),
        f32s(&[3000, d], &zs),
        f32s(&[20, d], &cs),
    ];
    let expected = interp::run(&program, &inputs, &InterpConfig::default()).unwrap();
    let prepared = super::Prepared::new(&program, &schedule);
    for (threads, compile_loops, compiled) in [
        (1, CompileLoops::Long, 3),
        (2, CompileLoops::Long, 3),
        (2, CompileLoops::Never, 0),
    ] {
        let (results, report) = run_on_threads(threads, &prepared, &inputs, compile_loops);
        // The distances of the group (its first member), its map `%16` (rows of 8) and the
        // distances of `%28` (whose output rows of 20 are too short for lines across); not
        // the exp's sum (its lines run along 300 terms) nor the sum of sines (a maths call
        // a point).
        assert_eq!(
            report.compiled_kernels, compiled,
            "{compile_loops:?}\n{text}"
        );
        for (position, (e, g)) in expected.iter().zip(&results).enumerate() {
            assert!(
                same_array(e, g),
                "result {position}, {threads} threads, {compile_loops:?}"
            );
        }
    }
}

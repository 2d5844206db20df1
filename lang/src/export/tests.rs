//! The mapping of bulk IR to StableHLO on hand-written programs: which operations each form
//! becomes, and the errors for what cannot be exported. (Values are checked by XLA itself in
//! `repl/tests/stablehlo.rs`.)

use super::stablehlo::{module, Input};
use super::{bulk_passes, ExportError};
use crate::core::ir::{ArrTy, Elem, Program};
use crate::core::parse::parse_program;
use crate::core::value::{Array, ArrayData};
use crate::ops::testgen::{self, MonoidInits};
use crate::passes::pipeline;

fn export(text: &str) -> Result<String, ExportError> {
    let program = parse_program(text).expect("the test program parses");
    let params = vec![Input::Param; program.inputs.len()];
    module(&program, &params)
}

fn exported(text: &str) -> String {
    export(text).unwrap_or_else(|err| panic!("{err}"))
}

/// The names of the operations in a module, in order.
fn ops(module: &str) -> Vec<String> {
    module
        .split('"')
        .filter(|piece| piece.starts_with("stablehlo.") || piece.starts_with("func."))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_module_has_one_public_main_with_static_types_and_a_tuple_is_several_results() {
    let text = exported(
        "program(%0_x: [2, 3]f32, %1_n: []i64) {
           %2: [2, 3]f32 = neg %0_x
           in %2, %1_n
         }",
    );
    assert!(text.starts_with("module @dx_export {\n  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<i64>) -> (tensor<2x3xf32>, tensor<i64>) {\n"), "{text}");
    assert!(
        text.contains("\"func.return\"(%0, %arg1) : (tensor<2x3xf32>, tensor<i64>) -> ()"),
        "{text}"
    );
    assert_eq!(text.matches("func.func").count(), 1);
}

#[test]
fn array_forms_map_to_their_stablehlo_operations() {
    let text = exported(
        "program(%0_x: [2, 3]f32) {
           %1: [4, 2, 3]f32 = replicate 4 %0_x
           %2: [3, 2]f32 = tr [1, 0] %0_x
           %3: [6]f32 = reshape [6] %0_x
           %4: [5]i64 = iota 5
           %5: [3]f32 = sumOuter %0_x
           %6: [2, 6]f32 = table [%3, %3]
           in %1, %2, %4, %5, %6
         }",
    );
    let ops = ops(&text);
    for op in [
        "stablehlo.broadcast_in_dim",
        "stablehlo.transpose",
        "stablehlo.reshape",
        "stablehlo.iota",
        "stablehlo.reduce",
        "stablehlo.concatenate",
    ] {
        assert!(ops.iter().any(|name| name == op), "no {op} in\n{text}");
    }
    assert!(text.contains("{permutation = array<i64: 1, 0>}"), "{text}");
    assert!(
        text.contains("{broadcast_dimensions = array<i64: 1, 2>}"),
        "{text}"
    );
    assert!(text.contains("{dimensions = array<i64: 0>}"), "{text}");
}

#[test]
fn a_gather_computes_its_index_function_over_the_grid_and_masks_out_of_range_reads() {
    let text = exported(
        "program(%0_a: [4]f32) {
           %1: [4]f32 = gather [4] %0_a (\\%2_i: []i64 ->
             %3: []i64 = sub 3:i64 %2_i
             in %3)
           in %1
         }",
    );
    let ops = ops(&text);
    let position = |op: &str| ops.iter().position(|name| name == op);
    assert!(position("stablehlo.iota") < position("stablehlo.subtract"));
    assert!(position("stablehlo.subtract") < position("stablehlo.gather"));
    assert!(
        text.contains("#stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>"),
        "{text}"
    );
    // In-range test (≥ 0 and < 4), then a select with zero after the gather.
    assert!(text.contains("comparison_direction GE"), "{text}");
    assert!(text.contains("comparison_direction LT"), "{text}");
    assert_eq!(ops.last().map(String::as_str), Some("func.return"));
    assert_eq!(ops[ops.len() - 2], "stablehlo.select", "{text}");
}

#[test]
fn a_scatter_adds_and_drops_out_of_range_rows() {
    let text = exported(
        "program(%0_a: [3]f64) {
           %1: [2]f64 = scatter [2] %0_a (\\%2_i: []i64 ->
             %3: []i64 = sub %2_i 1:i64
             in %3)
           in %1
         }",
    );
    assert!(text.contains("\"stablehlo.scatter\""), "{text}");
    assert!(
        text.contains("#stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>"),
        "{text}"
    );
    assert!(text.contains("\"stablehlo.add\""), "{text}");
}

#[test]
fn loops_become_while_and_conditions_if() {
    let text = exported(
        "program(%0_a: [4]f32, %9_c: []bool) {
           %5: []f32 = fold 4 (0.0:f32) (\\%6_i: []i64, %7_c: []f32 ->
             %8: []f32 = index %0_a [%6_i]
             %10: []f32 = add %7_c %8
             in %10)
           %11: []f32 = cond %9_c (\\ ->
             in 1.0:f32) (\\ ->
             in %5)
           in %11
         }",
    );
    let ops = ops(&text);
    assert!(ops.iter().any(|op| op == "stablehlo.while"), "{text}");
    assert!(ops.iter().any(|op| op == "stablehlo.if"), "{text}");
    let scan = exported(
        "program(%0_a: [3]f32) {
           %1: []f32, %2: [3]f32 = scan 3 (0.0:f32) (\\%3_i: []i64, %4_c: []f32 ->
             %5: []f32 = index %0_a [%3_i]
             %6: []f32 = add %4_c %5
             in %6, %6)
           in %1, %2
         }",
    );
    assert!(
        scan.contains("\"stablehlo.dynamic_update_slice\""),
        "{scan}"
    );
}

/// A dx `while` is a `stablehlo.while` whose first carried value is the continue flag, true at
/// first (a do-while: the condition region only reads the flag the body computed), and
/// whose body region returns the body's flag and new carries.
#[test]
fn a_while_carries_its_flag_and_its_reverse_sweep_is_an_error() {
    let text = exported(
        "program(%0_x: []f32) {
           %1: []f32 = while (%0_x) (\\%2_x: []f32 ->
             %3: []f32 = mul %2_x 0.5:f32
             %4: []bool = gt %3 1.0:f32
             in %4, %3)
           in %1
         }",
    );
    assert_eq!(count(&text, "stablehlo.while"), 1, "{text}");
    let flag = text.find("dense<true>").expect("a true flag");
    let while_op = text.find("\"stablehlo.while\"").expect("a while");
    assert!(flag < while_op, "{text}");
    assert!(
        text.contains("(tensor<i1>, tensor<f32>) -> (tensor<i1>, tensor<f32>)"),
        "{text}"
    );
    let error = export(
        "program(%0_x: []f32) {
           %1: []f32 = while_reverse (%0_x) (1.0:f32) (\\%2_x: []f32 ->
             %3: []f32 = mul %2_x 0.5:f32
             %4: []bool = gt %3 1.0:f32
             in %4, %3) (\\%5_x: []f32, %6_ct: []f32 ->
             %7: []f32 = mul %6_ct 0.5:f32
             in %7)
           in %1
         }",
    )
    .expect_err("no static form");
    assert!(error.to_string().contains("while_reverse"), "{error}");
}

/// How many times an operation occurs in a module.
fn count(module: &str, op: &str) -> usize {
    ops(module).iter().filter(|name| *name == op).count()
}

/// A program whose one statement is the monoid operation `kind` over `n`-element arrays of
/// the element types `elems`, from zeros, with the operator block `op` (its variables are
/// numbered below 100).
pub(crate) fn monoid_program(kind: &str, n: usize, elems: &[&str], op: &str) -> String {
    testgen::monoid_program(kind, &[n], elems, op, MonoidInits::Zeros)
}

/// `a + b` on `f32`.
pub(crate) const ADD: &str = "(\\%2_a: []f32, %3_b: []f32 ->
  %4: []f32 = add %2_a %3_b
  in %4)";

/// The online logsumexp: (m, s) ⊕ (m', s') = (M, s·exp(m − M) + s'·exp(m' − M)),
/// M = max m m'.
pub(crate) const LOGSUMEXP: &str = "(\\%4_m: []f32, %5_s: []f32, %6_n: []f32, %7_t: []f32 ->
  %8: []f32 = max %4_m %6_n
  %9: []f32 = sub %4_m %8
  %10: []f32 = exp %9
  %11: []f32 = mul %5_s %10
  %12: []f32 = sub %6_n %8
  %13: []f32 = exp %12
  %14: []f32 = mul %7_t %13
  %15: []f32 = add %11 %14
  in %8, %15)";

/// The affine maps `x ↦ a x + b` on `i64`, composed left to right (`(a, b)` then `(c, d)`
/// is `(a c, b c + d)`): not commutative.
pub(crate) const AFFINE: &str = "(\\%4_a: []i64, %5_b: []i64, %6_c: []i64, %7_d: []i64 ->
  %8: []i64 = mul %4_a %6_c
  %9: []i64 = mul %5_b %6_c
  %10: []i64 = add %9 %7_d
  in %8, %10)";

#[test]
fn a_commutative_reduce_is_one_stablehlo_reduce_from_the_identity_not_from_e() {
    // `e` = 5.0 is not an identity of `add`: dx uses it only for an empty array, so the
    // reduction starts from add's identity, -0.0.
    let text = exported(&format!(
        "program(%0_x: [1000, 3]f32) {{
           %1: [3]f32 = replicate 3 5.0:f32
           %200: [3]f32 = reduce (%0_x) (%1) {ADD}
           in %200
         }}"
    ));
    assert_eq!(count(&text, "stablehlo.reduce"), 1, "{text}");
    assert_eq!(count(&text, "stablehlo.while"), 0, "{text}");
    assert!(text.contains("dense<-0.0> : tensor<f32>"), "{text}");
    assert!(text.contains("{dimensions = array<i64: 0>}"), "{text}");
    // An empty array gives `e` (5.0 here, so that a result of zeros would not pass).
    let empty = exported(
        "program(%0_x: [0, 3]f32) {
           %1: [3]f32 = replicate 3 5.0:f32
           %200: [3]f32 = reduce (%0_x) (%1) ADD_BLOCK
           in %200
         }"
        .replace("ADD_BLOCK", ADD)
        .as_str(),
    );
    assert_eq!(count(&empty, "stablehlo.reduce"), 0, "{empty}");
    assert!(empty.contains("dense<5.0> : tensor<f32>"), "{empty}");
    assert!(!empty.contains("-0.0"), "{empty}");
}

#[test]
fn a_commutative_reduce_without_a_known_identity_pairs_its_elements_with_a_flag() {
    let text = exported(&monoid_program("reduce", 8, &["f32", "f32"], LOGSUMEXP));
    assert_eq!(count(&text, "stablehlo.reduce"), 1, "{text}");
    assert!(
        text.contains("(tensor<8xf32>, tensor<8xf32>, tensor<8xi1>, tensor<f32>, tensor<f32>, tensor<i1>) -> (tensor<f32>, tensor<f32>, tensor<i1>)"),
        "{text}"
    );
}

#[test]
fn a_non_commutative_reduce_is_a_tree_of_slices() {
    let text = exported(&monoid_program("reduce", 1000, &["i64", "i64"], AFFINE));
    assert_eq!(count(&text, "stablehlo.reduce"), 0, "{text}");
    assert_eq!(count(&text, "stablehlo.while"), 0, "{text}");
    // ⌈log₂ 1000⌉ = 10 levels, each combining the even rows with the odd ones (two slices
    // per component) and two multiplications.
    assert_eq!(count(&text, "stablehlo.multiply"), 2 * 10, "{text}");
    assert!(text.contains("strides = array<i64: 2>"), "{text}");
}

#[test]
fn a_scan_of_a_million_elements_has_no_loop_and_logarithmic_depth() {
    let text = exported(&monoid_program("assoc_scan", 1_000_000, &["f32"], ADD));
    assert_eq!(count(&text, "stablehlo.while"), 0, "{text}");
    // Two additions per level of the recursion (the pairs, then the even positions): 19
    // levels for 10⁶ elements, down to 3 (a single element is its own scan).
    assert_eq!(count(&text, "stablehlo.add"), 38);
    // A right scan: reversed, scanned with the operands swapped, reversed back.
    let right = exported(&format!(
        "program(%0_a: [5, 2]i64, %1_b: [5, 2]i64) {{
           %11: [2]i64 = replicate 2 1:i64
           %12: [2]i64 = replicate 2 0:i64
           %2: [5, 2]i64, %3: [5, 2]i64 = assoc_scan_right (%0_a, %1_b) (%11, %12) {AFFINE}
           in %2, %3
         }}"
    ));
    assert_eq!(count(&right, "stablehlo.reverse"), 4, "{right}");
    assert_eq!(count(&right, "stablehlo.while"), 0, "{right}");
    assert!(right.contains("-> tensor<2x2xi64>"), "{right}");
}

#[test]
fn a_product_summed_over_an_axis_is_a_dot_general() {
    // `for i k. sum for j. a[i,j] * b[j,k]` after the BOT and simplification.
    let text = exported(
        "program(%3_a: [3, 4]f32, %6_b: [4, 5]f32) {
           %22_ix: [5, 4]f32 = tr [1, 0] %6_b
           %31_rep: [5, 3, 4]f32 = replicate 5 %3_a
           %32_rep: [3, 5, 4]f32 = tr [1, 0] %31_rep
           %33_rep: [3, 5, 4]f32 = replicate 3 %22_ix
           %34_mul: [3, 5, 4]f32 = mul %32_rep %33_rep
           %36_tr: [4, 3, 5]f32 = tr [2, 0, 1] %34_mul
           %37_sum: [3, 5]f32 = sumOuter %36_tr
           in %37_sum
         }",
    );
    assert_eq!(
        ops(&text),
        ["stablehlo.dot_general", "func.return"],
        "{text}"
    );
    assert!(
        text.contains(
            "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>"
        ),
        "{text}"
    );
    // A product also used elsewhere stays, and so does its sum.
    let shared = exported(
        "program(%0_x: [4]f32, %1_y: [4]f32) {
           %2: [4]f32 = mul %0_x %1_y
           %3: []f32 = sumOuter %2
           in %3, %2
         }",
    );
    assert!(shared.contains("\"stablehlo.reduce\""), "{shared}");
}

#[test]
fn random_numbers_are_threefry_in_32_bit_words() {
    let text = exported(
        "program(%0_k: [2]u64) {
           %1: [2]u64 = threefry2x32 %0_k %0_k
           %2: [2]f32 = unitfrombits %1
           in %2
         }",
    );
    // Five groups of four rounds, each with one rotation (two shifts).
    assert_eq!(
        text.matches("\"stablehlo.shift_left\"").count(),
        20 + 1,
        "{text}"
    );
    assert!(text.contains("\"stablehlo.bitcast_convert\""), "{text}");
    assert!(text.contains("dense<466688986> : tensor<2xui32>"), "{text}");
}

#[test]
fn integer_division_and_floored_mod_guard_against_zero() {
    let text = exported(
        "program(%0_x: [3]i32, %1_y: [3]i32) {
           %2: [3]i32 = div %0_x %1_y
           %3: [3]i32 = mod %0_x %1_y
           %4: [3]f32 = cast_f32 %0_x
           %5: [3]i64 = cast_i64 %4
           in %2, %3, %5
         }",
    );
    assert!(text.contains("comparison_direction EQ"), "{text}");
    assert!(text.contains("\"stablehlo.remainder\""), "{text}");
    assert!(text.contains("\"stablehlo.clamp\""), "{text}");
}

#[test]
fn what_cannot_be_exported_is_an_error_naming_the_operation() {
    let err = export(
        "program(%0_x: [2]f32) {
           %1: [2]f32 = build1 2 (\\%2_i: []i64 ->
             %3: []f32 = index %0_x [%2_i]
             in %3)
           in %1
         }",
    )
    .expect_err("build1 is not bulk IR");
    assert_eq!(err.operation, "build1");
    assert!(err
        .to_string()
        .starts_with("cannot export `build1` to StableHLO"));
    let err = export(
        "program(%0_x: [2]f32) {
           %1: [2]f32 = gather [2] %0_x (\\%2_i: []i64 ->
             %3: []f32 = sumOuter %0_x
             %4: []i64 = cast_i64 %3
             in %4)
           in %1
         }",
    )
    .expect_err("a reduction inside an index function");
    assert_eq!(err.operation, "sumOuter");
}

#[test]
fn constant_inputs_are_embedded_and_checked_against_their_type() {
    let program = parse_program(
        "program(%0_x: [2]i64, %1_y: []f32) {
           in %0_x, %1_y
         }",
    )
    .expect("parses");
    let table = Array::new(vec![2], ArrayData::I64(vec![7, -1]));
    let text = module(&program, &[Input::Constant(table), Input::Param]).expect("exports");
    assert!(text.contains("@main(%arg0: tensor<f32>)"), "{text}");
    assert!(text.contains("dense<[7, -1]> : tensor<2xi64>"), "{text}");
    let wrong = Array::new(vec![3], ArrayData::I64(vec![1, 2, 3]));
    let err = module(&program, &[Input::Constant(wrong), Input::Param]).expect_err("a mismatch");
    assert!(err.reason.contains("tensor<3xi64>"), "{err}");
    assert!(module(&program, &[Input::Param]).is_err());
}

#[test]
fn ill_formed_ir_is_an_error_not_a_panic() {
    let mut program = parse_program(
        "program(%0_x: [2]f32) {
           %1: [2]f32 = neg %0_x
           in %1
         }",
    )
    .expect("parses");
    // A result that no statement defines.
    let ghost = program.new_var(ArrTy::new(vec![3], Elem::F32), "ghost");
    let main = program.main;
    program.blocks[main].results = vec![crate::core::ir::Atom::Var(ghost)];
    let err = module(&program, &[Input::Param]).expect_err("ill-formed");
    assert!(err.reason.starts_with("the IR is ill-formed"), "{err}");
}

#[test]
fn the_exported_bulk_ir_comes_from_the_pipeline_before_fusion() {
    let names: Vec<&str> = bulk_passes().iter().map(|pass| pass.name).collect();
    assert_eq!(names, ["ad", "bot", "simp"]);
    assert!(pipeline::stages().any(|stage| stage == super::STAGE));
    let mut program = Program::new();
    let input = program.new_var(ArrTy::new(vec![3], Elem::F32), "x");
    program.inputs.push(input);
    let main = program.main;
    program.blocks[main].results = vec![crate::core::ir::Atom::Var(input)];
    let bulk = pipeline::run(&program, bulk_passes(), &[]).expect("compiles");
    let text = module(&bulk.program, &[Input::Param]).expect("exports");
    assert!(text.contains("\"func.return\"(%arg0)"), "{text}");
}

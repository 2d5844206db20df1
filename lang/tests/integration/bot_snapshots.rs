//! Snapshots of the `bot` stage on [Smeding25]'s examples (§5, Fig 18): the self-convolution
//! term t_sc, the dot product and the matrix product written with `build1`. Each is also run
//! before and after the transform to check that the values agree.

use dx_lang::core::parse::parse_program;
use dx_lang::ops::interp::{self, InterpConfig};
use dx_lang::ops::testgen::random_inputs;
use dx_lang::passes::bot;
use expect_test::{expect, Expect};

fn check_bot(src: &str, expected: Expect) {
    let program = parse_program(src).expect("the test program parses");
    let transformed = bot::run(&program);
    dx_lang::ops::verify::verify(&transformed).expect("the BOT output verifies");
    assert!(bot::is_normal_form(&transformed));
    expected.assert_eq(&transformed.to_string());
    let inputs = random_inputs(&program, 1);
    let config = InterpConfig::default();
    assert_eq!(
        interp::run(&program, &inputs, &config),
        interp::run(&transformed, &inputs, &config)
    );
}

#[test]
fn self_convolution() {
    // t_sc = sumOuter (build1 n (λi. index a [i] × index a [n-1-i])) with n = 4 (Fig 18).
    // The identity gather `gather [n] a (λ[i]. [i])` is simplified to `a`.
    check_bot(
        "program(%0_a: [4]f32) {
           %1: [4]f32 = build1 4 (\\%2_i: []i64 ->
             %3: []f32 = index %0_a [%2_i]
             %4: []i64 = sub 3:i64 %2_i
             %5: []f32 = index %0_a [%4]
             %6: []f32 = mul %3 %5
             in %6)
           %7: []f32 = sumOuter %1
           in %7
         }",
        expect![[r#"
            program(%0_a: [4]f32) {
              %12: [4]f32 = gather [4] %0_a (\%10_i: []i64 ->
                %11_sub: []i64 = sub 3:i64 %10_i
                in %11_sub)
              %13: [4]f32 = mul %0_a %12
              %7: []f32 = sumOuter %13
              in %7
            }"#]],
    );
}

#[test]
fn dot_product() {
    check_bot(
        "program(%0_x: [5]f64, %1_y: [5]f64) {
           %2: [5]f64 = build1 5 (\\%3_i: []i64 ->
             %4: []f64 = index %0_x [%3_i]
             %5: []f64 = index %1_y [%3_i]
             %6: []f64 = mul %4 %5
             in %6)
           %7: []f64 = sumOuter %2
           in %7
         }",
        expect![[r#"
            program(%0_x: [5]f64, %1_y: [5]f64) {
              %12: [5]f64 = mul %0_x %1_y
              %7: []f64 = sumOuter %12
              in %7
            }"#]],
    );
}

#[test]
fn matrix_product() {
    // for i j. sum for k. a[i, k] * b[k, j]
    check_bot(
        "program(%0_a: [2, 3]f32, %1_b: [3, 4]f32) {
           %2: [2, 4]f32 = build1 2 (\\%3_i: []i64 ->
             %4: [4]f32 = build1 4 (\\%5_j: []i64 ->
               %6: [3]f32 = build1 3 (\\%7_k: []i64 ->
                 %8: []f32 = index %0_a [%3_i, %7_k]
                 %9: []f32 = index %1_b [%7_k, %5_j]
                 %10: []f32 = mul %8 %9
                 in %10)
               %11: []f32 = sumOuter %6
               in %11)
             in %4)
           in %2
         }",
        expect![[r#"
            program(%0_a: [2, 3]f32, %1_b: [3, 4]f32) {
              %18: [4, 3]f32 = gather [4, 3] %1_b (\%17_i: []i64, %14_i: []i64 ->
                in %14_i, %17_i)
              %25_rep: [4, 2, 3]f32 = replicate 4 %0_a
              %26_rep: [2, 4, 3]f32 = tr [1, 0] %25_rep
              %27_rep: [2, 4, 3]f32 = replicate 2 %18
              %28: [2, 4, 3]f32 = mul %26_rep %27_rep
              %29_tr: [2, 3, 4]f32 = tr [0, 2, 1] %28
              %30_tr: [3, 2, 4]f32 = tr [1, 0] %29_tr
              %31: [2, 4]f32 = sumOuter %30_tr
              in %31
            }"#]],
    );
}

/// A program over `a: [4]f32` whose first statement, `%1`, builds `a` reversed; `rest` is its
/// statements from `%5` on and the program's end.
fn after_reversing_a(rest: &str) -> String {
    format!(
        "program(%0_a: [4]f32) {{
           %1: [4]f32 = build1 4 (\\%2_j: []i64 ->
             %3: []i64 = sub 3:i64 %2_j
             %4: []f32 = index %0_a [%3]
             in %4)
           {rest}"
    )
}

#[test]
fn gather_of_gather_composes() {
    // for i. (for j. a[3 - j])[i + 1]: the reversed table is never built; the composed index
    // function keeps the zero read of the inner gather at i = 3 (i + 1 is out of its range).
    check_bot(
        &after_reversing_a(
            "%5: [4]f32 = build1 4 (\\%6_i: []i64 ->
             %7: []i64 = add %6_i 1:i64
             %8: []f32 = index %1 [%7]
             in %8)
           in %5
         }",
        ),
        expect![[r#"
            program(%0_a: [4]f32) {
              %14: [4]f32 = gather [4] %0_a (\%15_i: []i64 ->
                %16_add: []i64 = add %15_i 1:i64
                %17_ge: []bool = ge %16_add 0:i64
                %18_lt: []bool = lt %16_add 4:i64
                %19_and: []bool = and %17_ge %18_lt
                %20_sub: []i64 = sub 3:i64 %16_add
                %21_select: []i64 = select %19_and %20_sub -1:i64
                in %21_select)
              in %14
            }"#]],
    );
}

#[test]
fn index_is_pushed_into_its_producer() {
    // (for i. x[i] * 2.0)[3] computes one element, and (sum over rows of m)[1] sums one
    // column: [Smeding25] Fig 10's rules for op, replicate and sumOuter.
    check_bot(
        "program(%0_x: [4]f32, %1_m: [3, 2]f32) {
           %2: [4]f32 = build1 4 (\\%3_i: []i64 ->
             %4: []f32 = index %0_x [%3_i]
             %5: []f32 = mul %4 2.0:f32
             in %5)
           %6: []f32 = index %2 [3:i64]
           %7: [2]f32 = sumOuter %1_m
           %8: []f32 = index %7 [1:i64]
           in %6, %8
         }",
        expect![[r#"
            program(%0_x: [4]f32, %1_m: [3, 2]f32) {
              %13_ix: []f32 = index %0_x [3:i64]
              %6: []f32 = mul %13_ix 2.0:f32
              %15_tr: [2, 3]f32 = tr [1, 0] %1_m
              %16_ix: [3]f32 = index %15_tr [1:i64]
              %8: []f32 = sumOuter %16_ix
              in %6, %8
            }"#]],
    );
}

#[test]
fn zero_parameter_gather_runs() {
    let program = parse_program(
        "program(%0_x: [4, 2]f32) {
           %1: [2]f32 = gather [2] %0_x (\\ ->
             in 3:i64)
           in %1
         }",
    )
    .expect("parses");
    dx_lang::ops::verify::verify(&program).expect("verifies");
    let inputs = random_inputs(&program, 1);
    let config = InterpConfig::default();
    let expected = interp::run(&program, &inputs, &config).unwrap();
    let bulk =
        dx_lang::exec::run(&program, &inputs, &dx_lang::exec::ExecConfig::default()).unwrap();
    assert_eq!(expected, bulk);
}

#[test]
fn index_of_a_gather_reads_the_source() {
    // fold over i of (reverse a)[i]: the reversed table is never built; each step reads
    // a[3 - i] (Fig 10's gather rules; i ranges over the loop's size).
    check_bot(
        &after_reversing_a(
            "%5: []f32 = fold 4 (0.0:f32) (\\%6_i: []i64, %7_c: []f32 ->
             %8: []f32 = index %1 [%6_i]
             %9: []f32 = mul %7_c 2.0:f32
             %10: []f32 = add %9 %8
             in %10)
           in %5
         }",
        ),
        expect![[r#"
            program(%0_a: [4]f32) {
              %5: []f32 = fold 4 (0.0:f32) (\%6_i: []i64, %7_c: []f32 ->
                %14_sub: []i64 = sub 3:i64 %6_i
                %8: []f32 = index %0_a [%14_sub]
                %9: []f32 = mul %7_c 2.0:f32
                %10: []f32 = add %9 %8
                in %10)
              in %5
            }"#]],
    );
}

#[test]
fn reduce_and_scan_inside_a_build() {
    // build1 k (λi. reduce (index m [i]) e op) ~> reduce (tr m) (replicate k e) op: the batch
    // axis becomes a trailing axis over which the closed operator applies elementwise; the
    // scan is transposed back (ops/monoid/mod.rs, `batch_monoid`).
    check_bot(
        "program(%0_m: [3, 4]f64) {
           %1: [3]f64, %2: [3, 4]f64 = build1 3 (\\%3_i: []i64 ->
             %4: [4]f64 = index %0_m [%3_i]
             %5: []f64 = reduce (%4) (0.0:f64) (\\%6_l: []f64, %7_r: []f64 ->
               %8: []f64 = add %6_l %7_r
               in %8)
             %9: [4]f64 = assoc_scan (%4) (1.0:f64) (\\%10_l: []f64, %11_r: []f64 ->
               %12: []f64 = mul %10_l %11_r
               in %12)
             in %5, %9)
           in %1, %2
         }",
        expect![[r#"
            program(%0_m: [3, 4]f64) {
              %15_tr: [4, 3]f64 = tr [1, 0] %0_m
              %16_rep: [3]f64 = replicate 3 0.0:f64
              %20: [3]f64 = reduce (%15_tr) (%16_rep) (\%17_l: []f64, %18_r: []f64 ->
                %19: []f64 = add %17_l %18_r
                in %19)
              %21_tr: [4, 3]f64 = tr [1, 0] %0_m
              %22_rep: [3]f64 = replicate 3 1.0:f64
              %26: [4, 3]f64 = assoc_scan (%21_tr) (%22_rep) (\%23_l: []f64, %24_r: []f64 ->
                %25: []f64 = mul %23_l %24_r
                in %25)
              %27_tr: [3, 4]f64 = tr [1, 0] %26
              in %20, %27_tr
            }"#]],
    );
}

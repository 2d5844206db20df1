//! The cost model of [HuotShaikhha] §5.2 (Fig. 11), adapted to the core IR: how much work running a
//! program takes, counted statement by statement. Tests use it to check the cheap-gradient
//! bound of [HuotShaikhha] Theorem 5.4 (cost of the gradient ≤ 4·3^p × cost of the primal, with p
//! the nesting depth of array operations, [`nesting_depth`]).
//!
//! Assumes: a verified program (every variable has its declared type). It may contain
//! `build1` (core programs) or not (bulk programs, after the BOT); both are costed.
//!
//! How it differs from Fig. 11:
//!
//! - Fig. 11 is a vector of four measures (MOVES, ADDS, MULTS, NLOPS). Here one number counts
//!   element operations: every primitive application to one element costs 1 whatever the
//!   primitive, and moving one element costs 1. Collapsing the vector to its sum keeps the
//!   theorem's bound meaningful, since the bound holds measure by measure.
//! - Fig. 11 charges a MOVE for reading a variable or a constant and for every `let`. In ANF
//!   every operand is a variable or a literal, so those moves are folded into the statements:
//!   an `Atom` statement (a copy, which a real backend does not perform) costs 0, and reading
//!   the program's inputs is free.
//! - `map2 (x,y.e₁)` over n elements costs n·(Cost(e₁)+2) in Fig. 11. Elementwise primitives
//!   over whole arrays (`Prim` after the BOT) cost one per result element. `build1`, `fold`
//!   and `scan` cost `size × (cost of the body + elements of the body's results)`, the
//!   per-iteration results standing for Fig. 11's per-element moves of map2/reduce/scanl.
//!   A `while`'s trip count is unknown before it runs: it is costed as
//!   `ops::while_loop::NOMINAL_TRIPS` (16) iterations, and a `while_reverse` as that many
//!   iterations of its body and of its backward step.
//! - `sumOuter` is `reduce (+)`: one per input element.
//! - `gather` and `scatter` (which Fig. 11 does not have) move one element per result
//!   (resp. source) element and evaluate their index function once per position of the
//!   leading axes: `elements + positions × cost(index function)`. Without trailing axes,
//!   which is the usual case, this is `elements × (1 + cost(index function))`. A scatter
//!   also fills its result with zeros first, one move per result element: a one-hot scatter
//!   (the transpose of `index`) costs the whole table it writes into, not one element,
//!   unless it is an increment (Note [Increments]).
//! - `index` costs the elements it reads (the result); `replicate`, `tr`, `reshape`, `table`
//!   and `iota` cost the elements of their result (data movement, like shift1L/shift1R).
//! - `cond` costs the larger of its branches (Fig. 11 has no conditional; its condition is
//!   an atom, already computed).
//!
//! The non-trivial costs (gather, scatter, sumOuter, loops, cond, monoids, derivatives) are
//! computed in their operations' homes in `ops` (`Operation::cost`, which `stmt_cost` runs).
//!
//! Does not handle yet: memory traffic beyond element counts (cache effects, fusion), and the
//! different latencies of primitives (Fig. 11's NLOPS versus ADDS).

use crate::core::ir::{BlockId, Program, Stmt};
use crate::core::visit::expr_blocks;
use crate::ops;

/// The cost of running `program` once: the cost of its main block.
pub fn cost(program: &Program) -> u64 {
    block_cost(program, program.main)
}

/// The nesting depth of array operations (NAO of [HuotShaikhha] §5.3, the `p` of Theorem 5.4):
/// the depth of nested blocks of `build1`, `fold`, `scan`, the monoid reductions and scans,
/// and `cond`. The index functions of `gather` and `scatter` do not add a level (they compute
/// indices, not array elements), but anything nested inside them still counts.
pub fn nesting_depth(program: &Program) -> usize {
    block_depth(program, program.main)
}

/// The cost of running a block once: the sum of its statements' costs, increments priced as
/// Note [Increments] (`ops::gather_scatter`) says.
pub(crate) fn block_cost(program: &Program, block: BlockId) -> u64 {
    let increments = ops::gather_scatter::increments(program, block);
    program.blocks[block]
        .stmts
        .iter()
        .map(
            |stmt| match stmt.binders.first().and_then(|var| increments.get(var)) {
                Some(&cost) => cost,
                None => stmt_cost(program, stmt),
            },
        )
        .sum()
}

fn stmt_cost(program: &Program, stmt: &Stmt) -> u64 {
    let result_elems: u64 = stmt
        .binders
        .iter()
        .map(|var| program.var_ty(*var).n_elems() as u64)
        .sum();
    ops::operation(&stmt.expr).cost(program, result_elems)
}

fn block_depth(program: &Program, block: BlockId) -> usize {
    program.blocks[block]
        .stmts
        .iter()
        .map(|stmt| {
            let level = usize::from(ops::operation(&stmt.expr).nests());
            let nested = expr_blocks(&stmt.expr)
                .into_iter()
                .map(|nested| block_depth(program, nested))
                .max();
            nested.map_or(0, |depth| level + depth)
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{cost, nesting_depth};
    use crate::core::parse::parse_program;

    fn measure(src: &str) -> (u64, usize) {
        let program = parse_program(src).expect("the test program parses");
        crate::ops::verify::verify(&program).expect("the test program verifies");
        (cost(&program), nesting_depth(&program))
    }

    #[test]
    fn elementwise_and_reductions() {
        // mul: 5 result elements; sumOuter: 5 input elements; the copy is free.
        let src = "program(%0_x: [5]f64, %1_y: [5]f64) {
             %2: [5]f64 = mul %0_x %1_y
             %3: []f64 = sumOuter %2
             %4: []f64 = %3
             in %4
           }";
        assert_eq!(measure(src), (10, 0));
    }

    #[test]
    fn sum_outer_of_a_matrix_counts_every_element() {
        let src = "program(%0_m: [4, 3]f32) {
             %1: [3]f32 = sumOuter %0_m
             %2: [3]f32 = neg %1
             in %2
           }";
        assert_eq!(measure(src), (12 + 3, 0));
    }

    #[test]
    fn data_movement_costs_the_result() {
        let src = "program(%0_x: [3]f32, %1_s: []f32) {
             %2: [4, 3]f32 = replicate 4 %0_x
             %3: [3, 4]f32 = tr [1, 0] %2
             %4: [12]f32 = reshape [12] %3
             %5: [2]f32 = table [%1_s, 1.0:f32]
             %6: [7]i64 = iota 7
             %7: []f32 = index %0_x [1:i64]
             in %4, %5, %6, %7
           }";
        assert_eq!(measure(src), (12 + 12 + 12 + 2 + 7 + 1, 0));
    }

    #[test]
    fn build1_costs_size_times_body_and_results() {
        // Body: index (1) + mul (1), result 1 element; 4 iterations.
        let src = "program(%0_xs: [4]f32) {
             %1: [4]f32 = build1 4 (\\%2_i: []i64 ->
               %3: []f32 = index %0_xs [%2_i]
               %4: []f32 = mul %3 1.5:f32
               in %4)
             in %1
           }";
        assert_eq!(measure(src), (4 * (2 + 1), 1));
    }

    #[test]
    fn nested_build1_multiplies() {
        // for i j. sum for k. a[i, k] * b[k, j]
        let src = "program(%0_a: [2, 3]f32, %1_b: [3, 4]f32) {
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
           }";
        let innermost = 3 * (3 + 1);
        let middle = 4 * (innermost + 3 + 1);
        let outer = 2 * (middle + 4);
        assert_eq!(measure(src), (outer, 3));
    }

    #[test]
    fn gather_and_scatter_charge_their_index_function() {
        // gather: 4 elements, index function `sub` (1) per position -> 4 * (1 + 1).
        // scatter: 4 zeros, then 4 source elements with the same index function
        // -> 4 + 4 * (1 + 1). The index functions do not count as a nesting level.
        let src = "program(%0_a: [4]f32) {
             %1: [4]f32 = gather [4] %0_a (\\%2_i: []i64 ->
               %3: []i64 = sub 3:i64 %2_i
               in %3)
             %4: [4]f32 = scatter [4] %1 (\\%5_i: []i64 ->
               %6: []i64 = sub 3:i64 %5_i
               in %6)
             in %4
           }";
        assert_eq!(measure(src), (8 + 4 + 8, 0));
    }

    #[test]
    fn gather_with_trailing_axes_runs_the_index_function_per_position() {
        // gather: 2 positions, each moving a row of 3: 6 elements + 2 * 1 for the index
        // function. scatter back: 12 zeros, then the same.
        let src = "program(%0_m: [4, 3]f32) {
             %1: [2, 3]f32 = gather [2, 3] %0_m (\\%2_i: []i64 ->
               %3: []i64 = add %2_i 1:i64
               in %3)
             %4: [4, 3]f32 = scatter [4, 3] %1 (\\%5_i: []i64 ->
               %6: []i64 = add %5_i 1:i64
               in %6)
             in %4
           }";
        assert_eq!(measure(src), (6 + 2 + 12 + 6 + 2, 0));
    }

    #[test]
    fn one_hot_scatter_costs_the_table_it_writes() {
        // The transpose of `index` writes one element into 1000 zeros: 1000 + 1.
        let src = "program(%0_x: []f64, %1_i: []i64) {
             %2: [1000]f64 = scatter [1000] %0_x (\\ ->
               in %1_i)
             in %2
           }";
        assert_eq!(measure(src), (1000 + 1, 0));
    }

    #[test]
    fn one_hot_scatters_added_into_a_table_cost_their_points() {
        // Note [Increments]: the transposes of `x[2] + x[0]` added together cost a point each
        // and the add its 1000 elements. One also read by `neg` (so not only added), and one
        // added to itself, cost their tables.
        let src = "program(%0_v: []f64) {
             %1: [1000]f64 = scatter [1000] %0_v (\\ ->
               in 2:i64)
             %2: [1000]f64 = scatter [1000] %0_v (\\ ->
               in 0:i64)
             %3: [1000]f64 = add %1 %2
             %4: [1000]f64 = scatter [1000] %0_v (\\ ->
               in 1:i64)
             %5: [1000]f64 = add %3 %4
             %6: [1000]f64 = neg %4
             %7: [1000]f64 = scatter [1000] %0_v (\\ ->
               in 3:i64)
             %8: [1000]f64 = add %7 %7
             in %5, %6, %8
           }";
        assert_eq!(
            measure(src),
            (1 + 1 + 1000 + 1001 + 1000 + 1000 + 1001 + 1000, 0)
        );
    }

    #[test]
    fn fold_and_scan_cost_their_iterations() {
        // fold: 3 iterations of (index + mul) + 1 carry element each.
        // scan: 3 iterations of (add) + 1 carry + 1 output element each.
        let src = "program(%0_xs: [3]f64) {
             %1: []f64 = fold 3 (1.0:f64) (\\%2_i: []i64, %3_c: []f64 ->
               %4: []f64 = index %0_xs [%2_i]
               %5: []f64 = mul %3_c %4
               in %5)
             %6: []f64, %7: [3]f64 = scan 3 (%1) (\\%8_i: []i64, %9_c: []f64 ->
               %10: []f64 = add %9_c 1.0:f64
               in %10, %9_c)
             in %6, %7
           }";
        assert_eq!(measure(src), (3 * (2 + 1) + 3 * (1 + 2), 1));
    }

    #[test]
    fn cond_costs_its_larger_branch() {
        let src = "program(%0_x: [3]f32, %1_p: []bool) {
             %2: [3]f32 = cond %1_p (\\ ->
               %3: [3]f32 = sin %0_x
               %4: [3]f32 = cos %3
               in %4) (\\ ->
               in %0_x)
             in %2
           }";
        assert_eq!(measure(src), (6, 1));
    }

    #[test]
    fn depth_counts_loops_inside_conds_and_index_functions() {
        // cond (1) around a fold (2); a fold inside a gather's index function adds only its
        // own level (1).
        let src = "program(%0_x: [3]f32, %1_p: []bool) {
             %2: []f32 = cond %1_p (\\ ->
               %3: []f32 = fold 2 (0.0:f32) (\\%4_i: []i64, %5_c: []f32 ->
                 %6: []f32 = add %5_c 1.0:f32
                 in %6)
               in %3) (\\ ->
               in 0.0:f32)
             %7: [2]f32 = gather [2] %0_x (\\%8_i: []i64 ->
               %9: []i64 = fold 2 (%8_i) (\\%10_k: []i64, %11_c: []i64 ->
                 %12: []i64 = add %11_c 1:i64
                 in %12)
               in %9)
             in %2, %7
           }";
        let (_, depth) = measure(src);
        assert_eq!(depth, 2);
    }

    #[test]
    fn empty_program_costs_nothing() {
        assert_eq!(measure("program(%0_x: [3]f32) {\n in %0_x\n}"), (0, 0));
    }
}

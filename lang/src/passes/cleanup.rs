//! Clean-up after a transformation: copy propagation (`x = y` statements disappear, uses of
//! `x` become `y`) and dead-code elimination (statements whose results are never used, the
//! stacked outputs of a `scan` that nothing reads, and the components of a monoid statement
//! that nothing reads and the others do not combine with: the forms' own `Operation::prune`).
//! Every operation of the core IR is pure, so an unused statement can always be dropped.

use std::collections::{HashMap, HashSet};

use crate::core::ir::{Atom, BlockId, Program, VarId};
use crate::core::visit::expr_atoms;
use crate::core::visit::{map_block_atoms, reachable_blocks, var_of};
use crate::ops;

pub fn run(program: &mut Program) {
    let main = program.main;
    run_from(program, main);
}

/// Cleans up the block `root` and the blocks nested in it (its results are what is live).
pub fn run_from(program: &mut Program, root: crate::core::ir::BlockId) {
    propagate_copies(program, root);
    eliminate_dead_code(program, root);
}

fn propagate_copies(program: &mut Program, root: crate::core::ir::BlockId) {
    let mut copies: HashMap<VarId, Atom> = HashMap::new();
    for block in reachable_blocks(program, root) {
        for stmt in &program.blocks[block].stmts {
            if let (Some(atom), [binder]) = (ops::copy_of(&stmt.expr), stmt.binders.as_slice()) {
                copies.insert(*binder, atom);
            }
        }
    }
    if copies.is_empty() {
        return;
    }
    let resolve = |mut atom: Atom| {
        while let Atom::Var(var) = atom {
            match copies.get(&var) {
                Some(next) => atom = *next,
                None => break,
            }
        }
        atom
    };
    map_block_atoms(program, root, &mut |atom| resolve(atom));
    for block in reachable_blocks(program, root) {
        program.blocks[block]
            .stmts
            .retain(|stmt| !(ops::copy_of(&stmt.expr).is_some() && stmt.binders.len() == 1));
    }
}

fn eliminate_dead_code(program: &mut Program, root: crate::core::ir::BlockId) {
    loop {
        let blocks = reachable_blocks(program, root);
        let mut used: HashSet<VarId> = HashSet::new();
        for block in &blocks {
            let block = &program.blocks[*block];
            for stmt in &block.stmts {
                used.extend(expr_atoms(&stmt.expr).into_iter().filter_map(var_of));
            }
            used.extend(block.results.iter().copied().filter_map(var_of));
        }
        let mut removed = false;
        for block in blocks {
            let before = program.blocks[block].stmts.len();
            program.blocks[block]
                .stmts
                .retain(|stmt| stmt.binders.iter().any(|binder| used.contains(binder)));
            removed |= program.blocks[block].stmts.len() != before;
            removed |= prune_results(program, block, &used);
        }
        if !removed {
            return;
        }
    }
}

/// Drops the results nothing reads of the statements of `block` whose form can drop some
/// (`Operation::prune`: a scan's stacked outputs, a monoid statement's components). Whether
/// anything changed.
fn prune_results(program: &mut Program, block: BlockId, used: &HashSet<VarId>) -> bool {
    let mut changed = false;
    for at in 0..program.blocks[block].stmts.len() {
        let stmt = &program.blocks[block].stmts[at];
        let live: Vec<bool> = (stmt.binders.iter())
            .map(|binder| used.contains(binder))
            .collect();
        if live.iter().all(|&live| live) {
            continue;
        }
        let expr = stmt.expr.clone();
        let Some((pruned, kept)) = ops::operation(&expr).prune(program, &live) else {
            continue;
        };
        let stmt = &mut program.blocks[block].stmts[at];
        stmt.expr = pruned;
        let mut kept = kept.into_iter();
        stmt.binders.retain(|_| kept.next().unwrap_or(true));
        changed = true;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::parse::parse_program;
    use crate::core::value::{Array, ArrayData};
    use crate::ops::interp::{self, InterpConfig};

    /// The primal scan of `grad (\xs. fold(0.0, \i c. c + xs[i] * 2.0))`-like code: it stacks
    /// its carry, which nothing reads.
    const SCAN_WITH_DEAD_OUTPUT: &str = "\
program(%0_x: [3]f32) {
  %1_fold: []f32, %2_carries: [3]f32, %3_ys: [3]f32 = scan 3 (0.0:f32) (\\%4_i: []i64, %5_c: []f32 ->
    %6_ix: []f32 = index %0_x [%4_i]
    %7_mul: []f32 = mul %6_ix 2.0:f32
    %8_add: []f32 = add %5_c %7_mul
    in %8_add, %5_c, %7_mul)
  %9_sum: []f32 = sumOuter %3_ys
  in %1_fold, %9_sum
}
";

    fn run(program: &Program) -> Vec<Array> {
        let input = Array::new(vec![3], ArrayData::F32(vec![1.0, -2.5, 4.0]));
        interp::run(program, &[input], &InterpConfig::default()).expect("the program runs")
    }

    #[test]
    fn unread_scan_outputs_are_dropped_and_a_scan_without_outputs_is_a_fold() {
        let mut program = parse_program(SCAN_WITH_DEAD_OUTPUT).expect("the program parses");
        let before = run(&program);
        super::run(&mut program);
        crate::ops::verify::verify(&program).expect("still well formed");
        let text = program.to_string();
        assert!(
            !text.contains("%2_carries") && text.contains("%3_ys"),
            "{text}"
        );
        assert_eq!(run(&program), before, "{text}");
        // Once the sum is not a result, nothing reads the stacked output either.
        let main = program.main;
        program.blocks[main].results.truncate(1);
        super::run(&mut program);
        crate::ops::verify::verify(&program).expect("still well formed");
        let text = program.to_string();
        assert!(
            text.contains("= fold 3") && !text.contains("scan"),
            "{text}"
        );
        assert_eq!(run(&program), before[..1], "{text}");
    }

    /// The right scan over triples of a cumulative product's gradient ([Paszke21] Thm 3.7):
    /// `(x, a, c) ⊗ (x', a', c') = (x, a a', a c' + c)`. Only `c` is read; it needs `a`, and
    /// nothing needs `x`.
    const TRIPLE_SCAN: &str = "\
program(%0_x: [3]f32) {
  %1_a: [3]f32 = neg %0_x
  %2_xs: [3]f32, %3_as: [3]f32, %4_cs: [3]f32 = assoc_scan_right (%0_x, %1_a, %0_x) (1.0:f32, 1.0:f32, 0.0:f32) (\\%5_xl: []f32, %6_al: []f32, %7_cl: []f32, %8_xr: []f32, %9_ar: []f32, %10_cr: []f32 ->
    %11_mul: []f32 = mul %6_al %9_ar
    %12_mul: []f32 = mul %6_al %10_cr
    %13_add: []f32 = add %12_mul %7_cl
    in %5_xl, %11_mul, %13_add)
  in %4_cs
}
";

    #[test]
    fn monoid_components_nothing_reads_or_combines_with_are_dropped() {
        let mut program = parse_program(TRIPLE_SCAN).expect("the program parses");
        let before = run(&program);
        super::run(&mut program);
        crate::ops::verify::verify(&program).expect("still well formed");
        let text = program.to_string();
        assert!(!text.contains("%2_xs") && !text.contains("%5_xl"), "{text}");
        assert!(text.contains("%3_as") && text.contains("%9_ar"), "{text}");
        assert_eq!(run(&program), before, "{text}");
        // Reading the first component keeps all three (it is the only one nothing needs).
        let mut program = parse_program(TRIPLE_SCAN).expect("the program parses");
        let main = program.main;
        let first = program.blocks[main].stmts[1].binders[0];
        program.blocks[main].results.push(Atom::Var(first));
        super::run(&mut program);
        assert!(program.to_string().contains("%2_xs"), "{program}");
    }
}

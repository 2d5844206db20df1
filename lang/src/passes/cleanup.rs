//! Clean-up after a transformation: copy propagation (`x = y` statements disappear, uses of
//! `x` become `y`) and dead-code elimination (statements whose results are never used, and
//! the stacked outputs of a `scan` that nothing reads). Every operation of the core IR is
//! pure, so an unused statement can always be dropped.

use std::collections::{HashMap, HashSet};

use crate::core::ir::{Atom, BlockId, Expr, Program, VarId};
use crate::core::visit::expr_atoms;
use crate::core::visit::{map_block_atoms, reachable_blocks, var_of};

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
            if let (Expr::Atom(atom), [binder]) = (&stmt.expr, stmt.binders.as_slice()) {
                copies.insert(*binder, *atom);
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
            .retain(|stmt| !(matches!(stmt.expr, Expr::Atom(_)) && stmt.binders.len() == 1));
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
            removed |= drop_dead_scan_outputs(program, block, &used);
        }
        if !removed {
            return;
        }
    }
}

/// Drops the stacked outputs of the `scan`s of `block` that nothing reads, with the body
/// results that made them; a scan left with no stacked output is a `fold`. (The primal scan of
/// a gradient through a loop stacks every carry for the backward loop, which often reads only
/// some of them, or none when the body is linear in its carry.) Whether anything changed.
fn drop_dead_scan_outputs(program: &mut Program, block: BlockId, used: &HashSet<VarId>) -> bool {
    let mut changed = false;
    for stmt_idx in 0..program.blocks[block].stmts.len() {
        let stmt = &program.blocks[block].stmts[stmt_idx];
        let Expr::Scan { size, init, body } = &stmt.expr else {
            continue;
        };
        let (size, body, n_carries) = (*size, *body, init.len());
        let dead: Vec<usize> = (n_carries..stmt.binders.len())
            .filter(|&position| !used.contains(&stmt.binders[position]))
            .collect();
        if dead.is_empty() {
            continue;
        }
        changed = true;
        for &position in dead.iter().rev() {
            program.blocks[block].stmts[stmt_idx]
                .binders
                .remove(position);
            program.blocks[body].results.remove(position);
        }
        let stmt = &mut program.blocks[block].stmts[stmt_idx];
        if stmt.binders.len() == n_carries {
            let Expr::Scan { init, .. } = &stmt.expr else {
                unreachable!("matched above")
            };
            stmt.expr = Expr::Fold {
                size,
                init: init.clone(),
                body,
            };
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::interp::{self, InterpConfig};
    use crate::core::parse::parse_program;
    use crate::core::value::{Array, ArrayData};

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
        crate::core::verify::verify(&program).expect("still well formed");
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
        crate::core::verify::verify(&program).expect("still well formed");
        let text = program.to_string();
        assert!(
            text.contains("= fold 3") && !text.contains("scan"),
            "{text}"
        );
        assert_eq!(run(&program), before[..1], "{text}");
    }
}

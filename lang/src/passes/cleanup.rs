//! Clean-up after a transformation: copy propagation (`x = y` statements disappear, uses of
//! `x` become `y`) and dead-code elimination (statements whose results are never used).
//! Every operation of the core IR is pure, so an unused statement can always be dropped.

use std::collections::{HashMap, HashSet};

use crate::core::ir::{Atom, Expr, Program, VarId};
use crate::core::verify::expr_atoms;
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
        }
        if !removed {
            return;
        }
    }
}

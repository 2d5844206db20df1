//! Generic traversals of the core IR: rewriting the atoms an expression uses, and walking
//! every block reachable from a block.

use super::ir::{Atom, BlockId, Expr, Program};
use super::verify::expr_blocks;

/// Applies `f` to every atom an expression uses directly (not those inside its blocks).
pub fn map_expr_atoms(expr: &mut Expr, f: &mut impl FnMut(Atom) -> Atom) {
    match expr {
        Expr::Atom(atom)
        | Expr::SumOuter(atom)
        | Expr::Gather { array: atom, .. }
        | Expr::Scatter { array: atom, .. }
        | Expr::Replicate { array: atom, .. }
        | Expr::Transpose { array: atom, .. }
        | Expr::Reshape { array: atom, .. }
        | Expr::Cond { cond: atom, .. } => *atom = f(*atom),
        Expr::Prim(_, atoms)
        | Expr::Table(atoms)
        | Expr::Fold { init: atoms, .. }
        | Expr::Scan { init: atoms, .. } => {
            for atom in atoms {
                *atom = f(*atom);
            }
        }
        Expr::Index { array, index } => {
            *array = f(*array);
            for atom in index {
                *atom = f(*atom);
            }
        }
        Expr::Build1 { .. } | Expr::Iota(_) => {}
    }
}

/// Applies `f` to every atom used in a block and in the blocks nested in it (statements and
/// results).
pub fn map_block_atoms(program: &mut Program, block: BlockId, f: &mut impl FnMut(Atom) -> Atom) {
    let mut stmts = std::mem::take(&mut program.blocks[block].stmts);
    for stmt in &mut stmts {
        map_expr_atoms(&mut stmt.expr, f);
        for nested in expr_blocks(&stmt.expr) {
            map_block_atoms(program, nested, f);
        }
    }
    program.blocks[block].stmts = stmts;
    for atom in &mut program.blocks[block].results {
        *atom = f(*atom);
    }
}

/// Every block reachable from `block` (itself included), in pre-order.
pub fn reachable_blocks(program: &Program, block: BlockId) -> Vec<BlockId> {
    let mut out = vec![block];
    let mut position = 0;
    while position < out.len() {
        let current = out[position];
        for stmt in &program.blocks[current].stmts {
            out.extend(expr_blocks(&stmt.expr));
        }
        position += 1;
    }
    out
}

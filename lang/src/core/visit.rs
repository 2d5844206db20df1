//! Generic traversals of the core IR: the atoms and blocks an expression uses (read or
//! rewritten), and walks over every block reachable from a block.
//!
//! These visitors are the only place outside the operations' rule homes (`ops`) that lists
//! the variants of `Expr` to find their operands: a pass that only needs "the atoms" or "the
//! blocks" of a statement uses them, so that a new variant is added here once.

use super::ir::{
    Atom, BlockId, Build1, Cond, CustomJvp, CustomLinear, CustomVjp, Derivative, Expr, Fold,
    Gather, Index, Monoid, PrimApp, Program, Replicate, Reshape, Scan, Scatter, SumOuter, Table,
    Transpose, While, WhileReverse,
};

/// The atoms an expression uses directly (not those inside its blocks), in order.
pub fn expr_atoms(expr: &Expr) -> Vec<Atom> {
    match expr {
        Expr::Atom(atom)
        | Expr::SumOuter(SumOuter(atom))
        | Expr::Gather(Gather { array: atom, .. })
        | Expr::Scatter(Scatter { array: atom, .. })
        | Expr::Replicate(Replicate { array: atom, .. })
        | Expr::Transpose(Transpose { array: atom, .. })
        | Expr::Reshape(Reshape { array: atom, .. })
        | Expr::Cond(Cond { cond: atom, .. }) => vec![*atom],
        Expr::Prim(PrimApp(_, atoms))
        | Expr::Table(Table(atoms))
        | Expr::Fold(Fold { init: atoms, .. })
        | Expr::Scan(Scan { init: atoms, .. })
        | Expr::While(While { init: atoms, .. }) => atoms.clone(),
        Expr::Derivative(Derivative { primals, seeds, .. })
        | Expr::WhileReverse(WhileReverse {
            init: primals,
            seeds,
            ..
        })
        | Expr::Monoid(Monoid {
            arrays: primals,
            init: seeds,
            ..
        }) => primals.iter().chain(seeds).copied().collect(),
        Expr::Index(Index { array, index }) => {
            std::iter::once(array).chain(index).copied().collect()
        }
        Expr::CustomVjp(CustomVjp { args, .. }) | Expr::CustomJvp(CustomJvp { args, .. }) => {
            args.clone()
        }
        Expr::CustomLinear(CustomLinear {
            residuals,
            operands,
            ..
        }) => residuals.iter().chain(operands).copied().collect(),
        Expr::Build1(_) | Expr::Iota(_) => Vec::new(),
    }
}

/// The blocks an expression owns, in order.
pub fn expr_blocks(expr: &Expr) -> Vec<BlockId> {
    match expr {
        Expr::Build1(Build1 { body, .. })
        | Expr::Gather(Gather { body, .. })
        | Expr::Scatter(Scatter { body, .. })
        | Expr::Fold(Fold { body, .. })
        | Expr::Scan(Scan { body, .. })
        | Expr::While(While { body, .. })
        | Expr::Monoid(Monoid { op: body, .. })
        | Expr::Derivative(Derivative { func: body, .. }) => vec![*body],
        Expr::WhileReverse(WhileReverse { body, back, .. }) => vec![*body, *back],
        Expr::CustomVjp(CustomVjp {
            primal, fwd, bwd, ..
        }) => vec![*primal, *fwd, *bwd],
        Expr::CustomJvp(CustomJvp { primal, lin, .. }) => vec![*primal, *lin],
        Expr::CustomLinear(CustomLinear { bwd, .. }) => vec![*bwd],
        Expr::Cond(Cond {
            then_block,
            else_block,
            ..
        }) => vec![*then_block, *else_block],
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Index(_)
        | Expr::SumOuter(_)
        | Expr::Table(_)
        | Expr::Replicate(_)
        | Expr::Transpose(_)
        | Expr::Reshape(_)
        | Expr::Iota(_) => Vec::new(),
    }
}

/// Applies `f` to every atom an expression uses directly (not those inside its blocks).
pub fn map_expr_atoms(expr: &mut Expr, f: &mut impl FnMut(Atom) -> Atom) {
    match expr {
        Expr::Atom(atom)
        | Expr::SumOuter(SumOuter(atom))
        | Expr::Gather(Gather { array: atom, .. })
        | Expr::Scatter(Scatter { array: atom, .. })
        | Expr::Replicate(Replicate { array: atom, .. })
        | Expr::Transpose(Transpose { array: atom, .. })
        | Expr::Reshape(Reshape { array: atom, .. })
        | Expr::Cond(Cond { cond: atom, .. }) => *atom = f(*atom),
        Expr::Prim(PrimApp(_, atoms))
        | Expr::Table(Table(atoms))
        | Expr::Fold(Fold { init: atoms, .. })
        | Expr::Scan(Scan { init: atoms, .. })
        | Expr::While(While { init: atoms, .. }) => {
            for atom in atoms {
                *atom = f(*atom);
            }
        }
        Expr::Index(Index { array, index }) => {
            *array = f(*array);
            for atom in index {
                *atom = f(*atom);
            }
        }
        Expr::Derivative(Derivative { primals, seeds, .. })
        | Expr::WhileReverse(WhileReverse {
            init: primals,
            seeds,
            ..
        })
        | Expr::Monoid(Monoid {
            arrays: primals,
            init: seeds,
            ..
        }) => {
            for atom in primals.iter_mut().chain(seeds) {
                *atom = f(*atom);
            }
        }
        Expr::CustomVjp(CustomVjp { args, .. }) | Expr::CustomJvp(CustomJvp { args, .. }) => {
            for atom in args {
                *atom = f(*atom);
            }
        }
        Expr::CustomLinear(CustomLinear {
            residuals,
            operands,
            ..
        }) => {
            for atom in residuals.iter_mut().chain(operands) {
                *atom = f(*atom);
            }
        }
        Expr::Build1(_) | Expr::Iota(_) => {}
    }
}

/// Applies `f` to every block an expression owns, in `expr_blocks` order.
pub fn map_expr_blocks(expr: &mut Expr, f: &mut impl FnMut(BlockId) -> BlockId) {
    match expr {
        Expr::Build1(Build1 { body, .. })
        | Expr::Gather(Gather { body, .. })
        | Expr::Scatter(Scatter { body, .. })
        | Expr::Fold(Fold { body, .. })
        | Expr::Scan(Scan { body, .. })
        | Expr::While(While { body, .. })
        | Expr::Monoid(Monoid { op: body, .. })
        | Expr::Derivative(Derivative { func: body, .. }) => *body = f(*body),
        Expr::WhileReverse(WhileReverse { body, back, .. }) => {
            *body = f(*body);
            *back = f(*back);
        }
        Expr::CustomVjp(CustomVjp {
            primal, fwd, bwd, ..
        }) => {
            *primal = f(*primal);
            *fwd = f(*fwd);
            *bwd = f(*bwd);
        }
        Expr::CustomJvp(CustomJvp { primal, lin, .. }) => {
            *primal = f(*primal);
            *lin = f(*lin);
        }
        Expr::CustomLinear(CustomLinear { bwd, .. }) => *bwd = f(*bwd),
        Expr::Cond(Cond {
            then_block,
            else_block,
            ..
        }) => {
            *then_block = f(*then_block);
            *else_block = f(*else_block);
        }
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Index(_)
        | Expr::SumOuter(_)
        | Expr::Table(_)
        | Expr::Replicate(_)
        | Expr::Transpose(_)
        | Expr::Reshape(_)
        | Expr::Iota(_) => {}
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

/// The variables a block and its nested blocks use (in statements and results).
pub fn collect_uses(program: &Program, block: BlockId, out: &mut Vec<super::ir::VarId>) {
    let block = &program.blocks[block];
    for stmt in &block.stmts {
        collect_expr_uses(program, &stmt.expr, out);
    }
    out.extend(block.results.iter().copied().filter_map(var_of));
}

/// The variables an expression uses: its atoms, and what its nested blocks use.
pub fn collect_expr_uses(program: &Program, expr: &Expr, out: &mut Vec<super::ir::VarId>) {
    out.extend(expr_atoms(expr).into_iter().filter_map(var_of));
    for nested in expr_blocks(expr) {
        collect_uses(program, nested, out);
    }
}

/// The variables a block and its nested blocks define (parameters and binders).
pub fn collect_defs(
    program: &Program,
    block: BlockId,
    out: &mut std::collections::HashSet<super::ir::VarId>,
) {
    let block = &program.blocks[block];
    out.extend(&block.params);
    for stmt in &block.stmts {
        out.extend(&stmt.binders);
        for nested in expr_blocks(&stmt.expr) {
            collect_defs(program, nested, out);
        }
    }
}

pub fn var_of(atom: Atom) -> Option<super::ir::VarId> {
    match atom {
        Atom::Var(var) => Some(var),
        Atom::Lit(_) => None,
    }
}

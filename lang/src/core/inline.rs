//! Copying statements with fresh variables: how a derivative program, or a pullback, is
//! placed at the point where it is used (possibly several times).

use std::collections::HashMap;

use super::ir::{Atom, Block, BlockId, Program, Stmt, VarId};
use super::visit::{map_expr_atoms, map_expr_blocks};

/// Copies `stmts` to the end of `target`. Every variable they define gets a fresh copy (as do
/// the parameters and variables of their nested blocks, which are cloned); uses of variables
/// are renamed through `subst`, which is extended with the new names. Variables that `subst`
/// does not mention are free and stay as they are.
pub fn copy_stmts(
    program: &mut Program,
    stmts: &[Stmt],
    target: BlockId,
    subst: &mut HashMap<VarId, Atom>,
) {
    for stmt in stmts {
        let copy = copy_stmt(program, stmt, subst);
        program.blocks[target].stmts.push(copy);
    }
}

/// A renamed copy of one statement (see `copy_stmts`).
pub fn copy_stmt(program: &mut Program, stmt: &Stmt, subst: &mut HashMap<VarId, Atom>) -> Stmt {
    let mut expr = stmt.expr.clone();
    map_expr_atoms(&mut expr, &mut |atom| rename(atom, subst));
    map_expr_blocks(&mut expr, &mut |block| clone_block(program, block, subst));
    let binders = stmt
        .binders
        .iter()
        .map(|binder| fresh(program, *binder, subst))
        .collect();
    Stmt { binders, expr }
}

/// A renamed copy of a block.
pub fn clone_block(
    program: &mut Program,
    block: BlockId,
    subst: &mut HashMap<VarId, Atom>,
) -> BlockId {
    let old: Block = program.blocks[block].clone();
    let params = old
        .params
        .iter()
        .map(|param| fresh(program, *param, subst))
        .collect();
    let stmts = old
        .stmts
        .iter()
        .map(|stmt| copy_stmt(program, stmt, subst))
        .collect();
    let results = old
        .results
        .iter()
        .map(|atom| rename(*atom, subst))
        .collect();
    program.blocks.push(Block {
        params,
        stmts,
        results,
    })
}

pub fn rename(atom: Atom, subst: &HashMap<VarId, Atom>) -> Atom {
    match atom {
        Atom::Var(var) => subst.get(&var).copied().unwrap_or(atom),
        Atom::Lit(_) => atom,
    }
}

fn fresh(program: &mut Program, var: VarId, subst: &mut HashMap<VarId, Atom>) -> VarId {
    let info = program.vars[var].clone();
    let new = program.vars.push(info);
    if let Some(span) = program.source_map.get(&var).copied() {
        program.source_map.insert(new, span);
    }
    subst.insert(var, Atom::Var(new));
    new
}

//! Gathers the BOT leaves behind, cleaned up after it (`passes::bot`): identity gathers
//! dropped, gathers of gathers composed into one.

use std::collections::HashMap;

use crate::core::ir::{
    ArrTy, Atom, BlockId, Elem, Expr, Gather, PrimApp, Program, Scalar, Stmt, VarId,
};
use crate::prim::Prim;

/// Drops identity gathers: `gather sh x (λ[i…]. [i…])` with `sh` the shape of `x` is `x`.
pub(crate) fn drop_identity_gathers(program: &mut Program, root: BlockId) {
    for block in crate::core::visit::reachable_blocks(program, root) {
        let mut stmts = std::mem::take(&mut program.blocks[block].stmts);
        for stmt in &mut stmts {
            if let Expr::Gather(Gather { shape, array, body }) = &stmt.expr {
                let lambda = &program.blocks[*body];
                let identity = lambda.stmts.is_empty()
                    && lambda.params.len() == lambda.results.len()
                    && lambda
                        .params
                        .iter()
                        .zip(&lambda.results)
                        .all(|(param, result)| *result == Atom::Var(*param))
                    && program.atom_ty(array).shape == *shape;
                if identity {
                    stmt.expr = Expr::from(*array);
                }
            }
        }
        program.blocks[block].stmts = stmts;
    }
}

/// Composes a gather of a gather: `gather sh2 (gather sh1 x g1) g2` reads
/// `x[g1(g2(j))]`, which needs no intermediate array. Where `g2` may leave the range of the
/// inner gather (which reads zero there), the composed index function keeps that: it sends
/// such positions out of the range of `x` (to -1), so the result is exactly the same.
pub(crate) fn compose_gathers(program: &mut Program, root: BlockId) {
    let mut gathers: HashMap<VarId, (Vec<usize>, Atom, BlockId)> = HashMap::new();
    for block in crate::core::visit::reachable_blocks(program, root) {
        for position in 0..program.blocks[block].stmts.len() {
            let stmt = program.blocks[block].stmts[position].clone();
            let Expr::Gather(Gather { shape, array, body }) = &stmt.expr else {
                continue;
            };
            let mut new_expr = None;
            if let Atom::Var(inner) = array {
                if let Some((inner_shape, source, inner_body)) = gathers.get(inner).cloned() {
                    let composable = program.blocks[inner_body].params.len()
                        == program.blocks[*body].results.len();
                    if composable {
                        let lambda =
                            composed_lambda(program, &inner_shape, inner_body, shape, *body);
                        new_expr = Some(Expr::from(Gather {
                            shape: shape.clone(),
                            array: source,
                            body: lambda,
                        }));
                    }
                }
            }
            if let Some(expr) = new_expr {
                program.blocks[block].stmts[position].expr = expr;
            }
            if let Expr::Gather(Gather { shape, array, body }) =
                &program.blocks[block].stmts[position].expr
            {
                gathers.insert(stmt.binders[0], (shape.clone(), *array, *body));
            }
        }
    }
}

/// `λj. let a = g2 j in if a in range of inner_shape then g1 a else -1`.
fn composed_lambda(
    program: &mut Program,
    inner_shape: &[usize],
    inner: BlockId,
    outer_shape: &[usize],
    outer: BlockId,
) -> BlockId {
    use crate::core::inline::{copy_stmts, rename};
    let outer_block = program.blocks[outer].clone();
    let inner_block = program.blocks[inner].clone();
    let lambda = program.new_block();
    let mut subst = HashMap::new();
    let params: Vec<VarId> = outer_block
        .params
        .iter()
        .map(|param| {
            let new = program.new_var(program.var_ty(*param).clone(), "i");
            subst.insert(*param, Atom::Var(new));
            new
        })
        .collect();
    program.blocks[lambda].params = params.clone();
    copy_stmts(program, &outer_block.stmts, lambda, &mut subst);
    let middle: Vec<Atom> = outer_block
        .results
        .iter()
        .map(|atom| rename(*atom, &subst))
        .collect();
    // Which components of the middle index may leave the inner gather's range.
    let mut in_range = Atom::Lit(Scalar::Bool(true));
    let index = ArrTy::scalar(Elem::I64);
    let boolean = ArrTy::scalar(Elem::Bool);
    let emit = |program: &mut Program, prim: Prim, args: Vec<Atom>, ty: &ArrTy| -> Atom {
        let var = program.new_var(ty.clone(), &prim.name());
        program.blocks[lambda].stmts.push(Stmt {
            binders: vec![var],
            expr: Expr::from(PrimApp(prim, args)),
        });
        Atom::Var(var)
    };
    for (axis, atom) in middle.iter().enumerate() {
        let surely_in_range = match atom {
            Atom::Lit(Scalar::I64(value)) => *value >= 0 && (*value as usize) < inner_shape[axis],
            Atom::Var(var) => {
                params.get(axis) == Some(var) && outer_shape[axis] <= inner_shape[axis]
            }
            Atom::Lit(_) => false,
        };
        if surely_in_range {
            continue;
        }
        let low = emit(
            program,
            Prim::Ge,
            vec![*atom, Atom::Lit(Scalar::I64(0))],
            &boolean,
        );
        let high = emit(
            program,
            Prim::Lt,
            vec![*atom, Atom::Lit(Scalar::I64(inner_shape[axis] as i64))],
            &boolean,
        );
        let both = emit(program, Prim::And, vec![low, high], &boolean);
        in_range = match in_range {
            Atom::Lit(Scalar::Bool(true)) => both,
            previous => emit(program, Prim::And, vec![previous, both], &boolean),
        };
    }
    let mut inner_subst: HashMap<VarId, Atom> =
        inner_block.params.iter().copied().zip(middle).collect();
    copy_stmts(program, &inner_block.stmts, lambda, &mut inner_subst);
    let mut results: Vec<Atom> = inner_block
        .results
        .iter()
        .map(|atom| rename(*atom, &inner_subst))
        .collect();
    if in_range != Atom::Lit(Scalar::Bool(true)) {
        results = results
            .into_iter()
            .map(|atom| {
                emit(
                    program,
                    Prim::Select,
                    vec![in_range, atom, Atom::Lit(Scalar::I64(-1))],
                    &index,
                )
            })
            .collect();
    }
    program.blocks[lambda].results = results;
    lambda
}

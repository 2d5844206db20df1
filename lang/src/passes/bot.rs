//! The bulk-operation transform (BOT, [Smeding25] §5, Figs 9–11), read on ANF as batching.
//!
//! Input: verified core IR. Output: verified core IR with no `build1` anywhere (Theorem 5.1
//! (1)); `index` survives only on variables (trivially so in ANF, Theorem 5.1 (2)) and inside
//! the index functions of `gather`/`scatter`.
//!
//! `build1 k (λi. body)` is vectorised statement by statement, as JAX's vmap does (docs/architecture.md
//! "BOT as batching"). Every variable of the body gets a *status*:
//! - `Unbatched(atom)`: it does not depend on `i`; its statement is hoisted out of the build
//!   unchanged (Fig 9: `build1 k (λi. t) ~> replicate k t` for `i ∉ FV(t)`, applied lazily —
//!   the replicate is only made where a bulk operation needs it).
//! - `Batched(v)`: `v` is the bulk array, with a new leading axis of size `k`.
//! - `Index(e)`: an integer scalar computed from `i` by index arithmetic, kept symbolic so
//!   that it can become part of a gather's index function (Fig 11: `build1 k (λi. index x ix)
//!   ~> gather (k:::sh) x (λ[i]. ix)`), and only materialised when data needs it.
//!
//! Each statement form has one rule, citing the Fig 9/11 rule it reads, in its operation's
//! home in `ops`; the batching context and the dispatch to the rules (`Batcher::batch_stmt`,
//! and `batch_prim` for the elementwise primitives) are `ops::batch`. This pass decides where
//! they run: builds are transformed innermost first, so a body never contains a `build1` when
//! it is batched; afterwards indices are pushed into gathers and gathers composed.
//! Conditionals with a batched condition become strict selects (§5.2, `ops::cond`).
//! `fold`/`scan` inside a build run once over batched state (the carries that depend on `i`
//! get the batch axis, `ops::loops`); so does a `while`, with a mask of the lanes still
//! running when its condition depends on `i` (`ops::while_loop`).

use std::collections::HashMap;

use super::cleanup;
use super::pipeline::{no_stages, Compilation, Pass};
use crate::core::ir::{
    ArrTy, Atom, BlockId, Build1, Elem, Expr, Gather, Index, PrimApp, Program, Scalar, Stmt, VarId,
};
use crate::core::visit::expr_blocks;
use crate::ops::batch::Batcher;
use crate::prim::Prim;

pub const PASS: Pass<Compilation> = Pass {
    name: "bot",
    description: "the bulk-operation transform: build1 becomes bulk operations ([Smeding25] §5)",
    run: |compilation, _, _| {
        run_in_place(&mut compilation.program);
        Ok(())
    },
    postcondition: Some(|compilation| normal_form(&compilation.program)),
    nested: no_stages,
    overview: true,
};

/// Runs the BOT on a whole program.
pub fn run(program: &Program) -> Program {
    let mut program = program.clone();
    run_in_place(&mut program);
    program
}

fn run_in_place(program: &mut Program) {
    let main = program.main;
    run_block(program, main);
}

/// Whether a program is in BOT normal form: no `build1` in any reachable block.
pub fn is_normal_form(program: &Program) -> bool {
    normal_form(program).is_ok()
}

/// The BOT's guarantee ([Smeding25] Theorem 5.1): no `build1` in any reachable block.
fn normal_form(program: &Program) -> Result<(), String> {
    let left = crate::core::visit::reachable_blocks(program, program.main)
        .into_iter()
        .any(|block| {
            program.blocks[block]
                .stmts
                .iter()
                .any(|stmt| matches!(stmt.expr, Expr::Build1(_)))
        });
    if left {
        Err("a build1 is left".into())
    } else {
        Ok(())
    }
}

/// Runs the BOT on one block (and the blocks nested in it), e.g. a function being
/// differentiated; the block may use variables defined outside it.
pub fn run_block(program: &mut Program, block: BlockId) {
    bot_block(program, block);
    cleanup::run_from(program, block);
    // Pushing an index may create index statements that can be pushed further (bounded).
    for _ in 0..3 {
        push_index(program, block, &mut HashMap::new(), &mut HashMap::new());
    }
    cleanup::run_from(program, block);
    compose_gathers(program, block);
    simplify_gathers(program, block);
    cleanup::run_from(program, block);
}

/// Transforms the builds of a block (and of every block nested in it), innermost first.
fn bot_block(program: &mut Program, block: BlockId) {
    let stmts = std::mem::take(&mut program.blocks[block].stmts);
    for stmt in stmts {
        for nested in expr_blocks(&stmt.expr) {
            bot_block(program, nested);
        }
        match stmt.expr {
            Expr::Build1(Build1 { size, body }) => {
                Batcher::new(program, size, block).batch_build(body, &stmt.binders);
            }
            expr => program.blocks[block].stmts.push(Stmt {
                binders: stmt.binders,
                expr,
            }),
        }
    }
}

/// Drops identity gathers: `gather sh x (λ[i…]. [i…])` with `sh` the shape of `x` is `x`.
fn simplify_gathers(program: &mut Program, root: BlockId) {
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
fn compose_gathers(program: &mut Program, root: BlockId) {
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

/// Fig 10 on ANF (see Note [Pushing index down] in `ops::build`). `ranges` maps variables known to lie in
/// `0..bound` to the bound; `defs` maps variables to their defining expressions.
fn push_index(
    program: &mut Program,
    block: BlockId,
    ranges: &mut HashMap<VarId, usize>,
    defs: &mut HashMap<VarId, Expr>,
) {
    let stmts = std::mem::take(&mut program.blocks[block].stmts);
    let mut out = Vec::new();
    for mut stmt in stmts {
        for nested in expr_blocks(&stmt.expr) {
            let bounds = crate::ops::index_param_bounds(program, &stmt.expr);
            let params = program.blocks[nested].params.clone();
            for (param, bound) in params.iter().zip(bounds) {
                ranges.insert(*param, bound);
            }
            push_index(program, nested, ranges, defs);
        }
        // Rewrite this statement while a rule applies (each rule reads a smaller producer).
        for _ in 0..8 {
            let Some(rewritten) = push_index_once(program, &stmt, ranges, defs, &mut out) else {
                break;
            };
            stmt.expr = rewritten;
        }
        if let [binder] = stmt.binders[..] {
            defs.insert(binder, stmt.expr.clone());
        }
        out.push(stmt);
    }
    program.blocks[block].stmts = out;
}

/// One Fig 10 step for `index y ix`: a new expression for the statement, with any statements
/// it needs appended to `out` first. The rule is the home's of the operation that defines `y`
/// (`ops::push_index`).
fn push_index_once(
    program: &mut Program,
    stmt: &Stmt,
    ranges: &HashMap<VarId, usize>,
    defs: &HashMap<VarId, Expr>,
    out: &mut Vec<Stmt>,
) -> Option<Expr> {
    let Expr::Index(Index { array, index }) = &stmt.expr else {
        return None;
    };
    // index t [] ~> t
    if index.is_empty() {
        return Some(Expr::from(*array));
    }
    let Atom::Var(source) = array else {
        return None;
    };
    let def = defs.get(source)?;
    let mut cx = crate::ops::build::IndexPush {
        program,
        ranges,
        out,
    };
    crate::ops::push_index(&mut cx, *source, index, def)
}

//! Automatic differentiation of bulk IR: forward derivatives (dual arrays, seed 001 §6) and
//! their symbolic transposition (seed 001 §7), on ANF.
//!
//! `jvp` turns a build-free block into one that computes, next to every float variable, its
//! tangent (the D[·] transformation of Figs 14–15: each statement is followed by the linear
//! statements of its derivative, the Delta constructors written as ordinary bulk operations).
//! Tangent variables are *linear*; every other variable is primal. As DESIGN.md notes, the
//! Delta term's `Share` ids are exactly ANF variables, and the separation of the primal
//! computation from the Delta term (§7.6, Eq. 6) is simply the partition of the statements
//! into primal and linear ones.
//!
//! `vjp` transposes the linear statements (Fig 19's reverse pass `eval`, one constructor at a
//! time): it walks them in reverse, accumulating one cotangent per linear variable (the
//! `accum` map of Figs 17/19), and emits the transposed operations. The forward statements are
//! kept as they are, so every primal intermediate is computed once and shared with the
//! backward pass (§7.6); share→let (Fig 20) is the identity on ANF.
//!
//! Conditionals are if-converted (both branches run, results are selected), which the total
//! semantics allows. Loops carry their tangents forward; in reverse, a loop's primal part
//! runs as a scan that keeps every iteration's carry and the backward loop recomputes each
//! iteration from it (`transpose_loop`). Reads of outer tables in a loop body are transposed
//! after the backward loop, in bulk, so that reverse mode through n steps costs O(n) (Note
//! [Reads of outer tables in a reversed loop]).
//!
//! Does not handle yet: a read of an outer table inside a loop nested in the body is hoisted
//! out of its own loop only, so its cotangent is a whole-table addition per step of the
//! enclosing loop; a gather whose index function needs a non-scalar value of the carry stays
//! inside the backward loop (a whole-table scatter per step).

use std::collections::{HashMap, HashSet};

use crate::core::inline::clone_block;
use crate::core::ir::{ArrTy, Atom, Block, BlockId, Expr, Program, Scalar, Stmt, VarId};
use crate::prim::{Emitter, NotLinear, Prim, Tangent};

/// Why a block could not be differentiated: its input broke the pass's assumptions (the
/// checker refuses what is not differentiable, and the tangent statements of `jvp` are
/// linear by construction, so every failure is a bug).
#[derive(Clone, Debug, PartialEq)]
pub struct AdError(pub String);

impl From<NotLinear> for AdError {
    fn from(err: NotLinear) -> AdError {
        AdError(err.0)
    }
}

/// The forward derivative of a block.
#[derive(Clone, Debug)]
pub struct Jvp {
    /// The block's parameters (unchanged).
    pub params: Vec<VarId>,
    /// For each parameter, its tangent parameter (float parameters only).
    pub tangent_params: Vec<Option<VarId>>,
    /// Primal and linear statements, in order.
    pub stmts: Vec<Stmt>,
    pub results: Vec<Atom>,
    /// The tangent of each result (`None`: zero, or not a float).
    pub tangent_results: Vec<Tangent>,
    /// The linear (tangent) variables.
    pub linear: HashSet<VarId>,
}

/// The reverse derivative of a block: the forward statements, then the backward statements
/// that map the cotangents of the results to the cotangents of the parameters.
#[derive(Clone, Debug)]
pub struct Vjp {
    pub params: Vec<VarId>,
    pub forward: Vec<Stmt>,
    pub results: Vec<Atom>,
    /// One cotangent parameter per result (results without a tangent ignore theirs).
    pub ct_params: Vec<VarId>,
    pub backward: Vec<Stmt>,
    /// The cotangent of each parameter (`None`: zero).
    pub grads: Vec<Tangent>,
}

/// Emits statements into a list, tracking which variables are linear.
pub(crate) struct Builder<'p> {
    pub(crate) program: &'p mut Program,
    pub(crate) stmts: Vec<Stmt>,
    pub(crate) linear: HashSet<VarId>,
}

impl Builder<'_> {
    pub(crate) fn is_linear(&self, atom: &Atom) -> bool {
        matches!(atom, Atom::Var(var) if self.linear.contains(var))
    }

    /// Emits a statement; its binders are linear when any operand is.
    pub(crate) fn emit(&mut self, expr: Expr, tys: Vec<ArrTy>, hint: &str) -> Vec<VarId> {
        let linear = crate::core::verify::expr_atoms(&expr)
            .iter()
            .any(|atom| self.is_linear(atom));
        let binders: Vec<VarId> = tys
            .into_iter()
            .map(|ty| self.program.new_var(ty, hint))
            .collect();
        if linear {
            self.linear.extend(&binders);
        }
        self.stmts.push(Stmt {
            binders: binders.clone(),
            expr,
        });
        binders
    }

    pub(crate) fn emit1(&mut self, expr: Expr, ty: ArrTy, hint: &str) -> Atom {
        Atom::Var(self.emit(expr, vec![ty], hint)[0])
    }

    pub(crate) fn ty(&self, atom: &Atom) -> ArrTy {
        self.program.atom_ty(atom)
    }

    /// A zero array of a type.
    pub(crate) fn zeros(&mut self, ty: &ArrTy) -> Atom {
        let mut res = Atom::Lit(Scalar::zero(ty.elem));
        for axis in (0..ty.shape.len()).rev() {
            let shape = ty.shape[axis..].to_vec();
            res = self.emit1(
                Expr::Replicate {
                    count: ty.shape[axis],
                    array: res,
                },
                ArrTy::new(shape, ty.elem),
                "zero",
            );
        }
        res
    }

    pub(crate) fn add_to(
        &mut self,
        cts: &mut HashMap<VarId, Atom>,
        target: Atom,
        contribution: Atom,
    ) {
        let Atom::Var(var) = target else { return };
        let sum = match cts.get(&var) {
            Some(existing) => self.prim(Prim::Add, &[*existing, contribution]),
            None => contribution,
        };
        cts.insert(var, sum);
    }
}

impl Emitter for Builder<'_> {
    fn prim(&mut self, prim: Prim, args: &[Atom]) -> Atom {
        let shape = args
            .iter()
            .map(|atom| self.ty(atom).shape)
            .max_by_key(|shape| shape.len())
            .unwrap_or_default();
        let args: Vec<Atom> = args
            .iter()
            .map(|atom| match atom {
                Atom::Lit(scalar) if !shape.is_empty() => self.constant_of(*scalar, &shape),
                _ => *atom,
            })
            .collect();
        let elems: Vec<_> = args.iter().map(|atom| self.ty(atom).elem).collect();
        let elem = prim
            .result_elem(&elems)
            .expect("derivative rules emit well-typed primitives");
        self.emit1(
            Expr::Prim(prim, args),
            ArrTy::new(shape, elem),
            &prim.name(),
        )
    }

    fn constant(&mut self, value: f64, like: Atom) -> Atom {
        let ty = self.ty(&like);
        let scalar = match ty.elem {
            crate::core::ir::Elem::F64 => Scalar::F64(value),
            crate::core::ir::Elem::F32 => Scalar::F32(value as f32),
            elem => crate::prim::cast_scalar(Scalar::F64(value), elem),
        };
        self.constant_of(scalar, &ty.shape)
    }

    fn elem(&self, atom: Atom) -> crate::core::ir::Elem {
        self.ty(&atom).elem
    }
}

impl Builder<'_> {
    pub(crate) fn constant_of(&mut self, scalar: Scalar, shape: &[usize]) -> Atom {
        let mut res = Atom::Lit(scalar);
        for axis in (0..shape.len()).rev() {
            res = self.emit1(
                Expr::Replicate {
                    count: shape[axis],
                    array: res,
                },
                ArrTy::new(shape[axis..].to_vec(), scalar.elem()),
                "const",
            );
        }
        res
    }
}

/// The forward derivative of a build-free block with respect to its float parameters.
pub fn jvp(program: &mut Program, block: BlockId) -> Result<Jvp, AdError> {
    let source: Block = program.blocks[block].clone();
    let mut builder = Builder {
        program,
        stmts: Vec::new(),
        linear: HashSet::new(),
    };
    let mut tangents: HashMap<VarId, Atom> = HashMap::new();
    let mut tangent_params = Vec::new();
    for param in &source.params {
        let ty = builder.program.var_ty(*param).clone();
        if ty.elem.is_float() {
            let hint = format!("{}_dot", builder.program.vars[*param].hint);
            let tangent = builder.program.new_var(ty, &hint);
            builder.linear.insert(tangent);
            tangents.insert(*param, Atom::Var(tangent));
            tangent_params.push(Some(tangent));
        } else {
            tangent_params.push(None);
        }
    }
    jvp_stmts(&mut builder, &source.stmts, &mut tangents)?;
    let tangent_results = source
        .results
        .iter()
        .map(|atom| tangent_of(&tangents, atom))
        .collect();
    Ok(Jvp {
        params: source.params,
        tangent_params,
        stmts: builder.stmts,
        results: source.results,
        tangent_results,
        linear: builder.linear,
    })
}

pub(crate) fn tangent_of(tangents: &HashMap<VarId, Atom>, atom: &Atom) -> Tangent {
    match atom {
        Atom::Var(var) => tangents.get(var).copied(),
        Atom::Lit(_) => None,
    }
}

/// D[·] of seed 001 Figs 14–15, statement by statement.
fn jvp_stmts(
    builder: &mut Builder,
    stmts: &[Stmt],
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    for stmt in stmts {
        jvp_stmt(builder, stmt, tangents)?;
    }
    Ok(())
}

fn jvp_stmt(
    builder: &mut Builder,
    stmt: &Stmt,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    // The primal statement is kept as it is (Fig 13's D' on everything non-differentiable).
    match &stmt.expr {
        Expr::Cond {
            cond,
            then_block,
            else_block,
        } => return jvp_cond(builder, stmt, *cond, *then_block, *else_block, tangents),
        Expr::Fold { .. } | Expr::Scan { .. } => return jvp_loop(builder, stmt, tangents),
        Expr::Monoid { .. } => return builder.jvp_monoid(stmt, tangents),
        Expr::Build1 { .. } | Expr::Derivative { .. } => {
            return Err(AdError(
                "differentiation expects build-free (BOT) input without derivatives".into(),
            ))
        }
        _ => builder.stmts.push(stmt.clone()),
    }
    let binder = stmt.binders[0];
    let ty = builder.program.var_ty(binder).clone();
    if !ty.elem.is_float() {
        return Ok(());
    }
    let hint = format!("{}_dot", builder.program.vars[binder].hint);
    let t = |atom: &Atom| tangent_of(tangents, atom);
    let tangent: Tangent = match &stmt.expr {
        Expr::Atom(atom) => t(atom),
        Expr::Prim(prim, args) => {
            let arg_tangents: Vec<Tangent> = args.iter().map(t).collect();
            prim.jvp(builder, args, Atom::Var(binder), &arg_tangents)
        }
        // The linear operations are their own derivatives (§6.1): the same operation on the
        // tangent (Delta constructors Index, Gather, Scatter, SumOuter, Replicate, Tr, Reshape).
        Expr::Index { array, index } => t(array).map(|dx| {
            builder.emit1(
                Expr::Index {
                    array: dx,
                    index: index.clone(),
                },
                ty.clone(),
                &hint,
            )
        }),
        Expr::Gather { shape, array, body } => t(array).map(|dx| {
            let body = clone_block(builder.program, *body, &mut HashMap::new());
            builder.emit1(
                Expr::Gather {
                    shape: shape.clone(),
                    array: dx,
                    body,
                },
                ty.clone(),
                &hint,
            )
        }),
        Expr::Scatter { shape, array, body } => t(array).map(|dx| {
            let body = clone_block(builder.program, *body, &mut HashMap::new());
            builder.emit1(
                Expr::Scatter {
                    shape: shape.clone(),
                    array: dx,
                    body,
                },
                ty.clone(),
                &hint,
            )
        }),
        Expr::SumOuter(array) => {
            t(array).map(|dx| builder.emit1(Expr::SumOuter(dx), ty.clone(), &hint))
        }
        Expr::Replicate { count, array } => t(array).map(|dx| {
            builder.emit1(
                Expr::Replicate {
                    count: *count,
                    array: dx,
                },
                ty.clone(),
                &hint,
            )
        }),
        Expr::Transpose { perm, array } => t(array).map(|dx| {
            builder.emit1(
                Expr::Transpose {
                    perm: perm.clone(),
                    array: dx,
                },
                ty.clone(),
                &hint,
            )
        }),
        Expr::Reshape { shape, array } => t(array).map(|dx| {
            builder.emit1(
                Expr::Reshape {
                    shape: shape.clone(),
                    array: dx,
                },
                ty.clone(),
                &hint,
            )
        }),
        Expr::Table(items) => {
            if items.iter().all(|item| t(item).is_none()) {
                None
            } else {
                let item_tangents: Vec<Atom> = items
                    .iter()
                    .map(|item| t(item).unwrap_or_else(|| builder.zeros(&builder.ty(item))))
                    .collect();
                Some(builder.emit1(Expr::Table(item_tangents), ty.clone(), &hint))
            }
        }
        Expr::Iota(_) => None,
        Expr::Cond { .. }
        | Expr::Fold { .. }
        | Expr::Scan { .. }
        | Expr::Monoid { .. }
        | Expr::Build1 { .. }
        | Expr::Derivative { .. } => {
            unreachable!("handled above")
        }
    };
    if let Some(tangent) = tangent {
        tangents.insert(binder, tangent);
    }
    Ok(())
}

/// `cond` is if-converted: both branches run (every operation is total) and their results
/// and tangents are selected (the strict conditional of seed 001 §5.2).
fn jvp_cond(
    builder: &mut Builder,
    stmt: &Stmt,
    cond: Atom,
    then_block: BlockId,
    else_block: BlockId,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let mut branch_results = Vec::new();
    for block in [then_block, else_block] {
        let copy = clone_block(builder.program, block, &mut HashMap::new());
        let copied: Block = builder.program.blocks[copy].clone();
        jvp_stmts(builder, &copied.stmts, tangents)?;
        branch_results.push(copied.results);
    }
    for (position, binder) in stmt.binders.iter().enumerate() {
        let (a, b) = (branch_results[0][position], branch_results[1][position]);
        let ty = builder.program.var_ty(*binder).clone();
        let mask = builder.constant_mask(cond, &ty.shape);
        builder.stmts.push(Stmt {
            binders: vec![*binder],
            expr: Expr::Prim(Prim::Select, vec![mask, a, b]),
        });
        if ty.elem.is_float() {
            let (da, db) = (tangent_of(tangents, &a), tangent_of(tangents, &b));
            if da.is_some() || db.is_some() {
                let da = da.unwrap_or_else(|| builder.zeros(&ty));
                let db = db.unwrap_or_else(|| builder.zeros(&ty));
                let tangent = builder.prim(Prim::Select, &[mask, da, db]);
                tangents.insert(*binder, tangent);
            }
        }
    }
    Ok(())
}

impl Builder<'_> {
    /// A scalar condition broadcast to a shape.
    fn constant_mask(&mut self, cond: Atom, shape: &[usize]) -> Atom {
        let mut res = cond;
        for axis in (0..shape.len()).rev() {
            res = self.emit1(
                Expr::Replicate {
                    count: shape[axis],
                    array: res,
                },
                ArrTy::new(shape[axis..].to_vec(), crate::core::ir::Elem::Bool),
                "mask",
            );
        }
        res
    }
}

/// `fold`/`scan`: the loop carries the tangents of its float carries along (forward mode).
fn jvp_loop(
    builder: &mut Builder,
    stmt: &Stmt,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let (size, init, body, is_scan) = match &stmt.expr {
        Expr::Fold { size, init, body } => (*size, init.clone(), *body, false),
        Expr::Scan { size, init, body } => (*size, init.clone(), *body, true),
        _ => unreachable!("only loops reach jvp_loop"),
    };
    // A loop that computes no float (an ordering code, a count) has no tangent: it stays a
    // primal statement, and its body is not differentiated (its reads of differentiated
    // tables would otherwise become linear statements inside a primal loop).
    let has_float_output = stmt
        .binders
        .iter()
        .any(|binder| builder.program.var_ty(*binder).elem.is_float());
    if !has_float_output {
        builder.stmts.push(stmt.clone());
        return Ok(());
    }
    let source: Block = builder.program.blocks[body].clone();
    let n_carries = init.len();
    let float_carries: Vec<usize> = (0..n_carries)
        .filter(|position| builder.ty(&init[*position]).elem.is_float())
        .collect();
    // New body: params [i, carries…, carry tangents…].
    let mut inner = Builder {
        program: &mut *builder.program,
        stmts: Vec::new(),
        linear: builder.linear.clone(),
    };
    let mut inner_tangents = tangents.clone();
    let mut params = source.params.clone();
    for position in &float_carries {
        let param = source.params[1 + position];
        let ty = inner.program.var_ty(param).clone();
        let tangent = inner.program.new_var(ty, "c_dot");
        inner.linear.insert(tangent);
        inner_tangents.insert(param, Atom::Var(tangent));
        params.push(tangent);
    }
    jvp_stmts(&mut inner, &source.stmts, &mut inner_tangents)?;
    let mut results = source.results.clone();
    let ys: Vec<Atom> = results.split_off(n_carries);
    for position in &float_carries {
        let carry = source.results[*position];
        let tangent =
            tangent_of(&inner_tangents, &carry).unwrap_or_else(|| inner.zeros(&inner.ty(&carry)));
        results.push(tangent);
    }
    let float_ys: Vec<usize> = (0..ys.len())
        .filter(|position| inner.ty(&ys[*position]).elem.is_float())
        .collect();
    let mut y_tangents = Vec::new();
    for position in &float_ys {
        let y = ys[*position];
        y_tangents
            .push(tangent_of(&inner_tangents, &y).unwrap_or_else(|| inner.zeros(&inner.ty(&y))));
    }
    results.extend(ys);
    results.extend(y_tangents);
    let linear = inner.linear;
    let stmts = inner.stmts;
    builder.linear = linear;
    let new_body = builder.program.blocks.push(Block {
        params,
        stmts,
        results,
    });
    // New init and binders: carries, carry tangents, [ys, y tangents].
    let mut new_init = init.clone();
    for position in &float_carries {
        let tangent = tangent_of(tangents, &init[*position])
            .unwrap_or_else(|| builder.zeros(&builder.ty(&init[*position])));
        new_init.push(tangent);
    }
    let mut binders: Vec<VarId> = stmt.binders[..n_carries].to_vec();
    let mut new_tangents = Vec::new();
    for position in &float_carries {
        let binder = stmt.binders[*position];
        let ty = builder.program.var_ty(binder).clone();
        let tangent = builder.program.new_var(ty, "c_dot");
        new_tangents.push((binder, tangent));
        binders.push(tangent);
    }
    if is_scan {
        binders.extend(&stmt.binders[n_carries..]);
        for position in &float_ys {
            let binder = stmt.binders[n_carries + position];
            let ty = builder.program.var_ty(binder).clone();
            let tangent = builder.program.new_var(ty, "y_dot");
            new_tangents.push((binder, tangent));
            binders.push(tangent);
        }
    }
    for (_, tangent) in &new_tangents {
        builder.linear.insert(*tangent);
    }
    let expr = Expr::sequential_loop(is_scan, size, new_init, new_body);
    builder.stmts.push(Stmt { binders, expr });
    for (binder, tangent) in new_tangents {
        tangents.insert(binder, Atom::Var(tangent));
    }
    Ok(())
}

/// A linear statement to transpose: an ordinary one, or a loop whose primal part runs
/// forward as a scan that stacks the carry entering every iteration (`stacked`, one per
/// primal carry), so that the backward loop can recompute each iteration's primal values.
#[derive(Clone, Debug)]
enum LinearItem {
    Stmt(Stmt),
    Loop { stmt: Stmt, stacked: Vec<VarId> },
}

/// The positions of a differentiated loop's parts (see `jvp_loop`): the body parameters are
/// `[i, carries…, carry tangents…]`, the results and binders `carries, carry tangents` and,
/// for a scan, `ys, y tangents`.
struct LoopShape {
    size: usize,
    is_scan: bool,
    n_carries: usize,
    n_carry_tangents: usize,
    n_ys: usize,
    init: Vec<Atom>,
    body: BlockId,
}

fn loop_shape(stmt: &Stmt, program: &Program, linear: &HashSet<VarId>) -> LoopShape {
    let (size, init, body, is_scan) = match &stmt.expr {
        Expr::Fold { size, init, body } => (*size, init.clone(), *body, false),
        Expr::Scan { size, init, body } => (*size, init.clone(), *body, true),
        _ => unreachable!("only loops have a loop shape"),
    };
    let params = &program.blocks[body].params;
    let n_carry_tangents = params[1..]
        .iter()
        .filter(|param| linear.contains(param))
        .count();
    let n_carries = params.len() - 1 - n_carry_tangents;
    let rest = &stmt.binders[n_carries + n_carry_tangents..];
    let n_ys = rest
        .iter()
        .filter(|binder| !linear.contains(binder))
        .count();
    LoopShape {
        size,
        is_scan,
        n_carries,
        n_carry_tangents,
        n_ys,
        init,
        body,
    }
}

/// Splits statements into the forward (primal) ones and the linear ones to transpose.
fn split(
    program: &mut Program,
    stmts: &[Stmt],
    linear: &HashSet<VarId>,
) -> (Vec<Stmt>, Vec<LinearItem>) {
    let mut forward = Vec::new();
    let mut items = Vec::new();
    for stmt in stmts {
        let any_linear = stmt.binders.iter().any(|binder| linear.contains(binder));
        let all_linear = stmt.binders.iter().all(|binder| linear.contains(binder));
        if !any_linear {
            forward.push(stmt.clone());
        } else if let Some(primal) = crate::ops::monoid::primal_of_jvp(program, stmt) {
            // A differentiated monoid statement: its primal part runs forward, and the whole
            // statement is transposed (seed 000 Thm 3.7).
            forward.push(primal);
            items.push(LinearItem::Stmt(stmt.clone()));
        } else if all_linear {
            items.push(LinearItem::Stmt(stmt.clone()));
        } else {
            // A loop carrying primal and tangent values: run the primal part as a scan that
            // also stacks the carries.
            let shape = loop_shape(stmt, program, linear);
            let body: Block = program.blocks[shape.body].clone();
            let carry_params = body.params[1..=shape.n_carries].to_vec();
            let mut results: Vec<Atom> = body.results[..shape.n_carries].to_vec();
            if shape.is_scan {
                let ys_start = shape.n_carries + shape.n_carry_tangents;
                results.extend(&body.results[ys_start..ys_start + shape.n_ys]);
            }
            results.extend(carry_params.iter().copied().map(Atom::Var));
            let mut params = vec![body.params[0]];
            params.extend(&carry_params);
            // Nested loops contribute their primal scans too.
            let (primal_stmts, _) = split(program, &body.stmts, linear);
            let primal_body = program.blocks.push(Block {
                params,
                stmts: primal_stmts,
                results,
            });
            let mut binders: Vec<VarId> = stmt.binders[..shape.n_carries].to_vec();
            if shape.is_scan {
                let ys_start = shape.n_carries + shape.n_carry_tangents;
                binders.extend(&stmt.binders[ys_start..ys_start + shape.n_ys]);
            }
            let stacked: Vec<VarId> = carry_params
                .iter()
                .map(|param| {
                    let ty = program.var_ty(*param).clone();
                    let mut stacked_shape = vec![shape.size];
                    stacked_shape.extend(&ty.shape);
                    program.new_var(ArrTy::new(stacked_shape, ty.elem), "carries")
                })
                .collect();
            binders.extend(&stacked);
            let init = shape.init[..shape.n_carries].to_vec();
            forward.push(Stmt {
                binders,
                expr: Expr::Scan {
                    size: shape.size,
                    init,
                    body: primal_body,
                },
            });
            items.push(LinearItem::Loop {
                stmt: stmt.clone(),
                stacked,
            });
        }
    }
    (forward, items)
}

/// Transposes the linear part of a forward derivative (seed 001 §7.3, Fig 19).
pub fn vjp(program: &mut Program, jvp: &Jvp) -> Result<Vjp, AdError> {
    let (forward, items) = split(program, &jvp.stmts, &jvp.linear);
    let mut builder = Builder {
        program,
        stmts: Vec::new(),
        linear: jvp.linear.clone(),
    };
    // Cotangent parameters, seeded into the tangents of the results.
    let mut cts: HashMap<VarId, Atom> = HashMap::new();
    let mut ct_params = Vec::new();
    for (result, tangent) in jvp.results.iter().zip(&jvp.tangent_results) {
        let ty = builder.ty(result);
        let ct_param = builder.program.new_var(ty, "ct");
        ct_params.push(ct_param);
        if let Some(tangent) = tangent {
            if builder.is_linear(tangent) {
                builder.add_to(&mut cts, *tangent, Atom::Var(ct_param));
            }
        }
    }
    transpose_items(&mut builder, &items, &mut cts)?;
    let grads = jvp
        .tangent_params
        .iter()
        .map(|tangent| tangent.and_then(|var| cts.get(&var).copied()))
        .collect();
    Ok(Vjp {
        params: jvp.params.clone(),
        forward,
        results: jvp.results.clone(),
        ct_params,
        backward: builder.stmts,
        grads,
    })
}

fn transpose_items(
    builder: &mut Builder,
    items: &[LinearItem],
    cts: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    for item in items.iter().rev() {
        match item {
            LinearItem::Stmt(stmt) => transpose_stmt(builder, stmt, cts)?,
            LinearItem::Loop { stmt, stacked } => transpose_loop(builder, stmt, stacked, cts)?,
        }
    }
    Ok(())
}

// Note [Reads of outer tables in a reversed loop]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A loop body often reads a table from outside the loop: `index xs [i]`
// (`fold(x0, \i c. max c xs[i])`), or, after the BOT, a gather of a row or of a few
// neighbours. The transpose of the read is a scatter into the shape of the whole table (a
// one-hot scatter for `index`, Fig 19). Accumulated in a carry of the backward loop, the
// table's cotangent would cost a zero table, a scatter and an addition of the whole table at
// every step: O(n) per step, O(n²) for the loop.
//
// But the cotangent of a table the body only reads never feeds back into the loop: no
// iteration reads it. So such a read is not transposed inside the loop. The backward loop
// becomes a scan that emits, at every step, the cotangent of the read's result (one element,
// one row, or the gathered elements) as an output; after the loop, one bulk operation puts
// the stacked outputs into the table's cotangent: a `scatter` whose index function gives, for
// backward step `k` (and the gather's own positions), the index the forward iteration
// `i = n-1-k` read. A variable of the body that the index needs is found in one of two ways:
//
// - if scalar statements compute it from the loop index and loop-invariant values (`i`,
//   `i - 1`, `perm[i]`), the index function recomputes it by those statements;
// - otherwise (it depends on the carry) the scan stacks it as one more output, and the index
//   function reads it back. Only scalars are stacked: a gather whose index function needs a
//   carried table stays inside the loop.
//
// Literals and loop-invariant variables are used as they are. When the index is exactly the
// loop index and the table's leading axis is the loop's length, the stacked outputs reversed
// into loop order *are* the contribution, and a `gather` that reverses them replaces the
// scatter. Only the other uses of an outer linear variable (arithmetic on the whole table,
// reads inside nested loops, returning it as a carry) still accumulate in a carry of the
// backward loop.
//
// This is seed 003 Fig 16's reverse rule for `foldl` (the cotangent of the array argument is
// `B = map2 (x,y. x*y*z) A_2 A_3`, built by one map from per-element derivatives after the
// backward scan, never a dense array per step), and the sparse adjoint of an index of seed
// 002 §3.3 (Listings 22–23: a read's adjoint is an (index, value) pair, and the pairs are
// folded into one array adjoint at the end). dx's version differs: the body is arbitrary ANF
// and may read any outer table at any index, not only the element `A[i]` of the array folded
// over, so the pairs are stacked by a sequential backward scan (not a `scanr` of products,
// which needs scalar carries) and placed by one scatter, or a reversing gather. Reads in
// loops nested inside the body are hoisted only out of their own loop: their contributions
// then accumulate per step of the enclosing loop.

/// How a hoisted read reads its table.
enum ReadKind {
    /// `index table [index…]`.
    Index(Vec<Atom>),
    /// `gather shape table body`.
    Gather(BlockId),
}

/// A read in a loop body of a linear table defined outside the loop, hoisted out of the
/// backward loop (Note [Reads of outer tables in a reversed loop]).
struct OuterRead {
    table: VarId,
    /// The read's result in the backward body.
    res: VarId,
    kind: ReadKind,
    /// The variables of the backward body its index needs that depend only on the step.
    recomputed: Vec<VarId>,
    /// The other variables of the backward body its index needs (scalars), to be stacked.
    stacked: Vec<VarId>,
}

/// A hoisted read with a cotangent: the positions among the backward scan's outputs of the
/// read's cotangent and of its stacked variables.
struct HoistedRead {
    read: OuterRead,
    ct_output: usize,
    stacked_outputs: Vec<usize>,
}

/// The backward loop of a transposed loop, as the placing of hoisted reads' cotangents
/// after it sees it.
struct BackwardLoop<'a> {
    body: BlockId,
    /// The body's step parameter `k` (the backward loop runs iteration `i = size-1-k`).
    step: VarId,
    loop_index: Atom,
    size: usize,
    /// The body's variables that depend only on the step (`recomputable_from_step`).
    recomputable: &'a HashSet<VarId>,
    /// The loop's stacked outputs (its binders after the carries).
    outputs: &'a [VarId],
}

/// The transpose of a loop (seed 003 Fig 16's reverse rule for `foldl`, on ANF): a loop that
/// runs the iterations backwards; each iteration recomputes its primal values from the
/// stacked carry, then transposes the body's linear statements. Reads of outer linear tables
/// become outputs of the backward loop, which is then a scan (see Note [Reads of outer
/// tables in a reversed loop]); cotangents of the other linear variables the body uses from
/// outside accumulate in extra carries.
fn transpose_loop(
    builder: &mut Builder,
    stmt: &Stmt,
    stacked: &[VarId],
    cts: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    let shape = loop_shape(stmt, builder.program, &builder.linear);
    let tangent_binders = &stmt.binders[shape.n_carries..shape.n_carries + shape.n_carry_tangents];
    let ys_tangent_binders: Vec<VarId> = if shape.is_scan {
        stmt.binders[shape.n_carries + shape.n_carry_tangents + shape.n_ys..].to_vec()
    } else {
        Vec::new()
    };
    let final_cts: Vec<Option<Atom>> = tangent_binders
        .iter()
        .map(|binder| cts.get(binder).copied())
        .collect();
    let ys_cts: Vec<Option<Atom>> = ys_tangent_binders
        .iter()
        .map(|binder| cts.get(binder).copied())
        .collect();
    if final_cts.iter().chain(&ys_cts).all(Option::is_none) {
        return Ok(());
    }
    let body: Block = builder.program.blocks[shape.body].clone();
    let carry_params = body.params[1..=shape.n_carries].to_vec();
    let tangent_params = body.params[1 + shape.n_carries..].to_vec();
    // Linear variables the body uses from outside, with every use (with repeats).
    let mut defined: HashSet<VarId> = HashSet::new();
    crate::core::visit::collect_defs(builder.program, shape.body, &mut defined);
    let mut used = Vec::new();
    crate::core::visit::collect_uses(builder.program, shape.body, &mut used);
    used.retain(|var| builder.linear.contains(var) && !defined.contains(var));
    let mut free: Vec<VarId> = Vec::new();
    for var in &used {
        if !free.contains(var) {
            free.push(*var);
        }
    }
    // The backward body: params [k, carry cotangents…, carried free cotangents…].
    let index_ty = ArrTy::scalar(crate::core::ir::Elem::I64);
    let k = builder.program.new_var(index_ty.clone(), "k");
    let ct_carry_params: Vec<VarId> = tangent_params
        .iter()
        .map(|param| {
            builder
                .program
                .new_var(builder.program.var_ty(*param).clone(), "ct_c")
        })
        .collect();
    let mut inner = Builder {
        program: &mut *builder.program,
        stmts: Vec::new(),
        linear: builder.linear.clone(),
    };
    let last = Atom::Lit(Scalar::I64(shape.size as i64 - 1));
    let i = inner.emit1(
        Expr::Prim(Prim::Sub, vec![last, Atom::Var(k)]),
        index_ty,
        "i",
    );
    let mut subst: HashMap<VarId, Atom> = HashMap::new();
    subst.insert(body.params[0], i);
    for (param, stacked) in carry_params.iter().zip(stacked) {
        let ty = inner.program.var_ty(*param).clone();
        let carry = inner.emit1(
            Expr::Index {
                array: Atom::Var(*stacked),
                index: vec![i],
            },
            ty,
            "c",
        );
        subst.insert(*param, carry);
    }
    let placeholders: Vec<VarId> = tangent_params
        .iter()
        .map(|param| {
            let placeholder = inner
                .program
                .new_var(inner.program.var_ty(*param).clone(), "c_dot");
            inner.linear.insert(placeholder);
            subst.insert(*param, Atom::Var(placeholder));
            placeholder
        })
        .collect();
    let mut copied = Vec::new();
    for body_stmt in &body.stmts {
        copied.push(crate::core::inline::copy_stmt(
            inner.program,
            body_stmt,
            &mut subst,
        ));
    }
    // The copies of linear variables (binders and the parameters of nested blocks) are linear.
    for (old, new) in &subst {
        if let (true, Atom::Var(new)) = (inner.linear.contains(old), new) {
            inner.linear.insert(*new);
        }
    }
    let (forward, mut items) = split(inner.program, &copied, &inner.linear);
    inner.stmts.extend(forward);
    let recomputable = recomputable_from_step(inner.program, &inner.stmts, k, stacked);
    let reads = outer_reads(inner.program, &inner.stmts, &copied, &free, &recomputable);
    // The hoisted reads are not transposed here; the free variables used otherwise too
    // keep a carry.
    items.retain(|item| match item {
        LinearItem::Stmt(stmt) => !reads.iter().any(|read| read.res == stmt.binders[0]),
        LinearItem::Loop { .. } => true,
    });
    let carried: Vec<VarId> = free
        .iter()
        .copied()
        .filter(|var| {
            let n_uses = used.iter().filter(|used| *used == var).count();
            let n_reads = reads.iter().filter(|read| read.table == *var).count();
            n_uses > n_reads
        })
        .collect();
    let ct_free_params: Vec<VarId> = carried
        .iter()
        .map(|var| {
            inner
                .program
                .new_var(inner.program.var_ty(*var).clone(), "ct_free")
        })
        .collect();
    let mut inner_cts: HashMap<VarId, Atom> = HashMap::new();
    for (position, param) in ct_carry_params.iter().enumerate() {
        let result = crate::core::inline::rename(body.results[shape.n_carries + position], &subst);
        if inner.is_linear(&result) {
            inner.add_to(&mut inner_cts, result, Atom::Var(*param));
        }
    }
    if shape.is_scan {
        let dys_start = shape.n_carries + shape.n_carry_tangents + shape.n_ys;
        for (position, ct) in ys_cts.iter().enumerate() {
            let Some(ct) = ct else { continue };
            let result = crate::core::inline::rename(body.results[dys_start + position], &subst);
            if inner.is_linear(&result) {
                let ty = inner.ty(&result);
                let ct_i = inner.emit1(
                    Expr::Index {
                        array: *ct,
                        index: vec![i],
                    },
                    ty,
                    "ct_y",
                );
                inner.add_to(&mut inner_cts, result, ct_i);
            }
        }
    }
    transpose_items(&mut inner, &items, &mut inner_cts)?;
    let mut results = Vec::new();
    for placeholder in &placeholders {
        results.push(match inner_cts.get(placeholder) {
            Some(ct) => *ct,
            None => inner.zeros(&inner.program.var_ty(*placeholder).clone()),
        });
    }
    for (var, param) in carried.iter().zip(&ct_free_params) {
        results.push(match inner_cts.get(var).copied() {
            Some(ct) => inner.prim(Prim::Add, &[Atom::Var(*param), ct]),
            None => Atom::Var(*param),
        });
    }
    // The scan outputs: each hoisted read's cotangent, and the variables its index needs
    // that are stacked.
    let n_carried_results = results.len();
    let mut outputs: Vec<Atom> = Vec::new();
    let mut hoisted = Vec::new();
    for read in reads {
        let Some(ct) = inner_cts.get(&read.res).copied() else {
            continue;
        };
        let ct_output = outputs.len();
        outputs.push(ct);
        let stacked_outputs = read
            .stacked
            .iter()
            .map(|var| {
                outputs.push(Atom::Var(*var));
                outputs.len() - 1
            })
            .collect();
        hoisted.push(HoistedRead {
            read,
            ct_output,
            stacked_outputs,
        });
    }
    results.extend(&outputs);
    let inner_stmts = std::mem::take(&mut inner.stmts);
    let mut params = vec![k];
    params.extend(&ct_carry_params);
    params.extend(&ct_free_params);
    let backward_body = builder.program.blocks.push(Block {
        params,
        stmts: inner_stmts,
        results,
    });
    // The backward loop, seeded with the final carry cotangents and zero free cotangents.
    let mut init = Vec::new();
    for (ct, binder) in final_cts.iter().zip(tangent_binders) {
        init.push(match ct {
            Some(ct) => *ct,
            None => builder.zeros(&builder.program.var_ty(*binder).clone()),
        });
    }
    for var in &carried {
        init.push(builder.zeros(&builder.program.var_ty(*var).clone()));
    }
    let mut binder_tys: Vec<ArrTy> = tangent_params
        .iter()
        .map(|param| builder.program.var_ty(*param).clone())
        .collect();
    binder_tys.extend(
        carried
            .iter()
            .map(|var| builder.program.var_ty(*var).clone()),
    );
    for output in &outputs {
        let ty = builder.ty(output);
        let mut stacked_shape = vec![shape.size];
        stacked_shape.extend(&ty.shape);
        binder_tys.push(ArrTy::new(stacked_shape, ty.elem));
    }
    let loop_expr = Expr::sequential_loop(!outputs.is_empty(), shape.size, init, backward_body);
    let binders = builder.emit(loop_expr, binder_tys, "ct_loop");
    // The stacked cotangents are linear, the stacked indices primal.
    builder.linear.extend(&binders[..n_carried_results]);
    for (output, binder) in outputs.iter().zip(&binders[n_carried_results..]) {
        if builder.ty(output).elem.is_float() {
            builder.linear.insert(*binder);
        } else {
            builder.linear.remove(binder);
        }
    }
    let init_tangents = &shape.init[shape.n_carries..];
    for (tangent, ct) in init_tangents.iter().zip(&binders) {
        if builder.is_linear(tangent) {
            builder.add_to(cts, *tangent, Atom::Var(*ct));
        }
    }
    for (var, ct) in carried.iter().zip(&binders[tangent_params.len()..]) {
        builder.add_to(cts, Atom::Var(*var), Atom::Var(*ct));
    }
    let backward = BackwardLoop {
        body: backward_body,
        step: k,
        loop_index: i,
        size: shape.size,
        recomputable: &recomputable,
        outputs: &binders[n_carried_results..],
    };
    for read in &hoisted {
        let contribution = place_read_cts(builder, &backward, read);
        builder.add_to(cts, Atom::Var(read.read.table), contribution);
    }
    Ok(())
}

/// The variables of a backward loop body (`stmts`, run at step `k`) that depend only on `k`
/// and on loop-invariant values: bound by scalar statements without nested blocks whose
/// operands are such variables, literals, or variables from outside the body other than the
/// stacked carries (reading those makes a value depend on the carry). An index function
/// after the loop can recompute them cheaply from the step.
fn recomputable_from_step(
    program: &Program,
    stmts: &[Stmt],
    k: VarId,
    checkpoints: &[VarId],
) -> HashSet<VarId> {
    let mut recomputable = HashSet::from([k]);
    let mut defined: HashSet<VarId> = HashSet::from([k]);
    for stmt in stmts {
        let scalar = stmt
            .binders
            .iter()
            .all(|binder| program.var_ty(*binder).shape.is_empty());
        let simple = matches!(
            stmt.expr,
            Expr::Atom(_) | Expr::Prim(..) | Expr::Index { .. }
        );
        let operands_ok =
            crate::core::verify::expr_atoms(&stmt.expr)
                .iter()
                .all(|atom| match atom {
                    Atom::Lit(_) => true,
                    Atom::Var(var) => {
                        recomputable.contains(var)
                            || (!defined.contains(var) && !checkpoints.contains(var))
                    }
                });
        if scalar && simple && operands_ok {
            recomputable.extend(&stmt.binders);
        }
        defined.extend(&stmt.binders);
    }
    recomputable
}

/// The reads of outer linear tables (`free`) among the copied body statements `copied` that
/// can be hoisted out of the backward loop whose primal statements are `forward`: every
/// `index`, and every `gather` whose index function needs only scalars from the backward body
/// (Note [Reads of outer tables in a reversed loop]).
fn outer_reads(
    program: &Program,
    forward: &[Stmt],
    copied: &[Stmt],
    free: &[VarId],
    recomputable: &HashSet<VarId>,
) -> Vec<OuterRead> {
    let body_defined: HashSet<VarId> = forward
        .iter()
        .flat_map(|stmt| stmt.binders.iter().copied())
        .chain(recomputable.iter().copied())
        .collect();
    let mut reads = Vec::new();
    for stmt in copied {
        let (table, kind, uses) = match &stmt.expr {
            Expr::Index {
                array: Atom::Var(table),
                index,
            } => {
                let uses = index
                    .iter()
                    .filter_map(|atom| crate::core::visit::var_of(*atom))
                    .collect();
                (*table, ReadKind::Index(index.clone()), uses)
            }
            Expr::Gather {
                array: Atom::Var(table),
                body,
                ..
            } => {
                let mut uses = Vec::new();
                crate::core::visit::collect_uses(program, *body, &mut uses);
                (*table, ReadKind::Gather(*body), uses)
            }
            _ => continue,
        };
        if !free.contains(&table) {
            continue;
        }
        let mut needed: Vec<VarId> = Vec::new();
        for var in uses {
            if body_defined.contains(&var) && !needed.contains(&var) {
                needed.push(var);
            }
        }
        let (recomputed, stacked): (Vec<VarId>, Vec<VarId>) = needed
            .into_iter()
            .partition(|var| recomputable.contains(var));
        if stacked
            .iter()
            .any(|var| !program.var_ty(*var).shape.is_empty())
        {
            continue;
        }
        reads.push(OuterRead {
            table,
            res: stmt.binders[0],
            kind,
            recomputed,
            stacked,
        });
    }
    reads
}

/// Copies of the backward body's statements that compute `vars` from the step, in order,
/// renamed through `subst` (which maps the step to its new name).
fn recompute_from_step(
    program: &mut Program,
    backward: &BackwardLoop,
    vars: &[VarId],
    subst: &mut HashMap<VarId, Atom>,
) -> Vec<Stmt> {
    let mut needed: HashSet<VarId> = vars.iter().copied().collect();
    let mut chain = Vec::new();
    for stmt in program.blocks[backward.body].stmts.iter().rev() {
        if stmt.binders.iter().any(|binder| needed.contains(binder)) {
            debug_assert!(stmt
                .binders
                .iter()
                .all(|binder| backward.recomputable.contains(binder)));
            for atom in crate::core::verify::expr_atoms(&stmt.expr) {
                if let Atom::Var(var) = atom {
                    if backward.recomputable.contains(&var) {
                        needed.insert(var);
                    }
                }
            }
            chain.push(stmt.clone());
        }
    }
    chain
        .iter()
        .rev()
        .map(|stmt| crate::core::inline::copy_stmt(program, stmt, subst))
        .collect()
}

/// Puts a hoisted read's stacked cotangents (one per backward step) into the shape of the
/// table it read: a scatter whose index function gives, for step `k` (and for a gather, the
/// gather's positions), the index read at that step, or a reversing gather when that index
/// is the loop index `i` itself (Note [Reads of outer tables in a reversed loop]).
fn place_read_cts(builder: &mut Builder, backward: &BackwardLoop, hoisted: &HoistedRead) -> Atom {
    let read = &hoisted.read;
    let table_ty = builder.program.var_ty(read.table).clone();
    let step_ty = builder.program.var_ty(backward.step).clone();
    let step = builder.program.new_var(step_ty.clone(), "k");
    let mut subst: HashMap<VarId, Atom> = HashMap::from([(backward.step, Atom::Var(step))]);
    let mut stmts = recompute_from_step(builder.program, backward, &read.recomputed, &mut subst);
    for (var, position) in read.stacked.iter().zip(&hoisted.stacked_outputs) {
        let ty = builder.program.var_ty(*var).clone();
        let value = builder.program.new_var(ty, "ix");
        stmts.push(Stmt {
            binders: vec![value],
            expr: Expr::Index {
                array: Atom::Var(backward.outputs[*position]),
                index: vec![Atom::Var(step)],
            },
        });
        subst.insert(*var, Atom::Var(value));
    }
    let (index_fn, reverses) = match &read.kind {
        ReadKind::Index(index) => {
            let results = index
                .iter()
                .map(|atom| crate::core::inline::rename(*atom, &subst))
                .collect();
            let index_fn = builder.program.blocks.push(Block {
                params: vec![step],
                stmts,
                results,
            });
            let reverses =
                *index == [backward.loop_index] && table_ty.shape.first() == Some(&backward.size);
            (index_fn, reverses)
        }
        // The gather's index function, with the step as one more leading parameter.
        ReadKind::Gather(body) => {
            let index_fn = clone_block(builder.program, *body, &mut subst);
            let block = &mut builder.program.blocks[index_fn];
            block.params.insert(0, step);
            stmts.append(&mut block.stmts);
            block.stmts = stmts;
            (index_fn, false)
        }
    };
    let stacked_ct = Atom::Var(backward.outputs[hoisted.ct_output]);
    let shape = table_ty.shape.clone();
    let expr = if reverses {
        Expr::Gather {
            shape,
            array: stacked_ct,
            body: index_fn,
        }
    } else {
        Expr::Scatter {
            shape,
            array: stacked_ct,
            body: index_fn,
        }
    };
    builder.emit1(expr, table_ty, "ct")
}

/// The transpose of one linear statement: given the cotangent of its result, adds the
/// contributions to the cotangents of its linear operands.
fn transpose_stmt(
    builder: &mut Builder,
    stmt: &Stmt,
    cts: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    if let Expr::Monoid { .. } = &stmt.expr {
        return builder.transpose_monoid(stmt, cts);
    }
    let binder = stmt.binders[0];
    let Some(ct) = cts.get(&binder).copied() else {
        return Ok(());
    };
    let linear = |builder: &Builder, atom: &Atom| builder.is_linear(atom);
    match &stmt.expr {
        Expr::Atom(atom) => {
            if linear(builder, atom) {
                builder.add_to(cts, *atom, ct);
            }
        }
        Expr::Prim(prim, args) => {
            let mask: Vec<bool> = args.iter().map(|atom| linear(builder, atom)).collect();
            if mask.iter().any(|flag| *flag) {
                let contributions = prim.transpose(builder, args, &mask, ct)?;
                for (arg, contribution) in args.iter().zip(contributions) {
                    if let Some(contribution) = contribution {
                        builder.add_to(cts, *arg, contribution);
                    }
                }
            }
        }
        // The structural operations: each is linear in its one array operand, and its
        // transpose is another structural operation applied to the cotangent.
        Expr::Index { array, .. }
        | Expr::Gather { array, .. }
        | Expr::Scatter { array, .. }
        | Expr::SumOuter(array)
        | Expr::Replicate { array, .. }
        | Expr::Transpose { array, .. }
        | Expr::Reshape { array, .. }
            if linear(builder, array) =>
        {
            let ty = builder.ty(array);
            let shape = ty.shape.clone();
            let transposed = match &stmt.expr {
                // Index: a one-hot scatter (Fig 19, Index).
                Expr::Index { index, .. } => {
                    let body = builder.program.blocks.push(Block {
                        params: Vec::new(),
                        stmts: Vec::new(),
                        results: index.clone(),
                    });
                    Expr::Scatter {
                        shape,
                        array: ct,
                        body,
                    }
                }
                // Gather and scatter are each other's transposes (§6.3).
                Expr::Gather { body, .. } => Expr::Scatter {
                    shape,
                    array: ct,
                    body: clone_block(builder.program, *body, &mut HashMap::new()),
                },
                Expr::Scatter { body, .. } => Expr::Gather {
                    shape,
                    array: ct,
                    body: clone_block(builder.program, *body, &mut HashMap::new()),
                },
                // sumOuter and replicate are each other's transposes.
                Expr::SumOuter(_) => Expr::Replicate {
                    count: shape[0],
                    array: ct,
                },
                Expr::Replicate { .. } => Expr::SumOuter(ct),
                Expr::Transpose { perm, .. } => {
                    let mut inverse = vec![0; perm.len()];
                    for (axis, source) in perm.iter().enumerate() {
                        inverse[*source] = axis;
                    }
                    Expr::Transpose {
                        perm: inverse,
                        array: ct,
                    }
                }
                Expr::Reshape { .. } => Expr::Reshape { shape, array: ct },
                _ => unreachable!("the arm matches only structural operations"),
            };
            let contribution = builder.emit1(transposed, ty, "ct");
            builder.add_to(cts, *array, contribution);
        }
        Expr::Table(items) => {
            for (position, item) in items.iter().enumerate() {
                if linear(builder, item) {
                    let ty = builder.ty(item);
                    let index = vec![Atom::Lit(Scalar::I64(position as i64))];
                    let contribution = builder.emit1(Expr::Index { array: ct, index }, ty, "ct");
                    builder.add_to(cts, *item, contribution);
                }
            }
        }
        // Linear statements whose operands are constants (zeros) contribute nothing.
        Expr::Index { .. }
        | Expr::Gather { .. }
        | Expr::Scatter { .. }
        | Expr::SumOuter(_)
        | Expr::Replicate { .. }
        | Expr::Transpose { .. }
        | Expr::Reshape { .. }
        | Expr::Iota(_) => {}
        Expr::Cond { .. }
        | Expr::Fold { .. }
        | Expr::Scan { .. }
        | Expr::Monoid { .. }
        | Expr::Build1 { .. }
        | Expr::Derivative { .. } => {
            return Err(AdError("a linear statement of an unexpected form".into()))
        }
    }
    Ok(())
}

//! Automatic differentiation of bulk IR: forward derivatives (dual arrays, [Smeding25] §6) and
//! their symbolic transposition ([Smeding25] §7), on ANF.
//!
//! `jvp` turns a build-free block into one that computes, next to every float variable, its
//! tangent (the D[·] transformation of Figs 14–15: each statement is followed by the linear
//! statements of its derivative, the Delta constructors written as ordinary bulk operations).
//! Tangent variables are *linear*; every other variable is primal. As docs/architecture.md notes, the
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
//! This file is the generic part: the builder, the walk over statements and the dispatch
//! (`jvp_stmts`, `transpose_items`) to each operation's rules in its home in `ops`
//! (`Operation::jvp`, `Operation::transpose`; every
//! elementwise primitive's in `prim`). The structural operations' JVP is derived from their
//! linearity (`jvp_linear`, `ops::linearity`). Conditionals are if-converted
//! (`ops::cond::jvp_cond`); loops carry their tangents forward and are transposed whole
//! (`ops::loops::jvp_loop`, `split_loop`, `transpose_loop`, with Note [Reads of outer tables
//! in a reversed loop]; a `while` by a reverse sweep that replays it, `ops::while_loop`, Note
//! [Reverse mode through a while loop]); the monoid operations follow [Paszke21]
//! (`ops::monoid`).
//!
//! Linearity is part of the IR (`VarInfo::linear`, printed `lin`): the tangents of `jvp` and
//! the cotangents of `vjp` are linear variables, and a statement of a linear variable binds
//! linear ones. The verifier checks after each step (the `linear` and `transposed` stages)
//! that every statement uses them where its operation is linear; `passes::derivatives`
//! clears the flags once it has placed the derivative.

use std::collections::HashMap;

use crate::core::inline::clone_block;
use crate::core::ir::{
    ArrTy, Atom, Block, BlockId, Expr, PrimApp, Program, Replicate, Scalar, Stmt, VarId,
};
use crate::ops;
use crate::prim::{Emitter, NotLinear, Prim};

/// A tangent or cotangent of the core IR: `None` is a (symbolic) zero.
pub type Tangent = crate::prim::Tangent<Atom>;

/// A tangent or a cotangent per variable.
pub(crate) type Derivs = HashMap<VarId, Atom>;

/// The outcome of a derivative rule.
pub(crate) type AdResult = Result<(), AdError>;

/// Why a block could not be differentiated: its input broke the pass's assumptions (the
/// checker refuses what is not differentiable, and the tangent statements of `jvp` are
/// linear by construction, so every failure is a bug).
#[derive(Clone, Debug, PartialEq)]
pub enum AdError {
    /// A tangent or cotangent statement that is not linear where it must be.
    NotLinear(String),
    /// A form that the rules do not differentiate (in this mode, or at this point of the
    /// pipeline), which lowering should have refused.
    NoRule(String),
    /// A user-defined derivative that is not one (its linear map is not linear, or its
    /// value depends on the tangents), which lowering should have refused.
    BadCustomRule(String),
}

impl std::fmt::Display for AdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdError::NotLinear(what) | AdError::NoRule(what) | AdError::BadCustomRule(what) => {
                f.write_str(what)
            }
        }
    }
}

impl From<NotLinear> for AdError {
    fn from(err: NotLinear) -> AdError {
        AdError::NotLinear(err.0)
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

/// Emits statements into a list; a statement of a linear variable binds linear variables
/// (`VarInfo::linear`).
pub(crate) struct Builder<'p> {
    pub(crate) program: &'p mut Program,
    pub(crate) stmts: Vec<Stmt>,
}

impl<'p> Builder<'p> {
    pub(crate) fn new(program: &'p mut Program) -> Builder<'p> {
        Builder {
            program,
            stmts: Vec::new(),
        }
    }

    pub(crate) fn is_linear(&self, atom: &Atom) -> bool {
        self.program.is_linear(atom)
    }

    /// Marks `vars` linear (or not).
    pub(crate) fn set_linear(&mut self, vars: &[VarId], linear: bool) {
        for &var in vars {
            self.program.vars[var].linear = linear;
        }
    }

    /// Emits a statement; its binders are linear when any operand is.
    pub(crate) fn emit(&mut self, expr: Expr, tys: Vec<ArrTy>, hint: &str) -> Vec<VarId> {
        let linear = crate::core::visit::expr_atoms(&expr)
            .iter()
            .any(|atom| self.is_linear(atom));
        let binders: Vec<VarId> = tys
            .into_iter()
            .map(|ty| self.program.new_var(ty, hint))
            .collect();
        self.set_linear(&binders, linear);
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
        self.broadcast(Atom::Lit(Scalar::zero(ty.elem)), &ty.shape, "zero")
    }

    /// `count` copies of `array` along a new outer axis.
    pub(crate) fn replicate(&mut self, count: usize, array: Atom, hint: &str) -> Atom {
        let ty = self.ty(&array);
        let shape = std::iter::once(count).chain(ty.shape).collect();
        self.emit1(
            Expr::from(Replicate { count, array }),
            ArrTy::new(shape, ty.elem),
            hint,
        )
    }

    /// An array of `shape` whose every element is the rank-0 `scalar`.
    pub(crate) fn broadcast(&mut self, scalar: Atom, shape: &[usize], hint: &str) -> Atom {
        let mut res = scalar;
        for &count in shape.iter().rev() {
            res = self.replicate(count, res, hint);
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

impl Builder<'_> {
    /// Adds to the cotangent of `array`, when it is linear, the operation `transposed` makes
    /// (given the program and `array`'s type) on the result's cotangent: the transpose of a
    /// statement linear in its one array operand (the rule homes in `ops` give `transposed`).
    pub(crate) fn add_transposed(
        &mut self,
        cts: &mut HashMap<VarId, Atom>,
        array: Atom,
        transposed: impl FnOnce(&mut Program, &ArrTy) -> Expr,
    ) {
        if !self.is_linear(&array) {
            return;
        }
        let ty = self.ty(&array);
        let expr = transposed(self.program, &ty);
        let contribution = self.emit1(expr, ty, "ct");
        self.add_to(cts, array, contribution);
    }
}

impl Emitter for Builder<'_> {
    type Atom = Atom;

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
            Expr::from(PrimApp(prim, args)),
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
        self.broadcast(Atom::Lit(scalar), shape, "const")
    }
}

/// The forward derivative of a build-free block with respect to its float parameters.
pub fn jvp(program: &mut Program, block: BlockId) -> Result<Jvp, AdError> {
    let source: Block = program.blocks[block].clone();
    let mut builder = Builder::new(program);
    let mut tangents: HashMap<VarId, Atom> = HashMap::new();
    let mut tangent_params = Vec::new();
    for param in &source.params {
        let ty = builder.program.var_ty(*param).clone();
        if ty.elem.is_float() {
            let hint = format!("{}_dot", builder.program.vars[*param].hint);
            let tangent = builder.program.new_linear_var(ty, &hint);
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
    })
}

pub(crate) fn tangent_of(tangents: &HashMap<VarId, Atom>, atom: &Atom) -> Tangent {
    match atom {
        Atom::Var(var) => tangents.get(var).copied(),
        Atom::Lit(_) => None,
    }
}

/// D[·] of [Smeding25] Figs 14–15, statement by statement.
pub(crate) fn jvp_stmts(
    builder: &mut Builder,
    stmts: &[Stmt],
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    for stmt in stmts {
        // The primal statement is kept as it is (Fig 13's D' on everything
        // non-differentiable), followed by its tangent's statements.
        ops::operation(&stmt.expr).jvp(builder, stmt, tangents)?;
    }
    Ok(())
}

/// The JVP of an operation linear in some of its operands and constant in the others: the
/// statement, then `jvp_linear`'s tangent.
pub(crate) fn jvp_structural(
    builder: &mut Builder,
    stmt: &Stmt,
    tangents: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    builder.stmts.push(stmt.clone());
    jvp_linear(builder, stmt, tangents);
    Ok(())
}

/// Why a form that AD never meets has no derivative.
pub(crate) fn not_differentiated() -> Result<(), AdError> {
    Err(AdError::NoRule(
        "differentiation expects build-free (BOT) input without derivatives".into(),
    ))
}

/// The transpose of a form that is never a linear statement of its own (its linear parts
/// are transposed by `transpose_items`, or it has no linear form).
pub(crate) fn not_a_linear_statement() -> Result<(), AdError> {
    Err(AdError::NotLinear(
        "a linear statement of an unexpected form".into(),
    ))
}

/// The cotangent of a single-result statement's binder, if any contribution reached it.
pub(crate) fn result_ct(stmt: &Stmt, cts: &HashMap<VarId, Atom>) -> Option<Atom> {
    cts.get(&stmt.binders[0]).copied()
}

/// The tangent of a statement linear in some of its operands and constant in the others
/// (`ops::linearity`): the same operation on the tangents of the linear operands, zeros
/// standing for the missing ones ([Smeding25] §6.1: the Delta constructors Index, Gather,
/// Scatter, SumOuter, Replicate, Tr and Reshape are their own derivatives). No tangent when
/// no linear operand has one, or when the result is not a float; a copy's tangent is its
/// operand's.
fn jvp_linear(builder: &mut Builder, stmt: &Stmt, tangents: &mut HashMap<VarId, Atom>) {
    let binder = stmt.binders[0];
    let ty = builder.program.var_ty(binder).clone();
    let ops::Linearity::Structural(linear) = ops::linearity(&stmt.expr) else {
        unreachable!("jvp_linear is called on structural operations only")
    };
    let operands = crate::core::visit::expr_atoms(&stmt.expr);
    let operand_tangents: Vec<Tangent> = operands
        .iter()
        .zip(&linear)
        .map(|(atom, is_linear)| is_linear.then(|| tangent_of(tangents, atom)).flatten())
        .collect();
    if !ty.elem.is_float() || operand_tangents.iter().all(Option::is_none) {
        return;
    }
    if super::copy_of(&stmt.expr).is_some() {
        tangents.insert(binder, operand_tangents[0].expect("checked above"));
        return;
    }
    let mut replaced = Vec::with_capacity(operands.len());
    for ((atom, tangent), is_linear) in operands.iter().zip(operand_tangents).zip(&linear) {
        replaced.push(match (tangent, is_linear) {
            (Some(tangent), _) => tangent,
            (None, true) => builder.zeros(&builder.ty(atom)),
            (None, false) => *atom,
        });
    }
    let mut expr = stmt.expr.clone();
    let mut position = 0;
    crate::core::visit::map_expr_atoms(&mut expr, &mut |_| {
        position += 1;
        replaced[position - 1]
    });
    crate::core::visit::map_expr_blocks(&mut expr, &mut |block| {
        clone_block(builder.program, block, &mut HashMap::new())
    });
    let hint = format!("{}_dot", builder.program.vars[binder].hint);
    let tangent = builder.emit1(expr, ty, &hint);
    tangents.insert(binder, tangent);
}

/// A linear statement to transpose: an ordinary one, or a loop whose primal part runs
/// forward as a scan that stacks the carry entering every iteration (`stacked`, one per
/// primal carry), so that the backward loop can recompute each iteration's primal values.
#[derive(Clone, Debug)]
pub(crate) enum LinearItem {
    Stmt(Stmt),
    Loop {
        stmt: Stmt,
        stacked: Vec<VarId>,
    },
    /// A while, whose primal part runs forward as the while `primal_body` over the primal
    /// carries; its transpose replays it (Note [Reverse mode through a while loop]).
    While {
        stmt: Stmt,
        primal_body: BlockId,
    },
}

/// Splits statements into the forward (primal) ones and the linear ones to transpose.
pub(crate) fn split(program: &mut Program, stmts: &[Stmt]) -> (Vec<Stmt>, Vec<LinearItem>) {
    let mut forward = Vec::new();
    let mut items = Vec::new();
    for stmt in stmts {
        let linear = |binder: &VarId| program.vars[*binder].linear;
        let (any_linear, all_linear) = (
            stmt.binders.iter().any(linear),
            stmt.binders.iter().all(linear),
        );
        if !any_linear {
            forward.push(stmt.clone());
        } else if let Some(primal) = crate::ops::monoid::primal_of_jvp(program, stmt) {
            // A differentiated monoid statement: its primal part runs forward, and the whole
            // statement is transposed ([Paszke21] Thm 3.7).
            forward.push(primal);
            items.push(LinearItem::Stmt(stmt.clone()));
        } else if all_linear {
            items.push(LinearItem::Stmt(stmt.clone()));
        } else {
            let split = ops::operation(&stmt.expr).split_linear(program, stmt);
            let (primal, item) = split.unwrap_or_else(|| {
                panic!(
                    "ad: `{}` binds primal and linear values but has no rule to split them",
                    crate::core::print::expr_name(&stmt.expr)
                )
            });
            forward.push(primal);
            items.push(item);
        }
    }
    (forward, items)
}

/// Transposes the linear part of a forward derivative ([Smeding25] §7.3, Fig 19).
pub fn vjp(program: &mut Program, jvp: &Jvp) -> Result<Vjp, AdError> {
    let (forward, items) = split(program, &jvp.stmts);
    let mut builder = Builder::new(program);
    // Cotangent parameters, seeded into the tangents of the results.
    let mut cts: HashMap<VarId, Atom> = HashMap::new();
    let mut ct_params = Vec::new();
    for (result, tangent) in jvp.results.iter().zip(&jvp.tangent_results) {
        let ty = builder.ty(result);
        let ct_param = builder.program.new_linear_var(ty, "ct");
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

pub(crate) fn transpose_items(
    builder: &mut Builder,
    items: &[LinearItem],
    cts: &mut HashMap<VarId, Atom>,
) -> Result<(), AdError> {
    for item in items.iter().rev() {
        match item {
            LinearItem::Stmt(stmt) => ops::operation(&stmt.expr).transpose(builder, stmt, cts)?,
            LinearItem::Loop { stmt, stacked } => {
                ops::loops::transpose_loop(builder, stmt, stacked, cts)?
            }
            LinearItem::While { stmt, primal_body } => {
                ops::while_loop::transpose_while(builder, stmt, *primal_body, cts)?
            }
        }
    }
    Ok(())
}

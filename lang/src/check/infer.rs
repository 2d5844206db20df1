//! Type and shape inference for one top-level declaration (Hindley–Milner with deferred class
//! constraints and symbolic static sizes).
//!
//! - Unannotated `for` binders get a fresh variable constrained to be an index set; the way
//!   the index is used decides it (LANGUAGE.md §3).
//! - Literals are polymorphic: an integer literal is any numeric type (default `Nat`), a float
//!   literal any float type (default `Float32`).
//! - Definitions are generalised: `given` binders, implicit index-set names in the signature
//!   and unresolved parameter types become rigid variables with the classes they need.
//!   Call sites instantiate them; the lowering specialises the body with concrete types.
//! - Class constraints are collected and solved when types are known; what is left at the end
//!   of a declaration is defaulted or reported.

use std::collections::HashMap;

use super::builtins::{Builtin, Class};
use super::env::GlobalEnv;
use super::typed::{DefInfo, DefKey, TExpr, TKind, TPat, TStmt};
use super::types::{BaseTy, LocalId, Rigid, Size, Ty, TyVar};
use super::TypeError;
use crate::prim::Prim;
use crate::syntax::ast::{
    BinOp, Expr, ExprKind, FunDef, Ident, LetBinding, Lit, NumberValue, Param, Pattern, Stmt,
    TypeExpr, TypeExprKind,
};
use crate::syntax::Span;

type Result<T> = std::result::Result<T, TypeError>;

fn error<T>(span: Span, message: impl Into<String>) -> Result<T> {
    Err(TypeError::new(span, message))
}

/// What a name in scope stands for.
#[derive(Clone, Debug)]
enum Binding {
    Local(LocalId, Ty),
    Def(LocalId, Box<DefInfo>),
    /// A type variable (a `given` binder or implicit index set) usable in types.
    TypeVar(Ty),
}

#[derive(Clone, Debug)]
struct Pending {
    class: Class,
    ty: Ty,
    span: Span,
}

/// The inference state of one declaration.
pub struct Infer<'env> {
    pub env: &'env mut GlobalEnv,
    subst: Vec<Option<Ty>>,
    /// Default type of a literal's variable when nothing else decides it.
    defaults: HashMap<TyVar, BaseTy>,
    pending: Vec<Pending>,
    scale: Vec<(Ty, Ty, Span)>,
    scopes: Vec<(String, Binding)>,
    /// Leave ambiguous index sets unresolved instead of reporting them (`:t`).
    lenient: bool,
    /// Errors of let-block statements, reported with the declaration's other errors
    /// (Note [Independent errors]).
    recovered: Vec<TypeError>,
    /// The definitions being checked, innermost last (to explain a recursive call).
    defining: Vec<String>,
}

// Note [Independent errors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A statement of a let-block that does not check is recorded, and its names are bound to
// fresh type variables, so that checking goes on with the next statement: a block with two
// unrelated mistakes reports both, each at its place. A fresh variable unifies with anything,
// so an error is not repeated where a later statement uses the broken name. The declaration
// then fails with all its errors, in source order (`TypeError::also`).

const MAX_DEPTH: usize = 2_000;

impl<'env> Infer<'env> {
    pub fn new(env: &'env mut GlobalEnv) -> Infer<'env> {
        Infer {
            env,
            subst: Vec::new(),
            defaults: HashMap::new(),
            pending: Vec::new(),
            scale: Vec::new(),
            scopes: Vec::new(),
            lenient: false,
            recovered: Vec::new(),
            defining: Vec::new(),
        }
    }

    pub fn fresh_var(&mut self) -> TyVar {
        self.subst.push(None);
        TyVar(self.subst.len() as u32 - 1)
    }

    /// A variable for a float literal or a conversion to float (default `Float32`).
    pub fn fresh_float_var(&mut self, span: Span) -> TyVar {
        let var = self.fresh_var();
        self.defaults.insert(var, BaseTy::Float32);
        self.constrain(Class::Float, Ty::Var(var), span);
        var
    }

    fn fresh_int_literal_var(&mut self, span: Span) -> TyVar {
        let var = self.fresh_var();
        self.defaults.insert(var, BaseTy::Nat);
        self.constrain(Class::Num, Ty::Var(var), span);
        var
    }

    pub fn constrain(&mut self, class: Class, ty: Ty, span: Span) {
        self.pending.push(Pending { class, ty, span });
    }

    /// `s .* a`: the scalars of `a` are `s`.
    pub fn constrain_scale(&mut self, scalar: Ty, array: Ty, span: Span) {
        self.scale.push((scalar, array, span));
    }

    fn new_local(&mut self, name: &str) -> LocalId {
        let local = LocalId(self.env.next_local());
        self.env.name_local(local, name);
        local
    }

    // ----- substitution and unification -----

    /// Applies the substitution everywhere in a type.
    pub fn zonk(&self, ty: &Ty) -> Ty {
        match ty {
            Ty::Var(var) => match &self.subst[var.0 as usize] {
                Some(bound) => self.zonk(bound),
                None => ty.clone(),
            },
            Ty::Base(_) | Ty::Rigid(..) => ty.clone(),
            Ty::Fin(size) => Ty::Fin(map_size(size, &mut |inner| match inner {
                Size::Of(of) => Some(Size::Of(Box::new(self.zonk(of))).normalise()),
                _ => None,
            })),
            Ty::Table(ix, elem) => Ty::table(self.zonk(ix), self.zonk(elem)),
            Ty::Tuple(items) => Ty::Tuple(items.iter().map(|item| self.zonk(item)).collect()),
            Ty::Fun {
                param,
                binder,
                result,
            } => Ty::Fun {
                param: Box::new(self.zonk(param)),
                binder: *binder,
                result: Box::new(self.zonk(result)),
            },
            Ty::TypeArg(inner) => Ty::TypeArg(Box::new(self.zonk(inner))),
        }
    }

    fn occurs(&self, var: TyVar, ty: &Ty) -> bool {
        self.zonk(ty).any(&mut |inner| *inner == Ty::Var(var))
    }

    /// Unifies the type the context expects with the type found.
    pub fn unify(&mut self, expected: &Ty, found: &Ty, span: Span) -> Result<()> {
        let expected = self.zonk(expected);
        let found = self.zonk(found);
        if self.unify_inner(&expected, &found).is_err() {
            let (expected, found) = (self.zonk(&expected), self.zonk(&found));
            return error(span, format!("expected type {expected}, found {found}"));
        }
        Ok(())
    }

    fn unify_inner(&mut self, a: &Ty, b: &Ty) -> std::result::Result<(), ()> {
        let a = self.zonk(a);
        let b = self.zonk(b);
        match (&a, &b) {
            (Ty::Var(x), Ty::Var(y)) if x == y => Ok(()),
            // Of two variables the newer is bound to the older, so that chains stay short
            // (a table literal of n elements would otherwise zonk in time n²).
            (Ty::Var(x), other @ Ty::Var(y)) | (other @ Ty::Var(y), Ty::Var(x)) if x > y => {
                self.bind_var(*x, other)
            }
            (Ty::Var(x), other) | (other, Ty::Var(x)) => self.bind_var(*x, other),
            (Ty::Base(x), Ty::Base(y)) if x == y => Ok(()),
            (Ty::Fin(x), Ty::Fin(y)) => {
                if x.normalise() == y.normalise() {
                    Ok(())
                } else {
                    Err(())
                }
            }
            (Ty::Table(i1, e1), Ty::Table(i2, e2)) => {
                self.unify_inner(i1, i2)?;
                self.unify_inner(e1, e2)
            }
            (Ty::Tuple(xs), Ty::Tuple(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.unify_inner(x, y)?;
                }
                Ok(())
            }
            (
                Ty::Fun {
                    param: p1,
                    result: r1,
                    ..
                },
                Ty::Fun {
                    param: p2,
                    result: r2,
                    ..
                },
            ) => {
                self.unify_inner(p1, p2)?;
                self.unify_inner(r1, r2)
            }
            (Ty::Rigid(x, _), Ty::Rigid(y, _)) if x == y => Ok(()),
            (Ty::TypeArg(x), Ty::TypeArg(y)) => self.unify_inner(x, y),
            _ => Err(()),
        }
    }

    /// Binds a unification variable to a type (not itself).
    fn bind_var(&mut self, x: TyVar, other: &Ty) -> std::result::Result<(), ()> {
        if self.occurs(x, other) {
            return Err(());
        }
        // When two literal variables meet, the stronger default wins
        // (`Nat` < `Int32` < `Float32`: `-7 + 1` is an `Int32`, `1 + 1.0` a `Float32`).
        if let (Some(default), Ty::Var(y)) = (self.defaults.get(&x).copied(), other) {
            let rank = |base: BaseTy| match base {
                BaseTy::Nat => 0,
                BaseTy::Int32 => 1,
                _ => 2,
            };
            let merged = match self.defaults.get(y) {
                Some(existing) if rank(*existing) >= rank(default) => *existing,
                _ => default,
            };
            self.defaults.insert(*y, merged);
        }
        self.subst[x.0 as usize] = Some(other.clone());
        Ok(())
    }

    // ----- constraints -----

    /// Whether `class` holds for `ty`: `Some(true/false)` when decided, `None` while a
    /// variable blocks the decision (the constraint is then on that variable).
    fn class_holds(&self, class: Class, ty: &Ty) -> std::result::Result<bool, Ty> {
        match self.zonk(ty) {
            Ty::Var(var) => Err(Ty::Var(var)),
            Ty::Base(base) => Ok(class.holds_for_base(base)),
            Ty::Fin(_) => Ok(class.holds_for_index()),
            Ty::Rigid(rigid, _) => Ok(self.env.rigid_classes(rigid).contains(&class)),
            Ty::Table(_, elem) => {
                // Tables compare element by element (Dex's `Eq`/`Ord` of `n=>a`).
                if class.is_lifted() || class.is_structural() {
                    self.class_holds(class, &elem)
                } else {
                    Ok(false)
                }
            }
            Ty::Tuple(items) => {
                // Tuples compare component by component, tuples of indices are pair indices
                // (Ix); lifted classes lift.
                if class.is_lifted() || class.is_structural() || class == Class::Ix {
                    for item in &items {
                        match self.class_holds(class, item) {
                            Ok(true) => {}
                            other => return other,
                        }
                    }
                    Ok(true)
                } else {
                    Ok(false)
                }
            }
            Ty::Fun { .. } | Ty::TypeArg(_) => Ok(false),
        }
    }

    /// An `a: Type` parameter used as an index set (`size a`, `for i:a`) is one: the
    /// definition's callers must then pass an index set.
    fn type_param_used_as_index(&mut self, item: &Pending) -> bool {
        let ix_class = matches!(item.class, Class::Ix | Class::Eq | Class::Ord);
        match self.zonk(&item.ty) {
            Ty::Rigid(rigid, _) if ix_class => self.env.type_param_as_index(rigid),
            _ => false,
        }
    }

    /// Solves what can be solved; keeps the rest. With `finish`, applies defaults and
    /// reports what remains ambiguous.
    fn solve(&mut self, finish: bool) -> Result<()> {
        loop {
            let mut progress = false;
            // `.*`: the scalar has the type of the value's first scalar (the lowering casts it
            // to each leaf's type); for a `VSpace` variable it is a `Float` by default.
            let scale = std::mem::take(&mut self.scale);
            for (scalar, array, span) in scale {
                let leaf = first_leaf(&self.zonk(&array));
                match leaf {
                    Some(Ty::Var(_)) if !finish => self.scale.push((scalar, array, span)),
                    Some(Ty::Rigid(rigid, _))
                        if !self.env.rigid_classes(rigid).contains(&Class::Float) =>
                    {
                        progress = true;
                    }
                    Some(leaf) => {
                        self.unify(&scalar, &leaf, span)?;
                        progress = true;
                    }
                    None => progress = true,
                }
            }
            let pending = std::mem::take(&mut self.pending);
            for item in pending {
                match self.class_holds(item.class, &item.ty) {
                    Ok(true) => {}
                    Ok(false) if self.type_param_used_as_index(&item) => progress = true,
                    Ok(false) => {
                        let ty = self.zonk(&item.ty);
                        let message = match item.class {
                            Class::Ix => format!("{ty} is not an index set"),
                            Class::Float => {
                                format!("expected a floating-point number here, found type {ty}")
                            }
                            Class::Floating => {
                                format!("type {ty} does not support floating-point functions")
                            }
                            Class::Num if matches!(ty, Ty::Table(..) | Ty::Tuple(_)) => {
                                format!("a number here is a scalar; it cannot have type {ty}")
                            }
                            // `(\x. x) 1 2`: the number is what gets the extra argument.
                            Class::Num if matches!(ty, Ty::Fun { .. }) => format!(
                                "this number is used as a function here (type {ty}): is \
                                 something given too many arguments?"
                            ),
                            Class::Num => format!("expected a number here, found type {ty}"),
                            // Dex has no `Sub Nat`: `2 - 4` is not a natural number.
                            Class::Sub if ty == Ty::nat() => {
                                "`Nat` has no subtraction (as in Dex): \
                                 convert with `n_to_i`, or annotate the operands as `Int`"
                                    .to_string()
                            }
                            class if matches!(ty, Ty::Fun { .. }) => format!(
                                "this is a function here (type {ty}), which does not support {}: \
                                 is something given too many arguments?",
                                class_operation(class)
                            ),
                            class => {
                                format!("type {ty} does not support {}", class_operation(class))
                            }
                        };
                        return error(item.span, message);
                    }
                    Err(blocking) => self.pending.push(Pending {
                        ty: blocking,
                        ..item
                    }),
                }
            }
            if !finish || progress {
                if progress {
                    continue;
                }
                return Ok(());
            }
            // Defaults: literals first, then numeric classes default to Float32.
            let mut defaulted = false;
            for index in 0..self.pending.len() {
                let item = self.pending[index].clone();
                if let Ty::Var(var) = self.zonk(&item.ty) {
                    let default = match self.defaults.get(&var) {
                        // An integer literal that is subtracted is an `Int32` (`2 - 4` is -2).
                        Some(BaseTy::Nat) if self.has_pending(Class::Sub, var) => {
                            Some(BaseTy::Int32)
                        }
                        Some(default) => Some(*default),
                        None => match item.class {
                            Class::Ix if self.lenient => None,
                            Class::Ix => {
                                return error(
                                    item.span,
                                    "cannot infer the index set here: annotate it, e.g. `for i:(Fin 3).`",
                                )
                            }
                            _ if self.lenient => None,
                            _ => Some(BaseTy::Float32),
                        },
                    };
                    if let Some(base) = default {
                        self.subst[var.0 as usize] = Some(Ty::Base(base));
                        defaulted = true;
                    }
                }
            }
            if !defaulted && self.scale.is_empty() {
                return Ok(());
            }
        }
    }

    /// Records the error of a let-block statement and binds its names to fresh variables
    /// (Note [Independent errors]). Errors inside the statement's own recovery (a name bound
    /// twice) stop the declaration.
    fn recover(&mut self, err: TypeError, names: Vec<&Ident>) -> Result<()> {
        self.recovered.push(err);
        for ident in names {
            let ty = Ty::Var(self.fresh_var());
            let local = self.new_local(&ident.name);
            self.scopes
                .push((ident.name.clone(), Binding::Local(local, ty)));
        }
        Ok(())
    }

    /// The result of checking a whole declaration, with the errors recovered on the way.
    fn with_recovered<T>(&mut self, res: Result<T>) -> Result<T> {
        let mut errors = std::mem::take(&mut self.recovered);
        match res {
            Ok(value) if errors.is_empty() => return Ok(value),
            Ok(_) => {}
            Err(err) => {
                errors.push(err.clone());
                errors.extend(err.also);
            }
        }
        let mut first = errors.remove(0);
        first.also = errors;
        Err(first)
    }

    /// Whether a class constraint on `var` is still pending.
    fn has_pending(&self, class: Class, var: TyVar) -> bool {
        self.pending
            .iter()
            .any(|item| item.class == class && self.zonk(&item.ty) == Ty::Var(var))
    }

    /// Finishes a declaration: solves all constraints and applies defaults.
    pub fn finish(&mut self) -> Result<()> {
        self.solve(true)
    }

    /// Zonks every type in a typed expression.
    pub fn zonk_expr(&self, expr: &mut TExpr) {
        expr.ty = self.zonk(&expr.ty);
        match &mut expr.kind {
            TKind::Local(_)
            | TKind::Global(_)
            | TKind::Builtin(_)
            | TKind::Lit(_)
            | TKind::Numbers(_)
            | TKind::TypeArg => {}
            TKind::Def { inst, .. } => {
                for ty in inst {
                    *ty = self.zonk(ty);
                }
            }
            TKind::Lam { body, .. } | TKind::For { body, .. } | TKind::At(body) => {
                self.zonk_expr(body)
            }
            TKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.zonk_expr(cond);
                self.zonk_expr(then_branch);
                self.zonk_expr(else_branch);
            }
            TKind::App { func: a, arg: b } | TKind::Index { base: a, index: b } => {
                self.zonk_expr(a);
                self.zonk_expr(b);
            }
            TKind::Tuple(items) | TKind::Table(items) => {
                for item in items {
                    self.zonk_expr(item);
                }
            }
            TKind::Block { stmts, result } => {
                for stmt in stmts {
                    match stmt {
                        TStmt::Let { value, .. } => self.zonk_expr(value),
                        TStmt::Def { def, .. } => self.zonk_expr(&mut def.body),
                    }
                }
                self.zonk_expr(result);
            }
        }
    }

    // ----- scopes -----

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .find(|(bound, _)| bound == name)
            .map(|(_, binding)| binding)
    }

    fn with_scope<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let depth = self.scopes.len();
        let res = f(self);
        self.scopes.truncate(depth);
        res
    }

    // ----- types written by the user -----

    /// Reads a type expression. `implicit`, when given, collects unknown lower-case names as
    /// implicit index-set variables (in a `def` signature).
    fn read_type(
        &mut self,
        texpr: &TypeExpr,
        implicit: &mut Option<&mut Vec<(String, Rigid)>>,
    ) -> Result<Ty> {
        match &texpr.kind {
            TypeExprKind::Name(ident) => self.read_type_name(&ident.name, texpr.span, implicit),
            TypeExprKind::Fin(size) => Ok(Ty::Fin(self.read_size(size)?)),
            TypeExprKind::Table(ix, elem) => {
                let ix_ty = self.read_type(ix, implicit)?;
                if let (Ty::Rigid(rigid, _), Some(implicit)) = (&ix_ty, implicit.as_ref()) {
                    if implicit.iter().any(|(_, bound)| bound == rigid) {
                        self.env
                            .add_rigid_classes(*rigid, &[Class::Ix, Class::Eq, Class::Ord]);
                    }
                }
                self.constrain(Class::Ix, ix_ty.clone(), ix.span);
                Ok(Ty::table(ix_ty, self.read_type(elem, implicit)?))
            }
            TypeExprKind::Tuple(items) => Ok(Ty::Tuple(
                items
                    .iter()
                    .map(|item| self.read_type(item, implicit))
                    .collect::<Result<_>>()?,
            )),
            TypeExprKind::Fun(params, result) => {
                let params = params
                    .iter()
                    .map(|param| self.read_type(param, implicit))
                    .collect::<Result<_>>()?;
                Ok(Ty::funs(params, self.read_type(result, implicit)?))
            }
            TypeExprKind::Hole => Ok(Ty::Var(self.fresh_var())),
        }
    }

    fn read_type_name(
        &mut self,
        name: &str,
        span: Span,
        implicit: &mut Option<&mut Vec<(String, Rigid)>>,
    ) -> Result<Ty> {
        let base = BaseTy::from_name(name);
        if let Some(base) = base {
            return Ok(Ty::Base(base));
        }
        if let Some(Binding::TypeVar(ty)) = self.lookup(name) {
            return Ok(ty.clone());
        }
        if let Some(ty) = self.env.aliases.get(name) {
            return Ok(ty.clone());
        }
        if let Some(implicit) = implicit {
            if let Some((_, rigid)) = implicit.iter().find(|(bound, _)| bound == name) {
                return Ok(Ty::Rigid(*rigid, name.to_string()));
            }
            if name.starts_with(|c: char| c.is_lowercase()) {
                // Implicit variables get `Ix` only where they index a table (see `read_type`).
                let rigid = self.env.new_rigid(Vec::new());
                implicit.push((name.to_string(), rigid));
                self.scopes.push((
                    name.to_string(),
                    Binding::TypeVar(Ty::Rigid(rigid, name.to_string())),
                ));
                return Ok(Ty::Rigid(rigid, name.to_string()));
            }
        }
        error(span, format!("unknown type `{name}`"))
    }

    /// Reads a size: a literal, a `Nat` parameter, a top-level `Nat`, `size n`, arithmetic.
    fn read_size(&mut self, expr: &Expr) -> Result<Size> {
        let not_static = || {
            error(
                expr.span,
                "a size must be known when the block is compiled (a literal, a top-level Nat, `size n`, or a Nat parameter)",
            )
        };
        match &expr.kind {
            ExprKind::Lit(Lit::Int(n)) if *n > u64::from(u32::MAX) => error(
                expr.span,
                format!("{n} does not fit in a Nat (from 0 to {})", u32::MAX),
            ),
            ExprKind::Lit(Lit::Int(n)) => Ok(Size::Const(*n)),
            ExprKind::Var(ident) => match self.lookup(&ident.name) {
                Some(Binding::Local(local, _)) => Ok(Size::Local(*local, ident.name.clone())),
                Some(_) => not_static(),
                None => match self.env.static_nats.get(&ident.name) {
                    Some(n) => Ok(Size::Const(*n)),
                    None => match self.env.values.get(&ident.name) {
                        Some(ty) if *ty != Ty::nat() => error(
                            expr.span,
                            format!("a size is a Nat, but `{}` has type {ty}", ident.name),
                        ),
                        _ => not_static(),
                    },
                },
            },
            // Sizes are `Nat`s, with `Nat`'s rules: no subtraction (as in Dex), but
            // `unsafe_nat_diff`, which must not go below zero.
            ExprKind::App { func, arg, .. } if is_nat_diff(func) => {
                let ExprKind::App { arg: lhs, .. } = &func.kind else {
                    return not_static();
                };
                let (a, b) = (self.read_size(lhs)?, self.read_size(arg)?);
                if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
                    if x < y {
                        return error(expr.span, format!("this size is negative: {x} - {y}"));
                    }
                }
                Ok(Size::Sub(Box::new(a), Box::new(b)))
            }
            ExprKind::BinOp { op: BinOp::Sub, .. } => error(
                expr.span,
                "a size is a Nat, and `Nat` has no subtraction (as in Dex): use \
                 `unsafe_nat_diff a b` when `a >= b`",
            ),
            ExprKind::App {
                func,
                arg,
                name: None,
            } if is_var(func, "size") => {
                let ty = self.read_type_of_expr(arg)?;
                size_of_ix(&ty).map_or_else(not_static, Ok)
            }
            ExprKind::BinOp { op, lhs, rhs } => {
                let (a, b) = (
                    Box::new(self.read_size(lhs)?),
                    Box::new(self.read_size(rhs)?),
                );
                match op {
                    BinOp::Add => Ok(Size::Add(a, b)),
                    BinOp::Mul => Ok(Size::Mul(a, b)),
                    BinOp::Div => Ok(Size::Div(a, b)),
                    _ => not_static(),
                }
            }
            ExprKind::Annot { expr, .. } => self.read_size(expr),
            _ => not_static(),
        }
    }

    /// Reads an expression in type position (`iota (Fin 5)`, `size n`, `linspace (Fin n)`).
    fn read_type_of_expr(&mut self, expr: &Expr) -> Result<Ty> {
        match &expr.kind {
            ExprKind::Hole => Ok(Ty::Var(self.fresh_var())),
            ExprKind::Var(ident) => self.read_type_name(&ident.name, expr.span, &mut None),
            ExprKind::App {
                func,
                arg,
                name: None,
            } if is_var(func, "Fin") => Ok(Ty::Fin(self.read_size(arg)?)),
            ExprKind::Tuple(items) => Ok(Ty::Tuple(
                items
                    .iter()
                    .map(|item| self.read_type_of_expr(item))
                    .collect::<Result<_>>()?,
            )),
            _ => error(
                expr.span,
                "expected a type here (such as `Fin 5` or an index-set name)",
            ),
        }
    }

    // ----- expressions -----

    pub fn infer(&mut self, expr: &Expr) -> Result<TExpr> {
        self.infer_depth(expr, 0)
    }

    fn infer_depth(&mut self, expr: &Expr, depth: usize) -> Result<TExpr> {
        if depth > MAX_DEPTH {
            return error(expr.span, "expression nested too deeply");
        }
        let span = expr.span;
        let texpr = |kind, ty| TExpr { kind, ty, span };
        match &expr.kind {
            ExprKind::Var(ident) => self.infer_var(&ident.name, span),
            ExprKind::Lit(lit) => {
                let ty = match lit {
                    Lit::Int(_) => Ty::Var(self.fresh_int_literal_var(span)),
                    Lit::Float(_) => Ty::Var(self.fresh_float_var(span)),
                    Lit::Bool(_) => Ty::bool(),
                    Lit::Str(_) => {
                        return error(
                            span,
                            "strings are not values in dx (a file name is read only by a top-level `xs : T = load_npy \"file\"` or `save_npy \"file\" xs`)",
                        )
                    }
                };
                Ok(texpr(TKind::Lit(lit.clone()), ty))
            }
            ExprKind::Lam { params, body } => self.infer_lambda(params, body, span, depth),
            ExprKind::For { binders, body } => self.with_scope(|cx| {
                check_distinct(binders.iter().map(|binder| &binder.name))?;
                let mut locals = Vec::new();
                for binder in binders {
                    let ix = match &binder.ty {
                        Some(ty) => cx.read_type(ty, &mut None)?,
                        None => Ty::Var(cx.fresh_var()),
                    };
                    cx.constrain(Class::Ix, ix.clone(), binder.name.span);
                    let local = cx.new_local(&binder.name.name);
                    cx.scopes
                        .push((binder.name.name.clone(), Binding::Local(local, ix.clone())));
                    locals.push((local, ix));
                }
                let mut res = cx.infer_depth(body, depth + 1)?;
                for (local, ix) in locals.into_iter().rev() {
                    let ty = Ty::table(ix, res.ty.clone());
                    res = TExpr {
                        kind: TKind::For {
                            binder: local,
                            body: Box::new(res),
                        },
                        ty,
                        span,
                    };
                }
                Ok(res)
            }),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let cond = self.infer_depth(cond, depth + 1)?;
                self.unify(&Ty::bool(), &cond.ty, cond.span)?;
                let then_branch = self.infer_depth(then_branch, depth + 1)?;
                let else_branch = self.infer_depth(else_branch, depth + 1)?;
                self.unify(&then_branch.ty, &else_branch.ty, else_branch.span)?;
                let ty = then_branch.ty.clone();
                Ok(texpr(
                    TKind::If {
                        cond: Box::new(cond),
                        then_branch: Box::new(then_branch),
                        else_branch: Box::new(else_branch),
                    },
                    ty,
                ))
            }
            ExprKind::App { func, arg, name } => {
                let given = match name {
                    Some(name) => self.check_arg_name(func, name)?,
                    None => None,
                };
                let func = self.infer_depth(func, depth + 1)?;
                match given {
                    Some(position) => self.fill_given(func, position, arg, span),
                    None => self.apply(func, arg, span, depth),
                }
            }
            ExprKind::Section(op) => self.binop_function(*op, span),
            ExprKind::Hole => error(
                span,
                "`_` stands for a type to be inferred; it is not a value",
            ),
            ExprKind::BinOp { op, lhs, rhs } => {
                let func = self.binop_function(*op, span)?;
                let lhs_span = lhs.span;
                let partial = self.apply(func, lhs, lhs_span.to(span), depth)?;
                let res = match self.apply(partial, rhs, span, depth) {
                    Ok(res) => res,
                    Err(err) => {
                        self.check_scalar_variable_with_table(*op, lhs, rhs)?;
                        return Err(err);
                    }
                };
                self.check_number_with_table(*op, lhs, rhs, &res)?;
                Ok(res)
            }
            ExprKind::Neg(inner) if matches!(inner.kind, ExprKind::Lit(Lit::Int(_))) => {
                // `-7` cannot be a `Nat`: a negative integer literal defaults to `Int32`.
                let res = self.infer_neg(inner, span, depth)?;
                if let Ty::Var(var) = self.zonk(&res.ty) {
                    self.defaults.insert(var, BaseTy::Int32);
                }
                Ok(res)
            }
            ExprKind::Neg(inner) => self.infer_neg(inner, span, depth),
            ExprKind::Index { base, indices } => {
                let mut res = self.infer_depth(base, depth + 1)?;
                for index in indices {
                    res = self.infer_index(res, index, depth)?;
                }
                Ok(res)
            }
            ExprKind::Tuple(items) => {
                let items = items
                    .iter()
                    .map(|item| self.infer_depth(item, depth + 1))
                    .collect::<Result<Vec<_>>>()?;
                let ty = Ty::Tuple(items.iter().map(|item| item.ty.clone()).collect());
                Ok(texpr(TKind::Tuple(items), ty))
            }
            ExprKind::Table(items) => {
                let elem = Ty::Var(self.fresh_var());
                let mut typed = Vec::with_capacity(items.len());
                for item in items {
                    let item = self.infer_depth(item, depth + 1)?;
                    self.unify(&elem, &item.ty, item.span)?;
                    typed.push(item);
                }
                let ty = Ty::table(Ty::Fin(Size::Const(typed.len() as u64)), elem);
                Ok(texpr(TKind::Table(typed), ty))
            }
            ExprKind::Numbers(numbers) => {
                // Every number has the element type, so typing the first number of each form
                // (`2`, `-2`, `2.5`, `-2.5`) as the expression rules do gives the element type
                // all the constraints of the others. `check_literals` then checks each one.
                let elem = Ty::Var(self.fresh_var());
                let mut typed_forms = [false; 4];
                for number in numbers {
                    let is_float = matches!(number.value, NumberValue::Float(_));
                    let form = 2 * usize::from(number.negated) + usize::from(is_float);
                    if !std::mem::replace(&mut typed_forms[form], true) {
                        let item = self.infer_depth(&number.expr(), depth + 1)?;
                        self.unify(&elem, &item.ty, number.span)?;
                    }
                }
                let ty = Ty::table(Ty::Fin(Size::Const(numbers.len() as u64)), elem);
                Ok(texpr(TKind::Numbers(numbers.clone()), ty))
            }
            ExprKind::At { value, ty } => {
                self.check_at_target(ty)?;
                let target = self.read_type(ty, &mut None)?;
                self.constrain(Class::Ix, target.clone(), ty.span);
                let value = self.infer_depth(value, depth + 1)?;
                self.constrain(Class::Num, value.ty.clone(), value.span);
                Ok(texpr(TKind::At(Box::new(value)), target))
            }
            ExprKind::Annot { expr: inner, ty } => {
                let annotated = self.read_type(ty, &mut None)?;
                let inner = self.infer_depth(inner, depth + 1)?;
                self.unify(&annotated, &inner.ty, inner.span)?;
                Ok(inner)
            }
            ExprKind::Block { stmts, result } => self.with_scope(|cx| {
                let mut typed = Vec::new();
                for stmt in stmts {
                    match stmt {
                        // Constraints are solved after each statement, so that a statement's
                        // errors are found while it is the one being checked.
                        Stmt::Let(binding) => match cx
                            .infer_let(binding, depth)
                            .and_then(|res| cx.solve(false).map(|()| res))
                        {
                            Ok((pat, value)) => typed.push(TStmt::Let { pat, value }),
                            Err(err) => cx.recover(err, binding.pat.names())?,
                        },
                        Stmt::Def(def) => {
                            let info = match cx.infer_def(def) {
                                Ok(info) => info,
                                Err(err) => {
                                    cx.recover(err, vec![&def.name])?;
                                    continue;
                                }
                            };
                            let id = cx.new_local(&def.name.name);
                            cx.scopes.push((
                                def.name.name.clone(),
                                Binding::Def(id, Box::new(info.clone())),
                            ));
                            typed.push(TStmt::Def {
                                id,
                                def: Box::new(info),
                            });
                        }
                    }
                }
                let result = cx.infer_depth(result, depth + 1)?;
                let ty = result.ty.clone();
                Ok(texpr(
                    TKind::Block {
                        stmts: typed,
                        result: Box::new(result),
                    },
                    ty,
                ))
            }),
        }
    }

    fn infer_neg(&mut self, inner: &Expr, span: Span, depth: usize) -> Result<TExpr> {
        let func = TExpr {
            kind: TKind::Builtin(Builtin::Prim(Prim::Neg)),
            ty: Ty::float(),
            span,
        };
        let func = self.instantiate_builtin(func, Builtin::Prim(Prim::Neg), span);
        self.apply(func, inner, span, depth)
    }

    fn infer_var(&mut self, name: &str, span: Span) -> Result<TExpr> {
        match self.lookup(name).cloned() {
            Some(Binding::Local(local, ty)) => {
                return Ok(TExpr {
                    kind: TKind::Local(local),
                    ty,
                    span,
                })
            }
            Some(Binding::Def(id, info)) => {
                return Ok(self.instantiate_def(&info, DefKey::Local(id), span))
            }
            Some(Binding::TypeVar(_)) => {
                return error(
                    span,
                    format!("`{name}` is a type; it can only be passed where a type is expected"),
                )
            }
            None => {}
        }
        if let Some(ty) = self.env.values.get(name) {
            return Ok(TExpr {
                kind: TKind::Global(name.to_string()),
                ty: ty.clone(),
                span,
            });
        }
        if let Some((key, info)) = self.env.def(name) {
            let (key, info) = (key.clone(), info.clone());
            return Ok(self.instantiate_def(&info, DefKey::Top(key), span));
        }
        if let Some(builtin) = Builtin::lookup(name) {
            let func = TExpr {
                kind: TKind::Builtin(builtin),
                ty: Ty::float(),
                span,
            };
            return Ok(self.instantiate_builtin(func, builtin, span));
        }
        if self.env.aliases.contains_key(name) || name == "Fin" {
            return error(
                span,
                format!("`{name}` is a type; it can only be passed where a type is expected"),
            );
        }
        if crate::data::DataOp::from_name(name).is_some() {
            return error(
                span,
                format!("`{name}` is used on its own at the top of a block: `xs : T = load_npy \"file\"`, `save_npy \"file\" xs`"),
            );
        }
        if self.defining.iter().any(|defining| defining == name) {
            return error(
                span,
                format!(
                    "`{name}` calls itself: dx inlines every function, so a definition cannot \
                     be recursive (use `fold`, `scan` or `apply_n` to repeat)"
                ),
            );
        }
        error(
            span,
            format!("unbound variable `{name}`{}", self.did_you_mean(name)),
        )
    }

    /// `x @ y` with a value `y` is NumPy's matrix product, which dx writes `**`: `@` converts
    /// an index to an index set.
    fn check_at_target(&self, ty: &crate::syntax::ast::TypeExpr) -> Result<()> {
        let crate::syntax::ast::TypeExprKind::Name(ident) = &ty.kind else {
            return Ok(());
        };
        let name = ident.name.as_str();
        let is_value = matches!(
            self.lookup(name),
            Some(Binding::Local(..) | Binding::Def(..))
        ) || self.env.values.contains_key(name)
            || self.env.def(name).is_some();
        if !is_value || self.env.aliases.contains_key(name) {
            return Ok(());
        }
        error(
            ty.span,
            format!(
                "`@` converts an index to an index set (`i @ Fin 5`), and `{name}` is a value, \
                 not an index set: for NumPy's matrix product write `**` (matrix × matrix), \
                 `**.` (matrix × vector), `.**` (vector × matrix) or `dot` (vector · vector)"
            ),
        )
    }

    /// ` (did you mean `x`?)` for the name in scope closest to `name`, or nothing.
    fn did_you_mean(&self, name: &str) -> String {
        let locals = self.scopes.iter().rev().map(|(bound, _)| bound.as_str());
        let globals = self.env.names().map(String::as_str);
        let candidates = locals
            .chain(globals)
            .chain(Builtin::names().iter().copied());
        match super::suggest::closest(name, candidates) {
            Some(close) => format!(" (did you mean `{close}`?)"),
            None => String::new(),
        }
    }

    /// A named argument (`linspace(n=Fin 5, 0.0, 1.0)`) is passed in its place: its name must
    /// be the name of the parameter there, when the function is a `def` (built-ins accept any
    /// name). Or it names one of the `def`'s implicit variables (`split_key(n=2, k)`, as Dex's
    /// explicit instantiation of implicit arguments): then it is no argument, and the result
    /// is the variable's position in the definition's instantiation (see `fill_given`).
    fn check_arg_name(&self, func: &Expr, name: &Ident) -> Result<Option<usize>> {
        let mut head = func;
        let mut arg_names = Vec::new();
        while let ExprKind::App { func, name, .. } = &head.kind {
            arg_names.push(name.as_ref());
            head = func;
        }
        let ExprKind::Var(ident) = &head.kind else {
            return Ok(None);
        };
        let info = match self.lookup(&ident.name) {
            Some(Binding::Def(_, info)) => Some(&**info),
            Some(_) => None,
            None => self.env.def(&ident.name).map(|(_, info)| info),
        };
        let Some(info) = info else {
            return Ok(None);
        };
        let params = info.param_names();
        let implicit = |name: &str| {
            info.implicit
                .iter()
                .position(|n| n.as_deref() == Some(name))
        };
        // The position of this argument: the earlier ones, less those that filled a variable.
        let position = arg_names
            .iter()
            .rev()
            .filter(|earlier| {
                earlier.is_none_or(|earlier| {
                    params.contains(&Some(earlier.name.clone()))
                        || implicit(&earlier.name).is_none()
                })
            })
            .count();
        match params.get(position) {
            Some(Some(param)) if *param == name.name => Ok(None),
            _ if implicit(&name.name).is_some() => Ok(implicit(&name.name)),
            Some(Some(param)) => {
                let noun = if info.implicit.iter().any(Option::is_some) {
                    "parameter or implicit variable"
                } else {
                    "parameter"
                };
                error(
                    name.span,
                    format!(
                        "`{}` has no {noun} `{}` here (this argument is `{param}`{})",
                        ident.name,
                        name.name,
                        implicit_list(info)
                    ),
                )
            }
            Some(None) => Ok(None),
            None => error(
                name.span,
                format!(
                    "too many arguments: `{}` takes {} argument{}{}",
                    ident.name,
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    implicit_list(info)
                ),
            ),
        }
    }

    /// `f(n=T)`: instantiates the implicit variable at `position` of the definition at the
    /// head of `func` with `T`, a type (`Fin 2`) or a size (`2` for `Fin 2`, as LANGUAGE.md's
    /// `split_key(n=2, key)`).
    fn fill_given(
        &mut self,
        func: TExpr,
        position: usize,
        arg: &Expr,
        span: Span,
    ) -> Result<TExpr> {
        let mut head = &func;
        while let TKind::App { func, .. } = &head.kind {
            head = func;
        }
        let TKind::Def { inst, .. } = &head.kind else {
            return error(
                arg.span,
                "only a definition's implicit variables can be named",
            );
        };
        let Some(var) = inst.get(position).cloned() else {
            return error(arg.span, "this definition has no such implicit variable");
        };
        let ty = match self.read_type_of_expr(arg) {
            Ok(ty) => ty,
            Err(_) => Ty::Fin(self.read_size(arg).map_err(|_| {
                TypeError::new(
                    arg.span,
                    "an implicit variable takes a type (`n=Fin 2`) or a size (`n=2`, for `Fin 2`)",
                )
            })?),
        };
        self.unify(&var, &ty, arg.span)?;
        Ok(TExpr { span, ..func })
    }

    fn instantiate_builtin(&mut self, mut func: TExpr, builtin: Builtin, span: Span) -> TExpr {
        func.ty = builtin.instantiate(self, span);
        func
    }

    fn instantiate_def(&mut self, info: &DefInfo, def: DefKey, span: Span) -> TExpr {
        let mut mapping = HashMap::new();
        let mut inst = Vec::new();
        for rigid in &info.vars {
            let var = Ty::Var(self.fresh_var());
            for class in self.env.rigid_classes(*rigid).to_vec() {
                self.constrain(class, var.clone(), span);
            }
            mapping.insert(*rigid, var.clone());
            inst.push(var);
        }
        let ty = substitute_rigids(&info.ty, &mapping);
        TExpr {
            kind: TKind::Def {
                name: info.name.clone(),
                def,
                inst,
            },
            ty,
            span,
        }
    }

    /// The type of a variable operand, when it is a local or a session value (no
    /// instantiation: for error messages only).
    fn variable_type(&self, expr: &Expr) -> Option<Ty> {
        let ExprKind::Var(ident) = &expr.kind else {
            return None;
        };
        match self.lookup(&ident.name) {
            Some(Binding::Local(_, ty)) => Some(self.zonk(ty)),
            Some(_) => None,
            None => self.env.values.get(&ident.name).map(|ty| self.zonk(ty)),
        }
    }

    /// `xs + y` with `xs` a table and `y` a scalar variable failed to type: says why in the
    /// user's terms, as `check_number_with_table` does for a number.
    fn check_scalar_variable_with_table(&self, op: BinOp, lhs: &Expr, rhs: &Expr) -> Result<()> {
        let (Some(lhs_ty), Some(rhs_ty)) = (self.variable_type(lhs), self.variable_type(rhs))
        else {
            return Ok(());
        };
        match (lhs_ty, rhs_ty) {
            (table @ Ty::Table(..), Ty::Base(_)) => {
                self.suggest_elementwise(op, (rhs, lhs), true, table, "a scalar")
            }
            (Ty::Base(_), table @ Ty::Table(..)) => {
                self.suggest_elementwise(op, (lhs, rhs), false, table, "a scalar")
            }
            _ => Ok(()),
        }
    }

    /// `xs + 1` with `xs` a table: arithmetic is on values of one type, so the number would
    /// have to be a table. Says so, and how to write what was meant (dx has no broadcasting
    /// operators but `.*`): `for i. xs[i] + 1`, or `2.0 .* xs` for a product.
    fn check_number_with_table(
        &self,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        res: &TExpr,
    ) -> Result<()> {
        let is_number = |expr: &Expr| match &expr.kind {
            ExprKind::Lit(Lit::Int(_) | Lit::Float(_)) => true,
            ExprKind::Neg(inner) => {
                matches!(inner.kind, ExprKind::Lit(Lit::Int(_) | Lit::Float(_)))
            }
            _ => false,
        };
        let numbers = (is_number(lhs), is_number(rhs));
        // The syntactic test first: this runs after every binary operator (the prelude's
        // included), and only a number written beside an operand can need the suggestion.
        if numbers.0 == numbers.1 {
            return Ok(());
        }
        let table_ty @ Ty::Table(..) = self.zonk(&res.ty) else {
            return Ok(());
        };
        match numbers {
            (true, false) => self.suggest_elementwise(op, (lhs, rhs), false, table_ty, "a number"),
            (false, true) => self.suggest_elementwise(op, (rhs, lhs), true, table_ty, "a number"),
            _ => Ok(()),
        }
    }

    /// The error for `scalar op table` (`table_is_lhs`: `table op scalar`) at the scalar,
    /// `what` saying what the scalar is, with the elementwise form that was meant.
    fn suggest_elementwise(
        &self,
        op: BinOp,
        (number, table): (&Expr, &Expr),
        table_is_lhs: bool,
        table_ty: Ty,
        what: &str,
    ) -> Result<()> {
        if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
            return Ok(());
        }
        let mut rank = 0;
        let mut ty = table_ty.clone();
        while let Ty::Table(_, elem) = ty {
            rank += 1;
            ty = *elem;
        }
        if matches!(ty, Ty::Tuple(_)) {
            return Ok(());
        }
        let binders: Vec<String> = ["i", "j", "k", "l"]
            .iter()
            .map(|name| name.to_string())
            .chain((4..rank).map(|axis| format!("i{axis}")))
            .take(rank)
            .collect();
        let table_text = match &table.kind {
            ExprKind::Var(ident) => ident.name.clone(),
            _ => format!("({})", crate::syntax::print::print_expr(table)),
        };
        let number_text = crate::syntax::print::print_expr(number);
        let element = format!("{table_text}[{}]", binders.join(", "));
        let symbol = op.symbol();
        let element_op = if table_is_lhs {
            format!("{element} {symbol} {number_text}")
        } else {
            format!("{number_text} {symbol} {element}")
        };
        let mut fix = format!("`for {}. {element_op}`", binders.join(" "));
        // `.*` scales tables of floats only.
        if op == BinOp::Mul && matches!(ty, Ty::Base(base) if base.is_float()) {
            fix = format!("`{number_text} .* {table_text}` or {fix}");
        }
        let verb = match op {
            BinOp::Add => "adds",
            BinOp::Sub => "subtracts",
            BinOp::Mul => "multiplies",
            _ => "divides",
        };
        error(
            number.span,
            format!(
                "`{symbol}` {verb} values of one type, but this is {what} and the other \
                 operand a table of type {table_ty}: to apply it to every element, write {fix}"
            ),
        )
    }

    fn binop_function(&mut self, op: BinOp, span: Span) -> Result<TExpr> {
        let builtin = match op {
            BinOp::Add => Builtin::Prim(Prim::Add),
            BinOp::Sub => Builtin::Prim(Prim::Sub),
            BinOp::Mul => Builtin::Prim(Prim::Mul),
            BinOp::Div => Builtin::Prim(Prim::Div),
            BinOp::Eq => Builtin::Prim(Prim::Eq),
            BinOp::Ne => Builtin::Prim(Prim::Ne),
            BinOp::Lt => Builtin::Prim(Prim::Lt),
            BinOp::Gt => Builtin::Prim(Prim::Gt),
            BinOp::Le => Builtin::Prim(Prim::Le),
            BinOp::Ge => Builtin::Prim(Prim::Ge),
            BinOp::And => Builtin::Prim(Prim::And),
            BinOp::Or => Builtin::Prim(Prim::Or),
            BinOp::Approx => Builtin::Approx,
            BinOp::Scale => Builtin::Scale,
            BinOp::MatMul | BinOp::MatVec | BinOp::VecMat => {
                // Defined in the prelude.
                let name = match op {
                    BinOp::MatMul => "matmul",
                    BinOp::MatVec => "matvec",
                    _ => "vecmat",
                };
                return self.infer_var(name, span);
            }
        };
        let func = TExpr {
            kind: TKind::Builtin(builtin),
            ty: Ty::float(),
            span,
        };
        Ok(self.instantiate_builtin(func, builtin, span))
    }

    /// Applies a typed function to one (surface) argument.
    fn apply(&mut self, func: TExpr, arg: &Expr, span: Span, depth: usize) -> Result<TExpr> {
        if let TKind::Lit(_) = func.kind {
            return error(func.span, "this is a number, not a function");
        }
        let func_ty = self.zonk(&func.ty);
        let (param, binder, result) = match func_ty {
            Ty::Fun {
                param,
                binder,
                result,
            } => (*param, binder, *result),
            Ty::Var(_) => {
                let param = Ty::Var(self.fresh_var());
                let result = Ty::Var(self.fresh_var());
                self.unify(&func_ty, &Ty::fun(param.clone(), result.clone()), func.span)?;
                (param, None, result)
            }
            other if matches!(func.kind, TKind::App { .. }) => {
                return error(
                    arg.span,
                    format!("too many arguments: the function's result here has type {other}"),
                );
            }
            other => {
                return error(
                    func.span,
                    format!("this is not a function: it has type {other}"),
                );
            }
        };
        let targ = if let Ty::TypeArg(expected) = &param {
            let ty = self.read_type_of_expr(arg)?;
            self.unify(expected, &ty, arg.span)?;
            TExpr {
                kind: TKind::TypeArg,
                ty: Ty::TypeArg(Box::new(ty)),
                span: arg.span,
            }
        } else {
            let targ = self.infer_depth(arg, depth + 1)?;
            self.unify(&param, &targ.ty, arg.span)?;
            targ
        };
        let mut result = result;
        if let Some(binder) = binder {
            if mentions_local(&result, binder) {
                let size = self.read_size(arg)?;
                result = substitute_local_size(&result, binder, &size);
            }
        }
        self.check_differentiated(&func, &targ)?;
        self.derivative_matrix_type(&func, &result, span)?;
        Ok(TExpr {
            kind: TKind::App {
                func: Box::new(func),
                arg: Box::new(targ),
            },
            ty: result,
            span,
        })
    }

    /// The function given to `grad`, `vjp`, `jacobian`, … takes one argument: one of several
    /// curried arguments (`f x y`) would be differentiated with the others' function as its
    /// result, which has no derivative. Says how to pass one argument.
    fn check_differentiated(&self, func: &TExpr, arg: &TExpr) -> Result<()> {
        let TKind::Builtin(Builtin::Ad(op)) = func.kind else {
            return Ok(());
        };
        let mut n_params = 0;
        let mut ty = self.zonk(&arg.ty);
        while let Ty::Fun { result, .. } = ty {
            n_params += 1;
            ty = self.zonk(&result);
        }
        if n_params < 2 {
            return Ok(());
        }
        let name = Builtin::names()
            .iter()
            .find(|name| Builtin::lookup(name) == Some(Builtin::Ad(op)))
            .unwrap_or(&"the derivative");
        let params: Vec<String> = ["x", "y", "z", "w"]
            .iter()
            .take(n_params.min(4))
            .map(|p| p.to_string())
            .collect();
        error(
            arg.span,
            format!(
                "`{name}` differentiates a function of one argument, and this one takes \
                 {n_params}: fix the others, `{name} (\\x. f x y0) x0`, or take them as one \
                 tuple, `{name} (\\({}). f {}) ({})`",
                params.join(", "),
                params.join(" "),
                params
                    .iter()
                    .map(|p| format!("{p}0"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    }

    /// `jacobian f x` and `hessian f x`: the result's type follows the structure of the types
    /// of `x` and `f x` (`builtins::jacobian_ty`), known once `f` and `x` are checked.
    fn derivative_matrix_type(&mut self, func: &TExpr, result: &Ty, span: Span) -> Result<()> {
        let TKind::App {
            func: inner,
            arg: f,
        } = &func.kind
        else {
            return Ok(());
        };
        use super::builtins::AdOp;
        let TKind::Builtin(Builtin::Ad(op @ (AdOp::Jacobian | AdOp::Hessian))) = inner.kind else {
            return Ok(());
        };
        let Ty::Fun {
            param, result: out, ..
        } = self.zonk(&f.ty)
        else {
            return Ok(());
        };
        let out = if op == AdOp::Hessian {
            param.clone()
        } else {
            out
        };
        match super::builtins::jacobian_ty(&self.zonk(&param), &self.zonk(&out)) {
            Some(ty) => self.unify(result, &ty, span),
            None => error(
                span,
                format!(
                    "the types of the argument and the result of the function must be known \
                     here (they are {} and {}): annotate them",
                    self.zonk(&param),
                    self.zonk(&out)
                ),
            ),
        }
    }

    fn infer_index(&mut self, base: TExpr, index: &Expr, depth: usize) -> Result<TExpr> {
        let base_ty = self.zonk(&base.ty);
        let (ix, elem) = match base_ty {
            Ty::Table(ix, elem) => (*ix, *elem),
            Ty::Var(_) => {
                let ix = Ty::Var(self.fresh_var());
                self.constrain(Class::Ix, ix.clone(), index.span);
                let elem = Ty::Var(self.fresh_var());
                self.unify(&Ty::table(ix.clone(), elem.clone()), &base_ty, base.span)?;
                (ix, elem)
            }
            other => {
                return error(
                    base.span,
                    format!("only tables can be indexed; this has type {other}"),
                )
            }
        };
        // A bare integer literal as an index means `lit @ ix` (as `from_ordinal`).
        let tindex = if let ExprKind::Lit(Lit::Int(_)) = index.kind {
            let value = self.infer_depth(index, depth + 1)?;
            TExpr {
                kind: TKind::At(Box::new(value)),
                ty: ix.clone(),
                span: index.span,
            }
        } else {
            let tindex = self.infer_depth(index, depth + 1)?;
            self.unify(&ix, &tindex.ty, index.span)?;
            tindex
        };
        let span = base.span.to(index.span);
        Ok(TExpr {
            kind: TKind::Index {
                base: Box::new(base),
                index: Box::new(tindex),
            },
            ty: elem,
            span,
        })
    }

    fn infer_lambda(
        &mut self,
        params: &[Param],
        body: &Expr,
        span: Span,
        depth: usize,
    ) -> Result<TExpr> {
        check_distinct(params.iter().flat_map(|param| param.pat.names()))?;
        self.with_scope(|cx| {
            let mut typed_params = Vec::new();
            for param in params {
                let ty = match &param.ty {
                    Some(ty) => cx.read_type(ty, &mut None)?,
                    None => Ty::Var(cx.fresh_var()),
                };
                let pat = cx.bind_pattern(&param.pat, &ty)?;
                typed_params.push((pat, ty));
            }
            let mut res = cx.infer_depth(body, depth + 1)?;
            for (pat, ty) in typed_params.into_iter().rev() {
                let fun_ty = Ty::fun(ty, res.ty.clone());
                res = TExpr {
                    kind: TKind::Lam {
                        param: pat,
                        body: Box::new(res),
                    },
                    ty: fun_ty,
                    span,
                };
            }
            Ok(res)
        })
    }

    /// Binds the names of a pattern to parts of `ty` (adding them to the scope).
    fn bind_pattern(&mut self, pat: &Pattern, ty: &Ty) -> Result<TPat> {
        match pat {
            Pattern::Var(ident) => {
                let local = self.new_local(&ident.name);
                self.scopes
                    .push((ident.name.clone(), Binding::Local(local, ty.clone())));
                Ok(TPat::Var(local, ident.name.clone()))
            }
            Pattern::Wildcard(_) => Ok(TPat::Wild),
            Pattern::Tuple(items, span) => {
                let item_tys: Vec<Ty> = items.iter().map(|_| Ty::Var(self.fresh_var())).collect();
                self.unify(&Ty::Tuple(item_tys.clone()), ty, *span)?;
                let pats = items
                    .iter()
                    .zip(&item_tys)
                    .map(|(item, item_ty)| self.bind_pattern(item, item_ty))
                    .collect::<Result<_>>()?;
                Ok(TPat::Tuple(pats))
            }
            Pattern::Table(items, span) => {
                let elem = Ty::Var(self.fresh_var());
                self.unify(
                    &Ty::table(Ty::Fin(Size::Const(items.len() as u64)), elem.clone()),
                    ty,
                    *span,
                )?;
                let pats = items
                    .iter()
                    .map(|item| self.bind_pattern(item, &elem))
                    .collect::<Result<_>>()?;
                Ok(TPat::Table(pats))
            }
        }
    }

    fn infer_let(&mut self, binding: &LetBinding, depth: usize) -> Result<(TPat, TExpr)> {
        check_distinct(binding.pat.names())?;
        let value = self.infer_depth(&binding.value, depth + 1)?;
        if let Some(ty) = &binding.ty {
            let annotated = self.read_type(ty, &mut None)?;
            self.unify(&annotated, &value.ty, binding.value.span)?;
        }
        let pat = self.bind_pattern(&binding.pat, &value.ty.clone())?;
        Ok((pat, value))
    }

    /// Checks a top-level or local value binding (not generalised).
    pub fn infer_top_let(&mut self, binding: &LetBinding) -> Result<(TPat, TExpr)> {
        let res = self.infer_let(binding, 0);
        let (pat, mut value) = self.with_recovered(res)?;
        self.finish()?;
        self.zonk_expr(&mut value);
        check_literals(&value)?;
        check_known(&value)?;
        Ok((pat, value))
    }

    /// Checks an expression on its own (for `:p`, `:t`, bare expressions).
    pub fn infer_top_expr(&mut self, expr: &Expr) -> Result<TExpr> {
        let res = self.infer(expr);
        let mut texpr = self.with_recovered(res)?;
        self.finish()?;
        self.zonk_expr(&mut texpr);
        check_literals(&texpr)?;
        check_known(&texpr)?;
        Ok(texpr)
    }

    /// A type written by the user at the top level (the declared type of loaded data).
    pub fn infer_top_type_expr(&mut self, texpr: &TypeExpr) -> Result<Ty> {
        let ty = self.read_type(texpr, &mut None)?;
        self.finish()?;
        Ok(self.zonk(&ty))
    }

    /// The type of an expression for `:t`: what is still unknown is shown as a variable.
    pub fn infer_top_type(&mut self, expr: &Expr) -> Result<Ty> {
        self.lenient = true;
        let res = self.infer(expr);
        let texpr = self.with_recovered(res)?;
        self.finish()?;
        let ty = self.zonk(&texpr.ty);
        let mut vars = Vec::new();
        collect_vars(&ty, &mut vars);
        Ok(map_ty(&ty, &mut |inner| match inner {
            Ty::Var(var) => {
                let position = vars.iter().position(|v| v == var).unwrap_or(0);
                let name = char::from(b'a' + (position % 26) as u8).to_string();
                Some(Ty::Rigid(Rigid(u32::MAX), name))
            }
            _ => None,
        }))
    }

    /// Checks a top-level definition and generalises it.
    pub fn infer_top_def(&mut self, def: &FunDef) -> Result<DefInfo> {
        let res = self.infer_def(def);
        self.with_recovered(res)
    }

    /// Checks a definition and generalises it.
    pub fn infer_def(&mut self, def: &FunDef) -> Result<DefInfo> {
        let outer_pending = std::mem::take(&mut self.pending);
        let outer_scale = std::mem::take(&mut self.scale);
        self.defining.push(def.name.name.clone());
        let res = self.with_scope(|cx| cx.infer_def_inner(def));
        self.defining.pop();
        self.pending.extend(outer_pending);
        self.scale.extend(outer_scale);
        res
    }

    fn infer_def_inner(&mut self, def: &FunDef) -> Result<DefInfo> {
        check_distinct(def.params.iter().flat_map(|param| param.pat.names()))?;
        // `given` binders, then implicit index-set names in the signature.
        let mut rigids: Vec<(String, Rigid)> = Vec::new();
        for given in &def.given {
            let classes = match &given.class {
                Some(class) => Class::from_name(&class.name).ok_or_else(|| {
                    TypeError::new(class.span, format!("unknown class `{}`", class.name))
                })?,
                None => Vec::new(),
            };
            // A name given twice (`given (a|VSpace, a|Mul)`) is one variable in both classes.
            if let Some((_, rigid)) = rigids.iter().find(|(name, _)| *name == given.name.name) {
                self.env.add_rigid_classes(*rigid, &classes);
                continue;
            }
            let rigid = self.env.new_rigid(classes);
            self.scopes.push((
                given.name.name.clone(),
                Binding::TypeVar(Ty::Rigid(rigid, given.name.name.clone())),
            ));
            rigids.push((given.name.name.clone(), rigid));
        }
        let mut param_tys = Vec::new();
        let mut pats = Vec::new();
        for param in &def.params {
            // `n: Type` binds a type passed as an argument (`linspace (Fin 5) …`,
            // `value(a=Int)`); it is an index set where it is used as one.
            if let (
                Some(TypeExpr {
                    kind: TypeExprKind::Name(class),
                    ..
                }),
                Pattern::Var(name),
            ) = (&param.ty, &param.pat)
            {
                if class.name == "Type" {
                    let given = rigids.iter().find(|(bound, _)| *bound == name.name);
                    let rigid = match given {
                        Some((_, rigid)) => *rigid,
                        None => self.env.new_rigid(Vec::new()),
                    };
                    self.env.mark_type_param(rigid);
                    let ty = Ty::Rigid(rigid, name.name.clone());
                    self.scopes
                        .push((name.name.clone(), Binding::TypeVar(ty.clone())));
                    rigids.push((name.name.clone(), rigid));
                    param_tys.push(Ty::TypeArg(Box::new(ty)));
                    // Named, so that a named argument can be checked (`linspace(n=Fin 5, …)`).
                    let local = self.new_local(&name.name);
                    pats.push(TPat::Var(local, name.name.clone()));
                    continue;
                }
            }
            let ty = match &param.ty {
                Some(ty) => {
                    let mut implicit = Some(&mut rigids);
                    self.read_type(ty, &mut implicit)?
                }
                None => Ty::Var(self.fresh_var()),
            };
            let pat = self.bind_pattern(&param.pat, &ty)?;
            param_tys.push(ty);
            pats.push(pat);
        }
        let ret = match &def.ret {
            Some(ret) => {
                let mut implicit = Some(&mut rigids);
                self.read_type(ret, &mut implicit)?
            }
            None => Ty::Var(self.fresh_var()),
        };
        // Recursion is not allowed (everything is inlined), so the name is not in scope here.
        let body = self.infer(&def.body)?;
        self.unify(&ret, &body.ty, def.body.span)?;
        self.solve(false)?;

        // Generalise: unresolved variables in the signature become rigid, with the classes
        // their pending constraints ask for.
        let mut sig = Ty::funs(param_tys.clone(), ret.clone());
        let mut free = Vec::new();
        collect_vars(&self.zonk(&sig), &mut free);
        let mut vars: Vec<Rigid> = rigids.iter().map(|(_, rigid)| *rigid).collect();
        for var in free {
            let classes: Vec<Class> = self
                .pending
                .iter()
                .filter(|item| self.zonk(&item.ty) == Ty::Var(var))
                .map(|item| item.class)
                .collect();
            let rigid = self.env.new_rigid(classes);
            let name = format!("t{}", rigid.0);
            self.subst[var.0 as usize] = Some(Ty::Rigid(rigid, name));
            vars.push(rigid);
        }
        self.finish()?;
        sig = self.zonk(&sig);
        // Parameters bound to a variable may be used as sizes in later types.
        let mut sig_with_binders = sig.clone();
        {
            let mut ty = &mut sig_with_binders;
            for pat in &pats {
                if let Ty::Fun { binder, result, .. } = ty {
                    if let TPat::Var(local, _) = pat {
                        *binder = Some(*local);
                    }
                    ty = result;
                }
            }
        }
        let mut body_expr = body;
        for (pat, ty) in pats.into_iter().zip(param_tys).rev() {
            let fun_ty = Ty::fun(ty, body_expr.ty.clone());
            body_expr = TExpr {
                kind: TKind::Lam {
                    param: pat,
                    body: Box::new(body_expr),
                },
                ty: fun_ty,
                span: def.span,
            };
        }
        self.zonk_expr(&mut body_expr);
        check_literals(&body_expr)?;
        let implicit = vars
            .iter()
            .map(|var| {
                rigids
                    .iter()
                    .find(|(_, rigid)| rigid == var && !self.env.is_type_param(*rigid))
                    .map(|(name, _)| name.clone())
            })
            .collect();
        Ok(DefInfo {
            name: def.name.name.clone(),
            vars,
            implicit,
            ty: sig_with_binders,
            body: body_expr,
            span: def.span,
        })
    }

    /// Reads a top-level `Name = <type>` alias if the binding is one.
    pub fn try_alias(&mut self, binding: &LetBinding) -> Option<Result<(String, Ty)>> {
        let Pattern::Var(ident) = &binding.pat else {
            return None;
        };
        if !ident.name.starts_with(|c: char| c.is_uppercase()) || binding.ty.is_some() {
            return None;
        }
        let looks_like_type = match &binding.value.kind {
            ExprKind::App { func, .. } => is_var(func, "Fin"),
            ExprKind::Var(name) => {
                self.env.aliases.contains_key(&name.name) || BaseTy::from_name(&name.name).is_some()
            }
            _ => false,
        };
        if !looks_like_type {
            return None;
        }
        Some(
            self.read_type_of_expr(&binding.value)
                .map(|ty| (ident.name.clone(), ty)),
        )
    }
}

/// Reports integer literals that do not fit their type (`9999999999` as an `Int32`); a
/// negated literal (`-2147483648`) is checked with its sign.
pub fn check_literals(expr: &TExpr) -> Result<()> {
    let value = match &expr.kind {
        TKind::Lit(Lit::Int(n)) => i128::from(*n),
        TKind::App { func, arg }
            if matches!(func.kind, TKind::Builtin(Builtin::Prim(Prim::Neg))) =>
        {
            match arg.kind {
                TKind::Lit(Lit::Int(n)) => -i128::from(n),
                _ => return expr.children().into_iter().try_for_each(check_literals),
            }
        }
        TKind::Numbers(numbers) => {
            let Ty::Table(_, elem) = &expr.ty else {
                return Ok(());
            };
            return numbers.iter().try_for_each(|number| match number.value {
                NumberValue::Int(n) if number.negated => fits(-i128::from(n), elem, number.span),
                NumberValue::Int(n) => fits(i128::from(n), elem, number.span),
                NumberValue::Float(_) => Ok(()),
            });
        }
        _ => return expr.children().into_iter().try_for_each(check_literals),
    };
    fits(value, &expr.ty, expr.span)
}

/// Whether an integer literal of value `value` (with its sign) fits its type `ty`.
fn fits(value: i128, ty: &Ty, span: Span) -> Result<()> {
    if let Ty::Base(base) = ty {
        if let Some((min, max)) = base.int_range() {
            if value < min || value > max {
                return error(
                    span,
                    format!(
                        "{value} does not fit in a {} (from {min} to {max})",
                        base.name()
                    ),
                );
            }
        }
    }
    Ok(())
}

/// The first scalar type in a value of type `ty` (through tables and tuples).
fn first_leaf(ty: &Ty) -> Option<Ty> {
    match ty {
        Ty::Table(_, elem) => first_leaf(elem),
        Ty::Tuple(items) => items.first().and_then(first_leaf),
        _ => Some(ty.clone()),
    }
}

/// A value whose type is still unknown after defaulting (`[]`) cannot be compiled: reported at
/// the innermost such expression, asking for an annotation.
/// A lambda's body is compiled where the lambda is applied, so it is not looked into.
fn check_known(expr: &TExpr) -> Result<()> {
    if !matches!(expr.kind, TKind::Lam { .. }) {
        expr.children().into_iter().try_for_each(check_known)?;
    }
    let unknown = !expr.ty.contains_fun() && expr.ty.any(&mut |ty| matches!(ty, Ty::Var(_)));
    if unknown {
        return error(
            expr.span,
            format!(
                "the type of this is not known (it is {}): annotate it, e.g. `([] :: (Fin 0)=>Float)`",
                expr.ty
            ),
        );
    }
    Ok(())
}

/// A name may be bound once in one pattern, or in the parameters of one lambda or `def`
/// (as in Dex): `(x, x) = p` is an error at the second `x`.
fn check_distinct<'a>(names: impl IntoIterator<Item = &'a Ident>) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for ident in names {
        if seen.contains(&ident.name.as_str()) {
            return error(
                ident.span,
                format!("`{}` is bound twice in one pattern", ident.name),
            );
        }
        seen.push(&ident.name);
    }
    Ok(())
}

/// `; its implicit variables are `n`, `m`` for a named-argument error, or nothing.
fn implicit_list(info: &DefInfo) -> String {
    let names: Vec<String> = info
        .implicit
        .iter()
        .flatten()
        .map(|name| format!("`{name}`"))
        .collect();
    match names.len() {
        0 => String::new(),
        1 => format!("; its implicit variable is {}", names[0]),
        _ => format!("; its implicit variables are {}", names.join(", ")),
    }
}

fn class_operation(class: Class) -> &'static str {
    match class {
        Class::Add => "addition",
        Class::Sub => "subtraction",
        Class::Mul => "multiplication",
        Class::Div => "division",
        Class::Floating => "floating-point functions",
        Class::VSpace => "scaling by a float",
        Class::Num => "arithmetic",
        Class::Float => "floating-point functions",
        Class::Eq => "equality",
        Class::Ord => "ordering",
        Class::Ix => "indexing",
    }
}

/// `unsafe_nat_diff a` (applied to its first argument).
fn is_nat_diff(expr: &Expr) -> bool {
    matches!(&expr.kind, ExprKind::App { func, name: None, .. } if is_var(func, "unsafe_nat_diff"))
}

fn is_var(expr: &Expr, name: &str) -> bool {
    matches!(&expr.kind, ExprKind::Var(ident) if ident.name == name)
}

/// The size of an index set, when it is statically expressible.
pub fn size_of_ix(ty: &Ty) -> Option<Size> {
    match ty {
        Ty::Fin(size) => Some(size.clone()),
        Ty::Rigid(..) | Ty::Var(_) => Some(Size::Of(Box::new(ty.clone()))),
        Ty::Tuple(items) => items
            .iter()
            .map(size_of_ix)
            .try_fold(Size::Const(1), |acc, size| {
                Some(Size::Mul(Box::new(acc), Box::new(size?)))
            }),
        _ => None,
    }
}

fn collect_vars(ty: &Ty, out: &mut Vec<TyVar>) {
    ty.any(&mut |inner| {
        if let Ty::Var(var) = inner {
            if !out.contains(var) {
                out.push(*var);
            }
        }
        false
    });
}

/// Replaces rigid variables by types (instantiation, specialisation).
pub fn substitute_rigids(ty: &Ty, mapping: &HashMap<Rigid, Ty>) -> Ty {
    map_ty(ty, &mut |inner| match inner {
        Ty::Rigid(rigid, _) => mapping.get(rigid).cloned(),
        _ => None,
    })
}

fn mentions_local(ty: &Ty, local: LocalId) -> bool {
    fn size_mentions(size: &Size, local: LocalId) -> bool {
        match size {
            Size::Local(id, _) => *id == local,
            Size::Const(_) | Size::Of(_) => false,
            Size::Add(a, b) | Size::Sub(a, b) | Size::Mul(a, b) | Size::Div(a, b) => {
                size_mentions(a, local) || size_mentions(b, local)
            }
        }
    }
    ty.any(&mut |inner| matches!(inner, Ty::Fin(size) if size_mentions(size, local)))
}

/// Replaces a `Nat` parameter in sizes by the size of the argument.
pub fn substitute_local_size(ty: &Ty, local: LocalId, size: &Size) -> Ty {
    map_ty(ty, &mut |inner| match inner {
        Ty::Fin(inner_size) => Some(Ty::Fin(map_size(inner_size, &mut |s| match s {
            Size::Local(id, _) if *id == local => Some(size.clone()),
            _ => None,
        }))),
        _ => None,
    })
}

/// Rebuilds a type bottom-up, letting `f` replace any node (returning `Some`).
pub fn map_ty(ty: &Ty, f: &mut impl FnMut(&Ty) -> Option<Ty>) -> Ty {
    if let Some(replaced) = f(ty) {
        return replaced;
    }
    match ty {
        Ty::Base(_) | Ty::Var(_) | Ty::Rigid(..) => ty.clone(),
        Ty::Fin(size) => Ty::Fin(map_size(size, &mut |inner| match inner {
            Size::Of(of) => Some(Size::Of(Box::new(map_ty(of, f))).normalise()),
            _ => None,
        })),
        Ty::Table(ix, elem) => Ty::table(map_ty(ix, f), map_ty(elem, f)),
        Ty::Tuple(items) => Ty::Tuple(items.iter().map(|item| map_ty(item, f)).collect()),
        Ty::Fun {
            param,
            binder,
            result,
        } => Ty::Fun {
            param: Box::new(map_ty(param, f)),
            binder: *binder,
            result: Box::new(map_ty(result, f)),
        },
        Ty::TypeArg(inner) => Ty::TypeArg(Box::new(map_ty(inner, f))),
    }
}

/// Rebuilds a size bottom-up, letting `f` replace any node.
pub fn map_size(size: &Size, f: &mut dyn FnMut(&Size) -> Option<Size>) -> Size {
    if let Some(replaced) = f(size) {
        return replaced;
    }
    let mut both = |a: &Size, b: &Size| (Box::new(map_size(a, f)), Box::new(map_size(b, f)));
    match size {
        Size::Const(_) | Size::Local(..) | Size::Of(_) => size.clone(),
        Size::Add(a, b) => {
            let (a, b) = both(a, b);
            Size::Add(a, b)
        }
        Size::Sub(a, b) => {
            let (a, b) = both(a, b);
            Size::Sub(a, b)
        }
        Size::Mul(a, b) => {
            let (a, b) = both(a, b);
            Size::Mul(a, b)
        }
        Size::Div(a, b) => {
            let (a, b) = both(a, b);
            Size::Div(a, b)
        }
    }
    .normalise()
}

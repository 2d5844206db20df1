//! Type and shape inference for one top-level declaration (Hindley–Milner with deferred class
//! constraints and symbolic static sizes).
//!
//! - Unannotated `for` binders get a fresh variable constrained to be an index set; the way
//!   the index is used decides it (docs/language.md).
//! - Literals are polymorphic: an integer literal is any numeric type (default `Nat`), a float
//!   literal any float type (default `Float32`).
//! - Definitions are generalised: `given` binders, implicit index-set names in the signature
//!   and unresolved parameter types become rigid variables with the classes they need.
//!   Call sites instantiate them; the lowering specialises the body with concrete types.
//! - Class constraints are collected and solved when types are known; what is left at the end
//!   of a declaration is defaulted or reported.

use std::collections::HashMap;

use super::builtins::{Builtin, Class};
use super::classes::{match_head, HeadMatch};
use super::data::DataTy;
use super::env::GlobalEnv;
use super::typed::{DefInfo, DefKey, TExpr, TKind, TPat, TStmt};
use super::types::{
    BaseTy, Bound, EffRow, Effect, FieldPath, LocalId, Rigid, Size, Ty, TyVar, ValueArg,
};
use super::TypeError;
use crate::code::Code;
use crate::prim::Prim;
use crate::syntax::ast::{
    BinOp, CaseAlt, Constraint, EffRowExpr, Expr, ExprKind, FunDef, GivenBinder, Ident, LetBinding,
    Lit, NumberValue, Param, Pattern, Stmt, TypeExpr, TypeExprKind,
};
use crate::syntax::Span;

type Result<T> = std::result::Result<T, TypeError>;

fn error<T>(span: Span, message: impl Into<String>) -> Result<T> {
    Err(TypeError::new(span, message))
}

/// An error of a kind with its own code (`session::Code`).
pub(super) fn error_of<T>(kind: Code, span: Span, message: impl Into<String>) -> Result<T> {
    Err(TypeError::new(span, message).of_kind(kind))
}

/// What a name in scope stands for.
#[derive(Clone, Debug)]
pub(super) enum Binding {
    Local(LocalId, Ty),
    Def(LocalId, Box<DefInfo>),
    /// A type variable (a `given` binder or implicit index set) usable in types.
    TypeVar(Ty),
    /// A size parameter of a user type or type function (`n` in `struct Vec(n: Nat)`).
    SizeVar(Size),
    /// A local type function (`def Pair(a: Type) -> Type = (a, a)` in a block).
    TypeFn(Box<super::env::TypeFn>),
}

#[derive(Clone, Debug)]
struct Pending {
    class: Class,
    ty: Ty,
    span: Span,
}

/// `base.name` whose base type was not known when it was read: `result` is its type.
#[derive(Clone, Debug)]
struct PendingField {
    base: Ty,
    name: String,
    result: Ty,
    span: Span,
}

/// `x <> y` (the operands' types) or `mempty` (none), with the result's type.
#[derive(Clone, Debug)]
struct PendingAppend {
    operands: Option<(Ty, Ty)>,
    result: Ty,
    span: Span,
}

/// A `case` whose exhaustiveness is checked when the declaration's types are known.
#[derive(Clone, Debug)]
struct PendingCase {
    scrutinee: Ty,
    pats: Vec<TPat>,
    span: Span,
}

/// The inference state of one declaration.
pub struct Infer<'env> {
    pub env: &'env mut GlobalEnv,
    subst: Vec<Option<Ty>>,
    /// Default type of a literal's variable when nothing else decides it.
    defaults: HashMap<TyVar, BaseTy>,
    /// The hidden size arguments of constructor applications (Note [Size fields]): one that
    /// nothing decides (`Foo 2.0` of `enum T = Foo(Float) | Bar(String)`) is `Fin 0`.
    hidden_sizes: Vec<TyVar>,
    pending: Vec<Pending>,
    fields: Vec<PendingField>,
    cases: Vec<PendingCase>,
    scale: Vec<(Ty, Ty, Span)>,
    /// `yield_accum m`: the monoid's type and the accumulator's (Note [Accumulator types]).
    accums: Vec<(Ty, Ty, Span)>,
    /// `show x`: the type of `x` and the length of its text, set once the type is known
    /// (`check::show`).
    texts: Vec<(Ty, Ty, Span)>,
    /// `x <> y` (the operands' types) and `mempty` (none), with the result's type: decided
    /// once the operands' types are known (Note [Appending]).
    appends: Vec<PendingAppend>,
    /// `project j`/`unsafe_project j`: the range the result is an index of (decided by the
    /// context) must be of `j`'s index set; the range type, `j`'s type and the position.
    projects: Vec<(Ty, Ty, Span)>,
    pub(super) scopes: Vec<(String, Binding)>,
    /// Leave ambiguous index sets unresolved instead of reporting them (`:t`).
    lenient: bool,
    /// Errors of let-block statements, reported with the declaration's other errors
    /// (Note [Independent errors]).
    recovered: Vec<TypeError>,
    /// The definitions being checked, innermost last (to explain a recursive call).
    defining: Vec<String>,
    /// Locals bound to a size field of a constructor: the static size they are (Note [Size
    /// fields]).
    static_sizes: HashMap<LocalId, Size>,
    /// Type parameters used as sizes (`given (n)` with `Fin n`): as values they are their size.
    size_rigids: std::collections::HashSet<Rigid>,
    /// The effects of the bodies being checked, innermost (lambda or `def`) last; the
    /// bottom one is the top-level expression's (Note [Effect rows]).
    performed: Vec<Performed>,
}

/// The effects a body has so far: each with the position of the application that has it,
/// and the unknown rests of the rows of functions it applies.
#[derive(Default)]
struct Performed {
    effects: EffectSites,
    rests: Vec<Ty>,
}

/// Effects, each with the position of an application that has it.
type EffectSites = Vec<(Effect, Span)>;

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
            hidden_sizes: Vec::new(),
            pending: Vec::new(),
            fields: Vec::new(),
            cases: Vec::new(),
            scale: Vec::new(),
            accums: Vec::new(),
            texts: Vec::new(),
            projects: Vec::new(),
            appends: Vec::new(),
            scopes: Vec::new(),
            lenient: false,
            recovered: Vec::new(),
            defining: Vec::new(),
            static_sizes: HashMap::new(),
            size_rigids: Default::default(),
            performed: vec![Performed::default()],
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

    /// `show x`: `len` is the width of the text of a value of type `ty`.
    pub fn constrain_text(&mut self, ty: Ty, len: Ty, span: Span) {
        self.texts.push((ty, len, span));
    }

    /// `x <> y` of operand types `operands` (or `mempty`, `None`) has type `result`.
    pub fn constrain_append(&mut self, operands: Option<(Ty, Ty)>, result: Ty, span: Span) {
        self.appends.push(PendingAppend {
            operands,
            result,
            span,
        });
    }

    /// Decides an `<>` or a `mempty` (Note [Appending]) when its types allow it: `Ok(true)`
    /// when it is decided.
    fn solve_append(
        &mut self,
        operands: &Option<(Ty, Ty)>,
        result: &Ty,
        span: Span,
        finish: bool,
    ) -> Result<bool> {
        let is_list = |ty: &Ty| matches!(ty, Ty::Data(data) if data.def.name == "List");
        let monoid = |cx: &mut Self, ty: &Ty| -> Result<bool> {
            cx.unify(result, ty, span)?;
            cx.constrain(Class::Monoid, ty.clone(), span);
            Ok(true)
        };
        let Some((a, b)) = operands else {
            let r = self.zonk(result);
            if is_list(&r) {
                let elem = Ty::Var(self.fresh_var());
                let empty = self.prelude_data("List", vec![elem, Ty::Fin(Size::Const(0))]);
                self.unify(&r, &empty, span)?;
                return Ok(true);
            }
            if matches!(r, Ty::Var(_)) && !finish {
                return Ok(false);
            }
            return monoid(self, &r);
        };
        let (a, b) = (self.zonk(a), self.zonk(b));
        if is_list(&a) || is_list(&b) {
            let elem = Ty::Var(self.fresh_var());
            let lens = [Ty::Var(self.fresh_var()), Ty::Var(self.fresh_var())];
            for (operand, len) in [(&a, &lens[0]), (&b, &lens[1])] {
                let list = self.prelude_data("List", vec![elem.clone(), len.clone()]);
                self.unify(operand, &list, span)?;
            }
            let mut sizes = Vec::new();
            for len in &lens {
                match self.zonk(len) {
                    Ty::Var(_) => return Ok(false),
                    Ty::Fin(size) => sizes.push(size),
                    other => sizes.push(Size::Of(Box::new(other))),
                }
            }
            let sum = Size::Add(Box::new(sizes[0].clone()), Box::new(sizes[1].clone()));
            let list = self.prelude_data("List", vec![elem, Ty::Fin(sum.normalise())]);
            self.unify(result, &list, span)?;
            return Ok(true);
        }
        if matches!((&a, &b), (Ty::Var(_), Ty::Var(_))) && !finish {
            return Ok(false);
        }
        self.unify(&a, &b, span)?;
        monoid(self, &a)
    }

    /// `yield_accum m` with `m: Monoid base`: the accumulator holds `value` (Note
    /// [Accumulator types]).
    pub fn constrain_accum(&mut self, base: Ty, value: Ty, span: Span) {
        self.accums.push((base, value, span));
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
            Ty::Base(_) | Ty::Rigid(..) | Ty::Value(_) => ty.clone(),
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
                effects,
            } => Ty::Fun {
                param: Box::new(self.zonk(param)),
                binder: *binder,
                result: Box::new(self.zonk(result)),
                effects: self.zonk_row(effects),
            },
            Ty::Row(row) => Ty::Row(self.zonk_row(row)),
            Ty::TypeArg(inner) => Ty::TypeArg(Box::new(self.zonk(inner))),
            Ty::Con(con, args) => Ty::Con(*con, args.iter().map(|arg| self.zonk(arg)).collect()),
            Ty::Data(data) => Ty::Data(DataTy {
                def: data.def.clone(),
                args: data.args.iter().map(|arg| self.zonk(arg)).collect(),
            }),
            Ty::Range { kind, of, bound } => Ty::Range {
                kind: *kind,
                of: Box::new(self.zonk(of)),
                bound: bound.clone(),
            },
        }
    }

    /// A row with its regions zonked and its bound rest spliced in (Note [Effect rows]).
    pub fn zonk_row(&self, row: &EffRow) -> EffRow {
        let mut out = EffRow::pure();
        for effect in &row.effects {
            out.insert(match effect.region() {
                Some(region) => effect.with_region(self.zonk(region)),
                None => effect.clone(),
            });
        }
        if let Some(tail) = &row.tail {
            match self.zonk(tail) {
                Ty::Row(rest) => {
                    rest.effects
                        .into_iter()
                        .for_each(|effect| out.insert(effect));
                    out.tail = rest.tail;
                }
                other => out.tail = Some(Box::new(other)),
            }
        }
        out
    }

    /// At the top level only `IO` may happen: every handler has ended. A function value that
    /// would use a handler's reference has escaped it; the unknown rest of a row is no effect.
    fn end_top_effects(&mut self, value: &TExpr) -> Result<()> {
        let frame = std::mem::take(&mut self.performed[0]);
        // A reference effect left here is an operation of the wrong kind for its handler's
        // reference (`:=` on an accumulator), which the lowering reports with its fix; a
        // function that would use a handler's reference later is caught below.
        if let Some((_, span)) = frame
            .effects
            .iter()
            .find(|(effect, _)| *effect == Effect::Except)
        {
            return error_of(
                Code::Effect,
                *span,
                "`throw` outside every `catch`: wrap it, `catch(\\. …)`, to get a `Maybe`",
            );
        }
        let ty = self.zonk(&value.ty);
        let mut arrow = &ty;
        while let Ty::Fun {
            result, effects, ..
        } = arrow
        {
            if let Some(effect) = effects
                .effects
                .iter()
                .find(|effect| effect.region().is_some())
            {
                return error_of(
                    Code::Effect,
                    value.span,
                    format!(
                        "a reference escapes its handler: this function, of type {ty}, {} of \
                         a handler that has ended (a reference lives only inside its handler's \
                         body: apply the function there)",
                        effect.what()
                    ),
                );
            }
            arrow = result;
        }
        let mut rests = Vec::new();
        collect_row_vars(&ty, &mut rests);
        for var in rests {
            self.subst[var.0 as usize] = Some(Ty::Row(EffRow::pure()));
        }
        Ok(())
    }

    /// Records that the body being checked has the effects of `row` (an application at `span`).
    fn perform(&mut self, row: &EffRow, span: Span) {
        let row = self.zonk_row(row);
        let frame = self
            .performed
            .last_mut()
            .expect("the top level's frame is never popped");
        for effect in row.effects {
            frame.effects.push((effect, span));
        }
        if let Some(rest) = row.tail {
            frame.rests.push(*rest);
        }
    }

    /// Checks a lambda's or definition's body, giving its effects apart.
    fn with_effects<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<(T, EffectSites, EffRow)> {
        self.performed.push(Performed::default());
        let res = f(self);
        let frame = self.performed.pop().expect("pushed above");
        let value = res?;
        let row = self.row_of(&frame)?;
        Ok((value, frame.effects, row))
    }

    /// The row of a body's effects: the rests of the unknown rows it applies are one (a row
    /// has one rest).
    fn row_of(&mut self, frame: &Performed) -> Result<EffRow> {
        let mut row = EffRow {
            effects: frame
                .effects
                .iter()
                .map(|(effect, _)| effect.clone())
                .collect(),
            tail: None,
        };
        let mut rests = frame.rests.iter();
        if let Some(first) = rests.next() {
            for other in rests {
                let (first, other) = (EffRow::open(first.clone()), EffRow::open(other.clone()));
                if self.unify_rows(&first, &other).is_err() {
                    let span = frame
                        .effects
                        .first()
                        .map_or(Span::new(0, 0), |(_, span)| *span);
                    return error_of(
                        Code::Effect,
                        span,
                        "a body applies two functions whose effects differ",
                    );
                }
            }
            row.tail = Some(Box::new(first.clone()));
        }
        Ok(self.zonk_row(&row))
    }

    /// A fresh row variable: the unknown effects of a function (Note [Effect rows]).
    pub fn fresh_row(&mut self) -> EffRow {
        EffRow::open(Ty::Var(self.fresh_var()))
    }

    /// Rows meet by subsumption: every effect of `found` must be one `expected` allows
    /// (Note [Effect rows]).
    fn unify_rows(&mut self, expected: &EffRow, found: &EffRow) -> std::result::Result<(), ()> {
        let expected = self.zonk_row(expected);
        let found = self.zonk_row(found);
        let mut extra: Vec<Effect> = Vec::new();
        for effect in &found.effects {
            if expected.effects.contains(effect) {
                continue;
            }
            // A region not known yet (a reference whose type a pending field access gives)
            // is the expected row's only one of its kind: the handler's.
            if let (Some(target), Some(region @ Ty::Var(_))) =
                (only_region_of_kind(&expected, effect), effect.region())
            {
                self.unify_inner(&target, region)?;
                continue;
            }
            extra.push(effect.clone());
        }
        let found_tail = found.tail.as_deref().cloned();
        if extra.is_empty()
            && (found_tail.is_none() || found_tail == expected.tail.as_deref().cloned())
        {
            return Ok(());
        }
        match expected.tail.as_deref() {
            // The rest of the expected row takes what it lacks.
            Some(Ty::Var(var)) => {
                let var = *var;
                if found_tail == Some(Ty::Var(var)) {
                    return Err(());
                }
                let rest = EffRow {
                    effects: extra,
                    tail: found_tail.map(Box::new),
                };
                self.bind_var(var, &Ty::Row(rest))
            }
            _ => {
                // A closed row (or one ending in a signature's `{|eff}`): each extra effect is
                // one the row has on a region not known yet.
                for effect in &extra {
                    match (only_region_of_kind(&expected, effect), effect.region()) {
                        (Some(target), Some(region)) => self.unify_inner(&target, region)?,
                        _ => return Err(()),
                    }
                }
                match found_tail {
                    None => Ok(()),
                    Some(Ty::Var(var)) => {
                        let rest = EffRow {
                            effects: Vec::new(),
                            tail: expected.tail.clone(),
                        };
                        self.bind_var(var, &Ty::Row(rest))
                    }
                    Some(tail) if Some(&tail) == expected.tail.as_deref() => Ok(()),
                    Some(_) => Err(()),
                }
            }
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
            if let Some((allowed, has)) = row_mismatch(&expected, &found) {
                let allowed = match allowed.prints_empty() {
                    true => "a pure function".to_string(),
                    false => format!("a function with at most the effects {allowed}"),
                };
                return Err(TypeError::new(
                    span,
                    format!(
                        "this function has the effects {has}, but {allowed} is expected here \
                         (expected type {expected}, found {found})"
                    ),
                )
                .of_kind(Code::Mismatch));
            }
            // Types that print alike differ in what the printer leaves out: a list's length
            // (Note [Size fields]).
            let why = match expected.to_string() == found.to_string() {
                true => {
                    " (they differ in a hidden size: lists of different lengths, or values \
                         holding them, have different types)"
                }
                false => "",
            };
            return Err(TypeError::new(
                span,
                format!("expected type {expected}, found {found}{why}"),
            )
            .of_kind(Code::Mismatch));
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
                let (x, y) = (x.normalise(), y.normalise());
                if x == y {
                    return Ok(());
                }
                // `Fin (size n)` of an index set `n` not known yet is any `Fin k`: `n` is then
                // `Fin k` (a list's length is found from its elements).
                // Either side may be the one not known yet (`Fin (size grid_size)` against
                // `Fin (size _)`).
                let unknown = |size: &Size| match size {
                    Size::Of(inner) => match **inner {
                        Ty::Var(var) => Some(var),
                        _ => None,
                    },
                    _ => None,
                };
                match (unknown(&x), unknown(&y)) {
                    (Some(var), _) => self.bind_var(var, &Ty::Fin(y.clone())),
                    (None, Some(var)) => self.bind_var(var, &Ty::Fin(x.clone())),
                    (None, None) => Err(()),
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
                    effects: e1,
                    ..
                },
                Ty::Fun {
                    param: p2,
                    result: r2,
                    effects: e2,
                    ..
                },
            ) => {
                // The rows last: a handler's region is the one its parameter's type gives.
                self.unify_inner(p1, p2)?;
                self.unify_inner(r1, r2)?;
                self.unify_rows(e1, e2)
            }
            (Ty::Row(x), Ty::Row(y)) => self.unify_rows(x, y),
            (Ty::Rigid(x, _), Ty::Rigid(y, _)) if x == y => Ok(()),
            // Types that name the same value (Note [Value parameters]).
            (Ty::Value(x), Ty::Value(y)) if x == y => Ok(()),
            (Ty::TypeArg(x), Ty::TypeArg(y)) => self.unify_inner(x, y),
            (Ty::Con(x, xs), Ty::Con(y, ys)) if x == y && xs.len() == ys.len() => {
                for (a, b) in xs.iter().zip(ys) {
                    self.unify_inner(a, b)?;
                }
                Ok(())
            }
            (Ty::Data(x), Ty::Data(y)) if x.def.id == y.def.id => {
                for (a, b) in x.args.iter().zip(&y.args) {
                    self.unify_inner(a, b)?;
                }
                Ok(())
            }
            (
                Ty::Range {
                    kind: k1,
                    of: o1,
                    bound: b1,
                },
                Ty::Range {
                    kind: k2,
                    of: o2,
                    bound: b2,
                },
            ) if k1 == k2 && b1 == b2 => self.unify_inner(o1, o2),
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
        let ty = self.zonk(ty);
        match &ty {
            Ty::Var(var) => return Err(Ty::Var(*var)),
            Ty::Rigid(rigid, _) => return Ok(self.env.rigid_classes(*rigid).contains(&class)),
            _ if self.env.is_assumed(class, &ty) => return Ok(true),
            _ if self.env.may_be_assumed(class, &ty) => return Err(ty),
            _ => {}
        }
        // A user instance (of an interface, or of a built-in class for a user type).
        if self.instance_holds(class, &ty)? {
            return Ok(true);
        }
        let all = |tys: &[Ty]| -> std::result::Result<bool, Ty> {
            for item in tys {
                match self.class_holds(class, item) {
                    Ok(true) => {}
                    other => return other,
                }
            }
            Ok(true)
        };
        match &ty {
            Ty::Var(_) | Ty::Rigid(..) | Ty::Row(_) | Ty::Value(_) => Ok(false),
            Ty::Base(base) => Ok(class.holds_for_base(*base)),
            Ty::Fin(_) => Ok(class.holds_for_index()),
            // Tables compare element by element (Dex's `Eq`/`Ord` of `n=>a`).
            Ty::Table(_, elem) if class.is_lifted() || class.is_structural() => {
                self.class_holds(class, elem)
            }
            // The tables of index sets are one, ordered as tuples are (Dex's `n=>a` index set).
            Ty::Table(ix, elem) if class == Class::Ix => all(&[(**ix).clone(), (**elem).clone()]),
            Ty::Table(..) => Ok(false),
            // Tuples compare component by component, tuples of indices are pair indices
            // (Ix); lifted classes lift.
            Ty::Tuple(items)
                if class.is_lifted() || class.is_structural() || class == Class::Ix =>
            {
                all(items)
            }
            Ty::Tuple(_) => Ok(false),
            // A struct of vector spaces is one (as JAX's pytrees): it adds, scales and is
            // differentiated by its fields. Products and quotients are not taken field by
            // field (a struct of two floats may be a complex number): they need the user's
            // instance, as in Dex. Every user type compares, prints and draws random values
            // by its fields (Note [Data representation]).
            Ty::Range { .. } => Ok(class.holds_for_index()),
            // A type whose `+` is the user's subtracts only by the user's `-`.
            Ty::Data(_) if class == Class::Sub && self.instance_holds(Class::Add, &ty)? => {
                Ok(false)
            }
            Ty::Data(data) if class.is_vector_space() && !data.def.is_tagged() => {
                all(&data.fields(0))
            }
            // An enumeration is an index set of its constructors (unless an instance says
            // otherwise, above).
            Ty::Data(data) if class == Class::Ix && data.def.is_enumeration() => Ok(true),
            Ty::Data(data) if class.is_structural() => {
                let fields: Vec<Ty> = (0..data.def.cons.len())
                    .flat_map(|con| data.fields(con))
                    .collect();
                all(&fields)
            }
            Ty::Data(_) | Ty::Fun { .. } | Ty::TypeArg(_) | Ty::Con(..) => Ok(false),
        }
    }

    /// Whether an instance of `class` declared in dx matches `ty` (with its constraints met);
    /// `Err` while a unification variable blocks the decision.
    fn instance_holds(&self, class: Class, ty: &Ty) -> std::result::Result<bool, Ty> {
        for instance in self.env.instances_of(class) {
            let bindings = match match_head(&instance.head, &instance.vars, ty) {
                HeadMatch::Blocked => return Err(ty.clone()),
                HeadMatch::No => continue,
                HeadMatch::Yes(bindings) => bindings,
            };
            // A requirement of the instance that waits on a variable keeps the whole
            // constraint waiting: its class is not the one asked about (`Ix (Element s)`
            // needs `Ord a`, not `Ix a`).
            let whole = |_| ty.clone();
            for var in &instance.vars {
                let Some(bound) = bindings.get(var) else {
                    continue;
                };
                for needed in self.env.rigid_classes(*var) {
                    if !self.class_holds(*needed, bound).map_err(whole)? {
                        return Ok(false);
                    }
                }
            }
            for (needed, fact) in self.env.facts_about(&instance.vars) {
                let fact = substitute_rigids(&fact, &bindings);
                if !self.class_holds(needed, &fact).map_err(whole)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        Ok(false)
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
    pub(super) fn solve(&mut self, finish: bool) -> Result<()> {
        loop {
            let mut progress = false;
            // `unsafe_project j`, `inject j`: an index of a range of the other's index set,
            // or of a `Subset` instance.
            for (range, element, span) in std::mem::take(&mut self.projects) {
                match self.zonk(&range) {
                    Ty::Range { of, .. } => {
                        self.unify(&of, &element, span)?;
                        progress = true;
                    }
                    Ty::Var(_) if !finish => self.projects.push((range, element, span)),
                    Ty::Var(_) => {
                        return error_of(
                            Code::NeedsAnnotation,
                            span,
                            "cannot infer which range this index is of: use it where a range \
                             is expected (`xs[i, unsafe_project j]` of `xs: (i:n)=>(..i)=>…`)",
                        )
                    }
                    subset => {
                        let Some(class) = self.env.class_names.get("Subset").copied() else {
                            return error(
                                span,
                                format!("{subset} is not a range (`(..i)`, `(i..)`)"),
                            );
                        };
                        self.constrain(class, Ty::Tuple(vec![subset, element]), span);
                        progress = true;
                    }
                }
            }
            // Note [Accumulator types]
            // ~~~~~~~~~~~~~~~~~~~~~~~~~~~
            // An accumulator of a monoid on `b` holds `b` or tables of `b` (Dex lifts a monoid
            // to tables); the lowering checks which. What nothing else decides (`acc += 1`)
            // is the monoid's own type, not a literal's default: when inference is done, an
            // undecided element of the accumulator (below its tables) is `b`.
            for (base, value, span) in std::mem::take(&mut self.accums) {
                let base = self.zonk(&base);
                let mut value = self.zonk(&value);
                while let (Ty::Table(_, elem), false) = (&value, matches!(base, Ty::Table(..))) {
                    value = (**elem).clone();
                }
                match value {
                    Ty::Var(_) if finish => {
                        self.unify(&value, &base, span)?;
                        progress = true;
                    }
                    Ty::Var(_) => self.accums.push((base, value, span)),
                    _ => {}
                }
            }
            // `p.x`: the field of a type that is known by now.
            for field in std::mem::take(&mut self.fields) {
                match self.zonk(&field.base) {
                    base if !finish && field_waits(&base) => self.fields.push(field),
                    base if field_waits(&base) => {
                        return error_of(
                            Code::NeedsAnnotation,
                            field.span,
                            format!(
                                "the type of this value is not known where its field `{}` is \
                                 read: annotate it (`(x :: T).{}` or a typed parameter)",
                                field.name, field.name
                            ),
                        )
                    }
                    base => {
                        let found = self.field_type(&base, &field.name, field.span)?;
                        self.unify(&field.result, &found, field.span)?;
                        progress = true;
                    }
                }
            }
            // `.*`: the scalar has the type of the value's first scalar (the lowering casts it
            // to each leaf's type); for a `VSpace` variable it is a `Float` by default.
            for (ty, len, span) in std::mem::take(&mut self.texts) {
                match super::show::layout(self.env, &self.zonk(&ty)) {
                    Ok(layout) => {
                        self.unify(&len, &Ty::Fin(layout.width()), span)?;
                        progress = true;
                    }
                    Err(super::show::NoLayout::Unknown) if !finish => {
                        self.texts.push((ty, len, span))
                    }
                    Err(super::show::NoLayout::Unknown) if self.lenient => {}
                    Err(super::show::NoLayout::Unknown) => {
                        // Defaults may still decide it (`show 3`).
                        self.texts.push((ty, len, span))
                    }
                    Err(super::show::NoLayout::Never(message)) => return error(span, message),
                }
            }
            for item in std::mem::take(&mut self.appends) {
                if self.solve_append(&item.operands, &item.result, item.span, finish)? {
                    progress = true;
                } else {
                    self.appends.push(item);
                }
            }
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
                            Class::User(_) => {
                                let instance = self.env.show_constraint(item.class, &ty);
                                format!(
                                    "there is no instance {instance}: declare one with \
                                     `instance {instance}`"
                                )
                            }
                            class if matches!(ty, Ty::Data(_)) => {
                                let name = self.env.class_name(class);
                                format!(
                                    "type {ty} does not support {} (it has no instance of \
                                     {name}): declare one with `instance {name}({ty})`",
                                    class_operation(class)
                                )
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
                        return Err(TypeError::new(item.span, message).of_kind(Code::NoInstance));
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
            for var in std::mem::take(&mut self.hidden_sizes) {
                if let Ty::Var(var) = self.zonk(&Ty::Var(var)) {
                    self.subst[var.0 as usize] = Some(Ty::Fin(Size::Const(0)));
                    defaulted = true;
                }
            }
            // A text's length waits for the type of what it shows (`show 3`: a literal's).
            let mut appended = Vec::new();
            for item in &self.appends {
                collect_vars(&self.zonk(&item.result), &mut appended);
            }
            let text_lengths: Vec<Ty> = self
                .texts
                .iter()
                .map(|(_, len, _)| self.zonk(len))
                .chain(appended.into_iter().map(Ty::Var))
                .collect();
            for index in 0..self.pending.len() {
                let item = self.pending[index].clone();
                let ty = self.zonk(&item.ty);
                if text_lengths.contains(&ty) {
                    continue;
                }
                if let Ty::Var(var) = ty {
                    let default = match self.defaults.get(&var) {
                        // An integer literal that is subtracted is an `Int32` (`2 - 4` is -2).
                        Some(BaseTy::Nat) if self.has_pending(Class::Sub, var) => {
                            Some(BaseTy::Int32)
                        }
                        Some(default) => Some(*default),
                        None => match item.class {
                            Class::Ix if self.lenient => None,
                            Class::Ix => {
                                return error_of(Code::NeedsAnnotation,
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
            if let Some((_, _, span)) = self.texts.first().filter(|_| !defaulted && !self.lenient) {
                return error_of(
                    Code::NeedsAnnotation,
                    *span,
                    "cannot tell the type of the value shown here: annotate it (`show (x :: Int)`)",
                );
            }
            if let Some(item) = self.appends.first().filter(|_| !defaulted && !self.lenient) {
                return error_of(
                    Code::NeedsAnnotation,
                    item.span,
                    "cannot tell the types of what `<>` joins here: annotate one of them",
                );
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
    pub(super) fn with_recovered<T>(&mut self, res: Result<T>) -> Result<T> {
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
        self.solve(true)?;
        for case in std::mem::take(&mut self.cases) {
            let ty = self.zonk(&case.scrutinee);
            let pats: Vec<&TPat> = case.pats.iter().collect();
            let missing = super::exhaustive::missing(&ty, &pats, 4);
            if !missing.is_empty() {
                let list: Vec<String> = missing.iter().map(|pat| format!("`{pat}`")).collect();
                let noun = if missing.len() == 1 {
                    "an alternative"
                } else {
                    "alternatives"
                };
                return error_of(
                    Code::Pattern,
                    case.span,
                    format!(
                        "this `case` is missing {noun} for {} (dx checks every `case` covers \
                         all values of type {ty})",
                        list.join(", ")
                    ),
                );
            }
        }
        Ok(())
    }

    /// Zonks every type in a typed expression.
    pub fn zonk_expr(&self, expr: &mut TExpr) {
        expr.ty = self.zonk(&expr.ty);
        match &mut expr.kind {
            TKind::Local(_)
            | TKind::Global(_)
            | TKind::GivenValue(..)
            | TKind::Builtin(_)
            | TKind::Lit(_)
            | TKind::Numbers(_)
            | TKind::TypeArg
            | TKind::Con { .. } => {}
            TKind::Def { inst, .. } | TKind::Method { inst, .. } => {
                for ty in inst {
                    *ty = self.zonk(ty);
                }
            }
            TKind::Lam { body, .. }
            | TKind::For { body, .. }
            | TKind::At(body)
            | TKind::Field { base: body, .. } => self.zonk_expr(body),
            TKind::Case { scrutinee, alts } => {
                self.zonk_expr(scrutinee);
                for (_, body) in alts {
                    self.zonk_expr(body);
                }
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

    pub(super) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .find(|(bound, _)| bound == name)
            .map(|(_, binding)| binding)
    }

    pub(super) fn with_scope<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let depth = self.scopes.len();
        let res = f(self);
        self.scopes.truncate(depth);
        res
    }

    // ----- types written by the user -----

    /// Reads a type expression. `implicit`, when given, collects unknown lower-case names as
    /// implicit index-set variables (in a `def` signature).
    pub(super) fn read_type(
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
            TypeExprKind::Fun(params, result, effects) => {
                let params: Vec<Ty> = params
                    .iter()
                    .map(|param| self.read_type(param, implicit))
                    .collect::<Result<_>>()?;
                let count = params.len();
                let result = self.read_type(result, implicit)?;
                let row = match effects {
                    Some(row) => self.read_row(row, implicit)?,
                    None => EffRow::pure(),
                };
                Ok(Ty::funs(params, result).with_row_at(count, row))
            }
            TypeExprKind::Hole => Ok(Ty::Var(self.fresh_var())),
            TypeExprKind::Given { binders, ty } => {
                // Each implicit variable is inferred where the function is used (a type
                // variable, not generalised: one instance per annotation).
                self.with_scope(|cx| {
                    for binder in binders {
                        let var = Ty::Var(cx.fresh_var());
                        for class in &binder.classes {
                            let Some(classes) = cx.env.class_by_name(&class.name) else {
                                return error_of(
                                    Code::Unbound,
                                    class.span,
                                    format!("unknown class `{}`", class.name),
                                );
                            };
                            for class in classes {
                                cx.constrain(class, var.clone(), binder.name.span);
                            }
                        }
                        cx.scopes
                            .push((binder.name.name.clone(), Binding::TypeVar(var)));
                    }
                    cx.read_type(ty, implicit)
                })
            }
            TypeExprKind::App(name, args) => self.read_type_app(name, args, texpr.span, implicit),
            TypeExprKind::Range(kind, index) => match self.lookup(&index.name) {
                Some(Binding::Local(local, ty)) => Ok(Ty::Range {
                    kind: *kind,
                    of: Box::new(ty.clone()),
                    bound: Bound::Local(*local, index.name.clone()),
                }),
                _ => error(
                    index.span,
                    format!(
                        "a range is of an index in scope (`for i:n.` … `(..i)`); `{}` is not one",
                        index.name
                    ),
                ),
            },
            TypeExprKind::DepTable {
                binder,
                index,
                elem,
            } => {
                let index_ty = self.read_type(index, implicit)?;
                self.constrain(Class::Ix, index_ty.clone(), index.span);
                let local = self.new_local(&binder.name);
                let elem_ty = self.with_scope(|cx| {
                    cx.scopes
                        .push((binder.name.clone(), Binding::Local(local, index_ty.clone())));
                    cx.read_type(elem, &mut None)
                })?;
                Ok(Ty::dep_table(index_ty, local, elem_ty))
            }
            TypeExprKind::Size(_) => error(
                texpr.span,
                "a size is not a type here (a size is an argument: `Fin 3`, `Vec 3`)",
            ),
        }
    }

    /// `MyPair Int Float`, `Maybe(Float)`, `Fin(3)`, `Vec 3`: a user type or type function
    /// applied to its arguments.
    fn read_type_app(
        &mut self,
        name: &Ident,
        args: &[TypeExpr],
        span: Span,
        implicit: &mut Option<&mut Vec<(String, Rigid)>>,
    ) -> Result<Ty> {
        if name.name == "Fin" {
            let [arg] = args else {
                return error(span, "`Fin` takes one size: `Fin 3`");
            };
            return Ok(Ty::Fin(self.read_size_arg(arg)?));
        }
        if name.name == "Ref" {
            // `Ref h s`: a reference in the region `h` to a value of type `s` (Note
            // [References]).
            let [region, value] = args else {
                return error(span, "`Ref` takes a region and a type: `Ref h Float`");
            };
            let region = self.read_type(region, implicit)?;
            let value = self.read_type(value, implicit)?;
            return Ok(Ty::Con(super::types::TyCon::Ref, vec![region, value]));
        }
        if name.name == "Monoid" {
            // `Monoid T`: a monoid value (`AddMonoid Float`, a named instance).
            let [base] = args else {
                return error(span, "`Monoid` takes one type: `Monoid Float`");
            };
            let base = self.read_type(base, implicit)?;
            return Ok(Ty::Con(super::types::TyCon::Monoid, vec![base]));
        }
        if let Some(def) = self.env.data_types.get(&name.name).cloned() {
            return self.read_data_type(def, args, span, implicit);
        }
        let type_fn = match self.lookup(&name.name) {
            Some(Binding::TypeFn(type_fn)) => Some((**type_fn).clone()),
            _ => self.env.type_fns.get(&name.name).cloned(),
        };
        if let Some(type_fn) = type_fn {
            return self.apply_type_fn(&name.name, &type_fn, args, span, implicit);
        }
        error_of(
            Code::Unbound,
            name.span,
            format!("unknown type `{}`", name.name),
        )
    }

    /// A user type applied to its arguments (one per parameter the declaration wrote; a
    /// hidden size parameter is inferred, Note [Size fields]).
    fn read_data_type(
        &mut self,
        def: std::sync::Arc<super::data::DataDef>,
        args: &[TypeExpr],
        span: Span,
        implicit: &mut Option<&mut Vec<(String, Rigid)>>,
    ) -> Result<Ty> {
        let visible: Vec<&super::data::DataParam> =
            def.params.iter().filter(|param| !param.hidden).collect();
        if visible.len() != args.len() {
            let names: Vec<&str> = visible.iter().map(|param| param.name.as_str()).collect();
            return error_of(
                Code::Arity,
                span,
                format!(
                    "`{}` takes {} argument{} (`{}({})`), this gives {}",
                    def.name,
                    visible.len(),
                    if visible.len() == 1 { "" } else { "s" },
                    def.name,
                    names.join(", "),
                    args.len()
                ),
            );
        }
        let mut args = args.iter();
        let mut tys = Vec::new();
        // The values given to value parameters: their types and where they are written.
        let mut values = Vec::new();
        for param in &def.params {
            let ty = if param.hidden {
                Ty::Var(self.fresh_var())
            } else {
                let Some(arg) = args.next() else {
                    return Err(TypeError::bug(span, "a type argument went missing"));
                };
                if param.is_size {
                    Ty::Fin(self.read_size_arg(arg)?)
                } else if let Some(param_ty) = &param.value {
                    let (named, value_ty) = self.read_value_arg(arg, param_ty)?;
                    values.push((param_ty.clone(), value_ty, arg.span));
                    named
                } else {
                    self.read_type(arg, implicit)?
                }
            };
            for class in self.env.rigid_classes(param.rigid).to_vec() {
                self.constrain(class, ty.clone(), span);
            }
            tys.push(ty);
        }
        let data = DataTy { def, args: tys };
        for (param_ty, value_ty, at) in values {
            self.unify(&data.instantiate(&param_ty), &value_ty, at)?;
        }
        Ok(Ty::Data(data))
    }

    /// The value a type names (`names` in `Element names`, Note [Value parameters]), and its
    /// type: a top-level value, a local, or a `given (set:Set a)` variable.
    fn read_value_arg(&mut self, arg: &TypeExpr, param_ty: &Ty) -> Result<(Ty, Ty)> {
        let TypeExprKind::Name(ident) = &arg.kind else {
            return error(
                arg.span,
                format!("expected the name of a value of type {param_ty} here"),
            );
        };
        self.value_named(ident, arg.span)
    }

    /// The value `ident` names, as a type argument (Note [Value parameters]), and its type.
    fn value_named(&mut self, ident: &Ident, span: Span) -> Result<(Ty, Ty)> {
        let name = ident.name.clone();
        match self.lookup(&name) {
            Some(Binding::Local(local, ty)) => {
                Ok((Ty::Value(ValueArg::Local(*local, name)), ty.clone()))
            }
            Some(Binding::TypeVar(Ty::Rigid(rigid, _))) => match self.env.value_rigid(*rigid) {
                Some(ty) => Ok((Ty::Rigid(*rigid, name), self.zonk(ty))),
                None => error(
                    span,
                    format!("`{name}` is a type; expected the name of a value here"),
                ),
            },
            Some(_) => error(
                span,
                format!("`{name}` is not a value that a type can name (a top-level value or a parameter)"),
            ),
            None => match self.env.values.get(&name) {
                Some(ty) => Ok((Ty::Value(ValueArg::Global(name)), ty.clone())),
                None if self.names_a_type(&TypeExpr {
                    kind: TypeExprKind::Name(ident.clone()),
                    span,
                }) =>
                {
                    error(
                        span,
                        format!("`{name}` is a type; expected the name of a value here"),
                    )
                }
                None => error_of(
                    Code::Unbound,
                    span,
                    format!("unknown value `{name}`"),
                ),
            },
        }
    }

    /// Whether a type argument is the name of a value of the block or function (a local).
    fn names_a_value(&self, arg: &TypeExpr) -> bool {
        matches!(&arg.kind, TypeExprKind::Name(ident)
            if matches!(self.lookup(&ident.name), Some(Binding::Local(..))))
    }

    /// Whether `name` is a type variable (a `given` binder or an implicit index set).
    fn is_type_var(&self, name: &str) -> bool {
        matches!(self.lookup(name), Some(Binding::TypeVar(Ty::Rigid(..))))
    }

    /// A size written as a type argument: `3`, `(n + 1)`, or a name (`Fin n`, `Vec n`).
    fn read_size_arg(&mut self, arg: &TypeExpr) -> Result<Size> {
        let expected = "expected a size here (a `Nat`: `3`, `n`, `(n + 1)`)";
        match &arg.kind {
            TypeExprKind::Size(expr) => self.read_size(expr),
            // A `given (n: Nat)` binder is a size (it stands for `Fin n`, see `read_size`).
            TypeExprKind::Name(ident)
                if self.names_a_type(arg) && !self.is_type_var(&ident.name) =>
            {
                error(
                    arg.span,
                    format!("{expected}, not the type `{}`", ident.name),
                )
            }
            TypeExprKind::Name(ident) => self.read_size(&Expr {
                kind: ExprKind::Var(ident.clone()),
                span: arg.span,
            }),
            _ => error(
                arg.span,
                "expected a size here (a `Nat`: `3`, `n`, `(n + 1)`)",
            ),
        }
    }

    /// Reads the body of a type function with its parameters bound to the arguments.
    pub(super) fn apply_type_fn(
        &mut self,
        name: &str,
        type_fn: &super::env::TypeFn,
        args: &[TypeExpr],
        span: Span,
        implicit: &mut Option<&mut Vec<(String, Rigid)>>,
    ) -> Result<Ty> {
        if type_fn.params.len() != args.len() {
            return error_of(
                Code::Arity,
                span,
                format!(
                    "`{name}` takes {} argument{}, this gives {}",
                    type_fn.params.len(),
                    if type_fn.params.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            );
        }
        let mut bindings = Vec::new();
        for (param, arg) in type_fn.params.iter().zip(args) {
            let Pattern::Var(param_name) = &param.pat else {
                return error(param.span, "a type function's parameter is a name");
            };
            let binding = if is_nat_param(param) {
                Binding::SizeVar(self.read_size_arg(arg)?)
            } else if self.names_a_value(arg) {
                // A `Nat` value for a parameter the body uses as a size (`GridIx(dim,
                // grid_size)` of Dex's md, whose body is `dim => (Fin grid_size)`): the index
                // set of that size, whose `size` it is.
                Binding::TypeVar(Ty::Fin(self.read_size_arg(arg)?))
            } else {
                Binding::TypeVar(self.read_type(arg, implicit)?)
            };
            bindings.push((param_name.name.clone(), binding));
        }
        self.with_scope(|cx| {
            cx.scopes.extend(bindings);
            cx.read_type(&type_fn.body, &mut None)
        })
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
        if let Some(def) = self.env.data_types.get(name).cloned() {
            return self.read_data_type(def, &[], span, implicit);
        }
        let type_fn = match self.lookup(name) {
            Some(Binding::TypeFn(type_fn)) => Some((**type_fn).clone()),
            _ => self.env.type_fns.get(name).cloned(),
        };
        if let Some(type_fn) = type_fn {
            return self.apply_type_fn(name, &type_fn, &[], span, implicit);
        }
        // Dex's `Html` is the text `:html` shows; dx's libraries keep what is shown as data
        // of its own type (a `Plot`, an `Image`, an `Animation`, …), so `-> Html` stands for
        // whichever the body makes, as `_` does.
        if name == "Html" {
            return Ok(Ty::Var(self.fresh_var()));
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
        error_of(Code::Unbound, span, format!("unknown type `{name}`"))
    }

    /// `Fin camera.numPix`: a `Nat` field of a parameter (specialised per call, as a `Nat`
    /// parameter is) or of a top-level value (a constant: its value is known).
    fn read_field_size(&mut self, expr: &Expr) -> Result<Size> {
        let mut fields = Vec::new();
        let mut base = expr;
        while let ExprKind::Field { base: inner, field } = &base.kind {
            fields.push(field);
            base = inner;
        }
        fields.reverse();
        // `Camera(3, h).numPix` is the constructor's argument for the field.
        while let Some(arg) = fields
            .first()
            .and_then(|field| self.constructor_argument(base, &field.name))
        {
            base = arg;
            fields.remove(0);
        }
        if fields.is_empty() {
            return self.read_size(base);
        }
        let ExprKind::Var(root) = &base.kind else {
            return error(
                expr.span,
                "a size must be known when the block is compiled: a field of a parameter or of a top-level value",
            );
        };
        let written: Vec<&str> = std::iter::once(root.name.as_str())
            .chain(fields.iter().map(|field| field.name.as_str()))
            .collect();
        let written = written.join(".");
        let mut ty = match self.lookup(&root.name) {
            Some(Binding::Local(_, ty)) => ty.clone(),
            Some(_) => return error(expr.span, format!("`{}` has no fields", root.name)),
            None => match self.env.static_nats.get(&written) {
                Some(n) => return Ok(Size::Const(*n)),
                None => match self.env.values.get(&root.name) {
                    Some(ty) => ty.clone(),
                    None => {
                        return error_of(
                            Code::Unbound,
                            root.span,
                            format!("unbound variable `{}`", root.name),
                        )
                    }
                },
            },
        };
        let mut path = Vec::with_capacity(fields.len());
        for field in &fields {
            let known = self.zonk(&ty);
            ty = self.field_type(&known, &field.name, field.span)?;
            path.push(known.field_position(&field.name).unwrap_or(0));
        }
        let ty = self.zonk(&ty);
        if ty != Ty::nat() {
            return error(
                expr.span,
                format!("a size is a Nat, but `{written}` has type {ty}"),
            );
        }
        match self.lookup(&root.name) {
            Some(Binding::Local(local, _)) => Ok(Size::Field(
                *local,
                Box::new(FieldPath {
                    positions: path,
                    written,
                }),
            )),
            _ => error(
                expr.span,
                format!("the size `{written}` is not known when the block is compiled"),
            ),
        }
    }

    /// The argument a struct's constructor call (`Camera(3, h)`) gives field `field`.
    fn constructor_argument<'e>(&self, call: &'e Expr, field: &str) -> Option<&'e Expr> {
        let (head, args) = call.spine();
        let ExprKind::Var(con) = &head.kind else {
            return None;
        };
        if self.lookup(&con.name).is_some() {
            return None;
        }
        let (def, _) = self.env.constructors.get(&con.name)?;
        if def.is_tagged() {
            return None;
        }
        let fields = &def.cons[0].fields;
        let position = fields
            .iter()
            .position(|known| known.name.as_deref() == Some(field))
            .or_else(|| field.parse().ok())?;
        (args.len() == fields.len()).then(|| args.get(position).copied())?
    }

    /// Reads a size: a literal, a `Nat` parameter, a top-level `Nat`, `size n`, arithmetic.
    pub(super) fn read_size(&mut self, expr: &Expr) -> Result<Size> {
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
            ExprKind::Neg(_) => error(expr.span, "a size is a Nat: it cannot be negative"),
            ExprKind::Var(ident) => match self.lookup(&ident.name) {
                Some(Binding::Local(local, _)) => match self.static_sizes.get(local) {
                    Some(size) => Ok(size.clone()),
                    None => Ok(Size::Local(*local, ident.name.clone())),
                },
                Some(Binding::SizeVar(size)) => Ok(size.clone()),
                // `given (n)` (or `given (n: Nat)`) used as a size, as Dex infers: `n` stands
                // for the index set `Fin n`, whose size it is.
                Some(Binding::TypeVar(Ty::Rigid(rigid, name))) => {
                    let rigid = *rigid;
                    let name = name.clone();
                    self.env
                        .add_rigid_classes(rigid, &[Class::Ix, Class::Eq, Class::Ord]);
                    self.size_rigids.insert(rigid);
                    Ok(Size::Of(Box::new(Ty::Rigid(rigid, name))))
                }
                // A type function's parameter bound to an index set: its size.
                Some(Binding::TypeVar(ty)) => match size_of_ix(ty) {
                    Some(size) => Ok(size),
                    None => not_static(),
                },
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
            ExprKind::Field { .. } => self.read_field_size(expr),
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
            // `a -| b`, subtraction floored at zero (the prelude's), is `Size::Sub` itself.
            ExprKind::UserOp { op, lhs, rhs } if op.name == "-|" && self.lookup("-|").is_none() => {
                let (a, b) = (self.read_size(lhs)?, self.read_size(rhs)?);
                Ok(Size::Sub(Box::new(a), Box::new(b)))
            }
            ExprKind::BinOp { op: BinOp::Sub, .. } => error(
                expr.span,
                "a size is a Nat, and `Nat` has no subtraction (as in Dex): use \
                 `unsafe_nat_diff a b` when `a >= b`, or `a -| b` (floored at zero)",
            ),
            // A whole number converted to a `Nat` (`Fin (i32_to_n num_classes)` of an `Int`
            // parameter) is the same number.
            ExprKind::App {
                func,
                arg,
                name: None,
            } if ["i32_to_n", "i64_to_n", "w8_to_n", "w32_to_n", "w64_to_n"]
                .iter()
                .any(|conversion| is_var(func, conversion)) =>
            {
                self.read_size(arg)
            }
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
        match expr_as_type(expr) {
            Some(ty) => self.read_type(&ty, &mut None),
            None => error(
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
                    Lit::Char(_) => Ty::Base(BaseTy::Word8),
                    Lit::Str(text) => self.string_type(text.len(), span)?,
                };
                Ok(texpr(TKind::Lit(lit.clone()), ty))
            }
            ExprKind::Lam { params, body } => self.infer_lambda(params, body, None, span, depth),
            ExprKind::For { binders, body } => self.with_scope(|cx| {
                check_distinct(binders.iter().map(|binder| &binder.name))?;
                let mut locals = Vec::new();
                let mut counts = Vec::new();
                for binder in binders {
                    let ix = match &binder.ty {
                        Some(ty) => match cx.read_type(ty, &mut None) {
                            Ok(ix) => ix,
                            // `for i:(Fin (cells box)).`: the count is computed first, before
                            // the loop, so it may not read the loop's earlier indices (a later
                            // index set of a regular table cannot depend on them). A name or a
                            // field that is no size keeps its own error.
                            Err(err) => match &ty.kind {
                                TypeExprKind::Fin(count)
                                    if !matches!(
                                        count.kind,
                                        ExprKind::Var(_) | ExprKind::Field { .. }
                                    ) =>
                                {
                                    // Named by what it computes in messages.
                                    let name =
                                        format!("({})", crate::syntax::print::print_expr(count));
                                    let (stmt, ix) = cx.computed_count(count, name, depth)?;
                                    let earlier: Vec<LocalId> =
                                        locals.iter().map(|(local, _)| *local).collect();
                                    if let TStmt::Let { value, .. } = &stmt {
                                        if reads_any_local(value, &earlier) {
                                            return error(count.span, RAGGED);
                                        }
                                    }
                                    counts.push(stmt);
                                    ix
                                }
                                _ => return Err(err),
                            },
                        },
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
                    // Ranges of the index in the body's type become the table's own
                    // (`for i. for j:(..i). …` is a `(i:n)=>(..i)=>…`, Note [Ranges]).
                    let elem = cx.zonk(&res.ty);
                    let ty = Ty::dep_table(ix, local, elem);
                    res = TExpr {
                        kind: TKind::For {
                            binder: local,
                            body: Box::new(res),
                        },
                        ty,
                        span,
                    };
                }
                if !counts.is_empty() {
                    res = TExpr {
                        ty: res.ty.clone(),
                        kind: TKind::Block {
                            stmts: counts,
                            result: Box::new(res),
                        },
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
                // `if c then x` (no `else`, Dex's form for effects): the parser's `else ()`
                // is empty text.
                if else_branch.span.start == else_branch.span.end {
                    let unit = Ty::Tuple(Vec::new());
                    let shown = match self.zonk(&then_branch.ty) {
                        Ty::Var(_) => String::new(),
                        ty => format!(" of type {ty}"),
                    };
                    let checked = self
                        .unify(&unit, &then_branch.ty, then_branch.span)
                        .and_then(|()| self.solve(false));
                    if checked.is_err() {
                        return error(
                            then_branch.span,
                            format!(
                                "an `if` without `else` gives `()`, but this branch gives a \
                                 value{shown}: add `else …`"
                            ),
                        );
                    }
                }
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
                if let Some(func) = self.index_map_to(func, arg, name.as_ref(), depth)? {
                    return Ok(func);
                }
                let given = match name {
                    Some(name) => self.check_arg_name(func, name)?,
                    None => None,
                };
                let func = self.infer_depth(func, depth + 1)?;
                match given {
                    Some(position) => {
                        let filled = self.fill_given(func, position, arg, span)?;
                        // `value(a=Int)` of `value : () -> Int` is the value (Dex's call of a
                        // method of no arguments).
                        let nullary = matches!(filled.kind, TKind::Method { .. })
                            && matches!(self.zonk(&filled.ty),
                                Ty::Fun { param, .. } if *param == Ty::Tuple(Vec::new()));
                        if !nullary {
                            return Ok(filled);
                        }
                        let unit = Expr {
                            kind: ExprKind::Tuple(Vec::new()),
                            span,
                        };
                        self.apply(filled, &unit, span, depth)
                    }
                    None => self.apply(func, arg, span, depth),
                }
            }
            ExprKind::Section(op) => self.binop_function(*op, span),
            // Dex's `x /= y` (the prelude's, not one the user defined) is `x != y`: values that
            // differ in a hidden size may be compared (`equal_up_to_hidden_sizes`).
            ExprKind::UserOp { op, lhs, rhs }
                if op.name == "/="
                    && self.lookup(&op.name).is_none()
                    && self
                        .env
                        .def(&op.name)
                        .is_some_and(|(key, _)| *key == op.name) =>
            {
                let not_equal = Expr {
                    kind: ExprKind::BinOp {
                        op: BinOp::Ne,
                        lhs: lhs.clone(),
                        rhs: rhs.clone(),
                    },
                    span,
                };
                self.infer_depth(&not_equal, depth)
            }
            ExprKind::UserOp { op, lhs, rhs } => {
                let func = self.infer_var(&op.name, op.span)?;
                let partial = self.apply(func, lhs, lhs.span.to(op.span), depth)?;
                self.apply(partial, rhs, span, depth)
            }
            ExprKind::Field { base, field } => {
                let base = self.infer_depth(base, depth + 1)?;
                if let Some(method) = self.struct_method(&base.ty, &field.name) {
                    // `t.incby`: the struct's method with `self = t` (Dex's method call).
                    let func = self.infer_var(&method, field.span)?;
                    return self.apply_typed(func, base, span);
                }
                let ty = match self.zonk(&base.ty) {
                    known if field_waits(&known) => {
                        let result = Ty::Var(self.fresh_var());
                        self.fields.push(PendingField {
                            base: base.ty.clone(),
                            name: field.name.clone(),
                            result: result.clone(),
                            span: field.span,
                        });
                        result
                    }
                    known => self.field_type(&known, &field.name, field.span)?,
                };
                Ok(texpr(
                    TKind::Field {
                        base: Box::new(base),
                        field: field.name.clone(),
                    },
                    ty,
                ))
            }
            ExprKind::Case { scrutinee, alts } => self.infer_case(scrutinee, alts, span, depth),
            ExprKind::Hole => error(
                span,
                "`_` stands for a type to be inferred; it is not a value",
            ),
            ExprKind::Range(..) => error(
                span,
                "a range is a type; it can only be passed where a type is expected (`size (..i)`)",
            ),
            ExprKind::BinOp { op, lhs, rhs } => {
                let func = self.binop_function(*op, span)?;
                let lhs_span = lhs.span;
                let partial = if *op == BinOp::Div {
                    let value = self.infer_depth(lhs, depth + 1)?;
                    if self.is_vector(&value.ty) {
                        return self.divide_vector(func, value, rhs, span, depth);
                    }
                    self.apply_typed(func, value, lhs_span.to(span))?
                } else if matches!(op, BinOp::Eq | BinOp::Ne)
                    && matches!(func.kind, TKind::Builtin(Builtin::Prim(_)))
                {
                    let value = self.infer_depth(lhs, depth + 1)?;
                    if self.holds_hidden_size(&value.ty) {
                        return self.equal_up_to_hidden_sizes(func, value, rhs, span, depth);
                    }
                    self.apply_typed(func, value, lhs_span.to(span))?
                } else {
                    self.apply(func, lhs, lhs_span.to(span), depth)?
                };
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
                        Stmt::TypeAlias(alias) => {
                            if let Err(err) = cx.bind_local_alias(alias) {
                                cx.recover(err, vec![&alias.name])?;
                            }
                        }
                        // `N = Fin 3` in a block: a local index-set alias.
                        Stmt::Let(binding) if cx.alias_type(binding).is_some() => {
                            if let Some(Err(err)) = cx.local_alias(binding) {
                                // `doublings = Fin (1 + natlog2 (f_to_n t))`: a size the
                                // block computes, bound to a value a loop can count to.
                                match cx.computed_fin(binding, depth) {
                                    Some(Ok(stmt)) => typed.push(stmt),
                                    _ => cx.recover(err, binding.pat.names())?,
                                }
                            }
                        }
                        Stmt::Let(binding) => match cx
                            .infer_let(binding, depth)
                            .and_then(|res| cx.solve(false).map(|()| res))
                        {
                            Ok((pat, value)) => {
                                cx.remember_static_size(&pat, &value.ty, binding);
                                typed.push(TStmt::Let { pat, value })
                            }
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

    /// `n = 3` (or another static size) in a block: `Fin n` after it is that size, so that a
    /// type leaving the block (`(Fin n)=>Float`) does not name the block's local.
    fn remember_static_size(&mut self, pat: &TPat, ty: &Ty, binding: &LetBinding) {
        let TPat::Var(local, _) = pat else {
            return;
        };
        // An integer literal not decided yet may still be a `Nat`; reading it as a size (in
        // `Fin n`) makes it one.
        let nat = match self.zonk(ty) {
            Ty::Var(var) => self.defaults.get(&var) == Some(&BaseTy::Nat),
            ty => ty == Ty::nat(),
        };
        if nat {
            if let Ok(size) = self.read_size(&binding.value) {
                self.static_sizes.insert(*local, size);
            }
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
            // A `given (set:Set a)`: the value it stands for.
            Some(Binding::TypeVar(Ty::Rigid(rigid, _)))
                if self.env.value_rigid(rigid).is_some() =>
            {
                let ty = self.env.value_rigid(rigid).map(|ty| self.zonk(ty));
                return Ok(TExpr {
                    kind: TKind::GivenValue(rigid, name.to_string()),
                    ty: ty.unwrap_or(Ty::Tuple(Vec::new())),
                    span,
                });
            }
            // A `given (n)` that is a size (Dex's implicit `n: Nat`): its value is `size n`.
            Some(Binding::TypeVar(Ty::Rigid(rigid, _))) if self.size_rigids.contains(&rigid) => {
                let var = |name: &str| Expr {
                    kind: ExprKind::Var(Ident {
                        name: name.to_string(),
                        span,
                    }),
                    span,
                };
                let size_of = Expr {
                    kind: ExprKind::App {
                        func: Box::new(var("size")),
                        arg: Box::new(var(name)),
                        name: None,
                    },
                    span,
                };
                return self.infer(&size_of);
            }
            Some(Binding::TypeVar(_) | Binding::TypeFn(_)) => {
                return error(
                    span,
                    format!("`{name}` is a type; it can only be passed where a type is expected"),
                )
            }
            Some(Binding::SizeVar(_)) => {
                return error(
                    span,
                    format!("`{name}` is a size of a type; it is not a value here"),
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
        if let Some((def, con)) = self.env.constructors.get(name).cloned() {
            return Ok(self.instantiate_con(&def, con, span));
        }
        if let Some((class, method)) = self.env.methods.get(name).copied() {
            return self.instantiate_method(class, method, span);
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
        if name.starts_with(|c: char| !c.is_alphanumeric() && c != '_') {
            return Err(TypeError::new(
                span,
                format!("unknown operator `{name}`: define it with `def ({name})(x, y) = …`"),
            )
            .of_kind(Code::Unbound));
        }
        Err(TypeError::new(
            span,
            format!("unbound variable `{name}`{}", self.did_you_mean(name)),
        )
        .of_kind(Code::Unbound))
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
            .chain(Builtin::names().map(|name| -> &str { name }));
        match super::suggest::closest(name, candidates) {
            Some(close) => format!(" (did you mean `{close}`?)"),
            None => String::new(),
        }
    }

    /// The type of a string of `len` characters: the prelude's `List Char` of that length.
    fn string_type(&mut self, len: usize, span: Span) -> Result<Ty> {
        let Some(def) = self.env.data_types.get("List").cloned() else {
            return error(
                span,
                "a string is a `List Char`, and `List` is not defined (the prelude defines it)",
            );
        };
        Ok(Ty::Data(DataTy {
            def,
            args: vec![Ty::Base(BaseTy::Word8), Ty::Fin(Size::Const(len as u64))],
        }))
    }

    /// Constructor `con` of `def` as a value: a function of its fields, at fresh arguments.
    fn instantiate_con(
        &mut self,
        def: &std::sync::Arc<super::data::DataDef>,
        con: usize,
        span: Span,
    ) -> TExpr {
        let mut args = Vec::new();
        for param in &def.params {
            let fresh = self.fresh_var();
            if param.is_hidden_size() {
                self.hidden_sizes.push(fresh);
            }
            let var = Ty::Var(fresh);
            for class in self.env.rigid_classes(param.rigid).to_vec() {
                self.constrain(class, var.clone(), span);
            }
            args.push(var);
        }
        let data = DataTy {
            def: def.clone(),
            args,
        };
        let ty = Ty::funs(data.fields(con), Ty::Data(data.clone()));
        TExpr {
            kind: TKind::Con {
                con,
                name: def.cons[con].name.clone(),
            },
            ty,
            span,
        }
    }

    /// Method `method` of `class` as a value, at a fresh class argument (constrained to be in
    /// the class) and fresh variables of its own.
    fn instantiate_method(&mut self, class: Class, method: usize, span: Span) -> Result<TExpr> {
        let Some(class_def) = self.env.class_defs.get(&class).cloned() else {
            return Err(TypeError::bug(span, "a method of an unknown interface"));
        };
        let method_def = &class_def.methods[method];
        let mut parts = Vec::new();
        for param in &class_def.params {
            let part = Ty::Var(self.fresh_var());
            for sup in &param.supers {
                self.constrain(*sup, part.clone(), span);
            }
            parts.push(part);
        }
        let class_arg = class_def.class_arg(parts);
        self.constrain(class, class_arg.clone(), span);
        let mut mapping = class_def.mapping(&class_arg);
        let mut inst = vec![class_arg];
        for var in &method_def.vars {
            let fresh = Ty::Var(self.fresh_var());
            for needed in self.env.rigid_classes(*var).to_vec() {
                self.constrain(needed, fresh.clone(), span);
            }
            mapping.insert(*var, fresh.clone());
            inst.push(fresh);
        }
        let ty = substitute_rigids(&method_def.ty, &mapping);
        Ok(TExpr {
            kind: TKind::Method {
                class,
                method,
                name: method_def.name.clone(),
                inst,
            },
            ty,
            span,
        })
    }

    /// The type of field `name` of a value of (known) type `base`: a struct's field by name or
    /// position, a tuple's component by position (`t.0`).
    pub(super) fn field_type(&mut self, base: &Ty, name: &str, span: Span) -> Result<Ty> {
        let position = name.parse::<usize>().ok();
        let unknown = |known: Vec<String>| {
            error(
                span,
                format!(
                    "type {base} has no field `{name}`; its fields are: {}",
                    known.join(", ")
                ),
            )
        };
        match base {
            Ty::Tuple(items) => match position.and_then(|k| items.get(k)) {
                Some(item) => Ok(item.clone()),
                None => unknown((0..items.len()).map(|k| k.to_string()).collect()),
            },
            Ty::Data(data) if data.def.is_tagged() => error(
                span,
                format!("type {base} has several constructors, so its fields are read with `case`"),
            ),
            Ty::Data(data) => {
                let fields = data.fields(0);
                let index = data
                    .field_index(name)
                    .or(position.filter(|k| *k < fields.len()));
                match index {
                    Some(index) => Ok(fields[index].clone()),
                    None => {
                        let mut known = data.field_names();
                        known.extend((0..fields.len()).map(|k| k.to_string()));
                        unknown(known)
                    }
                }
            }
            // `ref.x`: a reference to the field (Dex's field references).
            Ty::Con(super::types::TyCon::Ref, args) if args.len() == 2 => {
                let field = self.field_type(&args[1], name, span)?;
                Ok(Ty::Con(
                    super::types::TyCon::Ref,
                    vec![args[0].clone(), field],
                ))
            }
            _ => error(
                span,
                format!("only structs and tuples have fields; this has type {base}"),
            ),
        }
    }

    /// `case scrutinee of` alternatives: each pattern is matched against the scrutinee's
    /// type, every body has the type of the first. Exhaustiveness is checked when the
    /// declaration's types are known (`finish`).
    fn infer_case(
        &mut self,
        scrutinee: &Expr,
        alts: &[CaseAlt],
        span: Span,
        depth: usize,
    ) -> Result<TExpr> {
        let scrutinee = self.infer_depth(scrutinee, depth + 1)?;
        let result_ty = Ty::Var(self.fresh_var());
        let mut typed = Vec::new();
        for alt in alts {
            check_distinct(alt.pat.names())?;
            let (pat, body) = self.with_scope(|cx| {
                let pat = cx.bind_pattern(&alt.pat, &scrutinee.ty, true)?;
                let body = cx.infer_depth(&alt.body, depth + 1)?;
                cx.unify(&result_ty, &body.ty, alt.body.span)?;
                Ok((pat, body))
            })?;
            typed.push((pat, body));
        }
        self.cases.push(PendingCase {
            scrutinee: scrutinee.ty.clone(),
            pats: typed.iter().map(|(pat, _)| pat.clone()).collect(),
            span: Span::new(span.start as usize, scrutinee.span.end as usize),
        });
        Ok(TExpr {
            kind: TKind::Case {
                scrutinee: Box::new(scrutinee),
                alts: typed,
            },
            ty: result_ty,
            span,
        })
    }

    /// A local `Name = T`, `Name : Type = T` or `def Name(…) -> Type = T`: bound in scope.
    fn bind_local_alias(&mut self, alias: &crate::syntax::ast::TypeAlias) -> Result<()> {
        let binding = match &alias.params {
            Some(params) => Binding::TypeFn(Box::new(super::env::TypeFn {
                params: params.clone(),
                body: alias.ty.clone(),
            })),
            None => Binding::TypeVar(self.read_type(&alias.ty, &mut None)?),
        };
        self.scopes.push((alias.name.name.clone(), binding));
        Ok(())
    }

    /// `doublings = Fin e` in a block, for a `Nat` `e` the block computes: the statement
    /// binding its value, and the alias bound to `Fin` of it (`fold`/`for_` can loop over it;
    /// `lower.rs`, `run_time_count`).
    fn computed_fin(&mut self, binding: &LetBinding, depth: usize) -> Option<Result<TStmt>> {
        let (name, ty) = self.alias_type(binding)?;
        let TypeExprKind::Fin(size) = &ty.kind else {
            return None;
        };
        Some(
            self.computed_count(size, name.clone(), depth)
                .map(|(stmt, fin)| {
                    self.scopes.push((name, Binding::TypeVar(fin)));
                    stmt
                }),
        )
    }

    /// `Fin e` of a `Nat` expression `e` that is no size of a type (`Fin (cells box)`): the
    /// statement computing `e` into a local named `name`, and `Fin` of that local.
    fn computed_count(&mut self, count: &Expr, name: String, depth: usize) -> Result<(TStmt, Ty)> {
        let value = self.infer_depth(count, depth + 1)?;
        self.unify(&Ty::nat(), &value.ty, count.span)?;
        self.solve(false)?;
        let local = self.new_local(&name);
        let ix = Ty::Fin(Size::Local(local, name.clone()));
        Ok((
            TStmt::Let {
                pat: TPat::Var(local, name),
                value,
            },
            ix,
        ))
    }

    /// `N = Fin 3` (a capitalised name bound to a type) in a block: binds the alias.
    fn local_alias(&mut self, binding: &LetBinding) -> Option<Result<()>> {
        let res = self.try_alias(binding)?;
        Some(res.map(|(name, ty)| self.scopes.push((name, Binding::TypeVar(ty)))))
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
        // A method's class variable, named (`value(a=Int)`: the instance for `Int`), is the
        // first of its instantiation.
        if self.lookup(&ident.name).is_none() {
            if let Some((class, _)) = self.env.methods.get(&ident.name) {
                let named = self.env.class_defs.get(class);
                if named.is_some_and(
                    |def| matches!(def.params.as_slice(), [param] if param.name == name.name),
                ) {
                    return Ok(Some(0));
                }
            }
        }
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
            None => error_of(
                Code::Arity,
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

    /// The name of the definition of the method `name` of `ty`, when `ty` is a struct with
    /// such a method (`check::struct_method_defs`).
    fn struct_method(&self, ty: &Ty, name: &str) -> Option<String> {
        let Ty::Data(data) = self.zonk(ty) else {
            return None;
        };
        let method = super::declare::method_def_name(&data.def.name, name);
        self.env.def(&method).is_some().then_some(method)
    }

    /// `inject(to=T, i)`, `project(to=T, j)`, `unsafe_project(to=T, j)`: Dex's names for
    /// the index set these built-ins give (`T`, `Maybe T`, `T`). `to=T` is no argument: the
    /// function's result is `T`. `None` for any other application.
    fn index_map_to(
        &mut self,
        func: &Expr,
        arg: &Expr,
        name: Option<&Ident>,
        depth: usize,
    ) -> Result<Option<TExpr>> {
        let (Some(name), ExprKind::Var(head)) = (name, &func.kind) else {
            return Ok(None);
        };
        let maybe = match head.name.as_str() {
            "inject" | "unsafe_project" => false,
            "project" => true,
            _ => return Ok(None),
        };
        if name.name != "to"
            || self.lookup(&head.name).is_some()
            || self.env.def(&head.name).is_some()
        {
            return Ok(None);
        }
        let to = self.read_type_of_expr(arg)?;
        let func = self.infer_depth(func, depth + 1)?;
        // The built-ins' types (`Builtin::ty`): `n -> m` and `project`'s `n -> Maybe m`.
        let result = match self.zonk(&func.ty) {
            Ty::Fun { result, .. } => *result,
            other => return error(func.span, format!("`{}` has type {other}", head.name)),
        };
        let result = match (maybe, result) {
            (true, Ty::Data(data)) if data.args.len() == 1 => data.args[0].clone(),
            (true, other) => return error(func.span, format!("`project` gives {other}")),
            (false, result) => result,
        };
        self.unify(&result, &to, arg.span)?;
        Ok(Some(func))
    }

    /// `f(n=T)`: instantiates the implicit variable at `position` of the definition at the
    /// head of `func` with `T`, a type (`Fin 2`) or a size (`2` for `Fin 2`, as docs/language.md's
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
        let (TKind::Def { inst, .. } | TKind::Method { inst, .. }) = &head.kind else {
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

    /// The prelude's user type `name` at `args` (`IterResult a`); an unknown type (a prelude
    /// without it) is a fresh variable, so that the error comes from unification.
    pub(super) fn prelude_data(&mut self, name: &str, args: Vec<Ty>) -> Ty {
        match self.env.data_types.get(name) {
            Some(def) => Ty::Data(super::data::DataTy {
                def: def.clone(),
                args,
            }),
            None => Ty::Var(self.fresh_var()),
        }
    }

    fn instantiate_builtin(&mut self, mut func: TExpr, builtin: Builtin, span: Span) -> TExpr {
        func.ty = builtin.instantiate(self, span);
        func
    }

    pub(super) fn instantiate_def(&mut self, info: &DefInfo, def: DefKey, span: Span) -> TExpr {
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
        for (class, fact) in self.env.facts_about(&info.vars) {
            self.constrain(class, substitute_rigids(&fact, &mapping), span);
        }
        let ty = substitute_rigids(&info.ty, &mapping);
        let (ty, sizes) = self.rename_computed_sizes(info, ty);
        TExpr {
            kind: TKind::Def {
                name: info.name.clone(),
                def,
                inst,
                sizes,
            },
            ty,
            span,
        }
    }

    // Note [Sizes a call computes]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    // A definition's type may name a size its body computes: `filter`'s result is a
    // `List(a, Fin count)` for the `count` of kept elements. Each use of the definition names
    // its own such size, a fresh local of the same name in the instantiated type, so that two
    // calls (`(filter xs p, filter ys q)`) have two types and a table of one is not taken
    // for a table of the other. The lowering gives each use's local the value the body
    // computed for that call (`Lowerer::apply`). Parameters (`n: Nat`) are not renamed (the
    // argument replaces them), nor are the locals of an enclosing definition.

    /// `ty`, the instantiated type of the definition `info`, with each size its body computes
    /// renamed for this use; the pairs (this use's local, the body's).
    fn rename_computed_sizes(&mut self, info: &DefInfo, ty: Ty) -> (Ty, Vec<(LocalId, LocalId)>) {
        let mut named = Vec::new();
        ty.any(&mut |inner| {
            if let Ty::Fin(size) = inner {
                size.any_local(&mut |id| {
                    if !named.contains(&id) {
                        named.push(id);
                    }
                    false
                });
            }
            false
        });
        if named.is_empty() {
            return (ty, Vec::new());
        }
        let computed = info.body.computed_locals();
        let params = param_binders(&info.ty);
        let sizes: Vec<(LocalId, LocalId)> = named
            .into_iter()
            .filter(|id| computed.contains(id) && !params.contains(id))
            .map(|id| {
                let name = self.env.local_name(id);
                (self.new_local(&name), id)
            })
            .collect();
        if sizes.is_empty() {
            return (ty, sizes);
        }
        let renamed = map_ty(&ty, &mut |inner| match inner {
            Ty::Fin(size) => Some(Ty::Fin(map_size(size, &mut |s| match s {
                Size::Local(id, name) => sizes
                    .iter()
                    .find(|(_, body)| body == id)
                    .map(|(site, _)| Size::Local(*site, name.clone())),
                _ => None,
            }))),
            _ => None,
        });
        (renamed, sizes)
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

    /// Whether `v / s` may scale `v` by `1 / s` (Dex's `(/)` of `VSpace`): `v` is a table,
    /// tuple or struct, or a type parameter that is a vector space but not `Fractional`.
    fn is_vector(&self, ty: &Ty) -> bool {
        match self.zonk(ty) {
            Ty::Table(..) | Ty::Tuple(_) | Ty::Data(_) => true,
            Ty::Rigid(rigid, _) => {
                let classes = self.env.rigid_classes(rigid);
                classes.contains(&Class::VSpace) && !classes.contains(&Class::Div)
            }
            _ => false,
        }
    }

    /// `v / s` for a vector space `v`: when `s` is a float, `(1.0 / s) .* v`; otherwise the
    /// elementwise division of two values of one type (`divide` is `(/)`).
    fn divide_vector(
        &mut self,
        divide: TExpr,
        value: TExpr,
        rhs: &Expr,
        span: Span,
        depth: usize,
    ) -> Result<TExpr> {
        let divisor = self.infer_depth(rhs, depth + 1)?;
        let is_float = match self.zonk(&divisor.ty) {
            Ty::Base(base) => base.is_float(),
            Ty::Var(_) => true,
            _ => false,
        };
        if !is_float {
            let partial = self.apply_typed(divide, value, span)?;
            return self.apply_typed(partial, divisor, span);
        }
        let one = self.infer_depth(
            &Expr {
                kind: ExprKind::Lit(Lit::Float(1.0)),
                span: rhs.span,
            },
            depth + 1,
        )?;
        let divide_one = self.apply_typed(divide, one, rhs.span)?;
        let reciprocal = self.apply_typed(divide_one, divisor, rhs.span)?;
        let scale = self.binop_function(BinOp::Scale, span)?;
        let scaled = self.apply_typed(scale, reciprocal, span)?;
        self.apply_typed(scaled, value, span)
    }

    /// Whether a value of type `ty` holds a user type with a hidden size (a list, a set) and
    /// no user type with an instance of `Eq` of its own (whose method takes two values of one
    /// type).
    fn holds_hidden_size(&self, ty: &Ty) -> bool {
        let ty = self.zonk(ty);
        let has_eq_instance = |data: &DataTy| {
            self.env.instances.iter().any(|instance| {
                instance.class == Class::Eq
                    && matches!(&instance.head, Ty::Data(head) if head.def.id == data.def.id)
            })
        };
        ty.any(&mut |inner| match inner {
            Ty::Data(data) => data.def.params.iter().any(|param| param.is_hidden_size()),
            _ => false,
        }) && !ty.any(&mut |inner| matches!(inner, Ty::Data(data) if has_eq_instance(data)))
    }

    /// `x == y` (or `!=`) where `x` holds a value of hidden size: `y` may differ from `x` in its
    /// hidden sizes, as Dex's `List a` is one type whatever the length (Note [Size fields]).
    /// Values whose sizes differ are not equal; the lowering compares them when their sizes
    /// are known (`compare_structured`).
    fn equal_up_to_hidden_sizes(
        &mut self,
        func: TExpr,
        value: TExpr,
        rhs: &Expr,
        span: Span,
        depth: usize,
    ) -> Result<TExpr> {
        let other = self.infer_depth(rhs, depth + 1)?;
        let found = self.zonk(&other.ty);
        let erased = self.erase_hidden_sizes(&found);
        self.unify(&value.ty, &erased, other.span)?;
        let partial = self.apply_typed(func, value, span)?;
        let Ty::Fun { result, .. } = self.zonk(&partial.ty) else {
            return Err(TypeError::bug(span, "a comparison is not a function"));
        };
        Ok(TExpr {
            kind: TKind::App {
                func: Box::new(partial),
                arg: Box::new(other),
            },
            ty: *result,
            span,
        })
    }

    /// `ty` with every hidden size of a user type replaced by a fresh variable.
    fn erase_hidden_sizes(&mut self, ty: &Ty) -> Ty {
        match ty {
            Ty::Data(data) => {
                let args = data
                    .args
                    .iter()
                    .zip(&data.def.params)
                    .map(|(arg, param)| match param.is_hidden_size() {
                        true => Ty::Var(self.fresh_var()),
                        false => self.erase_hidden_sizes(arg),
                    })
                    .collect();
                Ty::Data(DataTy {
                    def: data.def.clone(),
                    args,
                })
            }
            Ty::Table(ix, elem) => Ty::table(ix.as_ref().clone(), self.erase_hidden_sizes(elem)),
            Ty::Tuple(items) => Ty::Tuple(
                items
                    .iter()
                    .map(|item| self.erase_hidden_sizes(item))
                    .collect(),
            ),
            _ => ty.clone(),
        }
    }

    /// Applies a typed function to a typed argument (an argument the checker built).
    fn apply_typed(&mut self, func: TExpr, arg: TExpr, span: Span) -> Result<TExpr> {
        let result = Ty::Var(self.fresh_var());
        let effects = self.fresh_row();
        let expected = Ty::fun_with(arg.ty.clone(), result.clone(), effects.clone());
        self.unify(&expected, &func.ty, arg.span)?;
        self.perform(&effects, span);
        Ok(TExpr {
            kind: TKind::App {
                func: Box::new(func),
                arg: Box::new(arg),
            },
            ty: result,
            span,
        })
    }

    fn binop_function(&mut self, op: BinOp, span: Span) -> Result<TExpr> {
        // An operator is a function, as in Dex: the user's own definition of its symbol
        // (`def (~~)(x: Float, y: Float) -> Bool = …`) replaces the built-in one.
        let symbol = op.symbol();
        if self.lookup(symbol).is_some()
            || self.env.values.contains_key(symbol)
            || self.env.def(symbol).is_some()
        {
            return self.infer_var(symbol, span);
        }
        let builtin = match op {
            BinOp::Add
            | BinOp::Sub
            | BinOp::Mul
            | BinOp::Div
            | BinOp::Eq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Gt
            | BinOp::Le
            | BinOp::Ge
            | BinOp::And
            | BinOp::Or => match Prim::from_infix(symbol) {
                Some(prim) => Builtin::Prim(prim),
                // Every one of these symbols is a primitive's (`prim::signature`).
                None => return self.infer_var(symbol, span),
            },
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
        // `f()` of a definition of no parameters (`def f() -> Int = 1`) is its value, as
        // Dex's call of it: such a definition is a value in dx (`eye`, used bare).
        if matches!(&arg.kind, ExprKind::Tuple(items) if items.is_empty()) && self.is_nullary(&func)
        {
            return Ok(func);
        }
        let func_ty = self.zonk(&func.ty);
        let (param, binder, result, effects) = match func_ty {
            Ty::Fun {
                param,
                binder,
                result,
                effects,
            } => (*param, binder, *result, effects),
            Ty::Var(_) => {
                let param = Ty::Var(self.fresh_var());
                let result = Ty::Var(self.fresh_var());
                let effects = self.fresh_row();
                let fun = Ty::fun_with(param.clone(), result.clone(), effects.clone());
                self.unify(&func_ty, &fun, func.span)?;
                (param, None, result, effects)
            }
            other if matches!(func.kind, TKind::App { .. }) => {
                return error_of(
                    Code::Arity,
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
        // `from_ordinal k` (Dex's current form): the index set comes from the context, as if
        // `from_ordinal _ k` were written.
        if let (Ty::TypeArg(expected), TKind::Builtin(Builtin::FromOrdinal)) = (&param, &func.kind)
        {
            let names_a_value = match &arg.kind {
                ExprKind::Var(ident) => {
                    matches!(
                        self.lookup(&ident.name),
                        Some(Binding::Local(..) | Binding::Def(..))
                    ) || self.env.values.contains_key(&ident.name)
                }
                _ => false,
            };
            let reads_as_type = expr_as_type(arg).is_some_and(|ty| self.names_a_type(&ty));
            if names_a_value || !reads_as_type {
                let implicit = TExpr {
                    kind: TKind::TypeArg,
                    ty: Ty::TypeArg(expected.clone()),
                    span: func.span,
                };
                let partial = TExpr {
                    kind: TKind::App {
                        func: Box::new(func),
                        arg: Box::new(implicit),
                    },
                    ty: result,
                    span: span.to(arg.span),
                };
                return self.apply(partial, arg, span, depth);
            }
        }
        let targ = if let Ty::TypeArg(expected) = &param {
            let ty = self.read_type_of_expr(arg)?;
            self.unify(expected, &ty, arg.span)?;
            TExpr {
                kind: TKind::TypeArg,
                ty: Ty::TypeArg(Box::new(ty)),
                span: arg.span,
            }
        } else if let (ExprKind::Hole, Some(binder)) = (&arg.kind, binder) {
            // `f n _ xs` for `f(n: Nat, …, xs: Fin n=>…)` (Dex's particle filter): the size is
            // inferred from the other arguments, and the value passed is its `size`.
            self.unify(&param, &Ty::nat(), arg.span)?;
            let ix = Ty::Var(self.fresh_var());
            self.constrain(Class::Ix, ix.clone(), arg.span);
            let size_fn = TExpr {
                kind: TKind::Builtin(Builtin::Size),
                ty: Ty::fun(Ty::TypeArg(Box::new(ix.clone())), Ty::nat()),
                span: arg.span,
            };
            let type_arg = TExpr {
                kind: TKind::TypeArg,
                ty: Ty::TypeArg(Box::new(ix.clone())),
                span: arg.span,
            };
            let result = map_ty(&result, &mut |inner| match inner {
                Ty::Fin(Size::Local(id, _)) if *id == binder => Some(ix.clone()),
                Ty::Fin(size) => Some(Ty::Fin(map_size(size, &mut |s| match s {
                    Size::Local(id, _) if *id == binder => Some(Size::Of(Box::new(ix.clone()))),
                    _ => None,
                }))),
                _ => None,
            });
            let targ = TExpr {
                kind: TKind::App {
                    func: Box::new(size_fn),
                    arg: Box::new(type_arg),
                },
                ty: Ty::nat(),
                span: arg.span,
            };
            self.perform(&effects, span);
            return Ok(TExpr {
                kind: TKind::App {
                    func: Box::new(func),
                    arg: Box::new(targ),
                },
                ty: result,
                span,
            });
        } else if matches!(arg.kind, ExprKind::Hole) && is_constructor_call(&func) {
            // `AsList(_, xs)`: a constructor's size field takes its value from the type
            // (Note [Size fields]); `_` stands for it.
            self.unify(&param, &Ty::nat(), arg.span)?;
            TExpr {
                kind: TKind::Lit(Lit::Int(0)),
                ty: Ty::nat(),
                span: arg.span,
            }
        } else {
            let targ = match &arg.kind {
                ExprKind::Lam { params, body } if depth < MAX_DEPTH => {
                    self.infer_lambda(params, body, Some(param.clone()), arg.span, depth + 1)?
                }
                _ => self.infer_depth(arg, depth + 1)?,
            };
            self.unify(&param, &targ.ty, arg.span)?;
            targ
        };
        let mut result = result;
        // `inject j` is an element of the index set `j`'s range is of (Note [Ranges]), or of
        // the superset of a `Subset` instance.
        if let TKind::Builtin(Builtin::Inject) = func.kind {
            match self.zonk(&targ.ty) {
                Ty::Range { of, .. } => self.unify(&result, &of, span)?,
                subset => self.projects.push((subset, result.clone(), span)),
            }
        }
        if let TKind::Builtin(Builtin::Project { checked }) = func.kind {
            let range = match (checked, self.zonk(&result)) {
                (true, Ty::Data(maybe)) if maybe.args.len() == 1 => maybe.args[0].clone(),
                (_, other) => other,
            };
            self.projects.push((range, targ.ty.clone(), span));
        }
        // An argument that the result's type names but that is not a name is bound to a
        // local first, which the type names (`member x (to_set xs)`).
        let mut bound = None;
        if let Some(binder) = binder {
            if mentions_local(&result, binder) {
                let named = match (names_value(&result, binder), &arg.kind) {
                    (false, _) => None,
                    (true, ExprKind::Var(ident)) => Some(self.value_named(ident, arg.span)?.0),
                    (true, _) => {
                        let name = self.env.local_name(binder);
                        let local = self.new_local(&name);
                        bound = Some((local, name.clone()));
                        Some(Ty::Value(ValueArg::Local(local, name)))
                    }
                };
                result = self.substitute_argument_sizes(&result, binder, arg, named)?;
            }
        }
        self.check_differentiated(&func, &targ)?;
        self.derivative_matrix_type(&func, &result, span)?;
        self.perform(&effects, span);
        // The argument as the application reads it: itself, or the local it is bound to.
        let (arg, binding) = match bound {
            None => (targ, None),
            Some((local, name)) => {
                let read = TExpr {
                    kind: TKind::Local(local),
                    ty: targ.ty.clone(),
                    span: targ.span,
                };
                let pat = TPat::Var(local, name);
                (read, Some(TStmt::Let { pat, value: targ }))
            }
        };
        let app = TExpr {
            kind: TKind::App {
                func: Box::new(func),
                arg: Box::new(arg),
            },
            ty: result,
            span,
        };
        Ok(match binding {
            None => app,
            Some(stmt) => TExpr {
                ty: app.ty.clone(),
                kind: TKind::Block {
                    stmts: vec![stmt],
                    result: Box::new(app),
                },
                span,
            },
        })
    }

    /// Whether `func` is a definition declared with no parameters (`def f() -> T`), which
    /// `f()` calls (Dex's): its value.
    fn is_nullary(&self, func: &TExpr) -> bool {
        match &func.kind {
            TKind::Def {
                def: DefKey::Top(key),
                ..
            } => self.env.def_by_key(key).is_some_and(|info| info.nullary),
            TKind::Def {
                def: DefKey::Local(id),
                ..
            } => self.scopes.iter().rev().any(|(_, binding)| {
                matches!(binding, Binding::Def(local, info) if local == id && info.nullary)
            }),
            _ => false,
        }
    }

    /// The type `ty` of a function's result with the sizes its parameter `binder` gives
    /// (`(n: Nat) -> (Fin n)=>…`, `(c: Camera) -> (Fin c.numPix)=>…`) read from the argument.
    /// `named` is the value the argument is, where the type names the parameter's value (Note
    /// [Value parameters] in `check/data.rs`).
    fn substitute_argument_sizes(
        &mut self,
        ty: &Ty,
        binder: LocalId,
        arg: &Expr,
        named: Option<Ty>,
    ) -> Result<Ty> {
        let mut failed = None;
        let mut size_of = |cx: &mut Self, size: &Size| -> Option<Size> {
            let read = match size {
                Size::Local(id, _) if *id == binder => cx.read_size(arg),
                Size::Field(id, field) if *id == binder => {
                    let projected =
                        field
                            .written
                            .split('.')
                            .skip(1)
                            .fold(arg.clone(), |base, name| Expr {
                                span: arg.span,
                                kind: ExprKind::Field {
                                    base: Box::new(base),
                                    field: Ident {
                                        name: name.to_string(),
                                        span: arg.span,
                                    },
                                },
                            });
                    cx.read_size(&projected)
                }
                _ => return None,
            };
            read.map_err(|err| failed = failed.take().or(Some(err)))
                .ok()
        };
        let ty = map_ty(ty, &mut |inner| match inner {
            Ty::Fin(size) => Some(Ty::Fin(map_size(size, &mut |s| size_of(self, s)))),
            Ty::Value(ValueArg::Local(id, _)) if *id == binder => named.clone(),
            _ => None,
        });
        match failed {
            Some(err) => Err(err),
            None => Ok(ty),
        }
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
            .find(|name| Builtin::lookup(name) == Some(Builtin::Ad(op)))
            .unwrap_or("the derivative");
        let params: Vec<String> = ["x", "y", "z", "w"]
            .iter()
            .take(n_params.min(4))
            .map(|p| p.to_string())
            .collect();
        error_of(
            Code::Arity,
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
            None => error_of(
                Code::NeedsAnnotation,
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
        // A row of a table whose element depends on its index (`tri[i]` of a triangular
        // table) is a table over the range of that index (Note [Ranges]).
        let elem = self.zonk(&elem);
        let elem = if elem.mentions_outer(0) {
            let TKind::Local(local) = tindex.kind else {
                return error(
                    index.span,
                    "a row of this table is over a range of its index: index it with a \
                     variable (`t[i]`), so that the row's size is known",
                );
            };
            let name = self.env.local_name(local);
            Ty::index_dep_elem(&elem, &Bound::Local(local, name))
        } else {
            elem
        };
        Ok(TExpr {
            kind: TKind::Index {
                base: Box::new(base),
                index: Box::new(tindex),
            },
            ty: elem,
            span,
        })
    }

    /// A lambda; `expected`, the type of the parameter it is an argument of, gives the types
    /// of its unannotated parameters before its body is checked (a handler's reference, so
    /// `p.x` and the body's effects are known in the body).
    fn infer_lambda(
        &mut self,
        params: &[Param],
        body: &Expr,
        expected: Option<Ty>,
        span: Span,
        depth: usize,
    ) -> Result<TExpr> {
        check_distinct(params.iter().flat_map(|param| param.pat.names()))?;
        self.with_scope(|cx| {
            let mut typed_params = Vec::new();
            let mut expected = expected;
            for param in params {
                let expected_param = match expected.take().map(|ty| cx.zonk(&ty)) {
                    Some(Ty::Fun { param, result, .. }) => {
                        expected = Some(*result);
                        Some(*param)
                    }
                    _ => None,
                };
                let ty = match (&param.ty, expected_param) {
                    (Some(ty), _) => cx.read_type(ty, &mut None)?,
                    (None, Some(expected)) => expected,
                    (None, None) => Ty::Var(cx.fresh_var()),
                };
                let pat = cx.bind_pattern(&param.pat, &ty, false)?;
                typed_params.push((pat, ty));
            }
            let (mut res, _, mut effects) =
                cx.with_effects(|cx| cx.infer_depth(body, depth + 1))?;
            for (pat, ty) in typed_params.into_iter().rev() {
                // The innermost arrow has the body's effects: they happen when the last
                // argument is given.
                let fun_ty = Ty::fun_with(ty, res.ty.clone(), std::mem::take(&mut effects));
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

    /// Binds the names of a pattern to parts of `ty` (adding them to the scope). A pattern
    /// that can fail (a literal, a constructor of a type with several) is allowed only where
    /// `refutable` (a `case` alternative).
    fn bind_pattern(&mut self, pat: &Pattern, ty: &Ty, refutable: bool) -> Result<TPat> {
        match pat {
            // A name that is a constructor's is that constructor (`Nothing`).
            Pattern::Var(ident) if self.env.constructors.contains_key(&ident.name) => {
                let con_pat = Pattern::Con {
                    name: ident.clone(),
                    args: Vec::new(),
                    span: ident.span,
                };
                self.bind_pattern(&con_pat, ty, refutable)
            }
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
                    .map(|(item, item_ty)| self.bind_pattern(item, item_ty, refutable))
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
                    .map(|item| self.bind_pattern(item, &elem, refutable))
                    .collect::<Result<_>>()?;
                Ok(TPat::Table(pats))
            }
            Pattern::Con { name, args, span } => {
                let Some((def, con)) = self.env.constructors.get(&name.name).cloned() else {
                    return error_of(
                        Code::Unbound,
                        name.span,
                        format!("unknown constructor `{}`", name.name),
                    );
                };
                let data = DataTy {
                    args: def
                        .params
                        .iter()
                        .map(|_| Ty::Var(self.fresh_var()))
                        .collect(),
                    def: def.clone(),
                };
                self.unify(ty, &Ty::Data(data.clone()), *span)?;
                let fields = data.fields(con);
                if fields.len() != args.len() {
                    return error_of(
                        Code::Arity,
                        *span,
                        format!(
                            "constructor `{}` has {} field{}, but this pattern gives {}",
                            name.name,
                            fields.len(),
                            if fields.len() == 1 { "" } else { "s" },
                            args.len()
                        ),
                    );
                }
                if def.is_tagged() && !refutable {
                    return error_of(
                        Code::Pattern,
                        *span,
                        format!(
                            "this pattern can fail (`{}` is one of the {} constructors of \
                             {}): match it with `case`",
                            name.name,
                            def.cons.len(),
                            def.name
                        ),
                    );
                }
                let pats: Vec<TPat> = args
                    .iter()
                    .zip(&fields)
                    .map(|(arg, field)| self.bind_pattern(arg, field, refutable))
                    .collect::<Result<_>>()?;
                // A size field binds the static size of the type (Note [Size fields]).
                for (position, param) in &def.cons[con].size_fields {
                    if let Some(TPat::Var(local, _)) = pats.get(*position) {
                        let size = Size::Of(Box::new(data.args[*param].clone()));
                        self.static_sizes.insert(*local, size);
                    }
                }
                Ok(TPat::Con {
                    con,
                    name: name.name.clone(),
                    tagged: def.is_tagged(),
                    args: pats,
                })
            }
            Pattern::Lit { lit, negated, span } => {
                if !refutable {
                    return error_of(
                        Code::Pattern,
                        *span,
                        "a literal pattern can fail: match it with `case`",
                    );
                }
                let mut expr = Expr {
                    kind: ExprKind::Lit(lit.clone()),
                    span: *span,
                };
                if *negated {
                    expr = Expr {
                        kind: ExprKind::Neg(Box::new(expr)),
                        span: *span,
                    };
                }
                let typed = self.infer(&expr)?;
                self.unify(ty, &typed.ty, *span)?;
                Ok(TPat::Lit {
                    lit: lit.clone(),
                    negated: *negated,
                })
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
        let pat = self.bind_pattern(&binding.pat, &value.ty.clone(), false)?;
        Ok((pat, value))
    }

    /// Checks a top-level or local value binding (not generalised).
    pub fn infer_top_let(&mut self, binding: &LetBinding) -> Result<(TPat, TExpr)> {
        let res = self.infer_let(binding, 0);
        let (pat, mut value) = self.with_recovered(res)?;
        self.finish()?;
        self.end_top_effects(&value)?;
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
        self.end_top_effects(&texpr)?;
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
        // A row's unknown rest is shown when two places share it (`(a -> {|eff} b) -> {|eff} …`).
        let mut row_vars = Vec::new();
        collect_row_vars(&self.zonk(&texpr.ty), &mut row_vars);
        let mut shared = Vec::new();
        for var in row_vars {
            let mut uses = 0;
            self.zonk(&texpr.ty).any(&mut |inner| {
                uses += usize::from(*inner == Ty::Var(var));
                false
            });
            match uses {
                1 => self.subst[var.0 as usize] = Some(Ty::Row(EffRow::pure())),
                _ => shared.push(var),
            }
        }
        let ty = self.zonk(&texpr.ty);
        let mut vars = Vec::new();
        collect_vars(&ty, &mut vars);
        vars.retain(|var| !shared.contains(var));
        Ok(map_ty(&ty, &mut |inner| match inner {
            Ty::Var(var) if shared.contains(var) => {
                let position = shared.iter().position(|v| v == var).unwrap_or(0);
                let name = match position {
                    0 => "eff".to_string(),
                    _ => format!("eff{}", position + 1),
                };
                Some(Ty::Rigid(Rigid(u32::MAX), name))
            }
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
        self.infer_def_against(def, None)
    }

    /// Checks a definition; with `expected`, its parameters and result take the types of
    /// that signature (an instance's method, whose types the interface gives).
    pub(super) fn infer_def_against(
        &mut self,
        def: &FunDef,
        expected: Option<&Ty>,
    ) -> Result<DefInfo> {
        let outer_pending = std::mem::take(&mut self.pending);
        let outer_scale = std::mem::take(&mut self.scale);
        let outer_fields = std::mem::take(&mut self.fields);
        let outer_cases = std::mem::take(&mut self.cases);
        self.defining.push(def.name.name.clone());
        let res = self.with_scope(|cx| cx.infer_def_inner(def, expected));
        self.defining.pop();
        self.pending.extend(outer_pending);
        self.scale.extend(outer_scale);
        self.fields.extend(outer_fields);
        self.cases.extend(outer_cases);
        res
    }

    fn infer_def_inner(&mut self, def: &FunDef, expected: Option<&Ty>) -> Result<DefInfo> {
        check_distinct(def.params.iter().flat_map(|param| param.pat.names()))?;
        // `given` binders, then implicit index-set names in the signature.
        let mut rigids = self.bind_given(&def.given)?;
        self.apply_constraints(&def.constraints, &rigids)?;
        // The parameter and result types an interface gives an instance's method.
        let mut expected_rest = expected.cloned();
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
                    // A parameter that `given (n|Ix)` also names is that binder's variable
                    // (listed once: each listed variable is instantiated by a call).
                    let rigid = match given {
                        Some((_, rigid)) => *rigid,
                        None => {
                            let rigid = self.env.new_rigid(Vec::new());
                            rigids.push((name.name.clone(), rigid));
                            rigid
                        }
                    };
                    self.env.mark_type_param(rigid);
                    let ty = Ty::Rigid(rigid, name.name.clone());
                    self.scopes
                        .push((name.name.clone(), Binding::TypeVar(ty.clone())));
                    param_tys.push(Ty::TypeArg(Box::new(ty)));
                    // Named, so that a named argument can be checked (`linspace(n=Fin 5, …)`).
                    let local = self.new_local(&name.name);
                    pats.push(TPat::Var(local, name.name.clone()));
                    continue;
                }
            }
            let expected_param = match expected_rest.take() {
                Some(Ty::Fun { param, result, .. }) => {
                    expected_rest = Some(*result);
                    Some(*param)
                }
                _ => None,
            };
            let ty = match (&param.ty, expected_param) {
                (Some(ty), _) => {
                    let mut implicit = Some(&mut rigids);
                    self.read_type(ty, &mut implicit)?
                }
                (None, Some(expected)) => expected,
                (None, None) => Ty::Var(self.fresh_var()),
            };
            let pat = self.bind_pattern(&param.pat, &ty, false)?;
            param_tys.push(ty);
            pats.push(pat);
        }
        let ret = match (&def.ret, expected_rest) {
            (Some(ret), _) => {
                let mut implicit = Some(&mut rigids);
                self.read_type(ret, &mut implicit)?
            }
            (None, Some(expected)) => expected,
            (None, None) => Ty::Var(self.fresh_var()),
        };
        self.given_values_are_named(&def.given, &rigids, &param_tys)?;
        // Recursion is not allowed (everything is inlined), so the name is not in scope here.
        let (body, performed, inferred) = self.with_effects(|cx| cx.infer(&def.body))?;
        self.unify(&ret, &body.ty, def.body.span)?;
        self.solve(false)?;
        let effects = match &def.effects {
            Some(declared) => {
                let declared = self.read_row(declared, &mut Some(&mut rigids))?;
                self.check_declared_row(def, &declared, &performed, &inferred)?;
                declared
            }
            None => inferred,
        };

        // Generalise: unresolved variables in the signature become rigid, with the classes
        // their pending constraints ask for; a row's unknown rest is no effect unless a
        // parameter's type shares it (Note [Effect rows]).
        let mut sig =
            Ty::funs(param_tys.clone(), ret.clone()).with_row_at(param_tys.len(), effects);
        self.close_rows(&sig, &param_tys);
        let mut free = Vec::new();
        collect_vars(&self.zonk(&sig), &mut free);
        let mut row_vars = Vec::new();
        collect_row_vars(&self.zonk(&sig), &mut row_vars);
        let mut vars: Vec<Rigid> = rigids.iter().map(|(_, rigid)| *rigid).collect();
        for var in free {
            // The length of a text is the one its type gives, decided when the type is
            // (`show (i_to_f c)`, after the conversion's default): not a parameter.
            let mut decided_later = Vec::new();
            for (_, len, _) in &self.texts {
                collect_vars(&self.zonk(len), &mut decided_later);
            }
            for item in &self.appends {
                collect_vars(&self.zonk(&item.result), &mut decided_later);
            }
            if decided_later.contains(&var) {
                continue;
            }
            let classes: Vec<Class> = self
                .pending
                .iter()
                .filter(|item| self.zonk(&item.ty) == Ty::Var(var))
                .map(|item| item.class)
                .collect();
            let rigid = self.env.new_rigid(classes);
            let name = match row_vars.contains(&var) {
                true => "eff".to_string(),
                false => format!("t{}", rigid.0),
            };
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
            nullary: def.params.is_empty(),
        })
    }

    /// Binds the `given` variables of a definition or instance in scope (`n|Ix`, `a|Add|Sub`; a
    /// name given twice is one variable in both classes); returns them by name.
    pub(super) fn bind_given(&mut self, given: &[GivenBinder]) -> Result<Vec<(String, Rigid)>> {
        let mut rigids: Vec<(String, Rigid)> = Vec::new();
        for binder in given {
            let mut classes = Vec::new();
            for class in &binder.classes {
                let found = self.env.class_by_name(&class.name).ok_or_else(|| {
                    TypeError::new(class.span, format!("unknown class `{}`", class.name))
                })?;
                classes.extend(found);
            }
            if let Some((_, rigid)) = rigids.iter().find(|(name, _)| *name == binder.name.name) {
                self.env.add_rigid_classes(*rigid, &classes);
                continue;
            }
            let rigid = self.env.new_rigid(classes);
            self.scopes.push((
                binder.name.name.clone(),
                Binding::TypeVar(Ty::Rigid(rigid, binder.name.name.clone())),
            ));
            rigids.push((binder.name.name.clone(), rigid));
        }
        // A binder of a value (`set:Set a`) once every name is bound: its type may use any.
        for binder in given {
            let Some(kind) = value_kind(binder.kind.as_ref()) else {
                continue;
            };
            let ty = self.read_type(kind, &mut None)?;
            // A hidden size of its type (`Set a` is `Set a k`) is a variable of the definition.
            let ty = self.hidden_sizes_as_vars(&ty, &mut rigids, kind.span)?;
            if let Some((_, rigid)) = rigids.iter().find(|(name, _)| *name == binder.name.name) {
                self.env.mark_value_rigid(*rigid, ty);
            }
        }
        Ok(rigids)
    }

    /// Each `given` value (`given (set:Set a)`) is named by one of `tys`, the parameters' types
    /// (or an instance's head): a use of the definition knows it from its arguments' types
    /// (Note [Value parameters] in `check/data.rs`).
    pub(super) fn given_values_are_named(
        &self,
        given: &[GivenBinder],
        rigids: &[(String, Rigid)],
        tys: &[Ty],
    ) -> Result<()> {
        for binder in given {
            let Some((_, rigid)) = rigids.iter().find(|(name, _)| *name == binder.name.name) else {
                continue;
            };
            let named = tys.iter().any(|ty| {
                self.zonk(ty)
                    .any(&mut |inner| matches!(inner, Ty::Rigid(r, _) if r == rigid))
            });
            if self.env.value_rigid(*rigid).is_some() && !named {
                return error(
                    binder.name.span,
                    format!(
                        "`{0}` stands for a value that no parameter's type names (as in `x: \
                         Element {0}`), so a use could not know it: make it a parameter",
                        binder.name.name
                    ),
                );
            }
        }
        Ok(())
    }

    /// Reads an effect row written in a signature (`{State h, IO|eff}`).
    pub(super) fn read_row(
        &mut self,
        row: &EffRowExpr,
        implicit: &mut Option<&mut Vec<(String, Rigid)>>,
    ) -> Result<EffRow> {
        let mut read_name = |cx: &mut Self, name: &Ident| {
            let ty = TypeExpr {
                kind: TypeExprKind::Name(name.clone()),
                span: name.span,
            };
            cx.read_type(&ty, implicit)
        };
        let mut out = EffRow::pure();
        for (name, region) in &row.effects {
            let effect = match (name.name.as_str(), region) {
                ("State", Some(region)) => Effect::State(read_name(self, region)?),
                // `Writer` is Dex's older name of `Accum`.
                ("Accum" | "Writer", Some(region)) => Effect::Accum(read_name(self, region)?),
                ("Read" | "Reader", Some(region)) => Effect::Read(read_name(self, region)?),
                ("Except", None) => Effect::Except,
                ("IO", None) => Effect::Io,
                ("State" | "Accum" | "Writer" | "Read" | "Reader", None) => {
                    return error_of(
                        Code::Effect,
                        name.span,
                        format!(
                            "`{0}` names the region of its references: `{{{0} h}}` for a `Ref h _`",
                            name.name
                        ),
                    )
                }
                ("Except" | "IO", Some(region)) => {
                    return error_of(
                        Code::Effect,
                        region.span,
                        format!("`{}` takes no region", name.name),
                    )
                }
                _ => {
                    return error_of(
                        Code::Effect,
                        name.span,
                        format!(
                            "unknown effect `{}`: the effects are `State h`, `Accum h`, `Read h`, \
                             `Except` and `IO`",
                            name.name
                        ),
                    )
                }
            };
            out.insert(effect);
        }
        if let Some(rest) = &row.rest {
            out.tail = Some(Box::new(read_name(self, rest)?));
        }
        Ok(out)
    }

    /// A definition's body may have only the effects its signature's row names: each
    /// operation that has another is an error at its place.
    fn check_declared_row(
        &mut self,
        def: &FunDef,
        declared: &EffRow,
        performed: &[(Effect, Span)],
        inferred: &EffRow,
    ) -> Result<()> {
        let named = EffRow {
            effects: declared.effects.clone(),
            tail: None,
        };
        let says = match declared.is_pure() {
            true => "no effect (`{}`)".to_string(),
            false => format!("the effects {declared}"),
        };
        for (effect, span) in performed {
            let single = EffRow {
                effects: vec![effect.clone()],
                tail: None,
            };
            if self.unify_rows(&named, &single).is_err() {
                let effect = self.zonk_row(&single);
                let mut wider = self.zonk_row(declared);
                wider.insert(effect.effects[0].clone());
                return error_of(
                    Code::Effect,
                    *span,
                    format!(
                        "`{}` is declared with {says}, but this {} ({}): write `-> {wider} …`, \
                         or leave the row out to have it inferred",
                        def.name.name,
                        effect.effects[0].what(),
                        effect.effects[0],
                    ),
                );
            }
        }
        if let Some(rest) = &inferred.tail {
            if self
                .unify_rows(declared, &EffRow::open((**rest).clone()))
                .is_err()
            {
                return error_of(
                    Code::Effect,
                    def.span,
                    format!(
                        "`{}` is declared with {says}, but it applies a function whose effects \
                         the row does not name (add `|eff` to the row and to that function's type)",
                        def.name.name
                    ),
                );
            }
        }
        Ok(())
    }

    /// Gives the row variables of a definition's signature that no parameter's type shares no
    /// effect: what is left unknown there is nothing the definition does (Note [Effect rows]).
    fn close_rows(&mut self, sig: &Ty, params: &[Ty]) {
        let mut shared = Vec::new();
        for param in params {
            collect_row_vars(&self.zonk(param), &mut shared);
        }
        let mut all = Vec::new();
        collect_row_vars(&self.zonk(sig), &mut all);
        for var in all {
            if !shared.contains(&var) {
                self.subst[var.0 as usize] = Some(Ty::Row(EffRow::pure()));
            }
        }
    }

    /// A constraint of an interface of several parameters on types of a `given`'s variables
    /// (`TangentSpace(m, t)`): an assumed fact, and its parameters' classes on the variables
    /// (Note [Interfaces of several parameters]).
    fn assume_constraint(
        &mut self,
        constraint: &Constraint,
        rigids: &[(String, Rigid)],
    ) -> Result<()> {
        let class = self.env.class_names[&constraint.class.name];
        let params = self.env.class_defs[&class].params.clone();
        let mut parts = Vec::new();
        for (arg, param) in constraint.args.iter().zip(&params) {
            let mut names = rigids.to_vec();
            let part = self.read_type(arg, &mut Some(&mut names))?;
            if let Some((stray, _)) = names.get(rigids.len()) {
                return error(
                    arg.span,
                    format!("`{stray}` is not a variable of this `given`"),
                );
            }
            for sup in &param.supers {
                match &part {
                    Ty::Rigid(rigid, _) => self.env.add_rigid_classes(*rigid, &[*sup]),
                    _ => self.constrain(*sup, part.clone(), arg.span),
                }
            }
            parts.push(part);
        }
        self.env.assume(class, Ty::Tuple(parts));
        Ok(())
    }

    /// The constraints after a `given`'s binders: `(Add a)` is `a|Add`. Dex's `Data` and
    /// `AccumMonoid` hold of every type dx has (every value is data; an accumulator takes any
    /// monoid), so they ask for nothing.
    pub(super) fn apply_constraints(
        &mut self,
        constraints: &[Constraint],
        rigids: &[(String, Rigid)],
    ) -> Result<()> {
        for constraint in constraints {
            let class = &constraint.class;
            if matches!(class.name.as_str(), "Data" | "AccumMonoid") {
                continue;
            }
            let arity = self
                .env
                .class_names
                .get(&class.name)
                .and_then(|class| self.env.class_defs.get(class))
                .map_or(1, |def| def.params.len());
            if constraint.args.len() != arity && !constraint.args.is_empty() {
                return error(
                    constraint.span,
                    format!(
                        "`{}` constrains {} type{}, not {}",
                        class.name,
                        arity,
                        if arity == 1 { "" } else { "s" },
                        constraint.args.len()
                    ),
                );
            }
            if arity > 1 {
                self.assume_constraint(constraint, rigids)?;
                continue;
            }
            let classes = self.env.class_by_name(&class.name).ok_or_else(|| {
                TypeError::new(class.span, format!("unknown interface `{}`", class.name))
            })?;
            let var = match constraint.args.as_slice() {
                [TypeExpr {
                    kind: TypeExprKind::Name(var),
                    ..
                }] => rigids.iter().find(|(name, _)| *name == var.name),
                _ => None,
            };
            match (var, constraint.args.first()) {
                (Some((_, rigid)), _) => self.env.add_rigid_classes(*rigid, &classes),
                // A constraint on a type (`Add (n=>Float)`) must hold of it.
                (None, Some(arg)) => {
                    let ty = self.read_type(arg, &mut None)?;
                    for class in &classes {
                        if self.class_holds(*class, &ty) != Ok(true) {
                            return error(
                                constraint.span,
                                format!("{ty} has no instance of `{}`", constraint.class.name),
                            );
                        }
                    }
                }
                (None, None) => {
                    return error(
                        constraint.span,
                        format!("`{}` constrains a type: `({} a)`", class.name, class.name),
                    )
                }
            }
        }
        Ok(())
    }

    /// Reads a top-level `Name = <type>` alias if the binding is one.
    /// `Name = T` at the top level when `T` reads as a type: records the alias and gives its
    /// name and type.
    pub fn try_alias(&mut self, binding: &LetBinding) -> Option<Result<(String, Ty)>> {
        let (name, expr) = self.alias_type(binding)?;
        Some(self.read_type(&expr, &mut None).map(|ty| {
            self.record_alias(&name, &ty, &expr);
            (name, ty)
        }))
    }

    /// A name bound, with no annotation, to an expression that reads as a type (`Height = Fin
    /// 3`, `P = Point`, `Pair = (Float, Float)`, `M = MyPair Int Float`, `sizen = Fin 3`): the
    /// name and the type expression.
    fn alias_type(&self, binding: &LetBinding) -> Option<(String, TypeExpr)> {
        let Pattern::Var(ident) = &binding.pat else {
            return None;
        };
        if binding.ty.is_some() {
            return None;
        }
        let ty = expr_as_type(&binding.value)?;
        // A lowercase name is an alias only of a type that is not a name alone (`sizen = Fin
        // 3`): `x = y` binds a value.
        let lowercase = !ident.name.starts_with(|c: char| c.is_uppercase());
        if lowercase && !self.only_a_type(&ty) {
            return None;
        }
        self.names_a_type(&ty).then(|| (ident.name.clone(), ty))
    }

    /// Whether a type expression can only be a type: not a name alone, and not a type applied
    /// to what may be values (`Point(x, y)` is also a struct's constructor called).
    fn only_a_type(&self, ty: &TypeExpr) -> bool {
        match &ty.kind {
            TypeExprKind::Name(_) => false,
            TypeExprKind::App(head, args) if head.name != "Fin" => args.iter().all(|arg| {
                !matches!(arg.kind, TypeExprKind::Size(_))
                    && (self.only_a_type(arg) || self.names_a_type(arg))
            }),
            TypeExprKind::Tuple(items) => items
                .iter()
                .all(|item| self.only_a_type(item) || self.names_a_type(item)),
            _ => self.names_a_type(ty),
        }
    }

    /// Whether every name a type expression is built from is a type.
    fn names_a_type(&self, ty: &TypeExpr) -> bool {
        let is_type = |name: &str| {
            BaseTy::from_name(name).is_some()
                || self.env.aliases.contains_key(name)
                || self.env.data_types.contains_key(name)
                || self.env.type_fns.contains_key(name)
                || matches!(
                    self.lookup(name),
                    Some(Binding::TypeVar(_) | Binding::TypeFn(_))
                )
        };
        match &ty.kind {
            TypeExprKind::Name(ident) => is_type(&ident.name),
            TypeExprKind::App(head, args) => {
                (head.name == "Fin" || is_type(&head.name))
                    && args.iter().all(|arg| match &arg.kind {
                        // `()` alone is the unit value; an argument of a type, the unit type.
                        TypeExprKind::Tuple(items) if items.is_empty() => true,
                        TypeExprKind::Size(_) | TypeExprKind::Name(_) => true,
                        _ => self.names_a_type(arg),
                    })
            }
            TypeExprKind::Fin(_)
            | TypeExprKind::Hole
            | TypeExprKind::Size(_)
            | TypeExprKind::Range(..)
            | TypeExprKind::DepTable { .. } => true,
            TypeExprKind::Tuple(items) => {
                !items.is_empty() && items.iter().all(|item| self.names_a_type(item))
            }
            TypeExprKind::Table(..) | TypeExprKind::Fun(..) | TypeExprKind::Given { .. } => true,
        }
    }
}

/// An expression read as a type, when it has the shape of one: a name, `Fin e`, a tuple of
/// types, a name applied to types and sizes.
fn expr_as_type(expr: &Expr) -> Option<TypeExpr> {
    let kind = match &expr.kind {
        ExprKind::Var(ident) => TypeExprKind::Name(ident.clone()),
        ExprKind::Hole => TypeExprKind::Hole,
        ExprKind::Range(kind, index) => TypeExprKind::Range(*kind, index.clone()),
        ExprKind::Tuple(items) => {
            TypeExprKind::Tuple(items.iter().map(expr_as_type).collect::<Option<_>>()?)
        }
        ExprKind::App { name: None, .. } => {
            let (head, args) = expr.spine();
            let ExprKind::Var(head) = &head.kind else {
                return None;
            };
            if head.name == "Fin" {
                let [size] = args.as_slice() else {
                    return None;
                };
                TypeExprKind::Fin(Box::new((*size).clone()))
            } else {
                let args = args
                    .iter()
                    .map(|arg| match &arg.kind {
                        ExprKind::Lit(Lit::Int(_)) | ExprKind::BinOp { .. } => Some(TypeExpr {
                            kind: TypeExprKind::Size(Box::new((*arg).clone())),
                            span: arg.span,
                        }),
                        _ => expr_as_type(arg),
                    })
                    .collect::<Option<_>>()?;
                TypeExprKind::App(head.clone(), args)
            }
        }
        _ => return None,
    };
    Some(TypeExpr {
        kind,
        span: expr.span,
    })
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
        Ty::Data(data) if !data.def.is_tagged() => data.fields(0).first().and_then(first_leaf),
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
    let reference = expr
        .ty
        .any(&mut |ty| matches!(ty, Ty::Con(super::types::TyCon::Ref, _)));
    if reference && !expr.ty.contains_fun() {
        // Outside every lambda, only a reference a handler returned can have this type.
        return error_of(
            Code::Effect,
            expr.span,
            format!(
                "a reference escapes its handler: this is a {}, which lives only inside the \
                 handler's body (return `get ref` instead)",
                expr.ty
            ),
        );
    }
    let unknown = !expr.ty.contains_fun() && expr.ty.any(&mut |ty| matches!(ty, Ty::Var(_)));
    if unknown {
        return error_of(Code::NeedsAnnotation,
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
    super::distinct(names, "bound", |name| {
        format!("`{name}` is bound twice in one pattern")
    })
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
        Class::Show => "printing",
        Class::Arbitrary => "random values",
        Class::Monoid => "`<>` and `mempty`",
        Class::User(_) => "this interface",
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

/// Whether an expression is a constructor applied to some of its fields.
fn is_constructor_call(func: &TExpr) -> bool {
    let mut head = func;
    while let TKind::App { func, .. } = &head.kind {
        head = func;
    }
    matches!(head.kind, TKind::Con { .. })
}

/// Whether a parameter is written `n: Nat` (a size; others are types).
pub(super) fn is_nat_param(param: &Param) -> bool {
    is_nat_kind(param.ty.as_ref())
}

/// Whether a written kind is `Nat` (a size).
pub(super) fn is_nat_kind(kind: Option<&TypeExpr>) -> bool {
    matches!(kind, Some(TypeExpr { kind: TypeExprKind::Name(ty), .. }) if ty.name == "Nat")
}

/// The type of the value a parameter or `given` binder stands for (`set:(Set a)`, Note [Value
/// parameters] in `check/data.rs`): its written kind when that is neither `Type` nor `Nat`.
pub(super) fn value_kind(kind: Option<&TypeExpr>) -> Option<&TypeExpr> {
    let names_kind = |name: &str| name == "Type" || name == "Nat";
    kind.filter(|kind| !matches!(&kind.kind, TypeExprKind::Name(name) if names_kind(&name.name)))
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
        // Stored padded to the size of the index set it is a range of (Note [Ranges]).
        Ty::Range { of, .. } => size_of_ix(of),
        // The size an instance of `Ix` gave the type (`check/declare.rs`), or the number of
        // constructors of an enumeration.
        Ty::Data(data) => match data.def.ix_size.get() {
            Some(size) => Some(match data.instantiate(&Ty::Fin(size.clone())) {
                Ty::Fin(size) => size,
                _ => size.clone(),
            }),
            None if data.def.is_enumeration() => Some(Size::Const(data.def.cons.len() as u64)),
            None => None,
        },
        Ty::Base(BaseTy::Bool) => Some(Size::Const(2)),
        Ty::Fin(size) => Some(size.clone()),
        Ty::Rigid(..) | Ty::Var(_) => Some(Size::Of(Box::new(ty.clone()))),
        // The tables of `a` over `n` (Dex's `Fin 3=>Vocab`, every sequence of three tokens):
        // `size a ^ size n` of them.
        Ty::Table(..) => Some(Size::Of(Box::new(ty.clone())).normalise()),
        Ty::Tuple(items) => items
            .iter()
            .map(size_of_ix)
            .try_fold(Size::Const(1), |acc, size| {
                Some(Size::Mul(Box::new(acc), Box::new(size?)))
            }),
        _ => None,
    }
}

/// The region of the one effect of `effect`'s kind in `row` (a handler's row has one), if
/// there is exactly one.
fn only_region_of_kind(row: &EffRow, effect: &Effect) -> Option<Ty> {
    let mut same = row.effects.iter().filter(|e| e.same_kind(effect));
    match (same.next(), same.next()) {
        (Some(only), None) => only.region().cloned(),
        _ => None,
    }
}

/// The first pair of rows where two types that are alike but for their rows differ: the
/// expected row and the found one.
fn row_mismatch(expected: &Ty, found: &Ty) -> Option<(EffRow, EffRow)> {
    fn pure_rows(ty: &Ty) -> Ty {
        ty.map(&mut |inner| match inner {
            Ty::Fun {
                param,
                binder,
                result,
                ..
            } => Some(Ty::Fun {
                param: Box::new(pure_rows(param)),
                binder: *binder,
                result: Box::new(pure_rows(result)),
                effects: EffRow::pure(),
            }),
            _ => None,
        })
    }
    fn first_difference(expected: &Ty, found: &Ty) -> Option<(EffRow, EffRow)> {
        match (expected, found) {
            (
                Ty::Fun {
                    param: p1,
                    result: r1,
                    effects: e1,
                    ..
                },
                Ty::Fun {
                    param: p2,
                    result: r2,
                    effects: e2,
                    ..
                },
            ) => first_difference(p1, p2)
                .or_else(|| first_difference(r1, r2))
                .or_else(|| (e1.sorted() != e2.sorted()).then(|| (e1.clone(), e2.clone()))),
            (Ty::Table(i1, e1), Ty::Table(i2, e2)) => {
                first_difference(i1, i2).or_else(|| first_difference(e1, e2))
            }
            (Ty::Tuple(xs), Ty::Tuple(ys)) => {
                xs.iter().zip(ys).find_map(|(x, y)| first_difference(x, y))
            }
            _ => None,
        }
    }
    let alike = pure_rows(expected).to_string() == pure_rows(found).to_string();
    alike.then(|| first_difference(expected, found)).flatten()
}

/// The variables standing for the rest of a row in a (zonked) type.
fn collect_row_vars(ty: &Ty, out: &mut Vec<TyVar>) {
    ty.any(&mut |inner| {
        let tail = match inner {
            Ty::Fun { effects, .. } | Ty::Row(effects) => effects.tail.as_deref(),
            _ => None,
        };
        if let Some(Ty::Var(var)) = tail {
            if !out.contains(var) {
                out.push(*var);
            }
        }
        false
    });
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

/// The binders of a function type's parameters (`n` of `(n: Nat) -> (Fin n)=>Float`), through
/// its curried results.
fn param_binders(ty: &Ty) -> Vec<LocalId> {
    let mut binders = Vec::new();
    let mut ty = ty;
    while let Ty::Fun { binder, result, .. } = ty {
        binders.extend(*binder);
        ty = result;
    }
    binders
}

/// The error of a `for`'s count that reads one of the loop's own earlier indices
/// (`for i j:(Fin (ordinal i)).`).
const RAGGED: &str = "an index set of a `for` cannot depend on the loop's earlier indices: tables \
     are regular (no ragged tables): compute the size before the loop, or index a range \
     (`j:(..i)`) for a triangular table";

/// Whether a typed expression reads one of `locals`, as a value or in a type (a range of it).
fn reads_any_local(expr: &TExpr, locals: &[LocalId]) -> bool {
    matches!(expr.kind, TKind::Local(id) if locals.contains(&id))
        || locals.iter().any(|&local| mentions_local(&expr.ty, local))
        || expr
            .children()
            .into_iter()
            .any(|child| reads_any_local(child, locals))
}

/// Whether `ty` names the value of the local `local` (Note [Value parameters]).
fn names_value(ty: &Ty, local: LocalId) -> bool {
    ty.any(&mut |inner| matches!(inner, Ty::Value(ValueArg::Local(id, _)) if *id == local))
}

fn mentions_local(ty: &Ty, local: LocalId) -> bool {
    ty.any(&mut |inner| match inner {
        Ty::Fin(size) => size.any_local(&mut |id| id == local),
        Ty::Value(ValueArg::Local(id, _)) => *id == local,
        _ => false,
    })
}

/// Rebuilds a type bottom-up, letting `f` replace any node (returning `Some`).
pub fn map_ty(ty: &Ty, f: &mut impl FnMut(&Ty) -> Option<Ty>) -> Ty {
    ty.map(f)
}

/// Rebuilds a size bottom-up, letting `f` replace any node.
pub fn map_size(size: &Size, f: &mut dyn FnMut(&Size) -> Option<Size>) -> Size {
    if let Some(replaced) = f(size) {
        return replaced;
    }
    let mut both = |a: &Size, b: &Size| (Box::new(map_size(a, f)), Box::new(map_size(b, f)));
    match size {
        Size::Const(_) | Size::Local(..) | Size::Field(..) | Size::Of(_) => size.clone(),
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

/// Whether reading a field of a value of type `ty` waits for its type to be known: a variable,
/// or a reference to a value of a type not known yet (`ref!i.x`).
fn field_waits(ty: &Ty) -> bool {
    match ty {
        Ty::Var(_) => true,
        Ty::Con(super::types::TyCon::Ref, args) => matches!(args.get(1), Some(Ty::Var(_))),
        _ => false,
    }
}

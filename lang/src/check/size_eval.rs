//! The size a `Nat` expression computes, found from types alone: an `Ix` instance's `size'`
//! written as a function of a value whose type holds the size (Dex's `size' = set_size set`,
//! Note [Value parameters] in `check/data.rs`).
//!
//! The expression is followed through applications of top-level definitions (their bodies,
//! with the parameters bound to the arguments), blocks, and constructor patterns: a pattern's
//! size field (`UnsafeAsSet(n, _) = s`) is the hidden size of the matched value's type (Note
//! [Size fields]). Only the types of the expression's own parts are read (a definition's body
//! is typed in its own variables), so a value that a body computes, rather than passes on,
//! gives no size.

use std::collections::HashMap;

use super::env::GlobalEnv;
use super::infer::size_of_ix;
use super::typed::{DefKey, TExpr, TKind, TPat, TStmt};
use super::types::{LocalId, Size, Ty};
use crate::syntax::ast::Lit;

/// What a local of a body being followed stands for.
#[derive(Clone)]
enum Stands<'a> {
    /// An expression of the outermost expression (its type is the caller's).
    Outer(&'a TExpr),
    /// A static size.
    Size(Size),
}

/// The size `expr` computes, when its types hold it.
pub fn size_through_calls(expr: &TExpr, env: &GlobalEnv) -> Option<Size> {
    eval(expr, true, &HashMap::new(), env, 0)
}

/// How deep definitions may call definitions before the search gives up.
const MAX_DEPTH: usize = 16;

/// `outer`: whether `expr` is part of the outermost expression (not of a definition's body).
fn eval(
    expr: &TExpr,
    outer: bool,
    locals: &HashMap<LocalId, Stands<'_>>,
    env: &GlobalEnv,
    depth: usize,
) -> Option<Size> {
    if depth > MAX_DEPTH {
        return None;
    }
    match &expr.kind {
        TKind::Lit(Lit::Int(n)) => Some(Size::Const(*n)),
        TKind::Local(local) => match locals.get(local)? {
            Stands::Size(size) => Some(size.clone()),
            Stands::Outer(value) => eval(value, true, &HashMap::new(), env, depth + 1),
        },
        TKind::Block { stmts, result } => {
            let mut inner = locals.clone();
            for stmt in stmts {
                let TStmt::Let { pat, value } = stmt else {
                    return None;
                };
                let origin = origin(value, outer, &inner);
                bind(pat, origin, &mut inner);
            }
            eval(result, outer, &inner, env, depth + 1)
        }
        TKind::App { .. } => {
            let (head, args) = expr.spine();
            let TKind::Def {
                def: DefKey::Top(key),
                ..
            } = &head.kind
            else {
                return None;
            };
            let info = env.def_by_key(key)?;
            let mut inner = HashMap::new();
            let mut body = &info.body;
            for arg in args {
                let TKind::Lam { param, body: next } = &body.kind else {
                    return None;
                };
                bind(param, origin(arg, outer, locals), &mut inner);
                body = next;
            }
            eval(body, false, &inner, env, depth + 1)
        }
        _ => None,
    }
}

/// What a value stands for: a local, what it is bound to; a part of the outermost
/// expression, itself.
fn origin<'a>(
    value: &'a TExpr,
    outer: bool,
    locals: &HashMap<LocalId, Stands<'a>>,
) -> Option<Stands<'a>> {
    match (&value.kind, outer) {
        (TKind::Local(local), _) => locals.get(local).cloned(),
        (_, true) => Some(Stands::Outer(value)),
        (_, false) => None,
    }
}

/// Binds what a pattern's names stand for, matched against `origin`: a name is the value; a
/// constructor's size field is the hidden size of the matched value's type (known only for a
/// part of the outermost expression).
fn bind<'a>(pat: &TPat, origin: Option<Stands<'a>>, locals: &mut HashMap<LocalId, Stands<'a>>) {
    match (pat, origin) {
        (TPat::Var(id, _), Some(origin)) => {
            locals.insert(*id, origin);
        }
        (TPat::Con { con, args, .. }, Some(Stands::Outer(matched))) => {
            let Ty::Data(data) = &matched.ty else { return };
            let Some(con_def) = data.def.cons.get(*con) else {
                return;
            };
            for (position, param) in &con_def.size_fields {
                if let (Some(TPat::Var(id, _)), Some(arg)) =
                    (args.get(*position), data.args.get(*param))
                {
                    if let Some(size) = size_of_ix(arg) {
                        locals.insert(*id, Stands::Size(size));
                    }
                }
            }
        }
        _ => {}
    }
}

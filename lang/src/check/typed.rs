//! The typed program: the checker's output and the lowering's input. Names are resolved,
//! every node has its type, operators are applications of built-ins, multi-binder `for`s and
//! lambdas are nested single-binder ones.

use super::builtins::Builtin;
use super::types::{LocalId, Rigid, Ty};
use crate::syntax::ast::Lit;
use crate::syntax::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct TExpr {
    pub kind: TKind,
    pub ty: Ty,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TKind {
    Local(LocalId),
    /// A top-level value of the session.
    Global(String),
    /// A (top-level or local) definition, instantiated: `inst[k]` is the type chosen for the
    /// definition's k-th scheme variable.
    Def {
        name: String,
        def: DefKey,
        inst: Vec<Ty>,
    },
    Builtin(Builtin),
    Lit(Lit),
    Lam {
        param: TPat,
        body: Box<TExpr>,
    },
    For {
        binder: LocalId,
        body: Box<TExpr>,
    },
    If {
        cond: Box<TExpr>,
        then_branch: Box<TExpr>,
        else_branch: Box<TExpr>,
    },
    App {
        func: Box<TExpr>,
        arg: Box<TExpr>,
    },
    Index {
        base: Box<TExpr>,
        index: Box<TExpr>,
    },
    Tuple(Vec<TExpr>),
    Table(Vec<TExpr>),
    /// `e @ T`: an integer converted to an index of the index set `T` (the node's type).
    At(Box<TExpr>),
    /// A type in argument position (`iota (Fin 5)`); the type is the node's `TypeArg`.
    TypeArg,
    Block {
        stmts: Vec<TStmt>,
        result: Box<TExpr>,
    },
}

/// Where a definition lives.
#[derive(Clone, Debug, PartialEq)]
pub enum DefKey {
    Top(String),
    Local(LocalId),
}

#[derive(Clone, Debug, PartialEq)]
pub enum TPat {
    Var(LocalId, String),
    Tuple(Vec<TPat>),
    /// `[k1, k2] = table`
    Table(Vec<TPat>),
    Wild,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TStmt {
    Let {
        pat: TPat,
        value: TExpr,
    },
    /// A local `def`, referred to by `TKind::Def { def: DefKey::Local(id) }`.
    Def {
        id: LocalId,
        def: Box<DefInfo>,
    },
}

/// A checked definition: a type scheme and its body (a lambda per parameter).
#[derive(Clone, Debug, PartialEq)]
pub struct DefInfo {
    pub name: String,
    /// The scheme's variables, in order (instantiations list types in this order).
    pub vars: Vec<Rigid>,
    pub ty: Ty,
    pub body: TExpr,
    pub span: Span,
}

//! The typed program: the checker's output and the lowering's input. Names are resolved,
//! every node has its type, operators are applications of built-ins, multi-binder `for`s and
//! lambdas are nested single-binder ones.

use super::builtins::{Builtin, Class};
use super::data::DataTy;
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
    /// The value a `given (set:Set a)` variable stands for (Note [Value parameters] in
    /// `check/data.rs`): the lowering reads the value its instantiation names.
    GivenValue(Rigid, String),
    /// A (top-level or local) definition, instantiated: `inst[k]` is the type chosen for the
    /// definition's k-th scheme variable.
    Def {
        name: String,
        def: DefKey,
        inst: Vec<Ty>,
        /// The sizes the body computes that the definition's type names, each renamed for
        /// this use: `(this use's local, the body's)` (Note [Sizes a call computes]).
        sizes: Vec<(LocalId, LocalId)>,
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
    /// A table of plain numbers (`ExprKind::Numbers`); its elements have the element type of
    /// the node's type.
    Numbers(Vec<crate::syntax::ast::Number>),
    /// `e @ T`: an integer converted to an index of the index set `T` (the node's type).
    At(Box<TExpr>),
    /// A type in argument position (`iota (Fin 5)`); the type is the node's `TypeArg`.
    TypeArg,
    Block {
        stmts: Vec<TStmt>,
        result: Box<TExpr>,
    },
    /// Constructor `con` of a user type: a curried function of its fields (or, without
    /// fields, the value itself). The node's type says which instantiation.
    Con {
        con: usize,
        name: String,
    },
    /// `base.field`: a field of a struct or a component of a tuple (`t.0`), by name; the
    /// lowering finds it in the concrete type.
    Field {
        base: Box<TExpr>,
        field: String,
    },
    /// `case scrutinee of` alternatives, in order; exhaustive (checked).
    Case {
        scrutinee: Box<TExpr>,
        alts: Vec<(TPat, TExpr)>,
    },
    /// Method `method` of an interface, at the types `inst`: the class's argument, then the
    /// method's own variables. The lowering picks the instance by the concrete argument.
    Method {
        class: Class,
        method: usize,
        name: String,
        inst: Vec<Ty>,
    },
}

/// Where a definition lives.
#[derive(Clone, Debug, PartialEq)]
pub enum DefKey {
    /// A top-level definition by its key in the environment (`GlobalEnv::define`).
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
    /// Constructor `con` (named `name`) of the matched user type, with patterns for its
    /// fields.
    Con {
        con: usize,
        name: String,
        /// The type has several constructors (its values carry a tag).
        tagged: bool,
        args: Vec<TPat>,
    },
    /// A literal, with its sign (`-1`).
    Lit {
        lit: Lit,
        negated: bool,
    },
}

impl DefInfo {
    /// The names of the parameters, in order (`None` for a pattern or an index-set argument).
    pub fn param_names(&self) -> Vec<Option<String>> {
        let mut names = Vec::new();
        let mut body = &self.body;
        while let TKind::Lam { param, body: inner } = &body.kind {
            names.push(match param {
                TPat::Var(_, name) => Some(name.clone()),
                _ => None,
            });
            body = inner;
        }
        names
    }
}

impl TPat {
    /// Calls `f` with each variable the pattern binds and its name, in order.
    pub fn for_each_var(&self, f: &mut impl FnMut(LocalId, &str)) {
        match self {
            TPat::Var(id, name) => f(*id, name),
            TPat::Tuple(items) | TPat::Table(items) | TPat::Con { args: items, .. } => {
                items.iter().for_each(|item| item.for_each_var(f))
            }
            TPat::Wild | TPat::Lit { .. } => {}
        }
    }

    /// The variables a pattern binds, with their parts of `ty` (the matched value's type).
    pub fn vars(&self, ty: &Ty) -> Vec<(LocalId, String, Ty)> {
        let mut out = Vec::new();
        self.vars_into(ty, &mut out);
        out
    }

    fn vars_into(&self, ty: &Ty, out: &mut Vec<(LocalId, String, Ty)>) {
        match (self, ty) {
            (TPat::Var(local, name), _) => out.push((*local, name.clone(), ty.clone())),
            (TPat::Tuple(pats), Ty::Tuple(items)) => {
                for (pat, item) in pats.iter().zip(items) {
                    pat.vars_into(item, out);
                }
            }
            (TPat::Table(pats), Ty::Table(_, elem)) => {
                for pat in pats {
                    pat.vars_into(elem, out);
                }
            }
            (TPat::Con { con, args, .. }, Ty::Data(data)) => {
                for (pat, field) in args.iter().zip(data.fields(*con)) {
                    pat.vars_into(&field, out);
                }
            }
            _ => {}
        }
    }

    /// Whether the pattern matches every value of its type (no literal, no constructor of a
    /// type with several constructors), as a binding's pattern must.
    pub fn is_irrefutable(&self, ty: &Ty) -> bool {
        match (self, ty) {
            (TPat::Var(..) | TPat::Wild, _) => true,
            (TPat::Tuple(pats), Ty::Tuple(items)) => pats
                .iter()
                .zip(items)
                .all(|(pat, item)| pat.is_irrefutable(item)),
            (TPat::Table(pats), Ty::Table(_, elem)) => {
                pats.iter().all(|pat| pat.is_irrefutable(elem))
            }
            (TPat::Con { con, args, .. }, Ty::Data(data)) => {
                !data.def.is_tagged() && irrefutable_fields(args, data, *con)
            }
            _ => false,
        }
    }
}

fn irrefutable_fields(args: &[TPat], data: &DataTy, con: usize) -> bool {
    args.iter()
        .zip(data.fields(con))
        .all(|(pat, field)| pat.is_irrefutable(&field))
}

// `Let` is nearly every statement; boxing its expression would cost an allocation each.
#[allow(clippy::large_enum_variant)]
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
    /// The source names of `vars` that a named argument can fill (`split_key(n=2, k)`): the
    /// `given` binders and the implicit index sets of the signature; `None` for an `a: Type`
    /// parameter (its own argument fills it) and for a generalised variable.
    pub implicit: Vec<Option<String>>,
    pub ty: Ty,
    pub body: TExpr,
    pub span: Span,
    /// Declared with no parameters (`def f() -> T`): `f()` is its value, as `f` is, even
    /// when `T` is a function type.
    pub nullary: bool,
}

impl TExpr {
    /// The function and the arguments of a curried application, in order (`f` and `[]` for
    /// anything else).
    pub fn spine(&self) -> (&TExpr, Vec<&TExpr>) {
        crate::syntax::ast::spine_by(self, |expr| match &expr.kind {
            TKind::App { func, arg } => Some((&**func, &**arg)),
            _ => None,
        })
    }

    /// The locals that this expression binds or whose sizes a use of a definition in it
    /// names (`TKind::Def::sizes`): the sizes a definition with this body may compute.
    pub fn computed_locals(&self) -> std::collections::HashSet<LocalId> {
        fn walk(expr: &TExpr, out: &mut std::collections::HashSet<LocalId>) {
            for pat in expr.own_patterns() {
                pat.for_each_var(&mut |id, _| {
                    out.insert(id);
                });
            }
            match &expr.kind {
                TKind::For { binder, .. } => {
                    out.insert(*binder);
                }
                TKind::Def { sizes, .. } => out.extend(sizes.iter().map(|(site, _)| *site)),
                _ => {}
            }
            for child in expr.children() {
                walk(child, out);
            }
        }
        let mut out = std::collections::HashSet::new();
        walk(self, &mut out);
        out
    }

    /// The patterns this expression binds itself (not those of the expressions inside it): a
    /// lambda's parameter, a `case`'s alternatives, a block's `let`s.
    pub fn own_patterns(&self) -> Vec<&TPat> {
        match &self.kind {
            TKind::Lam { param, .. } => vec![param],
            TKind::Case { alts, .. } => alts.iter().map(|(pat, _)| pat).collect(),
            TKind::Block { stmts, .. } => stmts
                .iter()
                .filter_map(|stmt| match stmt {
                    TStmt::Let { pat, .. } => Some(pat),
                    TStmt::Def { .. } => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The expressions directly inside this one, in source order (local definitions'
    /// bodies included).
    pub fn children(&self) -> Vec<&TExpr> {
        match &self.kind {
            TKind::Local(_)
            | TKind::Global(_)
            | TKind::GivenValue(..)
            | TKind::Def { .. }
            | TKind::Builtin(_)
            | TKind::Lit(_)
            | TKind::Numbers(_)
            | TKind::TypeArg
            | TKind::Con { .. }
            | TKind::Method { .. } => Vec::new(),
            TKind::Lam { body, .. }
            | TKind::For { body, .. }
            | TKind::At(body)
            | TKind::Field { base: body, .. } => vec![body],
            TKind::Case { scrutinee, alts } => {
                let mut out: Vec<&TExpr> = vec![scrutinee];
                out.extend(alts.iter().map(|(_, body)| body));
                out
            }
            TKind::If {
                cond,
                then_branch,
                else_branch,
            } => vec![cond, then_branch, else_branch],
            TKind::App { func: a, arg: b } | TKind::Index { base: a, index: b } => vec![a, b],
            TKind::Tuple(items) | TKind::Table(items) => items.iter().collect(),
            TKind::Block { stmts, result } => {
                let mut out: Vec<&TExpr> = stmts
                    .iter()
                    .map(|stmt| match stmt {
                        TStmt::Let { value, .. } => value,
                        TStmt::Def { def, .. } => &def.body,
                    })
                    .collect();
                out.push(result);
                out
            }
        }
    }
}

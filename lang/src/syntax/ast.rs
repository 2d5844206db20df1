//! The surface syntax tree: an owned tree produced by the parser, every node with its span.
//!
//! The tree is close to the text: operators are kept as written (`BinOp`), application is
//! curried (`f(x, y)` and `f x y` both become nested `App`), `$` and backtick infix are already
//! turned into `App`. Types in expression position (`iota (Fin 5)`, `size n`) are parsed as
//! expressions; the checker reads them as types where a type is expected.

use super::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// One top-level code block, after its pragma lines.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeBlock {
    pub pragmas: Vec<Pragma>,
    pub decl: Decl,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Pragma {
    /// `%passes parse typed core`
    Passes(Vec<Ident>),
    /// `%time`
    Time,
    /// `%bench "name"`
    Bench(String),
    /// `%strict`
    Strict,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Decl {
    /// `def name(params) -> ret given (...) = body`
    Def(FunDef),
    /// `name = e`, `name : T = e`, `(a, b) = e`. Also `Name = Fin 10`; the checker decides
    /// that a capitalised name bound to a type expression is an index-set alias.
    Let(LetBinding),
    /// `:p e`, `:t e`, `:plot e`, ... and a bare expression (`Command::Print`, `bare: true`).
    Command {
        command: Command,
        expr: Expr,
        bare: bool,
    },
    /// `import name`
    Import(Ident),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `:p`
    Print,
    /// `:t`
    Type,
    /// `:plot`
    Plot,
    /// `:plotgrad`
    PlotGrad,
    /// `:table`
    Table,
    /// `:stages`
    Stages,
    /// `:help name`: the type and documentation of a name.
    Help,
    /// `:export f`: a function as a StableHLO module.
    Export,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunDef {
    pub name: Ident,
    pub params: Vec<Param>,
    pub ret: Option<TypeExpr>,
    pub given: Vec<GivenBinder>,
    pub body: Expr,
    pub span: Span,
}

/// `n|Ix` in `given (n|Ix, m|Ix)`; `class` is `None` for a bare `n`.
#[derive(Clone, Debug, PartialEq)]
pub struct GivenBinder {
    pub name: Ident,
    pub class: Option<Ident>,
}

/// A function or lambda parameter: `x`, `x: T`, `(a, b)`, `(a, b): (T, U)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub pat: Pattern,
    pub ty: Option<TypeExpr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LetBinding {
    pub pat: Pattern,
    pub ty: Option<TypeExpr>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    Var(Ident),
    /// `(a, b)`
    Tuple(Vec<Pattern>, Span),
    /// `[k1, k2]` destructures a table with a literal number of rows.
    Table(Vec<Pattern>, Span),
    /// `_`
    Wildcard(Span),
}

impl Decl {
    /// The top-level names a declaration defines, in order.
    pub fn defined_names(&self) -> Vec<&Ident> {
        match self {
            Decl::Def(def) => vec![&def.name],
            Decl::Let(binding) => binding.pat.names(),
            Decl::Command { .. } | Decl::Import(_) => Vec::new(),
        }
    }
}

impl Pattern {
    /// The names a pattern binds, in order.
    pub fn names(&self) -> Vec<&Ident> {
        match self {
            Pattern::Var(ident) => vec![ident],
            Pattern::Tuple(items, _) | Pattern::Table(items, _) => {
                items.iter().flat_map(Pattern::names).collect()
            }
            Pattern::Wildcard(_) => Vec::new(),
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Pattern::Var(ident) => ident.span,
            Pattern::Tuple(_, span) | Pattern::Table(_, span) | Pattern::Wildcard(span) => *span,
        }
    }
}

/// A statement of a let-block.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Let(LetBinding),
    Def(FunDef),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    /// `f a b` as `f` and `[a, b]` (positional arguments only; `f` is not an application).
    pub fn spine(&self) -> (&Expr, Vec<&Expr>) {
        let mut args = Vec::new();
        let mut current = self;
        while let ExprKind::App {
            func,
            arg,
            name: None,
        } = &current.kind
        {
            args.push(&**arg);
            current = func;
        }
        args.reverse();
        (current, args)
    }
}

/// An element of `ExprKind::Numbers`: a number as written, with its sign.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Number {
    pub value: NumberValue,
    /// Written with a `-` (the negation of `value`, as `-2` is in an expression).
    pub negated: bool,
    /// The number with its sign.
    pub span: Span,
    /// The number without its sign.
    pub digits: Span,
}

/// The value of a `Number` without its sign.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NumberValue {
    Int(u64),
    Float(f64),
}

impl NumberValue {
    pub fn lit(self) -> Lit {
        match self {
            NumberValue::Int(n) => Lit::Int(n),
            NumberValue::Float(x) => Lit::Float(x),
        }
    }
}

impl Expr {
    /// The table `[items]`: a table of plain numbers is `Numbers`, however it was written, so
    /// that printing and parsing again give the same tree.
    pub fn table(items: Vec<Expr>, span: Span) -> Expr {
        let numbers: Option<Vec<Number>> = if items.is_empty() {
            None
        } else {
            items.iter().map(Number::of).collect()
        };
        let kind = match numbers {
            Some(numbers) => ExprKind::Numbers(numbers),
            None => ExprKind::Table(items),
        };
        Expr { kind, span }
    }
}

impl Number {
    /// `expr` as a number, when it is a literal or the negation of one (a negative float
    /// literal, `nan` or `infinity` is not one: the printer writes them otherwise).
    fn of(expr: &Expr) -> Option<Number> {
        let (negated, lit) = match &expr.kind {
            ExprKind::Neg(inner) => (true, &**inner),
            _ => (false, expr),
        };
        let value = match lit.kind {
            ExprKind::Lit(Lit::Int(n)) => NumberValue::Int(n),
            ExprKind::Lit(Lit::Float(x)) if x.is_finite() && x.is_sign_positive() => {
                NumberValue::Float(x)
            }
            _ => return None,
        };
        Some(Number {
            value,
            negated,
            span: expr.span,
            digits: lit.span,
        })
    }

    /// The number as the expression rules read it: a literal, negated when written with `-`
    /// (a `+` is no operation: the literal spans the sign).
    pub fn expr(self) -> Expr {
        if !self.negated {
            return Expr {
                kind: ExprKind::Lit(self.value.lit()),
                span: self.span,
            };
        }
        let lit = Expr {
            kind: ExprKind::Lit(self.value.lit()),
            span: self.digits,
        };
        Expr {
            kind: ExprKind::Neg(Box::new(lit)),
            span: self.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// An integer literal as written (no sign); its type is decided by the checker.
    Int(u64),
    /// A float literal (`1.0`, `1.`, `1e-3`); its type is decided by the checker.
    Float(f64),
    Bool(bool),
    /// A string literal (only in pragmas and plot labels for now).
    Str(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `.*` scalar × table
    Scale,
    /// `**` matrix × matrix
    MatMul,
    /// `**.` matrix × vector
    MatVec,
    /// `.**` vector × matrix
    VecMat,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Or,
    /// `~~` approximately equal
    Approx,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Scale => ".*",
            BinOp::MatMul => "**",
            BinOp::MatVec => "**.",
            BinOp::VecMat => ".**",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Approx => "~~",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Var(Ident),
    Lit(Lit),
    /// `\x y. body`; `\x:Float. e`; `\(a, b). e`
    Lam {
        params: Vec<Param>,
        body: Box<Expr>,
    },
    /// `for i j:(Fin 3). body` (binders outermost first)
    For {
        binders: Vec<ForBinder>,
        body: Box<Expr>,
    },
    If {
        cond: Box<Expr>,
        then_branch: Box<Expr>,
        else_branch: Box<Expr>,
    },
    /// One argument of a curried application. `f(x, y)`, `f x y` and `f $ g x` all become
    /// nested `App`s; `x \`mod\` 5` becomes `App(App(mod, x), 5)`.
    App {
        func: Box<Expr>,
        arg: Box<Expr>,
        name: Option<Ident>,
    },
    BinOp {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Unary minus.
    Neg(Box<Expr>),
    /// An operator as a function of two arguments: `(+)`, `(==)`.
    Section(BinOp),
    /// `_` as an argument: a type to be inferred (`iota _`).
    Hole,
    /// `x[i, j]` (= `x[i][j]`): `indices` has one entry per comma-separated index.
    Index {
        base: Box<Expr>,
        indices: Vec<Expr>,
    },
    /// `(a, b)`; never of length 1 (a parenthesised expression is just the expression);
    /// `()` is the unit value.
    Tuple(Vec<Expr>),
    /// `[a, b, c]`
    Table(Vec<Expr>),
    /// `[0.5, -1, 2e3]`: a table of plain numbers, kept as data (a literal of 10⁶ numbers
    /// is not 10⁶ expressions). It means the `Table` of the same text.
    Numbers(Vec<Number>),
    /// `e @ T`; `T` may be `_` (inferred).
    At {
        value: Box<Expr>,
        ty: TypeExpr,
    },
    /// `(e :: T)`
    Annot {
        expr: Box<Expr>,
        ty: TypeExpr,
    },
    /// An indented let-block: bindings and local `def`s, then the result expression.
    Block {
        stmts: Vec<Stmt>,
        result: Box<Expr>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct ForBinder {
    pub name: Ident,
    pub ty: Option<TypeExpr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeExpr {
    pub kind: TypeExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeExprKind {
    /// `Float`, `Int`, `n`, `Height`, ...
    Name(Ident),
    /// `Fin e` where `e` is a size expression (`4`, `n`, `size m`, `n + 1`).
    Fin(Box<Expr>),
    /// `n => t`
    Table(Box<TypeExpr>, Box<TypeExpr>),
    /// `(a, b)`; as an index set, a row-major pair.
    Tuple(Vec<TypeExpr>),
    /// `a -> b`, `(a, b) -> c` (a function of several arguments).
    Fun(Vec<TypeExpr>, Box<TypeExpr>),
    /// `_`
    Hole,
}

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
    /// Dex's `@noinline` before a definition (dx inlines every definition, so it changes
    /// nothing).
    NoInline,
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
    /// `struct`, `data` or `enum`: a user type and its constructors (docs/language.md).
    Data(DataDecl),
    /// `interface Name(a)` with method signatures and defaults.
    Interface(InterfaceDecl),
    /// `instance Name(T) given (...)` with method definitions.
    Instance(InstanceDecl),
    /// `custom-linearization f g`: `f` (a top-level function) is differentiated by `g`, which
    /// gives `f`'s value and its linear map (Dex's declaration).
    CustomLinearization { func: Ident, lin: Ident },
    /// A type given a name: `Image = (Fin 28)=>Float`, `LogProb : Type = Float`,
    /// `def Vec(n: Nat) -> Type = (Fin n)=>Float`.
    TypeAlias(TypeAlias),
}

/// The three forms of a user type declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    /// `struct Name =` + indented `field : Type` lines: one constructor named as the type.
    Struct,
    /// `data Name =` + constructors.
    Data,
    /// `enum Name =` + constructor names without fields.
    Enum,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DataDecl {
    pub kind: DataKind,
    pub name: Ident,
    pub params: Vec<TypeParam>,
    /// Variables the parameters' types use, inferred (`struct Element(set:(Set a)) given (a|Ord)`).
    pub given: Vec<GivenBinder>,
    pub cons: Vec<ConDecl>,
    /// A struct's methods (`def incby(n: a) -> Thing(a) = …`, called as `t.incby(1)`), with
    /// `self` bound to the struct.
    pub methods: Vec<FunDef>,
    pub span: Span,
}

/// A parameter of a type or interface: `a`, `a:Type`, `n|Ix`, `a|Add|Sub`, `n:Nat`; a `given`
/// binder has the same form (`GivenBinder`).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeParam {
    pub name: Ident,
    /// The written kind (`Type`, `Nat`), if any.
    pub kind: Option<TypeExpr>,
    pub classes: Vec<Ident>,
}

impl TypeParam {
    /// The parameter as written: its name, `:` and its kind (printed by `kind`) if it has one,
    /// then `|` before each class (`a:Type`, `n|Ix`, `a|Add|Sub`).
    pub fn text(&self, kind: impl Fn(&TypeExpr) -> String) -> String {
        let mut text = self.name.name.clone();
        if let Some(written) = &self.kind {
            text.push(':');
            text.push_str(&kind(written));
        }
        for class in &self.classes {
            text.push('|');
            text.push_str(&class.name);
        }
        text
    }
}

/// A constructor: `Circle(Float)`, `Rect(w: Float, h: Float)`, `MkPair a b`, `Empty`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConDecl {
    pub name: Ident,
    pub fields: Vec<FieldDecl>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldDecl {
    pub name: Option<Ident>,
    pub ty: TypeExpr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct InterfaceDecl {
    pub name: Ident,
    pub params: Vec<TypeParam>,
    /// Method signatures in order: `area : (a) -> Float`.
    pub methods: Vec<MethodSig>,
    /// Default definitions of methods.
    pub defaults: Vec<FunDef>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MethodSig {
    pub name: Ident,
    pub ty: TypeExpr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct InstanceDecl {
    /// A named instance's name and parameters (`named-instance AddMonoid(a|Add) -> Monoid(a)`):
    /// a value the program passes (a monoid for `yield_accum`), not an instance the checker
    /// finds.
    pub named: Option<(Ident, Vec<Param>)>,
    pub class: Ident,
    pub args: Vec<TypeExpr>,
    pub given: Vec<GivenBinder>,
    pub constraints: Vec<Constraint>,
    pub methods: Vec<InstanceItem>,
    pub span: Span,
}

/// A method of an instance: `def area(p) = …` or `zero = Point(0.0, 0.0)`.
#[derive(Clone, Debug, PartialEq)]
pub enum InstanceItem {
    Def(FunDef),
    Let(LetBinding),
}

impl InstanceItem {
    pub fn name(&self) -> Option<&Ident> {
        match self {
            InstanceItem::Def(def) => Some(&def.name),
            InstanceItem::Let(binding) => match &binding.pat {
                Pattern::Var(ident) => Some(ident),
                _ => None,
            },
        }
    }

    pub fn span(&self) -> Span {
        match self {
            InstanceItem::Def(def) => def.span,
            InstanceItem::Let(binding) => binding.span,
        }
    }
}

/// `Name = T`, `Name : Type = T`, `def Name(n: Nat, a: Type) -> Type = T`.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeAlias {
    pub name: Ident,
    /// The parameters of a type function (`def Vec(n: Nat) -> Type`), `None` for a plain alias.
    pub params: Option<Vec<Param>>,
    /// Written `Name : Type = T`.
    pub annotated: bool,
    pub ty: TypeExpr,
    pub span: Span,
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
    /// `:html`: a plot, an image or HTML text of the libraries (`import plot`, `import png`).
    Html,
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
    /// The effect row of the signature (`-> {State h} ()`); inferred when absent.
    pub effects: Option<EffRowExpr>,
    pub given: Vec<GivenBinder>,
    /// The constraints after the `given` binders (`given (a) (Add a)`).
    pub constraints: Vec<Constraint>,
    pub body: Expr,
    pub span: Span,
}

/// An effect row written in a type: `{State h, IO|eff}` (docs/language.md, Effects).
#[derive(Clone, Debug, PartialEq)]
pub struct EffRowExpr {
    /// Each effect's name and region (`State h`, `IO`).
    pub effects: Vec<(Ident, Option<Ident>)>,
    /// The name after `|`: the effects of a function passed in.
    pub rest: Option<Ident>,
    pub span: Span,
}

impl EffRowExpr {
    /// Each effect as written: its name, then its region if it has one (`State h`, `IO`).
    pub fn effect_texts(&self) -> Vec<String> {
        self.effects
            .iter()
            .map(|(name, region)| match region {
                Some(region) => format!("{} {}", name.name, region.name),
                None => name.name.clone(),
            })
            .collect()
    }
}

/// A constraint in the group after a `given`'s binders (Dex's): `Add a` (the same as `a|Add`),
/// `Subset(a, b)`, `am:AccumMonoid(h, w)` (named).
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    pub name: Option<Ident>,
    pub class: Ident,
    pub args: Vec<TypeExpr>,
    pub span: Span,
}

/// `n|Ix` in `given (n|Ix, m|Ix)`, `a|Add|Sub` (several classes), a bare `n`, `a:Type`, or a
/// value the types name (`set:Set a`, Note [Value parameters] in `check/data.rs`): written as
/// a type parameter is, its kind being `Type`, `Nat`, or a value's type.
pub type GivenBinder = TypeParam;

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
    /// A constructor with its argument patterns: `Just(x)`, `MkPair a b`, `Circle(_)`. A
    /// constructor without arguments is written as a `Var` (`Nothing`); the checker tells
    /// it from a name by whether a constructor of that name exists.
    Con {
        name: Ident,
        args: Vec<Pattern>,
        span: Span,
    },
    /// A literal: `0`, `-1` (`negated`), `2.5`, `True`, `'a'`, `"abc"`.
    Lit {
        lit: Lit,
        negated: bool,
        span: Span,
    },
}

impl Decl {
    /// The top-level names a declaration defines, in order.
    pub fn defined_names(&self) -> Vec<&Ident> {
        match self {
            Decl::Def(def) => vec![&def.name],
            Decl::Let(binding) => binding.pat.names(),
            Decl::Data(data) => {
                let mut names = vec![&data.name];
                names.extend(
                    data.cons
                        .iter()
                        .map(|con| &con.name)
                        .filter(|name| name.name != data.name.name),
                );
                names
            }
            Decl::Interface(interface) => {
                let mut names = vec![&interface.name];
                names.extend(interface.methods.iter().map(|method| &method.name));
                names
            }
            Decl::TypeAlias(alias) => vec![&alias.name],
            Decl::Instance(instance) => instance.named.iter().map(|(name, _)| name).collect(),
            // It changes how `f` is differentiated, not what `f` names (its docs stay).
            Decl::Command { .. } | Decl::Import(_) | Decl::CustomLinearization { .. } => Vec::new(),
        }
    }
}

impl Pattern {
    /// The names a pattern binds, in order.
    pub fn names(&self) -> Vec<&Ident> {
        match self {
            Pattern::Var(ident) => vec![ident],
            Pattern::Tuple(items, _)
            | Pattern::Table(items, _)
            | Pattern::Con { args: items, .. } => items.iter().flat_map(Pattern::names).collect(),
            Pattern::Wildcard(_) | Pattern::Lit { .. } => Vec::new(),
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Pattern::Var(ident) => ident.span,
            Pattern::Tuple(_, span)
            | Pattern::Table(_, span)
            | Pattern::Wildcard(span)
            | Pattern::Con { span, .. }
            | Pattern::Lit { span, .. } => *span,
        }
    }
}

/// A statement of a let-block.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Let(LetBinding),
    Def(FunDef),
    /// A local type or index-set alias (`N = Fin 3`, `Row = (Fin 3)=>Float`).
    TypeAlias(TypeAlias),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    /// `f a b` as `f` and `[a, b]` (positional arguments only; `f` is not an application).
    pub fn spine(&self) -> (&Expr, Vec<&Expr>) {
        spine_by(self, Expr::positional_app)
    }

    /// `f a` as `f` and `a`, when `a` is a positional argument.
    pub fn positional_app(&self) -> Option<(&Expr, &Expr)> {
        match &self.kind {
            ExprKind::App {
                func,
                arg,
                name: None,
            } => Some((func, arg)),
            _ => None,
        }
    }
}

/// A curried application taken apart: the head under the applications that `app` takes apart
/// (`f` of `f a b`), and their arguments in order.
pub fn spine_by<'a, T>(
    expr: &'a T,
    app: impl Fn(&'a T) -> Option<(&'a T, &'a T)>,
) -> (&'a T, Vec<&'a T>) {
    let mut args = Vec::new();
    let mut head = expr;
    while let Some((func, arg)) = app(head) {
        args.push(arg);
        head = func;
    }
    args.reverse();
    (head, args)
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
    /// A string literal: a `List Char` (docs/language.md).
    Str(String),
    /// A character literal `'a'`: a `Char` (a byte, as Dex's `Word8`).
    Char(u8),
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
    /// A user operator applied infix: `x ./ y` is `(./) x y`.
    UserOp {
        op: Ident,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `e.field`, `t.0`: a field of a struct or a component of a tuple.
    Field {
        base: Box<Expr>,
        field: Ident,
    },
    /// A range of an index as a type argument: `size (..i)`.
    Range(RangeKind, Ident),
    /// `case e of` + `pattern -> body` alternatives, in order.
    Case {
        scrutinee: Box<Expr>,
        alts: Vec<CaseAlt>,
    },
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
pub struct CaseAlt {
    pub pat: Pattern,
    pub body: Expr,
    pub span: Span,
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
    /// `a -> b`, `(a, b) -> c` (a function of several arguments), `a -> {State h} b`.
    Fun(Vec<TypeExpr>, Box<TypeExpr>, Option<EffRowExpr>),
    /// `_`
    Hole,
    /// A type applied to arguments: `MyPair Int Float`, `Maybe(Float)`, `Layer (Fin 3) m`,
    /// `Vec 3` (an argument may be a size).
    App(Ident, Vec<TypeExpr>),
    /// A size as a type argument: `3`, `(n + 1)`.
    Size(Box<Expr>),
    /// A range of the index `i`: `(..i)`, `(..<i)`, `(i..)`, `(i<..)`.
    Range(RangeKind, Ident),
    /// `(given (n|Ix), n=>Float) -> Float`: a function type whose implicit variables are
    /// named at its start (Dex's); `ty` is the function type.
    Given {
        binders: Vec<GivenBinder>,
        ty: Box<TypeExpr>,
    },
    /// `(i:n)=>t`: a table whose element type may use its index `i` (`(i:n)=>(..i)=>Float`).
    DepTable {
        binder: Ident,
        index: Box<TypeExpr>,
        elem: Box<TypeExpr>,
    },
}

/// Which elements of an index set a range has, relative to an index `i` of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RangeKind {
    /// `(..i)`: up to and including `i`.
    UpTo,
    /// `(..<i)`: before `i`.
    Before,
    /// `(i..)`: from `i` on.
    From,
    /// `(i<..)`: after `i`.
    After,
}

impl RangeKind {
    /// The range of `index` as written.
    pub fn text(self, index: &str) -> String {
        match self {
            RangeKind::UpTo => format!("(..{index})"),
            RangeKind::Before => format!("(..<{index})"),
            RangeKind::From => format!("({index}..)"),
            RangeKind::After => format!("({index}<..)"),
        }
    }
}

//! Printing the surface AST back as dx source: the `parse` stage of `%passes` (docs/language.md).
//!
//! Guarantees: the text of `print_block` parses (`parse_code`) back to the same tree, spans
//! aside, and is one chunk for `split_chunks`; likewise `print_expr` with `parse_expr` (except
//! for a let-block at the very top, which `parse_expr` cannot read). The grouping the parser
//! chose is explicit: every binary operator, unary minus, `e @ T` and `(e :: T)` is printed in
//! parentheses (`(a + (b * c))`), and so is every non-atomic argument (`f (g x) y[i]`).
//!
//! Layout follows the layout rule of `layout.rs` (Note [Layout rule]): a let-block goes on the
//! lines after its opener (`=`, the `.` of a lambda or `for`, `then`, `else`, a command),
//! indented two spaces more than the block item it is in; other bodies stay on their opener's
//! line (`fold 0.0 \i c.` + an indented block). What follows a let-block in the same item (an
//! `else`, the `)` around a lambda) starts a line at the item's own column, where it can only
//! continue the item. At the top level that column would be 0, which starts a new block of the
//! file, so there such lines go to column 2: the body of a command or binding moves to its own
//! lines (`:p` + indented body), a bare expression keeps its first line at column 0.

use super::ast::*;

/// Prints one code block (its pragma lines, then its declaration), without a final newline.
pub fn print_block(block: &CodeBlock) -> String {
    let mut lines: Vec<String> = block.pragmas.iter().map(pragma).collect();
    lines.push(decl(&block.decl));
    lines.join("\n")
}

/// Prints an expression as a bare top-level expression (the layout of the module header). A
/// let-block at the top is printed as its lines, all at column 0.
pub fn print_expr(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Block { stmts, result } => block_lines(stmts, result, 0),
        _ => top_expr(expr),
    }
}

/// The column of continuation lines of a top-level item (`else`, a closing `)`) when they
/// cannot be at column 0.
const TOP_CONTINUATION: usize = 2;
/// Indentation per nested block.
const STEP: usize = 2;

fn pragma(pragma: &Pragma) -> String {
    match pragma {
        Pragma::Passes(stages) => {
            let names: Vec<&str> = stages.iter().map(|stage| stage.name.as_str()).collect();
            format!("%passes {}", names.join(" "))
        }
        Pragma::Time => "%time".to_string(),
        Pragma::Bench(name) => format!("%bench {}", quoted(name)),
        Pragma::Strict => "%strict".to_string(),
        Pragma::NoInline => "@noinline".to_string(),
    }
}

fn decl(decl: &Decl) -> String {
    match decl {
        Decl::Def(def) => fun_def(def, 0),
        Decl::Let(binding) => let_binding(binding, 0),
        Decl::Command {
            command,
            expr,
            bare: true,
        } if *command == Command::Print && !matches!(expr.kind, ExprKind::Block { .. }) => {
            let text = top_expr(expr);
            // A line starting with `'` is prose: a leading character literal goes in parentheses.
            match text.starts_with('\'') {
                true => format!("({text})"),
                false => text,
            }
        }
        Decl::Command { command, expr, .. } => {
            format!("{}{}", command_name(*command), body(expr, 0).text)
        }
        Decl::Import(name) => format!("import {}", name.name),
        Decl::CustomLinearization { func, lin } => {
            format!("custom-linearization {} {}", func.name, lin.name)
        }
        Decl::Data(data) => data_decl(data),
        Decl::Interface(interface) => interface_decl(interface),
        Decl::Instance(instance) => instance_decl(instance),
        Decl::TypeAlias(alias) => type_alias(alias),
    }
}

/// `struct Name(params) =` + fields, `data Name(params) =` + constructors, `enum Name =` +
/// names, each on its own line.
fn data_decl(data: &DataDecl) -> String {
    let keyword = match data.kind {
        DataKind::Struct => "struct",
        DataKind::Data => "data",
        DataKind::Enum => "enum",
    };
    let mut lines = vec![format!(
        "{keyword} {}{}{} =",
        data.name.name,
        type_params(&data.params),
        given(&data.given)
    )];
    let indent = spaces(STEP);
    match data.kind {
        DataKind::Struct => {
            for field in data.cons.iter().flat_map(|con| &con.fields) {
                let name = field.name.as_ref().map_or("_", |name| name.name.as_str());
                lines.push(format!(
                    "{indent}{name} : {}",
                    type_expr(&field.ty, TyLevel::Full)
                ));
            }
            for method in &data.methods {
                lines.push(format!("{indent}{}", fun_def(method, STEP)));
            }
        }
        DataKind::Data | DataKind::Enum => {
            for con in &data.cons {
                lines.push(format!("{indent}{}", con_decl(con)));
            }
        }
    }
    lines.join("\n")
}

/// `(a:Type, n|Ix)`, or nothing for no parameters.
fn type_params(params: &[TypeParam]) -> String {
    if params.is_empty() {
        return String::new();
    }
    let params: Vec<String> = params.iter().map(type_param).collect();
    format!("({})", params.join(", "))
}

fn type_param(param: &TypeParam) -> String {
    param.text(|kind| type_expr(kind, TyLevel::Binder))
}

/// `Circle(Float)`, `Rect(w: Float, h: Float)`, `Empty`.
fn con_decl(con: &ConDecl) -> String {
    if con.fields.is_empty() {
        return con.name.name.clone();
    }
    let fields: Vec<String> = con
        .fields
        .iter()
        .map(|field| {
            let ty = type_expr(&field.ty, TyLevel::Full);
            match &field.name {
                Some(name) => format!("{}: {ty}", name.name),
                None => ty,
            }
        })
        .collect();
    format!("{}({})", con.name.name, fields.join(", "))
}

fn interface_decl(interface: &InterfaceDecl) -> String {
    let mut lines = vec![format!(
        "interface {}{}",
        interface.name.name,
        type_params(&interface.params)
    )];
    let indent = spaces(STEP);
    for method in &interface.methods {
        lines.push(format!(
            "{indent}{} : {}",
            def_name(&method.name),
            type_expr(&method.ty, TyLevel::Full)
        ));
    }
    for default in &interface.defaults {
        lines.push(format!("{indent}{}", fun_def(default, STEP)));
    }
    lines.join("\n")
}

fn instance_decl(instance: &InstanceDecl) -> String {
    let args: Vec<String> = instance
        .args
        .iter()
        .map(|arg| type_expr(arg, TyLevel::Full))
        .collect();
    let class = format!("{}({})", instance.class.name, args.join(", "));
    let mut head = match &instance.named {
        None => format!("instance {class}"),
        Some((name, params)) if params.is_empty() => {
            format!("named-instance {} : {class}", name.name)
        }
        Some((name, params)) => {
            format!(
                "named-instance {}({}) -> {class}",
                name.name,
                def_params(params)
            )
        }
    };
    head.push_str(&given_with(&instance.given, &instance.constraints));
    let mut lines = vec![head];
    let indent = spaces(STEP);
    for item in &instance.methods {
        let text = match item {
            InstanceItem::Def(def) => fun_def(def, STEP),
            InstanceItem::Let(binding) => match &binding.pat {
                Pattern::Var(name) => {
                    format!("{} ={}", def_name(name), body(&binding.value, STEP).text)
                }
                _ => let_binding(binding, STEP),
            },
        };
        lines.push(format!("{indent}{text}"));
    }
    lines.join("\n")
}

/// `Name = T`, `Name : Type = T`, `def Name(params) -> Type = T`.
fn type_alias(alias: &TypeAlias) -> String {
    let ty = type_expr(&alias.ty, TyLevel::Full);
    match &alias.params {
        Some(params) => format!(
            "def {}({}) -> Type = {ty}",
            alias.name.name,
            def_params(params)
        ),
        None if alias.annotated => format!("{} : Type = {ty}", alias.name.name),
        None => format!("{} = {ty}", alias.name.name),
    }
}

/// A definition's name: an operator in parentheses (`(./)`).
fn def_name(name: &Ident) -> String {
    if is_symbolic(&name.name) {
        format!("({})", name.name)
    } else {
        name.name.clone()
    }
}

/// Whether a name is an operator's (`./`, `<>`), written in parentheses as a function.
fn is_symbolic(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|ch| !ch.is_alphanumeric() && ch != '_')
}

/// ` given (n|Ix) (Add a, am:AccumMonoid(h, w))`, or nothing.
fn given_with(binders: &[GivenBinder], constraints: &[Constraint]) -> String {
    let mut text = given(binders);
    if !constraints.is_empty() {
        let items: Vec<String> = constraints
            .iter()
            .map(|constraint| {
                let kind = match constraint.args.is_empty() {
                    true => TypeExprKind::Name(constraint.class.clone()),
                    false => TypeExprKind::App(constraint.class.clone(), constraint.args.clone()),
                };
                let applied = type_expr(
                    &TypeExpr {
                        kind,
                        span: constraint.span,
                    },
                    TyLevel::Full,
                );
                match &constraint.name {
                    Some(name) => format!("{}:{applied}", name.name),
                    None => applied,
                }
            })
            .collect();
        text.push_str(&format!(" ({})", items.join(", ")));
    }
    text
}

/// ` given (n|Ix, a|Add|Sub)`, or nothing.
fn given(binders: &[GivenBinder]) -> String {
    if binders.is_empty() {
        return String::new();
    }
    let binders: Vec<String> = binders.iter().map(type_param).collect();
    format!(" given ({})", binders.join(", "))
}

fn def_params(params: &[Param]) -> String {
    let params: Vec<String> = params
        .iter()
        .map(|param| match &param.ty {
            Some(ty) => format!("{}: {}", pattern(&param.pat), type_expr(ty, TyLevel::Full)),
            None => pattern(&param.pat),
        })
        .collect();
    params.join(", ")
}

fn command_name(command: Command) -> &'static str {
    match command {
        Command::Print => ":p",
        Command::Type => ":t",
        Command::Plot => ":plot",
        Command::PlotGrad => ":plotgrad",
        Command::Table => ":table",
        Command::Html => ":html",
        Command::Stages => ":stages",
        Command::Help => ":help",
        Command::Export => ":export",
    }
}

/// `{State h, IO|eff}`.
fn eff_row(row: &EffRowExpr) -> String {
    let effects = row.effect_texts();
    let rest = row
        .rest
        .as_ref()
        .map_or(String::new(), |rest| format!("|{}", rest.name));
    format!("{{{}{rest}}}", effects.join(", "))
}

/// `def name(params) -> R given (n|Ix) =` and the body, always on the next lines.
fn fun_def(def: &FunDef, ind: usize) -> String {
    let mut head = format!("def {}({})", def_name(&def.name), def_params(&def.params));
    if let Some(ret) = &def.ret {
        head.push_str(" -> ");
        if let Some(row) = &def.effects {
            head.push_str(&eff_row(row));
            head.push(' ');
        }
        head.push_str(&type_expr(ret, TyLevel::Full));
    }
    head.push_str(&given_with(&def.given, &def.constraints));
    format!("{head} ={}", block_body(&def.body, ind))
}

/// `pat = value`, `pat: T = value`.
fn let_binding(binding: &LetBinding, ind: usize) -> String {
    let lhs = match &binding.ty {
        Some(ty) => format!(
            "{}: {}",
            pattern(&binding.pat),
            type_expr(ty, TyLevel::Full)
        ),
        None => pattern(&binding.pat),
    };
    format!("{lhs} ={}", body(&binding.value, ind).text)
}

fn pattern(pat: &Pattern) -> String {
    match pat {
        Pattern::Var(ident) => ident.name.clone(),
        Pattern::Tuple(items, _) => format!("({})", patterns(items)),
        Pattern::Table(items, _) => format!("[{}]", patterns(items)),
        Pattern::Wildcard(_) => "_".to_string(),
        // Always in the call form, which stands wherever a pattern may.
        Pattern::Con { name, args, .. } => format!("{}({})", name.name, patterns(args)),
        Pattern::Lit { lit, negated, .. } => {
            let text = literal(lit);
            match (negated, text.strip_prefix('(')) {
                (false, _) => text,
                // A float literal prints as `(-2.5)`; a pattern is written `-2.5`.
                (true, _) => format!("-{text}"),
            }
        }
    }
}

fn patterns(items: &[Pattern]) -> String {
    let items: Vec<String> = items.iter().map(pattern).collect();
    items.join(", ")
}

/// Printed text. Lines after the first carry their own indentation; the first has none.
/// (The typed printer, `check::print`, lays out its text the same way.)
pub(crate) struct Out {
    pub(crate) text: String,
    /// The text ends in a body printed on its own lines (a let-block): what follows it in the
    /// same item must start a new line at the item's column.
    pub(crate) open: bool,
}

impl Out {
    pub(crate) fn closed(text: String) -> Out {
        Out { text, open: false }
    }
}

/// Appends `closer` (`)`, `]`, `, `, ` else`, ...) to `out`: on a new line at column `ind` when
/// `out` ends in an open block.
pub(crate) fn close(out: Out, ind: usize, closer: &str) -> String {
    if out.open {
        format!("{}\n{}{}", out.text, spaces(ind), closer.trim_start())
    } else {
        format!("{}{closer}", out.text)
    }
}

pub(crate) fn spaces(count: usize) -> String {
    " ".repeat(count)
}

/// Comma-separated items, each printed by `item`, then `closer`.
pub(crate) fn comma_list<T>(
    items: &[T],
    ind: usize,
    closer: &str,
    mut item: impl FnMut(&T) -> Out,
) -> String {
    let mut text = String::new();
    for (index, each) in items.iter().enumerate() {
        let sep = if index + 1 == items.len() {
            closer
        } else {
            ", "
        };
        text.push_str(&close(item(each), ind, sep));
    }
    if items.is_empty() {
        text.push_str(closer);
    }
    text
}

/// A body after its opener (`=`, `.`, `then`, `else`, `:p`), with the space or line break
/// that separates it from the opener. A let-block goes on the next lines, indented `STEP` more
/// than the item at column `ind`; so does, at the top level, a body that would otherwise need
/// a line at column 0.
fn body(expr: &Expr, ind: usize) -> Out {
    let inner = ind + STEP;
    let text = match &expr.kind {
        ExprKind::Block { stmts, result } => block_lines(stmts, result, inner),
        _ => {
            let out = Printer.expr(expr, Ctx::Expr, ind);
            if ind > 0 || !has_line_at_column_0(&out.text) {
                return Out {
                    text: format!(" {}", out.text),
                    open: out.open,
                };
            }
            Printer.expr(expr, Ctx::Expr, inner).text
        }
    };
    Out {
        text: format!("\n{}{text}", spaces(inner)),
        open: true,
    }
}

/// An expression as a top-level item of its own (a bare expression): its continuation lines
/// move to column `TOP_CONTINUATION` when one would be at column 0.
fn top_expr(expr: &Expr) -> String {
    let out = Printer.expr(expr, Ctx::Expr, 0);
    if has_line_at_column_0(&out.text) {
        Printer.expr(expr, Ctx::Expr, TOP_CONTINUATION).text
    } else {
        out.text
    }
}

fn has_line_at_column_0(text: &str) -> bool {
    text.lines()
        .skip(1)
        .any(|line| !line.is_empty() && !line.starts_with(' '))
}

/// A body always on the lines after its opener (a `def`'s).
fn block_body(expr: &Expr, ind: usize) -> String {
    let inner = ind + STEP;
    let text = match &expr.kind {
        ExprKind::Block { stmts, result } => block_lines(stmts, result, inner),
        _ => Printer.expr(expr, Ctx::Expr, inner).text,
    };
    format!("\n{}{text}", spaces(inner))
}

/// The items of a let-block at column `ind` (the first line not indented).
fn block_lines(stmts: &[Stmt], result: &Expr, ind: usize) -> String {
    let mut lines: Vec<String> = stmts
        .iter()
        .map(|stmt| match stmt {
            Stmt::Let(binding) => let_binding(binding, ind),
            Stmt::Def(def) => fun_def(def, ind),
            Stmt::TypeAlias(alias) => type_alias(alias),
        })
        .collect();
    lines.push(match &result.kind {
        // Not produced by the parser (a block's result is an expression).
        ExprKind::Block { .. } => Printer.expr(result, Ctx::Atom, ind).text,
        _ => Printer.expr(result, Ctx::Expr, ind).text,
    });
    lines.join(&format!("\n{}", spaces(ind)))
}

/// Where an expression is printed, from the loosest position to the tightest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ctx {
    /// Extends to the end of the enclosing construct: a body, a block's result. A lambda,
    /// `for` or `if` needs no parentheses, nor does a trailing lambda or `for` argument.
    Expr,
    /// An operand of an operator, `@`, `::`, an `if` condition, an item of a tuple, table,
    /// index list or call: an application is fine, a lambda, `for` or `if` is not.
    Operand,
    /// An argument of a juxtaposition, the base of indexing or of a call: an atom or a postfix
    /// expression (`x[i]`, `f(n=2)`).
    Arg,
    /// The size in `Fin e`: an atom only.
    Atom,
}

/// How tightly an expression binds as printed (the tightest `Ctx` it can stand in).
fn level(expr: &Expr) -> Ctx {
    match &expr.kind {
        ExprKind::Var(_)
        | ExprKind::Lit(_)
        | ExprKind::Tuple(_)
        | ExprKind::Table(_)
        | ExprKind::Numbers(_)
        | ExprKind::BinOp { .. }
        | ExprKind::Neg(_)
        | ExprKind::Section(_)
        | ExprKind::Hole
        | ExprKind::Range(..)
        | ExprKind::At { .. }
        | ExprKind::UserOp { .. }
        | ExprKind::Annot { .. } => Ctx::Atom,
        ExprKind::Index { .. } | ExprKind::Field { .. } => Ctx::Arg,
        ExprKind::App { .. } if has_named_arg(expr) => Ctx::Arg,
        ExprKind::App { .. } => Ctx::Operand,
        ExprKind::Lam { .. }
        | ExprKind::For { .. }
        | ExprKind::If { .. }
        | ExprKind::Case { .. } => Ctx::Expr,
        // Printed in parentheses on its own lines (`Printer::expr`); the parser never puts a
        // block where this matters.
        ExprKind::Block { .. } => Ctx::Atom,
    }
}

/// The head and the arguments (with their names) of an application spine.
fn spine(expr: &Expr) -> (&Expr, Vec<(&Expr, Option<&Ident>)>) {
    let mut args = Vec::new();
    let mut head = expr;
    while let ExprKind::App { func, arg, name } = &head.kind {
        args.push((&**arg, name.as_ref()));
        head = func;
    }
    args.reverse();
    (head, args)
}

fn has_named_arg(expr: &Expr) -> bool {
    let mut expr = expr;
    while let ExprKind::App { func, name, .. } = &expr.kind {
        if name.is_some() {
            return true;
        }
        expr = func;
    }
    false
}

struct Printer;

impl Printer {
    /// Prints `expr` in position `ctx` of an item whose continuation column is `ind`.
    fn expr(&self, expr: &Expr, ctx: Ctx, ind: usize) -> Out {
        if level(expr) < ctx {
            let inner = self.expr(expr, Ctx::Expr, ind);
            return Out::closed(format!("({}", close(inner, ind, ")")));
        }
        match &expr.kind {
            ExprKind::Var(ident) => Out::closed(def_name(ident)),
            ExprKind::Lit(lit) => Out::closed(literal(lit)),
            ExprKind::Section(op) => Out::closed(format!("({})", op.symbol())),
            ExprKind::Hole => Out::closed("_".to_string()),
            ExprKind::Range(kind, index) => Out::closed(kind.text(&index.name)),
            ExprKind::Lam {
                params,
                body: lam_body,
            } => {
                let params: Vec<String> = params.iter().map(lambda_param).collect();
                self.headed(format!("\\{}.", params.join(" ")), lam_body, ind)
            }
            ExprKind::For {
                binders,
                body: for_body,
            } => {
                let binders: Vec<String> = binders
                    .iter()
                    .map(|binder| match &binder.ty {
                        Some(ty) => {
                            format!("{}:{}", binder.name.name, type_expr(ty, TyLevel::Binder))
                        }
                        None => binder.name.name.clone(),
                    })
                    .collect();
                self.headed(format!("for {}.", binders.join(" ")), for_body, ind)
            }
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let cond = self.expr(cond, Ctx::Operand, ind);
                let head = format!("if {}", close(cond, ind, " then"));
                let then_branch = body(then_branch, ind);
                let then_open = then_branch.open;
                let head = format!("{head}{}", then_branch.text);
                let else_branch = body(else_branch, ind);
                let head = if then_open {
                    format!("{head}\n{}else", spaces(ind))
                } else {
                    format!("{head} else")
                };
                Out {
                    text: format!("{head}{}", else_branch.text),
                    open: else_branch.open,
                }
            }
            ExprKind::App { .. } => self.app(expr, ctx, ind),
            ExprKind::BinOp { op, lhs, rhs } => {
                let lhs = self.expr(lhs, Ctx::Operand, ind);
                let lhs = close(lhs, ind, &format!(" {} ", op.symbol()));
                let rhs = self.expr(rhs, Ctx::Operand, ind);
                Out::closed(format!("({lhs}{})", close(rhs, ind, "")))
            }
            ExprKind::Neg(inner) => {
                let inner = self.expr(inner, Ctx::Operand, ind);
                Out::closed(format!("(-{}", close(inner, ind, ")")))
            }
            ExprKind::UserOp { op, lhs, rhs } => {
                let lhs = self.expr(lhs, Ctx::Operand, ind);
                let lhs = close(lhs, ind, &format!(" {} ", op.name));
                let rhs = self.expr(rhs, Ctx::Operand, ind);
                Out::closed(format!("({lhs}{})", close(rhs, ind, "")))
            }
            ExprKind::Field { base, field } => {
                let base = match &base.kind {
                    // `49.0` would read as a float: `(49).0`.
                    ExprKind::Lit(Lit::Int(_) | Lit::Float(_)) => {
                        Out::closed(format!("({})", self.expr(base, Ctx::Expr, ind).text))
                    }
                    _ => self.expr(base, Ctx::Arg, ind),
                };
                Out::closed(close(base, ind, &format!(".{}", field.name)))
            }
            ExprKind::Case { scrutinee, alts } => {
                let scrutinee = self.expr(scrutinee, Ctx::Operand, ind);
                let mut text = format!("case {}", close(scrutinee, ind, " of"));
                let inner = ind + STEP;
                for alt in alts {
                    let alt_body = body(&alt.body, inner);
                    text.push_str(&format!(
                        "\n{}{} ->{}",
                        spaces(inner),
                        pattern(&alt.pat),
                        alt_body.text
                    ));
                }
                Out { text, open: true }
            }
            ExprKind::Index { base, indices } => {
                let base = self.expr(base, Ctx::Arg, ind);
                let base = close(base, ind, "[");
                Out::closed(format!("{base}{}", self.list(indices, ind, "]")))
            }
            ExprKind::Tuple(items) => Out::closed(format!("({}", self.list(items, ind, ")"))),
            ExprKind::Table(items) => Out::closed(format!("[{}", self.list(items, ind, "]"))),
            ExprKind::Numbers(numbers) => Out::closed(numbers_text(numbers)),
            ExprKind::At { value, ty } => {
                let value = self.expr(value, Ctx::Operand, ind);
                let ty = type_expr(ty, TyLevel::Full);
                Out::closed(format!("({})", close(value, ind, &format!(" @ {ty}"))))
            }
            ExprKind::Annot { expr: inner, ty } => {
                let inner = self.expr(inner, Ctx::Operand, ind);
                let ty = type_expr(ty, TyLevel::Full);
                Out::closed(format!("({})", close(inner, ind, &format!(" :: {ty}"))))
            }
            ExprKind::Block { stmts, result } => {
                let inner = ind + STEP;
                let lines = block_lines(stmts, result, inner);
                Out::closed(format!("(\n{}{lines}\n{})", spaces(inner), spaces(ind)))
            }
        }
    }

    /// A lambda or `for`: its head, then its body.
    fn headed(&self, head: String, expr: &Expr, ind: usize) -> Out {
        let out = body(expr, ind);
        Out {
            text: format!("{head}{}", out.text),
            open: out.open,
        }
    }

    /// Comma-separated items in `Operand` position, then `closer`.
    fn list(&self, items: &[Expr], ind: usize, closer: &str) -> String {
        comma_list(items, ind, closer, |item| {
            self.expr(item, Ctx::Operand, ind)
        })
    }

    /// An application: `f x (g y)`, with a trailing lambda or `for` in `Expr` position
    /// (`fold 0.0 \i c. c`), or `f(x, n=2)` when an argument is named.
    fn app(&self, expr: &Expr, ctx: Ctx, ind: usize) -> Out {
        let (head, args) = spine(expr);
        let head = self.expr(head, Ctx::Arg, ind);
        if args.iter().any(|(_, name)| name.is_some()) {
            let args = comma_list(&args, ind, ")", |(arg, name)| {
                let out = self.expr(arg, Ctx::Operand, ind);
                match name {
                    Some(name) => Out {
                        text: format!("{}={}", name.name, out.text),
                        open: out.open,
                    },
                    None => out,
                }
            });
            return Out::closed(close(head, ind, "(") + &args);
        }
        let mut text = head.text;
        let mut open = head.open;
        for (index, (arg, _)) in args.iter().enumerate() {
            let trailing = ctx == Ctx::Expr
                && index + 1 == args.len()
                && matches!(arg.kind, ExprKind::Lam { .. } | ExprKind::For { .. });
            let arg_ctx = if trailing { Ctx::Expr } else { Ctx::Arg };
            text = close(Out { text, open }, ind, " ");
            let out = self.expr(arg, arg_ctx, ind);
            text.push_str(&out.text);
            open = out.open;
        }
        Out { text, open }
    }
}

fn lambda_param(param: &Param) -> String {
    match &param.ty {
        Some(ty) => format!("{}:{}", pattern(&param.pat), type_expr(ty, TyLevel::Binder)),
        None => pattern(&param.pat),
    }
}

/// `[0.5, -1, 2e3]`: each number with its sign.
pub fn numbers_text(numbers: &[Number]) -> String {
    let items: Vec<String> = numbers
        .iter()
        .map(|number| {
            let sign = if number.negated { "-" } else { "" };
            format!("{sign}{}", literal(&number.value.lit()))
        })
        .collect();
    format!("[{}]", items.join(", "))
}

fn literal(lit: &Lit) -> String {
    match lit {
        Lit::Int(value) => value.to_string(),
        Lit::Float(value) if value.is_nan() => "nan".to_string(),
        Lit::Float(value) if value.is_infinite() && *value > 0.0 => "infinity".to_string(),
        Lit::Float(value) if value.is_infinite() => "(-infinity)".to_string(),
        // Rust's `Debug` keeps a `.` or an exponent (`1.0`, `1e-7`) and round-trips exactly.
        Lit::Float(value) if *value < 0.0 => format!("(-{:?})", -value),
        Lit::Float(value) => format!("{value:?}"),
        Lit::Bool(true) => "True".to_string(),
        Lit::Bool(false) => "False".to_string(),
        Lit::Str(text) => quoted(text),
        Lit::Char(byte) => super::escape::quoted_char(*byte),
    }
}

/// A string literal, escaped as the parser unescapes it (`syntax::escape`); characters beyond
/// ASCII as themselves.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    let mut previous = None;
    for ch in text.chars() {
        match u8::try_from(ch) {
            Ok(byte) if ch.is_ascii() => {
                super::escape::push_in_string(&mut out, previous, byte);
                previous = Some(byte);
            }
            _ => {
                out.push(ch);
                previous = None;
            }
        }
    }
    out.push('"');
    out
}

/// Where a type is printed, from the loosest position to the tightest (the levels of the
/// grammar: `ty`, `ty_table`, `ty_binder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TyLevel {
    /// Anywhere a full type may stand: a function type needs no parentheses.
    Full,
    /// A table's element: a table needs no parentheses.
    Table,
    /// A `for` or lambda binder's type, a table's index: a name, `_` or a tuple.
    Binder,
}

fn type_expr(ty: &TypeExpr, at: TyLevel) -> String {
    let (text, own) = match &ty.kind {
        TypeExprKind::Name(ident) => (ident.name.clone(), TyLevel::Binder),
        TypeExprKind::Hole => ("_".to_string(), TyLevel::Binder),
        TypeExprKind::App(name, args) => {
            let args: Vec<String> = args
                .iter()
                .map(|arg| type_expr(arg, TyLevel::Full))
                .collect();
            // Not an atom of the grammar (`ty_binder`): a binder's type needs parentheses.
            (
                format!("{}({})", name.name, args.join(", ")),
                TyLevel::Table,
            )
        }
        TypeExprKind::Range(kind, index) => (kind.text(&index.name), TyLevel::Binder),
        TypeExprKind::DepTable {
            binder,
            index,
            elem,
        } => {
            let index = type_expr(index, TyLevel::Full);
            let elem = type_expr(elem, TyLevel::Table);
            (
                format!("({}:{index}) => {elem}", binder.name),
                TyLevel::Table,
            )
        }
        // An integer, or an operator application in its parentheses (`(n + 1)`): what the
        // parser reads as a size.
        TypeExprKind::Size(size) => (
            Printer.expr(size, Ctx::Atom, TOP_CONTINUATION).text,
            TyLevel::Binder,
        ),
        TypeExprKind::Tuple(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|item| type_expr(item, TyLevel::Full))
                .collect();
            (format!("({})", items.join(", ")), TyLevel::Binder)
        }
        TypeExprKind::Fin(size) => {
            let size = Printer.expr(size, Ctx::Atom, TOP_CONTINUATION).text;
            // `Fin n` may stand where a table may; Dex writes `(Fin 3) => Float` anyway.
            (format!("Fin {size}"), TyLevel::Table)
        }
        TypeExprKind::Table(index, elem) => {
            let index = type_expr(index, TyLevel::Binder);
            let elem = type_expr(elem, TyLevel::Table);
            (format!("{index} => {elem}"), TyLevel::Table)
        }
        TypeExprKind::Given { binders, ty } => {
            let TypeExprKind::Fun(params, result, effects) = &ty.kind else {
                return type_expr(ty, at);
            };
            let mut items = vec![given(binders).trim_start().to_string()];
            items.extend(params.iter().map(|param| type_expr(param, TyLevel::Full)));
            let result = type_expr(result, TyLevel::Full);
            let row = effects
                .as_ref()
                .map_or(String::new(), |row| eff_row(row) + " ");
            (
                format!("({}) -> {row}{result}", items.join(", ")),
                TyLevel::Full,
            )
        }
        TypeExprKind::Fun(params, result, effects) => {
            let params = match params.as_slice() {
                // `(a, b) -> c` has two parameters; one tuple parameter is `((a, b)) -> c`.
                [param @ TypeExpr {
                    kind: TypeExprKind::Tuple(_),
                    ..
                }] => format!("({})", type_expr(param, TyLevel::Full)),
                [param] => type_expr(param, TyLevel::Binder),
                _ => {
                    let params: Vec<String> = params
                        .iter()
                        .map(|param| type_expr(param, TyLevel::Full))
                        .collect();
                    format!("({})", params.join(", "))
                }
            };
            let result = type_expr(result, TyLevel::Full);
            let row = effects
                .as_ref()
                .map_or(String::new(), |row| eff_row(row) + " ");
            (format!("{params} -> {row}{result}"), TyLevel::Full)
        }
    };
    if own < at {
        format!("({text})")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::{parse_code, parse_expr, split_chunks, ChunkKind, Span};

    fn parse(src: &str) -> CodeBlock {
        match parse_code(src, Span::new(0, src.len())) {
            Ok(block) => block,
            Err(err) => panic!("parse error in {src:?}: {err:?}"),
        }
    }

    /// `{:?}` of a tree without its spans.
    fn without_spans(debug: &str) -> String {
        const SPAN: &str = "Span { start: ";
        let mut out = String::with_capacity(debug.len());
        let mut rest = debug;
        while let Some(at) = rest.find(SPAN) {
            out.push_str(&rest[..at]);
            let after = &rest[at..];
            let end = after.find('}').map_or(after.len(), |close| close + 1);
            out.push_str("Span");
            rest = &after[end..];
        }
        out.push_str(rest);
        out
    }

    /// Prints `src`'s block, checks that the text is one chunk that parses back to the same
    /// tree (spans aside) and prints the same again, and returns it.
    #[track_caller]
    fn round_trip(src: &str) -> String {
        let block = parse(src);
        let printed = print_block(&block);
        let chunks = split_chunks(&printed);
        assert_eq!(chunks.len(), 1, "not one chunk:\n{printed}");
        let reparsed = match &chunks[0].kind {
            ChunkKind::Code(Ok(reparsed)) => reparsed.clone(),
            ChunkKind::Code(Err(err)) => {
                panic!("printed text does not parse: {err:?}\n{printed}")
            }
            other => panic!("printed text is a {other:?} chunk:\n{printed}"),
        };
        assert_eq!(
            without_spans(&format!("{:?}", reparsed)),
            without_spans(&format!("{:?}", block)),
            "the tree changed:\n{src}\n---\n{printed}"
        );
        assert_eq!(print_block(&reparsed), printed);
        printed
    }

    #[track_caller]
    fn check(src: &str, expected: &str) {
        assert_eq!(round_trip(src), expected, "from:\n{src}");
    }

    #[test]
    fn named_instances_print_and_parse_back() {
        check(
            "named-instance MaxMonoid : Monoid(Float)\n  mempty = -infinity\n  def (<>)(x, y) = max x y",
            "named-instance MaxMonoid : Monoid(Float)\n  mempty = (-infinity)\n  def (<>)(x, y) =\n    max x y",
        );
        check(
            "named-instance MinMonoid(a|Ord) -> Monoid(a)\n  mempty = highest",
            "named-instance MinMonoid(a: Type) -> Monoid(a) given (a|Ord)\n  mempty = highest",
        );
    }

    #[test]
    fn constraint_groups_and_effect_rows_print_and_parse_back() {
        check(
            "def f(x: a, w: Ref h a) -> {Accum h} () given (a, h) (Add a, am:AccumMonoid(h, a)) = w += x",
            "def f(x: a, w: Ref(h, a)) -> {Accum h} () given (a, h) (Add(a), am:AccumMonoid(h, a)) =\n  (w += x)",
        );
        check(
            "instance Shape(Pair a) given (a) (Add a)\n  def area(p) = 1.0",
            "instance Shape(Pair(a)) given (a) (Add(a))\n  def area(p) =\n    1.0",
        );
    }

    #[test]
    fn value_parameters_print_and_parse_back() {
        check(
            "struct Element(set:(Set a)) given (a|Ord) =\n  val: Nat",
            "struct Element(set:(Set(a))) given (a|Ord) =\n  val : Nat",
        );
        check(
            "def value(x: Element set) -> a given (a|Ord, set:Set a) = x.val",
            "def value(x: Element(set)) -> a given (a|Ord, set:(Set(a))) =\n  x.val",
        );
    }

    #[test]
    fn function_types_with_given_print_and_parse_back() {
        check(
            "f : (given (n|Ix), n=>Float) -> n=>Float = \\xs. xs",
            "f: (given (n|Ix), n => Float) -> n => Float = \\xs. xs",
        );
        check(
            "custom-linearization f f_lin",
            "custom-linearization f f_lin",
        );
    }

    #[test]
    fn print_groups_operators() {
        check("a + b * c", "(a + (b * c))");
        check("(a + b) * c - d / e", "(((a + b) * c) - (d / e))");
        check(":p -x * y", ":p ((-x) * y)");
        check(":p -f x", ":p (-f x)");
        check(":p - -3", ":p (-(-3))");
        check(":p x - -1.5", ":p (x - (-1.5))");
        check(
            ":p a < b && b <= c || not d",
            ":p (((a < b) && (b <= c)) || not d)",
        );
        check(":p (a < b) == c", ":p ((a < b) == c)");
        check(":p xs ~~ ys", ":p (xs ~~ ys)");
        check(
            ":p 2.0 .* m ** n **. v .** w",
            ":p ((((2.0 .* m) ** n) **. v) .** w)",
        );
        check(":p a != b", ":p (a != b)");
        check(":p a > b || a >= b", ":p ((a > b) || (a >= b))");
    }

    #[test]
    fn print_applications_and_postfix() {
        check(":p f x y", ":p f x y");
        check(":p f (g x) y[i]", ":p f (g x) y[i]");
        check(":p f $ g $ h x", ":p f (g (h x))");
        check(":p x `mod` 5", ":p mod x 5");
        check(":p f(x, y)", ":p f x y");
        check(":p split_key(n=2, key)", ":p split_key(n=2, key)");
        check(":p f(a, n=g x, b + 1)", ":p f(a, n=g x, (b + 1))");
        check(":p (f x)(n=2)", ":p f(x, n=2)");
        check(":p x[i, j] + x[i][j]", ":p (x[i, j] + x[i][j])");
        check(":p (f x)[i]", ":p (f x)[i]");
        check(":p m[i][f j, k + 1]", ":p m[i][f j, (k + 1)]");
        check(":p iota (Fin 5)", ":p iota (Fin 5)");
        check(":p size n", ":p size n");
        check(":p (\\x. x) 3", ":p (\\x. x) 3");
        check(":p f (-x)", ":p f (-x)");
    }

    #[test]
    fn print_atoms() {
        check(":p [1., 2.5, 1e-3, 3]", ":p [1.0, 2.5, 0.001, 3]");
        check(":p [1e-9, 2.5e30]", ":p [1e-9, 2.5e30]");
        check(":p []", ":p []");
        check(":p (1, True, False)", ":p (1, True, False)");
        check(":p ((a, b), [c])", ":p ((a, b), [c])");
        check(":p (f x, \\y. y)", ":p (f x, (\\y. y))");
        check(
            ":plot xs \"a \\\"label\\\" \\\\ x\"",
            ":plot xs \"a \\\"label\\\" \\\\ x\"",
        );
    }

    #[test]
    fn print_at_and_annotations() {
        check(":p (3 @ _)", ":p (3 @ _)");
        check(":p ordinal i + 1 @ Fin 5", ":p ((ordinal i + 1) @ Fin 5)");
        check(":p (x @ Fin (n + 1))", ":p (x @ Fin (n + 1))");
        check(":p (x :: Float)", ":p (x :: Float)");
        check(":p (xs :: (Fin 3) => Float)", ":p (xs :: (Fin 3) => Float)");
        // `::` is the loosest operator, and a lambda's body extends as far as it can.
        check(
            ":p (\\x. x :: Float -> Float)",
            ":p \\x. (x :: Float -> Float)",
        );
        check(
            ":p ((\\x. x) :: Float -> Float)",
            ":p ((\\x. x) :: Float -> Float)",
        );
        check(":p x + 1 :: Int", ":p ((x + 1) :: Int)");
        check(
            ":p (f :: (Float, Int) -> Float)",
            ":p (f :: (Float, Int) -> Float)",
        );
        check(
            ":p (f :: ((Float, Int)) -> Float)",
            ":p (f :: ((Float, Int)) -> Float)",
        );
        check(
            ":p (f :: (n => Float) -> m => n => Float)",
            ":p (f :: (n => Float) -> m => n => Float)",
        );
        check(
            ":p (g :: (a -> b) -> (Fin 2, Fin 3) => _)",
            ":p (g :: (a -> b) -> (Fin 2, Fin 3) => _)",
        );
        check(":p (x :: Fin (size m))", ":p (x :: Fin (size m))");
        check(":p (x :: Fin (y[i]))", ":p (x :: Fin (y[i]))");
        check(":p (x :: n => (a -> b))", ":p (x :: n => (a -> b))");
        check(":p (x :: (n => a) => b)", ":p (x :: (n => a) => b)");
    }

    #[test]
    fn print_lambdas_and_fors() {
        check(":p \\x y. x + y", ":p \\x y. (x + y)");
        check(":p \\x:Float. x", ":p \\x:Float. x");
        check(":p \\(a, b) [c, d] _. a", ":p \\(a, b) [c, d] _. a");
        check(
            ":p \\x:(Fin 3 => Float) (p, q):(Float, Int). x",
            ":p \\x:((Fin 3) => Float) (p, q):(Float, Int). x",
        );
        check(":p for i. x[i]", ":p for i. x[i]");
        check(
            ":p for i:(Fin 3) j. x[i] * y[j]",
            ":p for i:(Fin 3) j. (x[i] * y[j])",
        );
        check(":p for i:n j:m. 0.0", ":p for i:n j:m. 0.0");
        check(":p sum for i. x[i]", ":p sum for i. x[i]");
        check(":p sum (for i. x[i]) + 1.0", ":p (sum (for i. x[i]) + 1.0)");
        check(
            ":p fold 0.0 \\i c. c + x[i]",
            ":p fold 0.0 \\i c. (c + x[i])",
        );
        check(
            ":p fold(0.0, \\i:n c. c + 1.0)",
            ":p fold 0.0 \\i:n c. (c + 1.0)",
        );
        check(":p \\x. \\y. x", ":p \\x. \\y. x");
        check(":p f (\\x. x) y", ":p f (\\x. x) y");
    }

    #[test]
    fn print_ifs() {
        check(":p if c then a else b", ":p if c then a else b");
        check(
            ":p if a < b then f x else g $ y",
            ":p if (a < b) then f x else g y",
        );
        check(
            ":p if c then if d then 1 else 2 else 3",
            ":p if c then if d then 1 else 2 else 3",
        );
        check(
            ":p (if c then 1 else 2) + 3",
            ":p ((if c then 1 else 2) + 3)",
        );
        check(":p f (if c then 1 else 2)", ":p f (if c then 1 else 2)");
    }

    #[test]
    fn print_let_blocks() {
        check(
            ":p\n  (a, b) = (2.0, 3)\n  a * i_to_f b\n",
            ":p\n  (a, b) = (2.0, 3)\n  (a * i_to_f b)",
        );
        check(
            "x = for i.\n  y = i\n  for j.\n    z = j\n    z + y\n",
            "x = for i.\n  y = i\n  for j.\n    z = j\n    (z + y)",
        );
        check(
            ":p fold(0.0, \\i c.\n    d = c + 1.0\n    d\n  )",
            ":p fold 0.0 \\i c.\n  d = (c + 1.0)\n  d",
        );
        check(
            ":p (\\x.\n    y = x\n    y\n  , 3)",
            ":p\n  ((\\x.\n    y = x\n    y\n  ), 3)",
        );
        check(
            ":p grad (\\p.\n    (a, b) = p\n    sum for i. a[i] * b[i]) ([1., 2.], [3., 4.])\n",
            ":p\n  grad (\\p.\n    (a, b) = p\n    sum for i. (a[i] * b[i])\n  ) ([1.0, 2.0], [3.0, 4.0])",
        );
        check(
            "def f(x) =\n  y : Float = x\n  def g(z) = z + y\n  [k1, k2] = split_key key\n  _ = 3\n  g y\n",
            "def f(x) =\n  y: Float = x\n  def g(z) =\n    (z + y)\n  [k1, k2] = split_key key\n  _ = 3\n  g y",
        );
    }

    #[test]
    fn print_multi_line_ifs() {
        check(
            "x = if c\n  then\n    y = 1\n    y\n  else\n    z = 2\n    z\n",
            "x =\n  if c then\n    y = 1\n    y\n  else\n    z = 2\n    z",
        );
        check(
            "x = if c then\n  y = 1\n  y\n  else 2\n",
            "x =\n  if c then\n    y = 1\n    y\n  else 2",
        );
        check(
            ":p if c then 1 else\n    y = 2\n    y\n",
            ":p if c then 1 else\n  y = 2\n  y",
        );
        check(
            "def f(x) =\n  a = if x then\n      b = 1\n      b\n    else 2\n  (if x then\n      b = 1\n      b\n    else 2) + a\n",
            "def f(x) =\n  a = if x then\n    b = 1\n    b\n  else 2\n  ((if x then\n    b = 1\n    b\n  else 2) + a)",
        );
        check(
            ":p if (\\y.\n      z = y\n      z) 1 then 2 else 3",
            ":p\n  if (\\y.\n    z = y\n    z\n  ) 1 then 2 else 3",
        );
    }

    #[test]
    fn print_bare_expressions_over_lines() {
        check(
            "f (\\x.\n    y = x\n    y\n  ) 3",
            "f (\\x.\n    y = x\n    y\n  ) 3",
        );
        check(
            "if c then\n    y = 1\n    y\n  else 2",
            "if c then\n    y = 1\n    y\n  else 2",
        );
        check("for i.\n    y = i\n    y", "for i.\n  y = i\n  y");
    }

    #[test]
    fn print_declarations() {
        check(
            "def f(x: Float, y: n=>Float) -> Float given (n|Ix, m) =\n  x",
            "def f(x: Float, y: n => Float) -> Float given (n|Ix, m) =\n  x",
        );
        check("def g() = 1", "def g() =\n  1");
        check(
            "def h((a, b): (Float, Float), [k]) -> (Fin 2, Fin 3) => Float =\n  a",
            "def h((a, b): (Float, Float), [k]) -> (Fin 2, Fin 3) => Float =\n  a",
        );
        check(
            "def k(f: Float -> Float, x) -> Float = f x",
            "def k(f: Float -> Float, x) -> Float =\n  f x",
        );
        check("x = 1", "x = 1");
        check("x : Nat = 1", "x: Nat = 1");
        check("Height = Fin 10", "Height = Fin 10");
        check("(a, b) = (1, 2)", "(a, b) = (1, 2)");
        check(":t sum", ":t sum");
        check(":plotgrad f", ":plotgrad f");
        check(":table xs", ":table xs");
        check(":stages x + 1", ":stages (x + 1)");
        check("import plot", "import plot");
        check("sum xs", "sum xs");
        check(
            "%passes parse typed\n%time\n%bench \"my \\\"b\\\"\"\n%strict\n:p 1",
            "%passes parse typed\n%time\n%bench \"my \\\"b\\\"\"\n%strict\n:p 1",
        );
    }

    #[test]
    fn print_sample_programs() {
        // Programs in the style of `examples/`, each printed, parsed back and compared.
        let programs = [
            "def mmul(x: n=>m=>Float, y: m=>k=>Float) -> n=>k=>Float =\n  for i j. sum for l. x[i, l] * y[l, j]",
            "def softmax'(x: n=>Float) -> n=>Float =\n  m = maximum x\n  e = for i. exp (x[i] - m)\n  s = sum e\n  for i. e[i] / s",
            ":p\n  key = new_key 0\n  [k1, k2] = split_key key\n  xs = for i:(Fin 4). randn (ixkey k1 i)\n  (mean xs, std xs)",
            ":p scan(0.0, \\i:(Fin 5) c.\n    c' = c + n_to_f (ordinal i)\n    (c', c' * 2.0))",
            ":p apply_n(3, 1.0, \\x. x * 2.0)",
            "%passes parse typed core bot\n:p for i:(Fin 3). sum for j:(Fin 4). n_to_f (ordinal i * ordinal j)",
            ":p jacobian(\\x. for i. x[i] * x[i], [1., 2., 3.])",
            "def relu(x: Float) -> Float = if x > 0.0 then x else 0.0",
            ":p select(x > 0.0, x, -x)",
            ":p for i. xs[(ordinal i + 1) @ _]",
        ];
        for program in programs {
            round_trip(program);
        }
    }

    #[test]
    fn print_expr_parses_back() {
        let sources = [
            "a + b * c",
            "f x $ \\y.\n  z = y\n  z",
            "if c then\n  y = 1\n  y\nelse 2",
            "for i j:(Fin 3). x[i, j]",
            "(x :: Float) @ Fin 3",
            "f(n=2, x)",
        ];
        for src in sources {
            let expr = parse_expr(src).unwrap_or_else(|err| panic!("{src:?}: {err:?}"));
            let printed = print_expr(&expr);
            let reparsed =
                parse_expr(&printed).unwrap_or_else(|err| panic!("{printed:?}: {err:?}"));
            assert_eq!(
                without_spans(&format!("{reparsed:?}")),
                without_spans(&format!("{expr:?}")),
                "{printed}"
            );
        }
        let src = ":p\n  y = 1\n  y + 2";
        let ExprKind::Block { .. } = &expect_command(&parse(src)).kind else {
            panic!("expected a block")
        };
        assert_eq!(print_expr(expect_command(&parse(src))), "y = 1\n(y + 2)");
    }

    fn expect_command(block: &CodeBlock) -> &Expr {
        match &block.decl {
            Decl::Command { expr, .. } => expr,
            other => panic!("expected a command, got {other:?}"),
        }
    }

    /// Random trees of the shapes the parser produces (a let-block only as a body, tuples of
    /// two or more items, ...).
    mod random {
        use proptest::prelude::*;
        use proptest::strategy::BoxedStrategy;

        use super::super::*;
        use crate::syntax::Span;

        /// `{State h, IO|eff}` and its parts.
        fn eff_row() -> BoxedStrategy<EffRowExpr> {
            let effect = prop_oneof![
                (ident(&["State", "Accum", "Read"]), ident(&["h", "h2"]))
                    .prop_map(|(name, region)| (name, Some(region))),
                ident(&["IO", "Except"]).prop_map(|name| (name, None)),
            ];
            (
                prop::collection::vec(effect, 0..3),
                prop::option::of(ident(&["eff"])),
            )
                .prop_map(|(effects, rest)| EffRowExpr {
                    effects,
                    rest,
                    span: Span::default(),
                })
                .boxed()
        }

        fn ident(pool: &'static [&'static str]) -> BoxedStrategy<Ident> {
            prop::sample::select(pool)
                .prop_map(|name| Ident {
                    name: name.to_string(),
                    span: Span::default(),
                })
                .boxed()
        }

        fn name() -> BoxedStrategy<Ident> {
            ident(&["x", "y", "f", "n'", "size", "Fin"])
        }

        fn expr_of(kind: ExprKind) -> Expr {
            Expr {
                kind,
                span: Span::default(),
            }
        }

        fn leaf() -> BoxedStrategy<Expr> {
            prop_oneof![
                name().prop_map(|name| expr_of(ExprKind::Var(name))),
                any::<u64>().prop_map(|value| expr_of(ExprKind::Lit(Lit::Int(value)))),
                prop_oneof![0.0..1e6f64, Just(1e-9), Just(2.5e30)]
                    .prop_map(|value| expr_of(ExprKind::Lit(Lit::Float(value)))),
                any::<bool>().prop_map(|value| expr_of(ExprKind::Lit(Lit::Bool(value)))),
                prop::sample::select(&["", "a \"b\" \\ c", "tab\tnew\nline"][..])
                    .prop_map(|text| expr_of(ExprKind::Lit(Lit::Str(text.to_string())))),
                prop::sample::select(&[b'a', b'\'', b'\\', b'\n', b' '][..])
                    .prop_map(|byte| expr_of(ExprKind::Lit(Lit::Char(byte)))),
            ]
            .boxed()
        }

        /// A literal pattern, as a `case` alternative may have one.
        fn literal_pattern() -> BoxedStrategy<Pattern> {
            let lit = prop_oneof![
                (0u64..1000).prop_map(Lit::Int),
                prop_oneof![Just(0.5), Just(2.0), Just(1e-3)].prop_map(Lit::Float),
                any::<bool>().prop_map(Lit::Bool),
                Just(Lit::Char(b'x')),
            ];
            (lit, any::<bool>())
                .prop_map(|(lit, negated)| {
                    let negated = negated && matches!(lit, Lit::Int(_) | Lit::Float(_));
                    Pattern::Lit {
                        lit,
                        negated,
                        span: Span::default(),
                    }
                })
                .boxed()
        }

        fn pattern() -> BoxedStrategy<Pattern> {
            let leaf = prop_oneof![
                ident(&["x", "y", "k'"]).prop_map(Pattern::Var),
                Just(Pattern::Wildcard(Span::default())),
            ];
            leaf.prop_recursive(2, 6, 3, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 2..4)
                        .prop_map(|items| Pattern::Tuple(items, Span::default())),
                    prop::collection::vec(inner.clone(), 0..3)
                        .prop_map(|items| Pattern::Table(items, Span::default())),
                    (ident(&["Just", "MkP"]), prop::collection::vec(inner, 1..3)).prop_map(
                        |(name, args)| Pattern::Con {
                            name,
                            args,
                            span: Span::default(),
                        }
                    ),
                ]
            })
            .boxed()
        }

        fn type_expr() -> BoxedStrategy<TypeExpr> {
            let ty_of = |kind| TypeExpr {
                kind,
                span: Span::default(),
            };
            let leaf = prop_oneof![
                ident(&["Float", "n", "a'"]).prop_map(move |name| ty_of(TypeExprKind::Name(name))),
                Just(ty_of(TypeExprKind::Hole)),
                leaf().prop_map(move |size| ty_of(TypeExprKind::Fin(Box::new(size)))),
            ];
            leaf.prop_recursive(3, 12, 3, move |inner| {
                prop_oneof![
                    (inner.clone(), inner.clone()).prop_map(move |(index, elem)| ty_of(
                        TypeExprKind::Table(Box::new(index), Box::new(elem))
                    )),
                    prop::collection::vec(inner.clone(), 2..4)
                        .prop_map(move |items| ty_of(TypeExprKind::Tuple(items))),
                    (
                        prop::collection::vec(inner.clone(), 1..3),
                        inner.clone(),
                        prop::option::of(eff_row())
                    )
                        .prop_map(move |(params, result, row)| ty_of(
                            TypeExprKind::Fun(params, Box::new(result), row)
                        )),
                    (
                        ident(&["Maybe", "Pair"]),
                        prop::collection::vec(
                            prop_oneof![
                                3 => inner,
                                1 => (0u64..100).prop_map(move |n| ty_of(TypeExprKind::Size(
                                    Box::new(expr_of(ExprKind::Lit(Lit::Int(n))))
                                ))),
                            ],
                            1..3
                        )
                    )
                        .prop_map(move |(name, args)| ty_of(TypeExprKind::App(name, args))),
                ]
            })
            .boxed()
        }

        fn param() -> BoxedStrategy<Param> {
            (pattern(), prop::option::of(type_expr()))
                .prop_map(|(pat, ty)| Param {
                    pat,
                    ty,
                    span: Span::default(),
                })
                .boxed()
        }

        fn fun_def(body: BoxedStrategy<Expr>) -> BoxedStrategy<FunDef> {
            let given = (
                ident(&["n", "m"]),
                prop::collection::vec(ident(&["Ix", "Add"]), 0..3),
            )
                .prop_map(|(name, classes)| GivenBinder {
                    name,
                    classes,
                    kind: None,
                });
            (
                ident(&["g", "h'"]),
                prop::collection::vec(param(), 0..3),
                prop::option::of((type_expr(), prop::option::of(eff_row()))),
                prop::collection::vec(given, 0..3),
                body,
            )
                .prop_map(|(name, params, ret, given, body)| FunDef {
                    name,
                    params,
                    effects: ret.as_ref().and_then(|(_, row)| row.clone()),
                    ret: ret.map(|(ty, _)| ty),
                    given,
                    constraints: Vec::new(),
                    body,
                    span: Span::default(),
                })
                .boxed()
        }

        fn let_binding(value: BoxedStrategy<Expr>) -> BoxedStrategy<LetBinding> {
            (pattern(), prop::option::of(type_expr()), value)
                .prop_map(|(pat, ty, value)| LetBinding {
                    pat,
                    ty,
                    value,
                    span: Span::default(),
                })
                .boxed()
        }

        /// An expression or, where the parser allows one (a body), a let-block.
        fn body(expr: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
            let stmt = prop_oneof![
                3 => let_binding(expr.clone()).prop_map(Stmt::Let),
                1 => fun_def(expr.clone()).prop_map(Stmt::Def),
            ];
            let block =
                (prop::collection::vec(stmt, 1..3), expr.clone()).prop_map(|(stmts, result)| {
                    expr_of(ExprKind::Block {
                        stmts,
                        result: Box::new(result),
                    })
                });
            prop_oneof![2 => expr, 1 => block].boxed()
        }

        pub fn expr() -> BoxedStrategy<Expr> {
            leaf()
                .prop_recursive(4, 24, 3, |inner| {
                    let boxed = |expr: Expr| Box::new(expr);
                    let op = prop::sample::select(
                        &[
                            BinOp::Add,
                            BinOp::Sub,
                            BinOp::Mul,
                            BinOp::Div,
                            BinOp::Scale,
                            BinOp::MatMul,
                            BinOp::MatVec,
                            BinOp::VecMat,
                            BinOp::Eq,
                            BinOp::Ne,
                            BinOp::Lt,
                            BinOp::Gt,
                            BinOp::Le,
                            BinOp::Ge,
                            BinOp::And,
                            BinOp::Or,
                            BinOp::Approx,
                        ][..],
                    );
                    let binder = (name(), prop::option::of(type_expr()))
                        .prop_map(|(name, ty)| ForBinder { name, ty });
                    prop_oneof![
                        (prop::collection::vec(param(), 1..3), body(inner.clone())).prop_map(
                            move |(params, body)| expr_of(ExprKind::Lam {
                                params,
                                body: boxed(body)
                            })
                        ),
                        (prop::collection::vec(binder, 1..3), body(inner.clone())).prop_map(
                            move |(binders, body)| expr_of(ExprKind::For {
                                binders,
                                body: boxed(body)
                            })
                        ),
                        (inner.clone(), body(inner.clone()), body(inner.clone())).prop_map(
                            move |(cond, then_branch, else_branch)| expr_of(ExprKind::If {
                                cond: boxed(cond),
                                then_branch: boxed(then_branch),
                                else_branch: boxed(else_branch),
                            })
                        ),
                        (
                            inner.clone(),
                            inner.clone(),
                            prop::option::weighted(0.2, ident(&["n", "key"]))
                        )
                            .prop_map(move |(func, arg, name)| expr_of(
                                ExprKind::App {
                                    func: boxed(func),
                                    arg: boxed(arg),
                                    name
                                }
                            )),
                        (op, inner.clone(), inner.clone()).prop_map(move |(op, lhs, rhs)| {
                            expr_of(ExprKind::BinOp {
                                op,
                                lhs: boxed(lhs),
                                rhs: boxed(rhs),
                            })
                        }),
                        inner
                            .clone()
                            .prop_map(move |inner| expr_of(ExprKind::Neg(boxed(inner)))),
                        (inner.clone(), prop::collection::vec(inner.clone(), 1..3)).prop_map(
                            move |(base, indices)| expr_of(ExprKind::Index {
                                base: boxed(base),
                                indices
                            })
                        ),
                        prop::collection::vec(inner.clone(), 2..4)
                            .prop_map(|items| expr_of(ExprKind::Tuple(items))),
                        prop::collection::vec(inner.clone(), 0..3)
                            .prop_map(|items| Expr::table(items, Span::default())),
                        (inner.clone(), type_expr()).prop_map(move |(value, ty)| expr_of(
                            ExprKind::At {
                                value: boxed(value),
                                ty
                            }
                        )),
                        (inner.clone(), type_expr()).prop_map(move |(expr, ty)| expr_of(
                            ExprKind::Annot {
                                expr: boxed(expr),
                                ty
                            }
                        )),
                        (inner.clone(), ident(&["x", "0", "pos"])).prop_map(
                            move |(base, field)| {
                                expr_of(ExprKind::Field {
                                    base: boxed(base),
                                    field,
                                })
                            }
                        ),
                        (
                            ident(&["./", "<>", "+>>", "&&&"]),
                            inner.clone(),
                            inner.clone()
                        )
                            .prop_map(move |(op, lhs, rhs)| expr_of(
                                ExprKind::UserOp {
                                    op,
                                    lhs: boxed(lhs),
                                    rhs: boxed(rhs),
                                }
                            )),
                        (inner.clone(), prop::collection::vec(case_alt(inner), 1..3)).prop_map(
                            move |(scrutinee, alts)| expr_of(ExprKind::Case {
                                scrutinee: boxed(scrutinee),
                                alts,
                            })
                        ),
                    ]
                })
                .boxed()
        }

        fn case_alt(expr: BoxedStrategy<Expr>) -> BoxedStrategy<CaseAlt> {
            (
                prop_oneof![3 => pattern(), 1 => literal_pattern()],
                body(expr),
            )
                .prop_map(|(pat, body)| CaseAlt {
                    pat,
                    body,
                    span: Span::default(),
                })
                .boxed()
        }

        fn type_param() -> BoxedStrategy<TypeParam> {
            let kind = prop::option::of(ident(&["Type", "Nat"]).prop_map(|name| TypeExpr {
                kind: TypeExprKind::Name(name),
                span: Span::default(),
            }));
            (
                ident(&["a", "n"]),
                kind,
                prop::collection::vec(ident(&["Ix", "Add"]), 0..3),
            )
                .prop_map(|(name, kind, classes)| TypeParam {
                    name,
                    kind,
                    classes,
                })
                .boxed()
        }

        fn data_decl() -> BoxedStrategy<DataDecl> {
            let field = (prop::option::of(ident(&["x", "pos"])), type_expr())
                .prop_map(|(name, ty)| FieldDecl { name, ty });
            let con = (
                ident(&["A", "Bb"]),
                prop::collection::vec(field.clone(), 0..3),
            )
                .prop_map(|(name, fields)| ConDecl {
                    name,
                    fields,
                    span: Span::default(),
                });
            let struct_fields = prop::collection::vec(
                (ident(&["x", "pos"]), type_expr()).prop_map(|(name, ty)| FieldDecl {
                    name: Some(name),
                    ty,
                }),
                1..3,
            );
            let shape = prop_oneof![
                struct_fields.prop_map(|fields| (DataKind::Struct, vec![fields])),
                prop::collection::vec(con.clone(), 1..3).prop_map(|cons| (
                    DataKind::Data,
                    cons.into_iter().map(|con| con.fields).collect()
                )),
                (1usize..3).prop_map(|n| (DataKind::Enum, vec![Vec::new(); n])),
            ];
            (
                ident(&["P", "Shape"]),
                prop::collection::vec(type_param(), 0..2),
                shape,
            )
                .prop_map(|(name, params, (kind, con_fields))| DataDecl {
                    kind,
                    params,
                    given: Vec::new(),
                    cons: con_fields
                        .into_iter()
                        .enumerate()
                        .map(|(k, fields)| ConDecl {
                            name: match kind {
                                DataKind::Struct => name.clone(),
                                _ => Ident {
                                    name: format!("C{k}"),
                                    span: Span::default(),
                                },
                            },
                            fields,
                            span: Span::default(),
                        })
                        .collect(),
                    name,
                    methods: Vec::new(),
                    span: Span::default(),
                })
                .boxed()
        }

        fn interface_decl() -> BoxedStrategy<InterfaceDecl> {
            let sig =
                (ident(&["area", "=="]), type_expr()).prop_map(|(name, ty)| MethodSig { name, ty });
            (
                ident(&["Sh"]),
                type_param(),
                prop::collection::vec(sig, 1..3),
                prop::collection::vec(fun_def(body(expr())), 0..2),
            )
                .prop_map(|(name, param, methods, defaults)| InterfaceDecl {
                    name,
                    params: vec![param],
                    methods,
                    defaults,
                    span: Span::default(),
                })
                .boxed()
        }

        fn instance_decl() -> BoxedStrategy<InstanceDecl> {
            let given = (
                ident(&["a", "b"]),
                prop::collection::vec(ident(&["Add"]), 0..2),
            )
                .prop_map(|(name, classes)| GivenBinder {
                    name,
                    classes,
                    kind: None,
                });
            let item = prop_oneof![
                fun_def(body(expr())).prop_map(InstanceItem::Def),
                (ident(&["zero", "<>"]), body(expr())).prop_map(|(name, value)| {
                    InstanceItem::Let(LetBinding {
                        pat: Pattern::Var(name),
                        ty: None,
                        value,
                        span: Span::default(),
                    })
                }),
            ];
            let named = prop::option::of((
                ident(&["MaxMonoid", "Hull"]),
                prop::collection::vec(param(), 0..2),
            ));
            (
                named,
                ident(&["Add", "Sh"]),
                type_expr(),
                prop::collection::vec(given, 0..2),
                prop::collection::vec(item, 0..3),
            )
                .prop_map(|(named, class, arg, given, methods)| InstanceDecl {
                    named,
                    class,
                    args: vec![arg],
                    given,
                    constraints: Vec::new(),
                    methods,
                    span: Span::default(),
                })
                .boxed()
        }

        fn type_alias() -> BoxedStrategy<TypeAlias> {
            let type_fn_param =
                (ident(&["n", "a"]), ident(&["Nat", "Type"])).prop_map(|(name, kind)| Param {
                    pat: Pattern::Var(name),
                    ty: Some(TypeExpr {
                        kind: TypeExprKind::Name(kind),
                        span: Span::default(),
                    }),
                    span: Span::default(),
                });
            // An alias without annotation is read as one only where its type is no expression
            // (a table or function type).
            let not_expr = (type_expr(), type_expr()).prop_map(|(index, elem)| TypeExpr {
                kind: TypeExprKind::Table(Box::new(index), Box::new(elem)),
                span: Span::default(),
            });
            prop_oneof![
                (
                    ident(&["V", "Img"]),
                    prop::collection::vec(type_fn_param, 1..3),
                    type_expr()
                )
                    .prop_map(|(name, params, ty)| TypeAlias {
                        name,
                        params: Some(params),
                        annotated: false,
                        ty,
                        span: Span::default(),
                    }),
                (ident(&["V", "Img"]), type_expr()).prop_map(|(name, ty)| TypeAlias {
                    name,
                    params: None,
                    annotated: true,
                    ty,
                    span: Span::default(),
                }),
                (ident(&["V", "Img"]), not_expr).prop_map(|(name, ty)| TypeAlias {
                    name,
                    params: None,
                    annotated: false,
                    ty,
                    span: Span::default(),
                }),
            ]
            .boxed()
        }

        pub fn code_block() -> BoxedStrategy<CodeBlock> {
            let command = prop::sample::select(
                &[
                    Command::Print,
                    Command::Type,
                    Command::Plot,
                    Command::PlotGrad,
                    Command::Table,
                    Command::Html,
                    Command::Stages,
                    Command::Help,
                    Command::Export,
                ][..],
            );
            let decl = prop_oneof![
                fun_def(body(expr())).prop_map(Decl::Def),
                let_binding(body(expr())).prop_map(Decl::Let),
                (command, body(expr())).prop_map(|(command, expr)| Decl::Command {
                    command,
                    expr,
                    bare: false
                }),
                expr().prop_map(|expr| Decl::Command {
                    command: Command::Print,
                    expr,
                    bare: true
                }),
                ident(&["plot"]).prop_map(Decl::Import),
                data_decl().prop_map(Decl::Data),
                interface_decl().prop_map(Decl::Interface),
                instance_decl().prop_map(Decl::Instance),
                type_alias().prop_map(Decl::TypeAlias),
            ];
            let pragma = prop_oneof![
                Just(Pragma::Time),
                Just(Pragma::Strict),
                Just(Pragma::NoInline),
                Just(Pragma::Bench("b \"1\"".to_string())),
                prop::collection::vec(ident(&["parse", "typed"]), 1..3).prop_map(Pragma::Passes),
            ];
            (prop::collection::vec(pragma, 0..2), decl)
                .prop_map(|(pragmas, decl)| CodeBlock {
                    pragmas,
                    decl,
                    span: Span::default(),
                })
                .boxed()
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 400,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x9e1d),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        #[test]
        fn print_random_blocks_parse_back(block in random::code_block()) {
            let printed = print_block(&block);
            let chunks = split_chunks(&printed);
            proptest::prop_assert_eq!(chunks.len(), 1, "not one chunk:\n{}", printed);
            let reparsed = match &chunks[0].kind {
                ChunkKind::Code(Ok(reparsed)) => reparsed.clone(),
                other => panic!("{other:?}\n{printed}"),
            };
            proptest::prop_assert_eq!(
                without_spans(&format!("{reparsed:?}")),
                without_spans(&format!("{block:?}")),
                "{}",
                printed
            );
        }

        #[test]
        fn print_random_exprs_parse_back(expr in random::expr()) {
            let printed = print_expr(&expr);
            let reparsed = match parse_expr(&printed) {
                Ok(reparsed) => reparsed,
                Err(err) => panic!("{err:?}\n{printed}"),
            };
            proptest::prop_assert_eq!(
                without_spans(&format!("{reparsed:?}")),
                without_spans(&format!("{expr:?}")),
                "{}",
                printed
            );
        }
    }
}

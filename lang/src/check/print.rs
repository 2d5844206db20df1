//! Printing the typed program: the `typed` stage of `%passes` (docs/language.md).
//!
//! The text is surface-like and indented like source, with the type of every binder:
//! `\(x: Float32).`, `for (i: Fin 4).`, `x: ((Fin 3) => Float32) = …`, `(a, b): (Float32, Nat)`.
//! The checker's single-binder lambdas and `for`s are shown with one head each
//! (`for (i: Fin 4) (j: Fin 3).`). Operators are the built-ins they became, infix when applied
//! to two arguments (`(x + y)`); other built-ins go by their name (`n_to_f`), definitions with
//! their instantiation (`dot@[Fin 3]`). A numeric literal carries its type (`(3: Nat)`) unless
//! the type is already shown around it: the value of a binding, the whole program, an item of
//! such a tuple or table, `3 @ T`. The result type comes first, on a line `: T`.
//!
//! Names: a local bound by a pattern is shown with the pattern's name; a `for` index (which
//! has no name in the typed program) and any other local with the caller's `names`.
//! Types are shown with their `Display` (Dex syntax); an unsolved variable shows as `?3`.

use std::collections::HashMap;

use super::builtins::Builtin;
use super::typed::{DefInfo, TExpr, TKind, TPat, TStmt};
use super::types::{LocalId, Ty};
use crate::syntax::ast::Lit;
use crate::syntax::print::{close, comma_list, numbers_text, spaces, Out};

/// Prints a typed expression: a line `: T` with its type, then the expression.
pub fn print_typed(expr: &TExpr, names: &dyn Fn(LocalId) -> String) -> String {
    let mut bound = HashMap::new();
    collect_pattern_names(expr, &mut bound);
    let printer = Printer { names, bound };
    let text = match &expr.kind {
        TKind::Block { stmts, result } => printer.block_lines(stmts, result, 0),
        _ => printer.expr(expr, Ctx::Expr, true, 0).text,
    };
    format!(": {}\n{text}", expr.ty)
}

/// Indentation per nested block.
const STEP: usize = 2;

/// Where an expression is printed, from the loosest position to the tightest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ctx {
    /// Extends to the end of the enclosing construct (a body): a lambda, `for` or `if` needs no
    /// parentheses, nor does a trailing lambda or `for` argument.
    Expr,
    /// An operand of an infix operator or `@`, an `if` condition, an item of a tuple, table or
    /// index: an application is fine.
    Operand,
    /// An argument of an application, the base of an index: atoms only.
    Arg,
}

/// The names that patterns give to locals, in `expr` and the local definitions in it.
fn collect_pattern_names(expr: &TExpr, bound: &mut HashMap<LocalId, String>) {
    for pat in expr.own_patterns() {
        pat.for_each_var(&mut |id, name| {
            bound.insert(id, name.to_string());
        });
    }
    for child in expr.children() {
        collect_pattern_names(child, bound);
    }
}

fn pattern(pat: &TPat) -> String {
    let items = |items: &[TPat]| {
        let items: Vec<String> = items.iter().map(pattern).collect();
        items.join(", ")
    };
    match pat {
        TPat::Var(_, name) => name.clone(),
        TPat::Tuple(pats) => format!("({})", items(pats)),
        TPat::Table(pats) => format!("[{}]", items(pats)),
        TPat::Wild => "_".to_string(),
        TPat::Con { name, args, .. } if args.is_empty() => name.clone(),
        TPat::Con { name, args, .. } => format!("{name}({})", items(args)),
        TPat::Lit { lit, negated } => {
            let sign = if *negated { "-" } else { "" };
            format!("{sign}{}", literal(lit))
        }
    }
}

/// A binder with its type: `(x: Float32)`, `((a, b): (Float32, Nat))`.
fn binder(name: &str, ty: Option<&Ty>) -> String {
    match ty {
        Some(ty) => format!("({name}: {ty})"),
        None => format!("({name}: ?)"),
    }
}

/// A type where an atom is expected (an argument): `n`, `(Fin 5)`, `((Fin 3) => Float32)`.
fn type_atom(ty: &Ty) -> String {
    let text = ty.to_string();
    if !text.contains(' ') || is_wrapped(&text) {
        text
    } else {
        format!("({text})")
    }
}

/// Whether `text` is one parenthesised group: `(a, b)`, not `(a) => b`.
fn is_wrapped(text: &str) -> bool {
    if !text.starts_with('(') {
        return false;
    }
    let mut depth = 0usize;
    for (at, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return at + 1 == text.len();
                }
            }
            _ => {}
        }
    }
    false
}

/// The symbol of a built-in shown infix when applied to two arguments.
fn infix_symbol(builtin: Builtin) -> Option<&'static str> {
    Some(match builtin {
        Builtin::Prim(prim) => return prim.signature().infix,
        Builtin::Approx => "~~",
        Builtin::Scale => ".*",
        _ => return None,
    })
}

/// The name of a built-in: an operator in parentheses (`(+)`), a primitive by its name, any
/// other by the name the source calls it (`n_to_f`, `from_ordinal`).
fn builtin_name(builtin: Builtin) -> String {
    if let Some(symbol) = infix_symbol(builtin) {
        return format!("({symbol})");
    }
    if let Builtin::Prim(prim) = builtin {
        return prim.name();
    }
    Builtin::names()
        .find(|name| Builtin::lookup(name) == Some(builtin))
        .map_or_else(|| format!("{builtin:?}"), |name| name.to_string())
}

fn literal(lit: &Lit) -> String {
    match lit {
        Lit::Int(value) => value.to_string(),
        Lit::Float(value) => format!("{value:?}"),
        Lit::Bool(true) => "True".to_string(),
        Lit::Bool(false) => "False".to_string(),
        Lit::Str(text) => format!("{text:?}"),
        Lit::Char(byte) => format!("{:?}", *byte as char),
    }
}

/// The type variables of a definition, by the names its type gives them: `[n, t3]`.
fn def_vars(def: &DefInfo) -> String {
    if def.vars.is_empty() {
        return String::new();
    }
    let mut named = Vec::new();
    def.ty.any(&mut |ty| {
        if let Ty::Rigid(rigid, name) = ty {
            named.push((*rigid, name.clone()));
        }
        false
    });
    let vars: Vec<String> = def
        .vars
        .iter()
        .map(|var| {
            named
                .iter()
                .find(|(rigid, _)| rigid == var)
                .map_or_else(|| format!("t{}", var.0), |(_, name)| name.clone())
        })
        .collect();
    format!("[{}]", vars.join(", "))
}

/// How tightly an expression binds as printed (the tightest `Ctx` it can stand in).
fn level(expr: &TExpr) -> Ctx {
    match &expr.kind {
        TKind::Local(_)
        | TKind::Global(_)
        | TKind::GivenValue(..)
        | TKind::Def { .. }
        | TKind::Builtin(_)
        | TKind::Lit(_)
        | TKind::Index { .. }
        | TKind::Tuple(_)
        | TKind::Table(_)
        | TKind::Numbers(_)
        | TKind::At(_)
        | TKind::TypeArg
        | TKind::Con { .. }
        | TKind::Method { .. }
        | TKind::Field { .. } => Ctx::Arg,
        TKind::App { .. } => match infix(expr) {
            Some(_) => Ctx::Arg,
            None => Ctx::Operand,
        },
        TKind::Lam { .. } | TKind::For { .. } | TKind::If { .. } | TKind::Case { .. } => Ctx::Expr,
        // Printed in parentheses on its own lines.
        TKind::Block { .. } => Ctx::Arg,
    }
}

/// `(symbol, lhs, rhs)` when `expr` is an operator applied to two arguments.
fn infix(expr: &TExpr) -> Option<(&'static str, &TExpr, &TExpr)> {
    let TKind::App { func, arg: rhs } = &expr.kind else {
        return None;
    };
    let TKind::App { func, arg: lhs } = &func.kind else {
        return None;
    };
    match &func.kind {
        TKind::Builtin(builtin) => infix_symbol(*builtin).map(|symbol| (symbol, &**lhs, &**rhs)),
        _ => None,
    }
}

fn fun_param(ty: &Ty) -> Option<&Ty> {
    match ty {
        Ty::Fun { param, .. } => Some(param),
        _ => None,
    }
}

fn table_index(ty: &Ty) -> Option<&Ty> {
    match ty {
        Ty::Table(index, _) => Some(index),
        _ => None,
    }
}

struct Printer<'a> {
    names: &'a dyn Fn(LocalId) -> String,
    /// Names given by patterns (`collect_pattern_names`).
    bound: HashMap<LocalId, String>,
}

impl Printer<'_> {
    fn local(&self, id: LocalId) -> String {
        match self.bound.get(&id) {
            Some(name) => name.clone(),
            None => (self.names)(id),
        }
    }

    /// Prints `expr` in position `ctx` of an item at column `ind`. `shown`: the type of
    /// `expr` is already on display (so a literal needs no annotation).
    fn expr(&self, expr: &TExpr, ctx: Ctx, shown: bool, ind: usize) -> Out {
        if level(expr) < ctx {
            let inner = self.expr(expr, Ctx::Expr, shown, ind);
            return Out::closed(format!("({}", close(inner, ind, ")")));
        }
        match &expr.kind {
            TKind::Local(id) => Out::closed(self.local(*id)),
            TKind::Global(name) | TKind::GivenValue(_, name) => Out::closed(name.clone()),
            TKind::Def { name, inst, .. } if inst.is_empty() => Out::closed(name.clone()),
            TKind::Def { name, inst, .. } => {
                let inst: Vec<String> = inst.iter().map(Ty::to_string).collect();
                Out::closed(format!("{name}@[{}]", inst.join(", ")))
            }
            TKind::Builtin(builtin) => Out::closed(builtin_name(*builtin)),
            TKind::Lit(lit @ (Lit::Int(_) | Lit::Float(_))) if !shown => {
                Out::closed(format!("({}: {})", literal(lit), expr.ty))
            }
            TKind::Lit(lit) => Out::closed(literal(lit)),
            TKind::Lam { .. } => {
                let mut params = Vec::new();
                let mut body = expr;
                while let TKind::Lam { param, body: inner } = &body.kind {
                    params.push(binder(&pattern(param), fun_param(&body.ty)));
                    body = inner;
                }
                self.headed(format!("\\{}.", params.join(" ")), body, shown, ind)
            }
            TKind::For { .. } => {
                let mut binders = Vec::new();
                let mut body = expr;
                while let TKind::For {
                    binder: id,
                    body: inner,
                } = &body.kind
                {
                    binders.push(binder(&self.local(*id), table_index(&body.ty)));
                    body = inner;
                }
                self.headed(format!("for {}.", binders.join(" ")), body, shown, ind)
            }
            TKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let cond = self.expr(cond, Ctx::Operand, false, ind);
                let head = format!("if {}", close(cond, ind, " then"));
                let then_branch = self.body(then_branch, shown, ind);
                let head = if then_branch.open {
                    format!("{head}{}\n{}else", then_branch.text, spaces(ind))
                } else {
                    format!("{head}{} else", then_branch.text)
                };
                let else_branch = self.body(else_branch, shown, ind);
                Out {
                    text: format!("{head}{}", else_branch.text),
                    open: else_branch.open,
                }
            }
            TKind::App { .. } => self.app(expr, ctx, ind),
            TKind::Index { base, index } => {
                let base = self.expr(base, Ctx::Arg, false, ind);
                let index = self.expr(index, Ctx::Operand, false, ind);
                Out::closed(format!(
                    "{}{}",
                    close(base, ind, "["),
                    close(index, ind, "]")
                ))
            }
            TKind::Tuple(items) => Out::closed(format!("({}", self.list(items, shown, ind, ")"))),
            TKind::Table(items) => Out::closed(format!("[{}", self.list(items, shown, ind, "]"))),
            TKind::Numbers(numbers) if !shown => {
                Out::closed(format!("({}: {})", numbers_text(numbers), expr.ty))
            }
            TKind::Numbers(numbers) => Out::closed(numbers_text(numbers)),
            TKind::At(inner) => {
                let inner = self.expr(inner, Ctx::Operand, true, ind);
                Out::closed(format!(
                    "({})",
                    close(inner, ind, &format!(" @ {}", expr.ty))
                ))
            }
            TKind::TypeArg => {
                let ty = match &expr.ty {
                    Ty::TypeArg(ty) => ty,
                    other => other,
                };
                let text = match ctx {
                    Ctx::Arg => type_atom(ty),
                    Ctx::Expr | Ctx::Operand => ty.to_string(),
                };
                Out::closed(text)
            }
            TKind::Block { stmts, result } => {
                let inner = ind + STEP;
                let lines = self.block_lines(stmts, result, inner);
                Out::closed(format!("(\n{}{lines}\n{})", spaces(inner), spaces(ind)))
            }
            TKind::Con { name, .. } => Out::closed(name.clone()),
            TKind::Method { name, inst, .. } => {
                let inst: Vec<String> = inst.iter().map(Ty::to_string).collect();
                Out::closed(format!("{name}@[{}]", inst.join(", ")))
            }
            TKind::Field { base, field } => {
                let base = self.expr(base, Ctx::Arg, false, ind);
                Out::closed(close(base, ind, &format!(".{field}")))
            }
            TKind::Case { scrutinee, alts } => {
                let scrutinee = self.expr(scrutinee, Ctx::Operand, false, ind);
                let mut text = format!("case {}", close(scrutinee, ind, " of"));
                let inner = ind + STEP;
                for (pat, body) in alts {
                    let body = self.body(body, shown, inner);
                    text.push_str(&format!(
                        "\n{}{} ->{}",
                        spaces(inner),
                        pattern(pat),
                        body.text
                    ));
                }
                Out { text, open: true }
            }
        }
    }

    /// A lambda or `for`: its head, then its body.
    fn headed(&self, head: String, body: &TExpr, shown: bool, ind: usize) -> Out {
        let out = self.body(body, shown, ind);
        Out {
            text: format!("{head}{}", out.text),
            open: out.open,
        }
    }

    /// A body after its opener (`.`, `=`, `then`, `else`), with the space or line break that
    /// separates it from the opener: a let-block goes on the next lines, indented.
    fn body(&self, expr: &TExpr, shown: bool, ind: usize) -> Out {
        match &expr.kind {
            TKind::Block { stmts, result } => {
                let inner = ind + STEP;
                Out {
                    text: format!(
                        "\n{}{}",
                        spaces(inner),
                        self.block_lines(stmts, result, inner)
                    ),
                    open: true,
                }
            }
            _ => {
                let out = self.expr(expr, Ctx::Expr, shown, ind);
                Out {
                    text: format!(" {}", out.text),
                    open: out.open,
                }
            }
        }
    }

    /// The statements of a block at column `ind`, then its result (the first line not
    /// indented).
    fn block_lines(&self, stmts: &[TStmt], result: &TExpr, ind: usize) -> String {
        let mut lines: Vec<String> = stmts
            .iter()
            .map(|stmt| match stmt {
                TStmt::Let { pat, value } => {
                    let value_text = self.body(value, true, ind).text;
                    format!("{}: {} ={value_text}", pattern(pat), value.ty)
                }
                TStmt::Def { def, .. } => {
                    let inner = ind + STEP;
                    let body = match &def.body.kind {
                        TKind::Block { stmts, result } => self.block_lines(stmts, result, inner),
                        _ => self.expr(&def.body, Ctx::Expr, true, inner).text,
                    };
                    format!(
                        "def {}{}: {} =\n{}{body}",
                        def.name,
                        def_vars(def),
                        def.ty,
                        spaces(inner)
                    )
                }
            })
            .collect();
        lines.push(self.expr(result, Ctx::Expr, true, ind).text);
        lines.join(&format!("\n{}", spaces(ind)))
    }

    /// Comma-separated items in `Operand` position, then `closer`.
    fn list(&self, items: &[TExpr], shown: bool, ind: usize, closer: &str) -> String {
        comma_list(items, ind, closer, |item| {
            self.expr(item, Ctx::Operand, shown, ind)
        })
    }

    /// An application: `(a + b)` for an operator with two arguments, else `f x (g y)` with a
    /// trailing lambda or `for` in `Expr` position (`fold (0.0: Float32) \(i: Fin 3) …`).
    fn app(&self, expr: &TExpr, ctx: Ctx, ind: usize) -> Out {
        if let Some((symbol, lhs, rhs)) = infix(expr) {
            let lhs = self.expr(lhs, Ctx::Operand, false, ind);
            let lhs = close(lhs, ind, &format!(" {symbol} "));
            let rhs = self.expr(rhs, Ctx::Operand, false, ind);
            return Out::closed(format!("({lhs}{})", close(rhs, ind, "")));
        }
        let (head, args) = expr.spine();
        let head = self.expr(head, Ctx::Arg, false, ind);
        let mut text = head.text;
        let mut open = head.open;
        for (index, arg) in args.iter().enumerate() {
            let trailing = ctx == Ctx::Expr
                && index + 1 == args.len()
                && matches!(arg.kind, TKind::Lam { .. } | TKind::For { .. });
            let arg_ctx = if trailing { Ctx::Expr } else { Ctx::Arg };
            text = close(Out { text, open }, ind, " ");
            let out = self.expr(arg, arg_ctx, false, ind);
            text.push_str(&out.text);
            open = out.open;
        }
        Out { text, open }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;
    use crate::check::env::GlobalEnv;
    use crate::check::infer::Infer;
    use crate::check::types::{BaseTy, Size};
    use crate::syntax::ast::Decl;
    use crate::syntax::{parse_code, Span};

    /// A session with `x : (Fin 3)=>Float32`, `m : (Fin 2)=>(Fin 3)=>Float32`, `k : Nat` and
    /// the generic `def dot(a: n=>Float, b: n=>Float) -> Float`.
    fn env() -> GlobalEnv {
        let mut env = GlobalEnv::default();
        let fin = |n| Ty::Fin(Size::Const(n));
        env.values
            .insert("x".to_string(), Ty::table(fin(3), Ty::float()));
        env.values.insert(
            "m".to_string(),
            Ty::table(fin(2), Ty::table(fin(3), Ty::float())),
        );
        env.values.insert("k".to_string(), Ty::nat());
        for src in [
            "def dot(a: n=>Float, b: n=>Float) -> Float = sum for i. a[i] * b[i]",
            "def twice(f: a -> a, y: a) -> a given (a) = f (f y)",
        ] {
            let block = parse_code(src, Span::new(0, src.len())).expect("the def parses");
            let Decl::Def(def) = &block.decl else {
                panic!("expected a def: {src}")
            };
            let info = Infer::new(&mut env).infer_def(def).expect("the def checks");
            env.define(&def.name.name, info);
        }
        env
    }

    /// Checks `src` in `env()` and prints it, naming locals as the checker did.
    fn typed(src: &str) -> String {
        let mut env = env();
        // `parse_expr` reads no let-block at the top, so go through `:p`.
        let code = match src.strip_prefix('\n') {
            Some(_) => format!(":p{src}"),
            None => format!(":p {src}"),
        };
        let block = parse_code(&code, Span::new(0, code.len()))
            .unwrap_or_else(|err| panic!("{code}: {err:?}"));
        let Decl::Command { expr, .. } = block.decl else {
            panic!("expected a command: {code}")
        };
        let mut infer = Infer::new(&mut env);
        let texpr = infer
            .infer_top_expr(&expr)
            .unwrap_or_else(|err| panic!("{src}: {err:?}"));
        let names = |id: LocalId| env.local_name(id);
        print_typed(&texpr, &names)
    }

    fn check(src: &str, expected: Expect) {
        expected.assert_eq(&typed(src));
    }

    #[test]
    fn print_typed_for_with_inferred_index_set() {
        check(
            "for i. x[i] + 1.0",
            expect![[r#"
            : ((Fin 3) => Float32)
            for (i: Fin 3). (x[i] + (1.0: Float32))"#]],
        );
        check(
            "for i j. m[i, j] * 2",
            expect![[r#"
            : ((Fin 2) => (Fin 3) => Float32)
            for (i: Fin 2) (j: Fin 3). (m[i][j] * (2: Float32))"#]],
        );
        check(
            "x[1]",
            expect![[r#"
            : Float32
            x[(1 @ Fin 3)]"#]],
        );
    }

    #[test]
    fn print_typed_lambdas() {
        check(
            "\\y:Float z. y * z + n_to_f k",
            expect![[r#"
            : (Float32 -> (Float32 -> Float32))
            \(y: Float32) (z: Float32). ((y * z) + n_to_f k)"#]],
        );
        check(
            "(\\(a, b). a) (1.5, 3)",
            expect![[r#"
            : Float32
            (\((a, b): (Float32, Nat)). a) ((1.5: Float32), (3: Nat))"#]],
        );
    }

    #[test]
    fn print_typed_let_block_with_destructuring() {
        check(
            "\n  (a, b) = (2.0, 3)\n  [c, d] = [a, a]\n  ys : (Fin 3)=>Float = for i. x[i] * c\n  a * n_to_f b + ys[0 @ _]",
            expect![[r#"
                : Float32
                (a, b): (Float32, Nat) = (2.0, 3)
                [c, d]: ((Fin 2) => Float32) = [a, a]
                ys: ((Fin 3) => Float32) = for (i: Fin 3). (x[i] * c)
                ((a * n_to_f b) + ys[(0 @ Fin 3)])"#]],
        );
    }

    #[test]
    fn print_typed_generic_calls() {
        check(
            "dot x x",
            expect![[r#"
            : Float32
            dot@[Fin 3] x x"#]],
        );
        check(
            "twice (\\v. v + 1) k",
            expect![[r#"
            : Nat
            twice@[Nat] (\(v: Nat). (v + (1: Nat))) k"#]],
        );
    }

    #[test]
    fn print_typed_fold_and_builtins() {
        check(
            "fold 0.0 \\i c. c + x[i]",
            expect![[r#"
            : Float32
            fold (0.0: Float32) \(i: Fin 3) (c: Float32). (c + x[i])"#]],
        );
        check(
            "sum (iota (Fin 4)) + size (Fin 3) + ordinal (2 @ Fin 5)",
            expect![[r#"
                : Nat
                ((sum (iota (Fin 4)) + size (Fin 3)) + ordinal (2 @ Fin 5))"#]],
        );
        check(
            "if x[0] > 0.0 && not (x[1] ~~ 2.0) then 2.0 .* x else for i. -x[i]",
            expect![[r#"
                : ((Fin 3) => Float32)
                if ((x[(0 @ Fin 3)] > (0.0: Float32)) && not (x[(1 @ Fin 3)] ~~ (2.0: Float32))) then ((2.0: Float32) .* x) else for (i: Fin 3). neg x[i]"#]],
        );
    }

    #[test]
    fn print_typed_blocks_in_bodies() {
        check(
            "for i.\n  y = x[i]\n  z = if y > 0.0 then\n      w = y * y\n      w\n    else 0.0\n  z + y",
            expect![[r#"
                : ((Fin 3) => Float32)
                for (i: Fin 3).
                  y: Float32 = x[i]
                  z: Float32 = if (y > (0.0: Float32)) then
                    w: Float32 = (y * y)
                    w
                  else 0.0
                  (z + y)"#]],
        );
        check(
            "\n  def sq(v) = v * v\n  sq 3.0 + sq 4.0",
            expect![[r#"
            : Float32
            def sq[t2]: (t2 -> t2) =
              \(v: t2). (v * v)
            (sq@[Float32] (3.0: Float32) + sq@[Float32] (4.0: Float32))"#]],
        );
    }

    #[test]
    fn print_typed_uses_the_callers_names_for_indices() {
        let texpr = TExpr {
            kind: TKind::For {
                binder: LocalId(7),
                body: Box::new(TExpr {
                    kind: TKind::Local(LocalId(7)),
                    ty: Ty::Fin(Size::Const(4)),
                    span: Span::default(),
                }),
            },
            ty: Ty::table(Ty::Fin(Size::Const(4)), Ty::Fin(Size::Const(4))),
            span: Span::default(),
        };
        let printed = print_typed(&texpr, &|id| format!("x{}", id.0));
        expect![[r#"
            : ((Fin 4) => (Fin 4))
            for (x7: Fin 4). x7"#]]
        .assert_eq(&printed);
    }

    #[test]
    fn print_typed_literals_inside_a_shown_type_are_bare() {
        let lit = TExpr {
            kind: TKind::Lit(Lit::Int(3)),
            ty: Ty::Base(BaseTy::Int64),
            span: Span::default(),
        };
        let pair = TExpr {
            ty: Ty::Tuple(vec![lit.ty.clone(), Ty::bool()]),
            kind: TKind::Tuple(vec![
                lit,
                TExpr {
                    kind: TKind::Lit(Lit::Bool(true)),
                    ty: Ty::bool(),
                    span: Span::default(),
                },
            ]),
            span: Span::default(),
        };
        expect![[r#"
            : (Int64, Bool)
            (3, True)"#]]
        .assert_eq(&print_typed(&pair, &|id| format!("x{}", id.0)));
    }
}

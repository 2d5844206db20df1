//! Tests of the front end: chunk splitting, layout, the grammar, spans, errors, entry status.
//!
//! Expressions are compared as S-expressions (`sexp`), so a test reads as data.

use super::ast::*;
use super::*;

// ---------------------------------------------------------------------------------------------
// Helpers.

fn sexp(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Var(ident) => ident.name.clone(),
        ExprKind::Lit(Lit::Int(value)) => value.to_string(),
        ExprKind::Lit(Lit::Float(value)) => format!("{value:?}"),
        ExprKind::Lit(Lit::Bool(value)) => if *value { "True" } else { "False" }.to_string(),
        ExprKind::Lit(Lit::Str(text)) => format!("{text:?}"),
        ExprKind::Lam { params, body } => {
            let params: Vec<String> = params.iter().map(param).collect();
            format!("(\\ {} . {})", params.join(" "), sexp(body))
        }
        ExprKind::For { binders, body } => {
            let binders: Vec<String> = binders
                .iter()
                .map(|binder| match &binder.ty {
                    Some(ty) => format!("{}:{}", binder.name.name, ty_sexp(ty)),
                    None => binder.name.name.clone(),
                })
                .collect();
            format!("(for {} . {})", binders.join(" "), sexp(body))
        }
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            format!(
                "(if {} {} {})",
                sexp(cond),
                sexp(then_branch),
                sexp(else_branch)
            )
        }
        ExprKind::App { func, arg, name } => match name {
            Some(name) => format!("({} {}={})", sexp(func), name.name, sexp(arg)),
            None => format!("({} {})", sexp(func), sexp(arg)),
        },
        ExprKind::BinOp { op, lhs, rhs } => {
            format!("({} {} {})", op.symbol(), sexp(lhs), sexp(rhs))
        }
        ExprKind::Neg(inner) => format!("(neg {})", sexp(inner)),
        ExprKind::Index { base, indices } => {
            let indices: Vec<String> = indices.iter().map(sexp).collect();
            format!("(index {} {})", sexp(base), indices.join(" "))
        }
        ExprKind::Tuple(items) => {
            let items: Vec<String> = items.iter().map(sexp).collect();
            format!("(tuple {})", items.join(" "))
        }
        ExprKind::Table(items) => {
            let items: Vec<String> = items.iter().map(sexp).collect();
            format!("[{}]", items.join(" "))
        }
        ExprKind::At { value, ty } => format!("(@ {} {})", sexp(value), ty_sexp(ty)),
        ExprKind::Annot { expr, ty } => format!("(:: {} {})", sexp(expr), ty_sexp(ty)),
        ExprKind::Block { stmts, result } => {
            let mut parts: Vec<String> = stmts.iter().map(stmt).collect();
            parts.push(sexp(result));
            format!("(block {})", parts.join(" "))
        }
    }
}

fn param(param: &Param) -> String {
    match &param.ty {
        Some(ty) => format!("{}:{}", pat(&param.pat), ty_sexp(ty)),
        None => pat(&param.pat),
    }
}

fn pat(pattern: &Pattern) -> String {
    match pattern {
        Pattern::Var(ident) => ident.name.clone(),
        Pattern::Tuple(items, _) => {
            let items: Vec<String> = items.iter().map(pat).collect();
            format!("(ptuple {})", items.join(" "))
        }
        Pattern::Table(items, _) => {
            let items: Vec<String> = items.iter().map(pat).collect();
            format!("[{}]", items.join(" "))
        }
        Pattern::Wildcard(_) => "_".to_string(),
    }
}

fn ty_sexp(ty: &TypeExpr) -> String {
    match &ty.kind {
        TypeExprKind::Name(ident) => ident.name.clone(),
        TypeExprKind::Fin(size) => format!("(Fin {})", sexp(size)),
        TypeExprKind::Table(index, elem) => format!("(=> {} {})", ty_sexp(index), ty_sexp(elem)),
        TypeExprKind::Tuple(items) => {
            let items: Vec<String> = items.iter().map(ty_sexp).collect();
            format!("(ttuple {})", items.join(" "))
        }
        TypeExprKind::Fun(params, result) => {
            let params: Vec<String> = params.iter().map(ty_sexp).collect();
            format!("(-> ({}) {})", params.join(" "), ty_sexp(result))
        }
        TypeExprKind::Hole => "_".to_string(),
    }
}

fn let_sexp(binding: &LetBinding) -> String {
    match &binding.ty {
        Some(ty) => format!(
            "(let {}:{} {})",
            pat(&binding.pat),
            ty_sexp(ty),
            sexp(&binding.value)
        ),
        None => format!("(let {} {})", pat(&binding.pat), sexp(&binding.value)),
    }
}

fn def_sexp(def: &FunDef) -> String {
    let params: Vec<String> = def.params.iter().map(param).collect();
    let ret = def
        .ret
        .as_ref()
        .map(|ty| format!(" -> {}", ty_sexp(ty)))
        .unwrap_or_default();
    let given = if def.given.is_empty() {
        String::new()
    } else {
        let binders: Vec<String> = def
            .given
            .iter()
            .map(|binder| match &binder.class {
                Some(class) => format!("{}|{}", binder.name.name, class.name),
                None => binder.name.name.clone(),
            })
            .collect();
        format!(" given ({})", binders.join(", "))
    };
    format!(
        "(def {}({}){}{} {})",
        def.name.name,
        params.join(", "),
        ret,
        given,
        sexp(&def.body)
    )
}

fn stmt(statement: &Stmt) -> String {
    match statement {
        Stmt::Let(binding) => let_sexp(binding),
        Stmt::Def(def) => def_sexp(def),
    }
}

fn decl_sexp(decl: &Decl) -> String {
    match decl {
        Decl::Def(def) => def_sexp(def),
        Decl::Let(binding) => let_sexp(binding),
        Decl::Command {
            command,
            expr,
            bare,
        } => {
            format!(
                "({:?}{} {})",
                command,
                if *bare { " bare" } else { "" },
                sexp(expr)
            )
        }
        Decl::Import(ident) => format!("(import {})", ident.name),
    }
}

#[track_caller]
fn expr(src: &str) -> String {
    match parse_expr(src) {
        Ok(expr) => sexp(&expr),
        Err(err) => panic!("parse error in {src:?}: {err:?}"),
    }
}

#[track_caller]
fn code(src: &str) -> CodeBlock {
    match parse_code(src, Span::new(0, src.len())) {
        Ok(block) => block,
        Err(err) => panic!("parse error in {src:?}: {err:?}"),
    }
}

#[track_caller]
fn decl(src: &str) -> String {
    decl_sexp(&code(src).decl)
}

#[track_caller]
fn code_err(src: &str) -> ParseError {
    match parse_code(src, Span::new(0, src.len())) {
        Ok(block) => panic!(
            "expected an error in {src:?}, got {}",
            decl_sexp(&block.decl)
        ),
        Err(err) => err,
    }
}

#[test]
fn dump() {
    for src in [
        "1 + 2 * 3",
        "f x y",
        "f(x, y) z",
        "\\x y. x + y",
        "for i j. m[i, j]",
        "ordinal i + 1 @ Fin 5",
        "x `mod` 5",
        "-f x * 2",
        "split_key(n=2, key)",
        "fold 0.0 \\i c. c + 1.0",
        "(3 @ _)",
        "(e :: Float)",
        "(a, b)",
        "[1., 2., 3.]",
        "if c then a else b",
        "f $ g $ x",
    ] {
        println!(
            "{src:30} {}",
            match parse_expr(src) {
                Ok(e) => sexp(&e),
                Err(e) => format!("{e:?}"),
            }
        );
    }
    for src in [
        "def dot(a: n=>Float, b: n=>Float) -> Float given (n|Ix) =\n  sum for i. a[i] * b[i]\n",
        ":p\n  (a, b) = (2.0, 3)\n  a * i_to_f b\n",
        ":p grad (\\p.\n    (a, b) = p\n    sum for i. a[i] * a[i] * b[i]) ([1., 2.], [3., 4.])\n",
        "x : Float = 3",
        "(a, b) = f x",
        "import foo",
        ":t x",
        "x = if c\n  then a\n  else b",
        "def f(x) =\n  y = x\n  z = y\n  z\n",
        "x = (",
        "x = 1 +",
        "def f(x) =\n  y = 1\n",
        "x = )",
        "x = 1 2 then",
        "if c then a",
        "f a b \\x",
        ":q x",
        ":p fold(0.0, \\i:(Fin 5) c. c + n_to_f (ordinal i))",
        ":p fold 0.0 \\i c. c + 1.0",
        ":p x[7 @ Fin 4]",
        "m = for i:(Fin 2) j:(Fin 3). n_to_f (ordinal i * 3 + ordinal j)",
        "x : (Fin 3)=>Fin 4=>Float = y",
        "f : (a, b) -> c = y",
        "f : a -> b -> c = y",
        "f : ((a, b)) -> c = y",
        "x = for i.\n  y = i\n  for j.\n    z = j\n    z + y\n",
        "x = if c\n  then\n    y = 1\n    y\n  else\n    2\n",
        "x = if c then\n    1\n  else 2\n",
        ":p [1e-3, 2.5e3, 1., 1.0, 3, 1.e2]",
        ":p a < b < c",
        ":p (a < b) < c",
        ":p a < (b < c)",
        ":p \\x:Float y. x",
        ":p \\(a, b). a",
        ":p for i:n j:m. 1",
        "def f(x, y) = x",
        "def f() -> Float = 1.",
        "x = f(\n  1,\n  2)",
        ":p\n  x = 1\n   + 2\n  x",
        ":p 1 +\n",
        ":p f(",
        ":p f(1, 2",
        ":p (1, 2]",
        "x = 1 ; 2",
        ":p \"héllo\" # comment é\n",
        "%time\n:p 1",
        "%bench \"foo\"\n%passes parse typed\n%strict\n:p 1",
        "%bogus\n:p 1",
        "%time",
        ":p x -- comment\n  + 1 # more\n",
        "def f(x) =\n  x\n    + 1",
        "Name = Fin 10",
        ":p 1.0 / 3.0",
        "  x = 1",
        ":p (1 +)",
        ":p f x =",
        "def f x = 1",
        ":p x[",
        ":p 99999999999999999999999",
        ":p x @",
        ":p \\x. ",
        ":p for i. for j.",
        "def f(x:",
        "x : = 3",
    ] {
        println!(
            "{src:?}\n   {}",
            match parse_code(src, Span::new(0, src.len())) {
                Ok(b) => decl_sexp(&b.decl),
                Err(e) => format!("{e:?}"),
            }
        );
    }
}

#[test]
fn stack_probe() {
    let which = std::env::var("PROBE").unwrap_or_default();
    let depth: usize = std::env::var("DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(127);
    let kb: usize = std::env::var("KB")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(2048);
    let src = match which.as_str() {
        "parens" => format!(":p {}1{}", "(".repeat(depth), ")".repeat(depth)),
        "brackets" => format!(":p {}1{}", "[".repeat(depth), "]".repeat(depth)),
        "index" => format!(":p x{}", "[i]".repeat(depth)),
        "calls" => format!(":p f{}", "(x)".repeat(depth)),
        "lambdas" => format!(":p {}1", "\\x. ".repeat(depth)),
        "fors" => format!(":p {}1", "for i. ".repeat(depth)),
        "ifs" => format!(":p {}1", "if a then b else ".repeat(depth)),
        "dollar" => format!(":p {}1", "f $ ".repeat(depth)),
        "neg" => format!(":p {}1", "- ".repeat(depth)),
        "plus" => format!(":p 1{}", "+1".repeat(depth)),
        "juxt" => format!(":p f{}", " x".repeat(depth)),
        "tytable" => format!("x : {}Float = 1", "n=>".repeat(depth)),
        "tyfun" => format!("x : {}Float = 1", "n->".repeat(depth)),
        "typarens" => format!("x : {}Float{} = 1", "(".repeat(depth), ")".repeat(depth)),
        "pats" => format!("{}x{} = 1", "(".repeat(depth), ")".repeat(depth)),
        _ => {
            let mut nested = String::from("x =\n");
            for level in 1..depth {
                nested.push_str(&" ".repeat(level));
                nested.push_str("y =\n");
            }
            nested.push_str(&" ".repeat(depth));
            nested.push_str("1\n");
            nested
        }
    };
    let handle = std::thread::Builder::new()
        .stack_size(kb << 10)
        .spawn(move || match parse_code(&src, Span::new(0, src.len())) {
            Ok(_) => "ok".to_string(),
            Err(err) => err.message,
        })
        .unwrap();
    println!("RESULT {which} {depth} {kb}: {:?}", handle.join());
}

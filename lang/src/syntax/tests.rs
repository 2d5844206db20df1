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


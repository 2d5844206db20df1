//! The AST as S-expressions: every node in prefix form with its parts in order (`(+ a (* b
//! c))`, `(for i:(Fin 3) . (index x i))`), spans left out. A parse reads as data, so the front
//! end's tests and fuzzers compare parses by their S-expression.

use super::ast::*;

/// An expression: `(f x)`, `(\ x y . body)`, `(index x i j)`, `(tuple a b)`, ...
pub fn sexp(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Var(ident) => ident.name.clone(),
        ExprKind::Lit(Lit::Int(value)) => value.to_string(),
        ExprKind::Lit(Lit::Float(value)) => format!("{value:?}"),
        ExprKind::Lit(Lit::Bool(value)) => if *value { "True" } else { "False" }.to_string(),
        ExprKind::Lit(Lit::Str(text)) => format!("{text:?}"),
        ExprKind::Lit(Lit::Char(byte)) => format!("{:?}", *byte as char),
        ExprKind::UserOp { op, lhs, rhs } => format!("({} {} {})", op.name, sexp(lhs), sexp(rhs)),
        ExprKind::Field { base, field } => format!("(. {} {})", sexp(base), field.name),
        ExprKind::Case { scrutinee, alts } => {
            let alts: Vec<String> = alts
                .iter()
                .map(|alt| format!("({} -> {})", pat(&alt.pat), sexp(&alt.body)))
                .collect();
            format!("(case {} {})", sexp(scrutinee), alts.join(" "))
        }
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
        ExprKind::Section(op) => format!("(section {})", op.symbol()),
        ExprKind::Hole => "_".to_string(),
        ExprKind::Range(kind, index) => kind.text(&index.name),
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
        ExprKind::Numbers(numbers) => {
            let items: Vec<String> = numbers.iter().map(|number| sexp(&number.expr())).collect();
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
        Pattern::Con { name, args, .. } => {
            let args: Vec<String> = args.iter().map(pat).collect();
            format!("({} {})", name.name, args.join(" "))
        }
        Pattern::Lit { lit, negated, .. } => {
            let sign = if *negated { "-" } else { "" };
            format!("{sign}{lit:?}")
        }
    }
}

/// A type: `(Fin n)`, `(=> (Fin 3) Float)`, `(-> {State h|} (Float) Float)`, ...
pub fn ty_sexp(ty: &TypeExpr) -> String {
    match &ty.kind {
        TypeExprKind::Name(ident) => ident.name.clone(),
        TypeExprKind::Fin(size) => format!("(Fin {})", sexp(size)),
        TypeExprKind::Table(index, elem) => format!("(=> {} {})", ty_sexp(index), ty_sexp(elem)),
        TypeExprKind::Tuple(items) => {
            let items: Vec<String> = items.iter().map(ty_sexp).collect();
            format!("(ttuple {})", items.join(" "))
        }
        TypeExprKind::Fun(params, result, row) => {
            let params: Vec<String> = params.iter().map(ty_sexp).collect();
            let row = row.as_ref().map_or(String::new(), row_sexp);
            format!("(->{row} ({}) {})", params.join(" "), ty_sexp(result))
        }
        TypeExprKind::Given { binders, ty } => {
            let names: Vec<&str> = binders.iter().map(|b| b.name.name.as_str()).collect();
            format!("(given ({}) {})", names.join(" "), ty_sexp(ty))
        }
        TypeExprKind::Hole => "_".to_string(),
        TypeExprKind::App(name, args) => {
            let args: Vec<String> = args.iter().map(ty_sexp).collect();
            format!("({} {})", name.name, args.join(" "))
        }
        TypeExprKind::Size(size) => format!("(size {})", sexp(size)),
        TypeExprKind::Range(kind, index) => kind.text(&index.name),
        TypeExprKind::DepTable {
            binder,
            index,
            elem,
        } => format!("(=> {}:{} {})", binder.name, ty_sexp(index), ty_sexp(elem)),
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

/// ` {State h,IO|eff}`
fn row_sexp(row: &EffRowExpr) -> String {
    let effects = row.effect_texts();
    let rest = row.rest.as_ref().map_or("", |rest| rest.name.as_str());
    format!(" {{{}|{rest}}}", effects.join(","))
}

fn def_sexp(def: &FunDef) -> String {
    let params: Vec<String> = def.params.iter().map(param).collect();
    let row = def.effects.as_ref().map_or(String::new(), row_sexp);
    let ret = def
        .ret
        .as_ref()
        .map(|ty| format!(" ->{row} {}", ty_sexp(ty)))
        .unwrap_or_default();
    let given = if def.given.is_empty() {
        String::new()
    } else {
        let binders: Vec<String> = def
            .given
            .iter()
            .map(|binder| {
                let mut text = binder.name.name.clone();
                for class in &binder.classes {
                    text.push('|');
                    text.push_str(&class.name);
                }
                text
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
        Stmt::TypeAlias(alias) => alias_sexp(alias),
    }
}

fn alias_sexp(alias: &TypeAlias) -> String {
    let params = alias.params.as_ref().map_or(String::new(), |params| {
        let params: Vec<String> = params.iter().map(param).collect();
        format!("({})", params.join(", "))
    });
    format!("(type {}{params} {})", alias.name.name, ty_sexp(&alias.ty))
}

fn type_params_sexp(params: &[TypeParam]) -> String {
    let params: Vec<String> = params.iter().map(|param| param.text(ty_sexp)).collect();
    params.join(", ")
}

/// A declaration: `(def f(x:Float) -> Float (+ x 1))`, `(let x 1)`, `(Print (f x))`, ...
pub fn decl_sexp(decl: &Decl) -> String {
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
        Decl::CustomLinearization { func, lin } => {
            format!("(custom-linearization {} {})", func.name, lin.name)
        }
        Decl::TypeAlias(alias) => alias_sexp(alias),
        Decl::Data(data) => {
            let cons: Vec<String> = data
                .cons
                .iter()
                .map(|con| {
                    let fields: Vec<String> = con
                        .fields
                        .iter()
                        .map(|field| match &field.name {
                            Some(name) => format!("{}:{}", name.name, ty_sexp(&field.ty)),
                            None => ty_sexp(&field.ty),
                        })
                        .collect();
                    format!("({} {})", con.name.name, fields.join(" "))
                })
                .collect();
            format!(
                "({:?} {}({}) {})",
                data.kind,
                data.name.name,
                type_params_sexp(&data.params),
                cons.join(" ")
            )
        }
        Decl::Interface(interface) => {
            let methods: Vec<String> = interface
                .methods
                .iter()
                .map(|method| format!("({} : {})", method.name.name, ty_sexp(&method.ty)))
                .chain(interface.defaults.iter().map(def_sexp))
                .collect();
            format!(
                "(interface {}({}) {})",
                interface.name.name,
                type_params_sexp(&interface.params),
                methods.join(" ")
            )
        }
        Decl::Instance(instance) => {
            let args: Vec<String> = instance.args.iter().map(ty_sexp).collect();
            let items: Vec<String> = instance
                .methods
                .iter()
                .map(|item| match item {
                    InstanceItem::Def(def) => def_sexp(def),
                    InstanceItem::Let(binding) => let_sexp(binding),
                })
                .collect();
            let named = match &instance.named {
                Some((name, params)) => {
                    let params: Vec<String> = params.iter().map(param).collect();
                    format!("named {} ({}) ", name.name, params.join(" "))
                }
                None => String::new(),
            };
            format!(
                "(instance {named}{}({}) {})",
                instance.class.name,
                args.join(", "),
                items.join(" ")
            )
        }
    }
}

//! Checking a source without running it, for editors (the language server): every block is
//! parsed and type-checked, and what it defines is entered into the session with its type
//! only, so later blocks check against it. Nothing is computed and nothing is written: no
//! plots saved, no data files read or written. A top-level `Nat` is the exception: it is
//! computed (a scalar), because later types may use it as a size (`Fin n`).
//!
//! The result lists the errors (all of them, as a notebook cell shows them) and the names
//! each block defines, with their types, for hover, go to definition and document symbols.

use super::{type_error, Diagnostic, Session};
use crate::check::infer::Infer;
use crate::check::typed::TPat;
use crate::check::types::Ty;
use crate::syntax::ast::{Command, Decl, Expr, ExprKind, Lit};
use crate::syntax::{ChunkKind, Span};

/// What a checked source defines at the top level.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    /// Its type as `:t` prints it.
    pub ty: String,
    /// The name where it is defined.
    pub name_span: Span,
    /// The whole block that defines it.
    pub block_span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Value,
    /// An index-set alias (`Height = Fin 3`).
    Type,
}

/// The errors and the definitions of a source.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checked {
    pub diagnostics: Vec<Diagnostic>,
    pub symbols: Vec<Symbol>,
}

impl Session {
    /// Parses and type-checks every block of `src` in order, without running anything.
    pub fn check_source(&mut self, src: &str) -> Checked {
        let mut checked = Checked::default();
        for chunk in crate::syntax::split_chunks(src) {
            match &chunk.kind {
                ChunkKind::Code(Ok(block)) => {
                    self.more_errors.clear();
                    if let Err(diag) = self.check_decl(&block.decl, block.span, &mut checked) {
                        checked.diagnostics.push(diag);
                        checked.diagnostics.append(&mut self.more_errors);
                    }
                }
                ChunkKind::Code(Err(err)) => checked.diagnostics.push(super::parse_error(err)),
                ChunkKind::Prose | ChunkKind::Comment | ChunkKind::Blank => {}
            }
        }
        checked
    }

    /// The type of a name in scope, as `:t` prints it.
    pub fn type_of_name(&mut self, name: &str) -> Option<String> {
        let expr = super::parse_expr(name).ok()?;
        Infer::new(&mut self.env)
            .infer_top_type(&expr)
            .ok()
            .map(|ty| ty.to_string())
    }

    /// The documentation of a name (`:help`'s text without the type).
    pub fn doc_of_name(&self, name: &str) -> Option<String> {
        self.docs
            .get(name)
            .cloned()
            .or_else(|| crate::check::builtin_docs::builtin_doc(name).map(str::to_string))
    }

    fn check_decl(
        &mut self,
        decl: &Decl,
        block_span: Span,
        checked: &mut Checked,
    ) -> Result<(), Diagnostic> {
        let symbol = |name: &crate::syntax::ast::Ident, kind, ty: &Ty| Symbol {
            name: name.name.clone(),
            kind,
            ty: ty.to_string(),
            name_span: name.span,
            block_span,
        };
        let named_instance;
        let decl = match decl {
            Decl::Instance(instance) if instance.named.is_some() => {
                let def = crate::check::named_instance_def(instance)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
                named_instance = Decl::Def(def);
                &named_instance
            }
            Decl::CustomLinearization { func, lin } => {
                let def = crate::check::custom_linearization_def(&self.env, func, lin)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
                named_instance = Decl::Def(def);
                &named_instance
            }
            decl => decl,
        };
        match decl {
            Decl::Def(def) => {
                let info = Infer::new(&mut self.env)
                    .infer_top_def(def)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
                checked
                    .symbols
                    .push(symbol(&def.name, SymbolKind::Function, &info.ty));
                self.env.define(&def.name.name, info);
            }
            Decl::Let(binding) if super::data_call(&binding.value).is_some() => {
                // `xs : T = load_npy "file"`: the declared type, without reading the file.
                if let (crate::syntax::ast::Pattern::Var(ident), Some(ty)) =
                    (&binding.pat, &binding.ty)
                {
                    let ty = Infer::new(&mut self.env)
                        .infer_top_type_expr(ty)
                        .map_err(|err| type_error(&mut self.more_errors, err))?;
                    checked.symbols.push(symbol(ident, SymbolKind::Value, &ty));
                    self.env.unbind(&ident.name);
                    self.env.values.insert(ident.name.clone(), ty);
                }
            }
            Decl::Let(binding) => {
                let mut infer = Infer::new(&mut self.env);
                if let Some(alias) = infer.try_alias(binding) {
                    let (_, ty) = alias.map_err(|err| type_error(&mut self.more_errors, err))?;
                    if let crate::syntax::ast::Pattern::Var(ident) = &binding.pat {
                        checked.symbols.push(symbol(ident, SymbolKind::Type, &ty));
                    }
                    return Ok(());
                }
                let (pat, texpr) = infer
                    .infer_top_let(binding)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
                let names = binding.pat.names();
                let vars = pat.vars(&texpr.ty);
                for (ident, (_, _, ty)) in names.iter().zip(&vars) {
                    let kind = if ty.contains_fun() {
                        SymbolKind::Function
                    } else {
                        SymbolKind::Value
                    };
                    checked.symbols.push(symbol(ident, kind, ty));
                }
                if texpr.ty == Ty::nat() && matches!(pat, TPat::Var(..)) {
                    // A size for later types: computed.
                    let cx = super::BlockCx {
                        strict: self.config.strict,
                        stages: Vec::new(),
                        bench: None,
                    };
                    self.eval_let(binding, &cx)?;
                } else if texpr.ty.contains_fun() {
                    let cx = super::BlockCx {
                        strict: self.config.strict,
                        stages: Vec::new(),
                        bench: None,
                    };
                    // A value holding functions is a definition: nothing runs.
                    self.eval_let(binding, &cx)?;
                } else {
                    for (_, name, ty) in vars {
                        self.env.unbind(&name);
                        self.env.values.insert(name, ty);
                    }
                }
            }
            Decl::Command { command, expr, .. } => self.check_command(*command, expr)?,
            // Declarations run nothing: they are checked and entered as the session does.
            Decl::Data(data) => {
                Infer::new(&mut self.env)
                    .declare_data(data)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
                for def in crate::check::struct_method_defs(data) {
                    let info = Infer::new(&mut self.env)
                        .infer_top_def(&def)
                        .map_err(|err| type_error(&mut self.more_errors, err))?;
                    self.env.define(&def.name.name, info);
                }
                let ty = Ty::TypeArg(Box::new(Ty::Tuple(Vec::new())));
                checked.symbols.push(Symbol {
                    ty: data.name.name.clone(),
                    ..symbol(&data.name, SymbolKind::Type, &ty)
                });
                for con in data
                    .cons
                    .iter()
                    .filter(|con| con.name.name != data.name.name)
                {
                    if let Some(con_ty) = self.type_of_name(&con.name.name) {
                        checked.symbols.push(Symbol {
                            ty: con_ty,
                            ..symbol(&con.name, SymbolKind::Function, &ty)
                        });
                    }
                }
            }
            Decl::Interface(interface) => {
                Infer::new(&mut self.env)
                    .declare_interface(interface)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
                for method in &interface.methods {
                    if let Some(method_ty) = self.type_of_name(&method.name.name) {
                        checked.symbols.push(Symbol {
                            ty: method_ty,
                            ..symbol(&method.name, SymbolKind::Function, &Ty::nat())
                        });
                    }
                }
            }
            Decl::Instance(instance) => {
                let replace = self.config.redefinition == super::Redefinition::Replace;
                Infer::new(&mut self.env)
                    .declare_instance(instance, replace)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
            }
            Decl::TypeAlias(alias) => {
                Infer::new(&mut self.env)
                    .declare_alias(alias)
                    .map_err(|err| type_error(&mut self.more_errors, err))?;
                let shown = match self.env.aliases.get(&alias.name.name) {
                    Some(ty) => ty.to_string(),
                    None => "Type".to_string(),
                };
                checked.symbols.push(Symbol {
                    ty: shown,
                    ..symbol(&alias.name, SymbolKind::Type, &Ty::nat())
                });
            }
            Decl::CustomLinearization { .. } => {
                unreachable!("a custom linearization is checked as the definition it makes")
            }
            Decl::Import(name) => {
                for output in self.import(&name.name) {
                    if let super::Output::Error(diag) = output {
                        return Err(Diagnostic {
                            span: Some(name.span),
                            ..diag
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn check_command(&mut self, command: Command, expr: &Expr) -> Result<(), Diagnostic> {
        let expr = match command {
            // The composed expression of `:plotgrad` and the stage settings are not the user's
            // text; `:help`, `:export` and `:t` need only a type.
            Command::PlotGrad | Command::Stages => return Ok(()),
            Command::Plot | Command::Table | Command::Html => plotted(expr),
            Command::Print if matches!(expr.kind, ExprKind::Lit(Lit::Str(_))) => return Ok(()),
            Command::Print | Command::Type | Command::Help | Command::Export => expr,
        };
        if super::data_call(expr).is_some() {
            return Ok(());
        }
        Infer::new(&mut self.env)
            .infer_top_type(expr)
            .map(|_| ())
            .map_err(|err| type_error(&mut self.more_errors, err))
    }
}

/// The expression a `:plot` draws, without a `> "file"` or the words after it.
fn plotted(expr: &Expr) -> &Expr {
    let mut current = match &expr.kind {
        ExprKind::BinOp {
            op: crate::syntax::ast::BinOp::Gt,
            lhs,
            rhs,
        } if matches!(rhs.kind, ExprKind::Lit(Lit::Str(_))) => lhs,
        _ => expr,
    };
    while let ExprKind::App {
        func,
        arg,
        name: None,
    } = &current.kind
    {
        if !matches!(arg.kind, ExprKind::Lit(Lit::Str(_))) {
            break;
        }
        current = func;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionConfig;

    #[test]
    fn checks_every_block_and_runs_nothing() {
        let mut session = Session::new(SessionConfig::default());
        let src = "n = 3\n\
                   xs = for i:(Fin n). n_to_f (ordinal i)\n\
                   def double(v: m=>Float) -> m=>Float given (m|Ix) = for i. 2.0 * v[i]\n\
                   :p double xs + True\n\
                   :plot xs > \"/nonexistent/dir/never.png\"\n\
                   big = sum (for i:(Fin 100000) j:(Fin 100000). 1.0)\n\
                   :p summ xs\n";
        let started = std::time::Instant::now();
        let checked = session.check_source(src);
        assert!(started.elapsed().as_secs() < 5, "nothing ran");
        let messages: Vec<&str> = checked
            .diagnostics
            .iter()
            .map(|diag| diag.message.as_str())
            .collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[1].contains("did you mean `sum`"), "{messages:?}");
        let names: Vec<(&str, SymbolKind, &str)> = checked
            .symbols
            .iter()
            .map(|symbol| (symbol.name.as_str(), symbol.kind, symbol.ty.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("n", SymbolKind::Value, "Nat"),
                ("xs", SymbolKind::Value, "((Fin 3) => Float32)"),
                (
                    "double",
                    SymbolKind::Function,
                    "((m => Float32) -> (m => Float32))"
                ),
                ("big", SymbolKind::Value, "((Fin 100000) => Float32)"),
            ]
        );
        assert_eq!(
            session.type_of_name("xs").as_deref(),
            Some("((Fin 3) => Float32)")
        );
        assert!(session.doc_of_name("logsumexp").is_some());
    }
}

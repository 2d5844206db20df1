//! The checker: name resolution, types and static shapes (docs/language.md), producing the
//! typed program (`typed`) that the lowering turns into core IR.

pub mod builtin_docs;
pub mod builtins;
pub mod classes;
pub mod data;
mod declare;
mod effects;
pub use declare::{custom_linearization_def, named_instance_def, struct_method_defs};
pub mod env;
pub mod exhaustive;
pub mod infer;
pub mod print;
pub mod show;
pub mod suggest;
pub mod typed;
pub mod types;

use crate::syntax::ast::Ident;
use crate::syntax::{Label, Span};

/// A type error: a message about a span of the source, and other spans it names
/// (`labels`). `also` holds the other errors of the same declaration, found independently
/// (in later statements of a let-block).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeError {
    pub kind: TypeErrorKind,
    pub message: String,
    pub span: Span,
    pub labels: Vec<Label>,
    pub also: Vec<TypeError>,
}

impl TypeError {
    pub fn new(span: Span, message: impl Into<String>) -> TypeError {
        TypeError {
            kind: TypeErrorKind::Other,
            message: message.into(),
            span,
            labels: Vec::new(),
            also: Vec::new(),
        }
    }

    pub fn of_kind(self, kind: TypeErrorKind) -> TypeError {
        TypeError { kind, ..self }
    }

    /// The error with a secondary span.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> TypeError {
        self.labels.push(Label::new(span, message));
        self
    }
}

/// What a [`TypeError`] is about, where the checker knows more than "a type error".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeErrorKind {
    /// Two types that must be one are not (`expected type …, found …`).
    Mismatch,
    /// A type without the interface an operation needs (`type Bool does not support addition`).
    NoInstance,
    /// A name that nothing in scope defines.
    Unbound,
    /// A name declared, bound or defined twice in one place.
    Duplicate,
    /// An effect used outside its handler, a reference escaping it, effects wider than
    /// declared.
    Effect,
    /// A function, constructor or built-in given another number of arguments than it takes.
    Arity,
    /// A type the checker cannot infer here: an annotation fixes it.
    Annotation,
    /// A pattern that can fail where it must not, or a `case` that misses a constructor.
    Pattern,
    Other,
}

/// That no two of `names` are the same name; else the error `message(name)` at the second,
/// labelled `first <verb> here` at the first.
pub fn distinct<'a>(
    names: impl IntoIterator<Item = &'a Ident>,
    verb: &str,
    message: impl Fn(&str) -> String,
) -> Result<(), TypeError> {
    let mut seen: Vec<&Ident> = Vec::new();
    for ident in names {
        if let Some(first) = seen.iter().find(|seen| seen.name == ident.name) {
            return Err(twice(first.span, ident.span, verb, message(&ident.name)));
        }
        seen.push(ident);
    }
    Ok(())
}

/// A name declared (bound, defined) twice in one place: the error at the second, labelled
/// `first <verb> here` at the first.
pub fn twice(first: Span, second: Span, verb: &str, message: impl Into<String>) -> TypeError {
    TypeError::new(second, message)
        .with_label(first, format!("first {verb} here"))
        .of_kind(TypeErrorKind::Duplicate)
}

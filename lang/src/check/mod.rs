//! The checker: name resolution, types and static shapes (docs/language.md), producing the
//! typed program (`typed`) that the lowering turns into core IR.

pub mod builtin_docs;
pub mod builtins;
pub mod classes;
pub mod data;
mod declare;
mod effects;
mod size_eval;
pub use declare::{custom_linearization_def, named_instance_def, struct_method_defs};
pub mod env;
pub mod exhaustive;
pub mod infer;
pub mod print;
pub mod show;
pub mod suggest;
pub mod typed;
pub mod types;

use crate::code::Code;
use crate::syntax::ast::Ident;
use crate::syntax::{Label, Span};

/// A type error: a message about a span of the source, and other spans it names
/// (`labels`). `also` holds the other errors of the same declaration, found independently
/// (in later statements of a let-block).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeError {
    /// `Code::Type`, or one of the other type-error codes where the checker knows more.
    pub kind: Code,
    pub message: String,
    pub span: Span,
    pub labels: Vec<Label>,
    pub also: Vec<TypeError>,
}

impl TypeError {
    pub fn new(span: Span, message: impl Into<String>) -> TypeError {
        TypeError {
            kind: Code::Type,
            message: message.into(),
            span,
            labels: Vec::new(),
            also: Vec::new(),
        }
    }

    /// A bug in the checker: a state of its own it does not expect (`Code::CheckerBug`).
    pub fn bug(span: Span, message: impl Into<String>) -> TypeError {
        TypeError {
            kind: Code::CheckerBug,
            ..TypeError::new(span, message)
        }
    }

    pub fn of_kind(self, kind: Code) -> TypeError {
        debug_assert_eq!(kind.kind(), crate::code::ErrorKind::Type, "{kind:?}");
        TypeError { kind, ..self }
    }

    /// The error with a secondary span.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> TypeError {
        self.labels.push(Label::new(span, message));
        self
    }
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
        .of_kind(Code::Duplicate)
}

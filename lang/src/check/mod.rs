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

use crate::syntax::{Label, Span};

/// A type error: a message about a span of the source, and other spans it names
/// (`labels`). `also` holds the other errors of the same declaration, found independently
/// (in later statements of a let-block).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeError {
    pub message: String,
    pub span: Span,
    pub labels: Vec<Label>,
    pub also: Vec<TypeError>,
}

impl TypeError {
    pub fn new(span: Span, message: impl Into<String>) -> TypeError {
        TypeError {
            message: message.into(),
            span,
            labels: Vec::new(),
            also: Vec::new(),
        }
    }

    /// The error with a secondary span.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> TypeError {
        self.labels.push(Label::new(span, message));
        self
    }
}

/// A name declared (bound, defined) twice in one place: the error at the second, labelled
/// `first <verb> here` at the first.
pub fn twice(first: Span, second: Span, verb: &str, message: impl Into<String>) -> TypeError {
    TypeError::new(second, message).with_label(first, format!("first {verb} here"))
}

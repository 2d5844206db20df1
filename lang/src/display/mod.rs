//! Turning values, types and diagnostics into text that people read (LANGUAGE.md §5).

/// A value arranged for printing: the session builds it from a runtime value and its
/// surface type (so that a table of tuples prints as a table of tuples).
#[derive(Clone, Debug, PartialEq)]
pub enum DisplayValue {
    Scalar(crate::core::ir::Scalar),
    Table(Vec<DisplayValue>),
    Tuple(Vec<DisplayValue>),
}

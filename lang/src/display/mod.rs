//! Turning values, types and diagnostics into text that people read (docs/language.md).
//!
//! - `float`: `Float32`/`Float64` as C's `%.7g`/`%.15g`, the way Dex prints them.
//! - `value`: scalars, tables and tuples on one line, summarised for the REPL and notebook.
//! - `diagnostic`: errors with the source lines and carets under the span, and the plain
//!   text of every block output (`session::Output`).
//!
//! - `grid`: `:table` grids (box-drawn text, HTML) with index labels.
//! - `plot`: figures as PNG, SVG and braille text.
//! - `png`: RGB pixels as a PNG file.
//! - `image`: images (`:html`) as PNG and as text.

mod diagnostic;
mod drawing;
mod float;
#[cfg(test)]
mod float_cases;
mod grid;
mod image;
pub mod output;
mod plot;
mod png;
mod value;

pub use diagnostic::{render_diagnostic, render_output};
pub use drawing::{Drawing, Geom, Shape};
pub use float::{format_f32, format_f64};
pub use grid::{escape_html, Grid};
pub use image::Image;
pub use plot::{Chart, Figure, Labels, Series};
pub use png::encode_png;
pub use value::{format_scalar, format_value};

/// A value arranged for printing: the session builds it from a runtime value and its
/// surface type (so that a table of tuples prints as a table of tuples).
#[derive(Clone, Debug, PartialEq)]
pub enum DisplayValue {
    Scalar(crate::core::ir::Scalar),
    Table(Vec<DisplayValue>),
    Tuple(Vec<DisplayValue>),
    /// A value of a `data`/`enum` type: its constructor and fields, printed as Dex prints
    /// them (`(Just 3)`, `(MkPair 1 2.)`, `Nothing`).
    Con(String, Vec<DisplayValue>),
    /// A struct: its name and fields (`Point(1., 2.)`).
    Struct(String, Vec<DisplayValue>),
    /// A scalar printed by its type rather than its bits: a character (`'a'`), a word in
    /// hexadecimal (`0x4d2`), a string (`"abc"`).
    Text(String),
}

#[cfg(test)]
impl DisplayValue {
    /// A table of `Float32` scalars, for tests.
    pub(crate) fn f32_table(xs: &[f32]) -> DisplayValue {
        DisplayValue::Table(
            xs.iter()
                .map(|&x| DisplayValue::Scalar(crate::core::ir::Scalar::F32(x)))
                .collect(),
        )
    }
}

//! Export: the bulk IR (after `derivatives`, `bot` and `simp`, before `fuse`) as a StableHLO
//! module, so that XLA, IREE and other compilers run dx programs and their gradients on
//! several cores, GPUs, TPUs and hosts (docs/scaling.md).
//!
//! Export is one more consumer of the pipeline's verified output: [`bulk_passes`] is the prefix
//! of `passes::PIPELINE` that rewrites the program (everything before the kernel schedule;
//! XLA fuses by itself), and [`stablehlo::module`] maps the program it produces.
//!
//! - `mlir`: MLIR text (types, literals, operations in generic form, regions).
//! - `stablehlo`: statements of the bulk IR to StableHLO operations, and the module.
//! - `contract`: products summed over an axis, recognised as `dot_general`.
//! - `monoid`: `reduce` and the associative scans as `stablehlo.reduce` (commutative
//!   operators) or trees of depth O(log n) of slices and elementwise operations.
//! - `prims`: elementwise primitives with dx's total semantics (division by zero, floored
//!   `mod`, saturating casts, Threefry in 32-bit words).
//!
//! Not handled here: which functions can be exported at all is the session's question
//! (`session/export.rs`: first-order arguments and results of static shapes, typed by the
//! function's signature or by example arguments; `vjp f`'s pullback applied to a seed).

mod contract;
pub mod mlir;
pub mod monoid;
mod prims;
pub mod stablehlo;

#[cfg(test)]
mod tests;

use std::fmt;

use crate::passes::pipeline::{Compilation, Pass, PIPELINE};

/// The stage name of the exported module (`%passes stablehlo`, `:stages`).
pub const STAGE: &str = crate::passes::pipeline::EXPORT_STAGE;

/// The passes whose output is exported: the pipeline's rewrites, up to (not including)
/// fusion, which compiles the program to a schedule.
pub fn bulk_passes() -> &'static [Pass<Compilation>] {
    let end = PIPELINE
        .iter()
        .position(|pass| pass.name == crate::passes::fuse::PASS.name)
        .unwrap_or(PIPELINE.len());
    &PIPELINE[..end]
}

/// Why a program cannot be exported: the operation (as printed IR names it) and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportError {
    pub operation: String,
    pub reason: String,
}

impl ExportError {
    pub fn new(operation: impl Into<String>, reason: impl Into<String>) -> ExportError {
        ExportError {
            operation: operation.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot export `{}` to StableHLO: {}",
            self.operation, self.reason
        )
    }
}

impl std::error::Error for ExportError {}

//! Export: the bulk IR (after `derivatives`, `bot` and `simp`, before `fuse`) as a StableHLO
//! module, so that XLA, IREE and other compilers run dx programs and their gradients on
//! several cores, GPUs, TPUs and hosts (docs/scaling.md).
//!
//! Export is one more consumer of the pipeline's verified output: [`bulk_passes`] is the prefix
//! of `passes::PIPELINE` that rewrites the program (everything before the kernel schedule;
//! XLA fuses by itself), and [`stablehlo::module`] maps the program it produces.
//!
//! - `mlir`: MLIR text (types, literals, operations in generic form, regions).
//! - `stablehlo`: the module, and the writer the forms' export rules write with (each form's
//!   rule is `Operation::export` in its home in `ops`, in the vocabulary of `ops::hlo`; each
//!   primitive's is `Prim::export`, with dx's total semantics).
//! - `contract`: products summed over an axis, recognised as `dot_general`.
//!
//! Not handled here: which functions can be exported at all is the session's question
//! (`session/export.rs`: first-order arguments and results of static shapes, typed by the
//! function's signature or by example arguments; `vjp f`'s pullback applied to a seed).

mod contract;
pub mod mlir;
pub mod stablehlo;

#[cfg(test)]
pub(crate) mod tests;

pub use crate::ops::hlo::ExportError;
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

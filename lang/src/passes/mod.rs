//! Passes from the typed program to executable IR. The pipeline, in order (the session runs
//! it and verifies the IR after every pass):
//!
//! 1. `lower`: typed program → core IR (inline functions, desugar). Differentiation happens
//!    here: `lower_ad` puts each differentiated function through `bot`, `simplify` and `ad`
//!    (`jvp`, then transposition) and places the derivative program at its use.
//! 2. `bot`: the bulk-operation transform; no `build1` is left.
//! 3. `simplify`: exact algebraic identities and common subexpressions.
//! 4. `fuse`: the main block as a schedule of loop kernels and matrix products (not IR: the
//!    `fused` stage prints it; `exec::run_fused` runs it).
//!
//! `cleanup` (copy propagation, dead code) runs inside `bot` and `simplify`.

pub mod ad;
pub mod bot;
pub mod cleanup;
pub mod fuse;
pub mod lower;
mod lower_ad;
mod lower_compare;
pub mod simplify;

/// A pass's name and what it does (shown by tools and the stage viewer).
pub struct PassInfo {
    pub name: &'static str,
    pub description: &'static str,
}

/// The passes of the pipeline, in order.
pub const PIPELINE: &[PassInfo] = &[
    PassInfo {
        name: "lower",
        description: "inline functions and desugar into the core IR of seed 001 §3.2",
    },
    bot::INFO,
    simplify::INFO,
    fuse::INFO,
];

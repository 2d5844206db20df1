//! Passes from the typed program to executable IR. The pipeline is, in order:
//!
//! 1. `lower`: typed program → core IR (inline functions, desugar).
//!
//! Later issues add `bot`, `linearize`, `transpose`, `simplify` and `fuse` to this list.

pub mod ad;
pub mod bot;
pub mod cleanup;
pub mod lower;
mod lower_ad;

/// A pass's name and what it does (shown by tools and the stage viewer).
pub struct PassInfo {
    pub name: &'static str,
    pub description: &'static str,
}

pub const PIPELINE: &[PassInfo] = &[PassInfo {
    name: "lower",
    description: "inline functions and desugar into the core IR of seed 001 §3.2",
}];

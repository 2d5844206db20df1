//! The core IR (seed 001 §3.2) and what works on it directly: ids, values, printer, verifier,
//! reference interpreter.

pub mod ids;
pub mod ir;
pub mod value;

//! The core IR ([Smeding25] §3.2) and what works on it directly: ids, values, printer, parser,
//! verifier, reference interpreter, and a random-program generator for tests.

pub mod cost;
pub mod digits;
pub mod ids;
pub mod inline;
pub mod interp;
pub mod ir;
pub mod kernel;
pub mod parse;
pub mod print;
pub mod scalar_code;
pub mod sign;
pub mod testgen;
pub mod value;
pub mod verify;
pub mod verify_schedule;
pub mod visit;

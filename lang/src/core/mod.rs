//! The core IR ([Smeding25] §3.2) and what works on it without the rules of its operations:
//! ids, values, printer, parser, visitors, kernels and the schedule's parser and verifier.
//! The verifier, the reference interpreter, the cost model and the random-program generator
//! read those rules, so they live with them in `ops`.

pub mod digits;
pub mod ids;
pub mod inline;
pub mod ir;
pub mod kernel;
pub mod parse;
pub mod parse_schedule;
pub mod print;
pub mod value;
pub mod verify_schedule;
pub mod visit;

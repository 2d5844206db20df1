//! Rule homes of IR operations: one module per operation (or family) holding every rule of
//! the operation together — type rule, reference evaluation, batching (BOT), JVP, transpose
//! and cost — so that adding an operation is one file and the compiler points at the arms
//! the generic passes need (issue #11 §0).
//!
//! Only the monoid operations live here so far; the other structural operations still keep
//! their rules in `core::verify`, `core::interp`, `exec`, `passes::bot`, `passes::ad` and
//! `core::cost` (TODO(#11): move them here one by one).

pub mod monoid;

//! dx-lang: the compiler and engine of dx — everything between text and values.
//!
//! Stages (docs/architecture.md): `syntax` (blocks, pest grammar, surface AST) → `check` (names, types,
//! static shapes) → `passes::lower` (core IR) → `passes::PIPELINE` (derivatives, the
//! bulk-operation transform, simplification, fusion into a schedule of kernels) → `exec` (the
//! engine runs the schedule). `ops::interp`, the reference interpreter, is the tests' oracle;
//! `export` writes the bulk IR as StableHLO. `session` is the façade the front-ends use;
//! `display` renders what it returns.

pub mod check;
pub mod code;
pub mod complete;
pub mod core;
pub mod data;
pub mod display;
pub mod exec;
pub mod export;
pub mod ops;
pub mod passes;
pub mod prim;
pub mod session;
pub mod syntax;

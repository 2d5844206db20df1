//! The dx Jupyter kernel: the Jupyter messaging protocol 5.3 over ZeroMQ, driving one dx
//! `Session` (docs/architecture.md: the kernel talks only to `session`, and renders what it returns).
//!
//! - `server`: the sockets and the request loop (busy/idle around every request, replies as
//!   children of their requests, a control channel that stays responsive while a cell runs).
//! - `wire`: the shell channel's framing, signatures and lenient parsing.
//! - `worker`: the thread that owns the session; cells run there, one at a time.
//! - `render`: a cell's outputs as IOPub messages (text, HTML tables, PNG/SVG plots, errors).
//! - `introspect`: `is_complete`, `complete` and `inspect` requests.
//! - `parent`: the kernel ends when the process that started it is gone.
//! - `progress`: a long cell's elapsed time and progress bar, updated in place.
//! - `history`: the inputs of this kernel's session, for `history_request`.
//! - `install`: the kernelspec (`dx kernel install` / `uninstall`).
//!
//! The model is evcxr_jupyter's design; dx does not compile Rust, so it does not depend on it.

mod history;
mod install;
mod introspect;
mod parent;
mod progress;
mod render;
mod server;
mod wire;
mod worker;

pub use install::{install, uninstall, InstallLocation};
pub use server::run;

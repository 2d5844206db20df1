//! Passes from the typed program to executable IR. `lower` turns the typed program into core
//! IR; then the pipeline (`pipeline::PIPELINE`, a list of pass values run by one driver that
//! verifies the IR after every pass) takes it to a kernel schedule:
//!
//! 1. `derivatives` (stage `ad`): replaces every `jvp`/`vjp` statement that lowering emitted
//!    by its derivative program, made by the steps of `derivatives::STEPS` (run by the same
//!    driver): the function goes through `bot` and `simplify` (`ad_bot`, `ad_simp`), then
//!    `ad`'s `jvp` (stage `linear`) and transposition (stage `transposed`).
//! 2. `bot`: the bulk-operation transform; no `build1` is left.
//! 3. `simplify` (stage `simp`): exact algebraic identities and common subexpressions.
//! 4. `fuse` (stage `fused`): the main block as a schedule of loop kernels and matrix products
//!    (not IR: `exec::run_fused` runs it against the program), made by the steps of
//!    `fuse::REWRITES` (`fuse_kernels`, then the schedule rewrites), each checked by the
//!    schedule verifier.
//!
//! `cleanup` (copy propagation, dead code) runs inside `bot` and `simplify`.

pub mod bot;
pub mod cleanup;
pub mod derivatives;
pub mod fuse;
pub mod lower;
mod lower_ad;
mod lower_append;
mod lower_compare;
mod lower_data;
pub mod lower_effects;
mod lower_files;
mod lower_jacobian;
mod lower_show;
pub mod pipeline;
pub mod simplify;

pub use pipeline::PIPELINE;

//! The bulk-operation transform (BOT, [Smeding25] §5, Figs 9–11), read on ANF as batching.
//!
//! Input: verified core IR. Output: verified core IR with no `build1` anywhere (Theorem 5.1
//! (1)); `index` survives only on variables (trivially so in ANF, Theorem 5.1 (2)) and inside
//! the index functions of `gather`/`scatter`.
//!
//! `build1 k (λi. body)` is vectorised statement by statement, as JAX's vmap does (docs/architecture.md
//! "BOT as batching"). Every variable of the body gets a *status*:
//! - `Unbatched(atom)`: it does not depend on `i`; its statement is hoisted out of the build
//!   unchanged (Fig 9: `build1 k (λi. t) ~> replicate k t` for `i ∉ FV(t)`, applied lazily —
//!   the replicate is only made where a bulk operation needs it).
//! - `Batched(v)`: `v` is the bulk array, with a new leading axis of size `k`.
//! - `Index(e)`: an integer scalar computed from `i` by index arithmetic, kept symbolic so
//!   that it can become part of a gather's index function (Fig 11: `build1 k (λi. index x ix)
//!   ~> gather (k:::sh) x (λ[i]. ix)`), and only materialised when data needs it.
//!
//! Each statement form has one rule, citing the Fig 9/11 rule it reads, in its operation's
//! home in `ops`; the batching context and the dispatch to the rules (`Batcher::batch_stmt`,
//! and `batch_prim` for the elementwise primitives) are `ops::batch`. This pass decides where
//! they run: builds are transformed innermost first (`ops::build::transform_builds`), so a
//! body never contains a `build1` when it is batched; afterwards indices are pushed into
//! what defines the arrays they read (`ops::build::push_indices`, Fig 10) and gathers are
//! composed (`ops::gather_scatter::compose_gathers`).
//! Conditionals with a batched condition become strict selects (§5.2, `ops::cond`).
//! `fold`/`scan` inside a build run once over batched state (the carries that depend on `i`
//! get the batch axis, `ops::loops`); so does a `while`, with a mask of the lanes still
//! running when its condition depends on `i` (`ops::while_loop`).

use std::collections::HashMap;

use super::cleanup;
use super::pipeline::{no_stages, Compilation, Pass};
use crate::core::ir::{BlockId, Program};
use crate::ops::{build, gather_scatter};

pub const PASS: Pass<Compilation> = Pass {
    name: "bot",
    description: "the bulk-operation transform: build1 becomes bulk operations ([Smeding25] §5)",
    run: |compilation, _, _| {
        run_in_place(&mut compilation.program);
        Ok(())
    },
    postcondition: Some(|compilation| build::no_builds_left(&compilation.program)),
    nested: no_stages,
    overview: true,
};

/// Runs the BOT on a whole program.
pub fn run(program: &Program) -> Program {
    let mut program = program.clone();
    run_in_place(&mut program);
    program
}

fn run_in_place(program: &mut Program) {
    let main = program.main;
    run_block(program, main);
}

/// Whether a program is in BOT normal form: no `build1` in any reachable block.
pub fn is_normal_form(program: &Program) -> bool {
    build::no_builds_left(program).is_ok()
}

/// Runs the BOT on one block (and the blocks nested in it), e.g. a function being
/// differentiated; the block may use variables defined outside it.
pub fn run_block(program: &mut Program, block: BlockId) {
    build::transform_builds(program, block);
    cleanup::run_from(program, block);
    // Pushing an index may create index statements that can be pushed further (bounded).
    for _ in 0..3 {
        build::push_indices(program, block, &mut HashMap::new(), &mut HashMap::new());
    }
    cleanup::run_from(program, block);
    gather_scatter::compose_gathers(program, block);
    gather_scatter::drop_identity_gathers(program, block);
    cleanup::run_from(program, block);
}

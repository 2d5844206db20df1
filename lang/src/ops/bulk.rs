//! The vocabulary of the forms' engine rules: the engine's bulk evaluator, as a trait the
//! engine implements (`exec`), so that each home states how the engine runs its form beside
//! its other rules (`Operation::run`) and `ops` does not depend on the engine.
//!
//! The bulk evaluator runs a statement as one operation on whole arrays. Inside an index
//! function it runs in *batch mode* (Note [Batched blocks] in `exec`): a statement that
//! depends on the function's params runs once for all points, its operands carrying the batch
//! axes in front, which is the run-time reading of the BOT's batching rules ([Smeding25]
//! Fig 9). The methods below act after the batch axes; a form that has no batched rule (a
//! loop, a gather or scatter with its own index function) says so with
//! [`Bulk::per_point`], and the engine runs the whole index function point by point.
//!
//! Each method evaluates the statement being run and binds its results; the values stay the
//! engine's.

use crate::core::ir::{Atom, BlockId};
use crate::ops::interp::InterpError;
use crate::prim::Prim;

/// Why the bulk evaluator stopped.
#[derive(Debug)]
pub(crate) enum Stop {
    Error(InterpError),
    /// Batch mode met a batched statement it has no rule for; the caller runs per point.
    Unbatchable,
}

impl From<InterpError> for Stop {
    fn from(error: InterpError) -> Stop {
        Stop::Error(error)
    }
}

/// What an engine rule gives: the statement's results are bound, or why they are not.
pub(crate) type Ran = Result<(), Stop>;

/// The statement being run by the engine's bulk evaluator (see the module doc).
pub(crate) trait Bulk {
    /// Stops with [`Stop::Unbatchable`] when the statement would run batched: the forms
    /// without a batched rule call it first.
    fn per_point(&self) -> Ran;
    /// The atom itself.
    fn copy(&mut self, atom: &Atom) -> Ran;
    /// An elementwise primitive (rank-0 operands broadcast).
    fn apply(&mut self, prim: Prim, operands: &[Atom]) -> Ran;
    /// The sub-array of `array` at the scalar `index` (a strict error out of range).
    fn index(&mut self, array: &Atom, index: &[Atom]) -> Ran;
    /// The sum over the leading axis, in dx's summation order.
    fn sum_leading(&mut self, array: &Atom) -> Ran;
    /// The parts stacked along a new leading axis.
    fn stack(&mut self, parts: &[Atom]) -> Ran;
    /// `count` copies of `array` along a new leading axis.
    fn replicate(&mut self, count: usize, array: &Atom) -> Ran;
    /// `array`'s axes permuted: the result's axis `a` is `array`'s axis `perm[a]`.
    fn transpose(&mut self, perm: &[usize], array: &Atom) -> Ran;
    /// `array`'s elements in row-major order in `shape`.
    fn reshape(&mut self, shape: &[usize], array: &Atom) -> Ran;
    /// `0..size` as integers.
    fn iota(&mut self, size: usize) -> Ran;
    /// The results of the block the condition takes.
    fn cond(&mut self, cond: &Atom, then_block: BlockId, else_block: BlockId) -> Ran;
    /// The block's results at every index of `0..size`, stacked.
    fn build(&mut self, size: usize, body: BlockId) -> Ran;
    /// `gather shape array body`.
    fn gather(&mut self, shape: &[usize], array: &Atom, body: BlockId) -> Ran;
    /// `scatter shape array body`.
    fn scatter(&mut self, shape: &[usize], array: &Atom, body: BlockId) -> Ran;
    /// `size` steps of `body` (params: the step, then the carries) from the carries `init`:
    /// the last carries, then each of the body's results after the carries stacked over the
    /// steps (a `scan`'s outputs; none for a `fold`).
    fn counted_loop(&mut self, size: usize, init: &[Atom], body: BlockId) -> Ran;
    /// Steps of `body` (first result: whether to go on) from the carries `init` until its
    /// condition is false: the last carries; with `back`, the carries entering each step are
    /// kept and `back` runs over them in reverse from the cotangents `seeds`, giving the
    /// last of its results (`while_reverse`).
    fn while_loop(&mut self, init: &[Atom], body: BlockId, back: Option<(&[Atom], BlockId)>)
        -> Ran;
    /// A monoid reduction or scan (`ops::monoid`), in the order of Note [Monoid order].
    fn monoid(&mut self) -> Ran;
}

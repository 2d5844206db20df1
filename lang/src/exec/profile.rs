//! What each step of a schedule cost when it ran (shown by the `run` stage, `session/run_stage.rs`).
//!
//! The fused engine times every step it runs (one clock read per step, nothing per element)
//! and counts the bytes of the arrays the step reads and writes; a matrix product also
//! counts its floating-point operations. Bytes are those of whole variables, each counted
//! once: a step that reads part of an array (a gather, a slice) is charged for all of it, and
//! one that reads an array several times (a broadcast) for one pass over it.

use std::time::Duration;

use crate::core::ir::{BlockId, Program};
use crate::core::kernel::Step;

use super::fused::elem_bytes;

/// What one step of a schedule cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepProfile {
    pub time: Duration,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// For a matrix product: 2 × multiply-adds.
    pub flops: Option<u64>,
}

impl StepProfile {
    /// The profile of `step` (of a schedule of `block`) when it took `time`.
    pub fn of(program: &Program, block: BlockId, step: &Step, time: Duration) -> StepProfile {
        let bytes = |vars: Vec<_>| -> u64 {
            vars.into_iter()
                .map(|var| {
                    let ty = program.var_ty(var);
                    ty.shape.iter().map(|&dim| dim as u64).product::<u64>()
                        * elem_bytes(ty.elem) as u64
                })
                .sum()
        };
        StepProfile {
            time,
            bytes_read: bytes(step.reads(program, block)),
            bytes_written: bytes(step.outputs(program, block)),
            flops: step.flops(),
        }
    }
}

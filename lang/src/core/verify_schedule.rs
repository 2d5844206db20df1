//! The verifier of schedules (the `fused` stage's output), run by the pipeline driver after
//! the pass that makes one, as `verify` runs after every pass over the IR.
//!
//! A schedule of a block computes the block's statements in steps. It is well formed when
//! every variable of the block (a binder of one of its statements) that a step reads was
//! bound by an earlier step (a scatter added in place reads the value it goes into), no
//! variable is bound twice, and every result of the block that the block computes is
//! bound. Outputs a step does not bind (a row group's local members, a monoid step's
//! operands and unused results) are thereby never read after it. The schedules of loop
//! bodies are checked the same way, each over its own block.

use std::collections::HashSet;

use crate::core::ir::{Program, VarId};
use crate::core::kernel::Schedule;
use crate::core::print::var_text;
use crate::core::visit::var_of;

/// Checks `schedule` against `program` (see the module documentation); the first problem
/// found, in words, if any.
pub fn verify_schedule(program: &Program, schedule: &Schedule) -> Result<(), String> {
    let block = schedule.block;
    let defined: HashSet<VarId> = program.blocks[block]
        .stmts
        .iter()
        .flat_map(|stmt| stmt.binders.iter().copied())
        .collect();
    let mut bound: HashSet<VarId> = HashSet::new();
    for (number, step) in schedule.steps.iter().enumerate() {
        for var in step.reads(program, block) {
            if defined.contains(&var) && !bound.contains(&var) {
                return Err(format!(
                    "step {number} reads {} before any step binds it",
                    var_text(program, var)
                ));
            }
        }
        for var in step.outputs(program, block) {
            if !bound.insert(var) {
                return Err(format!(
                    "step {number} binds {} again",
                    var_text(program, var)
                ));
            }
        }
    }
    for var in program.blocks[block]
        .results
        .iter()
        .filter_map(|atom| var_of(*atom))
    {
        if defined.contains(&var) && !bound.contains(&var) {
            return Err(format!(
                "no step binds the result {}",
                var_text(program, var)
            ));
        }
    }
    for body in &schedule.loop_bodies {
        verify_schedule(program, body)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::parse::parse_program;

    /// A block whose exponentials have two readers (so a kernel materialises them) and whose
    /// results are the exponentials and their sums by column.
    const PROGRAM: &str = "program(%0: [64, 100]f32) {
           %1: [64, 100]f32 = exp %0
           %2: [100]f32 = sumOuter %1
           %3: [64, 100]f32 = replicate 64 %2
           %4: [64, 100]f32 = div %1 %3
           in %4, %1
         }";

    fn schedule() -> (Program, Schedule) {
        let program = parse_program(PROGRAM).unwrap_or_else(|error| panic!("{error}"));
        let schedule = crate::passes::fuse::run(&program);
        (program, schedule)
    }

    #[test]
    fn the_fused_schedule_is_well_formed() {
        let (program, schedule) = schedule();
        assert!(schedule.steps.len() >= 2, "{}", schedule.display(&program));
        assert_eq!(verify_schedule(&program, &schedule), Ok(()));
    }

    /// Steps out of order, a step twice, a step missing: each is named.
    #[test]
    fn broken_schedules_are_refused_with_the_reason() {
        let (program, good) = schedule();
        let last = good.steps.len() - 1;
        let mut reversed = good.clone();
        reversed.steps.reverse();
        let mut twice = good.clone();
        twice.steps.push(good.steps[0].clone());
        let mut short = good.clone();
        short.steps.truncate(last);
        for (schedule, reason) in [
            (reversed, "before any step binds it"),
            (twice, "again"),
            (short, "no step binds the result"),
        ] {
            let error = verify_schedule(&program, &schedule).expect_err(reason);
            assert!(error.contains(reason), "{error}");
        }
    }
}

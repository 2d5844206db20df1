//! The `run` stage: the compile time of each pass, then what each step of the fused schedule
//! cost when it ran: its time (`ExecReport::step_times`; in a `%bench` block, its median
//! over the timed runs), the bytes of the arrays it read and
//! wrote, and the rate (GB/s, or GFLOP/s for a matrix product). Bytes are those of whole
//! variables, each counted once: a step that reads part of an array (a gather, a slice) is
//! charged for all of it, one that reads an array several times (a broadcast) for one pass.

use std::fmt::Write;
use std::time::Duration;

use crate::core::ir::{Program, Scatter, VarId};
use crate::core::kernel::{Schedule, Step};
use crate::passes::pipeline::PassTime;

use super::format_duration;
use crate::ops::interp::format_bytes;

/// The text of the `run` stage: the compile time of each pass of the pipeline, then one line per step of
/// `schedule` (numbered as in the `fused` stage) with its time, bytes and rate; `runs`, the
/// number of timed runs whose medians `step_times` are, if any.
pub fn render(
    program: &Program,
    schedule: &Schedule,
    pass_times: &[PassTime],
    step_times: &[Duration],
    runs: Option<usize>,
) -> String {
    let mut text = String::new();
    let passes: Vec<String> = pass_times
        .iter()
        .filter(|time| time.depth == 0)
        .map(|time| format!("{} {}", time.pass, format_duration(time.time)))
        .collect();
    let _ = writeln!(text, "compile: {}", passes.join(", "));
    let total: Duration = step_times.iter().sum();
    let _ = writeln!(
        text,
        "run: {} in {} steps{}",
        format_duration(total),
        step_times.len(),
        runs.map_or(String::new(), |runs| format!(
            " (each step's median of {runs} runs)"
        ))
    );
    let block = &program.blocks[schedule.block];
    let bytes = |vars: Vec<VarId>| -> u128 {
        vars.into_iter()
            .map(|var| program.var_ty(var).n_bytes())
            .sum()
    };
    for (number, (step, &time)) in schedule.steps.iter().zip(step_times).enumerate() {
        let what = match step {
            Step::Kernel(kernel) => match kernel.reduce {
                Some(reduction) => format!("kernel ({})", reduction.name()),
                None => "kernel".to_string(),
            },
            Step::Rows(rows) => format!(
                "rows of {} kernels{}",
                rows.kernels.len(),
                if rows.scatter_add.is_some() {
                    " and a scatter-add"
                } else {
                    ""
                }
            ),
            Step::MatMul(_) => "matmul".to_string(),
            Step::ScatterAdd { .. } => "scatter-add".to_string(),
            Step::Monoid(monoid) => {
                let count =
                    |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
                let mut what = format!(
                    "monoid {}, {}",
                    crate::core::print::expr_name(&block.stmts[monoid.stmt].expr),
                    count(monoid.producers.len(), "producer")
                );
                if !monoid.consumers.is_empty() {
                    what += &format!(", {}", count(monoid.consumers.len(), "consumer"));
                }
                what
            }
            Step::Stmt(index) => format!(
                "{} {}",
                if !schedule.step_bodies(program, step).is_empty() {
                    "loop"
                } else {
                    "bulk"
                },
                crate::core::print::expr_name(&block.stmts[*index].expr)
            ),
        };
        let (read, written) = match step {
            // It reads its scatter's operands and adds one value per element of the scattered
            // array, not the whole of the value it updates.
            Step::ScatterAdd { stmt, .. } => {
                let added = match Scatter::of(&block.stmts[*stmt].expr) {
                    Some(Scatter { array, .. }) => program.atom_ty(array).n_bytes(),
                    None => unreachable!("a scatter-add step runs a scatter"),
                };
                (
                    bytes(Step::Stmt(*stmt).reads(program, schedule.block)),
                    added,
                )
            }
            _ => (
                bytes(step.reads(program, schedule.block)),
                bytes(step.outputs(program, schedule.block)),
            ),
        };
        let seconds = time.as_secs_f64();
        let rate = match step.flops() {
            Some(flops) => format!(
                "{:.2} GFLOP/s",
                per_second(u128::from(flops), seconds) / 1e9
            ),
            None => format!("{:.2} GB/s", per_second(read + written, seconds) / 1e9),
        };
        let _ = writeln!(
            text,
            "  k{number} {what}: {}, read {}, wrote {}, {rate}",
            format_duration(time),
            format_bytes(read),
            format_bytes(written),
        );
    }
    text
}

fn per_second(amount: u128, seconds: f64) -> f64 {
    if seconds > 0.0 {
        amount as f64 / seconds
    } else {
        0.0
    }
}

//! The `run` stage: the compile time of each pass, then what each step of the fused schedule
//! cost when it ran (`exec::profile`): time, bytes of the arrays read and written, and the rate
//! (GB/s, or GFLOP/s for a matrix product).

use std::fmt::Write;
use std::time::Duration;

use crate::core::ir::Program;
use crate::core::kernel::{Schedule, Step};
use crate::exec::profile::StepProfile;
use crate::passes::pipeline::PassTime;

use super::format_duration;

/// The text of the `run` stage: the compile time of each pass, then one line per step of
/// `schedule` (numbered as in the `fused` stage) with its time, bytes and rate.
pub fn render(
    program: &Program,
    schedule: &Schedule,
    pass_times: &[PassTime],
    steps: &[StepProfile],
) -> String {
    let mut text = String::new();
    let passes: Vec<String> = pass_times
        .iter()
        .map(|time| format!("{} {}", time.pass, format_duration(time.time)))
        .collect();
    let _ = writeln!(text, "compile: {}", passes.join(", "));
    let total: Duration = steps.iter().map(|step| step.time).sum();
    let _ = writeln!(
        text,
        "run: {} in {} steps",
        format_duration(total),
        steps.len()
    );
    let main = &program.blocks[program.main];
    for (number, (step, profile)) in schedule.steps.iter().zip(steps).enumerate() {
        let what = match step {
            Step::Kernel(kernel) if kernel.reduce => "kernel (sum)".to_string(),
            Step::Kernel(_) => "kernel".to_string(),
            Step::MatMul(_) => "matmul".to_string(),
            Step::Stmt(index) => format!(
                "{} {}",
                if schedule.loop_body(program, step).is_some() {
                    "loop"
                } else {
                    "bulk"
                },
                crate::core::print::expr_name(&main.stmts[*index].expr)
            ),
        };
        let seconds = profile.time.as_secs_f64();
        let rate = match profile.flops {
            Some(flops) => format!("{:.2} GFLOP/s", per_second(flops, seconds) / 1e9),
            None => format!(
                "{:.2} GB/s",
                per_second(profile.bytes_read + profile.bytes_written, seconds) / 1e9
            ),
        };
        let _ = writeln!(
            text,
            "  k{number} {what}: {}, read {}, wrote {}, {rate}",
            format_duration(profile.time),
            bytes_text(profile.bytes_read),
            bytes_text(profile.bytes_written),
        );
    }
    text
}

fn per_second(amount: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        amount as f64 / seconds
    } else {
        0.0
    }
}

/// A byte count in B, KB, MB or GB (powers of 1000, as rates are).
fn bytes_text(bytes: u64) -> String {
    let bytes = bytes as f64;
    let (value, unit) = if bytes >= 1e9 {
        (bytes / 1e9, "GB")
    } else if bytes >= 1e6 {
        (bytes / 1e6, "MB")
    } else if bytes >= 1e3 {
        (bytes / 1e3, "KB")
    } else {
        return format!("{bytes} B");
    };
    significant(value, unit)
}

fn significant(value: f64, unit: &str) -> String {
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_keep_three_significant_digits() {
        assert_eq!(bytes_text(999), "999 B");
        assert_eq!(bytes_text(4_000_000), "4.00 MB");
        assert_eq!(bytes_text(123_456_789_000), "123 GB");
    }
}

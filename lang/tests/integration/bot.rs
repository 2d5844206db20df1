//! The bulk-operation transform, the simplifier and fusion against the reference interpreter:
//! on random well-typed programs, `bot` then `simplify` must give a verified program in normal
//! form (Theorem 5.1) that computes exactly what the original computes, on the bulk evaluator
//! and, fused (`passes::fuse`), on the fused engine — bit for bit, on any number of threads.

use dx_lang::core::ir::{While, WhileReverse};
use dx_lang::ops::interp::{self, InterpConfig};
use dx_lang::ops::testgen::{random_inputs, random_program, GenConfig};
use dx_lang::ops::verify::verify;
use dx_lang::passes::{bot, cleanup, fuse, simplify};

/// Checks one random program; returns the kernel launches that ran as machine code.
fn check_seed(seed: u64, config: &GenConfig) -> usize {
    let program = random_program(seed, config);
    // The pipeline after lowering: the BOT, then simplification.
    let mut transformed = bot::run(&program);
    simplify::run(&mut transformed);
    if let Err(errors) = verify(&transformed) {
        let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
        panic!("seed {seed}: BOT output does not verify:\n{}\nbefore:\n{program}\nafter:\n{transformed}", listed.join("\n"));
    }
    assert!(
        bot::is_normal_form(&transformed),
        "seed {seed}: build1 left after the BOT:\n{transformed}"
    );
    let inputs = random_inputs(&program, seed);
    // Dead statements are dropped by the BOT's clean-up, so in strict mode an unused
    // out-of-range read is no longer an error; compare against the cleaned original.
    let mut baseline = program.clone();
    cleanup::run(&mut baseline);
    let mut compiled_kernels = 0;
    for strict in [false, true] {
        let config = InterpConfig {
            strict,
            interrupt: None,
        };
        let expected = interp::run(&baseline, &inputs, &config);
        let actual = interp::run(&transformed, &inputs, &config);
        // The bulk evaluator runs the BOT output; it must agree with the reference interpreter
        // on the original program.
        let exec_config = dx_lang::exec::ExecConfig {
            strict,
            ..Default::default()
        };
        let bulk = dx_lang::exec::run_with_report(&transformed, &inputs, &exec_config);
        match (&expected, &bulk) {
            (Ok(expected), Ok((bulk, report))) => {
                assert!(
                    expected.iter().zip(bulk).all(|(a, b)| same_bits(a, b)),
                    "seed {seed}: bulk evaluation differs\nexpected {expected:?}\nbulk {bulk:?}\nafter:\n{transformed}"
                );
                assert_eq!(report.build1_fallbacks, 0, "seed {seed}: the bulk evaluator met a build1");
            }
            (Err(_), _) | (_, Err(_)) if strict => {}
            _ => panic!("seed {seed} (strict: {strict}): {expected:?} vs bulk {bulk:?}\nafter:\n{transformed}"),
        }
        if !strict {
            compiled_kernels = check_fused(seed, &transformed, &inputs, expected.as_ref().ok());
        }
        match (&expected, &actual) {
            (Ok(expected), Ok(actual)) => assert!(
                expected.iter().zip(actual).all(|(a, b)| same_bits(a, b)),
                "seed {seed}: results differ\nexpected {expected:?}\nactual {actual:?}\nbefore:\n{program}\nafter:\n{transformed}"
            ),
            // Strict mode reports reads that happen: the BOT evaluates both sides of a batched
            // conditional (a strict select, [Smeding25] §5.2), which may add reads, and drops
            // dead statements, which removes them; only the values are compared.
            (Err(_), _) | (_, Err(_)) if strict => {}
            _ => panic!("seed {seed} (strict: {strict}): {expected:?} vs {actual:?}\nbefore:\n{program}\nafter:\n{transformed}"),
        }
    }
    compiled_kernels
}

/// The fused engine on `program` must give `expected` (the interpreter's results) exactly:
/// random programs are far too small for matrix products, so every sum runs in dx's order.
/// Run with small kernels interpreted and compiled (Note [Compiled kernels]); returns the
/// launches that ran compiled.
fn check_fused(
    seed: u64,
    program: &dx_lang::core::ir::Program,
    inputs: &[dx_lang::core::value::Array],
    expected: Option<&Vec<dx_lang::core::value::Array>>,
) -> usize {
    use dx_lang::exec::{CompileLoops, ExecConfig};
    let schedule = fuse::schedule(program, &mut dx_lang::passes::pipeline::Log::default())
        .unwrap_or_else(|ice| panic!("seed {seed}: {ice}"));
    assert_eq!(
        schedule.counts().1,
        0,
        "seed {seed}: a matrix product in a tiny program"
    );
    let mut compiled = 0;
    for compile_loops in [CompileLoops::Never, CompileLoops::Always] {
        let config = ExecConfig {
            compile_loops,
            ..ExecConfig::default()
        };
        let fused = dx_lang::exec::run_fused(program, &schedule, inputs, &config);
        match (expected, &fused) {
            (Some(expected), Ok((fused, report))) => {
                assert!(
                    expected.iter().zip(fused).all(|(a, b)| same_bits(a, b)),
                    "seed {seed}: the fused engine differs ({compile_loops:?})\nexpected {expected:?}\nfused {fused:?}\nprogram:\n{program}\nschedule:\n{}",
                    schedule.display(program)
                );
                compiled = report.compiled_kernels;
            }
            _ => panic!("seed {seed}: {expected:?} vs fused {fused:?}\n{program}"),
        }
    }
    compiled
}

/// Equality of arrays where NaNs compare equal to themselves.
fn same_bits(a: &dx_lang::core::value::Array, b: &dx_lang::core::value::Array) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

#[test]
fn bot_agrees_with_the_interpreter_on_random_programs() {
    let config = GenConfig::default();
    let compiled: usize = (0..3000).map(|seed| check_seed(seed, &config)).sum();
    eprintln!("compiled kernel launches: {compiled}");
    // Most of their kernels are small enough to compile (Note [Compiled kernels]).
    assert!(
        compiled > 1000,
        "only {compiled} kernel launches ran compiled"
    );
}

#[test]
fn bot_agrees_on_deeper_programs() {
    let config = GenConfig::deeper();
    for seed in 10_000..11_000 {
        check_seed(seed, &config);
    }
}

/// The random programs exercise the batching of loops with data-dependent trip counts: among
/// the first seeds, whiles and reverse sweeps inside builds whose lanes may stop at different
/// steps (batched with a mask of the active lanes, its param named `active`).
#[test]
fn random_programs_batch_whiles_with_masks() {
    use dx_lang::core::ir::Expr;
    let config = GenConfig::default();
    let (mut masked_whiles, mut masked_reverses) = (0, 0);
    for seed in 0..3000 {
        let program = random_program(seed, &config);
        let transformed = bot::run(&program);
        let blocks = dx_lang::core::visit::reachable_blocks(&transformed, transformed.main);
        for stmt in blocks
            .iter()
            .flat_map(|block| &transformed.blocks[*block].stmts)
        {
            let (body, counter) = match &stmt.expr {
                Expr::While(While { body, .. }) => (*body, &mut masked_whiles),
                Expr::WhileReverse(WhileReverse { body, .. }) => (*body, &mut masked_reverses),
                _ => continue,
            };
            let params = &transformed.blocks[body].params;
            if params
                .last()
                .is_some_and(|param| transformed.vars[*param].hint == "active")
            {
                *counter += 1;
            }
        }
    }
    eprintln!("{masked_whiles} masked whiles, {masked_reverses} masked reverse sweeps");
    assert!(
        masked_whiles >= 10 && masked_reverses >= 10,
        "{masked_whiles} masked whiles, {masked_reverses} masked reverse sweeps"
    );
}

//! The pipeline as data: the passes from core IR to a kernel schedule, in order, each a value
//! with its stage name, and one driver that runs them.
//!
//! The driver is the only place that sequences passes (Cranelift's `Context::compile`, JAX's
//! lowering pipeline): after every pass it runs the verifier, checks that the types of the
//! program's results did not change and checks the pass's own postcondition; it times the
//! pass and records its stage dump when asked. A failed check is an [`Ice`] (an internal
//! compiler error as a value: the pass, what is wrong, the IR), never a panic or a string
//! with a magic prefix.
//!
//! Differentiation is the first pass: `derivatives` puts each function being differentiated
//! through its steps (the BOT and simplification of the function, then `jvp` and
//! transposition) with the same checks after each step, recording the `linear` and
//! `transposed` stages.

use std::fmt;
use std::time::{Duration, Instant};

use crate::core::ir::{ArrTy, Program};
use crate::core::kernel::Schedule;
use crate::core::verify::{self, VerifyError};
use crate::core::verify_schedule::verify_schedule;

/// What a pass does.
pub enum PassKind {
    /// Rewrites the program in place, recording any stages of its own in the log.
    Rewrite(fn(&mut Program, &mut Log) -> Result<(), Ice>),
    /// Compiles the main block into a schedule of kernels; the program itself is unchanged
    /// (the last pass: the engine runs the schedule against the program).
    Schedule(fn(&Program) -> Schedule),
}

/// A pass of the pipeline.
pub struct Pass {
    /// Its stage name (`%passes NAME` / `:stages on NAME` show the IR after it).
    pub name: &'static str,
    /// Stages the pass records itself, before its own (the derivative programs).
    pub inner_stages: &'static [&'static str],
    pub description: &'static str,
    pub kind: PassKind,
    /// What must hold after the pass beyond the verifier's checks (`Err` says what does
    /// not).
    pub postcondition: Option<Postcondition>,
}

/// A property of a pass's output; `Err` says what does not hold.
pub type Postcondition = fn(&Program) -> Result<(), String>;

/// The passes after `lower`, in order.
pub const PIPELINE: &[Pass] = &[
    super::derivatives::PASS,
    super::bot::PASS,
    super::simplify::PASS,
    super::fuse::PASS,
];

/// Stages that consumers of the pipeline make on request from its bulk IR (the output of the
/// last rewrite, before `fuse`), without changing what runs: the exported StableHLO module.
pub const CONSUMER_STAGES: &[&str] = &[crate::export::STAGE];

/// The stages of the pipeline, in order: each pass's inner stages, then the pass's own; then
/// the consumers' stages.
pub fn stages() -> impl Iterator<Item = &'static str> {
    PIPELINE
        .iter()
        .flat_map(|pass| pass.inner_stages.iter().copied().chain([pass.name]))
        .chain(CONSUMER_STAGES.iter().copied())
}

/// The pass before the pipeline (typed program → core IR; its stage is `core`), named in
/// the errors about its output.
pub const LOWER: &str = "lower";

/// An internal compiler error: a pass broke an invariant. Carries the IR it produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Ice {
    pub pass: &'static str,
    pub problem: Problem,
    /// The program after the pass (annotated with the verifier's errors where there are).
    pub ir: String,
}

/// What an [`Ice`] found wrong.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    IllFormed(Vec<VerifyError>),
    ResultTypesChanged {
        before: Vec<ArrTy>,
        after: Vec<ArrTy>,
    },
    Postcondition(String),
    /// The pass reported a bug itself.
    Failed(String),
}

impl Ice {
    /// A bug a pass found itself.
    pub fn failed(pass: &'static str, what: impl Into<String>, program: &Program) -> Ice {
        Ice {
            pass,
            problem: Problem::Failed(what.into()),
            ir: program.to_string(),
        }
    }
}

impl fmt::Display for Ice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pass = self.pass;
        match &self.problem {
            Problem::IllFormed(errors) => {
                writeln!(f, "`{pass}` produced ill-formed IR:")?;
                for error in errors {
                    writeln!(f, "{error}")?;
                }
            }
            Problem::ResultTypesChanged { before, after } => {
                let list = |tys: &[ArrTy]| {
                    tys.iter()
                        .map(crate::core::print::ty_text)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                writeln!(
                    f,
                    "`{pass}` changed the types of the results from ({}) to ({}):",
                    list(before),
                    list(after)
                )?;
            }
            Problem::Postcondition(what) | Problem::Failed(what) => {
                writeln!(f, "`{pass}`: {what}:")?;
            }
        }
        f.write_str(&self.ir)
    }
}

/// How long a pass took.
#[derive(Clone, Debug, PartialEq)]
pub struct PassTime {
    pub pass: &'static str,
    pub time: Duration,
}

/// A stage dump recorded by the driver.
#[derive(Clone, Debug, PartialEq)]
pub struct StageDump {
    pub stage: &'static str,
    pub text: String,
}

/// What the driver produced.
pub struct Compiled {
    /// The program after the last rewrite.
    pub program: Program,
    /// The main block as kernels (when the passes include `fuse`).
    pub schedule: Option<Schedule>,
    /// The dumps of the stages asked for, in pipeline order.
    pub stages: Vec<StageDump>,
    pub times: Vec<PassTime>,
}

/// The records the driver keeps while it runs; passes that run passes of their own (the
/// derivatives) add theirs.
#[derive(Default)]
pub struct Log {
    pub stages: Vec<StageDump>,
    pub times: Vec<PassTime>,
    /// Which stages to dump.
    pub wanted: Vec<String>,
    /// Remarks of passes on their stage (e.g. that a bound stopped a rewrite), shown at the
    /// end of its dump.
    pub notes: Vec<(&'static str, String)>,
}

impl Log {
    pub fn new(wanted: &[String]) -> Log {
        Log {
            wanted: wanted.to_vec(),
            ..Log::default()
        }
    }

    pub fn wants(&self, stage: &str) -> bool {
        self.wanted.iter().any(|wanted| wanted == stage)
    }

    pub fn record(&mut self, stage: &'static str, text: impl FnOnce() -> String) {
        if self.wants(stage) {
            let mut text = text();
            for (_, note) in self.notes.iter().filter(|(about, _)| *about == stage) {
                text.push_str(&format!("\n; {note}"));
            }
            self.stages.push(StageDump { stage, text });
        }
    }

    /// Adds a remark to a stage's dump.
    pub fn note(&mut self, stage: &'static str, note: String) {
        self.notes.push((stage, note));
    }
}

/// Runs `passes` on the output of lowering, verifying it first.
pub fn run(core: &Program, passes: &[Pass], wanted: &[String]) -> Result<Compiled, Ice> {
    let mut log = Log::new(wanted);
    check(LOWER, core, None, None)?;
    let results = result_types(core);
    let mut program = core.clone();
    let mut schedule = None;
    for pass in passes {
        let start = Instant::now();
        match pass.kind {
            PassKind::Rewrite(rewrite) => {
                rewrite(&mut program, &mut log)?;
                check(pass.name, &program, Some(&results), pass.postcondition)?;
                log.record(pass.name, || program.to_string());
            }
            PassKind::Schedule(compile) => {
                let compiled = compile(&program);
                verify_schedule(&program, &compiled).map_err(|what| Ice {
                    pass: pass.name,
                    problem: Problem::Postcondition(what),
                    ir: compiled.display(&program).to_string(),
                })?;
                log.record(pass.name, || compiled.display(&program).to_string());
                schedule = Some(compiled);
            }
        }
        log.times.push(PassTime {
            pass: pass.name,
            time: start.elapsed(),
        });
    }
    Ok(Compiled {
        schedule,
        program,
        stages: log.stages,
        times: log.times,
    })
}

/// The driver's checks after `pass`: the verifier, the result types, the postcondition.
pub fn check(
    pass: &'static str,
    program: &Program,
    results: Option<&[ArrTy]>,
    postcondition: Option<Postcondition>,
) -> Result<(), Ice> {
    if let Err(errors) = verify::verify(program) {
        return Err(Ice {
            pass,
            ir: verify::annotate(program, &errors),
            problem: Problem::IllFormed(errors),
        });
    }
    let ice = |problem| Ice {
        pass,
        problem,
        ir: program.to_string(),
    };
    if let Some(before) = results {
        let after = result_types(program);
        if after != before {
            return Err(ice(Problem::ResultTypesChanged {
                before: before.to_vec(),
                after,
            }));
        }
    }
    if let Some(postcondition) = postcondition {
        postcondition(program).map_err(|what| ice(Problem::Postcondition(what)))?;
    }
    Ok(())
}

fn result_types(program: &Program) -> Vec<ArrTy> {
    program.blocks[program.main]
        .results
        .iter()
        .map(|atom| program.atom_ty(atom))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ir::{Atom, Elem, Expr, Scalar};
    use crate::core::parse::parse_program;

    const SUM_OF_SQUARES: &str = "program(%0_x: [8]f32) {
           %1: [8]f32 = build1 8 (\\%2_i: []i64 ->
             %3: []f32 = index %0_x [%2_i]
             %4: []f32 = mul %3 %3
             in %4)
           %5: []f32 = sumOuter %1
           in %5
         }";

    fn program() -> Program {
        parse_program(SUM_OF_SQUARES).expect("the test program parses")
    }

    fn all_stages() -> Vec<String> {
        PIPELINE.iter().map(|pass| pass.name.to_string()).collect()
    }

    #[test]
    fn runs_every_pass_in_order_and_records_what_was_asked() {
        let compiled = run(&program(), PIPELINE, &all_stages()).expect("compiles");
        let timed: Vec<&str> = compiled.times.iter().map(|time| time.pass).collect();
        let recorded: Vec<&str> = compiled.stages.iter().map(|dump| dump.stage).collect();
        let names: Vec<&str> = PIPELINE.iter().map(|pass| pass.name).collect();
        assert_eq!(timed, names);
        assert_eq!(recorded, names);
        assert!(compiled.schedule.is_some());
        assert!(crate::passes::bot::is_normal_form(&compiled.program));
        let only_bot = run(&program(), PIPELINE, &["bot".to_string()]).expect("compiles");
        assert_eq!(only_bot.stages.len(), 1);
        assert!(!only_bot.stages[0].text.contains("build1"));
    }

    /// A pass that breaks the IR: it makes the main block return an undefined variable.
    fn dangling(program: &mut Program, _: &mut Log) -> Result<(), Ice> {
        let var = program.new_var(ArrTy::scalar(Elem::F32), "ghost");
        let main = program.main;
        program.blocks[main].results = vec![Atom::Var(var)];
        Ok(())
    }

    /// A pass that returns a literal of another type.
    fn retype(program: &mut Program, _: &mut Log) -> Result<(), Ice> {
        let main = program.main;
        program.blocks[main].results = vec![Atom::Lit(Scalar::I64(0))];
        Ok(())
    }

    /// A pass that reintroduces a `build1` after the BOT.
    fn rebuild(program: &mut Program, _: &mut Log) -> Result<(), Ice> {
        let index = program.new_var(ArrTy::scalar(Elem::I64), "i");
        let body = program.blocks.push(crate::core::ir::Block {
            params: vec![index],
            stmts: Vec::new(),
            results: vec![Atom::Lit(Scalar::F32(1.0))],
        });
        let var = program.new_var(ArrTy::new(vec![2], Elem::F32), "ones");
        let main = program.main;
        program.blocks[main].stmts.push(crate::core::ir::Stmt {
            binders: vec![var],
            expr: Expr::Build1 { size: 2, body },
        });
        Ok(())
    }

    fn broken(name: &'static str, rewrite: fn(&mut Program, &mut Log) -> Result<(), Ice>) -> Ice {
        let passes = [
            crate::passes::bot::PASS,
            Pass {
                name,
                description: "a broken pass",
                inner_stages: &[],
                kind: PassKind::Rewrite(rewrite),
                postcondition: crate::passes::bot::PASS.postcondition,
            },
        ];
        match run(&program(), &passes, &[]) {
            Err(ice) => ice,
            Ok(_) => panic!("the driver accepted the output of `{name}`"),
        }
    }

    #[test]
    fn an_ill_formed_output_is_an_ice_naming_the_pass_with_the_verifier_errors() {
        let ice = broken("dangling", dangling);
        assert_eq!(ice.pass, "dangling");
        let Problem::IllFormed(errors) = &ice.problem else {
            panic!("expected verifier errors, got {:?}", ice.problem);
        };
        assert!(!errors.is_empty());
        assert!(ice.ir.contains("ghost"), "{}", ice.ir);
        assert!(ice
            .to_string()
            .starts_with("`dangling` produced ill-formed IR"));
    }

    #[test]
    fn changed_result_types_and_broken_postconditions_are_ices() {
        let ice = broken("retype", retype);
        assert!(
            matches!(&ice.problem, Problem::ResultTypesChanged { before, after }
                if before[0].elem == Elem::F32 && after[0].elem == Elem::I64),
            "{ice}"
        );
        let ice = broken("rebuild", rebuild);
        assert!(matches!(ice.problem, Problem::Postcondition(_)), "{ice}");
    }

    #[test]
    fn the_input_of_the_pipeline_is_verified_as_the_output_of_lower() {
        let mut input = program();
        dangling(&mut input, &mut Log::default()).unwrap();
        let ice = run(&input, PIPELINE, &[]).err().expect("an ice");
        assert_eq!(ice.pass, LOWER);
    }
}

//! The pipeline as data: the passes from core IR to a kernel schedule, in order, each a value
//! with its stage name, and one driver that runs them.
//!
//! The driver ([`run_passes`]) is the only place that sequences passes (Cranelift's
//! `Context::compile`, JAX's lowering pipeline): after every pass it runs the checks of what
//! the passes rewrite (the [`Subject`]: the IR verifier, the schedule verifier) and the
//! pass's own postcondition; it times the pass and records its stage dump when asked. A
//! failed check is an [`Ice`] (an internal compiler error as a value: the pass, what is
//! wrong, the IR), never a panic or a string with a magic prefix.
//!
//! Two passes run pipelines of their own through the same driver, so every step between
//! them is checked and can be shown by name (`%passes NAME`): `ad` takes each derivative
//! through [`crate::passes::derivatives::STEPS`] (the BOT and simplification of the
//! function, then `jvp` and transposition), and `fused` puts the kernels it makes through
//! the schedule rewrites of `crate::passes::fuse::REWRITES`.

use std::fmt;
use std::time::{Duration, Instant};

use crate::core::ir::{ArrTy, Program};
use crate::core::kernel::Schedule;
use crate::core::verify_schedule::verify_schedule;
use crate::ops::verify::{self, VerifyError};

/// What the passes of a pipeline rewrite, and the checks the driver makes after each of them.
pub trait Subject {
    /// What the passes read besides their subject (the program a schedule is of).
    type Input: ?Sized;
    /// The checks that hold after every pass (`pass` names the pass in the [`Ice`]).
    fn check(&self, input: &Self::Input, pass: &'static str) -> Result<(), Ice>;
    /// The text of the subject, recorded as the stage of a pass.
    fn show(&self, input: &Self::Input) -> String;
}

/// A pass: a rewrite of a subject `S`.
pub struct Pass<S: Subject + 'static> {
    /// Its stage name (`%passes NAME` / `:stages on NAME` show the subject after it).
    pub name: &'static str,
    pub description: &'static str,
    pub run: fn(&mut S, &S::Input, &mut Log) -> Result<(), Ice>,
    /// What must hold after the pass beyond the subject's checks (`Err` says what does not).
    pub postcondition: Option<Postcondition<S>>,
    /// The stages of the pipelines the pass runs inside itself, recorded before its own.
    pub nested: fn() -> Vec<Stage>,
    /// Whether `:stages e` (every stage of a block) shows this one; the steps inside a pass
    /// are shown by name only.
    pub overview: bool,
}

impl<S: Subject> Pass<S> {
    /// A pass with no postcondition and no pipeline of its own, shown by `:stages e`.
    pub const fn new(
        name: &'static str,
        description: &'static str,
        run: fn(&mut S, &S::Input, &mut Log) -> Result<(), Ice>,
    ) -> Pass<S> {
        Pass {
            name,
            description,
            run,
            postcondition: None,
            nested: no_stages,
            overview: true,
        }
    }

    /// A step inside another pass: as [`Pass::new`], shown only when named.
    pub const fn step(
        name: &'static str,
        description: &'static str,
        run: fn(&mut S, &S::Input, &mut Log) -> Result<(), Ice>,
    ) -> Pass<S> {
        Pass {
            overview: false,
            ..Pass::new(name, description, run)
        }
    }
}

impl<S: Subject> Clone for Pass<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Subject> Copy for Pass<S> {}

/// A property of a pass's output; `Err` says what does not hold.
pub type Postcondition<S> = fn(&S) -> Result<(), String>;

/// A stage of the pipeline, as `%passes` and `:stages` know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    pub name: &'static str,
    pub overview: bool,
}

/// The stages of `passes`, in order: each pass's nested stages, then its own.
pub fn stages_of<S: Subject>(passes: &[Pass<S>]) -> Vec<Stage> {
    passes
        .iter()
        .flat_map(|pass| {
            (pass.nested)().into_iter().chain([Stage {
                name: pass.name,
                overview: pass.overview,
            }])
        })
        .collect()
}

/// For [`Pass::nested`]: the pass runs no pipeline of its own.
pub fn no_stages() -> Vec<Stage> {
    Vec::new()
}

/// The compilation of a block: the program, and the schedule once `fused` has made it.
pub struct Compilation {
    pub program: Program,
    pub schedule: Option<Schedule>,
    /// The types of the program's results, which no pass may change.
    results: Vec<ArrTy>,
}

impl Subject for Compilation {
    type Input = ();

    fn check(&self, _: &(), pass: &'static str) -> Result<(), Ice> {
        verify_program(pass, &self.program, Some(&self.results))?;
        match &self.schedule {
            Some(schedule) => check_schedule(schedule, &self.program, pass),
            None => Ok(()),
        }
    }

    fn show(&self, _: &()) -> String {
        match &self.schedule {
            Some(schedule) => schedule.show(&self.program),
            None => self.program.to_string(),
        }
    }
}

impl Subject for Schedule {
    type Input = Program;

    fn check(&self, program: &Program, pass: &'static str) -> Result<(), Ice> {
        check_schedule(self, program, pass)
    }

    fn show(&self, program: &Program) -> String {
        self.display(program).to_string()
    }
}

/// The schedule verifier's check, as an [`Ice`] of `pass`.
fn check_schedule(schedule: &Schedule, program: &Program, pass: &'static str) -> Result<(), Ice> {
    verify_schedule(program, schedule).map_err(|what| Ice {
        pass,
        problem: Problem::IllFormedSchedule(what),
        ir: schedule.display(program).to_string(),
    })
}

/// The passes after `lower`, in order.
pub const PIPELINE: &[Pass<Compilation>] = &[
    super::derivatives::PASS,
    super::bot::PASS,
    super::simplify::PASS,
    super::fuse::PASS,
];

/// The stage of the exporter (`export`): the StableHLO module of the pipeline's bulk IR.
pub const EXPORT_STAGE: &str = "stablehlo";

/// Stages that consumers of the pipeline make on request from its bulk IR (the output of the
/// last rewrite, before `fuse`), without changing what runs: the exported StableHLO module.
/// (The consumers name their stage here; the pipeline does not depend on them.)
pub const CONSUMER_STAGES: &[&str] = &[EXPORT_STAGE];

/// Every stage of the pipeline, in order (the steps inside passes too), then the consumers'
/// stages.
pub fn stages() -> impl Iterator<Item = &'static str> {
    stages_of(PIPELINE)
        .into_iter()
        .map(|stage| stage.name)
        .chain(CONSUMER_STAGES.iter().copied())
}

/// The stages `:stages e` shows: the passes' own and the derivative programs.
pub fn overview_stages() -> impl Iterator<Item = &'static str> {
    stages_of(PIPELINE)
        .into_iter()
        .filter(|stage| stage.overview)
        .map(|stage| stage.name)
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
    /// The schedule verifier's finding.
    IllFormedSchedule(String),
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
            Problem::IllFormedSchedule(what) => {
                writeln!(f, "`{pass}` produced an ill-formed schedule: {what}:")?;
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
    /// 0 for the passes of [`PIPELINE`], 1 for the steps inside them, ….
    pub depth: usize,
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

/// The records the driver keeps while it runs, for the passes and the steps inside them.
#[derive(Default)]
pub struct Log {
    pub stages: Vec<StageDump>,
    pub times: Vec<PassTime>,
    /// Which stages to dump.
    pub wanted: Vec<String>,
    /// Remarks of passes on their stage (e.g. that a bound stopped a rewrite), shown at the
    /// end of its dump.
    pub notes: Vec<(&'static str, String)>,
    /// How many drivers are running (the pipeline's, and a pass's own inside it).
    depth: usize,
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
pub fn run(
    core: &Program,
    passes: &[Pass<Compilation>],
    wanted: &[String],
) -> Result<Compiled, Ice> {
    let mut log = Log::new(wanted);
    verify_program(LOWER, core, None)?;
    let mut compilation = Compilation {
        results: result_types(core),
        program: core.clone(),
        schedule: None,
    };
    run_passes(&mut compilation, &(), passes, &mut log)?;
    Ok(Compiled {
        schedule: compilation.schedule,
        program: compilation.program,
        stages: log.stages,
        times: log.times,
    })
}

/// The driver: runs `passes` in order on `subject`, and after each its subject's checks and
/// its postcondition; records its time and, when asked, its stage.
pub fn run_passes<S: Subject>(
    subject: &mut S,
    input: &S::Input,
    passes: &[Pass<S>],
    log: &mut Log,
) -> Result<(), Ice> {
    let depth = log.depth;
    for pass in passes {
        let start = Instant::now();
        log.depth = depth + 1;
        let ran = (pass.run)(subject, input, log);
        log.depth = depth;
        ran?;
        subject.check(input, pass.name)?;
        if let Some(postcondition) = pass.postcondition {
            postcondition(subject).map_err(|what| Ice {
                pass: pass.name,
                problem: Problem::Postcondition(what),
                ir: subject.show(input),
            })?;
        }
        log.record(pass.name, || subject.show(input));
        log.times.push(PassTime {
            pass: pass.name,
            time: start.elapsed(),
            depth,
        });
    }
    Ok(())
}

/// The IR verifier's check of `program` after `pass`, and that the types of its results are
/// `results` when given.
pub fn verify_program(
    pass: &'static str,
    program: &Program,
    results: Option<&[ArrTy]>,
) -> Result<(), Ice> {
    if let Err(errors) = verify::verify(program) {
        return Err(Ice {
            pass,
            ir: verify::annotate(program, &errors),
            problem: Problem::IllFormed(errors),
        });
    }
    if let Some(before) = results {
        let after = result_types(program);
        if after != before {
            return Err(Ice {
                pass,
                problem: Problem::ResultTypesChanged {
                    before: before.to_vec(),
                    after,
                },
                ir: program.to_string(),
            });
        }
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
    use crate::core::ir::{Atom, Build1, Elem, Expr, Scalar};
    use crate::core::parse::parse_program;

    const SUM_OF_SQUARES: &str = "program(%0_x: [8]f32) {
           %1: [8]f32 = build1 8 (\\%2_i: []i64 ->
             %3: []f32 = index %0_x [%2_i]
             %4: []f32 = mul %3 %3
             in %4)
           %5: []f32 = sumOuter %1
           in %5
         }";

    /// The gradient of a sum of exponentials: a derivative, and a schedule whose steps the
    /// rewrites change.
    const GRADIENT: &str = "program(%0_x: [8]f32) {
           %1_y: []f32, %2_g: [8]f32 = vjp (%0_x) (1.0:f32) (\\%3_p: [8]f32 ->
             %4: [8]f32 = exp %3_p
             %5: []f32 = sumOuter %4
             in %5)
           in %1_y, %2_g
         }";

    fn program() -> Program {
        parse_program(SUM_OF_SQUARES).expect("the test program parses")
    }

    fn names(stages: &[Stage]) -> Vec<&'static str> {
        stages.iter().map(|stage| stage.name).collect()
    }

    #[test]
    fn runs_every_pass_in_order_and_records_what_was_asked() {
        let top: Vec<String> = PIPELINE.iter().map(|pass| pass.name.to_string()).collect();
        let compiled = run(&program(), PIPELINE, &top).expect("compiles");
        let timed: Vec<&str> = compiled
            .times
            .iter()
            .filter(|time| time.depth == 0)
            .map(|time| time.pass)
            .collect();
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

    #[test]
    fn the_steps_inside_passes_are_stages_recorded_and_timed_by_the_driver() {
        let stages = stages_of(PIPELINE);
        let all = names(&stages);
        let derivative: Vec<&str> = crate::passes::derivatives::STEPS
            .iter()
            .map(|pass| pass.name)
            .collect();
        let rewrites: Vec<&str> = crate::passes::fuse::REWRITES
            .iter()
            .map(|pass| pass.name)
            .collect();
        // Each pass's steps come before it, in their order.
        let position = |name: &str| all.iter().position(|stage| *stage == name).unwrap();
        for steps in [&derivative, &rewrites] {
            let at: Vec<usize> = steps.iter().map(|name| position(name)).collect();
            assert!(at.windows(2).all(|pair| pair[0] < pair[1]), "{all:?}");
        }
        assert!(position(derivative[3]) < position("ad"));
        assert!(position(rewrites[rewrites.len() - 1]) < position("fused"));
        // No two stages share a name, so each can be asked for alone.
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "{all:?}");
        // The overview is the passes and the derivative programs.
        let overview: Vec<&str> = overview_stages().collect();
        assert_eq!(
            overview,
            [
                "linear",
                "transposed",
                "ad",
                "bot",
                "simp",
                "fused",
                "stablehlo"
            ]
        );

        let program = parse_program(GRADIENT).expect("the test program parses");
        let wanted: Vec<String> = all.iter().map(|name| name.to_string()).collect();
        let compiled = run(&program, PIPELINE, &wanted).expect("compiles");
        let recorded: Vec<&str> = compiled.stages.iter().map(|dump| dump.stage).collect();
        assert_eq!(recorded, all);
        let nested: Vec<&str> = compiled
            .times
            .iter()
            .filter(|time| time.depth == 1)
            .map(|time| time.pass)
            .collect();
        assert_eq!(nested, [derivative.clone(), rewrites.clone()].concat());
        let text = |stage: &str| {
            &compiled
                .stages
                .iter()
                .find(|dump| dump.stage == stage)
                .unwrap()
                .text
        };
        // The steps before `linear` show the whole program (the `vjp` still in it), the
        // derivative steps the derivative program; the fusion steps show schedules, and the
        // last rewrite's is the `fused` stage.
        assert!(
            text(derivative[0]).contains("vjp"),
            "{}",
            text(derivative[0])
        );
        assert!(text("linear").contains("exp"), "{}", text("linear"));
        assert!(text(rewrites[0]).starts_with("schedule("));
        assert_eq!(text(rewrites[rewrites.len() - 1]), text("fused"));
    }

    /// A pass that breaks the IR: it makes the main block return an undefined variable.
    fn dangling(compilation: &mut Compilation, _: &(), _: &mut Log) -> Result<(), Ice> {
        let program = &mut compilation.program;
        let var = program.new_var(ArrTy::scalar(Elem::F32), "ghost");
        let main = program.main;
        program.blocks[main].results = vec![Atom::Var(var)];
        Ok(())
    }

    /// A pass that returns a literal of another type.
    fn retype(compilation: &mut Compilation, _: &(), _: &mut Log) -> Result<(), Ice> {
        let program = &mut compilation.program;
        let main = program.main;
        program.blocks[main].results = vec![Atom::Lit(Scalar::I64(0))];
        Ok(())
    }

    /// A pass that reintroduces a `build1` after the BOT.
    fn rebuild(compilation: &mut Compilation, _: &(), _: &mut Log) -> Result<(), Ice> {
        let program = &mut compilation.program;
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
            expr: Expr::from(Build1 { size: 2, body }),
        });
        Ok(())
    }

    /// A schedule rewrite that runs the first step twice.
    fn twice(schedule: &mut Schedule, _: &Program, _: &mut Log) -> Result<(), Ice> {
        let first = schedule.steps[0].clone();
        schedule.steps.insert(0, first);
        Ok(())
    }

    fn broken(
        name: &'static str,
        rewrite: fn(&mut Compilation, &(), &mut Log) -> Result<(), Ice>,
    ) -> Ice {
        let passes = [
            crate::passes::bot::PASS,
            Pass {
                postcondition: crate::passes::bot::PASS.postcondition,
                ..Pass::new(name, "a broken pass", rewrite)
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
    fn an_ill_formed_schedule_between_rewrites_is_an_ice_naming_the_rewrite() {
        let program = crate::passes::bot::run(&program());
        let mut schedule = Schedule {
            block: program.main,
            steps: Vec::new(),
            loop_bodies: Vec::new(),
        };
        let passes = [
            crate::passes::fuse::REWRITES[0],
            Pass::new("twice", "a broken rewrite", twice),
        ];
        let ice =
            run_passes(&mut schedule, &program, &passes, &mut Log::default()).expect_err("an ice");
        assert_eq!(ice.pass, "twice");
        assert!(
            matches!(&ice.problem, Problem::IllFormedSchedule(what) if what.contains("again")),
            "{ice}"
        );
        assert!(ice.ir.starts_with("schedule("), "{}", ice.ir);
    }

    #[test]
    fn the_input_of_the_pipeline_is_verified_as_the_output_of_lower() {
        let mut compilation = Compilation {
            program: program(),
            schedule: None,
            results: Vec::new(),
        };
        dangling(&mut compilation, &(), &mut Log::default()).unwrap();
        let ice = run(&compilation.program, PIPELINE, &[])
            .err()
            .expect("an ice");
        assert_eq!(ice.pass, LOWER);
    }
}

//! The `ad` pass: replaces every `jvp`/`vjp` statement that lowering emitted by its
//! derivative program.
//!
//! Each derivative is taken of its function block by the steps of [`STEPS`], run by the
//! pipeline's driver: the BOT and simplification of the function (`ad_bot`, `ad_simp`: AD
//! works on bulk IR, dual arrays, [Shaikhha23] §4), then `jvp` (the `linear` stage) and, in
//! reverse mode, transposition (the `transposed` stage). The checks after every step verify
//! the whole program after the first two and the derivative program after the others. The derivative statements are then copied to the
//! place of the `jvp`/`vjp` statement with the primal arguments and seeds substituted, so
//! the result is ordinary bulk IR inside ordinary core IR (the linear flags of its tangents
//! and cotangents, checked by the verifier in the `linear` and `transposed` stages, are
//! cleared).
//!
//! Derivatives are expanded innermost first: a derivative inside a function that is itself
//! differentiated is expanded before the outer function goes through its steps, so the outer
//! derivative differentiates the inner derivative's statements (nested AD). The inner
//! derivative is taken with respect to its own parameters only, with the outer variables as
//! constants, so there is no perturbation confusion ([Shaikhha23] §4.3).
//!
//! `stop_gradient x` (a primitive whose derivative is zero) means something only to
//! differentiation: once every derivative is taken, the pass replaces it by `x`, so the later
//! passes and the engine never see it.

use std::collections::{HashMap, HashSet};

use super::pipeline::{
    run_passes, stages_of, verify_program, Compilation, Ice, Log, Pass, Subject,
};
use crate::core::inline::{copy_stmts, rename};
use crate::core::ir::{
    AdMode, ArrTy, Atom, Block, BlockId, Derivative, Expr, Program, Replicate, Scalar, Stmt, VarId,
};
use crate::core::visit::{collect_defs, collect_uses, reachable_blocks};
use crate::ops::ad::Tangent;
use crate::ops::ad::{self, AdError, Jvp, Vjp};
use crate::ops::{self, custom, derivative, StraightLine};
use crate::prim::Prim;

pub const PASS: Pass<Compilation> = Pass {
    name: "ad",
    description:
        "replace each jvp/vjp by its derivative program ([Shaikhha23] §4, [HuotShaikhha] §6)",
    run: |compilation, _, log| run(&mut compilation.program, log),
    postcondition: Some(|compilation| no_derivatives_left(&compilation.program)),
    nested: || stages_of(STEPS),
    overview: true,
};

/// The steps of a derivative, in order; transposition, the last, only in reverse mode.
pub const STEPS: &[Pass<Derivation>] = &[
    Pass::step(
        "ad_bot",
        "the bulk-operation transform of the function",
        |derivation, _, _| {
            super::bot::run_block(&mut derivation.program, derivation.func);
            Ok(())
        },
    ),
    Pass::step(
        "ad_simp",
        "the simplification of the function",
        |derivation, _, _| {
            super::simplify::run_from(&mut derivation.program, derivation.func);
            Ok(())
        },
    ),
    Pass::new(
        "linear",
        "the function and its linear map on tangents ([Shaikhha23] §4.1)",
        |derivation, _, _| {
            let jvp = ad::jvp(&mut derivation.program, derivation.func)
                .map_err(|err| ad_ice("linear", err, &derivation.program))?;
            derivation.derivative = Some(Linearised::Jvp(jvp));
            Ok(())
        },
    ),
    Pass::new(
        "transposed",
        "the linear map transposed: cotangents to gradients ([HuotShaikhha] §6)",
        |derivation, _, _| {
            let Some(Linearised::Jvp(jvp)) = &derivation.derivative else {
                return Err(Ice::failed(
                    "transposed",
                    "transposition before linearisation",
                    &derivation.program,
                ));
            };
            let vjp = ad::vjp(&mut derivation.program, jvp)
                .map_err(|err| ad_ice("transposed", err, &derivation.program))?;
            derivation.derivative = Some(Linearised::Vjp(vjp));
            Ok(())
        },
    ),
];

/// The steps a derivative of `mode` takes.
fn steps(mode: AdMode) -> &'static [Pass<Derivation>] {
    match mode {
        AdMode::Jvp => &STEPS[..STEPS.len() - 1],
        AdMode::Vjp => STEPS,
    }
}

/// A derivative being taken: the whole program (owned while the steps run), the function
/// block, and the derivative program once `linear` has made one.
pub struct Derivation {
    program: Program,
    func: BlockId,
    derivative: Option<Linearised>,
}

/// The derivative program after `linear` or after `transposed`.
enum Linearised {
    Jvp(Jvp),
    Vjp(Vjp),
}

impl Linearised {
    /// The derivative program's inputs (parameters, then seeds), statements and results
    /// (the function's, then the derivatives).
    fn parts(&self) -> (Vec<VarId>, Vec<Stmt>, Vec<Atom>) {
        match self {
            Linearised::Jvp(jvp) => {
                let mut params = jvp.params.clone();
                params.extend(jvp.tangent_params.iter().flatten());
                let mut results = jvp.results.clone();
                results.extend(jvp.tangent_results.iter().flatten());
                (params, jvp.stmts.clone(), results)
            }
            Linearised::Vjp(vjp) => {
                let mut params = vjp.params.clone();
                params.extend(&vjp.ct_params);
                let mut stmts = vjp.forward.clone();
                stmts.extend(vjp.backward.iter().cloned());
                let mut results = vjp.results.clone();
                results.extend(vjp.grads.iter().flatten());
                (params, stmts, results)
            }
        }
    }
}

impl Subject for Derivation {
    type Input = ();

    fn check(&self, _: &(), pass: &'static str) -> Result<(), Ice> {
        match &self.derivative {
            None => verify_program(pass, &self.program, None),
            Some(derivative) => verify_program(pass, &alone(&self.program, derivative), None),
        }
    }

    fn show(&self, _: &()) -> String {
        match &self.derivative {
            None => self.program.to_string(),
            Some(derivative) => {
                let mut alone = alone(&self.program, derivative);
                super::cleanup::run(&mut alone);
                alone.to_string()
            }
        }
    }
}

fn run(program: &mut Program, log: &mut Log) -> Result<(), Ice> {
    // One derivative at a time, innermost first, so that the program is whole whenever the
    // checks run.
    while let Some((block, index, derivative)) = derivative::innermost(program, program.main) {
        let Derivative {
            mode,
            primals,
            seeds,
            func,
        } = derivative;
        let derivative = differentiate(program, mode, func, log)?;
        let mut stmts = std::mem::take(&mut program.blocks[block].stmts);
        let tail = stmts.split_off(index + 1);
        let node = stmts.pop().expect("the derivative statement");
        program.blocks[block].stmts = stmts;
        derivative.place(program, block, &primals, &seeds, &node.binders);
        program.blocks[block].stmts.extend(tail);
        // The derivative is ordinary IR in its place: its seeds are the caller's values.
        program.clear_linear();
    }
    erase_stop_gradients(program);
    // A `custom_vjp` outside every derivative is its primal function (`ops::custom`).
    if crate::ops::custom::any_custom(program, program.main) {
        let main = program.main;
        let stmts = std::mem::take(&mut program.blocks[main].stmts);
        program.blocks[main].stmts = crate::ops::custom::inline_custom(program, stmts);
        super::cleanup::run(program);
    }
    Ok(())
}

/// Replaces every `stop_gradient x` by `x` (copies, then propagated away).
fn erase_stop_gradients(program: &mut Program) {
    let mut erased = false;
    for block in reachable_blocks(program, program.main) {
        for stmt in &mut program.blocks[block].stmts {
            if let Some(operand) = stop_gradient_operand(&stmt.expr) {
                stmt.expr = Expr::from(operand);
                erased = true;
            }
        }
    }
    if erased {
        super::cleanup::run(program);
    }
}

/// The operand of a `stop_gradient` statement.
fn stop_gradient_operand(expr: &Expr) -> Option<Atom> {
    match ops::straight_line(expr)? {
        StraightLine::Apply(Prim::StopGradient, args) => Some(args[0]),
        _ => None,
    }
}

fn no_derivatives_left(program: &Program) -> Result<(), String> {
    if derivative::innermost(program, program.main).is_some() {
        return Err("a jvp or vjp is left".into());
    }
    if crate::ops::custom::any_custom(program, program.main) {
        return Err("a custom_vjp or custom_linear is left".into());
    }
    let left = reachable_blocks(program, program.main)
        .into_iter()
        .any(|block| {
            program.blocks[block]
                .stmts
                .iter()
                .any(|stmt| stop_gradient_operand(&stmt.expr).is_some())
        });
    if left {
        return Err("a stop_gradient is left".into());
    }
    Ok(())
}

/// A derivative program of a function block: statements from the function's params and the
/// seeds to the binders of the `jvp`/`vjp` (the function's results, then the derivatives).
struct DerivativeProgram {
    params: Vec<VarId>,
    /// The variable each seed is substituted for (`None`: the seed is not used).
    seeds: Vec<Option<VarId>>,
    stmts: Vec<Stmt>,
    results: Vec<Atom>,
    derivatives: Vec<Tangent>,
}

/// Puts `func` through the steps and differentiates it.
fn differentiate(
    program: &mut Program,
    mode: AdMode,
    func: BlockId,
    log: &mut Log,
) -> Result<DerivativeProgram, Ice> {
    let mut derivation = Derivation {
        program: std::mem::take(program),
        func,
        derivative: None,
    };
    let ran = run_passes(&mut derivation, &(), steps(mode), log);
    *program = derivation.program;
    ran?;
    match derivation.derivative {
        Some(Linearised::Jvp(jvp)) => {
            if jvp
                .stmts
                .iter()
                .any(|stmt| custom::holds_custom_linear(program, stmt))
            {
                // Lowering refuses forward mode through a `custom_vjp` with the user's position.
                return Err(Ice::failed(
                    "linear",
                    crate::ops::custom::NO_FORWARD_RULE,
                    program,
                ));
            }
            Ok(DerivativeProgram {
                params: jvp.params,
                seeds: jvp.tangent_params,
                stmts: jvp.stmts,
                results: jvp.results,
                derivatives: jvp.tangent_results,
            })
        }
        Some(Linearised::Vjp(vjp)) => {
            let mut stmts = vjp.forward;
            stmts.extend(vjp.backward);
            // The transposed `custom_linear`s are the user's `bwd`, inlined: the derivative is
            // ordinary IR (and an outer derivative differentiates `bwd`'s statements).
            let stmts = crate::ops::custom::inline_custom(program, stmts);
            Ok(DerivativeProgram {
                params: vjp.params,
                seeds: vjp.ct_params.into_iter().map(Some).collect(),
                stmts,
                results: vjp.results,
                derivatives: vjp.grads,
            })
        }
        None => Err(Ice::failed("ad", "the steps made no derivative", program)),
    }
}

fn ad_ice(step: &'static str, err: AdError, program: &Program) -> Ice {
    Ice::failed(step, err.to_string(), program)
}

/// A derivative program as a program of its own: its params and the variables of the
/// enclosing program it uses are the inputs.
fn alone(program: &Program, derivative: &Linearised) -> Program {
    let (params, stmts, results) = derivative.parts();
    let mut alone = program.clone();
    alone.main = alone.blocks.push(Block {
        params: Vec::new(),
        stmts,
        results,
    });
    let mut uses = Vec::new();
    collect_uses(&alone, alone.main, &mut uses);
    let mut defined = HashSet::new();
    collect_defs(&alone, alone.main, &mut defined);
    defined.extend(&params);
    let mut free: Vec<VarId> = uses
        .into_iter()
        .filter(|var| !defined.contains(var))
        .collect();
    free.sort();
    free.dedup();
    alone.inputs = params.into_iter().chain(free).collect();
    alone
}

impl DerivativeProgram {
    /// Copies the derivative program to the end of `block`, the params replaced by
    /// `primals` and the seed variables by `seeds`, and binds `binders` to its results.
    fn place(
        &self,
        program: &mut Program,
        block: BlockId,
        primals: &[Atom],
        seeds: &[Atom],
        binders: &[VarId],
    ) {
        let mut subst: HashMap<VarId, Atom> = self
            .params
            .iter()
            .copied()
            .zip(primals.iter().copied())
            .collect();
        for (seed_var, seed) in self.seeds.iter().zip(seeds) {
            if let Some(seed_var) = seed_var {
                subst.insert(*seed_var, *seed);
            }
        }
        copy_stmts(program, &self.stmts, block, &mut subst);
        let values = self
            .results
            .iter()
            .map(|atom| Some(*atom))
            .chain(self.derivatives.iter().copied());
        for (binder, value) in binders.iter().zip(values) {
            let expr = match value {
                Some(atom) => Expr::from(rename(atom, &subst)),
                None => {
                    let ty = program.var_ty(*binder).clone();
                    zeros(program, block, &ty)
                }
            };
            program.blocks[block].stmts.push(Stmt {
                binders: vec![*binder],
                expr,
            });
        }
    }
}

/// An expression for a zero array of type `ty` (the derivative of what does not depend on
/// the seeds), emitting the inner replicates into `block`.
fn zeros(program: &mut Program, block: BlockId, ty: &ArrTy) -> Expr {
    let mut expr = Expr::from(Atom::Lit(Scalar::zero(ty.elem)));
    for axis in (0..ty.shape.len()).rev() {
        let array = match ops::copy_of(&expr) {
            Some(atom) => atom,
            None => {
                let ty = ArrTy::new(ty.shape[axis + 1..].to_vec(), ty.elem);
                let var = program.new_var(ty, "zero");
                program.blocks[block].stmts.push(Stmt {
                    binders: vec![var],
                    expr,
                });
                Atom::Var(var)
            }
        };
        expr = Expr::from(Replicate {
            count: ty.shape[axis],
            array,
        });
    }
    expr
}

#[cfg(test)]
mod tests {
    use super::super::pipeline::{self, Problem, PIPELINE};
    use crate::core::ir::Program;
    use crate::core::parse::parse_program;
    use crate::core::value::{Array, ArrayData};
    use crate::ops::interp::{self, InterpConfig};

    /// `vjp` of `x ↦ sum (x * x)` at `x` with cotangent 2: the binders are the sum and the
    /// gradient `2 · 2x`.
    const VJP_OF_SUM_OF_SQUARES: &str = "program(%0_x: [3]f64) {
           %1_y: []f64, %2_g: [3]f64 = vjp (%0_x) (2.0:f64) (\\%3_p: [3]f64 ->
             %4: [3]f64 = build1 3 (\\%5_i: []i64 ->
               %6: []f64 = index %3_p [%5_i]
               %7: []f64 = mul %6 %6
               in %7)
             %8: []f64 = sumOuter %4
             in %8)
           in %1_y, %2_g
         }";

    /// Nested: the gradient of `x ↦ sum (jvp (z ↦ z * z) x 1)`, i.e. of `sum 2x`: 2
    /// everywhere. The inner `jvp` is expanded first.
    const NESTED: &str = "program(%0_x: [3]f64) {
           %1_y: []f64, %2_g: [3]f64 = vjp (%0_x) (1.0:f64) (\\%3_p: [3]f64 ->
             %4: [3]f64 = replicate 3 1.0:f64
             %5_z: [3]f64, %6_dz: [3]f64 = jvp (%3_p) (%4) (\\%7_q: [3]f64 ->
               %8: [3]f64 = mul %7_q %7_q
               in %8)
             %9: []f64 = sumOuter %6_dz
             in %9)
           in %1_y, %2_g
         }";

    fn run(text: &str, x: &[f64]) -> Vec<Array> {
        let program: Program = parse_program(text).expect("the test program parses");
        // The printer and the parser agree on derivative statements.
        assert_eq!(parse_program(&program.to_string()).as_ref(), Ok(&program));
        let stages = [
            "ad".to_string(),
            "linear".to_string(),
            "transposed".to_string(),
        ];
        let compiled = pipeline::run(&program, PIPELINE, &stages).expect("compiles");
        assert!(
            crate::ops::derivative::innermost(&compiled.program, compiled.program.main).is_none()
        );
        for stage in ["ad", "linear", "transposed"] {
            assert!(
                compiled.stages.iter().any(|dump| dump.stage == stage),
                "no `{stage}` stage"
            );
        }
        let input = Array::new(vec![x.len()], ArrayData::F64(x.to_vec()));
        interp::run(&compiled.program, &[input], &InterpConfig::default()).expect("runs")
    }

    fn floats(array: &Array) -> Vec<f64> {
        match &*array.data {
            ArrayData::F64(values) => values.clone(),
            other => panic!("expected f64, got {other:?}"),
        }
    }

    #[test]
    fn a_vjp_statement_becomes_its_derivative_program() {
        let x = [0.5, -1.0, 3.0];
        let results = run(VJP_OF_SUM_OF_SQUARES, &x);
        assert_eq!(floats(&results[0]), vec![0.25 + 1.0 + 9.0]);
        let expected: Vec<f64> = x.iter().map(|x| 2.0 * 2.0 * x).collect();
        assert_eq!(floats(&results[1]), expected);
    }

    #[test]
    fn nested_derivatives_are_expanded_innermost_first() {
        let results = run(NESTED, &[0.5, -1.0, 3.0]);
        assert_eq!(floats(&results[0]), vec![2.0 * (0.5 - 1.0 + 3.0)]);
        assert_eq!(floats(&results[1]), vec![2.0; 3]);
    }

    #[test]
    fn seeds_of_the_wrong_type_are_refused_by_the_verifier() {
        // A cotangent per result: a [3]f64 seed for a scalar result is ill-typed.
        let bad = VJP_OF_SUM_OF_SQUARES.replace("(2.0:f64)", "(%0_x)");
        let program = parse_program(&bad).expect("parses");
        let ice = pipeline::run(&program, PIPELINE, &[])
            .err()
            .expect("refused");
        assert_eq!(ice.pass, pipeline::LOWER);
        assert!(
            matches!(&ice.problem, Problem::IllFormed(errors)
                if errors.iter().any(|error| error.message.contains("seeds"))),
            "{ice}"
        );
    }
}

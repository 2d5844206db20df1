//! Simplification of bulk IR (the `simp` stage): exact algebraic identities and common
//! subexpression elimination, then copy propagation and dead-code elimination, repeated to a
//! fixpoint within a bound on the rounds ([`FUEL`]; the stage says when the bound stopped it).
//!
//! Every rule preserves results bit for bit, NaN and signed zeros included, so it is safe on
//! any program: `x * 1 = x`, `x / 1 = x` (an integer `idiv` too), `neg (neg x) = x`, a cast to
//! the type a value already has; `tr` of `tr` is one `tr` (none for the identity), `reshape` of
//! `reshape` is one `reshape` (none to the same shape), a `gather` whose index function only
//! permutes its indices within bounds is a `tr` ([HuotShaikhha] Fig 12, [Shaikhha23] Fig 8); an integer
//! `sumOuter` of a replicated scalar is a product (integer addition is exact, also when it
//! wraps); a `cond` of scalars whose branches only apply primitives is a `select`
//! (if-conversion); a `scatter` of a `scatter` whose index function returns its own
//! parameters first is one `scatter` (the transpose of a read through a pair index set,
//! `x[i][j]`: no one-hot rows materialised; exact, see `ops::gather_scatter::simplify`), and a scatter of
//! each point to the row-major digits of its own index is a `reshape` (+0.0 for floats), a
//! scatter that sends each parameter, negated or shifted, to a coordinate of its own is a
//! `gather` by the inverse (+0.0 for floats; the gradients of `reverse`, `slice`, shifts); and
//! a statement that recomputes an earlier one (same operation on the same operands, compared
//! by a structural key with floats by bits, blocks up to the names of their own variables)
//! reuses its result. Rules that are not exact in
//! IEEE arithmetic (`x + 0`, `x * 0`, a float sum of copies as a product, a float `idiv x 1`,
//! which is `floor x`) are deliberately absent.
//! Each rule is named in `Rule` and counted, so a test can check that it fires. The rules are
//! the forms' own, in their homes in `ops` (contexts in `ops::rewrite`): the identities of one
//! form are its `Operation::simplify`, and the rules that rewrite a statement into several
//! (if-conversion in `ops::cond`, the scatter rules in `ops::gather_scatter::simplify`, sums of
//! sums in `ops::sum_outer`) its `Operation::expand`. This pass walks the program, runs them,
//! and finds the common subexpressions.
//!
//! Not done yet: the rest of [HuotShaikhha] Fig 12 / [Shaikhha23] Fig 8 (loop-invariant code motion,
//! fusion of maps, tuple partial evaluation), Fig 10's rules for indexing `tr`/`reshape`
//! producers, and rules valid for finite values only.

use std::collections::HashMap;

use super::cleanup;
use super::pipeline::{no_stages, Compilation, Pass};
use crate::core::ir::{Atom, BlockId, Expr, ExprKey, Program, VarId};
use crate::core::visit::collect_uses;
use crate::core::visit::expr_blocks;
use crate::core::visit::map_expr_atoms;
pub use crate::ops::rewrite::Rule;
use crate::ops::rewrite::{Expand, Expansion, Rewrite};
use crate::ops::{self, Element, Move};

pub const PASS: Pass<Compilation> = Pass {
    name: "simp",
    description: "exact algebraic identities and common subexpression elimination",
    run: |compilation, _, log| {
        let outcome = run(&mut compilation.program);
        if outcome.out_of_fuel {
            log.note(
                "simp",
                format!("stopped after {FUEL} rounds with rules still firing"),
            );
        }
        Ok(())
    },
    postcondition: None,
    nested: no_stages,
    overview: true,
};

/// The most rounds of rewriting (each a walk over the program, then clean-up) before the
/// pass stops even though rules still fire.
pub const FUEL: usize = 8;

/// What a run of the pass did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// How often each rule fired.
    pub fired: HashMap<Rule, usize>,
    pub rounds: usize,
    /// Rules still fired in the last round allowed.
    pub out_of_fuel: bool,
}

/// Simplifies a whole program.
pub fn run(program: &mut Program) -> Outcome {
    let main = program.main;
    run_from(program, main)
}

/// Simplifies a block and the blocks nested in it, round after round until no rule fires
/// or the fuel runs out.
pub fn run_from(program: &mut Program, root: BlockId) -> Outcome {
    run_with_fuel(program, root, FUEL)
}

fn run_with_fuel(program: &mut Program, root: BlockId, fuel: usize) -> Outcome {
    let mut outcome = Outcome::default();
    loop {
        let mut fired = HashMap::new();
        let mut uses = Vec::new();
        collect_uses(program, root, &mut uses);
        let mut cx = Cx {
            subst: HashMap::new(),
            defs: HashMap::new(),
            uses: HashMap::new(),
            fired: &mut fired,
        };
        for var in uses {
            *cx.uses.entry(var).or_default() += 1;
        }
        simplify_block(program, root, &mut HashMap::new(), &mut cx);
        cleanup::run_from(program, root);
        outcome.rounds += 1;
        let progress = !fired.is_empty();
        for (rule, count) in fired {
            *outcome.fired.entry(rule).or_default() += count;
        }
        if !progress {
            return outcome;
        }
        if outcome.rounds == fuel {
            outcome.out_of_fuel = true;
            return outcome;
        }
    }
}

/// The state of a walk: replacements made so far, the definitions seen, the rule counts.
struct Cx<'a> {
    subst: HashMap<VarId, Atom>,
    defs: HashMap<VarId, Expr>,
    /// How many times each variable is used, counted at the start of the round.
    uses: HashMap<VarId, usize>,
    fired: &'a mut HashMap<Rule, usize>,
}

/// Walks a block in order, rewriting statements into copies where a rule applies. `seen`
/// maps an operation (by its structural key) to the variable that already holds it; nested
/// blocks inherit the outer `seen`.
fn simplify_block(
    program: &mut Program,
    block: BlockId,
    seen: &mut HashMap<ExprKey, VarId>,
    cx: &mut Cx,
) {
    let old_stmts = std::mem::take(&mut program.blocks[block].stmts);
    let mut stmts = Vec::with_capacity(old_stmts.len());
    for mut stmt in old_stmts {
        map_expr_atoms(&mut stmt.expr, &mut |atom| resolve(atom, &cx.subst));
        for nested in expr_blocks(&stmt.expr) {
            // A view of literals (`replicate 0.0`) is free where it is used: shared with a
            // variable of this block, a loop body would read it from memory at every step.
            let mut inner_seen: HashMap<ExprKey, VarId> = (seen.iter())
                .filter(|&(_, &var)| !is_literal_view(&cx.defs, var))
                .map(|(key, &var)| (key.clone(), var))
                .collect();
            simplify_block(program, nested, &mut inner_seen, cx);
        }
        let mut expand = Expand {
            program,
            defs: &cx.defs,
            uses: &cx.uses,
            fired: cx.fired,
        };
        match ops::operation(&stmt.expr).expand(&mut expand, &stmt) {
            Some(Expansion::Stmts(expanded)) => {
                stmts.extend(expanded);
                continue;
            }
            Some(Expansion::Expr(expr)) => stmt.expr = expr,
            None => {}
        }
        if let [binder] = stmt.binders[..] {
            // The key is computed once (with blocks it walks them), for the lookup and the
            // entry, and again only when a rule replaced the expression.
            let mut key = cse_key(program, &stmt.expr);
            let rewritten = match key.as_ref().and_then(|key| seen.get(key)) {
                Some(&earlier) => Some((Rule::CommonSubexpression, Expr::from(Atom::Var(earlier)))),
                None => ops::operation(&stmt.expr).simplify(&Rewrite {
                    program,
                    defs: &cx.defs,
                }),
            };
            if let Some((rule, replacement)) = rewritten {
                *cx.fired.entry(rule).or_default() += 1;
                if let Some(atom) = ops::copy_of(&replacement) {
                    cx.subst.insert(binder, atom);
                    stmt.expr = replacement;
                    stmts.push(stmt);
                    continue;
                }
                stmt.expr = replacement;
                key = cse_key(program, &stmt.expr);
            }
            if let Some(key) = key {
                seen.entry(key).or_insert(binder);
            }
            cx.defs.insert(binder, stmt.expr.clone());
        }
        stmts.push(stmt);
    }
    for atom in &mut program.blocks[block].results {
        *atom = resolve(*atom, &cx.subst);
    }
    program.blocks[block].stmts = stmts;
}

/// Whether `var` is bound to a view of literals alone: the first coordinate (an `iota`), or a
/// broadcast of a literal or of such a view.
fn is_literal_view(defs: &HashMap<VarId, Expr>, var: VarId) -> bool {
    let element = defs
        .get(&var)
        .and_then(|expr| ops::operation(expr).element());
    match element {
        Some(Element::FirstCoordinate) => true,
        Some(Element::Moved {
            array,
            moved: Move::DropFirst { .. },
        }) => match array {
            Atom::Lit(_) => true,
            Atom::Var(inner) => is_literal_view(defs, inner),
        },
        _ => false,
    }
}

fn resolve(atom: Atom, subst: &HashMap<VarId, Atom>) -> Atom {
    match atom {
        Atom::Var(var) => subst.get(&var).copied().unwrap_or(atom),
        Atom::Lit(_) => atom,
    }
}

/// The key under which CSE records a statement's expression (copies are not recorded: copy
/// propagation removes them).
fn cse_key(program: &Program, expr: &Expr) -> Option<ExprKey> {
    (ops::copy_of(expr).is_none())
        .then(|| program.expr_key(expr))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::parse::parse_program;
    use crate::core::value::{Array, ArrayData};
    use crate::ops::interp::{run as interpret, InterpConfig};
    use crate::ops::testgen::random_inputs;

    #[test]
    fn every_rule_fires_and_preserves_values() {
        let src = "program(%0_x: [3]f32, %1_y: []f32) {
            %2: [3]f32 = replicate 3 1.0:f32
            %3: [3]f32 = mul %0_x %2
            %4: [3]f32 = neg %3
            %5: [3]f32 = neg %4
            %6: [3]f32 = div %5 %2
            %7: []f32 = cast_f32 %1_y
            %8: []f32 = sumOuter %6
            %9: []f32 = sumOuter %6
            %10: []f32 = add %8 %9
            %11: []f32 = mul %10 %7
            in %11
        }";
        let original = parse_program(src).expect("parses");
        let mut simplified = original.clone();
        let fired = run(&mut simplified).fired;
        for rule in [
            Rule::MulByOne,
            Rule::DivByOne,
            Rule::DoubleNegation,
            Rule::IdentityCast,
            Rule::CommonSubexpression,
        ] {
            assert!(
                fired.get(&rule).copied().unwrap_or(0) > 0,
                "{rule:?} did not fire: {fired:?}"
            );
        }
        crate::ops::verify::verify(&simplified).expect("verifies");
        let text = simplified.to_string();
        assert_eq!(text.matches(" = ").count(), 3, "{text}");
        let inputs = random_inputs(&original, 3);
        let config = InterpConfig::default();
        assert_eq!(
            interpret(&original, &inputs, &config),
            interpret(&simplified, &inputs, &config)
        );
    }

    /// Statements with blocks are common subexpressions when their blocks differ only in
    /// the names of their own variables (two reads `x[i]`, lowered apart); blocks that
    /// differ in a literal, a free variable or the order of their results are not.
    #[test]
    fn blocks_equal_up_to_their_own_names_are_common_subexpressions() {
        let src = "program(%0_x: [4, 3]f32, %1_k: []i64, %40_j: []i64) {
            %2: [6]f32 = gather [6] %0_x (\\%3: []i64 ->
              %4: []i64 = mod %3 4:i64
              in %4, %1_k)
            %5: [6]f32 = gather [6] %0_x (\\%6: []i64 ->
              %7: []i64 = mod %6 4:i64
              in %7, %1_k)
            %8: [6]f32 = gather [6] %0_x (\\%9: []i64 ->
              %10: []i64 = mod %9 3:i64
              in %10, %1_k)
            %11: [6]f32 = gather [6] %0_x (\\%12: []i64 ->
              %13: []i64 = mod %12 4:i64
              in %13, %40_j)
            %14: [6]f32 = gather [6] %0_x (\\%15: []i64 ->
              %16: []i64 = mod %15 4:i64
              in %1_k, %16)
            %17: []f32 = fold 6 (0.0:f32) (\\%19: []i64, %20: []f32 ->
              %21: []f32 = index %2 [%19]
              %22: []f32 = add %20 %21
              in %22)
            %23: []f32 = fold 6 (0.0:f32) (\\%25: []i64, %26: []f32 ->
              %27: []f32 = index %5 [%25]
              %28: []f32 = add %26 %27
              in %28)
            %29: [6]f32 = add %2 %5
            %30: [6]f32 = add %29 %8
            %31: [6]f32 = add %30 %11
            %32: [6]f32 = add %31 %14
            %33: []f32 = mul %17 %23
            in %32, %33
        }";
        // %5 is %2, and then the second fold is the first.
        let (original, simplified) =
            simplified_by(src, Rule::CommonSubexpression, 2, ("gather", 4));
        assert_eq!(simplified.to_string().matches("fold").count(), 1);
        assert_same_bits(&original, &simplified, &random_inputs(&original, 5));
    }

    /// A product with a transposed or reshaped replicate of 1 (the seed cotangent of a
    /// gradient, as the transpose pass leaves it) is its other operand; with one of 2, it
    /// stays.
    #[test]
    fn ones_seen_through_transposes_and_reshapes_multiply_by_one() {
        let src = "program(%0_x: [2, 3]f32) {
            %1: [3]f32 = replicate 3 1.0:f32
            %2: [2, 3]f32 = replicate 2 %1
            %3: [3, 2]f32 = tr [1, 0] %2
            %4: [2, 3]f32 = reshape [2, 3] %3
            %5: [3, 2]f32 = tr [1, 0] %0_x
            %6: [3, 2]f32 = mul %5 %3
            %7: [2, 3]f32 = mul %4 %0_x
            %8: [3]f32 = replicate 3 2.0:f32
            %9: [2, 3]f32 = replicate 2 %8
            %10: [3, 2]f32 = tr [1, 0] %9
            %11: [3, 2]f32 = mul %6 %10
            in %11, %7
        }";
        let (original, simplified) = simplified_by(src, Rule::MulByOne, 2, ("mul", 1));
        assert_same_bits(&original, &simplified, &random_inputs(&original, 3));
    }

    #[test]
    fn signed_zeros_are_different_constants_and_a_scalar_one_broadcasts() {
        let src = "program(%0_x: [3]f32) {
            %1: [3]f32 = mul %0_x 0.0:f32
            %2: [3]f32 = mul %0_x -0.0:f32
            %3: [3]f32 = mul %0_x 1.0:f32
            %4: [3]f32 = add %1 %2
            %5: [3]f32 = add %4 %3
            in %5
        }";
        let mut program = parse_program(src).expect("parses");
        let fired = run(&mut program).fired;
        assert_eq!(fired.get(&Rule::MulByOne), Some(&1), "{fired:?}");
        assert_eq!(fired.get(&Rule::CommonSubexpression), None, "{fired:?}");
        assert_eq!(program.to_string().matches(" = ").count(), 4, "{program}");
    }

    /// An integer `idiv` by 1 (what indexing a table through a pair index set computes for
    /// its last component) is its operand, for the extreme integers too; a float `idiv` by 1
    /// is `floor`, not its operand, and stays.
    #[test]
    fn integer_division_by_one_is_the_operand() {
        let src = "program(%0_i: [4]i64, %1_u: [4]u32, %8_f: [4]f32) {
            %6: [4]i64 = replicate 4 1:i64
            %2: [4]i64 = idiv %0_i %6
            %3: [4]u32 = replicate 4 1:u32
            %4: [4]u32 = idiv %1_u %3
            %7: [4]i64 = replicate 4 2:i64
            %5: [4]i64 = idiv %2 %7
            %9: [4]f32 = replicate 4 1.0:f32
            %10: [4]f32 = idiv %8_f %9
            in %2, %4, %5, %10
        }";
        let original = parse_program(src).expect("parses");
        crate::ops::verify::verify(&original).expect("the test program verifies");
        let mut simplified = original.clone();
        let fired = run(&mut simplified).fired;
        assert_eq!(
            fired.get(&Rule::DivByOne),
            Some(&2),
            "{fired:?}\n{simplified}"
        );
        assert_eq!(
            simplified.to_string().matches("idiv").count(),
            2,
            "{simplified}"
        );
        let inputs = [
            crate::core::value::Array::new(
                vec![4],
                crate::core::value::ArrayData::I64(vec![i64::MIN, -7, 0, i64::MAX]),
            ),
            crate::core::value::Array::new(
                vec![4],
                crate::core::value::ArrayData::U32(vec![0, 1, 7, u32::MAX]),
            ),
            crate::core::value::Array::new(
                vec![4],
                crate::core::value::ArrayData::F32(vec![2.5, -0.5, -0.0, -7.25]),
            ),
        ];
        let config = InterpConfig::default();
        assert_eq!(
            interpret(&original, &inputs, &config),
            interpret(&simplified, &inputs, &config)
        );
    }

    #[test]
    fn inexact_identities_are_left_alone() {
        // x + 0 is not x for x = -0.0, and x * 0 is not 0 for x = NaN.
        let src = "program(%0_x: []f32) {
            %1: []f32 = add %0_x 0.0:f32
            %2: []f32 = mul %1 0.0:f32
            in %2
        }";
        let mut program = parse_program(src).expect("parses");
        let fired = run(&mut program).fired;
        assert!(fired.is_empty(), "{fired:?}");
        assert_eq!(program.to_string().matches(" = ").count(), 2);
    }

    /// `src` and its simplification, checking that `rule` fired `times` and that the result
    /// verifies and holds `text` the given number of times.
    fn simplified_by(
        src: &str,
        rule: Rule,
        times: usize,
        text: (&str, usize),
    ) -> (Program, Program) {
        let original = parse_program(src).expect("parses");
        crate::ops::verify::verify(&original).expect("the test program verifies");
        let mut simplified = original.clone();
        let outcome = run(&mut simplified);
        assert_eq!(outcome.fired.get(&rule), Some(&times), "{simplified}");
        crate::ops::verify::verify(&simplified).expect("verifies");
        assert_eq!(
            simplified.to_string().matches(text.0).count(),
            text.1,
            "{simplified}"
        );
        (original, simplified)
    }

    /// That `original` and `simplified` give the same results on `inputs`, NaNs and signed
    /// zeros included (compared by their printed bits).
    fn assert_same_bits(original: &Program, simplified: &Program, inputs: &[Array]) {
        let config = InterpConfig::default();
        let bits = |program: &Program| {
            let results = interpret(program, inputs, &config).expect("runs");
            format!("{results:?}")
        };
        assert_eq!(bits(original), bits(simplified));
    }

    /// Scatters of each point to the row-major digits of its index are reshapes (+0.0 for
    /// floats, so that -0 still becomes +0): the bits of the scatters, -0 and NaN included;
    /// scatters to other digits, or of fewer points, stay.
    #[test]
    fn scatters_to_the_digits_of_their_points_are_reshapes_with_the_same_bits() {
        let src = "program(%0_v: [12]f32, %1_w: [12, 2]f32, %2_n: [12]i64) {
            %3: [4, 3]f32 = scatter [4, 3] %0_v (\\%4: []i64 ->
              %5: []i64 = idiv %4 3:i64
              %6: []i64 = mod %4 3:i64
              in %5, %6)
            %7: [4, 3, 2]f32 = scatter [4, 3, 2] %1_w (\\%8: []i64 ->
              %9: []i64 = idiv %8 3:i64
              %10: []i64 = mod %9 4:i64
              %11: []i64 = mod %8 3:i64
              in %10, %11)
            %12: [4, 3]i64 = scatter [4, 3] %2_n (\\%13: []i64 ->
              %14: []i64 = idiv %13 3:i64
              %15: []i64 = mod %13 3:i64
              in %14, %15)
            %16: [3, 4]f32 = scatter [3, 4] %0_v (\\%17: []i64 ->
              %18: []i64 = idiv %17 3:i64
              %19: []i64 = mod %17 4:i64
              in %18, %19)
            %20: [3, 3]f32 = scatter [3, 3] %0_v (\\%21: []i64 ->
              %22: []i64 = idiv %21 3:i64
              %23: []i64 = mod %21 3:i64
              in %22, %23)
            in %3, %7, %12, %16, %20
        }";
        let (original, simplified) = simplified_by(src, Rule::ScatterAsReshape, 3, ("scatter", 2));
        let v: Vec<f32> = (0..12)
            .map(|i| [-0.0, 0.0, f32::NAN, 1.5, -2.25][i % 5])
            .collect();
        let w: Vec<f32> = (0..24).map(|i| [-0.0, 3.0, -0.5][i % 3]).collect();
        let inputs = [
            Array::new(vec![12], ArrayData::F32(v)),
            Array::new(vec![12, 2], ArrayData::F32(w)),
            Array::new(
                vec![12],
                ArrayData::I64((0..12).map(|i| i * 7 - 30).collect()),
            ),
        ];
        assert_same_bits(&original, &simplified, &inputs);
    }

    /// The digits through casts that keep their values (the gradient of `concat`), and of
    /// three axes, are reshapes too; a middle digit without its `mod`, or a cast to a type
    /// that does not hold the index, is not.
    #[test]
    fn scatters_to_digits_through_casts_and_of_three_axes_are_reshapes() {
        let src = "program(%0_v: [12]f32, %1_w: [12]f64) {
            %2: [4, 3]f32 = scatter [4, 3] %0_v (\\%3: []i64 ->
              %4: []u32 = cast_u32 %3
              %5: []u32 = idiv %4 3:u32
              %6: []u32 = mod %4 3:u32
              %7: []i64 = cast_i64 %5
              %30: []i32 = cast_i32 %6
              %8: []i64 = cast_i64 %30
              in %7, %8)
            %9: [2, 2, 3]f64 = scatter [2, 2, 3] %1_w (\\%10: []i64 ->
              %11: []i64 = idiv %10 6:i64
              %12: []i64 = idiv %10 3:i64
              %13: []i64 = mod %12 2:i64
              %14: []i64 = mod %10 3:i64
              in %11, %13, %14)
            %15: [2, 2, 3]f64 = scatter [2, 2, 3] %1_w (\\%16: []i64 ->
              %17: []i64 = idiv %16 6:i64
              %18: []i64 = idiv %16 3:i64
              %19: []i64 = mod %16 3:i64
              in %17, %18, %19)
            %20: [4, 3]f32 = scatter [4, 3] %0_v (\\%21: []i64 ->
              %22: []f64 = cast_f64 %21
              %23: []i64 = cast_i64 %22
              %24: []i64 = idiv %23 3:i64
              %25: []i64 = mod %23 3:i64
              in %24, %25)
            in %2, %9, %15, %20
        }";
        let (original, simplified) = simplified_by(src, Rule::ScatterAsReshape, 2, ("scatter", 2));
        let v: Vec<f32> = (0..12).map(|i| [-0.0, 2.5, f32::NAN][i % 3]).collect();
        let w: Vec<f64> = (0..12).map(|i| [1.0, -0.0, -3.5, 0.0][i % 4]).collect();
        let inputs = [
            Array::new(vec![12], ArrayData::F32(v)),
            Array::new(vec![12], ArrayData::F64(w)),
        ];
        assert_same_bits(&original, &simplified, &inputs);
    }

    /// Scatters that send each parameter, negated or shifted, to its own target coordinate
    /// (reversal through `Nat` casts, a shift past the end, two axes swapped and one
    /// reversed, over trailing axes) are gathers by the inverse, with the scatters' bits
    /// (-0 and NaN included); a scatter whose index function collides (`mod`, a doubled
    /// parameter, one parameter twice) or might wrap (`sub` of `u32`s below zero) stays.
    #[test]
    fn scatters_by_invertible_affine_functions_are_gathers_with_the_same_bits() {
        let src = "program(%0_v: [6]f32, %1_w: [3, 4, 2]f64, %2_n: [6]i64) {
            %3: [6]f32 = scatter [6] %0_v (\\%4: []i64 ->
              %5: []u32 = cast_u32 %4
              %6: []u32 = add %5 1:u32
              %7: []u32 = sub 6:u32 %6
              %8: []i64 = cast_i64 %7
              in %8)
            %9: [4]f32 = scatter [4] %0_v (\\%10: []i64 ->
              %11: []i64 = add %10 1:i64
              in %11)
            %12: [4, 3, 2]f64 = scatter [4, 3, 2] %1_w (\\%13: []i64, %14: []i64 ->
              %15: []i64 = sub 3:i64 %14
              %16: []i64 = sub %13 -1:i64
              in %15, %16)
            %17: [6]i64 = scatter [6] %2_n (\\%18: []i64 ->
              %19: []i64 = neg %18
              %20: []i64 = add %19 5:i64
              in %20)
            %21: [6]f32 = scatter [6] %0_v (\\%22: []i64 ->
              %23: []i64 = mod %22 3:i64
              in %23)
            %24: [12]f32 = scatter [12] %0_v (\\%25: []i64 ->
              %26: []i64 = mul %25 2:i64
              in %26)
            %27: [6]f32 = scatter [6] %0_v (\\%28: []i64 ->
              %29: []u32 = cast_u32 %28
              %30: []u32 = sub %29 1:u32
              %31: []i64 = cast_i64 %30
              in %31)
            %32: [3, 3, 2]f64 = scatter [3, 3, 2] %1_w (\\%33: []i64, %34: []i64 ->
              in %33, %33)
            in %3, %9, %12, %17, %21, %24, %27, %32
        }";
        let (original, simplified) = simplified_by(src, Rule::ScatterAsGather, 4, ("scatter", 4));
        let v: Vec<f32> = (0..6).map(|i| [-0.0, 2.5, f32::NAN][i % 3]).collect();
        let w: Vec<f64> = (0..24)
            .map(|i| [1.0, -0.0, -3.5, 0.0, 7.25][i % 5])
            .collect();
        let inputs = [
            Array::new(vec![6], ArrayData::F32(v)),
            Array::new(vec![3, 4, 2], ArrayData::F64(w)),
            Array::new(
                vec![6],
                ArrayData::I64((0..6).map(|i| i * 7 - 20).collect()),
            ),
        ];
        assert_same_bits(&original, &simplified, &inputs);
    }

    /// Scatters by rotations (`(i + c) mod p`, forwards through `Nat` casts, by several
    /// periods, backwards, over trailing axes, into a shorter target, from a shorter source)
    /// are gathers by the inverse rotation, with the scatters' bits; a rotation into a target
    /// longer than its period (whose last elements receive nothing) stays a scatter.
    #[test]
    fn scatters_by_rotations_are_gathers_with_the_same_bits() {
        let src = "program(%0_v: [6]f32, %1_w: [6, 2]f64, %2_u: [4]f32) {
            %3: [6]f32 = scatter [6] %0_v (\\%4: []i64 ->
              %5: []u32 = cast_u32 %4
              %6: []u32 = add %5 1:u32
              %7: []u32 = mod %6 6:u32
              %8: []i64 = cast_i64 %7
              in %8)
            %9: [6]f32 = scatter [6] %0_v (\\%10: []i64 ->
              %11: []i64 = add %10 33:i64
              %12: []i64 = mod %11 6:i64
              in %12)
            %13: [6, 2]f64 = scatter [6, 2] %1_w (\\%14: []i64 ->
              %15: []i64 = sub 10:i64 %14
              %16: []i64 = mod %15 6:i64
              in %16)
            %17: [4]f32 = scatter [4] %0_v (\\%18: []i64 ->
              %19: []i64 = add %18 2:i64
              %20: []i64 = mod %19 6:i64
              in %20)
            %21: [6]f32 = scatter [6] %2_u (\\%22: []i64 ->
              %23: []i64 = add %22 3:i64
              %24: []i64 = mod %23 6:i64
              in %24)
            %25: [8]f32 = scatter [8] %0_v (\\%26: []i64 ->
              %27: []i64 = add %26 3:i64
              %28: []i64 = mod %27 6:i64
              in %28)
            in %3, %9, %13, %17, %21, %25
        }";
        let (original, simplified) = simplified_by(src, Rule::ScatterAsGather, 5, ("scatter", 1));
        let v: Vec<f32> = (0..6).map(|i| [-0.0, 2.5, f32::NAN, 4.0][i % 4]).collect();
        let w: Vec<f64> = (0..12)
            .map(|i| [1.0, -0.0, -3.5, 0.0, 7.25][i % 5])
            .collect();
        let u: Vec<f32> = vec![1.5, -0.0, 3.0, -2.0];
        let inputs = [
            Array::new(vec![6], ArrayData::F32(v)),
            Array::new(vec![6, 2], ArrayData::F64(w)),
            Array::new(vec![4], ArrayData::F32(u)),
        ];
        assert_same_bits(&original, &simplified, &inputs);
    }

    /// Scatters whose target coordinates add other params to their pivots (the transposes of
    /// stencils: `i + a` into a longer target, `i - a + 2` into a shorter one, a pivot
    /// negated with a summed param twice, two axes each with its own sum over a trailing
    /// axis) are gathers summed over those params, with the scatters' values (the inputs are
    /// small multiples of 1/4 and -0, whose sums are exact in any order); a scatter whose
    /// gather would do far more work than it (a target 10× its source) or whose summed
    /// coordinate wraps stays a scatter.
    #[test]
    fn scatters_of_shifted_sums_are_summed_gathers() {
        let src = "program(%0_v: [6, 3]f32, %1_w: [4, 2, 3, 2, 2]f64, %2_u: [10, 10]f32) {
            %3: [8]f32 = scatter [8] %0_v (\\%4: []i64, %5: []i64 ->
              %6: []u32 = cast_u32 %4
              %7: []u32 = cast_u32 %5
              %8: []u32 = add %6 %7
              %9: []i64 = cast_i64 %8
              in %9)
            %10: [5]f32 = scatter [5] %0_v (\\%11: []i64, %12: []i64 ->
              %13: []i64 = sub %11 %12
              %14: []i64 = add %13 2:i64
              in %14)
            %15: [12]f32 = scatter [12] %0_v (\\%16: []i64, %17: []i64 ->
              %18: []i64 = mul %17 2:i64
              %19: []i64 = add %16 %18
              %20: []i64 = sub 11:i64 %19
              in %20)
            %21: [5, 4, 2]f64 = scatter [5, 4, 2] %1_w (\\%22: []i64, %23: []i64, %24: []i64, %25: []i64 ->
              %26: []i64 = add %22 %24
              %27: []i64 = add %23 %25
              in %26, %27)
            %28: [100]f32 = scatter [100] %2_u (\\%29: []i64, %30: []i64 ->
              %31: []i64 = add %29 %30
              in %31)
            %32: [6]f32 = scatter [6] %0_v (\\%33: []i64, %34: []i64 ->
              %35: []i64 = add %33 %34
              %36: []i64 = mod %35 6:i64
              in %36)
            in %3, %10, %15, %21, %28, %32
        }";
        let (original, simplified) = simplified_by(src, Rule::ScatterAsGather, 4, ("scatter", 2));
        let quarters = |n: usize| (0..n).map(|i| [-0.0, 2.5, -1.25, 4.0, 0.75][i % 5]);
        let inputs = [
            Array::new(
                vec![6, 3],
                ArrayData::F32(quarters(18).map(|x| x as f32).collect()),
            ),
            Array::new(vec![4, 2, 3, 2, 2], ArrayData::F64(quarters(96).collect())),
            Array::new(
                vec![10, 10],
                ArrayData::F32(quarters(100).map(|x| x as f32).collect()),
            ),
        ];
        assert_same_bits(&original, &simplified, &inputs);
        assert_eq!(
            simplified.to_string().matches("sumOuter").count(),
            5,
            "one sum for each summed param: {simplified}"
        );
    }

    /// Scatters with constant target coordinates (Note [Constant targets]: lstm's
    /// `(1 - l, 2)`; two constants whose offsets would cancel in a plain sum; a shift whose
    /// solved coordinate leaves its axis; a shifted sum; every point into one element) are
    /// gathers with the scatters' bits (-0 and NaN where nothing is summed, quarters where
    /// something is); a constant outside its axis, above or below, leaves the scatter.
    #[test]
    fn scatters_into_constant_coordinates_are_gathers_with_the_same_bits() {
        let src = "program(%0_v: [2, 3]f32, %1_u: [4]f64, %2_s: [4, 2]f32, %3_w: [6]f64) {
            %4: [2, 4, 3]f32 = scatter [2, 4, 3] %0_v (\\%5: []i64 ->
              %6: []i64 = sub 1:i64 %5
              in %6, 2:i64)
            %7: [3, 3, 4]f64 = scatter [3, 3, 4] %1_u (\\%8: []i64 ->
              in 1:i64, 1:i64, %8)
            %9: [4, 2]f64 = scatter [4, 2] %1_u (\\%10: []i64 ->
              %11: []i64 = add %10 1:i64
              in %11, 0:i64)
            %12: [5, 3]f32 = scatter [5, 3] %2_s (\\%13: []i64, %14: []i64 ->
              %15: []i64 = add %13 %14
              in %15, 1:i64)
            %16: [3]f64 = scatter [3] %3_w (\\%17: []i64 ->
              in 0:i64)
            %18: [3, 4]f64 = scatter [3, 4] %1_u (\\%19: []i64 ->
              in %19, 4:i64)
            %20: [3, 4]f64 = scatter [3, 4] %1_u (\\%21: []i64 ->
              %22: []i64 = sub 0:i64 1:i64
              in %21, %22)
            in %4, %7, %9, %12, %16, %18, %20
        }";
        let (original, simplified) = simplified_by(src, Rule::ScatterAsGather, 5, ("scatter", 2));
        let odd = |n: usize| (0..n).map(|i| [-0.0, 2.5, f64::NAN, -1.25][i % 4]);
        let quarters = |n: usize| (0..n).map(|i| [-0.0, 2.5, -1.25, 4.0, 0.75][i % 5]);
        let inputs = [
            Array::new(
                vec![2, 3],
                ArrayData::F32(odd(6).map(|x| x as f32).collect()),
            ),
            Array::new(vec![4], ArrayData::F64(odd(4).collect())),
            Array::new(
                vec![4, 2],
                ArrayData::F32(quarters(8).map(|x| x as f32).collect()),
            ),
            Array::new(vec![6], ArrayData::F64(quarters(6).collect())),
        ];
        assert_same_bits(&original, &simplified, &inputs);
    }

    /// Sums of sums as the BOT leaves them (`for i j. sum for a. sum for b. x[i, j, a, b]`:
    /// each sum brings its axis to the front, the inner sum leaves the outer summed axis
    /// last; three deep; the inner sum with a second reader, and a chain already in the
    /// normal form, stay) become one transpose and the sums, with the same bits.
    #[test]
    fn sums_of_sums_transpose_once_with_the_same_bits() {
        let src = "program(%0_x: [2, 3, 4, 5]f32, %1_y: [2, 3, 4, 5]f64, %18_z: [2, 3, 4, 5]f32) {
            %2: [5, 2, 3, 4]f32 = tr [3, 0, 1, 2] %0_x
            %3: [2, 3, 4]f32 = sumOuter %2
            %4: [4, 2, 3]f32 = tr [2, 0, 1] %3
            %5: [2, 3]f32 = sumOuter %4
            %6: [4, 2, 3, 5]f64 = tr [2, 0, 1, 3] %1_y
            %7: [2, 3, 5]f64 = sumOuter %6
            %8: [3, 2, 5]f64 = tr [1, 0, 2] %7
            %9: [2, 5]f64 = sumOuter %8
            %10: [5, 2]f64 = tr [1, 0] %9
            %11: [2]f64 = sumOuter %10
            %12: [5, 2, 3, 4]f32 = tr [3, 0, 1, 2] %18_z
            %13: [2, 3, 4]f32 = sumOuter %12
            %14: [4, 2, 3]f32 = tr [2, 0, 1] %13
            %15: [2, 3]f32 = sumOuter %14
            %16: [3, 4, 5]f32 = sumOuter %0_x
            %17: [4, 5]f32 = sumOuter %16
            in %5, %11, %15, %13, %17
        }";
        // The three-deep chain fires twice, two deep first.
        let (original, simplified) = simplified_by(src, Rule::SumOfSums, 3, ("= tr", 4));
        let x: Vec<f32> = (0..120).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
        let y: Vec<f64> = (0..120).map(|i| (i as f64 * 0.11).cos() / 3.0).collect();
        let z: Vec<f32> = x.iter().map(|v| v * 0.5 - 1.0).collect();
        let inputs = [
            Array::new(vec![2, 3, 4, 5], ArrayData::F32(x)),
            Array::new(vec![2, 3, 4, 5], ArrayData::F64(y)),
            Array::new(vec![2, 3, 4, 5], ArrayData::F32(z)),
        ];
        assert_same_bits(&original, &simplified, &inputs);
    }

    /// A loop body keeps its own views of literals (a splat where fused, not a read of the
    /// outer block's variable at every step), while other common subexpressions of the outer
    /// block are still shared with it.
    #[test]
    fn loop_bodies_keep_their_own_views_of_literals() {
        let src = "program(%0_x: [4]f32) {
            %1: [4]f32 = replicate 4 0.0:f32
            %2: [4]f32 = neg %0_x
            %3: [4]f32 = fold 3 (%1) (\\%4: []i64, %5: [4]f32 ->
              %6: [4]f32 = replicate 4 0.0:f32
              %7: [4]f32 = neg %0_x
              %8: [4]f32 = add %5 %6
              %9: [4]f32 = add %8 %7
              in %9)
            %10: [4]f32 = add %3 %2
            in %10
        }";
        let original = parse_program(src).expect("parses");
        let mut simplified = original.clone();
        let outcome = run(&mut simplified);
        crate::ops::verify::verify(&simplified).expect("verifies");
        let text = simplified.to_string();
        assert_eq!(text.matches("replicate 4 0.0").count(), 2, "{text}");
        assert_eq!(text.matches(" = neg ").count(), 1, "{text}");
        assert!(
            outcome.fired.contains_key(&Rule::CommonSubexpression),
            "{text}"
        );
        let inputs = [Array::new(
            vec![4],
            ArrayData::F32(vec![1.0, -0.0, 2.5, f32::NAN]),
        )];
        assert_same_bits(&original, &simplified, &inputs);
    }

    /// Scatters of scatters whose inner index function returns its own parameter first are
    /// one scatter, with the bits of the two (collisions in the outer one, coordinates out of
    /// range in the inner one, trailing axes); one whose inner function does not, or whose
    /// inner result has fewer rows than its source (the rest dropped), stays two.
    #[test]
    fn scatters_of_row_scatters_are_one_scatter_with_the_same_bits() {
        let src = "program(%0_v: [12]f32, %1_w: [6, 2]f32) {
            %2: [12, 3]f32 = scatter [12, 3] %0_v (\\%3: []i64 ->
              %4: []i64 = mul %3 5:i64
              %5: []i64 = mod %4 4:i64
              in %3, %5)
            %6: [4, 3]f32 = scatter [4, 3] %2 (\\%7: []i64 ->
              %8: []i64 = idiv %7 2:i64
              in %8)
            %9: [6, 6, 2]f32 = scatter [6, 6, 2] %1_w (\\%10: []i64 ->
              %11: []i64 = sub 5:i64 %10
              in %10, %11)
            %12: [7, 6, 2]f32 = scatter [7, 6, 2] %9 (\\%13: []i64 ->
              %14: []i64 = mod %13 3:i64
              in %14)
            %15: [6, 3]f32 = scatter [6, 3] %0_v (\\%16: []i64 ->
              %17: []i64 = idiv %16 2:i64
              %18: []i64 = mod %16 3:i64
              in %17, %18)
            %19: [6, 3]f32 = scatter [6, 3] %15 (\\%20: []i64 ->
              %21: []i64 = sub 5:i64 %20
              in %21)
            %22: [8, 3]f32 = scatter [8, 3] %0_v (\\%23: []i64 ->
              %24: []i64 = mod %23 3:i64
              in %23, %24)
            %25: [4, 3]f32 = scatter [4, 3] %22 (\\%26: []i64 ->
              %27: []i64 = mod %26 4:i64
              in %27)
            in %6, %12, %19, %25
        }";
        let (original, simplified) = simplified_by(src, Rule::ScatterOfScatter, 2, ("scatter", 5));
        // The outer scatter of %15 reverses its rows: a gather (ScatterAsGather).
        assert_eq!(simplified.to_string().matches(" = gather ").count(), 1);
        for seed in 0..6 {
            let inputs = random_inputs(&original, seed);
            let config = InterpConfig::default();
            let before = interpret(&original, &inputs, &config).expect("runs");
            let after = interpret(&simplified, &inputs, &config).expect("runs");
            assert_eq!(format!("{before:?}"), format!("{after:?}"));
        }
    }

    #[test]
    fn structural_rules_fire_and_preserve_values() {
        let src = "program(%0_x: [2, 3, 4]f32, %1_n: []i64) {
            %2: [3, 2, 4]f32 = tr [1, 0] %0_x
            %3: [4, 2, 3]f32 = tr [2, 1, 0] %2
            %4: [2, 3, 4]f32 = tr [1, 2, 0] %3
            %5: [24]f32 = reshape [24] %4
            %6: [6, 4]f32 = reshape [6, 4] %5
            %7: [6, 4]f32 = reshape [6, 4] %6
            %8: [4, 6]f32 = gather [4, 6] %7 (\\%9: []i64, %10: []i64 ->
              in %10, %9)
            %11: [5]i64 = replicate 5 %1_n
            %12: []i64 = sumOuter %11
            %13: [4, 6]f32 = tr [0, 1] %8
            in %13, %12
        }";
        let original = parse_program(src).expect("parses");
        crate::ops::verify::verify(&original).expect("the test program verifies");
        let mut simplified = original.clone();
        let outcome = run(&mut simplified);
        for rule in [
            Rule::TransposeOfTranspose,
            Rule::IdentityTranspose,
            Rule::ReshapeOfReshape,
            Rule::IdentityReshape,
            Rule::PermutationGather,
            Rule::IntegerSumOfReplicate,
        ] {
            assert!(
                outcome.fired.get(&rule).copied().unwrap_or(0) > 0,
                "{rule:?} did not fire: {:?}\n{simplified}",
                outcome.fired
            );
        }
        assert!(!outcome.out_of_fuel);
        crate::ops::verify::verify(&simplified).expect("verifies");
        let text = simplified.to_string();
        assert!(
            !text.contains("gather") && !text.contains("sumOuter"),
            "{text}"
        );
        assert_eq!(text.matches("reshape").count(), 1, "{text}");
        assert_eq!(text.matches("tr ").count(), 1, "{text}");
        for seed in 0..4 {
            let inputs = random_inputs(&original, seed);
            let config = InterpConfig::default();
            assert_eq!(
                interpret(&original, &inputs, &config),
                interpret(&simplified, &inputs, &config)
            );
        }
    }

    #[test]
    fn conds_of_scalar_primitives_become_selects() {
        // A maximum by |x| as a fold: its cond only names scalars and becomes a select, which
        // makes the body straight-line; a cond whose branches apply primitives (a tuple of
        // two results) is converted too. A cond that reads a table in a branch, and one
        // choosing between arrays, stay.
        let src = "program(%0_x: [6]f32, %1_b: []bool, %2_v: [3]f32, %3_k: []i64) {
            %4: []f32 = index %0_x [0:i64]
            %5: []f32 = fold 6 (%4) (\\%6: []i64, %7: []f32 ->
              %8: []f32 = index %0_x [%6]
              %9: []f32 = abs %8
              %10: []f32 = abs %7
              %11: []bool = gt %9 %10
              %12: []f32 = cond %11 (\\ ->
                in %8) (\\ ->
                in %7)
              in %12)
            %13: []f32, %14: []i64 = cond %1_b (\\ ->
              %15: []f32 = neg %4
              %16: []f32 = mul %15 %5
              in %16, %3_k) (\\ ->
              %17: []i64 = add %3_k 1:i64
              in %4, %17)
            %18: [3]f32 = cond %1_b (\\ ->
              in %2_v) (\\ ->
              in %2_v)
            %19: []f32 = cond %1_b (\\ ->
              %20: []f32 = index %2_v [%3_k]
              in %20) (\\ ->
              in %4)
            in %5, %13, %14, %18, %19
        }";
        let (original, simplified) = simplified_by(src, Rule::CondToSelect, 2, ("= cond", 2));
        for seed in 0..8 {
            let inputs = random_inputs(&original, seed);
            for strict in [false, true] {
                let config = InterpConfig {
                    strict,
                    ..InterpConfig::default()
                };
                assert_eq!(
                    interpret(&original, &inputs, &config),
                    interpret(&simplified, &inputs, &config)
                );
            }
        }
    }

    #[test]
    fn a_gather_out_of_range_or_repeating_an_index_is_not_a_transpose() {
        let src = "program(%0_x: [3, 4]f32) {
            %1: [4, 4]f32 = gather [4, 4] %0_x (\\%2: []i64, %3: []i64 ->
              in %3, %2)
            %4: [3, 3]f32 = gather [3, 3] %0_x (\\%5: []i64, %6: []i64 ->
              in %5, %5)
            in %1, %4
        }";
        let mut program = parse_program(src).expect("parses");
        let outcome = run(&mut program);
        assert_eq!(
            outcome.fired.get(&Rule::PermutationGather),
            None,
            "{program}"
        );
    }

    #[test]
    fn the_fuel_bounds_the_rounds_and_says_so() {
        let src = "program(%0_x: [2, 3]f32) {
            %1: [3, 2]f32 = tr [1, 0] %0_x
            %2: [2, 3]f32 = tr [1, 0] %1
            in %2
        }";
        let mut program = parse_program(src).expect("parses");
        let main = program.main;
        let outcome = run_with_fuel(&mut program, main, 1);
        assert!(outcome.out_of_fuel && outcome.rounds == 1, "{outcome:?}");
        let mut program = parse_program(src).expect("parses");
        let outcome = run(&mut program);
        assert!(!outcome.out_of_fuel && outcome.rounds == 2, "{outcome:?}");
    }
}

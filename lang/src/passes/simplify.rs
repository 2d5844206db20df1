//! Simplification of bulk IR (the `simp` stage): exact algebraic identities and common
//! subexpression elimination, then copy propagation and dead-code elimination.
//!
//! Every rule preserves results bit for bit, NaN and signed zeros included, so it is safe on
//! any program: `x * 1 = x`, `x / 1 = x`, `neg (neg x) = x`, a cast to the type a value
//! already has, and a statement that recomputes an earlier one (same operation on the same
//! operands, no nested blocks) reuses its result. Rules that are not exact in IEEE arithmetic
//! (`x + 0`, `x * 0`) are deliberately absent. Each rule is named in `Rule` and counted, so a
//! test can check that it fires.
//!
//! Not done yet: the rest of seed 003 Fig 12 / seed 004 Fig 8 (loop-invariant code motion,
//! fusion of maps, tuple partial evaluation).

use std::collections::HashMap;

use super::cleanup;
use super::pipeline::{Log, Pass, PassKind};
use crate::core::ir::{Atom, BlockId, Expr, ExprKey, Program, Scalar, VarId};
use crate::core::verify::expr_blocks;
use crate::core::visit::map_expr_atoms;
use crate::prim::Prim;

pub const PASS: Pass = Pass {
    name: "simp",
    description: "exact algebraic identities and common subexpression elimination",
    kind: PassKind::Rewrite(|program, _: &mut Log| {
        run(program);
        Ok(())
    }),
    postcondition: None,
};

/// The rules of this pass, for counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    MulByOne,
    DivByOne,
    DoubleNegation,
    IdentityCast,
    CommonSubexpression,
}

/// Simplifies a whole program; returns how often each rule fired.
pub fn run(program: &mut Program) -> HashMap<Rule, usize> {
    let main = program.main;
    run_from(program, main)
}

/// Simplifies a block and the blocks nested in it.
pub fn run_from(program: &mut Program, root: BlockId) -> HashMap<Rule, usize> {
    let mut fired = HashMap::new();
    let mut cx = Cx {
        subst: HashMap::new(),
        defs: HashMap::new(),
        fired: &mut fired,
    };
    simplify_block(program, root, &mut HashMap::new(), &mut cx);
    cleanup::run_from(program, root);
    fired
}

/// The state of a walk: replacements made so far, the definitions seen, the rule counts.
struct Cx<'a> {
    subst: HashMap<VarId, Atom>,
    defs: HashMap<VarId, Expr>,
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
    let mut stmts = std::mem::take(&mut program.blocks[block].stmts);
    for stmt in &mut stmts {
        map_expr_atoms(&mut stmt.expr, &mut |atom| resolve(atom, &cx.subst));
        for nested in expr_blocks(&stmt.expr) {
            let mut inner_seen = seen.clone();
            simplify_block(program, nested, &mut inner_seen, cx);
        }
        if let [binder] = stmt.binders[..] {
            if let Some((rule, replacement)) = identity(program, &stmt.expr, seen, &cx.defs) {
                *cx.fired.entry(rule).or_default() += 1;
                cx.subst.insert(binder, replacement);
                stmt.expr = Expr::Atom(replacement);
                continue;
            }
            if let Some(key) = stmt
                .expr
                .key()
                .filter(|_| !matches!(stmt.expr, Expr::Atom(_)))
            {
                seen.entry(key).or_insert(binder);
            }
            cx.defs.insert(binder, stmt.expr.clone());
        }
    }
    for atom in &mut program.blocks[block].results {
        *atom = resolve(*atom, &cx.subst);
    }
    program.blocks[block].stmts = stmts;
}

fn resolve(atom: Atom, subst: &HashMap<VarId, Atom>) -> Atom {
    match atom {
        Atom::Var(var) => subst.get(&var).copied().unwrap_or(atom),
        Atom::Lit(_) => atom,
    }
}

/// The value a statement can be replaced by, and the rule that says so.
fn identity(
    program: &Program,
    expr: &Expr,
    seen: &HashMap<ExprKey, VarId>,
    defs: &HashMap<VarId, Expr>,
) -> Option<(Rule, Atom)> {
    if let Some(key) = expr.key().filter(|_| !matches!(expr, Expr::Atom(_))) {
        if let Some(earlier) = seen.get(&key) {
            return Some((Rule::CommonSubexpression, Atom::Var(*earlier)));
        }
    }
    let Expr::Prim(prim, args) = expr else {
        return None;
    };
    // `kept` can stand for the result when it has the result's shape: the other operand has
    // the same shape or is a rank-0 scalar that broadcasts.
    let has_result_shape = |kept: &Atom, other: &Atom| {
        let other = program.atom_ty(other);
        other.rank() == 0 || program.atom_ty(kept).shape == other.shape
    };
    match (prim, args.as_slice()) {
        (Prim::Mul, [a, b]) if is_one(defs, b) && has_result_shape(a, b) => {
            Some((Rule::MulByOne, *a))
        }
        (Prim::Mul, [a, b]) if is_one(defs, a) && has_result_shape(b, a) => {
            Some((Rule::MulByOne, *b))
        }
        (Prim::Div, [a, b]) if is_one(defs, b) && has_result_shape(a, b) => {
            Some((Rule::DivByOne, *a))
        }
        (Prim::Neg, [Atom::Var(inner)]) => match defs.get(inner) {
            Some(Expr::Prim(Prim::Neg, inner_args)) => Some((Rule::DoubleNegation, inner_args[0])),
            _ => None,
        },
        (Prim::Cast(elem), [a]) if program.atom_ty(a).elem == *elem => {
            Some((Rule::IdentityCast, *a))
        }
        _ => None,
    }
}

/// Whether an atom is 1 everywhere: a literal 1 or a replicate of one.
fn is_one(defs: &HashMap<VarId, Expr>, atom: &Atom) -> bool {
    match atom {
        Atom::Lit(scalar) => scalar_is_one(*scalar),
        Atom::Var(var) => match defs.get(var) {
            Some(Expr::Replicate { array, .. }) => is_one(defs, array),
            _ => false,
        },
    }
}

fn scalar_is_one(scalar: Scalar) -> bool {
    match scalar {
        Scalar::F32(x) => x == 1.0,
        Scalar::F64(x) => x == 1.0,
        Scalar::I32(x) => x == 1,
        Scalar::I64(x) => x == 1,
        Scalar::U32(x) => x == 1,
        Scalar::U64(x) => x == 1,
        Scalar::Bool(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::interp::{run as interpret, InterpConfig};
    use crate::core::parse::parse_program;
    use crate::core::testgen::random_inputs;

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
        let fired = run(&mut simplified);
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
        crate::core::verify::verify(&simplified).expect("verifies");
        let text = simplified.to_string();
        assert_eq!(text.matches(" = ").count(), 3, "{text}");
        let inputs = random_inputs(&original, 3);
        let config = InterpConfig::default();
        assert_eq!(
            interpret(&original, &inputs, &config),
            interpret(&simplified, &inputs, &config)
        );
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
        let fired = run(&mut program);
        assert_eq!(fired.get(&Rule::MulByOne), Some(&1), "{fired:?}");
        assert_eq!(fired.get(&Rule::CommonSubexpression), None, "{fired:?}");
        assert_eq!(program.to_string().matches(" = ").count(), 4, "{program}");
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
        let fired = run(&mut program);
        assert!(fired.is_empty(), "{fired:?}");
        assert_eq!(program.to_string().matches(" = ").count(), 2);
    }
}

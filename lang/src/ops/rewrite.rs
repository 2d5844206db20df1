//! The contexts of the simplifier's per-form rules, run by `passes::simplify`: identities
//! that replace a statement by another expression (`Operation::simplify`, context `Rewrite`)
//! and statement rules that rewrite it into several statements (`Operation::expand`, context
//! `Expand`). Each rule is named by a `Rule` so that a test can check that it fires. Every
//! rule preserves results bit for bit, NaN and signed zeros included.

use std::collections::HashMap;

use super::{operation, Element, Move};
use crate::core::ir::{Atom, Expr, Program, Scalar, Stmt, VarId};

/// The simplifier's rules, for counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    MulByOne,
    DivByOne,
    DoubleNegation,
    IdentityCast,
    TransposeOfTranspose,
    IdentityTranspose,
    ReshapeOfReshape,
    IdentityReshape,
    PermutationGather,
    IntegerSumOfReplicate,
    CondToSelect,
    ScatterOfScatter,
    ScatterAsReshape,
    ScatterAsGather,
    SumOfSums,
    CommonSubexpression,
}

/// What a rule sees: the program and the definitions of the variables bound before the
/// statement it rewrites (single-binder statements of the blocks around it).
pub struct Rewrite<'a> {
    pub program: &'a Program,
    pub defs: &'a HashMap<VarId, Expr>,
}

impl Rewrite<'_> {
    /// The definition of `atom`, when it is a variable defined before.
    pub fn def(&self, atom: &Atom) -> Option<&Expr> {
        def(self.defs, atom)
    }

    /// Whether an atom is 1 everywhere: a literal 1, or a view that moves the elements of
    /// one (the seed cotangent of a gradient reaches a product as `tr (replicate (replicate
    /// 1))`).
    pub fn is_one(&self, atom: &Atom) -> bool {
        match atom {
            Atom::Lit(scalar) => scalar_is_one(*scalar),
            Atom::Var(_) => match self.def(atom).and_then(|expr| operation(expr).element()) {
                Some(Element::Moved {
                    array,
                    moved: Move::DropFirst { .. } | Move::Permute(_) | Move::Reshape(_),
                }) => self.is_one(&array),
                _ => false,
            },
        }
    }
}

/// What a statement rule sees and changes: the program (it may add variables and blocks), the
/// definitions of the variables bound before the statement, how often each variable is used
/// (counted when the round began), and how often each rule fired.
pub struct Expand<'a> {
    pub program: &'a mut Program,
    pub defs: &'a HashMap<VarId, Expr>,
    pub uses: &'a HashMap<VarId, usize>,
    pub fired: &'a mut HashMap<Rule, usize>,
}

impl<'a> Expand<'a> {
    /// The definition of `atom`, when it is a variable defined before.
    pub fn def(&self, atom: &Atom) -> Option<&'a Expr> {
        def(self.defs, atom)
    }

    /// Whether `atom` is a variable read once (so that rewriting its definition away for this
    /// reader leaves no other reader computing it again).
    pub fn single_use(&self, atom: &Atom) -> bool {
        matches!(atom, Atom::Var(var) if self.uses.get(var) == Some(&1))
    }

    /// Counts a rule that fired.
    pub fn fire(&mut self, rule: Rule) {
        *self.fired.entry(rule).or_default() += 1;
    }
}

/// What a statement rule made of a statement.
pub enum Expansion {
    /// Another expression for the statement, which the simplifier goes on simplifying.
    Expr(Expr),
    /// Statements in its place that bind its binders (simplified in the next round).
    Stmts(Vec<Stmt>),
}

fn def<'a>(defs: &'a HashMap<VarId, Expr>, atom: &Atom) -> Option<&'a Expr> {
    match atom {
        Atom::Var(var) => defs.get(var),
        Atom::Lit(_) => None,
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

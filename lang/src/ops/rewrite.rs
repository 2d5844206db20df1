//! The context of the simplifier's per-form rules (`Operation::simplify`, run by
//! `passes::simplify`): exact identities, each named by a `Rule` so that a test can check
//! that it fires. Every rule preserves results bit for bit, NaN and signed zeros included.

use std::collections::HashMap;

use super::{operation, Element, Move};
use crate::core::ir::{Atom, Expr, Program, Scalar, VarId};

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
        match atom {
            Atom::Var(var) => self.defs.get(var),
            Atom::Lit(_) => None,
        }
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

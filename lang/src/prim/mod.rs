//! The closed set of elementwise primitives (`op` of seed 001 Fig 7).
//!
//! Each family file holds every rule of its primitives together (STYLE.md §1): the type rule
//! and the scalar evaluation rule today; batching, JVP, transpose and cost rules join them as
//! the later passes arrive. Every rule is an exhaustive match, so adding a primitive is a
//! checklist that the compiler walks you through.
//!
//! Totality (LANGUAGE.md §4): every primitive is defined on every input. Integer division and
//! `mod` by zero give zero; integer overflow wraps; float operations follow IEEE 754.

mod arith;
mod compare;
mod convert;
mod math;

pub use convert::cast_scalar;

use crate::core::ir::{Elem, Scalar};

/// An elementwise primitive. Operands have equal shapes; the result has that shape too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    // arith.rs: numeric, result type = operand type.
    Add,
    Sub,
    Mul,
    /// Float division; on integers truncating division with `x / 0 = 0`.
    Div,
    Neg,
    Abs,
    Min,
    Max,
    /// Integer: floored modulo (result has the sign of the divisor), `x mod 0 = 0`. Float: fmod
    /// with the same sign rule.
    Mod,
    /// Floored integer division, `x idiv 0 = 0`.
    IDiv,
    // math.rs: floats only, result type = operand type.
    Sqrt,
    Exp,
    Exp2,
    Log,
    Log2,
    Log10,
    Log1p,
    Expm1,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sinh,
    Cosh,
    Atan,
    Floor,
    Ceil,
    Round,
    Pow,
    Atan2,
    // compare.rs: comparisons give Bool; logic on Bool; select.
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Or,
    Not,
    IsNan,
    IsInf,
    /// `select(c, a, b)`: `a` where `c`, else `b`.
    Select,
    // convert.rs
    /// Conversion to an element type (float→int truncates toward zero and saturates; NaN → 0).
    Cast(Elem),
}

/// Why an application of a primitive is ill-typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimTypeError(pub String);

impl Prim {
    /// The printed name (also the name the IR parser reads).
    pub fn name(self) -> String {
        match self {
            Prim::Cast(elem) => format!("cast_{}", elem.name()),
            other => format!("{other:?}").to_lowercase(),
        }
    }

    /// Parses a printed name back.
    pub fn from_name(name: &str) -> Option<Prim> {
        if let Some(elem) = name.strip_prefix("cast_") {
            return Elem::from_name(elem).map(Prim::Cast);
        }
        ALL_PRIMS.iter().copied().find(|prim| prim.name() == name)
    }

    /// Number of operands.
    pub fn arity(self) -> usize {
        match self {
            Prim::Add
            | Prim::Sub
            | Prim::Mul
            | Prim::Div
            | Prim::Min
            | Prim::Max
            | Prim::Mod
            | Prim::IDiv
            | Prim::Pow
            | Prim::Atan2
            | Prim::Eq
            | Prim::Ne
            | Prim::Lt
            | Prim::Gt
            | Prim::Le
            | Prim::Ge
            | Prim::And
            | Prim::Or => 2,
            Prim::Select => 3,
            Prim::Neg
            | Prim::Abs
            | Prim::Sqrt
            | Prim::Exp
            | Prim::Exp2
            | Prim::Log
            | Prim::Log2
            | Prim::Log10
            | Prim::Log1p
            | Prim::Expm1
            | Prim::Sin
            | Prim::Cos
            | Prim::Tan
            | Prim::Tanh
            | Prim::Sinh
            | Prim::Cosh
            | Prim::Atan
            | Prim::Floor
            | Prim::Ceil
            | Prim::Round
            | Prim::Not
            | Prim::IsNan
            | Prim::IsInf
            | Prim::Cast(_) => 1,
        }
    }

    /// The element type of the result given the operands' element types, or why it is
    /// ill-typed. (Shapes are checked by the caller: all operands share one shape.)
    pub fn result_elem(self, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
        if operands.len() != self.arity() {
            return Err(PrimTypeError(format!(
                "{} takes {} operands, got {}",
                self.name(),
                self.arity(),
                operands.len()
            )));
        }
        if let Some(res) = arith::result_elem(self, operands) {
            return res;
        }
        if let Some(res) = math::result_elem(self, operands) {
            return res;
        }
        if let Some(res) = compare::result_elem(self, operands) {
            return res;
        }
        convert::result_elem(self, operands)
    }

    /// Evaluates the primitive on scalars (the operands are assumed well typed).
    pub fn eval(self, operands: &[Scalar]) -> Scalar {
        arith::eval(self, operands)
            .or_else(|| math::eval(self, operands))
            .or_else(|| compare::eval(self, operands))
            .unwrap_or_else(|| convert::eval(self, operands))
    }
}

/// Every primitive except the `Cast` family (used by the name parser and by table-driven tests).
pub const ALL_PRIMS: &[Prim] = &[
    Prim::Add,
    Prim::Sub,
    Prim::Mul,
    Prim::Div,
    Prim::Neg,
    Prim::Abs,
    Prim::Min,
    Prim::Max,
    Prim::Mod,
    Prim::IDiv,
    Prim::Sqrt,
    Prim::Exp,
    Prim::Exp2,
    Prim::Log,
    Prim::Log2,
    Prim::Log10,
    Prim::Log1p,
    Prim::Expm1,
    Prim::Sin,
    Prim::Cos,
    Prim::Tan,
    Prim::Tanh,
    Prim::Sinh,
    Prim::Cosh,
    Prim::Atan,
    Prim::Floor,
    Prim::Ceil,
    Prim::Round,
    Prim::Pow,
    Prim::Atan2,
    Prim::Eq,
    Prim::Ne,
    Prim::Lt,
    Prim::Gt,
    Prim::Le,
    Prim::Ge,
    Prim::And,
    Prim::Or,
    Prim::Not,
    Prim::IsNan,
    Prim::IsInf,
    Prim::Select,
];

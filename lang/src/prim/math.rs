//! Placeholder: rules arrive with the interpreter.
use super::{Prim, PrimTypeError};
use crate::core::ir::{Elem, Scalar};

pub fn result_elem(_prim: Prim, _operands: &[Elem]) -> Option<Result<Elem, PrimTypeError>> {
    None
}

pub fn eval(_prim: Prim, _operands: &[Scalar]) -> Option<Scalar> {
    None
}

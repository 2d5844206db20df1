//! Placeholder: rules arrive with the interpreter.
use super::{Prim, PrimTypeError};
use crate::core::ir::{Elem, Scalar};

pub fn result_elem(prim: Prim, _operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    match prim {
        Prim::Cast(elem) => Ok(elem),
        other => Err(PrimTypeError(format!("no rule for {other:?}"))),
    }
}

pub fn eval(_prim: Prim, operands: &[Scalar]) -> Scalar {
    operands[0]
}

pub fn cast_scalar(scalar: Scalar, _elem: Elem) -> Scalar {
    scalar
}

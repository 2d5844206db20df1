//! MLIR text for StableHLO: tensor types, dense literals, and a writer that prints operations
//! in MLIR's generic form (`%3 = "stablehlo.add"(%1, %2) : (…) -> …`).
//!
//! The generic form is the one every MLIR parser reads whatever the dialect's pretty syntax of
//! the day, so the module stays valid across StableHLO versions. Values are numbered in
//! definition order (`%0`, `%1`, …) over the whole module; region arguments too.
//!
//! Guarantees: float literals print exactly (the shortest decimal that reads back to the same
//! bits, or the bit pattern in hexadecimal for NaN, infinities and the rare value whose decimal
//! would round twice).

use std::fmt::Write;

use crate::core::ir::{ArrTy, Elem, Scalar};
use crate::core::value::Array;
use crate::ops::hlo::{Region, Val};

/// The MLIR name of an element type.
pub fn elem_type(elem: Elem) -> &'static str {
    match elem {
        Elem::F32 => "f32",
        Elem::F64 => "f64",
        Elem::I32 => "i32",
        Elem::I64 => "i64",
        Elem::U32 => "ui32",
        Elem::U64 => "ui64",
        Elem::Bool => "i1",
    }
}

/// `tensor<2x3xf32>`; `tensor<f32>` for a scalar.
pub fn tensor_type(ty: &ArrTy) -> String {
    let mut text = String::from("tensor<");
    for size in &ty.shape {
        let _ = write!(text, "{size}x");
    }
    text.push_str(elem_type(ty.elem));
    text.push('>');
    text
}

/// A comma-separated list of tensor types.
pub fn tensor_types(tys: &[ArrTy]) -> String {
    tys.iter().map(tensor_type).collect::<Vec<_>>().join(", ")
}

/// One element of a dense literal.
pub fn scalar_literal(scalar: Scalar) -> String {
    match scalar {
        Scalar::F32(x) => float_literal(format!("{x:?}"), x.is_finite(), |text| {
            text.parse::<f64>().ok().map(|y| y as f32) == Some(x)
        })
        .unwrap_or_else(|| format!("0x{:08X}", x.to_bits())),
        Scalar::F64(x) => float_literal(format!("{x:?}"), x.is_finite(), |text| {
            text.parse::<f64>().ok().map(f64::to_bits) == Some(x.to_bits())
        })
        .unwrap_or_else(|| format!("0x{:016X}", x.to_bits())),
        Scalar::I32(x) => x.to_string(),
        Scalar::I64(x) => x.to_string(),
        Scalar::U32(x) => x.to_string(),
        Scalar::U64(x) => x.to_string(),
        Scalar::Bool(x) => x.to_string(),
    }
}

/// Rust's shortest round-trip text as an MLIR float literal (which needs a `.`), if MLIR reads
/// it back to the same value (it parses a double, then rounds to the element type).
fn float_literal(text: String, finite: bool, reads_back: impl Fn(&str) -> bool) -> Option<String> {
    if !finite {
        return None;
    }
    let text = match (text.contains('.'), text.find('e')) {
        (false, Some(exponent)) => format!("{}.0{}", &text[..exponent], &text[exponent..]),
        (false, None) => format!("{text}.0"),
        (true, _) => text,
    };
    reads_back(&text).then_some(text)
}

/// `dense<…>` for an array (nested brackets, row-major).
pub fn dense(array: &Array) -> String {
    fn nest(array: &Array, axis: usize, flat: &mut usize, out: &mut String) {
        if axis == array.shape.len() {
            out.push_str(&scalar_literal(array.data.get(*flat)));
            *flat += 1;
            return;
        }
        out.push('[');
        for position in 0..array.shape[axis] {
            if position > 0 {
                out.push_str(", ");
            }
            nest(array, axis + 1, flat, out);
        }
        out.push(']');
    }
    let mut text = String::from("dense<");
    nest(array, 0, &mut 0, &mut text);
    text.push('>');
    text
}

/// Writes the operations of a function body, nested regions included.
#[derive(Debug, Default)]
pub struct Writer {
    text: String,
    indent: usize,
    next: usize,
}

impl Writer {
    pub fn new(indent: usize) -> Writer {
        Writer {
            indent,
            ..Writer::default()
        }
    }

    /// A fresh value name.
    pub fn fresh(&mut self) -> String {
        let name = format!("%{}", self.next);
        self.next += 1;
        name
    }

    pub fn line(&mut self, line: &str) {
        for _ in 0..self.indent {
            self.text.push_str("  ");
        }
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// The text written so far.
    pub fn finish(self) -> String {
        self.text
    }

    /// An operation with one result and no regions.
    pub fn op(&mut self, name: &str, operands: &[&Val], attrs: &str, result: ArrTy) -> Val {
        let mut results = self.op_full(name, operands, attrs, &[], vec![result]);
        results.remove(0)
    }

    /// A constant: one scalar repeated over a shape (a splat).
    pub fn splat(&mut self, scalar: Scalar, shape: &[usize]) -> Val {
        let ty = ArrTy::new(shape.to_vec(), scalar.elem());
        let attrs = format!(
            "{{value = dense<{}> : {}}}",
            scalar_literal(scalar),
            tensor_type(&ty)
        );
        self.op("stablehlo.constant", &[], &attrs, ty)
    }

    /// A constant array.
    pub fn constant(&mut self, array: &Array) -> Val {
        let ty = array.ty();
        let attrs = format!("{{value = {} : {}}}", dense(array), tensor_type(&ty));
        self.op("stablehlo.constant", &[], &attrs, ty)
    }

    /// Any operation: `attrs` is the attribute dictionary with its braces (or empty),
    /// `regions` the texts made by [`Writer::region`].
    pub fn op_full(
        &mut self,
        name: &str,
        operands: &[&Val],
        attrs: &str,
        regions: &[Region],
        results: Vec<ArrTy>,
    ) -> Vec<Val> {
        let base = self.fresh();
        let vals: Vec<Val> = match results.len() {
            1 => vec![Val {
                name: base.clone(),
                ty: results[0].clone(),
            }],
            _ => results
                .iter()
                .enumerate()
                .map(|(position, ty)| Val {
                    name: format!("{base}#{position}"),
                    ty: ty.clone(),
                })
                .collect(),
        };
        let mut line = match results.len() {
            0 => String::new(),
            1 => format!("{base} = "),
            n => format!("{base}:{n} = "),
        };
        let names: Vec<&str> = operands.iter().map(|val| val.name.as_str()).collect();
        let _ = write!(line, "\"{name}\"({})", names.join(", "));
        if !regions.is_empty() {
            let texts: Vec<&str> = regions.iter().map(|region| region.0.as_str()).collect();
            let _ = write!(line, " ({})", texts.join(", "));
        }
        if !attrs.is_empty() {
            let _ = write!(line, " {attrs}");
        }
        let operand_tys: Vec<ArrTy> = operands.iter().map(|val| val.ty.clone()).collect();
        let result_text = match results.len() {
            1 => tensor_type(&results[0]),
            _ => format!("({})", tensor_types(&results)),
        };
        let _ = write!(line, " : ({}) -> {result_text}", tensor_types(&operand_tys));
        self.line(&line);
        vals
    }

    /// `"stablehlo.return"(vals)` or `"func.return"(vals)`.
    pub fn ret(&mut self, op: &str, vals: &[Val]) {
        let names: Vec<&str> = vals.iter().map(|val| val.name.as_str()).collect();
        let tys: Vec<ArrTy> = vals.iter().map(|val| val.ty.clone()).collect();
        self.line(&format!(
            "\"{op}\"({}) : ({}) -> ()",
            names.join(", "),
            tensor_types(&tys)
        ));
    }

    /// A region with one block whose arguments have types `params`: `body` writes its
    /// operations given the arguments and returns the values the block returns. The region's
    /// text (for [`Writer::op_full`]) is returned with whatever `body` returns besides.
    pub fn region<T, E>(
        &mut self,
        params: &[ArrTy],
        body: impl FnOnce(&mut Writer, Vec<Val>) -> Result<(Vec<Val>, T), E>,
    ) -> Result<(Region, T), E> {
        let outer = std::mem::take(&mut self.text);
        let indent = self.indent;
        self.indent = indent + 2;
        let args: Vec<Val> = params
            .iter()
            .map(|ty| Val {
                name: self.fresh(),
                ty: ty.clone(),
            })
            .collect();
        let header: Vec<String> = args
            .iter()
            .map(|val| format!("{}: {}", val.name, tensor_type(&val.ty)))
            .collect();
        self.indent = indent + 1;
        self.line(&format!("^bb0({}):", header.join(", ")));
        self.indent = indent + 2;
        let res = body(self, args);
        self.indent = indent;
        let inner = std::mem::replace(&mut self.text, outer);
        let (returned, extra) = res?;
        let mut text = String::from("{\n");
        text.push_str(&inner);
        let mut closing = Writer::new(indent + 2);
        closing.ret("stablehlo.return", &returned);
        text.push_str(&closing.text);
        for _ in 0..indent {
            text.push_str("  ");
        }
        text.push('}');
        Ok((Region(text), extra))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::value::ArrayData;
    use crate::ops::hlo::i64_array;

    #[test]
    fn float_literals_are_exact_and_have_a_point() {
        assert_eq!(scalar_literal(Scalar::F32(1.0)), "1.0");
        assert_eq!(scalar_literal(Scalar::F32(0.1)), "0.1");
        assert_eq!(scalar_literal(Scalar::F32(1e-7)), "1.0e-7");
        assert_eq!(scalar_literal(Scalar::F64(-2.5e300)), "-2.5e300");
        assert_eq!(scalar_literal(Scalar::F32(f32::NAN)), "0x7FC00000");
        assert_eq!(
            scalar_literal(Scalar::F64(f64::NEG_INFINITY)),
            "0xFFF0000000000000"
        );
        assert_eq!(scalar_literal(Scalar::Bool(true)), "true");
        assert_eq!(scalar_literal(Scalar::U64(u64::MAX)), u64::MAX.to_string());
    }

    #[test]
    fn types_and_dense_literals() {
        assert_eq!(
            tensor_type(&ArrTy::new(vec![2, 3], Elem::U32)),
            "tensor<2x3xui32>"
        );
        assert_eq!(tensor_type(&ArrTy::scalar(Elem::Bool)), "tensor<i1>");
        let array = Array::new(vec![2, 2], ArrayData::I64(vec![1, 2, 3, 4]));
        assert_eq!(dense(&array), "dense<[[1, 2], [3, 4]]>");
        let empty = Array::new(vec![0], ArrayData::F32(Vec::new()));
        assert_eq!(dense(&empty), "dense<[]>");
        assert_eq!(i64_array(&[]), "array<i64>");
        assert_eq!(i64_array(&[1, 0]), "array<i64: 1, 0>");
    }

    #[test]
    fn operations_print_in_generic_form_with_numbered_results() {
        let mut writer = Writer::new(0);
        let x = writer.splat(Scalar::F32(2.0), &[3]);
        let sum = writer.op(
            "stablehlo.add",
            &[&x, &x],
            "",
            ArrTy::new(vec![3], Elem::F32),
        );
        assert_eq!(sum.name, "%1");
        let (region, ()) = writer
            .region::<(), ()>(&[ArrTy::scalar(Elem::F32)], |_, args| Ok((args, ())))
            .unwrap();
        let pair = writer.op_full(
            "stablehlo.pair",
            &[&sum],
            "",
            &[region],
            vec![x.ty.clone(), x.ty.clone()],
        );
        assert_eq!(pair[1].name, "%3#1");
        let text = writer.finish();
        assert!(text.starts_with(
            "%0 = \"stablehlo.constant\"() {value = dense<2.0> : tensor<3xf32>} : () -> tensor<3xf32>\n\
             %1 = \"stablehlo.add\"(%0, %0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
        ), "{text}");
        assert!(text.contains("^bb0(%2: tensor<f32>):"), "{text}");
        assert!(
            text.contains("\"stablehlo.return\"(%2) : (tensor<f32>) -> ()"),
            "{text}"
        );
    }
}

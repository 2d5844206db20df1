//! Data in and out: NumPy `.npy` files and numeric CSV (docs/language.md, `load_npy`, `save_npy`,
//! `load_csv`, `save_csv`).
//!
//! A load reads one array of a declared element type and shape; a save writes one. The session
//! (`session.rs`) recognises the calls at the top level of a block, resolves the path against
//! the script's folder and turns the errors here into diagnostics at the call.
//!
//! - `.npy` goes through `ndarray-npy`: the file's dtype must be the declared element type
//!   (`Float32` is `<f4`, `Int32` `<i4`, `Nat` `<u4`, `Word64` `<u8`, `Bool` `|b1`, …).
//! - CSV holds a table of rank 1 (one number per line) or rank 2 (one row per line, fields
//!   separated by commas). A first line none of whose fields is a number is a header and is
//!   skipped. Numbers are written in Rust's shortest round-trip form, so writing and reading
//!   back (here or in NumPy) keeps every bit; `Bool` is written as `1`/`0`.
//!
//! Errors name what was expected and what was found (shapes as NumPy prints them).

use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use ndarray_npy::{ReadNpyError, ReadableElement, WritableElement};

use crate::core::ir::{ArrTy, Elem, Scalar};
use crate::core::value::{Array, ArrayData};

/// A file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Npy,
    Csv,
}

/// A data built-in: `load_npy`, `load_csv`, `save_npy`, `save_csv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataOp {
    Load(Format),
    Save(Format),
}

impl DataOp {
    pub fn from_name(name: &str) -> Option<DataOp> {
        Some(match name {
            "load_npy" => DataOp::Load(Format::Npy),
            "load_csv" => DataOp::Load(Format::Csv),
            "save_npy" => DataOp::Save(Format::Npy),
            "save_csv" => DataOp::Save(Format::Csv),
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            DataOp::Load(Format::Npy) => "load_npy",
            DataOp::Load(Format::Csv) => "load_csv",
            DataOp::Save(Format::Npy) => "save_npy",
            DataOp::Save(Format::Csv) => "save_csv",
        }
    }
}

/// Shapes as NumPy prints them: `(150, 4)`, `(3,)`, `()`.
pub fn shape_text(shape: &[usize]) -> String {
    match shape {
        [only] => format!("({only},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The dx name of an element type (for messages).
fn elem_text(elem: Elem) -> &'static str {
    match elem {
        Elem::F32 => "Float32",
        Elem::F64 => "Float64",
        Elem::I32 => "Int32",
        Elem::I64 => "Int64",
        Elem::U32 => "Nat",
        Elem::U64 => "Word64",
        Elem::Bool => "Bool",
    }
}

/// Reads an array of type `ty` from `path`.
pub fn load(format: Format, path: &Path, ty: &ArrTy) -> Result<Array, String> {
    let array = match format {
        Format::Npy => load_npy(path, ty.elem)?,
        Format::Csv => load_csv(path, ty)?,
    };
    if array.shape != ty.shape {
        return Err(format!(
            "expected shape {} (the declared type), found shape {}",
            shape_text(&ty.shape),
            shape_text(&array.shape)
        ));
    }
    Ok(array)
}

/// Writes an array to `path`.
pub fn save(format: Format, path: &Path, array: &Array) -> Result<(), String> {
    match format {
        Format::Npy => save_npy(path, array),
        Format::Csv => save_csv(path, array),
    }
}

// ----- .npy -----

fn read_npy_as<T: ReadableElement + Clone>(
    path: &Path,
) -> Result<(Vec<usize>, Vec<T>), ReadNpyError> {
    let array: ArrayD<T> = ndarray_npy::read_npy(path)?;
    let shape = array.shape().to_vec();
    // `iter` walks the logical (row-major) order, also for Fortran-ordered files.
    Ok((shape, array.iter().cloned().collect()))
}

fn load_npy(path: &Path, elem: Elem) -> Result<Array, String> {
    fn read(path: &Path, elem: Elem) -> Result<Array, ReadNpyError> {
        let (shape, data) = match elem {
            Elem::F32 => read_npy_as::<f32>(path).map(|(s, d)| (s, ArrayData::F32(d)))?,
            Elem::F64 => read_npy_as::<f64>(path).map(|(s, d)| (s, ArrayData::F64(d)))?,
            Elem::I32 => read_npy_as::<i32>(path).map(|(s, d)| (s, ArrayData::I32(d)))?,
            Elem::I64 => read_npy_as::<i64>(path).map(|(s, d)| (s, ArrayData::I64(d)))?,
            Elem::U32 => read_npy_as::<u32>(path).map(|(s, d)| (s, ArrayData::U32(d)))?,
            Elem::U64 => read_npy_as::<u64>(path).map(|(s, d)| (s, ArrayData::U64(d)))?,
            Elem::Bool => read_npy_as::<bool>(path).map(|(s, d)| (s, ArrayData::Bool(d)))?,
        };
        Ok(Array::new(shape, data))
    }
    match read(path, elem) {
        Ok(array) => Ok(array),
        Err(ReadNpyError::WrongDescriptor(_)) => {
            // Name the element type the file holds, if it is one of ours.
            let found = crate::prim::ALL_ELEMS
                .iter()
                .copied()
                .filter(|&other| other != elem)
                .find_map(|other| read(path, other).ok());
            Err(match found {
                Some(array) => format!(
                    "expected {} elements (the declared type), found {} elements of shape {}",
                    elem_text(elem),
                    elem_text(array.elem()),
                    shape_text(&array.shape)
                ),
                None => format!(
                    "expected {} elements (the declared type), found an element type dx does not read",
                    elem_text(elem)
                ),
            })
        }
        Err(err) => Err(err.to_string()),
    }
}

fn to_ndarray<T: Clone>(shape: &[usize], data: &[T]) -> Result<ArrayD<T>, String> {
    ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).map_err(|err| err.to_string())
}

fn write_npy_of<T: WritableElement + Clone>(
    path: &Path,
    shape: &[usize],
    data: &[T],
) -> Result<(), String> {
    ndarray_npy::write_npy(path, &to_ndarray(shape, data)?).map_err(|err| err.to_string())
}

fn save_npy(path: &Path, array: &Array) -> Result<(), String> {
    let shape = &array.shape;
    match &*array.data {
        ArrayData::F32(data) => write_npy_of(path, shape, data),
        ArrayData::F64(data) => write_npy_of(path, shape, data),
        ArrayData::I32(data) => write_npy_of(path, shape, data),
        ArrayData::I64(data) => write_npy_of(path, shape, data),
        ArrayData::U32(data) => write_npy_of(path, shape, data),
        ArrayData::U64(data) => write_npy_of(path, shape, data),
        ArrayData::Bool(data) => write_npy_of(path, shape, data),
    }
}

// ----- CSV -----

/// One field as a scalar of type `elem`, or `None` if it does not read as one.
fn parse_field(text: &str, elem: Elem) -> Option<Scalar> {
    let text = text.trim();
    Some(match elem {
        Elem::F32 => Scalar::F32(text.parse().ok()?),
        Elem::F64 => Scalar::F64(text.parse().ok()?),
        Elem::I32 => Scalar::I32(text.parse().ok()?),
        Elem::I64 => Scalar::I64(text.parse().ok()?),
        Elem::U32 => Scalar::U32(text.parse().ok()?),
        Elem::U64 => Scalar::U64(text.parse().ok()?),
        Elem::Bool => Scalar::Bool(match text {
            "1" | "True" | "true" => true,
            "0" | "False" | "false" => false,
            _ => return None,
        }),
    })
}

fn load_csv(path: &Path, ty: &ArrTy) -> Result<Array, String> {
    if !matches!(ty.shape.len(), 1 | 2) {
        return Err(format!(
            "a CSV file holds a table of rank 1 or 2, but the declared type has shape {}",
            shape_text(&ty.shape)
        ));
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_path(path)
        .map_err(|err| err.to_string())?;
    let mut data = ArrayData::with_capacity(ty.elem, ty.n_elems());
    let mut n_rows = 0;
    let mut n_fields = None;
    for (position, record) in reader.records().enumerate() {
        let record = record.map_err(|err| err.to_string())?;
        let line = record
            .position()
            .map_or(position + 1, |pos| pos.line() as usize);
        let is_number = |field: &str| field.trim().parse::<f64>().is_ok();
        if position == 0 && !record.iter().any(is_number) {
            continue; // A header.
        }
        match n_fields {
            None => n_fields = Some(record.len()),
            Some(expected) if expected != record.len() => {
                return Err(format!(
                    "line {line} has {} fields, the lines before it {expected}",
                    record.len()
                ))
            }
            Some(_) => {}
        }
        for (column, field) in record.iter().enumerate() {
            let scalar = parse_field(field, ty.elem).ok_or_else(|| {
                format!(
                    "line {line}, field {}: `{}` is not a {}",
                    column + 1,
                    field.trim(),
                    elem_text(ty.elem)
                )
            })?;
            data.push(scalar);
        }
        n_rows += 1;
    }
    let n_fields = n_fields.unwrap_or(0);
    let shape = match (ty.shape.len(), n_fields) {
        (1, 1) => vec![n_rows],
        (1, _) => {
            return Err(format!(
                "expected one number per line (the declared type has shape {}), found {n_fields} per line",
                shape_text(&ty.shape)
            ))
        }
        _ => vec![n_rows, n_fields],
    };
    Ok(Array::new(shape, data))
}

/// A scalar in CSV: floats in the shortest form that reads back to the same bits.
fn field_text(scalar: Scalar) -> String {
    match scalar {
        Scalar::F32(x) => x.to_string(),
        Scalar::F64(x) => x.to_string(),
        Scalar::I32(x) => x.to_string(),
        Scalar::I64(x) => x.to_string(),
        Scalar::U32(x) => x.to_string(),
        Scalar::U64(x) => x.to_string(),
        Scalar::Bool(b) => u8::from(b).to_string(),
    }
}

fn save_csv(path: &Path, array: &Array) -> Result<(), String> {
    let row_len = match array.shape.as_slice() {
        [] | [_] => 1,
        [_, n_cols] => *n_cols,
        shape => {
            return Err(format!(
                "a CSV file holds a table of rank 1 or 2, not one of shape {}",
                shape_text(shape)
            ))
        }
    };
    let mut writer = csv::Writer::from_path(path).map_err(|err| err.to_string())?;
    let n_elems = array.n_elems();
    for start in (0..n_elems).step_by(row_len.max(1)) {
        let row = (start..start + row_len).map(|flat| field_text(array.data.get(flat)));
        writer.write_record(row).map_err(|err| err.to_string())?;
    }
    writer.flush().map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("dx-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        dir.join(name)
    }

    fn floats() -> Array {
        let values = vec![
            0.1f32,
            -2.5e-8,
            3.4028235e38,
            f32::MIN_POSITIVE,
            1.0 / 3.0,
            -0.0,
        ];
        Array::new(vec![2, 3], ArrayData::F32(values))
    }

    #[test]
    fn npy_and_csv_round_trips_keep_every_bit() {
        for (format, name) in [(Format::Npy, "a.npy"), (Format::Csv, "a.csv")] {
            let path = temp_path(name);
            let array = floats();
            save(format, &path, &array).expect("save");
            let back = load(format, &path, &array.ty()).expect("load");
            let bits = |array: &Array| match &*array.data {
                ArrayData::F32(values) => values.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                _ => Vec::new(),
            };
            assert_eq!(bits(&back), bits(&array), "{name}");
            assert_eq!(back.shape, array.shape);
        }
    }

    #[test]
    fn wrong_shapes_and_types_are_named() {
        let path = temp_path("b.npy");
        save(Format::Npy, &path, &floats()).expect("save");
        let err = load(Format::Npy, &path, &ArrTy::new(vec![3, 2], Elem::F32)).unwrap_err();
        assert_eq!(
            err,
            "expected shape (3, 2) (the declared type), found shape (2, 3)"
        );
        let err = load(Format::Npy, &path, &ArrTy::new(vec![2, 3], Elem::F64)).unwrap_err();
        assert_eq!(
            err,
            "expected Float64 elements (the declared type), found Float32 elements of shape (2, 3)"
        );
        let csv = temp_path("c.csv");
        std::fs::write(&csv, "x,y\n1,2\n3,oops\n").expect("write");
        let err = load(Format::Csv, &csv, &ArrTy::new(vec![2, 2], Elem::F32)).unwrap_err();
        assert_eq!(err, "line 3, field 2: `oops` is not a Float32");
        std::fs::write(&csv, "1,2\n3\n").expect("write");
        let err = load(Format::Csv, &csv, &ArrTy::new(vec![2, 2], Elem::F32)).unwrap_err();
        assert_eq!(err, "line 2 has 1 fields, the lines before it 2");
    }
}

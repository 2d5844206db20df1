//! Runtime values: flat row-major arrays of one element type, and tuples of values.

use std::sync::Arc;

use super::ir::{ArrTy, Elem, Scalar};

/// The elements of an array, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
}

/// A regular array: `shape` (outermost axis first) and its elements in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Arc<ArrayData>,
}

impl ArrayData {
    pub fn elem(&self) -> Elem {
        match self {
            ArrayData::F32(_) => Elem::F32,
            ArrayData::F64(_) => Elem::F64,
            ArrayData::I32(_) => Elem::I32,
            ArrayData::I64(_) => Elem::I64,
            ArrayData::U32(_) => Elem::U32,
            ArrayData::U64(_) => Elem::U64,
            ArrayData::Bool(_) => Elem::Bool,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ArrayData::F32(v) => v.len(),
            ArrayData::F64(v) => v.len(),
            ArrayData::I32(v) => v.len(),
            ArrayData::I64(v) => v.len(),
            ArrayData::U32(v) => v.len(),
            ArrayData::U64(v) => v.len(),
            ArrayData::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An empty buffer of an element type with room for `capacity` elements.
    pub fn with_capacity(elem: Elem, capacity: usize) -> ArrayData {
        match elem {
            Elem::F32 => ArrayData::F32(Vec::with_capacity(capacity)),
            Elem::F64 => ArrayData::F64(Vec::with_capacity(capacity)),
            Elem::I32 => ArrayData::I32(Vec::with_capacity(capacity)),
            Elem::I64 => ArrayData::I64(Vec::with_capacity(capacity)),
            Elem::U32 => ArrayData::U32(Vec::with_capacity(capacity)),
            Elem::U64 => ArrayData::U64(Vec::with_capacity(capacity)),
            Elem::Bool => ArrayData::Bool(Vec::with_capacity(capacity)),
        }
    }

    /// The element at a flat position.
    pub fn get(&self, flat: usize) -> Scalar {
        match self {
            ArrayData::F32(v) => Scalar::F32(v[flat]),
            ArrayData::F64(v) => Scalar::F64(v[flat]),
            ArrayData::I32(v) => Scalar::I32(v[flat]),
            ArrayData::I64(v) => Scalar::I64(v[flat]),
            ArrayData::U32(v) => Scalar::U32(v[flat]),
            ArrayData::U64(v) => Scalar::U64(v[flat]),
            ArrayData::Bool(v) => Scalar::Bool(v[flat]),
        }
    }

    /// Appends a scalar, which must have this buffer's element type.
    pub fn push(&mut self, scalar: Scalar) {
        match (self, scalar) {
            (ArrayData::F32(v), Scalar::F32(x)) => v.push(x),
            (ArrayData::F64(v), Scalar::F64(x)) => v.push(x),
            (ArrayData::I32(v), Scalar::I32(x)) => v.push(x),
            (ArrayData::I64(v), Scalar::I64(x)) => v.push(x),
            (ArrayData::U32(v), Scalar::U32(x)) => v.push(x),
            (ArrayData::U64(v), Scalar::U64(x)) => v.push(x),
            (ArrayData::Bool(v), Scalar::Bool(x)) => v.push(x),
            (data, scalar) => panic!(
                "element type mismatch: pushing {:?} onto a {:?} buffer (the IR verifier rules this out)",
                scalar.elem(),
                data.elem()
            ),
        }
    }
}

impl Array {
    pub fn new(shape: Vec<usize>, data: ArrayData) -> Array {
        debug_assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "shape and data disagree"
        );
        Array {
            shape,
            data: Arc::new(data),
        }
    }

    pub fn scalar(scalar: Scalar) -> Array {
        let mut data = ArrayData::with_capacity(scalar.elem(), 1);
        data.push(scalar);
        Array::new(Vec::new(), data)
    }

    /// An array of zeros.
    pub fn zeros(ty: &ArrTy) -> Array {
        let n_elems = ty.n_elems();
        let mut data = ArrayData::with_capacity(ty.elem, n_elems);
        for _ in 0..n_elems {
            data.push(Scalar::zero(ty.elem));
        }
        Array::new(ty.shape.clone(), data)
    }

    pub fn elem(&self) -> Elem {
        self.data.elem()
    }

    pub fn ty(&self) -> ArrTy {
        ArrTy::new(self.shape.clone(), self.elem())
    }

    pub fn n_elems(&self) -> usize {
        self.data.len()
    }

    /// The single element of a rank-0 array.
    pub fn as_scalar(&self) -> Option<Scalar> {
        (self.shape.is_empty()).then(|| self.data.get(0))
    }
}

/// A value of the surface language at run time: an array or a tuple. A table of tuples is a
/// tuple of tables.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Array(Array),
    Tuple(Vec<Value>),
}

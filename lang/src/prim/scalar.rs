//! Element types and scalar constants: the values primitives compute on (the core IR's arrays
//! are of these elements; `core::ir` re-exports them).

/// The element type of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Elem {
    F32,
    F64,
    I32,
    I64,
    U32,
    U64,
    Bool,
}

impl Elem {
    /// The size of one element in memory.
    pub fn bytes(self) -> usize {
        match self {
            Elem::F32 | Elem::I32 | Elem::U32 => 4,
            Elem::F64 | Elem::I64 | Elem::U64 => 8,
            Elem::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F64)
    }

    pub fn is_integer(self) -> bool {
        matches!(self, Elem::I32 | Elem::I64 | Elem::U32 | Elem::U64)
    }

    /// The least and greatest values of an integer type that an `i64` holds (all of them but
    /// `U64`'s above `i64::MAX`); `None` for floats and `Bool`.
    pub fn int_range(self) -> Option<(i64, i64)> {
        match self {
            Elem::I32 => Some((i32::MIN.into(), i32::MAX.into())),
            Elem::U32 => Some((0, u32::MAX.into())),
            Elem::I64 => Some((i64::MIN, i64::MAX)),
            Elem::U64 => Some((0, i64::MAX)),
            Elem::F32 | Elem::F64 | Elem::Bool => None,
        }
    }

    pub fn is_numeric(self) -> bool {
        self != Elem::Bool
    }

    /// The name used in printed IR.
    pub fn name(self) -> &'static str {
        match self {
            Elem::F32 => "f32",
            Elem::F64 => "f64",
            Elem::I32 => "i32",
            Elem::I64 => "i64",
            Elem::U32 => "u32",
            Elem::U64 => "u64",
            Elem::Bool => "bool",
        }
    }

    pub fn from_name(name: &str) -> Option<Elem> {
        Some(match name {
            "f32" => Elem::F32,
            "f64" => Elem::F64,
            "i32" => Elem::I32,
            "i64" => Elem::I64,
            "u32" => Elem::U32,
            "u64" => Elem::U64,
            "bool" => Elem::Bool,
            _ => return None,
        })
    }
}

/// A scalar constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    F32(f32),
    F64(f64),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    Bool(bool),
}

impl Scalar {
    pub fn elem(self) -> Elem {
        match self {
            Scalar::F32(_) => Elem::F32,
            Scalar::F64(_) => Elem::F64,
            Scalar::I32(_) => Elem::I32,
            Scalar::I64(_) => Elem::I64,
            Scalar::U32(_) => Elem::U32,
            Scalar::U64(_) => Elem::U64,
            Scalar::Bool(_) => Elem::Bool,
        }
    }

    /// The bit pattern of the value, zero-extended: equal bits mean the same constant (unlike
    /// `==`, which has `0.0 == -0.0` and `NaN != NaN`). For hashing and sharing.
    pub fn bits(self) -> u64 {
        match self {
            Scalar::F32(x) => u64::from(x.to_bits()),
            Scalar::F64(x) => x.to_bits(),
            Scalar::I32(x) => u64::from(x as u32),
            Scalar::I64(x) => x as u64,
            Scalar::U32(x) => u64::from(x),
            Scalar::U64(x) => x,
            Scalar::Bool(x) => u64::from(x),
        }
    }

    /// The value of element type `elem` whose `bits` are given (the inverse of `bits`).
    pub fn from_bits(elem: Elem, bits: u64) -> Scalar {
        match elem {
            Elem::F32 => Scalar::F32(f32::from_bits(bits as u32)),
            Elem::F64 => Scalar::F64(f64::from_bits(bits)),
            Elem::I32 => Scalar::I32(bits as u32 as i32),
            Elem::I64 => Scalar::I64(bits as i64),
            Elem::U32 => Scalar::U32(bits as u32),
            Elem::U64 => Scalar::U64(bits),
            Elem::Bool => Scalar::Bool(bits != 0),
        }
    }

    /// The value of an integer scalar, if an `i64` holds it.
    pub fn int_value(self) -> Option<i64> {
        match self {
            Scalar::I32(value) => Some(value.into()),
            Scalar::I64(value) => Some(value),
            Scalar::U32(value) => Some(value.into()),
            Scalar::U64(value) => i64::try_from(value).ok(),
            Scalar::F32(_) | Scalar::F64(_) | Scalar::Bool(_) => None,
        }
    }

    /// The zero of an element type (`False` for `Bool`).
    pub fn zero(elem: Elem) -> Scalar {
        match elem {
            Elem::F32 => Scalar::F32(0.0),
            Elem::F64 => Scalar::F64(0.0),
            Elem::I32 => Scalar::I32(0),
            Elem::I64 => Scalar::I64(0),
            Elem::U32 => Scalar::U32(0),
            Elem::U64 => Scalar::U64(0),
            Elem::Bool => Scalar::Bool(false),
        }
    }
}

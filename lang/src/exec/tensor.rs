//! Engine values: ndarray arrays of one element type behind an `Arc` (`ArcArray<T, IxDyn>`),
//! so that sharing a variable is a reference-count increment.
//!
//! A `Tensor` may have any strides (a transposed or indexed array shares its parent's
//! buffer); the row-major order that `core::value::Array` uses is produced only when a value
//! leaves the engine (`Tensor::to_array`) or when an operation needs contiguous memory
//! (`standard_slice`).
//!
//! Conversions: `Tensor::from(Array)` is zero-copy when the `Array`'s buffer is not shared;
//! `to_array` is zero-copy when the tensor is the sole owner of a row-major buffer that it
//! covers exactly. Otherwise the elements are copied once.

use std::borrow::Cow;
use std::fmt::Debug;
use std::sync::Arc;

use ndarray::{ArcArray, Axis, IxDyn};

use super::lanes::LaneElem;
use crate::core::ir::{ArrTy, Elem, Scalar};
use crate::core::value::{Array, ArrayData};
use crate::prim::{Arith, Cast};

/// An n-dimensional shared array of one element type.
pub type Nd<T> = ArcArray<T, IxDyn>;

/// A runtime value of the engine.
#[derive(Clone, Debug, PartialEq)]
pub enum Tensor {
    F32(Nd<f32>),
    F64(Nd<f64>),
    I32(Nd<i32>),
    I64(Nd<i64>),
    U32(Nd<u32>),
    U64(Nd<u64>),
    Bool(Nd<bool>),
}

/// Runs `$body` with `$a` bound to the typed array inside a `Tensor` (any variant).
macro_rules! with_tensor {
    ($tensor:expr, $a:ident => $body:expr) => {
        match $tensor {
            $crate::exec::tensor::Tensor::F32($a) => $body,
            $crate::exec::tensor::Tensor::F64($a) => $body,
            $crate::exec::tensor::Tensor::I32($a) => $body,
            $crate::exec::tensor::Tensor::I64($a) => $body,
            $crate::exec::tensor::Tensor::U32($a) => $body,
            $crate::exec::tensor::Tensor::U64($a) => $body,
            $crate::exec::tensor::Tensor::Bool($a) => $body,
        }
    };
}
pub(crate) use with_tensor;

/// Runs `$body` with the type `$r` set to the Rust type of element type `$elem`.
macro_rules! with_elem_type {
    ($elem:expr, $r:ident => $body:expr) => {
        $crate::exec::tensor::with_elem_type!(
            @each $elem, $r => $body;
            F32 f32, F64 f64, I32 i32, I64 i64, U32 u32, U64 u64, Bool bool
        )
    };
    (@each $elem:expr, $r:ident => $body:expr; $($variant:ident $ty:ty),*) => {
        match $elem {
            $($crate::core::ir::Elem::$variant => {
                type $r = $ty;
                $body
            })*
        }
    };
}
pub(crate) use with_elem_type;

/// Like `with_tensor!`, but `$body` gives an array of the same element type, which is wrapped
/// back into the same variant.
macro_rules! map_tensor {
    ($tensor:expr, $a:ident => $body:expr) => {
        match $tensor {
            $crate::exec::tensor::Tensor::F32($a) => $crate::exec::tensor::Tensor::F32($body),
            $crate::exec::tensor::Tensor::F64($a) => $crate::exec::tensor::Tensor::F64($body),
            $crate::exec::tensor::Tensor::I32($a) => $crate::exec::tensor::Tensor::I32($body),
            $crate::exec::tensor::Tensor::I64($a) => $crate::exec::tensor::Tensor::I64($body),
            $crate::exec::tensor::Tensor::U32($a) => $crate::exec::tensor::Tensor::U32($body),
            $crate::exec::tensor::Tensor::U64($a) => $crate::exec::tensor::Tensor::U64($body),
            $crate::exec::tensor::Tensor::Bool($a) => $crate::exec::tensor::Tensor::Bool($body),
        }
    };
}
pub(crate) use map_tensor;

/// A Rust element type of the engine: how to find it in a `Tensor`, its sum (`Prim::Add`'s
/// rule, for `sumOuter` and `scatter`) and its casts (`prim::Cast`, `Prim::Cast`'s rule:
/// Rust's `as`, with `bool` as 0/1 and `x != 0` for number → bool).
pub trait Element:
    Copy + Default + PartialEq + PartialOrd + Debug + Send + Sync + Cast + 'static
{
    const ELEM: Elem;
    fn into_scalar(self) -> Scalar;
    fn from_scalar(scalar: Scalar) -> Option<Self>;
    fn into_tensor(array: Nd<Self>) -> Tensor;
    fn of(tensor: &Tensor) -> Option<&Nd<Self>>;
    fn take(tensor: Tensor) -> Option<Nd<Self>>;
    /// `Prim::Add` on two elements (`prim::arith`'s rule: wrapping on integers).
    fn add(self, other: Self) -> Self;
    /// `Prim::Mul` on two elements (`prim::arith`'s rule).
    fn mul(self, other: Self) -> Self;
}

macro_rules! element_number {
    ($($ty:ty => $variant:ident;)*) => {$(
        impl Element for $ty {
            const ELEM: Elem = Elem::$variant;
            fn into_scalar(self) -> Scalar {
                Scalar::$variant(self)
            }
            fn from_scalar(scalar: Scalar) -> Option<Self> {
                match scalar {
                    Scalar::$variant(x) => Some(x),
                    _ => None,
                }
            }
            fn into_tensor(array: Nd<Self>) -> Tensor {
                Tensor::$variant(array)
            }
            fn of(tensor: &Tensor) -> Option<&Nd<Self>> {
                match tensor {
                    Tensor::$variant(array) => Some(array),
                    _ => None,
                }
            }
            fn take(tensor: Tensor) -> Option<Nd<Self>> {
                match tensor {
                    Tensor::$variant(array) => Some(array),
                    _ => None,
                }
            }
            fn add(self, other: Self) -> Self {
                Arith::add(self, other)
            }
            fn mul(self, other: Self) -> Self {
                Arith::mul(self, other)
            }
        }
    )*};
}

element_number! {
    f32 => F32;
    f64 => F64;
    i32 => I32;
    i64 => I64;
    u32 => U32;
    u64 => U64;
}

impl Element for bool {
    const ELEM: Elem = Elem::Bool;
    fn into_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    fn from_scalar(scalar: Scalar) -> Option<Self> {
        match scalar {
            Scalar::Bool(x) => Some(x),
            _ => None,
        }
    }
    fn into_tensor(array: Nd<Self>) -> Tensor {
        Tensor::Bool(array)
    }
    fn of(tensor: &Tensor) -> Option<&Nd<Self>> {
        match tensor {
            Tensor::Bool(array) => Some(array),
            _ => None,
        }
    }
    fn take(tensor: Tensor) -> Option<Nd<Self>> {
        match tensor {
            Tensor::Bool(array) => Some(array),
            _ => None,
        }
    }
    fn add(self, _other: Self) -> Self {
        // `Prim::Add` is not defined on `Bool` and the verifier rejects `sumOuter`/`scatter` of
        // booleans; this mirrors the release-build fallback of `prim/arith.rs`.
        false
    }
    fn mul(self, _other: Self) -> Self {
        false // as `add`
    }
}

/// Builds an array from row-major data. `data.len()` must be the product of `shape`.
pub fn from_vec<T: Element>(shape: &[usize], data: Vec<T>) -> Nd<T> {
    debug_assert_eq!(shape.iter().product::<usize>(), data.len());
    ArcArray::from_shape_vec(IxDyn(shape), data)
        .expect("from_vec: the caller passes as many elements as the shape holds")
}

/// The elements of an array in row-major order, borrowed when it is already row-major.
pub fn standard_slice<T: Element>(array: &Nd<T>) -> Cow<'_, [T]> {
    match array.as_slice() {
        Some(slice) => Cow::Borrowed(slice),
        None => Cow::Owned(array.iter().copied().collect()),
    }
}

/// An owned row-major copy of the elements (zero-copy when the array is the sole owner of a
/// row-major buffer it covers exactly).
pub(super) fn into_standard_vec<T: LaneElem>(array: Nd<T>) -> Vec<T> {
    let n_elems = array.len();
    if n_elems == 0 {
        return Vec::new();
    }
    if !array.is_standard_layout() {
        return array.iter().copied().collect();
    }
    match array.try_into_owned_nocopy() {
        Ok(owned) => {
            // Standard layout: the elements are `data[start..start + n_elems]`.
            let (mut data, offset) = owned.into_raw_vec_and_offset();
            let start = offset.unwrap_or(0);
            if start != 0 || data.len() != n_elems {
                data.drain(..start);
                data.truncate(n_elems);
            }
            data
        }
        Err(shared) => {
            let elems = standard_slice(&shared);
            match super::pool::reuse(n_elems) {
                Some(mut copy) => {
                    copy.copy_from_slice(&elems);
                    copy
                }
                None => elems.into_owned(),
            }
        }
    }
}

/// A rank-0 array.
pub fn scalar_nd<T: Element>(value: T) -> Nd<T> {
    from_vec(&[], vec![value])
}

impl Tensor {
    pub fn elem(&self) -> Elem {
        match self {
            Tensor::F32(_) => Elem::F32,
            Tensor::F64(_) => Elem::F64,
            Tensor::I32(_) => Elem::I32,
            Tensor::I64(_) => Elem::I64,
            Tensor::U32(_) => Elem::U32,
            Tensor::U64(_) => Elem::U64,
            Tensor::Bool(_) => Elem::Bool,
        }
    }

    pub fn shape(&self) -> &[usize] {
        with_tensor!(self, a => a.shape())
    }

    pub fn rank(&self) -> usize {
        self.shape().len()
    }

    pub fn n_elems(&self) -> usize {
        with_tensor!(self, a => a.len())
    }

    /// A rank-0 tensor holding a scalar constant.
    pub fn scalar(scalar: Scalar) -> Tensor {
        match scalar {
            Scalar::F32(x) => Tensor::F32(scalar_nd(x)),
            Scalar::F64(x) => Tensor::F64(scalar_nd(x)),
            Scalar::I32(x) => Tensor::I32(scalar_nd(x)),
            Scalar::I64(x) => Tensor::I64(scalar_nd(x)),
            Scalar::U32(x) => Tensor::U32(scalar_nd(x)),
            Scalar::U64(x) => Tensor::U64(scalar_nd(x)),
            Scalar::Bool(x) => Tensor::Bool(scalar_nd(x)),
        }
    }

    /// An `I64` scalar (an index value).
    pub fn index(i: i64) -> Tensor {
        Tensor::I64(scalar_nd(i))
    }

    /// The single element of a rank-0 tensor.
    pub fn as_scalar(&self) -> Option<Scalar> {
        if self.rank() != 0 {
            return None;
        }
        with_tensor!(self, a => a.iter().next().map(|x| x.into_scalar()))
    }

    /// An array of zeros (`false` for `Bool`).
    pub fn zeros(ty: &ArrTy) -> Tensor {
        fn zeros_of<T: Element>(shape: &[usize]) -> Tensor {
            T::into_tensor(from_vec(shape, vec![T::default(); shape.iter().product()]))
        }
        match ty.elem {
            Elem::F32 => zeros_of::<f32>(&ty.shape),
            Elem::F64 => zeros_of::<f64>(&ty.shape),
            Elem::I32 => zeros_of::<i32>(&ty.shape),
            Elem::I64 => zeros_of::<i64>(&ty.shape),
            Elem::U32 => zeros_of::<u32>(&ty.shape),
            Elem::U64 => zeros_of::<u64>(&ty.shape),
            Elem::Bool => zeros_of::<bool>(&ty.shape),
        }
    }

    /// Copies a core value in (see `From<Array>` for the zero-copy conversion).
    pub fn from_array(array: &Array) -> Tensor {
        let shape = &array.shape;
        match &*array.data {
            ArrayData::F32(v) => Tensor::F32(from_vec(shape, v.clone())),
            ArrayData::F64(v) => Tensor::F64(from_vec(shape, v.clone())),
            ArrayData::I32(v) => Tensor::I32(from_vec(shape, v.clone())),
            ArrayData::I64(v) => Tensor::I64(from_vec(shape, v.clone())),
            ArrayData::U32(v) => Tensor::U32(from_vec(shape, v.clone())),
            ArrayData::U64(v) => Tensor::U64(from_vec(shape, v.clone())),
            ArrayData::Bool(v) => Tensor::Bool(from_vec(shape, v.clone())),
        }
    }

    /// Whether both are the same array: the same elements of the same buffer in the same
    /// layout (a value handed back unchanged, not a copy of it).
    pub fn is_same_array(&self, other: &Tensor) -> bool {
        fn same<T>(a: &Nd<T>, b: &Nd<T>) -> bool {
            a.as_ptr() == b.as_ptr() && a.shape() == b.shape() && a.strides() == b.strides()
        }
        match (self, other) {
            (Tensor::F32(a), Tensor::F32(b)) => same(a, b),
            (Tensor::F64(a), Tensor::F64(b)) => same(a, b),
            (Tensor::I32(a), Tensor::I32(b)) => same(a, b),
            (Tensor::I64(a), Tensor::I64(b)) => same(a, b),
            (Tensor::U32(a), Tensor::U32(b)) => same(a, b),
            (Tensor::U64(a), Tensor::U64(b)) => same(a, b),
            (Tensor::Bool(a), Tensor::Bool(b)) => same(a, b),
            _ => false,
        }
    }

    /// Row `position` of the outermost axis, as an array of its own (a copy: a row that
    /// outlives the table does not keep the whole table's buffer).
    pub fn row(&self, position: usize) -> Tensor {
        map_tensor!(self, a => {
            let row = a.index_axis(Axis(0), position);
            from_vec(row.shape(), row.iter().cloned().collect())
        })
    }

    /// The value as a core row-major array.
    pub fn to_array(&self) -> Array {
        self.clone().into_array()
    }

    /// The value as a core row-major array, without copying when possible.
    pub fn into_array(self) -> Array {
        let shape = self.shape().to_vec();
        let data = match self {
            Tensor::F32(a) => ArrayData::F32(into_standard_vec(a)),
            Tensor::F64(a) => ArrayData::F64(into_standard_vec(a)),
            Tensor::I32(a) => ArrayData::I32(into_standard_vec(a)),
            Tensor::I64(a) => ArrayData::I64(into_standard_vec(a)),
            Tensor::U32(a) => ArrayData::U32(into_standard_vec(a)),
            Tensor::U64(a) => ArrayData::U64(into_standard_vec(a)),
            Tensor::Bool(a) => ArrayData::Bool(into_standard_vec(a)),
        };
        Array::new(shape, data)
    }

    /// The same elements with a new shape of equal element count (row-major order).
    pub fn reshape(&self, shape: &[usize]) -> Tensor {
        map_tensor!(self, a => reshape_nd(a, shape))
    }

    /// The same value with its elements in one row-major slice (a copy only when they are
    /// not already).
    pub fn to_standard_layout(&self) -> Tensor {
        map_tensor!(self, a => match a.as_slice() {
            Some(_) => a.clone(),
            None => from_vec(a.shape(), standard_slice(a).into_owned()),
        })
    }

    /// Permutes the axes: result axis `a` is input axis `axes[a]` (`axes` is a permutation
    /// of all axes). Zero-copy.
    pub fn permute(&self, axes: &[usize]) -> Tensor {
        map_tensor!(self, a => a.clone().permuted_axes(IxDyn(axes)))
    }

    /// Appends `count` axes of size 1 (zero-copy), so that the value broadcasts against an
    /// array with `count` more trailing axes.
    pub fn with_unit_axes(&self, count: usize) -> Tensor {
        map_tensor!(self, a => {
            let mut a = a.clone();
            for _ in 0..count {
                let rank = a.ndim();
                a = a.insert_axis(Axis(rank));
            }
            a
        })
    }

    /// Broadcasts to `shape` (trailing axes aligned, size-1 axes stretched) and materialises
    /// the result. Returns the value itself when it already has that shape.
    pub fn broadcast_to(&self, shape: &[usize]) -> Tensor {
        if self.shape() == shape {
            return self.clone();
        }
        map_tensor!(self, a => broadcast_nd(a, shape))
    }
}

/// Stacks tensors of one type and shape along a new axis `axis`. `parts` must not be empty.
pub fn stack(axis: usize, parts: &[Tensor]) -> Tensor {
    fn typed<T: Element>(axis: usize, first: &Nd<T>, parts: &[Tensor]) -> Tensor {
        let views: Vec<_> = parts
            .iter()
            .map(|part| {
                T::of(part)
                    .expect(
                        "stack: the parts have one element type (the verifier rules out others)",
                    )
                    .view()
            })
            .collect();
        let stacked = ndarray::stack(Axis(axis), &views).unwrap_or_else(|error| {
            panic!(
                "stack of parts of shape {:?}: {error} (the verifier rules this out)",
                first.shape()
            )
        });
        T::into_tensor(stacked.into_shared())
    }
    let first = parts.first().expect("stack: at least one part");
    with_tensor!(first, a => typed(axis, a, parts))
}

/// `count` copies of `tensor` along a new axis `axis` (materialised).
pub fn replicate(tensor: &Tensor, axis: usize, count: usize) -> Tensor {
    let mut shape = tensor.shape().to_vec();
    shape.insert(axis, count);
    map_tensor!(tensor, a => broadcast_nd(&a.clone().insert_axis(Axis(axis)), &shape))
}

impl From<Array> for Tensor {
    /// Zero-copy when `array.data` is not shared.
    fn from(array: Array) -> Tensor {
        let shape = array.shape;
        let data = Arc::try_unwrap(array.data).unwrap_or_else(|shared| (*shared).clone());
        match data {
            ArrayData::F32(v) => Tensor::F32(from_vec(&shape, v)),
            ArrayData::F64(v) => Tensor::F64(from_vec(&shape, v)),
            ArrayData::I32(v) => Tensor::I32(from_vec(&shape, v)),
            ArrayData::I64(v) => Tensor::I64(from_vec(&shape, v)),
            ArrayData::U32(v) => Tensor::U32(from_vec(&shape, v)),
            ArrayData::U64(v) => Tensor::U64(from_vec(&shape, v)),
            ArrayData::Bool(v) => Tensor::Bool(from_vec(&shape, v)),
        }
    }
}

/// Reshape in row-major order: zero-copy when the array is row-major.
pub fn reshape_nd<T: Element>(array: &Nd<T>, shape: &[usize]) -> Nd<T> {
    if array.is_standard_layout() {
        if let Ok(reshaped) = array.clone().into_shape_with_order(IxDyn(shape)) {
            return reshaped;
        }
    }
    from_vec(shape, standard_slice(array).into_owned())
}

/// A materialised broadcast in row-major layout (parallel for large results).
pub fn broadcast_nd<T: Element>(array: &Nd<T>, shape: &[usize]) -> Nd<T> {
    let view = array.broadcast(IxDyn(shape)).unwrap_or_else(|| {
        panic!(
            "broadcast of shape {:?} to {shape:?}: the caller aligns shapes",
            array.shape()
        )
    });
    let n_elems: usize = shape.iter().product();
    let mut out = ndarray::Array::from_elem(IxDyn(shape), T::default());
    let zip = ndarray::Zip::from(&mut out).and(&view);
    if n_elems >= super::PAR_THRESHOLD {
        zip.par_for_each(|slot, &x| *slot = x);
    } else {
        zip.for_each(|slot, &x| *slot = x);
    }
    out.into_shared()
}

#[cfg(test)]
mod tests {
    use ndarray::s;

    use super::*;

    #[test]
    fn into_standard_vec_keeps_the_viewed_elements_of_a_buffer() {
        let whole = || from_vec(&[10], (0..10).collect::<Vec<i64>>());
        // The sole owner of its buffer: handed over as it is.
        assert_eq!(into_standard_vec(whole()), (0..10).collect::<Vec<_>>());
        // A slice of a buffer it owns alone: the elements it covers, moved to the front.
        let tail = whole().slice_move(s![3..8]).into_dyn();
        assert_eq!(into_standard_vec(tail), vec![3, 4, 5, 6, 7]);
        // Shared with another array: copied.
        let shared = from_vec(&[2, 3], (0..6).collect::<Vec<i64>>());
        let _other = shared.clone();
        let row = shared.slice_move(s![1.., ..]).into_dyn();
        assert_eq!(into_standard_vec(row), vec![3, 4, 5]);
        // Not row-major: gathered in row-major order.
        let transposed = from_vec(&[2, 3], (0..6).collect::<Vec<i64>>()).reversed_axes();
        assert_eq!(into_standard_vec(transposed), vec![0, 3, 1, 4, 2, 5]);
    }
}

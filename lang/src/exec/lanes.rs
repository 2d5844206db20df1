//! Lanes: the values of one kernel node along one line of the iteration space, and the typed
//! loops that compute them (the vectorised interpreter of docs/architecture.md, "The engine").
//!
//! A kernel (`exec/fused.rs`) runs its body over lines of at most [`LINE`] points. Each node
//! gets a [`Lane`]: either one value for the whole line (a *splat*: a literal, a rank-0 value,
//! a read that does not move along the line) or one value per point. Every elementwise
//! primitive runs as one tight loop over the line, chosen once per line by matching the
//! primitive and element type, so the compiler vectorises the arithmetic and there is no
//! per-element dispatch. Buffers are allocated once per task and reused for every line.
//!
//! The scalar rules are `prim`'s: each family's table of typed functions (`Prim::lift`) is
//! turned into a loop here, `exp`, `log`, `tanh`, `sin`, `cos` and `pow` use `vmath`'s slice
//! functions (`math::slice_fn`), casts are `Element`'s conversions, and anything without a
//! typed loop runs through `Prim::eval` per element (correct, slower; none of the common
//! primitives take that path).

use rayon::prelude::*;

use super::tensor::{from_vec, standard_slice, with_elem_type, Element, Tensor};
use crate::core::ir::{Elem, Scalar};
use crate::prim::math::{self, SliceFn};
use crate::prim::{
    threefry2x32, unit_from_bits, vmath, Cast, Family, Lift, LiftRelation, Lifted, Prim,
};

/// Points per line.
pub const LINE: usize = 1024;

/// Typed values of one lane (`len` of them are meaningful, or one for a splat).
#[derive(Clone, Debug)]
pub enum Column {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
}

/// `$body` with `$values` bound to the values of `$column`, an enum `$kind` with one variant per
/// element type (`Column`, `ColumnRef`, `ColumnMut`).
macro_rules! match_column {
    ($kind:ident, $column:expr, $values:ident => $body:expr) => {
        match $column {
            $kind::F32($values) => $body,
            $kind::F64($values) => $body,
            $kind::I32($values) => $body,
            $kind::I64($values) => $body,
            $kind::U32($values) => $body,
            $kind::U64($values) => $body,
            $kind::Bool($values) => $body,
        }
    };
}
pub(crate) use match_column;

macro_rules! with_column {
    ($column:expr, $values:ident => $body:expr) => {
        $crate::exec::lanes::match_column!(Column, $column, $values => $body)
    };
}
pub(crate) use with_column;

/// Typed values borrowed for reading: a lane's column, or a run of a kernel input read in
/// place (`exec/fused.rs`, a contiguous read is not copied).
#[derive(Clone, Copy, Debug)]
pub enum ColumnRef<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    Bool(&'a [bool]),
}

/// Typed values borrowed for writing: a lane's column, or the part of a kernel's output that
/// the line computes (written in place, not through a lane).
#[derive(Debug)]
pub enum ColumnMut<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    U32(&'a mut [u32]),
    U64(&'a mut [u64]),
    Bool(&'a mut [bool]),
}

/// Access to a `Column`'s vector, and to borrowed columns, by element type.
/// `if c { a } else { b }` as operations on bits, with both operands read: loops of them
/// compile to vector blends. (Written as a branch on loaded values, LLVM chose an address
/// per element and gathered, or branched per element: a fifth of a cumprod gradient.)
pub trait Blend: Copy {
    fn blend(c: bool, a: Self, b: Self) -> Self;
}

macro_rules! blend_floats {
    ($($ty:ty: $bits:ty),*) => {$(
        impl Blend for $ty {
            #[inline(always)]
            fn blend(c: bool, a: Self, b: Self) -> Self {
                let mask = <$bits>::from(c).wrapping_neg();
                <$ty>::from_bits((a.to_bits() & mask) | (b.to_bits() & !mask))
            }
        }
    )*};
}

macro_rules! blend_integers {
    ($($ty:ty),*) => {$(
        impl Blend for $ty {
            #[inline(always)]
            fn blend(c: bool, a: Self, b: Self) -> Self {
                let mask = <$ty>::from(c).wrapping_neg();
                (a & mask) | (b & !mask)
            }
        }
    )*};
}

blend_floats!(f32: u32, f64: u64);
blend_integers!(i32, i64, u32, u64);

impl Blend for bool {
    #[inline(always)]
    fn blend(c: bool, a: Self, b: Self) -> Self {
        (c & a) | (!c & b)
    }
}

pub trait LaneElem: Element + Blend + super::reduce::LeafSums {
    fn values(column: &Column) -> &Vec<Self>;
    fn values_mut(column: &mut Column) -> &mut Vec<Self>;
    fn slice(column: ColumnRef<'_>) -> &[Self];
    fn slice_mut(column: ColumnMut<'_>) -> &mut [Self];
    fn wrap(values: &[Self]) -> ColumnRef<'_>;
    fn wrap_mut(values: &mut [Self]) -> ColumnMut<'_>;
}

macro_rules! lane_elem {
    ($($ty:ty => $variant:ident),*) => {$(
        impl LaneElem for $ty {
            fn values(column: &Column) -> &Vec<Self> {
                match column {
                    Column::$variant(values) => values,
                    other => panic!("lane holds {:?}, not {}", other.elem(), stringify!($ty)),
                }
            }
            fn values_mut(column: &mut Column) -> &mut Vec<Self> {
                match column {
                    Column::$variant(values) => values,
                    other => panic!("lane holds {:?}, not {}", other.elem(), stringify!($ty)),
                }
            }
            fn slice(column: ColumnRef<'_>) -> &[Self] {
                match column {
                    ColumnRef::$variant(values) => values,
                    other => panic!("{other:?} read as {}", stringify!($ty)),
                }
            }
            fn slice_mut(column: ColumnMut<'_>) -> &mut [Self] {
                match column {
                    ColumnMut::$variant(values) => values,
                    other => panic!("{other:?} written as {}", stringify!($ty)),
                }
            }
            fn wrap(values: &[Self]) -> ColumnRef<'_> {
                ColumnRef::$variant(values)
            }
            fn wrap_mut(values: &mut [Self]) -> ColumnMut<'_> {
                ColumnMut::$variant(values)
            }
        }
    )*};
}

lane_elem!(f32 => F32, f64 => F64, i32 => I32, i64 => I64, u32 => U32, u64 => U64, bool => Bool);

impl Column {
    /// A column of `LINE` values, for one lane.
    pub fn new(elem: Elem) -> Column {
        Column::with_len(elem, LINE)
    }

    /// A column of `n_elems` zeros, for a kernel's output.
    pub fn with_len(elem: Elem, n_elems: usize) -> Column {
        match elem {
            Elem::F32 => Column::F32(zeros_into(Vec::new(), n_elems)),
            Elem::F64 => Column::F64(zeros_into(Vec::new(), n_elems)),
            Elem::I32 => Column::I32(zeros_into(Vec::new(), n_elems)),
            Elem::I64 => Column::I64(zeros_into(Vec::new(), n_elems)),
            Elem::U32 => Column::U32(zeros_into(Vec::new(), n_elems)),
            Elem::U64 => Column::U64(zeros_into(Vec::new(), n_elems)),
            Elem::Bool => Column::Bool(zeros_into(Vec::new(), n_elems)),
        }
    }

    /// The column as an engine value of shape `shape` (whose size is the column's length).
    pub fn into_tensor(self, shape: &[usize]) -> Tensor {
        with_column!(self, values => Element::into_tensor(from_vec(shape, values)))
    }

    /// The buffer of a row-major value that owns it alone (`None`: shared or a view).
    pub fn from_unique(tensor: Tensor) -> Option<Column> {
        fn typed<T: Element>(array: super::tensor::Nd<T>) -> Option<Vec<T>> {
            let len = array.len();
            if !array.is_standard_layout() {
                return None;
            }
            let (data, offset) = array
                .try_into_owned_nocopy()
                .ok()?
                .into_raw_vec_and_offset();
            (offset.unwrap_or(0) == 0 && data.len() == len).then_some(data)
        }
        Some(match tensor {
            Tensor::F32(array) => Column::F32(typed(array)?),
            Tensor::F64(array) => Column::F64(typed(array)?),
            Tensor::I32(array) => Column::I32(typed(array)?),
            Tensor::I64(array) => Column::I64(typed(array)?),
            Tensor::U32(array) => Column::U32(typed(array)?),
            Tensor::U64(array) => Column::U64(typed(array)?),
            Tensor::Bool(array) => Column::Bool(typed(array)?),
        })
    }

    /// Writes `part`'s values (of the column's element type), in row-major order, from
    /// element `offset` on.
    pub fn write_at(&mut self, offset: usize, part: &Tensor) {
        fn typed<T: LaneElem>(values: &mut [T], part: &Tensor) {
            let src = standard_slice(T::of(part).expect("a part of the column's element type"));
            values[..src.len()].copy_from_slice(&src);
        }
        with_column!(self, values => typed(&mut values[offset..], part))
    }

    /// The number of values held.
    pub fn len(&self) -> usize {
        with_column!(self, values => values.len())
    }

    pub fn elem(&self) -> Elem {
        match self {
            Column::F32(_) => Elem::F32,
            Column::F64(_) => Elem::F64,
            Column::I32(_) => Elem::I32,
            Column::I64(_) => Elem::I64,
            Column::U32(_) => Elem::U32,
            Column::U64(_) => Elem::U64,
            Column::Bool(_) => Elem::Bool,
        }
    }

    /// Element `position` as a scalar.
    pub fn get(&self, position: usize) -> Scalar {
        with_column!(self, values => values[position].into_scalar())
    }

    pub fn as_ref(&self) -> ColumnRef<'_> {
        with_column!(self, values => LaneElem::wrap(&values[..]))
    }

    pub fn as_mut(&mut self) -> ColumnMut<'_> {
        with_column!(self, values => LaneElem::wrap_mut(&mut values[..]))
    }

    /// Sets element `position` from a scalar of the column's type.
    pub fn set(&mut self, position: usize, scalar: Scalar) {
        fn typed<T: LaneElem>(column: &mut Column, position: usize, scalar: Scalar) {
            T::values_mut(column)[position] = T::from_scalar(scalar)
                .unwrap_or_else(|| panic!("lane of {:?} set from {scalar:?}", T::ELEM));
        }
        match self.elem() {
            Elem::F32 => typed::<f32>(self, position, scalar),
            Elem::F64 => typed::<f64>(self, position, scalar),
            Elem::I32 => typed::<i32>(self, position, scalar),
            Elem::I64 => typed::<i64>(self, position, scalar),
            Elem::U32 => typed::<u32>(self, position, scalar),
            Elem::U64 => typed::<u64>(self, position, scalar),
            Elem::Bool => typed::<bool>(self, position, scalar),
        }
    }
}

/// `len` zeros of `T` in `buffer`'s memory (reallocated if too small). Without memory of its
/// own the buffer is a zeroed allocation: the allocator's fresh pages are zeros already
/// (`calloc`), so nothing writes them before the kernel does (a 256 MB output written twice
/// costs one more pass over memory). Reused memory is cleared by every thread.
pub fn zeros_into<T: LaneElem>(mut buffer: Vec<T>, len: usize) -> Vec<T> {
    if buffer.capacity() == 0 {
        return vec![T::default(); len];
    }
    buffer.clear();
    if len < super::PAR_THRESHOLD {
        buffer.resize(len, T::default());
    } else {
        buffer.par_extend(rayon::iter::repeat_n(T::default(), len));
    }
    buffer
}

/// Lane columns a thread keeps for its next launches (`Lane::reused`).
const SPARE_LANES: usize = 64;

thread_local! {
    static SPARE_COLUMNS: std::cell::RefCell<Vec<Column>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A node's values along the current line.
#[derive(Clone, Debug)]
pub struct Lane {
    /// One value (in position 0) for every point of the line.
    pub splat: bool,
    pub column: Column,
}

impl Lane {
    pub fn new(elem: Elem) -> Lane {
        Lane::with_points(elem, LINE)
    }

    /// A lane for lines of up to `points` points (at least one: a splat's value).
    pub fn with_points(elem: Elem, points: usize) -> Lane {
        Lane {
            splat: true,
            column: Column::with_len(elem, points.max(1)),
        }
    }

    /// `with_points`, but the column may be one a finished launch on this thread gave back
    /// (`give_back`), its values unspecified: for a kernel's working lanes, which every line
    /// writes before it reads them. A loop over small tables launches its kernels at every
    /// step, and zeroing fresh lanes was a tenth of such a step.
    pub fn reused(elem: Elem, points: usize) -> Lane {
        let len = points.max(1);
        let spare = SPARE_COLUMNS.with_borrow_mut(|spare| {
            let position = (spare.iter()).rposition(|c| c.elem() == elem && c.len() == len)?;
            Some(spare.swap_remove(position))
        });
        Lane {
            splat: true,
            column: spare.unwrap_or_else(|| Column::with_len(elem, len)),
        }
    }

    /// Keeps the columns of lanes a launch is done with for the next `reused` on this
    /// thread (at most `SPARE_LANES` of them).
    pub fn give_back(lanes: impl IntoIterator<Item = Lane>) {
        SPARE_COLUMNS.with_borrow_mut(|spare| {
            let columns = lanes.into_iter().map(|lane| lane.column);
            spare.extend(columns.filter(|column| column.len() > 1));
            let excess = spare.len().saturating_sub(SPARE_LANES);
            spare.drain(..excess);
        });
    }

    pub fn as_ref(&self) -> LaneRef<'_> {
        LaneRef {
            splat: self.splat,
            column: self.column.as_ref(),
        }
    }

    /// `self = prim(operands)` over the first `len` points (`eval_prim`).
    pub fn eval(&mut self, prim: Prim, operands: &[LaneRef<'_>], len: usize) {
        self.splat = eval_prim(prim, operands, self.column.as_mut(), len);
    }
}

/// Values along a line as an operation reads them: one value for every point (a splat, in
/// position 0), or one per point.
#[derive(Clone, Copy, Debug)]
pub struct LaneRef<'a> {
    pub splat: bool,
    pub column: ColumnRef<'a>,
}

impl<'a> LaneRef<'a> {
    /// The value at point `position` of the line.
    pub fn get(&self, position: usize) -> Scalar {
        let position = if self.splat { 0 } else { position };
        match_column!(ColumnRef, self.column, values => values[position].into_scalar())
    }

    pub fn elem(&self) -> Elem {
        match_column!(ColumnRef, self.column, values => element_of(values))
    }

    /// The first `len` values (`Err` with the value of a splat).
    pub fn values<T: LaneElem>(self, len: usize) -> Result<&'a [T], T> {
        let values = T::slice(self.column);
        if self.splat {
            Err(values[0])
        } else {
            Ok(&values[..len])
        }
    }

    /// Copies the first `dst.len()` values into `dst` (a splat fills it).
    pub fn copy_to<T: LaneElem>(&self, dst: &mut [T]) {
        match self.values(dst.len()) {
            Ok(values) => dst.copy_from_slice(values),
            Err(value) => dst.fill(value),
        }
    }
}

fn element_of<T: LaneElem>(_: &[T]) -> Elem {
    T::ELEM
}

impl<'a> ColumnRef<'a> {
    /// The `len` values from position `start` on.
    pub fn run(self, start: usize, len: usize) -> ColumnRef<'a> {
        match_column!(ColumnRef, self, values => LaneElem::wrap(&values[start..start + len]))
    }
}

impl Column {
    /// The column cut into consecutive pieces of `len` values (the last may be shorter).
    pub fn chunks_mut(&mut self, len: usize) -> Vec<ColumnMut<'_>> {
        with_column!(self, values => values.chunks_mut(len).map(LaneElem::wrap_mut).collect())
    }
}

impl<'a> ColumnMut<'a> {
    /// The first `len` values.
    pub fn prefix(self, len: usize) -> ColumnMut<'a> {
        match_column!(ColumnMut, self, values => LaneElem::wrap_mut(&mut values[..len]))
    }
}

impl ColumnMut<'_> {
    /// The values, borrowed for reading.
    pub fn as_ref(&self) -> ColumnRef<'_> {
        match_column!(ColumnMut, self, values => LaneElem::wrap(values))
    }

    /// The same values, borrowed again (to try one typed loop after another).
    pub fn reborrow(&mut self) -> ColumnMut<'_> {
        match_column!(ColumnMut, self, values => LaneElem::wrap_mut(values))
    }

    /// Sets element `position` from a scalar of the column's type.
    fn set(&mut self, position: usize, scalar: Scalar) {
        fn typed<T: LaneElem>(values: &mut [T], position: usize, scalar: Scalar) {
            values[position] = T::from_scalar(scalar)
                .unwrap_or_else(|| panic!("{:?} set from {scalar:?}", T::ELEM));
        }
        match self {
            ColumnMut::F32(values) => typed(values, position, scalar),
            ColumnMut::F64(values) => typed(values, position, scalar),
            ColumnMut::I32(values) => typed(values, position, scalar),
            ColumnMut::I64(values) => typed(values, position, scalar),
            ColumnMut::U32(values) => typed(values, position, scalar),
            ColumnMut::U64(values) => typed(values, position, scalar),
            ColumnMut::Bool(values) => typed(values, position, scalar),
        }
    }
}

/// An operand of a typed loop.
#[derive(Clone, Copy)]
enum Src<'a, T> {
    Splat(T),
    Slice(&'a [T]),
}

fn src<T: LaneElem>(lane: LaneRef<'_>, len: usize) -> Src<'_, T> {
    let values = T::slice(lane.column);
    if lane.splat {
        Src::Splat(values[0])
    } else {
        Src::Slice(&values[..len])
    }
}

/// The typed loops below write `f` of their operands into `out` and say whether the result
/// is a splat (every operand is one: only `out[0]` is written).
fn map1<A: LaneElem, R: LaneElem>(
    a: LaneRef<'_>,
    out: ColumnMut<'_>,
    len: usize,
    f: impl Fn(A) -> R,
) -> bool {
    let dst = R::slice_mut(out);
    match src::<A>(a, len) {
        Src::Splat(x) => {
            dst[0] = f(x);
            true
        }
        Src::Slice(xs) => {
            for (slot, &x) in dst[..len].iter_mut().zip(xs) {
                *slot = f(x);
            }
            false
        }
    }
}

fn map2<A: LaneElem, B: LaneElem, R: LaneElem>(
    a: LaneRef<'_>,
    b: LaneRef<'_>,
    out: ColumnMut<'_>,
    len: usize,
    f: impl Fn(A, B) -> R,
) -> bool {
    let dst = &mut R::slice_mut(out)[..len.max(1)];
    match (src::<A>(a, len), src::<B>(b, len)) {
        (Src::Splat(x), Src::Splat(y)) => {
            dst[0] = f(x, y);
            return true;
        }
        (Src::Slice(xs), Src::Splat(y)) => {
            for (slot, &x) in dst.iter_mut().zip(xs) {
                *slot = f(x, y);
            }
        }
        (Src::Splat(x), Src::Slice(ys)) => {
            for (slot, &y) in dst.iter_mut().zip(ys) {
                *slot = f(x, y);
            }
        }
        (Src::Slice(xs), Src::Slice(ys)) => {
            for ((slot, &x), &y) in dst.iter_mut().zip(xs).zip(ys) {
                *slot = f(x, y);
            }
        }
    }
    false
}

/// `select c x y` on lanes of type `T`.
fn select<T: LaneElem>(
    c: LaneRef<'_>,
    x: LaneRef<'_>,
    y: LaneRef<'_>,
    out: ColumnMut<'_>,
    len: usize,
) -> bool {
    if c.splat {
        let chosen = if bool::slice(c.column)[0] { x } else { y };
        return map1::<T, T>(chosen, out, len, |v| v);
    }
    let conds = &bool::slice(c.column)[..len];
    let dst = &mut T::slice_mut(out)[..len];
    match (src::<T>(x, len), src::<T>(y, len)) {
        (Src::Splat(a), Src::Splat(b)) => {
            for (slot, &c) in dst.iter_mut().zip(conds) {
                *slot = T::blend(c, a, b);
            }
        }
        (Src::Slice(xs), Src::Splat(b)) => {
            for ((slot, &c), &a) in dst.iter_mut().zip(conds).zip(xs) {
                *slot = T::blend(c, a, b);
            }
        }
        (Src::Splat(a), Src::Slice(ys)) => {
            for ((slot, &c), &b) in dst.iter_mut().zip(conds).zip(ys) {
                *slot = T::blend(c, a, b);
            }
        }
        (Src::Slice(xs), Src::Slice(ys)) => {
            for (((slot, &c), &a), &b) in dst.iter_mut().zip(conds).zip(xs).zip(ys) {
                *slot = T::blend(c, a, b);
            }
        }
    }
    false
}

/// The float element types: `vmath`'s slice loops for `pow` and for the exp of a difference.
trait Float: LaneElem + Lifted + math::Float {
    fn pow_slice(xs: &[Self], ys: &[Self], out: &mut [Self]);
    fn exp_of_difference(xs: &[Self], ys: &[Self], out: &mut [Self]);
}

macro_rules! float_fns {
    ($($ty:ident: $pow_slice:ident, $exp_diff:ident;)*) => {$(
        impl Float for $ty {
            fn pow_slice(xs: &[Self], ys: &[Self], out: &mut [Self]) {
                vmath::$pow_slice(xs, ys, out)
            }
            fn exp_of_difference(xs: &[Self], ys: &[Self], out: &mut [Self]) {
                vmath::$exp_diff(xs, ys, out)
            }
        }
    )*};
}

float_fns! {
    f32: pow_f32_slice, exp_of_difference_f32;
    f64: pow_f64_slice, exp_of_difference_f64;
}

/// `exp (a - b)` of two float lanes in one pass, with the bits of `sub` then `exp`
/// (`vmath::exp_of_difference_f32`); whether the result is a splat.
pub fn exp_of_difference(a: LaneRef<'_>, b: LaneRef<'_>, out: ColumnMut<'_>, len: usize) -> bool {
    fn typed<F: Float>(a: LaneRef<'_>, b: LaneRef<'_>, out: ColumnMut<'_>, len: usize) -> bool {
        let splat = a.splat && b.splat;
        fn operand<F: Float>(lane: LaneRef<'_>, len: usize) -> &[F] {
            let values = F::slice(lane.column);
            &values[..if lane.splat { 1 } else { len }]
        }
        let points = if splat { 1 } else { len };
        F::exp_of_difference(
            operand(a, len),
            operand(b, len),
            &mut F::slice_mut(out)[..points],
        );
        splat
    }
    match a.elem() {
        Elem::F32 => typed::<f32>(a, b, out, len),
        Elem::F64 => typed::<f64>(a, b, out, len),
        other => unreachable!("exp of a {other:?} difference"),
    }
}

/// A slice function of a lane into `out` (one call for a splat).
fn map_slice<F: LaneElem>(a: LaneRef<'_>, out: ColumnMut<'_>, len: usize, f: SliceFn<F>) -> bool {
    let points = if a.splat { 1 } else { len };
    f(
        &F::slice(a.column)[..points],
        &mut F::slice_mut(out)[..points],
    );
    a.splat
}

/// A primitive's typed function (`prim`'s `lift`) run over lanes into `out`: `Some(splat)`,
/// or `None` when the function does not take this many operands.
struct LaneLoop<'r, 'l, 'o> {
    operands: &'r [LaneRef<'l>],
    out: ColumnMut<'o>,
    len: usize,
}

impl<T: LaneElem> Lift<T> for LaneLoop<'_, '_, '_> {
    type Output = Option<bool>;
    fn unary(self, f: impl Fn(T) -> T + Copy + Send + Sync) -> Option<bool> {
        match *self.operands {
            [a] => Some(map1::<T, T>(a, self.out, self.len, f)),
            _ => None,
        }
    }
    fn binary(self, f: impl Fn(T, T) -> T + Copy + Send + Sync) -> Option<bool> {
        match *self.operands {
            [a, b] => Some(map2::<T, T, T>(a, b, self.out, self.len, f)),
            _ => None,
        }
    }
}

impl<T: LaneElem> LiftRelation<T> for LaneLoop<'_, '_, '_> {
    fn relation(self, f: impl Fn(T, T) -> bool + Copy + Send + Sync) -> Option<bool> {
        match *self.operands {
            [a, b] => Some(map2::<T, T, bool>(a, b, self.out, self.len, f)),
            _ => None,
        }
    }
    fn test(self, f: impl Fn(T) -> bool + Copy + Send + Sync) -> Option<bool> {
        match *self.operands {
            [a] => Some(map1::<T, bool>(a, self.out, self.len, f)),
            _ => None,
        }
    }
}

/// The typed loop of `prim` on operands of type `T`, if it has one.
fn lifted<T: LaneElem + Lifted>(
    prim: Prim,
    operands: &[LaneRef<'_>],
    out: ColumnMut<'_>,
    len: usize,
) -> Option<bool> {
    prim.lift::<T, _>(LaneLoop { operands, out, len })
        .ok()
        .flatten()
}

/// Floats: `vmath`'s vectorised slice functions where there is one (`math::slice_fn`, and
/// `pow` of two full lanes), else the typed function per point.
fn float_op<F: Float>(
    prim: Prim,
    operands: &[LaneRef<'_>],
    out: ColumnMut<'_>,
    len: usize,
) -> Option<bool> {
    if let (Family::Math(op), &[a]) = (prim.family(), operands) {
        if let Some(f) = math::slice_fn::<F>(op) {
            return Some(map_slice::<F>(a, out, len, f));
        }
    }
    if let (Prim::Pow, &[a, b]) = (prim, operands) {
        if !a.splat && !b.splat {
            let xs = &F::slice(a.column)[..len];
            let ys = &F::slice(b.column)[..len];
            F::pow_slice(xs, ys, &mut F::slice_mut(out)[..len]);
            return Some(false);
        }
    }
    lifted::<F>(prim, operands, out, len)
}

/// `cast_<elem>` through `Element`'s conversions (`prim::Cast`, `prim/convert.rs`'s rules).
fn cast_op<A: LaneElem>(elem: Elem, a: LaneRef<'_>, out: ColumnMut<'_>, len: usize) -> bool {
    with_elem_type!(elem, R => map1::<A, R>(a, out, len, R::cast_from))
}

/// The typed loop for `prim`, if there is one; `Some(splat)`.
fn typed_op(prim: Prim, operands: &[LaneRef<'_>], out: ColumnMut<'_>, len: usize) -> Option<bool> {
    let first = operands[0].elem();
    if let Prim::Cast(elem) = prim {
        let a = operands[0];
        return Some(with_elem_type!(first, A => cast_op::<A>(elem, a, out, len)));
    }
    match (prim, operands) {
        (Prim::Select, &[c, x, y]) => {
            return Some(with_elem_type!(x.elem(), T => select::<T>(c, x, y, out, len)))
        }
        (Prim::Threefry2x32, &[a, b]) => {
            return Some(map2::<u64, u64, u64>(a, b, out, len, threefry2x32))
        }
        (Prim::UnitFromBits, &[a]) => return Some(map1::<u64, f32>(a, out, len, unit_from_bits)),
        (Prim::Not, &[a]) => return Some(map1::<bool, bool>(a, out, len, |p| !p)),
        (Prim::And, &[a, b]) => {
            return Some(map2::<bool, bool, bool>(a, b, out, len, |p, q| p && q))
        }
        (Prim::Or, &[a, b]) => {
            return Some(map2::<bool, bool, bool>(a, b, out, len, |p, q| p || q))
        }
        _ => {}
    }
    match first {
        Elem::F32 => float_op::<f32>(prim, operands, out, len),
        Elem::F64 => float_op::<f64>(prim, operands, out, len),
        Elem::I32 => lifted::<i32>(prim, operands, out, len),
        Elem::I64 => lifted::<i64>(prim, operands, out, len),
        Elem::U32 => lifted::<u32>(prim, operands, out, len),
        Elem::U64 => lifted::<u64>(prim, operands, out, len),
        Elem::Bool => lifted::<bool>(prim, operands, out, len),
    }
}

/// `f` of the operands `operand(0)`, …, `operand(n - 1)`, gathered on the stack for up to
/// three (every primitive but a few casts' generic fallbacks): no allocation per line.
pub fn with_operands<'a, R>(
    n: usize,
    operand: impl Fn(usize) -> LaneRef<'a>,
    f: impl FnOnce(&[LaneRef<'a>]) -> R,
) -> R {
    match n {
        1 => f(&[operand(0)]),
        2 => f(&[operand(0), operand(1)]),
        3 => f(&[operand(0), operand(1), operand(2)]),
        _ => f(&(0..n).map(operand).collect::<Vec<_>>()),
    }
}

/// Computes `prim` of the operands into `out` over the first `len` points; whether the
/// result is a splat (every operand is one: only `out[0]` is written).
pub fn eval_prim(prim: Prim, operands: &[LaneRef<'_>], mut out: ColumnMut<'_>, len: usize) -> bool {
    if let Some(splat) = typed_op(prim, operands, out.reborrow(), len) {
        return splat;
    }
    // The generic path: `Prim::eval` per point.
    let splat = operands.iter().all(|lane| lane.splat);
    let points = if splat { 1 } else { len };
    let mut scalars = Vec::with_capacity(operands.len());
    for position in 0..points {
        scalars.clear();
        scalars.extend(operands.iter().map(|lane| lane.get(position)));
        out.set(position, prim.eval(&scalars));
    }
    splat
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane_of(values: &[f64], splat: bool) -> Lane {
        let mut lane = Lane::new(Elem::F64);
        f64::values_mut(&mut lane.column)[..values.len()].copy_from_slice(values);
        lane.splat = splat;
        lane
    }

    /// `write_at` writes a part in row-major order whatever its layout: a contiguous part is
    /// copied, a transposed view is walked in its logical order.
    #[test]
    fn parts_written_into_a_column_keep_row_major_order() {
        let part = crate::exec::tensor::from_vec(&[2, 3], vec![1.0f32, 2., 3., 4., 5., 6.]);
        let mut column = Column::with_len(Elem::F32, 14);
        column.write_at(1, &Tensor::F32(part.clone()));
        column.write_at(7, &Tensor::F32(part.reversed_axes()));
        let expected = [0., 1., 2., 3., 4., 5., 6., 1., 4., 2., 5., 3., 6., 0.];
        assert_eq!(f32::values(&column)[..], expected[..]);
    }

    /// A lane given back serves the next `reused` lane of its type and length on its thread,
    /// once.
    #[test]
    fn lanes_given_back_serve_the_next_launch_on_their_thread() {
        std::thread::spawn(|| {
            let address = |lane: &Lane| with_column!(&lane.column, v => v.as_ptr() as usize);
            let lane = Lane::reused(Elem::F32, 1000);
            let kept = address(&lane);
            Lane::give_back([lane, Lane::reused(Elem::F32, 1)]);
            assert_ne!(address(&Lane::reused(Elem::F64, 1000)), kept);
            assert_ne!(address(&Lane::reused(Elem::F32, 999)), kept);
            let again = Lane::reused(Elem::F32, 1000);
            assert_eq!(address(&again), kept);
            assert_ne!(address(&Lane::reused(Elem::F32, 1000)), kept);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn typed_loops_agree_with_prim_eval() {
        let xs = [0.5, -2.0, 3.25, f64::NAN, 0.0, -0.0, f64::INFINITY, 7.0];
        let ys = [1.5, 2.0, -0.75, 1.0, -0.0, 0.0, 2.0, f64::NAN];
        let a = lane_of(&xs, false);
        let b = lane_of(&ys, false);
        let prims = [
            Prim::Add,
            Prim::Sub,
            Prim::Mul,
            Prim::Div,
            Prim::Min,
            Prim::Max,
            Prim::Mod,
            Prim::Pow,
            Prim::Lt,
            Prim::Eq,
            Prim::Exp,
            Prim::Tanh,
            Prim::Neg,
            Prim::IsNan,
            Prim::Cast(Elem::I32),
        ];
        for prim in prims {
            let unary = crate::prim::Prim::arity(prim) == 1;
            let operands: Vec<LaneRef> = if unary {
                vec![a.as_ref()]
            } else {
                vec![a.as_ref(), b.as_ref()]
            };
            let elem = prim
                .result_elem(&operands.iter().map(LaneRef::elem).collect::<Vec<_>>())
                .unwrap();
            let mut out = Lane::new(elem);
            out.eval(prim, &operands, xs.len());
            for position in 0..xs.len() {
                let scalars: Vec<Scalar> = operands.iter().map(|lane| lane.get(position)).collect();
                let expected = prim.eval(&scalars);
                let got = out.as_ref().get(position);
                let same = match (expected, got) {
                    (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits(),
                    (x, y) => x == y,
                };
                assert!(same, "{prim:?} at {position}: {got:?} != {expected:?}");
            }
        }
    }

    #[test]
    fn splats_stay_splats() {
        let a = lane_of(&[2.0], true);
        let b = lane_of(&[3.0, 4.0, 5.0], false);
        let mut out = Lane::new(Elem::F64);
        out.eval(Prim::Mul, &[a.as_ref(), a.as_ref()], 3);
        assert!(out.splat);
        assert_eq!(out.as_ref().get(2), Scalar::F64(4.0));
        out.eval(Prim::Mul, &[a.as_ref(), b.as_ref()], 3);
        assert!(!out.splat);
        assert_eq!(out.as_ref().get(2), Scalar::F64(10.0));
    }
}

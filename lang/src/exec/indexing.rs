//! Reading and writing rows of arrays at computed indices (`index`, `gather`, `scatter`).
//!
//! A source array is seen as a matrix `[n_rows, n_sub]`: its leading axes (the indexed ones)
//! flattened into rows, the rest into `n_sub` elements per row. A read at `n_points` points
//! computes one row offset per point from one `IndexCol` per indexed axis (`Rows`), on the
//! fly, so no array of offsets is built; an out-of-range index reads a row of zeros.

use rayon::prelude::*;

use super::lanes::LaneElem;
use super::tensor::{
    from_vec, into_standard_vec, standard_slice, with_tensor, Element, Nd, Tensor,
};
use super::{MIN_CHUNK, PAR_THRESHOLD};

/// The row offset of a point whose index is out of range.
const OUT_OF_RANGE: usize = usize::MAX;

/// The index along one axis at each point.
#[derive(Clone, Debug)]
pub enum IndexCol {
    /// The same index at every point.
    Const(i64),
    /// One index per point: a row-major integer array with one element per point (an index
    /// function's `I64` results, or the table of another integer type it reads its indices
    /// from, used as it is).
    PerPoint(IntCol),
    /// The point's own number (the batch axis of a batched source).
    Point,
}

/// A row-major integer array of one index per point.
#[derive(Clone, Debug)]
pub enum IntCol {
    I64(Nd<i64>),
    I32(Nd<i32>),
    U32(Nd<u32>),
    U64(Nd<u64>),
}

impl IndexCol {
    /// The column of an `I64` tensor: a constant for a rank-0 tensor, else one index per
    /// element in row-major order.
    pub fn of_tensor(tensor: &Tensor) -> IndexCol {
        let Tensor::I64(indices) = tensor else {
            panic!(
                "exec: an index of type {:?} (the verifier rules this out)",
                tensor.elem()
            );
        };
        if indices.ndim() == 0 {
            IndexCol::Const(indices.iter().next().copied().unwrap_or(0))
        } else {
            IndexCol::PerPoint(IntCol::I64(standard(indices)))
        }
    }

    /// The column of the indices an integer table holds, one per element in row-major
    /// order, as a cast of each to `I64` would give them (a value no `i64` holds is out of
    /// range, as its cast is negative); `None` for a non-integer table.
    pub fn of_int_table(tensor: &Tensor) -> Option<IndexCol> {
        Some(IndexCol::PerPoint(match tensor {
            Tensor::I64(t) => IntCol::I64(standard(t)),
            Tensor::I32(t) => IntCol::I32(standard(t)),
            Tensor::U32(t) => IntCol::U32(standard(t)),
            Tensor::U64(t) => IntCol::U64(standard(t)),
            Tensor::F32(_) | Tensor::F64(_) | Tensor::Bool(_) => return None,
        }))
    }

    fn as_ref(&self) -> ColRef<'_> {
        fn slice<T>(indices: &Nd<T>) -> &[T] {
            indices
                .as_slice()
                .expect("an index column holds a row-major array")
        }
        match self {
            IndexCol::Const(i) => ColRef::Const(*i),
            IndexCol::PerPoint(IntCol::I64(indices)) => ColRef::I64(slice(indices)),
            IndexCol::PerPoint(IntCol::I32(indices)) => ColRef::I32(slice(indices)),
            IndexCol::PerPoint(IntCol::U32(indices)) => ColRef::U32(slice(indices)),
            IndexCol::PerPoint(IntCol::U64(indices)) => ColRef::U64(slice(indices)),
            IndexCol::Point => ColRef::Point,
        }
    }
}

/// `array` in row-major order, shared when it already is.
fn standard<T: Element>(array: &Nd<T>) -> Nd<T> {
    if array.is_standard_layout() {
        array.clone()
    } else {
        from_vec(array.shape(), standard_slice(array).into_owned())
    }
}

/// An integer an index column may hold, read as the `i64` its cast gives (`-1`, out of
/// range, for a `u64` beyond `i64::MAX`).
trait IndexElem: Copy + Send + Sync {
    fn index(self) -> i64;
}

impl IndexElem for i64 {
    #[inline]
    fn index(self) -> i64 {
        self
    }
}

impl IndexElem for i32 {
    #[inline]
    fn index(self) -> i64 {
        i64::from(self)
    }
}

impl IndexElem for u32 {
    #[inline]
    fn index(self) -> i64 {
        i64::from(self)
    }
}

impl IndexElem for u64 {
    #[inline]
    fn index(self) -> i64 {
        i64::try_from(self).unwrap_or(-1)
    }
}

/// A borrowed `IndexCol`, for the inner loops.
#[derive(Clone, Copy)]
enum ColRef<'a> {
    Const(i64),
    I64(&'a [i64]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    Point,
}

impl ColRef<'_> {
    #[inline]
    fn at(self, point: usize) -> i64 {
        match self {
            ColRef::Const(i) => i,
            ColRef::I64(indices) => indices[point],
            ColRef::I32(indices) => indices[point].index(),
            ColRef::U32(indices) => indices[point].index(),
            ColRef::U64(indices) => indices[point].index(),
            ColRef::Point => point as i64,
        }
    }
}

/// Where `n_points` points read (or write): the index along each of the leading axes
/// `lead_shape` of an array, per point.
pub struct Rows {
    cols: Vec<IndexCol>,
    lead_shape: Vec<usize>,
    n_points: usize,
}

impl Rows {
    pub fn new(cols: Vec<IndexCol>, lead_shape: Vec<usize>, n_points: usize) -> Rows {
        debug_assert_eq!(cols.len(), lead_shape.len());
        Rows {
            cols,
            lead_shape,
            n_points,
        }
    }

    fn refs(&self) -> Vec<ColRef<'_>> {
        self.cols.iter().map(IndexCol::as_ref).collect()
    }

    /// The indices at `point`, from column `first` on.
    pub fn index_at(&self, point: usize, first: usize) -> Vec<i64> {
        self.refs()[first..]
            .iter()
            .map(|col| col.at(point))
            .collect()
    }

    /// The first point (in row-major order) whose index is out of range and that is active
    /// under `mask` (all points are active without one).
    pub fn first_out_of_range(&self, mask: Option<&[bool]>) -> Option<usize> {
        let refs = self.refs();
        let bad = |point: usize| {
            mask.is_none_or(|mask| mask[point])
                && row_offset(&refs, &self.lead_shape, point) == OUT_OF_RANGE
        };
        if self.n_points >= PAR_THRESHOLD {
            (0..self.n_points)
                .into_par_iter()
                .with_min_len(MIN_CHUNK)
                .position_first(bad)
        } else {
            (0..self.n_points).position(bad)
        }
    }
}

/// The row-major row offset of `point` (or `OUT_OF_RANGE`).
#[inline]
fn row_offset(cols: &[ColRef], lead_shape: &[usize], point: usize) -> usize {
    let mut flat = 0usize;
    for (col, &dim) in cols.iter().zip(lead_shape) {
        match usize::try_from(col.at(point)) {
            Ok(i) if i < dim => flat = flat * dim + i,
            _ => return OUT_OF_RANGE,
        }
    }
    flat
}

/// Reads row `rows(p)` of `source` (seen as `[_, n_sub]`) for each point `p`: the result has
/// shape `shape` (`n_points * n_sub` elements). Out-of-range rows read zeros.
pub fn gather_rows(source: &Tensor, n_sub: usize, rows: &Rows, shape: &[usize]) -> Tensor {
    fn typed<T: Element>(source: &Nd<T>, n_sub: usize, rows: &Rows, shape: &[usize]) -> Nd<T> {
        let data = standard_slice(source);
        let refs = rows.refs();
        let lead_shape = &rows.lead_shape[..];
        let n_elems = rows.n_points * n_sub;
        let out: Vec<T> = if n_sub == 1 {
            let read = |point: usize| match row_offset(&refs, lead_shape, point) {
                OUT_OF_RANGE => T::default(),
                offset => data[offset],
            };
            if n_elems >= PAR_THRESHOLD {
                (0..rows.n_points)
                    .into_par_iter()
                    .with_min_len(MIN_CHUNK)
                    .map(read)
                    .collect()
            } else {
                (0..rows.n_points).map(read).collect()
            }
        } else {
            let mut out = vec![T::default(); n_elems];
            if n_sub > 0 {
                let copy_row = |(point, row): (usize, &mut [T])| {
                    let offset = row_offset(&refs, lead_shape, point);
                    if offset != OUT_OF_RANGE {
                        row.copy_from_slice(&data[offset * n_sub..(offset + 1) * n_sub]);
                    }
                };
                if n_elems >= PAR_THRESHOLD {
                    out.par_chunks_mut(n_sub)
                        .enumerate()
                        .with_min_len(MIN_CHUNK.div_ceil(n_sub))
                        .for_each(copy_row);
                } else {
                    out.chunks_mut(n_sub).enumerate().for_each(copy_row);
                }
            }
            out
        };
        from_vec(shape, out)
    }
    with_tensor!(source, a => wrap(typed(a, n_sub, rows, shape)))
}

/// Adds row `p` of `source` (seen as `[n_points, n_sub]`) into row `rows(p)` of a zero
/// array of shape `shape`, in increasing `p` (the interpreter's order, so that float sums
/// agree bit for bit); out-of-range targets are dropped.
pub fn scatter_rows(source: &Tensor, n_sub: usize, rows: &Rows, shape: &[usize]) -> Tensor {
    fn typed<T: LaneElem>(source: &Nd<T>, n_sub: usize, rows: &Rows, shape: &[usize]) -> Nd<T> {
        // Zeroed on every thread, in a dead buffer if there is one: written by the few
        // scattered rows only, fresh memory cost a page fault per page they touched.
        let len = shape.iter().product();
        let buffer = super::pool::reuse::<T>(len).unwrap_or_default();
        let mut out = super::lanes::zeros_into(buffer, len);
        add_rows(source, n_sub, rows, &mut out);
        from_vec(shape, out)
    }
    with_tensor!(source, a => wrap(typed(a, n_sub, rows, shape)))
}

/// `into` with the rows of `source` (`n_sub` elements each) added at the targets `rows`
/// gives it, in index order (`scatter_rows` into `into` instead of zeros). Updates `into`'s
/// buffer when nothing else holds it.
pub fn add_rows_into(source: &Tensor, n_sub: usize, rows: &Rows, into: Tensor) -> Tensor {
    fn typed<T: LaneElem>(source: &Nd<T>, n_sub: usize, rows: &Rows, into: Tensor) -> Nd<T> {
        let into = T::take(into).expect("a scatter adds into its own element type");
        let shape = into.shape().to_vec();
        let mut out = into_standard_vec(into);
        add_rows(source, n_sub, rows, &mut out);
        from_vec(&shape, out)
    }
    with_tensor!(source, a => wrap(typed(a, n_sub, rows, into)))
}

/// Adds row `point` of `source` into row `rows[point]` of `out`, for every point in range.
fn add_rows<T: LaneElem>(source: &Nd<T>, n_sub: usize, rows: &Rows, out: &mut [T]) {
    add_rows_from(
        &standard_slice(source),
        n_sub,
        rows,
        0..rows.n_points,
        out,
        0,
    );
}

/// Adds the row of each point in `points` into row `rows[point]` of a target, in increasing
/// order, dropping out-of-range targets: `data` holds the rows (`n_sub` elements each) from
/// point `points.start` on, and `out` the target's elements from `origin` on, including every
/// row the points reach.
pub fn add_rows_from<T: LaneElem>(
    data: &[T],
    n_sub: usize,
    rows: &Rows,
    points: std::ops::Range<usize>,
    out: &mut [T],
    origin: usize,
) {
    let refs = rows.refs();
    if let [col] = refs[..] {
        let dim = rows.lead_shape[0];
        let data = &data[..points.len() * n_sub];
        // One monomorphic loop per integer type of the column.
        macro_rules! add_at {
            ($($variant:ident),*) => {
                match col {
                    $(ColRef::$variant(ix) => {
                        return add_rows_at(data, n_sub, (&ix[points], dim), out, origin)
                    })*
                    ColRef::Const(_) | ColRef::Point => {}
                }
            };
        }
        add_at!(I64, I32, U32, U64);
    }
    let first = points.start;
    for point in points {
        let offset = row_offset(&refs, &rows.lead_shape, point);
        if offset == OUT_OF_RANGE {
            continue;
        }
        let src = &data[(point - first) * n_sub..(point - first + 1) * n_sub];
        let start = offset * n_sub - origin;
        let dst = &mut out[start..start + n_sub];
        for (slot, &x) in dst.iter_mut().zip(src) {
            *slot = slot.add(x);
        }
    }
}

/// `add_rows_from` for targets given by one column of indices into `dim` rows:
/// `indices[k]` is the target of row `k` of `data`. The same additions in the same order,
/// without the general loop's per-point dispatch (a histogram's whole cost).
fn add_rows_at<T: LaneElem, I: IndexElem>(
    data: &[T],
    n_sub: usize,
    (indices, dim): (&[I], usize),
    out: &mut [T],
    origin: usize,
) {
    let target = |i: I| usize::try_from(i.index()).ok().filter(|&i| i < dim);
    match n_sub {
        0 => {}
        1 => {
            for (&i, &x) in indices.iter().zip(data) {
                if let Some(row) = target(i) {
                    let slot = &mut out[row - origin];
                    *slot = slot.add(x);
                }
            }
        }
        _ => {
            for (&i, src) in indices.iter().zip(data.chunks_exact(n_sub)) {
                if let Some(row) = target(i) {
                    let start = row * n_sub - origin;
                    for (slot, &x) in out[start..start + n_sub].iter_mut().zip(src) {
                        *slot = slot.add(x);
                    }
                }
            }
        }
    }
}

/// Wraps a typed array back into a `Tensor` (the element type picks the variant).
fn wrap<T: Element>(array: Nd<T>) -> Tensor {
    T::into_tensor(array)
}

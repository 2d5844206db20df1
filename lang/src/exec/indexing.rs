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
    /// One index per point: a row-major array with one element per point.
    PerPoint(Nd<i64>),
    /// The point's own number (the batch axis of a batched source).
    Point,
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
        } else if indices.is_standard_layout() {
            IndexCol::PerPoint(indices.clone())
        } else {
            IndexCol::PerPoint(from_vec(
                indices.shape(),
                standard_slice(indices).into_owned(),
            ))
        }
    }

    fn as_ref(&self) -> ColRef<'_> {
        match self {
            IndexCol::Const(i) => ColRef::Const(*i),
            IndexCol::PerPoint(indices) => ColRef::Slice(
                indices
                    .as_slice()
                    .expect("IndexCol::PerPoint holds a row-major array"),
            ),
            IndexCol::Point => ColRef::Point,
        }
    }
}

/// A borrowed `IndexCol`, for the inner loops.
#[derive(Clone, Copy)]
enum ColRef<'a> {
    Const(i64),
    Slice(&'a [i64]),
    Point,
}

impl ColRef<'_> {
    fn at(self, point: usize) -> i64 {
        match self {
            ColRef::Const(i) => i,
            ColRef::Slice(indices) => indices[point],
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

/// Wraps a typed array back into a `Tensor` (the element type picks the variant).
fn wrap<T: Element>(array: Nd<T>) -> Tensor {
    T::into_tensor(array)
}

//! A materialised permutation of axes (a `tr` whose result a kernel must write out) as a
//! cache-blocked copy.
//!
//! Run as a kernel, a transposed copy reads along the output's last axis, which is strided in
//! the source: every point of a line is another cache line and, for rows of a few kilobytes,
//! another page, so `tr` of a 4096 × 1000 matrix ran at under 1 GB/s. Here the copy goes by
//! tiles of `TILE` × `TILE` elements, reading runs along the source's contiguous axis and
//! writing runs along the output's; it is a copy, so the bits are the kernel's.
//!
//! Handles a source whose contiguous (last) axis becomes the output's second-to-last or last
//! axis (a matrix transpose, with any batch axes in front); other permutations run as kernels.

use rayon::prelude::*;

use super::tensor::{from_vec, with_tensor, Element, Tensor};
use super::PAR_THRESHOLD;

/// Elements per side of a tile.
const TILE: usize = 32;

/// `source` (row-major) with output axis `a` taken from its axis `axes[a]`, in row-major
/// layout; `None` when this permutation is not one that `permuted` handles.
pub(super) fn permuted(source: &Tensor, axes: &[usize]) -> Option<Tensor> {
    let rank = axes.len();
    let last = rank.checked_sub(1)?;
    let q = axes.iter().position(|&axis| axis == last)?;
    if q == last {
        // The source's contiguous axis stays last: a plain strided copy reads whole runs.
        return Some(source.permute(axes).to_standard_layout());
    }
    if q + 2 != rank {
        return None;
    }
    Some(with_tensor!(source, a => Element::into_tensor(tiled(
        a.as_slice()?,
        a.shape(),
        axes
    ))))
}

/// The tiled copy for an output whose second-to-last axis is the source's contiguous one.
fn tiled<T: Element>(data: &[T], shape: &[usize], axes: &[usize]) -> super::tensor::Nd<T> {
    let rank = axes.len();
    let strides: Vec<usize> = (0..rank)
        .map(|axis| shape[axis + 1..].iter().product())
        .collect();
    let out_shape: Vec<usize> = axes.iter().map(|&axis| shape[axis]).collect();
    let (dq, dl) = (out_shape[rank - 2], out_shape[rank - 1]);
    let stride_l = strides[axes[rank - 1]];
    let outer_shape = &out_shape[..rank - 2];
    let n: usize = out_shape.iter().product();
    let mut out = vec![T::default(); n];
    if n == 0 {
        return from_vec(&out_shape, out);
    }
    // The source offset of element (0, 0) of output plane `plane`.
    let plane_base = |mut plane: usize| {
        let mut base = 0;
        for (a, &dim) in outer_shape.iter().enumerate().rev() {
            base += (plane % dim) * strides[axes[a]];
            plane /= dim;
        }
        base
    };
    // Rows `first..` of a plane: `rows` holds whole output rows of length `dl`.
    let fill = |base: usize, first: usize, rows: &mut [T]| {
        let n_rows = rows.len() / dl;
        for l0 in (0..dl).step_by(TILE) {
            for l in l0..(l0 + TILE).min(dl) {
                let src = &data[base + first + l * stride_l..][..n_rows];
                for (r, &value) in src.iter().enumerate() {
                    rows[r * dl + l] = value;
                }
            }
        }
    };
    let plane_len = dq * dl;
    if n < PAR_THRESHOLD {
        for (plane, values) in out.chunks_mut(plane_len).enumerate() {
            let base = plane_base(plane);
            for (block, rows) in values.chunks_mut(TILE * dl).enumerate() {
                fill(base, block * TILE, rows);
            }
        }
    } else {
        out.par_chunks_mut(plane_len)
            .enumerate()
            .for_each(|(plane, values)| {
                let base = plane_base(plane);
                values
                    .par_chunks_mut(TILE * dl)
                    .enumerate()
                    .for_each(|(block, rows)| fill(base, block * TILE, rows));
            });
    }
    from_vec(&out_shape, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row-major source `0, 1, 2, …` of `shape`.
    fn counting(shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::I64(from_vec(shape, (0..n as i64).collect()))
    }

    #[test]
    fn tiles_give_the_permuted_elements() {
        let cases: [(&[usize], &[usize]); 6] = [
            (&[3, 5], &[1, 0]),
            (&[70, 45], &[1, 0]),
            (&[300, 200], &[1, 0]),
            (&[2, 40, 33], &[0, 2, 1]),
            (&[40, 33, 2], &[1, 0, 2]),
            (&[5, 0], &[1, 0]),
        ];
        for (shape, axes) in cases {
            let source = counting(shape);
            let got = permuted(&source, axes).expect("a handled permutation");
            let expected = source.permute(axes).to_standard_layout();
            assert_eq!(got.shape(), expected.shape(), "{shape:?} {axes:?}");
            assert_eq!(got.to_array(), expected.to_array(), "{shape:?} {axes:?}");
        }
    }

    #[test]
    fn other_permutations_are_left_to_kernels() {
        assert!(permuted(&counting(&[4, 3, 2]), &[2, 0, 1]).is_none());
    }
}

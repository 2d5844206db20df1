//! Sums in dx's summation order (`prim::sum_order`, Note [Summation order]), vectorised and in
//! parallel, giving exactly the bits of the specification `sum_order::tree_sum` whatever the
//! number of threads.
//!
//! Two shapes of work:
//! - [`sum_contiguous`]: one sum of a contiguous run (the reduced axis is the innermost one).
//!   Leaves are summed by `LeafSums` (`sum_order::leaf_sum`'s order); long runs are cut into
//!   aligned runs of `2^RUN_LEVEL` leaves summed on different threads and combined in order.
//! - [`sum_rows`]: many sums side by side, one per column of a row-major `[n_rows, n_cols]`
//!   matrix (the reduced axis is an outer one). The same tree is applied to every column at
//!   once: the lane accumulators and the pending partial sums are rows, so every step is a
//!   tight loop over columns.

use rayon::prelude::*;

use super::tensor::{from_vec, map_tensor, standard_slice, Element, Nd, Tensor};
use super::{MIN_CHUNK, PAR_THRESHOLD};
use crate::prim::sum_order::{self, TreeSum, LANES, LEAF};

/// Leaves per parallel run of a long sum: `2^7` leaves of 128 elements (complete subtrees of
/// the summation tree, so the runs can be summed on any threads).
pub(super) const RUN_LEVEL: u32 = 7;
/// Points in one such run: a complete subtree of dx's order, summed by one task.
pub(super) const SUM_RUN: usize = LEAF << RUN_LEVEL;
/// Columns summed side by side by one task of [`sum_rows`] (bounds the accumulator rows).
const COLUMN_BLOCK: usize = 1024;

/// Step 1 of Note [Summation order] over a line: the sums of its consecutive leaves (of the
/// products `xs[k] * ys[k]` in `leaf_sums_of_products`), each with the bits of
/// `sum_order::leaf_sum`, handed to `each` in order. Float32 sums four full leaves at a time
/// (`sum_order::four_leaf_sums_f32`); the other types one after another.
pub trait LeafSums: Element {
    fn leaf_sums(xs: &[Self], mut each: impl FnMut(Self)) {
        for leaf in xs.chunks(LEAF) {
            each(sum_order::leaf_sum(leaf, Self::default(), add));
        }
    }

    fn leaf_sums_of_products(xs: &[Self], ys: &[Self], mut each: impl FnMut(Self)) {
        for (xs, ys) in xs.chunks(LEAF).zip(ys.chunks(LEAF)) {
            each(sum_order::leaf_sum_of_products(
                xs,
                ys,
                Self::default(),
                add,
                Self::mul,
            ));
        }
    }
}

impl LeafSums for f64 {}
impl LeafSums for bool {}

/// Integer sums wrap, so every order of a leaf's additions gives `leaf_sum`'s bits: one
/// running sum (a plain vector reduction). Written as `leaf_sum`'s eight interleaved
/// accumulators, LLVM vectorised the loop over groups with gathers, a fifth of a vectorised
/// `while`'s count of active lanes.
macro_rules! integer_leaf_sums {
    ($($ty:ty),*) => {$(
        impl LeafSums for $ty {
            fn leaf_sums(xs: &[$ty], mut each: impl FnMut($ty)) {
                for leaf in xs.chunks(LEAF) {
                    each(leaf.iter().fold(0, |sum: $ty, &x| sum.wrapping_add(x)));
                }
            }
        }
    )*};
}

integer_leaf_sums!(i32, i64, u32, u64);

impl LeafSums for f32 {
    fn leaf_sums(xs: &[f32], each: impl FnMut(f32)) {
        f32_leaf_sums(xs, None, each);
    }

    fn leaf_sums_of_products(xs: &[f32], ys: &[f32], each: impl FnMut(f32)) {
        f32_leaf_sums(xs, Some(ys), each);
    }
}

/// `LeafSums` of Float32 values (of products with `ys` when given): groups of four full
/// leaves by `sum_order::four_leaf_sums_f32`, the leaves left over one at a time.
fn f32_leaf_sums(xs: &[f32], ys: Option<&[f32]>, mut each: impl FnMut(f32)) {
    const GROUP: usize = 4 * LEAF;
    let len = ys.map_or(xs.len(), |ys| xs.len().min(ys.len()));
    let whole = len / GROUP * GROUP;
    for start in (0..whole).step_by(GROUP) {
        let group = |values| four_leaves(values, start);
        sum_order::four_leaf_sums_f32(group(xs), ys.map(group))
            .into_iter()
            .for_each(&mut each);
    }
    for start in (whole..len).step_by(LEAF) {
        let end = (start + LEAF).min(len);
        each(match ys {
            Some(ys) => sum_order::leaf_sum_of_products(
                &xs[start..end],
                &ys[start..end],
                0.0,
                add,
                f32::mul,
            ),
            None => sum_order::leaf_sum(&xs[start..end], 0.0, add),
        });
    }
}

/// The four leaves of `values` from `start` on.
fn four_leaves(values: &[f32], start: usize) -> &[f32; 4 * LEAF] {
    values[start..start + 4 * LEAF]
        .try_into()
        .expect("four whole leaves")
}

fn add<T: Element>(a: T, b: T) -> T {
    a.add(b)
}

/// Adds `b` to `a` element by element (`a[c] + b[c]`, in that operand order).
pub(super) fn add_rows<T: Element>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    for (x, &y) in a.iter_mut().zip(&b) {
        *x = x.add(y);
    }
    a
}

/// `sum_order::tree_sum` of `xs` (the specification), its leaves summed by `LeafSums`.
pub(super) fn tree_sum<T: LeafSums>(xs: &[T]) -> T {
    let mut tree = TreeSum::new();
    T::leaf_sums(xs, |sum| tree.push_leaf(sum, add));
    tree.finish(add).unwrap_or_default()
}

/// The sum of `xs` in dx's order.
pub fn sum_contiguous<T: LeafSums>(xs: &[T]) -> T {
    if xs.len() < PAR_THRESHOLD.max(2 * SUM_RUN) {
        return tree_sum(xs);
    }
    let runs: Vec<T> = xs.par_chunks(SUM_RUN).map(tree_sum).collect();
    let partial = !xs.len().is_multiple_of(SUM_RUN);
    sum_order::combine_runs(runs.into_iter(), RUN_LEVEL, partial, add).unwrap_or_default()
}

/// Many sums side by side, in dx's order: rows are added one at a time, each element to its
/// column's sum. The lane accumulators and the pending partial sums of Note [Summation order]
/// are rows, so every step is a tight loop across the columns.
pub(super) struct ColumnSums<T> {
    /// The `LANES` accumulator rows, one after the other.
    lanes: Vec<T>,
    width: usize,
    tree: TreeSum<Vec<T>>,
    rows: usize,
}

impl<T: Element> ColumnSums<T> {
    pub(super) fn new(width: usize) -> ColumnSums<T> {
        ColumnSums {
            lanes: vec![T::default(); LANES * width],
            width,
            tree: TreeSum::new(),
            rows: 0,
        }
    }

    /// Adds the next row, given as its values or as one value for every column.
    pub(super) fn add_row(&mut self, row: Result<&[T], T>) {
        let lane = &mut self.lanes[(self.rows % LANES) * self.width..][..self.width];
        match row {
            Ok(values) => {
                for (acc, &x) in lane.iter_mut().zip(values) {
                    *acc = acc.add(x);
                }
            }
            Err(value) => {
                for acc in lane.iter_mut() {
                    *acc = acc.add(value);
                }
            }
        }
        self.rows += 1;
        if self.rows.is_multiple_of(LEAF) {
            self.close_leaf();
        }
    }

    /// Combines the lanes (`sum_order::combine_lane_rows`) into the tree, and clears them.
    fn close_leaf(&mut self) {
        sum_order::combine_lane_rows(&mut self.lanes, self.width, add);
        self.tree
            .push_leaf(self.lanes[..self.width].to_vec(), add_rows);
        self.lanes.fill(T::default());
    }

    /// Writes the sums (zeros when no row was added).
    pub(super) fn finish(mut self, dst: &mut [T]) {
        if self.tree.is_empty() && self.rows > 0 {
            // One leaf (a short sum, such as a shallow contraction): it is the sum.
            sum_order::combine_lane_rows(&mut self.lanes, self.width, add);
            dst.copy_from_slice(&self.lanes[..self.width]);
            return;
        }
        if !self.rows.is_multiple_of(LEAF) {
            self.close_leaf();
        }
        match self.tree.finish(add_rows) {
            Some(sums) => dst.copy_from_slice(&sums),
            None => dst.fill(T::default()),
        }
    }
}

/// Sums the rows of the row-major matrix `data` (`n_rows` rows of `n_cols`) for the columns
/// `first..first + dst.len()`, writing one sum per column into `dst`.
fn sum_columns<T: Element>(data: &[T], n_rows: usize, n_cols: usize, first: usize, dst: &mut [T]) {
    let width = dst.len();
    let mut sums = ColumnSums::new(width);
    for index in 0..n_rows {
        let start = index * n_cols + first;
        sums.add_row(Ok(&data[start..start + width]));
    }
    sums.finish(dst);
}

/// Sums a row-major `[n_rows, n_cols]` matrix over its rows: one sum per column.
pub fn sum_rows<T: LeafSums>(data: &[T], n_rows: usize, n_cols: usize) -> Vec<T> {
    let mut out = vec![T::default(); n_cols];
    if n_cols == 1 {
        out[0] = sum_contiguous(data);
    } else if n_rows * n_cols < PAR_THRESHOLD {
        for (block, dst) in out.chunks_mut(COLUMN_BLOCK).enumerate() {
            sum_columns(data, n_rows, n_cols, block * COLUMN_BLOCK, dst);
        }
    } else {
        let block = COLUMN_BLOCK.min(n_cols.div_ceil(rayon::current_num_threads().max(1)));
        let block = block.max(MIN_CHUNK.div_ceil(n_rows.max(1))).min(n_cols);
        out.par_chunks_mut(block)
            .enumerate()
            .for_each(|(index, dst)| sum_columns(data, n_rows, n_cols, index * block, dst));
    }
    out
}

/// Sums `array` along axis `axis` in dx's order: `out[b, c]` is the sum over `r` of
/// `x[b, r, c]`, where `b` ranges over the axes before `axis` and `c` over those after it.
pub fn sum_axis(array: &Tensor, axis: usize) -> Tensor {
    fn typed<T: LeafSums>(array: &Nd<T>, axis: usize) -> Nd<T> {
        let shape = array.shape();
        let outer: usize = shape[..axis].iter().product();
        let n_rows = shape[axis];
        let inner: usize = shape[axis + 1..].iter().product();
        let mut out_shape = shape[..axis].to_vec();
        out_shape.extend_from_slice(&shape[axis + 1..]);
        let data = standard_slice(array);
        let block_len = n_rows * inner;
        let mut out = Vec::with_capacity(outer * inner);
        if inner == 1 && outer > 1 && outer * n_rows >= PAR_THRESHOLD {
            out = (0..outer)
                .into_par_iter()
                .with_min_len(MIN_CHUNK.div_ceil(n_rows.max(1)))
                .map(|block| sum_contiguous(&data[block * block_len..(block + 1) * block_len]))
                .collect();
        } else if inner > 0 {
            for block in 0..outer {
                let rows = &data[block * block_len..(block + 1) * block_len];
                out.extend(sum_rows(rows, n_rows, inner));
            }
        }
        from_vec(&out_shape, out)
    }
    map_tensor!(array, a => typed(a, axis))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 100.0
            })
            .collect()
    }

    /// Float32 `LeafSums` (four leaves at a time, then the rest) hands out the leaf sums of
    /// `leaf_sum` and `leaf_sum_of_products`, in order, at lengths around the groups.
    #[test]
    fn float_leaf_sums_are_the_leaves_in_order() {
        for n in [0, 1, 127, 128, 511, 512, 513, 1000, 1024, 2100] {
            let (xs, ys) = (values(n, 3), values(n, 5));
            let add = |a: f32, b: f32| a + b;
            let bits = |sums: Vec<f32>| sums.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            let mut sums = Vec::new();
            f32::leaf_sums(&xs, |sum| sums.push(sum));
            let one_by_one = xs
                .chunks(LEAF)
                .map(|leaf| sum_order::leaf_sum(leaf, 0.0, add));
            assert_eq!(bits(sums), bits(one_by_one.collect()), "sums, n = {n}");
            let mut dots = Vec::new();
            f32::leaf_sums_of_products(&xs, &ys, |sum| dots.push(sum));
            let one_by_one = xs
                .chunks(LEAF)
                .zip(ys.chunks(LEAF))
                .map(|(xs, ys)| sum_order::leaf_sum_of_products(xs, ys, 0.0, add, |a, b| a * b));
            assert_eq!(bits(dots), bits(one_by_one.collect()), "products, n = {n}");
        }
    }

    /// Integer leaves are one running sum; wrapping makes it `leaf_sum`'s value, also where
    /// the additions overflow.
    #[test]
    fn integer_leaf_sums_wrap_as_the_specification() {
        for n in [0, 1, 127, 128, 129, 1000] {
            let xs: Vec<i64> = (0..n as i64)
                .map(|k| {
                    k.wrapping_mul(0x3FFF_FFFF_FFFF_FF17)
                        .wrapping_add(i64::MAX / 3)
                        ^ (k << 59)
                })
                .collect();
            check_leaf_sums(&xs, 0, i64::wrapping_add);
            let small: Vec<u32> = xs.iter().map(|&x| x as u32).collect();
            check_leaf_sums(&small, 0, u32::wrapping_add);
        }
    }

    /// `LeafSums::leaf_sums` of `xs` are `sum_order::leaf_sum`'s of each leaf (by `add`).
    fn check_leaf_sums<T: LeafSums>(xs: &[T], zero: T, add: fn(T, T) -> T) {
        let mut sums = Vec::new();
        T::leaf_sums(xs, |sum| sums.push(sum));
        let spec: Vec<T> = xs
            .chunks(LEAF)
            .map(|leaf| sum_order::leaf_sum(leaf, zero, add))
            .collect();
        assert_eq!(sums, spec, "n = {}", xs.len());
    }

    #[test]
    fn contiguous_sums_match_the_specification() {
        for n in [0, 1, 9, 128, 1000, 16_384 * 2, 16_384 * 5 + 77, 300_001] {
            let xs = values(n, n as u64);
            let spec = sum_order::tree_sum(&xs, 0.0, |a: f32, b| a + b);
            assert_eq!(sum_contiguous(&xs).to_bits(), spec.to_bits(), "n = {n}");
        }
    }

    #[test]
    fn column_sums_match_the_specification() {
        for (n_rows, n_cols) in [(0, 3), (1, 5), (7, 3), (129, 17), (1000, 40), (300, 2000)] {
            let data = values(n_rows * n_cols, (n_rows * 31 + n_cols) as u64);
            let sums = sum_rows(&data, n_rows, n_cols);
            for column in 0..n_cols {
                let xs: Vec<f32> = (0..n_rows).map(|r| data[r * n_cols + column]).collect();
                let spec = sum_order::tree_sum(&xs, 0.0, |a, b| a + b);
                assert_eq!(
                    sums[column].to_bits(),
                    spec.to_bits(),
                    "{n_rows}×{n_cols} col {column}"
                );
            }
        }
    }

    #[test]
    fn sums_do_not_depend_on_the_thread_count() {
        let xs = values(1 << 20, 3);
        let matrix = values(4096 * 64, 4);
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| (sum_contiguous(&xs).to_bits(), sum_rows(&matrix, 4096, 64)))
        };
        let one = on(1);
        for threads in [2, 3, 8] {
            let other = on(threads);
            assert_eq!(one.0, other.0, "{threads} threads");
            assert!(one
                .1
                .iter()
                .zip(&other.1)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
}

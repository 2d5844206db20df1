//! The order in which dx adds up a sum: part of the language's semantics (docs/architecture.md, "The
//! engine"), defined once here and used by the reference interpreter and the engine alike.
//!
//! Floating-point addition is not associative, so "the sum of `x_0 … x_{n-1}`" means nothing
//! until an order is fixed. A plain sequential order makes the error grow like `n` (a Float32
//! sum of 10⁷ × 0.1 is 8.8 % off) and cannot run in parallel. dx fixes a tree instead
//! (Note [Summation order]) whose error grows like `log n`, which parallel and vectorised
//! kernels can compute exactly, and which does not depend on the number of threads: the same
//! input gives the same bits on any machine configuration, and the interpreter stays a
//! bit-exact oracle for the engine.
//!
//! [`tree_sum`] is the specification, one scalar at a time. [`TreeSum`] is the streaming form
//! both use: it combines leaf sums (or whole aligned subtrees of them) as they arrive, with at
//! most `log2(n / LEAF) + 1` pending partial sums. Integer sums wrap, so every order gives the
//! same result for them; the order matters for floats only.

// Note [Summation order]
// ~~~~~~~~~~~~~~~~~~~~~~
// The sum of `x_0 … x_{n-1}` (for `sumOuter`: of the rows, element by element) is:
//
// 1. Leaves: the sequence is cut into consecutive blocks of `LEAF` = 128 elements (the last
//    one may be shorter). Within a block, `LANES` = 8 accumulators start at +0 and element
//    `k` of the block is added to accumulator `k mod 8`, in order; then the accumulators are
//    combined as ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)). (This is the order of an
//    8-wide SIMD accumulator, which a compiler produces from a plain loop.)
// 2. Tree: leaf sums `s_0 … s_{m-1}` are combined pairwise: P(s) = s_0 when m = 1, and
//    otherwise P(s_0 … s_{h-1}) + P(s_h … s_{m-1}) with `h` the largest power of two below `m`.
//    So every subtree covers an aligned power-of-two run of leaves, and the streaming form is
//    a binary counter: push each leaf sum, merging the top two while they cover equally many
//    leaves; at the end, combine the pending sums from the right (the last pushed first).
// 3. An empty sum is +0.
//
// Parallel kernels hand each thread aligned runs of `2^j` leaves: each run is a complete
// subtree, and pushing the runs' sums into the counter in order (the last, partial run's sum
// last) reproduces the tree exactly, whatever the number of threads.

/// Elements per leaf block.
pub const LEAF: usize = 128;
/// Interleaved accumulators within a leaf.
pub const LANES: usize = 8;

/// Combines the `LANES` accumulators of a leaf: ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)).
#[inline]
pub fn combine_lanes<T: Copy>(acc: &[T; LANES], add: impl Fn(T, T) -> T) -> T {
    let left = add(add(acc[0], acc[1]), add(acc[2], acc[3]));
    let right = add(add(acc[4], acc[5]), add(acc[6], acc[7]));
    add(left, right)
}

/// [`combine_lanes`] for many sums side by side: `rows` holds the `LANES` accumulator rows of
/// `width` columns one after the other, and row 0 becomes, column by column,
/// ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) — the same additions with the same
/// operand order, each a loop across the columns. The other rows are left clobbered.
pub fn combine_lane_rows<T: Copy>(rows: &mut [T], width: usize, add: impl Fn(T, T) -> T + Copy) {
    debug_assert_eq!(rows.len(), LANES * width);
    // `row[dst] = add(row[dst], row[src])` for `dst < src`.
    let mut add_into = |dst: usize, src: usize| {
        let (head, tail) = rows.split_at_mut(src * width);
        let targets = &mut head[dst * width..][..width];
        for (a, &b) in targets.iter_mut().zip(&tail[..width]) {
            *a = add(*a, b);
        }
    };
    add_into(0, 1);
    add_into(2, 3);
    add_into(0, 2);
    add_into(4, 5);
    add_into(6, 7);
    add_into(4, 6);
    add_into(0, 4);
}

/// The sum of one leaf (at most `LEAF` elements), per Note [Summation order] step 1. Written
/// as whole groups of `LANES` so that the loop becomes one SIMD accumulator.
#[inline]
pub fn leaf_sum<T: Copy>(xs: &[T], zero: T, add: impl Fn(T, T) -> T + Copy) -> T {
    debug_assert!(xs.len() <= LEAF);
    let mut acc = [zero; LANES];
    let groups = xs.chunks_exact(LANES);
    let rest = groups.remainder();
    for group in groups {
        for lane in 0..LANES {
            acc[lane] = add(acc[lane], group[lane]);
        }
    }
    for (lane, &x) in rest.iter().enumerate() {
        acc[lane] = add(acc[lane], x);
    }
    combine_lanes(&acc, add)
}

/// `leaf_sum` of the products `mul(xs[k], ys[k])`, each computed as it is added: the same
/// order as `leaf_sum` of the products stored first, so the same bits, with one pass over
/// the operands instead of two (a sum of squares, a dot product).
#[inline]
pub fn leaf_sum_of_products<T: Copy>(
    xs: &[T],
    ys: &[T],
    zero: T,
    add: impl Fn(T, T) -> T + Copy,
    mul: impl Fn(T, T) -> T + Copy,
) -> T {
    debug_assert!(xs.len() == ys.len() && xs.len() <= LEAF);
    let mut acc = [zero; LANES];
    let whole = xs.len() - xs.len() % LANES;
    for (x_group, y_group) in xs.chunks_exact(LANES).zip(ys.chunks_exact(LANES)) {
        for lane in 0..LANES {
            acc[lane] = add(acc[lane], mul(x_group[lane], y_group[lane]));
        }
    }
    for (lane, (&x, &y)) in xs[whole..].iter().zip(&ys[whole..]).enumerate() {
        acc[lane] = add(acc[lane], mul(x, y));
    }
    combine_lanes(&acc, add)
}

/// The sums of four consecutive full leaves of Float32 values (of the products
/// `xs[k] * ys[k]` when `ys` is given), each with the bits of [`leaf_sum`] (or
/// [`leaf_sum_of_products`]): the four leaves' accumulators are independent, so on AVX their
/// chains of additions overlap in four vector registers, about five times the speed of one
/// leaf after another (whose one accumulator waits for each addition). Each leaf's lanes are
/// those of `leaf_sum`, added in the same order, and combined by [`combine_lanes`].
#[inline]
pub fn four_leaf_sums_f32(xs: &[f32; 4 * LEAF], ys: Option<&[f32; 4 * LEAF]>) -> [f32; 4] {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx"))]
    {
        use std::arch::x86_64::{
            __m256, _mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps,
            _mm256_storeu_ps,
        };
        // SAFETY: AVX is enabled at compile time (the `cfg` above); every load reads 8
        // elements at `leaf * LEAF + at` with `at + 8 <= LEAF`, inside the 4 * LEAF arrays.
        unsafe {
            let load = |values: &[f32; 4 * LEAF], leaf: usize, at: usize| -> __m256 {
                _mm256_loadu_ps(values.as_ptr().add(leaf * LEAF + at))
            };
            let term = |leaf: usize, at: usize| -> __m256 {
                match ys {
                    Some(ys) => _mm256_mul_ps(load(xs, leaf, at), load(ys, leaf, at)),
                    None => load(xs, leaf, at),
                }
            };
            let mut acc = [_mm256_setzero_ps(); 4];
            for at in (0..LEAF).step_by(LANES) {
                acc[0] = _mm256_add_ps(acc[0], term(0, at));
                acc[1] = _mm256_add_ps(acc[1], term(1, at));
                acc[2] = _mm256_add_ps(acc[2], term(2, at));
                acc[3] = _mm256_add_ps(acc[3], term(3, at));
            }
            let mut lanes = [[0.0f32; LANES]; 4];
            for (lanes, acc) in lanes.iter_mut().zip(acc) {
                _mm256_storeu_ps(lanes.as_mut_ptr(), acc);
            }
            lanes.map(|lanes| combine_lanes(&lanes, |a, b| a + b))
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx")))]
    {
        let add = |a: f32, b: f32| a + b;
        std::array::from_fn(|leaf| {
            let leaf_xs = &xs[leaf * LEAF..(leaf + 1) * LEAF];
            match ys {
                Some(ys) => {
                    let leaf_ys = &ys[leaf * LEAF..(leaf + 1) * LEAF];
                    leaf_sum_of_products(leaf_xs, leaf_ys, 0.0, add, |a, b| a * b)
                }
                None => leaf_sum(leaf_xs, 0.0, add),
            }
        })
    }
}

/// The binary counter of Note [Summation order] step 2: partial sums of aligned power-of-two
/// runs of leaves, with the number of leaves (as a power of two) each covers. `T` is a scalar
/// for one sum, or a row of partial sums for many sums computed side by side; `add` adds its
/// left operand to its right one, element by element.
#[derive(Clone, Debug)]
pub struct TreeSum<T> {
    pending: Vec<(T, u32)>,
}

impl<T> Default for TreeSum<T> {
    fn default() -> Self {
        TreeSum {
            pending: Vec::new(),
        }
    }
}

impl<T> TreeSum<T> {
    pub fn new() -> TreeSum<T> {
        TreeSum::default()
    }

    /// Whether nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Adds the sum of the next leaf.
    pub fn push_leaf(&mut self, sum: T, add: impl Fn(T, T) -> T) {
        self.push_run(sum, 0, add);
    }

    /// Adds the sum of the next `2^level` leaves, which must start at a multiple of
    /// `2^level` leaves (a complete subtree of the tree).
    pub fn push_run(&mut self, mut sum: T, mut level: u32, add: impl Fn(T, T) -> T) {
        debug_assert!(self.pending.last().is_none_or(|(_, top)| *top >= level));
        while self.pending.last().is_some_and(|(_, top)| *top == level) {
            let (top, _) = self.pending.pop().expect("checked just above");
            sum = add(top, sum);
            level += 1;
        }
        self.pending.push((sum, level));
    }

    /// The sum of everything pushed, with `last` (the sum of a final partial run, already
    /// combined by its own counter) as the rightmost term if given; `None` if there is none.
    pub fn finish_with(self, last: Option<T>, add: impl Fn(T, T) -> T) -> Option<T> {
        let mut pending = self.pending.into_iter().rev().map(|(sum, _)| sum);
        let mut total = last.or_else(|| pending.next())?;
        for sum in pending {
            total = add(sum, total);
        }
        Some(total)
    }

    /// The sum of everything pushed, `None` if nothing was.
    pub fn finish(self, add: impl Fn(T, T) -> T) -> Option<T> {
        self.finish_with(None, add)
    }
}

/// The sum of consecutive runs of `2^level` leaves, given their sums in order; when
/// `last_is_partial`, the last run is shorter (and was summed by its own counter).
pub fn combine_runs<T: Copy>(
    runs: impl ExactSizeIterator<Item = T>,
    level: u32,
    last_is_partial: bool,
    add: impl Fn(T, T) -> T + Copy,
) -> Option<T> {
    let n_runs = runs.len();
    let mut tree = TreeSum::new();
    let mut last = None;
    for (position, sum) in runs.enumerate() {
        if last_is_partial && position + 1 == n_runs {
            last = Some(sum);
        } else {
            tree.push_run(sum, level, add);
        }
    }
    tree.finish_with(last, add)
}

/// The sum of `xs` in dx's order (Note [Summation order]): the specification.
pub fn tree_sum<T: Copy>(xs: &[T], zero: T, add: impl Fn(T, T) -> T + Copy) -> T {
    let mut tree = TreeSum::new();
    for leaf in xs.chunks(LEAF) {
        tree.push_leaf(leaf_sum(leaf, zero, add), add);
    }
    tree.finish(add).unwrap_or(zero)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Products summed as they are computed give the bits of the products stored, then
    /// summed, at every length up to a leaf (values of mixed magnitude and sign).
    #[test]
    fn sums_of_products_are_sums_of_the_stored_products() {
        let xs: Vec<f32> = (0..LEAF)
            .map(|k| (k as f32 * 0.7).sin() * 10f32.powi(k as i32 % 9 - 4))
            .collect();
        let ys: Vec<f32> = (0..LEAF).map(|k| (k as f32 * 1.3).cos() * 3.0).collect();
        let add = |x: f32, y: f32| x + y;
        let mul = |x: f32, y: f32| x * y;
        for len in 0..=LEAF {
            let products: Vec<f32> = xs[..len].iter().zip(&ys).map(|(x, y)| x * y).collect();
            let stored = leaf_sum(&products, 0.0, add);
            let fused = leaf_sum_of_products(&xs[..len], &ys[..len], 0.0, add, mul);
            assert_eq!(fused.to_bits(), stored.to_bits(), "length {len}");
        }
    }

    /// Four leaves side by side give the bits of `leaf_sum` and `leaf_sum_of_products` leaf
    /// by leaf: on finite values of mixed magnitude and sign (every leaf's result depends on
    /// the order of its additions), and with infinities, NaN and signed zeros placed in one
    /// leaf at a time (the others stay finite).
    #[test]
    fn four_leaves_at_once_sum_as_one_leaf_after_another() {
        let finite = |k: usize, salt: f32| (k as f32 * salt).sin() * 10f32.powi(k as i32 % 13 - 6);
        let specials = [
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            -0.0,
            1e-42,
        ];
        let add = |a: f32, b: f32| a + b;
        let mul = |a: f32, b: f32| a * b;
        let check = |xs: &[f32; 4 * LEAF], ys: &[f32; 4 * LEAF], what: &str| {
            let sums = four_leaf_sums_f32(xs, None);
            let dots = four_leaf_sums_f32(xs, Some(ys));
            for leaf in 0..4 {
                let range = leaf * LEAF..(leaf + 1) * LEAF;
                let one = leaf_sum(&xs[range.clone()], 0.0, add);
                let dot = leaf_sum_of_products(&xs[range.clone()], &ys[range], 0.0, add, mul);
                assert_eq!(
                    sums[leaf].to_bits(),
                    one.to_bits(),
                    "{what}: sum of leaf {leaf}"
                );
                assert_eq!(
                    dots[leaf].to_bits(),
                    dot.to_bits(),
                    "{what}: products of leaf {leaf}"
                );
            }
        };
        for salt in [0.7f32, 1.3, 2.9] {
            let xs: [f32; 4 * LEAF] = std::array::from_fn(|k| finite(k, salt));
            let ys: [f32; 4 * LEAF] = std::array::from_fn(|k| finite(k + 11, salt * 0.5));
            check(&xs, &ys, "finite");
            for (n, &special) in specials.iter().enumerate() {
                let mut with = xs;
                with[(n % 4) * LEAF + 37 + n] = special;
                check(&with, &ys, &format!("{special:?} in leaf {}", n % 4));
            }
        }
        // All-zero leaves of -0 sum to +0, as `leaf_sum`'s accumulators start at +0.
        let zeros = [-0.0f32; 4 * LEAF];
        assert!(four_leaf_sums_f32(&zeros, None)
            .iter()
            .all(|s| s.to_bits() == 0));
    }

    /// The row form gives every column the bits of `combine_lanes` (values of mixed magnitude
    /// and sign, so that the order of the additions shows in the result).
    #[test]
    fn lane_rows_combine_as_lanes_do() {
        let width = 37;
        let value = |row: usize, column: usize| {
            let k = (row * width + column) as f32;
            (k * 0.7).sin() * 10f32.powi((row as i32 * 3 + column as i32) % 9 - 4)
        };
        let mut rows: Vec<f32> = (0..LANES * width)
            .map(|at| value(at / width, at % width))
            .collect();
        combine_lane_rows(&mut rows, width, |a, b| a + b);
        for (column, combined) in rows[..width].iter().enumerate() {
            let acc: [f32; LANES] = std::array::from_fn(|row| value(row, column));
            let expected = combine_lanes(&acc, |a, b| a + b);
            assert_eq!(combined.to_bits(), expected.to_bits(), "column {column}");
        }
        // A different tree (left to right) gives other bits on this data, so the test can fail.
        let sequential = (0..width).any(|column| {
            let left_to_right = (0..LANES).fold(0.0f32, |total, row| total + value(row, column));
            left_to_right.to_bits() != rows[column].to_bits()
        });
        assert!(sequential);
    }

    /// The recursive definition of step 2, written as the note states it.
    fn pairwise(sums: &[f32]) -> f32 {
        if sums.len() == 1 {
            return sums[0];
        }
        // The largest power of two below the length.
        let half = 1 << (usize::BITS - 1 - (sums.len() - 1).leading_zeros());
        pairwise(&sums[..half]) + pairwise(&sums[half..])
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state as f32 / u32::MAX as f32 - 0.5) * 1000.0
            })
            .collect()
    }

    #[test]
    fn the_counter_builds_the_recursive_tree() {
        for n in [
            1,
            7,
            128,
            129,
            300,
            1000,
            128 * 5 + 3,
            128 * 13,
            128 * 64 + 1,
        ] {
            let xs = values(n, n as u32);
            let leaves: Vec<f32> = xs
                .chunks(LEAF)
                .map(|leaf| leaf_sum(leaf, 0.0, |a, b| a + b))
                .collect();
            let expected = pairwise(&leaves);
            let got = tree_sum(&xs, 0.0, |a, b| a + b);
            assert_eq!(got.to_bits(), expected.to_bits(), "n = {n}");
        }
    }

    #[test]
    fn aligned_runs_reproduce_the_tree() {
        // Runs of 4 leaves, summed by their own counters, then pushed at level 2, the final
        // partial run last: the result must not depend on how the leaves were grouped.
        let add = |a: f32, b: f32| a + b;
        for n in [LEAF * 4, LEAF * 4 + 1, LEAF * 11 + 17, LEAF * 16, LEAF * 23] {
            let xs = values(n, 7 + n as u32);
            let run_len = 4 * LEAF;
            let runs: Vec<f32> = xs
                .chunks(run_len)
                .map(|run| tree_sum(run, 0.0, add))
                .collect();
            let partial = !xs.len().is_multiple_of(run_len);
            let grouped = combine_runs(runs.into_iter(), 2, partial, add).unwrap_or(0.0);
            assert_eq!(
                grouped.to_bits(),
                tree_sum(&xs, 0.0, add).to_bits(),
                "n = {n}"
            );
        }
    }

    #[test]
    fn the_error_grows_slowly() {
        let xs = vec![0.1f32; 10_000_000];
        let sum = tree_sum(&xs, 0.0, |a, b| a + b);
        assert!(((sum as f64) - 1e6).abs() / 1e6 < 1e-6, "{sum}");
        let sequential: f32 = xs.iter().sum();
        assert!(
            ((sequential as f64) - 1e6).abs() / 1e6 > 1e-2,
            "{sequential}"
        );
    }

    #[test]
    fn empty_is_positive_zero_and_negative_zero_is_kept_only_by_adding() {
        assert_eq!(tree_sum::<f32>(&[], 0.0, |a, b| a + b).to_bits(), 0);
        assert_eq!(tree_sum(&[-0.0f32], 0.0, |a, b| a + b).to_bits(), 0);
        assert!(tree_sum(&[f32::NAN, 1.0], 0.0, |a, b| a + b).is_nan());
        assert_eq!(
            tree_sum(&[f32::INFINITY, 1.0], 0.0, |a, b| a + b),
            f32::INFINITY
        );
    }
}

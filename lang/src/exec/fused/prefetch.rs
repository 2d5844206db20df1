//! Software prefetching of the runs a kernel reads in place (Note [Prefetching streams]).

use std::ops::Range;
use std::sync::OnceLock;

// Note [Prefetching streams]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel that streams a large input reads it one line (a contiguous run, read in place) at
// a time. The hardware prefetchers follow such a stream only within a 4 KB page, and a line
// of 1000 floats crosses a page boundary on nearly every line: at each one the stream
// restarts from a miss. On a 16 MB row maximum (4096×1000 floats, held in L3 between runs)
// one row at a time reached 10–14 GB/s on one core; asking for the row two ahead while
// folding the current one, 1.6–1.8× that (a standalone test, 40 interleaved rounds: medians
// 892 µs without, 526 µs interleaved with the fold, 568–627 µs as one burst of prefetches
// per line, 660 µs when the burst runs eight rows ahead and evicts from L1). JAX's row
// reductions (YNNPACK) are as fast as the interleaved form.
//
// So each read node of a reduction keeps a `Stream`: where its last run started and the
// stride since the one before. When a run starts the same stride past the previous one as
// that one was past its predecessor, the lines are walking the input regularly (consecutive
// rows, every other row, a column sum's rows), and the run `AHEAD_BYTES` further on in
// strides is requested as one burst. A read whose runs do not repeat a stride asks for
// nothing, so no bandwidth goes to lines no one reads; inputs that stay in a core's L2 are
// skipped.
//
// Only reductions outside row groups prefetch. Measured in dx (`DX_PREFETCH=0` turns it
// off; interleaved pairs of `%bench` runs of one binary on this 2-core host, ratio on/off):
// column sums of 4096×1000 floats 0.41–0.68 (8 pairs), row maxima 0.67–1.04 (8 pairs). Maps
// that stream 16 MB in and 16 MB out were *slower* with it (10 pairs: a product 1.09–1.44,
// an `exp` 0.98–1.5): their traffic goes to memory, where the hardware already streams at
// the bandwidth the extra requests only compete for. In a row group (the row maxima of
// `logsumexp` then its sums of `exp`, a block of rows at a time, the later members reading
// the block from L2) the primal `logsumexp` was neutral to slower (25 pairs, median 1.05,
// 0.87–1.38), so row groups do not prefetch either.
// Prefetches never change a value: they only move cache lines.

/// How far ahead of the current run the stream asks for data, at least two strides: far
/// enough to cover a miss to L3 or memory, near enough to stay in L1 (eight rows ahead was
/// slower).
const AHEAD_BYTES: usize = 8 << 10;
/// Inputs smaller than this stay in a core's L2 between lines: no prefetching.
const MIN_INPUT_BYTES: usize = 512 << 10;
/// Bytes per cache line (x86-64 and most arm64 cores).
pub(super) const CACHE_LINE: usize = 64;

/// Whether kernels prefetch at all: yes, unless the environment variable `DX_PREFETCH` is
/// `0` (for measuring what prefetching gains, in one binary). Read once.
pub(super) fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("DX_PREFETCH").is_none_or(|value| value != "0"))
}

/// The runs one read node has read in place (`advance`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stream {
    last: Option<usize>,
    stride: isize,
}

impl Stream {
    /// Notes a run of `len` elements of `data` read in place from `start`; when the runs
    /// walk `data` with a steady stride, prefetches the run that many strides ahead.
    pub(super) fn advance<T>(&mut self, data: &[T], start: usize, len: usize) {
        if let Some(run) = self.ahead(data.len(), std::mem::size_of::<T>(), start, len) {
            prefetch(&data[run]);
        }
    }

    /// `advance`'s decision for an input of `n` elements of `elem` bytes: the run to
    /// prefetch, if any (inside `0..n`).
    fn ahead(&mut self, n: usize, elem: usize, start: usize, len: usize) -> Option<Range<usize>> {
        if n * elem < MIN_INPUT_BYTES {
            return None;
        }
        let stride = self.last.map_or(0, |last| start as isize - last as isize);
        let steady = stride != 0 && stride == self.stride;
        self.last = Some(start);
        self.stride = stride;
        if !steady {
            return None;
        }
        let strides = AHEAD_BYTES.div_ceil(stride.unsigned_abs() * elem).max(2) as isize;
        let ahead = start.checked_add_signed(stride * strides)?;
        (ahead < n).then(|| ahead..(ahead + len).min(n))
    }
}

/// Asks the memory system to bring `run` into L1, one request per cache line.
fn prefetch<T>(run: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = run.as_ptr().cast::<i8>();
        for offset in (0..std::mem::size_of_val(run)).step_by(CACHE_LINE) {
            // SAFETY: `_mm_prefetch` only hints the cache (it never faults or reads into
            // the program), and every address is inside `run`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = run;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a stream over `n` floats prefetches for runs of `len` at `starts`.
    fn walk(starts: &[usize], len: usize, n: usize) -> Vec<Option<Range<usize>>> {
        let mut stream = Stream::default();
        starts
            .iter()
            .map(|&start| stream.ahead(n, 4, start, len))
            .collect()
    }

    #[test]
    fn a_stream_prefetches_once_its_stride_repeats() {
        let n = 1 << 20; // 4 MB of floats
                         // Rows of 1000 floats (4000 bytes): three strides make 8 KB.
        assert_eq!(
            walk(&[0, 1000, 2000, 3000], 1000, n),
            [None, None, Some(5000..6000), Some(6000..7000)]
        );
        // Every other row: two strides.
        assert_eq!(
            walk(&[0, 2000, 4000], 1000, n),
            [None, None, Some(8000..9000)]
        );
        // Backwards.
        assert_eq!(
            walk(&[90_000, 89_000, 88_000], 1000, n),
            [None, None, Some(85_000..86_000)]
        );
        // Short runs of 16 floats, one after another: 8 KB is 128 strides ahead.
        assert_eq!(
            walk(&[0, 16, 32], 16, n),
            [None, None, Some(32 + 16 * 128..32 + 16 * 129)]
        );
    }

    #[test]
    fn irregular_runs_small_inputs_and_the_ends_ask_for_nothing_outside() {
        let n = 1 << 20;
        // A gather of rows, and a run read again.
        assert_eq!(walk(&[0, 3000, 1000, 7000], 1000, n), vec![None; 4]);
        assert_eq!(walk(&[5000, 5000, 5000], 1000, n), vec![None; 3]);
        // An input that stays in L2.
        assert_eq!(walk(&[0, 1000, 2000, 3000], 1000, 100_000), vec![None; 4]);
        // Near either end the run is cut at the input's end, or not asked for.
        assert_eq!(
            walk(&[n - 4000, n - 3000, n - 2500], 1000, n),
            [None, None, None]
        );
        assert_eq!(
            walk(&[n - 7000, n - 6000, n - 5000, n - 4000], 1000, n),
            [None, None, Some(n - 2000..n - 1000), Some(n - 1000..n)]
        );
        assert_eq!(walk(&[3000, 2000, 1000, 0], 1000, n), vec![None; 4]);
        // The side effect stays inside the input too (slicing would panic otherwise).
        let data = vec![1f64; n];
        let mut stream = Stream::default();
        for start in [n - 3000, n - 2000, n - 1000] {
            stream.advance(&data, start, 1000);
        }
    }
}

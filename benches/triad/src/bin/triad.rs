//! STREAM-style triad `a[i] = b[i] + s * c[i]` over f64 arrays far larger than cache, run on
//! all cores with rayon. Reports the best of several runs in GB/s counting 3 arrays × 8 bytes
//! per element (STREAM's convention: the write-allocate read of `a` is not counted).
//!
//! Usage: `triad [N_ELEMENTS] [RUNS]` (defaults 2^25 = 33.5 M elements = 268 MB per array, 10
//! runs). Prints one JSON object on stdout.

use rayon::prelude::*;
use std::time::Instant;

const CHUNK: usize = 1 << 16;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map(|s| s.parse().expect("N_ELEMENTS must be a number"))
        .unwrap_or(1 << 25);
    let runs: usize = args
        .next()
        .map(|s| s.parse().expect("RUNS must be a number"))
        .unwrap_or(10);

    // First touch in parallel, so that pages are spread as the kernel will use them.
    let mut a = vec![0.0f64; n];
    let mut b = vec![0.0f64; n];
    let mut c = vec![0.0f64; n];
    a.par_chunks_mut(CHUNK).for_each(|x| x.fill(1.0));
    b.par_chunks_mut(CHUNK).for_each(|x| x.fill(2.0));
    c.par_chunks_mut(CHUNK).for_each(|x| x.fill(0.5));
    let s = 3.0f64;

    let mut best = f64::INFINITY;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks(CHUNK))
            .zip(c.par_chunks(CHUNK))
            .for_each(|((a, b), c)| {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + s * c;
                }
            });
        let t = start.elapsed().as_secs_f64();
        times.push(t);
        best = best.min(t);
        std::hint::black_box(&a);
    }
    // Check the result so that the loop cannot be optimised away.
    let check: f64 = a.par_iter().map(|x| (x - 3.5).abs()).sum();
    assert!(check == 0.0, "triad gave a wrong result");

    let bytes = 3.0 * 8.0 * n as f64;
    println!(
        "{{\"kernel\": \"triad\", \"dtype\": \"f64\", \"n\": {n}, \"runs\": {runs}, \"threads\": {}, \
         \"bytes_per_run\": {bytes}, \"best_s\": {best:e}, \"gb_per_s\": {:.3}}}",
        rayon::current_num_threads(),
        bytes / best / 1e9
    );
}

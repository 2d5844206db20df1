//! Matrix-product peak of this machine: `faer` 0.24 called directly (rayon, all cores) on
//! square f32 and f64 matrices, `C = A B` with `Accum::Replace`. For each size and type:
//! one warm-up product, then the best of several runs, as GFLOP/s = 2 n³ / time.
//!
//! Usage: `gemm [SIZES] [RUNS]`, SIZES comma-separated (default `256,1024`), RUNS default 10.
//! Prints one JSON object per line on stdout.

use faer::{Accum, Mat, Par};
use std::time::Instant;

fn bench<T>(n: usize, runs: usize, make: impl Fn(f64) -> T, name: &str)
where
    T: faer::traits::ComplexField + Copy,
{
    let a = Mat::<T>::from_fn(n, n, |i, j| make(((i * n + j) as f64 * 0.37).sin()));
    let b = Mat::<T>::from_fn(n, n, |i, j| make(((i * n + j) as f64 * 0.11).cos()));
    let mut c = Mat::<T>::from_fn(n, n, |_, _| make(0.0));
    let one = make(1.0);
    let mut product = || {
        faer::linalg::matmul::matmul(
            c.as_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            one,
            Par::rayon(0),
        );
    };
    product();
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        product();
        best = best.min(start.elapsed().as_secs_f64());
    }
    std::hint::black_box(&c);
    let flops = 2.0 * (n as f64).powi(3);
    println!(
        "{{\"kernel\": \"gemm\", \"dtype\": \"{name}\", \"n\": {n}, \"runs\": {runs}, \
         \"threads\": {}, \"best_s\": {best:e}, \"gflop_per_s\": {:.3}}}",
        rayon::current_num_threads(),
        flops / best / 1e9
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sizes: Vec<usize> = args
        .next()
        .unwrap_or_else(|| "256,1024".to_owned())
        .split(',')
        .map(|s| s.trim().parse().expect("SIZES must be comma-separated numbers"))
        .collect();
    let runs: usize = args
        .next()
        .map(|s| s.parse().expect("RUNS must be a number"))
        .unwrap_or(10);
    for &n in &sizes {
        bench::<f32>(n, runs, |x| x as f32, "f32");
        bench::<f64>(n, runs, |x| x, "f64");
    }
}

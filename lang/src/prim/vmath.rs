//! Vectorisable `exp`, `log` (natural), `tanh`, `sin`, `cos` and `pow` (float ^ float, like
//! `powf`) for `f32` and `f64`: one source of scalar meaning for the engine's kernels and the
//! reference interpreter.
//!
//! API: a per-element function per operation and type (`exp_f32`, `exp_f64`, ..., `pow_f32(x,
//! y)`, `pow_f64(x, y)`) and a slice function (`exp_f32_slice(xs, out)`, ...,
//! `pow_f32_slice(xs, ys, out)`). A slice function writes exactly the bits that the
//! per-element function gives for each input. It processes `min` of the slice lengths; the
//! lengths are expected to match, which debug builds assert.
//!
//! Accuracy: every result is within 2 ulp of the platform's libm as reached through Rust's
//! `std` (`f32::exp`, `f64::ln`, `f64::powf`, ...) over the whole domain, and the special
//! values follow C99 Annex F as libm does: NaN in gives NaN out, `log` of a negative number
//! is NaN, `log(±0) = -inf`, odd functions keep the sign of zero (`sin(-0) = -0`,
//! `tanh(-0) = -0`), results overflow to infinity and underflow through the subnormals to
//! zero at libm's thresholds (within the 2 ulp allowance next to a threshold), and `pow` has
//! all of C99's special cases (`pow(x, ±0) = 1` even for NaN `x`, `pow(1, y) = 1` even for
//! NaN `y`, `pow(-1, ±inf) = 1`, a negative finite base with a non-integer exponent is NaN,
//! and so on). The bound was established against glibc 2.36: exhaustively over all 2^32
//! inputs for the unary f32 functions (`examples/vmath_exhaustive.rs`, a release build
//! outside the test suite), by
//! sampling for the f64 functions and `pow`; the tests below sample. Our own error is at most
//! 1 ulp of the true value everywhere (the f32 functions computed in f64: about 0.5 ulp),
//! which leaves room for libm's: glibc's `tanh` and `tanhf` are themselves up to 2 ulp off
//! (see Note [tanh accuracy]).
//!
//! Method: every function is an argument reduction followed by a polynomial or rational
//! approximation, written without branches (see Note [Branch-free selects]), with the special
//! values patched in by selects at the end. The f32 functions other than `exp`, `log`, `tanh`
//! and `sin`/`cos` of arguments up to 8 compute in f64 and round once at the end (see Note
//! [f32 via f64]):
//!
//! - `exp_f32`, in f32 arithmetic (see Note [exp in f32]): `x = n ln2 + r`,
//!   `|r| <= ln(2)/2`; `e^r = 1 + r + r^2 P(r)` with `P` of degree 4.
//! - `log_f32`, in f32 arithmetic (see Note [log in f32]): `x = 2^k (1 + f)`, `1 + f` in
//!   `[sqrt(1/2), sqrt(2))`; `log(1 + f) = f - f^2/2 + f^3 P(f)` with `P` of degree 7.
//! - `pow_f32`: `2^(y log2|x|)` from an f64 log kernel (`x = 2^k m`, `s = (m - 1)/(m + 1)`,
//!   `log(m) = 2 atanh(s) = 2s + s^3 Q(s^2)`, `Q` of degree 4) and an f64 `2^t` kernel
//!   (degree 7); the sign and the special cases by selects.
//! - `tanh_f32`, in f32 arithmetic (see Note [tanh in f32]): `a + a^3 T(a^2)` (`T` of
//!   degree 4) for `a = |x| < 0.55`, else `1 - 2/(e^(2a) + 1)` with the f32 exp kernel.
//! - `sin_f32`, `cos_f32`: `x = n pi/2 + r`, then `r + r^3 S(r^2)` or `1 + r^2 C(r^2)` (`S`,
//!   `C` of degree 3) chosen by `n mod 4`. For `|x| <= 8` in f32 arithmetic with pi/2 in four
//!   f32 parts (Note [sin and cos of small f32]); above, in f64 with pi/2 in three parts (27,
//!   25 and 53 bits) so that `r` is exact enough for `|x| < 2^26`.
//! - `exp_f64`, `log_f64`, `sin_f64`, `cos_f64`, `pow_f64`: the algorithms of fdlibm (Sun
//!   Microsystems; `e_exp.c`, `e_log.c`, `k_sin.c`, `k_cos.c`, the medium branch of
//!   `e_rem_pio2.c`, `e_pow.c`), each documented there as below 1 ulp, with their published
//!   Remez coefficients. fdlibm's branches become selects: all three rounds of the pi/2
//!   reduction always run, `pow`'s table of two entries is a select, and the final scaling by
//!   `2^n` is two exact multiplications, which also rounds subnormal results once.
//! - `tanh_f64`: `a + a^3 R(a^2)` (`R` of degree 7) for `|x| < 0.3`; above, `1 - 2/(E + 1)`
//!   with `E = e^(2|x|)` and the division carried in double-double arithmetic, so that the
//!   result is rounded once from about 2^-60 relative error.
//!
//! The coefficients of the f32 kernels and of `tanh_f64` were fitted for this file by a Remez
//! exchange in mpmath at 160 bits (minimax relative error on the stated interval), then
//! rounded to f64; each table states its interval and its error after rounding.
//!
//! Speed, on 4096-element slices against `std` per element (AMD Zen 3, glibc 2.36): built
//! for AVX2 (`-C target-cpu=native`, or x86-64-v3) the slice functions are 1.3x (`pow_f32`)
//! to 6.5x (`tanh_f32`) faster, except `pow_f64` at 0.8x. On plain x86-64 (SSE2: two f64
//! lanes, no blend instruction, no 64-bit compares) the gains shrink to 1.0x-3.4x, and
//! `log_f64` (0.7x), `pow_f32` (0.6x) and `pow_f64` (0.4x) are slower than glibc's
//! table-driven scalar code. `pow_f64` is fdlibm's double-double algorithm, a serial chain
//! of about 70 operations and two divisions per element, which a vector loop cannot hide.
//!
//! Fallbacks: `sin` and `cos` of a finite argument of magnitude at least 2^26 (f32) or 2^20
//! (f64) need Payne-Hanek reduction; those lanes call `std` (see Note [Huge sin/cos
//! arguments]). Nothing else falls back.
//!
//! The f64 algorithms are derived from fdlibm, which carries this notice:
//! Copyright (C) 1993, 2004 by Sun Microsystems, Inc. All rights reserved. Permission to use,
//! copy, modify, and distribute this software is freely granted, provided that this notice
//! is preserved.
//!
//! Not handled: other functions of `prim::math`; non-default floating-point environments
//! (rounding modes, exception flags: none are raised deliberately).

// Note [Branch-free selects]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A loop over a slice that calls one of these functions vectorises only if the inlined body
// has no control flow. So every data-dependent choice is written `if c { a } else { b }`
// on two values that were both computed, which LLVM turns into a compare and a blend; both
// sides are always evaluated, so they must not trap or panic on any input. In particular
// integer arithmetic on bits derived from a NaN or a huge argument uses wrapping operations
// (debug builds check overflow), and float-to-integer conversions are done with the
// `ROUND_SHIFT` trick instead of `as`, which would saturate (slow) and does not vectorise on
// AVX2 for 64-bit integers. For the same reason conditions are float compares, and 64-bit
// integer lanes see only additions, masks and logical shifts: 64-bit compares and
// arithmetic shifts are missing from SSE2 (and the latter from AVX2); 32-bit lanes (the
// f32 `exp`) may shift arithmetically. The f64 kernels use no `mul_add`: without an FMA
// unit it is a libm call; the f32 `exp`, `log`, `tanh` and small `sin`/`cos` do, and their
// slice functions are compiled for FMA (Note [exp in f32]). `mul_add` is exactly rounded and
// Rust never contracts `a * b + c` into an FMA, so a vectorised loop and a scalar call compute
// the same bits on every x86-64 build.

// Note [f32 via f64]
// ~~~~~~~~~~~~~~~~~~
// The f32 functions other than `exp`, `log` and `tanh` (Notes [exp in f32], [log in f32],
// [tanh in f32]) and `sin` and `cos` of small arguments (Note [sin and cos of small f32])
// widen to f64, evaluate kernels whose error is at most 2^-33 relative, and
// round once to f32, so they are within 0.5 + 2^-9 ulp of the true value. Widening makes
// the f32 subnormals normal and keeps intermediate overflow away, so the f32 special cases
// reduce to a few selects. It costs half the vector width of f32 arithmetic but avoids the
// double-float tricks that a 1-ulp f32-only `pow` or `sin` would need.

// Note [exp in f32]
// ~~~~~~~~~~~~~~~~~
// `exp` was the first f32 function computed in f32 arithmetic: it is the most common function
// in array programs (softmax, logsumexp, their gradients), and twice the lanes per vector
// (16 instead of 8 with AVX-512) make its loops twice as fast. Its integer lanes are 32-bit,
// where arithmetic shifts exist on every x86-64 (Note [Branch-free selects]). `x = n ln2 + r` with `|r| <= ln(2)/2`
// (Cody-Waite with ln 2 in two parts, so `r` carries a single rounding), `e^r = 1 + (r +
// r^2 P(r))` so that the last addition rounds the result once, and `2^n` applied in two
// exact-then-rounding steps. The error bound adds the rounding of `r` (1/2 ulp of `r`, at
// most 1/4 ulp of the result), the inner sum (1/8 ulp), the final addition (1/2 ulp) and
// the fit (2^-4 ulp). Over every f32 input (`examples/vmath_exhaustive.rs`) the result is at
// most 1 ulp from glibc's `expf` and from the correctly rounded value.
//
// The reduction's second step, Horner's steps and `r + r^2 P` are fused multiply-adds
// (`mul_add`): one rounding each instead of two, and one instruction where the machine has
// FMA (x86-64 since Haswell; the build targets the host's CPU, `.cargo/config.toml`). A
// line of `exp (x - m)` then costs 0.21 ns per element instead of 0.31-0.33 (1000 floats
// in L1, a scratch crate). `mul_add` is exactly rounded on every target, so the bits do not
// depend on the machine. A build that does not assume FMA would call libm's `fmaf` for
// each of them (20 ns an element, measured); the slice functions the engine calls are
// therefore also compiled for FMA and AVX2 and chosen at run time when the CPU has them
// (`with_fma`: 0.20 ns an element in such a build). The per-element `exp_f32` of the
// reference interpreter stays as the build compiles it.

// Note [tanh in f32]
// ~~~~~~~~~~~~~~~~~~
// `tanh` is the MLP's activation, so it too is computed in f32 lanes with fused
// multiply-adds (the f64 version cost 1.3 ns an element on one core, its f64 division
// alone half of that; this one 0.56-0.61, a scratch crate). With `a = |x|`:
// - `a < 0.55`: `a + a^3 T(a^2)`, `T` of degree 4 (relative error of `tanh` 2^-29.8, a
//   least-squares fit reweighted toward minimax, for this file); the correction is at most
//   a tenth of the result, so its roundings cost little.
// - else `1 - q` with `q = 2/(e^(2a) + 1) <= 1/2` (`0.55 > atanh(1/2)`). `e^(2a) = 2^n (1 +
//   s)` from the exp kernel of Note [exp in f32], kept unevaluated so that the denominator
//   `2^n s + (2^n + 1)` rounds once (`2^n + 1` is exact while it matters: `n <= 23`);
//   `q` then errs by under 2.5 units of 2^-24 relative, at most 0.6 ulp of the result, and
//   the subtraction adds half an ulp. `2a` is clamped to 20 (`tanh(10)` rounds to 1), NaN
//   kept.
// Over every f32 (`examples/vmath_exhaustive.rs tanh`): at most 1 ulp from `tanh` computed
// in f64 and rounded, at most 2 ulp from glibc's `tanhf` (whose own error reaches 1-2 ulp,
// Note [tanh accuracy]). The slice function is chosen at run time like exp's (`with_fma`).

// Note [log in f32]
// ~~~~~~~~~~~~~~~~~
// `log` is the loss function's last step (cross-entropy, the KL terms of nnmf) and the
// gradient of `log` is a division, so a line of `log` ran at the speed of its f64 kernel
// (0.53 ns an element, half the lanes and a division each). In f32 lanes with fused
// multiply-adds and no division it costs 0.21 ns (lines of 1024 floats in L1). `x = 2^k (1
// + f)` with `1 + f` in `[sqrt(1/2), sqrt(2))`, read off the bits by moving the exponent's
// threshold from 1 to sqrt(1/2) (an integer addition); `f` is exact (Sterbenz). Then
// `log(1 + f) = f - f^2/2 + f^3 P(f)` (`P` of degree 7, relative error 2^-27), with `k ln
// 2` in Cody-Waite's two parts: the small terms are summed first, then `f`, then `k *
// LN2_HI_F32` (exact), so that the rounding errors of everything but the last two sums are
// small next to the result. Subnormal `x` are scaled by 2^23 (exactly) and `k` corrected;
// zero, negative, infinite and NaN arguments are patched by selects. The slice function
// computes the normal range in one pass and falls back to the full function when a lane is
// not normal, as exp's does (Note [exp on the normal range]). Over every f32
// (`examples/vmath_exhaustive.rs log`): at most 1 ulp from glibc's `logf` and from the
// correctly rounded value, and the slice gives the per-element bits.

// Note [exp on the normal range]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Where `e^x` is normal, `exp_f32_impl`'s clamp changes nothing and both of its scalings by
// powers of two are exact, so `p * 2^n` is `p` with `n` added to its exponent field: one
// integer addition instead of two multiplications, two exponent constructions and the
// clamp. That holds for `n` in `[-125, 127]` (`p >= 0.7`, so `p * 2^-125` is normal; `p <
// 1.42`, so `p * 2^127` is finite), that is for `x` in `[-86.5, 88.0]` (`EXP_F32_NORMAL`;
// NaN is outside). `exp_f32_slice` computes every lane that way while it checks that every
// `x` is in range, and recomputes the slice with `exp_f32_impl` when one is not; the result
// has the same bits either way, and the per-element `exp_f32` (the reference interpreter's)
// stays as it is. Measured alone on lines of 1024 floats: 0.82 -> 0.62 ns per element (a
// separate range check before the loop, instead of one inside it: 0.75).
// `examples/vmath_exhaustive.rs` checks the slice against the per-element function on every
// f32, in slices of 1024.

// Note [tanh accuracy]
// ~~~~~~~~~~~~~~~~~~~~
// glibc's `tanh` and `tanhf` (fdlibm's formula `-t/(t+2)`, `t = expm1(-2|x|)`) are up to
// about 2 ulp from the true value for |x| < 1. Two results are within 2 ulp of each other
// whenever their errors add up to less than 3 ulp. `tanh_f64` evaluates the correction
// `a^3 R(a^2)` of the small branch, which is at most 3% of the result, in plain f64, and
// the large branch in double-double arithmetic; both are then within about 0.6 ulp.
// `tanh_f32` (Note [tanh in f32]) is within 1 ulp of the correctly rounded value; that the
// two errors never add up to 3 ulp is not a bound but a fact of the exhaustive check
// (`examples/vmath_exhaustive.rs tanh`: at most 2 ulp from glibc 2.36's `tanhf`), to be run
// again when either changes.

// Note [sin and cos of small f32]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Widened to f64 (Note [f32 via f64]), `sin` cost 1.45 ns an element in a simulation's
// kernel, half of its time: four lanes a vector, the conversions, and both polynomials. Most
// arguments in array programs are small (angles, activations, phases), and for those the same
// polynomials in f32 lanes with fused multiply-adds are within 1 ulp of the correctly
// rounded value, at twice the lanes a vector (state_sim's primal, 10^7 `sin`s: 41 -> 33 ms;
// docs/performance.md). So for `|x| <= 8`
// (`SINCOS_F32_SMALL`, about 2.5 pi) `sin_f32` and `cos_f32` compute in f32:
// - `n = round(x 2/pi)` by the shift of `round_to_int_f32`; `n <= 5`.
// - `x - n pi/2 = hi + lo`, with pi/2 in the four parts of `PIO2_F32_CW`. The first two
//   products and subtractions are exact (the first subtraction by Sterbenz's lemma, the
//   second because `x` and `n` times the first two parts are multiples of 2^-24 and the
//   difference is below 1). `n P3` is rounded and its error recovered exactly by a fused
//   multiply-add, the subtraction is Knuth's two-sum (its rounding error exact too), and the
//   fourth part joins the low part. A one-part `r` would carry two roundings, up to an ulp
//   of the result on their own. The fourth part matters too: with Cephes' three alone, pi/2
//   is off by 1.7e-15, which near `3 pi/2` (`x = 4.712389`, `r = 1.2e-8`) is 6 ulp of `cos`.
// - The polynomials of the f64 kernel, evaluated by fused Horner steps: `z = r^2` with `lo`'s
//   first-order term, `hi + ((hi z) S(z) + lo)` and `1 + z C(z)`, each rounding once at the
//   end; the quadrant flips the sign bit. The coefficients are rounded to f32 except the
//   leading ones, which are each two f32 (`split_f32`): rounded, `-1/6` and `-1/2` move every
//   result the same way by up to 0.05 ulp, and a bias adds up where errors otherwise cancel
//   (the norm of a wave packet after 240 f32 FFTs, whose twiddles are `sin` and `cos`, drifted
//   by 1.06e-5 with them rounded, by 2.4e-6 split, by 5e-6 with the f64 kernel). A sweep of
//   [0.001, 8) (every 97th f32) finds 1.4 % of the `sin` and 1.5 % of the `cos` results one
//   ulp from the correctly rounded value, as many too large as too small (with `r` in one
//   part: 3.7 % and 6.2 %), the rest correctly rounded; the f64 kernel rounds correctly
//   almost everywhere.
// Beyond 8 an f32 reduction loses to cancellation near multiples of pi/2 (measured with
// Cephes' three parts and `r` in one f32: 6 ulp at `3 pi`, over 600 at 505.8, where `n` times
// the third part is no longer exact), so those lanes keep the f64 kernel. A slice computes
// every lane in f32 while it checks that all are small, and recomputes the slice with the
// select of both kernels when one is not (as Note [exp on the normal range] does); the
// per-element function branches to the one kernel its argument needs. Both give the same bits. Over
// every f32 (`examples/vmath_exhaustive.rs sin cos`): at most 1 ulp from glibc's `sinf` and
// `cosf` and from the correctly rounded value, and the slice gives the per-element bits.

// Note [Huge sin/cos arguments]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The Cody-Waite reduction `r = x - n pi/2` is exact enough only while `n` times each part
// of pi/2 is exact: `|x| < 2^26` for f32 (parts of 27, 25 and 53 bits, computed in f64) and
// `|x| < 2^20` for f64 (fdlibm's parts of 33 bits). Larger finite arguments need the bits of
// 2/pi far beyond 53 (Payne-Hanek), which is table lookups and long multiplications per
// element. Those lanes call `std`'s `sin`/`cos` instead: the per-element function branches
// to a cold fallback, and the slice function runs the vectorised path over the whole slice
// and then overwrites the rare lanes in a second, scalar pass. Infinities and NaN stay on
// the fast path, which gives NaN.

use std::f64::consts::{FRAC_2_PI, LOG2_E};

// ---------------------------------------------------------------------------------------
// Per-element functions.
// ---------------------------------------------------------------------------------------

/// `e^x` for f32, within 2 ulp of `f32::exp` (in fact at most 1 ulp from it and from the
/// correctly rounded value).
#[inline]
pub fn exp_f32(x: f32) -> f32 {
    exp_f32_impl(x)
}

/// `e^x` for f64, within 2 ulp of `f64::exp`.
#[inline]
pub fn exp_f64(x: f64) -> f64 {
    exp_f64_impl(x)
}

/// Natural logarithm for f32, within 2 ulp of `f32::ln`.
#[inline]
pub fn log_f32(x: f32) -> f32 {
    log_f32_impl(x)
}

/// Natural logarithm for f64, within 2 ulp of `f64::ln`.
#[inline]
pub fn log_f64(x: f64) -> f64 {
    log_f64_impl(x)
}

/// Hyperbolic tangent for f32, within 2 ulp of `f32::tanh`.
#[inline]
pub fn tanh_f32(x: f32) -> f32 {
    tanh_f32_impl(x)
}

/// Hyperbolic tangent for f64, within 2 ulp of `f64::tanh`.
#[inline]
pub fn tanh_f64(x: f64) -> f64 {
    tanh_f64_impl(x)
}

/// Sine for f32, within 2 ulp of `f32::sin`. Branches to `std` for `|x| >= 2^26`; use
/// `sin_f32_slice` in loops. See Note [Huge sin/cos arguments].
#[inline]
pub fn sin_f32(x: f32) -> f32 {
    sincos_f32(x, false)
}

/// Cosine for f32, within 2 ulp of `f32::cos`. Branches to `std` for `|x| >= 2^26`; use
/// `cos_f32_slice` in loops. See Note [Huge sin/cos arguments].
#[inline]
pub fn cos_f32(x: f32) -> f32 {
    sincos_f32(x, true)
}

/// Sine for f64, within 2 ulp of `f64::sin`. Branches to `std` for `|x| >= 2^20`; use
/// `sin_f64_slice` in loops. See Note [Huge sin/cos arguments].
#[inline]
pub fn sin_f64(x: f64) -> f64 {
    sincos_f64(x, false)
}

/// Cosine for f64, within 2 ulp of `f64::cos`. Branches to `std` for `|x| >= 2^20`; use
/// `cos_f64_slice` in loops. See Note [Huge sin/cos arguments].
#[inline]
pub fn cos_f64(x: f64) -> f64 {
    sincos_f64(x, true)
}

/// `x^y` for f32 with C99's special cases, within 2 ulp of `f32::powf`.
#[inline]
pub fn pow_f32(x: f32, y: f32) -> f32 {
    pow_f32_impl(x, y)
}

/// `x^y` for f64 with C99's special cases, within 2 ulp of `f64::powf`.
#[inline]
pub fn pow_f64(x: f64, y: f64) -> f64 {
    pow_f64_impl(x, y)
}

// ---------------------------------------------------------------------------------------
// Slice functions.
// ---------------------------------------------------------------------------------------

macro_rules! unary_slice {
    ($(#[$doc:meta] $name:ident, $ty:ty, $impl_fn:ident;)*) => {$(
        #[$doc]
        pub fn $name(xs: &[$ty], out: &mut [$ty]) {
            debug_assert_eq!(xs.len(), out.len(), "input and output lengths differ");
            for (res, &x) in out.iter_mut().zip(xs) {
                *res = $impl_fn(x);
            }
        }
    )*};
}

/// `out[i] = exp_f32(xs[i])`, vectorised; one pass when every `x` is in `EXP_F32_NORMAL`
/// (Note [exp on the normal range]).
pub fn exp_f32_slice(xs: &[f32], out: &mut [f32]) {
    debug_assert_eq!(xs.len(), out.len(), "input and output lengths differ");
    let xs = &xs[..out.len()];
    with_fma(
        #[inline(always)]
        || exp_f32_of(out, || xs.iter().copied()),
    );
}

/// `out[i] = exp_f32(xs[i] - ys[i])`, the difference rounded to `f32` first (so the bits of
/// `exp (x - y)` computed in two passes), in one vectorised pass; an operand of one element
/// stands for every point. A softmax's `exp (x - max x)`.
pub fn exp_of_difference_f32(xs: &[f32], ys: &[f32], out: &mut [f32]) {
    with_fma(
        #[inline(always)]
        || exp_of_difference_f32_in(xs, ys, out),
    );
}

/// `$body` with `$difference` bound to a maker of the iterator of `xs[i] - ys[i]` over `$n`
/// points, where an operand of one element stands for every point: an iterator type (a loop
/// to vectorise) for each case of splats, not a test at every point.
macro_rules! by_difference {
    ($xs:expr, $ys:expr, $n:expr, |$difference:ident| $body:expr) => {{
        let n = $n;
        match ($xs, $ys) {
            (&[x], &[y]) => {
                let $difference = || std::iter::repeat_n(x - y, n);
                $body
            }
            (xs, &[y]) => {
                let xs = &xs[..n];
                let $difference = || xs.iter().map(move |&x| x - y);
                $body
            }
            (&[x], ys) => {
                let ys = &ys[..n];
                let $difference = || ys.iter().map(move |&y| x - y);
                $body
            }
            (xs, ys) => {
                let (xs, ys) = (&xs[..n], &ys[..n]);
                let $difference = || xs.iter().zip(ys).map(|(&x, &y)| x - y);
                $body
            }
        }
    }};
}

#[inline(always)]
fn exp_of_difference_f32_in(xs: &[f32], ys: &[f32], out: &mut [f32]) {
    by_difference!(xs, ys, out.len(), |difference| exp_f32_of(out, difference));
}

/// `out[i] = exp_f64(xs[i] - ys[i])`, as [`exp_of_difference_f32`].
pub fn exp_of_difference_f64(xs: &[f64], ys: &[f64], out: &mut [f64]) {
    by_difference!(xs, ys, out.len(), |difference| {
        for (res, x) in out.iter_mut().zip(difference()) {
            *res = exp_f64_impl(x);
        }
    });
}

/// `f()`, compiled with fused multiply-adds (and AVX2) when the build does not assume them but
/// the CPU has them (Note [exp in f32]): the `mul_add`s of the f32 `exp` and `tanh` are then
/// instructions, not calls of libm's `fmaf`. The bits are the same either way.
#[inline(always)]
fn with_fma<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(all(target_arch = "x86_64", not(target_feature = "fma")))]
    if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2,fma")]
        fn fused<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // SAFETY: the CPU has the features `fused` is compiled for (detected above).
        return unsafe { fused(f) };
    }
    f()
}

// Note [Slices by iterators]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The exp loops took their arguments through a closure of the index (`|i| xs[i] - y`). Timed,
// that loop behaved as if LLVM's vector loop always left its last iterations to a scalar
// epilogue (the hot code of a profile on rows of 64 was scalar): a slice whose length is a
// multiple of 32 cost as if its last 32 points were scalar, shorter ones as if all were. One
// core, ns per point for lengths 16 / 64 / 100 / 128 / 1024 / 4096: 1.86 / 1.14 / 0.28 /
// 0.65 / 0.25 / 0.22. Zipping the output with an iterator of the arguments instead:
// 0.51 / 0.23 / 0.25 / 0.23 / 0.22 / 0.21. A row-wise `logsumexp` over rows of 64 points
// took 28 % less time. The bits are the same: each point is the same function of its
// argument (`slices_of_every_length_give_the_per_element_bits`).

/// `out[i] = exp_f32(args()[i])`: one pass when every argument is in `EXP_F32_NORMAL` (Note
/// [exp on the normal range]), else a second pass with the full function; `args` makes the
/// iterator of the arguments for each pass (Note [Slices by iterators]).
#[inline(always)]
fn exp_f32_of<I: Iterator<Item = f32>>(out: &mut [f32], args: impl Fn() -> I) {
    in_range_or_full(out, args, EXP_F32_NORMAL, exp_f32_normal, exp_f32_impl);
}

/// `out[i] = fast(x)` for the arguments `x` of `args()` when every one is in `range`, else a
/// second pass of `out[i] = full(x)`: a function whose lanes of a common range skip its
/// special cases (Note [exp on the normal range]) with the same bits as `full` there.
#[inline(always)]
fn in_range_or_full<I: Iterator<Item = f32>>(
    out: &mut [f32],
    args: impl Fn() -> I,
    range: (f32, f32),
    fast: impl Fn(f32) -> f32,
    full: impl Fn(f32) -> f32,
) {
    let mut in_range = true;
    for (res, x) in out.iter_mut().zip(args()) {
        in_range &= (x >= range.0) & (x <= range.1);
        *res = fast(x);
    }
    if !in_range {
        for (res, x) in out.iter_mut().zip(args()) {
            *res = full(x);
        }
    }
}

/// `out[i] = tanh_f32(xs[i])`, vectorised (Note [tanh in f32]).
pub fn tanh_f32_slice(xs: &[f32], out: &mut [f32]) {
    debug_assert_eq!(xs.len(), out.len(), "input and output lengths differ");
    let xs = &xs[..out.len()];
    with_fma(
        #[inline(always)]
        || {
            for (res, &x) in out.iter_mut().zip(xs) {
                *res = tanh_f32_impl(x);
            }
        },
    );
}

/// `out[i] = log_f32(xs[i])`, vectorised; one pass when every `x` is positive, normal and
/// finite (Note [log in f32]).
pub fn log_f32_slice(xs: &[f32], out: &mut [f32]) {
    slice_in_range_or_full(xs, out, LOG_F32_NORMAL, log_f32_normal, log_f32_impl);
}

/// `out[i] = fast(xs[i])` when every `xs[i]` is in `range`, else `full(xs[i])`
/// (`in_range_or_full`), compiled with fused multiply-adds (`with_fma`).
#[inline(always)]
fn slice_in_range_or_full(
    xs: &[f32],
    out: &mut [f32],
    range: (f32, f32),
    fast: impl Fn(f32) -> f32,
    full: impl Fn(f32) -> f32,
) {
    debug_assert_eq!(xs.len(), out.len(), "input and output lengths differ");
    let xs = &xs[..out.len()];
    with_fma(
        #[inline(always)]
        || in_range_or_full(out, || xs.iter().copied(), range, fast, full),
    );
}

unary_slice! {
    /// `out[i] = exp_f64(xs[i])`, vectorised.
    exp_f64_slice, f64, exp_f64_impl;
    /// `out[i] = log_f64(xs[i])`, vectorised.
    log_f64_slice, f64, log_f64_impl;
    /// `out[i] = tanh_f64(xs[i])`, vectorised.
    tanh_f64_slice, f64, tanh_f64_impl;
}

macro_rules! sincos_slice {
    ($($(#[$doc:meta])* $name:ident, $ty:ty, $both:ident, $is_cos:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(xs: &[$ty], out: &mut [$ty]) {
            $both(xs, out, $is_cos);
        }
    )*};
}

sincos_slice! {
    /// `out[i] = sin_f32(xs[i])`, vectorised except for `|x| >= 2^26` (Note [sin and cos of
    /// small f32]).
    sin_f32_slice, f32, sincos_f32_slice, false;
    /// `out[i] = cos_f32(xs[i])`, vectorised except for `|x| >= 2^26`.
    cos_f32_slice, f32, sincos_f32_slice, true;
    /// `out[i] = sin_f64(xs[i])`, vectorised except for `|x| >= 2^20`.
    sin_f64_slice, f64, sincos_f64_slice, false;
    /// `out[i] = cos_f64(xs[i])`, vectorised except for `|x| >= 2^20`.
    cos_f64_slice, f64, sincos_f64_slice, true;
}

/// The slices of `sin_f32` (`is_cos` false) and `cos_f32`: one pass of the f32 kernel while
/// every argument is small, else a pass of the select of both kernels and the fix-ups of
/// Note [Huge sin/cos arguments].
#[inline(always)]
fn sincos_f32_slice(xs: &[f32], out: &mut [f32], is_cos: bool) {
    let small = |x| sincos_f32_small(x, is_cos);
    let full = |x| sincos_f32_select(x, is_cos);
    slice_in_range_or_full(xs, out, SINCOS_F32_SMALL, small, full);
    let xs = &xs[..out.len()];
    let fallback = |x| sincos_f32_fallback(x, is_cos);
    fix_huge_arguments(xs, out, sincos_f32_needs_fallback, fallback);
}

/// The slices of `sin_f64` (`is_cos` false) and `cos_f64`: the vectorised pass, then the
/// fix-ups of Note [Huge sin/cos arguments].
#[inline(always)]
fn sincos_f64_slice(xs: &[f64], out: &mut [f64], is_cos: bool) {
    debug_assert_eq!(xs.len(), out.len(), "input and output lengths differ");
    let xs = &xs[..out.len()];
    for (res, &x) in out.iter_mut().zip(xs) {
        *res = sincos_f64_fast(x, is_cos);
    }
    let fallback = |x| sincos_f64_fallback(x, is_cos);
    fix_huge_arguments(xs, out, sincos_f64_needs_fallback, fallback);
}

/// Overwrites `out[i]` with `fallback(xs[i])` where `needs(xs[i])` (Note [Huge sin/cos
/// arguments]): a vectorised scan first, so that the usual slice skips the scalar pass.
#[inline(always)]
fn fix_huge_arguments<T: Copy>(
    xs: &[T],
    out: &mut [T],
    needs: impl Fn(T) -> bool,
    fallback: impl Fn(T) -> T,
) {
    if xs.iter().fold(false, |any, &x| any | needs(x)) {
        for (res, &x) in out.iter_mut().zip(xs) {
            if needs(x) {
                *res = fallback(x);
            }
        }
    }
}

macro_rules! binary_slice {
    ($(#[$doc:meta] $name:ident, $ty:ty, $impl_fn:ident;)*) => {$(
        #[$doc]
        pub fn $name(xs: &[$ty], ys: &[$ty], out: &mut [$ty]) {
            debug_assert!(
                xs.len() == out.len() && ys.len() == out.len(),
                "slice lengths differ"
            );
            for ((res, &x), &y) in out.iter_mut().zip(xs).zip(ys) {
                *res = $impl_fn(x, y);
            }
        }
    )*};
}

binary_slice! {
    /// `out[i] = pow_f32(xs[i], ys[i])`, vectorised.
    pow_f32_slice, f32, pow_f32_impl;
    /// `out[i] = pow_f64(xs[i], ys[i])`, vectorised.
    pow_f64_slice, f64, pow_f64_impl;
}

// ---------------------------------------------------------------------------------------
// Shared helpers.
// ---------------------------------------------------------------------------------------

/// `sin`/`cos` of huge arguments for `$ty` (Note [Huge sin/cos arguments]): `$needs(x)`,
/// whether `x` is finite and at least `$huge` (`$huge_text`) in magnitude, and `$fallback(x,
/// is_cos)`, `std`'s `sin(x)` (or `cos(x)` when `is_cos`) for those.
macro_rules! huge_sincos {
    ($ty:ident, $needs:ident, $fallback:ident, $huge:expr, $huge_text:literal) => {
        #[doc = concat!(
                    "Whether `sin`/`cos` of `x` needs the `std` fallback: finite and `|x| >= ",
                    $huge_text,
                    "`."
                )]
        #[inline(always)]
        fn $needs(x: $ty) -> bool {
            let abs_x = x.abs();
            abs_x >= $huge && abs_x != $ty::INFINITY
        }

        /// `std`'s `sin(x)` (or `cos(x)` when `is_cos`): Note [Huge sin/cos arguments].
        #[cold]
        #[inline(never)]
        fn $fallback(x: $ty, is_cos: bool) -> $ty {
            if is_cos {
                x.cos()
            } else {
                x.sin()
            }
        }
    };
}

/// `$res`, the logarithm of `$x` computed for `$x` in `(0, inf)`, with the values outside
/// patched in: log(+inf) = +inf, log(±0) = -inf, NaN for negatives and NaN. The finiteness
/// test `x * 0 == 0` keeps LLVM from merging the compares into an integer class test, which
/// is slow on plain x86-64.
macro_rules! log_outside_domain {
    ($ty:ident, $x:expr, $res:expr) => {{
        let (x, res): ($ty, $ty) = ($x, $res);
        let special = if x > 0.0 { x } else { $ty::NAN };
        let special = if x == 0.0 { $ty::NEG_INFINITY } else { special };
        if (x > 0.0) & (x * 0.0 == 0.0) {
            res
        } else {
            special
        }
    }};
}

/// `$res`, the value of `pow($x, $y)` away from C99's special cases (with `$y`'s
/// `int_parity`), with those cases patched in from the least to the most binding; `$exact`
/// may patch in exact shortcuts of its own just before NaN operands and `pow(1, y)`,
/// `pow(x, ±0)`, which bind most.
macro_rules! pow_special_cases {
    ($ty:ident, $x:expr, $y:expr, $parity:expr, $res:expr) => {
        pow_special_cases!($ty, $x, $y, $parity, $res, |res| res)
    };
    ($ty:ident, $x:expr, $y:expr, $parity:expr, $res:expr, |$r:ident| $exact:expr) => {{
        let (x, y, res): ($ty, $ty, $ty) = ($x, $y, $res);
        let (y_is_int, y_is_odd): (bool, bool) = $parity;
        let abs_x = x.abs();
        let res = if x < 0.0 && abs_x != $ty::INFINITY && !y_is_int {
            $ty::NAN
        } else {
            res
        };
        let zero_or_inf = if (abs_x == $ty::INFINITY) == (y > 0.0) {
            $ty::INFINITY
        } else {
            0.0
        };
        let zero_or_inf = if x.is_sign_negative() && y_is_odd {
            -zero_or_inf
        } else {
            zero_or_inf
        };
        let res = if abs_x == 0.0 || abs_x == $ty::INFINITY {
            zero_or_inf
        } else {
            res
        };
        let inf_exponent = if abs_x == 1.0 {
            1.0
        } else if (abs_x > 1.0) == (y > 0.0) {
            $ty::INFINITY
        } else {
            0.0
        };
        let $r = if y.abs() == $ty::INFINITY {
            inf_exponent
        } else {
            res
        };
        let res = $exact;
        let res = if x.is_nan() || y.is_nan() { x + y } else { res };
        if x == 1.0 || y == 0.0 {
            1.0
        } else {
            res
        }
    }};
}

/// 1.5 * 2^52. For `|v| < 2^51`, `(v + ROUND_SHIFT) - ROUND_SHIFT` is `v` rounded to the
/// nearest integer (ties to even), and the bits of `v + ROUND_SHIFT` minus those of
/// `ROUND_SHIFT` are that integer.
const ROUND_SHIFT: f64 = 6755399441055744.0;

/// `$name(v)`: `v` rounded to the nearest integer by adding and removing `$shift` (1.5 times
/// the float type's `2^mantissa_bits`), as a float and as the integer of the float's width.
macro_rules! round_to_int {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $int:ty, $shift:ident) => {
        $(#[$doc])*
        #[inline(always)]
        fn $name(v: $ty) -> ($ty, $int) {
            let shifted = v + $shift;
            let int = (shifted.to_bits() as $int).wrapping_sub($shift.to_bits() as $int);
            (shifted - $shift, int)
        }
    };
}

round_to_int! {
    /// Returns `v` rounded to the nearest integer, as an f64 and as an i64. Exact for
    /// `|v| < 2^51`; any other input gives unspecified values without panicking.
    round_to_int, f64, i64, ROUND_SHIFT
}

/// `n as f64` for `|n| < 2^51`, written so that it vectorises without AVX-512.
#[inline(always)]
fn int_to_f64(n: i64) -> f64 {
    f64::from_bits((ROUND_SHIFT.to_bits() as i64).wrapping_add(n) as u64) - ROUND_SHIFT
}

/// `2^n` for `-1022 <= n <= 1023`; other `n` give unspecified values without panicking.
#[inline(always)]
fn pow2i(n: i64) -> f64 {
    f64::from_bits((n.wrapping_add(1023) as u64) << 52)
}

/// `v * 2^n` with a single rounding, for `v` in `[0.5, 2)` and `-1075 <= n <= 1024`: the
/// first product is exact, so a subnormal result is rounded once. The halves of `n` come
/// from the biased `n + 2046 >= 0` by a logical shift, as 64-bit arithmetic shifts need
/// AVX-512.
#[inline(always)]
fn scale_by_pow2(v: f64, n: i64) -> f64 {
    let biased = n.wrapping_add(2046) as u64;
    let first = biased >> 1;
    v * f64::from_bits(first << 52) * f64::from_bits(biased.wrapping_sub(first) << 52)
}

/// `even` or `odd` by the low bit of `quadrant`, negated when its bit 1 is set: the
/// quadrant rule of sin and cos. Written with bit operations, as plain x86-64 has no 64-bit
/// compares.
#[inline(always)]
fn by_quadrant(quadrant: i64, even: f64, odd: f64) -> f64 {
    let quadrant = quadrant as u64;
    let odd_mask = 0u64.wrapping_sub(quadrant & 1);
    let bits = (odd.to_bits() & odd_mask) | (even.to_bits() & !odd_mask);
    f64::from_bits(bits ^ ((quadrant & 2) << 62))
}

/// `v` with the low 32 bits of its representation cleared (fdlibm's `SET_LOW_WORD(v, 0)`).
#[inline(always)]
fn clear_low_word(v: f64) -> f64 {
    f64::from_bits(v.to_bits() & 0xffff_ffff_0000_0000)
}

/// Evaluates `coeffs[0] + coeffs[1] v + ...` by Horner's rule (in f64 or in f32).
#[inline(always)]
fn horner<T, const N: usize>(v: T, coeffs: &[T; N]) -> T
where
    T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    let mut acc = coeffs[N - 1];
    for &coeff in coeffs[..N - 1].iter().rev() {
        acc = acc * v + coeff;
    }
    acc
}

/// `horner` with a fused multiply-add per step (one rounding each; Note [exp in f32]).
#[inline(always)]
fn horner_fused_f32<const N: usize>(v: f32, coeffs: &[f32; N]) -> f32 {
    let mut acc = coeffs[N - 1];
    for &coeff in coeffs[..N - 1].iter().rev() {
        acc = acc.mul_add(v, coeff);
    }
    acc
}

/// `a + b` as `(sum, err)` with `sum + err == a + b` exactly, given `|a| >= |b|` (Dekker).
#[inline(always)]
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let sum = a + b;
    (sum, b - (sum - a))
}

/// `a + b` as `(sum, err)` with `sum + err == a + b` exactly, for any order (Knuth).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let sum = a + b;
    let b_virtual = sum - a;
    let a_virtual = sum - b_virtual;
    (sum, (a - a_virtual) + (b - b_virtual))
}

/// Splits `v` into a high part of 26 bits and a low part, `hi + lo == v` (Veltkamp).
#[inline(always)]
fn split(v: f64) -> (f64, f64) {
    let scaled = 134217729.0 * v; // 2^27 + 1.
    let hi = scaled - (scaled - v);
    (hi, v - hi)
}

/// `a * b` as `(prod, err)` with `prod + err == a * b` exactly when nothing overflows or
/// underflows (Dekker's product, as there is no FMA to rely on).
#[inline(always)]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let prod = a * b;
    let (a_hi, a_lo) = split(a);
    let (b_hi, b_lo) = split(b);
    let err = ((a_hi * b_hi - prod) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
    (prod, err)
}

/// `$name(y)`: whether `y` is an integer, and whether it is an odd one, in the arithmetic of
/// `$ty` (so that the masks stay as wide as `y`). Infinities are even integers, NaN is
/// neither. `$all_int` is `2^mantissa_bits` (from there on every float is an integer) and
/// `$all_even` twice that (from there on every float is even).
macro_rules! int_parity {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $all_int:expr, $all_even:expr) => {
        $(#[$doc])*
        #[inline(always)]
        fn $name(y: $ty) -> (bool, bool) {
            const ALL_INT: $ty = $all_int;
            const ALL_EVEN: $ty = $all_even;
            let abs_y = y.abs();
            // Below `ALL_INT`, adding and removing it rounds to an integer; above, every
            // float is one.
            let is_int = abs_y >= ALL_INT || (abs_y + ALL_INT) - ALL_INT == abs_y;
            let half = 0.5 * abs_y;
            let half_is_int = (half + ALL_INT) - ALL_INT == half;
            (is_int, is_int && abs_y < ALL_EVEN && !half_is_int)
        }
    };
}

int_parity! {
    /// Whether `y` is an integer, and whether it is an odd one (2^52 and 2^53).
    int_parity, f64, 4503599627370496.0, 9007199254740992.0
}

int_parity! {
    /// `int_parity` for f32 (2^23 and 2^24).
    int_parity_f32, f32, 8388608.0, 16777216.0
}

// ---------------------------------------------------------------------------------------
// f32 kernels in f32 arithmetic. See Note [exp in f32].
// ---------------------------------------------------------------------------------------

/// 1.5 * 2^23, the f32 `ROUND_SHIFT`.
const ROUND_SHIFT_F32: f32 = 12582912.0;

round_to_int! {
    /// `round_to_int` in f32: exact for `|v| < 2^22`; any other input gives unspecified
    /// values without panicking.
    round_to_int_f32, f32, i32, ROUND_SHIFT_F32
}

/// ln 2 in two parts: `LN2_HI_F32` (355/512) has 9 significant bits, so `n * LN2_HI_F32` is
/// exact for `|n| < 2^15`; `LN2_LO_F32` is the rest.
const LN2_HI_F32: f32 = 355.0 / 512.0;
const LN2_LO_F32: f32 = -2.121_944_4e-4;

/// `P(r)` with `e^r = 1 + r + r^2 P(r)` for `|r| <= ln(2)/2 (1 + 2^-10)`, degree 4; relative
/// error of `e^r` 2^-28.3 (minimax fit of the relative error by a Remez exchange for this
/// file), far below the rounding errors of f32 arithmetic.
const EXPM1_F32: [f32; 5] = [0.49999994, 0.1666652, 0.041668393, 0.008368779, 0.001381447];

/// `2^n` as an f32 for `-126 <= n <= 127`; other `n` give unspecified values without
/// panicking.
#[inline(always)]
fn pow2i_f32(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

// ---------------------------------------------------------------------------------------
// f32 kernels, computed in f64. See Note [f32 via f64].
// ---------------------------------------------------------------------------------------

/// `2^r` on `[-1/2, 1/2]`, degree 7; relative error 2^-34.5 after rounding the coefficients.
const EXP2_F32: [f64; 8] = [
    0.9999999999616819,
    0.693147180728447,
    0.24022651198157585,
    0.05550410353447979,
    0.00961802725366845,
    0.001333392256353898,
    0.00015469291141688513,
    1.5201921594525978e-05,
];

/// `P(f)` with `log(1 + f) = f - f^2/2 + f^3 P(f)` for `f` in `[sqrt(1/2) - 1, sqrt(2) - 1]`,
/// degree 7; relative error of `log(1 + f)` 2^-27.0 (a minimax fit of the relative error by
/// Lawson's iteration in numpy, for this file, rounded to f32).
const LOG1P_F32: [f32; 8] = [
    0.333_333_16,
    -0.250_008_1,
    0.200_022_86,
    -0.166_245_5,
    0.141_812_09,
    -0.131_288_1,
    0.128_815_44,
    -0.078_593_36,
];

/// `Q(z)` with `2 atanh(s) = 2s + s^3 Q(s^2)` for `|s| <= (sqrt(2) - 1)/(sqrt(2) + 1)`,
/// degree 4; relative error of `2 atanh(s)` 2^-44.9 (the f64 kernel of `pow_f32`).
const LOG_F32: [f64; 5] = [
    0.666666666757688,
    0.3999999563278611,
    0.2857210800222985,
    0.22176236706674984,
    0.1958346528462133,
];

/// `S(z)` with `sin(r) = r + r^3 S(r^2)` for `|r| <= pi/4 (1 + 2^-20)`, degree 3; relative
/// error 2^-37.5.
const SIN_F32: [f64; 4] = [
    -0.16666666640796848,
    0.008333329304819495,
    -0.00019839312261990736,
    2.7181215560006227e-06,
];

/// `C(z)` with `cos(r) = 1 + r^2 C(r^2)` for `|r| <= pi/4 (1 + 2^-20)`, degree 3; relative
/// error 2^-33.9.
const COS_F32: [f64; 4] = [
    -0.4999999969447358,
    0.04166662035685946,
    -0.0013886681639399422,
    2.4383566504155283e-05,
];

/// `T(z)` with `tanh(a) = a + a^3 T(a^2)` for `a < 0.55`, degree 4; relative error of
/// `tanh` 2^-29.8 (Note [tanh in f32]).
const TANH_F32: [f32; 5] = [
    -0.333_333_16,
    0.133_325_86,
    -0.053_852_31,
    0.021_071_68,
    -0.006_274_24,
];

/// `2^t` for any f64 `t` (f32 accuracy): `t = n + r`, then the `EXP2_F32` polynomial.
/// Arguments are clamped to `[-200, 200]`, far beyond the f32 range, so that `2^n` is a
/// normal f64; NaN stays NaN.
#[inline(always)]
fn exp2_f32_kernel(t: f64) -> f64 {
    let clamped = t.clamp(-200.0, 200.0);
    let (int_part, n) = round_to_int(clamped);
    let frac = clamped - int_part; // Exact.
    horner(frac, &EXP2_F32) * pow2i(n)
}

/// `ln(v)` for a positive, finite, normal f64 `v` (f32 accuracy, relative error below
/// 2^-44); other inputs give unspecified values. The exponent `k` is chosen so that the
/// mantissa `m` lies in `[sqrt(1/2), sqrt(2))`, as in fdlibm's `e_log.c`; returns
/// `(k as f64, ln(m))`.
#[inline(always)]
fn log_f32_kernel(v: f64) -> (f64, f64) {
    let (k, mantissa) = reduce_log_arg(v);
    let f = mantissa - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    (k, 2.0 * s + s * z * horner(z, &LOG_F32))
}

/// Splits a positive normal `v` into `2^k m` with `m` in `[sqrt(1/2), sqrt(2))`; returns
/// `(k as f64, m)`. Moving the threshold from 1 to sqrt(1/2) is an integer addition on the
/// high word, as in fdlibm.
#[inline(always)]
fn reduce_log_arg(v: f64) -> (f64, f64) {
    let bits = v.to_bits();
    let high = (bits >> 32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = ((high >> 20) as i64).wrapping_sub(0x3ff);
    let mantissa_high = (high & 0x000f_ffff) + 0x3fe6_a09e;
    let mantissa = f64::from_bits((mantissa_high << 32) | (bits & 0xffff_ffff));
    (int_to_f64(k), mantissa)
}

/// See Note [exp in f32].
#[inline(always)]
fn exp_f32_impl(x: f32) -> f32 {
    // Beyond [-104, 89] the result rounds to 0 or overflows; clamping keeps `n` within
    // [-150, 128], where both halves of the final scaling are normal. NaN stays NaN.
    let (p, n) = exp_f32_parts(x.clamp(-104.0, 89.0));
    // `p * 2^n` in two steps: the first is exact, the second rounds a subnormal result once.
    let half = n >> 1;
    p * pow2i_f32(half) * pow2i_f32(n.wrapping_sub(half))
}

/// `e^x = p * 2^n` with `p` in `[0.7, 1.42]`, for `x` in `[-104, 89]`, with fused
/// multiply-adds (Note [exp in f32]).
#[inline(always)]
fn exp_f32_parts(x: f32) -> (f32, i32) {
    let (s, n) = expm1_f32_parts(x);
    (1.0 + s, n)
}

/// `e^x = (1 + s) * 2^n`, the sum left unevaluated, for `x` in `[-104, 89]` (Note [exp in
/// f32]).
#[inline(always)]
fn expm1_f32_parts(x: f32) -> (f32, i32) {
    let (n_float, n) = round_to_int_f32(x * std::f32::consts::LOG2_E);
    // Cody-Waite: `x - n * LN2_HI_F32` is exact (Sterbenz); the second step rounds once.
    let r = (-n_float).mul_add(LN2_LO_F32, (-n_float).mul_add(LN2_HI_F32, x));
    ((r * r).mul_add(horner_fused_f32(r, &EXPM1_F32), r), n)
}

/// Arguments whose `e^x` is normal with room to spare: `n` is in `[-125, 127]` (Note [exp
/// on the normal range]).
const EXP_F32_NORMAL: (f32, f32) = (-86.5, 88.0);

/// Arguments of `log_f32_normal`: the positive, normal, finite f32 (Note [log in f32]).
const LOG_F32_NORMAL: (f32, f32) = (f32::MIN_POSITIVE, f32::MAX);

/// `exp_f32_impl` for `x` in `EXP_F32_NORMAL`, with the same bits; other `x` give
/// unspecified values without panicking. See Note [exp on the normal range].
#[inline(always)]
fn exp_f32_normal(x: f32) -> f32 {
    let (p, n) = exp_f32_parts(x);
    f32::from_bits(p.to_bits().wrapping_add((n as u32) << 23))
}

/// See Note [log in f32].
#[inline(always)]
fn log_f32_impl(x: f32) -> f32 {
    // A subnormal is scaled into the normal range (exactly) and its exponent corrected.
    let subnormal = x < f32::MIN_POSITIVE;
    let scaled = if subnormal { x * 8388608.0 } else { x };
    let res = log_of_normal_f32(scaled, if subnormal { 23 } else { 0 });
    log_outside_domain!(f32, x, res)
}

/// `log_f32_impl` for `x` positive, normal and finite, with the same bits; other `x` give
/// unspecified values without panicking.
#[inline(always)]
fn log_f32_normal(x: f32) -> f32 {
    log_of_normal_f32(x, 0)
}

/// `log(x) - shift ln 2` for a positive normal `x` (Note [log in f32]).
#[inline(always)]
fn log_of_normal_f32(x: f32, shift: i32) -> f32 {
    // `x = 2^k m` with `m` in `[sqrt(1/2), sqrt(2))`, by moving the threshold of the
    // exponent from 1 to sqrt(1/2) (an integer addition, as in `reduce_log_arg`); `m - 1` is
    // exact (Sterbenz).
    let high = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = ((high >> 23) as i32).wrapping_sub(127 + shift) as f32;
    let f = f32::from_bits((high & 0x007f_ffff) + 0x3f35_04f3) - 1.0;
    // log(1 + f) = f - f^2/2 + f^3 P(f), with k ln 2 in two parts (`k * LN2_HI_F32` is
    // exact): the small terms first, then `f`, then `k * LN2_HI_F32`, each sum rounded once.
    let z = f * f;
    let tail = (f * z).mul_add(horner_fused_f32(f, &LOG1P_F32), k * LN2_LO_F32);
    k.mul_add(LN2_HI_F32, f + (-0.5f32).mul_add(z, tail))
}

/// See Note [tanh in f32].
#[inline(always)]
fn tanh_f32_impl(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let small = (a * z).mul_add(horner_fused_f32(z, &TANH_F32), a);
    // e^(2a) = 2^n (1 + s), with 2a at most 20; NaN stays NaN.
    let (s, n) = expm1_f32_parts(if a > 10.0 { 20.0 } else { a + a });
    let scale = pow2i_f32(n);
    let large = 1.0 - 2.0 / scale.mul_add(s, scale + 1.0);
    let res = if a < 0.55 { small } else { large };
    res.copysign(x)
}

huge_sincos! {
    f32, sincos_f32_needs_fallback, sincos_f32_fallback, 67108864.0, "2^26"
}

/// `sin_f32(x)` (or `cos_f32` when `is_cos`) by one kernel: the f32 one for small arguments,
/// `std`'s for huge ones, else the f64 one; the same bits as `sincos_f32_select`.
#[inline(always)]
fn sincos_f32(x: f32, is_cos: bool) -> f32 {
    if in_sincos_f32_small(x) {
        sincos_f32_small(x, is_cos)
    } else if sincos_f32_needs_fallback(x) {
        sincos_f32_fallback(x, is_cos)
    } else {
        sincos_f32_fast(x, is_cos)
    }
}

/// The f32 kernel where the argument is small, else the f64 kernel (Note [sin and cos of
/// small f32]); branch-free, for the slices.
#[inline(always)]
fn sincos_f32_select(x: f32, is_cos: bool) -> f32 {
    let small = sincos_f32_small(x, is_cos);
    let wide = sincos_f32_fast(x, is_cos);
    if in_sincos_f32_small(x) {
        small
    } else {
        wide
    }
}

/// The arguments whose `sin` and `cos` the f32 kernel computes (Note [sin and cos of small
/// f32]); NaN is outside.
const SINCOS_F32_SMALL: (f32, f32) = (-8.0, 8.0);

#[inline(always)]
fn in_sincos_f32_small(x: f32) -> bool {
    (x >= SINCOS_F32_SMALL.0) & (x <= SINCOS_F32_SMALL.1)
}

/// pi/2 in four f32 parts: Cephes' three (for `sinf`, there of pi/4), whose first two have 8
/// and 11 significant bits, so that `n` times either is exact for `|n| < 2^8`; and the rest of
/// pi/2, which those three miss by 2^-49 (Note [sin and cos of small f32]).
const PIO2_F32_CW: [f32; 4] = [1.5703125, 4.837_513e-4, 7.549_79e-8, -1.715_124_5e-15];

/// `SIN_F32` and `COS_F32` in f32: the leading coefficient as the sum of two f32 (Note [sin
/// and cos of small f32]: rounded to one, it would bias every result by up to 0.05 ulp), the
/// others rounded.
const SIN_F32_LEAD: (f32, f32) = split_f32(SIN_F32[0]);
const SIN_F32_REST: [f32; 3] = [SIN_F32[1] as f32, SIN_F32[2] as f32, SIN_F32[3] as f32];
const COS_F32_LEAD: (f32, f32) = split_f32(COS_F32[0]);
const COS_F32_REST: [f32; 3] = [COS_F32[1] as f32, COS_F32[2] as f32, COS_F32[3] as f32];

/// `v` as `hi + lo`, `hi` the f32 nearest `v`, `lo` the rest rounded to f32.
const fn split_f32(v: f64) -> (f32, f32) {
    let hi = v as f32;
    (hi, (v - hi as f64) as f32)
}

/// `lead + z rest(z)` with the leading coefficient in two parts, by fused Horner steps.
#[inline(always)]
fn poly_split_lead(z: f32, lead: (f32, f32), rest: &[f32; 3]) -> f32 {
    lead.0 + z.mul_add(horner_fused_f32(z, rest), lead.1)
}

/// `sin(x)` (or `cos(x)` when `is_cos`) in f32 arithmetic, for `x` in `SINCOS_F32_SMALL`;
/// other inputs give unspecified values without panicking. See Note [sin and cos of small
/// f32].
#[inline(always)]
fn sincos_f32_small(x: f32, is_cos: bool) -> f32 {
    let (n_float, n) = round_to_int_f32(x * std::f32::consts::FRAC_2_PI);
    // x - n pi/2 = hi + lo: the first two steps are exact, the third is Knuth's two-sum of
    // `r` and the rounded `n P3` (whose own rounding error `n_p3_err` is exact by FMA).
    let r = (-n_float).mul_add(PIO2_F32_CW[0], x);
    let r = (-n_float).mul_add(PIO2_F32_CW[1], r);
    let n_p3 = n_float * PIO2_F32_CW[2];
    let n_p3_err = n_float.mul_add(PIO2_F32_CW[2], -n_p3);
    let hi = r - n_p3;
    let back = hi - r;
    let hi_err = (r - (hi - back)) + (-n_p3 - back);
    let lo = (-n_float).mul_add(PIO2_F32_CW[3], hi_err - n_p3_err);
    // r^2, with the low part's first-order term.
    let z = hi.mul_add(hi, (hi + hi) * lo);
    let sin_poly = poly_split_lead(z, SIN_F32_LEAD, &SIN_F32_REST);
    let cos_poly = poly_split_lead(z, COS_F32_LEAD, &COS_F32_REST);
    let sin_r = hi + (hi * z).mul_add(sin_poly, lo);
    let cos_r = z.mul_add(cos_poly, 1.0);
    let quadrant = n.wrapping_add(i32::from(is_cos)) as u32;
    let res = if quadrant & 1 == 0 { sin_r } else { cos_r };
    let res = f32::from_bits(res.to_bits() ^ ((quadrant & 2) << 30));
    // The polynomial turns -0 into +0.
    if x == 0.0 && !is_cos {
        x
    } else {
        res
    }
}

/// pi/2 in three parts of 27, 25 and 53 bits: `n * PIO2_F32_1` and `n * PIO2_F32_2` are exact
/// for `|n| < 2^26`, and the remaining error of the sum is 4e-35.
const PIO2_F32_1: f64 = 1.570796325802803;
const PIO2_F32_2: f64 = 9.920935739593517e-10;
const PIO2_F32_3: f64 = 5.721188726109832e-18;

/// `sin(x)` (or `cos(x)` when `is_cos`) for `|x| < 2^26`; see Note [Huge sin/cos arguments].
/// Larger finite inputs give unspecified values; infinities and NaN give NaN.
#[inline(always)]
fn sincos_f32_fast(x: f32, is_cos: bool) -> f32 {
    let wide = f64::from(x);
    let (n_float, n) = round_to_int(wide * FRAC_2_PI);
    // For |x| < 2^26 the first two subtractions are exact (up to a relative rounding when
    // |r| > 1/2), so r is within 2^-79 of x - n pi/2, while no f32 below 2^26 comes closer
    // than 2^-27.8 to a nonzero multiple of pi/2 (the closest is 252.89821): r is good to
    // 2^-50 relative.
    let r = ((wide - n_float * PIO2_F32_1) - n_float * PIO2_F32_2) - n_float * PIO2_F32_3;
    let z = r * r;
    let sin_r = r + r * z * horner(z, &SIN_F32);
    let cos_r = 1.0 + z * horner(z, &COS_F32);
    // sin(x) is sin(r), cos(r), -sin(r), -cos(r) for n mod 4 = 0..3; cos(x) is a quarter
    // turn ahead.
    let res = by_quadrant(n.wrapping_add(if is_cos { 1 } else { 0 }), sin_r, cos_r) as f32;
    // The polynomial turns -0 into +0.
    if x == 0.0 && !is_cos {
        x
    } else {
        res
    }
}

#[inline(always)]
fn pow_f32_impl(x: f32, y: f32) -> f32 {
    let (y_is_int, y_is_odd) = int_parity_f32(y);
    // |x|^y = 2^(y log2|x|); the f32 range is far inside f64's, so nothing overflows here.
    let (k, log_mantissa) = log_f32_kernel(f64::from(x).abs());
    let log2_x = k + log_mantissa * LOG2_E;
    let magnitude = exp2_f32_kernel(f64::from(y) * log2_x) as f32;
    let negate = x < 0.0 && y_is_odd;
    let res = if negate { -magnitude } else { magnitude };
    pow_special_cases!(f32, x, y, (y_is_int, y_is_odd), res)
}

// ---------------------------------------------------------------------------------------
// f64 kernels.
// ---------------------------------------------------------------------------------------

/// fdlibm `e_exp.c`: ln2 split so that `k * LN2_HI` is exact for `|k| < 2^11`, and the
/// Remez coefficients of `R(r^2) = r (e^r + 1)/(e^r - 1)`, error below 2^-59.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // 6.93147180369123816490e-01
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76); // 1.90821492927058770002e-10
const EXP_P1: f64 = f64::from_bits(0x3fc5_5555_5555_553e); // 1.66666666666666019037e-01
const EXP_P2: f64 = f64::from_bits(0xbf66_c16c_16be_bd93); // -2.77777777770155933842e-03
const EXP_P3: f64 = f64::from_bits(0x3f11_566a_af25_de2c); // 6.61375632143793436117e-05
const EXP_P4: f64 = f64::from_bits(0xbebb_bd41_c5d2_6bf1); // -1.65339022054652515390e-06
const EXP_P5: f64 = f64::from_bits(0x3e66_3769_72be_a4d0); // 4.13813679705723846039e-08

#[inline(always)]
fn exp_f64_impl(x: f64) -> f64 {
    // Beyond these bounds the result is inf or 0 anyway; clamping keeps k in range.
    // NaN passes through.
    let clamped = x.clamp(-746.0, 710.0);
    // fdlibm e_exp.c: x = k ln2 + r, |r| <= ln2/2, r = hi - lo.
    let (k_float, k) = round_to_int(clamped * LOG2_E);
    let hi = clamped - k_float * LN2_HI;
    let lo = k_float * LN2_LO;
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * (EXP_P1 + rr * (EXP_P2 + rr * (EXP_P3 + rr * (EXP_P4 + rr * EXP_P5))));
    let y = 1.0 + (r * c / (2.0 - c) - lo + hi);
    scale_by_pow2(y, k)
}

/// fdlibm `e_log.c`: Remez coefficients of `R(s^2)`, `log(1+f) = 2s + s R`, error below
/// 2^-58.45.
const LG1: f64 = f64::from_bits(0x3fe5_5555_5555_5593); // 6.666666666666735130e-01
const LG2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04); // 3.999999999940941908e-01
const LG3: f64 = f64::from_bits(0x3fd2_4924_9422_9359); // 2.857142874366239149e-01
const LG4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af); // 2.222219843214978396e-01
const LG5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de); // 1.818357216161805012e-01
const LG6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f); // 1.531383769920937332e-01
const LG7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244); // 1.479819860511658591e-01

#[inline(always)]
fn log_f64_impl(x: f64) -> f64 {
    // Subnormals are scaled by 2^54 first.
    let subnormal = x < f64::MIN_POSITIVE;
    let scaled = if subnormal {
        x * 18014398509481984.0
    } else {
        x
    };
    let (k, mantissa) = reduce_log_arg(scaled);
    let k = if subnormal { k - 54.0 } else { k };
    // fdlibm e_log.c (in musl's single-expression form).
    let f = mantissa - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let res = s * (hfsq + r) + k * LN2_LO - hfsq + f + k * LN2_HI;
    log_outside_domain!(f64, x, res)
}

/// `R(z)` with `tanh(a) = a + a^3 R(a^2)` for `|a| <= 0.3`, degree 7; relative error 2^-59.5.
const TANH_F64: [f64; 8] = [
    -0.3333333333333326,
    0.1333333333330682,
    -0.053968253935533096,
    0.02186948658078045,
    -0.008863170761330317,
    0.0035908738000827523,
    -0.0014416545901210797,
    0.0005024535035556787,
];

/// `Q(r)` with `e^r = 1 + r + r^2/2 + r^3 Q(r)` for `|r| <= ln2/2 (1 + 2^-20)`, degree 9;
/// absolute error of `Q` 2^-55.5, so `e^r` is within 2^-60 relative.
const EXPM1_F64: [f64; 10] = [
    0.16666666666666669,
    0.04166666666666667,
    0.008333333333330065,
    0.0013888888888880949,
    0.00019841269863041827,
    2.4801587333935256e-05,
    2.755726847857584e-06,
    2.7557264334723526e-07,
    2.51003765659887e-08,
    2.0918130423680567e-09,
];

/// See Note [tanh accuracy].
#[inline(always)]
fn tanh_f64_impl(x: f64) -> f64 {
    let abs_x = x.abs();
    // Small branch: a + a^3 R(a^2); the correction is below 3% of the result.
    let z = abs_x * abs_x;
    let small = abs_x + abs_x * (z * horner(z, &TANH_F64));
    let large = tanh_f64_large(abs_x);
    let res = if abs_x < 0.3 { small } else { large };
    res.copysign(x)
}

/// `tanh(a)` for `a >= 0.3` (other finite inputs give unspecified values), as
/// `1 - 2/(E + 1)` with `E = e^(2a)` and the quotient in double-double arithmetic.
#[inline(always)]
fn tanh_f64_large(abs_x: f64) -> f64 {
    // tanh(20) rounds to 1, as does anything above; NaN passes through.
    let two_a = if abs_x > 20.0 { 40.0 } else { 2.0 * abs_x };
    // 2a = k ln2 + r + r_tail with |r| <= ln2/2 (1 + 2^-20).
    let (k_float, k) = round_to_int(two_a * LOG2_E);
    let hi = two_a - k_float * LN2_HI; // Exact: k <= 58.
    let lo = k_float * LN2_LO;
    let r = hi - lo;
    let r_tail = (hi - r) - lo;
    // e^(r + r_tail) = 1 + r + r^2/2 + r^3 Q(r) + r_tail (1 + r), summed in double-double.
    let (sq_hi, sq_lo) = two_prod(r, r);
    let rest = r_tail + r * r_tail + 0.5 * sq_lo + r * sq_hi * horner(r, &EXPM1_F64);
    let (sum, err0) = fast_two_sum(1.0, r);
    let (sum, err1) = fast_two_sum(sum, 0.5 * sq_hi);
    let (sum, err2) = fast_two_sum(sum, rest);
    let tail = (err0 + err1) + err2;
    // E + 1 = den_hi + den_lo.
    let scale = pow2i(k);
    let (den_hi, den_err) = fast_two_sum(sum * scale, 1.0);
    let den_lo = den_err + tail * scale;
    // 2/(E + 1) = q_hi + q_lo by one Newton correction with an exact residual.
    let q_hi = 2.0 / den_hi;
    let (prod_hi, prod_lo) = two_prod(q_hi, den_hi);
    let residual = ((2.0 - prod_hi) - prod_lo) - q_hi * den_lo;
    let q_lo = residual * (0.5 * q_hi);
    let (one_minus, err) = fast_two_sum(1.0, -q_hi);
    one_minus + (err - q_lo)
}

huge_sincos! {
    f64, sincos_f64_needs_fallback, sincos_f64_fallback, 1048576.0, "2^20"
}

/// `sin_f64(x)` (or `cos_f64` when `is_cos`), with the huge arguments' branch.
#[inline(always)]
fn sincos_f64(x: f64, is_cos: bool) -> f64 {
    if sincos_f64_needs_fallback(x) {
        sincos_f64_fallback(x, is_cos)
    } else {
        sincos_f64_fast(x, is_cos)
    }
}

/// fdlibm `e_rem_pio2.c`: pi/2 in three parts of 33 bits and the tail that follows them.
const PIO2_1: f64 = f64::from_bits(0x3ff9_21fb_5440_0000); // 1.57079632673412561417e+00
const PIO2_2: f64 = f64::from_bits(0x3dd0_b461_1a60_0000); // 6.07710050630396597660e-11
const PIO2_3: f64 = f64::from_bits(0x3ba3_198a_2e00_0000); // 2.02226624871116645580e-21
const PIO2_3T: f64 = f64::from_bits(0x397b_839a_2520_49c1); // 8.47842766036889956997e-32

/// fdlibm `k_sin.c`: `sin(x)/x ~ 1 + S1 x^2 + ... + S6 x^12` on `[-pi/4, pi/4]`, error
/// below 2^-58.
const S1: f64 = f64::from_bits(0xbfc5_5555_5555_5549); // -1.66666666666666324348e-01
const S2: f64 = f64::from_bits(0x3f81_1111_1110_f8a6); // 8.33333333332248946124e-03
const S3: f64 = f64::from_bits(0xbf2a_01a0_19c1_61d5); // -1.98412698298579493134e-04
const S4: f64 = f64::from_bits(0x3ec7_1de3_57b1_fe7d); // 2.75573137070700676789e-06
const S5: f64 = f64::from_bits(0xbe5a_e5e6_8a2b_9ceb); // -2.50507602534068634195e-08
const S6: f64 = f64::from_bits(0x3de5_d93a_5acf_d57c); // 1.58969099521155010221e-10

/// fdlibm `k_cos.c`: `cos(x) ~ 1 - x^2/2 + C1 x^4 + ... + C6 x^14` on `[-pi/4, pi/4]`,
/// error below 2^-58.
const C1: f64 = f64::from_bits(0x3fa5_5555_5555_554c); // 4.16666666666666019037e-02
const C2: f64 = f64::from_bits(0xbf56_c16c_16c1_5177); // -1.38888888888741095749e-03
const C3: f64 = f64::from_bits(0x3efa_01a0_19cb_1590); // 2.48015872894767294178e-05
const C4: f64 = f64::from_bits(0xbe92_7e4f_809c_52ad); // -2.75573143513906633035e-07
const C5: f64 = f64::from_bits(0x3e21_ee9e_bdb4_b1c4); // 2.08757232129817482790e-09
const C6: f64 = f64::from_bits(0xbda8_fae9_be88_38d4); // -1.13596475577881948265e-11

/// `sin(x)` (or `cos(x)` when `is_cos`) for `|x| < 2^20`; see Note [Huge sin/cos
/// arguments]. Larger finite inputs give unspecified values; infinities and NaN give NaN.
#[inline(always)]
fn sincos_f64_fast(x: f64, is_cos: bool) -> f64 {
    // fdlibm e_rem_pio2.c, medium branch, with its second and third rounds always run and
    // their rounding errors kept: x - n pi/2 = y0 + y1 to about 2^-118 relative, n < 2^20.
    let (n_float, n) = round_to_int(x * FRAC_2_PI);
    let r1 = x - n_float * PIO2_1; // Exact.
    let (r2, err2) = two_sum(r1, -(n_float * PIO2_2));
    let (r3, err3) = two_sum(r2, -(n_float * PIO2_3));
    let w = n_float * PIO2_3T - (err3 + err2);
    let y0 = r3 - w;
    let y1 = (r3 - y0) - w;
    // fdlibm k_sin.c and k_cos.c, with the tail y1.
    let z = y0 * y0;
    let zz = z * z;
    let v = z * y0;
    let sr = S2 + z * (S3 + z * S4) + z * zz * (S5 + z * S6);
    let sin_y = y0 - ((z * (0.5 * y1 - v * sr) - y1) - v * S1);
    let cr = z * (C1 + z * (C2 + z * C3)) + zz * zz * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let one_minus_hz = 1.0 - hz;
    let cos_y = one_minus_hz + (((1.0 - one_minus_hz) - hz) + (z * cr - y0 * y1));
    let res = by_quadrant(n.wrapping_add(if is_cos { 1 } else { 0 }), sin_y, cos_y);
    // fdlibm returns x itself for tiny |x|, which also keeps the sign of zero.
    if x.abs() < 7.450580596923828e-09 && !is_cos {
        x
    } else {
        res
    }
}

/// fdlibm `e_pow.c` constants: `(1 + bp[1]) = 1.5` and `log2(1.5) = DP_H + DP_L`; Remez
/// coefficients `L1..L6` of `(3/2)(log(x) - 2s - 2/3 s^3)` and `P1..P5` of exp; ln2 and
/// `2/(3 ln2)` split into high and low parts; `OVT` is `-(1024 - log2(max + ulp/2))`.
const DP_H: f64 = f64::from_bits(0x3fe2_b803_4000_0000); // 5.84962487220764160156e-01
const DP_L: f64 = f64::from_bits(0x3e4c_fdeb_43cf_d006); // 1.35003920212974897128e-08
const L1: f64 = f64::from_bits(0x3fe3_3333_3333_3303); // 5.99999999999994648725e-01
const L2: f64 = f64::from_bits(0x3fdb_6db6_db6f_abff); // 4.28571428578550184252e-01
const L3: f64 = f64::from_bits(0x3fd5_5555_518f_264d); // 3.33333329818377432918e-01
const L4: f64 = f64::from_bits(0x3fd1_7460_a91d_4101); // 2.72728123808534006489e-01
const L5: f64 = f64::from_bits(0x3fcd_864a_93c9_db65); // 2.30660745775561754067e-01
const L6: f64 = f64::from_bits(0x3fca_7e28_4a45_4eef); // 2.06975017800338417784e-01
const LG2_FULL: f64 = f64::from_bits(0x3fe6_2e42_fefa_39ef); // 6.93147180559945286227e-01
const LG2_H: f64 = f64::from_bits(0x3fe6_2e43_0000_0000); // 6.93147182464599609375e-01
const LG2_L: f64 = f64::from_bits(0xbe20_5c61_0ca8_6c39); // -1.90465429995776804525e-09
const OVT: f64 = f64::from_bits(0x3c97_1547_652b_82fe); // 8.0085662595372944372e-17
const CP: f64 = f64::from_bits(0x3fee_c709_dc3a_03fd); // 9.61796693925975554329e-01
const CP_H: f64 = f64::from_bits(0x3fee_c709_e000_0000); // 9.61796700954437255859e-01
const CP_L: f64 = f64::from_bits(0xbe3e_2fe0_145b_01f5); // -7.02846165095275826516e-09

#[inline(always)]
fn pow_f64_impl(x: f64, y: f64) -> f64 {
    let abs_x = x.abs();
    let (y_is_int, y_is_odd) = int_parity(y);
    // fdlibm e_pow.c, main branch (the names follow fdlibm's). log2|x| = t1 + t2, where
    // t1 has 32 significant bits. The branch fdlibm takes for |y| > 2^31 is not needed:
    // this one is accurate there too, and huge results are caught below.
    let subnormal = abs_x < f64::MIN_POSITIVE;
    let ax = if subnormal {
        abs_x * 9007199254740992.0
    } else {
        abs_x
    };
    let exponent = int_to_f64(((ax.to_bits() >> 52) as i64) - 0x3ff);
    let mantissa = f64::from_bits((ax.to_bits() & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    // Mantissa intervals: [1, sqrt(3/2)) uses bp = 1; [sqrt(3/2), sqrt(3)) uses bp = 1.5;
    // [sqrt(3), 2) is halved into [sqrt(3)/2, 1) and uses bp = 1. fdlibm compares the
    // high word; these are the same comparisons on floats.
    let halve = mantissa >= f64::from_bits(0x3ffb_b67a_0000_0000);
    let use_three_halves = !halve && mantissa >= f64::from_bits(0x3ff3_988f_0000_0000);
    let ax = if halve { 0.5 * mantissa } else { mantissa };
    let n_float = exponent + if halve { 1.0 } else { 0.0 } - if subnormal { 53.0 } else { 0.0 };
    let ix = ax.to_bits() >> 32;
    let bp = if use_three_halves { 1.5 } else { 1.0 };
    let dp_h = if use_three_halves { DP_H } else { 0.0 };
    let dp_l = if use_three_halves { DP_L } else { 0.0 };
    // ss = s_h + s_l = (ax - bp)/(ax + bp).
    let u = ax - bp;
    let v = 1.0 / (ax + bp);
    let ss = u * v;
    let s_h = clear_low_word(ss);
    let bp_bit = if use_three_halves { 1 << 18 } else { 0 };
    let t_h = f64::from_bits((((ix >> 1) | 0x2000_0000) + 0x0008_0000 + bp_bit) << 32);
    let t_l = ax - (t_h - bp);
    let s_l = v * ((u - s_h * t_h) - s_h * t_l);
    let s2 = ss * ss;
    let r = s2 * s2 * (L1 + s2 * (L2 + s2 * (L3 + s2 * (L4 + s2 * (L5 + s2 * L6)))));
    let r = r + s_l * (s_h + ss);
    let s2 = s_h * s_h;
    let t_h = clear_low_word(3.0 + s2 + r);
    let t_l = r - ((t_h - 3.0) - s2);
    let u = s_h * t_h;
    let v = s_l * t_h + t_l * ss;
    let p_h = clear_low_word(u + v);
    let p_l = v - (p_h - u);
    let z_h = CP_H * p_h;
    let z_l = CP_L * p_h + p_l * CP + dp_l;
    let t1 = clear_low_word(((z_h + z_l) + dp_h) + n_float);
    let t2 = z_l - (((t1 - n_float) - dp_h) - z_h);
    // y log2|x| = p_h + p_l, with y split so that y1 * t1 is exact.
    let y1 = clear_low_word(y);
    let p_l = (y - y1) * t1 + y * t2;
    let p_h = y1 * t1;
    let z = p_l + p_h;
    let overflow = z > 1024.0 || (z == 1024.0 && p_l + OVT > z - p_h);
    let underflow = z < -1075.0 || (z == -1075.0 && p_l <= z - p_h);
    // 2^(p_h + p_l) = 2^n 2^(p_h' + p_l) with |p_h' + p_l| <= 1/2.
    let (n_float, n) = round_to_int(z);
    let p_h = p_h - n_float;
    let t = clear_low_word(p_l + p_h);
    let u = t * LG2_H;
    let v = (p_l - (t - p_h)) * LG2_FULL + t * LG2_L;
    let z = u + v;
    let w = v - (z - u);
    let t = z * z;
    let t1 = z - t * (EXP_P1 + t * (EXP_P2 + t * (EXP_P3 + t * (EXP_P4 + t * EXP_P5))));
    let r = (z * t1) / (t1 - 2.0) - (w + z * w);
    let z = 1.0 - (r - z);
    let magnitude = scale_by_pow2(z, n);
    let magnitude = if overflow { f64::INFINITY } else { magnitude };
    let magnitude = if underflow { 0.0 } else { magnitude };
    let res = if x < 0.0 && y_is_odd {
        -magnitude
    } else {
        magnitude
    };
    pow_special_cases!(f64, x, y, (y_is_int, y_is_odd), res, |res| {
        // Exact shortcuts, as in fdlibm.
        let res = if y == 1.0 { x } else { res };
        if y == 2.0 {
            x * x
        } else {
            res
        }
    })
}

#[cfg(test)]
mod tests {
    //! Accuracy against `std` (the platform libm) within `MAX_ULP`, special values, and
    //! slice functions equal to per-element functions bit for bit. Inputs are deterministic:
    //! dense sweeps of the interesting ranges plus xorshift samples of all bit patterns.

    use super::*;

    const MAX_ULP: u64 = 2;

    /// What the checks need of a float type, so that one helper serves `f32` and `f64`.
    trait TestFloat: Copy + std::fmt::LowerExp {
        const SIGN: u64;
        /// Hex digits of a bit pattern (for messages).
        const HEX_DIGITS: usize;
        fn raw(self) -> u64;
        /// The float of a bit pattern (its low bits for `f32`).
        fn from_raw(bits: u64) -> Self;
        fn to_f64(self) -> f64;
        fn from_f64(x: f64) -> Self;
    }

    impl TestFloat for f32 {
        const SIGN: u64 = 1 << 31;
        const HEX_DIGITS: usize = 8;
        fn raw(self) -> u64 {
            u64::from(self.to_bits())
        }
        fn from_raw(bits: u64) -> Self {
            f32::from_bits(bits as u32)
        }
        fn to_f64(self) -> f64 {
            f64::from(self)
        }
        fn from_f64(x: f64) -> Self {
            x as f32
        }
    }

    impl TestFloat for f64 {
        const SIGN: u64 = 1 << 63;
        const HEX_DIGITS: usize = 16;
        fn raw(self) -> u64 {
            self.to_bits()
        }
        fn from_raw(bits: u64) -> Self {
            f64::from_bits(bits)
        }
        fn to_f64(self) -> f64 {
            self
        }
        fn from_f64(x: f64) -> Self {
            x
        }
    }

    /// Maps a float to an integer that increases by one from each float to the next, with
    /// `-0.0` just below `+0.0`.
    fn ordered<T: TestFloat>(x: T) -> i128 {
        let bits = x.raw();
        if bits & T::SIGN != 0 {
            -i128::from(bits & !T::SIGN) - 1
        } else {
            i128::from(bits)
        }
    }

    /// The inverse of `ordered`.
    fn from_ordered<T: TestFloat>(ord: i128) -> T {
        if ord < 0 {
            T::from_raw((-1 - ord) as u64 | T::SIGN)
        } else {
            T::from_raw(ord as u64)
        }
    }

    /// Distance in ulp; 0 when both are NaN, `u64::MAX` when only one is.
    fn ulp_distance<T: TestFloat>(a: T, b: T) -> u64 {
        match (a.to_f64().is_nan(), b.to_f64().is_nan()) {
            (true, true) => 0,
            (false, false) => {
                u64::try_from((ordered(a) - ordered(b)).unsigned_abs()).unwrap_or(u64::MAX)
            }
            _ => u64::MAX,
        }
    }

    /// Whether `ours` is acceptable next to libm's `reference`: within `MAX_ULP`, and with
    /// the same sign when both are zero.
    fn acceptable<T: TestFloat>(ours: T, reference: T) -> bool {
        let zero_sign_differs =
            ours.to_f64() == 0.0 && reference.to_f64() == 0.0 && ours.raw() != reference.raw();
        ulp_distance(ours, reference) <= MAX_ULP && !zero_sign_differs
    }

    /// Whether two results are the same value: equal bits, or both NaN.
    fn same<T: TestFloat>(a: T, b: T) -> bool {
        a.raw() == b.raw() || (a.to_f64().is_nan() && b.to_f64().is_nan())
    }

    struct Xorshift(u64);

    impl Xorshift {
        fn next_u64(&mut self) -> u64 {
            let mut state = self.0;
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            self.0 = state;
            state
        }

        /// Uniform in `[0, 1)`.
        fn next_unit(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / 9007199254740992.0
        }
    }

    /// Collects failures and panics with the first few, formatted for a reader.
    struct Failures {
        name: &'static str,
        n_checked: usize,
        lines: Vec<String>,
        n_failed: usize,
    }

    impl Failures {
        fn new(name: &'static str) -> Self {
            Failures {
                name,
                n_checked: 0,
                lines: Vec::new(),
                n_failed: 0,
            }
        }

        fn record(&mut self, ok: bool, line: impl FnOnce() -> String) {
            self.n_checked += 1;
            if !ok {
                self.n_failed += 1;
                if self.lines.len() < 12 {
                    self.lines.push(line());
                }
            }
        }

        fn finish(self) {
            assert!(
                self.n_failed == 0,
                "{}: {} of {} inputs failed; first ones:\n{}",
                self.name,
                self.n_failed,
                self.n_checked,
                self.lines.join("\n")
            );
        }
    }

    /// One unary function under test, with its slice form and libm's version.
    struct Unary<T> {
        name: &'static str,
        ours: fn(T) -> T,
        slice: fn(&[T], &mut [T]),
        reference: fn(T) -> T,
    }

    /// `NAME: T = ours, slice, reference;` defines `NAME`, a `Unary<T>` named after `ours`.
    macro_rules! unary_cases {
        ($($case:ident: $ty:ty = $ours:ident, $slice:ident, $reference:path;)*) => {$(
            const $case: Unary<$ty> = Unary {
                name: stringify!($ours),
                ours: $ours,
                slice: $slice,
                reference: $reference,
            };
        )*};
    }

    unary_cases! {
        EXP_F32: f32 = exp_f32, exp_f32_slice, f32::exp;
        LOG_F32: f32 = log_f32, log_f32_slice, f32::ln;
        TANH_F32: f32 = tanh_f32, tanh_f32_slice, f32::tanh;
        SIN_F32: f32 = sin_f32, sin_f32_slice, f32::sin;
        COS_F32: f32 = cos_f32, cos_f32_slice, f32::cos;
        EXP_F64: f64 = exp_f64, exp_f64_slice, f64::exp;
        LOG_F64: f64 = log_f64, log_f64_slice, f64::ln;
        TANH_F64: f64 = tanh_f64, tanh_f64_slice, f64::tanh;
        SIN_F64: f64 = sin_f64, sin_f64_slice, f64::sin;
        COS_F64: f64 = cos_f64, cos_f64_slice, f64::cos;
    }

    /// Runs the slice function over `inputs` in slices of `exec::lanes::LINE`, as kernels
    /// do, and checks every lane against the per-element function (same bits) and against
    /// libm (within `MAX_ULP`).
    fn check<T: TestFloat>(case: &Unary<T>, inputs: &[T]) {
        let mut out = vec![T::from_f64(0.0); inputs.len()];
        let line = crate::exec::lanes::LINE;
        for (xs, out) in inputs.chunks(line).zip(out.chunks_mut(line)) {
            (case.slice)(xs, out);
        }
        let mut failures = Failures::new(case.name);
        for (&x, &res) in inputs.iter().zip(&out) {
            let single = (case.ours)(x);
            let reference = (case.reference)(x);
            failures.record(same(res, single) && acceptable(res, reference), || {
                format!(
                    "  x = {x:e} ({:#0width$x}): slice {res:e}, per-element {single:e}, std {reference:e}, {} ulp",
                    x.raw(),
                    ulp_distance(res, reference),
                    width = T::HEX_DIGITS + 2,
                )
            });
        }
        failures.finish();
    }

    /// `n_elems` evenly spaced points of each range, plus the 64 floats on each side of
    /// every point of `edges`.
    fn sweep<T: TestFloat>(ranges: &[(T, T)], n_elems: usize, edges: &[T]) -> Vec<T> {
        let mut inputs = Vec::new();
        for &(lo, hi) in ranges {
            let (lo, hi) = (lo.to_f64(), hi.to_f64());
            let step = (hi - lo) / n_elems as f64;
            inputs.extend((0..=n_elems).map(|idx| T::from_f64(lo + step * idx as f64)));
        }
        for &edge in edges {
            let ord = ordered(edge);
            inputs.extend((ord - 64..=ord + 64).map(from_ordered::<T>));
        }
        inputs
    }

    /// Uniformly random bit patterns, so every exponent is equally likely.
    fn bit_patterns<T: TestFloat>(seed: u64, n_elems: usize) -> Vec<T> {
        let mut rng = Xorshift(seed);
        (0..n_elems).map(|_| T::from_raw(rng.next_u64())).collect()
    }

    /// Random points of `[lo, hi]`, with a log-uniform magnitude when `lo > 0`.
    fn random_in_f64(seed: u64, n_elems: usize, lo: f64, hi: f64) -> Vec<f64> {
        let mut rng = Xorshift(seed);
        (0..n_elems)
            .map(|_| {
                let u = rng.next_unit();
                if lo > 0.0 {
                    (lo.ln() + u * (hi.ln() - lo.ln())).exp()
                } else {
                    lo + u * (hi - lo)
                }
            })
            .collect()
    }

    const N_SWEEP: usize = 100_000;
    const N_BITS: usize = 300_000;

    // Special values: exact results, as C99 Annex F and libm give them.

    #[test]
    fn special_values_f32() {
        let functions = [&EXP_F32, &LOG_F32, &TANH_F32, &SIN_F32, &COS_F32];
        let cases = special_cases(functions, (89.0, -104.0), 20.0);
        check_special_values("special_values_f32", &cases);
    }

    #[test]
    fn special_values_f64() {
        let functions = [&EXP_F64, &LOG_F64, &TANH_F64, &SIN_F64, &COS_F64];
        let cases = special_cases(functions, (710.0, -746.0), 40.0);
        check_special_values("special_values_f64", &cases);
    }

    /// The special values of `[exp, log, tanh, sin, cos]` in one float type, with `exp`'s
    /// first overflowing and first underflowing integer (`exp_limits`) and an integer where
    /// `tanh` has saturated.
    fn special_cases<T: TestFloat>(
        [exp, log, tanh, sin, cos]: [&Unary<T>; 5],
        exp_limits: (f64, f64),
        tanh_saturated: f64,
    ) -> Vec<(&Unary<T>, T, T)> {
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        let tiny = T::from_raw(1).to_f64();
        let (overflow, underflow) = exp_limits;
        let cases = [
            (exp, nan, nan),
            (exp, inf, inf),
            (exp, -inf, 0.0),
            (exp, 0.0, 1.0),
            (exp, -0.0, 1.0),
            (exp, tiny, 1.0),
            (exp, overflow, inf),
            (exp, underflow, 0.0),
            (log, nan, nan),
            (log, inf, inf),
            (log, -inf, nan),
            (log, 0.0, -inf),
            (log, -0.0, -inf),
            (log, -1.0, nan),
            (log, -tiny, nan),
            (log, 1.0, 0.0),
            (tanh, nan, nan),
            (tanh, inf, 1.0),
            (tanh, -inf, -1.0),
            (tanh, 0.0, 0.0),
            (tanh, -0.0, -0.0),
            (tanh, tiny, tiny),
            (tanh, -tiny, -tiny),
            (tanh, tanh_saturated, 1.0),
            (tanh, -tanh_saturated, -1.0),
            (sin, nan, nan),
            (sin, inf, nan),
            (sin, -inf, nan),
            (sin, 0.0, 0.0),
            (sin, -0.0, -0.0),
            (sin, tiny, tiny),
            (sin, -tiny, -tiny),
            (cos, nan, nan),
            (cos, inf, nan),
            (cos, -inf, nan),
            (cos, 0.0, 1.0),
            (cos, -0.0, 1.0),
            (cos, tiny, 1.0),
        ];
        cases
            .into_iter()
            .map(|(case, x, expected)| (case, T::from_f64(x), T::from_f64(expected)))
            .collect()
    }

    /// Each case's function gives exactly the expected value, per element, over a slice and
    /// in libm.
    fn check_special_values<T: TestFloat>(name: &'static str, cases: &[(&Unary<T>, T, T)]) {
        let mut failures = Failures::new(name);
        for &(case, x, expected) in cases {
            let mut out = [T::from_f64(0.0)];
            (case.slice)(&[x], &mut out);
            let single = (case.ours)(x);
            let reference = (case.reference)(x);
            let ok = same(single, expected) && same(out[0], expected) && same(reference, expected);
            failures.record(ok, || {
                format!("  {}({x:e}): per-element {single:e}, slice {:e}, std {reference:e}, expected {expected:e}", case.name, out[0])
            });
        }
        failures.finish();
    }

    // exp: the whole finite range, the overflow and underflow thresholds, and around 0.

    #[test]
    fn exp_f32_sweep() {
        let edges = [
            88.72284, -87.33655, -103.27893, -103.97208, 0.0, -0.0, 1.0e-8, -1.0e-8,
        ];
        check(
            &EXP_F32,
            &sweep::<f32>(&[(-105.0, 90.0), (-1.0, 1.0)], N_SWEEP, &edges),
        );
    }

    /// Slices whose every input is in `EXP_F32_NORMAL` take the one-pass path (Note [exp on
    /// the normal range]): the range's ends, and the range swept.
    #[test]
    fn exp_f32_slices_on_the_normal_range() {
        let (lo, hi) = super::EXP_F32_NORMAL;
        let line = crate::exec::lanes::LINE as i128;
        let from_lo = (ordered(lo)..ordered(lo) + line).map(from_ordered::<f32>);
        let to_hi = (ordered(hi) - line + 1..=ordered(hi)).map(from_ordered::<f32>);
        check(&EXP_F32, &from_lo.chain(to_hi).collect::<Vec<f32>>());
        check(&EXP_F32, &sweep::<f32>(&[(lo, hi)], N_SWEEP, &[]));
    }

    /// Slices of every length up to a few hundred (whole vectors, vector epilogues, scalar
    /// remainders: Note [Slices by iterators]) give the per-element bits, the exp of a
    /// difference too (both widths, every case of splats).
    #[test]
    fn slices_of_every_length_give_the_per_element_bits() {
        // Arguments small and beyond 8 for `sin`/`cos` (the f32 and the f64 kernel), and a
        // huge one now and then (`std`'s fallback).
        let xs: Vec<f32> = (0..300)
            .map(|k| match k % 50 {
                49 => 3.0e8 + k as f32,
                _ => (k as f32 * 0.37).sin() * 5.0 + 5.5,
            })
            .collect();
        for n in 0..=xs.len() {
            let xs = &xs[..n];
            let mut out = vec![0.0f32; n];
            for case in [&EXP_F32, &LOG_F32, &TANH_F32, &SIN_F32, &COS_F32] {
                (case.slice)(xs, &mut out);
                for (&x, &y) in xs.iter().zip(&out) {
                    assert_eq!(
                        y.to_bits(),
                        (case.ours)(x).to_bits(),
                        "{}({x}), n = {n}",
                        case.name
                    );
                }
            }
            // The exp of a difference, with either operand or neither a splat, in both widths.
            let ys: Vec<f32> = xs.iter().map(|&x| x * 0.5 - 1.0).collect();
            let splat = [2.5f32];
            for (a, b) in [(xs, &splat[..]), (&splat[..], xs), (xs, &ys[..])] {
                let at = |values: &[f32], i: usize| values[if values.len() == 1 { 0 } else { i }];
                exp_of_difference_f32(a, b, &mut out);
                let (a64, b64): (Vec<f64>, Vec<f64>) = (
                    a.iter().map(|&x| f64::from(x) * 3.0).collect(),
                    b.iter().map(|&x| f64::from(x) * 3.0).collect(),
                );
                let mut out64 = vec![0.0f64; n];
                exp_of_difference_f64(&a64, &b64, &mut out64);
                for i in 0..n {
                    let want = exp_f32(at(a, i) - at(b, i));
                    assert_eq!(out[i].to_bits(), want.to_bits(), "f32 point {i}, n = {n}");
                    let (x, y) = (f64::from(at(a, i)) * 3.0, f64::from(at(b, i)) * 3.0);
                    let want = exp_f64(x - y);
                    assert_eq!(out64[i].to_bits(), want.to_bits(), "f64 point {i}, n = {n}");
                }
            }
        }
    }

    /// Note [The exp of a difference] in `exec::fused`: one pass gives the bits of `sub` then
    /// `exp`, with either operand a splat or both lines, on and off the normal range (NaN,
    /// infinities, differences that overflow `f32`), in both widths.
    #[test]
    fn exps_of_differences_are_exps_of_the_rounded_differences() {
        let xs: Vec<f32> = (0..3000)
            .map(|k| match k % 500 {
                7 => f32::NAN,
                8 => f32::INFINITY,
                9 => f32::NEG_INFINITY,
                10 => 3.0e38,
                11 => -0.0,
                _ => (k as f32 * 0.37).sin() * 60.0 + (k % 17) as f32,
            })
            .collect();
        let ys: Vec<f32> = (0..3000)
            .map(|k| (k as f32 * 0.11).cos() * 50.0 - 20.0)
            .collect();
        let splats: [&[f32]; 4] = [&[1.5], &[-3.0e38], &[f32::INFINITY], &[0.0]];
        let mut cases: Vec<(&[f32], &[f32])> = vec![(&xs, &ys), (&ys, &xs)];
        for splat in splats {
            cases.extend([(&xs[..], splat), (splat, &ys[..]), (splat, &[2.0f32][..])]);
        }
        for (a, b) in cases {
            let n = a.len().max(b.len());
            fn at<T: Copy>(values: &[T], i: usize) -> T {
                values[if values.len() == 1 { 0 } else { i }]
            }
            let mut out = vec![0.0f32; n];
            exp_of_difference_f32(a, b, &mut out);
            let mut out64 = vec![0.0f64; n];
            let (a64, b64): (Vec<f64>, Vec<f64>) = (
                a.iter().map(|&x| f64::from(x) * 10.0).collect(),
                b.iter().map(|&x| f64::from(x) * 10.0).collect(),
            );
            exp_of_difference_f64(&a64, &b64, &mut out64);
            for i in 0..n {
                let want = exp_f32(at(a, i) - at(b, i));
                assert!(
                    out[i].to_bits() == want.to_bits() || (out[i].is_nan() && want.is_nan()),
                    "{i}: {} - {}: {} vs {want}",
                    at(a, i),
                    at(b, i),
                    out[i]
                );
                let want = exp_f64(at(&a64, i) - at(&b64, i));
                assert!(
                    out64[i].to_bits() == want.to_bits() || (out64[i].is_nan() && want.is_nan()),
                    "{i}: f64 {} vs {want}",
                    out64[i]
                );
            }
        }
    }

    #[test]
    fn exp_f64_sweep() {
        let edges = [
            709.782712893384,
            -708.3964185322641,
            -744.4400719213812,
            -745.1332191019411,
            0.0,
        ];
        check(
            &EXP_F64,
            &sweep::<f64>(&[(-750.0, 712.0), (-1.0, 1.0)], N_SWEEP, &edges),
        );
        check(&EXP_F64, &random_in_f64(2, N_SWEEP, -746.0, 710.0));
    }

    // log: around 1 (cancellation), subnormals, the extremes.

    #[test]
    fn log_f32_sweep() {
        let edges = [
            1.0,
            f32::MIN_POSITIVE,
            f32::MAX,
            std::f32::consts::SQRT_2,
            std::f32::consts::FRAC_1_SQRT_2,
        ];
        check(
            &LOG_F32,
            &sweep::<f32>(&[(0.0, 10.0), (0.9, 1.1), (0.0, 1.0e-37)], N_SWEEP, &edges),
        );
    }

    #[test]
    fn log_f64_sweep() {
        let edges = [
            1.0,
            f64::MIN_POSITIVE,
            f64::MAX,
            std::f64::consts::SQRT_2,
            std::f64::consts::FRAC_1_SQRT_2,
        ];
        check(
            &LOG_F64,
            &sweep::<f64>(&[(0.0, 10.0), (0.9, 1.1), (0.0, 1.0e-307)], N_SWEEP, &edges),
        );
        check(&LOG_F64, &random_in_f64(5, N_SWEEP, 1.0e-320, 1.0e300));
    }

    // tanh: both branches and the switch between them, and where it saturates.

    #[test]
    fn tanh_f32_sweep() {
        let edges = [0.25, -0.25, 9.010913, 1.0e-4];
        check(
            &TANH_F32,
            &sweep::<f32>(&[(-10.0, 10.0), (-1.0, 1.0)], N_SWEEP, &edges),
        );
    }

    #[test]
    fn tanh_f64_sweep() {
        let edges = [0.3, -0.3, 19.061547465398498, 20.0, 1.0e-8];
        check(
            &TANH_F64,
            &sweep::<f64>(&[(-22.0, 22.0), (-1.0, 1.0)], N_SWEEP, &edges),
        );
        check(&TANH_F64, &random_in_f64(8, N_SWEEP, 1.0e-10, 20.0));
    }

    // sin and cos: ordinary arguments, arguments next to multiples of pi/2 (cancellation),
    // and both sides of the fallback threshold.

    /// The floats next to `n pi/2` for `n` in `1..n_multiples`.
    fn near_multiples<T: TestFloat>(n_multiples: usize) -> Vec<T> {
        let mut inputs = Vec::new();
        for n in 1..n_multiples {
            let bits = T::from_f64(n as f64 * std::f64::consts::FRAC_PI_2).raw();
            inputs.extend((bits - 2..=bits + 2).map(T::from_raw));
        }
        inputs
    }

    /// `case` (`sin` or `cos` in f32) on ordinary and huge arguments, on both sides of the
    /// fallback threshold (2^26) and of the f32 kernel's range (8), and next to multiples of
    /// pi/2.
    fn sincos_f32_sweep(case: &Unary<f32>) {
        let edges = [67108864.0, -67108864.0, 1.0e-4, 8.0, -8.0];
        check(
            case,
            &sweep::<f32>(&[(-100.0, 100.0), (-1.0e8, 1.0e8)], N_SWEEP, &edges),
        );
        check(case, &near_multiples::<f32>(20_000));
    }

    #[test]
    fn sin_f32_sweep() {
        sincos_f32_sweep(&SIN_F32);
    }

    /// Note [sin and cos of small f32]: in the f32 kernel's range, within 1 ulp of the
    /// correctly rounded value (f64 `std` rounded once), on a sweep, around every multiple of
    /// pi/2 the range holds, and next to the range's ends.
    #[test]
    fn small_sin_and_cos_f32_are_within_one_ulp_of_the_rounded_value() {
        let (lo, hi) = SINCOS_F32_SMALL;
        let mut inputs = sweep::<f32>(&[(lo, hi)], N_SWEEP, &[lo, hi, 0.0]);
        for n in -5..=5 {
            let bits = ordered(n as f32 * std::f32::consts::FRAC_PI_2);
            inputs.extend((bits - 256..=bits + 256).map(from_ordered::<f32>));
        }
        let inputs: Vec<f32> = inputs
            .into_iter()
            .filter(|x| (lo..=hi).contains(x))
            .collect();
        for (name, ours, wide) in [
            ("sin", sin_f32 as fn(f32) -> f32, f64::sin as fn(f64) -> f64),
            ("cos", cos_f32, f64::cos),
        ] {
            let mut failures = Failures::new(name);
            for &x in &inputs {
                let (got, rounded) = (ours(x), wide(f64::from(x)) as f32);
                failures.record(ulp_distance(got, rounded) <= 1, || {
                    format!("  x = {x:e}: {got:e}, rounded {rounded:e}")
                });
            }
            failures.finish();
        }
    }

    #[test]
    fn cos_f32_sweep() {
        sincos_f32_sweep(&COS_F32);
    }

    /// `case` (`sin` or `cos` in f64) on ordinary and huge arguments, on both sides of the
    /// fallback threshold (2^20), and next to multiples of pi/2.
    fn sincos_f64_sweep(case: &Unary<f64>) {
        let edges = [1048576.0, -1048576.0, 7.450580596923828e-09];
        check(
            case,
            &sweep::<f64>(&[(-100.0, 100.0), (-2.0e6, 2.0e6)], N_SWEEP, &edges),
        );
        check(case, &near_multiples::<f64>(20_000));
    }

    #[test]
    fn sin_f64_sweep() {
        sincos_f64_sweep(&SIN_F64);
    }

    #[test]
    fn cos_f64_sweep() {
        sincos_f64_sweep(&COS_F64);
    }

    // Every function on uniformly random bit patterns (every exponent equally likely), one
    // seed each.

    /// `name: CASE, seed;` is a test `name` that checks `CASE` on `N_BITS` random bit
    /// patterns drawn from `seed`.
    macro_rules! bit_pattern_tests {
        ($($test:ident: $case:ident, $seed:expr;)*) => {$(
            #[test]
            fn $test() {
                check(&$case, &bit_patterns($seed, N_BITS));
            }
        )*};
    }

    bit_pattern_tests! {
        exp_f32_bit_patterns: EXP_F32, 1;
        exp_f64_bit_patterns: EXP_F64, 3;
        log_f32_bit_patterns: LOG_F32, 4;
        log_f64_bit_patterns: LOG_F64, 6;
        tanh_f32_bit_patterns: TANH_F32, 7;
        tanh_f64_bit_patterns: TANH_F64, 9;
        sin_f32_bit_patterns: SIN_F32, 10;
        cos_f32_bit_patterns: COS_F32, 11;
        sin_f64_bit_patterns: SIN_F64, 12;
        cos_f64_bit_patterns: COS_F64, 13;
    }

    // pow: C99's special cases, then sampled pairs.

    /// Values of `x` and `y` whose combinations exercise every special case of `pow`.
    const POW_SPECIALS: [f64; 30] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        2.5,
        -2.5,
        1024.0,
        -1025.0,
        1075.0,
        -1075.0,
        9007199254740991.0,
        -9007199254740992.0,
        4503599627370497.0,
        1.0e300,
        -1.0e300,
        1.0e-310,
        -1.0e-310,
        0.9999999999999999,
        1.0000000000000002,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ];

    /// The C99 (Annex F.10.4.4) value of `pow(x, y)` when one of its special cases applies.
    fn c99_pow_special(x: f64, y: f64) -> Option<f64> {
        let y_is_int = y.is_infinite() || y == y.trunc();
        let y_is_odd = y.is_finite() && y_is_int && (y / 2.0) != (y / 2.0).trunc();
        if y == 0.0 || x == 1.0 {
            return Some(1.0);
        }
        if x.is_nan() || y.is_nan() {
            return Some(f64::NAN);
        }
        if y.is_infinite() {
            return Some(if x.abs() == 1.0 {
                1.0
            } else if (x.abs() > 1.0) == (y > 0.0) {
                f64::INFINITY
            } else {
                0.0
            });
        }
        if x == 0.0 || x.is_infinite() {
            let mag = if (x == 0.0) == (y < 0.0) {
                f64::INFINITY
            } else {
                0.0
            };
            return Some(if x.is_sign_negative() && y_is_odd {
                -mag
            } else {
                mag
            });
        }
        if x < 0.0 && !y_is_int {
            return Some(f64::NAN);
        }
        None
    }

    #[test]
    fn pow_special_values() {
        let mut failures = Failures::new("pow_special_values");
        for &x in &POW_SPECIALS {
            for &y in &POW_SPECIALS {
                let reference = x.powf(y);
                let ours = pow_f64(x, y);
                let mut out = [0.0];
                pow_f64_slice(&[x], &[y], &mut out);
                let expected = c99_pow_special(x, y);
                let ok = acceptable(ours, reference)
                    && same(out[0], ours)
                    && expected.is_none_or(|e| same(ours, e) && same(reference, e));
                failures.record(ok, || {
                    format!("  pow_f64({x:e}, {y:e}): ours {ours:e}, slice {:e}, std {reference:e}, C99 {expected:?}", out[0])
                });
                let (x32, y32) = (x as f32, y as f32);
                let reference = x32.powf(y32);
                let ours = pow_f32(x32, y32);
                let mut out = [0.0];
                pow_f32_slice(&[x32], &[y32], &mut out);
                let expected = c99_pow_special(f64::from(x32), f64::from(y32));
                let ok = acceptable(ours, reference)
                    && same(out[0], ours)
                    && expected.is_none_or(|e| same(ours, e as f32) && same(reference, e as f32));
                failures.record(ok, || {
                    format!("  pow_f32({x32:e}, {y32:e}): ours {ours:e}, slice {:e}, std {reference:e}, C99 {expected:?}", out[0])
                });
            }
        }
        failures.finish();
    }

    /// Pairs for `pow`: all bit patterns, ordinary bases and exponents, bases next to 1 with
    /// large exponents, negative bases with integer exponents, and results near overflow and
    /// underflow.
    fn pow_inputs(seed: u64, n_elems: usize, max_exponent: f64) -> (Vec<f64>, Vec<f64>) {
        let mut rng = Xorshift(seed);
        let mut xs = Vec::with_capacity(n_elems);
        let mut ys = Vec::with_capacity(n_elems);
        for idx in 0..n_elems {
            let (x, y) = match idx % 6 {
                0 => (
                    f64::from_bits(rng.next_u64()),
                    f64::from_bits(rng.next_u64()),
                ),
                1 => (10.0 * rng.next_unit(), 100.0 * (rng.next_unit() - 0.5)),
                2 => (
                    f64::from_bits(rng.next_u64() >> 1),
                    4.0 * (rng.next_unit() - 0.5),
                ),
                3 => {
                    let near_one =
                        1.0 + (rng.next_unit() - 0.5) * (-((rng.next_u64() % 50) as f64)).exp2();
                    let exponent = (rng.next_unit() - 0.5) * ((rng.next_u64() % 70) as f64).exp2();
                    (near_one, exponent)
                }
                4 => (
                    -20.0 * rng.next_unit(),
                    ((rng.next_u64() % 200) as f64) - 100.0,
                ),
                _ => (
                    2.0 * rng.next_unit(),
                    2.0 * max_exponent * (rng.next_unit() - 0.5),
                ),
            };
            xs.push(x);
            ys.push(y);
        }
        (xs, ys)
    }

    /// A grid of bases in `(0, 10]` against exponents in `[-40, 40]`, plus negative bases
    /// against integer exponents.
    fn pow_grid() -> (Vec<f64>, Vec<f64>) {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for x_idx in 1..=300 {
            for y_idx in 0..=300 {
                xs.push(f64::from(x_idx) / 30.0);
                ys.push(f64::from(y_idx) * (80.0 / 300.0) - 40.0);
            }
        }
        for x_idx in 1..=200 {
            for y in -60..=60 {
                xs.push(-f64::from(x_idx) / 20.0);
                ys.push(f64::from(y));
            }
        }
        (xs, ys)
    }

    #[test]
    fn pow_f32_sweep() {
        let (xs, ys) = pow_grid();
        let xs: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
        let ys: Vec<f32> = ys.iter().map(|&y| y as f32).collect();
        check_pow_f32(&xs, &ys);
    }

    #[test]
    fn pow_f64_sweep() {
        let (xs, ys) = pow_grid();
        check_pow_f64(&xs, &ys);
    }

    #[test]
    fn pow_f32_samples() {
        let (xs, ys) = pow_inputs(14, N_BITS, 160.0);
        let mut rng = Xorshift(15);
        // Every sixth value is a random bit pattern instead.
        let mut mixed = |values: &[f64]| -> Vec<f32> {
            values
                .iter()
                .enumerate()
                .map(|(idx, &value)| {
                    if idx % 6 == 0 {
                        f32::from_raw(rng.next_u64())
                    } else {
                        value as f32
                    }
                })
                .collect()
        };
        let xs = mixed(&xs);
        let ys = mixed(&ys);
        check_pow_f32(&xs, &ys);
    }

    /// `pow`'s slice form against its per-element form (same bits) and libm (`MAX_ULP`).
    fn check_pow<T: TestFloat>(
        name: &'static str,
        slice: fn(&[T], &[T], &mut [T]),
        single: fn(T, T) -> T,
        reference: fn(T, T) -> T,
        xs: &[T],
        ys: &[T],
    ) {
        let mut out = vec![T::from_f64(0.0); xs.len()];
        slice(xs, ys, &mut out);
        let mut failures = Failures::new(name);
        for ((&x, &y), &res) in xs.iter().zip(ys).zip(&out) {
            let single = single(x, y);
            let reference = reference(x, y);
            failures.record(same(res, single) && acceptable(res, reference), || {
                format!(
                    "  pow({x:e}, {y:e}): slice {res:e}, per-element {single:e}, std {reference:e}, {} ulp",
                    ulp_distance(res, reference)
                )
            });
        }
        failures.finish();
    }

    fn check_pow_f32(xs: &[f32], ys: &[f32]) {
        check_pow("pow_f32", pow_f32_slice, pow_f32, f32::powf, xs, ys);
    }

    #[test]
    fn pow_f64_samples() {
        let (xs, ys) = pow_inputs(16, N_BITS, 1100.0);
        check_pow_f64(&xs, &ys);
    }

    fn check_pow_f64(xs: &[f64], ys: &[f64]) {
        check_pow("pow_f64", pow_f64_slice, pow_f64, f64::powf, xs, ys);
    }

    #[test]
    fn ulp_distance_orders_floats() {
        assert_eq!(ulp_distance(1.0, f32::from_bits(1.0f32.to_bits() + 2)), 2);
        assert_eq!(ulp_distance(-0.0, 0.0), 1);
        assert_eq!(ulp_distance(-f32::from_bits(1), f32::from_bits(1)), 3);
        assert_eq!(ulp_distance(f32::MAX, f32::INFINITY), 1);
        assert_eq!(ulp_distance(f32::NAN, -f32::NAN), 0);
        assert_eq!(ulp_distance(f32::NAN, 1.0), u64::MAX);
        assert_eq!(ulp_distance(-1.0, -f64::from_bits(1.0f64.to_bits() + 1)), 1);
        assert!(!acceptable(-0.0, 0.0));
    }
}

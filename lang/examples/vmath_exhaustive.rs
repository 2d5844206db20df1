//! Checks the unary f32 functions of `prim::vmath` against the platform's libm over every
//! f32 input (2^32 of them; a minute or two on two cores in a release build):
//!
//! ```text
//! cargo run --release -p dx-lang --example vmath_exhaustive [exp log tanh sin cos]
//! ```
//!
//! For each function it prints the largest distance in ulp from libm (the bound that the
//! module promises is 2) and from the correctly rounded value as far as f64 libm gives it,
//! with an input that reaches each, and fails if any result is more than 2 ulp from libm,
//! differs from it in the sign of a zero, or in being NaN, or if the slice function (in
//! slices of 1024 consecutive inputs, as kernels call it) differs from the per-element one. The test suite samples the same
//! property; this is the whole domain, too slow to run on every change.

use dx_lang::prim::vmath;
use rayon::prelude::*;

/// Distance in ulp between two f32 of the same sign class, counting across zero.
fn ulp_distance(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |v: f32| {
        let bits = v.to_bits() as i64;
        if bits < 0 {
            -(bits & 0x7fff_ffff)
        } else {
            bits
        }
    };
    key(a).abs_diff(key(b))
}

#[derive(Clone, Copy, Default)]
struct Worst {
    vs_libm: (u64, u32),
    vs_true: (u64, u32),
    bad: u64,
    slice_differs: u64,
}

impl Worst {
    fn merge(self, other: Worst) -> Worst {
        Worst {
            vs_libm: self.vs_libm.max(other.vs_libm),
            vs_true: self.vs_true.max(other.vs_true),
            bad: self.bad + other.bad,
            slice_differs: self.slice_differs + other.slice_differs,
        }
    }
}

/// Name, per-element function, slice function, libm's, and f64 libm's.
struct Unary {
    name: &'static str,
    ours: fn(f32) -> f32,
    slice: fn(&[f32], &mut [f32]),
    libm: fn(f32) -> f32,
    wide: fn(f64) -> f64,
}

const FUNCTIONS: [Unary; 5] = [
    Unary {
        name: "exp",
        ours: vmath::exp_f32,
        slice: vmath::exp_f32_slice,
        libm: f32::exp,
        wide: f64::exp,
    },
    Unary {
        name: "log",
        ours: vmath::log_f32,
        slice: vmath::log_f32_slice,
        libm: f32::ln,
        wide: f64::ln,
    },
    Unary {
        name: "tanh",
        ours: vmath::tanh_f32,
        slice: vmath::tanh_f32_slice,
        libm: f32::tanh,
        wide: f64::tanh,
    },
    Unary {
        name: "sin",
        ours: vmath::sin_f32,
        slice: vmath::sin_f32_slice,
        libm: f32::sin,
        wide: f64::sin,
    },
    Unary {
        name: "cos",
        ours: vmath::cos_f32,
        slice: vmath::cos_f32_slice,
        libm: f32::cos,
        wide: f64::cos,
    },
];

/// Slices of this many inputs, as kernels pass them (`exec::lanes::LINE`).
const SLICE: usize = 1024;

fn check(function: &Unary) -> Worst {
    let &Unary {
        ours,
        slice,
        libm,
        wide,
        ..
    } = function;
    (0..=u16::MAX)
        .into_par_iter()
        .map(|high| {
            let mut worst = Worst::default();
            let inputs: Vec<f32> = (0..=u16::MAX)
                .map(|low| f32::from_bits((u32::from(high) << 16) | u32::from(low)))
                .collect();
            let mut sliced = vec![0.0; inputs.len()];
            for (xs, out) in inputs.chunks(SLICE).zip(sliced.chunks_mut(SLICE)) {
                slice(xs, out);
            }
            for (&x, &from_slice) in inputs.iter().zip(&sliced) {
                if ours(x).to_bits() != from_slice.to_bits() {
                    worst.slice_differs += 1;
                }
            }
            for low in 0..=u16::MAX {
                let bits = (u32::from(high) << 16) | u32::from(low);
                let x = f32::from_bits(bits);
                let got = ours(x);
                let reference = libm(x);
                let d = ulp_distance(got, reference);
                let zero_sign =
                    got == 0.0 && reference == 0.0 && got.to_bits() != reference.to_bits();
                if d > 2 || zero_sign {
                    worst.bad += 1;
                }
                worst.vs_libm = worst.vs_libm.max((d, bits));
                let truth = wide(f64::from(x)) as f32;
                worst.vs_true = worst.vs_true.max((ulp_distance(got, truth), bits));
            }
            worst
        })
        .reduce(Worst::default, Worst::merge)
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let mut failed = false;
    for function in &FUNCTIONS {
        let name = function.name;
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        let worst = check(function);
        let show = |(d, bits): (u64, u32)| format!("{d} ulp at {:e}", f32::from_bits(bits));
        println!(
            "{name}_f32: from libm {}, from f64 libm rounded {}, {} inputs beyond 2 ulp, \
             {} where the slice function differs",
            show(worst.vs_libm),
            show(worst.vs_true),
            worst.bad,
            worst.slice_differs
        );
        failed |= worst.bad > 0 || worst.slice_differs > 0;
    }
    if failed {
        std::process::exit(1);
    }
}

"""Checks the transforms `fft.dx` saved (dx's `import fft`) against `numpy.fft` and
`numpy.convolve` on the same inputs, and dx's gradient against `jax.grad`; run in the folder
that holds the `.npy` files.
"""

import sys

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

FAILURES = []


def load(name):
    return np.load(name + ".npy").astype(np.float64)


def complexes(name):
    parts = load(name)
    out = np.empty(parts.shape[:-1], np.complex128)
    out.real = parts[..., 0]
    out.imag = parts[..., 1]
    return out


def check(label, got, want, rtol=1e-4):
    """Each value within `rtol` of the largest magnitude of `want` (float32 FFTs make errors
    of the order of the largest values, not of each one)."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        FAILURES.append(f"{label}: dx's shape {got.shape}, NumPy's {want.shape}")
        return
    scale = max(np.abs(want).max(), 1.0)
    err = np.abs(got - want)
    bad = ~(err <= rtol * scale)
    if bad.any():
        lines = [f"{label}: {bad.sum()} of {bad.size} values differ (largest error {err.max():.3g},"
                 f" allowed {rtol * scale:.3g})"]
        for idx in list(zip(*np.nonzero(bad)))[:6]:
            lines.append(f"  at {idx}: dx {got[idx]!r}, numpy {want[idx]!r}")
        FAILURES.append("\n".join(lines))


for n, suffix in [(1, "1"), (2, "2_"), (8, "8"), (64, "64"), (3, "3"), (5, "5"), (12, "12"),
                  (100, "100")]:
    x = complexes(f"x{n}")
    assert x.shape == (n,), (n, x.shape)
    check(f"fft (size {n})", complexes(f"fft{suffix}"), np.fft.fft(x))
    check(f"ifft (size {n})", complexes(f"ifft{suffix}"), np.fft.ifft(x))

check("bluestein (size 64)", complexes("bluestein64"), np.fft.fft(complexes("x64")))

for n in [16, 10]:
    r = load(f"r{n}")
    check(f"fft_real (size {n})", complexes(f"fft_real{n}"), np.fft.fft(r))
    check(f"ifft_real (size {n})", complexes(f"ifft_real{n}"), np.fft.ifft(r))

for shape in ["48", "35"]:
    m = complexes(f"m{shape}")
    check(f"fft2 ({m.shape[0]}x{m.shape[1]})", complexes(f"fft2_{shape}"), np.fft.fft2(m))
    check(f"ifft2 ({m.shape[0]}x{m.shape[1]})", complexes(f"ifft2_{shape}"), np.fft.ifft2(m))
q = load("q48")
check("fft2_real (4x8)", complexes("fft2_real48"), np.fft.fft2(q))
check("ifft2_real (4x8)", complexes("ifft2_real48"), np.fft.ifft2(q))

r16, r10 = load("r16"), load("r10")
check("convolve", load("convolve"), np.append(np.convolve(r16, r10), 0.0))
check("convolve_complex", complexes("convolve_complex"),
      np.append(np.convolve(complexes("x5"), complexes("x12")), 0.0))


def weighted_power(r):
    n = r.shape[0]
    spectrum = jnp.fft.fft(r)
    return jnp.sum(jnp.arange(1, n + 1) * jnp.abs(spectrum) ** 2 / n)


for n, r in [(16, r16), (10, r10)]:
    check(f"grad of a weighted power spectrum (size {n})", load(f"grad_power{n}"),
          np.asarray(jax.grad(weighted_power)(jnp.asarray(r))), rtol=1e-3)

if FAILURES:
    print("fft: dx and NumPy disagree:\n" + "\n".join(FAILURES))
    sys.exit(1)
print("fft: every transform agrees with numpy.fft")

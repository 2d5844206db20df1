"""Checks the transforms `fft.dx` saved (dx's `import fft`) against `numpy.fft` and
`numpy.convolve` on the same inputs, and dx's gradient against `jax.grad`; run in the folder
that holds the `.npy` files.
"""

import functools

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from checks import close, complexes, failures, finish, load  # noqa: E402

# Each value within `atol` of the largest magnitude of `want` (float32 FFTs make errors of the
# order of the largest values, not of each one); a NaN never agrees.
check = functools.partial(close, rtol=0, atol=1e-4, scale_atol=True, equal_nan=False)


for n, suffix in [(1, "1"), (2, "2_"), (8, "8"), (64, "64"), (3, "3"), (5, "5"), (12, "12"),
                  (100, "100")]:
    x = complexes(f"x{n}")
    if x.shape != (n,):
        failures.append(f"the input of size {n} has shape {x.shape}")
    check(f"fft (size {n})", complexes(f"fft{suffix}"), np.fft.fft(x))
    check(f"ifft (size {n})", complexes(f"ifft{suffix}"), np.fft.ifft(x))

check("bluestein (size 64)", complexes("bluestein64"), np.fft.fft(complexes("x64")))

for n in [16, 10]:
    r = load(f"r{n}", np.float64)
    check(f"fft_real (size {n})", complexes(f"fft_real{n}"), np.fft.fft(r))
    check(f"ifft_real (size {n})", complexes(f"ifft_real{n}"), np.fft.ifft(r))

for shape in ["48", "35"]:
    m = complexes(f"m{shape}")
    check(f"fft2 ({m.shape[0]}x{m.shape[1]})", complexes(f"fft2_{shape}"), np.fft.fft2(m))
    check(f"ifft2 ({m.shape[0]}x{m.shape[1]})", complexes(f"ifft2_{shape}"), np.fft.ifft2(m))
q = load("q48", np.float64)
check("fft2_real (4x8)", complexes("fft2_real48"), np.fft.fft2(q))
check("ifft2_real (4x8)", complexes("ifft2_real48"), np.fft.ifft2(q))

r16, r10 = load("r16", np.float64), load("r10", np.float64)
check("convolve", load("convolve"), np.append(np.convolve(r16, r10), 0.0))
check("convolve_complex", complexes("convolve_complex"),
      np.append(np.convolve(complexes("x5"), complexes("x12")), 0.0))


def weighted_power(r):
    n = r.shape[0]
    spectrum = jnp.fft.fft(r)
    return jnp.sum(jnp.arange(1, n + 1) * jnp.abs(spectrum) ** 2 / n)


for n, r in [(16, r16), (10, r10)]:
    check(f"grad of a weighted power spectrum (size {n})", load(f"grad_power{n}"),
          np.asarray(jax.grad(weighted_power)(jnp.asarray(r))), atol=1e-3)

finish("fft", "numpy.fft, numpy.convolve and JAX")

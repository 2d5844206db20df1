"""Checks the values `complex.dx` saved (dx's `import complex`) against NumPy's complex128
functions (and the gradients against `jax.grad`), run in the folder that holds the `.npy` files.
"""

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from checks import close, complexes, failures, finish, load  # noqa: E402


def check(label, got, want, rtol=1e-4, atol=1e-6):
    """`checks.close` (a NaN never agrees) against NumPy's values rounded to float32 first: dx
    computes in float32, where a value beyond its range is an infinity."""
    want = np.asarray(want)
    with np.errstate(over="ignore"):
        want = want.astype(np.complex64 if np.iscomplexobj(want) else np.float32).astype(want.dtype)
    close(label, got, want, rtol=rtol, atol=atol, equal_nan=False)


z = complexes("z")
w = complexes("w")
s = load("s", np.float64)

# The inputs themselves: the special points keep the sign of a zero imaginary part.
if not (np.signbit(z[49].imag) and not np.signbit(z[48].imag)):
    failures.append("the inputs: signed zeros were not kept")

with np.errstate(all="ignore"):
    check("+", complexes("add"), z + w)
    check("-", complexes("sub"), z - w)
    check("*", complexes("mul"), z * w)
    check("/", complexes("div"), z / w)
    check("complex_division", complexes("division")[z != 0], (w / z)[z != 0])
    check(".*", complexes("scale"), s * z)
    check("neg", complexes("neg"), -z)
    check("sum", complexes("sum"), np.array([z.sum()]), atol=1e-3)
    eq = load("eq")
    check("==", eq, np.stack([z == z, z == w, z != w], axis=1).astype(np.float64), rtol=0)

    check("complex_conj", complexes("conj"), np.conj(z))
    check("complex_abs", load("abs"), np.abs(z) ** 2)
    check("complex_mag", load("mag"), np.abs(z))
    check("complex_arg", load("arg"), np.angle(z))

    # `complex_f` against NumPy's `f`, saved as "f".
    for name in ["exp", "exp2", "log", "log2", "log10", "sqrt",
                 "sin", "cos", "tan", "sinh", "cosh", "tanh"]:
        check(f"complex_{name}", complexes(name), getattr(np, name)(z))
    check("complex_log1p", complexes("log1p"), np.log1p(z), atol=1e-12)
    check("complex_pow", complexes("pow")[z != 0], np.power(z, w)[z != 0])


def mcdonnell_floor(c):
    """McDonnell's complex floor, in float32 arithmetic as dx computes it."""
    re = np.float32(c.real)
    im = np.float32(c.imag)
    fr, fi = np.floor(re), np.floor(im)
    x, y = re - fr, im - fi
    if x + y < np.float32(1):
        return complex(fr, fi)
    return complex(fr + 1, fi) if x >= y else complex(fr, fi + 1)


w3 = (np.float32(3) * load("w", np.float32)).astype(np.float64)
w3 = np.array([complex(re, im) for re, im in w3])
floors = np.array([mcdonnell_floor(c) for c in w3])
check("complex_floor", complexes("floor"), floors, rtol=0, atol=0)
check("complex_ceil", complexes("ceil"), np.array([-mcdonnell_floor(-c) for c in w3]), rtol=0, atol=0)
rounded = np.array([mcdonnell_floor(complex(np.float32(c.real) + np.float32(0.5), c.imag)) for c in w3])
check("complex_round", complexes("round"), rounded, rtol=0, atol=0)
# The floor is a Gaussian integer within distance 1 below-left of the point.
if not np.all(np.abs(w3 - floors) < 1.0 + 1e-6):
    failures.append("complex_floor is more than 1 away")


def complex_grad(f, points):
    """jax.grad of a real function of a complex number in its real and imaginary parts."""
    g = jax.grad(lambda re, im: f(re + 1j * im), argnums=(0, 1))
    return np.array([complex(*map(float, g(p.real, p.imag))) for p in points])


gz = z[:48]
gw = w[:48]
check("grad complex_mag (complex_sin z)", complexes("grad_mag_sin"),
      complex_grad(lambda c: jnp.abs(jnp.sin(c)), gz), rtol=1e-3, atol=1e-5)
check("grad (complex_sqrt z).im", complexes("grad_sqrt_im"),
      complex_grad(lambda c: jnp.sqrt(c).imag, gz), rtol=1e-3, atol=1e-5)
check("grad (complex_log z).re + (complex_tan z).im", complexes("grad_log_tan"),
      complex_grad(lambda c: jnp.log(c).real + jnp.tan(c).imag, gz), rtol=1e-3, atol=1e-5)
grad_div_pow = np.array([
    complex_grad(lambda c, v=v: jnp.abs(jnp.exp(v * jnp.log(c)) / (c + v)) ** 2, [p])[0]
    for p, v in zip(gz, gw)
])
check("grad complex_abs (complex_pow z w / (z + w))", complexes("grad_div_pow"), grad_div_pow,
      rtol=1e-3, atol=1e-5)
check("grad (complex_tanh (complex_exp2 z * complex_cosh z)).re", complexes("grad_tanh_exp"),
      complex_grad(lambda c: jnp.tanh(jnp.exp2(c) * jnp.cosh(c)).real, gz), rtol=1e-3, atol=1e-5)

finish("complex", "NumPy and JAX")

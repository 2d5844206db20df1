"""Checks the values `prelude.dx` saved (functions of the prelude) against `scipy.special`
(`gammaln`, `betaln`, `erf`, `erfc`, `logsumexp`, `softmax`), NumPy (`allclose`, products,
bitwise operations on `uint64`) and `jax.grad` (the gradients). Runs in the folder holding the
`.npy` files."""

import numpy as np
import scipy.special as sp
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import jax.scipy.special as jsp

from checks import close, failures, finish, load, same  # noqa: E402


f64 = lambda name: load(name).astype(np.float64)

# lgamma: Float32 to about 1e-6 absolute (1e-6 relative for large values), Float64 to 1e-9.
for part in ["positive", "negative", "near_one", "near_two"]:
    x = f64(part)
    close(f"lgamma on {part}", load("lgamma_" + part), sp.gammaln(x), rtol=2e-6, atol=2e-6)
close("lgamma in Float64", load("lgamma_positive64"), sp.gammaln(f64("positive")), rtol=1e-9, atol=1e-9)
close("grad lgamma (digamma)", load("digamma_positive"),
      jax.vmap(jax.grad(jsp.gammaln))(jnp.asarray(f64("positive"))), rtol=1e-4, atol=1e-4)

a, b = f64("beta_a"), f64("beta_b")
close("lbeta", load("lbeta"), sp.betaln(a, b), rtol=2e-6, atol=5e-6)
close("grad lbeta", load("lbeta_grad_a"),
      jax.vmap(jax.grad(lambda p, q: jsp.betaln(p, q)))(jnp.asarray(a), jnp.asarray(b)), rtol=1e-4, atol=1e-4)

# erf/erfc: relative 2e-7 in exact arithmetic; Float32 rounding of x*x adds ~6e-8 x^2 to erfc
x = f64("erf_x")
close("erf", load("erf"), sp.erf(x), rtol=1e-6, atol=1e-7)
close("erfc (relative, with the Float32 rounding of x^2)", load("erfc"), sp.erfc(x), rtol=3e-7 + 1e-7 * x.max() ** 2, atol=0)
close("erf around 1/2", load("erf_small"), sp.erf(f64("small_x")), rtol=1e-6, atol=0)
close("erf of tiny arguments (relative)", load("erf_tiny"), sp.erf(f64("tiny_x")), rtol=1e-6, atol=0)
close("grad erf", load("erf_grad"), jax.vmap(jax.grad(jsp.erf))(jnp.asarray(x)), rtol=1e-4, atol=1e-6)
close("grad erfc", load("erfc_grad"), jax.vmap(jax.grad(jsp.erfc))(jnp.asarray(x)), rtol=1e-4, atol=1e-6)
close("erf in Float64", load("erf64"), sp.erf(x), rtol=2e-7, atol=1e-9)
close("erfc in Float64 (relative)", load("erfc64"), sp.erfc(x), rtol=2e-7, atol=0)

# all_close: Dex's |x - y| <= atol + rtol |y| with atol 1e-5, rtol 1e-4 (NumPy's formula),
# computed on the float32 values dx compared
cx, cy = load("close_x"), load("close_y")
diff = np.abs(cx - cy).astype(np.float32)
bound = (np.float32(1e-5) + np.float32(1e-4) * np.abs(cy)).astype(np.float32)
same("all_close on pairs", load("all_close"), (diff <= bound).astype(np.int32))
if not (0 < load("all_close").sum() < len(cx)):
    failures.append("the all_close pairs do not straddle the tolerance")
same("all_close of tables", load("allclose_table"), [int(bool(np.all(diff <= bound))), 1])

# dot, inner, naive_matmul, cumsum_low
w, rows, left = f64("weights"), f64("rows"), f64("left")
close("dot weights rows", load("dot_rows"), w @ rows, rtol=1e-5, atol=1e-5)
close("dot weights weights", load("dot_vec"), w @ w, rtol=1e-5, atol=1e-5)
close("inner", load("inner"), [w @ rows @ left], rtol=1e-5, atol=1e-5)
close("naive_matmul", load("matmul"), rows @ rows.T, rtol=1e-5, atol=1e-5)
close("cumsum_low", load("cumsum_low"), np.concatenate([[0.0], np.cumsum(w)[:-1]]), rtol=1e-5, atol=1e-5)
close("grad of sum (dot s rows)", load("dot_grad"),
      jax.grad(lambda s: jnp.sum(s @ jnp.asarray(rows)))(jnp.asarray(w)), rtol=1e-5, atol=1e-5)

s = f64("scores")
close("logsumexp", load("logsumexp"), [sp.logsumexp(s)], rtol=1e-6, atol=1e-5)
close("softmax", load("softmax"), sp.softmax(s), rtol=1e-5, atol=1e-7)

# bits on uint64; shifts by the width or more give 0 in dx (undefined in C)
wa, wb, k = load("words_a"), load("words_b"), load("shifts")
same("and", load("and"), wa & wb)
same("or", load("or"), wa | wb)
same("xor", load("xor"), wa ^ wb)
shl = np.array([0 if s >= 64 else (int(v) << int(s)) % 2**64 if s >= 0 else int(v)
                for v, s in zip(wa, k)], dtype=np.uint64)
shr = np.array([0 if s >= 64 else int(v) >> int(s) if s >= 0 else int(v)
                for v, s in zip(wa, k)], dtype=np.uint64)
same("shift left", load("shl"), shl)
same("shift right", load("shr"), shr)
same("low_word (Dex's: the upper half)", load("low_word"), (wa >> np.uint64(32)).astype(np.uint32))
same("high_word (Dex's: the lower half)", load("high_word"), (wa & np.uint64(0xFFFFFFFF)).astype(np.uint32))

finish("prelude", "NumPy, SciPy and JAX")

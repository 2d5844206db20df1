"""Checks the values `linalg.dx` saved (the `linalg` library on random matrices of sizes 1, 3
and 8) against NumPy's `linalg`, and its gradients against `jax.grad` of the same functions.
Runs in the folder holding the `.npy` files."""

import functools

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from checks import close, failures, finish, load  # noqa: E402

SIZES = [1, 3, 8]
# float32 results, so atol is relative to the size of the expected values; a NaN never agrees
check = functools.partial(close, rtol=1e-4, atol=1e-5, scale_atol=True, equal_nan=False)


def weights(n):
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.sin(3.0 * i + 7.0 * j + 1.0)


def sym_lower(x):
    # the matrix dx's `chol` sees: only the lower triangle of `x` is read
    return jnp.tril(x) + jnp.tril(x, -1).T


for n in SIZES:
    g, a, m, b, c = (load(f"{name}{n}", np.float64) for name in "gambc")
    check(f"a{n} = g g^T + n I", a, g @ g.T + n * np.eye(n))
    check(f"m{n} = g + 2 I", m, g + 2 * np.eye(n))
    w = weights(n)

    lower_chol = np.linalg.cholesky(a)
    check(f"chol (size {n})", load(f"chol{n}"), lower_chol)
    check(f"forward_substitute (size {n})", load(f"fwd{n}"), np.linalg.solve(lower_chol, b))
    check(f"forward_substitute, matrix right-hand side (size {n})", load(f"fwdmat{n}"), np.linalg.solve(lower_chol, c))
    check(f"backward_substitute (size {n})", load(f"bwd{n}"), np.linalg.solve(lower_chol.T, b))
    check(f"solve, symmetric positive definite (size {n})", load(f"solve_spd{n}"), np.linalg.solve(a, b))
    check(f"solve (size {n})", load(f"solve{n}"), np.linalg.solve(m, b))
    check(f"solve, matrix right-hand side (size {n})", load(f"solvemat{n}"), np.linalg.solve(m, c))
    check(f"invert (size {n})", load(f"inv{n}"), np.linalg.inv(m))

    # lu: apply_permutation perm m == lower ** upper, with partial pivoting's |multipliers| <= 1
    lo, up, perm = load(f"lower{n}", np.float64), load(f"upper{n}", np.float64), load(f"perm{n}")
    if sorted(perm.tolist()) != list(range(n)):
        failures.append(f"lu (size {n}): {perm} is not a permutation")
    check(f"lu: permuted rows = lower ** upper (size {n})", lo @ up, m[perm])
    check(f"lu: unit lower diagonal (size {n})", np.diag(lo), np.ones(n))
    if np.any(np.abs(lo) > 1.0 + 1e-6):
        failures.append(f"lu (size {n}): a multiplier above 1 in magnitude, not partial pivoting")
    check(f"lu: triangular factors (size {n})", np.triu(lo, 1), np.zeros((n, n)))
    check(f"lu: upper below diagonal (size {n})", np.tril(up, -1), np.zeros((n, n)))

    det_a, det_m, sgn, logdet, perm_sign, tr, det_neg, sgn_neg, logdet_neg = load(f"scalars{n}")
    check(f"determinant, positive definite (size {n})", det_a, np.linalg.det(a))
    check(f"determinant (size {n})", det_m, np.linalg.det(m))
    np_sign, np_logdet = np.linalg.slogdet(m)
    check(f"sign_and_log_determinant: sign (size {n})", sgn, np_sign)
    check(f"sign_and_log_determinant: log (size {n})", logdet, np_logdet)
    # -m: a negative determinant for the odd sizes
    check(f"determinant of -m (size {n})", det_neg, np.linalg.det(-m))
    check(f"sign_and_log_determinant of -m (size {n})", [sgn_neg, logdet_neg], np.linalg.slogdet(-m))
    parity = np.linalg.det(np.eye(n)[perm])
    check(f"perm_sign (size {n})", perm_sign, parity)
    check(f"trace (size {n})", tr, np.trace(m))

    p = g / np.sqrt(n + 1.0)
    check(f"matrix_power 0, 3, …, 12 (size {n})", load(f"pow{n}"),
          np.stack([np.linalg.matrix_power(p, 3 * k) for k in range(5)]))

    # gradients against jax.grad of the same functions
    coef = jnp.arange(1, n + 1, dtype=jnp.float64)
    check(f"grad of a function of solve, wrt a (size {n})", load(f"grad_solve{n}"),
          jax.grad(lambda x: jnp.sum(jnp.linalg.solve(x, b) * coef))(m))
    check(f"grad of a function of solve, wrt b (size {n})", load(f"grad_solve_b{n}"),
          jax.grad(lambda y: jnp.sum(jnp.linalg.solve(m, y) * coef))(b))
    check(f"grad log (determinant a) (size {n})", load(f"grad_logdet{n}"),
          jax.grad(lambda x: jnp.log(jnp.linalg.det(x)))(a))
    check(f"grad of sign_and_log_determinant's log (size {n})", load(f"grad_slogdet{n}"),
          jax.grad(lambda x: jnp.linalg.slogdet(x)[1])(m))
    check(f"grad determinant (size {n})", load(f"grad_det{n}"),
          jax.grad(lambda x: jnp.linalg.det(x))(m))
    check(f"grad of a function of chol (size {n})", load(f"grad_chol{n}"),
          jax.grad(lambda x: jnp.sum(jnp.tril(jnp.linalg.cholesky(sym_lower(x))) * w))(a))
    check(f"grad of a function of invert (size {n})", load(f"grad_inv{n}"),
          jax.grad(lambda x: jnp.sum(jnp.linalg.inv(x) * w))(m))
    check(f"grad of a function of matrix_power (size {n})", load(f"grad_pow{n}"),
          jax.grad(lambda x: jnp.sum(jnp.linalg.matrix_power(x, 5) * w))(p))

finish("linalg", f"NumPy/JAX (values and gradients, sizes {SIZES})")

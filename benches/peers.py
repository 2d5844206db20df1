"""The peers of dx: every workload of `workloads.py` in JAX (`jax.jit`, CPU) and NumPy, on
exactly the data the dx templates build (same formulas, same precision), with reference
values for checking dx.

Run by `benches/run` inside the benchmark venv:

    python peers.py --workloads sumsq-1e6,mlp [--quick] [--min-time 1.0]

prints one JSON object per workload on stdout, as soon as it is done:

    {"name", "jax": {"primal_s", "grad_s"}, "numpy": {"primal_s", "grad_s"|null},
     "ref": {"primal": [...], "grad": [...]}, "jax_vs_ref": float, "numpy_vs_ref": float}

Times are medians over at least 5 calls and `--min-time` seconds, after one warm-up call
(which compiles, for JAX), as dx's `%bench` does. JAX results are waited for with
`block_until_ready`; inputs are on the device before timing.

Reference values (`ref`), compared with what the dx templates print:
- primal: the objective computed by NumPy in float64 from the (Float32) inputs, so that neither
  dx's nor JAX's rounding is the reference (for vector-valued primals, a checksum of it);
- grad: checksums of JAX's gradient, each computed in float64:
  chk1(g) = Σᵢ gᵢ² (1.5 + sin(0.1 i)), chk2(G) = Σᵢⱼ Gᵢⱼ² (1.5 + sin(0.1 i + 0.01 j)) —
  positive terms only (no cancellation) and weighted by position (a permuted or transposed
  result changes them).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
import jax.numpy as jnp  # noqa: E402

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workloads import BY_NAME, log_gamma_distrib  # noqa: E402

F32 = np.float32
F64 = np.float64


# ---------------------------------------------------------------- data, as the dx files build it

def ar(n, dt=F32):
    """`n_to_f (ordinal i)` for i in 0..n."""
    return np.arange(n, dtype=dt)


def c(v, dt=F32):
    """A literal, rounded to the element type as dx does."""
    return dt(v)


def wave(fn, a, b, ci, cj, dt=F32):
    """`fn (n_to_f (ordinal i) * ci + n_to_f (ordinal j) * cj)` for an a×b table, in precision dt
    (each operation rounded to dt, in dx's order)."""
    return fn(ar(a, dt)[:, None] * c(ci, dt) + ar(b, dt)[None, :] * c(cj, dt))


# ---------------------------------------------------------------- checksums (float64)

def chk1(g):
    g = np.asarray(g, dtype=F64)
    w = 1.5 + np.sin(0.1 * np.arange(g.shape[0], dtype=F64))
    return float(np.sum(g * g * w))


def chk2(g):
    g = np.asarray(g, dtype=F64)
    i = np.arange(g.shape[0], dtype=F64)[:, None]
    j = np.arange(g.shape[1], dtype=F64)[None, :]
    return float(np.sum(g * g * (1.5 + np.sin(0.1 * i + 0.01 * j))))


def np_logsumexp(x, axis=None):
    m = np.max(x, axis=axis, keepdims=True)
    r = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.squeeze(r, axis=axis) if axis is not None else r.reshape(())


# ---------------------------------------------------------------- workloads
#
# Each builder returns a dict:
#   args:        the inputs (NumPy arrays, in the workload's precision)
#   jax_primal, jax_grad: functions of *args (jitted here)
#   np_primal:   function of *args (NumPy); np_grad: function of *args or None
#   ref_primal:  list of reference values (float64 computation)
#   grad_checks: function of the JAX gradient -> list of checksums
#   primal_checks: function of the JAX primal result -> list (default: [float(y)])


def peers(args, f, np_primal, grad_check, np_grad=None):
    """The peers of most workloads: JAX's `f` and its `jax.grad` (with respect to the first
    argument), NumPy's primal and gradient (None: primal only), and the reference primal:
    NumPy's primal computed in float64 from the same inputs (integer ones, such as labels,
    as they are). `grad_check` (chk1 or chk2) summarises the gradient."""
    return dict(
        args=args,
        jax_primal=f, jax_grad=jax.grad(f),
        np_primal=np_primal, np_grad=np_grad,
        ref_primal=[float(np_primal(*(as_f64(arg) for arg in args)))],
        grad_checks=lambda g: [grad_check(g)],
    )


def as_f64(arg):
    """A float array in float64; an integer array as it is."""
    return arg.astype(F64) if np.issubdtype(arg.dtype, np.floating) else arg


def w_sumsq(s):
    n = s["n"]
    x = np.sin(ar(n) * c(0.37))

    def f(v):
        return jnp.sum(v * v)

    return peers((x,), f, lambda v: np.dot(v, v), chk1, np_grad=lambda v: c(2.0) * v)


def w_dot(s):
    n = s["n"]
    x = c(1.0) + c(0.5) * np.sin(ar(n) * c(0.37))
    y = c(1.0) + c(0.5) * np.cos(ar(n) * c(0.11))

    def f(v, w):
        return jnp.sum(v * w)

    return peers((x, y), f, lambda v, w: np.dot(v, w), chk1, np_grad=lambda v, w: w.copy())


def w_matmul_sumsq(s):
    n = s["n"]
    a = wave(np.sin, n, n, 0.37, 0.11)
    b = wave(np.cos, n, n, 0.13, 0.29)

    def f(m, b):
        cm = m @ b
        return jnp.sum(cm * cm)

    def np_grad(m, b):
        cm = m @ b
        return c(2.0) * (cm @ b.T)

    def np_primal(m, b):
        cm = m @ b
        return np.sum(cm * cm)

    return peers((a, b), f, np_primal, chk2, np_grad=np_grad)


def w_logsumexp(s):
    r, cc = s["rows"], s["cols"]
    x = c(4.0) * wave(np.sin, r, cc, 0.37, 0.11)

    def f(x):
        return jnp.sum(jax.nn.logsumexp(x, axis=1))

    def np_grad(x):
        m = np.max(x, axis=1, keepdims=True)
        e = np.exp(x - m)
        return e / np.sum(e, axis=1, keepdims=True)

    return peers((x,), f, lambda x: np.sum(np_logsumexp(x, axis=1)), chk2, np_grad=np_grad)


def w_softmax_xent(s):
    r, cc = s["rows"], s["cols"]
    z = c(4.0) * wave(np.sin, r, cc, 0.23, 0.17)
    labels = (np.arange(r) * 7) % cc
    rows = np.arange(r)

    def f(z, labels):
        lse = jax.nn.logsumexp(z, axis=1)
        return jnp.mean(lse - z[jnp.arange(z.shape[0]), labels])

    def np_primal(z, labels):
        return np.mean(np_logsumexp(z, axis=1) - z[rows, labels])

    def np_grad(z, labels):
        m = np.max(z, axis=1, keepdims=True)
        e = np.exp(z - m)
        g = e / np.sum(e, axis=1, keepdims=True)
        g[rows, labels] -= c(1.0)
        return g / c(float(r))

    return peers((z, labels), f, np_primal, chk2, np_grad=np_grad)


def w_mlp(s):
    B, I, H, O = s["batch"], s["inp"], s["hid"], s["out"]
    x = wave(np.sin, B, I, 0.37, 0.11)
    w1 = c(0.05) * wave(np.cos, H, I, 0.13, 0.07)
    b1 = c(0.01) * np.sin(ar(H) * c(0.5))
    w2 = c(0.1) * wave(np.sin, O, H, 0.23, 0.19)
    b2 = c(0.01) * np.cos(ar(O) * c(0.3))
    labels = (np.arange(B) * 3) % O
    rows = np.arange(B)

    def f(params, x, labels):
        w1, b1, w2, b2 = params
        h = jnp.tanh(x @ w1.T + b1)
        logits = h @ w2.T + b2
        lse = jax.nn.logsumexp(logits, axis=1)
        return jnp.mean(lse - logits[jnp.arange(logits.shape[0]), labels])

    def np_primal(params, x, labels):
        w1, b1, w2, b2 = params
        h = np.tanh(x @ w1.T + b1)
        logits = h @ w2.T + b2
        return np.mean(np_logsumexp(logits, axis=1) - logits[rows, labels])

    params = (w1, b1, w2, b2)
    return dict(
        args=(params, x, labels),
        jax_primal=f, jax_grad=jax.grad(f),
        np_primal=np_primal, np_grad=None,
        ref_primal=[float(np_primal(tuple(p.astype(F64) for p in params), x.astype(F64),
                                    labels))],
        grad_checks=lambda g: [chk2(g[0]), chk1(g[1]), chk2(g[2]), chk1(g[3])],
    )


def gmm_lidx(d):
    """Index into one icf row of L[j, i] (strictly lower: i < j), and the mask i < j."""
    j = np.arange(d)[:, None]
    i = np.arange(d)[None, :]
    idx = d + i * (2 * d - i - 1) // 2 + (j - i - 1)
    mask = i < j
    return np.where(mask, idx, 0), mask


def w_gmm(s):
    d, k, n = s["d"], s["k"], s["n"]
    gamma, wm = float(s["wishart_gamma"]), int(s["wishart_m"])
    icf_sz = d * (d + 1) // 2
    mlgamma = log_gamma_distrib(0.5 * (d + wm + 1), d)
    alphas = c(0.1, F64) * np.sin(ar(k, F64) * c(0.7, F64))
    means = wave(np.sin, k, d, 0.37, 0.11, F64)
    icf = c(0.1, F64) * wave(np.cos, k, icf_sz, 0.13, 0.05, F64)
    x = wave(np.sin, n, d, 0.29, 0.17, F64)
    lidx, lmask = gmm_lidx(d)

    def make(xp, lse, einsum):
        def obj(alphas, means, icf, x):
            qdiags = xp.exp(icf[:, :d])
            sum_qs = xp.sum(icf[:, :d], axis=1)
            ls = icf[:, lidx] * lmask                       # k, j, i
            xc = x[:, None, :] - means[None, :, :]          # n, k, d
            lxc = qdiags[None] * xc + einsum("kji,nki->nkj", ls, xc)
            main = alphas[None, :] + sum_qs[None, :] - 0.5 * xp.sum(lxc * lxc, axis=2)
            slse = xp.sum(lse(main, axis=1))
            const = -n * d * 0.5 * math.log(2 * math.pi)
            nw = d + wm + 1
            cw = nw * d * (math.log(gamma) - 0.5 * math.log(2)) - mlgamma
            frob = xp.sum(qdiags * qdiags, axis=1) + xp.sum(icf[:, d:] * icf[:, d:], axis=1)
            prior = xp.sum(0.5 * gamma * gamma * frob - wm * sum_qs) - k * cw
            return const + slse - n * lse(alphas, axis=0) + prior
        return obj

    jax_obj = make(jnp, jax.nn.logsumexp, jnp.einsum)
    np_obj = make(np, np_logsumexp, lambda spec, a, b: np.einsum(spec, a, b, optimize=True))
    return dict(
        args=(alphas, means, icf, x),
        jax_primal=jax_obj, jax_grad=jax.grad(jax_obj, argnums=(0, 1, 2)),
        np_primal=np_obj, np_grad=None,
        ref_primal=[float(np_obj(alphas, means, icf, x))],
        grad_checks=lambda g: [chk1(g[0]), chk2(g[1]), chk2(g[2])],
    )


def w_micro_max(s):
    n = s["n"]
    x = np.sin(ar(n) * c(0.37)) - ar(n) / c(float(n))

    def np_grad(v):
        g = np.zeros_like(v)
        g[np.argmax(v)] = c(1.0)
        return g

    return dict(
        args=(x,),
        jax_primal=jnp.max, jax_grad=jax.grad(jnp.max),
        np_primal=np.max, np_grad=np_grad,
        ref_primal=[float(np.max(x))],
        grad_checks=lambda g: [chk1(g)],
    )


def cumprod_workload(s, jax_cumprod):
    """Issue 11: f(x) = Σᵢ Πⱼ≤ᵢ xⱼ. NumPy's gradient is the division formula
    (∂f/∂xₖ = Σ_{i≥k} Pᵢ / xₖ), valid here because no factor is zero."""
    n = s["n"]
    x = c(1.0) + c(0.001) * np.sin(ar(n) * c(0.37))

    def f(v):
        return jnp.sum(jax_cumprod(v))

    def np_grad(v):
        p = np.cumprod(v)
        return np.cumsum(p[::-1])[::-1] / v

    return peers((x,), f, lambda v: np.sum(np.cumprod(v)), chk1, np_grad=np_grad)


def w_cumprod(s):
    return cumprod_workload(s, jnp.cumprod)


def w_cumprod_assoc(s):
    return cumprod_workload(s, lambda v: jax.lax.associative_scan(jnp.multiply, v))


def w_loop(s):
    """Issue 7 §4: a sequential loop, f(x) = aₙ with aᵢ₊₁ = ½aᵢ² + xᵢ. JAX runs `lax.scan`;
    NumPy has no vector form of the recurrence: a Python loop."""
    n = s["n"]
    x = c(0.3) * np.sin(ar(n) * c(0.37))

    def f(v):
        return jax.lax.scan(lambda a, xi: (0.5 * a * a + xi, None), jnp.float32(0.0), v)[0]

    def python_loop(v):
        a = 0.0
        for xi in v.tolist():
            a = 0.5 * a * a + xi
        return a

    return dict(
        args=(x,),
        jax_primal=f, jax_grad=jax.grad(f),
        np_primal=python_loop, np_grad=None,
        ref_primal=[python_loop(x.astype(F64))],
        grad_checks=lambda g: [chk1(g)],
    )


def w_micro_add(s):
    n = s["n"]
    x = np.sin(ar(n) * c(0.37))
    y = np.cos(ar(n) * c(0.11))

    def add(v, w):
        return v + w

    return dict(
        args=(x, y),
        jax_primal=add, jax_grad=jax.jacfwd(add, argnums=0),
        np_primal=add, np_grad=lambda v, w: np.eye(v.shape[0], dtype=F32),
        ref_primal=[chk1(x + y)],
        primal_checks=lambda z: [chk1(z)],
        grad_checks=lambda g: [chk2(g)],
    )


def w_micro_scale(s):
    n = s["n"]
    v = np.sin(ar(n) * c(0.37))
    s0 = np.asarray(1.5, dtype=F32)

    def scale(s, v):
        return s * v

    def dscale(s, v):
        return jax.jvp(lambda t: t * v, (s,), (jnp.ones_like(s),))[1]

    return dict(
        args=(s0, v),
        jax_primal=scale, jax_grad=dscale,
        np_primal=scale, np_grad=lambda s, v: v.copy(),
        ref_primal=[chk1(s0 * v)],
        primal_checks=lambda z: [chk1(z)],
        grad_checks=lambda g: [chk1(g)],
    )


def w_nnmf(s):
    m, n = s["m"], s["n"]
    u = c(1.5) + np.sin(ar(m) * c(0.37))
    v = c(1.5) + np.cos(ar(n) * c(0.11))
    a = c(1.0) + c(0.5) * wave(np.sin, m, n, 0.13, 0.07)

    def f(v, u, a):
        at = u[:, None] * v[None, :]
        return jnp.sum(jnp.log(at) + a / at)

    def np_primal(v, u, a):
        at = u[:, None] * v[None, :]
        return np.sum(np.log(at) + a / at)

    def np_grad(v, u, a):
        # The update rule of Liu et al. (2010) quoted by [Shaikhha23]: Wᵀ (1/(WH) − A/(WH)²).
        at = u[:, None] * v[None, :]
        return u @ (c(1.0) / at - a / (at * at))

    return peers((v, u, a), f, np_primal, chk1, np_grad=np_grad)


def w_histogram(s):
    """`yield_accum` at data indices: a weighted histogram (scatter-add), its loss
    Σₖ sin(hₖ/1000), and the gradient w.r.t. the weights (a gather). JAX: `segment_sum`;
    NumPy: `bincount` (which sums in float64, then rounded to float32)."""
    n, nb = s["n"], s["bins"]
    bins = (((np.arange(n) % 1009) * 7919) % nb).astype(np.int32)
    w = c(1.0) + c(0.5) * np.sin(ar(n) * c(0.37))

    def f(w, bins):
        h = jax.ops.segment_sum(w, bins, num_segments=nb)
        return jnp.sum(jnp.sin(c(0.001) * h))

    def np_hist(w, bins):
        return np.bincount(bins, weights=w, minlength=nb).astype(w.dtype)

    def np_primal(w, bins):
        return np.sum(np.sin(c(0.001, w.dtype.type) * np_hist(w, bins)))

    def np_grad(w, bins):
        h = np_hist(w, bins)
        return (c(0.001) * np.cos(c(0.001) * h))[bins]

    return peers((w, bins), f, np_primal, chk1, np_grad=np_grad)


def newton_step(x, a):
    return x - (x * x * x - a) / (c(3.0) * x * x)


def newton_go(x1, x):
    return jnp.abs(x1 - x) > c(0.00001) * x1


def w_newton(s):
    """A `while` per lane: Newton's iteration for ∛a from x0, until a step moves x by less
    than 10⁻⁵ of itself. JAX's primal is `vmap` of `lax.while_loop` (batched: every lane runs
    until the last is done, as dx). JAX cannot reverse-differentiate `while_loop`, so its
    gradient runs `lax.fori_loop` for K steps, K the largest trip count of any lane (counted
    once here, untimed), each lane's steps masked after its own stop: the same steps as the
    while loop, and `jax.grad` of that. NumPy: the masked loop over whole arrays."""
    n = s["n"]
    a = c(0.5) + c(8.0) * (c(0.5) + c(0.5) * np.sin(ar(n) * c(0.37)))
    x0 = c(0.5) + c(10.0) * (c(0.5) + c(0.5) * np.cos(ar(n) * c(0.11)))

    def cbrt_while(a, x0):
        def body(st):
            x, _ = st
            x1 = newton_step(x, a)
            return x1, newton_go(x1, x)
        return jax.lax.while_loop(lambda st: st[1], body, (x0, jnp.bool_(True)))[0]

    def trips(a, x0):
        def body(st):
            x, _, k = st
            x1 = newton_step(x, a)
            return x1, newton_go(x1, x), k + 1
        return jax.lax.while_loop(lambda st: st[1], body, (x0, jnp.bool_(True), 0))[2]

    k_max = int(jnp.max(jax.jit(jax.vmap(trips))(a, x0)))

    def cbrt_fori(a, x0):
        def body(_, st):
            x, go = st
            x1 = newton_step(x, a)
            return jnp.where(go, x1, x), go & newton_go(x1, x)
        return jax.lax.fori_loop(0, k_max, body, (x0, jnp.bool_(True)))[0]

    def f_while(a, x0):
        return jnp.sum(jax.vmap(cbrt_while)(a, x0))

    def f_fori(a, x0):
        return jnp.sum(jax.vmap(cbrt_fori)(a, x0))

    def np_primal(a, x0):
        x = x0.copy()
        go = np.ones(x.shape, dtype=bool)
        while go.any():
            x1 = x - (x * x * x - a) / (c(3.0, x.dtype.type) * x * x)
            nxt = go & (np.abs(x1 - x) > c(0.00001, x.dtype.type) * x1)
            x = np.where(go, x1, x)
            go = nxt
        return np.sum(x)

    return dict(
        args=(a, x0),
        jax_primal=f_while, jax_grad=jax.grad(f_fori),
        np_primal=np_primal, np_grad=None,
        ref_primal=[float(np.sum(np.cbrt(a.astype(F64))))],
        grad_checks=lambda g: [chk1(g)],
    )


def w_state_sim(s):
    """A state-threaded simulation: a ring of pendulums coupled by springs, stepped T times
    by symplectic Euler; loss Σᵢ x_T[i]², gradient w.r.t. the initial positions. JAX:
    `lax.scan` over the steps carrying (x, v), neighbours by `jnp.roll`; NumPy: a Python loop
    over the steps of whole-array operations."""
    n, steps = s["n"], s["steps"]
    x0 = c(0.5) * np.sin(ar(n) * c(0.37))
    v0 = c(0.1) * np.cos(ar(n) * c(0.11))

    def make(xp, roll, loop):
        def step(x, v):
            dt = c(0.01, x.dtype.type)
            force = ((roll(x, -1) - c(2.0, x.dtype.type) * x) + roll(x, 1)) - xp.sin(x)
            v = v + dt * force
            return x + dt * v, v

        def f(x0, v0):
            x, _ = loop(step, x0, v0)
            return xp.sum(x * x)
        return f

    def scan_loop(step, x, v):
        def body(carry, _):
            return step(*carry), None
        return jax.lax.scan(body, (x, v), None, length=steps)[0]

    def python_loop(step, x, v):
        for _ in range(steps):
            x, v = step(x, v)
        return x, v

    f = make(jnp, jnp.roll, scan_loop)
    np_f = make(np, np.roll, python_loop)
    return peers((x0, v0), f, np_f, chk1)


def one_source_peers(make, args, grad_check):
    """The peers of a workload whose JAX and NumPy versions are one function `make(xp)` of the
    array module: JAX's function and its `jax.grad` (with respect to the first argument),
    NumPy's primal, and the reference primal computed by NumPy in float64 from the same
    inputs; `grad_check` (chk1 or chk2) summarises the gradient."""
    return peers(args, make(jnp), make(np), grad_check)


def w_layernorm(s):
    """Layer norm of each row (mean, biased variance, ε = 1e-5, a scale and a shift per
    column), then Σ tanh; the gradient with respect to X. NumPy: the primal only."""
    r, cc = s["rows"], s["cols"]
    x = c(2.0) * wave(np.sin, r, cc, 0.37, 0.11) + c(0.5)
    gamma = c(1.0) + c(0.5) * np.cos(ar(cc) * c(0.13))
    beta = c(0.1) * np.sin(ar(cc) * c(0.29))

    def make(xp):
        def f(x, gamma, beta):
            n = x.shape[1]
            mu = xp.sum(x, axis=1, keepdims=True) / n
            var = xp.sum((x - mu) ** 2, axis=1, keepdims=True) / n
            y = gamma * ((x - mu) / xp.sqrt(var + 1e-5)) + beta
            return xp.sum(xp.tanh(y))
        return f

    return one_source_peers(make, (x, gamma, beta), chk2)


def w_kmeans(s):
    """The k-means objective Σ_i min_k ‖X_i − C_k‖² and its gradient with respect to the
    centres C (JAX's `min` shares the derivative among ties, as dx's `minimum`). NumPy: the
    primal only."""
    n, k, d = s["n"], s["k"], s["d"]
    xs = wave(np.sin, n, d, 0.37, 0.11)
    cs = c(0.8) * wave(np.cos, k, d, 0.71, 0.23)

    def make(xp):
        def f(cs, xs):
            d2 = xp.sum((xs[:, None, :] - cs[None, :, :]) ** 2, axis=2)
            return xp.sum(xp.min(d2, axis=1))
        return f

    return one_source_peers(make, (cs, xs), chk2)


def w_conv2d(s):
    """A "valid" 2-D convolution (cross-correlation, as dx's stencil) of an H×H image by a
    K×K filter, then Σ tanh; the gradient with respect to the image. JAX: the convolution
    a JAX user writes, `lax.conv_general_dilated`; NumPy: the sum of K² shifted slices
    (primal only)."""
    h, k = s["h"], s["k"]
    o = h - k + 1
    img = wave(np.sin, h, h, 0.37, 0.11)
    w = c(0.2) * wave(np.cos, k, k, 0.71, 0.23)

    def f(x, w):
        y = jax.lax.conv_general_dilated(x[None, None], w[None, None], (1, 1), "VALID")
        return jnp.sum(jnp.tanh(y[0, 0]))

    def np_f(x, w):
        y = sum(x[a:a + o, b:b + o] * w[a, b] for a in range(k) for b in range(k))
        return np.sum(np.tanh(y))

    return peers((img, w), f, np_f, chk2)


def w_rnn(s):
    """A batch of sequences stepped by `h ← tanh(W h + U x_t)` (`lax.scan`), Σ h_T; the
    gradient with respect to W. NumPy: the primal as a Python loop over the steps."""
    t, b, hd, i = s["steps"], s["batch"], s["hid"], s["inp"]
    xs = np.sin(ar(t)[:, None, None] * c(0.37) + ar(b)[None, :, None] * c(0.11)
                + ar(i)[None, None, :] * c(0.07))
    w0 = c(0.1) * wave(np.cos, hd, hd, 0.71, 0.23)
    u = c(0.1) * wave(np.sin, hd, i, 0.31, 0.17)

    def f(w, u, xs):
        def step(h, x):
            return jnp.tanh(h @ w.T + x @ u.T), None
        h, _ = jax.lax.scan(step, jnp.zeros((b, hd), w.dtype), xs)
        return jnp.sum(h)

    def np_f(w, u, xs):
        h = np.zeros((b, hd), w.dtype)
        for x in xs:
            h = np.tanh(h @ w.T + x @ u.T)
        return np.sum(h)

    return peers((w0, u, xs), f, np_f, chk2)


def w_attention(s):
    """Multi-head self-attention without the output projection: q, k, v projections of X by
    (M, H, E) weight tensors, softmax(q kᵀ/√E) v per head, Σ tanh; the gradient with respect
    to X. NumPy: the primal (max-shifted softmax, as the prelude's)."""
    n, m, hd, e = s["n"], s["model"], s["heads"], s["width"]
    x = wave(np.sin, n, m, 0.37, 0.11)

    def weights(fn, cm, ch, ce):
        return c(0.1) * fn(ar(m)[:, None, None] * c(cm) + ar(hd)[None, :, None] * c(ch)
                           + ar(e)[None, None, :] * c(ce))

    wq = weights(np.cos, 0.71, 0.5, 0.23)
    wk = weights(np.sin, 0.31, 0.7, 0.13)
    wv = weights(np.cos, 0.17, 0.3, 0.29)

    def make(xp, softmax):
        def f(x, wq, wk, wv):
            q = xp.einsum("im,mhe->hie", x, wq)
            k = xp.einsum("im,mhe->hie", x, wk)
            v = xp.einsum("im,mhe->hie", x, wv)
            p = softmax(xp.einsum("hie,hje->hij", q, k) / xp.sqrt(x.dtype.type(e)))
            return xp.sum(xp.tanh(xp.einsum("hij,hje->hie", p, v)))
        return f

    def np_softmax(z):
        z = np.exp(z - np.max(z, axis=-1, keepdims=True))
        return z / np.sum(z, axis=-1, keepdims=True)

    f = make(jnp, lambda z: jax.nn.softmax(z, axis=-1))
    np_f = make(np, np_softmax)
    return peers((x, wq, wk, wv), f, np_f, chk2)


def w_nbody(s):
    """The softened potential −Σᵢⱼ mᵢmⱼ/√(‖Pᵢ − Pⱼ‖² + ε²) over all ordered pairs (the
    self-pairs a constant), and its gradient with respect to the positions (minus the forces).
    NumPy: the primal over the n×n×3 differences."""
    n = s["n"]
    pos = c(2.0) * wave(np.sin, n, 3, 0.37, 1.1)
    mass = c(1.0) + c(0.5) * np.cos(ar(n) * c(0.13))

    def make(xp):
        def f(p, mass):
            r2 = xp.sum((p[:, None, :] - p[None, :, :]) ** 2, axis=2) + p.dtype.type(0.01)
            return -xp.sum(mass[:, None] * mass[None, :] / xp.sqrt(r2))
        return f

    return one_source_peers(make, (pos, mass), chk2)


def w_rk4(s):
    """n pendulums θ'' = −sin θ stepped T times by RK4 (h = 0.01) from (θ₀, ω₀), Σ θ_T²;
    the gradient with respect to θ₀. JAX: `lax.fori_loop` over whole arrays (reverse-mode
    differentiable, the trip count being static); NumPy: a Python loop over the steps."""
    n, t = s["n"], s["steps"]
    th0 = c(1.5) * np.sin(ar(n) * c(0.37))
    om0 = c(0.5) * np.cos(ar(n) * c(0.11))

    def make(xp, loop):
        def f(th, om):
            h = th.dtype.type(0.01)
            half, sixth, two = th.dtype.type(0.5), th.dtype.type(1 / 6), th.dtype.type(2.0)

            def step(state):
                th, om = state
                k1t, k1o = om, -xp.sin(th)
                k2t, k2o = om + half * h * k1o, -xp.sin(th + half * h * k1t)
                k3t, k3o = om + half * h * k2o, -xp.sin(th + half * h * k2t)
                k4t, k4o = om + h * k3o, -xp.sin(th + h * k3t)
                return (th + h * sixth * (k1t + two * k2t + two * k3t + k4t),
                        om + h * sixth * (k1o + two * k2o + two * k3o + k4o))
            th, _ = loop(step, (th, om))
            return xp.sum(th * th)
        return f

    def python_loop(step, state):
        for _ in range(t):
            state = step(state)
        return state

    f = make(jnp, lambda step, st: jax.lax.fori_loop(0, t, lambda _, x: step(x), st))
    np_f = make(np, python_loop)
    return peers((th0, om0), f, np_f, chk1)


def w_krr(s):
    """The kernel ridge regression objective Σᵢ (Σⱼ exp(−‖xᵢ − xⱼ‖²/2) αⱼ − yᵢ)² + 0.1 Σ α²
    and its gradient with respect to α. NumPy: the primal over the n×n kernel."""
    n, d = s["n"], s["d"]
    xs = wave(np.sin, n, d, 0.37, 0.11)
    ys = np.cos(ar(n) * c(0.05))
    alpha0 = c(0.01) * np.sin(ar(n) * c(0.7))

    def make(xp):
        def f(alpha, xs, ys):
            d2 = xp.sum((xs[:, None, :] - xs[None, :, :]) ** 2, axis=2)
            k = xp.exp(-alpha.dtype.type(0.5) * d2)
            r = k @ alpha - ys
            return xp.sum(r * r) + alpha.dtype.type(0.1) * xp.sum(alpha * alpha)
        return f

    return one_source_peers(make, (alpha0, xs, ys), chk1)


def w_lstm(s):
    """ADBench's LSTM objective: L layers of cells with elementwise weights over a sequence of
    one-step predictions, each normalised by ADBench's log(Σ exp + 2); minus the mean of
    y·ŷ_norm. The gradient with respect to the cells' weights. JAX: `lax.scan` over the
    steps, the layers unrolled; NumPy: a Python loop (primal only)."""
    nl, steps, b = s["layers"], s["steps"], s["b"]

    def grid3(fn, n0, n1, n2, c0, c1, c2):
        return fn(ar(n0)[:, None, None] * c(c0) + ar(n1)[None, :, None] * c(c1)
                  + ar(n2)[None, None, :] * c(c2))

    w0 = c(0.5) * grid3(np.sin, nl, 4, b, 0.9, 0.37, 0.11)
    bias = c(0.1) * grid3(np.cos, nl, 4, b, 0.7, 0.31, 0.13)
    extra = c(0.5) + c(0.25) * wave(np.sin, 3, b, 1.3, 0.17)
    seq_in = c(0.5) + c(0.5) * wave(np.sin, steps, b, 0.05, 0.29)
    seq_out = c(0.5) + c(0.5) * np.sin((ar(steps) + c(1.0))[:, None] * c(0.05)
                                       + ar(b)[None, :] * c(0.29))
    hid0 = c(0.1) * wave(np.cos, nl, b, 0.5, 0.41)
    cell0 = c(0.1) * wave(np.sin, nl, b, 0.5, 0.43)

    def make(xp):
        def sigmoid(x):
            return 1 / (1 + xp.exp(-x))

        def step(w, bias, extra, hid, cell, x_in, y_out):
            x = x_in * extra[0]
            hs, cs = [], []
            for li in range(nl):
                forget = sigmoid(x * w[li, 0] + bias[li, 0])
                ingate = sigmoid(hid[li] * w[li, 1] + bias[li, 1])
                outgate = sigmoid(x * w[li, 2] + bias[li, 2])
                change = xp.tanh(hid[li] * w[li, 3] + bias[li, 3])
                cell_l = cell[li] * forget + ingate * change
                x = outgate * xp.tanh(cell_l)
                hs.append(x)
                cs.append(cell_l)
            pred = x * extra[1] + extra[2]
            lse = xp.log(xp.sum(xp.exp(pred)) + 2)
            return xp.stack(hs), xp.stack(cs), xp.sum(y_out * (pred - lse))
        return step

    jstep = make(jnp)

    def f(w, bias, extra, seq_in, seq_out, hid0, cell0):
        def body(state, xs):
            hid, cell, total = jstep(w, bias, extra, state[0], state[1], xs[0], xs[1])
            return (hid, cell), total
        _, totals = jax.lax.scan(body, (hid0, cell0), (seq_in, seq_out))
        return -jnp.sum(totals) / (steps * b)

    nstep = make(np)

    def np_f(w, bias, extra, seq_in, seq_out, hid0, cell0):
        hid, cell, total = hid0, cell0, 0.0
        for t in range(steps):
            hid, cell, step_total = nstep(w, bias, extra, hid, cell, seq_in[t], seq_out[t])
            total += step_total
        return -total / (steps * b)

    args = (w0, bias, extra, seq_in, seq_out, hid0, cell0)
    return peers(args, f, np_f, lambda g: chk2(np.asarray(g).reshape(nl * 4, b)))


def w_ba(s):
    """ADBench's bundle adjustment objective: per observation, Rodrigues rotation of the point
    about its camera's centre, perspective division, radial distortion, focal length and
    principal point; Σ (w (proj − feat))² + Σ (1 − w²)². The gradient with respect to the
    cameras (JAX gathers the rows of each observation and scatter-adds their cotangents).
    NumPy: the primal."""
    nc, npt, no = s["cams"], s["points"], s["obs"]
    cams = c(0.3) * wave(np.sin, nc, 11, 0.7, 0.37)
    cams[:, 6] += c(1.0)
    pts = wave(np.sin, npt, 3, 0.11, 1.3)
    pts[:, 2] += c(4.0)
    ws = c(0.8) + c(0.1) * np.sin(ar(no) * c(0.05))
    feats = c(0.2) * wave(np.cos, no, 2, 0.03, 0.9)
    cam_of = np.arange(no) % nc
    pt_of = (np.arange(no) * 7) % npt

    def make(xp):
        def f(cams, pts, ws, feats):
            cam = cams[cam_of]
            x = pts[pt_of] - cam[:, 3:6]
            rot = cam[:, 0:3]
            theta = xp.sqrt(xp.sum(rot * rot, axis=1, keepdims=True))
            w = rot / theta
            cos_t, sin_t = xp.cos(theta), xp.sin(theta)
            tmp = xp.sum(w * x, axis=1, keepdims=True) * (1 - cos_t)
            xc = x * cos_t + xp.cross(w, x) * sin_t + w * tmp
            p = xc[:, 0:2] / xc[:, 2:3]
            rsq = xp.sum(p * p, axis=1, keepdims=True)
            distortion = 1 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq
            proj = p * distortion * cam[:, 6:7] + cam[:, 7:9]
            r = ws[:, None] * (proj - feats)
            return xp.sum(r * r) + xp.sum((1 - ws * ws) ** 2)
        return f

    return one_source_peers(make, (cams, pts, ws, feats), chk2)


BUILDERS = {
    "sumsq.dx": w_sumsq,
    "dot.dx": w_dot,
    "matmul_sumsq.dx": w_matmul_sumsq,
    "logsumexp.dx": w_logsumexp,
    "softmax_xent.dx": w_softmax_xent,
    "mlp.dx": w_mlp,
    "gmm.dx": w_gmm,
    "micro_max.dx": w_micro_max,
    "cumprod.dx": w_cumprod,
    "loop.dx": w_loop,
    "micro_add.dx": w_micro_add,
    "micro_scale.dx": w_micro_scale,
    "nnmf.dx": w_nnmf,
    "histogram.dx": w_histogram,
    "newton.dx": w_newton,
    "state_sim.dx": w_state_sim,
    "layernorm.dx": w_layernorm,
    "kmeans.dx": w_kmeans,
    "conv2d.dx": w_conv2d,
    "rnn.dx": w_rnn,
    "attention.dx": w_attention,
    "nbody.dx": w_nbody,
    "rk4.dx": w_rk4,
    "krr.dx": w_krr,
    "lstm.dx": w_lstm,
    "ba.dx": w_ba,
}

# Workloads that share a dx template but differ in the peer's program.
BUILDERS_BY_NAME = {
    "cumprod-assoc-1e6": w_cumprod_assoc,
}


# ---------------------------------------------------------------- timing

def median_time(call, min_time, min_runs=5):
    call()  # warm-up (compiles, for JAX)
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def rel_diff(a, b):
    return max((abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b)), default=0.0)


def as_list(values):
    return [float(v) for v in values]


def run_one(name, quick, min_time):
    w = BY_NAME[name]
    spec = BUILDERS_BY_NAME.get(name, BUILDERS[w.template])(w.sizes(quick))
    args = spec["args"]
    jargs = jax.tree_util.tree_map(jnp.asarray, args)
    jax.block_until_ready(jargs)
    jp = jax.jit(spec["jax_primal"])
    jg = jax.jit(spec["jax_grad"])
    out = {"name": name, "sizes": w.sizes(quick), "jax": {}, "numpy": {}}

    y = jax.block_until_ready(jp(*jargs))
    g = jax.block_until_ready(jg(*jargs))
    primal_checks = spec.get("primal_checks", lambda y: [float(y)])
    ref = {"primal": as_list(spec["ref_primal"]), "grad": as_list(spec["grad_checks"](g))}
    out["ref"] = ref
    out["jax_vs_ref"] = rel_diff(as_list(primal_checks(y)), ref["primal"])

    t, runs = median_time(lambda: jax.block_until_ready(jp(*jargs)), min_time)
    out["jax"]["primal_s"], out["jax"]["primal_runs"] = t, runs
    t, runs = median_time(lambda: jax.block_until_ready(jg(*jargs)), min_time)
    out["jax"]["grad_s"], out["jax"]["grad_runs"] = t, runs

    ny = spec["np_primal"](*args)
    out["numpy_vs_ref"] = rel_diff(as_list(primal_checks(ny)), ref["primal"])
    t, runs = median_time(lambda: spec["np_primal"](*args), min_time)
    out["numpy"]["primal_s"], out["numpy"]["primal_runs"] = t, runs
    if spec.get("np_grad") is not None:
        ng = spec["np_grad"](*args)
        out["numpy_grad_vs_jax"] = rel_diff(as_list(spec["grad_checks"](ng)), ref["grad"])
        t, runs = median_time(lambda: spec["np_grad"](*args), min_time)
        out["numpy"]["grad_s"], out["numpy"]["grad_runs"] = t, runs
    else:
        out["numpy"]["grad_s"] = None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", required=True, help="comma-separated workload names")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--min-time", type=float, default=1.0)
    opts = ap.parse_args()
    print(json.dumps({"versions": {"jax": jax.__version__, "numpy": np.__version__,
                                   "devices": [str(d) for d in jax.devices()]}}), flush=True)
    for name in opts.workloads.split(","):
        try:
            res = run_one(name, opts.quick, opts.min_time)
        except Exception as err:  # report and go on with the next workload
            res = {"name": name, "error": f"{type(err).__name__}: {err}"}
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()

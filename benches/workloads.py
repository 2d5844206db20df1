"""The benchmark workloads: names, sizes (full and --quick), the dx template each one runs,
and what limits it (bytes that must move, or floating-point operations).

Imported both by the driver `benches/run` (system Python, standard library only) and by
`benches/peers.py` (the venv with NumPy and JAX), so it must stay standard-library only.

Every template `benches/dx/NAME.dx` is a runnable dx file at full size. Lines marked
`-- @param KEY` get the first number after their `=` replaced by the workload's value for KEY;
the lines `-- @primal` and `-- @grad` split the file into a set-up part and the two timed parts.
"""

import math


class Workload:
    def __init__(self, name, template, dtype, kind, full, quick, primal_cost, grad_cost,
                 what, limit, numpy_grad=False):
        self.name = name
        self.template = template      # file name under benches/dx/
        self.dtype = dtype            # "f32" or "f64"
        self.kind = kind              # "bandwidth" (bytes) or "gemm" (flops)
        self.full = full              # sizes at full scale
        self.quick = quick            # sizes for --quick
        self.primal_cost = primal_cost  # sizes -> bytes (bandwidth) or flops (gemm)
        self.grad_cost = grad_cost
        self.what = what              # one-line formula
        self.limit = limit            # what limits it, for the docs
        self.numpy_grad = numpy_grad  # whether peers.py has a hand-written NumPy gradient

    def sizes(self, quick):
        return dict(self.quick if quick else self.full)

    def params(self, quick):
        """Sizes plus derived values that the template needs (constants computed here)."""
        p = self.sizes(quick)
        if self.template == "gmm.dx":
            d, m = p["d"], p["wishart_m"]
            p["icf_sz"] = d * (d + 1) // 2
            p["mlgamma"] = log_gamma_distrib(0.5 * (d + m + 1), d)
        if self.template == "conv2d.dx":
            p["o"] = p["h"] - p["k"] + 1
        return p


def log_gamma_distrib(a, p):
    """log of the multivariate gamma function Γ_p(a) (ADBench's `log_gamma_distrib`)."""
    return 0.25 * p * (p - 1) * math.log(math.pi) + sum(
        math.lgamma(a + 0.5 * (1 - j)) for j in range(1, p + 1))


F32, F64 = 4, 8


def _mlp_fwd_flops(s):
    return 2 * s["batch"] * (s["inp"] * s["hid"] + s["hid"] * s["out"])


def _mlp_grad_flops(s):
    # forward, then dW2 and dH (2·B·H·O each) and dW1 (2·B·I·H); no gradient w.r.t. the input.
    return _mlp_fwd_flops(s) + 2 * s["batch"] * (s["inp"] * s["hid"] + 2 * s["hid"] * s["out"])


def _gmm_flops(s):
    # The dense (JAX-style) triangular product L·(x − μ) for every point and component.
    return 2 * s["n"] * s["k"] * s["d"] * s["d"]


def _cumprod(name, what):
    """`cumprod.dx` at 10⁶ elements; the workloads differ in their JAX peer (`what` names it)."""
    return Workload(name, "cumprod.dx", "f32", "bandwidth", {"n": 10**6}, {"n": 10**4},
                    lambda s: F32 * s["n"], lambda s: 3 * F32 * s["n"], what,
                    "bandwidth (the scans run chunk-parallel, not fused)", numpy_grad=True)


WORKLOADS = [
    Workload("sumsq-1e6", "sumsq.dx", "f32", "bandwidth", {"n": 10**6}, {"n": 10**4},
             lambda s: F32 * s["n"], lambda s: 2 * F32 * s["n"],
             "f(x) = Σᵢ xᵢ², ∇ₓ = 2x", "bandwidth (4 MB: fits in L3)", numpy_grad=True),
    Workload("sumsq-1e7", "sumsq.dx", "f32", "bandwidth", {"n": 10**7}, {"n": 10**5},
             lambda s: F32 * s["n"], lambda s: 2 * F32 * s["n"],
             "f(x) = Σᵢ xᵢ², ∇ₓ = 2x", "bandwidth", numpy_grad=True),
    # The gradient of dot is the input y: nothing need move (dx hands y back; the peers copy
    # it), so no fraction of the bandwidth is shown for it. micro-scale-deriv likewise.
    Workload("dot-1e6", "dot.dx", "f32", "bandwidth", {"n": 10**6}, {"n": 10**4},
             lambda s: 2 * F32 * s["n"], lambda s: 0,
             "f(x) = Σᵢ xᵢyᵢ, ∇ₓ = y ([Shaikhha23] micro benchmark 1)", "bandwidth (8 MB: L3)",
             numpy_grad=True),
    Workload("dot-1e7", "dot.dx", "f32", "bandwidth", {"n": 10**7}, {"n": 10**5},
             lambda s: 2 * F32 * s["n"], lambda s: 0,
             "f(x) = Σᵢ xᵢyᵢ, ∇ₓ = y", "bandwidth", numpy_grad=True),
    Workload("matmul-sumsq-256", "matmul_sumsq.dx", "f32", "gemm", {"n": 256}, {"n": 32},
             lambda s: 2 * s["n"] ** 3, lambda s: 4 * s["n"] ** 3,
             "f(A) = Σᵢⱼ ((AB)ᵢⱼ)², ∇_A = 2(AB)Bᵀ", "GEMM", numpy_grad=True),
    Workload("matmul-sumsq-1024", "matmul_sumsq.dx", "f32", "gemm", {"n": 1024}, {"n": 64},
             lambda s: 2 * s["n"] ** 3, lambda s: 4 * s["n"] ** 3,
             "f(A) = Σᵢⱼ ((AB)ᵢⱼ)², ∇_A = 2(AB)Bᵀ", "GEMM", numpy_grad=True),
    Workload("logsumexp", "logsumexp.dx", "f32", "bandwidth",
             {"rows": 4096, "cols": 1000}, {"rows": 64, "cols": 100},
             lambda s: F32 * s["rows"] * s["cols"], lambda s: 2 * F32 * s["rows"] * s["cols"],
             "f(X) = Σ_r logsumexp_c X[r,c], ∇ = row-wise softmax", "bandwidth + exp",
             numpy_grad=True),
    Workload("softmax-xent", "softmax_xent.dx", "f32", "bandwidth",
             {"rows": 4096, "cols": 1000}, {"rows": 64, "cols": 100},
             lambda s: F32 * s["rows"] * s["cols"], lambda s: 2 * F32 * s["rows"] * s["cols"],
             "f(Z) = mean_r (logsumexp Z[r] − Z[r, label r]), ∇ = (softmax − onehot)/R",
             "bandwidth + exp", numpy_grad=True),
    Workload("mlp", "mlp.dx", "f32", "gemm",
             {"batch": 1024, "inp": 784, "hid": 256, "out": 10},
             {"batch": 32, "inp": 64, "hid": 32, "out": 10},
             _mlp_fwd_flops, _mlp_grad_flops,
             "784-256-10 tanh MLP with biases, mean softmax cross-entropy, ∇ w.r.t. all weights",
             "GEMM (X·W1ᵀ dominates)"),
    Workload("gmm", "gmm.dx", "f64", "gemm",
             {"d": 64, "k": 50, "n": 10**4, "wishart_gamma": 1.0, "wishart_m": 0},
             {"d": 4, "k": 3, "n": 50, "wishart_gamma": 1.0, "wishart_m": 0},
             _gmm_flops, lambda s: 3 * _gmm_flops(s),
             "ADBench GMM objective with Wishart prior, ∇ w.r.t. (α, μ, icf)",
             "batched d×d products (GEMM-like) + exp/log"),
    Workload("micro-max", "micro_max.dx", "f32", "bandwidth", {"n": 10**6}, {"n": 10**4},
             lambda s: F32 * s["n"], lambda s: 2 * F32 * s["n"],
             "f(x) = maxᵢ xᵢ, ∇ₓ = one-hot at the argmax ([Shaikhha23] micro 2)",
             "bandwidth (a parallel monoid reduce)", numpy_grad=True),
    _cumprod("cumprod-1e6",
             "f(x) = Σᵢ Πⱼ≤ᵢ xⱼ, ∇ by [Paszke21]'s parallel scans (peer: jnp.cumprod)"),
    _cumprod("cumprod-assoc-1e6", "f(x) = Σᵢ Πⱼ≤ᵢ xⱼ (peer: lax.associative_scan)"),
    Workload("loop-1e6", "loop.dx", "f32", "bandwidth", {"n": 10**6}, {"n": 10**4},
             lambda s: F32 * s["n"], lambda s: 3 * F32 * s["n"],
             "f(x) = aₙ, aᵢ₊₁ = ½aᵢ² + xᵢ: a sequential fold (peer: lax.scan)",
             "latency of the carried chain: a scalar loop, nanoseconds a step"),
    Workload("micro-add-jacobian", "micro_add.dx", "f32", "bandwidth", {"n": 2000}, {"n": 50},
             lambda s: 3 * F32 * s["n"], lambda s: F32 * s["n"] ** 2,
             "f(x) = x + y, J = ∂f/∂x = I (n×n) ([Shaikhha23] micro 3)", "bandwidth (writing n²)",
             numpy_grad=True),
    Workload("micro-scale-deriv", "micro_scale.dx", "f32", "bandwidth",
             {"n": 10**6}, {"n": 10**4},
             lambda s: 2 * F32 * s["n"], lambda s: 0,
             "f(s) = s·v, ∂f/∂s = v (one forward pass) ([Shaikhha23] micro 4)", "bandwidth",
             numpy_grad=True),
    Workload("nnmf", "nnmf.dx", "f32", "bandwidth", {"m": 4096, "n": 4096}, {"m": 64, "n": 64},
             lambda s: F32 * s["m"] * s["n"], lambda s: F32 * s["m"] * s["n"],
             "D(v) = Σᵢⱼ log(uᵢvⱼ) + Aᵢⱼ/(uᵢvⱼ), ∇_v = uᵀ(1/uvᵀ − A/(uvᵀ)²) ([Shaikhha23] NNMF)",
             "bandwidth + log/div", numpy_grad=True),
    # Effects (docs/language.md "Effects"): what they lower to, timed against JAX's forms.
    Workload("histogram", "histogram.dx", "f32", "bandwidth",
             {"n": 10**7, "bins": 1000}, {"n": 10**5, "bins": 100},
             lambda s: 2 * F32 * s["n"], lambda s: 3 * F32 * s["n"],
             "h = yield_accum (h!(bin[i] @ B) += w[i]), f(w) = Σₖ sin(hₖ/1000), ∇_w",
             "bandwidth: a scatter-add at data indices (peer: segment_sum)", numpy_grad=True),
    Workload("newton", "newton.dx", "f32", "bandwidth", {"n": 10**6}, {"n": 10**4},
             lambda s: 2 * F32 * s["n"], lambda s: 3 * F32 * s["n"],
             "Σᵢ ∛aᵢ by Newton in a `while` per lane (3-11 steps), ∇_a (peer: vmap of "
             "lax.while_loop; its gradient lax.fori_loop)",
             "compute: lanes × the largest trip count, a division a step"),
    Workload("state_sim", "state_sim.dx", "f32", "bandwidth",
             {"n": 10**4, "steps": 1000}, {"n": 100, "steps": 50},
             lambda s: 3 * F32 * s["n"], lambda s: 3 * F32 * s["n"],
             "ring of coupled pendulums stepped T times in with_state, f = Σ x_T², ∇_x0 "
             "(peer: lax.scan)",
             "a sequential loop over steps of a few maps each (the state fits in L2)"),
    # Ordinary programs nobody tuned the engine for (docs/performance.md).
    Workload("layernorm", "layernorm.dx", "f32", "bandwidth",
             {"rows": 4096, "cols": 512}, {"rows": 64, "cols": 32},
             lambda s: F32 * s["rows"] * s["cols"], lambda s: 2 * F32 * s["rows"] * s["cols"],
             "f(X) = Σ tanh(γ (X − μ_row)/√(σ²_row + ε) + β), ∇_X",
             "bandwidth: two reductions and a map per row"),
    Workload("kmeans", "kmeans.dx", "f32", "gemm",
             {"n": 100000, "k": 32, "d": 16}, {"n": 1000, "k": 8, "d": 4},
             lambda s: 3 * s["n"] * s["k"] * s["d"], lambda s: 6 * s["n"] * s["k"] * s["d"],
             "f(C) = Σᵢ minₖ ‖Xᵢ − Cₖ‖², ∇_C",
             "compute: n·k·d differences, squares and sums, then a minimum per point"),
    Workload("conv2d", "conv2d.dx", "f32", "gemm",
             {"h": 512, "k": 5}, {"h": 32, "k": 3},
             lambda s: 2 * (s["h"] - s["k"] + 1) ** 2 * s["k"] ** 2,
             lambda s: 4 * (s["h"] - s["k"] + 1) ** 2 * s["k"] ** 2,
             "f(X) = Σᵢⱼ tanh(Σₐᵦ X[i+a, j+b] W[a, b]) (valid), ∇_X (peer: "
             "lax.conv_general_dilated)",
             "compute: K² multiply-adds per output, shifted reads; the gradient a transposed "
             "stencil"),
    Workload("rnn", "rnn.dx", "f32", "gemm",
             {"steps": 100, "batch": 64, "hid": 128, "inp": 32},
             {"steps": 10, "batch": 4, "hid": 16, "inp": 8},
             lambda s: 2 * s["steps"] * s["batch"] * s["hid"] * (s["hid"] + s["inp"]),
             lambda s: 6 * s["steps"] * s["batch"] * s["hid"] * (s["hid"] + s["inp"]),
             "h ← tanh(W h + U xₜ) for T steps in a `fold`, f(W) = Σ h_T, ∇_W (peer: lax.scan)",
             "a sequential loop of small matrix products (64×128 by 128×128 a step)"),
    Workload("attention", "attention.dx", "f32", "gemm",
             {"n": 256, "model": 128, "heads": 4, "width": 32},
             {"n": 16, "model": 16, "heads": 2, "width": 4},
             lambda s: 2 * s["n"] * s["model"] * 3 * s["heads"] * s["width"]
             + 4 * s["heads"] * s["n"] * s["n"] * s["width"],
             lambda s: 3 * (2 * s["n"] * s["model"] * 3 * s["heads"] * s["width"]
                            + 4 * s["heads"] * s["n"] * s["n"] * s["width"]),
             "f(X) = Σ tanh(softmax(q kᵀ/√E) v) per head, q k v = X·W, ∇_X (peer: einsum)",
             "compute: three projections and two products per head, a softmax per row"),
    Workload("nbody", "nbody.dx", "f32", "gemm", {"n": 2048}, {"n": 64},
             lambda s: 12 * s["n"] ** 2, lambda s: 36 * s["n"] ** 2,
             "f(P) = −Σᵢⱼ mᵢmⱼ/√(‖Pᵢ − Pⱼ‖² + ε²), ∇_P (minus the forces)",
             "compute: n² pairs, each a 3-D distance, a square root and a division"),
    Workload("rk4", "rk4.dx", "f32", "bandwidth", {"n": 10**5, "steps": 100},
             {"n": 1000, "steps": 10},
             lambda s: 2 * F32 * s["n"], lambda s: 3 * F32 * s["n"],
             "n pendulums by RK4 for T steps in a `fold` of a pair, f(θ₀) = Σ θ_T², ∇_θ₀ "
             "(peer: lax.fori_loop)",
             "compute: four sines and ~30 flops a pendulum a step; the state fits in L2"),
    Workload("krr", "krr.dx", "f32", "gemm", {"n": 2048, "d": 8}, {"n": 64, "d": 4},
             lambda s: (3 * s["d"] + 4) * s["n"] ** 2,
             lambda s: 2 * (3 * s["d"] + 4) * s["n"] ** 2,
             "f(α) = Σᵢ (Σⱼ exp(−‖xᵢ − xⱼ‖²/2) αⱼ − yᵢ)² + 0.1‖α‖², ∇_α",
             "compute: n² pairs of a d-dimensional distance and an exp"),
    Workload("lstm", "lstm.dx", "f32", "bandwidth", {"layers": 2, "steps": 1023, "b": 14},
             {"layers": 2, "steps": 20, "b": 4},
             lambda s: 2 * F32 * s["steps"] * s["b"], lambda s: 3 * F32 * s["steps"] * s["b"],
             "ADBench's LSTM objective, L layers of elementwise-weight cells over C steps, "
             "∇ w.r.t. the weights (peer: lax.scan)",
             "latency: a chain of 1023 steps of vectors of 14"),
    Workload("ba", "ba.dx", "f32", "bandwidth", {"cams": 16, "points": 2048, "obs": 8192},
             {"cams": 4, "points": 32, "obs": 64},
             lambda s: F32 * s["obs"] * (11 + 3 + 3), lambda s: F32 * s["obs"] * (2 * 11 + 3 + 3),
             "ADBench's BA objective Σ ‖w (proj − feat)‖² + Σ (1 − w²)², ∇ w.r.t. the cameras",
             "gathers of each observation's camera and point, ~100 flops, a scatter-add "
             "into the cameras"),
]

BY_NAME = {w.name: w for w in WORKLOADS}


def select(only):
    """Workloads whose name matches one of the comma-separated filters (exact name or
    substring); all of them when `only` is empty."""
    if not only:
        return list(WORKLOADS)
    keys = [k.strip() for k in only.split(",") if k.strip()]
    chosen = [w for w in WORKLOADS if any(k == w.name for k in keys)]
    chosen += [w for w in WORKLOADS
               if w not in chosen and any(k in w.name for k in keys)]
    return [w for w in WORKLOADS if w in chosen]

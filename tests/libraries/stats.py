"""Checks the values `stats.dx` saved (the `stats` library) against `jax.scipy.stats` (log
densities and their gradients, by `jax.grad`), `scipy.stats` (log CDFs, log survivor functions
and quantiles, in float64), NumPy (log-space arithmetic, data summaries) and the moments and
frequencies of the distributions (the draws). Runs in the folder holding the `.npy` files."""

import functools

import numpy as np
import scipy.special
import scipy.stats

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
import jax.scipy.stats as jst  # noqa: E402

import checks  # noqa: E402
from checks import failures, finish, load  # noqa: E402

jit = jax.jit
close = functools.partial(checks.close, rtol=1e-4, atol=1e-5)  # this script's default tolerances


def log_values(label, got, logpdf, logcdf, logsf, atol=5e-5, prob_atol=None):
    """The [log density, log CDF, log survivor] rows of a distribution. With `prob_atol`, a
    log CDF or survivor value is also accepted when the probabilities agree to `prob_atol`
    (Dex's Poisson survivor function is `log1p (-cdf)`, which cancels in float32)."""
    close(f"{label} log density", got[:, 0], logpdf, atol=atol)
    for col, want, name in ((1, logcdf, "log CDF"), (2, logsf, "log survivor function")):
        ok = None
        if prob_atol is not None:
            ok = np.abs(np.exp(got[:, col]) - np.exp(want)) <= prob_atol
        close(f"{label} {name}", got[:, col], want, atol=atol, ok=ok)


def discrete_quantile(label, got, dist, qs):
    """Quantiles of a discrete distribution: SciPy's `ppf`, except where `q` is within 1e-5
    of a value of the CDF (float32 sums may round either way there)."""
    want = dist.ppf(qs)
    ks = np.arange(0, 200)
    cdf = dist.cdf(ks[:, None])
    near_tie = np.min(np.abs(cdf - qs[None, :]), axis=0) < 1e-5
    close(f"{label} quantile", got, want, rtol=0, atol=0, ok=near_tie)


def grad_of(f, *args):
    """`jax.grad` of a scalar function in its first argument, mapped over the points (the
    first axis of every argument)."""
    return np.asarray(jax.jit(jax.vmap(jax.grad(f)))(*(jnp.asarray(a, jnp.float64) for a in args)))


def moments(label, xs, mean, var, prob=None, pmf=None, ks=None):
    """Sample mean and variance within 5 standard errors of the true ones; with `pmf`, the
    frequencies of the values `ks` within 5 standard errors of their probabilities."""
    xs = np.asarray(xs, np.float64)
    n = len(xs)
    m = xs.mean()
    v = xs.var(ddof=1)
    se_mean = np.sqrt(var / n)
    se_var = np.sqrt(max(np.mean((xs - m) ** 4) - v * v, 1e-30) / n)
    if abs(m - mean) > 5 * se_mean:
        failures.append(f"{label} draws: mean {m}, expected {mean} (standard error {se_mean})")
    if abs(v - var) > 5 * se_var:
        failures.append(f"{label} draws: variance {v}, expected {var} (standard error {se_var})")
    if pmf is not None:
        freq = np.array([(xs == k).mean() for k in ks])
        se = np.sqrt(pmf * (1 - pmf) / n) + 1e-4
        bad = np.abs(freq - pmf) > 5 * se
        if bad.any():
            failures.append(f"{label} draws: frequencies of {ks[bad].tolist()} are "
                            f"{freq[bad].tolist()}, expected {pmf[bad].tolist()}")


qs = load("qs", np.float64)

# Normal
normal_params = load("normal_params", np.float64)
loc, scale = normal_params[:, 0], normal_params[:, 1]
x = load("normal_x", np.float64)
log_values("Normal", load("normal_values"), jit(jst.norm.logpdf)(x, loc, scale),
           scipy.stats.norm.logcdf(x, loc, scale), scipy.stats.norm.logsf(x, loc, scale))
close("Normal quantile", load("normal_quantile"), jit(jst.norm.ppf)(qs, loc, scale))
ps = np.array([0.0, 1.0e-30, 1.0e-10, 0.00001, 0.02425, 0.1, 0.5, 0.8, 0.97575, 0.999999, 1.0],
              np.float32).astype(np.float64)
close("ndtri", load("ndtri"), jit(jsp.ndtri)(ps))
close("Normal grad of log density", load("normal_grad"),
      grad_of(lambda p, x: jst.norm.logpdf(x, p[0], p[1]), normal_params, x), atol=1e-4)
close("Normal grad of log CDF", load("normal_cdf_grad"),
      grad_of(lambda p, x: jst.norm.logcdf(x, p[0], p[1]), normal_params, x), atol=1e-4)
moments("Normal(1.5, 0.7)", load("normal_draws"), 1.5, 0.49)
ks_stat = scipy.stats.kstest(load("normal_draws"), "norm", args=(1.5, 0.7)).pvalue
if ks_stat < 1e-4:
    failures.append(f"Normal draws: Kolmogorov-Smirnov p-value {ks_stat}")

# Exponential
rate = load("exp_rate", np.float64)
x = load("exp_x", np.float64)
log_values("Exponential", load("exp_values"), jit(jst.expon.logpdf)(x, scale=1 / rate),
           scipy.stats.expon.logcdf(x, scale=1 / rate), scipy.stats.expon.logsf(x, scale=1 / rate))
close("Exponential quantile", load("exp_quantile"), scipy.stats.expon.ppf(qs, scale=1 / rate))
close("Exponential grad of log density", load("exp_grad"),
      grad_of(lambda r, x: jst.expon.logpdf(x, scale=1 / r), rate, np.abs(x)), atol=1e-4)
moments("Exponential(2.5)", load("exp_draws"), 0.4, 0.16)
ks_stat = scipy.stats.kstest(load("exp_draws"), "expon", args=(0, 0.4)).pvalue
if ks_stat < 1e-4:
    failures.append(f"Exponential draws: Kolmogorov-Smirnov p-value {ks_stat}")

# Uniform
uni = load("uni_params", np.float64)
low, high = uni[:, 0], uni[:, 1]
x = load("uni_x", np.float64)
log_values("Uniform", load("uni_values"), jit(jst.uniform.logpdf)(x, low, high - low),
           scipy.stats.uniform.logcdf(x, low, high - low),
           scipy.stats.uniform.logsf(x, low, high - low))
close("Uniform quantile", load("uni_quantile"), jit(jst.uniform.ppf)(qs, low, high - low))
inside = np.clip(x, (low.astype(np.float32) + np.float32(0.01)).astype(np.float64),
                 (high.astype(np.float32) - np.float32(0.01)).astype(np.float64))
close("Uniform grad of log density + log CDF", load("uni_grad"),
      grad_of(lambda p, x: jst.uniform.logpdf(x, p[0], p[1] - p[0])
              + jnp.log(jst.uniform.cdf(x, p[0], p[1] - p[0])), uni, inside),
      rtol=1e-3, atol=1e-3)
moments("Uniform(-1, 3)", load("uni_draws"), 1.0, 16 / 12)
ks_stat = scipy.stats.kstest(load("uni_draws"), "uniform", args=(-1, 4)).pvalue
if ks_stat < 1e-4:
    failures.append(f"Uniform draws: Kolmogorov-Smirnov p-value {ks_stat}")

# Bernoulli
prob = load("bern_prob", np.float64)
x = load("bern_x", np.float64)
log_values("Bernoulli", load("bern_values"), jit(jst.bernoulli.logpmf)(x, prob),
           scipy.stats.bernoulli.logcdf(x, prob), scipy.stats.bernoulli.logsf(x, prob))
discrete_quantile("Bernoulli", load("bern_quantile"), scipy.stats.bernoulli(prob), qs)
close("Bernoulli grad of log mass", load("bern_grad"),
      grad_of(lambda p, x: jst.bernoulli.logpmf(x, p), prob, x), atol=1e-4)
moments("Bernoulli(0.3)", load("bern_draws"), 0.3, 0.21)

# Binomial
binom = load("binom_params", np.float64)
trials, prob = binom[:, 0], binom[:, 1]
x = load("binom_x", np.float64)
with np.errstate(divide="ignore"):
    log_values("Binomial", load("binom_values"), jit(jst.binom.logpmf)(x, trials, prob),
               scipy.stats.binom.logcdf(x, trials, prob), scipy.stats.binom.logsf(x, trials, prob))
discrete_quantile("Binomial", load("binom_quantile"), scipy.stats.binom(trials, prob), qs)


def binom_logcdf(p, k, n):
    js = jnp.arange(0, 64)
    return jnp.log(jnp.sum(jnp.where(js <= k, jnp.exp(jst.binom.logpmf(js, n, p)), 0.0)))


got = load("binom_grad")
valid = x <= trials  # a mass of zero has no gradient
want_pmf = grad_of(lambda p, k, n: jst.binom.logpmf(k, n, p), prob, x, trials)
close("Binomial grad of log mass", got[valid, 0], want_pmf[valid], rtol=1e-3, atol=1e-3)
close("Binomial grad of log CDF", got[:, 1], grad_of(binom_logcdf, prob, x, trials),
      rtol=1e-3, atol=1e-3)
ks = np.arange(0, 21)
moments("Binomial(20, 0.35)", load("binom_draws"), 7.0, 4.55,
        pmf=scipy.stats.binom.pmf(ks, 20, 0.35), ks=ks)

# Geometric
prob = load("geom_prob", np.float64)
x = load("geom_x", np.float64)
log_values("Geometric", load("geom_values"), jit(jst.geom.logpmf)(x, prob),
           scipy.stats.geom.logcdf(x, prob), scipy.stats.geom.logsf(x, prob))
close("Geometric quantile", load("geom_quantile"), scipy.stats.geom.ppf(qs, prob), rtol=0,
      atol=0, ok=np.min(np.abs(scipy.stats.geom.cdf(np.arange(1, 400)[:, None], prob) - qs),
                        axis=0) < 1e-5)
got = load("geom_grad")
close("Geometric grad of log mass", got[:, 0],
      grad_of(lambda p, k: jst.geom.logpmf(k, p), prob, x), rtol=1e-3, atol=1e-4)
close("Geometric grad of log CDF", got[:, 1],
      grad_of(lambda p, k: jnp.log1p(-(1 - p) ** k), prob, x), rtol=1e-3, atol=1e-4)
ks = np.arange(1, 30)
moments("Geometric(0.2)", load("geom_draws"), 5.0, 20.0,
        pmf=scipy.stats.geom.pmf(ks, 0.2), ks=ks)

# Poisson
rate = load("pois_rate", np.float64)
x = load("pois_x", np.float64)
log_values("Poisson", load("pois_values"), jit(jst.poisson.logpmf)(x, rate),
           scipy.stats.poisson.logcdf(x, rate), scipy.stats.poisson.logsf(x, rate),
           prob_atol=2e-6)
discrete_quantile("Poisson", load("pois_quantile"), scipy.stats.poisson(rate), qs)


def poisson_logcdf(r, k):
    js = jnp.arange(0, 80)
    return jnp.log(jnp.sum(jnp.where(js <= k, jnp.exp(jst.poisson.logpmf(js, r)), 0.0)))


got = load("pois_grad")
close("Poisson grad of log mass", got[:, 0],
      grad_of(lambda r, k: jst.poisson.logpmf(k, r), rate, x), rtol=1e-3, atol=1e-4)
close("Poisson grad of log CDF", got[:, 1], grad_of(poisson_logcdf, rate, x),
      rtol=1e-3, atol=1e-4)
ks = np.arange(0, 16)
moments("Poisson(4.5)", load("pois_draws"), 4.5, 4.5,
        pmf=scipy.stats.poisson.pmf(ks, 4.5), ks=ks)

# Multivariate normal
cov = load("mvn_cov", np.float64)
mvn_loc = load("mvn_loc", np.float64)
mvn_x = load("mvn_x", np.float64)
close("MultivariateNormal log density", load("mvn_density"),
      jit(jst.multivariate_normal.logpdf)(mvn_x, mvn_loc, cov), atol=1e-4)
close("MultivariateNormal grad of log density (loc)", load("mvn_grad"),
      grad_of(lambda m, x: jst.multivariate_normal.logpdf(x, m, cov),
              np.broadcast_to(mvn_loc, mvn_x.shape), mvn_x), rtol=1e-3, atol=1e-3)
draws = load("mvn_draws", np.float64)
n = len(draws)
se_mean = np.sqrt(np.diag(cov) / n)
if np.any(np.abs(draws.mean(0) - mvn_loc) > 5 * se_mean):
    failures.append(f"MultivariateNormal draws: mean {draws.mean(0)}, expected {mvn_loc}")
se_cov = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
if np.any(np.abs(np.cov(draws, rowvar=False) - cov) > 5 * se_cov):
    failures.append(f"MultivariateNormal draws: covariance {np.cov(draws, rowvar=False)}, "
                    f"expected {cov}")

# Log-space arithmetic
la = load("la", np.float64)
lb = load("lb", np.float64)
lmat = load("lmat", np.float64)
close("log_add_exp", load("log_add_exp"), np.logaddexp(la, lb))
close("LogSpace +", load("ls_add"), np.logaddexp(la, lb))
close("LogSpace *", load("ls_mul"), la + lb)
close("LogSpace /", load("ls_div"), la - lb)
close("log_sum_exp", load("log_sum_exp"), scipy.special.logsumexp(lmat, axis=1))
close("ls_sum", load("ls_sum"), scipy.special.logsumexp(lmat, axis=1))
close("sum of LogSpace", load("ls_sum_builtin"), scipy.special.logsumexp(lmat, axis=1))
close("prod of LogSpace", load("ls_prod"), lmat.sum(axis=1))
close("ls_sum_range", load("ls_sum_range"), scipy.special.logsumexp(lmat[:, 1:4], axis=1))
close("f_to_ls", load("f_to_ls"), np.log(load("u1", np.float64)))
close("ls_to_f", load("ls_to_f"), np.exp(load("z1", np.float64)))

# Data summaries
xs = load("xs", np.float64)
ys = load("ys", np.float64)
obs = load("obs", np.float64)
close("mean_and_variance", load("mean_and_variance"), [xs.mean(), xs.var(ddof=1)])
close("variance, std_dev, covariance, correlation", load("variance"),
      [xs.var(ddof=1), xs.std(ddof=1), np.cov(xs, ys)[0, 1], np.corrcoef(xs, ys)[0, 1]])
close("variance of rows", load("variance_rows"), obs.var(axis=0, ddof=1))
close("variance_matrix", load("variance_matrix"), np.cov(obs, rowvar=False))
close("correlation_matrix", load("correlation_matrix"), np.corrcoef(obs, rowvar=False))
close("mean_and_variance_matrix (mean)", load("matrix_mean"), obs.mean(axis=0))

finish("stats", "NumPy, SciPy and JAX")

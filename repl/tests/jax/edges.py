"""dx against JAX at the numerical edges (run by repl/tests/jax_edges.rs): every case is a
dx expression and the JAX function of the same inputs; dx's printed value must equal JAX's
(NaN where JAX has NaN, the same infinities, 1e-5 relative tolerance elsewhere).
"""

import math
import os
import subprocess
import sys

import jax
import numpy as np

jax.config.update("jax_platforms", "cpu")
import jax.numpy as jnp
from jax.nn import log_softmax, softmax
from jax.scipy.special import logsumexp

inf, nan = math.inf, math.nan


def f32(values):
    return jnp.array(values, dtype=jnp.float32)


def weighted(f):
    """sum (f x * [0, 1, 2, …]): a scalar whose gradient shows every element of f's."""
    return lambda x: jnp.sum(f(x) * jnp.arange(x.shape[0], dtype=x.dtype))


def dx_table(values):
    return "[" + ", ".join("infinity" if v == inf else "-infinity" if v == -inf else "nan" if v != v else repr(float(v)) for v in values) + "]"


INPUTS = [
    [-inf, -inf, -inf],
    [1.0, inf, 2.0],
    [1.0, -inf, 2.0],
    [-inf, inf],
    [inf, inf],
    [1.0, 2.0, 3.0],
    [1.0, nan, 3.0],
    [3.0, 1.0, 3.0],
    [3.0, 3.0, 3.0],
]

CASES = []
for xs in INPUTS:
    table = dx_table(xs)
    x = f32(xs)
    CASES += [
        (f"logsumexp {table}", logsumexp(x)),
        (f"grad logsumexp {table}", jax.grad(logsumexp)(x)),
        (f"logsumexp_online {table}", logsumexp(x)),
        (f"softmax {table}", softmax(x)),
        (f"grad (\\x. sum (for i. (softmax x)[i] * n_to_f (ordinal i))) {table}", jax.grad(weighted(softmax))(x)),
        (f"logsoftmax {table}", log_softmax(x)),
        (f"grad (\\x. sum (for i. (logsoftmax x)[i] * n_to_f (ordinal i))) {table}", jax.grad(weighted(log_softmax))(x)),
        (f"maximum {table}", jnp.max(x)),
        (f"minimum {table}", jnp.min(x)),
        (f"grad maximum {table}", jax.grad(jnp.max)(x)),
        (f"grad minimum {table}", jax.grad(jnp.min)(x)),
        (f"jvp maximum {table} [1., 10., 100.]".replace("[1., 10., 100.]", dx_table([10.0 ** k for k in range(len(xs))])),
         jax.jvp(jnp.max, (x,), (f32([10.0 ** k for k in range(len(xs))]),))[1]),
    ]
# The finite inputs for the online form's gradient (the monoid's derivative is exact there).
for xs in [[1.0, 2.0, 3.0], [1.0, -inf, 2.0]]:
    CASES.append((f"grad logsumexp_online {dx_table(xs)}", jax.grad(logsumexp)(f32(xs))))

empty = jnp.zeros((0,), dtype=jnp.float32)
CASES += [
    ("maximum (for i:(Fin 0). 1.0)", jnp.max(empty, initial=-inf)),
    ("minimum (for i:(Fin 0). 1.0)", jnp.min(empty, initial=inf)),
    ("logsumexp (for i:(Fin 0). 1.0)", logsumexp(empty)),
]

# Ties of min and max split the derivative evenly (JAX's maximum/minimum), in both modes.
two = jnp.float32(2.0)
for point in [2.0, 1.0, 3.0]:
    p = jnp.float32(point)
    CASES += [
        (f"grad (\\x. min x 2.0 + max x 2.0) {point}", jax.grad(lambda x: jnp.minimum(x, two) + jnp.maximum(x, two))(p)),
        (f"deriv (\\x. min x 2.0 + max x 2.0) {point}", jax.grad(lambda x: jnp.minimum(x, two) + jnp.maximum(x, two))(p)),
        (f"grad (\\x. max x 2.0) {point}", jax.grad(lambda x: jnp.maximum(x, two))(p)),
        (f"grad (\\x. min x x) {point}", jax.grad(lambda x: jnp.minimum(x, x))(p)),
        (f"grad (\\x. max 2.0 x) {point}", jax.grad(lambda x: jnp.maximum(two, x))(p)),
    ]
CASES += [
    ("grad (\\x. max x nan) 2.0", jax.grad(lambda x: jnp.maximum(x, jnp.float32(nan)))(two)),
    ("grad (\\x. sum (for i. max x[i] 0.0)) [-1., 0., 1.]", jax.grad(lambda x: jnp.sum(jnp.maximum(x, 0.0)))(f32([-1.0, 0.0, 1.0]))),
]

# JAX users' habits: hessian, value_and_grad, jacobian of tuples (inputs and outputs).
v = f32([1.0, 2.0, 3.0])
cube = lambda x: jnp.sum(x * x * x) + x[0] * x[1]
CASES += [
    ("hessian (\\x. sum (for i. x[i] * x[i] * x[i]) + x[0@_] * x[1@_]) [1., 2., 3.]", jax.hessian(cube)(v)),
    ("hessian (\\x. x * x * sin x) 0.5", jax.hessian(lambda x: x * x * jnp.sin(x))(jnp.float32(0.5))),
    ("hessian (\\(a, b). a * a * b + sin b) (2.0, 3.0)",
     jax.hessian(lambda p: p[0] * p[0] * p[1] + jnp.sin(p[1]))((jnp.float32(2.0), jnp.float32(3.0)))),
    ("value_and_grad (\\x. sum (for i. x[i] * x[i])) [1., 2., 3.]", jax.value_and_grad(lambda x: jnp.sum(x * x))(v)),
    ("value_and_grad (\\(a, b). a * b) (2.0, 5.0)", jax.value_and_grad(lambda p: p[0] * p[1])((jnp.float32(2.0), jnp.float32(5.0)))),
    ("jacobian (\\(a, b). for i. a[i] * b) ([1., 2.], 3.0)",
     jax.jacobian(lambda p: p[0] * p[1])((f32([1.0, 2.0]), jnp.float32(3.0)))),
    ("jacobian (\\(a, b). (for i. a[i] * b, sum a)) ([1., 2.], 3.0)",
     jax.jacobian(lambda p: (p[0] * p[1], jnp.sum(p[0])))((f32([1.0, 2.0]), jnp.float32(3.0)))),
    ("jacobian (\\x. (x * x, for i:(Fin 3). x * n_to_f (ordinal i))) 2.0",
     jax.jacobian(lambda x: (x * x, x * jnp.arange(3, dtype=jnp.float32)))(jnp.float32(2.0))),
    ("jacobian (\\x. for i j. x[i] * x[j]) [1., 2.]", jax.jacobian(lambda x: jnp.outer(x, x))(f32([1.0, 2.0]))),
    ("jacobian (\\m. for i. sum m[i]) [[1., 2., 3.], [4., 5., 6.]]",
     jax.jacobian(lambda m: jnp.sum(m, axis=1))(f32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))),
]


def parse(text):
    """A value as dx prints it (`[1., nan]`, `(-inf, [2.])`) as nested Python lists and tuples."""
    return eval(text.replace("nan", "float('nan')").replace("inf", "float('inf')"), {})


def flat(value):
    """The numbers of a (nested) value, and its structure."""
    if isinstance(value, tuple):
        parts = [flat(item) for item in value]
        return [x for numbers, _ in parts for x in numbers], ("tuple", [shape for _, shape in parts])
    array = np.asarray(value, dtype=np.float64)
    return [float(x) for x in array.reshape(-1)], tuple(array.shape)


def same(got, want):
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if math.isnan(w) or math.isnan(g):
            if not (math.isnan(w) and math.isnan(g)):
                return False
        elif math.isinf(w) or math.isinf(g):
            if g != w:
                return False
        elif abs(g - w) > 1e-5 * max(1.0, abs(w)):
            return False
    return True


def main():
    source = "".join(f":p {expr}\n" for expr, _ in CASES)
    run = subprocess.run([os.environ["DX_BIN"]], input=source, capture_output=True, text=True)
    lines = run.stdout.splitlines()
    failures = []
    if len(lines) != len(CASES):
        print(run.stdout, run.stderr)
        failures.append(f"dx printed {len(lines)} lines for {len(CASES)} cases")
    for (expr, want), line in zip(CASES, lines):
        try:
            got_numbers, got_shape = flat(parse(line))
        except Exception as err:  # dx printed an error or something unparsable
            failures.append(f"{expr}\n  dx:  {line} ({err})")
            continue
        want_numbers, want_shape = flat(tuple(want) if isinstance(want, list) else want)
        if got_shape != want_shape or not same(got_numbers, want_numbers):
            failures.append(f"{expr}\n  dx:  {line}\n  jax: {want}")
    for failure in failures:
        print("MISMATCH " + failure)
    print(f"{len(CASES) - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

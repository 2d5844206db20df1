"""What the library checks share: loading the `.npy` files a `.dx` check saved, comparing them
with what NumPy/SciPy/JAX compute, and reporting. A check script imports it from beside itself
(Python puts a script's folder on its path) and runs in the folder holding the `.npy` files."""

import sys

import numpy as np

failures = []


def load(name):
    return np.load(name + ".npy")


def same(what, got, want):
    """Exactly equal, shape and values (values moved, not computed)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        failures.append(f"{what}:\n  dx:    {got.tolist()}\n  want:  {want.tolist()}")


def close(what, got, want, rtol=1e-5, atol=1e-6):
    """Equal within the tolerances (NaN equal to NaN), with the first indices that are not."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    ok = got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not ok:
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True) if got.shape == want.shape else None
        where = np.argwhere(bad).ravel().tolist()[:8] if bad is not None else "shape"
        failures.append(
            f"{what}: rtol={rtol}, atol={atol}, first bad indices {where}\n"
            f"  dx:    {got.ravel()[:12].tolist()}\n  want:  {want.ravel()[:12].tolist()}"
        )


def finish(library, against):
    """Exits with status 1, listing the failures, if there are any."""
    if failures:
        print(f"{library}: {len(failures)} value(s) disagree with {against}:")
        for failure in failures:
            print(" -", failure)
        sys.exit(1)
    print(f"{library}: every value agrees with {against}")

"""What the library checks share: loading the `.npy` files a `.dx` check saved, comparing them
with what NumPy/SciPy/JAX compute, and reporting. A check script imports it from beside itself
(Python puts a script's folder on its path) and runs in the folder holding the `.npy` files."""

import sys

import numpy as np

failures = []


def load(name, dtype=None):
    """The array `name.npy`, cast to `dtype` when one is given."""
    array = np.load(name + ".npy")
    return array if dtype is None else array.astype(dtype)


def complexes(name):
    """A complex array saved as its (real, imaginary) parts on a last axis of 2, in float64."""
    parts = load(name, np.float64)
    out = np.empty(parts.shape[:-1], np.complex128)
    out.real = parts[..., 0]
    out.imag = parts[..., 1]  # (`re + 1j * im` would lose the sign of a zero `im`)
    return out


def same(what, got, want):
    """Exactly equal, shape and values (values moved, not computed)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        failures.append(f"{what}:\n  dx:    {got.tolist()}\n  want:  {want.tolist()}")


def close(what, got, want, rtol=1e-5, atol=1e-6, *, equal_nan=True, scale_atol=False, ok=None):
    """|got - want| <= atol + rtol |want| element by element (NumPy's `isclose`; complex values
    as complex numbers), shapes equal. Infinities must be equal; so must NaNs, unless
    `equal_nan` is false, when a NaN never agrees. With `scale_atol`, `atol` is relative to the
    largest finite |want| when that is above 1 (float32 results whose errors follow their
    largest values: matrix products, FFTs). `ok` marks elements accepted whatever their values."""
    got, want = np.asarray(got), np.asarray(want)
    kind = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    got, want = got.astype(kind), want.astype(kind)
    if got.shape != want.shape:
        failures.append(f"{what}: shape {got.shape} from dx, {want.shape} expected")
        return
    if scale_atol:
        finite = np.abs(want[np.isfinite(want)])
        atol = atol * max(1.0, float(finite.max())) if finite.size else atol
    with np.errstate(invalid="ignore", over="ignore"):
        bad = np.asarray(~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=equal_nan))
    if ok is not None:
        bad &= ~np.asarray(ok, bool)
    if bad.any():
        lines = [f"{what}: {int(bad.sum())} of {bad.size} values differ (rtol={rtol:.3g}, atol={atol:.3g})"]
        for idx in np.argwhere(bad)[:6]:
            idx = tuple(int(i) for i in idx)
            lines.append(f"  at {idx}: dx {got[idx].item()!r}, want {want[idx].item()!r}")
        failures.append("\n".join(lines))


def finish(library, against):
    """Exits with status 1, listing the failures, if there are any."""
    if failures:
        print(f"{library}: {len(failures)} value(s) disagree with {against}:")
        for failure in failures:
            print(" -", failure)
        sys.exit(1)
    print(f"{library}: every value agrees with {against}")

"""Checks exported modules against dx's values: `python check.py DIR`.

Each folder in DIR is a case: `module.mlir`, its inputs `in0.npy`, … and dx's results
`out0.npy`, …. Every module must parse with jaxlib's MLIR bindings; run on XLA (CPU), its
results must equal dx's: floats within a relative 1e-5 (Float32) or 1e-12 (Float64) of the
largest magnitude of the result or of 1 (summation order differs between the engines, so a
sum that cancels to 0 in dx may leave a rounding error in XLA), NaN where dx
has NaN; integers and booleans exactly. With `--shard N --sharded-args 0,1`, those arguments'
leading (batch) axis is split over N devices under `jax.jit`, the others replicated (set
XLA_FLAGS to simulate CPU devices).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla  # noqa: E402

RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def load_arrays(folder, prefix):
    arrays = []
    while os.path.exists(os.path.join(folder, f"{prefix}{len(arrays)}.npy")):
        arrays.append(np.load(os.path.join(folder, f"{prefix}{len(arrays)}.npy")))
    return arrays


def compare(actual, expected):
    """None if equal by the rules above, else what differs."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return f"got {actual.dtype}{list(actual.shape)}, dx has {expected.dtype}{list(expected.shape)}"
    if expected.dtype in RTOL:
        nan_actual, nan_expected = np.isnan(actual), np.isnan(expected)
        finite = np.isfinite(expected)
        scale = max(1.0, float(np.max(np.abs(expected[finite]), initial=0.0)))
        close = (actual == expected) | (np.abs(actual - expected) <= RTOL[expected.dtype] * scale)
        ok = np.where(nan_expected, nan_actual, close)
    else:
        ok = actual == expected
    if np.all(ok):
        return None
    where = tuple(int(i) for i in np.argwhere(~ok)[0]) if actual.ndim else ()
    return f"at {list(where)}: XLA {actual[where]!r}, dx {expected[where]!r}"


def run_sharded(text, args, n_devices, sharded):
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:n_devices]), ("batch",))
    exported = xla.load(text)
    if len(jax.devices()) < n_devices:
        raise AssertionError(f"{len(jax.devices())} devices, not {n_devices} (XLA_FLAGS?)")
    shardings = [
        NamedSharding(mesh, PartitionSpec("batch" if position in sharded else None))
        for position in range(len(args))
    ]
    placed = [jax.device_put(arg, sharding) for arg, sharding in zip(args, shardings)]
    for position in sharded:
        shards = placed[position].addressable_shards
        if len(shards) != n_devices or shards[0].data.shape[0] * n_devices != args[position].shape[0]:
            raise AssertionError(f"argument {position} is not split over {n_devices} devices")
    results = jax.jit(exported.call, in_shardings=shardings)(*placed)
    return [np.asarray(result) for result in results]


def main():
    folder = sys.argv[1]
    shard = int(sys.argv[sys.argv.index("--shard") + 1]) if "--shard" in sys.argv else None
    sharded = []
    if "--sharded-args" in sys.argv:
        sharded = [int(arg) for arg in sys.argv[sys.argv.index("--sharded-args") + 1].split(",")]
    cases = sorted(os.listdir(folder))
    failures = []
    for case in cases:
        path = os.path.join(folder, case)
        with open(os.path.join(path, "module.mlir")) as f:
            text = f.read()
        try:
            xla.parse(text)
            args = load_arrays(path, "in")
            expected = load_arrays(path, "out")
            if shard:
                results = run_sharded(text, args, shard, sharded)
            else:
                results = xla.run(text, *args)
            if len(results) != len(expected):
                raise AssertionError(f"{len(results)} results, dx has {len(expected)}")
            for position, (actual, want) in enumerate(zip(results, expected)):
                problem = compare(actual, want)
                if problem:
                    raise AssertionError(f"result {position}: {problem}")
        except Exception as err:  # noqa: BLE001 (every failure is reported with its case)
            failures.append(f"{case}: {type(err).__name__}: {str(err)[:2000]}")
    print(f"{len(cases) - len(failures)} of {len(cases)} cases agree with dx")
    for failure in failures:
        print(failure)
    sys.exit(1 if failures or not cases else 0)


if __name__ == "__main__":
    main()

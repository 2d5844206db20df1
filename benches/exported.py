"""Runs a module that `dx` exported to StableHLO on XLA (CPU, through jax), for the benchmark
column "XLA(dx)": the same program as dx's engine runs, compiled and run by another engine.

Run by `benches/run` inside the benchmark venv:

    python exported.py MODULE.mlir INPUT.npy… [--min-time 1.0]

prints one JSON object: {"time_s", "runs", "checks"}, or {"error"}. The time is the median
over at least 5 calls and `--min-time` seconds after a warm-up call (which compiles), as
peers.py measures JAX. `checks` are what the dx templates print of each result: a scalar
itself, a vector's chk1, a matrix's chk2 (peers.py's checksums, in float64).
"""

import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The one helper that loads StableHLO text into jax (the tests use it too).
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "repl", "tests", "stablehlo"))


def main():
    args = sys.argv[1:]
    min_time = 1.0
    if "--min-time" in args:
        at = args.index("--min-time")
        min_time = float(args[at + 1])
        del args[at:at + 2]
    module_path, input_paths = args[0], args[1:]
    try:
        import jax

        import xla  # repl/tests/stablehlo/xla.py
        from peers import chk1, chk2, median_time

        with open(module_path) as f:
            exported = xla.load(f.read())
        inputs = [jax.device_put(np.load(path)) for path in input_paths]
        call = jax.jit(exported.call)
        results = jax.block_until_ready(call(*inputs))
        time_s, runs = median_time(lambda: jax.block_until_ready(call(*inputs)), min_time)
        checks = []
        for result in results:
            value = np.asarray(result)
            if value.ndim == 0:
                checks.append(float(value))
            elif value.ndim == 1:
                checks.append(chk1(value))
            elif value.ndim == 2:
                checks.append(chk2(value))
        print(json.dumps({"time_s": time_s, "runs": runs, "checks": checks}))
    except Exception as err:  # noqa: BLE001 (reported in the table's problems)
        print(json.dumps({"error": f"{type(err).__name__}: {str(err)[:300]}"}))


if __name__ == "__main__":
    main()

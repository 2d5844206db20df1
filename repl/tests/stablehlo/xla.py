"""Runs a StableHLO module (MLIR text, as `dx export` writes it) on XLA through jax.

The one place that touches jax internals (pinned: jax==0.10.2 in
repl/tests/python-requirements.txt): the text is parsed in jax's MLIR context, serialized as a
portable artifact with the StableHLO version jax's own export uses, and substituted into a
`jax.export.Exported` made for a function of the same signature, whose `.call` then runs it
(under `jax.jit` too, with shardings).
"""

import dataclasses
import re

import jax
import numpy as np
from jax import export
from jax._src import xla_bridge
from jax._src.interpreters import mlir
from jax._src.lib import _jax
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import hlo

jax.config.update("jax_enable_x64", True)

_ELEMS = {
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "i64": np.int64,
    "ui32": np.uint32,
    "ui64": np.uint64,
    "i1": np.bool_,
}


def parse(text):
    """Parses MLIR text in jax's context (with the StableHLO dialect); raises on bad text."""
    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        module.operation.verify()
        return module


def _tensor(text):
    """`tensor<2x3xf32>` -> ((2, 3), np.float32)."""
    inner = re.fullmatch(r"tensor<(.*)>", text.strip()).group(1)
    parts = inner.split("x")
    return tuple(int(part) for part in parts[:-1]), _ELEMS[parts[-1]]


def signature(text):
    """The argument and result types of `@main`."""
    header = re.search(r"func\.func public @main\((.*?)\) -> \((.*?)\) \{", text, re.S)
    if header is None:
        raise ValueError("no `func.func public @main(...) -> (...)` in the module")
    args = re.findall(r"%[\w]+: (tensor<[^>]*>)", header.group(1))
    results = re.findall(r"tensor<[^>]*>", header.group(2))
    return [_tensor(arg) for arg in args], [_tensor(result) for result in results]


def load(text):
    """An `Exported` that runs the module: call it with `.call(*args)` (NumPy or jax arrays,
    inside `jax.jit` or not). Results are always a tuple."""
    args, results = signature(text)

    def placeholder(*_):
        return tuple(np.zeros(shape, dtype) for shape, dtype in results)

    avals = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in args]
    template = export.export(jax.jit(placeholder))(*avals)
    target_version = hlo.get_version_from_compatibility_requirement(
        hlo.StablehloCompatibilityRequirement.WEEK_4
    )
    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        serialized = _jax.mlir.serialize_portable_artifact(
            module, target_version, xla_bridge.get_backend().serialize_with_sdy
        )
    # The placeholder ignores its arguments, so jax dropped them from its module; ours keeps all.
    return dataclasses.replace(
        template,
        mlir_module_serialized=serialized,
        module_kept_var_idx=tuple(range(len(args))),
    )


def run(text, *args):
    """Runs the module once on the default device; returns its results as NumPy arrays."""
    return [np.asarray(result) for result in load(text).call(*args)]

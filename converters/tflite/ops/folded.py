"""TFLite builtins whose outputs are known before run time when their inputs
are: SHAPE, RANK, RANGE, FILL, ONE_HOT.

They are folded before conversion (converters/folding.py): their outputs
become constants of the source graph, so consumers (e.g. RESHAPE's shape)
read constants. A graph output cannot be a constant operand in NNAPI, so a
graph output is not pre-folded; its converter below computes the value and
emits one copying operation. Inputs that are only known at run time are
reported (NON_CONSTANT_OPERAND / DYNAMIC_SHAPE).
"""
from __future__ import annotations

import numpy as np

from ...registry import Reason, Unsupported, converter
from ...folding import FOLDERS
from .movement_util import check_types, constant_output, folder, static_shape, static_value, true_rank


def _scalar(ctx, i: int, what: str):
    value = static_value(ctx, i, what).reshape(-1)
    if value.size != 1:
        raise Unsupported(Reason.INVALID, f"{what} has {value.size} values, expected 1")
    return value[0]


def _out_dtype(ctx, node, k: int = 0):
    return np.dtype(ctx.tensor(node.outputs[k]).dtype)


@folder("SHAPE")
def _shape(node, ctx):
    x = node.inputs[0]
    return [np.asarray(static_shape(ctx, x)[:true_rank(ctx, x)], _out_dtype(ctx, node))]


@folder("RANK")
def _rank(node, ctx):
    return [np.asarray(true_rank(ctx, node.inputs[0]), _out_dtype(ctx, node))]


@folder("RANGE")
def _range(node, ctx):
    start, limit, delta = (_scalar(ctx, i, f"RANGE {w}") for i, w in zip(node.inputs, ("start", "limit", "delta")))
    if delta == 0 or (limit - start) * delta < 0:
        raise Unsupported(Reason.INVALID, f"RANGE({start}, {limit}, {delta}) is empty or infinite")
    dtype = _out_dtype(ctx, node)
    if dtype.kind == "f":
        count = int(np.ceil(abs((limit - start) / delta)))
    else:
        count = -(-abs(int(limit - start)) // abs(int(delta)))
    return [(start + delta * np.arange(count)).astype(dtype)]


@folder("FILL")
def _fill(node, ctx):
    dims = [int(d) for d in static_value(ctx, node.inputs[0], "FILL dims").reshape(-1)]
    return [np.full(dims, _scalar(ctx, node.inputs[1], "FILL value"), _out_dtype(ctx, node))]


@folder("ONE_HOT")
def _one_hot(node, ctx):
    indices = static_value(ctx, node.inputs[0], "ONE_HOT indices")
    depth = int(_scalar(ctx, node.inputs[1], "ONE_HOT depth"))
    on, off = (_scalar(ctx, i, f"ONE_HOT {w}") for i, w in zip(node.inputs[2:4], ("on_value", "off_value")))
    rank = indices.ndim + 1
    axis = node.attrs.get("axis", -1)
    if not -1 <= axis < rank:
        raise Unsupported(Reason.INVALID, f"ONE_HOT axis {axis} is out of range for rank {rank}")
    hot = indices[..., None] == np.arange(depth)
    return [np.moveaxis(np.where(hot, on, off), -1, axis % rank).astype(_out_dtype(ctx, node))]


def fold(node, ctx):
    """Folded into a constant operand when the inputs are static (no NNAPI operation)."""
    check_types(ctx, node)
    for out, value in zip(node.outputs, FOLDERS[("tflite", node.op)](node, ctx)):
        constant_output(ctx, out, value)


# op -> newest version the installed LiteRT registers
for _op, _newest in {"SHAPE": 1, "RANK": 1, "RANGE": 2, "FILL": 5, "ONE_HOT": 1}.items():
    converter("tflite", _op, versions=(1, _newest))(fold)

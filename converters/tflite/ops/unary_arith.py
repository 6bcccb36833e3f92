"""TFLite elementwise binary math beyond ADD/SUB/MUL/DIV: POW, SQUARED_DIFFERENCE,
FLOOR_DIV, FLOOR_MOD, ADD_N."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name, otype, require_arity
from .unary_emit import FLOATS, I32, elementwise, emit, negate, step, temp


def _float_only(ctx, node):
    for i in node.inputs:
        if np.dtype(ctx.tensor(i).dtype) not in (np.dtype(np.float32), np.dtype(np.float16)):
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.op} on {np.dtype(ctx.tensor(i).dtype).name} "
                                                   f"{name(ctx, i)}: NNAPI {node.op} takes floats only")


@converter("tflite", "POW", versions=(1, 1))
def power(node, ctx):
    """POW (floats; NNAPI has no integer POW)."""
    _float_only(ctx, node)
    elementwise(ctx, node, "POW", lambda c, xs, out: emit(c, Op.POW, xs, out), quantized=False)


def _difference(ctx, a, b, out):
    """a - b: SUB from feature level 2, else the exact ADD(a, -b) (floats)."""
    if ctx.has(Op.SUB) or otype(ctx, a).code not in FLOATS:
        return step(ctx, Op.SUB, [a, b], out, "difference")
    return step(ctx, Op.ADD, [a, negate(ctx, b, temp(ctx, b, "neg"))], out, "difference")


def _squared_difference(ctx, xs, out):
    d = _difference(ctx, xs[0], xs[1], out)
    emit(ctx, Op.MUL, [d, d], out)


@converter("tflite", "SQUARED_DIFFERENCE", versions=(1, 2))
def squared_difference(node, ctx):
    """(x - y)^2 with broadcasting (quantized: via float)."""
    elementwise(ctx, node, "SQUARED_DIFFERENCE", _squared_difference)


def _floor_div(ctx, xs, out):
    """Floats: FLOOR(DIV); int32: DIV, which NNAPI defines as rounding toward negative infinity."""
    if otype(ctx, xs[0]).code == I32:
        emit(ctx, Op.DIV, xs, out)
    else:
        emit(ctx, Op.FLOOR, [step(ctx, Op.DIV, xs, out, "quotient")], out)


@converter("tflite", "FLOOR_DIV", versions=(1, 3))
def floor_div(node, ctx):
    """floor(x / y) for floats and int32."""
    elementwise(ctx, node, "FLOOR_DIV", _floor_div, quantized=False)


def _floor_mod_int(ctx, xs, out):
    """x - floor_div(x, y) * y, exact in int32."""
    x, y = xs
    q = step(ctx, Op.DIV, [x, y], out, "floor_quotient")
    emit(ctx, Op.SUB, [x, step(ctx, Op.MUL, [q, y], out, "multiple")], out)


@converter("tflite", "FLOOR_MOD", versions=(1, 2))
def floor_mod(node, ctx):
    """int32 FLOOR_MOD; float FLOOR_MOD (fmod-based in LiteRT) has no exact NNAPI composition."""
    require_arity(node, 2, exact=True)
    if np.dtype(ctx.tensor(node.inputs[0]).dtype) != np.int32:
        raise Unsupported(Reason.OPERAND_TYPE,
                          f"FLOOR_MOD on {np.dtype(ctx.tensor(node.inputs[0]).dtype).name} "
                          f"{name(ctx, node.inputs[0])}: LiteRT uses fmod, and x - floor(x / y) * y rounds "
                          f"differently in float (only int32 converts)")
    elementwise(ctx, node, "FLOOR_MOD", _floor_mod_int, quantized=False)


def _add_n(ctx, xs, out):
    """x0 + x1 + ... left to right, as LiteRT accumulates."""
    acc = xs[0]
    for k, x in enumerate(xs[1:], start=1):
        acc = emit(ctx, Op.ADD, [acc, x], out if k == len(xs) - 1 else temp(ctx, out, f"sum{k}"))


@converter("tflite", "ADD_N", versions=(1, 1))
def add_n(node, ctx):
    """A chain of ADDs (floats, int32)."""
    if len(node.inputs) < 2:
        raise Unsupported(Reason.INVALID, f"ADD_N {name(ctx, node.outputs[0])} has {len(node.inputs)} input(s); "
                                          f"LiteRT requires at least 2")
    elementwise(ctx, node, "ADD_N", _add_n, quantized=False)

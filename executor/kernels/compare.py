"""MAXIMUM, MINIMUM, comparisons, LOGICAL_AND/OR/NOT and SELECT kernels (numpy broadcasting; the spec
checks that the shapes broadcast, SELECT's that they agree)."""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ..registry import kernel
from .common import QUANT8, dequantize
from .unary import requantize_to

_COMPARE = {Op.EQUAL: np.equal, Op.NOT_EQUAL: np.not_equal, Op.GREATER: np.greater,
            Op.GREATER_EQUAL: np.greater_equal, Op.LESS: np.less, Op.LESS_EQUAL: np.less_equal}
_LOGICAL = {Op.LOGICAL_AND: np.logical_and, Op.LOGICAL_OR: np.logical_or}


@kernel(Op.MAXIMUM, Op.MINIMUM)
def max_min(ctx):
    args = ctx.args
    a, b, out = args.input1, args.input2, ctx.out_type()
    fn = np.maximum if ctx.step.code == Op.MAXIMUM else np.minimum
    if a.code in QUANT8:
        # the output may have its own scale: bring both inputs to it first (monotonic, so order is kept)
        return [fn(requantize_to(a, out), requantize_to(b, out)).astype(out.dtype)]
    return [fn(a.array, b.array).astype(out.dtype)]


@kernel(*_COMPARE)
def compare(ctx):
    """Quantized inputs may have different scales: compare their real values (float32, as Android)."""
    args = ctx.args
    a, b = args.input1, args.input2
    x, y = a.array, b.array
    if a.code in QUANT8:
        x, y = dequantize(x, a.scale, a.zero_point), dequantize(y, b.scale, b.zero_point)
    return [_COMPARE[ctx.step.code](x, y)]


@kernel(*_LOGICAL)
def logical(ctx):
    args = ctx.args
    return [_LOGICAL[ctx.step.code](args.input1.array, args.input2.array)]


@kernel(Op.LOGICAL_NOT)
def logical_not(ctx):
    return [np.logical_not(ctx.args.input.array)]


@kernel(Op.SELECT)
def select(ctx):
    args = ctx.args
    cond, a, b, out = args.condition, args.input1, args.input2, ctx.out_type()
    if a.code in QUANT8:
        return [np.where(cond.array, requantize_to(a, out), requantize_to(b, out)).astype(out.dtype)]
    return [np.where(cond.array, a.array, b.array).astype(out.dtype)]

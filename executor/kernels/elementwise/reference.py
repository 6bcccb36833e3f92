"""ADD, SUB, MUL, DIV with broadcasting, fuse codes and fixed-point quantized paths."""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C, OperationCode as Op

from ...registry import kernel
from ..common import QUANT8, apply_fuse
from ..fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier

_LEFT_SHIFT = 20  # TFLite's headroom for quantized add/sub


def _quant_add(ctx, a, b, sign: int):
    out = ctx.out_type()
    twice_max = 2.0 * max(a.scale, b.scale)
    m1, s1 = quantize_multiplier(a.scale / twice_max)
    m2, s2 = quantize_multiplier(b.scale / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << _LEFT_SHIFT) * out.scale))
    x = (a.array.astype(np.int64) - a.zero_point) * (1 << _LEFT_SHIFT)
    y = (b.array.astype(np.int64) - b.zero_point) * (1 << _LEFT_SHIFT)
    sx = multiply_by_quantized_multiplier(x, m1, s1)
    sy = multiply_by_quantized_multiplier(y, m2, s2)
    raw = multiply_by_quantized_multiplier(sx + sign * sy, mo, so) + out.zero_point
    return raw


def _quant_mul(ctx, a, b):
    out = ctx.out_type()
    m, s = quantize_multiplier(float(np.float32(a.scale)) * float(np.float32(b.scale)) / float(np.float32(out.scale)))
    prod = (a.array.astype(np.int64) - a.zero_point) * (b.array.astype(np.int64) - b.zero_point)
    return multiply_by_quantized_multiplier(prod, m, s) + out.zero_point


def _finish(ctx, args, raw):
    out = ctx.out_type()
    fuse = args.fuse
    return [apply_fuse(raw, fuse, out.code, out.scale, out.zero_point).astype(out.dtype)]


def _float_or_int(args, fn):
    a, b = args.input1.array, args.input2.array
    if a.dtype == np.float16 or args.input1.code == C.TENSOR_FLOAT16:
        res = fn(a.astype(np.float32), b.astype(np.float32))
    else:
        res = fn(a, b)
    return res


@kernel(Op.ADD)
def add(ctx):
    args = ctx.args
    if args.input1.code in QUANT8:
        return _finish(ctx, args, _quant_add(ctx, args.input1, args.input2, +1))
    return _finish(ctx, args, _float_or_int(args, _wrapping(np.add)))


@kernel(Op.SUB)
def sub(ctx):
    args = ctx.args
    if args.input1.code in QUANT8:
        return _finish(ctx, args, _quant_add(ctx, args.input1, args.input2, -1))
    return _finish(ctx, args, _float_or_int(args, _wrapping(np.subtract)))


@kernel(Op.MUL)
def mul(ctx):
    args = ctx.args
    if args.input1.code in QUANT8:
        return _finish(ctx, args, _quant_mul(ctx, args.input1, args.input2))
    return _finish(ctx, args, _float_or_int(args, _wrapping(np.multiply)))


@kernel(Op.DIV)
def div(ctx):
    args = ctx.args
    if args.input1.code == C.TENSOR_INT32:
        a, b = np.broadcast_arrays(args.input1.array.astype(np.int64), args.input2.array.astype(np.int64))
        # Android's CPU driver defines x / 0 as 0 for int32 (the CTS checks it)
        safe = np.where(b == 0, 1, b)
        return _finish(ctx, args, np.where(b == 0, 0, np.floor_divide(a, safe)).astype(np.int32))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _finish(ctx, args, _float_or_int(args, np.divide))


def _wrapping(fn):
    """int32 arithmetic wraps like C; compute in int64 and truncate."""
    def apply(a, b):
        if a.dtype == np.int32:
            return fn(a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
        return fn(a, b)
    return apply

"""TFLite elementwise unary math: ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT, SQUARE, FLOOR, CEIL,
ROUND, SIGN. Quantized tensors (LiteRT's int8 kernels are quantize(f(dequantize(q))) tables)
go through float: DEQUANTIZE, the float op, QUANTIZE."""
from __future__ import annotations

from nnapi import OperandCode as C, OperationCode as Op
from nnapi.ops import level_for

from ...registry import converter
from .common import otype
from .unary_emit import (B8, FLOAT_LEVEL, FLOATS, const_like, elementwise, emit, is_quantized, negate, static_dims,
                         step, temp)

_DIRECT = {"EXP": Op.EXP, "LOG": Op.LOG, "SIN": Op.SIN, "SQRT": Op.SQRT, "RSQRT": Op.RSQRT, "FLOOR": Op.FLOOR}
RSQRT_QUANT_LEVEL = level_for(Op.RSQRT, T=C.TENSOR_QUANT8_ASYMM)  # RSQRT of quantized tensors itself


@converter("tflite", "EXP", "LOG", versions=(1, 2))
@converter("tflite", "RSQRT", versions=(1, 3))
@converter("tflite", "SIN", "SQRT", "FLOOR", versions=(1, 1))
def direct(node, ctx):
    """One NNAPI operation of the same name (quantized: via float, or RSQRT itself from level 7)."""
    op = _DIRECT[node.op]
    if node.op == "RSQRT" and ctx.feature_level >= RSQRT_QUANT_LEVEL and is_quantized(ctx, node.inputs[0]):
        emit(ctx, op, [ctx.operand(node.inputs[0])], ctx.output(node.outputs[0]))
        return
    elementwise(ctx, node, node.op, lambda c, xs, out: emit(c, op, xs, out))


def _abs(ctx, xs, out):
    """ABS from feature level 3; floats below it as RELU(x) + RELU(-x) (exact: one term is 0)."""
    x = xs[0]
    if ctx.feature_level >= FLOAT_LEVEL or otype(ctx, x).code not in FLOATS:
        emit(ctx, Op.ABS, [x], out)
        return
    minus = step(ctx, Op.RELU, [negate(ctx, x, temp(ctx, out, "neg"))], out, "relu_neg")
    emit(ctx, Op.ADD, [step(ctx, Op.RELU, [x], out, "relu"), minus], out)


def _ceil(ctx, xs, out):
    """ceil(x) = -floor(-x), exactly."""
    floor = step(ctx, Op.FLOOR, [negate(ctx, xs[0], temp(ctx, out, "neg"))], out, "floor_neg")
    negate(ctx, floor, out)


def _round(ctx, xs, out):
    """Round half to even (LiteRT's ROUND), exactly: f = floor(x), d = x - f (exact);
    d > 0.5 -> f + 1; d == 0.5 -> f + (f mod 2); else f."""
    ctx.require_level(FLOAT_LEVEL, "ROUND (comparisons and SELECT)")
    x = xs[0]
    half, one, two = (const_like(ctx, v, x) for v in (0.5, 1.0, 2.0))
    f = step(ctx, Op.FLOOR, [x], out, "floor")
    d = step(ctx, Op.SUB, [x, f], out, "fraction")
    even = step(ctx, Op.MUL, [step(ctx, Op.FLOOR, [step(ctx, Op.MUL, [f, half], out, "half_floor")], out,
                                   "floor_half"), two], out, "even_part")
    odd = step(ctx, Op.SUB, [f, even], out, "odd")
    at_tie = step(ctx, Op.SELECT, [step(ctx, Op.EQUAL, [d, half], out, "is_tie", B8),
                                   step(ctx, Op.ADD, [f, odd], out, "tie_to_even"), f], out, "tie_rounded")
    emit(ctx, Op.SELECT, [step(ctx, Op.GREATER, [d, half], out, "rounds_up", B8),
                          step(ctx, Op.ADD, [f, one], out, "up"), at_tie], out)


def _sign(ctx, xs, out):
    """sign(x) in {-1, 0, 1} (NaN -> 0): SELECT(x > 0, 1, SELECT(x < 0, -1, 0))."""
    ctx.require_level(FLOAT_LEVEL, "SIGN (comparisons and SELECT)")
    x = xs[0]
    dims = static_dims(ctx, out, "SIGN")
    zero = const_like(ctx, 0, x)
    negative = step(ctx, Op.SELECT, [step(ctx, Op.LESS, [x, zero], out, "is_negative", B8),
                                     const_like(ctx, -1, x, dims), const_like(ctx, 0, x, dims)], out, "negative")
    emit(ctx, Op.SELECT, [step(ctx, Op.GREATER, [x, zero], out, "is_positive", B8), const_like(ctx, 1, x, dims),
                          negative], out)


_COMPOSED = {
    "ABS": _abs,
    "NEG": lambda ctx, xs, out: negate(ctx, xs[0], out),
    "SQUARE": lambda ctx, xs, out: emit(ctx, Op.MUL, [xs[0], xs[0]], out),
    "CEIL": _ceil,
    "ROUND": _round,
    "SIGN": _sign,
}


@converter("tflite", "ABS", versions=(1, 5))
@converter("tflite", "SIGN", versions=(1, 2))
@converter("tflite", "NEG", "SQUARE", "CEIL", "ROUND", versions=(1, 1))
def composed(node, ctx):
    """Ops NNAPI has at some levels only, or not at all, as exact compositions. (LiteRT's int8 NEG
    negates the stored values, ignoring the quantization, so it is reported.)"""
    elementwise(ctx, node, node.op, _COMPOSED[node.op], quantized=node.op == "ABS")

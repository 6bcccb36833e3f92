"""TFLite activations: RELU, RELU_N1_TO_1, RELU6, RELU_0_TO_1, LOGISTIC, TANH, ELU,
HARD_SWISH, PRELU, LEAKY_RELU, GELU."""
from __future__ import annotations

import math

import numpy as np

from nnapi import FuseCode, OperandCode as C, OperationCode as Op
from nnapi.ops.activation import FIXED_OUTPUT_QUANT

from ...compositions import erf
from ...registry import Reason, Unsupported, converter
from .common import name, otype
from .unary_emit import (DTYPES, F32, FLOAT_LEVEL, FLOATS, QUANT8, const_like, elementwise, emit, is_quantized,
                         negate, requantize, same_quant, step, temp, via_float)

# TFLite clamp -> the NNAPI clamps applied in order (RELU_0_TO_1 = RELU(RELU1(x)), exact)
_CLAMPS = {"RELU": [FuseCode.RELU], "RELU_N1_TO_1": [FuseCode.RELU1], "RELU6": [FuseCode.RELU6],
           "RELU_0_TO_1": [FuseCode.RELU1, FuseCode.RELU]}
_CLAMP_OPS = {FuseCode.RELU: Op.RELU, FuseCode.RELU1: Op.RELU1, FuseCode.RELU6: Op.RELU6}


@converter("tflite", "RELU", "RELU6", versions=(1, 3))
@converter("tflite", "RELU_N1_TO_1", "RELU_0_TO_1", versions=(1, 1))
def relu(node, ctx):
    """Clamps; a quantized output with its own scale is requantized by ADD(x, 0) with the clamp fused."""
    x_t, out_t = node.inputs[0], node.outputs[0]
    clamps = _CLAMPS[node.op]
    x, out = ctx.operand(x_t), ctx.output(out_t)
    requant = is_quantized(ctx, x_t) and not same_quant(ctx, x_t, out_t)
    for k, fuse in enumerate(clamps):
        dst = out if k == len(clamps) - 1 else temp(ctx, out, "clamped")
        if k == 0 and requant:
            x = requantize(ctx, x, dst, fuse)   # LiteRT clamps in the output's scale too
        else:
            x = emit(ctx, _CLAMP_OPS[fuse], [x], dst)


@converter("tflite", "LOGISTIC", "TANH", versions=(1, 3))
def sigmoid_tanh(node, ctx):
    """LOGISTIC / TANH (a quantized output off NNAPI's fixed quantization: in float, as LiteRT's table).

    A quantized output at NNAPI's fixed quantization (1/256, 1/128) is the op itself; at any other LiteRT
    accepts, its table (round(f(dequantize(q)) / scale) + zero point) is computed the
    same way in float: DEQUANTIZE, the float op, QUANTIZE. TANH at 1/128 followed by a requantization
    would round twice, which is not LiteRT's result."""
    op = Op.LOGISTIC if node.op == "LOGISTIC" else Op.TANH
    out_t = node.outputs[0]
    out_type = ctx.nnapi_type(out_t)[0]
    fixed = FIXED_OUTPUT_QUANT[op].get(out_type.code)
    scale_fixed = fixed is not None and abs(out_type.scale - fixed[0]) <= 1e-9
    # LiteRT's LOGISTIC too requires the scale 1/256 (its int8 zero point is free): other scales stay
    # refused by the NNAPI spec's rule
    if fixed is not None and (op is Op.TANH or scale_fixed) and \
            not (scale_fixed and out_type.zero_point == fixed[1]):
        via_float(ctx, node, node.op, lambda c, xs, y: emit(c, op, xs, y))
        return
    emit(ctx, op, [ctx.operand(node.inputs[0])], ctx.output(out_t))


def _elu_body(ctx, xs, out):
    """ELU(x), alpha 1: the op from feature level 4, else RELU(x) + (EXP(MIN(x, 0)) - 1)."""
    x = xs[0]
    if ctx.has(Op.ELU):
        ctx.emit_form(Op.ELU, "default", [out], input=x, alpha=ctx.scalar(_scalar_code(ctx, x), 1.0))
        return
    ctx.require_level(FLOAT_LEVEL, "ELU (EXP, MINIMUM)")
    neg_part = step(ctx, Op.MINIMUM, [x, const_like(ctx, 0.0, x)], out, "negative_part")
    expm1 = step(ctx, Op.SUB, [step(ctx, Op.EXP, [neg_part], out, "exp"), const_like(ctx, 1.0, x)], out, "expm1")
    emit(ctx, Op.ADD, [step(ctx, Op.RELU, [x], out, "positive_part"), expm1], out)


def _scalar_code(ctx, x):
    return C.FLOAT32 if otype(ctx, x).code == F32 else C.FLOAT16


@converter("tflite", "ELU", versions=(1, 1))
def elu(node, ctx):
    """ELU with alpha 1 (quantized: in float between DEQUANTIZE and QUANTIZE, as LiteRT's table)."""
    elementwise(ctx, node, "ELU", _elu_body)


def _hard_swish_body(ctx, xs, out):
    """x * relu6(x + 3) / 6 as ADD(x, 3, RELU6), MUL, MUL(1/6): level-1 float ops."""
    x = xs[0]
    gate = step(ctx, Op.ADD, [x, const_like(ctx, 3.0, x)], out, "relu6_x_plus_3", fuse=FuseCode.RELU6)
    prod = step(ctx, Op.MUL, [x, gate], out, "x_times_gate")
    emit(ctx, Op.MUL, [prod, const_like(ctx, 1.0 / 6.0, x)], out)


@converter("tflite", "HARD_SWISH", versions=(1, 1))
def hard_swish(node, ctx):
    """HARD_SWISH from feature level 4; below it the float composition (quantized: via float, level 3)."""
    if ctx.has(Op.HARD_SWISH):
        emit(ctx, Op.HARD_SWISH, [ctx.operand(node.inputs[0])], ctx.output(node.outputs[0]))
        return
    elementwise(ctx, node, "HARD_SWISH", _hard_swish_body)


def _prelu(ctx, node, alpha_of):
    """PRELU from feature level 3; floats below it as RELU(x) - alpha * RELU(-x) (exact: one side is 0).
    `alpha_of(x)` gives the alpha operand for input operand x."""
    x_t, out_t = node.inputs[0], node.outputs[0]
    x = ctx.operand(x_t)
    alpha = alpha_of(x)
    if ctx.has(Op.PRELU) or otype(ctx, x).code not in FLOATS:
        if otype(ctx, x).code not in FLOATS:
            ctx.require(Op.PRELU, f"{node.op} on quantized {name(ctx, x_t)} (PRELU)")
        emit(ctx, Op.PRELU, [x, alpha], ctx.output(out_t))
        return
    out = ctx.output(out_t)
    minus_neg = step(ctx, Op.RELU, [negate(ctx, x, temp(ctx, out, "neg_x"))], out, "relu_neg_x")
    neg_alpha = negate(ctx, alpha, temp(ctx, alpha, "neg_alpha"))
    scaled = step(ctx, Op.MUL, [minus_neg, neg_alpha], out, "negative_side")
    emit(ctx, Op.ADD, [step(ctx, Op.RELU, [x], out, "positive_side"), scaled], out)


@converter("tflite", "PRELU", versions=(1, 1))
def prelu(node, ctx):
    """PRELU with a per-tensor alpha broadcast against the input."""
    a_t = node.inputs[1]
    if ctx.tensor(a_t).quant is not None and ctx.tensor(a_t).quant.per_channel:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"PRELU alpha {name(ctx, a_t)} is per-channel quantized; "
                                                    f"NNAPI PRELU takes alpha with the input's per-tensor type")
    _prelu(ctx, node, lambda x: ctx.operand(a_t))


@converter("tflite", "LEAKY_RELU", versions=(1, 2))
def leaky_relu(node, ctx):
    """LEAKY_RELU(alpha) as PRELU with a one-element alpha constant (quantized: stored 1 or -1)."""
    alpha = float(np.float32(node.attrs.get("alpha", 0.2)))

    def alpha_of(x):
        t = otype(ctx, x)
        if t.code not in QUANT8:
            return const_like(ctx, alpha, x)
        # alpha == (q - zp) * scale exactly: q - zp = sign(alpha), scale = |alpha|
        q, zp = (1, 0) if alpha > 0 else (0, 1 if alpha < 0 else 0)
        return ctx.const(np.array([q], DTYPES[t.code]), t.code, name=f"{ctx.tensor(node.outputs[0]).name}/alpha",
                         scale=abs(alpha) or 1.0, zero_point=zp)

    _prelu(ctx, node, alpha_of)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu_tanh_body(ctx, xs, out):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), every step a level-1 op."""
    x = xs[0]
    cube = step(ctx, Op.MUL, [step(ctx, Op.MUL, [x, x], out, "x2"), x], out, "x3")
    inner = step(ctx, Op.ADD, [x, step(ctx, Op.MUL, [cube, const_like(ctx, 0.044715, x)], out, "cubic")],
                 out, "inner")
    t = step(ctx, Op.TANH, [step(ctx, Op.MUL, [inner, const_like(ctx, _SQRT_2_OVER_PI, x)], out, "scaled")],
             out, "tanh")
    half_x = step(ctx, Op.MUL, [x, const_like(ctx, 0.5, x)], out, "half_x")
    emit(ctx, Op.MUL, [half_x, step(ctx, Op.ADD, [t, const_like(ctx, 1.0, x)], out, "one_plus_tanh")], out)


class _Emitter:
    """The emitter converters/compositions.py takes, writing temporaries shaped like `like`."""

    def __init__(self, ctx, like: int):
        self.ctx, self.like, self._n = ctx, like, 0

    def _suffix(self) -> str:
        self._n += 1
        return f"erf{self._n}"

    def unary(self, op: Op, x: int) -> int:
        return step(self.ctx, op, [x], self.like, self._suffix())

    def binary(self, op: Op, a: int, b: int, out_code=None) -> int:
        return step(self.ctx, op, [a, b], self.like, self._suffix(), out_code)

    def scalar(self, value) -> int:
        return const_like(self.ctx, value, self.like)

    def select(self, cond: int, a: int, b: int, out=None) -> int:
        return emit(self.ctx, Op.SELECT, [cond, a, b], temp(self.ctx, self.like, self._suffix()) if out is None else out)


def _gelu_erf_body(ctx, xs, out):
    """0.5 * x * (1 + erf(x / sqrt 2)) with the erf composition of converters/compositions.py (A&S 7.1.26:
    within 2.7e-7 |x| of the exact GELU in float32; feature level 3)."""
    x = xs[0]
    c = _Emitter(ctx, out)
    e = erf(c, step(ctx, Op.MUL, [x, const_like(ctx, math.sqrt(0.5), x)], out, "scaled"))
    half_x = step(ctx, Op.MUL, [x, const_like(ctx, 0.5, x)], out, "half_x")
    emit(ctx, Op.MUL, [half_x, step(ctx, Op.ADD, [e, const_like(ctx, 1.0, x)], out, "one_plus_erf")], out)


@converter("tflite", "GELU", versions=(1, 2))
def gelu(node, ctx):
    """GELU: approximate=True is the tanh formula (exact composition of level-1 ops); approximate=False
    (the erf form, TensorFlow's default) is 0.5 x (1 + erf(x / sqrt 2)) on the erf composition of
    converters/compositions.py (within 2.7e-7 |x| in float32). Quantized tensors go through float."""
    exact = not node.attrs.get("approximate", False)
    elementwise(ctx, node, "GELU", _gelu_erf_body if exact else _gelu_tanh_body)

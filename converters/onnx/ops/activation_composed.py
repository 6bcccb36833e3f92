"""Activations and elementwise math NNAPI has no single op for, as exact compositions of NNAPI ops
(float tensors): HardSigmoid, HardSwish (HARD_SWISH), Softplus, Mish, Softsign, Selu, Celu,
ThresholdedRelu, Reciprocal, Sign, Ceil, Round (half to even). (Erf and Gelu: erf.py.)"""
from __future__ import annotations

import numpy as np

from nnapi import FuseCode
from nnapi import OperandCode as C
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op
from .compose import Chain, known_shape, require_float


def _io(node, ctx, float_only: bool = True):
    x, y = node.inputs[0], node.outputs[0]
    if float_only:
        require_float(ctx, node, x)
    return Chain(ctx, node, y), ctx.operand(x), y


@onnx_op("HardSigmoid", versions=(7, OPSET_MAX))
def hard_sigmoid(node, ctx):
    """max(0, min(1, alpha * x + beta)) as MUL, ADD (fused RELU), MINIMUM."""
    c, x, y = _io(node, ctx)
    t = c.binary(Op.MUL, x, c.scalar(node.attrs.get("alpha", 0.2)))
    t = c.op(Op.ADD, input1=t, input2=c.scalar(node.attrs.get("beta", 0.5)), fuse=ctx.i32(FuseCode.RELU))
    c.binary(Op.MINIMUM, t, c.scalar(1.0), out=ctx.output(y))


@onnx_op("HardSwish", versions=(14, OPSET_MAX))
def hard_swish(node, ctx):
    """x * max(0, min(1, x / 6 + 1/2)) as HARD_SWISH (feature level 4; float and quantized)."""
    ctx.emit_form(Op.HARD_SWISH, "default", [ctx.output(node.outputs[0])], input=ctx.operand(node.inputs[0]))


def _softplus(c: Chain, x: int, out: int | None = None) -> int:
    tail = c.unary(Op.LOG, c.binary(Op.ADD, c.unary(Op.EXP, c.unary(Op.NEG, c.unary(Op.ABS, x))), c.scalar(1.0)))
    return c.binary(Op.ADD, c.unary(Op.RELU, x), tail, out=out)


@onnx_op("Softplus", versions=(7, OPSET_MAX))
def softplus(node, ctx):
    """log(1 + exp(x)) in the overflow-free form relu(x) + log(1 + exp(-|x|))."""
    c, x, y = _io(node, ctx)
    _softplus(c, x, out=ctx.output(y))


@onnx_op("Mish", versions=(18, OPSET_MAX))
def mish(node, ctx):
    """x * tanh(softplus(x)), softplus in its overflow-free form, as RELU/ABS/NEG/EXP/ADD/LOG/TANH/MUL."""
    c, x, y = _io(node, ctx)
    c.binary(Op.MUL, x, c.unary(Op.TANH, _softplus(c, x)), out=ctx.output(y))


@onnx_op("Softsign", versions=(7, OPSET_MAX))
def softsign(node, ctx):
    """x / (1 + |x|) as ABS, ADD, DIV."""
    c, x, y = _io(node, ctx)
    c.binary(Op.DIV, x, c.binary(Op.ADD, c.unary(Op.ABS, x), c.scalar(1.0)), out=ctx.output(y))


@onnx_op("Selu", versions=(7, OPSET_MAX))
def selu(node, ctx):
    """gamma * (x > 0 ? x : alpha * (exp(x) - 1)) as ELU (feature level 4) and MUL."""
    c, x, y = _io(node, ctx)
    e = c.op(Op.ELU, input=x, alpha=ctx.f32(node.attrs.get("alpha", 1.67326319217681884765625)))
    c.binary(Op.MUL, e, c.scalar(node.attrs.get("gamma", 1.05070102214813232421875)), out=ctx.output(y))


@onnx_op("Celu", versions=(12, OPSET_MAX))
def celu(node, ctx):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) as RELU + MINIMUM(0, alpha * (EXP(x / alpha) - 1))."""
    c, x, y = _io(node, ctx)
    alpha = float(node.attrs.get("alpha", 1.0))
    e = c.unary(Op.EXP, c.binary(Op.DIV, x, c.scalar(alpha)))
    neg = c.binary(Op.MINIMUM, c.binary(Op.MUL, c.binary(Op.SUB, e, c.scalar(1.0)), c.scalar(alpha)), c.scalar(0.0))
    c.binary(Op.ADD, c.unary(Op.RELU, x), neg, out=ctx.output(y))


@onnx_op("ThresholdedRelu", versions=(10, OPSET_MAX))
def thresholded_relu(node, ctx):
    """x > alpha ? x : 0 as GREATER and SELECT (against a zero tensor of the output's shape)."""
    c, x, y = _io(node, ctx)
    known_shape(ctx, node, y)
    above = c.binary(Op.GREATER, x, c.scalar(node.attrs.get("alpha", 1.0)), out_code=C.TENSOR_BOOL8)
    out = ctx.output(y)
    otype = ctx.model.operands[out].type
    zeros = ctx.const(np.zeros(otype.dimensions, otype.dtype), otype.code)  # SELECT does not broadcast
    c.select(above, x, zeros, out=out)


@onnx_op("Reciprocal", versions=(7, OPSET_MAX))
def reciprocal(node, ctx):
    """1 / x as DIV."""
    c, x, y = _io(node, ctx)
    c.binary(Op.DIV, c.scalar(1.0), x, out=ctx.output(y))


@onnx_op("Ceil", versions=(7, OPSET_MAX))
def ceil(node, ctx):
    """ceil(x) = -floor(-x) as NEG, FLOOR, NEG."""
    c, x, y = _io(node, ctx)
    c.unary(Op.NEG, c.unary(Op.FLOOR, c.unary(Op.NEG, x)), out=ctx.output(y))


@onnx_op("Sign", versions=(9, OPSET_MAX))
def sign(node, ctx):
    """x > 0 ? 1 : x < 0 ? -1 : 0 as GREATER, LESS and two SELECTs of constants (float and int32; NNAPI
    casts bool only to bool)."""
    c, x, y = _io(node, ctx, float_only=False)
    if c.code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32):
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: {c.code.name} input")
    known_shape(ctx, node, y)
    out = ctx.output(y)
    otype = ctx.model.operands[out].type
    full = {v: ctx.const(np.full(otype.dimensions, v, otype.dtype), otype.code) for v in (-1, 0, 1)}
    zero = c.scalar(0)
    negative = c.select(c.binary(Op.LESS, x, zero, out_code=C.TENSOR_BOOL8), full[-1], full[0])
    c.select(c.binary(Op.GREATER, x, zero, out_code=C.TENSOR_BOOL8), full[1], negative, out=out)


@onnx_op("Round", versions=(11, OPSET_MAX))
def round_half_even(node, ctx):
    """Round half to even: f = floor(x), d = x - f (exact), r = d > 0.5 ? f + 1 : d == 0.5 ? f + (f mod 2) : f,
    with f mod 2 = f - 2 floor(f / 2); FLOOR/SUB/MUL/GREATER/EQUAL/SELECT (feature level 3)."""
    c, x, y = _io(node, ctx)
    known_shape(ctx, node, y)
    f = c.unary(Op.FLOOR, x)
    d = c.binary(Op.SUB, x, f)
    half = c.scalar(0.5)
    odd = c.binary(Op.SUB, f, c.binary(Op.MUL, c.unary(Op.FLOOR, c.binary(Op.MUL, f, half)), c.scalar(2.0)))
    tie = c.select(c.binary(Op.EQUAL, d, half, out_code=C.TENSOR_BOOL8), c.binary(Op.ADD, f, odd), f)
    c.select(c.binary(Op.GREATER, d, half, out_code=C.TENSOR_BOOL8), c.binary(Op.ADD, f, c.scalar(1.0)), tie,
             out=ctx.output(y))

"""Erf and Gelu, on the erf composition of converters/compositions.py (A&S 7.1.26; |error| <= 5.4e-7 in
float32, about 1e-3 in float16). Gelu approximate="none" is 0.5 x (1 + erf(x / sqrt 2)) (absolute error at
most 2.7e-7 |x|); approximate="tanh" is the tanh formula (exact composition). A graph's own exact-GELU
pattern (Div, Erf, Add, Mul, Mul, as torch exports it) converts node by node to the same operations."""
from __future__ import annotations

import math

from nnapi import OperationCode as Op

from ...compositions import erf
from ..common import OPSET_MAX, onnx_op
from .compose import Chain, require_float


@onnx_op("Erf", versions=(9, OPSET_MAX))
def erf_op(node, ctx):
    """Erf as the A&S 7.1.26 composition (|error| <= 5.4e-7 in float32; float tensors, feature level 3)."""
    x, y = node.inputs[0], node.outputs[0]
    require_float(ctx, node, x)
    erf(Chain(ctx, node, y), ctx.operand(x), out=ctx.output(y))


@onnx_op("Gelu", versions=(20, OPSET_MAX))
def gelu(node, ctx):
    """Gelu: approximate="none" as 0.5 x (1 + erf(x / sqrt 2)) with the erf composition (|error| <= 2.7e-7 |x|
    in float32); approximate="tanh" as 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), exact, MUL/ADD/TANH."""
    x, y = node.inputs[0], node.outputs[0]
    require_float(ctx, node, x)
    c, src = Chain(ctx, node, y), ctx.operand(x)
    if node.attrs.get("approximate", "none") == "tanh":
        cube = c.binary(Op.MUL, c.binary(Op.MUL, src, src), src)
        inner = c.binary(Op.ADD, src, c.binary(Op.MUL, cube, c.scalar(0.044715)))
        s = c.unary(Op.TANH, c.binary(Op.MUL, inner, c.scalar(math.sqrt(2.0 / math.pi))))
    else:
        s = erf(c, c.binary(Op.MUL, src, c.scalar(math.sqrt(0.5))))
    half_x = c.binary(Op.MUL, src, c.scalar(0.5))
    c.binary(Op.MUL, half_x, c.binary(Op.ADD, s, c.scalar(1.0)), out=ctx.output(y))

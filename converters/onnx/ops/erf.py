"""Erf and Gelu. NNAPI has no ERF and no finite composition of its ops computes erf exactly, so Erf is
the Abramowitz & Stegun 7.1.26 approximation, for float32 and float16 tensors:

    erf(x) = sign(x) * (1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) * exp(-x^2)),  t = 1 / (1 + p |x|)

as ABS, MUL, ADD, DIV, NEG, EXP, LESS, SELECT (feature level 3). The formula's absolute error is at most
1.5e-7 for every x; evaluated in float32 (as the NNAPI ops do) it stays within 5.4e-7 of erf over
[-6, 6] (measured on 2e6 points; beyond, the result is exactly +-1, as erf is in float32). In float16 the
evaluation rounding dominates (about 1e-3). Gelu with approximate="none", 0.5 x (1 + erf(x / sqrt 2)),
uses it (absolute error at most 2.7e-7 |x|); approximate="tanh" is the tanh formula (exact composition).
A graph's own exact-GELU pattern (Div, Erf, Add, Mul, Mul, as torch exports it) converts node by node
to the same operations."""
from __future__ import annotations

import math

from nnapi import OperandCode as C
from nnapi import OperationCode as Op

from ..common import OPSET_MAX, onnx_op
from .compose import Chain, require_float

P = 0.3275911
A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)  # a1 .. a5


def erf(c: Chain, x: int, out: int | None = None) -> int:
    """Emit erf(x) (the A&S 7.1.26 composition above) into out (a new temporary when None)."""
    ax = c.unary(Op.ABS, x)
    t = c.binary(Op.DIV, c.scalar(1.0), c.binary(Op.ADD, c.binary(Op.MUL, ax, c.scalar(P)), c.scalar(1.0)))
    poly = c.binary(Op.ADD, c.binary(Op.MUL, t, c.scalar(A[4])), c.scalar(A[3]))
    for a in reversed(A[:3]):  # Horner: ((a5 t + a4) t + a3) t + ...
        poly = c.binary(Op.ADD, c.binary(Op.MUL, poly, t), c.scalar(a))
    tail = c.binary(Op.MUL, c.binary(Op.MUL, poly, t), c.unary(Op.EXP, c.unary(Op.NEG, c.binary(Op.MUL, ax, ax))))
    magnitude = c.binary(Op.SUB, c.scalar(1.0), tail)
    negative = c.binary(Op.LESS, x, c.scalar(0.0), out_code=C.TENSOR_BOOL8)
    return c.select(negative, c.unary(Op.NEG, magnitude), magnitude, out=out)


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

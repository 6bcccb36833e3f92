"""CumSum (NNAPI has no scan) as a log-step prefix sum along the operand's axis: with s(v, d) the tensor v
shifted by d along the axis (zeros shifted in), y = x, then y = y + s(y, d) for d = 1, 2, 4, ... < n
(ceil(log2 n) ADDs). exclusive=1 first shifts x by one; reverse=1 shifts the other way. Floats shift with
a SLICE and a CONCATENATION of zeros (exact; inf and NaN stay where they are); int32, which CONCATENATION
lacks, shifts with a GATHER of the moved indices times a 0/1 mask (MUL; exact, wrapping as onnxruntime
does). Types: float32, float16 (feature level 3), int32 (level 4). The float sums are added in a tree
order, not left to right: the result differs from a sequential sum by rounding only."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, const_ints, onnx_op
from .compose import Chain, known_shape

_DTYPES = {C.TENSOR_FLOAT32: np.float32, C.TENSOR_FLOAT16: np.float16, C.TENSOR_INT32: np.int32}


class _Shifter:
    """s(v, d) along operand axis `a` of operand dims `dims` (towards higher indices unless reverse)."""

    def __init__(self, c: Chain, dims: tuple, a: int, reverse: bool):
        self.c, self.dims, self.a, self.reverse = c, dims, a, reverse
        self.n = dims[a]

    def __call__(self, v: int, d: int) -> int:
        c, ctx, n, a = self.c, self.c.ctx, self.n, self.a
        if c.code == C.TENSOR_INT32:
            k = np.arange(n)
            idx = np.clip(k + d if self.reverse else k - d, 0, n - 1).astype(np.int32)
            keep = ((k + d < n) if self.reverse else (k >= d)).astype(np.int32)
            moved = c.op(Op.GATHER, c.temp(dims=self.dims), input=v, axis=ctx.i32(a), indices=ctx.const(idx))
            mask = ctx.const(keep.reshape((n,) + (1,) * (len(self.dims) - 1 - a)), C.TENSOR_INT32)
            return c.binary(Op.MUL, moved, mask, out=c.temp(dims=self.dims))
        begin, size = [0] * len(self.dims), list(self.dims)
        begin[a], size[a] = (d if self.reverse else 0), n - d
        part = c.op(Op.SLICE, c.temp(dims=size), input=v, begin=ctx.const(np.asarray(begin, np.int32)),
                    size=ctx.const(np.asarray(size, np.int32)))
        zero_dims = list(self.dims)
        zero_dims[a] = d
        zeros = ctx.const(np.zeros(zero_dims, _DTYPES[c.code]), c.code)
        return c.op(Op.CONCATENATION, c.temp(dims=self.dims), inputs=[part, zeros] if self.reverse else [zeros, part],
                    axis=ctx.i32(a))


@onnx_op("CumSum", versions=(11, OPSET_MAX))
def cumsum(node, ctx):
    """CumSum (constant axis; exclusive, reverse) as the log-step prefix sum of ADDs over shifted copies."""
    x, y = node.inputs[0], node.outputs[0]
    c = Chain(ctx, node, y)
    if c.code not in _DTYPES:
        raise Unsupported(Reason.QUANTIZATION_TYPE if ctx.tensor(x).quant is not None else Reason.OPERAND_TYPE,
                          f"{node.label()}: CumSum of {c.code.name} (float32, float16 and int32 are mapped)")
    shape = known_shape(ctx, node, x)
    axis = const_ints(ctx, node, 1, "axis")
    if axis is None or len(axis) != 1 or not -len(shape) <= axis[0] < len(shape):
        raise Unsupported(Reason.INVALID, f"{node.label()}: axis {axis} for rank {len(shape)}")
    a = ctx.axis(x, axis[0] % len(shape))
    src = ctx.operand(x)
    dims = tuple(ctx.model.operands[src].type.dimensions)
    shift = _Shifter(c, dims, a, bool(node.attrs.get("reverse", 0)))
    n, out = dims[a], ctx.output(y)
    steps = []
    d = 1
    while d < n:
        steps.append(d)
        d *= 2
    if node.attrs.get("exclusive", 0):
        if n == 1:  # nothing before the only element: zeros
            zeros = ctx.const(np.zeros(dims, _DTYPES[c.code]), c.code)
            ctx.emit_form(Op.RESHAPE, "default", [out], input=zeros, shape=ctx.const(np.asarray(dims, np.int32)))
            return
        src = shift(src, 1)
    if not steps:  # one element along the axis: the input itself
        ctx.emit_form(Op.RESHAPE, "default", [out], input=src, shape=ctx.const(np.asarray(dims, np.int32)))
        return
    for k, d in enumerate(steps):
        src = c.binary(Op.ADD, src, shift(src, d), out=out if k == len(steps) - 1 else c.temp(dims=dims))

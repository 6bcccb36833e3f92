"""FULLY_CONNECTED's compiled form: the weights laid out [K, O] once, in the accumulation domain and with
the epilogue (bias, requantization or fused clamp) the convolutions' fast paths use (prepared.py
quant_domain, Epilogue): the same numerics, bit for bit when quantized."""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import prepare
from ..common import QUANT8
from .prepared import quant_domain, supported


class PreparedFullyConnected:
    """FULLY_CONNECTED with its weights laid out [K, O]; results are new arrays or output 0's buffer."""

    fresh_outputs = True

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        args, bound = pctx.args, pctx.step.bound
        weights, bias = args.weights, args.bias
        self.x = bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        quant = bound.operand("input").type.code in QUANT8
        with np.errstate(invalid="ignore"):   # a signaling NaN weight stays NaN, quietly
            w = weights.array.astype(np.float64) - (weights.zero_point if quant else 0)
        self.dtype, self.zero_point, _, self.epilogue = quant_domain(pctx, w, bias, weights, args.fuse)
        self.size = w.shape[1]
        self.weights = np.ascontiguousarray(w.T, self.dtype)
        self.scratch = pctx.compiled.scratch

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.ndim < 2 or v.array.size % self.size or v.array.size == 0:
            return self.kernel(ctx)
        rows = v.array.reshape(-1, self.size)
        if rows.dtype != self.dtype and self.zero_point:
            rows = np.subtract(rows, self.dtype.type(self.zero_point),
                               out=self.scratch.get("rows", rows.shape, self.dtype), casting="unsafe")
        elif rows.dtype != self.dtype:   # (the zero point folded into the bias: a plain cast)
            cast = self.scratch.get("rows", rows.shape, self.dtype)
            np.copyto(cast, rows, casting="unsafe")
            rows = cast
        shape = (rows.shape[0], self.weights.shape[1])
        acc = np.matmul(rows, self.weights, out=self.epilogue.buffer(self.scratch, shape, self.dtype, ctx))
        return [self.epilogue(acc, self.epilogue.output(ctx, shape))]


@prepare(Op.FULLY_CONNECTED)
def prepare_fully_connected(pctx):
    if not supported(pctx):
        return None
    weights, bias = pctx.args.weights, pctx.args.bias
    if weights is None or bias is None or weights.array.ndim != 2 or bias.array.ndim != 1 \
            or bias.array.shape[0] != weights.array.shape[0] or weights.array.shape[1] == 0:
        return None
    return PreparedFullyConnected(pctx)

"""Compiled float32 BATCH_MATMUL with constant adj_x / adj_y (attention's scores and weighted sums).

The kernel (reference.py) checks the shapes and copies both operands (astype) and the result on
every call. Here the first call of each pair of input shapes goes to the kernel (its checks, its
failures); later calls make the same np.matmul on the same operand layouts -- a C-contiguous
operand as it is (the kernel's copy of it is the same array), any other the kernel's own astype
copy -- into output 0's buffer.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op

from ...registry import prepare

F32 = np.dtype(np.float32)
# shape pairs remembered per operation
MAX_SHAPES = 16


def _operand(x: np.ndarray, adjoint: bool) -> np.ndarray:
    a = np.swapaxes(x, -1, -2) if adjoint else x
    return a if a.flags.c_contiguous else a.astype(F32)


class PreparedBatchMatmul:
    fresh_outputs = True

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        bound = pctx.step.bound
        self.x, self.y = bound.positions["x"], bound.positions["y"]
        self.adj_x, self.adj_y = bool(bound.consts.get("adj_x")), bool(bound.consts.get("adj_y"))
        self.shapes: dict = {}

    def __call__(self, ctx):
        vx, vy = ctx.inputs[self.x], ctx.inputs[self.y]
        if vx is None or vy is None or vx.array.dtype != F32 or vy.array.dtype != F32:
            return self.kernel(ctx)
        x, y = vx.array, vy.array
        shape = self.shapes.get((x.shape, y.shape))
        if shape is None:
            out = self.kernel(ctx)   # checks the shapes (and fails as the kernel does)
            if len(self.shapes) >= MAX_SHAPES:
                self.shapes.clear()
            self.shapes[(x.shape, y.shape)] = out[0].shape
            return out
        out = ctx.output_buffer(0, shape, F32)
        np.matmul(_operand(x, self.adj_x), _operand(y, self.adj_y), out=out)
        return [out]


@prepare(Op.BATCH_MATMUL)
def prepare_batch_matmul(pctx):
    bound = pctx.step.bound
    operands = [bound.operand(n) for n in ("x", "y")]
    if not bound.constant("adj_x", "adj_y") or pctx.out_type().code != C.TENSOR_FLOAT32 \
            or any(o is None or o.type.code != C.TENSOR_FLOAT32 for o in operands):
        return None
    return PreparedBatchMatmul(pctx)

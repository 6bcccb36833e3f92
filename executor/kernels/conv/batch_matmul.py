"""Compiled float32 and quantized BATCH_MATMUL with constant adj_x / adj_y (attention's scores and
weighted sums).

The kernel (reference.py) checks the shapes and copies both operands (astype) and the result on
every call. Here the first call of each pair of input shapes goes to the kernel (its checks, its
failures); later calls make the same np.matmul on the same operand layouts -- a C-contiguous
operand as it is (the kernel's copy of it is the same array), any other the kernel's own astype
copy -- into output 0's buffer.

Quantized (8-bit): the kernel's exact integer sums of (x - x zero point)(y - y zero point), taken in
float32 when every partial sum is an integer below 2^24 (gemm.exact_dtype of the bound contraction
length x largest |x - zx| x largest |y - zy|: then the BLAS order cannot round), and requantize.py's
compiled Requantizer with the kernel's multiplier (reference.matmul_multiplier), proven equal to the
kernel's reference form; planned per pair of input shapes after the kernel has checked them.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op

from ...registry import prepare
from ..common import QUANT8, QUANT_RANGE
from ..requantize import Requantizer
from .gemm import exact_dtype
from .reference import matmul_multiplier

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


class PreparedQuantBatchMatmul(PreparedBatchMatmul):
    """Quantized BATCH_MATMUL: exact sums in the cheapest exact float type, then the compiled requantizer
    (both planned per pair of input shapes, after the kernel's checks on the first call)."""

    def __init__(self, pctx, x_type, y_type):
        super().__init__(pctx)
        out = pctx.out_type()
        self.dtype, self.out_dtype = x_type.dtype, out.dtype
        self.zx, self.zy = x_type.zero_point, y_type.zero_point
        lo, hi = QUANT_RANGE[x_type.code]
        self.x_max = max(hi - self.zx, self.zx - lo)   # the largest |x - zx|
        lo, hi = QUANT_RANGE[y_type.code]
        self.y_max = max(hi - self.zy, self.zy - lo)
        self.out_range = QUANT_RANGE[out.code]
        self.real = matmul_multiplier(x_type.scale, y_type.scale, out.scale)
        self.zero_point = out.zero_point
        self.scratch = pctx.compiled.scratch

    def _plan(self, x: np.ndarray, y: np.ndarray, out_shape: tuple):
        """(exact float type, requantizer) for these shapes, or None (sums beyond float64's integers)."""
        depth = y.shape[-1] if self.adj_y else y.shape[-2]
        acc_bound = depth * self.x_max * self.y_max
        dt = exact_dtype(acc_bound)
        if dt is None:
            return None
        lo, hi = self.out_range
        return dt, Requantizer(np.zeros(1, np.int64), [self.real], self.zero_point, lo, hi, self.out_dtype, acc_bound, self.scratch)

    def __call__(self, ctx):
        vx, vy = ctx.inputs[self.x], ctx.inputs[self.y]
        if vx is None or vy is None or vx.array.dtype != self.dtype or vy.array.dtype != self.dtype:
            return self.kernel(ctx)
        x, y = vx.array, vy.array
        key = (x.shape, y.shape)
        plan = self.shapes.get(key)
        if plan is None:
            out = self.kernel(ctx)   # checks the shapes (and fails as the kernel does)
            if len(self.shapes) >= MAX_SHAPES:
                self.shapes.clear()
            self.shapes[key] = (out[0].shape, self._plan(x, y, out[0].shape))
            return out
        shape, sums = plan
        if sums is None:
            return self.kernel(ctx)
        dt, requant = sums
        a = np.subtract(np.swapaxes(x, -1, -2) if self.adj_x else x, self.zx, dtype=dt)
        b = np.subtract(np.swapaxes(y, -1, -2) if self.adj_y else y, self.zy, dtype=dt)
        acc = self.scratch.get("batch_matmul", shape, dt)
        np.matmul(a, b, out=acc)
        return [requant(acc, ctx.output_buffer(0, shape, self.out_dtype))]


@prepare(Op.BATCH_MATMUL)
def prepare_batch_matmul(pctx):
    bound = pctx.step.bound
    operands = [bound.operand(n) for n in ("x", "y")]
    if not bound.constant("adj_x", "adj_y") or any(o is None for o in operands):
        return None
    codes = {o.type.code for o in operands} | {pctx.out_type().code}
    if codes == {C.TENSOR_FLOAT32}:
        return PreparedBatchMatmul(pctx)
    if len(codes) == 1 and codes <= set(QUANT8):
        return PreparedQuantBatchMatmul(pctx, operands[0].type, operands[1].type)
    return None

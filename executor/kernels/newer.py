"""FILL, RANK, BATCH_MATMUL, PACK, MIRROR_PAD, REVERSE (feature levels 4-7).

Quantized tensors pass through PACK, MIRROR_PAD and REVERSE unchanged (the
output shares the input's scale and zero point); BATCH_MATMUL accumulates
exactly and requantizes with the fixed-point rules of TFLite's reference kernel.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C, OperationCode as Op

from ..registry import kernel
from .common import QUANT8, requantize

_REFLECT, _SYMMETRIC = 0, 1


# -- FILL, RANK ------------------------------------------------------------------

@kernel(Op.FILL)
def fill(ctx):
    shape = ctx.inputs[0].array.reshape(-1)
    if (shape < 0).any():
        ctx.fail(f"the output shape {shape.tolist()} has a negative dimension")
    return [np.full(tuple(int(d) for d in shape), ctx.inputs[1].array, dtype=ctx.out_type().dtype)]


@kernel(Op.RANK)
def rank(ctx):
    return [np.asarray(ctx.inputs[0].array.ndim, dtype=np.int32)]


# -- BATCH_MATMUL ------------------------------------------------------------------

def _matmul_operands(ctx):
    """The two operands with adj_x / adj_y applied (transposing the last two dimensions), after shape checks."""
    x, y = ctx.inputs[0].array, ctx.inputs[1].array
    if x.ndim != y.ndim or not 2 <= x.ndim <= 4:
        ctx.fail(f"inputs must have the same rank, 2 to 4; got shapes {list(x.shape)} and {list(y.shape)}")
    a = np.swapaxes(x, -1, -2) if ctx.scalar(2, False) else x
    b = np.swapaxes(y, -1, -2) if ctx.scalar(3, False) else y
    if a.shape[-1] != b.shape[-2]:
        ctx.fail(f"cannot multiply [..., {a.shape[-2]}, {a.shape[-1]}] by [..., {b.shape[-2]}, {b.shape[-1]}] "
                 f"matrices (after adj_x/adj_y)")
    for i, (p, q) in enumerate(zip(a.shape[:-2], b.shape[:-2])):
        if p != q and 1 not in (p, q):
            ctx.fail(f"batch dimension {i} differs ({p} vs {q}) and neither is 1")
    return a, b


def _quant_matmul(ctx, a, b):
    """int8 x int8 -> int32 sums, exact in float64 (|term| <= 2**16, far fewer than 2**37 terms)."""
    x, y, out = ctx.inputs[0], ctx.inputs[1], ctx.out_type()
    acc = np.matmul(a.astype(np.float64) - x.zero_point, b.astype(np.float64) - y.zero_point).astype(np.int64)
    # TFLite: real multiplier = (float32 input scale x float32 weight scale) / output scale, in double
    real = float(np.float32(x.scale) * np.float32(y.scale)) / float(np.float32(out.scale))
    return requantize(acc, real, out.zero_point, out.code)


@kernel(Op.BATCH_MATMUL)
def batch_matmul(ctx):
    a, b = _matmul_operands(ctx)
    code = ctx.inputs[0].code
    if code in QUANT8:
        res = _quant_matmul(ctx, a, b)
    elif code == C.TENSOR_INT32:
        res = np.matmul(a.astype(np.int64), b.astype(np.int64))  # wraps to int32 like the C kernel
    else:
        res = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return [res.astype(ctx.out_type().dtype)]


# -- PACK ----------------------------------------------------------------------------

@kernel(Op.PACK)
def pack(ctx):
    arrays = [v.array for v in ctx.inputs[1:]]
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        ctx.fail(f"inputs must have the same shape, got {[list(a.shape) for a in arrays]}")
    axis = ctx.scalar(0)
    if not 0 <= axis <= len(shape):
        ctx.fail(f"axis {axis} is out of range [0, {len(shape)}]")
    return [np.stack(arrays, axis=axis)]


# -- MIRROR_PAD -------------------------------------------------------------------------

def _mirror_index(n: int, before: int, after: int, mode: int) -> np.ndarray:
    """Source index of every output position along one dimension of size n."""
    i = np.arange(-before, n + after)
    edge = 0 if mode == _REFLECT else 1  # SYMMETRIC repeats the edge element
    i = np.where(i < 0, -i - edge, i)
    return np.where(i >= n, 2 * n - 2 + edge - i, i)


@kernel(Op.MIRROR_PAD)
def mirror_pad(ctx):
    x = ctx.inputs[0].array
    pads = ctx.inputs[1].array
    mode = ctx.scalar(2)
    if mode not in (_REFLECT, _SYMMETRIC):
        ctx.fail(f"mode {mode} is not 0 (REFLECT) or 1 (SYMMETRIC)")
    if pads.shape != (x.ndim, 2):
        ctx.fail(f"paddings must have shape [{x.ndim}, 2], got {list(pads.shape)}")
    # REFLECT can mirror at most n-1 elements, SYMMETRIC at most n (no padding is always fine)
    limit = np.asarray(x.shape, dtype=np.int64) - (1 if mode == _REFLECT else 0)
    if ((pads < 0) | ((pads > 0) & (pads > limit[:, None]))).any():
        ctx.fail(f"paddings {pads.tolist()} must lie in [0, {limit.tolist()}] per dimension for "
                 f"{'REFLECT' if mode == _REFLECT else 'SYMMETRIC'} mode and input shape {list(x.shape)}")
    index = [_mirror_index(n, int(p[0]), int(p[1]), mode) for n, p in zip(x.shape, pads)]
    return [x[np.ix_(*index)]]


# -- REVERSE -------------------------------------------------------------------------------

@kernel(Op.REVERSE)
def reverse(ctx):
    x, axis = ctx.inputs[0].array, ctx.inputs[1].array.reshape(-1)
    if axis.size != 1 or not 0 <= axis[0] < x.ndim:
        ctx.fail(f"axis {axis.tolist()} must be one dimension in [0, {x.ndim})")
    return [np.flip(x, int(axis[0]))]

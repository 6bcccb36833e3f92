"""MEAN, REDUCE_*, ARGMAX, ARGMIN and TOPK_V2."""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.reduce import reduced_shape

from ...registry import kernel
from ..common import QUANT8, requantize


# -- axes and shapes -------------------------------------------------------------

def resolve_axes(ctx, axes, rank: int) -> tuple:
    """Axes in [-rank, rank) -> sorted distinct non-negative axes (duplicates are allowed)."""
    axes = np.asarray(axes, dtype=np.int64).reshape(-1)
    bad = axes[(axes < -rank) | (axes >= rank)]
    if bad.size:
        ctx.fail(f"axis {int(bad[0])} is out of range [-{rank}, {rank}) for a rank-{rank} input")
    return tuple(sorted({int(a) % rank for a in axes}))


def _as_compute(x):
    """float16 is reduced in float32 (sums and products lose too much in half precision)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _reduce(ctx, fn, keep: bool):
    """Apply `fn(array, axes) -> array with kept dims` over the axes input; shape and cast the result."""
    args = ctx.args
    x = args.input.array
    axes = resolve_axes(ctx, args.axes.array, x.ndim)
    out = fn(x, axes)
    return [out.reshape(reduced_shape(x.shape, axes, keep)).astype(ctx.out_type().dtype)]


def _keep_bool(ctx) -> bool:
    return bool(ctx.args.keep_dims)


# -- REDUCE_* -----------------------------------------------------------------------

def _extreme(np_fn, limit):
    """max/min over the raw values (quantized outputs share the input's scale); empty -> the identity."""
    def fn(x, axes):
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
        return np_fn(x, axis=axes, keepdims=True, initial=getattr(info, limit))
    return fn


# the reduction of each REDUCE_* over resolved axes, dimensions kept (the compiled REDUCE_*, prepared.py,
# runs the same functions)
REDUCERS = {
    Op.REDUCE_MAX: _extreme(np.max, "min"),
    Op.REDUCE_MIN: _extreme(np.min, "max"),
    Op.REDUCE_SUM: lambda x, axes: np.sum(_as_compute(x), axis=axes, keepdims=True),
    Op.REDUCE_PROD: lambda x, axes: np.prod(_as_compute(x), axis=axes, keepdims=True),
    Op.REDUCE_ALL: lambda x, axes: np.all(x, axis=axes, keepdims=True),
    Op.REDUCE_ANY: lambda x, axes: np.any(x, axis=axes, keepdims=True),
}


@kernel(*REDUCERS)
def reduce_any_kind(ctx):
    return _reduce(ctx, REDUCERS[ctx.step.code], _keep_bool(ctx))


# -- MEAN ----------------------------------------------------------------------------

def _quant_mean(ctx, x, axes, count: int) -> np.ndarray:
    total = x.astype(np.int64).sum(axis=axes, keepdims=True)
    return quant_mean_of_sums(total, count, ctx.args.input, ctx.out_type())


def quant_mean_of_sums(total: np.ndarray, count: int, inp, out) -> np.ndarray:
    """The quantized MEAN of `count` raw values (int64) from their raw sums `total`, for input and
    output types (scale, zero point, code) `inp`, `out` (the kernel, and the compiled MEAN's table)."""
    if (out.scale, out.zero_point) == (inp.scale, inp.zero_point):
        # Android's reference divides the raw (zero point included) sum and truncates toward zero
        return np.sign(total) * (np.abs(total) // count)
    # different output quantization: the exact integer sum of x - zero point, then the fixed-point rescale
    return requantize(total - count * inp.zero_point, inp.scale / (count * out.scale), out.zero_point, out.code)


def mean_divisor(count: int) -> np.ndarray:
    """The count a float mean divides by, as a 0-d array: float32 while it is exact there (a float32
    sum over a float32 count is the correctly rounded quotient), float64 beyond 2**24 elements."""
    return np.array(count, np.float32 if count <= 1 << 24 else np.float64)


def float_mean(x: np.ndarray, axes: tuple, divisor: np.ndarray, out=None, ones=None) -> np.ndarray:
    """The float MEAN of float32 `x` over `axes` with the dimensions kept: numpy's pairwise sum, then one
    division by the count (mean_divisor). The plain kernel and the compiled MEAN (prepared.py) both
    compute it here; `out`, when given, is the kept-dimensions result array. `ones` (a float32 column
    [L, 1] of ones, for the last axis of length L reduced alone) takes the sum as one matrix product
    instead: BLAS's order, within the fast paths' float bound, about half the time on a layer norm's
    short rows (the compiled MEAN)."""
    if ones is None:
        total = np.add.reduce(x, axis=axes, keepdims=True, out=out)
    else:
        total = np.matmul(x, ones, out=out)
    return np.true_divide(total, divisor, out=total, casting="unsafe")


@kernel(Op.MEAN)
def mean(ctx):
    def fn(x, axes):
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        if count == 0 and x.size:
            ctx.fail("MEAN over zero elements")
        if ctx.args.input.code in QUANT8:
            return _quant_mean(ctx, x, axes, max(count, 1))
        return float_mean(_as_compute(x), axes, mean_divisor(count))
    return _reduce(ctx, fn, ctx.args.keep_dims > 0)


# -- ARGMAX / ARGMIN ------------------------------------------------------------------

def _arg_select(ctx, np_fn):
    args = ctx.args
    x = args.input.array
    axis = resolve_axes(ctx, args.axis, x.ndim)[0]
    if x.shape[axis] == 0:
        ctx.fail(f"the input is empty along axis {axis}")
    index = np_fn(x, axis=axis)  # numpy returns the first (smallest) index on ties
    return [np.asarray(index, dtype=np.int32).reshape(index.shape or (1,))]


@kernel(Op.ARGMAX)
def argmax(ctx):
    return _arg_select(ctx, np.argmax)


@kernel(Op.ARGMIN)
def argmin(ctx):
    return _arg_select(ctx, np.argmin)


# -- TOPK_V2 ----------------------------------------------------------------------------

def top_k_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries of the last axis, descending, ties by smaller index first.

    A stable ascending sort of the reversed row keeps tied entries in decreasing
    original index; reading it backwards gives descending values with ties in
    increasing original index (and works for unsigned types, unlike negating).
    """
    n = x.shape[-1]
    order = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    return n - 1 - order


@kernel(Op.TOPK_V2)
def topk_v2(ctx):
    args = ctx.args
    x, k = args.input.array, args.k
    if x.ndim < 1 or not 1 <= k <= x.shape[-1]:
        ctx.fail(f"k = {k} must be in [1, {x.shape[-1] if x.ndim else 0}] (the size of the last dimension)")
    idx = top_k_indices(x, k)
    return [np.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)]


"""Shape and data-movement kernels: CONCATENATION, RESHAPE, SQUEEZE, EXPAND_DIMS,
TRANSPOSE, SLICE, STRIDED_SLICE, SPLIT, TILE, GATHER, CHANNEL_SHUFFLE, FILL, RANK,
PACK, REVERSE.

The padding and depth/space/batch rearrangements are in shape_space.py.
Values are moved, never recomputed (except CONCATENATION's requantization), so
every dtype is handled alike, float16 included. Results may be numpy views of
the inputs: kernels never write into their inputs.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.shape import strided_range

from ...registry import kernel, prepare
from ..common import QUANT8, QUANT_RANGE, round_half_away


# -- helpers shared by the shape kernels (shape_space.py imports them too) -----

def int_values(ctx, value, what: str, length: int | None = None) -> list[int]:
    """An int32 tensor input's Value as a Python list, optionally checked to hold `length` entries."""
    values = [int(v) for v in value.array.reshape(-1)]
    if length is not None and len(values) != length:
        ctx.fail(f"{what} has {len(values)} entries, expected {length}")
    return values


def norm_axis(ctx, axis: int, rank: int, what: str = "axis") -> int:
    """Resolve a possibly negative axis into [0, rank), failing outside [-rank, rank)."""
    if not -rank <= axis < rank:
        ctx.fail(f"{what} {axis} out of range for rank {rank}")
    return axis % rank


# -- CONCATENATION ------------------------------------------------------------------

def _to_output_quant(ctx, value) -> np.ndarray:
    """A quant8 input in the output's scale/zero point, in float32 as the reference
    ConcatenationWithScaling (Android's and TFLite's) computes it:
    round(q * (s_in * (1 / s_out)) + (-zp_in * that)) + zp_out, saturated."""
    out = ctx.out_type()
    if value.code not in QUANT8 or (value.scale, value.zero_point) == (out.scale, out.zero_point):
        return value.array
    scale = np.float32(value.scale) * (np.float32(1.0) / np.float32(out.scale))
    bias = np.float32(-value.zero_point) * scale
    real = value.array.astype(np.float32) * scale + bias
    lo, hi = QUANT_RANGE[out.code]
    return np.clip(round_half_away(real.astype(np.float64)).astype(np.int64) + out.zero_point, lo, hi).astype(out.dtype)


@kernel(Op.CONCATENATION)
def concatenation(ctx):
    args = ctx.args
    values = args.inputs
    rank = values[0].array.ndim
    axis = norm_axis(ctx, args.axis, rank)
    base = values[0].shape
    for k, v in enumerate(values[1:], 1):
        if v.array.ndim != rank or any(a != b for d, (a, b) in enumerate(zip(v.shape, base)) if d != axis):
            ctx.fail(f"input {k} has shape {list(v.shape)}, incompatible with input 0 {list(base)} "
                     f"outside axis {axis}")
    return [np.concatenate([_to_output_quant(ctx, v) for v in values], axis=axis)]


# -- reshaping ------------------------------------------------------------------------

@kernel(Op.RESHAPE)
def reshape(ctx):
    args = ctx.args
    x = args.input.array
    shape = int_values(ctx, args.shape, "shape")
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        ctx.fail(f"invalid shape {shape}: entries must be >= 0, with at most one -1")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or x.size % known:
            ctx.fail(f"cannot infer the -1 of shape {shape} for {x.size} elements")
        shape[shape.index(-1)] = x.size // known
    elif known != x.size:
        ctx.fail(f"shape {shape} has {known} elements, the input has {x.size}")
    return [x.reshape(shape)]


@kernel(Op.SQUEEZE)
def squeeze(ctx):
    args = ctx.args
    x = args.input.array
    axes = int_values(ctx, args.axes, "axes") if args.has("axes") else []
    if not axes:  # omitted or empty: every size-1 dimension
        axes = [d for d, n in enumerate(x.shape) if n == 1]
    axes = {norm_axis(ctx, a, x.ndim, "squeeze axis") for a in axes}
    for a in sorted(axes):
        if x.shape[a] != 1:
            ctx.fail(f"cannot squeeze dimension {a} of size {x.shape[a]}")
    shape = [n for d, n in enumerate(x.shape) if d not in axes]
    return [x.reshape(shape or [1])]  # squeezing everything leaves shape [1]


@kernel(Op.EXPAND_DIMS)
def expand_dims(ctx):
    args = ctx.args
    x = args.input.array
    axis = norm_axis(ctx, args.axis, x.ndim + 1)
    return [np.expand_dims(x, axis)]


@kernel(Op.TRANSPOSE)
def transpose(ctx):
    args = ctx.args
    x = args.input.array
    perm = int_values(ctx, args.perm, "perm") if args.has("perm") else []
    if not perm:  # omitted or empty: reverse the dimensions
        return [x.transpose()]
    if len(perm) != x.ndim:
        ctx.fail(f"perm {perm} has {len(perm)} entries, the input has rank {x.ndim}")
    if sorted(perm) != list(range(x.ndim)):
        ctx.fail(f"perm {perm} is not a permutation of 0..{x.ndim - 1}")
    return [x.transpose(perm)]


# -- slicing --------------------------------------------------------------------------

@kernel(Op.SLICE)
def slice_(ctx):
    args = ctx.args
    x = args.input.array
    begin = int_values(ctx, args.begin, "begin", x.ndim)
    size = int_values(ctx, args.size, "size", x.ndim)
    index = []
    for d, (b, s, n) in enumerate(zip(begin, size, x.shape)):
        end = n if s == -1 else b + s
        if b < 0 or s < -1 or end > n:
            ctx.fail(f"dimension {d}: begin {b} size {s} outside [0, {n}]")
        index.append(slice(b, end))
    return [x[tuple(index)]]


def _strided_range(ctx, d: int, n: int, begin: int, end: int, stride: int, masks) -> tuple[int, int]:
    """(start, count) of dimension `d` of a strided slice."""
    begin_mask, end_mask, shrink = masks
    if stride == 0:
        ctx.fail(f"dimension {d}: stride is 0")
    start, count = strided_range(n, begin, end, stride, bool(begin_mask >> d & 1), bool(end_mask >> d & 1))
    if shrink >> d & 1 and (count != 1 or stride < 0):
        ctx.fail(f"dimension {d}: shrink_axis_mask needs a slice of size 1 with a positive stride, "
                 f"got begin {begin} end {end} stride {stride}")
    return start, count


def _strided_slices(ctx, in_shape: tuple) -> tuple[tuple, list]:
    """(one basic slice per dimension, the output shape) of STRIDED_SLICE on an input of `in_shape`."""
    args = ctx.args
    begins, ends, strides = (int_values(ctx, getattr(args, name), name, len(in_shape))
                             for name in ("begin", "end", "strides"))
    masks = (args.begin_mask, args.end_mask, args.shrink_axis_mask)
    index, shape = [], []
    for d, n in enumerate(in_shape):
        start, count = _strided_range(ctx, d, n, begins[d], ends[d], strides[d], masks)
        stop = start + strides[d] * count
        # a negative stop would count from the end: below 0 the range runs to the first element (None)
        index.append(slice(start, stop if stop >= 0 else None, strides[d]) if count else slice(0, 0))
        if not masks[2] >> d & 1:
            shape.append(count)
    return tuple(index), shape or [1]


@kernel(Op.STRIDED_SLICE)
def strided_slice(ctx):
    x = ctx.args.input.array
    index, shape = _strided_slices(ctx, x.shape)
    return [x[index].reshape(shape)]


class _PlannedPerShape:
    """A slicing operation whose run-time input `input` is the only argument fed at run time: what
    `planner(ctx, shape)` (the kernel's own function) works out, once per input shape."""

    planner = None

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        self.plans: dict = {}

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None:
            return self.kernel(ctx)
        x = v.array
        plan = self.plans.get(x.shape)
        if plan is None:
            plan = self.plans[x.shape] = type(self).planner(ctx, x.shape)
        return self.run(ctx, x, plan)


class PreparedStridedSlice(_PlannedPerShape):
    """STRIDED_SLICE with constant begin, end, strides and masks: the slices worked out once per input
    shape (by the kernel's own _strided_slices), each run one copy into output 0's buffer."""

    fresh_outputs = True
    planner = _strided_slices

    @staticmethod
    def run(ctx, x, plan):
        index, shape = plan
        part = x[index]
        out = ctx.output_buffer(0, tuple(shape), x.dtype)
        np.copyto(out.reshape(part.shape), part)
        return [out]


@prepare(Op.STRIDED_SLICE)
def prepare_strided_slice(pctx):
    if pctx.step.bound.runtime != {"input"}:   # only the input fed at run time
        return None
    return PreparedStridedSlice(pctx)


# -- splitting and repeating -------------------------------------------------------------

def _split_index(ctx, shape: tuple) -> list:
    """SPLIT's parts of an input of `shape` as index tuples (each output a view of the input)."""
    args = ctx.args
    axis = norm_axis(ctx, args.axis, len(shape))
    parts = args.num_splits
    if parts != len(ctx.outputs) or parts < 1 or shape[axis] % parts:
        ctx.fail(f"cannot split dimension {axis} of size {shape[axis]} into {parts} equal parts "
                 f"for {len(ctx.outputs)} outputs")
    size = shape[axis] // parts
    return [(slice(None),) * axis + (slice(k * size, (k + 1) * size),) for k in range(parts)]


@kernel(Op.SPLIT)
def split(ctx):
    x = ctx.args.input.array
    return [x[index] for index in _split_index(ctx, x.shape)]


class PreparedSplit(_PlannedPerShape):
    """SPLIT with a constant axis and count: the parts' index tuples worked out once per input shape
    (by the kernel's own _split_index); each run slices the input (views, as the kernel returns)."""

    planner = _split_index

    @staticmethod
    def run(ctx, x, plan):
        return [x[index] for index in plan]


@prepare(Op.SPLIT)
def prepare_split(pctx):
    return PreparedSplit(pctx) if pctx.step.bound.runtime == {"input"} else None


@kernel(Op.TILE)
def tile(ctx):
    args = ctx.args
    x = args.input.array
    multiples = int_values(ctx, args.multiples, "multiples", x.ndim)
    if any(m < 0 for m in multiples):
        ctx.fail(f"multiples {multiples} must be non-negative")
    return [np.tile(x, multiples)]


@kernel(Op.GATHER)
def gather(ctx):
    args = ctx.args
    x = args.input.array
    axis = norm_axis(ctx, args.axis, x.ndim)
    indices = args.indices.array
    bad = (indices < 0) | (indices >= x.shape[axis])
    if bad.any():
        ctx.fail(f"index {int(indices[bad][0])} out of range [0, {x.shape[axis]}) along axis {axis}")
    return [np.take(x, indices, axis=axis)]


@kernel(Op.CHANNEL_SHUFFLE)
def channel_shuffle(ctx):
    args = ctx.args
    x = args.input.array
    groups = args.num_groups
    axis = norm_axis(ctx, args.axis, x.ndim)
    channels = x.shape[axis]
    if groups < 1 or channels % groups:
        ctx.fail(f"{channels} channels cannot be divided into {groups} groups")
    # view the channels as [groups, group_size] and read them as [group_size, groups]
    moved = np.moveaxis(x, axis, -1)
    size = channels // groups
    shuffled = moved.reshape(*moved.shape[:-1], groups, size)
    if groups > FEW_GROUPS:
        return [np.moveaxis(shuffled.swapaxes(-1, -2).reshape(moved.shape), -1, axis)]
    # one copy per group (each reads runs of group_size values) is 2.5-5x faster than one copy whose
    # innermost loop runs over the groups
    out = np.empty(moved.shape, x.dtype)
    into = out.reshape(*moved.shape[:-1], size, groups)
    for k in range(groups):
        into[..., k] = shuffled[..., k, :]
    return [np.moveaxis(out, -1, axis)]


FEW_GROUPS = 16


class PreparedReshape:
    """RESHAPE with a constant shape: the shape read once, its -1 resolved once per input size."""

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        self.shape = [int(v) for v in pctx.args.shape.array.reshape(-1)]
        self.resolved: dict = {}

    def __call__(self, ctx):
        v = ctx.args.input
        if v is None:
            return self.kernel(ctx)
        x = v.array
        shape = self.resolved.get(x.size)
        if shape is None:
            out = self.kernel(ctx)   # checks the shape (and fails as the kernel does)
            self.resolved[x.size] = out[0].shape
            return out
        return [x.reshape(shape)]


@prepare(Op.RESHAPE)
def prepare_reshape(pctx):
    if pctx.step.bound.runtime != {"input"} or pctx.args.shape is None:   # a constant shape
        return None
    return PreparedReshape(pctx)


# -- FILL, RANK, PACK, REVERSE ---------------------------------------------------------------

@kernel(Op.FILL)
def fill(ctx):
    args = ctx.args
    shape = args.shape.array.reshape(-1)
    if (shape < 0).any():
        ctx.fail(f"the output shape {shape.tolist()} has a negative dimension")
    return [np.full(tuple(int(d) for d in shape), args.value, dtype=ctx.out_type().dtype)]


@kernel(Op.RANK)
def rank(ctx):
    return [np.asarray(ctx.args.input.array.ndim, dtype=np.int32)]


@kernel(Op.PACK)
def pack(ctx):
    args = ctx.args
    arrays = [v.array for v in args.inputs]
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        ctx.fail(f"inputs must have the same shape, got {[list(a.shape) for a in arrays]}")
    axis = args.axis
    if not 0 <= axis <= len(shape):
        ctx.fail(f"axis {axis} is out of range [0, {len(shape)}]")
    return [np.stack(arrays, axis=axis)]


@kernel(Op.REVERSE)
def reverse(ctx):
    args = ctx.args
    x, axis = args.input.array, args.axis.array.reshape(-1)
    if axis.size != 1 or not 0 <= axis[0] < x.ndim:
        ctx.fail(f"axis {axis.tolist()} must be one dimension in [0, {x.ndim})")
    return [np.flip(x, int(axis[0]))]

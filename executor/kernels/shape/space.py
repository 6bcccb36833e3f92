"""Padding and spatial rearrangement kernels: PAD, PAD_V2, MIRROR_PAD, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND.

PAD and PAD_V2 (PreparedPad) and MIRROR_PAD (PreparedMirrorPad) with constant paddings are compiled. The 4-D ones work in NHWC and honour the optional NCHW layout flag through
common.to_nhwc/from_nhwc. Each rearrangement is one reshape-transpose-reshape.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import kernel, prepare
from ..common import QUANT_RANGE, is_quant, from_nhwc, to_nhwc
from .reference import int_values


def _paddings(ctx, value, rows: int) -> np.ndarray:
    """The [rows, 2] non-negative paddings of a paddings input's Value."""
    pads = value.array.astype(np.int64)
    if pads.shape != (rows, 2):
        ctx.fail(f"paddings have shape {list(pads.shape)}, expected [{rows}, 2]")
    if (pads < 0).any():
        ctx.fail(f"paddings {pads.tolist()} must be non-negative")
    return pads


def _logical_zero(value):
    """The stored value of real 0: the zero point for quantized tensors."""
    return value.zero_point if is_quant(value.code) else 0


def _pad(ctx, args, fill):
    x = args.input.array
    return [np.pad(x, _paddings(ctx, args.paddings, x.ndim), constant_values=np.asarray(fill).astype(x.dtype))]


@kernel(Op.PAD)
def pad(ctx):
    args = ctx.args
    return _pad(ctx, args, _logical_zero(args.input))


@kernel(Op.PAD_V2)
def pad_v2(ctx):
    args = ctx.args
    value = args.pad_value
    code = args.input.code
    if is_quant(code):  # a stored integer: it must fit the tensor's storage
        lo, hi = QUANT_RANGE[code]
        if not lo <= value <= hi:
            ctx.fail(f"pad value {value} outside the {code.name} range [{lo}, {hi}]")
    return _pad(ctx, args, value)


class PreparedPad:
    """PAD / PAD_V2 with constant paddings and value: the input copied into the interior of output 0's
    buffer and only the border filled (np.pad's own bookkeeping costs more than the copy on the tensors
    of real models). The same values as the plain kernel; anything unexpected goes to it."""

    fresh_outputs = True

    def __init__(self, pctx, pads: np.ndarray, fill):
        self.kernel = pctx.step.kernel
        self.pads = [tuple(int(v) for v in row) for row in pads]
        self.fill, self.dtype = fill, pctx.step.bound.operand("input").type.dtype
        self.rank = len(self.pads)
        self.plans: dict = {}

    def _plan(self, shape: tuple):
        """(output shape, interior slices, border slices) for an input shape."""
        plan = self.plans.get(shape)
        if plan is None:
            out = tuple(n + a + b for n, (a, b) in zip(shape, self.pads))
            interior = tuple(slice(a, a + n) for n, (a, _) in zip(shape, self.pads))
            borders = []
            for axis, (a, b) in enumerate(self.pads):   # each border slab once: earlier axes' interior only
                head = interior[:axis]
                if a:
                    borders.append(head + (slice(0, a),))
                if b:
                    borders.append(head + (slice(a + shape[axis], out[axis]),))
            plan = self.plans[shape] = (out, interior, borders)
        return plan

    def __call__(self, ctx):
        v = ctx.args.input
        if v is None or v.array.ndim != self.rank or v.array.dtype != self.dtype:
            return self.kernel(ctx)
        shape, interior, borders = self._plan(v.array.shape)
        out = ctx.output_buffer(0, shape, self.dtype)
        out[interior] = v.array
        for b in borders:
            out[b] = self.fill
        return [out]


def _prepare_pad(pctx, with_value: bool):
    if pctx.step.bound.runtime != {"input"}:   # only the input fed at run time
        return None
    args = pctx.args
    t = pctx.step.bound.operand("input").type
    pads = args.paddings.array if args.paddings is not None else None
    if t.dtype is None or not t.dimensions or pads is None or pads.shape != (len(t.dimensions), 2) or (pads < 0).any():
        return None
    if not with_value:
        fill = t.zero_point if is_quant(t.code) else 0
    else:
        fill = args.pad_value
        if is_quant(t.code) and not QUANT_RANGE[t.code][0] <= fill <= QUANT_RANGE[t.code][1]:
            return None   # the plain kernel reports it
    return PreparedPad(pctx, pads, np.asarray(fill).astype(t.dtype))


@prepare(Op.PAD)
def prepare_pad(pctx):
    return _prepare_pad(pctx, False)


@prepare(Op.PAD_V2)
def prepare_pad_v2(pctx):
    return _prepare_pad(pctx, True)


# -- MIRROR_PAD -------------------------------------------------------------------------

_REFLECT, _SYMMETRIC = 0, 1


def _mirror_index(n: int, before: int, after: int, mode: int) -> np.ndarray:
    """Source index of every output position along one dimension of size n."""
    i = np.arange(-before, n + after)
    edge = 0 if mode == _REFLECT else 1  # SYMMETRIC repeats the edge element
    i = np.where(i < 0, -i - edge, i)
    return np.where(i >= n, 2 * n - 2 + edge - i, i)


def _mirror_limit(shape: tuple, mode: int) -> np.ndarray:
    """The most elements each dimension can mirror: REFLECT n - 1, SYMMETRIC n."""
    return np.asarray(shape, dtype=np.int64) - (1 if mode == _REFLECT else 0)


def _mirror_fits(pads: np.ndarray, limit: np.ndarray) -> bool:
    """Whether [rank, 2] paddings are non-negative and within `limit` (no padding always fits)."""
    return not ((pads < 0) | ((pads > 0) & (pads > limit[:, None]))).any()


@kernel(Op.MIRROR_PAD)
def mirror_pad(ctx):
    args = ctx.args
    x, pads, mode = args.input.array, args.paddings.array, args.mode
    if mode not in (_REFLECT, _SYMMETRIC):
        ctx.fail(f"mode {mode} is not 0 (REFLECT) or 1 (SYMMETRIC)")
    if pads.shape != (x.ndim, 2):
        ctx.fail(f"paddings must have shape [{x.ndim}, 2], got {list(pads.shape)}")
    limit = _mirror_limit(x.shape, mode)
    if not _mirror_fits(pads, limit):
        ctx.fail(f"paddings {pads.tolist()} must lie in [0, {limit.tolist()}] per dimension for "
                 f"{'REFLECT' if mode == _REFLECT else 'SYMMETRIC'} mode and input shape {list(x.shape)}")
    index = [_mirror_index(n, int(p[0]), int(p[1]), mode) for n, p in zip(x.shape, pads)]
    return [x[np.ix_(*index)]]


class PreparedMirrorPad:
    """MIRROR_PAD with constant paddings and mode: per input shape, the source index along each padded
    dimension worked out once (the kernel's _mirror_index and its limits, _mirror_fits), and each
    run gathers with np.take along those dimensions only, the last gather into output 0's buffer."""

    fresh_outputs = True

    def __init__(self, pctx, pads: np.ndarray, mode: int):
        self.kernel = pctx.step.kernel
        self.pads = [(int(a), int(b)) for a, b in pads]
        self.mode = mode
        self.plans: dict = {}

    def _plan(self, shape: tuple):
        """(output shape, [(axis, source index)]) for an input shape, or None when the paddings do not
        fit it (the kernel reports that)."""
        plan = self.plans.get(shape)
        if plan is None:
            if not _mirror_fits(np.array(self.pads, np.int64), _mirror_limit(shape, self.mode)):
                return None
            out = tuple(n + a + b for n, (a, b) in zip(shape, self.pads))
            gathers = [(axis, _mirror_index(n, a, b, self.mode)) for axis, (n, (a, b))
                       in enumerate(zip(shape, self.pads)) if a or b]
            plan = self.plans[shape] = (out, gathers)
        return plan

    def __call__(self, ctx):
        x = ctx.args.input.array
        plan = self._plan(x.shape) if x.ndim == len(self.pads) else None
        if plan is None:
            return self.kernel(ctx)
        out_shape, gathers = plan
        if not gathers:
            return [x.copy()]
        for axis, index in gathers[:-1]:
            x = np.take(x, index, axis=axis)
        axis, index = gathers[-1]
        out = ctx.output_buffer(0, out_shape, x.dtype)
        np.take(x, index, axis=axis, out=out)
        return [out]


@prepare(Op.MIRROR_PAD)
def prepare_mirror_pad(pctx):
    bound = pctx.step.bound
    pads = pctx.args.paddings
    if bound.runtime != {"input"} or pads is None or not bound.constant("mode"):
        return None
    pads, mode = pads.array.astype(np.int64), pctx.args.mode
    rank = len(bound.operand("input").type.dimensions or ())
    if mode not in (_REFLECT, _SYMMETRIC) or pads.shape != (rank, 2) or (pads < 0).any():
        return None   # the plain kernel reports it
    return PreparedMirrorPad(pctx, pads, mode)


# -- depth <-> space (square blocks) ------------------------------------------------------

def _block_size(ctx, args) -> int:
    return args.block_size   # >= 1, dividing the depth or the space: the spec's rules


@kernel(Op.DEPTH_TO_SPACE)
def depth_to_space(ctx):
    args = ctx.args
    nchw = args.nchw
    x = to_nhwc(args.input.array, nchw)
    b = _block_size(ctx, args)
    n, h, w, c = x.shape
    # depth index (i * b + j) * c_out + k goes to pixel (h * b + i, w * b + j), channel k
    y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return [from_nhwc(y.reshape(n, h * b, w * b, c // (b * b)), nchw)]


@kernel(Op.SPACE_TO_DEPTH)
def space_to_depth(ctx):
    args = ctx.args
    nchw = args.nchw
    x = to_nhwc(args.input.array, nchw)
    b = _block_size(ctx, args)
    n, h, w, c = x.shape
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return [from_nhwc(y.reshape(n, h // b, w // b, b * b * c), nchw)]


# -- batch <-> space (rectangular blocks) ------------------------------------------------

def _block_shape(ctx, args) -> tuple[int, int]:
    bh, bw = int_values(ctx, args.block_shape, "block_shape", 2)
    if bh < 1 or bw < 1:
        ctx.fail(f"block_shape {[bh, bw]} entries must be >= 1")
    return bh, bw


@kernel(Op.BATCH_TO_SPACE_ND)
def batch_to_space_nd(ctx):
    args = ctx.args
    nchw = args.nchw
    x = to_nhwc(args.input.array, nchw)
    bh, bw = _block_shape(ctx, args)
    n, h, w, c = x.shape
    if n % (bh * bw):
        ctx.fail(f"batch {n} is not divisible by the block size {bh} x {bw}")
    # batch index (i * bw + j) * n_out + k holds pixel (h * bh + i, w * bw + j) of image k
    y = x.reshape(bh, bw, n // (bh * bw), h, w, c).transpose(2, 3, 0, 4, 1, 5)
    return [from_nhwc(y.reshape(n // (bh * bw), h * bh, w * bw, c), nchw)]


@kernel(Op.SPACE_TO_BATCH_ND)
def space_to_batch_nd(ctx):
    args = ctx.args
    nchw = args.nchw
    x = to_nhwc(args.input.array, nchw)
    bh, bw = _block_shape(ctx, args)
    pads = np.zeros((4, 2), dtype=np.int64)
    pads[1:3] = _paddings(ctx, args.paddings, 2)
    x = np.pad(x, pads, constant_values=np.asarray(_logical_zero(args.input)).astype(x.dtype))
    n, h, w, c = x.shape
    if h % bh or w % bw:
        ctx.fail(f"padded height {h} and width {w} must be divisible by the block size {bh} x {bw}")
    y = x.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return [from_nhwc(y.reshape(bh * bw * n, h // bh, w // bw, c), nchw)]

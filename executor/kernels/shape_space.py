"""Padding and spatial rearrangement kernels: PAD, PAD_V2, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND.

The 4-D ones work in NHWC and honour the optional NCHW layout flag through
common.to_nhwc/from_nhwc. Each rearrangement is one reshape-transpose-reshape.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ..registry import kernel
from .common import QUANT_RANGE, is_quant, from_nhwc, to_nhwc
from .shape import int_values


def _paddings(ctx, i: int, rows: int) -> np.ndarray:
    """The [rows, 2] non-negative paddings of input `i`."""
    pads = ctx.inputs[i].array.astype(np.int64)
    if pads.shape != (rows, 2):
        ctx.fail(f"paddings have shape {list(pads.shape)}, expected [{rows}, 2]")
    if (pads < 0).any():
        ctx.fail(f"paddings {pads.tolist()} must be non-negative")
    return pads


def _logical_zero(value):
    """The stored value of real 0: the zero point for quantized tensors."""
    return value.zero_point if is_quant(value.code) else 0


def _pad(ctx, fill):
    x = ctx.inputs[0].array
    return [np.pad(x, _paddings(ctx, 1, x.ndim), constant_values=np.asarray(fill).astype(x.dtype))]


@kernel(Op.PAD)
def pad(ctx):
    return _pad(ctx, _logical_zero(ctx.inputs[0]))


@kernel(Op.PAD_V2)
def pad_v2(ctx):
    value = ctx.scalar(2)
    code = ctx.inputs[0].code
    if is_quant(code):  # a stored integer: it must fit the tensor's storage
        lo, hi = QUANT_RANGE[code]
        if not lo <= value <= hi:
            ctx.fail(f"pad value {value} outside the {code.name} range [{lo}, {hi}]")
    return _pad(ctx, value)


# -- depth <-> space (square blocks) ------------------------------------------------------

def _layout(ctx, i: int) -> bool:
    return bool(ctx.scalar(i, False))


def _block_size(ctx) -> int:
    block = ctx.scalar(1)
    if block < 1:
        ctx.fail(f"block_size {block} must be >= 1")
    return block


@kernel(Op.DEPTH_TO_SPACE)
def depth_to_space(ctx):
    nchw = _layout(ctx, 2)
    x = to_nhwc(ctx.inputs[0].array, nchw)
    b = _block_size(ctx)
    n, h, w, c = x.shape
    if c % (b * b):
        ctx.fail(f"depth {c} is not divisible by block_size^2 = {b * b}")
    # depth index (i * b + j) * c_out + k goes to pixel (h * b + i, w * b + j), channel k
    y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return [from_nhwc(y.reshape(n, h * b, w * b, c // (b * b)), nchw)]


@kernel(Op.SPACE_TO_DEPTH)
def space_to_depth(ctx):
    nchw = _layout(ctx, 2)
    x = to_nhwc(ctx.inputs[0].array, nchw)
    b = _block_size(ctx)
    n, h, w, c = x.shape
    if h % b or w % b:
        ctx.fail(f"height {h} and width {w} must be divisible by block_size {b}")
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return [from_nhwc(y.reshape(n, h // b, w // b, b * b * c), nchw)]


# -- batch <-> space (rectangular blocks) ------------------------------------------------

def _block_shape(ctx) -> tuple[int, int]:
    bh, bw = int_values(ctx, 1, "block_shape", 2)
    if bh < 1 or bw < 1:
        ctx.fail(f"block_shape {[bh, bw]} entries must be >= 1")
    return bh, bw


@kernel(Op.BATCH_TO_SPACE_ND)
def batch_to_space_nd(ctx):
    nchw = _layout(ctx, 2)
    x = to_nhwc(ctx.inputs[0].array, nchw)
    bh, bw = _block_shape(ctx)
    n, h, w, c = x.shape
    if n % (bh * bw):
        ctx.fail(f"batch {n} is not divisible by the block size {bh} x {bw}")
    # batch index (i * bw + j) * n_out + k holds pixel (h * bh + i, w * bw + j) of image k
    y = x.reshape(bh, bw, n // (bh * bw), h, w, c).transpose(2, 3, 0, 4, 1, 5)
    return [from_nhwc(y.reshape(n // (bh * bw), h * bh, w * bw, c), nchw)]


@kernel(Op.SPACE_TO_BATCH_ND)
def space_to_batch_nd(ctx):
    nchw = _layout(ctx, 3)
    x = to_nhwc(ctx.inputs[0].array, nchw)
    bh, bw = _block_shape(ctx)
    pads = np.zeros((4, 2), dtype=np.int64)
    pads[1:3] = _paddings(ctx, 2, 2)
    x = np.pad(x, pads, constant_values=np.asarray(_logical_zero(ctx.inputs[0])).astype(x.dtype))
    n, h, w, c = x.shape
    if h % bh or w % bw:
        ctx.fail(f"padded height {h} and width {w} must be divisible by the block size {bh} x {bw}")
    y = x.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return [from_nhwc(y.reshape(bh * bw * n, h // bh, w // bw, c), nchw)]

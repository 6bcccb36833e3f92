"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR over the spatial axes of an NHWC view.

Source coordinates are computed once per output row and column in float32,
exactly as the Android reference (TFLite reference kernels) does
(nnapi/ops/geometry.py, which the ONNX Resize converter compares with), then the
pixels are gathered with fancy indexing: no loop over pixels.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.geometry import bilinear_axis, nearest_index, scaled_size

from ..registry import kernel
from .common import QUANT8, from_nhwc, round_half_away, to_nhwc

_F32 = np.float32


def _resize_args(ctx):
    """(nhwc input, out_h, out_w, nchw, align_corners, half_pixel_centers). The spec checks the rank, the
    corner flags and that the output size is positive; zero extents are the kernel's to refuse."""
    args = ctx.args
    nchw, align, half = args.nchw, bool(args.align_corners), bool(args.half_pixel_centers)
    inp = args.input
    x = to_nhwc(inp.array, nchw)
    _, h, w, c = x.shape
    if min(h, w, c) <= 0:
        ctx.fail(f"only the batch dimension may be zero, got shape {list(inp.shape)}")
    if isinstance(args.width, int):   # INT32 sizes
        out_w, out_h = args.width, args.height
    else:  # scales: floor(in_size * scale) in float32 (float16 scales are widened first)
        out_w, out_h = scaled_size(w, args.width), scaled_size(h, args.height)
    return x, out_h, out_w, nchw, align, half


def _finish(ctx, out_nhwc, nchw):
    return [from_nhwc(out_nhwc.astype(ctx.out_type().dtype), nchw)]


@kernel(Op.RESIZE_NEAREST_NEIGHBOR)
def resize_nearest_neighbor(ctx):
    x, out_h, out_w, nchw, align, half = _resize_args(ctx)
    iy = nearest_index(x.shape[1], out_h, align, half)
    ix = nearest_index(x.shape[2], out_w, align, half)
    return _finish(ctx, x[:, iy[:, None], ix[None, :], :], nchw)


@kernel(Op.RESIZE_BILINEAR)
def resize_bilinear(ctx):
    x, out_h, out_w, nchw, align, half = _resize_args(ctx)
    y0, y1, dy = bilinear_axis(x.shape[1], out_h, align, half)
    x0, x1, dx = bilinear_axis(x.shape[2], out_w, align, half)
    xf = x.astype(_F32)
    dy = dy[None, :, None, None]
    dx = dx[None, None, :, None]
    one = _F32(1)

    def px(rows, cols):
        return xf[:, rows[:, None], cols[None, :], :]
    # the reference kernel's float32 evaluation order, so quantized results round identically
    out = (px(y0, x0) * (one - dy) * (one - dx) + px(y1, x0) * dy * (one - dx)
           + px(y0, x1) * (one - dy) * dx + px(y1, x1) * dy * dx)
    if ctx.args.input.code in QUANT8:
        out = round_half_away(out)  # the reference rounds to nearest (CTS values are bit-exact)
    return _finish(ctx, out, nchw)

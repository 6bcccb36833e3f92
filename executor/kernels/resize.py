"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR over the spatial axes of an NHWC view.

Source coordinates are computed once per output row and column in float32,
exactly as the Android reference (TFLite reference kernels) does
(nnapi/ops/geometry.py, which the ONNX Resize converter compares with), then the
pixels are gathered with fancy indexing: no loop over pixels.

PreparedResizeBilinear (sizes and flags constant) evaluates the plain kernel's
float32 expression operation for operation, in the same order, so its results
are the same bits: per input shape the four source pixels' flat indices and the
weight rows are made once; each run gathers whole pixels (C values as one item)
in the input's own type, casts them to float32 (exact), multiplies by the row
weight then the column weight (repeated along the channels: long contiguous
rows) and sums, then rounds quantized values the same way (floor(|v| + 0.5)
with v's sign) straight into the output.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.geometry import bilinear_axis, nearest_index, scaled_size

from ..registry import kernel, prepare
from .common import QUANT8, from_nhwc, round_half_away, to_nhwc
from .scratch import Scratch

_F32 = np.float32


def _resize_args(ctx):
    """(nhwc input, out_h, out_w, nchw, align_corners, half_pixel_centers), validated."""
    args = ctx.args
    nchw, align, half = args.nchw, bool(args.align_corners), bool(args.half_pixel_centers)
    if align and half:
        ctx.fail("align_corners and half_pixel_centers cannot both be true")
    inp = args.input
    if inp.array.ndim != 4:
        ctx.fail(f"input must be 4-D, got shape {list(inp.shape)}")
    x = to_nhwc(inp.array, nchw)
    _, h, w, c = x.shape
    if min(h, w, c) <= 0:
        ctx.fail(f"only the batch dimension may be zero, got shape {list(inp.shape)}")
    if isinstance(args.width, int):   # INT32 sizes
        out_w, out_h = args.width, args.height
    else:  # scales: floor(in_size * scale) in float32 (float16 scales are widened first)
        out_w, out_h = scaled_size(w, args.width), scaled_size(h, args.height)
    if out_h <= 0 or out_w <= 0:
        ctx.fail(f"output size {out_h}x{out_w} must be positive")
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


# input shapes remembered per operation (dynamic shapes could otherwise grow the cache without end)
MAX_PLANS = 16


class PreparedResizeBilinear:
    """RESIZE_BILINEAR whose sizes and flags are constants; bit for bit the plain kernel (see above).
    Results are output 0's buffer or a new array, never a view of the input."""

    fresh_outputs = True

    def __init__(self, pctx):
        self.quant = pctx.step.bound.operand("input").type.code in QUANT8
        self.plans: dict = {}
        self.scratch: Scratch = pctx.compiled.scratch

    def _plan(self, ctx):
        x, out_h, out_w, nchw, align, half = _resize_args(ctx)   # (validated as the kernel does)
        _, h, w, c = x.shape
        y0, y1, dy = bilinear_axis(h, out_h, align, half)
        x0, x1, dx = bilinear_axis(w, out_w, align, half)
        one = _F32(1)
        rows = [(one - dy).astype(_F32).reshape(1, out_h, 1), dy.astype(_F32).reshape(1, out_h, 1)]
        cols = [np.repeat((one - dx).astype(_F32), c).reshape(1, 1, out_w * c),
                np.repeat(dx.astype(_F32), c).reshape(1, 1, out_w * c)]
        flat = lambda r, q: (r[:, None] * w + q[None, :]).reshape(-1)   # noqa: E731
        # the reference's terms in its order: (y0, x0), (y1, x0), (y0, x1), (y1, x1)
        terms = [(flat(y0, x0), 0, 0), (flat(y1, x0), 1, 0), (flat(y0, x1), 0, 1), (flat(y1, x1), 1, 1)]
        if len(self.plans) >= MAX_PLANS:
            self.plans.clear()
        plan = self.plans[ctx.args.input.array.shape] = (nchw, out_h, out_w, rows, cols, terms)
        return plan

    def __call__(self, ctx):
        inp = ctx.args.input
        if inp is None or inp.array.ndim != 4:
            return resize_bilinear(ctx)
        plan = self.plans.get(inp.array.shape)
        if plan is None:
            plan = self._plan(ctx)
        nchw, out_h, out_w, rows, cols, terms = plan
        x = to_nhwc(inp.array, nchw)
        n, h, w, c = x.shape
        if n == 0:
            return resize_bilinear(ctx)
        # whole pixels as single items: one gather moves C values
        pixels = np.ascontiguousarray(x).reshape(n, h * w, c).view(np.dtype((np.void, c * x.itemsize)))
        shape = (n, out_h, out_w * c)
        acc = self.scratch.get("resize_acc", shape, _F32)
        term = self.scratch.get("resize_term", shape, _F32)
        for k, (index, r, q) in enumerate(terms):
            gathered = np.take(pixels, index, axis=1).view(x.dtype).reshape(shape)
            dest = acc if k == 0 else term
            np.copyto(dest, gathered, casting="unsafe")
            dest *= rows[r]
            dest *= cols[q]
            if k:
                acc += term
        out_type = ctx.out_type()
        out_shape = (n, out_h, out_w, c)
        if self.quant:
            # round_half_away's sign(v) * floor(|v| + 0.5), in float32 as there, into the output
            np.abs(acc, out=term)
            term += _F32(0.5)
            np.floor(term, out=term)
            np.copysign(term, acc, out=term)
            acc = term
        result = ctx.output_buffer(0, out_shape, out_type.dtype) if not nchw else np.empty(out_shape, out_type.dtype)
        np.copyto(result, acc.reshape(out_shape), casting="unsafe")
        return [from_nhwc(result, nchw)]


@prepare(Op.RESIZE_BILINEAR)
def prepare_resize_bilinear(pctx):
    if pctx.step.bound.runtime != {"input"}:   # every size and flag a constant
        return None
    return PreparedResizeBilinear(pctx)

"""TRANSPOSE_CONV_2D: every input pixel scatters input x filter into an output
window placed at stride-spaced origins; the result is cropped by the padding.

One GEMM gives every (input pixel, output channel, filter tap) product; the
col2im scatter then adds each filter tap's plane at its strided offset (a loop
over the filter taps, never over pixels). With a constant filter the preparer
converts it once and runs the GEMM and scatter in float32 (exact for quantized
operands when the bound allows, as in prepared.py).
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.geometry import transpose_implicit_padding, transpose_out_size

from ...registry import kernel, prepare
from ..common import from_nhwc, is_quant, to_nhwc
from .prepared import Epilogue, gemm_domain, supported
from .quant import acc_operand, check_exact, finish
from .gemm import pad_hw


def _implicit_pads(ctx, out_size: int, stride: int, filter_size: int, padding: int) -> tuple[int, int]:
    try:
        return transpose_implicit_padding(out_size, stride, filter_size, padding)
    except ValueError as e:
        ctx.fail(str(e))


def _pads(ctx, args, nchw: bool, filter_hw: tuple, strides: tuple) -> tuple:
    """(top, bottom, left, right); only the head paddings must be non-negative."""
    if args.form == "explicit":
        pads = (args.pad_top, args.pad_bottom, args.pad_left, args.pad_right)
    else:
        shape = args.output_shape.array.reshape(-1)
        if shape.size != 4:
            ctx.fail(f"output shape tensor must have 4 values, got {shape.size}")
        out_hw = (int(shape[2]), int(shape[3])) if nchw else (int(shape[1]), int(shape[2]))
        padding = args.padding
        pads = (_implicit_pads(ctx, out_hw[0], strides[0], filter_hw[0], padding)
                + _implicit_pads(ctx, out_hw[1], strides[1], filter_hw[1], padding))
    if pads[0] < 0 or pads[2] < 0:
        ctx.fail(f"negative top/left padding in {pads}")
    return pads


def scatter(ctx, x: np.ndarray, w: np.ndarray, strides: tuple, pads: tuple) -> np.ndarray:
    """x [N, H, W, C], w [O, kh, kw, C] -> [N, OH, OW, O] with OH = (H-1)*sh + kh - top - bottom."""
    n, h, wd, c = x.shape
    o, kh, kw, _ = w.shape
    (sh, sw), (top, bottom, left, right) = strides, pads
    oh, ow = transpose_out_size(h, sh, kh, top, bottom), transpose_out_size(wd, sw, kw, left, right)
    if oh <= 0 or ow <= 0:
        ctx.fail(f"output size {oh}x{ow} is not positive")
    cols = (x.reshape(-1, c) @ w.reshape(-1, c).T).reshape(n, h, wd, o, kh, kw)
    # the buffer holds every scattered tap and the whole (possibly larger, negative-tail) output
    buf = np.zeros((n, max((h - 1) * sh + kh, top + oh), max((wd - 1) * sw + kw, left + ow), o), cols.dtype)
    for i in range(kh):
        for j in range(kw):
            buf[:, i: i + (h - 1) * sh + 1: sh, j: j + (wd - 1) * sw + 1: sw] += cols[..., i, j]
    return buf[:, top: top + oh, left: left + ow]


@kernel(Op.TRANSPOSE_CONV_2D)
def transpose_conv_2d(ctx):
    args = ctx.args
    inp, flt, bias = args.input, args.filter, args.bias
    if inp.array.ndim != 4 or flt.array.ndim != 4 or bias.array.ndim != 1:
        ctx.fail(f"input {inp.shape} and filter {flt.shape} must be 4-D, bias {bias.shape} 1-D")
    nchw = args.nchw
    x = to_nhwc(acc_operand(inp), nchw)
    if flt.shape[3] != x.shape[3] or bias.shape[0] != flt.shape[0]:
        ctx.fail(f"filter {list(flt.shape)} and bias {list(bias.shape)} do not fit {x.shape[3]} input channels")
    strides = args.window_strides
    if min(strides) < 1:
        ctx.fail(f"strides {strides} must be positive")
    if is_quant(inp.code):
        # each output sums at most ceil(kh/sh) * ceil(kw/sw) taps of C products
        check_exact(ctx, x.shape[3] * -(-flt.shape[1] // strides[0]) * -(-flt.shape[2] // strides[1]))
    pads = _pads(ctx, args, nchw, flt.shape[1:3], strides)
    acc = scatter(ctx, x, acc_operand(flt), strides, pads)
    return [from_nhwc(finish(ctx, acc, inp, flt, bias, args.fuse), nchw)]


class PreparedTransposeConv:
    """TRANSPOSE_CONV_2D with its filter converted once to the exact GEMM type. Results (the plain
    kernel's too) are new arrays or output 0's buffer: never a view of the input."""

    fresh_outputs = True

    def __init__(self, pctx, args):
        self.kernel = pctx.step.kernel
        self.args = args
        self.nchw = args.nchw
        self.strides = args.window_strides
        if min(self.strides) < 1:
            raise ValueError(f"strides {self.strides} must be positive")
        flt = args.filter
        w = flt.array.astype(np.float64) - (flt.zero_point if is_quant(flt.code) else 0)
        bound, self.dtype, self.zero_point = gemm_domain(pctx, w)
        self.weights = w.astype(self.dtype)
        self.epilogue = Epilogue(pctx, args.bias, flt, args.fuse, bound)
        self.pads: dict = {}
        self.scratch = pctx.compiled.scratch

    def __call__(self, ctx):
        v = ctx.args.input
        if v is None or v.array.ndim != 4:
            return self.kernel(ctx)
        x = to_nhwc(v.array, self.nchw)
        if x.shape[3] != self.weights.shape[3] or x.shape[0] == 0:
            return self.kernel(ctx)
        if x.shape not in self.pads:
            self.pads[x.shape] = _pads(ctx, self.args, self.nchw, self.weights.shape[1:3], self.strides)
        xf = pad_hw(x, (0, 0, 0, 0), self.scratch, self.dtype, self.zero_point)
        acc = scatter(ctx, xf, self.weights, self.strides, self.pads[x.shape])
        out = self.epilogue.output(None if self.nchw else ctx, acc.shape)
        return [from_nhwc(self.epilogue(acc, out), self.nchw)]


@prepare(Op.TRANSPOSE_CONV_2D)
def prepare_transpose_conv_2d(pctx):
    if not supported(pctx):
        return None
    args = pctx.args
    flt, bias = args.filter, args.bias
    if flt is None or bias is None or flt.array.ndim != 4 or bias.array.shape != (flt.array.shape[0],):
        return None
    return PreparedTransposeConv(pctx, args)

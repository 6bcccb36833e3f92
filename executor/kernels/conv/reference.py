"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, and the matrix products FULLY_CONNECTED and
BATCH_MATMUL.

The three convolutions are one grouped correlation: im2col patches (a strided
view of the padded input) times the filters, as one batched matrix multiply
with a batch entry per group (CONV_2D: 1 group; DEPTHWISE_CONV_2D: one per
input channel). Operands are accumulated in the exact domains of conv_quant.py.
NCHW models run in NHWC and are moved back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nnapi.codes import OperandCode as C, OperationCode as Op

from ...registry import kernel
from ..common import QUANT8, explicit_out_size, from_nhwc, is_quant, requantize, to_nhwc
from .quant import acc_operand, check_exact, finish


# -- the window ----------------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    """Where the filter taps land: padding (top, bottom, left, right), strides and dilations (h, w)."""

    pads: tuple
    strides: tuple
    dilations: tuple


def window(ctx, args, in_hw: tuple, filter_hw: tuple) -> Window:
    """The explicit padding as given, or the SAME/VALID padding worked out for this input size. The spec
    checks the parameters and that the window fits: constant ones at finish(), the ones fed at run time
    before the kernel runs (executor/runtime.py)."""
    return Window(args.window_pads(in_hw, filter_hw), args.window_strides, args.window_dilations)


# -- the grouped correlation -------------------------------------------------------------

def correlate(ctx, x: np.ndarray, w: np.ndarray, groups: int, win: Window) -> np.ndarray:
    """x [N, H, W, C] with w [O, kh, kw, C / groups] -> [N, OH, OW, O]; group g sees channels
    g*C/groups.. and makes outputs g*O/groups.."""
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    (pt, pb, pl, pr), (sh, sw), (dh, dw) = win.pads, win.strides, win.dilations
    oh = explicit_out_size(h, sh, kh, pt, pb, dh)
    ow = explicit_out_size(wd, sw, kw, pl, pr, dw)
    padded = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    # every window of the dilated filter's extent, then keep the strided origins and dilated taps
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    taps = sliding_window_view(padded, span, axis=(1, 2))[:, ::sh, ::sw, :, ::dh, ::dw]  # [N, OH, OW, C, kh, kw]
    k = kh * kw * cg
    patches = (taps.reshape(n, oh, ow, groups, cg, kh, kw)
               .transpose(3, 0, 1, 2, 5, 6, 4).reshape(groups, n * oh * ow, k))
    filters = w.reshape(groups, o // groups, k).transpose(0, 2, 1)
    acc = np.matmul(patches, filters)  # [groups, N*OH*OW, O/groups]
    return acc.transpose(1, 0, 2).reshape(n, oh, ow, o)


def _conv(ctx, filters) -> list[np.ndarray]:
    """Shared body: `filters(args, flt, channels)` -> (w [O, kh, kw, C/groups], groups). The spec checks the
    shapes (ranks, channels, bias, groups, depth multiplier)."""
    args = ctx.args
    inp, flt, bias = args.input, args.filter, args.bias
    nchw = args.nchw
    x = to_nhwc(acc_operand(inp), nchw)
    w, groups = filters(args, flt, x.shape[-1])
    if is_quant(inp.code):
        check_exact(ctx, w[0].size)
    acc = correlate(ctx, x, w, groups, window(ctx, args, x.shape[1:3], w.shape[1:3]))
    return [from_nhwc(finish(ctx, acc, inp, flt, bias, args.fuse), nchw)]


def _dense_filters(args, flt, channels):
    return acc_operand(flt), 1


def _grouped_filters(args, flt, channels):
    return acc_operand(flt), args.groups


def _depthwise_filters(args, flt, channels):
    """[1, kh, kw, C*M] -> [C*M, kh, kw, 1] with one group per input channel."""
    return acc_operand(flt)[0].transpose(2, 0, 1)[..., None], channels


@kernel(Op.CONV_2D)
def conv_2d(ctx):
    return _conv(ctx, _dense_filters)


@kernel(Op.GROUPED_CONV_2D)
def grouped_conv_2d(ctx):
    return _conv(ctx, _grouped_filters)


@kernel(Op.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(ctx):
    return _conv(ctx, _depthwise_filters)


@kernel(Op.FULLY_CONNECTED)
def fully_connected(ctx):
    args = ctx.args
    inp, weights, bias = args.input, args.weights, args.bias
    size = weights.shape[1]   # the spec checks the ranks, the bias and that the input flattens to rows of it
    if is_quant(inp.code):
        check_exact(ctx, size)
    acc = acc_operand(inp).reshape(-1, size) @ acc_operand(weights).T  # [batch, units]
    return [finish(ctx, acc, inp, weights, bias, args.fuse)]


# -- BATCH_MATMUL ----------------------------------------------------------------------------

def _matmul_operands(ctx, args):
    """The two operands with adj_x / adj_y applied (transposing the last two dimensions); the spec checks
    that they multiply."""
    x, y = args.x.array, args.y.array
    a = np.swapaxes(x, -1, -2) if args.adj_x else x
    b = np.swapaxes(y, -1, -2) if args.adj_y else y
    return a, b


def _quant_matmul(ctx, args, a, b):
    """int8 x int8 -> int32 sums, exact in float64 (|term| <= 2**16, far fewer than 2**37 terms)."""
    x, y, out = args.x, args.y, ctx.out_type()
    acc = np.matmul(a.astype(np.float64) - x.zero_point, b.astype(np.float64) - y.zero_point).astype(np.int64)
    return requantize(acc, matmul_multiplier(x.scale, y.scale, out.scale), out.zero_point, out.code)


def matmul_multiplier(x_scale: float, y_scale: float, out_scale: float) -> float:
    """TFLite's real multiplier of a quantized BATCH_MATMUL: (float32 x scale x float32 y scale) / output
    scale, in double (the kernel and the compiled one, batch_matmul.py)."""
    return float(np.float32(x_scale) * np.float32(y_scale)) / float(np.float32(out_scale))


@kernel(Op.BATCH_MATMUL)
def batch_matmul(ctx):
    args = ctx.args
    a, b = _matmul_operands(ctx, args)
    code = args.x.code
    if code in QUANT8:
        res = _quant_matmul(ctx, args, a, b)
    elif code == C.TENSOR_INT32:
        res = np.matmul(a.astype(np.int64), b.astype(np.int64))  # wraps to int32 like the C kernel
    else:
        res = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return [res.astype(ctx.out_type().dtype)]

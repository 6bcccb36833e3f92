"""Compiled CONV_2D, GROUPED_CONV_2D and FULLY_CONNECTED (DEPTHWISE_CONV_2D: depthwise.py).

When the filter, bias and parameters are constants (the usual case), the
preparers lay the filter out once for a single matrix multiply, precompute the fuse clamp and, for quantized operations,
the per-channel fixed-point requantization and the accumulator bound that
proves a float32 GEMM exact (|partial sums| < 2**24; else float64, exact below
2**53). Each run is then: subtract the input zero point while casting, pad,
im2col, GEMM, bias, clamp or requantize. The results equal the plain kernels'
(reference.py) bit for bit in the quantized case.

Per-channel constants are applied to long rows (gemm.ChannelRows), which numpy
does several times faster than C at a time.

Float16 operands, non-constant filters and anything unexpected at run time go
to the plain kernel. TRANSPOSE_CONV_2D's preparer (conv_transpose.py) reuses
the epilogue and the exactness rule.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op

from ...registry import prepare
from ..common import QUANT8, QUANT_RANGE, clip_ufunc, explicit_out_size, fuse_range
from .reference import window
from .quant import real_multipliers
from .gemm import ChannelRows, abs_row_sums, exact_dtype, im2col, pad_hw
from ..requantize import Requantizer
from ..scratch import Scratch

_CODES = (C.TENSOR_FLOAT32, *QUANT8)


class Epilogue:
    """Accumulator [..., O] -> output: + bias and the fuse clamp (float, in place: the accumulator is the
    output), or the requantizer (quantized: the accumulator is scratch, the result goes to `out`)."""

    def __init__(self, pctx, bias, flt, fuse: int, acc_bound: float):
        in_type, out = pctx.step.bound.operand("input").type, pctx.out_type()
        lo, hi = fuse_range(fuse, out.code, out.scale, out.zero_point)
        channels = bias.array.shape[0]
        self.quant = in_type.code in QUANT8
        self.out_dtype = out.dtype
        if self.quant:
            self.requant = Requantizer(bias.array, real_multipliers(pctx, in_type.scale, flt, channels),
                                       out.zero_point, lo, hi, out.dtype, acc_bound, pctx.compiled.scratch)
        else:
            self.bias = bias.array.astype(np.float32)
            self.rows = ChannelRows(self.bias)
            self.clamp = None if (lo, hi) == (-np.inf, np.inf) else (np.float32(lo), np.float32(hi))

    def buffer(self, scratch: Scratch, shape: tuple, dtype, ctx=None) -> np.ndarray:
        """Where the accumulator goes: reused scratch when quantized; when float, output 0's buffer
        (given `ctx`: the accumulator has the output's shape) or a fresh array."""
        if self.quant:
            return scratch.get("acc", shape, dtype)
        return ctx.output_buffer(0, shape, dtype) if ctx is not None else np.empty(shape, dtype)

    def output(self, ctx, shape: tuple):
        """Where a quantized result of `shape` goes: output 0's buffer (given ctx), else None (fresh)."""
        return ctx.output_buffer(0, shape, self.out_dtype) if ctx is not None and self.quant else None

    def __call__(self, acc: np.ndarray, out: np.ndarray = None) -> np.ndarray:
        """The output values of acc; quantized ones written into `out` (acc's shape) when given."""
        if self.quant:
            return self.requant(acc, out)
        rows, bias = self.rows(acc)
        rows += bias
        if self.clamp is not None:
            clip_ufunc(acc, *self.clamp, out=acc)
        return acc


def supported(pctx) -> bool:
    """A run-time argument `input` of a fast type, every other argument a constant or omitted."""
    bound = pctx.step.bound
    return bound.runtime == {"input"} and bound.operand("input").type.code in _CODES


def gemm_domain(pctx, filters: np.ndarray) -> tuple[float, np.dtype, int]:
    """(accumulator bound, GEMM dtype, input zero point) for filters [O, ...] already in the
    accumulation domain: float32 for float models; for quantized ones the cheapest exact type given
    max |q - zero_point| of the input type times each output channel's sum of |filter| (ValueError
    when not even float64 is exact)."""
    t = pctx.step.bound.operand("input").type
    if t.code not in QUANT8:
        return 0.0, np.dtype(np.float32), 0
    lo, hi = QUANT_RANGE[t.code]
    bound = float(abs_row_sums(filters).max(initial=0)) * max(t.zero_point - lo, hi - t.zero_point)
    dtype = exact_dtype(bound)
    if dtype is None:
        raise ValueError(f"no float GEMM is exact for sums up to {bound}")
    return bound, dtype, t.zero_point


class PreparedConv:
    """One convolution with its filter laid out: `gemm` [K, O] (one group) or `grouped` [G, K, O/G].

    Results never share memory with the input (the plain kernel's neither): the accumulator is always
    a new array or a buffer, never the input itself."""

    fresh_outputs = True

    def __init__(self, pctx, args, layout):
        self.kernel = pctx.step.kernel
        self.args = args
        self.nchw = args.nchw
        self.kind, self.groups = layout
        flt = args.filter
        o, kh, kw, cg = flt.array.shape
        self.kernel_hw = (kh, kw)
        self.channels = cg * self.groups
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        quant = pctx.step.bound.operand("input").type.code in QUANT8
        with np.errstate(invalid="ignore"):   # a signaling NaN weight stays NaN, quietly
            w = flt.array.astype(np.float64) - (flt.zero_point if quant else 0)
        bound, self.dtype, self.zero_point = gemm_domain(pctx, w)
        if self.kind == "gemm":
            self.weights = np.ascontiguousarray(w.reshape(o, -1).T, self.dtype)
        else:
            g = self.groups
            self.weights = np.ascontiguousarray(w.reshape(g, o // g, -1).transpose(0, 2, 1), self.dtype)
        self.out_channels = o
        self.epilogue = Epilogue(pctx, args.bias, flt, args.fuse, bound)
        self.geometry: dict = {}
        self.scratch = pctx.compiled.scratch

    def _geometry(self, ctx, h: int, w: int):
        """(pads, strides, dilations, (OH, OW)) for an input size, worked out once per size."""
        key = (h, w)
        if key not in self.geometry:
            win = window(ctx, self.args, (h, w), self.kernel_hw)
            (pt, pb, pl, pr), (sh, sw), (dh, dw) = win.pads, win.strides, win.dilations
            out_hw = (explicit_out_size(h, sh, self.kernel_hw[0], pt, pb, dh),
                      explicit_out_size(w, sw, self.kernel_hw[1], pl, pr, dw))
            self.geometry[key] = (win.pads, win.strides, win.dilations, out_hw)
        return self.geometry[key]

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.ndim != 4:
            return self.kernel(ctx)
        x = v.array.transpose(0, 2, 3, 1) if self.nchw else v.array
        n, h, w, c = x.shape
        if c != self.channels or n == 0:
            return self.kernel(ctx)
        pads, strides, dilations, out_hw = self._geometry(ctx, h, w)
        if min(out_hw) <= 0:
            return self.kernel(ctx)
        padded = pad_hw(x, pads, self.scratch, self.dtype, self.zero_point)
        shape = (n, *out_hw, self.out_channels)
        # NHWC results are computed straight into output 0's buffer (NCHW ones are a transpose of it)
        octx = None if self.nchw else ctx
        epilogue = self.epilogue
        cols = im2col(padded, out_hw, self.kernel_hw, strides, dilations, self.scratch)
        if self.kind == "gemm":
            acc = epilogue.buffer(self.scratch, shape, self.dtype, octx)
            np.matmul(cols, self.weights, out=acc.reshape(cols.shape[0], shape[-1]))
        else:
            g = self.groups
            cols = cols.reshape(cols.shape[0], -1, g, c // g).transpose(2, 0, 1, 3).reshape(g, cols.shape[0], -1)
            acc = np.matmul(cols, self.weights).transpose(1, 0, 2)
        acc = acc.reshape(shape)
        out = epilogue(acc, epilogue.output(octx, shape))
        return [out.transpose(0, 3, 1, 2) if self.nchw else out]


def _prepare(pctx, layout):
    if not supported(pctx):
        return None
    args = pctx.args
    flt, bias = args.filter, args.bias
    if flt is None or bias is None or flt.array.ndim != 4 or bias.array.ndim != 1 \
            or bias.array.shape[0] != flt.array.shape[0]:
        return None
    return PreparedConv(pctx, args, layout)


@prepare(Op.CONV_2D)
def prepare_conv_2d(pctx):
    return _prepare(pctx, ("gemm", 1))


@prepare(Op.GROUPED_CONV_2D)
def prepare_grouped_conv_2d(pctx):
    groups = pctx.args.groups
    return _prepare(pctx, ("grouped", groups)) if groups and groups > 0 else None


class PreparedFullyConnected:
    """FULLY_CONNECTED with its weights laid out [K, O]; results are new arrays or output 0's buffer."""

    fresh_outputs = True

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        args, bound = pctx.args, pctx.step.bound
        weights, bias = args.weights, args.bias
        self.x = bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        quant = bound.operand("input").type.code in QUANT8
        with np.errstate(invalid="ignore"):   # a signaling NaN weight stays NaN, quietly
            w = weights.array.astype(np.float64) - (weights.zero_point if quant else 0)
        bound, self.dtype, self.zero_point = gemm_domain(pctx, w)
        self.size = w.shape[1]
        self.weights = np.ascontiguousarray(w.T, self.dtype)
        self.epilogue = Epilogue(pctx, bias, weights, args.fuse, bound)
        self.scratch = pctx.compiled.scratch

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.ndim < 2 or v.array.size % self.size or v.array.size == 0:
            return self.kernel(ctx)
        rows = v.array.reshape(-1, self.size)
        if rows.dtype != self.dtype:
            rows = np.subtract(rows, self.dtype.type(self.zero_point),
                               out=self.scratch.get("rows", rows.shape, self.dtype), casting="unsafe")
        shape = (rows.shape[0], self.weights.shape[1])
        acc = np.matmul(rows, self.weights, out=self.epilogue.buffer(self.scratch, shape, self.dtype, ctx))
        return [self.epilogue(acc, self.epilogue.output(ctx, shape))]


@prepare(Op.FULLY_CONNECTED)
def prepare_fully_connected(pctx):
    if not supported(pctx):
        return None
    weights, bias = pctx.args.weights, pctx.args.bias
    if weights is None or bias is None or weights.array.ndim != 2 or bias.array.ndim != 1 \
            or bias.array.shape[0] != weights.array.shape[0] or weights.array.shape[1] == 0:
        return None
    return PreparedFullyConnected(pctx)

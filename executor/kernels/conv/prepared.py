"""Compiled CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and FULLY_CONNECTED.

When the filter, bias and parameters are constants (the usual case), the
preparers lay the filter out once for a single matrix multiply (or for the
depthwise tap loop), precompute the fuse clamp and, for quantized operations,
the per-channel fixed-point requantization and the accumulator bound that
proves a float32 GEMM exact (|partial sums| < 2**24; else float64, exact below
2**53). Each run is then: subtract the input zero point while casting, pad,
im2col, GEMM, bias, clamp or requantize. The results equal the plain kernels'
(reference.py) bit for bit in the quantized case. Where it keeps the bound (int8
inputs), the input zero point is folded into the bias instead (quant_domain):
a plain cast, padding with the zero point.

Depthwise convolutions of one image (large ones, or unit-stride ones with few
channels) are computed at full width (gemm.depthwise_full_width: the input split
into its stride phases, each tap one contiguous range, the junk columns dropped
after the epilogue); per-channel constants are applied to long rows
(gemm.ChannelRows), which numpy does several times faster than C at a time.

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
from .gemm import (
    FEW_CHANNELS,
    MANY_CHANNELS,
    SMALL_DEPTHWISE,
    ChannelRows,
    abs_row_sums,
    depthwise,
    depthwise_full_width,
    exact_dtype,
    im2col,
    pad_hw,
    row_length,
)
from ..requantize import Requantizer
from ..scratch import Scratch

_CODES = (C.TENSOR_FLOAT32, *QUANT8)


class Epilogue:
    """Accumulator [..., O] -> output: + bias and the fuse clamp (float, in place: the accumulator is the
    output), or the requantizer (quantized: the accumulator is scratch, the result goes to `out`)."""

    def __init__(self, pctx, bias, flt, fuse: int, acc_bound: float, bias_shift=None):
        in_type, out = pctx.step.bound.operand("input").type, pctx.out_type()
        lo, hi = fuse_range(fuse, out.code, out.scale, out.zero_point)
        channels = bias.array.shape[0]
        self.quant = in_type.code in QUANT8
        self.out_dtype = out.dtype
        if self.quant:
            # (bias_shift: the input zero point folded in, see folded_domain)
            total = bias.array.astype(np.int64) + (0 if bias_shift is None else bias_shift)
            self.requant = Requantizer(total, real_multipliers(pctx, in_type.scale, flt, channels),
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


def folded_domain(pctx, filters: np.ndarray, domain: tuple):
    """The GEMM domain with the input zero point z folded into the bias, given gemm_domain's result:
    sum (q - z) w = sum q w - z sum w, so the GEMM reads q itself (a plain cast instead of a subtracting
    one; padding is z) and each output channel's bias is shifted by -z sum w, exactly (integers). Taken
    for quantized inputs where max |q| <= max |q - z| (the bound does not grow: int8, not a uint8 input
    centred at 128): (bound, dtype, fill = z, bias shift [O]) or None."""
    t = pctx.step.bound.operand("input").type
    if t.code not in QUANT8 or not t.zero_point:
        return None
    lo, hi = QUANT_RANGE[t.code]
    if max(-lo, hi) > max(t.zero_point - lo, hi - t.zero_point):
        return None
    bound = float(abs_row_sums(filters).max(initial=0)) * max(-lo, hi)
    dtype = exact_dtype(bound)
    if dtype is None or dtype.itemsize > domain[1].itemsize:
        return None
    sums = filters.reshape(filters.shape[0], -1).sum(axis=1)   # integers below 2^53: exact
    return bound, dtype, t.zero_point, -t.zero_point * np.rint(sums).astype(np.int64)


def quant_domain(pctx, filters: np.ndarray, bias, flt, fuse: int) -> tuple:
    """(GEMM dtype, zero point subtracted from the input, padding value, Epilogue) for filters [O, ...]
    in the accumulation domain: folded_domain's where it applies, unless only gemm_domain's requantizer
    has the proven float32 form (the fold's bias shift makes the float32 constants larger, and their
    rounding coarser); otherwise gemm_domain's."""
    bound, dtype, zero_point = gemm_domain(pctx, filters)
    folded = folded_domain(pctx, filters, (bound, dtype))
    if folded is not None:
        f_bound, f_dtype, fill, shift = folded
        epilogue = Epilogue(pctx, bias, flt, fuse, f_bound, shift)
        if epilogue.requant.f32 is not None:
            return f_dtype, 0, fill, epilogue
        plain = Epilogue(pctx, bias, flt, fuse, bound)
        return (dtype, zero_point, 0, plain) if plain.requant.f32 is not None else (f_dtype, 0, fill, epilogue)
    return dtype, zero_point, 0, Epilogue(pctx, bias, flt, fuse, bound)


class PreparedConv:
    """One convolution with its filter laid out: `gemm` [K, O] (one group), `grouped` [G, K, O/G], or
    `taps` [kh, kw, O] (depthwise, input channels repeated `multiplier` times).

    Results never share memory with the input (the plain kernel's neither): the accumulator is always
    a new array or a buffer, never the input itself."""

    fresh_outputs = True

    def __init__(self, pctx, args, layout):
        self.kernel = pctx.step.kernel
        self.args = args
        self.nchw = args.nchw
        self.kind, self.groups, self.multiplier = layout
        flt = args.filter
        o, kh, kw, cg = flt.array.shape
        self.kernel_hw = (kh, kw)
        self.channels = cg * self.groups
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        quant = pctx.step.bound.operand("input").type.code in QUANT8
        with np.errstate(invalid="ignore"):   # a signaling NaN weight stays NaN, quietly
            w = flt.array.astype(np.float64) - (flt.zero_point if quant else 0)
        if self.kind == "depthwise":  # [1, kh, kw, C*M] -> [C*M, kh, kw]
            w = w[0].transpose(2, 0, 1)
            o, self.channels = cg, cg // self.multiplier
        self.dtype, self.zero_point, self.fill, self.epilogue = quant_domain(pctx, w, args.bias, flt, args.fuse)
        if self.kind == "depthwise":
            self.weights = np.ascontiguousarray(w.transpose(1, 2, 0), self.dtype)
        elif self.kind == "gemm":
            self.weights = np.ascontiguousarray(w.reshape(o, -1).T, self.dtype)
        else:
            g = self.groups
            self.weights = np.ascontiguousarray(w.reshape(g, o // g, -1).transpose(0, 2, 1), self.dtype)
        self.out_channels = o
        self.geometry: dict = {}
        self.tiled: dict = {}
        self.scratch = pctx.compiled.scratch

    def _tiled(self, width: int) -> np.ndarray:
        """Depthwise taps repeated `width` times along the channel axis, made once per width."""
        tiled = self.tiled.get(width)
        if tiled is None:
            tiled = self.tiled[width] = np.tile(self.weights, (1, 1, width))
        return tiled

    def _tiled_rows(self, pixels: int) -> np.ndarray:
        """Depthwise taps [kh, kw, L] repeated to the row length for `pixels` pixels, made once."""
        key = ("rows", pixels)
        tiled = self.tiled.get(key)
        if tiled is None:
            reps = row_length(pixels, self.out_channels) // self.out_channels
            tiled = self.tiled[key] = np.tile(self.weights, (1, 1, reps))
        return tiled

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

    def _full_width(self, n: int, shape: tuple, strides: tuple, padded: np.ndarray) -> bool:
        """Whether depthwise_full_width applies and pays: one image; an output too large for one einsum,
        or unit strides and few channels (where the einsum over copied taps is slower); strided, fewer
        than MANY_CHANNELS; junk columns adding at most a quarter."""
        if n != 1 or (shape[1] * shape[2] * shape[3] <= SMALL_DEPTHWISE
                      and (strides != (1, 1) or shape[3] >= FEW_CHANNELS)):
            return False
        if strides != (1, 1) and shape[3] >= MANY_CHANNELS:
            return False   # gemm.depthwise: one einsum over the strided windows
        return 4 * -(-padded.shape[2] // strides[1]) <= 5 * shape[2]

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
        padded = pad_hw(x, pads, self.scratch, self.dtype, self.zero_point, self.fill)
        shape = (n, *out_hw, self.out_channels)
        # NHWC results are computed straight into output 0's buffer (NCHW ones are a transpose of it)
        octx = None if self.nchw else ctx
        epilogue = self.epilogue
        if self.kind == "depthwise":
            if self.multiplier > 1:
                padded = np.repeat(padded, self.multiplier, axis=3)
            if self._full_width(n, shape, strides, padded):
                # computed at full width (contiguous taps), the junk columns dropped at the end
                wide = (1, out_hw[0], -(-padded.shape[2] // strides[1]), self.out_channels)
                # (the wide accumulator is scratch for float too: the valid columns are copied out)
                acc = depthwise_full_width(padded, self.weights, out_hw, strides, dilations,
                                           self.scratch.get("acc", wide, self.dtype), self.scratch,
                                           self._tiled_rows)
                if epilogue.quant:
                    acc = epilogue(acc, self.scratch.get("wide", wide, epilogue.out_dtype))
                else:
                    acc = epilogue(acc)
                out = np.empty(shape, acc.dtype) if octx is None else octx.output_buffer(0, shape, acc.dtype)
                np.copyto(out, acc[:, :, :out_hw[1]])
                return [out.transpose(0, 3, 1, 2) if self.nchw else out]
            acc = depthwise(padded, self.weights, out_hw, strides, dilations,
                            epilogue.buffer(self.scratch, shape, self.dtype, octx), self.scratch, self._tiled)
        else:
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
            or bias.array.shape[0] != flt.array.shape[0 if layout[0] != "depthwise" else 3]:
        return None
    return PreparedConv(pctx, args, layout)


@prepare(Op.CONV_2D)
def prepare_conv_2d(pctx):
    return _prepare(pctx, ("gemm", 1, 1))


@prepare(Op.GROUPED_CONV_2D)
def prepare_grouped_conv_2d(pctx):
    groups = pctx.args.groups
    return _prepare(pctx, ("grouped", groups, 1)) if groups and groups > 0 else None


@prepare(Op.DEPTHWISE_CONV_2D)
def prepare_depthwise_conv_2d(pctx):
    multiplier = pctx.args.multiplier
    return _prepare(pctx, ("depthwise", 1, multiplier)) if multiplier and multiplier > 0 else None


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
        self.dtype, self.zero_point, _, self.epilogue = quant_domain(pctx, w, bias, weights, args.fuse)
        self.size = w.shape[1]
        self.weights = np.ascontiguousarray(w.T, self.dtype)
        self.scratch = pctx.compiled.scratch

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.ndim < 2 or v.array.size % self.size or v.array.size == 0:
            return self.kernel(ctx)
        rows = v.array.reshape(-1, self.size)
        if rows.dtype != self.dtype and self.zero_point:
            rows = np.subtract(rows, self.dtype.type(self.zero_point),
                               out=self.scratch.get("rows", rows.shape, self.dtype), casting="unsafe")
        elif rows.dtype != self.dtype:   # (the zero point folded into the bias: a plain cast)
            cast = self.scratch.get("rows", rows.shape, self.dtype)
            np.copyto(cast, rows, casting="unsafe")
            rows = cast
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

"""Compiled CONV_2D, GROUPED_CONV_2D and FULLY_CONNECTED (DEPTHWISE_CONV_2D: depthwise.py).

When the filter, bias and parameters are constants (the usual case), the
preparers lay the filter out once for a single matrix multiply, precompute the fuse clamp and, for quantized operations,
the per-channel fixed-point requantization and the accumulator bound that
proves a float32 GEMM exact (|partial sums| < 2**24; else float64, exact below
2**53). Each run is then: subtract the input zero point while casting, pad,
im2col, GEMM, bias, clamp or requantize. The results equal the plain kernels'
(reference.py) bit for bit in the quantized case. Where it keeps the bound (int8
inputs), the input zero point is folded into the bias instead (quant_domain):
a plain cast, padding with the zero point.

CONV_2D and GROUPED_CONV_2D make a plan per input size (GemmPlan): filter taps that read only zero
padding are dropped (atrous pyramids: a 3x3 filter dilated past a small input is its centre tap),
convolutions that are mostly padding form only the products with the input (gemm.clipped_taps), and
large patch matrices are either not made at all (gemm.shifted_gemm: one GEMM per tap over the padded
input at full width) or made a cache-sized piece at a time; grouped ones are one batched GEMM. Small
convolutions, where the patch copy costs as much as the GEMM, copy less: a unit row stride runs one GEMM
per filter row over just the kw taps of each row (gemm.row_taps; with few output channels adjacent pixels
share a GEMM row, gemm.row_group), and a few-channel image in channels-first memory (an NCHW model's
input) is made into patches a plane at a time (gemm.plane_patches). A float 1x1 unit-stride convolution
is a GEMM of its input as it is; its run, and row_taps', is planned once per input shape (PreparedConv._planned).

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
from .gemm import (
    ChannelRows,
    CLIPPED_MIN_PADDING,
    PLANES_MAX_OUT,
    SHIFTED_MIN_BYTES,
    abs_row_sums,
    channels_first,
    clipped_taps,
    exact_dtype,
    im2col,
    pad_hw,
    patch_chunk_rows,
    plane_patches,
    row_group,
    row_taps,
    row_taps_pays,
    row_weights,
    shifted_gemm,
    shifted_gemm_pays,
    tap_window,
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
    bound = float(abs_row_sums(filters).max(initial=0)) * input_reach(t, folded=False)
    dtype = exact_dtype(bound)
    if dtype is None:
        raise ValueError(f"no float GEMM is exact for sums up to {bound}")
    return bound, dtype, t.zero_point


def input_reach(t, folded: bool) -> int:
    """The largest |GEMM operand| of a quantized input type: |q| when the zero point is folded into the
    bias, else |q - zero_point|."""
    lo, hi = QUANT_RANGE[t.code]
    return max(-lo, hi) if folded else max(t.zero_point - lo, hi - t.zero_point)


def folded_domain(pctx, filters: np.ndarray, domain: tuple):
    """The GEMM domain with the input zero point z folded into the bias, given gemm_domain's result:
    sum (q - z) w = sum q w - z sum w, so the GEMM reads q itself (a plain cast instead of a subtracting
    one; padding is z) and each output channel's bias is shifted by -z sum w, exactly (integers). Taken
    for quantized inputs where max |q| <= max |q - z| (the bound does not grow: int8, not a uint8 input
    centred at 128): (bound, dtype, fill = z, bias shift [O]) or None."""
    t = pctx.step.bound.operand("input").type
    if t.code not in QUANT8 or not t.zero_point:
        return None
    if input_reach(t, folded=True) > input_reach(t, folded=False):
        return None
    bound = float(abs_row_sums(filters).max(initial=0)) * input_reach(t, folded=True)
    dtype = exact_dtype(bound)
    if dtype is None or dtype.itemsize > domain[1].itemsize:
        return None
    sums = filters.reshape(filters.shape[0], -1).sum(axis=1)   # integers below 2^53: exact
    return bound, dtype, t.zero_point, -t.zero_point * np.rint(sums).astype(np.int64)


def quant_domain(pctx, filters: np.ndarray, bias, flt, fuse: int) -> tuple:
    """(GEMM dtype, zero point subtracted from the input, padding value, Epilogue) for filters [O, ...]
    in the accumulation domain: folded_domain's where it applies, unless gemm_domain's requantizer has
    a better float32 form (the fold's bias shift makes the float32 constants larger, and their rounding
    coarser); otherwise gemm_domain's."""
    bound, dtype, zero_point = gemm_domain(pctx, filters)
    folded = folded_domain(pctx, filters, (bound, dtype))
    t = pctx.step.bound.operand("input").type
    if t.code not in QUANT8:
        return dtype, zero_point, 0, Epilogue(pctx, bias, flt, fuse, bound)
    # the requantizers get each output channel's own bound: a tighter proof of their float32 form
    rows = abs_row_sums(filters)
    if folded is not None:
        _, f_dtype, fill, shift = folded
        epilogue = Epilogue(pctx, bias, flt, fuse, rows * input_reach(t, folded=True), shift)
        if epilogue.requant.f32 is not None and epilogue.requant.exact is None:
            return f_dtype, 0, fill, epilogue
    plain = Epilogue(pctx, bias, flt, fuse, rows * input_reach(t, folded=False))
    # (a float32 form without corrections first, then one with them, then the float64 form)
    if folded is not None and _float32_rank(epilogue) <= _float32_rank(plain):
        return f_dtype, 0, fill, epilogue
    return dtype, zero_point, 0, plain


def _float32_rank(epilogue: Epilogue) -> int:
    """0: its requantizer has the float32 form, 1: with corrections (requantize_float32.Corrections), 2: neither."""
    requant = epilogue.requant
    return 2 if requant.f32 is None else int(requant.exact is not None)


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
        self.dtype, self.zero_point, self.fill, self.epilogue = quant_domain(pctx, w, args.bias, flt, args.fuse)
        if self.kind == "gemm":
            self.weights = np.ascontiguousarray(w.reshape(o, -1).T, self.dtype)
        else:
            g = self.groups
            self.weights = np.ascontiguousarray(w.reshape(g, o // g, -1).transpose(0, 2, 1), self.dtype)
        self.out_channels = o
        # per filter row and column: whether its weights are all finite (only those taps may be dropped
        # where they read nothing but padding, see gemm.tap_window)
        finite = np.isfinite(w).all(axis=(0, 3))
        self.finite_rows, self.finite_cols = finite.all(axis=1), finite.all(axis=0)
        self.plans: dict = {}
        self.geometry: dict = {}
        self.planned: dict = {}   # input shape -> run (see _planned)
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

    def _plan(self, ctx, h: int, w: int) -> "GemmPlan":
        """The GEMM convolution's plan for an input size, made once per size."""
        plan = self.plans.get((h, w))
        if plan is None:
            plan = self.plans[(h, w)] = GemmPlan(self, ctx, h, w)
        return plan

    def _gemm_conv(self, ctx, x: np.ndarray, octx) -> list:
        """CONV_2D and GROUPED_CONV_2D: the taps that read the input, as one GEMM over their patches
        (im2col), one GEMM per tap (shifted_gemm), or one batched GEMM per group."""
        n, h, w, c = x.shape
        plan = self._plan(ctx, h, w)
        if plan.plannable and octx is not None and not self.epilogue.quant and x.flags.c_contiguous:
            self.planned[x.shape] = self._planned(x.shape, plan)
        top, bottom, left, right = plan.crop
        if top or bottom or left or right:
            x = x[:, top: h - bottom, left: w - right]
        shape = (n, *plan.out_hw, self.out_channels)
        epilogue = self.epilogue
        acc = epilogue.buffer(self.scratch, shape, self.dtype, octx)
        if plan.clipped:
            x = pad_hw(x, (0, 0, 0, 0), self.scratch, self.dtype, self.zero_point)   # (x - zero point: no padding)
            clipped_taps(x, plan.taps, plan.pads[::2], plan.strides, plan.dilations, acc, self.scratch)
            out = epilogue(acc, epilogue.output(octx, shape))
            return [out.transpose(0, 3, 1, 2) if self.nchw else out]
        if plan.planes and channels_first(x):
            # a few-channel image in channels-first memory (a CNN's NCHW input): its patch matrix, made a
            # plane at a time and transposed, is one GEMM at the phase planes' width
            oh, ow = plan.out_hw
            for b in range(n):
                cols, wq = plane_patches(x[b], plan.pads, plan.strides, plan.dilations, plan.kernel_hw, plan.out_hw,
                                         self.scratch, self.dtype, self.zero_point, self.fill)
                wide = self.scratch.get("plane_wide", (oh * wq, shape[-1]), self.dtype)
                np.matmul(cols.T, plan.plane_weights(), out=wide[:cols.shape[1]])
                np.copyto(acc[b], wide.reshape(oh, wq, -1)[:, :ow])
            if plan.dropped is not None:
                acc += plan.dropped
            out = epilogue(acc, epilogue.output(octx, shape))
            return [out.transpose(0, 3, 1, 2) if self.nchw else out]
        # (contiguous: a channels-first view is copied a channel plane at a time, about twice as fast as
        # the element-by-element gather of the patch copy, and shifted_gemm needs it)
        padded = pad_hw(x, plan.pads, self.scratch, self.dtype, self.zero_point, self.fill, contiguous=True)
        if plan.shifted:
            wide = self.scratch.get("wide", (n, plan.out_hw[0], padded.shape[2], shape[-1]), self.dtype)
            shifted_gemm(padded, plan.taps, plan.out_hw, plan.dilations, wide, self.scratch)
            np.copyto(acc, wide[:, :, :plan.out_hw[1]])
        elif plan.rows:
            group, weights = plan.rows
            if not row_taps(padded, weights, group, plan.out_hw, plan.kernel_hw, plan.strides, plan.dilations, acc,
                            self.scratch, finite=self.epilogue.quant):
                row_taps(padded, plan.row_weights(1), 1, plan.out_hw, plan.kernel_hw, plan.strides, plan.dilations,
                         acc, self.scratch)
        elif plan.chunk:
            # patch rows made and multiplied a piece of output rows at a time, each piece still in cache
            (oh, ow), (sh, _), step = plan.out_hw, plan.strides, plan.chunk
            reach = (plan.kernel_hw[0] - 1) * plan.dilations[0] + 1
            for b in range(n):
                for r in range(0, oh, step):
                    rows = min(step, oh - r)
                    part = padded[b:b + 1, r * sh: (r + rows - 1) * sh + reach]
                    cols = im2col(part, (rows, ow), plan.kernel_hw, plan.strides, plan.dilations, self.scratch)
                    np.matmul(cols, plan.weights, out=acc[b, r:r + rows].reshape(-1, shape[-1]))
        else:
            cols = im2col(padded, plan.out_hw, plan.kernel_hw, plan.strides, plan.dilations, self.scratch)
            if self.kind == "gemm":
                np.matmul(cols, plan.weights, out=acc.reshape(cols.shape[0], shape[-1]))
            else:
                # one batched GEMM over the groups, [G, M, K] x [G, K, O/G], straight into the accumulator
                # seen as [G, M, O/G]; with one tap the groups' inputs are views of the patch rows
                g, m = self.groups, cols.shape[0]
                cols = cols.reshape(m, -1, g, c // g).transpose(2, 0, 1, 3)
                cols = cols[:, :, 0] if cols.shape[2] == 1 else cols.reshape(g, m, -1)
                np.matmul(cols, plan.weights, out=acc.reshape(m, g, -1).transpose(1, 0, 2))
        if plan.dropped is not None:
            acc += plan.dropped
        out = epilogue(acc, epilogue.output(octx, shape))
        return [out.transpose(0, 3, 1, 2) if self.nchw else out]

    def _planned(self, shape: tuple, plan: "GemmPlan"):
        """The run of a float NHWC convolution for a contiguous input of `shape` whose plan is one GEMM of
        the input as it is (plan.pointwise: 1x1, unit stride, no padding), row_taps, or im2col in one piece,
        without a crop or dropped taps (plan.plannable), with the general path's decisions taken once: small
        convolutions are common, and those checks cost about as much as their GEMM."""
        n, h, w, c = shape
        out_shape = (n, *plan.out_hw, self.out_channels)
        epilogue, dtype, scratch = self.epilogue, self.dtype, self.scratch
        if plan.pointwise:
            rows, weights = (n * h * w, c), plan.weights

            def run(ctx, x):
                acc = ctx.output_buffer(0, out_shape, dtype)
                np.matmul(x.reshape(rows), weights, out=acc.reshape(-1, out_shape[-1]))
                return [epilogue(acc)]
            return run
        pads, geometry = plan.pads, (plan.out_hw, plan.kernel_hw, plan.strides, plan.dilations)
        if plan.rows:
            group, weights = plan.rows

            def run(ctx, x):
                acc = ctx.output_buffer(0, out_shape, dtype)
                padded = pad_hw(x, pads, scratch, dtype, contiguous=True)
                if not row_taps(padded, weights, group, *geometry, acc, scratch):
                    row_taps(padded, plan.row_weights(1), 1, *geometry, acc, scratch)
                return [epilogue(acc)]
            return run
        weights = plan.weights

        def run(ctx, x):   # (im2col in one piece)
            acc = ctx.output_buffer(0, out_shape, dtype)
            cols = im2col(pad_hw(x, pads, scratch, dtype, contiguous=True), *geometry, scratch)
            np.matmul(cols, weights, out=acc.reshape(cols.shape[0], -1))
            return [epilogue(acc)]
        return run

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.ndim != 4:
            return self.kernel(ctx)
        run = self.planned.get(v.array.shape)
        if run is not None and v.array.flags.c_contiguous:
            return run(ctx, v.array)
        x = v.array.transpose(0, 2, 3, 1) if self.nchw else v.array
        n, h, w, c = x.shape
        if c != self.channels or n == 0:
            return self.kernel(ctx)
        pads, strides, dilations, out_hw = self._geometry(ctx, h, w)
        if min(out_hw) <= 0:
            return self.kernel(ctx)
        # NHWC results are computed straight into output 0's buffer (NCHW ones are a transpose of it)
        octx = None if self.nchw else ctx
        return self._gemm_conv(ctx, x, octx)


class GemmPlan:
    """A GEMM convolution at one input size: the input crop (top, bottom, left, right) and zero padding
    that run only the filter taps reading the input (gemm.tap_window), those taps' weights ([K, O], or
    [G, K, O/G] grouped; `taps` [kh, kw, C, O] for shifted_gemm), whether shifted_gemm or clipped_taps
    runs it, `chunk`: output rows per im2col piece (0: one piece), `rows`: row_taps' (pixels per GEMM row,
    weights) or None, `planes`: whether a channels-first input takes plane_patches, and `pointwise`:
    whether the GEMM reads the input as it is, and `plannable`: whether PreparedConv._planned may run it."""

    def __init__(self, conv: PreparedConv, ctx, h: int, w: int):
        (top, _, left, _), self.strides, self.dilations, self.out_hw = conv._geometry(ctx, h, w)
        kh, kw = conv.kernel_hw

        def windows(prune: bool):
            return (tap_window(h, top, self.strides[0], kh, self.dilations[0], self.out_hw[0], prune),
                    tap_window(w, left, self.strides[1], kw, self.dilations[1], self.out_hw[1], prune))

        (i0, ki, ct, cb, pt, pb), (j0, kj, cl, cr, pl, pr) = windows(True)
        rows, cols = np.ones(kh, bool), np.ones(kw, bool)
        rows[i0:i0 + ki], cols[j0:j0 + kj] = False, False   # the dropped rows and columns
        if not (conv.finite_rows[rows].all() and conv.finite_cols[cols].all()):
            # a dropped tap's inf or NaN weight times the padding's zeros is NaN: keep every tap
            (i0, ki, ct, cb, pt, pb), (j0, kj, cl, cr, pl, pr) = windows(False)
        self.crop, self.pads, self.kernel_hw = (ct, cb, cl, cr), (pt, pb, pl, pr), (ki, kj)
        g, c, o = conv.groups, conv.channels, conv.out_channels
        taps = conv.weights.reshape(g, kh, kw, c // g, o // g)
        if (ki, kj) != (kh, kw):
            taps = np.ascontiguousarray(taps[:, i0:i0 + ki, j0:j0 + kj])   # (else a view: no copy of the weights)
        self.taps, self.weights = taps, taps.reshape(g, -1, o // g)
        # with the input zero point z folded into the bias (quant_domain) the padding is z, not zero: a
        # dropped tap would have added z * w at every output, so that constant is added back per channel
        # (integers in the exact domain: the sum stays exact)
        self.dropped = None
        if conv.fill and (ki, kj) != (kh, kw):
            full = conv.weights.reshape(g, kh, kw, c // g, o // g).sum(axis=(1, 2, 3), dtype=np.float64)
            kept = taps.sum(axis=(1, 2, 3), dtype=np.float64)
            self.dropped = (conv.fill * (full - kept)).reshape(-1).astype(conv.dtype)
        if conv.kind == "gemm":
            self.taps, self.weights = self.taps[0], self.weights[0]
        self._plane_weights = None
        inner = (h - ct - cb, w - cl - cr)
        padded = (1, inner[0] + pt + pb, inner[1] + pl + pr, c)
        # mostly padding: clipped_taps forms only the products with the input (so not with a non-finite weight,
        # whose products with the padding are NaN, nor with a folded zero point, whose padding is not zero)
        self.clipped = (conv.kind == "gemm" and padded[1] * padded[2] >= CLIPPED_MIN_PADDING * inner[0] * inner[1]
                        and conv.finite_rows.all() and not conv.fill)
        self.shifted = conv.kind == "gemm" and shifted_gemm_pays(padded, self.out_hw, self.kernel_hw, self.strides,
                                                                 o, conv.dtype.itemsize)
        copies = self.kernel_hw != (1, 1) or self.strides != (1, 1)   # (else im2col is a free reshape)
        self.chunk = 0 if self.shifted or self.clipped or conv.kind != "gemm" or not copies else \
            patch_chunk_rows(self.out_hw, self.kernel_hw, c, o, conv.dtype.itemsize)
        small = padded[0] * self.out_hw[0] * self.out_hw[1] * self.kernel_hw[0] * self.kernel_hw[1] * c \
            * conv.dtype.itemsize < SHIFTED_MIN_BYTES
        self.planes = (conv.kind == "gemm" and small
                       and o <= min(PLANES_MAX_OUT, c * self.kernel_hw[0] * self.kernel_hw[1]))
        # row_taps: (pixels per GEMM row, its weights), or None
        self.rows = None
        if (conv.kind == "gemm" and not (self.shifted or self.clipped or self.chunk) and small
                and row_taps_pays(self.kernel_hw, self.strides, c, o)):
            group = row_group(self.out_hw[1], self.strides, self.dilations, c, o)
            self.rows = (group, self.row_weights(group))
        self.pointwise = (conv.kind == "gemm" and self.kernel_hw == (1, 1) and self.strides == (1, 1)
                          and not any(self.pads) and not any(self.crop) and self.dropped is None and not self.clipped)
        # (a planned run: one GEMM over the input as it is, row_taps or im2col in one piece, of all the taps)
        self.plannable = (conv.kind == "gemm" and not (self.clipped or self.shifted or self.chunk)
                          and not any(self.crop) and self.dropped is None)


    def row_weights(self, group: int) -> np.ndarray:
        """The kept taps as gemm.row_weights for `group` pixels per GEMM row."""
        return row_weights(self.taps, group)

    def plane_weights(self) -> np.ndarray:
        """The kept taps as [C*kh*kw, O] in (channel, tap row, tap column) order, for gemm.plane_patches
        (made at its first use: only a channels-first input takes that path)."""
        if self._plane_weights is None:
            kh, kw, c, o = self.taps.shape
            self._plane_weights = np.ascontiguousarray(self.taps.transpose(2, 0, 1, 3).reshape(c * kh * kw, o))
        return self._plane_weights


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

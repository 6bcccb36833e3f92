"""Compiled DEPTHWISE_CONV_2D (every filter size, stride, dilation and multiplier; float and quantized).

The filter is laid out once as taps [kh, kw, C*M] in the accumulation domain of conv/prepared.py
(quant_domain: float32, or for a quantized operation the cheapest float type whose sums are exact,
with the input zero point folded into the bias where that keeps the bound: a plain cast, padding
with the zero point). Each run copies the input once, cast (the zero point subtracted where it is not
folded) with the padding around it (not at all when there is nothing to pad or cast, nor for a small
unpadded input that needs only the cast, which the einsum then does), then sums the
taps with one einsum per column phase ("rows", "phases") or over the strided windows
("windows"), into the output buffer (float) or a scratch accumulator (quantized), and applies
prepared.Epilogue. Integer sums below the exactness bound do not depend on their order, so quantized
results equal the plain kernel's bit for bit; float sums may round differently (within
quant.float_accumulation_bound).

The forms, chosen per input shape (`_form`, from measurements on the zoo's depthwise layers):

* "rows" (unit width stride): for one output row, tap (i, j)'s values are one contiguous run of
  OW*C values of the padded input, so all kh*kw taps are one strided view [kh, kw, N, OH, OW*C] and
  one einsum multiplies and sums them over long rows (the height stride and the dilations are
  strides of the view). Output rows near the top and bottom edges, whose lower or upper filter rows
  read nothing but zero padding, are summed in bands without those rows (row_bands) where the
  products saved outweigh an einsum call (a 5x5 filter over a few rows: up to 60% of the products).
* "phases" (width stride sw > 1): the input is copied, padded, into its sw column phases
  [N, Hp, sw, Wq, C] (padded column b + sw*q at phase b, column q): the taps reading one phase are
  then again one strided view over contiguous rows, one einsum per phase.
* "windows" (strided, many channels, small outputs; or any channels, tiny outputs): one einsum over
  the [N, OH, OW, kh, kw, C] windows of the padded input, whose inner loops run over the channels;
  cheaper there than the phase copy (on tiny streaming layers: fewer calls).

The multiply-adds themselves run at numpy's einsum rate (about 8-9 GMAC/s on one core here, whether
the data sit in L1 or not): row blocks that stay in cache, per-tap ufunc passes, the windows' or
broadcast-weight einsums were all measured slower than the one "rows" einsum on the zoo's layers.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import prepare
from ..common import QUANT8, explicit_out_size
from .gemm import _FLIP_TOP_BIT, FLIP_MIN_SIZE, filled_buffer, pad_hw, windows
from .prepared import quant_domain, supported
from .reference import window

# strided depthwise: the windows' einsum (inner loops over C) beats the phase copy and its einsums
# (calls, and a temporary) from so many channels on, for outputs of at most so many values (any channel
# count: tiny streaming layers, where the calls are what counts)
WINDOWS = ((0, 256), (32, 2048), (96, 16384), (192, 65536))
# an unpadded input of at most so many values is read by the einsum itself, which casts it (an 8-bit
# input): cheaper than the copy's calls there; on larger ones the einsum's buffered cast is the slower
DIRECT_CAST_MAX = 4096


def phase_taps(k: int, dilation: int, stride: int) -> list:
    """Along one axis: per input phase p, the taps i with i * dilation = q * stride + p as a grid
    (p, (first i, i step, first q, q step, count)): they form an arithmetic progression."""
    groups: dict = {}
    for i in range(k):
        q, p = divmod(i * dilation, stride)
        groups.setdefault(p, []).append((i, q))
    out = []
    for p, taps in sorted(groups.items()):
        (i0, q0), n = taps[0], len(taps)
        di, dq = (taps[1][0] - i0, taps[1][1] - q0) if n > 1 else (1, 0)
        out.append((p, (i0, di, q0, dq, n)))
    return out


# merging two bands of output rows (row_bands) into one einsum costs it the products of the filter rows that
# one of them skipped; up to so many products that is cheaper than the call it saves
BAND_CALL_PRODUCTS = 32768


def row_bands(h: int, oh: int, kh: int, top: int, stride: int, dilation: int, skippable, products: int) -> list:
    """Output rows in bands (r0, r1, i0, i1) that sum filter rows i0 <= i < i1 only: for rows near the top
    and bottom edges the other filter rows read zero padding alone, whose products add nothing (when
    `skippable` [kh] allows: finite weights on zero padding). `products`: one filter row's products for
    one output row; bands are merged while that costs fewer than BAND_CALL_PRODUCTS extra products."""
    if not all(skippable):
        return [(0, oh, 0, kh)]

    def used(r):
        lo = max(0, -(-(top - r * stride) // dilation))
        hi = min(kh, (h - 1 + top - r * stride) // dilation + 1)
        return (lo, hi) if lo < hi else (0, 0)

    bands: list = []
    for r in range(oh):
        lo, hi = used(r)
        if bands and bands[-1][2:] == (lo, hi):
            bands[-1][1] = r + 1
            continue
        if bands:
            r0, r1, a, b = bands[-1]
            u0, u1 = (lo, hi) if a == b else ((a, b) if lo == hi else (min(a, lo), max(b, hi)))
            if ((u1 - u0) - (b - a)) * (r1 - r0) * products + ((u1 - u0) - (hi - lo)) * products < BAND_CALL_PRODUCTS:
                bands[-1] = [r0, r + 1, u0, u1]
                continue
        bands.append([r, r + 1, lo, hi])
    return [tuple(b) for b in bands]


class Plan:
    """What a run does for one input shape: the geometry, the form, and for "rows" and "phases" the
    shape of the padded copy [N, Hp, sw, Wq, C*M] and per band of output rows (r0, r1; row_bands) and
    column phase its view (shape, offset and strides in elements of the copy) with the taps
    [kh', kw', OW*C*M] it meets."""

    def __init__(self, form: str, pads, strides, dilations, out_shape: tuple, copy_shape: tuple = (),
                 views: tuple = ()):
        self.form, self.pads, self.strides, self.dilations = form, pads, strides, dilations
        self.out_shape, self.copy_shape, self.views = out_shape, copy_shape, views
        self.direct = False   # whether the views may read the input itself (set by PreparedDepthwise._plan)
        self.byte_views: dict = {}   # itemsize -> in_bytes(itemsize)

    def in_bytes(self, itemsize: int) -> tuple:
        """The views with offsets and strides in bytes of an array of that item size."""
        return tuple((r0, r1, tuple((shape, offset * itemsize, tuple(s * itemsize for s in strides), taps)
                                    for shape, offset, strides, taps in band)) for r0, r1, band in self.views)


def _form(n: int, out_hw: tuple, strides: tuple, channels: int) -> str:
    if strides[1] == 1:
        return "rows"
    outputs = n * out_hw[0] * out_hw[1] * channels
    if any(channels >= c and outputs <= most for c, most in WINDOWS):
        return "windows"
    return "phases"


class PreparedDepthwise:
    """One depthwise convolution with its taps laid out [kh, kw, C*M] (input channel c's M filters at
    c*M..c*M+M-1). Results never share memory with the input: the accumulator is an output buffer, a
    new array or scratch."""

    fresh_outputs = True

    def __init__(self, pctx, args, multiplier: int):
        self.kernel = pctx.step.kernel
        self.args = args
        self.nchw = args.nchw
        self.multiplier = multiplier
        flt = args.filter
        _, kh, kw, o = flt.array.shape
        self.kernel_hw = (kh, kw)
        self.out_channels, self.channels = o, o // multiplier
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        quant = pctx.step.bound.operand("input").type.code in QUANT8
        with np.errstate(invalid="ignore"):   # a signaling NaN weight stays NaN, quietly
            w = flt.array[0].astype(np.float64) - (flt.zero_point if quant else 0)   # [kh, kw, O]
        # (fill: the padding value, the input zero point when it is folded into the bias)
        self.dtype, self.zero_point, self.fill, self.epilogue = quant_domain(pctx, w.transpose(2, 0, 1), args.bias,
                                                                             flt, args.fuse)
        self.weights = np.ascontiguousarray(w, self.dtype)
        # per filter row: whether its weights are all finite (only those rows may be skipped where they
        # read nothing but zero padding: 0 * inf is not 0); no row may be skipped where padding is not 0
        self.finite_rows = np.isfinite(w).all(axis=(1, 2)) & (self.fill == 0)
        self.scratch = pctx.compiled.scratch
        self.plans: dict = {}

    def _plan(self, ctx, x_shape: tuple):
        """The Plan for an NHWC input shape, worked out once; None when the output would be empty."""
        n, h, w, _ = x_shape
        kh, kw = self.kernel_hw
        win = window(ctx, self.args, (h, w), self.kernel_hw)
        (pt, pb, pl, pr), (sh, sw), (dh, dw) = win.pads, win.strides, win.dilations
        oh, ow = explicit_out_size(h, sh, kh, pt, pb, dh), explicit_out_size(w, sw, kw, pl, pr, dw)
        if oh <= 0 or ow <= 0:
            return None
        o = self.out_channels
        hp, wp = h + pt + pb, w + pl + pr
        form = _form(n, (oh, ow), (sh, sw), o)
        if form == "windows":
            return Plan(form, win.pads, (sh, sw), (dh, dw), (n, oh, ow, o))
        wq = -(-wp // sw)
        row = sw * wq * o   # one padded row in the copy
        tiled = np.tile(self.weights, (1, 1, ow))
        phases = [((b * wq + q0) * o, np.ascontiguousarray(tiled[:, j0::dj][:, :nj]), nj, dq)
                  for b, (j0, dj, q0, dq, nj) in phase_taps(kw, dw, sw)]
        views = []
        for r0, r1, i0, i1 in row_bands(h, oh, kh, pt, sh, dh, self.finite_rows, ow * o * kw):
            views.append((r0, r1, tuple(((i1 - i0, nj, n, r1 - r0, ow * o), offset + (r0 * sh + i0 * dh) * row,
                                         (dh * row, dq * o, hp * row, sh * row, 1), taps[i0:i1])
                                        for offset, taps, nj, dq in phases)))
        plan = Plan(form, win.pads, (sh, sw), (dh, dw), (n, oh, ow, o), (n, hp, sw, wq, o), tuple(views))
        # nothing to pad, split into phases, repeat or subtract: the copy would be the input, cast
        plan.direct = sw == 1 and not any(win.pads) and self.multiplier == 1 and not self.zero_point
        return plan

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.ndim != 4:
            return self.kernel(ctx)
        x = v.array.transpose(0, 2, 3, 1) if self.nchw else v.array
        if x.shape[3] != self.channels or x.shape[0] == 0:
            return self.kernel(ctx)
        key = x.shape
        plan = self.plans.get(key, False)
        if plan is False:
            plan = self.plans[key] = self._plan(ctx, key)
        if plan is None:
            return self.kernel(ctx)
        shape = plan.out_shape
        epilogue = self.epilogue
        # NHWC results are computed straight into output 0's buffer (NCHW ones are a transpose of it)
        octx = None if self.nchw else ctx
        acc = epilogue.buffer(self.scratch, shape, self.dtype, octx)
        if plan.form == "windows":
            padded = self._padded(x, plan)
            view = windows(padded, shape[1:3], self.kernel_hw, plan.strides, plan.dilations)
            np.einsum("nhwijc,ijc->nhwc", view, self.weights, out=acc)
        else:
            self._sum_taps(x, plan, acc.reshape(shape[0], shape[1], -1))
        out = epilogue(acc, epilogue.output(octx, shape))
        return [out.transpose(0, 3, 1, 2) if self.nchw else out]

    def _sum_taps(self, x: np.ndarray, plan: Plan, acc: np.ndarray) -> None:
        """acc [N, OH, OW*C*M] = the sum of the taps: the padded input copied (_copy), then per band of
        output rows and column phase one einsum over its view (into a temporary after the first)."""
        if plan.direct and x.flags.c_contiguous and (x.dtype == self.dtype or x.size <= DIRECT_CAST_MAX):
            copy = x   # nothing to pad or subtract (and a cast the einsum does): the views read the input itself
        else:
            copy = self._copy(x, plan)
        views = plan.byte_views.get(copy.itemsize)
        if views is None:
            views = plan.byte_views[copy.itemsize] = plan.in_bytes(copy.itemsize)
        whole = len(views) == 1
        for r0, r1, band in views:
            out = acc if whole else acc[:, r0:r1]
            if not band[0][0][0]:
                out.fill(0)   # no filter row reads the input for these output rows: the bias alone
                continue
            tmp = None
            for shape, offset, strides, taps in band:
                view = np.ndarray(shape, copy.dtype, copy, offset, strides)   # (numpy checks the bounds)
                if tmp is None:
                    np.einsum("ijnrl,ijl->nrl", view, taps, out=out)
                    tmp = out if len(band) == 1 else self.scratch.get("dw-tap", out.shape, out.dtype)
                else:
                    np.einsum("ijnrl,ijl->nrl", view, taps, out=tmp)
                    out += tmp

    def _copy(self, x: np.ndarray, plan: Plan) -> np.ndarray:
        """x - zero point, padded, split into its sw column phases: [N, Hp, sw, Wq, C*M], phase b column
        q holding padded column b + sw*q, each input channel repeated `multiplier` times. Only the
        input's places are written: the padding keeps the fill value it got at the buffer's creation
        (its key, the padding and the input shape, fixes those places)."""
        top, _, left, _ = plan.pads
        sw = plan.strides[1]
        n, h, w, _ = x.shape
        copy = filled_buffer(self.scratch, ("dw-copy", plan.pads, x.shape), plan.copy_shape, self.dtype, self.fill)
        flipped = self._flipped(x)
        src = x if flipped is None else flipped
        for b in range(sw):
            q0 = max(0, -(-(left - b) // sw))   # the first phase column inside the input
            c0 = b + sw * q0 - left             # ... and the input column it holds
            if c0 >= w:
                continue
            cols = src[:, :, c0::sw]
            self._fill(copy[:, top: top + h, b, q0: q0 + cols.shape[2]], cols, flipped is not None)
        return copy

    def _padded(self, x: np.ndarray, plan: Plan) -> np.ndarray:
        """x - zero point, padded with the fill value, as a contiguous [N, Hp, Wp, C*M] array (channels
        repeated)."""
        if self.multiplier == 1:
            return pad_hw(x, plan.pads, self.scratch, self.dtype, self.zero_point, self.fill, contiguous=True)
        n, h, w, _ = x.shape
        top, bottom, left, right = plan.pads
        # (keyed by the padding too: the border of a shared buffer must be where this call expects it)
        padded = filled_buffer(self.scratch, ("dw-padded", plan.pads),
                               (n, h + top + bottom, w + left + right, self.out_channels), self.dtype, self.fill)
        self._fill(padded[:, top: top + h, left: left + w], x)
        return padded

    def _flipped(self, x: np.ndarray):
        """The 8-bit input with its top bit flipped (x - zero point as the other 8-bit type), when the
        zero point makes that exact and the input is large enough to pay for the pass; else None."""
        if x.size < FLIP_MIN_SIZE or (x.dtype, self.zero_point) not in _FLIP_TOP_BIT:
            return None
        flipped = self.scratch.get("dw-flipped", x.shape, np.uint8)
        np.bitwise_xor(x.view(np.uint8), np.uint8(0x80), out=flipped)
        return flipped.view(_FLIP_TOP_BIT[x.dtype, self.zero_point])

    def _fill(self, dst: np.ndarray, src: np.ndarray, flipped: bool = False) -> None:
        """dst [N, h, w, C*M] = src [N, h, w, C] - zero point (unless `flipped`), each input channel
        repeated `multiplier` times."""
        m = self.multiplier
        if m > 1:
            dst, src = dst.reshape(*dst.shape[:3], -1, m), src[..., None]
        if self.zero_point and not flipped:
            np.subtract(src, self.dtype.type(self.zero_point), out=dst, casting="unsafe")
        else:
            np.copyto(dst, src, casting="unsafe")


@prepare(Op.DEPTHWISE_CONV_2D)
def prepare_depthwise_conv_2d(pctx):
    if not supported(pctx):
        return None
    args = pctx.args
    flt, bias, multiplier = args.filter, args.bias, args.multiplier
    if not multiplier or multiplier <= 0 or flt is None or bias is None or flt.array.ndim != 4 \
            or flt.array.shape[0] != 1 or bias.array.ndim != 1 or bias.array.shape[0] != flt.array.shape[3] \
            or flt.array.shape[3] % multiplier:
        return None
    return PreparedDepthwise(pctx, args, multiplier)

"""Compiled DEPTHWISE_CONV_2D (every filter size, stride, dilation and multiplier; float and quantized).

The filter is laid out once as taps [kh, kw, C*M] in the accumulation domain of conv/prepared.py
(quant_domain: float32, or for a quantized operation the cheapest float type whose sums are exact,
with the input zero point folded into the bias where that keeps the bound: a plain cast, padding
with the zero point). Each run copies the input once, cast (the zero point subtracted where it is not
folded) with the padding around it (not at all when there is nothing to pad or cast), then sums the
taps with one einsum per column phase ("rows", "phases") or over the strided windows
("windows"), into the output buffer (float) or a scratch accumulator (quantized), and applies
prepared.Epilogue. Integer sums below the exactness bound do not depend on their order, so quantized
results equal the plain kernel's bit for bit; float sums may round differently (within
quant.float_accumulation_bound).

The forms, chosen per input shape (`_form`, from measurements on the zoo's depthwise layers):

* "rows" (unit width stride): for one output row, tap (i, j)'s values are one contiguous run of
  OW*C values of the padded input, so all kh*kw taps are one strided view [kh, kw, N, OH, OW*C] and
  one einsum multiplies and sums them over long rows (the height stride and the dilations are
  strides of the view).
* "phases" (width stride sw > 1): the input is copied, padded, into its sw column phases
  [N, Hp, sw, Wq, C] (padded column b + sw*q at phase b, column q): the taps reading one phase are
  then again one strided view over contiguous rows, one einsum per phase.
* "windows" (strided, many channels, small outputs): one einsum over the [N, OH, OW, kh, kw, C]
  windows of the padded input, whose inner loops run over the channels; cheaper there than the
  phase copy.
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
# (calls, and a temporary) from so many channels on, for outputs of at most so many values
WINDOWS = ((96, 16384), (192, 65536))


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


class Plan:
    """What a run does for one input shape: the geometry, the form, and for "rows" and "phases" the
    shape of the padded copy [N, Hp, sw, Wq, C*M] and per column phase its view (shape, offset and
    strides in elements of the copy) with the taps [kh, kw', OW*C*M] it meets."""

    def __init__(self, form: str, pads, strides, dilations, out_shape: tuple, copy_shape: tuple = (),
                 views: tuple = ()):
        self.form, self.pads, self.strides, self.dilations = form, pads, strides, dilations
        self.out_shape, self.copy_shape, self.views = out_shape, copy_shape, views


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
        views = tuple(((kh, nj, n, oh, ow * o), (b * wq + q0) * o, (dh * row, dq * o, hp * row, sh * row, 1),
                       np.ascontiguousarray(tiled[:, j0::dj][:, :nj])) for b, (j0, dj, q0, dq, nj) in phase_taps(kw, dw, sw))
        return Plan(form, win.pads, (sh, sw), (dh, dw), (n, oh, ow, o), (n, hp, sw, wq, o), views)

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
        """acc [N, OH, OW*C*M] = the sum of the taps: the padded input copied (_copy), then per column
        phase one einsum over its view (into a temporary after the first)."""
        if plan.strides[1] == 1 and not any(plan.pads) and x.dtype == self.dtype and self.multiplier == 1 \
                and x.flags.c_contiguous:
            copy = x   # nothing to pad, subtract or cast: the views read the input itself
        else:
            copy = self._copy(x, plan)
        step = copy.itemsize
        tmp = None
        for shape, offset, strides, taps in plan.views:
            view = np.ndarray(shape, copy.dtype, copy, offset * step,   # (numpy checks the bounds)
                              tuple(s * step for s in strides))
            if tmp is None:
                np.einsum("ijnrl,ijl->nrl", view, taps, out=acc)
                tmp = acc if len(plan.views) == 1 else self.scratch.get("dw-tap", acc.shape, acc.dtype)
            else:
                np.einsum("ijnrl,ijl->nrl", view, taps, out=tmp)
                acc += tmp

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

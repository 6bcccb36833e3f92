"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D over NHWC: one vectorized pass per filter tap.

Padding never contributes: the average and L2 pools divide by the number of
real input elements under the window (as TFLite/Android do), the max pool pads
with the lowest value. Quantized pools work on the stored integers (input and
output share scale and zero point).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from nnapi.codes import OperationCode as Op

from ..registry import kernel, prepare
from .common import QUANT8, apply_fuse, clip_ufunc, explicit_out_size, from_nhwc, fuse_range, to_nhwc
from .conv.gemm import pad_hw
from .scratch import Scratch


@dataclass(frozen=True)
class PoolParams:
    pads: tuple        # (top, bottom, left, right)
    strides: tuple     # (h, w)
    filter: tuple      # (h, w)
    fuse: int
    nchw: bool


def pool_params(ctx) -> PoolParams:
    """The window of either padding form. The spec checks constant parameters at finish() (positive
    strides and filter, paddings smaller than the filter); these checks catch ones fed at run time."""
    args = ctx.args
    inp = args.input
    if inp.array.ndim != 4:
        ctx.fail(f"input must be 4-D, got shape {list(inp.shape)}")
    nchw = args.nchw
    strides, filter_hw = args.window_strides, (args.filter_h, args.filter_w)
    if min(strides) <= 0 or min(filter_hw) <= 0:
        ctx.fail(f"strides {strides} and filter size {filter_hw} must be positive")
    shape = inp.shape
    try:
        top, bottom, left, right = args.window_pads((shape[2], shape[3]) if nchw else (shape[1], shape[2]), filter_hw)
    except ValueError as e:
        ctx.fail(str(e))
    if min(left, right, top, bottom) < 0:
        ctx.fail(f"padding ({left}, {right}, {top}, {bottom}) must not be negative")
    if max(left, right) >= filter_hw[1] or max(top, bottom) >= filter_hw[0]:
        ctx.fail(f"padding ({left}, {right}, {top}, {bottom}) must be smaller than the filter {filter_hw}")
    return PoolParams((top, bottom, left, right), strides, filter_hw, args.fuse, nchw)


def _padded(x: np.ndarray, p: PoolParams, pad_value) -> np.ndarray:
    top, bottom, left, right = p.pads
    if not (top or bottom or left or right):
        return x
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=pad_value)


def _reduce_windows(x: np.ndarray, p: PoolParams, pad_value, ufunc, dtype) -> np.ndarray:
    """ufunc-reduce every pooling window of NHWC x into (N, OH, OW, C) of `dtype`: one whole-output pass per
    filter tap (a strided slice of the padded input each), which numpy runs far faster than a reduction over
    the small window axes of a sliding-window view. A window covering the whole unpadded image is one
    reduction over the image."""
    if p.filter == x.shape[1:3] and not any(p.pads):
        return ufunc.reduce(x, axis=(1, 2), keepdims=True, dtype=dtype)
    padded = _padded(x, p, pad_value)
    (sh, sw), (fh, fw) = p.strides, p.filter
    top, bottom, left, right = p.pads
    oh = explicit_out_size(x.shape[1], sh, fh, top, bottom)
    ow = explicit_out_size(x.shape[2], sw, fw, left, right)
    out = None
    for i in range(fh):
        for j in range(fw):
            tap = padded[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
            if out is None:
                out = tap.astype(dtype)   # a copy: the accumulator never aliases the input
            else:
                ufunc(out, tap, out=out)
    return out


@lru_cache(maxsize=256)
def _counts(h: int, w: int, p: PoolParams) -> np.ndarray:
    """Number of real (unpadded) input elements under each window, shape (OH, OW, 1); read-only."""
    ones = np.ones((1, h, w, 1), dtype=np.int64)
    counts = _reduce_windows(ones, p, 0, np.add, np.int64)[0]
    counts.flags.writeable = False
    return counts


def _run_pool(ctx, reduce, p: PoolParams = None):
    """Shared driver: layout, shape checks, zero-sized batches, fuse and output type."""
    p = p or pool_params(ctx)
    inp = ctx.args.input
    x = to_nhwc(inp.array, p.nchw)
    n, h, w, c = x.shape
    if min(h, w, c) <= 0:
        ctx.fail(f"only the batch dimension may be zero, got shape {list(inp.shape)}")
    oh = explicit_out_size(h, p.strides[0], p.filter[0], p.pads[0], p.pads[1])
    ow = explicit_out_size(w, p.strides[1], p.filter[1], p.pads[2], p.pads[3])
    if oh <= 0 or ow <= 0:
        ctx.fail(f"the {p.filter} filter does not fit the padded {h}x{w} input")
    out = ctx.out_type()
    if n == 0:
        raw = np.zeros((0, oh, ow, c), dtype=out.dtype)
    else:
        try:
            raw = apply_fuse(reduce(x, p, inp.code), p.fuse, out.code, out.scale, out.zero_point)
        except ValueError as e:  # an invalid fuse code
            ctx.fail(str(e))
    raw = np.asarray(raw)
    if p.nchw:
        return [from_nhwc(raw.astype(out.dtype), p.nchw)]
    result = ctx.output_buffer(0, raw.shape, out.dtype)
    np.copyto(result, raw, casting="unsafe")
    return [result]


def _float(x: np.ndarray) -> np.ndarray:
    """float16 is computed in float32 (as Android does) and cast back by the caller."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _window_mean(values: np.ndarray, p: PoolParams) -> np.ndarray:
    counts = _counts(values.shape[1], values.shape[2], p)
    return _reduce_windows(values, p, 0, np.add, values.dtype) / counts.astype(values.dtype)


def _average(x, p: PoolParams, code):
    if code not in QUANT8:
        return _window_mean(_float(x), p)
    sums = _reduce_windows(x, p, 0, np.add, np.int64)
    counts = _counts(x.shape[1], x.shape[2], p)
    # integer mean rounded half away from zero, like TFLite's (sum +- count/2) / count
    return np.sign(sums) * ((np.abs(sums) + counts // 2) // counts)


def _max(x, p: PoolParams, code):
    lowest = np.iinfo(x.dtype).min if code in QUANT8 else -np.inf
    x = _float(x)
    return _reduce_windows(x, p, lowest, np.maximum, x.dtype)


def _l2(x, p: PoolParams, code):
    xf = _float(x)
    return np.sqrt(_window_mean(xf * xf, p))


_REDUCE = {Op.AVERAGE_POOL_2D: _average, Op.MAX_POOL_2D: _max, Op.L2_POOL_2D: _l2}
# the dtypes PreparedPool's max pool takes (float16 goes through the kernel's float32)
_MAX_DTYPES = (np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.uint8))


@kernel(*_REDUCE)
def pool_2d(ctx):
    return _run_pool(ctx, _REDUCE[ctx.step.code])


class PreparedPool:
    """A pool whose parameters are constants: they are read and checked once per input shape.
    Every result (the plain kernel's too) is computed anew: never a view of the input."""

    fresh_outputs = True

    def __init__(self, reduce, scratch: Scratch = None):
        self.reduce = reduce
        self.params: dict = {}
        self.clamps: dict = {}
        self.scratch = scratch or Scratch()

    def __call__(self, ctx):
        x = ctx.args.input
        key = None if x is None else x.array.shape
        p = self.params.get(key)
        if p is None:
            p = pool_params(ctx)
            self.params[key] = p
        if self.reduce is _average and x.code in QUANT8 and not p.nchw and p.filter == key[1:3] \
                and not any(p.pads) and key[0] and key[3]:
            return [_global_average_quant(ctx, x, self._clamp(ctx, p.fuse))]
        windowed = not p.nchw and key[0] and key[3] and (p.filter != key[1:3] or any(p.pads))
        if windowed and self.reduce is _max and x.array.dtype in _MAX_DTYPES:
            out = self._max_pool(ctx, x.array, p)
            if out is not None:
                return [out]
        if windowed and self.reduce is _average and x.code in QUANT8:
            out = self._average_quant(ctx, x.array, p)
            if out is not None:
                return [out]
        return _run_pool(ctx, self.reduce, p)

    def _window_taps(self, padded: np.ndarray, p: PoolParams, out_hw: tuple, ufunc, name: str) -> list:
        """The fh row taps of `ufunc` reduced over each window's columns first (fw - 1 passes over every
        row the windows use, into a reused buffer); exact for max and integer sums in any order."""
        (sh, sw), (fh, fw) = p.strides, p.filter
        (oh, ow), n, c = out_hw, padded.shape[0], padded.shape[3]
        rows = (oh - 1) * sh + fh
        cols = [padded[:, :rows, j:j + (ow - 1) * sw + 1:sw] for j in range(fw)]
        if fw == 1:
            across = cols[0]
        else:
            across = self.scratch.get(name, (n, rows, ow, c), padded.dtype)
            ufunc(cols[0], cols[1], out=across)
            for col in cols[2:]:
                ufunc(across, col, out=across)
        return [across[:, i:i + (oh - 1) * sh + 1:sh] for i in range(fh)]

    def _average_quant(self, ctx, x: np.ndarray, p: PoolParams):
        """_average's integer mean (sums over the windows' real elements, rounded half away from zero by
        their counts) with int32 sums by columns then rows into reused buffers, clamped, cast into output
        0's buffer; None where the kernel must report a window that does not fit."""
        n, h, w, c = x.shape
        (sh, sw), (fh, fw) = p.strides, p.filter
        top, bottom, left, right = p.pads
        oh, ow = explicit_out_size(h, sh, fh, top, bottom), explicit_out_size(w, sw, fw, left, right)
        if oh <= 0 or ow <= 0 or fh * fw > 1 << 20:
            return None
        padded = pad_hw(x, p.pads, self.scratch, np.int32)
        taps = self._window_taps(padded, p, (oh, ow), np.add, "pool_sums")
        sums = self.scratch.get("pool_mean", (n, oh, ow, c), np.int32)
        if len(taps) == 1:
            np.copyto(sums, taps[0])
        else:
            np.add(taps[0], taps[1], out=sums)
            for tap in taps[2:]:
                sums += tap
        counts = _counts(h, w, p).astype(np.int32)
        if x.dtype.kind == "u":   # sums >= 0
            sums += counts // 2
            sums //= counts
        else:
            negative = sums < 0
            np.abs(sums, out=sums)
            sums += counts // 2
            sums //= counts
            np.negative(sums, out=sums, where=negative)
        lo, hi = self._clamp(ctx, p.fuse)
        clip_ufunc(sums, lo, hi, out=sums)
        out = ctx.output_buffer(0, sums.shape, x.dtype)
        np.copyto(out, sums, casting="unsafe")
        return out

    def _max_pool(self, ctx, x: np.ndarray, p: PoolParams):
        """_max's tap loop (the same maximum over the same padded taps) with the padding written into a
        reused buffer and the taps reduced straight into output 0's buffer; None where the kernel must
        report a window that does not fit."""
        n, h, w, c = x.shape
        (sh, sw), (fh, fw) = p.strides, p.filter
        top, bottom, left, right = p.pads
        oh, ow = explicit_out_size(h, sh, fh, top, bottom), explicit_out_size(w, sw, fw, left, right)
        if oh <= 0 or ow <= 0:
            return None
        lowest = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
        padded = pad_hw(x, p.pads, self.scratch, x.dtype, 0, lowest)
        out = ctx.output_buffer(0, (n, oh, ow, c), x.dtype)
        if x.dtype.kind in "iu" and fh > 1 and fw > 1:
            # integers: the window's maximum is the maximum of its rows' maxima (exact, any order):
            # fh + fw - 2 passes instead of fh * fw - 1 (floats keep the kernel's order: the sign of a
            # zero maximum depends on it)
            taps = self._window_taps(padded, p, (oh, ow), np.maximum, "pool_rows")
        else:
            taps = [padded[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
                    for i in range(fh) for j in range(fw)]
        if len(taps) == 1:
            np.copyto(out, taps[0])
        else:
            np.maximum(taps[0], taps[1], out=out)
            for tap in taps[2:]:
                np.maximum(out, tap, out=out)
        lo, hi = self._clamp(ctx, p.fuse)
        if lo != -np.inf or hi != np.inf:
            clip_ufunc(out, lo, hi, out=out)
        return out

    def _clamp(self, ctx, fuse: int) -> tuple:
        """The fused activation's range in stored units, worked out once."""
        clamp = self.clamps.get(fuse)
        if clamp is None:
            out = ctx.out_type()
            try:
                clamp = self.clamps[fuse] = fuse_range(fuse, out.code, out.scale, out.zero_point)
            except ValueError as e:  # an invalid fuse code
                ctx.fail(str(e))
        return clamp


def _global_average_quant(ctx, x, clamp: tuple) -> np.ndarray:
    """The quantized average pool whose one window is the whole image (NHWC, no padding): _average's
    rounded integer mean with every count h * w, as one sum over the image instead of window views."""
    _, h, w, _ = x.array.shape
    sums = x.array.sum(axis=(1, 2), keepdims=True, dtype=np.int64)
    count = h * w
    mean = np.abs(sums)
    mean += count // 2
    mean //= count
    if x.array.dtype.kind == "i":   # (unsigned sums are never negative)
        mean *= np.sign(sums)
    out = ctx.out_type()
    clip_ufunc(mean, *clamp, out=mean)
    result = ctx.output_buffer(0, mean.shape, out.dtype)
    np.copyto(result, mean, casting="unsafe")
    return result


@prepare(*_REDUCE)
def prepare_pool(pctx):
    # the input fed at run time, every window parameter a constant
    bound = pctx.step.bound
    if bound.runtime != {"input"}:   # the input fed at run time, every window parameter a constant
        return None
    return PreparedPool(_REDUCE[pctx.step.code], pctx.compiled.scratch)

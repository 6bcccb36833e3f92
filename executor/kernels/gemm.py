"""The arithmetic of prepared convolutions: im2col patches, depthwise taps and the
accumulator bound that decides whether a float32 GEMM is exact.

Nothing here registers a kernel.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .scratch import Scratch

# float32 represents every integer below 2**24 exactly, float64 every one below 2**53: a GEMM of
# integer-valued operands is exact in that type when no partial sum can reach the limit
EXACT_LIMIT = {np.dtype(np.float32): 2.0 ** 24, np.dtype(np.float64): 2.0 ** 53}


# below this many outputs one einsum call beats the tap loop's 2 * kh * kw calls
SMALL_DEPTHWISE = 16384


def exact_dtype(bound: float):
    """The cheapest float type whose sums of integers are exact up to `bound`, or None."""
    for dt, limit in EXACT_LIMIT.items():
        if bound < limit:
            return dt
    return None


def pad_hw(x: np.ndarray, pads: tuple, scratch: Scratch, dtype, zero_point: int = 0) -> np.ndarray:
    """x (NHWC) - zero_point as `dtype`, zero-padded by (top, bottom, left, right), in a reused buffer:
    only the interior is written, so the border stays zero from the buffer's creation."""
    top, bottom, left, right = pads
    n, h, w, c = x.shape
    dtype = np.dtype(dtype)
    if not (top or bottom or left or right or zero_point) and x.dtype == dtype:
        return x
    # keyed by the padding too: the border of a shared buffer must be where this call expects it
    out = scratch.get(f"padded{pads}", (n, h + top + bottom, w + left + right, c), dtype)
    interior = out[:, top: top + h, left: left + w]
    if zero_point:
        np.subtract(x, dtype.type(zero_point), out=interior, casting="unsafe")
    else:
        np.copyto(interior, x, casting="unsafe")
    return out


def windows(padded: np.ndarray, out_hw: tuple, kernel_hw: tuple, strides: tuple, dilations: tuple) -> np.ndarray:
    """[N, OH, OW, kh, kw, C] strided view: the filter taps under every output position."""
    n, _, _, c = padded.shape
    sn, sh, sw, sc = padded.strides
    shape = (n, *out_hw, *kernel_hw, c)
    steps = (sn, sh * strides[0], sw * strides[1], sh * dilations[0], sw * dilations[1], sc)
    if padded.flags.c_contiguous:  # the same view, without as_strided's per-call overhead
        return np.ndarray(shape, padded.dtype, padded, 0, steps)
    return as_strided(padded, shape, steps, writeable=False)


def im2col(padded, out_hw, kernel_hw, strides, dilations, scratch: Scratch) -> np.ndarray:
    """[N*OH*OW, kh*kw*C] patch rows, copied into a reused buffer (a 1x1 unit-stride filter is a free
    reshape of a contiguous input)."""
    c = padded.shape[-1]
    if kernel_hw == (1, 1) and strides == (1, 1) and padded.flags.c_contiguous:
        return padded.reshape(-1, c)
    view = windows(padded, out_hw, kernel_hw, strides, dilations)
    cols = scratch.get("cols", view.shape, padded.dtype)
    np.copyto(cols, view)
    return cols.reshape(-1, kernel_hw[0] * kernel_hw[1] * c)


def depthwise(padded, taps: np.ndarray, out_hw, strides, dilations, out: np.ndarray, scratch: Scratch,
              tiled_taps=None):
    """out = sum over taps of shifted input x taps[i, j] (channels last, one filter per channel): a loop
    over the kh*kw taps, each a vectorized multiply-add over all pixels and channels.

    When a tap's (width, channel) axes are one run of memory (unit width stride), `tiled_taps(OW)`
    ([kh, kw, OW*C]: the taps repeated along the width) lets each multiply-add run over whole rows
    instead of C elements at a time. Small outputs take one einsum instead (fewer calls)."""
    kh, kw, c = taps.shape
    view = windows(padded, out_hw, (kh, kw), strides, dilations)
    if out.size <= SMALL_DEPTHWISE:
        return np.einsum("nhwijc,ijc->nhwc", view, taps, out=out)
    n, oh, ow = view.shape[:3]
    acc = out
    if tiled_taps is not None and view.strides[2] == c * view.itemsize and view.strides[5] == view.itemsize:
        taps = tiled_taps(ow)
        acc = out.reshape(n, oh, ow * c)

    def tap(i, j):
        return view[:, :, :, i, j].reshape(acc.shape)   # a view: the axes merged are contiguous

    np.multiply(tap(0, 0), taps[0, 0], out=acc)
    tmp = scratch.get("tap", acc.shape, acc.dtype)
    for i in range(kh):
        for j in range(kw):
            if i or j:
                np.multiply(tap(i, j), taps[i, j], out=tmp)
                acc += tmp
    return out


def abs_row_sums(w: np.ndarray) -> np.ndarray:
    """sum |w| over all but the first axis: with inputs bounded by b, output channel c's partial sums
    stay within b * abs_row_sums(w)[c]."""
    return np.abs(w.reshape(w.shape[0], -1).astype(np.float64)).sum(axis=1)

"""The arithmetic of prepared convolutions: the padded input copy, im2col patches, per-channel
constants on long rows and the accumulator bound that decides whether a float32 GEMM is exact.

Nothing here registers a kernel.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..scratch import Scratch

# float32 represents every integer below 2**24 exactly, float64 every one below 2**53: a GEMM of
# integer-valued operands is exact in that type when no partial sum can reach the limit
EXACT_LIMIT = {np.dtype(np.float32): 2.0 ** 24, np.dtype(np.float64): 2.0 ** 53}


# numpy applies a per-channel constant to [rows, L] (the constant repeated to length L) several times
# faster once rows are this long than with rows of one pixel or one image row
LONG_ROW = 8192


def row_length(pixels: int, channels: int) -> int:
    """A row length for [pixels, channels] values with per-channel constants: a multiple of `channels`
    dividing pixels * channels, the shortest one of at least LONG_ROW (all of it when smaller)."""
    if pixels * channels <= LONG_ROW or channels <= 0:
        return pixels * channels
    need = -(-LONG_ROW // channels)
    for d in range(need, min(pixels, 8 * need) + 1):
        if pixels % d == 0:
            return d * channels
    return pixels * channels


class ChannelRows:
    """Per-channel constants [C] repeated for [..., C] values viewed as [rows, row_length], made once per
    values shape: `rows(values)` -> (values as rows, each constant repeated), or the values and the
    constants as they are when the values are not contiguous [..., C]."""

    def __init__(self, *constants: np.ndarray):
        self.constants = constants
        self.cache: dict = {}

    def __call__(self, values: np.ndarray):
        key = values.shape
        tiled = self.cache.get(key)
        if tiled is None:
            tiled = self.cache[key] = self._tile(values.shape)
        if not tiled or not values.flags.c_contiguous:
            return (values, *self.constants)
        return (values.reshape(-1, tiled[0]), *tiled[1:])

    def _tile(self, shape: tuple):
        c = shape[-1] if shape else 0
        if len(shape) < 2 or not c or any(k.shape != (c,) for k in self.constants):
            return ()
        pixels = int(np.prod(shape[:-1]))
        length = row_length(pixels, c)
        if not length:
            return ()
        return (length, *(np.tile(k, length // c) for k in self.constants))


def exact_dtype(bound: float):
    """The cheapest float type whose sums of integers are exact up to `bound`, or None."""
    for dt, limit in EXACT_LIMIT.items():
        if bound < limit:
            return dt
    return None


# (8-bit dtype, zero point) -> the type whose values are x - zero point once the top bit is flipped
_FLIP_TOP_BIT = {(np.dtype(np.int8), -128): np.uint8, (np.dtype(np.uint8), 128): np.int8}
FLIP_MIN_SIZE = 4096
# a channels-first input with at most this many channels is copied one channel plane at a time
FEW_PLANES = 8


def pad_hw(x: np.ndarray, pads: tuple, scratch: Scratch, dtype, zero_point: int = 0) -> np.ndarray:
    """x (NHWC) - zero_point as `dtype`, zero-padded by (top, bottom, left, right), in a reused buffer:
    only the interior is written, so the border stays zero from the buffer's creation."""
    top, bottom, left, right = pads
    n, h, w, c = x.shape
    dtype = np.dtype(dtype)
    if not (top or bottom or left or right or zero_point) and x.dtype == dtype:
        return x
    # keyed by the padding too: the border of a shared buffer must be where this call expects it
    out = scratch.get(("padded", pads), (n, h + top + bottom, w + left + right, c), dtype)
    interior = out[:, top: top + h, left: left + w]
    if c <= FEW_PLANES and x.strides[3] > x.strides[2] and x.size >= FLIP_MIN_SIZE:
        # a channels-first image seen channels last (an NCHW input's transpose): one copy per channel
        # plane reads it in order, about 3x faster than the element-by-element gather of one copy
        for k in range(c):
            if zero_point:
                np.subtract(x[..., k], dtype.type(zero_point), out=interior[..., k], casting="unsafe")
            else:
                np.copyto(interior[..., k], x[..., k], casting="unsafe")
    elif zero_point and x.size >= FLIP_MIN_SIZE and (x.dtype, zero_point) in _FLIP_TOP_BIT:
        # int8 - (-128) and uint8 - 128 are the other 8-bit type with the top bit flipped: an 8-bit pass
        # and a cast copy cost about half a subtracting cast (on small arrays the extra call costs more)
        flipped = scratch.get("flipped", x.shape, np.uint8)
        np.bitwise_xor(x.view(np.uint8), np.uint8(0x80), out=flipped)
        np.copyto(interior, flipped.view(_FLIP_TOP_BIT[x.dtype, zero_point]), casting="unsafe")
    elif zero_point:
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


def abs_row_sums(w: np.ndarray) -> np.ndarray:
    """sum |w| over all but the first axis: with inputs bounded by b, output channel c's partial sums
    stay within b * abs_row_sums(w)[c]."""
    return np.abs(w.reshape(w.shape[0], -1).astype(np.float64)).sum(axis=1)

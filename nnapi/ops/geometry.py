"""Window geometry shared by the op specs' shape inference and the executor's kernels: SAME/VALID
implicit padding, the output size of a (dilated) window with explicit padding, the transposed
convolution's output size, resizing by a scale, and NHWC/NCHW image shapes.

The first functions are the exact rules (plain ints in, ints out; ValueError for an invalid padding
code), as the NNAPI header defines them; executor/kernels/common.py re-exports them. The `*_or_0`
functions below them are their shape-inference forms: any unknown (0 or None) or invalid parameter
gives 0, an unknown extent, and they never raise.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..codes import PaddingCode

# -- the rules ---------------------------------------------------------------------


def implicit_padding(in_size: int, stride: int, filter_size: int, padding: int, dilation: int = 1):
    """(pad_before, pad_after, out_size) for PaddingCode SAME/VALID, as the NNAPI header defines them."""
    eff = (filter_size - 1) * dilation + 1
    if padding == PaddingCode.SAME:
        out = (in_size + stride - 1) // stride
        total = max((out - 1) * stride + eff - in_size, 0)
        return total // 2, (total + 1) // 2, out
    if padding == PaddingCode.VALID:
        out = (in_size - eff + stride) // stride
        return 0, 0, max(out, 0)
    raise ValueError(f"invalid padding code {padding}")


def explicit_out_size(in_size: int, stride: int, filter_size: int, pad_before: int, pad_after: int,
                      dilation: int = 1) -> int:
    """Output extent of a strided, dilated window sliding over the padded input."""
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + stride + pad_before + pad_after) // stride


def transpose_implicit_padding(out_size: int, stride: int, filter_size: int, padding: int) -> tuple[int, int]:
    """(head, tail) padding of TRANSPOSE_CONV_2D for a requested output size: SAME pads as the forward
    convolution from `out_size` would, the tail fitted to the last stride (it may be negative), so that
    an input of ceil(out_size / stride) gives exactly `out_size`; VALID pads nothing."""
    if padding == PaddingCode.VALID:
        return 0, 0
    if padding != PaddingCode.SAME:
        raise ValueError(f"invalid padding code {padding}")
    covered = ((out_size + stride - 1) // stride - 1) * stride + filter_size
    head = max(covered - out_size, 0) // 2
    return head, covered - out_size - head


def transpose_out_size(in_size: int, stride: int, filter_size: int, head: int, tail: int) -> int:
    """Output extent of TRANSPOSE_CONV_2D: every input pixel scatters a filter window at stride spacing,
    cropped by the padding."""
    return (in_size - 1) * stride + filter_size - head - tail


def scaled_size(in_size: int, scale) -> int:
    """RESIZE_* output extent for a scale: floor(in_size * scale) in float32 (float16 scales widened);
    0 for a non-finite product."""
    v = np.float32(in_size) * np.float32(scale)
    return math.floor(v) if np.isfinite(v) else 0


# -- image layout -----------------------------------------------------------------------

def split_image(dims, nchw: bool) -> tuple[int, int, int, int]:
    """(batches, height, width, channels) of a 4-D Shape in either layout; zeros when not 4-D."""
    if dims is None or len(dims) != 4:
        return 0, 0, 0, 0
    n, a, b, c = dims
    return (n, b, c, a) if nchw else (n, a, b, c)


def join_image(n: int, h: int, w: int, c: int, nchw) -> tuple:
    """A 4-D Shape in the layout (all extents unknown when the layout flag is not constant: None)."""
    if nchw is None:
        return (0, 0, 0, 0)
    return (n, c, h, w) if nchw else (n, h, w, c)


def image_input(v, name: str = "input", *four_d: str):
    """(nchw, n, h, w, c) of the 4-D image input `name` of view `v` (extents 0 where unknown, also all
    of them when the layout flag is not constant), or None when `name` or any input in `four_d` has a
    known rank other than 4: the shape rules report that, and nothing is inferred."""
    dims = v.dims(name)
    if any(d is not None and len(d) != 4 for d in [dims] + [v.dims(k) for k in four_d]):
        return None
    nchw = layout(v)
    return (nchw, *(split_image(dims, nchw) if nchw is not None else (0, 0, 0, 0)))


def layout(v):
    """An operation's layout flag: True for NCHW, False for NHWC (also when the optional flag is
    absent), None when it is not constant."""
    if not v.has("layout"):
        return False
    nchw = v.const("layout")
    return None if nchw is None else bool(nchw)


def const_int(v, name: str, default=None):
    """A constant INT32 scalar input of view `v` (`default` when absent), or None when not constant."""
    if not v.has(name):
        return default
    value = v.const(name)
    return value if isinstance(value, int) else None


# -- shape inference forms (0 = unknown, never raise) -----------------------------------------

def _pos(*xs) -> bool:
    return all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x > 0 for x in xs)


def _nonneg(*xs) -> bool:
    return all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 0 for x in xs)


def window_out_or_0(in_size, stride, filter_size, dilation=1, pads: Optional[tuple] = None, padding=None) -> int:
    """Output extent of a convolution or pooling window: explicit `pads` (before, after), or the
    implicit `padding` code when `pads` is None; 0 when anything is unknown or the window does not fit."""
    if not _pos(in_size, stride, filter_size, dilation):
        return 0
    if pads is not None:
        if not _nonneg(*pads):
            return 0
        out = explicit_out_size(in_size, stride, filter_size, pads[0], pads[1], dilation)
    elif padding in (PaddingCode.SAME, PaddingCode.VALID):
        out = implicit_padding(in_size, stride, filter_size, padding, dilation)[2]
    else:
        return 0
    return out if out > 0 else 0


def transpose_out_or_0(in_size, stride, filter_size, pads: Optional[tuple] = None, padding=None,
                       requested=None) -> int:
    """TRANSPOSE_CONV_2D's output extent: explicit `pads` (head, tail), or the implicit `padding` code
    (SAME needs the `requested` output extent of the output shape tensor); 0 when unknown or not
    positive."""
    if not _pos(in_size, stride, filter_size):
        return 0
    if pads is None:
        if padding == PaddingCode.VALID:
            pads = (0, 0)
        elif padding == PaddingCode.SAME and _pos(requested):
            pads = transpose_implicit_padding(requested, stride, filter_size, padding)
        else:
            return 0
    elif not (_nonneg(pads[0]) and isinstance(pads[1], (int, np.integer))):
        return 0   # the head padding may not be negative (the tail may: it crops less)
    out = transpose_out_size(in_size, stride, filter_size, *pads)
    return out if out > 0 else 0


# -- RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR sampling (the Android reference kernels, float32) --------
def _resize_scale(in_size: int, out_size: int, align: bool):
    """Source pixels per output pixel, in float32."""
    if align and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def nearest_index(in_size, out_size, align, half) -> np.ndarray:
    """RESIZE_NEAREST_NEIGHBOR: the source index of every output position along one axis."""
    pos = np.arange(out_size, dtype=np.float32)
    if half:
        pos = pos + np.float32(0.5)
    src = pos * _resize_scale(in_size, out_size, align)
    idx = np.floor(src)
    if align:  # roundf: src >= 0, so halves round up (src - floor is exact in float32)
        idx = idx + (src - idx >= np.float32(0.5))
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0) if half else idx


def bilinear_axis(in_size, out_size, align, half):
    """(lower index, upper index, fractional weight) per output position, as float32 like TFLite."""
    pos = np.arange(out_size, dtype=np.float32)
    scale = _resize_scale(in_size, out_size, align)
    src = (pos + np.float32(0.5)) * scale - np.float32(0.5) if half else pos * scale
    floor = np.floor(src)
    lo = np.maximum(floor.astype(np.int64), 0)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lo, hi, src - lo.astype(np.float32)

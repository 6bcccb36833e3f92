"""The arithmetic of prepared convolutions: the padded input copy, im2col patches (whole, in pieces, per
filter row: row_taps, or a channels-first image's plane by plane: plane_patches), the per-tap GEMMs
(shifted_gemm, clipped_taps), per-channel constants on long rows and the accumulator bound that decides
whether a float32 GEMM is exact.

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


def filled_buffer(scratch: Scratch, name, shape: tuple, dtype, fill: int = 0) -> np.ndarray:
    """The scratch array (name, fill) of `shape`, filled with `fill` when it was made (zero: as Scratch
    makes it): what its users leave unwritten, padding, keeps that value."""
    if not fill:
        return scratch.get(name, shape, dtype)
    out = scratch.get((name, fill), shape, dtype)
    filled = scratch.get((name, fill, shape, dtype), (), np.bool_)   # (per thread, as the buffer)
    if not filled:
        out.fill(fill)
        filled[()] = True
    return out


def pad_hw(x: np.ndarray, pads: tuple, scratch: Scratch, dtype, zero_point: int = 0, fill: int = 0,
           contiguous: bool = False) -> np.ndarray:
    """x (NHWC) - zero_point as `dtype`, padded by (top, bottom, left, right) with `fill`, in a reused
    buffer: only the interior is written, so the border stays as it was filled at the buffer's creation.
    With nothing to change x itself is returned, unless `contiguous` asks for a C-contiguous result and x
    is not."""
    top, bottom, left, right = pads
    n, h, w, c = x.shape
    dtype = np.dtype(dtype)
    if not (top or bottom or left or right or zero_point) and x.dtype == dtype \
            and (x.flags.c_contiguous or not contiguous):
        return x
    # keyed by the padding and fill too: the border of a shared buffer must be what this call expects
    shape = (n, h + top + bottom, w + left + right, c)
    out = filled_buffer(scratch, ("padded", pads), shape, dtype, fill if (top or bottom or left or right) else 0)
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


def tap_window(size: int, pad_before: int, stride: int, k: int, dilation: int, out: int, prune: bool = True) -> tuple:
    """Along one axis: (first tap, taps, crop before, crop after, pad before, pad after) of the filter taps
    that read the input for at least one output, and the input crop and zero padding that run just them.
    The other taps read only padding (a dilated filter larger than its input, as in atrous pyramids): with
    finite weights their products are zeros, which add nothing to a sum (`prune` False keeps every tap; the
    input rows no tap reads are cropped either way)."""
    used = [i for i in range(k) if _clip(size, pad_before - i * dilation, stride, out)[1] > 0]
    if not used or not prune:
        used = list(range(k))   # no tap reads the input (every output is the bias): nothing to crop
    first, taps = used[0], used[-1] - used[0] + 1
    before = pad_before - first * dilation
    after = (out - 1) * stride + (taps - 1) * dilation + 1 - before - size
    return first, taps, max(-before, 0), max(-after, 0), max(before, 0), max(after, 0)


# unit-stride convolutions whose patch matrix (im2col) would take at least SHIFTED_MIN_BYTES are computed
# as one GEMM per filter tap over the padded input at full width (shifted_gemm) when the input has at least
# SHIFTED_MIN_CHANNELS channels (each GEMM's depth) and the output at most SHIFTED_MAX_OUT: a patch
# matrix that large leaves the cache, and BLAS streams it slowly into few output columns (measured 1.6 to
# 1.9x slower, copy included, on densenet's and PP-OCR's 3x3 convolutions to 24 and 32 channels; about
# even from 64 output channels); a quarter of junk columns at most
SHIFTED_MIN_BYTES = 4 << 20
SHIFTED_MIN_CHANNELS = 32
SHIFTED_MAX_OUT = 48


# otherwise a patch matrix that large is copied and multiplied about PATCH_CHUNK_BYTES at a time (whole
# output rows): each piece is still in cache when its GEMM reads it (1.1 to 1.5x faster measured on 3x3
# convolutions of 12 to 96 channels), unless the filter passes PATCH_CHUNK_MAX_FILTER bytes (then every
# piece's GEMM reads the whole filter again: 1.5x slower on vgg's 512-channel layers)
PATCH_CHUNK_BYTES = 1 << 20
PATCH_CHUNK_MAX_FILTER = 512 << 10


def patch_chunk_rows(out_hw: tuple, kernel_hw: tuple, channels: int, out_channels: int, itemsize: int) -> int:
    """Output rows per im2col piece for one image: 0 (all at once) below SHIFTED_MIN_BYTES or above
    PATCH_CHUNK_MAX_FILTER."""
    depth = kernel_hw[0] * kernel_hw[1] * channels
    row = out_hw[1] * depth * itemsize
    if row * out_hw[0] < SHIFTED_MIN_BYTES or depth * out_channels * itemsize > PATCH_CHUNK_MAX_FILTER:
        return 0
    rows = max(1, PATCH_CHUNK_BYTES // row)
    return rows if rows < out_hw[0] else 0


def shifted_gemm_pays(padded_shape: tuple, out_hw: tuple, kernel_hw: tuple, strides: tuple, out_channels: int,
                      itemsize: int) -> bool:
    """Whether shifted_gemm is used for this geometry (see SHIFTED_MIN_BYTES)."""
    n, _, wp, c = padded_shape
    cols = n * out_hw[0] * out_hw[1] * kernel_hw[0] * kernel_hw[1] * c * itemsize
    return (strides == (1, 1) and kernel_hw != (1, 1) and c >= SHIFTED_MIN_CHANNELS
            and out_channels <= SHIFTED_MAX_OUT and cols >= SHIFTED_MIN_BYTES and 4 * wp <= 5 * out_hw[1])


def shifted_gemm(padded: np.ndarray, taps: np.ndarray, out_hw: tuple, dilations: tuple, wide: np.ndarray,
                 scratch: Scratch) -> np.ndarray:
    """A unit-stride convolution of contiguous `padded` [N, Hp, Wp, C] by taps [kh, kw, C, O] into `wide`
    [N, OH, Wp, O], computed at full width: output pixel p of an image (flattened, width Wp) is the sum over
    taps of padded pixel p + i*dh*Wp + j*dw times taps[i, j], so each tap is one GEMM of a contiguous
    [pixels, C] range; columns OW.. of each row are junk for the caller to drop (and the rows' tail past
    the last valid pixel is left as it was). No read leaves the image: the last valid output's last tap
    reads the last padded pixel at most."""
    kh, kw, c, o = taps.shape
    oh, ow = out_hw
    n, _, wp, _ = padded.shape
    pixels = (oh - 1) * wp + ow
    tmp = scratch.get("shifted", (pixels, o), wide.dtype)
    for b in range(n):
        flat = padded[b].reshape(-1, c)
        acc = wide[b].reshape(-1, o)[:pixels]
        for i in range(kh):
            for j in range(kw):
                start = i * dilations[0] * wp + j * dilations[1]
                if i or j:
                    np.matmul(flat[start:start + pixels], taps[i, j], out=tmp)
                    acc += tmp
                else:
                    np.matmul(flat[:pixels], taps[0, 0], out=acc)
    return wide


# a small convolution of unit row stride (patch matrix below SHIFTED_MIN_BYTES) with at most kw * C output
# channels runs as one GEMM per filter row over a patch matrix of just the kw taps of each row
# (row_taps): it copies kh times less than im2col, whose small strided pieces cost as much as the GEMM
# at these sizes, for kh - 1 accumulating adds of the smaller output (measured 0.70 to 0.87x of im2col +
# GEMM on 3x3 convolutions of 3 to 128 channels to 8 to 64, unit stride; 1.03 to 1.07x from 4C output
# channels, 1.02 to 1.09x from ROW_TAPS_MAX_OUT: the GEMM dominates; stride 2 a wash: its rows are not
# contiguous)
ROW_TAPS_MAX_OUT = 64


def row_taps_pays(kernel_hw: tuple, strides: tuple, channels: int, out_channels: int) -> bool:
    """Whether row_taps is used for this geometry (see above); the caller has ruled out the large cases."""
    return (strides[0] == 1 and kernel_hw[0] > 1
            and out_channels <= min(ROW_TAPS_MAX_OUT, kernel_hw[1] * channels))


# a channels-first few-channel image (channels_first) is made into patches a plane at a time when its patch
# matrix is small (below SHIFTED_MIN_BYTES) and the output has at most PLANES_MAX_OUT channels and no more
# than patch columns: measured 0.45 to 0.88x of the channels-last copy + im2col + GEMM on 3x3 first
# convolutions of 3 channels to 8 to 24 at 32 to 224 pixels; 1.03x at 64 outputs, where the GEMM
# dominates, and 1.35x for a 7x7 filter at 224 pixels (a 7 MB patch matrix, made in pieces otherwise)
PLANES_MAX_OUT = 32


# BLAS computes a GEMM of fewer than GEMM_MIN_COLUMNS output columns in about the time of that many (float32
# SkylakeX kernels: 8 columns cost as much as 16), so row_taps makes a GEMM row of `group` adjacent output
# pixels of a filter row when the output has few channels: their kw + group - 1 input pixels against the
# taps placed at each pixel's offset (zeros elsewhere), group * O columns. (kw + group - 1) / kw more
# products in group times fewer rows: measured 0.40 to 0.75x on 3x3 convolutions of 8 to 16 channels to 2 to
# 8 at 32x32 and 64x64, but 1.1x from 32 input channels (ROW_GROUP_MAX_CHANNELS)
GEMM_MIN_COLUMNS = 16
ROW_GROUP_MAX_CHANNELS = 16


def row_group(out_w: int, strides: tuple, dilations: tuple, channels: int, out_channels: int) -> int:
    """Output pixels per GEMM row in row_taps: the most up to GEMM_MIN_COLUMNS // O (at most 8) dividing
    the output width, for unit column stride and dilation and at most ROW_GROUP_MAX_CHANNELS channels; else 1."""
    if strides[1] != 1 or dilations[1] != 1 or channels > ROW_GROUP_MAX_CHANNELS or out_channels <= 0:
        return 1
    group = min(8, max(1, GEMM_MIN_COLUMNS // out_channels))
    while out_w % group:
        group -= 1
    return group


def row_weights(taps: np.ndarray, group: int) -> np.ndarray:
    """taps [kh, kw, C, O] as row_taps' per-filter-row weights [kh, (kw + group - 1) * C, group * O]: pixel m
    of a group reads input pixels m .. m + kw - 1 of its row piece, so tap j's weights sit at input m + j,
    output block m (zeros elsewhere: exact zeros in every sum)."""
    kh, kw, c, o = taps.shape
    out = np.zeros((kh, kw + group - 1, c, group, o), taps.dtype)
    for m in range(group):
        out[:, m:m + kw, :, m] = taps
    return out.reshape(kh, (kw + group - 1) * c, group * o)


def row_taps(padded: np.ndarray, weights: np.ndarray, group: int, out_hw: tuple, kernel_hw: tuple, strides: tuple,
             dilations: tuple, acc: np.ndarray, scratch: Scratch, finite: bool = False) -> bool:
    """A convolution of unit row stride of `padded` [N, Hp, Wp, C] into `acc` [N, OH, OW, O] by row_weights
    [kh, L*C, group*O] (L = kw + group - 1 with unit column stride and dilation; else group 1, L = kw):
    rows[t, g] holds the L input pixels of output pixel group g on padded row t (one strided copy of
    [T, OW/group, L*C], T = OH + (kh-1)*dh), so filter row i's patch matrix is the contiguous
    rows[i*dh:][:OH], and each filter row is one GEMM, added up; its [OH * OW/group, group*O] result is acc's
    own layout. False (acc unusable) where a grouped GEMM made a NaN: a zero weight times an inf or NaN
    input the pixel does not read; the caller then runs group 1 (`finite`: the input is known finite, as
    quantized values are, and is not checked)."""
    kh, kw = kernel_hw
    oh, ow = out_hw
    n, c = padded.shape[0], padded.shape[3]
    width, span = ow // group, weights.shape[1] // c
    rows_needed = oh + (kh - 1) * dilations[0]
    sn, sh, sw, sc = padded.strides
    shape = (rows_needed, width, span, c)
    steps = (sh, sw * strides[1] * group, sw * (dilations[1] if group == 1 else 1), sc)
    rows = scratch.get("rows", shape, padded.dtype)
    flat = rows.reshape(rows_needed * width, span * c)
    pixels = oh * width
    tmp = scratch.get("rows_tmp", (pixels, weights.shape[2]), acc.dtype)
    for b in range(n):
        np.copyto(rows, np.ndarray(shape, padded.dtype, padded, b * sn, steps))
        out = acc[b].reshape(pixels, -1)
        np.matmul(flat[:pixels], weights[0], out=out)
        for i in range(1, kh):
            start = i * dilations[0] * width
            np.matmul(flat[start:start + pixels], weights[i], out=tmp)
            out += tmp
    return group == 1 or finite or not np.isnan(acc.max())


def channels_first(x: np.ndarray) -> bool:
    """Whether NHWC `x` is a channels-first image seen channels last (an NCHW input's transpose) with at
    most FEW_PLANES channels: plane_patches reads such an input a channel plane at a time."""
    return x.shape[3] <= FEW_PLANES and x.strides[3] > x.strides[2]


def plane_patches(x: np.ndarray, pads: tuple, strides: tuple, dilations: tuple, kernel_hw: tuple, out_hw: tuple,
                  scratch: Scratch, dtype, zero_point: int = 0, fill: int = 0) -> tuple:
    """The patch matrix of image x [H, W, C] (channels first in memory, see channels_first), transposed:
    ([C*kh*kw, P] with rows in (channel, tap row, tap column) order, the flattened output width Wq), where
    output pixel (r, q) is column r*Wq + q (columns q >= OW of each row are junk) and P = (OH-1)*Wq + OW.

    The padded image is split by stride phase into planes (plane (a, b) holds the padded pixels
    (R*sh + a, Q*sw + b), Wq = ceil(Wp / sw) wide); tap (i, j) reads plane ((i*dh) % sh, (j*dw) % sw) shifted
    by ((i*dh) // sh, (j*dw) // sw), so its patch row is one contiguous piece of that plane: kh*kw long
    copies instead of im2col's pixel-by-pixel pieces of C values. Values are x - zero_point as `dtype`,
    padding is `fill` (as pad_hw)."""
    h, w, c = x.shape
    (pt, pb, pl, pr), (sh, sw), (dh, dw), (kh, kw), (oh, ow) = pads, strides, dilations, kernel_hw, out_hw
    hq, wq = -(-(h + pt + pb) // sh), -(-(w + pl + pr) // sw)
    dtype = np.dtype(dtype)
    # keyed by the geometry: the padding cells, never written, keep the fill the buffer was made with
    planes = filled_buffer(scratch, ("planes", pads, strides, (h, w)), (c, sh, sw, hq, wq), dtype, fill)
    image = x.transpose(2, 0, 1)   # [C, H, W], contiguous planes
    for a in range(sh):
        r0, r1 = -(-(pt - a) // sh), (h - 1 + pt - a) // sh + 1   # plane rows holding image rows
        for b in range(sw):
            q0, q1 = -(-(pl - b) // sw), (w - 1 + pl - b) // sw + 1
            if r0 >= r1 or q0 >= q1:
                continue
            src = image[:, r0 * sh + a - pt::sh, q0 * sw + b - pl::sw][:, :r1 - r0, :q1 - q0]
            dst = planes[:, a, b, r0:r1, q0:q1]
            if zero_point:
                np.subtract(src, dtype.type(zero_point), out=dst, casting="unsafe")
            else:
                np.copyto(dst, src, casting="unsafe")
    flat = planes.reshape(c, sh, sw, hq * wq)
    pixels = (oh - 1) * wq + ow
    cols = scratch.get("plane_cols", (c, kh, kw, pixels), dtype)
    for i in range(kh):
        u, a = divmod(i * dh, sh)
        for j in range(kw):
            v, b = divmod(j * dw, sw)
            start = u * wq + v
            np.copyto(cols[:, i, j], flat[:, a, b, start:start + pixels])
    return cols.reshape(c * kh * kw, pixels), wq


# a convolution whose zero padding would make its input at least this many times larger (dilated filters
# on small inputs: deeplab's atrous pyramid pads 16x16 to 40x40) is computed tap by tap over only the
# outputs each tap reads the input for (clipped_taps). Its float sums are grouped differently from the
# patch GEMM's, as are those of a filter whose padding-only taps are dropped (tap_window): the same
# convolution written as PAD + unpadded convolution (converters/model_folds.py folds one into the
# other) then rounds differently, within the float accumulation bound; the threshold keeps that to
# inputs padded beyond anything a PAD fold usually makes (quantized sums are exact either way)
CLIPPED_MIN_PADDING = 4


def clipped_taps(x: np.ndarray, taps: np.ndarray, pads: tuple, strides: tuple, dilations: tuple,
                 out: np.ndarray, scratch: Scratch) -> np.ndarray:
    """out [N, OH, OW, O] = the convolution of the unpadded x [N, H, W, C] by taps [kh, kw, C, O] with zero
    padding (top, left) = pads: for each tap, one GEMM (batched over output rows) of the rectangle of
    outputs whose input pixel under that tap is inside x, added into those outputs; the products with
    padding, zeros, are never formed."""
    kh, kw, c, o = taps.shape
    n, h, w, _ = x.shape
    _, oh, ow, _ = out.shape
    out.fill(0)
    tmp = scratch.get("clipped", out.shape[1:], out.dtype)
    for i in range(kh):
        r0, r1 = _clip(h, pads[0] - i * dilations[0], strides[0], oh)
        for j in range(kw):
            q0, q1 = _clip(w, pads[1] - j * dilations[1], strides[1], ow)
            if r0 >= r1 or q0 >= q1:
                continue
            rows = slice(r0 * strides[0] - pads[0] + i * dilations[0], None, strides[0])
            cols = slice(q0 * strides[1] - pads[1] + j * dilations[1], None, strides[1])
            part = tmp[:r1 - r0, :q1 - q0]
            for b in range(n):
                np.matmul(x[b, rows, cols][:r1 - r0, :q1 - q0], taps[i, j], out=part)
                out[b, r0:r1, q0:q1] += part
    return out


def _clip(size: int, offset: int, stride: int, out: int) -> tuple:
    """The outputs [first, end) of [0, out) whose input index o * stride - offset lies in [0, size) (the
    end is 0 when there are none)."""
    first = max(0, -(-offset // stride))   # the first o with o * stride >= offset
    end = min(out, (size - 1 + offset) // stride + 1) if size - 1 + offset >= 0 else 0
    return (first, end) if first < end else (0, 0)


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

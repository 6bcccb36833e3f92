"""ROI_ALIGN and ROI_POOLING: fixed-size feature crops of regions (x1, y1, x2, y2).

Both loop over regions (each has its own bin geometry) and vectorize the work
inside a region. Region coordinates are divided by the height / width
strides (image pixels -> feature-map cells) first.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import kernel
from ..common import QUANT_RANGE, from_nhwc, is_quant, round_half_away, to_nhwc
from ..fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from .utils import F32

_WEIGHT_STEP = F32(1.0) / F32(255.0)   # quantized ROI_ALIGN rounds bilinear weights to multiples of 1/255
_BOX_SCALE = F32(0.125)


def _regions(ctx, args):
    """(NHWC feature map as stored, regions in feature cells [n, 4] float32, batch ids, nchw)."""
    nchw = args.nchw
    feature = to_nhwc(args.input.array, nchw)
    rois, batches = args.rois, args.batches.array   # shapes, output size and strides: the spec's rules
    h_stride, w_stride = F32(args.height_stride), F32(args.width_stride)
    scale = np.array([F32(1) / w_stride, F32(1) / h_stride] * 2, F32)
    if is_quant(rois.code):   # the reference scales the stored value first, then applies 0.125
        cells = rois.array.astype(F32) * scale * _BOX_SCALE
    else:
        cells = rois.array.astype(F32) * scale
    _check_regions(ctx, cells, batches, feature.shape)
    return feature, cells, batches, nchw


def _check_regions(ctx, cells, batches, shape):
    batch_count, height, width = shape[:3]
    if np.any((batches < 0) | (batches >= batch_count)):
        ctx.fail(f"batch index out of range [0, {batch_count})")
    if np.any(cells < 0) or np.any(cells[:, 0::2] > width) or np.any(cells[:, 1::2] > height):
        ctx.fail(f"a region lies outside the {height} x {width} feature map")
    if np.any(cells[:, 0] > cells[:, 2]) or np.any(cells[:, 1] > cells[:, 3]):
        ctx.fail("every region needs x1 <= x2 and y1 <= y2")


def _empty_output(ctx, args, feature, nchw):
    shape = (0, int(args.out_height), int(args.out_width), feature.shape[3])
    return [from_nhwc(np.zeros(shape, ctx.out_type(0).dtype), nchw)]


# -- ROI_ALIGN ------------------------------------------------------------------

def _sample_axis(start, extent, bins: int, ratio: int, size: int):
    """Bilinear taps along one axis: (low index, high index, high weight) for bins * samples points."""
    step = extent / F32(bins)
    samples = ratio if ratio > 0 else int(np.ceil(step))
    sub = step / F32(samples)
    pos = (step * np.arange(bins, dtype=F32)[:, None] + start + sub / F32(2)
           + sub * np.arange(samples, dtype=F32)[None, :]).reshape(-1)
    low = np.floor(pos).astype(np.int64)
    frac = (pos - low.astype(F32)).astype(F32)
    edge = low >= size - 1          # samples past the last cell use it alone
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    return low, high, np.where(edge, F32(0), frac), samples


def _bilinear_weights(dy, dx):
    """The four corner weights (ll, lh, hl, hh) of each (y, x) sample pair, float32 [4, ny, nx]."""
    dy, dx = dy[:, None], dx[None, :]
    return np.stack([(F32(1) - dy) * (F32(1) - dx), (F32(1) - dy) * dx, dy * (F32(1) - dx), dy * dx]).astype(F32)


def _corners(image, ys, xs):
    """The four corner pixels of each sample, [4, ny, nx, channels]."""
    (y0, y1), (x0, x1) = ys, xs
    return np.stack([image[y0][:, x0], image[y0][:, x1], image[y1][:, x0], image[y1][:, x1]])


def _align_region(image, cell, out_h, out_w, ratios, quant):
    """Sum of bilinear samples per output bin of one region: [out_h, out_w, C] and the sample count."""
    height, width = image.shape[:2]
    x1, y1, x2, y2 = cell
    y_lo, y_hi, dy, ny = _sample_axis(y1, max(y2 - y1, F32(1)), out_h, ratios[0], height)
    x_lo, x_hi, dx, nx = _sample_axis(x1, max(x2 - x1, F32(1)), out_w, ratios[1], width)
    weights = _bilinear_weights(dy, dx)
    corners = _corners(image, (y_lo, y_hi), (x_lo, x_hi))
    if quant is None:
        values = np.einsum("kyx,kyxc->yxc", weights, corners.astype(F32))
    else:   # integer weights (multiples of 1/255) times zero-point-centred pixels, summed exactly
        q_weights = round_half_away(weights / _WEIGHT_STEP).astype(np.int64)
        values = np.einsum("kyx,kyxc->yxc", q_weights, corners.astype(np.int64) - quant)
    channels = image.shape[2]
    return values.reshape(out_h, ny, out_w, nx, channels).sum(axis=(1, 3)), ny * nx


@kernel(Op.ROI_ALIGN)
def roi_align(ctx):
    args = ctx.args
    feature, cells, batches, nchw = _regions(ctx, args)
    if len(cells) == 0:
        return _empty_output(ctx, args, feature, nchw)
    out_h, out_w = int(args.out_height), int(args.out_width)
    ratios = (int(args.height_ratio), int(args.width_ratio))   # >= 0: the spec's rule
    src, out = args.input, ctx.out_type(0)
    quant = src.zero_point if is_quant(src.code) else None
    results = []
    for cell, b in zip(cells, batches):
        total, count = _align_region(feature[b], cell, out_h, out_w, ratios, quant)
        if quant is None:
            results.append(total / F32(count))
            continue
        real = F32(src.scale) * _WEIGHT_STEP / F32(out.scale) / F32(count)
        m, shift = quantize_multiplier(float(real))
        raw = multiply_by_quantized_multiplier(total, m, shift) + out.zero_point
        results.append(np.clip(raw, *QUANT_RANGE[out.code]))
    return [from_nhwc(np.stack(results).astype(out.dtype), nchw)]


# -- ROI_POOLING ----------------------------------------------------------------

def _bin_masks(start: int, end: int, bins: int, size: int) -> np.ndarray:
    """[bins, size] membership of each cell in each bin; bins are widened to whole cells."""
    extent = F32(max(end - start + 1, 1))
    step = extent / F32(bins)
    k = np.arange(bins, dtype=F32)
    lo = np.minimum(np.floor(step * k + F32(start)), size)
    hi = np.minimum(np.ceil(step * (k + F32(1)) + F32(start)), size)
    cells = np.arange(size)
    return (cells[None, :] >= lo[:, None]) & (cells[None, :] < hi[:, None])


def _pool_region(image, cell, out_h, out_w, empty_value):
    """Max over each bin of one region, [out_h, out_w, C]; empty bins get `empty_value`."""
    height, width = image.shape[:2]
    x1, y1, x2, y2 = (int(v) for v in round_half_away(cell))
    rows = _bin_masks(y1, y2, out_h, height)
    cols = _bin_masks(x1, x2, out_w, width)
    values = image.astype(np.float64)          # exact for every stored type
    # a rectangular max is a max over columns, then over rows
    by_col = np.where(cols[None, :, :, None], values[:, None, :, :], -np.inf).max(axis=2, initial=-np.inf)
    pooled = np.where(rows[:, :, None, None], by_col[None], -np.inf).max(axis=1, initial=-np.inf)
    empty = ~rows.any(axis=1)[:, None] | ~cols.any(axis=1)[None, :]
    return np.where(empty[:, :, None], empty_value, pooled)


@kernel(Op.ROI_POOLING)
def roi_pooling(ctx):
    args = ctx.args
    feature, cells, batches, nchw = _regions(ctx, args)
    if len(cells) == 0:
        return _empty_output(ctx, args, feature, nchw)
    out_h, out_w = int(args.out_height), int(args.out_width)
    src = args.input
    empty_value = src.zero_point if is_quant(src.code) else 0
    pooled = [_pool_region(feature[b], cell, out_h, out_w, empty_value) for cell, b in zip(cells, batches)]
    return [from_nhwc(np.stack(pooled).astype(ctx.out_type(0).dtype), nchw)]

"""HEATMAP_MAX_KEYPOINT: the best location of each keypoint heatmap, refined
to sub-cell precision with a quadratic (2nd order Taylor) fit around the
argmax and mapped into its box. All boxes and keypoints at once.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C, OperationCode as Op

from ...registry import kernel
from ..common import to_nhwc
from .utils import F32, as_float, bad_boxes, store

_MAX_SHIFT = F32(1.5)   # refinements are scaled back to at most 1.5 cells


def _neighbourhood(heatmap, rows, cols):
    """3 x 3 grids [boxes, keypoints, 3, 3] around (rows, cols), mirrored at the borders."""
    size = heatmap.shape[1]
    offsets = np.arange(-1, 2)

    def mirror(i):
        return np.where(i < 0, 1, np.where(i >= size, size - 2, i))
    r = mirror(rows[..., None] + offsets)[..., :, None]
    c = mirror(cols[..., None] + offsets)[..., None, :]
    boxes, keypoints = rows.shape
    b = np.arange(boxes)[:, None, None, None]
    k = np.arange(keypoints)[None, :, None, None]
    return heatmap[b, r, c, k]


def _refine(g, atol, rtol):
    """Solve the quadratic fit of each grid: (dx, dy, refined score); no shift when it is singular."""
    b0 = -(g[..., 1, 2] - g[..., 1, 0]) / F32(2)
    b1 = -(g[..., 2, 1] - g[..., 0, 1]) / F32(2)
    a00 = g[..., 1, 0] - F32(2) * g[..., 1, 1] + g[..., 1, 2]
    a01 = (g[..., 2, 2] - g[..., 2, 0] - g[..., 0, 2] + g[..., 0, 0]) / F32(4)
    a11 = g[..., 0, 1] - F32(2) * g[..., 1, 1] + g[..., 2, 1]
    cross = a00 * a11
    det = cross - a01 * a01
    solvable = np.abs(det) >= atol + rtol * cross
    safe = np.where(solvable, det, F32(1))
    dx = np.where(solvable, (a11 * b0 - a01 * b1) / safe, F32(0))
    dy = np.where(solvable, (a00 * b1 - a01 * b0) / safe, F32(0))
    largest = np.maximum(np.abs(dx), np.abs(dy))
    shrink = np.where(largest > _MAX_SHIFT, _MAX_SHIFT / np.where(largest > 0, largest, F32(1)), F32(1))
    dx, dy = dx * shrink, dy * shrink
    score = g[..., 1, 1] - b0 * dx - b1 * dy + ((a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) / F32(2)
    return dx, dy, np.where(solvable, score, g[..., 1, 1])


@kernel(Op.HEATMAP_MAX_KEYPOINT)
def heatmap_max_keypoint(ctx):
    args = ctx.args
    nchw = args.nchw
    heatmap = to_nhwc(as_float(args.heatmap), nchw)
    boxes = as_float(args.boxes)
    count, size, width, keypoints = heatmap.shape   # square, at least 2 x 2, boxes [count, 4]: the spec's rules
    if bad_boxes(boxes, strict=False):
        ctx.fail("every box needs x1 <= x2 and y1 <= y2")
    flat = heatmap.reshape(count, size * size, keypoints)
    best = np.argmax(flat, axis=1)                                   # first maximum, like the reference
    rows, cols = best // size, best % size
    tol = F32(1e-3) if args.heatmap.code == C.TENSOR_FLOAT16 else F32(1e-5)
    dx, dy, score = _refine(_neighbourhood(heatmap, rows, cols), tol, tol)
    x = (cols.astype(F32) + dx + F32(0.5)) / F32(size) * (boxes[:, 2:3] - boxes[:, 0:1]) + boxes[:, 0:1]
    y = (rows.astype(F32) + dy + F32(0.5)) / F32(size) * (boxes[:, 3:4] - boxes[:, 1:2]) + boxes[:, 1:2]
    return [store(score, ctx.out_type(0)), store(np.stack([x, y], axis=-1), ctx.out_type(1))]

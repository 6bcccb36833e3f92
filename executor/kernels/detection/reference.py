"""AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS.

Boxes are corner encoded (x1, y1, x2, y2). Everything is computed in float32
like the Android reference driver; quantized scores are requantized with the
output's scale and QUANT16 boxes use the fixed scale 0.125.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import kernel
from ..common import to_nhwc
from .utils import (F32, as_float, bad_boxes, batch_runs, hard_suppress, iou_one_to_many, nms,
                              per_class_nms, store)


def transform_boxes(rois: np.ndarray, deltas: np.ndarray, image_hw: np.ndarray) -> np.ndarray:
    """Apply (dx, dy, dw, dh) deltas [n, classes, 4] to rois [n, 4]; clip to image (height, width) [n, 2]."""
    w = rois[:, 2] - rois[:, 0]
    h = rois[:, 3] - rois[:, 1]
    cx = (rois[:, 0] + rois[:, 2]) / F32(2)
    cy = (rois[:, 1] + rois[:, 3]) / F32(2)
    dx, dy, dw, dh = np.moveaxis(deltas, -1, 0)
    new_w = np.exp(dw) * w[:, None]
    new_h = np.exp(dh) * h[:, None]
    new_cx = cx[:, None] + dx * w[:, None]
    new_cy = cy[:, None] + dy * h[:, None]
    img_h, img_w = image_hw[:, 0:1], image_hw[:, 1:2]
    out = np.stack([np.minimum(np.maximum(new_cx - new_w / F32(2), F32(0)), img_w),
                    np.minimum(np.maximum(new_cy - new_h / F32(2), F32(0)), img_h),
                    np.minimum(np.maximum(new_cx + new_w / F32(2), F32(0)), img_w),
                    np.minimum(np.maximum(new_cy + new_h / F32(2), F32(0)), img_h)], axis=-1)
    return out.astype(F32)


@kernel(Op.AXIS_ALIGNED_BBOX_TRANSFORM)
def axis_aligned_bbox_transform(ctx):
    args = ctx.args
    rois, deltas = as_float(args.rois), as_float(args.deltas)
    batches, image = args.batches.array, as_float(args.image_info)
    n = rois.shape[0]   # the shapes ([n, 4], [n, 4 * classes], [n], [batches, 2]) are the spec's rules
    if np.any((batches < 0) | (batches >= image.shape[0])):
        ctx.fail(f"batch index out of range [0, {image.shape[0]})")
    if bad_boxes(rois, strict=True):
        ctx.fail("every roi needs x1 < x2 and y1 < y2")
    classes = deltas.shape[1] // 4
    out = transform_boxes(rois, deltas.reshape(n, classes, 4), image[batches]).reshape(n, 4 * classes)
    return [store(out, ctx.out_type(0))]


# -- BOX_WITH_NMS_LIMIT ---------------------------------------------------------

def _soft_kernel(ctx, kind: int, iou_threshold: np.float32, sigma: np.float32):
    """Score multiplier as a function of IoU: hard (0), linear (1) or gaussian (2)."""
    if kind == 0:
        return lambda iou: np.where(iou < iou_threshold, F32(1), F32(0))
    if kind == 1:
        return lambda iou: np.where(iou < iou_threshold, F32(1), F32(1) - iou)
    if kind == 2:
        return lambda iou: np.exp(F32(-1) * iou * iou / sigma)
    ctx.fail(f"unsupported NMS kernel {kind} (expected 0 hard, 1 linear, 2 gaussian)")


def _soft_suppress(scores, boxes, weight, nms_score_threshold):
    """Rescale the later candidates' scores by weight(IoU) and drop those under the threshold."""
    def suppress(best, rest):
        scores[rest] *= weight(iou_one_to_many(boxes[best], boxes[rest]))
        return scores[rest] < nms_score_threshold
    return suppress


@kernel(Op.BOX_WITH_NMS_LIMIT)
def box_with_nms_limit(ctx):
    args = ctx.args
    scores_in, rois_in, batches = args.scores, args.rois, args.batches.array
    n, classes = scores_in.shape   # rois [n, 4 * classes], batches [n], classes >= 2: the spec's rules
    score_threshold, max_detections = F32(args.score_threshold), int(args.max_detections)
    weight = _soft_kernel(ctx, int(args.nms_kernel), F32(args.iou_threshold), F32(args.sigma))
    scores = as_float(scores_in).reshape(-1)          # rescaled in place by soft NMS
    boxes = as_float(rois_in).reshape(-1, 4)          # one box per (roi, class)
    if bad_boxes(boxes, strict=False):
        ctx.fail("every roi needs x1 <= x2 and y1 <= y2")
    nms_score_threshold = F32(args.nms_score_threshold)
    selected, out_batches = [], []
    for batch, start, stop in batch_runs(batches):
        rows = slice(start * classes, stop * classes)   # views: soft NMS rescales `scores` itself
        suppress = _soft_suppress(scores[rows], boxes[rows], weight, nms_score_threshold)
        picked = per_class_nms(scores[rows], boxes[rows], classes, score_threshold, max_detections,
                               max_detections, suppress) + rows.start
        # the output lists each batch by class, then by score
        picked = picked[np.lexsort((-scores[picked], picked % classes))]
        selected.append(picked)
        out_batches.append(np.full(len(picked), batch, np.int32))
    sel = np.concatenate(selected) if selected else np.zeros(0, np.int64)
    return [store(scores[sel], ctx.out_type(0)),
            rois_in.array.reshape(-1, 4)[sel],
            (sel % classes).astype(np.int32),
            np.concatenate(out_batches) if out_batches else np.zeros(0, np.int32)]


# -- GENERATE_PROPOSALS -----------------------------------------------------------

def _anchor_grid(anchors: np.ndarray, height: int, width: int, h_stride, w_stride) -> np.ndarray:
    """Anchors shifted to every feature-map position: [height * width * anchors, 4] in (h, w, a) order."""
    ys = np.arange(height, dtype=F32) * h_stride
    xs = np.arange(width, dtype=F32) * w_stride
    shift = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], xs[None, :], ys[:, None]), axis=-1)
    return (shift[:, :, None, :] + anchors[None, None]).reshape(-1, 4).astype(F32)


def _keep_large(boxes: np.ndarray, image_hw: np.ndarray, min_size) -> np.ndarray:
    """Boxes wider and taller than min_size whose centers lie inside the image."""
    w = boxes[:, 2] - boxes[:, 0]
    h = boxes[:, 3] - boxes[:, 1]
    cx = boxes[:, 0] + w / F32(2)
    cy = boxes[:, 1] + h / F32(2)
    return (w > min_size) & (h > min_size) & (cx < image_hw[1]) & (cy < image_hw[0])


@kernel(Op.GENERATE_PROPOSALS)
def generate_proposals(ctx):
    args = ctx.args
    nchw = args.nchw
    scores = to_nhwc(as_float(args.scores), nchw)
    deltas = to_nhwc(as_float(args.deltas), nchw)
    anchors, image = as_float(args.anchors), as_float(args.image_info)
    batches, height, width, num_anchors = scores.shape   # the other shapes fit: the spec's rule
    pre_nms, post_nms = int(args.pre_nms_max), int(args.post_nms_max)
    iou_threshold, min_size = F32(args.iou_threshold), F32(args.min_size)
    grid = _anchor_grid(anchors, height, width, F32(args.height_stride), F32(args.width_stride))
    if batches and bad_boxes(grid, strict=True):
        ctx.fail("every anchor needs x1 < x2 and y1 < y2")
    out_scores, out_rois, out_batches = [], [], []
    for b in range(batches):
        boxes = transform_boxes(grid, deltas[b].reshape(-1, 1, 4), image[b:b + 1])[:, 0]
        score = scores[b].reshape(-1)
        order = np.arange(len(score))
        if 0 < pre_nms < len(order):
            order = np.argsort(-score, kind="stable")[:pre_nms]
        order = order[_keep_large(boxes[order], image[b], min_size)]
        kept = nms(score, boxes, order, post_nms, hard_suppress(boxes, iou_threshold))
        out_scores.append(score[kept])
        out_rois.append(boxes[kept])
        out_batches.append(np.full(len(kept), b, np.int32))
    if not batches:
        return [store(np.zeros(0, F32), ctx.out_type(0)), store(np.zeros((0, 4), F32), ctx.out_type(1)),
                np.zeros(0, np.int32)]
    return [store(np.concatenate(out_scores), ctx.out_type(0)), store(np.concatenate(out_rois), ctx.out_type(1)),
            np.concatenate(out_batches)]

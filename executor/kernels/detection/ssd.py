"""DETECTION_POSTPROCESSING: TFLite-style SSD post-processing.

Anchors and decoded boxes are center-size / corner encoded as (y, x) first:
anchors (y_center, x_center, h, w), deltas (ty, tx, th, tw), output boxes
(y1, x1, y2, x2). Class 0 is the background and never detected.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import kernel
from .utils import F32, as_float, hard_suppress, nms, per_class_nms, store


def decode_boxes(deltas: np.ndarray, anchors: np.ndarray, scales) -> np.ndarray:
    """Center-size deltas [anchors, >= 4] against anchors [anchors, 4] -> corner boxes (y1, x1, y2, x2)."""
    scale_y, scale_x, scale_h, scale_w = scales
    y = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / scale_y
    x = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / scale_x
    half_h = anchors[:, 2] * np.exp(deltas[:, 2] / scale_h) * F32(0.5)
    half_w = anchors[:, 3] * np.exp(deltas[:, 3] / scale_w) * F32(0.5)
    return np.stack([y - half_h, x - half_w, y + half_h, x + half_w], axis=-1).astype(F32)


def _regular(scores, boxes, p):
    """Per-class NMS; each detection is one (anchor, class) pair."""
    classes = scores.shape[1]
    flat = scores.reshape(-1)
    pair_boxes = np.repeat(boxes, classes, axis=0)   # index = anchor * classes + class
    picked = per_class_nms(flat, pair_boxes, classes, p["score_threshold"], p["per_class"], p["max_detections"],
                           hard_suppress(pair_boxes, p["iou_threshold"]))
    return flat[picked], boxes[picked // classes], picked % classes


def _fast(scores, boxes, p):
    """One NMS over each anchor's best foreground score; report its top classes."""
    foreground = scores[:, 1:]
    best = foreground.max(axis=1)
    candidates = np.flatnonzero(best > p["score_threshold"])
    kept = nms(best, boxes, candidates, p["max_detections"], hard_suppress(boxes, p["iou_threshold"]))
    top = min(scores.shape[1] - 1, p["per_detection"])
    order = np.argsort(-foreground[kept], axis=1, kind="stable")[:, :top]
    out_scores = np.take_along_axis(foreground[kept], order, axis=1)
    return out_scores.reshape(-1), np.repeat(boxes[kept], top, axis=0), (order + 1).reshape(-1)


def _params(ctx):
    """The scalar inputs (the spec checks them as the reference's prepare step does)."""
    a = ctx.args
    p = dict(scales=tuple(F32(s) for s in (a.scale_y, a.scale_x, a.scale_h, a.scale_w)),
             regular=bool(a.use_regular_nms), max_detections=int(a.max_detections),
             per_detection=int(a.max_classes_per_detection), per_class=int(a.max_detections_per_class),
             score_threshold=F32(a.score_threshold), iou_threshold=F32(a.iou_threshold),
             label_offset=0 if a.background_in_label else 1)
    return p   # the spec checks them (positive scales and counts, non-negative thresholds)


@kernel(Op.DETECTION_POSTPROCESSING)
def detection_postprocessing(ctx):
    args = ctx.args
    scores, deltas, anchors = as_float(args.scores), as_float(args.deltas), as_float(args.anchors)
    batches, num_anchors, classes = scores.shape   # deltas, anchors and classes >= 2: the spec's rules
    p = _params(ctx)
    slots = p["max_detections"] * (1 if p["regular"] else p["per_detection"])
    out_scores = np.zeros((batches, slots), F32)
    out_boxes = np.zeros((batches, slots, 4), F32)
    out_classes = np.zeros((batches, slots), np.int32)
    counts = np.zeros(batches, np.int32)
    for b in range(batches):
        boxes = decode_boxes(deltas[b], anchors, p["scales"])
        s, bx, c = (_regular if p["regular"] else _fast)(scores[b], boxes, p)
        k = len(s)
        out_scores[b, :k], out_boxes[b, :k], out_classes[b, :k] = s, bx, c - p["label_offset"]
        counts[b] = k
    return [store(out_scores, ctx.out_type(0)), store(out_boxes, ctx.out_type(1)), out_classes, counts]

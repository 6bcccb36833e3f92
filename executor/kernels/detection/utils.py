"""Helpers shared by the detection kernels: float views of (quantized) boxes and
scores, the reference rounding back to storage types, IoU and the in-place
NMS selection of the Android reference driver.

The Android CPU driver computes every detection operation in float32 (float16
and quantized operands are converted on the way in and out), so these kernels
do the same. Nothing here registers a kernel.
"""
from __future__ import annotations

import numpy as np

from ..common import QUANT_RANGE, is_quant, round_half_away, storage_dtype

F32 = np.float32


def as_float(value) -> np.ndarray:
    """float32 copy of a tensor Value: real values of quantized data, widened float16."""
    arr = value.array
    if is_quant(value.code):
        return (arr.astype(F32) - F32(value.zero_point)) * F32(value.scale)
    return arr.astype(F32)


def store(x: np.ndarray, otype) -> np.ndarray:
    """float32 results -> the output's storage; quantized as round(x / scale + zero_point), saturated."""
    if not is_quant(otype.code):
        return np.asarray(x).astype(otype.dtype)
    lo, hi = QUANT_RANGE[otype.code]
    q = round_half_away(np.asarray(x, dtype=F32) / F32(otype.scale) + F32(otype.zero_point))
    return np.clip(q, lo, hi).astype(storage_dtype(otype.code))


def iou_one_to_many(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over union of one corner box with each of `boxes` ([k, 4], float32)."""
    area1 = (box[2] - box[0]) * (box[3] - box[1])
    area2 = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    w = np.maximum(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), F32(0))
    h = np.maximum(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), F32(0))
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / (area1 + area2 - inter)


def _compact(order: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The survivors of the reference's swap-with-last removal, in the order it leaves them.

    Walking left to right, a removed entry is swapped with the last live one
    (which is checked again), so the first `k` kept entries stay in place and
    the holes among them are filled by the later kept entries, last first.
    """
    k = int(keep.sum())
    front = order[:k].copy()
    holes = np.flatnonzero(~keep[:k])
    tail = np.flatnonzero(keep)
    front[holes] = order[tail[tail >= k][::-1]]
    return front


def nms(scores: np.ndarray, boxes: np.ndarray, candidates, max_keep: int, suppress) -> np.ndarray:
    """Greedy NMS over `candidates` (indexes into scores / boxes) with the reference's tie order.

    Each round takes the first highest-scoring live candidate, then calls
    `suppress(best, rest) -> bool mask` for the later ones (it may rescale
    `scores[rest]` in place, for soft NMS) and drops the masked ones. At most
    `max_keep` rounds (all when negative). Returns the kept indexes in order.
    """
    order = np.asarray(candidates, dtype=np.int64)
    limit = len(order) if max_keep < 0 else max_keep
    kept = []
    while len(order) and len(kept) < limit:
        first = int(np.argmax(scores[order]))
        order[[0, first]] = order[[first, 0]]
        best, rest = int(order[0]), order[1:]
        kept.append(best)
        order = _compact(rest, ~suppress(best, rest))
    return np.asarray(kept, dtype=np.int64)


def hard_suppress(boxes: np.ndarray, iou_threshold: float):
    """Plain NMS: drop boxes overlapping the kept one by IoU >= threshold."""
    thr = F32(iou_threshold)
    return lambda best, rest: iou_one_to_many(boxes[best], boxes[rest]) >= thr


def batch_runs(batches: np.ndarray):
    """(batch id, start, stop) of each run of equal consecutive batch ids."""
    if len(batches) == 0:
        return []
    starts = np.flatnonzero(np.r_[True, batches[1:] != batches[:-1]])
    stops = np.r_[starts[1:], len(batches)]
    return [(int(batches[s]), int(s), int(e)) for s, e in zip(starts, stops)]


def bad_boxes(boxes: np.ndarray, strict: bool) -> bool:
    """True when some corner box has x2 < x1 or y2 < y1 (<= when strict)."""
    if strict:
        return bool(np.any(boxes[:, 0] >= boxes[:, 2]) or np.any(boxes[:, 1] >= boxes[:, 3]))
    return bool(np.any(boxes[:, 0] > boxes[:, 2]) or np.any(boxes[:, 1] > boxes[:, 3]))


def per_class_nms(scores: np.ndarray, boxes: np.ndarray, num_classes: int, score_threshold,
                  max_per_class: int, max_total: int, suppress) -> np.ndarray:
    """NMS per foreground class (class 0 is background), then the best `max_total` overall.

    `scores` is [rois, classes] flattened (index = roi * classes + class) and
    `boxes` holds one box per such index. Returns indexes sorted by score,
    highest first (ties keep class order).
    """
    per_roi = scores.reshape(-1, num_classes)
    picked = []
    for c in range(1, num_classes):
        candidates = np.flatnonzero(per_roi[:, c] > score_threshold) * num_classes + c
        picked.append(nms(scores, boxes, candidates, max_per_class, suppress))
    picked = np.concatenate(picked) if picked else np.zeros(0, np.int64)
    picked = picked[np.argsort(-scores[picked], kind="stable")]
    return picked if max_total < 0 else picked[:max_total]

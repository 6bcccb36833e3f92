"""Hand-checked cases for the detection and region operations (AXIS_ALIGNED_BBOX_TRANSFORM,
BOX_WITH_NMS_LIMIT, DETECTION_POSTPROCESSING, GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT,
ROI_ALIGN, ROI_POOLING), built through the public nnapi API.

Expected values are worked out by hand (the arithmetic is in the comments) or
by small closed formulas in the test, never by the kernels under test.
"""
import math

import numpy as np
import pytest

from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run

F32, F16 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16
Q8, Q16 = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT16_ASYMM
I32 = C.TENSOR_INT32


def f32(v):
    return (OperandType(C.FLOAT32), v)


def i32(v):
    return (OperandType(C.INT32), v)


def flag(v):
    return (OperandType(C.BOOL), v)


def tensor(code, dims, value, scale=0.0, zp=0):
    return (OperandType(code, dims, scale, zp), value)


def _model(code, args, outs):
    """args: (OperandType, value); tensors are model inputs fed `value` (zeros when None), scalars
    constants. outs: OperandTypes. Returns the unfinished model and its input arrays."""
    feeds = [np.asarray(np.zeros(t.dimensions) if v is None else v, dtype=t.dtype).reshape(t.dimensions)
             for t, v in args if t.dimensions]
    return build(code, [(t, None if t.dimensions else v) for t, v in args], outs, finish=False), feeds


def _run(code, args, outs):
    """Build and run one operation; outputs shaped as the execution reports them."""
    model, feeds = _model(code, args, outs)
    return run(model, *feeds)


def _iou(a, b):
    inter = max(min(a[2], b[2]) - max(a[0], b[0]), 0) * max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1])
    return inter / (area - inter)


# -- AXIS_ALIGNED_BBOX_TRANSFORM ----------------------------------------------------

def test_bbox_transform_shifts_scales_and_clips():
    # roi (0, 0, 10, 10): w = h = 10, center (5, 5)
    # class 0: dx = 0.1 -> center x 6 -> (1, 0, 11, 10)
    # class 1: dw = ln 2 -> width 20 -> (-5, 0, 15, 10), x1 clipped to 0
    # class 2: dy = 1 -> center y 15 -> (0, 10, 10, 20), y2 clipped to image height 18
    deltas = [0.1, 0, 0, 0, 0, 0, math.log(2), 0, 0, 1, 0, 0]
    (out,) = _run(Op.AXIS_ALIGNED_BBOX_TRANSFORM,
                  [tensor(F32, (1, 4), [0, 0, 10, 10]), tensor(F32, (1, 12), deltas),
                   tensor(I32, (1,), [0]), tensor(F32, (1, 2), [18, 100])],
                  [OperandType(F32, (1, 12))])
    np.testing.assert_allclose(out, [[1, 0, 11, 10, 0, 0, 15, 10, 0, 10, 10, 18]], rtol=1e-6, atol=1e-5)


def test_bbox_transform_quantized_boxes_use_eighths():
    # rois 80/8 = 10 wide; delta (129 - 128) * 0.1 = 0.1 -> (1, 0, 11, 10) -> stored x8
    (out,) = _run(Op.AXIS_ALIGNED_BBOX_TRANSFORM,
                  [tensor(Q16, (1, 4), [0, 0, 80, 80], 0.125), tensor(Q8, (1, 4), [129, 128, 128, 128], 0.1, 128),
                   tensor(I32, (1,), [0]), tensor(Q16, (1, 2), [800, 800], 0.125)],
                  [OperandType(Q16, (1, 4), 0.125, 0)])
    np.testing.assert_array_equal(out, [[8, 0, 88, 80]])


# -- BOX_WITH_NMS_LIMIT -------------------------------------------------------------

_BOXES = [[0, 0, 10, 10], [1, 0, 11, 10], [20, 20, 30, 30]]   # boxes 0 and 1 overlap by IoU 90/110


def _nms(kernel, nms_score_threshold):
    rois = [[0, 0, 0, 0] + b for b in _BOXES]        # class 0 (background) boxes are ignored
    scores = [[0.0, 0.9], [0.0, 0.8], [0.0, 0.7]]
    return _run(Op.BOX_WITH_NMS_LIMIT,
                [tensor(F32, (3, 2), scores), tensor(F32, (3, 8), rois), tensor(I32, (3,), [0, 0, 0]),
                 f32(0.1), i32(-1), i32(kernel), f32(0.5), f32(1.0), f32(nms_score_threshold)],
                [OperandType(F32, (0,)), OperandType(F32, (0, 4)), OperandType(I32, (0,)), OperandType(I32, (0,))])


def test_box_with_nms_hard_drops_the_overlapping_box():
    scores, boxes, classes, batches = _nms(kernel=0, nms_score_threshold=0.1)
    np.testing.assert_allclose(scores, [0.9, 0.7], rtol=1e-6)
    np.testing.assert_array_equal(boxes, [_BOXES[0], _BOXES[2]])
    np.testing.assert_array_equal(classes, [1, 1])
    np.testing.assert_array_equal(batches, [0, 0])


def test_box_with_nms_linear_rescales_instead():
    scores, boxes, classes, _ = _nms(kernel=1, nms_score_threshold=0.1)
    decayed = 0.8 * (1 - _iou(_BOXES[0], _BOXES[1]))   # 0.145 > 0.1: kept, and ranked last
    np.testing.assert_allclose(scores, [0.9, 0.7, decayed], rtol=1e-5)
    np.testing.assert_array_equal(boxes, [_BOXES[0], _BOXES[2], _BOXES[1]])
    np.testing.assert_array_equal(classes, [1, 1, 1])


def test_box_with_nms_gaussian_decays_by_overlap():
    # sigma 1: box 1 decays to 0.8 * exp(-iou^2) once box 0 is kept; box 2 does not overlap either
    scores, boxes, _, _ = _nms(kernel=2, nms_score_threshold=0.1)
    decayed = 0.8 * math.exp(-_iou(_BOXES[0], _BOXES[1]) ** 2)
    np.testing.assert_allclose(scores, [0.9, 0.7, decayed], rtol=1e-5)
    np.testing.assert_array_equal(boxes, [_BOXES[0], _BOXES[2], _BOXES[1]])


# -- DETECTION_POSTPROCESSING -------------------------------------------------------

def test_detection_postprocessing_fast_nms():
    # zero deltas decode each anchor (yc, xc, h, w) to itself: (0, 0, 10, 10) and (1, 0, 11, 10),
    # IoU 90/110 >= 0.5, so only the better anchor 0 survives, with class 1 -> label 0
    anchors = [[5, 5, 10, 10], [6, 5, 10, 10]]
    outs = _run(Op.DETECTION_POSTPROCESSING,
                [tensor(F32, (1, 2, 2), [[0, 0.9], [0, 0.8]]), tensor(F32, (1, 2, 4), np.zeros((2, 4))),
                 tensor(F32, (2, 4), anchors), f32(10), f32(10), f32(5), f32(5), flag(False),
                 i32(2), i32(1), i32(1), f32(0.0), f32(0.5), flag(False)],
                [OperandType(F32, (1, 2)), OperandType(F32, (1, 2, 4)), OperandType(I32, (1, 2)),
                 OperandType(I32, (1,))])
    scores, boxes, classes, count = outs
    np.testing.assert_allclose(scores, [[0.9, 0]], rtol=1e-6)
    np.testing.assert_allclose(boxes, [[[0, 0, 10, 10], [0, 0, 0, 0]]], atol=1e-5)
    np.testing.assert_array_equal(classes, [[0, 0]])
    np.testing.assert_array_equal(count, [1])


# -- GENERATE_PROPOSALS -------------------------------------------------------------

def test_generate_proposals_orders_by_score():
    # one feature cell, two anchors, zero deltas: the proposals are the anchors, best first
    outs = _run(Op.GENERATE_PROPOSALS,
                [tensor(F32, (1, 1, 1, 2), [0.5, 0.9]), tensor(F32, (1, 1, 1, 8), np.zeros(8)),
                 tensor(F32, (2, 4), [[0, 0, 10, 10], [20, 20, 40, 40]]), tensor(F32, (1, 2), [100, 100]),
                 f32(1), f32(1), i32(-1), i32(-1), f32(0.5), f32(1), flag(False)],
                [OperandType(F32, (0,)), OperandType(F32, (0, 4)), OperandType(I32, (0,))])
    scores, rois, batches = outs
    np.testing.assert_allclose(scores, [0.9, 0.5])
    np.testing.assert_allclose(rois, [[20, 20, 40, 40], [0, 0, 10, 10]])
    np.testing.assert_array_equal(batches, [0, 0])


# -- HEATMAP_MAX_KEYPOINT -----------------------------------------------------------

def test_heatmap_refines_the_peak():
    # peak 4 at the centre, right neighbour higher than the left one:
    # b = (0.5, 0), A = [[-5, 0], [0, -6]] -> dx = 0.1, dy = 0,
    # score = 4 + 0.5 * 0.1 - 5 * 0.01 / 2 = 4.025; x = (1 + 0.1 + 0.5) / 3 * 30 = 16, y = 1.5 / 3 * 60 = 30
    heat = np.array([[0, 1, 0], [1, 4, 2], [0, 1, 0]], np.float32).reshape(1, 3, 3, 1)
    score, keypoint = _run(Op.HEATMAP_MAX_KEYPOINT,
                           [tensor(F32, (1, 3, 3, 1), heat), tensor(F32, (1, 4), [0, 0, 30, 60]), flag(False)],
                           [OperandType(F32, (1, 1)), OperandType(F32, (1, 1, 2))])
    np.testing.assert_allclose(score, [[4.025]], rtol=1e-6)
    np.testing.assert_allclose(keypoint, [[[16, 30]]], rtol=1e-6)


# -- ROI_ALIGN / ROI_POOLING --------------------------------------------------------

def _roi_align(image, code=F32, ratio=2, batch=0):
    stride = (OperandType(C.FLOAT16 if code == F16 else C.FLOAT32), 1)
    return _run(Op.ROI_ALIGN,
                [tensor(code, (1, 2, 2, 1), image), tensor(code, (1, 4), [0, 0, 2, 2]), tensor(I32, (1,), [batch]),
                 i32(1), i32(1), stride, stride, i32(ratio), i32(ratio), flag(False)],
                [OperandType(code, (1, 1, 1, 1))])


def test_roi_align_averages_bilinear_samples():
    # samples at 0.5 and 1.5 per axis; past the last cell a sample uses that cell alone:
    # (0.5, 0.5) -> 2.5, (y 0.5, x 1.5) -> (2 + 4) / 2 = 3, (1.5, 0.5) -> (3 + 4) / 2 = 3.5, (1.5, 1.5) -> 4
    (out,) = _roi_align([1, 2, 3, 4])
    np.testing.assert_allclose(out.reshape(-1), [(2.5 + 3 + 3.5 + 4) / 4], rtol=1e-6)


def test_roi_align_float16():
    (out,) = _roi_align(np.array([1, 2, 3, 4], np.float16), code=F16)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.reshape(-1), [3.25], rtol=1e-3)


def test_roi_align_bad_batch_index_fails_at_run_time():
    with pytest.raises(NnapiError) as err:
        _roi_align([1, 2, 3, 4], batch=3)
    assert err.value.code == ResultCode.OP_FAILED
    assert "batch index" in err.value.message


def test_roi_pooling_takes_bin_maxima():
    # roi (0, 0, 3, 3) covers 4 x 4 cells; 2 x 2 bins of 2 x 2 cells each
    image = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    (out,) = _run(Op.ROI_POOLING,
                  [tensor(F32, (1, 4, 4, 1), image), tensor(F32, (1, 4), [0, 0, 3, 3]), tensor(I32, (1,), [0]),
                   i32(2), i32(2), f32(1), f32(1), flag(False)],
                  [OperandType(F32, (1, 2, 2, 1))])
    np.testing.assert_array_equal(out.reshape(2, 2), [[5, 7], [13, 15]])


# -- specs ------------------------------------------------------------------------------

def test_validate_reports_too_low_feature_level():
    model, _ = _model(Op.ROI_POOLING,
                      [tensor(F32, (1, 4, 4, 1), None), tensor(F32, (1, 4), None), tensor(I32, (1,), None),
                       i32(2), i32(2), f32(1), f32(1), flag(False)],
                      [OperandType(F32, (1, 2, 2, 1))])
    assert model.validate(feature_level=3) == []
    problems = model.validate(feature_level=2)
    assert any("needs feature level 3" in p for p in problems), problems
    assert model.min_feature_level() == 3


def test_finish_rejects_integer_rois():
    model, _ = _model(Op.ROI_ALIGN,
                      [tensor(F32, (1, 2, 2, 1), None), tensor(I32, (1, 4), None), tensor(I32, (1,), None),
                       i32(1), i32(1), f32(1), f32(1), i32(2), i32(2), flag(False)],
                      [OperandType(F32, (1, 1, 1, 1))])
    with pytest.raises(NnapiError) as err:
        model.finish()
    assert err.value.code == ResultCode.BAD_DATA


def test_finish_rejects_quantized_boxes_not_in_eighths():
    model, _ = _model(Op.ROI_ALIGN,
                      [tensor(Q8, (1, 2, 2, 1), None, 0.5, 0), tensor(Q16, (1, 4), None, 0.25),
                       tensor(I32, (1,), None), i32(1), i32(1), f32(1), f32(1), i32(2), i32(2), flag(False)],
                      [OperandType(Q8, (1, 1, 1, 1), 0.5, 0)])
    with pytest.raises(NnapiError) as err:
        model.finish()
    assert err.value.code == ResultCode.BAD_DATA
    assert "0.125" in err.value.message

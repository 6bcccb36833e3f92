"""MEAN, REDUCE_*, ARGMAX/ARGMIN and TOPK_V2 on small hand-computed cases, through the public API."""
import numpy as np
import pytest

from nnapi import NnapiError, OperandCode as C, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run, scalar, t


def axes(*values):
    return (t(C.TENSOR_INT32, [len(values)]), list(values))


def test_mean_float_duplicate_and_negative_axes():
    x = np.array([[1, 2, 6], [0, -3, 9]], dtype=np.float32)
    m = build(Op.MEAN, [(t(C.TENSOR_FLOAT32, [2, 3]), None), axes(1, -1), scalar(C.INT32, 0)],
              [t(C.TENSOR_FLOAT32, [2])])
    np.testing.assert_allclose(run(m, x)[0], [3.0, 2.0])
    m = build(Op.MEAN, [(t(C.TENSOR_FLOAT32, [2, 3]), None), axes(0), scalar(C.INT32, 1)],
              [t(C.TENSOR_FLOAT32, [1, 3])])
    np.testing.assert_allclose(run(m, x)[0], [[0.5, -0.5, 7.5]])


def test_mean_quant8_same_scale_truncates_like_android():
    x = np.array([[1, 2], [4, 4]], dtype=np.uint8)
    q = t(C.TENSOR_QUANT8_ASYMM, [2, 2], 0.5, 0)
    m = build(Op.MEAN, [(q, None), axes(1), scalar(C.INT32, 0)], [t(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 0)])
    np.testing.assert_array_equal(run(m, x)[0], [1, 4])  # (1+2)/2 = 1.5 -> 1


def test_mean_quant8_requantizes_to_a_different_output_scale():
    x = np.array([[1, 2], [4, 4]], dtype=np.uint8)
    m = build(Op.MEAN, [(t(C.TENSOR_QUANT8_ASYMM, [2, 2], 1.0, 0), None), axes(1), scalar(C.INT32, 0)],
              [t(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 10)])
    # real means 1.5 and 4.0 -> 1.5 / 0.5 + 10 = 13, 4 / 0.5 + 10 = 18
    np.testing.assert_array_equal(run(m, x)[0], [13, 18])


def test_reduce_max_signed_and_reduce_all_over_every_axis():
    x = np.array([[-5, 7], [3, -128]], dtype=np.int8)
    q = t(C.TENSOR_QUANT8_ASYMM_SIGNED, [2, 2], 0.25, -1)
    m = build(Op.REDUCE_MAX, [(q, None), axes(0, 1), scalar(C.BOOL, False)],
              [t(C.TENSOR_QUANT8_ASYMM_SIGNED, [1], 0.25, -1)])
    np.testing.assert_array_equal(run(m, x)[0], [7])
    b = np.array([[True, False], [True, True]])
    m = build(Op.REDUCE_ALL, [(t(C.TENSOR_BOOL8, [2, 2]), None), axes(-1), scalar(C.BOOL, True)],
              [t(C.TENSOR_BOOL8, [2, 1])])
    np.testing.assert_array_equal(run(m, b)[0], [[False], [True]])


def test_reduce_sum_float16_and_prod_min():
    x = np.array([[1.5, 2.0, -1.0], [0.5, 4.0, 2.0]], dtype=np.float16)
    f16 = t(C.TENSOR_FLOAT16, [2, 3])
    m = build(Op.REDUCE_SUM, [(f16, None), axes(0), scalar(C.BOOL, False)], [t(C.TENSOR_FLOAT16, [3])])
    np.testing.assert_allclose(run(m, x)[0], [2.0, 6.0, 1.0])
    m = build(Op.REDUCE_PROD, [(f16, None), axes(1), scalar(C.BOOL, False)], [t(C.TENSOR_FLOAT16, [2])])
    np.testing.assert_allclose(run(m, x)[0], [-3.0, 4.0])
    m = build(Op.REDUCE_MIN, [(f16, None), axes(1), scalar(C.BOOL, False)], [t(C.TENSOR_FLOAT16, [2])])
    np.testing.assert_allclose(run(m, x)[0], [-1.0, 0.5])


def test_argmax_argmin_ties_pick_the_smallest_index():
    x = np.array([[1, 9, 9], [1, 4, 0]], dtype=np.int32)
    m = build(Op.ARGMAX, [(t(C.TENSOR_INT32, [2, 3]), None), scalar(C.INT32, 1)], [t(C.TENSOR_INT32, [2])])
    np.testing.assert_array_equal(run(m, x)[0], [1, 1])
    m = build(Op.ARGMIN, [(t(C.TENSOR_INT32, [2, 3]), None), scalar(C.INT32, -2)], [t(C.TENSOR_INT32, [3])])
    np.testing.assert_array_equal(run(m, x)[0], [0, 1, 1])
    m = build(Op.ARGMAX, [(t(C.TENSOR_FLOAT32, [3]), None), scalar(C.INT32, 0)], [t(C.TENSOR_INT32, [1])])
    np.testing.assert_array_equal(run(m, np.array([2, 5, 5], dtype=np.float32))[0], [1])


def test_topk_orders_ties_by_smaller_index():
    x = np.array([[3, 5, 5, 1], [200, 0, 200, 255]], dtype=np.uint8)
    q = t(C.TENSOR_QUANT8_ASYMM, [2, 4], 0.5, 3)
    m = build(Op.TOPK_V2, [(q, None), scalar(C.INT32, 3)],
              [t(C.TENSOR_QUANT8_ASYMM, [2, 3], 0.5, 3), t(C.TENSOR_INT32, [2, 3])])
    values, indices = run(m, x)
    np.testing.assert_array_equal(values, [[5, 5, 3], [255, 200, 200]])
    np.testing.assert_array_equal(indices, [[1, 2, 0], [3, 0, 2]])


def test_axis_out_of_range_fails_the_execution():
    m = build(Op.REDUCE_SUM, [(t(C.TENSOR_FLOAT32, [2, 2]), None), (t(C.TENSOR_INT32, [1]), None),
                              scalar(C.BOOL, False)], [t(C.TENSOR_FLOAT32, [2])])
    with pytest.raises(NnapiError) as e:
        run(m, np.ones((2, 2), np.float32), np.array([2], np.int32))
    assert e.value.code == ResultCode.OP_FAILED and "out of range" in str(e.value)


def test_validate_reports_too_low_feature_level():
    m = build(Op.REDUCE_SUM, [(t(C.TENSOR_FLOAT32, [2, 2]), None), axes(0), scalar(C.BOOL, False)],
              [t(C.TENSOR_FLOAT32, [2])])
    assert m.min_feature_level() == 3
    assert any("needs feature level 3" in p for p in m.validate(feature_level=2))
    m = build(Op.MEAN, [(t(C.TENSOR_QUANT8_ASYMM_SIGNED, [2, 2], 1.0, 0), None), axes(0), scalar(C.INT32, 0)],
              [t(C.TENSOR_QUANT8_ASYMM_SIGNED, [2], 1.0, 0)])
    assert any("needs feature level 4" in p for p in m.validate(feature_level=3))
    assert m.validate(feature_level=4) == []


def test_finish_rejects_unsupported_types():
    m = build(Op.REDUCE_SUM, [(t(C.TENSOR_INT32, [2, 2]), None), axes(0), scalar(C.BOOL, False)],
              [t(C.TENSOR_INT32, [2])], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    m = build(Op.REDUCE_MAX, [(t(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 0), None), axes(0), scalar(C.BOOL, False)],
              [t(C.TENSOR_QUANT8_ASYMM, [1], 0.25, 0)], finish=False)
    with pytest.raises(NnapiError) as e:  # REDUCE_MAX keeps the input's quantization
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA

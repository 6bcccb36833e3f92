"""Unary math, POW, CAST, (DE)QUANTIZE, MAXIMUM/MINIMUM, comparisons, logic and SELECT on small
hand-computed cases, through the public API."""
import math

import numpy as np
import pytest

import nnapi
from nnapi import NnapiError, OperandCode as C, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run, t, unary

F32 = C.TENSOR_FLOAT32
B8 = C.TENSOR_BOOL8


@pytest.mark.parametrize("code, x, expected", [
    (Op.FLOOR, [-1.5, 2.5], [-2.0, 2.0]),
    (Op.ABS, [-1.5, 2.5], [1.5, 2.5]),
    (Op.NEG, [-1.5, 2.5], [1.5, -2.5]),
    (Op.EXP, [0.0, 1.0], [1.0, math.e]),
    (Op.LOG, [1.0, math.e], [0.0, 1.0]),
    (Op.SIN, [0.0, math.pi / 2], [0.0, 1.0]),
    (Op.SQRT, [4.0, 9.0], [2.0, 3.0]),
    (Op.RSQRT, [4.0, 0.25], [0.5, 2.0]),
])
def test_float_unary(code, x, expected):
    out = unary(code, t(F32, [2]), t(F32, [2]), np.array(x, dtype=np.float32))
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


def test_int32_abs_and_neg():
    x = np.array([-3, 4, 0], dtype=np.int32)
    i32 = t(C.TENSOR_INT32, [3])
    np.testing.assert_array_equal(unary(Op.ABS, i32, i32, x), [3, 4, 0])
    np.testing.assert_array_equal(unary(Op.NEG, i32, i32, x), [3, -4, 0])


def test_pow_broadcasts():
    m = build(Op.POW, [(t(F32, [2, 2]), None), (t(F32, [1]), [2.0])], [t(F32, [2, 2])])
    out = run(m, np.array([[1, 2], [3, 4]], dtype=np.float32))[0]
    np.testing.assert_allclose(out, [[1, 4], [9, 16]])


def test_cast_truncates_saturates_and_ignores_quantization():
    x = np.array([-1.7, 2.9, -1.0, 256.0], dtype=np.float32)
    np.testing.assert_array_equal(unary(Op.CAST, t(F32, [4]), t(C.TENSOR_INT32, [4]), x), [-1, 2, -1, 256])
    q = t(C.TENSOR_QUANT8_ASYMM, [4], 4.0, 100)
    np.testing.assert_array_equal(unary(Op.CAST, t(F32, [4]), q, x), [0, 2, 0, 255])
    raw = np.array([1, 2, 3, 250], dtype=np.uint8)
    np.testing.assert_array_equal(unary(Op.CAST, q, t(F32, [4]), raw), [1.0, 2.0, 3.0, 250.0])


def test_quantize_rounds_half_away_from_zero():
    x = np.array([-1.0, 0.25, 0.75, 100.0, -0.25], dtype=np.float32)
    # scale 0.5, zero point 10: x / scale = -2, 0.5, 1.5, 200, -0.5
    out = unary(Op.QUANTIZE, t(F32, [5]), t(C.TENSOR_QUANT8_ASYMM, [5], 0.5, 10), x)
    np.testing.assert_array_equal(out, [8, 11, 12, 210, 9])
    out = unary(Op.QUANTIZE, t(F32, [5]), t(C.TENSOR_QUANT8_ASYMM_SIGNED, [5], 0.5, 10), x)
    np.testing.assert_array_equal(out, [8, 11, 12, 127, 9])


def test_dequantize_per_channel_to_float16():
    m = nnapi.Model()
    x = m.add_operand(t(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 2]))
    m.set_operand_symm_per_channel_quant_params(x, [0.5, 2.0], 1)
    y = m.add_operand(t(C.TENSOR_FLOAT16, [2, 2]))
    m.add_operation(Op.DEQUANTIZE, [x], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    out = run(m, np.array([[1, 2], [-3, 4]], dtype=np.int8))[0]
    np.testing.assert_array_equal(out, [[0.5, 4.0], [-1.5, 8.0]])


def test_dequantize_asymm():
    out = unary(Op.DEQUANTIZE, t(C.TENSOR_QUANT8_ASYMM, [3], 0.5, 128), t(F32, [3]),
                np.array([128, 130, 0], dtype=np.uint8))
    np.testing.assert_array_equal(out, [0.0, 1.0, -64.0])


@pytest.mark.parametrize("code, expected", [
    (Op.EQUAL, [True, False]), (Op.NOT_EQUAL, [False, True]), (Op.GREATER, [False, True]),
    (Op.GREATER_EQUAL, [True, True]), (Op.LESS, [False, False]), (Op.LESS_EQUAL, [True, False]),
])
def test_comparisons_of_quant8_with_different_scales(code, expected):
    # a: scale 1 -> reals 2, 4; b: scale 2, broadcast [1] -> real 2
    m = build(code, [(t(C.TENSOR_QUANT8_ASYMM, [2], 1.0, 0), None),
                     (t(C.TENSOR_QUANT8_ASYMM, [1], 2.0, 0), [1])], [t(B8, [2])])
    np.testing.assert_array_equal(run(m, np.array([2, 4], dtype=np.uint8))[0], expected)


def test_maximum_minimum_requantize_to_the_output_scale():
    # a: scale 0.5 -> reals 1, 4; b: scale 1 -> real 3 (broadcast); output scale 0.25
    ins = [(t(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 0), None), (t(C.TENSOR_QUANT8_ASYMM, [1], 1.0, 0), [3])]
    out_t = t(C.TENSOR_QUANT8_ASYMM, [2], 0.25, 0)
    a = np.array([2, 8], dtype=np.uint8)
    np.testing.assert_array_equal(run(build(Op.MAXIMUM, ins, [out_t]), a)[0], [12, 16])
    np.testing.assert_array_equal(run(build(Op.MINIMUM, ins, [out_t]), a)[0], [4, 12])


def test_logical_ops():
    a = np.array([[True, False], [True, True]])
    ins = [(t(B8, [2, 2]), None), (t(B8, [2]), [True, False])]
    np.testing.assert_array_equal(run(build(Op.LOGICAL_AND, ins, [t(B8, [2, 2])]), a)[0],
                                  [[True, False], [True, False]])
    np.testing.assert_array_equal(run(build(Op.LOGICAL_OR, ins, [t(B8, [2, 2])]), a)[0],
                                  [[True, False], [True, True]])
    np.testing.assert_array_equal(unary(Op.LOGICAL_NOT, t(B8, [2, 2]), t(B8, [2, 2]), a),
                                  [[False, True], [False, False]])


def test_select_requantizes_each_input():
    # input1: scale 1 -> reals 4, 4; input2: scale 0.5 -> reals 2, 2; output scale 0.5
    m = build(Op.SELECT, [(t(B8, [2]), None), (t(C.TENSOR_QUANT8_ASYMM, [2], 1.0, 0), [4, 4]),
                          (t(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 0), [4, 4])],
              [t(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 0)])
    np.testing.assert_array_equal(run(m, np.array([True, False]))[0], [8, 4])


def test_validate_reports_too_low_feature_level():
    m = build(Op.ABS, [(t(C.TENSOR_INT32, [2]), None)], [t(C.TENSOR_INT32, [2])])
    assert m.min_feature_level() == 4
    assert any("needs feature level 4" in p for p in m.validate(feature_level=3))
    m = build(Op.EQUAL, [(t(F32, [2]), None), (t(F32, [2]), None)], [t(B8, [2])])
    assert m.validate(feature_level=3) == []
    assert any("needs feature level 3" in p for p in m.validate(feature_level=2))


def test_finish_rejects_invalid_variants():
    m = build(Op.POW, [(t(C.TENSOR_INT32, [2]), None), (t(C.TENSOR_INT32, [2]), None)],
              [t(C.TENSOR_INT32, [2])], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    m = build(Op.LESS, [(t(F32, [2]), None), (t(F32, [2]), None)], [t(F32, [2])], finish=False)
    with pytest.raises(NnapiError) as e:       # comparisons produce TENSOR_BOOL8
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    m = build(Op.CAST, [(t(C.TENSOR_INT32, [2, 3]), None)], [t(C.TENSOR_INT32, [6])], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA and "shape" in str(e.value)


def test_rsqrt_quant8_saturates_zero_and_negative_inputs():
    # input scale 0.5 zp 10: reals 4, 0, -3; output scale 0.125: 1/sqrt(4) = 0.5 -> 4, the others saturate
    m = build(Op.RSQRT, [(t(C.TENSOR_QUANT8_ASYMM, [3], 0.5, 10), None)],
              [t(C.TENSOR_QUANT8_ASYMM, [3], 0.125, 0)])
    np.testing.assert_array_equal(run(m, np.array([18, 10, 4], dtype=np.uint8))[0], [4, 255, 255])
    assert m.min_feature_level() == 7


def test_shapes_that_do_not_broadcast_fail_at_execution():
    # the input's extent is unknown in the model, so only execution can see the mismatch
    m = build(Op.MAXIMUM, [(t(F32, [0]), None), (t(F32, [2]), [1.0, 2.0])], [t(F32, [0])])
    with pytest.raises(NnapiError) as e:
        run(m, np.zeros(3, dtype=np.float32))
    assert e.value.code == ResultCode.OP_FAILED and "broadcast" in str(e.value)

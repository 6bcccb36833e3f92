"""RELU family, LOGISTIC, TANH, ELU, HARD_SWISH and PRELU on small hand-computed cases (public API)."""
import math

import numpy as np
import pytest

from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run, t, unary


@pytest.mark.parametrize("code, expected", [
    (Op.RELU, [0.0, 0.0, 0.5, 3.0, 7.0]),
    (Op.RELU1, [-1.0, -0.5, 0.5, 1.0, 1.0]),
    (Op.RELU6, [0.0, 0.0, 0.5, 3.0, 6.0]),
])
def test_relu_family_float(code, expected):
    x = np.array([-2.0, -0.5, 0.5, 3.0, 7.0], dtype=np.float32)
    out = unary(code, t(C.TENSOR_FLOAT32, [5]), t(C.TENSOR_FLOAT32, [5]), x)
    np.testing.assert_array_equal(out, expected)


def test_relu6_quant8_clamps_in_the_quantized_domain():
    # scale 0.5, zero point 128: stored 100, 128, 130, 150 are -14, 0, 1, 11; RELU6 -> 0, 0, 1, 6
    q = t(C.TENSOR_QUANT8_ASYMM, [4], 0.5, 128)
    out = unary(Op.RELU6, q, q, np.array([100, 128, 130, 150], dtype=np.uint8))
    np.testing.assert_array_equal(out, [128, 128, 130, 140])


def test_relu1_quant8_signed():
    # scale 0.25, zero point -10: stored -20, -10, 0 are -2.5, 0, 2.5; RELU1 -> -1, 0, 1
    q = t(C.TENSOR_QUANT8_ASYMM_SIGNED, [3], 0.25, -10)
    out = unary(Op.RELU1, q, q, np.array([-20, -10, 0], dtype=np.int8))
    np.testing.assert_array_equal(out, [-14, -10, -6])


def test_logistic_float16_and_quant8():
    x = np.array([0.0, 1.0, -2.0], dtype=np.float16)
    out = unary(Op.LOGISTIC, t(C.TENSOR_FLOAT16, [3]), t(C.TENSOR_FLOAT16, [3]), x)
    np.testing.assert_allclose(out.astype(np.float32), [0.5, 0.7310586, 0.1192029], rtol=1e-3)
    # input scale 1/16, zero point 128: reals 0, 1, -1, 7.9375, -8; output = round(256 * sigmoid)
    qin = t(C.TENSOR_QUANT8_ASYMM, [5], 1.0 / 16, 128)
    qout = t(C.TENSOR_QUANT8_ASYMM, [5], 1.0 / 256, 0)
    out = unary(Op.LOGISTIC, qin, qout, np.array([128, 144, 112, 255, 0], dtype=np.uint8))
    np.testing.assert_array_equal(out, [128, 187, 69, 255, 0])


def test_tanh_quant8_signed():
    # input scale 0.25: reals 0, 1, -1, 31.75; output = round(128 * tanh), saturated to 127
    qin = t(C.TENSOR_QUANT8_ASYMM_SIGNED, [4], 0.25, 0)
    qout = t(C.TENSOR_QUANT8_ASYMM_SIGNED, [4], 1.0 / 128, 0)
    out = unary(Op.TANH, qin, qout, np.array([0, 4, -4, 127], dtype=np.int8))
    np.testing.assert_array_equal(out, [0, 97, -97, 127])


def test_elu_float():
    m = build(Op.ELU, [(t(C.TENSOR_FLOAT32, [3]), None), (OperandType(C.FLOAT32), 0.5)],
              [t(C.TENSOR_FLOAT32, [3])])
    out = run(m, np.array([-1.0, 0.0, 2.0], dtype=np.float32))[0]
    np.testing.assert_allclose(out, [0.5 * (math.exp(-1.0) - 1.0), 0.0, 2.0], rtol=1e-6)


def test_hard_swish_float_and_quant8():
    x = np.array([-4.0, -1.0, 0.0, 1.0, 4.0], dtype=np.float32)
    out = unary(Op.HARD_SWISH, t(C.TENSOR_FLOAT32, [5]), t(C.TENSOR_FLOAT32, [5]), x)
    np.testing.assert_allclose(out, [0.0, -1.0 / 3.0, 0.0, 2.0 / 3.0, 4.0], rtol=1e-6)
    # scale 0.1, zero point 100 on both sides: reals 0, 3, -3, 6 -> 0, 3, 0, 6 (Android's fixed point: +-1)
    q = t(C.TENSOR_QUANT8_ASYMM, [4], 0.1, 100)
    out = unary(Op.HARD_SWISH, q, q, np.array([100, 130, 70, 160], dtype=np.uint8))
    assert np.abs(out.astype(int) - [100, 130, 100, 160]).max() <= 1


def test_prelu_broadcasts_alpha():
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 0.0]], dtype=np.float32)
    m = build(Op.PRELU, [(t(C.TENSOR_FLOAT32, [2, 3]), None), (t(C.TENSOR_FLOAT32, [3]), [0.1, 0.2, 0.3])],
              [t(C.TENSOR_FLOAT32, [2, 3])])
    np.testing.assert_allclose(run(m, x)[0], [[-0.1, 2.0, -0.9], [4.0, -1.0, 0.0]], rtol=1e-6)


def test_prelu_quant8_with_different_output_scale():
    # x: scale 0.5 zp 10 -> reals -5, 0, 2; alpha: scale 0.25 zp 4, stored 6 -> 0.5; out: scale 0.25 zp 20
    m = build(Op.PRELU, [(t(C.TENSOR_QUANT8_ASYMM, [3], 0.5, 10), None),
                         (t(C.TENSOR_QUANT8_ASYMM, [1], 0.25, 4), [6])],
              [t(C.TENSOR_QUANT8_ASYMM, [3], 0.25, 20)])
    out = run(m, np.array([0, 10, 14], dtype=np.uint8))[0]
    np.testing.assert_array_equal(out, [10, 20, 28])     # reals -2.5, 0, 2


def test_validate_reports_too_low_feature_level():
    m = build(Op.HARD_SWISH, [(t(C.TENSOR_FLOAT32, [2]), None)], [t(C.TENSOR_FLOAT32, [2])])
    assert m.min_feature_level() == 4
    problems = m.validate(feature_level=3)
    assert len(problems) == 1 and "needs feature level 4" in problems[0]
    # TANH itself is level 1, but its quant8 form needs level 3
    m = build(Op.TANH, [(t(C.TENSOR_QUANT8_ASYMM, [2], 0.1, 128), None)],
              [t(C.TENSOR_QUANT8_ASYMM, [2], 1.0 / 128, 128)])
    assert m.validate(feature_level=3) == []
    assert "needs feature level 3" in m.validate(feature_level=2)[0]


def test_finish_rejects_wrong_types_and_quantization():
    m = build(Op.LOGISTIC, [(t(C.TENSOR_INT32, [2]), None)], [t(C.TENSOR_INT32, [2])], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA and "unsupported operand types" in str(e.value)
    m = build(Op.LOGISTIC, [(t(C.TENSOR_QUANT8_ASYMM, [2], 0.1, 128), None)],
              [t(C.TENSOR_QUANT8_ASYMM, [2], 0.1, 128)], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA and "scale" in str(e.value)


def test_hard_swish_quant8_unrepresentable_output_scale_fails_at_execution():
    # the fixed-point kernel needs output scale > input scale / 128
    m = build(Op.HARD_SWISH, [(t(C.TENSOR_QUANT8_ASYMM, [2], 1.0, 0), None)],
              [t(C.TENSOR_QUANT8_ASYMM, [2], 1.0 / 256, 0)])
    with pytest.raises(NnapiError) as e:
        run(m, np.array([1, 2], dtype=np.uint8))
    assert e.value.code == ResultCode.OP_FAILED and "HARD_SWISH" in str(e.value)

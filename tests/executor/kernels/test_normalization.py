"""Hand-computed cases for L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION,
INSTANCE_NORMALIZATION, SOFTMAX and LOG_SOFTMAX."""
import numpy as np
import pytest

from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode

from tests.executor.op_harness import build, run_one

I32, F32S, BOOL = OperandType(C.INT32), OperandType(C.FLOAT32), OperandType(C.BOOL)


def f32(*dims):
    return OperandType(C.TENSOR_FLOAT32, dims)


def scalar(value):
    return (I32, np.int32(value)) if isinstance(value, int) else (F32S, np.float32(value))


def op_model(code, in_type, params, out_type=None):
    return build(code, [(in_type, None)] + [scalar(p) for p in params], [out_type or in_type], finish=False)


def test_l2_normalization_float_along_a_negative_axis():
    m = op_model(Op.L2_NORMALIZATION, f32(2, 2), [-2])
    x = np.array([[3, 5], [4, 12]], dtype=np.float32)
    np.testing.assert_allclose(run_one(m, x), [[0.6, 5 / 13], [0.8, 12 / 13]], rtol=1e-6)


def test_l2_normalization_quant8_output_is_128ths():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 1, 1, 2), 0.1, 128)
    out = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 1, 1, 2), 1 / 128, 128)
    m = op_model(Op.L2_NORMALIZATION, q, [], out)
    x = np.array([128 + 3, 128 - 4], dtype=np.uint8).reshape(1, 1, 1, 2)
    # 128 * (0.6, -0.8) = (76.8, -102.4) -> (77, -102), plus the zero point 128
    assert run_one(m, x).reshape(-1).tolist() == [205, 26]


def test_l2_normalization_of_zeros_is_zero():
    m = op_model(Op.L2_NORMALIZATION, f32(1, 3), [])
    np.testing.assert_array_equal(run_one(m, np.zeros((1, 3), np.float32)), np.zeros((1, 3)))


def test_local_response_normalization_1d():
    # radius 1, bias 1, alpha 1, beta 0.5: x_i / sqrt(1 + sum of neighbouring squares)
    m = op_model(Op.LOCAL_RESPONSE_NORMALIZATION, f32(3), [1, 1.0, 1.0, 0.5])
    x = np.array([1, 2, 3], dtype=np.float32)
    expected = [1 / np.sqrt(6), 2 / np.sqrt(15), 3 / np.sqrt(14)]
    np.testing.assert_allclose(run_one(m, x), expected, rtol=1e-6)


def test_instance_normalization_nhwc():
    m = build(Op.INSTANCE_NORMALIZATION, [(f32(1, 2, 2, 1), None), scalar(2.0), scalar(1.0), scalar(0.0),
                                          (BOOL, np.bool_(False))], [f32(1, 2, 2, 1)])
    x = np.array([1, 2, 3, 4], dtype=np.float32).reshape(1, 2, 2, 1)
    # mean 2.5, variance 1.25
    expected = (np.array([1, 2, 3, 4]) - 2.5) * 2 / np.sqrt(1.25) + 1
    np.testing.assert_allclose(run_one(m, x).reshape(-1), expected, rtol=1e-6)


def test_softmax_float_with_axis_and_beta():
    m = op_model(Op.SOFTMAX, f32(2, 2), [0.5, 0])
    x = np.array([[0, 0], [2 * np.log(3), 0]], dtype=np.float32)
    np.testing.assert_allclose(run_one(m, x), [[0.25, 0.5], [0.75, 0.5]], rtol=1e-6)


@pytest.mark.parametrize("code,zero_point,dtype", [(C.TENSOR_QUANT8_ASYMM, 0, np.uint8),
                                                   (C.TENSOR_QUANT8_ASYMM_SIGNED, -128, np.int8)])
def test_softmax_quantized_output_scale_is_1_over_256(code, zero_point, dtype):
    q = OperandType(code, (1, 4), 1.0, 0)
    out = OperandType(code, (1, 4), 1 / 256, zero_point)
    m = op_model(Op.SOFTMAX, q, [1.0], out)
    # four equal logits: 0.25 each = 64 steps of 1/256
    assert run_one(m, np.full((1, 4), 5, dtype=dtype)).reshape(-1).tolist() == [64 + zero_point] * 4


def test_softmax_quant8_uneven_distribution():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 2), float(np.float32(np.log(3))), 0)
    m = op_model(Op.SOFTMAX, q, [1.0], OperandType(C.TENSOR_QUANT8_ASYMM, (1, 2), 1 / 256, 0))
    # logits 0 and ln 3: probabilities 1/4 and 3/4
    assert run_one(m, np.array([[0, 1]], dtype=np.uint8)).tolist() == [[64, 192]]


def test_log_softmax():
    m = op_model(Op.LOG_SOFTMAX, f32(1, 2), [1.0, -1])
    x = np.array([[0, np.log(3)]], dtype=np.float32)
    np.testing.assert_allclose(run_one(m, x), [[np.log(0.25), np.log(0.75)]], rtol=1e-6)


def test_axis_out_of_range_fails_at_execution():
    m = op_model(Op.SOFTMAX, f32(2, 2), [1.0, 2])
    with pytest.raises(NnapiError) as e:
        run_one(m, np.zeros((2, 2), np.float32))
    assert e.value.code == ResultCode.OP_FAILED


def test_feature_levels():
    assert op_model(Op.SOFTMAX, f32(2, 2), [1.0]).min_feature_level() == 1
    rank3 = op_model(Op.SOFTMAX, f32(1, 2, 2), [1.0])
    assert rank3.min_feature_level() == 3
    assert any("needs feature level 3" in p for p in rank3.validate(feature_level=2))
    with_axis = op_model(Op.L2_NORMALIZATION, f32(1, 1, 1, 2), [-1])
    assert any("needs feature level 3" in p for p in with_axis.validate(feature_level=1))
    q8s = OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2), 1 / 128, 0)
    assert op_model(Op.L2_NORMALIZATION, q8s, [-1]).min_feature_level() == 4


def test_finish_rejects_quantized_lrn():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 1, 1, 2), 0.5, 0)
    m = op_model(Op.LOCAL_RESPONSE_NORMALIZATION, q, [1, 1.0, 1.0, 0.5])
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_finish_rejects_softmax_with_a_wrong_output_scale():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 4), 1.0, 0)
    m = op_model(Op.SOFTMAX, q, [1.0], OperandType(C.TENSOR_QUANT8_ASYMM, (1, 4), 1 / 128, 0))
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA

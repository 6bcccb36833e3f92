"""Hand-computed cases for AVERAGE/MAX/L2_POOL_2D and RESIZE_BILINEAR/NEAREST_NEIGHBOR."""
import numpy as np
import pytest

from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run_one

I32, BOOL = OperandType(C.INT32), OperandType(C.BOOL)


def ints(*values):
    return [(I32, np.int32(v)) for v in values]


def pool_explicit(code, in_type, out_type, pads, strides, filt, fuse=0, nchw=None):
    layout = [] if nchw is None else [(BOOL, np.bool_(nchw))]
    return build(code, [(in_type, None)] + ints(*pads, *strides, *filt, fuse) + layout, [out_type], finish=False)


def f32(*dims):
    return OperandType(C.TENSOR_FLOAT32, dims)


X33 = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)


def test_average_pool_excludes_padding_from_the_count():
    # 2x2 windows, stride 1, one padded column right and row bottom
    m = pool_explicit(Op.AVERAGE_POOL_2D, f32(1, 3, 3, 1), f32(1, 3, 3, 1), (0, 1, 0, 1), (1, 1), (2, 2))
    expected = [[3, 4, 4.5], [6, 7, 7.5], [7.5, 8.5, 9]]
    np.testing.assert_allclose(run_one(m, X33)[0, :, :, 0], expected)


def test_max_pool_quant8_nchw_same_padding_with_relu6():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 1, 2, 2), 0.5, 0)
    out = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 1, 1, 1), 0.5, 0)
    # implicit padding SAME, stride 2, filter 2x2, RELU6 (6.0 = 12 stored units), NCHW
    m = build(Op.MAX_POOL_2D, [(q, None)] + ints(1, 2, 2, 2, 2, 3) + [(BOOL, np.bool_(True))], [out], finish=False)
    x = np.array([[[[3, 20], [7, 1]]]], dtype=np.uint8)
    assert run_one(m, x).item() == 12


def test_average_pool_quant8_signed_rounds_half_away_from_zero():
    q = OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (1, 1, 4, 1), 0.25, 0)
    out = OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (1, 1, 2, 1), 0.25, 0)
    m = pool_explicit(Op.AVERAGE_POOL_2D, q, out, (0, 0, 0, 0), (2, 1), (2, 1))
    x = np.array([-3, -2, 1, 2], dtype=np.int8).reshape(1, 1, 4, 1)
    assert run_one(m, x).reshape(-1).tolist() == [-3, 2]   # -2.5 -> -3, 1.5 -> 2


def test_l2_pool_float():
    m = pool_explicit(Op.L2_POOL_2D, f32(1, 1, 2, 1), f32(1, 1, 1, 1), (0, 0, 0, 0), (1, 1), (2, 1))
    x = np.array([3, 4], dtype=np.float32).reshape(1, 1, 2, 1)
    np.testing.assert_allclose(run_one(m, x).item(), np.sqrt(12.5), rtol=1e-6)


def test_pool_padding_not_smaller_than_filter_is_rejected_at_finish():
    # the rule is the spec's (a window of padding only has no element to pool): BAD_DATA at finish(),
    # where the kernel used to report OP_FAILED at compute
    m = pool_explicit(Op.MAX_POOL_2D, f32(1, 3, 3, 1), f32(1, 6, 6, 1), (2, 2, 2, 2), (1, 1), (2, 2))
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    assert "pad_left 2 and pad_right 2 must be smaller than filter_w 2" in e.value.message


def _resize(code, in_dims, out_dims, size_args, flags=(False,)):
    operands = [(f32(*in_dims), None)] + size_args + [(BOOL, np.bool_(f)) for f in flags]
    return build(code, operands, [f32(*out_dims)], finish=False)


X22 = np.array([0, 1, 2, 3], dtype=np.float32).reshape(1, 2, 2, 1)


def test_resize_bilinear_sizes():
    m = _resize(Op.RESIZE_BILINEAR, (1, 2, 2, 1), (1, 3, 3, 1), ints(3, 3))
    # source positions 0, 2/3, 4/3 (clamped to the last row/column)
    expected = [[0, 2 / 3, 1], [4 / 3, 2, 7 / 3], [2, 8 / 3, 3]]
    np.testing.assert_allclose(run_one(m, X22)[0, :, :, 0], expected, rtol=1e-6)


def test_resize_bilinear_align_corners():
    m = _resize(Op.RESIZE_BILINEAR, (1, 2, 2, 1), (1, 3, 3, 1), ints(3, 3), (False, True, False))
    expected = [[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]]
    np.testing.assert_allclose(run_one(m, X22)[0, :, :, 0], expected, rtol=1e-6)


def test_resize_bilinear_half_pixel_centers():
    m = _resize(Op.RESIZE_BILINEAR, (1, 2, 2, 1), (1, 4, 4, 1), ints(4, 4), (False, False, True))
    # source positions (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25: clamped linear ramps
    ramp = np.array([0, 0.25, 0.75, 1])
    np.testing.assert_allclose(run_one(m, X22)[0, :, :, 0], 2 * ramp[:, None] + ramp[None, :], atol=1e-6)


def test_resize_nearest_neighbor_scales_nchw():
    scales = [(OperandType(C.FLOAT32), np.float32(1.5))] * 2
    m = _resize(Op.RESIZE_NEAREST_NEIGHBOR, (1, 1, 2, 2), (1, 1, 3, 3), scales, (True,))
    x = X22.reshape(1, 1, 2, 2)
    # floor(i * 2/3) -> rows/cols 0, 0, 1
    np.testing.assert_array_equal(run_one(m, x)[0, 0], [[0, 0, 1], [0, 0, 1], [2, 2, 3]])


def test_resize_nearest_neighbor_align_corners_rounds():
    m = _resize(Op.RESIZE_NEAREST_NEIGHBOR, (1, 2, 2, 1), (1, 3, 3, 1), ints(3, 3), (False, True, False))
    # round(i * 1/2) -> rows/cols 0, 1, 1
    np.testing.assert_array_equal(run_one(m, X22)[0, :, :, 0], [[0, 1, 1], [2, 3, 3], [2, 3, 3]])


def test_feature_levels():
    nchw = pool_explicit(Op.AVERAGE_POOL_2D, f32(1, 3, 3, 1), f32(1, 3, 3, 1), (0, 1, 0, 1), (1, 1), (2, 2),
                         nchw=False)
    assert nchw.min_feature_level() == 3
    assert any("needs feature level 3" in p for p in nchw.validate(feature_level=2))
    assert nchw.validate(feature_level=3) == []
    q8s = OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2, 2, 1), 0.5, 0)
    m = pool_explicit(Op.MAX_POOL_2D, q8s, q8s, (0, 0, 0, 0), (1, 1), (1, 1))
    assert m.min_feature_level() == 4
    scales = [(OperandType(C.FLOAT32), np.float32(2.0))] * 2
    m = _resize(Op.RESIZE_BILINEAR, (1, 2, 2, 1), (1, 4, 4, 1), scales, ())
    assert m.min_feature_level() == 3


def test_finish_rejects_quantized_l2_pool():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 2, 2, 1), 0.5, 0)
    m = pool_explicit(Op.L2_POOL_2D, q, q, (0, 0, 0, 0), (1, 1), (1, 1))
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_finish_rejects_a_zero_stride():
    m = pool_explicit(Op.AVERAGE_POOL_2D, f32(1, 2, 2, 1), f32(1, 2, 2, 1), (0, 0, 0, 0), (0, 1), (1, 1))
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_finish_rejects_pool_changing_quantization():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 2, 2, 1), 0.5, 0)
    out = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 2, 2, 1), 0.25, 0)
    m = pool_explicit(Op.MAX_POOL_2D, q, out, (0, 0, 0, 0), (1, 1), (1, 1))
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA

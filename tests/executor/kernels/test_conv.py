"""Hand-checked cases for CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D
and FULLY_CONNECTED, built through the public nnapi API.

Expected values are worked out by hand or by the direct (loop) definition in
`_direct_conv`, never by the kernels under test.
"""
import numpy as np
import pytest

import nnapi
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run_one, scalar

F32 = C.TENSOR_FLOAT32


def _build(code, tensors, scalars, out_type, per_channel=None):
    """tensors: [(OperandType, value or None = a model input)], then `scalars` [(code, value)]
    as constants; one output of `out_type`. Left unfinished for the finish/validate tests."""
    return build(code, list(tensors) + [scalar(c, v) for c, v in scalars], [out_type], finish=False,
                 per_channel=per_channel)


def _direct_conv(x, w, b, stride, pad, dilation=(1, 1), groups=1):
    """The definition, one output element at a time: x NHWC, w [O, kh, kw, C/groups], pad (t, b, l, r)."""
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    xp = np.pad(x, ((0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)))
    oh = (xp.shape[1] - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, o))
    for bi in range(n):
        for y in range(oh):
            for xx in range(ow):
                for oc in range(o):
                    g = oc // (o // groups)
                    for i in range(kh):
                        for j in range(kw):
                            pix = xp[bi, y * stride[0] + i * dilation[0], xx * stride[1] + j * dilation[1]]
                            out[bi, y, xx, oc] += pix[g * cg:(g + 1) * cg] @ w[oc, i, j]
                    out[bi, y, xx, oc] += b[oc]
    return out


def test_conv2d_float_explicit_padding_by_hand():
    # 3x3 input 1..9, 2x2 filter [[1, 0], [0, 1]]: each output = top-left + bottom-right of its window
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    m = _build(Op.CONV_2D,
               [(OperandType(F32, (1, 3, 3, 1)), None), (OperandType(F32, (1, 2, 2, 1)), [1, 0, 0, 1]),
                (OperandType(F32, (1,)), [0.5])],
               [(C.INT32, 0)] * 4 + [(C.INT32, 1), (C.INT32, 1), (C.INT32, 0)],
               OperandType(F32, (1, 2, 2, 1)))
    out = run_one(m, x)
    np.testing.assert_array_equal(out.reshape(2, 2), [[1 + 5 + 0.5, 2 + 6 + 0.5], [4 + 8 + 0.5, 5 + 9 + 0.5]])


def test_conv2d_float_nchw_same_stride_dilation_relu6():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (2, 5, 6, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 2, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    # SAME, stride 2 (h) x 1 (w), dilation 2 x 1: effective filter 3x3; out 3x6;
    # total padding h (3-1)*2 + 3 - 5 = 2, w (6-1)*1 + 3 - 6 = 2 -> (1, 1) each
    expected = np.clip(_direct_conv(x, w, b, (2, 1), (1, 1, 1, 1), dilation=(2, 1)), 0, 6)
    m = _build(Op.CONV_2D,
               [(OperandType(F32, (2, 3, 5, 6)), None), (OperandType(F32, w.shape), w), (OperandType(F32, (4,)), b)],
               [(C.INT32, nnapi.PaddingCode.SAME), (C.INT32, 1), (C.INT32, 2), (C.INT32, nnapi.FuseCode.RELU6),
                (C.BOOL, True), (C.INT32, 1), (C.INT32, 2)],
               OperandType(F32, (2, 4, 3, 6)))
    out = run_one(m, np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    np.testing.assert_allclose(out.transpose(0, 2, 3, 1), expected, rtol=1e-5, atol=1e-6)


def test_conv2d_quant8_per_channel_by_hand():
    # input scale 0.5 zp 10: pixels q [12, 14] are reals [1, 2]; 1x1 filter q [3, -4] with channel
    # scales [1, 0.25] is reals [3, -1]; bias q [4, -16] at scales 0.5 x [1, 0.25] is reals [2, -2];
    # output scale 2 zp 5, halves rounded away from zero:
    #   pixel 0: ch0 (3 + 2) / 2 = 2.5 -> 3 -> q 8;   ch1 (-1 - 2) / 2 = -1.5 -> -2 -> q 3
    #   pixel 1: ch0 (6 + 2) / 2 = 4   -> q 9;        ch1 (-2 - 2) / 2 = -2 -> q 3
    m = _build(Op.CONV_2D,
               [(OperandType(C.TENSOR_QUANT8_ASYMM, (1, 1, 2, 1), 0.5, 10), None),
                (OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, (2, 1, 1, 1)), [3, -4]),
                (OperandType(C.TENSOR_INT32, (2,)), [4, -16])],
               [(C.INT32, 0)] * 4 + [(C.INT32, 1), (C.INT32, 1), (C.INT32, 0)],
               OperandType(C.TENSOR_QUANT8_ASYMM, (1, 1, 2, 2), 2.0, 5), per_channel=([1.0, 0.25], 0))
    out = run_one(m, np.array([12, 14], dtype=np.uint8).reshape(1, 1, 2, 1))
    np.testing.assert_array_equal(out.reshape(2, 2), [[8, 3], [9, 3]])


def test_depthwise_multiplier_two_by_hand():
    # 2 input channels, multiplier 2, 1x1 filter [1, 1, 1, 4]: outputs c0*w0, c0*w1, c1*w2, c1*w3
    m = _build(Op.DEPTHWISE_CONV_2D,
               [(OperandType(F32, (1, 1, 1, 2)), None), (OperandType(F32, (1, 1, 1, 4)), [1, 2, 3, 4]),
                (OperandType(F32, (4,)), [0, 0, 0, 100])],
               [(C.INT32, nnapi.PaddingCode.VALID), (C.INT32, 1), (C.INT32, 1), (C.INT32, 2), (C.INT32, 0)],
               OperandType(F32, (1, 1, 1, 4)))
    out = run_one(m, np.array([10, -1], dtype=np.float32).reshape(1, 1, 1, 2))
    np.testing.assert_array_equal(out.reshape(-1), [10, 20, -3, 96])


def test_grouped_conv_two_groups():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (1, 4, 4, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (6, 2, 2, 2)).astype(np.float32)
    b = np.arange(6, dtype=np.float32)
    expected = _direct_conv(x, w, b, (1, 1), (0, 1, 0, 1), groups=2)
    m = _build(Op.GROUPED_CONV_2D,
               [(OperandType(F32, x.shape), None), (OperandType(F32, w.shape), w), (OperandType(F32, (6,)), b)],
               [(C.INT32, 0), (C.INT32, 1), (C.INT32, 0), (C.INT32, 1), (C.INT32, 1), (C.INT32, 1),
                (C.INT32, 2), (C.INT32, 0), (C.BOOL, False)],
               OperandType(F32, (1, 4, 4, 6)))
    np.testing.assert_allclose(run_one(m, x), expected, rtol=1e-5, atol=1e-6)


def test_transpose_conv_stride_two_by_hand():
    # 2x2 input [[1, 2], [3, 4]], 2x2 filter of ones, stride 2, no padding: each input fills a 2x2 block
    m = _build(Op.TRANSPOSE_CONV_2D,
               [(OperandType(F32, (1, 2, 2, 1)), None), (OperandType(F32, (1, 2, 2, 1)), [1, 1, 1, 1]),
                (OperandType(F32, (1,)), [0.5])],
               [(C.INT32, 0)] * 4 + [(C.INT32, 2), (C.INT32, 2), (C.INT32, 0), (C.BOOL, False)],
               OperandType(F32, (1, 4, 4, 1)))
    out = run_one(m, np.array([1, 2, 3, 4], dtype=np.float32).reshape(1, 2, 2, 1))
    np.testing.assert_array_equal(out.reshape(4, 4), np.kron([[1, 2], [3, 4]], np.ones((2, 2))) + 0.5)


def test_transpose_conv_implicit_same_overlapping_taps():
    # 1-D in effect: input [1, 2], filter [1, 10, 100], stride 1, SAME for output width 2:
    # full output [1, 12, 120, 200]; SAME pads (1, 1) -> [12, 120]
    m = _build(Op.TRANSPOSE_CONV_2D,
               [(OperandType(F32, (1, 1, 2, 1)), None), (OperandType(F32, (1, 1, 3, 1)), [1, 10, 100]),
                (OperandType(F32, (1,)), [0]), (OperandType(C.TENSOR_INT32, (4,)), [1, 1, 2, 1])],
               [(C.INT32, nnapi.PaddingCode.SAME), (C.INT32, 1), (C.INT32, 1), (C.INT32, 0), (C.BOOL, False)],
               OperandType(F32, (1, 1, 2, 1)))
    out = run_one(m, np.array([1, 2], dtype=np.float32).reshape(1, 1, 2, 1))
    np.testing.assert_array_equal(out.reshape(-1), [12, 120])


def test_fully_connected_quant8_by_hand():
    # input scale 0.5 zp 1, weights scale 0.5 zp 2, output scale 1 zp 3: multiplier 0.25
    # reals: x = [1, 2] (q 3, 5), w rows [1, 0] (q 4, 2) and [-1, 1] (q 0, 4)
    # unit 0: 1 + bias 4*0.25 = 2 -> q 5; unit 1: -1 + 2 = 1, bias -2*0.25 -> 0.5 -> round half away: 1 -> q 4
    m = _build(Op.FULLY_CONNECTED,
               [(OperandType(C.TENSOR_QUANT8_ASYMM, (1, 2), 0.5, 1), None),
                (OperandType(C.TENSOR_QUANT8_ASYMM, (2, 2), 0.5, 2), [4, 2, 0, 4]),
                (OperandType(C.TENSOR_INT32, (2,), 0.25), [4, -2])],
               [(C.INT32, 0)], OperandType(C.TENSOR_QUANT8_ASYMM, (1, 2), 1.0, 3))
    np.testing.assert_array_equal(run_one(m, np.array([[3, 5]], dtype=np.uint8)), [[5, 4]])


def test_fully_connected_flattens_input_and_weights_as_input():
    # input [2, 2, 2] flattens to 4 rows of 2 with weights [3, 2] given at execution time
    x = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    w = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    m = _build(Op.FULLY_CONNECTED,
               [(OperandType(F32, (2, 2, 2)), None), (OperandType(F32, (3, 2)), None),
                (OperandType(F32, (3,)), [0, 0, -1])],
               [(C.INT32, nnapi.FuseCode.RELU1)], OperandType(F32, (4, 3)))
    rows = x.reshape(4, 2)
    expected = np.clip(np.stack([rows[:, 0], rows[:, 1], rows.sum(1) - 1], axis=1), -1, 1)
    np.testing.assert_array_equal(run_one(m, x, w), expected)


def test_validate_reports_feature_level():
    # a quant8 signed FULLY_CONNECTED needs feature level 4; an NCHW flag needs level 3
    fc = _build(Op.FULLY_CONNECTED,
                [(OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2), 0.5, 0), None),
                 (OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2), 0.5, 0), [1, 1]),
                 (OperandType(C.TENSOR_INT32, (1,), 0.25), [0])],
                [(C.INT32, 0)], OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (1, 1), 1.0, 0))
    fc.finish()
    assert fc.min_feature_level() == 4
    assert any("needs feature level 4" in p for p in fc.validate(feature_level=3))
    assert fc.validate(feature_level=4) == []
    conv = _build(Op.CONV_2D,
                  [(OperandType(F32, (1, 1, 1, 1)), None), (OperandType(F32, (1, 1, 1, 1)), [1]),
                   (OperandType(F32, (1,)), [0])],
                  [(C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.INT32, 0), (C.BOOL, False)],
                  OperandType(F32, (1, 1, 1, 1)))
    conv.finish()
    assert conv.min_feature_level() == 3
    assert any("needs feature level 3" in p for p in conv.validate(feature_level=2))


def test_finish_rejects_int32_bias_for_float_conv():
    m = _build(Op.CONV_2D,
               [(OperandType(F32, (1, 2, 2, 1)), None), (OperandType(F32, (1, 1, 1, 1)), [1]),
                (OperandType(C.TENSOR_INT32, (1,)), [0])],
               [(C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.INT32, 0)],
               OperandType(F32, (1, 2, 2, 1)))
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    assert "unsupported operand types" in e.value.message


# The constant window parameters are the spec's rules (nnapi/ops/rules.py window_params), as for the
# pools: an invalid padding code or a zero stride is BAD_DATA at finish(), not OP_FAILED at compute
# (these tests used to lock in the kernel's late OP_FAILED). A stride fed at run time meets the same rule
# before the kernel runs (executor/runtime.py: the spec checks what is fed at run time), as OP_FAILED.
@pytest.mark.parametrize("scalars, reason", [
    ([(C.INT32, 7), (C.INT32, 1), (C.INT32, 1), (C.INT32, 0)], "padding must be SAME (1) or VALID (2), got 7"),
    ([(C.INT32, 1), (C.INT32, 0), (C.INT32, 1), (C.INT32, 0)], "stride_w must be positive, got 0"),
    ([(C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.INT32, 9)], "invalid fuse code 9"),
    ([(C.INT32, 0), (C.INT32, 0), (C.INT32, -1), (C.INT32, 0), (C.INT32, 1), (C.INT32, 1), (C.INT32, 0)],
     "pad_top must not be negative, got -1"),
])
def test_invalid_constant_window_is_rejected_at_finish(scalars, reason):
    m = _build(Op.CONV_2D,
               [(OperandType(F32, (1, 2, 2, 1)), None), (OperandType(F32, (1, 1, 1, 1)), [1]),
                (OperandType(F32, (1,)), [0])],
               scalars, OperandType(F32, (1, 2, 2, 1)))
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    assert reason in e.value.message


def test_zero_stride_fed_at_run_time_fails_at_execution():
    m = nnapi.Model()
    x = m.add_operand(OperandType(F32, (1, 2, 2, 1)))
    w = m.add_operand(OperandType(F32, (1, 1, 1, 1)))
    m.set_operand_value(w, np.ones((1, 1, 1, 1), np.float32))
    b = m.add_operand(OperandType(F32, (1,)))
    m.set_operand_value(b, np.zeros(1, np.float32))
    scalars = []
    for v in (1, None, 1, 0):   # padding SAME, stride_w (a model input), stride_h, fuse
        i = m.add_operand(OperandType(C.INT32))
        if v is not None:
            m.set_operand_value(i, np.int32(v))
        scalars.append(i)
    out = m.add_operand(OperandType(F32, (1, 2, 2, 1)))
    m.add_operation(Op.CONV_2D, [x, w, b, *scalars], [out])
    m.identify_inputs_and_outputs([x, scalars[1]], [out])
    m.finish()
    with pytest.raises(NnapiError) as e:
        run_one(m, np.ones((1, 2, 2, 1), np.float32), np.int32(0))
    assert e.value.code == ResultCode.OP_FAILED
    assert "stride_w must be positive, got 0" in e.value.message   # the spec's message (was the kernel's "strides (1, 0)")


def test_zero_batch_conv_nchw_and_fully_connected():
    conv = _build(Op.CONV_2D,
                  [(OperandType(F32, (0, 2, 3, 3)), None), (OperandType(F32, (4, 2, 2, 2)), np.ones(32)),
                   (OperandType(F32, (4,)), np.zeros(4))],
                  [(C.INT32, nnapi.PaddingCode.SAME), (C.INT32, 1), (C.INT32, 1), (C.INT32, 0), (C.BOOL, True)],
                  OperandType(F32, (0, 4, 3, 3)))
    assert run_one(conv, np.zeros((0, 2, 3, 3), dtype=np.float32)).shape == (0, 4, 3, 3)
    fc = _build(Op.FULLY_CONNECTED,
                [(OperandType(F32, (0, 4)), None), (OperandType(F32, (3, 4)), np.ones(12)),
                 (OperandType(F32, (3,)), np.zeros(3))],
                [(C.INT32, 0)], OperandType(F32, (0, 3)))
    assert run_one(fc, np.zeros((0, 4), dtype=np.float32)).shape == (0, 3)

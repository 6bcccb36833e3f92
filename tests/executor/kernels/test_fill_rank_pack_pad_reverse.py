"""FILL, RANK, PACK, MIRROR_PAD and REVERSE (the shape and padding families) through the public API.

Expected values are written by hand or computed with an independent numpy
formula (np.pad, np.flip, np.stack).
"""
import numpy as np
import pytest

import nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from tests.executor.op_harness import assert_bad_data, assert_fails_at_compute, build, run

QUANT_CODES = (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED)


# -- FILL / RANK ----------------------------------------------------------------

@pytest.mark.parametrize("out_code,value_code,value", [
    (C.TENSOR_FLOAT32, C.FLOAT32, 1.5), (C.TENSOR_FLOAT16, C.FLOAT16, -2.25), (C.TENSOR_INT32, C.INT32, 7)])
def test_fill_every_type(out_code, value_code, value):
    m = build(Op.FILL, [(OperandType(C.TENSOR_INT32, [2]), None), (OperandType(value_code), value)],
              [OperandType(out_code, [0, 0])])
    (out,) = run(m, np.array([2, 3], dtype=np.int32))
    assert out.shape == (2, 3)
    assert (out == value).all()


def test_fill_rejects_negative_shape_at_compute():
    m = build(Op.FILL, [(OperandType(C.TENSOR_INT32, [2]), None), (OperandType(C.INT32), 1)],
              [OperandType(C.TENSOR_INT32, [0, 0])])
    assert "negative" in str(assert_fails_at_compute(m, np.array([2, -1], dtype=np.int32)))


def test_fill_value_type_must_match_output():
    assert_bad_data(lambda: build(Op.FILL, [(OperandType(C.TENSOR_INT32, [1]), None), (OperandType(C.FLOAT32), 1.0)],
                                  [OperandType(C.TENSOR_INT32, [3])]))


@pytest.mark.parametrize("code", [C.TENSOR_FLOAT32, C.TENSOR_BOOL8, C.TENSOR_QUANT16_SYMM,
                                  C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_INT32])
def test_rank(code):
    scale = 0.0 if code in (C.TENSOR_FLOAT32, C.TENSOR_BOOL8, C.TENSOR_INT32) else 0.25
    m = build(Op.RANK, [(OperandType(code, [2, 1, 3], scale), None)], [OperandType(C.INT32)])
    (out,) = run(m, np.zeros((2, 1, 3), dtype=OperandType(code, [1], scale).dtype))
    assert out.dtype == np.int32 and int(out) == 3


# -- PACK -------------------------------------------------------------------------

def pack_model(code, in_dims, n, axis, out_dims, scale=0.0, zp=0, axis_input=False):
    ins = [(OperandType(C.INT32), None if axis_input else axis)]
    ins += [(OperandType(code, in_dims, scale, zp), None)] * n
    return build(Op.PACK, ins, [OperandType(code, out_dims, scale, zp)])


def test_pack_by_hand():
    a, b = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    (out0,) = run(pack_model(C.TENSOR_FLOAT32, [2], 2, 0, [2, 2]), a, b)
    (out1,) = run(pack_model(C.TENSOR_FLOAT32, [2], 2, 1, [2, 2]), a, b)
    assert out0.tolist() == [[1, 2], [3, 4]]
    assert out1.tolist() == [[1, 3], [2, 4]]


@pytest.mark.parametrize("code", [C.TENSOR_FLOAT16, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM,
                                  C.TENSOR_QUANT8_ASYMM_SIGNED])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_pack_every_type_and_axis(code, axis):
    dtype = OperandType(code, [1], 1.0 if code in QUANT_CODES else 0.0).dtype
    inputs = [(np.arange(6).reshape(2, 3) * (k + 1)).astype(dtype) for k in range(3)]
    expected = np.stack(inputs, axis=axis)
    scale = 0.25 if code in QUANT_CODES else 0.0
    m = pack_model(code, [2, 3], 3, axis, list(expected.shape), scale=scale, zp=1 if scale else 0)
    (out,) = run(m, *inputs)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, expected)


def test_pack_axis_outside_nnapi_range_fails():
    # NNAPI: the valid range is [0, rank + 1); negative axes are not accepted
    m = pack_model(C.TENSOR_FLOAT32, [2], 2, None, [0, 0], axis_input=True)
    x = np.zeros(2, np.float32)
    assert "out of range" in str(assert_fails_at_compute(m, np.int32(-1), x, x))
    assert "out of range" in str(assert_fails_at_compute(m, np.int32(2), x, x))
    assert_bad_data(lambda: pack_model(C.TENSOR_FLOAT32, [2], 2, 3, [2, 2]))


def test_pack_spec_rejects_different_quantization():
    def make():
        m = nnapi.Model()
        axis = m.add_operand(OperandType(C.INT32))
        a = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 0))
        b = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [2], 0.25, 0))
        out = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [2, 2], 0.5, 0))
        m.set_operand_value(axis, np.int32(0))
        m.add_operation(Op.PACK, [axis, a, b], [out])
        m.identify_inputs_and_outputs([a, b], [out])
        m.finish()
    assert "scale" in str(assert_bad_data(make))


# -- MIRROR_PAD --------------------------------------------------------------------

def mirror_model(code, in_dims, pads, mode, out_dims, scale=0.0, zp=0):
    return build(Op.MIRROR_PAD, [(OperandType(code, in_dims, scale, zp), None),
                                 (OperandType(C.TENSOR_INT32, [len(in_dims), 2]), pads),
                                 (OperandType(C.INT32), mode)],
                 [OperandType(code, out_dims, scale, zp)])


def test_mirror_pad_symmetric_by_hand():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    (out,) = run(mirror_model(C.TENSOR_FLOAT32, [2, 3], [[1, 1], [2, 2]], 1, [4, 7]), x)
    assert out.tolist() == [[2, 1, 1, 2, 3, 3, 2],
                            [2, 1, 1, 2, 3, 3, 2],
                            [5, 4, 4, 5, 6, 6, 5],
                            [5, 4, 4, 5, 6, 6, 5]]


def test_mirror_pad_reflect_by_hand():
    x = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32)
    (out,) = run(mirror_model(C.TENSOR_FLOAT32, [3, 3], [[1, 1], [2, 2]], 0, [5, 7]), x)
    assert out.tolist() == [[6, 5, 4, 5, 6, 5, 4],
                            [3, 2, 1, 2, 3, 2, 1],
                            [6, 5, 4, 5, 6, 5, 4],
                            [9, 8, 7, 8, 9, 8, 7],
                            [6, 5, 4, 5, 6, 5, 4]]


@pytest.mark.parametrize("code", [C.TENSOR_FLOAT16, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM,
                                  C.TENSOR_QUANT8_ASYMM_SIGNED])
@pytest.mark.parametrize("mode,np_mode", [(0, "reflect"), (1, "symmetric")])
def test_mirror_pad_matches_np_pad(code, mode, np_mode):
    scale = 0.5 if code in QUANT_CODES else 0.0
    dtype = OperandType(code, [1], scale).dtype
    x = (np.arange(2 * 3 * 4) % 100).reshape(2, 3, 4).astype(dtype)
    pads = np.array([[1, 0], [2, 2 - mode], [0, 3]], np.int32)
    expected = np.pad(x, pads.tolist(), mode=np_mode)
    (out,) = run(mirror_model(code, [2, 3, 4], pads, mode, list(expected.shape), scale=scale), x)
    np.testing.assert_array_equal(out, expected)


def test_mirror_pad_rejects_too_much_padding_and_bad_mode():
    x = np.zeros((2, 3), np.float32)
    # REFLECT mirrors at most size-1 elements
    assert_fails_at_compute(mirror_model(C.TENSOR_FLOAT32, [2, 3], [[2, 0], [0, 0]], 0, [0, 0]), x)
    (out,) = run(mirror_model(C.TENSOR_FLOAT32, [2, 3], [[2, 0], [0, 0]], 1, [4, 3]), x)  # SYMMETRIC: size
    assert out.shape == (4, 3)
    assert_bad_data(lambda: mirror_model(C.TENSOR_FLOAT32, [2, 3], [[0, 0], [0, 0]], 2, [2, 3]))


def test_mirror_pad_zero_sized_dimension_without_padding():
    (out,) = run(mirror_model(C.TENSOR_FLOAT32, [0, 2], [[0, 0], [1, 1]], 0, [0, 4]), np.zeros((0, 2), np.float32))
    assert out.shape == (0, 4)


def test_mirror_pad_needs_feature_level_7():
    m = mirror_model(C.TENSOR_FLOAT32, [2, 3], [[0, 0], [0, 0]], 0, [2, 3])
    assert m.min_feature_level() == 7
    assert any("needs feature level 7" in p for p in m.validate(feature_level=6))


# -- REVERSE -----------------------------------------------------------------------------

def reverse_model(code, dims, axis, scale=0.0, zp=0):
    return build(Op.REVERSE, [(OperandType(code, dims, scale, zp), None),
                              (OperandType(C.TENSOR_INT32, [1]), None if axis is None else [axis])],
                 [OperandType(code, dims, scale, zp)])


def test_reverse_by_hand():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    (out0,) = run(reverse_model(C.TENSOR_FLOAT32, [2, 3], 0), x)
    (out1,) = run(reverse_model(C.TENSOR_FLOAT32, [2, 3], 1), x)
    assert out0.tolist() == [[4, 5, 6], [1, 2, 3]]
    assert out1.tolist() == [[3, 2, 1], [6, 5, 4]]


@pytest.mark.parametrize("code", [C.TENSOR_FLOAT16, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM,
                                  C.TENSOR_QUANT8_ASYMM_SIGNED])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reverse_every_type_and_axis(code, axis):
    scale = 0.5 if code in QUANT_CODES else 0.0
    x = np.arange(24).reshape(2, 3, 4).astype(OperandType(code, [1], scale).dtype)
    (out,) = run(reverse_model(code, [2, 3, 4], axis, scale=scale, zp=3 if scale else 0), x)
    np.testing.assert_array_equal(out, np.flip(x, axis))


def test_reverse_axis_out_of_range():
    # NNAPI: the axis must lie in [0, rank); a negative axis is an error
    m = reverse_model(C.TENSOR_FLOAT32, [2, 3], None)
    x = np.zeros((2, 3), np.float32)
    assert_fails_at_compute(m, x, np.array([-1], np.int32))
    assert_fails_at_compute(m, x, np.array([2], np.int32))
    assert_bad_data(lambda: reverse_model(C.TENSOR_FLOAT32, [2, 3], 2))


def test_reverse_spec_rejects_wrong_type_and_low_level():
    assert_bad_data(lambda: reverse_model(C.TENSOR_BOOL8, [2], 0))
    m = reverse_model(C.TENSOR_FLOAT32, [2], 0)
    assert any("needs feature level 7" in p for p in m.validate(feature_level=6))

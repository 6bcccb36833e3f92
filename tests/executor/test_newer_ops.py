"""FILL, RANK, BATCH_MATMUL, PACK, MIRROR_PAD, REVERSE through the public API.

Expected values are written by hand or computed with an independent numpy
formula (np.matmul on dequantized values, np.pad, np.flip, np.stack).
"""
import numpy as np
import pytest

import nnapi
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run

QUANT_CODES = (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED)


def tensor(code, dims, scale=0.0, zp=0):
    if code in QUANT_CODES and scale == 0.0:
        scale = 0.5
    return OperandType(code, dims, scale, zp)


def assert_bad_data(fn):
    with pytest.raises(NnapiError) as e:
        fn()
    assert e.value.code == ResultCode.BAD_DATA
    return e.value


def assert_fails_at_compute(model, *arrays):
    with pytest.raises(NnapiError) as e:
        run(model, *arrays)
    assert e.value.code == ResultCode.OP_FAILED
    return e.value


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


# -- BATCH_MATMUL ----------------------------------------------------------------

def matmul_model(code, x_dims, y_dims, out_dims, adj=None, scales=(0.0, 0.0, 0.0), zps=(0, 0, 0)):
    ins = [(OperandType(code, x_dims, scales[0], zps[0]), None), (OperandType(code, y_dims, scales[1], zps[1]), None)]
    ins += [(OperandType(C.BOOL), a) for a in (adj or ())]
    return build(Op.BATCH_MATMUL, ins, [OperandType(code, out_dims, scales[2], zps[2])])


def test_batch_matmul_by_hand():
    m = matmul_model(C.TENSOR_FLOAT32, [2, 2], [2, 2], [2, 2])
    x = np.array([[1, 2], [3, 4]], dtype=np.float32)
    y = np.array([[5, 6], [7, 8]], dtype=np.float32)
    (out,) = run(m, x, y)
    np.testing.assert_array_equal(out, [[19, 22], [43, 50]])


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_adjoints(adj_x, adj_y):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)  # the matrices actually multiplied: a @ b
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    x = a.transpose(0, 2, 1).copy() if adj_x else a
    y = b.transpose(0, 2, 1).copy() if adj_y else b
    m = matmul_model(C.TENSOR_FLOAT32, x.shape, y.shape, [2, 3, 5], adj=(adj_x, adj_y))
    (out,) = run(m, x, y)
    expected = np.einsum("bij,bjk->bik", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_batch_matmul_broadcasts_batch_dimensions():
    x = np.arange(2 * 1 * 2 * 3, dtype=np.int32).reshape(2, 1, 2, 3)
    y = np.arange(1 * 3 * 3 * 2, dtype=np.int32).reshape(1, 3, 3, 2) - 5
    m = matmul_model(C.TENSOR_INT32, x.shape, y.shape, [2, 3, 2, 2], adj=(False,))
    (out,) = run(m, x, y)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(out[i, j], x[i, 0].astype(np.int64) @ y[0, j])


def test_batch_matmul_float16():
    x = np.array([[[0.5, -1.0, 2.0]]], dtype=np.float16)
    y = np.array([[[1.0], [2.0], [0.25]]], dtype=np.float16)
    m = matmul_model(C.TENSOR_FLOAT16, [1, 1, 3], [1, 3, 1], [1, 1, 1])
    (out,) = run(m, x, y)
    assert out.dtype == np.float16 and float(out.reshape(-1)[0]) == 0.5 - 2.0 + 0.5


def test_batch_matmul_quant8_signed_by_hand():
    # real x = [[1, 2]] (scale 0.5, zp -1), y = [[3], [4]] (scale 1, zp 2) -> 11, output scale 0.5 zp 10 -> 32
    x = np.array([[1, 3]], dtype=np.int8)
    y = np.array([[5], [6]], dtype=np.int8)
    m = matmul_model(C.TENSOR_QUANT8_ASYMM_SIGNED, [1, 2], [2, 1], [1, 1], scales=(0.5, 1.0, 0.5), zps=(-1, 2, 10))
    (out,) = run(m, x, y)
    assert out.tolist() == [[32]]


def test_batch_matmul_quant8_signed_matches_real_arithmetic():
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (2, 3, 6), dtype=np.int8)
    y = rng.integers(-128, 128, (2, 6, 4), dtype=np.int8)
    sx, zx, sy, zy, so, zo = 0.05, 3, 0.02, -4, 0.4, -2
    m = matmul_model(C.TENSOR_QUANT8_ASYMM_SIGNED, x.shape, y.shape, [2, 3, 4], adj=(False, False),
                     scales=(sx, sy, so), zps=(zx, zy, zo))
    (out,) = run(m, x, y)
    real = np.matmul((x.astype(np.float64) - zx) * sx, (y.astype(np.float64) - zy) * sy)
    expected = np.clip(np.floor(real / so + 0.5) + zo, -128, 127)
    assert np.abs(out.astype(np.int64) - expected).max() <= 1


def test_batch_matmul_fails_on_mismatched_inner_dimensions():
    m = matmul_model(C.TENSOR_FLOAT32, [0, 0], [0, 0], [0, 0])
    err = assert_fails_at_compute(m, np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    assert "cannot multiply" in str(err)


def test_batch_matmul_spec_rejects_quant8_asymm_and_rank_mismatch():
    # the NNAPI docs allow only the signed 8-bit type
    assert_bad_data(lambda: matmul_model(C.TENSOR_QUANT8_ASYMM, [2, 2], [2, 2], [2, 2], scales=(1.0, 1.0, 1.0)))
    assert_bad_data(lambda: matmul_model(C.TENSOR_FLOAT32, [1, 2, 2], [2, 2], [1, 2, 2]))


def test_batch_matmul_needs_feature_level_6():
    m = matmul_model(C.TENSOR_FLOAT32, [2, 2], [2, 2], [2, 2])
    assert m.min_feature_level() == 6
    problems = m.validate(feature_level=5)
    assert len(problems) == 1 and "needs feature level 6" in problems[0]
    assert m.validate(feature_level=6) == []


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

"""BATCH_MATMUL through the public API.

Expected values are written by hand or computed with np.matmul on dequantized values.
"""
import numpy as np
import pytest

from nnapi import OperandCode as C, OperandType, OperationCode as Op
from tests.executor.op_harness import assert_bad_data, assert_fails_at_compute, build, run


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


# -- the compiled quantized BATCH_MATMUL (conv/batch_matmul.py) ---------------------------------------

def _quant_model(code, x_dims, y_dims, out_dims, adj, scales, zps):
    from tests.executor.kernels.test_elementwise_prepared import model_of
    ins = [OperandType(code, x_dims, scales[0], zps[0]), OperandType(code, y_dims, scales[1], zps[1]),
           OperandType(C.BOOL), OperandType(C.BOOL)]
    return model_of(Op.BATCH_MATMUL, ins, OperandType(code, out_dims, scales[2], zps[2]),
                    {2: np.bool_(adj[0]), 3: np.bool_(adj[1])})


@pytest.mark.parametrize("code,dtype", [(C.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)])   # (the spec's one 8-bit type)
@pytest.mark.parametrize("x_dims,y_dims,out_dims,adj", [
    ([1, 2, 32, 24], [1, 2, 24, 32], [1, 2, 32, 32], (False, False)),   # attention's scores
    ([1, 2, 32, 32], [1, 2, 24, 32], [1, 2, 32, 24], (False, True)),
    ([3, 5, 2], [3, 5, 4], [3, 2, 4], (True, False)),
    ([2, 1, 3, 4], [1, 5, 4, 2], [2, 5, 3, 2], (False, False)),      # broadcast batch dimensions
    ([4, 300], [300, 3], [4, 3], (False, False)),                      # sums beyond float32's integers
    ([4, 3], [5, 3], [4, 5], (False, True))])
@pytest.mark.parametrize("scales,zps", [((0.05, 0.02, 0.1), (3, -7, 1)), ((0.5, 0.25, 0.01), (0, 0, -5)),
                                        ((0.05, 0.04, 0.001), (127, 128, 0))])   # multiplier >= 1: the reference form
def test_quantized_batch_matmul_compiled_equals_the_kernel(code, dtype, x_dims, y_dims, out_dims, adj, scales, zps):
    from executor.runtime import RunState, compile_model
    info = np.iinfo(dtype)
    zps = tuple(int(np.clip(z, info.min, info.max)) for z in zps)
    rng = np.random.default_rng(sum(x_dims) + 7 * sum(y_dims))
    m = _quant_model(code, x_dims, y_dims, out_dims, adj, scales, zps)
    compiled = compile_model(m)
    step = compiled.steps[0]
    assert type(step.run).__name__ == "PreparedQuantBatchMatmul"
    for _ in range(3):   # the first run goes to the kernel (its checks); later ones to the compiled path
        x = rng.integers(info.min, info.max, x_dims, endpoint=True).astype(dtype)
        y = rng.integers(info.min, info.max, y_dims, endpoint=True).astype(dtype)
        fast = compiled.run([x, y], RunState(2.0))[0].array.copy()
        step.run, run = step.kernel, step.run
        slow = compiled.run([x, y], RunState(2.0))[0].array
        step.run = run
        assert fast.dtype == slow.dtype == dtype and np.array_equal(fast, slow)
        # the kernel against the dequantized product, to one output step
        a = (x.astype(np.float64) - zps[0]) * np.float32(scales[0])
        b = (y.astype(np.float64) - zps[1]) * np.float32(scales[1])
        a, b = (np.swapaxes(a, -1, -2) if adj[0] else a), (np.swapaxes(b, -1, -2) if adj[1] else b)
        expect = np.clip(np.round(np.matmul(a, b) / np.float32(scales[2])) + zps[2], info.min, info.max)
        assert np.abs(slow.astype(np.int64) - expect).max() <= 1

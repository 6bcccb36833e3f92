"""The fast paths of small models' float operations (layer norms, attention, classifier heads) give
their plain kernels' results bit for bit, on awkward values too -- but where they sum in BLAS's order
or compute in float32 (a MEAN over the last axis alone, SOFTMAX): there within the fast paths' float
bound (tests/executor/test_fast_paths_agree.py); the kernels themselves are checked against numpy's
float64 arithmetic."""
from __future__ import annotations

import numpy as np
import pytest

import nnapi
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from tests.executor.kernels.test_elementwise_prepared import assert_same_bits, model_of, run_both
from tests.executor.test_fast_paths_agree import FLOAT_BOUND

RNG = np.random.default_rng(22)
F32, F16 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16
_DTYPE = {F32: np.float32, F16: np.float16}


def _values(shape, dtype, special=False):
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    if special and x.size >= 4:
        x.reshape(-1)[:4] = [np.inf, -np.inf, np.nan, -0.0]
    return x


def _mean_model(code, shape, axes, keep):
    axes_t = OperandType(C.TENSOR_INT32, (len(axes),))
    keep_t = OperandType(C.INT32)
    ax = {a % len(shape) for a in axes}
    out = tuple(1 if i in ax else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in ax) or (1,)
    return model_of(Op.MEAN, [OperandType(code, shape), axes_t, keep_t], OperandType(code, out),
                    {1: np.array(axes, np.int32), 2: np.int32(keep)})


@pytest.mark.parametrize("code", [F32, F16])
@pytest.mark.parametrize("shape,axes,keep", [((1, 65, 64), (-1,), 1), ((1, 32, 48), (2,), 0),
                                             ((2, 7, 5, 12), (1, 2), 1), ((3, 4), (0, 1), 0),
                                             ((2, 3, 4), (2, 0, -1), 1), ((1, 1, 1, 128), (1, 2), 0)])
def test_float_mean_agrees_with_the_kernel(code, shape, axes, keep):
    """Bit for bit, but the last axis reduced alone (a product with ones: the fast paths' float bound;
    NaN where the kernel's are)."""
    m = _mean_model(code, shape, axes, keep)
    last_alone = {a % len(shape) for a in axes} == {len(shape) - 1}
    for special in (False, True):
        x = _values(shape, _DTYPE[code], special)
        fast, slow = run_both(m, [x], "PreparedFloatMean")
        _assert_mean_agrees(fast, slow, last_alone)
        with np.errstate(invalid="ignore"):   # inf - inf
            ref = np.mean(x.astype(np.float64), axis=tuple({a % len(shape) for a in axes}), keepdims=bool(keep))
        np.testing.assert_allclose(slow.astype(np.float64), ref.reshape(slow.shape),
                                   rtol=2e-3 if code == F16 else 1e-5, atol=1e-3 if code == F16 else 1e-5)


def _assert_mean_agrees(fast, slow, last_alone: bool):
    if not last_alone:
        assert_same_bits(fast, slow)
        return
    assert fast.dtype == slow.dtype and fast.shape == slow.shape and np.array_equal(np.isnan(fast), np.isnan(slow))
    ok = ~np.isnan(slow)
    bound = FLOAT_BOUND[slow.dtype] * (1 + np.abs(slow[ok].astype(np.float64)).max(initial=0))
    assert np.all((fast[ok] == slow[ok]) | (np.abs(fast[ok].astype(np.float64) - slow[ok]) <= bound))


def test_float_mean_of_another_shape_keeps_working():
    m = _mean_model(F32, (0, 8), (1,), 1)   # a run-time shape: one plan per input shape
    for shape in ((3, 8), (5, 8), (3, 8)):
        x = _values(shape, np.float32)
        fast, slow = run_both(m, [x], "PreparedFloatMean")
        _assert_mean_agrees(fast, slow, True)


def _softmax_model(code, shape, beta, axis):
    return model_of(Op.SOFTMAX, [OperandType(code, shape), OperandType(C.FLOAT32 if code == F32 else C.FLOAT16),
                                 OperandType(C.INT32)], OperandType(code, shape),
                    {1: (np.float32 if code == F32 else np.float16)(beta), 2: np.int32(axis)})


@pytest.mark.parametrize("code", [F32, F16])
@pytest.mark.parametrize("shape,beta,axis", [((1, 4, 65, 65), 1.0, -1), ((1, 12), 1.0, 1), ((2, 3, 5), 0.5, 1),
                                             ((4, 6), 2.0, 0), ((1, 2, 32, 32), 1.0, 3)])
def test_float_softmax_agrees_with_the_kernel(code, shape, beta, axis):
    """The compiled softmax runs in float32 (the kernel in float64): the fast paths' float bound, NaN
    (a row holding inf or NaN) where the kernel's are."""
    m = _softmax_model(code, shape, beta, axis)
    bound = FLOAT_BOUND[np.dtype(_DTYPE[code])] * 2   # outputs are at most 1: 1 + max|plain| <= 2
    for special in (False, True):
        x = _values(shape, _DTYPE[code], special)
        fast, slow = run_both(m, [x], "PreparedFloatSoftmax")
        assert fast.dtype == slow.dtype and np.array_equal(np.isnan(fast), np.isnan(slow))
        ok = ~np.isnan(slow)
        assert np.abs(fast[ok].astype(np.float64) - slow[ok]).max(initial=0) <= bound
        assert not special or np.isnan(slow).any()
    x = _values(shape, _DTYPE[code])
    z = x.astype(np.float64) * beta
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    plain = run_both(m, [x])[1].astype(np.float64)
    np.testing.assert_allclose(plain, e / e.sum(axis=axis, keepdims=True), rtol=1e-3 if code == F16 else 1e-6,
                               atol=1e-6)


def _android_quantize(x, scale, zero_point, lo, hi):
    """Android's QUANTIZE written out: std::round(x / scale) in float32 (halves away from zero), + zero
    point, std::max(lo, std::min(hi, q)) (NaN compares false: it ends at hi)."""
    out = []
    for v in x.astype(np.float32).reshape(-1):
        q = np.float32(v) / np.float32(scale)
        if np.isnan(q):
            out.append(hi)
            continue
        r = np.float32(np.floor(np.float32(abs(q) + np.float32(0.5))))
        q = np.float32((r if q >= 0 else -r) + np.float32(zero_point))
        out.append(int(max(lo, min(hi, q))))
    return np.array(out).reshape(x.shape)


@pytest.mark.parametrize("code", [F32, F16])
@pytest.mark.parametrize("qcode,zero_point,lo,hi", [(C.TENSOR_QUANT8_ASYMM, 128, 0, 255),
                                                    (C.TENSOR_QUANT8_ASYMM_SIGNED, -3, -128, 127)])
@pytest.mark.parametrize("shape", [(1, 1), (1, 49, 40)])
def test_quantize_equals_the_kernel_and_android(code, qcode, zero_point, lo, hi, shape):
    scale = 0.0625
    m = model_of(Op.QUANTIZE, [OperandType(code, shape)], OperandType(qcode, shape, scale, zero_point))
    halves = (np.arange(np.prod(shape)) - np.prod(shape) // 2 + 0.5) * scale   # every tie, both signs
    for x in (_values(shape, _DTYPE[code], special=True) * 5, halves.reshape(shape).astype(_DTYPE[code]),
              np.nextafter(halves, 0).reshape(shape).astype(_DTYPE[code])):
        fast, slow = run_both(m, [x], "PreparedQuantize")
        assert_same_bits(fast, slow)
        assert np.array_equal(slow, _android_quantize(x, scale, zero_point, lo, hi))


def _run_twice(model, arrays, prepared_type):
    """(prepared output of a second run -- the first of each shape is the kernel's --, plain output)."""
    compiled = compile_model(model)
    step = compiled.steps[-1]
    assert type(step.run).__name__ == prepared_type
    compiled.run(arrays, RunState(2.0))
    fast = compiled.run(arrays, RunState(2.0))[0].array.copy()
    slow = compile_model(model, fast_paths=False).run(arrays, RunState(2.0))[0].array
    return fast, slow


@pytest.mark.parametrize("perm", [[0, 2, 1, 3], [3, 1, 0, 2]])
def test_transpose_equals_the_kernel(perm):
    x = _values((2, 3, 4, 5), np.float32)
    perm_t = OperandType(C.TENSOR_INT32, (len(perm),))
    out = tuple(x.shape[p] for p in perm) if perm else x.shape[::-1]
    m = model_of(Op.TRANSPOSE, [OperandType(F32, x.shape), perm_t], OperandType(F32, out),
                 {1: np.array(perm, np.int32)})
    fast, slow = _run_twice(m, [x], "PreparedTranspose")
    assert_same_bits(fast, slow)
    assert np.array_equal(slow, np.transpose(x, perm or None))


@pytest.mark.parametrize("axis,indices", [(0, [1]), (1, [2, 0, 2]), (-1, [[0, 4], [3, 3]]), (2, [1, 2, 3])])
def test_gather_equals_the_kernel(axis, indices):
    x = _values((3, 4, 5), np.float32)
    idx = np.array(indices, np.int32)
    ax = axis % 3
    out = x.shape[:ax] + idx.shape + x.shape[ax + 1:]
    m = model_of(Op.GATHER, [OperandType(F32, x.shape), OperandType(C.INT32), OperandType(C.TENSOR_INT32, idx.shape)],
                 OperandType(F32, out), {1: np.int32(axis), 2: idx})
    fast, slow = _run_twice(m, [x], "PreparedGather")
    assert_same_bits(fast, slow)
    assert np.array_equal(slow, np.take(x, idx, axis=ax))


def test_gather_out_of_range_still_fails():
    idx = np.array([5], np.int32)
    m = model_of(Op.GATHER, [OperandType(F32, (3, 4)), OperandType(C.INT32), OperandType(C.TENSOR_INT32, (1,))],
                 OperandType(F32, (3, 1)), {1: np.int32(1), 2: idx})
    compiled = compile_model(m)
    for _ in range(2):
        with pytest.raises(nnapi.NnapiError, match="out of range"):
            compiled.run([_values((3, 4), np.float32)], RunState(2.0))


@pytest.mark.parametrize("x_dims,y_dims,adj", [((2, 3, 4), (2, 4, 5), (0, 0)), ((1, 4, 8, 6), (1, 4, 8, 6), (0, 1)),
                                               ((3, 5, 2), (3, 5, 4), (1, 0)), ((2, 1, 3, 4), (1, 5, 4, 2), (0, 0))])
def test_batch_matmul_equals_the_kernel(x_dims, y_dims, adj):
    x, y = _values(x_dims, np.float32), _values(y_dims, np.float32)
    a = np.swapaxes(x, -1, -2) if adj[0] else x
    b = np.swapaxes(y, -1, -2) if adj[1] else y
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    m = model_of(Op.BATCH_MATMUL, [OperandType(F32, x_dims), OperandType(F32, y_dims), OperandType(C.BOOL),
                                   OperandType(C.BOOL)], OperandType(F32, expected.shape),
                 {2: np.bool_(adj[0]), 3: np.bool_(adj[1])})
    fast, slow = _run_twice(m, [x, y], "PreparedBatchMatmul")
    assert_same_bits(fast, slow)
    np.testing.assert_allclose(slow, expected, rtol=1e-5, atol=1e-5)

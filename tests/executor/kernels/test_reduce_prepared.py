"""The compiled REDUCE_* (executor/kernels/reduce/prepared.py) gives the plain kernel's results bit for
bit, for every type the operations accept, on awkward values too; the kernels themselves are checked
against numpy's reductions written out here."""
from __future__ import annotations

import numpy as np
import pytest

from nnapi import OperandCode as C, OperandType, OperationCode as Op
from tests.executor.kernels.test_elementwise_prepared import assert_same_bits, model_of, run_both, values

RNG = np.random.default_rng(7)
Q8 = {C.TENSOR_QUANT8_ASYMM: np.uint8, C.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}
# which types each reduction accepts (nnapi/ops/reduce.py)
TYPES = {Op.REDUCE_MAX: (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, *Q8), Op.REDUCE_MIN: (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, *Q8),
         Op.REDUCE_SUM: (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16), Op.REDUCE_PROD: (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16),
         Op.REDUCE_ALL: (C.TENSOR_BOOL8,), Op.REDUCE_ANY: (C.TENSOR_BOOL8,)}
NUMPY = {Op.REDUCE_MAX: np.max, Op.REDUCE_MIN: np.min, Op.REDUCE_SUM: np.sum, Op.REDUCE_PROD: np.prod,
         Op.REDUCE_ALL: np.all, Op.REDUCE_ANY: np.any}
SHAPES = [((32, 64), (0, 1), False), ((1, 32, 64), (-1,), True), ((2, 3, 4, 5), (1, 3), False),
          ((2, 3, 4), (2, 0, -1), True), ((5,), (0,), False)]


def _model(op, code, shape, axes, keep):
    q = code in Q8
    t = OperandType(code, shape, 0.25, 3) if q else OperandType(code, shape)
    ax = {a % len(shape) for a in axes}
    out = tuple(1 if i in ax else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in ax) or (1,)
    out_t = OperandType(code, out, 0.25, 3) if q else OperandType(code, out)
    return model_of(op, [t, OperandType(C.TENSOR_INT32, (len(axes),)), OperandType(C.BOOL)], out_t,
                    {1: np.array(axes, np.int32), 2: np.bool_(keep)}), ax, out


def _values(code, shape):
    if code in Q8:
        info = np.iinfo(Q8[code])
        return RNG.integers(info.min, info.max, shape, endpoint=True).astype(Q8[code])
    if code in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16):
        return (RNG.standard_normal(shape) * 1.5).astype(np.float32 if code == C.TENSOR_FLOAT32 else np.float16)
    return values(code, shape)


@pytest.mark.parametrize("op", list(TYPES))
@pytest.mark.parametrize("shape,axes,keep", SHAPES)
def test_reduce_equals_the_kernel(op, shape, axes, keep):
    for code in TYPES[op]:
        m, ax, out = _model(op, code, shape, axes, keep)
        x = _values(code, shape)
        fast, slow = run_both(m, [x], "PreparedReduce")
        assert fast.shape == slow.shape == out and fast.dtype == slow.dtype == x.dtype
        assert_same_bits(fast, slow)
        wide = x.astype(np.float64) if x.dtype.kind == "f" else x
        expect = NUMPY[op](wide, axis=tuple(sorted(ax)), keepdims=keep).reshape(out)
        if x.dtype.kind == "f":
            np.testing.assert_allclose(slow.astype(np.float64), expect, rtol=2e-3 if code == C.TENSOR_FLOAT16 else 1e-5,
                                       atol=6e-8 if code == C.TENSOR_FLOAT16 else 1e-30)   # (underflowing products)
        else:
            assert np.array_equal(slow, expect)


@pytest.mark.parametrize("op", [Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_SUM])
def test_float_reduce_of_special_values_equals_the_kernel(op):
    m, _, _ = _model(op, C.TENSOR_FLOAT32, (4, 9), (1,), False)
    x = values(C.TENSOR_FLOAT32, (4, 9))   # NaN, infinities, signed zeros mixed in
    with np.errstate(invalid="ignore", over="ignore"):
        fast, slow = run_both(m, [x], "PreparedReduce")
    assert_same_bits(fast, slow)


def test_reduce_of_another_shape_keeps_working():
    m, _, _ = _model(Op.REDUCE_MAX, C.TENSOR_FLOAT32, (0, 8), (1,), True)   # a run-time shape
    for shape in ((3, 8), (5, 8), (3, 8)):
        x = _values(C.TENSOR_FLOAT32, shape)
        fast, slow = run_both(m, [x], "PreparedReduce")
        assert fast.shape == (shape[0], 1)
        assert_same_bits(fast, slow)
        assert np.array_equal(slow[:, 0], x.max(axis=1))

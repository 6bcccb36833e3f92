"""The one float-convolution accumulation rule (executor/kernels/conv/quant.py): the plain kernels and
the fast paths both sum float32 products in float32, and each stays within float_accumulation_bound of
the exact sum, computed here in float64 from the definition (the test's own loops, not the executor's)."""
import numpy as np
import pytest

from executor.kernels.conv.quant import float_accumulation_bound
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op
from tests.executor.kernels.test_fast_path_arithmetic import _model, _run_both

RNG = np.random.default_rng(99)


def _values(shape):
    # magnitudes over several decades, both signs: cancellation makes the bound matter
    return (RNG.standard_normal(shape) * 10.0 ** RNG.integers(-3, 4, shape)).astype(np.float32)


def _check(fast, slow, exact, abs_sum, terms):
    bound = float_accumulation_bound(abs_sum, terms) + np.spacing(np.abs(exact).astype(np.float32))  # + the cast
    for got in (fast, slow):
        assert got.dtype == np.float32
        assert np.all(np.abs(got.astype(np.float64) - exact) <= bound)


def test_fully_connected_within_the_bound():
    k, units = 700, 9
    x, w, b = _values((3, k)), _values((units, k)), _values(units)
    model = _model(Op.FULLY_CONNECTED, OperandType(C.TENSOR_FLOAT32, (3, k)), w, OperandType(C.TENSOR_FLOAT32, w.shape),
                   b, [(C.INT32, 0)], OperandType(C.TENSOR_FLOAT32, (3, units)))
    fast, slow, _ = _run_both(model, x)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    exact = x64 @ w64.T + b
    _check(fast, slow, exact, np.abs(x64) @ np.abs(w64).T + np.abs(b), k)


@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_within_the_bound(depthwise):
    n, h, wd, c, kh, kw = 1, 9, 8, 16, 3, 3
    o = c if depthwise else 5
    x = _values((n, h, wd, c))
    flt = _values((1, kh, kw, c) if depthwise else (o, kh, kw, c))
    b = _values(o)
    scalars = [(C.INT32, 2), (C.INT32, 1), (C.INT32, 1)] + ([(C.INT32, 1)] if depthwise else []) + [(C.INT32, 0)]
    oh, ow = h - kh + 1, wd - kw + 1
    model = _model(Op.DEPTHWISE_CONV_2D if depthwise else Op.CONV_2D, OperandType(C.TENSOR_FLOAT32, x.shape), flt,
                   OperandType(C.TENSOR_FLOAT32, flt.shape), b, scalars, OperandType(C.TENSOR_FLOAT32, (n, oh, ow, o)))
    fast, slow, _ = _run_both(model, x)
    x64, f64 = x.astype(np.float64), flt.astype(np.float64)
    exact = np.zeros((n, oh, ow, o)) + b
    abs_sum = np.zeros((n, oh, ow, o)) + np.abs(b)
    for i in range(kh):
        for j in range(kw):
            patch = x64[:, i:i + oh, j:j + ow, :]
            if depthwise:
                exact += patch * f64[0, i, j]
                abs_sum += np.abs(patch * f64[0, i, j])
            else:
                exact += patch @ f64[:, i, j, :].T
                abs_sum += np.abs(patch) @ np.abs(f64[:, i, j, :]).T
    _check(fast, slow, exact, abs_sum, kh * kw * (1 if depthwise else c))

"""PreparedQuantize (executor/kernels/unary.py) gives the plain kernel's stored values for float32
inputs: halves on both sides of zero (rounded away from zero), signed zeros, NaN (to the top of the
range), infinities, values past float32's exact integers, int8 and uint8 outputs, a second run."""
import numpy as np
import pytest

from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op
from tests.executor.op_harness import build, prepared_and_plain

RNG = np.random.default_rng(8)


@pytest.mark.parametrize("code,scale,zp", [(C.TENSOR_QUANT8_ASYMM_SIGNED, 0.25, -3), (C.TENSOR_QUANT8_ASYMM, 0.1, 128),
                                           (C.TENSOR_QUANT8_ASYMM, 0.0078125, 0), (C.TENSOR_QUANT8_ASYMM_SIGNED, 3.7, 127)])
def test_prepared_quantize_is_the_plain_kernel(code, scale, zp):
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 2.0 ** 25, -(2.0 ** 25) - 1], np.float32)
    halves = (np.arange(-300, 300, dtype=np.float32) + np.float32(0.5)) * np.float32(scale)
    x = np.concatenate([special, halves, RNG.standard_normal(4000).astype(np.float32) * 40 * scale,
                        np.nextafter(halves, np.float32(0)), np.nextafter(halves, np.float32(np.inf))])
    x = x.reshape(1, -1).astype(np.float32)
    model = build(Op.QUANTIZE, [(OperandType(C.TENSOR_FLOAT32, x.shape), None)], [OperandType(code, x.shape, scale, zp)])
    fast, again, slow = prepared_and_plain(model, x, prepared="PreparedQuantize")
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow) and np.array_equal(again, slow)
    assert len(np.unique(fast)) > 100

"""PreparedPool's max pool (padding in a reused buffer, taps reduced into the output buffer) and
quantized average pool (int32 sums by columns then rows, the kernel's rounded mean) give the plain
kernel's values: int8, uint8 and float32 (max pool, with NaN), explicit padding (windows of different
counts) and strides, fused RELU/RELU6 clamps, two input shapes, and a second run."""
import numpy as np
import pytest

from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op
from tests.executor.op_harness import build, prepared_and_plain

RNG = np.random.default_rng(31)
TYPES = {np.int8: (C.TENSOR_QUANT8_ASYMM_SIGNED, 0.05, -20), np.uint8: (C.TENSOR_QUANT8_ASYMM, 0.05, 100),
         np.float32: (C.TENSOR_FLOAT32, 0.0, 0)}
I32 = OperandType(C.INT32, ())


def _pool(dtype, in_shape, pads, strides, filt, fuse, op=Op.MAX_POOL_2D):
    code, scale, zp = TYPES[dtype]
    n, h, w, c = in_shape
    oh = (h + pads[0] + pads[1] - filt[0]) // strides[0] + 1
    ow = (w + pads[2] + pads[3] - filt[1]) // strides[1] + 1
    scalars = [pads[2], pads[3], pads[0], pads[1], strides[1], strides[0], filt[1], filt[0], fuse]
    return build(op, [(OperandType(code, in_shape, scale, zp), None)] + [(I32, v) for v in scalars],
                 [OperandType(code, (n, oh, ow, c), scale, zp)])


def _values(dtype, shape):
    if dtype == np.float32:
        x = RNG.standard_normal(shape).astype(np.float32)
        x.reshape(-1)[::97] = np.nan
        x.reshape(-1)[5::101] = -np.inf
        return x
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x[:, :2] = info.min   # windows of the lowest value only: the padding must not win
    return x


POOLS = [(op, dtype) for op in (Op.MAX_POOL_2D, Op.AVERAGE_POOL_2D) for dtype in TYPES
         if op == Op.MAX_POOL_2D or dtype != np.float32]


@pytest.mark.parametrize("op,dtype", POOLS)
@pytest.mark.parametrize("fuse", [0, 1, 3])
@pytest.mark.parametrize("pads,strides,filt", [((1, 1, 1, 1), (2, 2), (3, 3)), ((0, 1, 0, 1), (2, 2), (2, 2)),
                                               ((0, 0, 0, 0), (1, 1), (3, 2)), ((2, 0, 1, 2), (1, 3), (3, 4)),
                                               ((0, 0, 0, 0), (1, 1), (1, 1))])
def test_prepared_pool_is_the_plain_kernel(op, dtype, fuse, pads, strides, filt):
    for shape in ((1, 9, 10, 5), (2, 7, 8, 3)):
        fast, again, slow = prepared_and_plain(_pool(dtype, shape, pads, strides, filt, fuse, op), _values(dtype, shape),
                                               prepared="PreparedPool")
        assert fast.dtype == slow.dtype and np.array_equal(fast, slow, equal_nan=True)
        assert np.array_equal(again, slow, equal_nan=True)

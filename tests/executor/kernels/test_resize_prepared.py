"""PreparedResizeBilinear (executor/kernels/resize.py) gives the plain kernel's bits: every dtype the
operation takes, NHWC and NCHW, sizes and scales, align_corners / half_pixel_centers, up- and
downsampling with ratios that are not integers, quantized values whose interpolation lands on halves
(the rounding), and a second input shape through the same compiled model."""
import numpy as np
import pytest

import nnapi
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op
from tests.executor.op_harness import prepared_and_plain

RNG = np.random.default_rng(5)

TYPES = {np.float32: (C.TENSOR_FLOAT32, 0.0, 0), np.float16: (C.TENSOR_FLOAT16, 0.0, 0),
         np.uint8: (C.TENSOR_QUANT8_ASYMM, 0.1, 128), np.int8: (C.TENSOR_QUANT8_ASYMM_SIGNED, 0.1, -3)}


def _model(dtype, in_shape, out_hw, nchw, align, half, scales=False):
    code, scale, zp = TYPES[dtype]
    m = nnapi.Model()
    x = m.add_operand(OperandType(code, (0,) * 4, scale, zp))   # any input shape
    ins = [x]
    if scales:
        h, w = (in_shape[2:] if nchw else in_shape[1:3])
        for v in (out_hw[1] / w, out_hw[0] / h):   # width, then height
            s = m.add_operand(OperandType(C.FLOAT32, ()))
            m.set_operand_value(s, np.float32(v))
            ins.append(s)
    else:
        for v in (out_hw[1], out_hw[0]):
            s = m.add_operand(OperandType(C.INT32, ()))
            m.set_operand_value(s, np.int32(v))
            ins.append(s)
    for flag in (nchw, align, half):
        b = m.add_operand(OperandType(C.BOOL, ()))
        m.set_operand_value(b, np.bool_(flag))
        ins.append(b)
    out = m.add_operand(OperandType(code, (0,) * 4, scale, zp))
    m.add_operation(Op.RESIZE_BILINEAR, ins, [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    return m


def _values(dtype, shape):
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x.reshape(-1)[::7] = info.min
    x.reshape(-1)[1::11] = info.max
    return x


def _both(model, x):
    return prepared_and_plain(model, x, prepared="PreparedResizeBilinear")


@pytest.mark.parametrize("dtype", list(TYPES))
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("nchw", [False, True])
def test_prepared_resize_bilinear_is_the_plain_kernel(dtype, align, half, nchw):
    for in_hw, out_hw, c in (((8, 6), (16, 12), 5), ((7, 9), (5, 4), 3), ((5, 5), (13, 7), 16)):
        shape = (2, c, *in_hw) if nchw else (2, *in_hw, c)
        x = _values(dtype, shape)
        fast, again, slow = _both(_model(dtype, shape, out_hw, nchw, align, half), x)
        assert fast.dtype == slow.dtype and fast.shape == slow.shape
        assert np.array_equal(fast, slow, equal_nan=True) and np.array_equal(again, slow, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantized_halves_round_as_the_kernel(dtype):
    """Neighbours differing by one, upsampled by 2 with half-pixel centres (weights 1/4, 3/4) and by 4
    (weights 1/8 ...): many interpolated values are exact halves, rounded away from zero."""
    info = np.iinfo(dtype)
    base = RNG.integers(info.min, info.max - 1, (1, 6, 6, 4), endpoint=True)
    x = (base + (np.indices(base.shape)[2] % 2)).astype(dtype)
    for out_hw, half in (((12, 12), True), ((24, 24), False), ((11, 17), True)):
        fast, _, slow = _both(_model(dtype, x.shape, out_hw, False, False, half), x)
        assert np.array_equal(fast, slow)


def test_scales_and_a_second_input_shape():
    model = _model(np.int8, (1, 6, 10, 3), (12, 15), False, False, True, scales=True)
    compiled = compile_model(model)
    step = compiled.steps[0]
    for shape in ((1, 6, 10, 3), (2, 9, 4, 3), (1, 6, 10, 3)):
        x = _values(np.int8, shape)
        fast = compiled.run([x], RunState(2.0))[0].array.copy()
        prepared, step.run = step.run, step.kernel
        slow = compiled.run([x], RunState(2.0))[0].array
        step.run = prepared
        assert np.array_equal(fast, slow)

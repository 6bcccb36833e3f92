"""Outputs of operations on constants only are computed once at compilation and treated as constants
by the operations after them (executor/runtime.py CompiledModel.folded): a hybrid model's DEQUANTIZE
of its int8 weights feeds CONV_2D and FULLY_CONNECTED, whose fast paths then prepare those weights like
any constant filter, and the DEQUANTIZE steps leave the run. Expected outputs are computed by hand
(numpy in float64 over the dequantized weights), and equal the plain kernels'."""
import numpy as np
import pytest

import nnapi
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C, OperandType, OperationCode as Op

RNG = np.random.default_rng(5)
SCALES = np.array([0.02, 0.5, 0.003], np.float32)   # per output channel


def _scalar(m, code, value):
    i = m.add_operand(OperandType(code))
    m.set_operand_value(i, np.array(value, {C.INT32: np.int32, C.FLOAT32: np.float32}[code]))
    return i


def _dequantized(m, q: np.ndarray):
    """An int8 per-channel constant q (channel 0) and the float32 operand DEQUANTIZE makes of it."""
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, q.shape))
    m.set_operand_symm_per_channel_quant_params(w, SCALES, 0)
    m.set_operand_value(w, q)
    wf = m.add_operand(OperandType(C.TENSOR_FLOAT32, q.shape))
    m.add_operation(Op.DEQUANTIZE, [w], [wf])
    return wf


def _hybrid_conv(q: np.ndarray, also_output: bool):
    """NHWC [1, 5, 6, 2] -> CONV_2D (SAME, stride 1, RELU) with DEQUANTIZE(q) as its filter [3, 3, 3, 2];
    DEQUANTIZE's result is also a model output when `also_output`."""
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1, 5, 6, 2)))
    wf = _dequantized(m, q)
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, (3,)))
    m.set_operand_value(b, np.array([0.25, -1.0, 0.0], np.float32))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1, 5, 6, 3)))
    args = [_scalar(m, C.INT32, v) for v in (1, 1, 1, 1)]   # padding SAME, strides 1, fuse RELU
    m.add_operation(Op.CONV_2D, [x, wf, b, *args], [out])
    m.identify_inputs_and_outputs([x], [out, wf] if also_output else [out])
    m.finish()
    return m


def _conv_by_hand(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SAME 3x3 stride-1 convolution in float64, then RELU."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros(x.shape[:3] + (w.shape[0],))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,oc->nhwo", xp[:, i:i + x.shape[1], j:j + x.shape[2]], w[:, i, j, :])
    return np.maximum(out + b, 0)


@pytest.mark.parametrize("also_output", [False, True])
def test_hybrid_conv_weights_are_prepared_once(also_output):
    q = RNG.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    m = _hybrid_conv(q, also_output)
    fast, plain = compile_model(m), compile_model(m, fast_paths=False)
    deq, conv = fast.steps
    # the filter is a constant to the conv's fast path only when DEQUANTIZE's result is not handed out
    assert (conv.run is not conv.kernel) != also_output
    assert (deq.outputs[0] in fast.folded) != also_output
    assert all(p[0] is not deq for p in fast._program) != also_output
    w = q.astype(np.float64) * SCALES.reshape(3, 1, 1, 1)
    for _ in range(2):   # a second run finds the folded weights again (the first run freed them)
        x = RNG.standard_normal((1, 5, 6, 2)).astype(np.float32)
        got = [v.array for v in fast.run([x], RunState(1.0))]
        ref = [v.array for v in plain.run([x], RunState(1.0))]
        np.testing.assert_allclose(got[0], _conv_by_hand(x, w, [0.25, -1.0, 0.0]), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-6, atol=1e-6)
        if also_output:
            np.testing.assert_array_equal(got[1], w.astype(np.float32))


def test_hybrid_fully_connected_weights_are_prepared_once():
    q = RNG.integers(-127, 128, (3, 8)).astype(np.int8)
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (4, 8)))
    wf = _dequantized(m, q)
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, (3,)))
    m.set_operand_value(b, np.zeros(3, np.float32))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (4, 3)))
    m.add_operation(Op.FULLY_CONNECTED, [x, wf, b, _scalar(m, C.INT32, 0)], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    fast = compile_model(m)
    fc = fast.steps[1]
    assert fc.run is not fc.kernel and fc.bound.runtime == {"input"}
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    want = x.astype(np.float64) @ (q.astype(np.float64) * SCALES.reshape(3, 1)).T
    np.testing.assert_allclose(fast.run([x], RunState(1.0))[0].array, want, rtol=1e-5, atol=1e-5)



def test_a_chain_of_constant_operations_folds_into_the_filter():
    """FULLY_CONNECTED's weights made by DEQUANTIZE then TRANSPOSE of a constant: both fold, in order, and
    the FC is prepared on the result."""
    q = RNG.integers(-127, 128, (8, 3)).astype(np.int8)   # [in, out]: the transpose makes it [out, in]
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (2, 8)))
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM, (8, 3), 0.125, 0))
    m.set_operand_value(w, q)
    wf = m.add_operand(OperandType(C.TENSOR_FLOAT32, (8, 3)))
    m.add_operation(Op.DEQUANTIZE, [w], [wf])
    perm = m.add_operand(OperandType(C.TENSOR_INT32, (2,)))
    m.set_operand_value(perm, np.array([1, 0], np.int32))
    wt = m.add_operand(OperandType(C.TENSOR_FLOAT32, (3, 8)))
    m.add_operation(Op.TRANSPOSE, [wf, perm], [wt])
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, (3,)))
    m.set_operand_value(b, np.array([1.0, 0.0, -1.0], np.float32))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (2, 3)))
    m.add_operation(Op.FULLY_CONNECTED, [x, wt, b, _scalar(m, C.INT32, 0)], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    fast = compile_model(m)
    assert set(fast.folded) == {wf, wt} and len(fast._program) == 1
    fc = fast.steps[2]
    assert fc.run is not fc.kernel
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    want = x.astype(np.float64) @ (q.astype(np.float64) * 0.125) + [1.0, 0.0, -1.0]
    np.testing.assert_allclose(fast.run([x], RunState(1.0))[0].array, want, rtol=1e-5, atol=1e-5)


def test_a_constant_operation_that_fails_still_fails_when_the_model_runs():
    """GATHER of a constant with an index out of range: not folded; running reports the kernel's error,
    as without fast paths."""
    m = nnapi.Model()
    table = m.add_operand(OperandType(C.TENSOR_FLOAT32, (3,)))
    m.set_operand_value(table, np.array([1.0, 2.0, 3.0], np.float32))
    idx = m.add_operand(OperandType(C.TENSOR_INT32, (1,)))
    m.set_operand_value(idx, np.array([7], np.int32))
    g = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1,)))
    m.add_operation(Op.GATHER, [table, _scalar(m, C.INT32, 0), idx], [g])
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1,)))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1,)))
    m.add_operation(Op.ADD, [x, g, _scalar(m, C.INT32, 0)], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    errors = []
    for fast_paths in (True, False):
        compiled = compile_model(m, fast_paths=fast_paths)
        assert not compiled.folded
        with pytest.raises(nnapi.NnapiError) as e:
            compiled.run([np.ones(1, np.float32)], RunState(1.0))
        errors.append((e.value.code, str(e.value)))
    assert errors[0] == errors[1] and errors[0][0] == nnapi.ResultCode.OP_FAILED

"""MIRROR_PAD with constant paddings runs its compiled form (shape/space.py PreparedMirrorPad): the
output equals numpy's own np.pad in "reflect" / "symmetric" mode (an independent statement of both
modes) for every type the operation accepts, on the fast path and on the plain kernel, and paddings
past what the mode allows still fail when the model runs."""
import numpy as np
import pytest

import nnapi
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C, OperandType, OperationCode as Op

RNG = np.random.default_rng(11)
TYPES = [(C.TENSOR_FLOAT32, np.float32), (C.TENSOR_FLOAT16, np.float16), (C.TENSOR_INT32, np.int32),
         (C.TENSOR_QUANT8_ASYMM, np.uint8), (C.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)]
CASES = [((1, 512), [[0, 0], [16, 16]]), ((2, 3, 4), [[1, 1], [0, 2], [3, 0]]),
         ((1, 4, 5, 2), [[0, 0], [3, 3], [4, 1], [0, 0]]), ((3,), [[0, 0]]), ((1, 6, 1), [[0, 0], [5, 0], [0, 0]])]


def _model(code, dims, pads, mode):
    m = nnapi.Model()
    q = dict(scale=0.5, zero_point=3) if code in (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED) else {}
    x = m.add_operand(OperandType(code, dims, **q))
    p = m.add_operand(OperandType(C.TENSOR_INT32, (len(dims), 2)))
    m.set_operand_value(p, np.array(pads, np.int32))
    k = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(k, np.int32(mode))
    out_dims = tuple(n + a + b for n, (a, b) in zip(dims, pads))
    y = m.add_operand(OperandType(code, out_dims, **q))
    m.add_operation(Op.MIRROR_PAD, [x, p, k], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


@pytest.mark.parametrize("code,dtype", TYPES)
@pytest.mark.parametrize("dims,pads", CASES)
@pytest.mark.parametrize("mode,np_mode", [(0, "reflect"), (1, "symmetric")])
def test_mirror_pad_equals_numpy(code, dtype, dims, pads, mode, np_mode):
    x = (RNG.integers(0, 100, dims) if np.dtype(dtype).kind in "iu" else RNG.standard_normal(dims)).astype(dtype)
    want = np.pad(x, pads, mode=np_mode)
    for fast_paths in (True, False):
        compiled = compile_model(_model(code, dims, pads, mode), fast_paths=fast_paths)
        step = compiled.steps[0]
        assert (type(step.run).__name__ == "PreparedMirrorPad") == fast_paths
        for _ in range(2):   # the planned output buffer is reused from run to run
            got = compiled.run([x], RunState(1.0))[0].array
            assert got.dtype == want.dtype and np.array_equal(got, want)


def test_reflect_past_the_edge_fails_when_the_model_runs():
    """REFLECT of 5 elements on a dimension of 5 (at most 4 can be mirrored): the same OP_FAILED with and
    without the fast path."""
    errors = []
    for fast_paths in (True, False):
        compiled = compile_model(_model(C.TENSOR_FLOAT32, (1, 5), [[0, 0], [5, 0]], 0), fast_paths=fast_paths)
        with pytest.raises(nnapi.NnapiError) as e:
            compiled.run([np.ones((1, 5), np.float32)], RunState(1.0))
        errors.append((e.value.code, str(e.value)))
    assert errors[0] == errors[1] and errors[0][0] == nnapi.ResultCode.OP_FAILED

"""Edge cases of nnapi.Execution: reruns after a failure, non-contiguous output buffers, inputs from memory."""
import numpy as np
import pytest

import executor  # noqa: F401  (registers the numpy executor as nnapi's backend)
import nnapi
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode


def _gather_execution():
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, [4]))
    ax = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(ax, np.int32(0))
    idx = m.add_operand(OperandType(C.TENSOR_INT32, [2]))
    y = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2]))
    m.add_operation(Op.GATHER, [x, ax, idx], [y])
    m.identify_inputs_and_outputs([x, idx], [y])
    m.finish()
    comp = nnapi.Compilation(m)
    comp.finish()
    return nnapi.Execution(comp)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_failed_rerun_of_reusable_execution_has_no_stale_output_dimensions(asynchronous):
    ex = _gather_execution()
    ex.set_reusable(True)
    indices = np.array([0, 1], np.int32)
    ex.set_input(0, np.arange(4, dtype=np.float32))
    ex.set_input(1, indices)
    ex.set_output(0, np.zeros(2, np.float32))
    ex.compute()
    assert ex.get_output_operand_dimensions(0) == (2,)
    indices[:] = [7, 9]  # out of range: the second run fails
    with pytest.raises(NnapiError) as e:
        ex.start_compute().wait() if asynchronous else ex.compute()
    assert e.value.code == ResultCode.OP_FAILED
    with pytest.raises(NnapiError) as e:
        ex.get_output_operand_dimensions(0)  # the NDK: BAD_STATE after a failure other than insufficient size
    assert e.value.code == ResultCode.BAD_STATE


def test_output_into_non_contiguous_buffer_of_another_shape_is_written():
    from tests.nnapi.helpers import dynamic_add_model
    m = dynamic_add_model()
    comp = nnapi.Compilation(m)
    comp.finish()
    ex = nnapi.Execution(comp)
    ex.set_input(0, np.ones((2, 3), np.float32))
    ex.set_input(1, np.ones((2, 3), np.float32))
    backing = np.zeros((4, 6), np.float32)
    out = backing[:, :3]  # writable, 12 elements, not contiguous (no flat view)
    ex.set_output(0, out)
    ex.compute()
    assert ex.get_output_operand_dimensions(0) == (2, 3)
    assert out.reshape(-1)[:6].tolist() == [2.0] * 6


def test_input_from_memory_of_unknown_dimensions_needs_dims():
    from tests.nnapi.helpers import dynamic_add_model
    comp = nnapi.Compilation(dynamic_add_model())
    comp.finish()
    ex = nnapi.Execution(comp)
    mem = nnapi.Memory.from_buffer(np.ones(6, np.float32))
    with pytest.raises(NnapiError) as e:
        ex.set_input_from_memory(0, mem, 0, 24)  # [0, 0] operand, no dims: BAD_DATA now, as the NDK
    assert e.value.code == ResultCode.BAD_DATA
    ex.set_input_from_memory(0, mem, 0, 24, dims=[2, 3])
    ex.set_input_from_memory(1, mem, 0, 24, dims=[2, 3])
    out = np.zeros((2, 3), np.float32)
    ex.set_output(0, out)
    ex.compute()
    assert (out == 2).all()

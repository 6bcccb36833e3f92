"""The NDK's model-building rules: BAD_STATE after finish, BAD_DATA for bad types,
indices, graphs and values; the <=128-byte copy vs reference semantics."""
import numpy as np
import pytest

import nnapi
from nnapi import Lifetime, NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import run

from tests.nnapi.helpers import SHAPE, add_model, f32


def code_of(fn):
    with pytest.raises(NnapiError) as e:
        fn()
    return e.value.code


def test_codes_know_their_feature_level():
    assert Op.ADD.feature_level == 1 and Op.DIV.feature_level == 2 and Op.ABS.feature_level == 3
    assert Op.IF.feature_level == 4 and Op.BATCH_MATMUL.feature_level == 6 and Op.REVERSE.feature_level == 7
    assert int(Op.RESIZE_NEAREST_NEIGHBOR) == 94 and int(Op.REVERSE) == 105
    assert int(C.SUBGRAPH) == 15 and C.TENSOR_QUANT8_ASYMM_SIGNED.feature_level == 4
    assert int(ResultCode.DEAD_OBJECT) == 14 and nnapi.Priority.MEDIUM == 100
    assert nnapi.FeatureLevel.FL6.android_api == 1000006 and nnapi.FeatureLevel.FL3.android_api == 29


@pytest.mark.parametrize("call", [
    lambda m: m.add_operand(f32()),
    lambda m: m.set_operand_value(0, np.zeros(SHAPE, np.float32)),
    lambda m: m.add_operation(Op.ADD, [0, 1, 2], [3]),
    lambda m: m.identify_inputs_and_outputs([0], [3]),
    lambda m: m.relax_computation_float32_to_float16(True),
    lambda m: m.finish(),
    lambda m: m.set_operand_value_from_memory(0, nnapi.Memory.allocate(120), 0, 120),
    lambda m: m.set_operand_symm_per_channel_quant_params(0, [1.0], 0),
    lambda m: m.set_operand_value_from_model(0, add_model()),
])
def test_any_change_after_finish_is_bad_state(call):
    m = add_model()
    assert code_of(lambda: call(m)) == ResultCode.BAD_STATE


@pytest.mark.parametrize("otype", [
    lambda: OperandType(99, [1]),                                     # unknown type code
    lambda: OperandType(C.TENSOR_QUANT8_ASYMM, [2], 0.0, 0),          # non-positive scale
    lambda: OperandType(C.TENSOR_QUANT8_ASYMM, [2], -1.0, 0),
    lambda: OperandType(C.TENSOR_QUANT8_ASYMM, [2], float("nan"), 0),
    lambda: OperandType(C.TENSOR_QUANT8_ASYMM, [2], 0.5, 256),        # zero point out of range
    lambda: OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, -129),
    lambda: OperandType(C.TENSOR_QUANT16_SYMM, [2], 0.5, 3),
    lambda: OperandType(C.INT32, [2]),                                # dimensions on a scalar
    lambda: OperandType(C.TENSOR_FLOAT32, [2, -1]),                   # negative dimension
])
def test_bad_operand_types_are_bad_data(otype):
    m = nnapi.Model()
    assert code_of(lambda: m.add_operand(otype())) == ResultCode.BAD_DATA


def test_index_out_of_range_is_bad_data():
    m = add_model(finish=False)
    assert code_of(lambda: m.set_operand_value(17, np.zeros(1))) == ResultCode.BAD_DATA
    assert code_of(lambda: m.add_operation(Op.ADD, [0, 1, 99], [3])) == ResultCode.BAD_DATA
    assert code_of(lambda: m.identify_inputs_and_outputs([0], [42])) == ResultCode.BAD_DATA
    assert code_of(lambda: m.add_operation(12345, [0], [3])) == ResultCode.BAD_DATA


def test_operand_written_by_two_operations_is_bad_data():
    m = add_model(finish=False)
    err = pytest.raises(NnapiError, m.add_operation, Op.ADD, [0, 1, 2], [3])
    assert err.value.code == ResultCode.BAD_DATA and "already written by operation 0" in err.value.message


def test_reading_an_operand_nobody_writes_is_bad_data():
    m = nnapi.Model()
    a, orphan = m.add_operand(f32()), m.add_operand(f32(), name="orphan")
    fuse, out = m.add_operand(OperandType(C.INT32)), m.add_operand(f32())
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [a, orphan, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    err = pytest.raises(NnapiError, m.finish).value
    assert err.code == ResultCode.BAD_DATA and "operand 1 (orphan) is never written" in err.message


def test_cycle_is_bad_data():
    m = nnapi.Model()
    a, t1, t2 = m.add_operand(f32()), m.add_operand(f32()), m.add_operand(f32())
    fuse, out = m.add_operand(OperandType(C.INT32)), m.add_operand(f32())
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [a, t2, fuse], [t1])
    m.add_operation(Op.ADD, [t1, a, fuse], [t2])
    m.add_operation(Op.ADD, [t1, t2, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    err = pytest.raises(NnapiError, m.finish).value
    assert err.code == ResultCode.BAD_DATA and "cycle: operation 0 (ADD), operation 1 (ADD), operation 2 (ADD)" in err.message


def test_constant_model_input_or_output_is_bad_data():
    m = add_model(finish=False, const_b=np.ones(SHAPE, np.float32))
    assert code_of(lambda: m.identify_inputs_and_outputs([0, 1], [3])) == ResultCode.BAD_DATA
    assert code_of(lambda: m.identify_inputs_and_outputs([0], [1])) == ResultCode.BAD_DATA


def test_value_length_mismatch_is_bad_data():
    m = nnapi.Model()
    t = m.add_operand(f32())
    assert code_of(lambda: m.set_operand_value(t, np.zeros(29, np.float32))) == ResultCode.BAD_DATA
    assert code_of(lambda: m.set_operand_value(t, b"\0" * 119)) == ResultCode.BAD_DATA
    s = m.add_operand(OperandType(C.INT32))
    assert code_of(lambda: m.set_operand_value(s, b"\0\0")) == ResultCode.BAD_DATA


def test_invalid_operation_is_rejected_at_finish_with_bad_data():
    m = nnapi.Model()
    a = m.add_operand(f32())
    b = m.add_operand(OperandType(C.TENSOR_INT32, SHAPE))  # mixes float32 and int32
    fuse, out = m.add_operand(OperandType(C.INT32)), m.add_operand(f32())
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    err = pytest.raises(NnapiError, m.finish).value
    assert err.code == ResultCode.BAD_DATA and "operation 0 (ADD)" in err.message


def test_validate_reports_every_problem_and_min_feature_level():
    m = nnapi.Model()
    a, b = m.add_operand(f32()), m.add_operand(f32())
    fuse = m.add_operand(OperandType(C.INT32))
    t, out = m.add_operand(f32()), m.add_operand(f32())
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.SUB, [a, b, fuse], [t])   # SUB: feature level 2
    m.add_operation(Op.DIV, [t, b, fuse], [out])  # DIV: feature level 2
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    assert m.min_feature_level() == 2
    problems = m.validate(feature_level=1)
    assert len(problems) == 2 and "operation 0 (SUB)" in problems[0] and "operation 1 (DIV)" in problems[1]
    assert m.validate(feature_level=2) == []


def test_small_values_are_copied_large_values_are_referenced():
    m = nnapi.Model()
    small = m.add_operand(OperandType(C.TENSOR_FLOAT32, [32]))    # 128 bytes: copied
    large = m.add_operand(OperandType(C.TENSOR_FLOAT32, [33]))    # 132 bytes: referenced
    s_val, l_val = np.ones(32, np.float32), np.ones(33, np.float32)
    m.set_operand_value(small, s_val)
    m.set_operand_value(large, l_val)
    s_val[0] = l_val[0] = 7.0
    assert m.operands[small].value[0] == 1.0 and m.operands[small].lifetime is Lifetime.CONSTANT_COPY
    assert m.operands[large].value[0] == 7.0 and m.operands[large].lifetime is Lifetime.CONSTANT_REFERENCE
    assert not m.operands[small].value.flags.writeable


def test_omitted_operand_and_read_access():
    m = add_model(const_b=np.full(SHAPE, 2, np.float32))
    op = m.operations[0]
    assert op.code is Op.ADD and op.inputs == (0, 1, 2) and op.outputs == (3,)
    assert m.inputs == (0,) and m.outputs == (3,) and m.relaxed is False
    assert m.operands[0].name == "a" and m.operands[0].lifetime is Lifetime.SUBGRAPH_INPUT
    assert m.operands[3].lifetime is Lifetime.SUBGRAPH_OUTPUT
    assert m.operands[1].value.shape == SHAPE and m.operands[0].value is None


def test_per_channel_params_rules():
    m = nnapi.Model()
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, [3, 1, 1, 2]))
    f = m.add_operand(f32())
    assert code_of(lambda: m.set_operand_symm_per_channel_quant_params(f, [1.0], 0)) == ResultCode.BAD_DATA
    assert code_of(lambda: m.set_operand_symm_per_channel_quant_params(w, [1.0, 2.0], 0)) == ResultCode.BAD_DATA
    assert code_of(lambda: m.set_operand_symm_per_channel_quant_params(w, [1.0, 0.0, 1.0], 0)) == ResultCode.BAD_DATA
    assert code_of(lambda: m.set_operand_symm_per_channel_quant_params(w, [1.0] * 3, 4)) == ResultCode.BAD_DATA
    m.set_operand_symm_per_channel_quant_params(w, [0.5, 0.25, 1.0], 0)
    assert m.operands[w].channel_quant.scales == (0.5, 0.25, 1.0) and m.operands[w].channel_quant.channel_dim == 0


def test_subgraph_operand_needs_finished_model():
    m = nnapi.Model()
    s = m.add_operand(OperandType(C.SUBGRAPH))
    assert code_of(lambda: m.set_operand_value_from_model(s, add_model(finish=False))) == ResultCode.BAD_DATA
    t = m.add_operand(f32())
    assert code_of(lambda: m.set_operand_value_from_model(t, add_model())) == ResultCode.BAD_DATA
    sub = add_model()
    m.set_operand_value_from_model(s, sub)
    assert m.operands[s].lifetime is Lifetime.SUBGRAPH


def test_add_runs_through_compilation_and_execution():
    m = add_model()
    a = np.arange(30, dtype=np.float32).reshape(SHAPE)
    b = np.full(SHAPE, 0.5, np.float32)
    (out,) = run(m, a, b)
    np.testing.assert_array_equal(out, a + 0.5)

"""IF and WHILE through the public API: branch selection, dynamic shapes, the
WHILE input split (input-output / state-only / input-only), the loop timeout,
and the specs' subgraph signature checks."""
import time

import numpy as np
import pytest

import nnapi
from executor.registry import missing_reason
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import run

F32 = OperandType(C.TENSOR_FLOAT32, [2])
BOOL1 = OperandType(C.TENSOR_BOOL8, [1])


def binary_model(code, dims=(2,), constant=None, finish=True):
    """out = a <code> b (fuse NONE); b is a constant when given, else a second input."""
    m = nnapi.Model()
    t = OperandType(C.TENSOR_FLOAT32, dims)
    a = m.add_operand(t)
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, [len(constant)]) if constant is not None else t)
    fuse = m.add_operand(OperandType(C.INT32))
    out = m.add_operand(t)
    m.set_operand_value(fuse, np.int32(0))
    if constant is not None:
        m.set_operand_value(b, np.asarray(constant, np.float32))
    m.add_operation(code, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a] if constant is not None else [a, b], [out])
    if finish:
        m.finish()
    return m


def if_model(then_m, else_m, data_types, out_types, finish=True):
    m = nnapi.Model()
    cond = m.add_operand(BOOL1)
    then_i, else_i = m.add_operand(OperandType(C.SUBGRAPH)), m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(then_i, then_m)
    m.set_operand_value_from_model(else_i, else_m)
    data = [m.add_operand(t) for t in data_types]
    outs = [m.add_operand(t) for t in out_types]
    m.add_operation(Op.IF, [cond, then_i, else_i] + data, outs)
    m.identify_inputs_and_outputs([cond] + data, outs)
    if finish:
        m.finish()
    return m


# -- IF -----------------------------------------------------------------------------------

@pytest.mark.parametrize("cond,expected", [(True, [11.0, 22.0]), (False, [-9.0, -18.0])])
def test_if_runs_the_selected_branch(cond, expected):
    m = if_model(binary_model(Op.ADD), binary_model(Op.SUB), [F32, F32], [F32])
    (out,) = run(m, np.array([cond]), np.array([1, 2], np.float32), np.array([10, 20], np.float32))
    assert out.tolist() == expected


def test_if_with_unknown_shapes_in_the_branch_and_the_output():
    # the branches accept any [?, ?] tensor; the IF output's dimensions are worked out at run time
    branch = binary_model(Op.ADD, dims=(0, 0), constant=[100.0])
    m = if_model(branch, branch, [OperandType(C.TENSOR_FLOAT32, [0, 0])], [OperandType(C.TENSOR_FLOAT32, [0, 0])])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = run(m, np.array([False]), x)
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out, x + 100)


def test_if_spec_checks_the_branch_signatures():
    one_input = binary_model(Op.ADD, constant=[1.0, 1.0])
    err = pytest.raises(NnapiError, if_model, one_input, binary_model(Op.SUB), [F32, F32], [F32]).value
    assert err.code == ResultCode.BAD_DATA and "then_model has 1 inputs" in str(err)
    wrong_type = [OperandType(C.TENSOR_INT32, [2]), F32]
    err = pytest.raises(NnapiError, if_model, binary_model(Op.ADD), binary_model(Op.SUB), wrong_type, [F32]).value
    assert err.code == ResultCode.BAD_DATA and "TENSOR_INT32 vs TENSOR_FLOAT32" in str(err)


def test_if_condition_must_be_bool8():
    m = nnapi.Model()
    cond = m.add_operand(OperandType(C.TENSOR_INT32, [1]))
    subs = [m.add_operand(OperandType(C.SUBGRAPH)) for _ in range(2)]
    for s in subs:
        m.set_operand_value_from_model(s, binary_model(Op.ADD))
    a, b, out = m.add_operand(F32), m.add_operand(F32), m.add_operand(F32)
    m.add_operation(Op.IF, [cond] + subs + [a, b], [out])
    m.identify_inputs_and_outputs([cond, a, b], [out])
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_if_needs_feature_level_4():
    m = if_model(binary_model(Op.ADD), binary_model(Op.SUB), [F32, F32], [F32])
    assert m.min_feature_level() == 4
    problems = m.validate(feature_level=3)
    assert problems and all("needs feature level 4" in p for p in problems)
    assert m.validate(feature_level=4) == []


# -- WHILE --------------------------------------------------------------------------------

def identity_condition(input_types, flag_position):
    """Condition subgraph returning its input `flag_position` (a TENSOR_BOOL8 [1]) as is."""
    m = nnapi.Model()
    ins = [m.add_operand(t) for t in input_types]
    m.identify_inputs_and_outputs(ins, [ins[flag_position]])
    m.finish()
    return m


def while_model(cond, body, input_types, input_values, out_types):
    """WHILE over model inputs; `input_values[k]` makes input k a constant instead."""
    m = nnapi.Model()
    c, b = m.add_operand(OperandType(C.SUBGRAPH)), m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(c, cond)
    m.set_operand_value_from_model(b, body)
    ins = [m.add_operand(t) for t in input_types]
    for i, v in zip(ins, input_values):
        if v is not None:
            m.set_operand_value(i, v)
    outs = [m.add_operand(t) for t in out_types]
    m.add_operation(Op.WHILE, [c, b] + ins, outs)
    m.identify_inputs_and_outputs([i for i, v in zip(ins, input_values) if v is None], outs)
    m.finish()
    return m


def step_body():
    """Body (x, go, stop) -> (x + 1, stop): loop-carried x and go, input-only stop."""
    m = nnapi.Model()
    x, go, stop = m.add_operand(F32), m.add_operand(BOOL1), m.add_operand(BOOL1)
    one, fuse, y = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1])), m.add_operand(OperandType(C.INT32)), \
        m.add_operand(F32)
    m.set_operand_value(one, np.array([1], np.float32))
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [x, one, fuse], [y])
    m.identify_inputs_and_outputs([x, go, stop], [y, stop])
    m.finish()
    return m


LOOP_TYPES = [F32, BOOL1, BOOL1]  # x, go, stop


def step_loop(input_values, out_types):
    """WHILE go: (x, go) = (x + 1, stop)."""
    return while_model(identity_condition(LOOP_TYPES, 1), step_body(), LOOP_TYPES, input_values, out_types)


def test_while_state_only_and_input_only_operands():
    # m = 1 (x), k = 1 (go: state-only), n = 1 (stop): the body runs once, then go is false
    m = step_loop([None, np.array([True]), np.array([False])], [F32])
    (out,) = run(m, np.array([5, 7], np.float32))
    assert out.tolist() == [6, 8]


def test_while_condition_false_at_start_returns_the_initial_values():
    m = step_loop([None, None, None], [F32, BOOL1])  # go is input-output here: k = 0
    x, flag = run(m, np.array([5, 7], np.float32), np.array([False]), np.array([False]))
    assert x.tolist() == [5, 7] and flag.tolist() == [False]


def test_while_loop_timeout():
    # go stays true forever: the execution must end with MISSED_DEADLINE_TRANSIENT, quickly
    m = step_loop([None, None, np.array([True])], [F32, BOOL1])
    start = time.monotonic()
    with pytest.raises(NnapiError) as e:
        run(m, np.zeros(2, np.float32), np.array([True]), loop_timeout=0.05)
    assert e.value.code == ResultCode.MISSED_DEADLINE_TRANSIENT and "WHILE" in str(e.value)
    assert time.monotonic() - start < 2.0


@pytest.mark.skipif(missing_reason(Op.LESS) is not None, reason="LESS has no kernel yet")
def test_while_counts_to_n():
    # cond: i < n; body: (acc, i, n) -> (acc * 2, i + 1); result 2**n
    def cond_model():
        m = nnapi.Model()
        acc, i, n = m.add_operand(F32), m.add_operand(OperandType(C.TENSOR_INT32, [1])), \
            m.add_operand(OperandType(C.TENSOR_INT32, [1]))
        out = m.add_operand(BOOL1)
        m.add_operation(Op.LESS, [i, n], [out])
        m.identify_inputs_and_outputs([acc, i, n], [out])
        m.finish()
        return m

    def body_model():
        m = nnapi.Model()
        i32 = OperandType(C.TENSOR_INT32, [1])
        acc, i, n = m.add_operand(F32), m.add_operand(i32), m.add_operand(i32)
        one, fuse = m.add_operand(i32), m.add_operand(OperandType(C.INT32))
        acc2, i2 = m.add_operand(F32), m.add_operand(i32)
        m.set_operand_value(one, np.array([1], np.int32))
        m.set_operand_value(fuse, np.int32(0))
        m.add_operation(Op.ADD, [acc, acc, fuse], [acc2])
        m.add_operation(Op.ADD, [i, one, fuse], [i2])
        m.identify_inputs_and_outputs([acc, i, n], [acc2, i2])
        m.finish()
        return m

    i32 = OperandType(C.TENSOR_INT32, [1])
    m = while_model(cond_model(), body_model(), [F32, i32, i32], [None, np.array([0], np.int32), None], [F32])
    (out,) = run(m, np.array([1, 3], np.float32), np.array([5], np.int32))
    assert out.tolist() == [32, 96]


def test_while_spec_checks_the_body_signature():
    # the body returns a float where the loop-carried flag is BOOL8
    with pytest.raises(NnapiError) as e:
        while_model(identity_condition([F32, BOOL1], 1), binary_model(Op.ADD, constant=[1.0, 1.0]), [F32, BOOL1],
                    [None, None], [F32])
    assert e.value.code == ResultCode.BAD_DATA and "body_model" in str(e.value)


def test_while_spec_checks_the_condition_output():
    # a condition whose output is a float tensor
    with pytest.raises(NnapiError) as e:
        while_model(binary_model(Op.ADD, constant=[1.0, 1.0]), binary_model(Op.ADD, constant=[1.0, 1.0]),
                    [F32], [None], [F32])
    assert e.value.code == ResultCode.BAD_DATA and "cond_model" in str(e.value)

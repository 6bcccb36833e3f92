"""Execution robustness: bad inputs and outputs are refused with BAD_DATA when they are set (or
when the run starts), run-time failures name the operation, and after an error the execution is
either still usable (errors found before the run starts) or clearly finished (BAD_STATE on reuse,
unless reusable)."""
import time

import numpy as np
import pytest

import executor  # noqa: F401  (registers the numpy executor as nnapi's backend)
import nnapi
from nnapi import Memory, NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.nnapi.helpers import add_model, dynamic_add_model

SHAPE = (1, 3, 5, 2)


def prepared(model):
    comp = nnapi.Compilation(model)
    comp.finish()
    return nnapi.Execution(comp)


def add_execution():
    return prepared(add_model())


def ones(shape=SHAPE, dtype=np.float32):
    return np.ones(shape, dtype)


def code_of(fn, *args, **kw):
    with pytest.raises(NnapiError) as e:
        fn(*args, **kw)
    assert e.value.message
    return e.value.code, e.value.message


# -- inputs and outputs refused when set ----------------------------------------------

@pytest.mark.parametrize("value,dims,fragment", [
    (np.ones(SHAPE, np.float64), None, "dtype float64"),
    (np.ones(SHAPE, np.int32), None, "dtype int32"),
    ("not an array", None, "dtype"),
    (object(), None, "dtype"),
    (np.ones((1, 3, 5, 3), np.float32), None, "incompatible"),
    (np.ones((3, 5, 2), np.float32), None, "incompatible"),
    (np.ones(30, np.float32), [1, 3, 5, 3], "incompatible"),
    (np.ones(30, np.float32), [1, 3, -5, 2], "negative"),
    (np.ones(30, np.float32), ["a", 3, 5, 2], "not integers"),
])
def test_bad_input_is_refused(value, dims, fragment):
    ex = add_execution()
    code, msg = code_of(ex.set_input, 0, value, dims)
    assert code == ResultCode.BAD_DATA and fragment in msg and "input 0" in msg, msg


@pytest.mark.parametrize("index", [2, -1, 10 ** 12, "0", 1.0])
def test_bad_input_index_is_refused(index):
    ex = add_execution()
    code, msg = code_of(ex.set_input, index, ones())
    assert code == ResultCode.BAD_DATA and "out of range" in msg


def test_memory_input_of_wrong_size_or_range_is_refused():
    ex = add_execution()
    mem = Memory.allocate(4 * 30)
    assert code_of(ex.set_input_from_memory, 0, mem, 0, 4 * 29)[0] == ResultCode.BAD_DATA  # wrong size
    assert code_of(ex.set_input_from_memory, 0, mem, 8, 4 * 30)[0] == ResultCode.BAD_DATA  # beyond the memory
    assert code_of(ex.set_input_from_memory, 0, mem, -4, 4)[0] == ResultCode.BAD_DATA
    ex.set_input_from_memory(0, mem, 0, 4 * 30)  # the right one still works afterwards


@pytest.mark.parametrize("out,fragment", [
    (np.zeros(SHAPE, np.float64), "dtype"),
    (np.zeros(29, np.float32), "needs 120"),
    (np.zeros(SHAPE, np.float32)[..., :1], "needs 120"),
    (np.frombuffer(bytes(120), np.float32).reshape(SHAPE), "writable"),
    ([0.0] * 30, "writable"),
])
def test_bad_output_buffer_is_refused(out, fragment):
    ex = add_execution()
    code, msg = code_of(ex.set_output, 0, out)
    assert code == ResultCode.BAD_DATA and fragment in msg and "output 0" in msg, msg


def test_memory_output_too_small_for_a_known_shape_is_refused():
    ex = add_execution()
    code, msg = code_of(ex.set_output_from_memory, 0, Memory.allocate(64), 0, 64)
    assert code == ResultCode.BAD_DATA and "needs 120" in msg


def test_larger_output_buffer_is_accepted():
    ex = add_execution()
    ex.set_input(0, ones())
    ex.set_input(1, ones())
    big = np.full(40, -1.0, np.float32)
    ex.set_output(0, big)
    ex.compute()
    assert np.all(big[:30] == 2.0) and np.all(big[30:] == -1.0)


# -- missing inputs / outputs: refused before the run, the execution stays usable ---------

def test_missing_input_or_output_then_fix_it():
    ex = add_execution()
    ex.set_input(0, ones())
    ex.set_output(0, np.zeros(SHAPE, np.float32))
    code, msg = code_of(ex.compute)
    assert code == ResultCode.BAD_DATA and "input 1 was not set" in msg
    ex2 = add_execution()
    ex2.set_input(0, ones())
    ex2.set_input(1, ones())
    code, msg = code_of(ex2.start_compute)
    assert code == ResultCode.BAD_DATA and "output 0 was not set" in msg
    # nothing ran: the same execution can be completed and computed
    ex.set_input(1, ones())
    ex.compute()


# -- outputs too small for a shape known only at run time -------------------------------

@pytest.mark.parametrize("use_memory", [False, True])
def test_output_insufficient_size_tells_the_needed_shape(use_memory):
    ex = prepared(dynamic_add_model())
    x = np.ones((4, 6), np.float32)
    ex.set_input(0, x)
    ex.set_input(1, x)
    if use_memory:
        mem = Memory.allocate(4 * 10)
        ex.set_output_from_memory(0, mem, 0, 4 * 10)
    else:
        ex.set_output(0, np.zeros(10, np.float32))
    code, msg = code_of(ex.compute)
    assert code == ResultCode.OUTPUT_INSUFFICIENT_SIZE and "[4, 6]" in msg
    assert ex.get_output_operand_dimensions(0) == (4, 6)
    # a non-reusable execution is finished after the attempt
    code, _ = code_of(ex.compute)
    assert code == ResultCode.BAD_STATE


def test_reusable_execution_recovers_after_insufficient_size():
    ex = prepared(dynamic_add_model())
    ex.set_reusable(True)
    x = np.ones((4, 6), np.float32)
    ex.set_input(0, x)
    ex.set_input(1, x)
    ex.set_output(0, np.zeros(10, np.float32))
    assert code_of(ex.compute)[0] == ResultCode.OUTPUT_INSUFFICIENT_SIZE
    out = np.zeros(24, np.float32)
    ex.set_output(0, out)
    ex.compute()
    assert ex.get_output_operand_dimensions(0) == (4, 6) and np.all(out == 2.0)


def test_incompatible_runtime_shapes_fail_with_the_operation_named():
    ex = prepared(dynamic_add_model())
    ex.set_input(0, np.ones((4, 6), np.float32))
    ex.set_input(1, np.ones((5, 6), np.float32))
    ex.set_output(0, np.zeros(64, np.float32))
    code, msg = code_of(ex.compute)
    assert code == ResultCode.OP_FAILED and "operation 0 (ADD)" in msg, msg


# -- indexes out of range inside lookups: OP_FAILED naming the operation -------------------

def lookup_model(op):
    m = nnapi.Model()
    lookups = m.add_operand(OperandType(C.TENSOR_INT32, [3]), name="lookups")
    values = m.add_operand(OperandType(C.TENSOR_FLOAT32, [4, 2]), name="values")
    m.set_operand_value(values, np.arange(8, dtype=np.float32).reshape(4, 2))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, [3, 2]), name="out")
    if op == Op.GATHER:
        axis = m.add_operand(OperandType(C.INT32))
        m.set_operand_value(axis, np.int32(0))
        m.add_operation(Op.GATHER, [values, axis, lookups], [out])
        outs = [out]
    elif op == Op.EMBEDDING_LOOKUP:
        m.add_operation(Op.EMBEDDING_LOOKUP, [lookups, values], [out])
        outs = [out]
    else:
        keys = m.add_operand(OperandType(C.TENSOR_INT32, [0]), name="keys")
        hits = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [3], 1.0, 0), name="hits")
        m.add_operation(Op.HASHTABLE_LOOKUP, [lookups, keys, values], [out, hits])
        m.identify_inputs_and_outputs([lookups, keys], [out, hits])
        m.finish()
        return m
    m.identify_inputs_and_outputs([lookups], outs)
    m.finish()
    return m


def run_lookup(op, lookups, keys=None):
    m = lookup_model(op)
    ex = prepared(m)
    ex.set_input(0, np.asarray(lookups, np.int32))
    if keys is not None:
        ex.set_input(1, np.asarray(keys, np.int32))
    for k, o in enumerate(m.outputs):
        t = m.operands[o].type
        ex.set_output(k, np.zeros(t.dimensions, t.dtype))
    ex.compute()
    return ex


@pytest.mark.parametrize("op", [Op.GATHER, Op.EMBEDDING_LOOKUP])
@pytest.mark.parametrize("bad", [4, -1, 2 ** 31 - 1, -2 ** 31])
def test_index_out_of_range_fails_naming_the_operation(op, bad):
    code, msg = code_of(run_lookup, op, [0, bad, 1])
    assert code == ResultCode.OP_FAILED and f"operation 0 ({op.name})" in msg and str(bad) in msg, msg
    run_lookup(op, [0, 3, 1])  # in range: fine


def test_hashtable_lookup_keys_and_values_disagree():
    # the model cannot know the number of keys; the run can
    code, msg = code_of(run_lookup, Op.HASHTABLE_LOOKUP, [1, 2, 3], keys=[1, 2, 3, 4, 5, 6])
    # the spec's rule, checked on the run-time shapes (was the kernel's "6 keys for 4 value rows")
    assert code == ResultCode.OP_FAILED and "operation 0 (HASHTABLE_LOOKUP)" in msg and "keys has 6 entries" in msg, msg
    code, msg = code_of(run_lookup, Op.HASHTABLE_LOOKUP, [1, 2, 3], keys=[4, 3, 2, 1])
    assert code == ResultCode.OP_FAILED and "sorted" in msg
    ex = run_lookup(Op.HASHTABLE_LOOKUP, [1, 7, 3], keys=[1, 2, 3, 4])  # a miss is not an error
    assert ex.get_output_operand_dimensions(1) == (3,)


def test_hashtable_lookup_with_known_mismatch_is_invalid():
    m = nnapi.Model()
    lookups = m.add_operand(OperandType(C.TENSOR_INT32, [3]))
    keys = m.add_operand(OperandType(C.TENSOR_INT32, [5]))
    values = m.add_operand(OperandType(C.TENSOR_FLOAT32, [4, 2]))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, [3, 2]))
    hits = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [3], 1.0, 0))
    m.add_operation(Op.HASHTABLE_LOOKUP, [lookups, keys, values], [out, hits])
    m.identify_inputs_and_outputs([lookups, keys, values], [out, hits])
    code, msg = code_of(m.finish)
    assert code == ResultCode.BAD_DATA and "HASHTABLE_LOOKUP" in msg and "5 entries" in msg


# -- a WHILE that never ends ------------------------------------------------------------

def endless_while_model():
    """while (i < 1) i = i * 1: never ends (i stays 0)."""
    t = OperandType(C.TENSOR_INT32, [1])
    cond = nnapi.Model(name="cond")
    i, limit, go = (cond.add_operand(t), cond.add_operand(t), cond.add_operand(OperandType(C.TENSOR_BOOL8, [1])))
    cond.set_operand_value(limit, np.array([1], np.int32))
    cond.add_operation(Op.LESS, [i, limit], [go])
    cond.identify_inputs_and_outputs([i], [go])
    cond.finish()
    body = nnapi.Model(name="body")
    i, one, fuse, nxt = body.add_operand(t), body.add_operand(t), body.add_operand(OperandType(C.INT32)), \
        body.add_operand(t)
    body.set_operand_value(one, np.array([1], np.int32))
    body.set_operand_value(fuse, np.int32(0))
    body.add_operation(Op.MUL, [i, one, fuse], [nxt])
    body.identify_inputs_and_outputs([i], [nxt])
    body.finish()
    m = nnapi.Model(name="endless")
    c, b = m.add_operand(OperandType(C.SUBGRAPH)), m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(c, cond)
    m.set_operand_value_from_model(b, body)
    x, y = m.add_operand(t), m.add_operand(t)
    m.add_operation(Op.WHILE, [c, b, x], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


@pytest.mark.parametrize("asynchronous", [False, True])
def test_endless_while_stops_at_the_loop_timeout(asynchronous):
    ex = prepared(endless_while_model())
    ex.set_loop_timeout(0.2)
    ex.set_input(0, np.zeros(1, np.int32))
    ex.set_output(0, np.zeros(1, np.int32))
    start = time.monotonic()
    with pytest.raises(NnapiError) as e:
        if asynchronous:
            ex.start_compute().wait()
        else:
            ex.compute()
    elapsed = time.monotonic() - start
    assert e.value.code == ResultCode.MISSED_DEADLINE_TRANSIENT and "operation 0 (WHILE)" in e.value.message
    assert 0.2 <= elapsed < 5.0, elapsed
    assert code_of(ex.compute)[0] == ResultCode.BAD_STATE  # finished, not reusable


def test_while_that_ends_is_unaffected():
    from fuzz.seeds import nnapi_while_model
    ex = prepared(nnapi_while_model())
    ex.set_input(0, np.array([0], np.int32))
    ex.set_input(1, np.array([5], np.int32))
    out = np.zeros(1, np.int32)
    ex.set_output(0, out)
    ex.compute()
    assert out[0] == 5


# -- after an error: finished (BAD_STATE) unless reusable, and nothing else leaks -----------

def test_failed_execution_is_finished_unless_reusable():
    for reusable in (False, True):
        m = lookup_model(Op.GATHER)
        ex = prepared(m)
        ex.set_reusable(reusable)
        ex.set_input(0, np.array([0, 9, 1], np.int32))
        out = np.zeros((3, 2), np.float32)
        ex.set_output(0, out)
        assert code_of(ex.compute)[0] == ResultCode.OP_FAILED
        if reusable:
            ex.set_input(0, np.array([0, 2, 1], np.int32))
            ex.compute()
            assert out.tolist() == [[0, 1], [4, 5], [2, 3]]
        else:
            for call in (ex.compute, lambda: ex.set_input(0, np.zeros(3, np.int32)), ex.start_compute):
                assert code_of(call)[0] == ResultCode.BAD_STATE


def test_unexpected_kernel_exception_becomes_op_failed(monkeypatch):
    """A failure that is not an NnapiError still reaches the caller as one, sync and async."""
    m = add_model()
    comp = nnapi.Compilation(m)
    comp.finish()

    def boom(*a, **k):
        raise RuntimeError("kernel bug")
    monkeypatch.setattr(comp.compiled, "run", boom)
    for asynchronous in (False, True):
        ex = nnapi.Execution(comp)
        ex.set_input(0, ones())
        ex.set_input(1, ones())
        ex.set_output(0, np.zeros(SHAPE, np.float32))
        with pytest.raises(NnapiError) as e:
            ex.start_compute().wait() if asynchronous else ex.compute()
        assert e.value.code == ResultCode.OP_FAILED and "RuntimeError: kernel bug" in e.value.message

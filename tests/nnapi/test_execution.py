"""Compilation/Execution state rules, Memory-backed values and I/O, dynamic output shapes."""
import os
import tempfile

import numpy as np
import pytest

import executor  # noqa: F401  (registers the numpy executor as nnapi's backend)
import nnapi
from nnapi import Memory, NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode

from tests.nnapi.helpers import SHAPE, add_model, dynamic_add_model, f32


def prepared(model=None):
    comp = nnapi.Compilation(model or add_model())
    comp.finish()
    return nnapi.Execution(comp)


def test_compilation_needs_finished_model_and_is_frozen_after_finish():
    with pytest.raises(NnapiError) as e:
        nnapi.Compilation(add_model(finish=False))
    assert e.value.code == ResultCode.BAD_STATE
    comp = nnapi.Compilation(add_model())
    comp.set_preference(nnapi.PreferenceCode.SUSTAINED_SPEED)
    comp.set_priority(nnapi.Priority.HIGH)
    comp.finish()
    for call in (lambda: comp.finish(), lambda: comp.set_preference(0), lambda: comp.set_priority(90)):
        with pytest.raises(NnapiError) as e:
            call()
        assert e.value.code == ResultCode.BAD_STATE


def test_execution_input_checks():
    ex = prepared()
    for call in (lambda: ex.set_input(5, np.zeros(SHAPE, np.float32)),          # index out of range
                 lambda: ex.set_input(0, np.zeros(SHAPE, np.int32)),            # wrong dtype
                 lambda: ex.set_input(0, np.zeros((1, 3, 5, 3), np.float32)),   # wrong shape
                 lambda: ex.set_output(0, np.zeros(SHAPE, np.float64))):
        with pytest.raises(NnapiError) as e:
            call()
        assert e.value.code == ResultCode.BAD_DATA
    ex.set_input(0, np.zeros(SHAPE, np.float32))
    ex.set_output(0, np.zeros(SHAPE, np.float32))
    with pytest.raises(NnapiError) as e:  # input 1 never set
        ex.compute()
    assert e.value.code == ResultCode.BAD_DATA and "input 1" in e.value.message


def test_execution_computes_once_unless_reusable():
    ex = prepared()
    a = np.ones(SHAPE, np.float32)
    ex.set_input(0, a)
    ex.set_input(1, a)
    out = np.zeros(SHAPE, np.float32)
    ex.set_output(0, out)
    ex.compute()
    np.testing.assert_array_equal(out, 2 * a)
    with pytest.raises(NnapiError) as e:
        ex.compute()
    assert e.value.code == ResultCode.BAD_STATE
    ex2 = prepared()
    ex2.set_reusable(True)
    ex2.set_input(0, a)
    ex2.set_input(1, a)
    ex2.set_output(0, out)
    ex2.compute()
    ex2.set_input(1, 3 * a)
    ex2.compute()
    np.testing.assert_array_equal(out, 4 * a)


def test_start_compute_event():
    ex = prepared()
    a = np.full(SHAPE, 1.5, np.float32)
    ex.set_input(0, a)
    ex.set_input(1, a)
    out = np.zeros(SHAPE, np.float32)
    ex.set_output(0, out)
    ex.start_compute().wait()
    np.testing.assert_array_equal(out, 3.0)


def test_memory_backed_constant_inputs_and_outputs():
    b = np.arange(30, dtype=np.float32).reshape(SHAPE)
    pool = Memory.from_buffer(bytearray(64) + bytearray(b.tobytes()))
    m = nnapi.Model()
    a, bi = m.add_operand(f32()), m.add_operand(f32())
    fuse, out = m.add_operand(OperandType(C.INT32)), m.add_operand(f32())
    m.set_operand_value(fuse, np.int32(0))
    m.set_operand_value_from_memory(bi, pool, 64, b.nbytes)
    with pytest.raises(NnapiError):
        m.set_operand_value_from_memory(out, pool, 100, b.nbytes)  # past the end
    m.add_operation(Op.ADD, [a, bi, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.finish()
    assert m.operands[bi].lifetime is nnapi.Lifetime.CONSTANT_REFERENCE
    io = Memory.allocate(2 * b.nbytes)
    in_view = np.frombuffer(io.view(0, b.nbytes), np.float32)
    in_view[:] = 1.0
    ex = prepared(m)
    ex.set_input_from_memory(0, io, 0, b.nbytes)
    ex.set_output_from_memory(0, io, b.nbytes, b.nbytes)
    ex.compute()
    got = np.frombuffer(io.view(b.nbytes, b.nbytes), np.float32).reshape(SHAPE)
    np.testing.assert_array_equal(got, b + 1.0)


def test_memory_from_fd_maps_a_file_and_rejects_bad_ranges():
    data = np.arange(30, dtype=np.float32)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "w.bin")
        with open(path, "wb") as f:
            f.write(b"\0" * 10 + data.tobytes())
        fd = os.open(path, os.O_RDONLY)
        try:
            mem = Memory.create_from_fd(data.nbytes, nnapi.memory.PROT_READ, fd, 10)
            np.testing.assert_array_equal(np.frombuffer(mem.view(0, data.nbytes), np.float32), data)
            with pytest.raises(NnapiError) as e:
                Memory.create_from_fd(4096, nnapi.memory.PROT_READ, fd, 0)
            assert e.value.code == ResultCode.UNMAPPABLE
        finally:
            os.close(fd)


def test_unknown_output_shape_and_insufficient_size():
    m = dynamic_add_model()
    x = np.ones((3, 5), np.float32)
    ex = prepared(m)
    ex.set_input(0, x)
    ex.set_input(1, x)
    small = np.zeros(4, np.float32)
    ex.set_output(0, small)
    with pytest.raises(NnapiError) as e:
        ex.compute()
    assert e.value.code == ResultCode.OUTPUT_INSUFFICIENT_SIZE and "[3, 5]" in e.value.message
    assert ex.get_output_operand_dimensions(0) == (3, 5)
    ex = prepared(m)
    ex.set_input(0, x)
    ex.set_input(1, x)
    big = np.zeros(15, np.float32)
    ex.set_output(0, big)
    ex.compute()
    assert ex.get_output_operand_dimensions(0) == (3, 5) and ex.get_output_operand_rank(0) == 2
    np.testing.assert_array_equal(big, 2.0)


def test_loop_timeout_is_clamped_to_maximum():
    ex = prepared()
    ex.set_loop_timeout(100.0)
    assert ex.loop_timeout_s == nnapi.MAXIMUM_LOOP_TIMEOUT_S
    assert prepared().loop_timeout_s == nnapi.DEFAULT_LOOP_TIMEOUT_S

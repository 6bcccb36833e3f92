"""The executor's memory plan: lifetimes, the peak, which intermediates share a buffer
(hand-computed on small chains), the alias rule (a view keeps its buffer alive; an alias
of a model output gets no shared buffer), and the buffers really used at run time:
results equal those of a run without shared buffers (layerwise tracing gives every
intermediate a fresh array), outputs survive the next run, threads do not collide.
"""
import itertools
import threading
from pathlib import Path

import numpy as np
import pytest

import nnapi
from executor.planner import plan
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
T = OperandType(C.TENSOR_FLOAT32, (2, 8))   # 64 bytes


def _chain(ops):
    """x -> ops[0] -> t1 -> ops[1] -> ... -> out, each op ADD(prev, ones) or RESHAPE(prev, [2, 8]).
    Returns (model, [x, t1, ..., out])."""
    m = nnapi.Model()
    x = m.add_operand(T)
    one = m.add_operand(T)
    m.set_operand_value(one, np.ones((2, 8), np.float32))
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(0))
    shape = m.add_operand(OperandType(C.TENSOR_INT32, (2,)))
    m.set_operand_value(shape, np.array([2, 8], np.int32))
    chain = [x] + [m.add_operand(T) for _ in ops]
    for op, (src, dst) in zip(ops, itertools.pairwise(chain)):
        m.add_operation(op, [src, one, fuse] if op == Op.ADD else [src, shape], [dst])
    m.identify_inputs_and_outputs([x], [chain[-1]])
    m.finish()
    return m, chain


def _plan(model, fresh):
    steps = [op for op in model.operations]   # already in execution order: a chain
    return plan(model, steps, fresh)


def test_a_chain_of_fresh_steps_uses_two_buffers():
    m, (x, t1, t2, t3, out) = _chain([Op.ADD] * 4)
    p = _plan(m, [True] * 4)
    assert p.lifetimes == {t1: (0, 1), t2: (1, 2), t3: (2, 3), out: (3, 3)}
    assert p.frees == [(), (t1,), (t2,), (t3,)]
    assert p.peak_bytes == 2 * 64          # a step's input and output are alive at once
    assert p.slots[t1] == p.slots[t3] != p.slots[t2]
    assert out not in p.slots              # the caller keeps the model output
    assert p.arena_bytes == 2 * 64


def test_steps_that_may_return_views_join_their_operands_lifetimes():
    # t1 -> RESHAPE -> t2 (may be a view of t1's buffer): t1's buffer lives until t2's last use (step 2),
    # so t3 (made at step 2) cannot take it, t4 (made at step 3) can
    m, (x, t1, t2, t3, t4, out) = _chain([Op.ADD, Op.RESHAPE, Op.ADD, Op.ADD, Op.ADD])
    p = _plan(m, [True, False, True, True, True])
    assert p.buffer_ends[t1] == p.buffer_ends[t2] == 2
    assert len({p.slots[t1], p.slots[t2], p.slots[t3]}) == 3
    assert p.slots[t4] in (p.slots[t1], p.slots[t2])
    # nothing promised fresh: every operand may be a view of the output's buffer: no shared buffers
    assert _plan(m, [False] * 5).slots == {}


def test_a_chain_of_views_keeps_the_first_buffer_until_the_last_view_is_read():
    m, (x, t1, t2, t3, t4, t5, t6, out) = _chain([Op.ADD, Op.RESHAPE, Op.RESHAPE, Op.RESHAPE, Op.ADD, Op.ADD,
                                                  Op.ADD])
    p = _plan(m, [True, False, False, False, True, True, True])
    assert p.buffer_ends[t1] == p.buffer_ends[t4] == 4   # t4, a view of a view of a view of t1, is read at step 4
    assert p.slots[t5] not in {p.slots[t] for t in (t1, t2, t3, t4)}   # made at step 4: all still in use
    assert p.slots[t6] in {p.slots[t] for t in (t1, t2, t3, t4)}       # made at step 5: free again


def test_an_alias_of_a_model_output_gets_no_shared_buffer():
    m, (x, t1, t2, out) = _chain([Op.ADD, Op.ADD, Op.RESHAPE])
    p = _plan(m, [True, True, False])
    assert t1 in p.slots and t2 not in p.slots and out not in p.slots


def _sample_run(name):
    from converters.load import importer
    from converters.running import random_source_inputs, to_nnapi_inputs
    path = SAMPLES / name
    imp = importer(path.suffix[1:])
    result = imp.convert(str(path))
    source = imp.read(str(path)).main
    return compile_model(result.model), [to_nnapi_inputs(result, random_source_inputs(source, seed))
                                         for seed in range(3)]


@pytest.mark.parametrize("name", ["mobilenet_float.tflite", "mobilenet_uint8.tflite", "mobilenet_int8.tflite",
                                  "lstm_float.tflite", "control_flow.tflite", "resnet_float.onnx",
                                  "resnet_qdq.onnx"])
def test_shared_buffers_give_the_results_of_fresh_arrays(name):
    compiled, inputs = _sample_run(name)
    fresh = [[v.array.copy() for v in compiled.run(ins, RunState(2.0, trace={}))] for ins in inputs]
    shared = [compiled.run(ins, RunState(2.0)) for ins in inputs]   # one run after another
    for want, got in zip(fresh, shared):
        for w, g in zip(want, got):
            assert np.array_equal(w, g.array)   # outputs of earlier runs are untouched by later ones


def test_prepared_convolutions_write_into_the_planned_buffers():
    compiled, inputs = _sample_run("mobilenet_uint8.tflite")
    planned = {o for s in compiled.steps for o, slot in zip(s.outputs, s.slots) if slot >= 0}
    assert len(planned) >= 5 and len(compiled.plan.slot_bytes) < len(planned)   # buffers are shared
    seen = {}
    runs = []
    for step in compiled.steps:   # record what each step returns (the arrays, not copies)
        def spy(ctx, run=step.run, step=step):
            out = run(ctx)
            seen.setdefault(step.index, []).extend(out)
            return out
        spy.fresh_outputs = getattr(step.run, "fresh_outputs", False)
        step.run = spy
    compiled._build_program()
    for _ in range(2):
        runs.append(compiled.run(inputs[0], RunState(2.0)))
    buffers = [b for b in compiled._arena.buffers if b is not None]
    assert buffers
    in_arena = [a for arrays in seen.values() for a in arrays
                if any(np.shares_memory(a, b) for b in buffers)]
    assert len(in_arena) >= 2 * 5   # the same buffers, both runs


def test_threads_running_one_compiled_model_do_not_share_buffers():
    compiled, inputs = _sample_run("mobilenet_int8.tflite")
    want = [[v.array.copy() for v in compiled.run(ins, RunState(2.0, trace={}))] for ins in inputs]
    errors = []

    def worker(k):
        for _ in range(20):
            got = compiled.run(inputs[k], RunState(2.0))
            if not all(np.array_equal(w, g.array) for w, g in zip(want[k], got)):
                errors.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_freed_intermediate_is_not_kept_alive_by_the_reused_contexts():
    """Plain kernels make fresh arrays: once its last reader has run, an intermediate is gone, although
    each step's OpContext is kept for the next run."""
    import weakref
    m = nnapi.Model()
    t = OperandType(C.TENSOR_FLOAT32, (4, 4))
    ops = [m.add_operand(t) for _ in range(4)]
    for a, b in zip(ops, ops[1:]):
        m.add_operation(Op.RELU, [a], [b])
    m.identify_inputs_and_outputs([ops[0]], [ops[-1]])
    m.finish()
    compiled = compile_model(m, fast_paths=False)
    made = []
    first = compiled.steps[0]
    kernel = first.run
    first.run = lambda ctx: [made.append(weakref.ref(r)) or r for r in kernel(ctx)]
    for _ in range(2):
        out = compiled.run([np.ones((4, 4), np.float32)], RunState(2.0))
        assert out[0].array.shape == (4, 4)
        assert made[-1]() is None   # the first RELU's output, read by the second only

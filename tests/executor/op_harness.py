"""The executor tests' one way to build a single-operation model and run it through the public
nnapi API (Model -> Compilation -> Execution). Only plumbing lives here: every expected value
stays in the tests, worked out by hand or by an independent numpy formula."""
import numpy as np

import nnapi
from nnapi import OperandType

OMIT = object()  # an operand spec's value for an omitted optional operand (NO_VALUE)
CAPACITY = 256   # elements of the buffer for an output whose dimensions are known only at run time


def t(code, dims, scale=0.0, zp=0) -> OperandType:
    return OperandType(code, dims, scale, zp)


def scalar(code, value) -> tuple:
    """The spec of a constant scalar operand."""
    return OperandType(code), value


def build(code, inputs, outputs, finish=True, per_channel=None) -> nnapi.Model:
    """A model of the one operation `code`. `inputs`: (OperandType, value) specs in the operation's
    order; value None is the next model input, OMIT an omitted optional operand, anything else a
    constant (cast to the type's dtype). `outputs`: OperandTypes, all model outputs.
    `per_channel`: (scales, channel_dim) for the TENSOR_QUANT8_SYMM_PER_CHANNEL inputs.
    finish=False leaves the model open for tests of finish() and validate()."""
    m = nnapi.Model()
    ins, model_ins = [], []
    for otype, value in inputs:
        i = m.add_operand(otype)
        if per_channel is not None and otype.code == nnapi.OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            m.set_operand_symm_per_channel_quant_params(i, *per_channel)
        if value is None:
            model_ins.append(i)
        elif value is OMIT:
            m.set_operand_value(i, None)
        else:
            m.set_operand_value(i, np.asarray(value, dtype=otype.dtype))
        ins.append(i)
    outs = [m.add_operand(o) for o in outputs]
    m.add_operation(code, ins, outs)
    m.identify_inputs_and_outputs(model_ins, outs)
    if finish:
        m.finish()
    return m


def run(model, *arrays, loop_timeout=None) -> list:
    """Execute `model` (finished here if it is not yet) on `arrays`, one per model input; returns
    each output shaped as the execution reports it (dimensions unknown in the model included)."""
    if not model.finished:
        model.finish()
    comp = nnapi.Compilation(model)
    comp.finish()
    ex = nnapi.Execution(comp)
    if loop_timeout is not None:
        ex.set_loop_timeout(loop_timeout)
    for k, a in enumerate(arrays):
        ex.set_input(k, a)
    bufs = []
    for k, o in enumerate(model.outputs):
        otype = model.operands[o].type
        shape = otype.dimensions if otype.is_fully_specified else CAPACITY  # a 0: known at run time
        bufs.append(np.zeros(shape, dtype=otype.dtype))
        ex.set_output(k, bufs[-1])
    ex.compute()
    outs = []
    for k, buf in enumerate(bufs):
        dims = ex.get_output_operand_dimensions(k)
        outs.append(buf.reshape(-1)[: int(np.prod(dims))].reshape(dims))
    return outs


def run_one(model, *arrays):
    """The single output of `model` run on `arrays`."""
    (out,) = run(model, *arrays)
    return out


def unary(code, in_type, out_type, x):
    """`code` applied to x: one model input of `in_type`, one output of `out_type`."""
    return run_one(build(code, [(in_type, None)], [out_type]), x)


def assert_bad_data(fn):
    """fn() raises NnapiError BAD_DATA; the error, for its message."""
    import pytest
    with pytest.raises(nnapi.NnapiError) as e:
        fn()
    assert e.value.code == nnapi.ResultCode.BAD_DATA
    return e.value


def assert_fails_at_compute(model, *arrays):
    """Running the model raises NnapiError OP_FAILED; the error."""
    import pytest
    with pytest.raises(nnapi.NnapiError) as e:
        run(model, *arrays)
    assert e.value.code == nnapi.ResultCode.OP_FAILED
    return e.value


def prepared_and_plain(model, *arrays, prepared: str):
    """(first output prepared, the same on a second run, the plain kernel's) of a one-operation model
    whose operation must have taken the fast path named `prepared`."""
    from executor.runtime import RunState, compile_model
    compiled = compile_model(model)
    step = compiled.steps[0]
    assert type(step.run).__name__ == prepared
    fast = compiled.run(list(arrays), RunState(2.0))[0].array.copy()
    again = compiled.run(list(arrays), RunState(2.0))[0].array.copy()
    step.run = step.kernel
    return fast, again, compiled.run(list(arrays), RunState(2.0))[0].array

"""Resource variables and other operators with no inputs or no outputs: the reader takes their
real signatures (a model LiteRT loads is never malformed), and stateful models convert into
NNAPI models with explicit state inputs and outputs."""
import numpy as np
import pytest

from converters.runners import litert_interpreter
from converters.source_graph import SourceError
from converters.tflite import read
from converters.tflite.authoring import GraphBuilder

from .tflite_state_models import accumulator, hashtable_lookup, int8_stream


def _litert_runs(data: bytes, inputs) -> list:
    it = litert_interpreter(data)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


@pytest.mark.parametrize("make, inputs, arity", [
    (accumulator, [np.ones((1, 4), np.float32)],
     {"CALL_ONCE": (0, 0), "VAR_HANDLE": (0, 1), "READ_VARIABLE": (1, 1), "ASSIGN_VARIABLE": (2, 0)}),
    (hashtable_lookup, [np.array([2, 5, 1], np.int64)],
     {"HASHTABLE": (0, 1), "HASHTABLE_IMPORT": (3, 0), "HASHTABLE_FIND": (3, 1)}),
])
def test_operators_without_inputs_or_outputs_are_read(make, inputs, arity):
    data = make()
    _litert_runs(data, inputs)  # LiteRT loads and runs it: a valid model
    source = read(data)
    seen = {n.op: (len(n.inputs), len(n.outputs)) for g in source.graphs for n in g.nodes}
    assert {op: seen[op] for op in arity} == arity


def test_string_constants_are_kept_as_raw_bytes():
    t = next(t for t in read(hashtable_lookup()).main.tensors if t.name == "import_values")
    assert t.is_constant and t.unsupported_type == "STRING"


def _one_op(op: str, n_inputs: int, n_outputs: int, options: str) -> bytes:
    g = GraphBuilder()
    x = g.input("x", [1], "FLOAT32")
    h = g.tensor("h", [], "RESOURCE")
    g.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="v")
    ins = [h, x][:n_inputs]
    outs = [g.tensor(f"o{k}", [1], "FLOAT32") for k in range(n_outputs)]
    g.op(op, ins, outs, options)
    y = g.tensor("y", [1], "FLOAT32")
    g.op("ADD", [x, x], [y], "AddOptions")
    g.output(y)
    return g.finish()


@pytest.mark.parametrize("op, n_in, n_out, options, message", [
    ("ASSIGN_VARIABLE", 1, 0, "AssignVariableOptions", "needs at least 2 and 0"),
    ("READ_VARIABLE", 0, 1, "ReadVariableOptions", "needs at least 1 and 1"),
    ("READ_VARIABLE", 1, 0, "ReadVariableOptions", "needs at least 1 and 1"),
])
def test_too_few_inputs_or_outputs_is_malformed(op, n_in, n_out, options, message):
    data = _one_op(op, n_in, n_out, options)
    with pytest.raises(Exception):
        _litert_runs(data, [np.ones(1, np.float32)])  # LiteRT refuses it too
    with pytest.raises(SourceError, match=message):
        read(data)

"""Resource variables and other operators with no inputs or no outputs: the reader takes their
real signatures (a model LiteRT loads is never malformed), and stateful models convert into
NNAPI models with explicit state inputs and outputs."""
import json

import numpy as np
import pytest

import nnapi
from converters.cli import main
from converters.parity import check
from converters.runners import litert_interpreter
from converters.running import run_traced, to_nnapi_inputs
from converters.source_graph import SourceError
from converters.tflite import convert, read
from converters.tflite.authoring import GraphBuilder
from nnapi.state import StateVariable, carry

from tests.converters.tflite.state_models import accumulator, hashtable_lookup, int8_stream, sum_with_init, variable_uses


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


# -- stateful models: variables become state input/output pairs -------------------------------




def _steps(model, result, step_inputs):
    """The executor's outputs for consecutive invocations, each state output fed to the next."""
    state, outs = None, []
    for ins in step_inputs:
        got, _ = run_traced(model, to_nnapi_inputs(result, ins, model, state=state))
        state = carry(model, got)
        outs.append(got)
    return outs


def test_accumulator_state_pair_and_hand_computed_steps():
    result = convert(accumulator(), feature_level=8)
    assert result.complete
    [entry] = result.state
    assert (entry["variable"], entry["input"], entry["output"]) == ("acc", "acc_value", "y")
    np.testing.assert_array_equal(entry["initial"], np.full((1, 4), 0.5, np.float32))
    model = result.model
    [v] = model.state
    assert model.operands[model.inputs[v.input]].name == "acc_value"
    assert model.operands[model.outputs[v.output]].name == "y"
    xs = [[np.full((1, 4), k + 1.0, np.float32)] for k in range(4)]
    ys = [o[0] for o in _steps(model, result, xs)]
    np.testing.assert_array_equal(np.stack(ys)[:, 0, 0], [1.5, 3.5, 6.5, 10.5])  # 0.5 + 1 + 2 + ...
    assert [n.op for n in result.nodes if n.nnapi_ops] == ["ADD"]


@pytest.mark.parametrize("make", [accumulator, lambda: accumulator(reads_after_assign=True),
                                  lambda: accumulator(dynamic=True), int8_stream,
                                  lambda: variable_uses("RARA"), lambda: variable_uses("RRA"),
                                  lambda: variable_uses("AR"), lambda: variable_uses("R"),
                                  lambda: variable_uses("RAC"[:2])])
@pytest.mark.parametrize("level", [3, 4, 8])
def test_stateful_models_match_litert_over_steps(make, level, tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(make())
    report = check(str(path), feature_level=level, steps=6, samples=2)
    assert report.passed and report.steps == 6 and report.samples == 2
    assert all(o.passed for o in report.state)
    assert len(report.state) == len(convert(str(path), feature_level=level).state)


def test_which_variables_become_state():
    # read then assigned: state; assigned before any read: no state (reads take what was assigned);
    # never assigned: a constant
    assert len(convert(variable_uses("RA")).state) == 1
    assert convert(variable_uses("AR")).state == []
    for pattern in ("R", "RR"):
        result = convert(variable_uses(pattern))
        assert result.complete and result.state == [] and result.model.state == []
        assert result.source.main.tensors[result.source.main.nodes[2].outputs[0]].is_constant


def test_int8_state_below_level_4_is_stored_as_uint8():
    result = convert(int8_stream(), feature_level=3)
    [v] = result.model.state
    assert v.initial.dtype == np.uint8 and (v.initial == 125).all()  # int8 -3 + 128
    assert result.state[0]["initial"].dtype == np.int8 and (result.state[0]["initial"] == -3).all()


@pytest.mark.parametrize("pattern, initialised, node, reason", [
    ("RA", False, "READ_VARIABLE", "nothing initialises it at conversion time"),
    ("RA", False, "ASSIGN_VARIABLE", "nothing initialises it at conversion time"),
    ("RC", True, "ASSIGN_VARIABLE", "an NNAPI model output cannot be a constant"),
    ("RAA", True, "ASSIGN_VARIABLE", "model input"),
])
def test_variables_that_cannot_become_state_are_reported(pattern, initialised, node, reason):
    if pattern == "RAA":  # the last assignment writes the model input x itself
        data = sum_with_init(lambda init: init.const("v0", np.zeros(2, np.float32)), assign="x")
    else:
        data = variable_uses(pattern, initialised)
    result = convert(data)
    bad = [n for n in result.unsupported if n.op == node]
    assert bad and reason in bad[0].reason and bad[0].reason_code == "unsupported_operator", result.unsupported


def test_init_subgraph_values_computed_by_operators_are_evaluated_at_conversion(tmp_path):
    # v := tanh(c) * 3 in the initialisation subgraph: converted and run once by the executor
    def initial(init):
        t = init.tensor("t", [2])
        init.op("TANH", [init.const("c", np.array([0.5, -2.0], np.float32))], [t])
        w = init.tensor("w", [2])
        init.op("MUL", [t, init.const("three", np.array([3.0], np.float32))], [w], "MulOptions")
        return w
    path = tmp_path / "m.tflite"
    path.write_bytes(sum_with_init(initial))
    [entry] = convert(str(path)).state
    np.testing.assert_allclose(entry["initial"], 3 * np.tanh([0.5, -2.0]), rtol=1e-6)
    assert check(str(path), steps=4).passed


def test_init_subgraph_reading_variables_is_reported():
    g = GraphBuilder()
    init = g.subgraph("init")
    hi = init.tensor("h", [], "RESOURCE")
    init.op("VAR_HANDLE", [], [hi], "VarHandleOptions", shared_name="v")
    r = init.tensor("r", [], "RESOURCE")
    init.op("VAR_HANDLE", [], [r], "VarHandleOptions", shared_name="w")
    w = init.tensor("w", [2])
    init.op("READ_VARIABLE", [r], [w], "ReadVariableOptions")
    init.op("ASSIGN_VARIABLE", [hi, w], [], "AssignVariableOptions")
    g.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=init.index)
    x = g.input("x", [2])
    y = g.tensor("y", [2])
    g.op("ADD", [x, x], [y], "AddOptions")
    g.output(y)
    [bad] = convert(g.finish()).unsupported
    assert bad.op == "CALL_ONCE" and "reads variables while they are initialised" in bad.reason


def test_saved_state_round_trips_and_run_steps_carries_it(tmp_path, capsys):
    result = convert(accumulator())
    path = tmp_path / "acc.nnapi"
    nnapi.save(result.model, path)
    loaded = nnapi.load(path)
    [a], [b] = result.model.state, loaded.state
    assert (a.variable, a.input, a.output) == (b.variable, b.input, b.output)
    np.testing.assert_array_equal(a.initial, b.initial)
    assert main(["inspect", str(path), "--format", "json", "-o", str(tmp_path / "i.json")]) == 0
    assert json.loads((tmp_path / "i.json").read_text())["state"] == [{"variable": "acc", "input": 1, "output": 0}]
    np.savez(tmp_path / "x.npz", x=np.ones((1, 4), np.float32))
    assert main(["run", str(path), "--inputs", str(tmp_path / "x.npz"), "--steps", "3",
                 "-o", str(tmp_path / "out.npz")]) == 0
    assert "after 3 step(s); state carried: 'acc'" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], np.full((1, 4), 3.5, np.float32))
    # a state input named in the .npz replaces the initial value of the first step
    np.savez(tmp_path / "x2.npz", x=np.ones((1, 4), np.float32), acc_value=np.full((1, 4), 10, np.float32))
    assert main(["run", str(path), "--inputs", str(tmp_path / "x2.npz"), "--steps", "2",
                 "-o", str(tmp_path / "out2.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out2.npz")["y"], np.full((1, 4), 12, np.float32))


def test_stateless_files_have_no_state_key(tmp_path):
    result = convert(variable_uses("AR"))
    nnapi.save(result.model, tmp_path / "m.nnapi")
    assert b'"state"' not in (tmp_path / "m.nnapi").read_bytes()[:4096]
    assert nnapi.load(tmp_path / "m.nnapi").state == []


def test_malformed_state_in_a_file_is_bad_data(tmp_path):
    from nnapi.serialize import to_bytes
    model = convert(accumulator()).model
    data = to_bytes(model)
    model.state = [StateVariable("acc", 7, 0, model.state[0].initial)]  # input position out of range
    bad = to_bytes(model)
    assert bad != data
    (tmp_path / "bad.nnapi").write_bytes(bad)
    with pytest.raises(nnapi.NnapiError, match="state 0: input position 7 out of range"):
        nnapi.load(tmp_path / "bad.nnapi")


def test_set_state_checks_the_pairs():
    model = convert(accumulator()).model
    m = nnapi.Model()
    a = m.add_operand(nnapi.OperandType(nnapi.OperandCode.TENSOR_FLOAT32, [2]))
    b = m.add_operand(nnapi.OperandType(nnapi.OperandCode.TENSOR_FLOAT32, [3]))
    m.add_operation(nnapi.OperationCode.RELU, [a], [b])
    m.identify_inputs_and_outputs([a], [b])
    with pytest.raises(nnapi.NnapiError, match="must have the same type"):
        m.set_state([StateVariable("v", 0, 0, np.zeros(2, np.float32))])
    assert model.finished
    with pytest.raises(nnapi.NnapiError):
        model.set_state([])  # a finished model is frozen


def test_parity_steps_sees_a_wrong_initial_value(tmp_path):
    path = tmp_path / "acc.tflite"
    path.write_bytes(accumulator())
    model = convert(str(path)).model
    v = model.state[0]
    model.state = [StateVariable(v.variable, v.input, v.output, v.initial + 1)]
    nnapi.save(model, tmp_path / "acc.nnapi")
    report = check(str(path), converted=str(tmp_path / "acc.nnapi"), steps=3)
    assert not report.passed and report.outputs[0].max_abs_error == pytest.approx(1.0)
    assert report.state_names == ["acc"] and not report.state[0].passed  # the state after each step differs too
    assert report.as_dict()["state"][0]["variable"] == "acc"


def test_partitions_manifest_carries_the_state(tmp_path, capsys):
    path = tmp_path / "s.tflite"
    path.write_bytes(int8_stream())
    out = tmp_path / "s.nnapi"
    # at level 1 STRIDED_SLICE (level 2) falls back: the partition before it still takes the state input
    assert main(["convert", str(path), "-o", str(out), "--partial", "--feature-level", "1"]) == 0
    manifest = json.loads((tmp_path / "s.partitions.json").read_text())
    [entry] = manifest["state"]
    assert (entry["variable"], entry["input"], entry["output"], entry["dtype"]) == ("buf", "buf_value", "tail", "int8")
    assert np.array(entry["initial"]).shape == (1, 2, 4) and (np.array(entry["initial"]) == -3).all()
    assert any("buf_value" in p["inputs"] for p in manifest["partitions"])
    report = check(str(path), feature_level=1, partial=True, steps=4)
    assert report.passed and report.partitions


def test_coverage_of_a_stateful_model_is_complete(capsys):
    data = int8_stream()
    result = convert(data)
    notes = {n.op: n.note for n in result.nodes}
    assert "evaluated at conversion time" in notes["CALL_ONCE"]
    assert "state input" in notes["READ_VARIABLE"] and "state output" in notes["ASSIGN_VARIABLE"]


@pytest.mark.parametrize("main_uses_it", [False, True])
def test_variables_inside_an_if_body_are_reported(main_uses_it):
    g = GraphBuilder()
    init = g.subgraph("init")
    hi = init.tensor("h", [], "RESOURCE")
    init.op("VAR_HANDLE", [], [hi], "VarHandleOptions", shared_name="v")
    init.op("ASSIGN_VARIABLE", [hi, init.const("v0", np.ones(2, np.float32))], [], "AssignVariableOptions")
    g.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=init.index)
    cond, x = g.input("cond", [1], "BOOL"), g.input("x", [2])
    branches = []
    for name in ("then", "else"):
        b = g.subgraph(name)
        a = b.input("a", [2])
        r = b.tensor("r", [2])
        if name == "then":
            h = b.tensor("h", [], "RESOURCE")
            b.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="v")
            s = b.tensor("s", [2])
            b.op("READ_VARIABLE", [h], [s], "ReadVariableOptions")
            b.op("ADD", [a, s], [r], "AddOptions")
        else:
            b.op("ADD", [a, a], [r], "AddOptions")
        b.output(r)
        branches.append(b.index)
    y = g.tensor("y", [2])
    g.op("IF", [cond, x], [y], "IfOptions", then_subgraph_index=branches[0], else_subgraph_index=branches[1])
    if main_uses_it:  # v := y after the IF, read before it: the body's read must see main's assignment
        h = g.tensor("h", [], "RESOURCE")
        g.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="v")
        g.op("ASSIGN_VARIABLE", [h, y], [], "AssignVariableOptions")
    g.output(y)
    data = g.finish()
    assert _litert_runs(data, [np.array([True]), np.zeros(2, np.float32)])[0].tolist() == [1.0, 1.0]
    bad = convert(data).unsupported
    assert bad[0].op == "IF" and "VAR_HANDLE outside the converted subgraph (in an IF/WHILE body)" in bad[0].reason
    if main_uses_it:
        assert bad[1].op == "ASSIGN_VARIABLE" and "also used inside an IF/WHILE body" in bad[1].reason


def _if_without_outputs(effect: bool) -> bytes:
    g = GraphBuilder()
    c, x = g.input("cond", [1], "BOOL"), g.input("x", [2])
    branches = []
    for name in ("then", "else"):
        b = g.subgraph(name)
        a = b.input("a", [2])
        if effect and name == "then":
            h = b.tensor("h", [], "RESOURCE")
            b.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="v")
            b.op("ASSIGN_VARIABLE", [h, a], [], "AssignVariableOptions")
        branches.append(b.index)
    g.op("IF", [c, x], [], "IfOptions", then_subgraph_index=branches[0], else_subgraph_index=branches[1])
    y = g.tensor("y", [2])
    g.op("ADD", [x, x], [y], "AddOptions")
    g.output(y)
    return g.finish()


def test_if_without_outputs_is_read_and_emits_nothing():
    data = _if_without_outputs(effect=False)
    ins = [np.array([True]), np.array([1.0, -2.0], np.float32)]
    assert _litert_runs(data, ins)[0].tolist() == [2.0, -4.0]
    assert [(n.op, len(n.inputs), len(n.outputs)) for n in read(data).main.nodes] == [("IF", 2, 0), ("ADD", 2, 1)]
    result = convert(data)
    assert result.complete and result.nodes[0].nnapi_ops == []
    got, _ = run_traced(result.model, to_nnapi_inputs(result, ins))
    assert got[0].tolist() == [2.0, -4.0]
    data = _if_without_outputs(effect=True)
    _litert_runs(data, ins)
    [bad] = convert(data).unsupported
    assert bad.op == "IF" and "ASSIGN_VARIABLE" in bad.reason

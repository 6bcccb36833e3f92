"""The patterns of exported streaming models (silero-vad, ddddocr) that lost their shapes, each in a small
model compared with onnxruntime:

- an If on a condition the pinned input shapes decide (Shape -> Gather -> Equal), inlined as the branch it
  takes (converters/onnx/branches.py), also nested inside an If on a run-time value;
- an If on a run-time value whose other branch cannot run at the pinned shapes;
- an int64 main-graph input (a sample rate) taken as int32;
- a graph output whose declared shape is wrong (onnxruntime returns the computed one);
- the Shape -> Gather -> Concat -> Reshape after a com.microsoft DynamicQuantizeLSTM;
- partition inputs of unknown rank in `nnapi parity --partial` (converters/partition_feed.py)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from converters.runners import run_onnxruntime

from tests.converters.onnx.harness import parity, run_converted

RNG = np.random.default_rng(7)


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def squeeze_if_last_is_one(x: str, out: str, prefix: str) -> list:
    """torch's `x.squeeze(-1)` as exported: If (Shape(x)[-1] == 1) then Squeeze(x, -1) else Identity(x)."""
    then_g = h.make_graph([h.make_node("Squeeze", [x, f"{prefix}_axis"], [f"{prefix}_sq"])], f"{prefix}_then", [],
                          [vi(f"{prefix}_sq", TP.FLOAT, None)])
    else_g = h.make_graph([h.make_node("Identity", [x], [f"{prefix}_id"])], f"{prefix}_else", [],
                          [vi(f"{prefix}_id", TP.FLOAT, None)])
    return [h.make_node("Shape", [x], [f"{prefix}_shape"]),
            h.make_node("Gather", [f"{prefix}_shape", f"{prefix}_last"], [f"{prefix}_n"], axis=0),
            h.make_node("Equal", [f"{prefix}_n", f"{prefix}_one"], [f"{prefix}_c"]),
            h.make_node("If", [f"{prefix}_c"], [out], then_branch=then_g, else_branch=else_g)]


def squeeze_inits(prefix: str) -> dict:
    return {f"{prefix}_axis": np.array([-1], np.int64), f"{prefix}_last": np.array(-1, np.int64),
            f"{prefix}_one": np.array(1, np.int64)}


def ops(r) -> list:
    return [o.code.name for o in r.model.operations]


def check(data: bytes, inputs: list, **pins):
    r = convert(data, 8, **pins)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert parity(r, data, inputs=inputs) == []
    return r


@pytest.mark.parametrize("last", [1, 3])
def test_if_on_a_shape_condition_becomes_the_branch_it_takes(last):
    """After the If onnx's shape inference knows no rank, so the ReduceMean over axis 1 had nothing to go on."""
    nodes = squeeze_if_last_is_one("x", "s", "a") + [h.make_node("ReduceMean", ["s"], ["y"], axes=[1], keepdims=0)]
    graph = h.make_graph(nodes, "g", [vi("x", TP.FLOAT, ["n", 4, "k"])], [vi("y", TP.FLOAT, None)],
                         [onnx.numpy_helper.from_array(v, k) for k, v in squeeze_inits("a").items()])
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8).SerializeToString()
    x = RNG.uniform(-1, 1, (2, 4, last)).astype(np.float32)
    r = check(data, [x], dims={"n": 2, "k": last})
    assert "IF" not in ops(r)
    assert r.source.main.tensors[r.source.main.outputs[0]].shape == ((2,) if last == 1 else (2, last))


def test_shape_if_nested_in_a_run_time_if_is_resolved_in_the_branch():
    """The outer If reads a bool input (NNAPI IF); the inner one, in its then branch, squeezes a value the
    branch computes: it is resolved with the shapes the branch sees."""
    inner = squeeze_if_last_is_one("t", "ts", "b")
    then_g = h.make_graph([h.make_node("Relu", ["x"], ["t"])] + inner
                          + [h.make_node("ReduceSum", ["ts", "axes1"], ["tr"], keepdims=1)], "then", [],
                          [vi("tr", TP.FLOAT, [2, 1])])
    else_g = h.make_graph([h.make_node("ReduceMax", ["x"], ["er"], axes=[1, 2], keepdims=0),
                           h.make_node("Unsqueeze", ["er", "axes1"], ["eu"])], "else", [],
                          [vi("eu", TP.FLOAT, [2, 1])])
    nodes = [h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    inits = dict(squeeze_inits("b"), axes1=np.array([1], np.int64))
    data = make_model(nodes, [("x", np.float32, [2, 4, 1]), ("c", np.bool_, [])], [("y", np.float32, [2, 1])],
                      inits, opset=13)
    x = RNG.uniform(-1, 1, (2, 4, 1)).astype(np.float32)
    for c in (True, False):
        r = check(data, [x, np.array(c)])
    assert ops(r) == ["IF"]


def test_branch_that_cannot_run_at_the_pinned_shapes_is_never_taken():
    """silero_vad.onnx: If (sr == 16000) on an int64 input; the 8 kHz branch's LSTM gets a rank-4 input for
    a 512-sample window, so onnxruntime fails there. The If is then the branch that runs."""
    w = RNG.normal(size=(1, 16, 4)).astype(np.float32)
    r_ = RNG.normal(size=(1, 16, 4)).astype(np.float32)
    then_g = h.make_graph([h.make_node("LSTM", ["x", "w", "r"], ["ty"], hidden_size=4),
                           h.make_node("ReduceMean", ["ty"], ["tm"], axes=[0, 1, 3], keepdims=0)], "sr16k", [],
                          [vi("tm", TP.FLOAT, None)])
    # the rank after a squeeze-if-the-last-extent-is-1 is unknown when onnxruntime loads the model; with
    # the window's shape it is 3, so the Unsqueeze makes rank 4, and LSTM takes rank 3
    else_g = h.make_graph(squeeze_if_last_is_one("x", "xs", "e") + [
                           h.make_node("Unsqueeze", ["xs", "axes0"], ["xu"]),
                           h.make_node("LSTM", ["xu", "w", "r"], ["ey"], hidden_size=4),
                           h.make_node("ReduceMean", ["ey"], ["em"], axes=[0, 1, 3], keepdims=0)], "sr8k", [],
                          [vi("em", TP.FLOAT, None)])
    nodes = [h.make_node("Equal", ["sr", "k16"], ["c"]),
             h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    inits = dict(squeeze_inits("e"), w=w, r=r_, k16=np.array(16000, np.int64), axes0=np.array([0], np.int64))
    graph = h.make_graph(nodes, "g", [vi("x", TP.FLOAT, ["seq", 1, "f"]), vi("sr", TP.INT64, [])],
                         [vi("y", TP.FLOAT, None)], [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 14)], ir_version=8).SerializeToString()
    x = RNG.uniform(-1, 1, (3, 1, 4)).astype(np.float32)
    with pytest.raises(Exception, match="must have 3 dimensions"):
        run_onnxruntime(data, [x, np.array(8000, np.int64)])  # the dropped branch really fails
    r = check(data, [x, np.array(16000, np.int64)], dims={"seq": 3, "f": 4})
    assert "IF" not in ops(r)
    (said,) = [s for s in r.source.metadata["resolved_ifs"] if "can run" in s]
    assert "the then branch" in said and "rank 3" in said


def test_int64_input_is_int32_in_nnapi():
    """silero_vad_16k_op15 adds sr * 0 to its state: an int64 input, int64 arithmetic, a Cast to float."""
    nodes = [h.make_node("Mul", ["sr", "zero"], ["m"]), h.make_node("Cast", ["m"], ["mf"], to=TP.FLOAT),
             h.make_node("Add", ["x", "mf"], ["y"]), h.make_node("Equal", ["sr", "k"], ["e"])]
    data = make_model(nodes, [("x", np.float32, [2, 3]), ("sr", np.int64, [])], ["y", "e"],
                      {"zero": np.array(2, np.int64), "k": np.array(16000, np.int64)}, opset=13)
    x = RNG.uniform(-1, 1, (2, 3)).astype(np.float32)
    for sr in (16000, 8000, -7):
        r = check(data, [x, np.array(sr, np.int64)])
    assert "int64 -> int32" in r.io_rewrites["sr"]


def test_gather_with_run_time_negative_indices():
    """int64 indices given at run time (now NNAPI int32) may count from the end, as ONNX allows."""
    data = make_model([h.make_node("Gather", ["x", "i"], ["y"], axis=1)], [("x", np.float32, [2, 5]),
                                                                         ("i", np.int64, [3])], ["y"], opset=13)
    x = RNG.uniform(-1, 1, (2, 5)).astype(np.float32)
    r = check(data, [x, np.array([-1, 0, -5], np.int64)])
    assert {"LESS", "SELECT", "GATHER"} <= set(ops(r))


def test_wrongly_declared_output_shape_gives_way_to_the_computed_one():
    """ddddocr's common_old declares its output [1, seqlen]; its Reshape computes [16, 1, 8210]."""
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "i0"], ["n"], axis=0),
             h.make_node("Unsqueeze", ["n", "axes0"], ["nu"]), h.make_node("Concat", ["nu", "one_m1"], ["shape"], axis=0),
             h.make_node("Reshape", ["x", "shape"], ["y"])]
    graph = h.make_graph(nodes, "g", [vi("x", TP.FLOAT, ["n", 2, 3])], [vi("y", TP.FLOAT, [1, "seqlen"])],
                         [onnx.numpy_helper.from_array(v, k) for k, v in
                          {"i0": np.array(0, np.int64), "axes0": np.array([0], np.int64),
                           "one_m1": np.array([1, -1], np.int64)}.items()])
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8).SerializeToString()
    x = RNG.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
    r = check(data, [x], dims={"n": 4})
    assert run_converted(r, [x])[0].shape == run_onnxruntime(data, [x])[0][0].shape == (4, 1, 6)


def test_reshape_after_dynamic_quantize_lstm_has_its_shape():
    """onnxruntime's dynamic quantization of an LSTM and the Reshape to [seq, 2 * hidden] computed from the
    LSTM output's shape: the shape pass knows the com.microsoft output's shape in every round."""
    from tests.converters.onnx.ortq_models import float_model, ops_of, ort_quantized
    from tests.converters.onnx.test_qdq_patterns import weights
    hidden, inp = 8, 6
    inits = {"w": weights(2, 4 * hidden, inp), "r": weights(2, 4 * hidden, hidden), "b": weights(2, 8 * hidden),
             "i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "i3": np.array(3, np.int64),
             "axes0": np.array([0], np.int64), "perm_w": weights(2 * hidden, 5)}
    nodes = [h.make_node("LSTM", ["x", "w", "r", "b"], ["y"], hidden_size=hidden, direction="bidirectional"),
             h.make_node("Shape", ["y"], ["s"]),
             h.make_node("Gather", ["s", "i0"], ["n0"], axis=0), h.make_node("Gather", ["s", "i1"], ["n2"], axis=0),
             h.make_node("Gather", ["s", "i3"], ["n3"], axis=0), h.make_node("Mul", ["n2", "n3"], ["f"]),
             h.make_node("Unsqueeze", ["n0"], ["u0"], axes=[0]), h.make_node("Unsqueeze", ["f"], ["uf"], axes=[0]),
             h.make_node("Concat", ["u0", "uf"], ["shape"], axis=0),
             h.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1, 3]),
             h.make_node("Reshape", ["yt", "shape"], ["z"]), h.make_node("MatMul", ["z", "perm_w"], ["out"])]
    model = float_model(nodes, [("x", [5, 1, inp])], ["out"], inits, opset=12)
    data = ort_quantized(model, [("x", [5, 1, inp])], "dynamic", per_channel=False)
    assert {"DynamicQuantizeLSTM", "MatMulInteger", "Reshape"} <= set(ops_of(data)), ops_of(data)
    m = onnx.load_from_string(data)  # as ddddocr's common_old: a declared output shape the nodes do not compute
    m.graph.output[0].CopyFrom(vi("out", TP.FLOAT, [1, "seqlen", 1]))  # (rank 3 for the rank 2 computed)
    data = m.SerializeToString()
    x = np.random.default_rng(1).uniform(-1, 1, (5, 1, inp)).astype(np.float32)
    r = convert(data, 8)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert run_converted(r, [x])[0].shape == run_onnxruntime(data, [x])[0][0].shape == (5, 5)


def test_partition_input_of_unknown_rank_is_fed_with_its_real_shape(tmp_path):
    """An If left on the CPU (its branch has an op NNAPI lacks) writes a tensor of unknown rank (rank 2 or 3
    by branch) that a ReduceMean partition reads: it is fed the framework's value, never a rank-0 array."""
    from converters.parity import check as parity_check
    then_g = h.make_graph([h.make_node("Det", ["x"], ["d"]), h.make_node("Unsqueeze", ["d", "axes0"], ["t"])],
                          "then", [], [vi("t", TP.FLOAT, None)])
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["e"])], "else", [], [vi("e", TP.FLOAT, None)])
    nodes = [h.make_node("If", ["c"], ["v"], then_branch=then_g, else_branch=else_g),
             h.make_node("ReduceMean", ["v"], ["y"], axes=[1], keepdims=0)]
    # fed one element, the partition input's operand of unknown rank was reshaped to rank 0 (the bug)
    graph = h.make_graph(nodes, "g", [vi("x", TP.FLOAT, ["a", "b", "b"]), vi("c", TP.BOOL, [])],
                         [vi("y", TP.FLOAT, None)], [onnx.numpy_helper.from_array(np.array([0], np.int64), "axes0")])
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    r = convert(data, 8, partial=True)
    assert [n.op for n in r.unsupported] == ["If"]
    (p,) = r.partitions
    assert p.model.operands[p.model.inputs[0]].type.dimensions == ()  # onnxruntime's guess (rank 2) is dropped
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=RNG.uniform(-1, 1, (1, 1, 1)).astype(np.float32), c=np.array(False))
    report = parity_check(str(path), partial=True, inputs=str(inputs))
    assert report.partitions and all(p["passed"] and not p.get("unchecked") for p in report.partitions), \
        report.partitions


def test_drawn_stand_in_of_unknown_rank_is_refused_with_a_reason():
    from converters.partition_feed import Unchecked, stand_in
    from converters.source_graph import SourceTensor
    rng = np.random.default_rng(0)
    assert stand_in(rng, SourceTensor(0, "v", (2, -1), np.dtype(np.float32))).shape == (2, 1)
    with pytest.raises(Unchecked, match="'v' has an unknown rank"):
        stand_in(rng, SourceTensor(0, "v", None, np.dtype(np.float32)))


def test_convert_says_which_branch_it_took(tmp_path, capsys):
    """A user must see that an If was decided at conversion (its other branch is gone from the model)."""
    from converters.cli import main
    nodes = squeeze_if_last_is_one("x", "s", "a") + [h.make_node("ReduceMean", ["s"], ["y"], axes=[1], keepdims=0)]
    graph = h.make_graph(nodes, "g", [vi("x", TP.FLOAT, ["n", 4, "k"])], [vi("y", TP.FLOAT, None)],
                         [onnx.numpy_helper.from_array(v, k) for k, v in squeeze_inits("a").items()])
    path = tmp_path / "m.onnx"
    path.write_bytes(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8).SerializeToString())
    assert main(["convert", str(path), "-o", str(tmp_path / "m.nnapi"), "--dim", "n=2", "--dim", "k=1"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "decided at conversion" in line]
    assert len(notes) == 1 and "the then branch" in notes[0] and "True for these input shapes" in notes[0], notes



def test_an_if_waiting_on_its_branch_is_not_called_unfixable():
    """silero-vad unpinned: the If's outputs wait on its branch, and pinning the shapes does decide it."""
    from converters.pins import sentences
    found = {"value_dependent": [{"tensor": "If_0_outputs_0", "node": 1, "op": "If", "nodes": 1},
                                 {"tensor": "nz", "node": 4, "op": "NonZero", "nodes": 2}]}
    branch, nonzero = sentences(found)
    assert branch.startswith("branch-dependent") and "Pinning the input shapes decides the If" in branch
    assert "no pin fixes it" not in branch and "no pin fixes it" in nonzero

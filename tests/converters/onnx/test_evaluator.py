"""The conversion-time evaluator on ONNX models (converters/folding.py, onnx/ops/folded.py): weight normalisation
feeding Conv weights, the TorchScript exporter's int64 shape arithmetic (Shape -> Gather -> Cast -> Div ->
Unsqueeze -> Concat -> Reshape), the same inside an If branch, the folding limit, and int64 values computed at
run time that are not shapes (position ids from the cumulative sum of a mask) held as int32. Every converted
model is compared with onnxruntime."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from converters import folding
from converters.onnx import convert
from converters.onnx.authoring import make_model

from tests.converters.onnx.harness import parity

RNG = np.random.RandomState(0)
WEIGHT_NORM = [  # torch.nn.utils.weight_norm: w = g * v / ||v|| over every axis but the output channels
    helper.make_node("Mul", ["v", "v"], ["vv"]),
    helper.make_node("ReduceSum", ["vv", "axes"], ["ss"], keepdims=1),
    helper.make_node("Sqrt", ["ss"], ["norm"]),
    helper.make_node("Div", ["v", "norm"], ["unit"]),
    helper.make_node("Mul", ["g", "unit"], ["mul"]),
    helper.make_node("Conv", ["x", "mul", "b"], ["y"], pads=[1, 1, 1, 1]),
]
HALVE_CHANNELS = [  # y.reshape(n, int(c / 2), -1) as the TorchScript exporter writes it
    helper.make_node("Shape", ["y"], ["s"]),
    helper.make_node("Gather", ["s", "i1"], ["c"], axis=0),
    helper.make_node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT),
    helper.make_node("Div", ["cf", "two"], ["half"]),
    helper.make_node("Floor", ["half"], ["halff"]),
    helper.make_node("Cast", ["halff"], ["hi"], to=TensorProto.INT64),
    helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
    helper.make_node("Unsqueeze", ["n", "ax0"], ["nu"]),
    helper.make_node("Unsqueeze", ["hi", "ax0"], ["hu"]),
    helper.make_node("Concat", ["nu", "hu", "m1"], ["shape"], axis=0),
    helper.make_node("Reshape", ["y", "shape"], ["z"]),
]
INITS = {"v": RNG.randn(8, 3, 3, 3).astype(np.float32), "g": (RNG.rand(8, 1, 1, 1) + 0.5).astype(np.float32),
         "axes": np.array([1, 2, 3], np.int64), "b": np.zeros(8, np.float32), "i1": np.array(1, np.int64),
         "i0": np.array(0, np.int64), "two": np.array(2, np.float32), "ax0": np.array([0], np.int64),
         "m1": np.array([-1], np.int64)}
X = ("x", np.float32, ["batch", 3, 6, 6])


def _converted(data: bytes, **pins):
    result = convert(data, **pins)
    assert result.complete, [(n.op, n.reason) for n in result.unsupported]
    assert not parity(result, data, seeds=(0, 1))
    return result


def test_weight_normalisation_and_torchscript_shape_arithmetic_fold():
    data = make_model(WEIGHT_NORM + HALVE_CHANNELS, [X], ["z"], INITS)
    result = _converted(data, dims={"batch": 1})
    ops = [o.code.name for o in result.model.operations]
    assert "CONV_2D" in ops and not {"MUL", "DIV", "SQRT", "CONCATENATION", "CAST"} & set(ops), ops
    folded = [n.op for n in result.nodes if n.absorbed and n.absorbed["how"] == "folded constant"]
    assert len(folded) == 5 + 10  # the weights' five nodes, and every shape node but the Reshape


def test_folding_inside_an_if_branch():
    """The branch taken at run time reshapes through the shape arithmetic; it folds inside the branch."""
    then = helper.make_graph(HALVE_CHANNELS, "then", [], [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Reshape", ["y", "flat"], ["z2"])], "else", [],
                              [helper.make_tensor_value_info("z2", TensorProto.FLOAT, None)])
    nodes = WEIGHT_NORM + [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
                           helper.make_node("Greater", ["total", "zero"], ["positive"]),
                           helper.make_node("If", ["positive"], ["out"], then_branch=then, else_branch=other)]
    inits = dict(INITS, zero=np.array(0, np.float32), flat=np.array([1, 4, -1], np.int64))
    data = make_model(nodes, [("x", np.float32, [1, 3, 6, 6])], [("out", np.float32, [1, 4, 72])], inits)
    result = _converted(data)
    then_graph = next(g for g in result.source.graphs if g.name == "then")
    assert [n.op for n in then_graph.nodes if not n.folded] == ["Reshape"]


def test_a_weight_beyond_the_folding_limit_stays_an_operation(monkeypatch):
    monkeypatch.setattr(folding, "FOLD_MAX_BYTES", 512)  # v is 8*3*3*3*4 = 864 bytes
    result = convert(make_model(WEIGHT_NORM, [X], ["y"], INITS), dims={"batch": 1})
    mul = result.nodes[0]
    assert mul.supported and "its result, 864 bytes, exceeds the 512 bytes a folded constant may take" in mul.note
    conv = result.nodes[5]
    assert conv.reason_code == "non_constant_operand"
    assert "weights tensor 'mul'" in conv.reason and "node 0 (Mul): computed from constants but not" in conv.reason


def test_int64_position_ids_computed_at_run_time_are_int32():
    """RoBERTa's position ids: cumsum(mask) * mask + pad, the mask cast to int64 from a comparison."""
    nodes = [
        helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
        helper.make_node("Where", ["is_pad", "zero", "one"], ["keep"]),
        helper.make_node("Cast", ["keep"], ["mask"], to=TensorProto.INT64),
        helper.make_node("CumSum", ["mask", "axis"], ["cum"]),
        helper.make_node("Mul", ["cum", "mask"], ["pos0"]),
        helper.make_node("Add", ["pos0", "pad"], ["pos"]),
        helper.make_node("Gather", ["table", "pos"], ["y"], axis=0),
    ]
    inits = {"pad": np.array(1, np.int64), "axis": np.array(1, np.int64), "zero": np.array(0, np.float32),
             "one": np.array(1, np.float32), "table": RNG.randn(12, 4).astype(np.float32)}
    data = make_model(nodes, [("ids", np.int64, [2, 6])], ["y"], inits)
    ids = np.array([[5, 7, 1, 1, 9, 1], [1, 2, 3, 4, 5, 6]], np.int64)
    result = convert(data)
    assert result.complete, [(n.op, n.reason) for n in result.unsupported]
    assert not parity(result, data, inputs=[ids])
    cast = result.nodes[2]
    assert cast.note.startswith("int64 -> int32: computed at run time") and "'mask' and what is computed" in cast.note


def _loop(body_nodes, initializers=()):
    """Loop(M = 3, true, x) over a body (i, cond_in, x_in) -> (cond_out = cond_in, x_out), x a float [1, 4]."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        list(body_nodes) + [helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), helper.make_tensor_value_info("x_in", f, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("x_out", f, [1, 4])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in initializers])
    return make_model([helper.make_node("Loop", ["M", "T", "x"], ["y"], body=body)], [("x", np.float32, [1, 4])],
                      [("y", np.float32, [1, 4])], {"M": np.array(3, np.int64), "T": np.array(True)})


def test_int64_arithmetic_on_a_loop_counter_is_int32():
    """(i + 1) ** 2 in int64, then cast to float: the counter is the WHILE's int32 one, and so is what follows."""
    data = _loop([helper.make_node("Add", ["i", "one"], ["i1"]), helper.make_node("Mul", ["i1", "i1"], ["sq"]),
                  helper.make_node("Cast", ["sq"], ["f"], to=TensorProto.FLOAT),
                  helper.make_node("Add", ["x_in", "f"], ["x_out"])], [("one", np.array(1, np.int64))])
    _converted(data)


def test_folding_inside_a_loop_body():
    """A Loop body's weights computed from its own constants (a * b / sqrt(b)) fold inside the body."""
    def constant(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, np.float32), name))
    data = _loop([constant("a", [[1.5, 2.0, -1.0, 0.5]]), constant("b", [[2.0, 0.5, 3.0, 4.0]]),
                  helper.make_node("Mul", ["a", "b"], ["ab"]), helper.make_node("Sqrt", ["b"], ["sb"]),
                  helper.make_node("Div", ["ab", "sb"], ["w"]), helper.make_node("Add", ["x_in", "w"], ["x_out"])])
    result = _converted(data)
    loop_body = next(g for g in result.source.graphs if g.name == "body")
    assert [n.op for n in loop_body.nodes if not n.folded] == ["Add", "Identity"]


def test_coverage_names_the_value_an_extent_depends_on_with_static_inputs():
    """Only extents that depend on values stay dynamic: the NonZero count is named, though no input is dynamic."""
    from converters.pins import for_result
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Transpose", ["nz"], ["t"], perm=[1, 0]),
             helper.make_node("GatherND", ["x", "t"], ["picked"]), helper.make_node("Shape", ["picked"], ["n"])]
    found = for_result(convert(make_model(nodes, [("x", np.float32, [2, 3])], ["n"])))
    assert found["pins_needed"] == []
    [value] = found["value_dependent"]  # (how many nodes wait on it depends on which of them convert)
    assert (value["tensor"], value["node"], value["op"]) == ("nz", 0, "NonZero") and value["nodes"] >= 2

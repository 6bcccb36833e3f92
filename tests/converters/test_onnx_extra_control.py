"""If -> NNAPI IF with branches that capture values from the enclosing graph (ops/control.py and the
reader's subgraph reading), compared with onnxruntime; Loop is reported."""
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from converters.onnx.runner import verify_levels

RNG = np.random.default_rng(31)
X = ("x", np.float32, [1, 2, 3, 5])
SEEDS = range(6)  # inputs in [-1, 1): the sum's sign takes both branches


def branch(name, nodes, out, shape=(1, 2, 3, 5)):
    return h.make_graph(nodes, name, [], [h.make_tensor_value_info(out, TP.FLOAT, list(shape))])


def if_model(then_g, else_g, pre=(), inits=None, x="x"):
    nodes = list(pre) + [h.make_node("ReduceSum", [x], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["c"]),
                         h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return make_model(nodes, [X], ["y"], dict({"zero": np.float32(0.0)}, **(inits or {})), opset=13)


def test_branches_capturing_different_values():
    k = RNG.random((1, 2, 3, 5)).astype(np.float32)
    then_g = branch("then", [h.make_node("Add", ["x", "k"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Mul", ["x", "s"], ["e"])], "e")  # s: a run-time value of the graph
    r = verify_levels(if_model(then_g, else_g, inits={"k": k}), levels=(3, 4, 8), seeds=SEEDS, need_level=4)[8]
    assert [o.code.name for o in r.model.operations] == ["REDUCE_SUM", "GREATER", "IF"]


def test_branch_returning_a_captured_value_unchanged():
    then_g = branch("then", [h.make_node("Identity", ["x"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    verify_levels(if_model(then_g, else_g), levels=(3, 4, 8), seeds=SEEDS, need_level=4)


def test_captured_value_after_conv_is_passed_in_onnx_layout():
    conv = h.make_node("Conv", ["x", "w"], ["xc"])
    then_g = branch("then", [h.make_node("Relu", ["xc"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Sigmoid", ["xc"], ["e"])], "e")
    data = if_model(then_g, else_g, pre=[conv], inits={"w": RNG.normal(size=(2, 2, 1, 1)).astype(np.float32)}, x="xc")
    verify_levels(data, levels=(4, 8), seeds=SEEDS, need_level=4)


def test_nested_if():
    inner_then = branch("inner_then", [h.make_node("Abs", ["x"], ["it"])], "it")
    inner_else = branch("inner_else", [h.make_node("Neg", ["x"], ["ie"])], "ie")
    then_g = branch("then", [h.make_node("Less", ["s", "one"], ["c2"]),
                             h.make_node("If", ["c2"], ["t"], then_branch=inner_then, else_branch=inner_else)], "t")
    else_g = branch("else", [h.make_node("Mul", ["x", "x"], ["e"])], "e")
    verify_levels(if_model(then_g, else_g, inits={"one": np.float32(1.0)}), levels=(4, 8), seeds=SEEDS, need_level=4)


def test_branch_returning_a_constant():
    value = onnx.numpy_helper.from_array(RNG.random((1, 2, 3, 5)).astype(np.float32))
    then_g = branch("then", [h.make_node("Constant", [], ["t"], value=value)], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    verify_levels(if_model(then_g, else_g), levels=(4, 8), seeds=SEEDS, need_level=4)


def test_if_needs_feature_level_4():
    then_g = branch("then", [h.make_node("Relu", ["x"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    node = convert(if_model(then_g, else_g), 3).unsupported[0]
    assert node.op == "If" and node.reason_code == "feature_level_too_low"


def test_unsupported_branch_node_is_named():
    then_g = branch("then", [h.make_node("Erf", ["x"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    node = convert(if_model(then_g, else_g), 8).unsupported[0]
    assert node.op == "If" and "Erf" in node.reason


def test_loop_is_reported():
    body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Add", ["v", "v"], ["v2"])],
                        "body", [h.make_tensor_value_info("i", TP.INT64, []),
                                 h.make_tensor_value_info("cond_in", TP.BOOL, []),
                                 h.make_tensor_value_info("v", TP.FLOAT, [1, 2, 3, 5])],
                        [h.make_tensor_value_info("cond_out", TP.BOOL, []),
                         h.make_tensor_value_info("v2", TP.FLOAT, [1, 2, 3, 5])])
    node = h.make_node("Loop", ["n", "c", "x"], ["y"], body=body)
    data = make_model([node], [X], ["y"], {"n": np.array(3, np.int64), "c": np.array(True)}, opset=13)
    assert onnx.load_from_string(data).graph.node[0].op_type == "Loop"
    assert convert(data, 8).unsupported[0].reason_code == "unsupported_operator"

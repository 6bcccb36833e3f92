"""ONNX ops that return int64 indices (ArgMax, ArgMin, TopK; ops/reduce_arg_topk.py) as NNAPI int32: every
axis, keepdims, select_last_index, ties, largest=0, NHWC inputs, float16 / int32 values, an int64 index
read by later nodes, and the refusals; compared with onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import parity, verify_levels

RNG = np.random.default_rng(21)
SHAPE = [2, 3, 4, 5]
X = ("x", np.float32, SHAPE)
TIES = [RNG.integers(-2, 3, size=SHAPE).astype(np.float32)]  # few distinct values: many ties


def check(data, need_level, inputs=TIES, levels=(1, 3, 4, 8)):
    r = verify_levels(data, need_level=need_level, levels=levels)[8]
    assert not parity(r, data, inputs=inputs)
    return r


@pytest.mark.parametrize("keep", [0, 1])
@pytest.mark.parametrize("axis", [0, 2, -1])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_select_last_index(op, axis, keep):
    data = make_model([h.make_node(op, ["x"], ["y"], axis=axis, keepdims=keep, select_last_index=1)], [X], ["y"],
                      opset=13)
    r = check(data, need_level=4)
    assert r.io_rewrites["y"].startswith("int64 -> int32")


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_first_index_on_ties_and_rank_1(op):
    check(make_model([h.make_node(op, ["x"], ["y"], axis=1)], [X], ["y"], opset=13), need_level=3)
    one = make_model([h.make_node(op, ["x"], ["y"], select_last_index=1)], [("x", np.float32, [7])], ["y"], opset=13)
    check(one, need_level=4, inputs=[np.array([1, 3, 3, 0, 3, 2, 1], np.float32)])


def test_int64_index_read_by_later_nodes():
    """ArgMax's int64 result feeds a Gather and a Cast: inside the model it is the int32 operand. (Below
    feature level 3 the ArgMax stays on the CPU and the int64 tensor would cross into NNAPI, which has no
    int64 operands: those nodes are then refused with operand_type, so level 1 is not part of this check.)"""
    nodes = [h.make_node("ArgMax", ["x"], ["i"], axis=3, keepdims=0),
             h.make_node("Gather", ["table", "i"], ["g"], axis=0),
             h.make_node("Cast", ["i"], ["f"], to=1), h.make_node("Add", ["g", "f"], ["y"])]
    data = make_model(nodes, [X], ["y"], {"table": RNG.normal(size=5).astype(np.float32)}, opset=13)
    r = check(data, need_level=3, levels=(3, 4, 8))
    assert not r.io_rewrites.get("y")
    low = {u.op: u for u in convert(data, 1).unsupported}
    assert low["Gather"].reason_code == "operand_type" and "stays on the CPU" in low["Gather"].reason


def test_int64_chain_to_a_graph_output_is_noted():
    nodes = [h.make_node("ArgMin", ["x"], ["i"], axis=2, keepdims=0), h.make_node("Unsqueeze", ["i", "ax"], ["y"])]
    data = make_model(nodes, [X], ["y"], {"ax": np.array([0], np.int64)}, opset=13)
    r = check(data, need_level=6, levels=(6, 8))  # RESHAPE of int32 needs feature level 6
    assert r.io_rewrites["y"].startswith("int64 -> int32")


@pytest.mark.parametrize("values", [np.float16, np.int32])
def test_arg_max_other_types(values):
    data = make_model([h.make_node("ArgMax", ["x"], ["y"], axis=1, select_last_index=1)], [("x", values, SHAPE)],
                      ["y"], opset=13)
    check(data, need_level=4, inputs=[TIES[0].astype(values)])


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_topk_every_axis(axis, largest):
    data = make_model([h.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)], [X], ["v", "i"],
                      {"k": np.array([2], np.int64)}, opset=13)
    r = check(data, need_level=3)
    names = [o.code.name for o in r.model.operations]
    assert names.count("TRANSPOSE") == (0 if axis == -1 else 3)


def test_topk_after_conv_one_transpose_in():
    """An NHWC input goes to the swapped order with a single TRANSPOSE."""
    w = RNG.normal(size=(3, 3, 1, 1)).astype(np.float32)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("TopK", ["c", "k"], ["v", "i"], axis=1)]
    data = make_model(nodes, [("x", np.float32, [1, 3, 4, 5])], ["v", "i"], {"w": w, "k": np.array([2], np.int64)},
                      opset=13)
    r = verify_levels(data, need_level=3)[8]
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE") == 4  # x in, to swapped, v and i back


def test_topk_opset_1_attribute():
    data = make_model([h.make_node("TopK", ["x"], ["v", "i"], axis=1, k=2)], [X], ["v", "i"], opset=9)
    check(data, need_level=3)


@pytest.mark.parametrize("values", [np.float16, np.int32])
def test_topk_other_types_last_axis(values):
    data = make_model([h.make_node("TopK", ["x", "k"], ["v", "i"], largest=0)], [("x", values, SHAPE)], ["v", "i"],
                      {"k": np.array([3], np.int64)}, opset=13)
    check(data, need_level=3, inputs=[TIES[0].astype(values)])


def test_topk_refusals():
    k2, k4 = {"k": np.array([2], np.int64)}, {"k": np.array([4], np.int64)}
    outs = [("v", np.float32, [2, 4, 4, 5]), ("i", np.int64, [2, 4, 4, 5])]
    cases = {
        "operand_type": make_model([h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)], [("x", np.int32, SHAPE)],
                                   ["v", "i"], k2, opset=13),
        "invalid_node": make_model([h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)], [X], outs, k4, opset=13),
        "unsupported_attribute": make_model([h.make_node("TopK", ["x", "k"], ["v", "i"], sorted=0)], [X], ["v", "i"],
                                            {"k": np.array([2], np.int64)}, opset=13),
    }
    for code, data in cases.items():
        assert convert(data, 8).unsupported[0].reason_code == code, code
    runtime_k = make_model([h.make_node("TopK", ["x", "k"], ["v", "i"])], [X, ("k", np.int64, [1])], ["v", "i"],
                           opset=13)
    assert convert(runtime_k, 8).unsupported[0].reason_code in ("non_constant_operand", "operand_type")

"""Shape, Size, ConstantOfShape, Range folded before conversion; Expand and Tile (ops/folded.py)."""
import numpy as np
import pytest
from onnx import helper as h
from onnx import numpy_helper

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import run_converted, verify_levels

RNG = np.random.default_rng(23)
X = ("x", np.float32, [2, 3, 4, 5])
I64 = np.int64


def test_shape_feeds_reshape_and_emits_nothing():
    nodes = [h.make_node("Shape", ["x"], ["s"], start=0, end=2), h.make_node("Concat", ["s", "m"], ["t"], axis=0),
             h.make_node("Reshape", ["x", "t"], ["y"])]
    data = make_model(nodes, [X], ["y"], {"m": np.array([-1], I64)}, opset=15)
    r = verify_levels(data)[8]
    assert [o.code.name for o in r.model.operations] == ["RESHAPE"]
    assert r.nodes[0].note.startswith("folded")


def test_size_constant_of_shape_range_fold():
    value = numpy_helper.from_array(np.array([0.5], np.float32))
    nodes = [h.make_node("Size", ["x"], ["n"]), h.make_node("Range", ["zero", "n", "step"], ["r"]),
             h.make_node("Cast", ["r"], ["rf"], to=1), h.make_node("Reshape", ["rf", "shape"], ["rr"]),
             h.make_node("ConstantOfShape", ["shape"], ["half"], value=value),
             h.make_node("Mul", ["rr", "half"], ["k"]), h.make_node("Add", ["x", "k"], ["y"])]
    inits = {"zero": np.array(0, I64), "step": np.array(1, I64), "shape": np.array([2, 3, 4, 5], I64)}
    r = verify_levels(make_model(nodes, [X], ["y"], inits))[8]
    assert [o.code.name for o in r.model.operations] == ["ADD"]  # float math of constants: evaluated at conversion


@pytest.mark.parametrize("op,inits,expected", [
    ("Shape", {}, np.array([2, 3, 4, 5])),
    ("Size", {}, np.array(120)),
])
def test_static_graph_outputs_are_copied_as_int32(op, inits, expected):
    data = make_model([h.make_node(op, ["x"], ["y"])], [X], ["y"], inits)
    r = convert(data, 8)
    assert r.complete and "int64 -> int32" in r.io_rewrites["y"]
    got = run_converted(r, [RNG.random((2, 3, 4, 5)).astype(np.float32)])[0]
    np.testing.assert_array_equal(got.reshape(expected.shape), expected)


def test_range_float_graph_output():
    data = make_model([h.make_node("Shape", ["x"], ["s"]), h.make_node("Range", ["a", "b", "d"], ["y"]),
                       h.make_node("Relu", ["x"], ["z"])], [X], ["y", "z"],
                      {"a": np.float32(1.0), "b": np.float32(3.2), "d": np.float32(0.5)})
    verify_levels(data, need_level=1)


def test_dynamic_shape_is_reported():
    data = make_model([h.make_node("Shape", ["x"], ["s"]), h.make_node("Reshape", ["x", "s"], ["y"])],
                      [("x", np.float32, ["n", 3])], ["y"])
    reasons = {n.op: n.reason_code for n in convert(data, 8).unsupported}
    assert reasons["Shape"] == "dynamic_shape"


EXPAND = {"rank_up": ([3, 1], [2, 3, 4]), "same_rank": ([1, 3, 1, 5], [2, 3, 4, 5]),
          "smaller_shape": ([2, 3, 1, 5], [4, 1]), "identity": ([2, 3], [2, 3])}


@pytest.mark.parametrize("case", sorted(EXPAND))
def test_expand(case):
    xs, shape = EXPAND[case]
    data = make_model([h.make_node("Expand", ["x", "s"], ["y"])], [("x", np.float32, xs)], ["y"],
                      {"s": np.array(shape, I64)})
    verify_levels(data, need_level=1 if case == "identity" else 3)  # TILE


def test_expand_of_constant_folds():
    nodes = [h.make_node("Expand", ["k", "s"], ["e"]), h.make_node("Add", ["x", "e"], ["y"])]
    inits = {"k": RNG.random((3, 1, 1)).astype(np.float32), "s": np.array([2, 3, 4, 5], I64)}
    data = make_model(nodes, [X], ["y"], inits)
    assert [o.code.name for o in verify_levels(data)[8].model.operations] == ["ADD"]


@pytest.mark.parametrize("repeats", [[1, 2, 1, 3], [2, 1, 1, 1]])
def test_tile(repeats):
    data = make_model([h.make_node("Tile", ["x", "r"], ["y"])], [X], ["y"], {"r": np.array(repeats, I64)})
    verify_levels(data, need_level=3)
    q = {"s": np.float32(0.1), "z": np.uint8(100)}  # QDQ: a quantized TILE
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             h.make_node("Tile", ["d", "r"], ["t"]), h.make_node("QuantizeLinear", ["t", "s", "z"], ["y"])]
    data = make_model(nodes, [X], ["y"], dict(q, r=np.array(repeats, I64)))
    verify_levels(data, need_level=3)


def test_tile_run_time_repeats_are_reported():
    data = make_model([h.make_node("Tile", ["x", "r"], ["y"])], [X, ("r", I64, [4])], [("y", np.float32, None)])
    assert convert(data, 8).unsupported[0].reason_code == "non_constant_operand"

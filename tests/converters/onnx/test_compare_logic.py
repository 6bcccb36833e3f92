"""ONNX comparisons, logic, Where and Mod (ops/compare.py), compared with onnxruntime, in the ONNX layout
and after a Conv (NHWC operands)."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import run_converted, verify_levels

RNG = np.random.default_rng(13)
X = ("x", np.float32, [1, 2, 3, 5])
CONV_W = {"w": RNG.normal(size=(2, 2, 1, 1)).astype(np.float32)}

COMPARE = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]
# second operand: (shape, constant?)
OPERANDS = {"same": ([1, 2, 3, 5], False), "row": ([5], False), "channel_const": ([2, 1, 1], True),
            "scalar_const": ([], True)}


@pytest.mark.parametrize("operand", sorted(OPERANDS))
@pytest.mark.parametrize("op", COMPARE)
def test_comparisons(op, operand):
    shape, const = OPERANDS[operand]
    value = np.round(RNG.random(shape) * 2 - 1, 1).astype(np.float32)
    inits = {"b": value} if const else {}
    extra = [] if const else [("b", np.float32, shape)]
    # rounded inputs make ties (Equal, *OrEqual) actually happen
    nodes = [h.make_node("Mul", ["x", "ten"], ["x10"]), h.make_node("Floor", ["x10"], ["xf"]),
             h.make_node("Mul", ["xf", "tenth"], ["xr"]), h.make_node(op, ["xr", "b"], ["y"])]
    inits.update(ten=np.float32(10), tenth=np.float32(0.1))
    verify_levels(make_model(nodes, [X, *extra], ["y"], inits), need_level=3)


@pytest.mark.parametrize("op", COMPARE)
def test_comparison_after_conv_keeps_nhwc(op):
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node(op, ["c", "k"], ["y"])]
    data = make_model(nodes, [X], ["y"], dict(CONV_W, k=RNG.random((2, 1, 1)).astype(np.float32)))
    r = verify_levels(data, need_level=3)[8]
    ops = [o.code.name for o in r.model.operations]
    # a bool graph output keeps the ONNX layout (NNAPI cannot transpose bool): the conv output is transposed
    assert ops[1:] == ["CONV_2D", "TRANSPOSE", op.upper().replace("OREQUAL", "_EQUAL")]


LOGIC = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}


@pytest.mark.parametrize("op", sorted(LOGIC))
@pytest.mark.parametrize("shape_b", [[2, 3, 4], [4], [3, 1]])
def test_logic(op, shape_b):
    data = make_model([h.make_node(op, ["a", "b"], ["y"])], [("a", bool, [2, 3, 4]), ("b", bool, shape_b)], ["y"])
    verify_levels(data, need_level=3)


def test_not():
    verify_levels(make_model([h.make_node("Not", ["a"], ["y"])], [("a", bool, [2, 3, 4])], ["y"]), need_level=3)


@pytest.mark.parametrize("shapes", [([1, 2, 3, 5], [1, 2, 3, 5], [1, 2, 3, 5]), ([3, 5], [1, 2, 3, 5], [5]),
                                    ([1, 2, 3, 5], [1], [2, 3, 1])])
def test_where_broadcasts(shapes):
    sc, sa, sb = shapes
    data = make_model([h.make_node("Where", ["c", "a", "b"], ["y"])],
                      [("c", bool, sc), ("a", np.float32, sa), ("b", np.float32, sb)], ["y"])
    verify_levels(data, need_level=3)


def test_where_after_conv_with_constant_branch():
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Greater", ["c", "z"], ["m"]),
             h.make_node("Where", ["m", "c", "k"], ["y"])]
    data = make_model(nodes, [X], ["y"], dict(CONV_W, z=np.float32(0), k=RNG.random((2, 1, 1)).astype(np.float32)))
    r = verify_levels(data, need_level=3)[8]
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE") == 2  # the boundaries only


MOD_B = {"same": np.array([[3, -3, 5], [-4, 2, 6]], np.int32), "row": np.array([3, -4, 5], np.int32),
         "one": np.array([-3], np.int32)}


@pytest.mark.parametrize("case", sorted(MOD_B))
def test_mod_int32_floor_semantics(case):
    b = MOD_B[case]
    data = make_model([h.make_node("Mod", ["a", "b"], ["y"])], [("a", np.int32, [2, 3]), ("b", np.int32, b.shape)],
                      ["y"])
    r = convert(data, 8)
    assert r.complete and r.nodes[0].min_feature_level == 4
    a = np.array([[-7, 7, -8], [9, 0, -1]], np.int32)
    np.testing.assert_array_equal(run_converted(r, [a, b])[0], np.mod(a, b))  # ONNX Mod fmod=0 is numpy's mod


def test_mod_unsupported_variants():
    fmod = make_model([h.make_node("Mod", ["a", "b"], ["y"], fmod=1)], [("a", np.int32, [2]), ("b", np.int32, [2])],
                      ["y"])
    assert convert(fmod, 8).unsupported[0].reason_code == "unsupported_attribute"
    flt = make_model([h.make_node("Mod", ["a", "b"], ["y"], fmod=1)], [("a", np.float32, [2]), ("b", np.float32, [2])],
                     ["y"])
    assert convert(flt, 8).unsupported[0].reason_code == "unsupported_attribute"
    flt0 = make_model([h.make_node("Mod", ["a", "b"], ["y"])], [("a", np.float32, [2]), ("b", np.float32, [2])], ["y"])
    assert convert(flt0, 8).unsupported[0].reason_code == "operand_type"


def test_quantized_comparison():
    """Equal of QDQ-quantized tensors compares the dequantized values (runs as float after DEQUANTIZE)."""
    s = {"s": np.float32(0.1), "z": np.int8(0)}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             h.make_node("Greater", ["d", "x"], ["y"])]
    verify_levels(make_model(nodes, [X], ["y"], s), need_level=3)

"""ONNX Pow (ops/elementwise.py): constant exponents with exact forms (identity, MUL chains, SQRT, DIV),
POW for the rest (constant, broadcast in the NHWC layout, run-time float or int32 exponents), int32 bases,
and the refusals; compared with onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import run_converted, verify_levels

RNG = np.random.default_rng(5)
X = ("x", np.float32, [1, 2, 3, 5])


def positive(nodes_after):
    """x -> |x| + 0.1 -> Pow (fractional exponents need a positive base)."""
    return [h.make_node("Abs", ["x"], ["a"]), h.make_node("Add", ["a", "tenth"], ["p"])] + nodes_after


# exponent -> (NNAPI ops the Pow becomes, lowest feature level)
EXACT = {1.0: ([], 1), 2.0: (["MUL"], 1), 3.0: (["MUL", "MUL"], 1), -1.0: (["DIV"], 2), 0.5: (["SQRT"], 3),
         1.7: (["POW"], 3), -2.5: (["POW"], 3)}


@pytest.mark.parametrize("e", sorted(EXACT))
def test_constant_scalar_exponent(e):
    ops, level = EXACT[e]
    if e in (2.0, 3.0, 1.0):
        data = make_model([h.make_node("Pow", ["x", "e"], ["y"])], [X], ["y"], {"e": np.float32(e)})
    else:
        data = make_model(positive([h.make_node("Pow", ["p", "e"], ["y"])]), [X], ["y"],
                          {"e": np.float32(e), "tenth": np.float32(0.1)})
        level = max(level, 3)  # ABS
    r = verify_levels(data, need_level=level)[8]
    got = [o.code.name for o in r.model.operations]
    assert got[-len(ops):] == ops if ops else got[-1] == "RESHAPE"


def test_int64_exponent_constant():
    """Exporters write Pow(x, int64 2): still x * x."""
    data = make_model([h.make_node("Pow", ["x", "e"], ["y"])], [X], ["y"], {"e": np.int64(2)})
    assert [o.code.name for o in verify_levels(data, need_level=1)[8].model.operations] == ["MUL"]


def test_broadcast_exponent_after_conv():
    """A per-channel constant exponent [C, 1, 1] against an NHWC operand is transposed with it."""
    w = RNG.normal(size=(2, 2, 1, 1)).astype(np.float32)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Abs", ["c"], ["a"]),
             h.make_node("Pow", ["a", "e"], ["y"])]
    data = make_model(nodes, [X], ["y"], {"w": w, "e": np.array([2.5, 0.5], np.float32).reshape(2, 1, 1)})
    r = verify_levels(data, need_level=3)[8]
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE") == 2


def test_runtime_exponents():
    data = make_model(positive([h.make_node("Pow", ["p", "e"], ["y"])]), [X, ("e", np.float32, [5])], ["y"],
                      {"tenth": np.float32(0.1)})
    verify_levels(data, need_level=3)
    data = make_model(positive([h.make_node("Pow", ["p", "e"], ["y"])]), [X, ("e", np.int32, [5])], ["y"],
                      {"tenth": np.float32(0.1)}, opset=15)
    r = verify_levels(data, need_level=3)[8]
    assert "CAST" in [o.code.name for o in r.model.operations]


@pytest.mark.parametrize("n", [0, 2, 3, 5, 8])
def test_int32_base(n):
    data = make_model([h.make_node("Pow", ["x", "e"], ["y"])], [("x", np.int32, [2, 3])], ["y"],
                      {"e": np.int32(n)}, opset=15)
    r = verify_levels(data, need_level=4)[8]
    v = np.array([[-3, 0, 2], [5, -1, 7]], np.int32)
    np.testing.assert_array_equal(run_converted(r, [v])[0], v.astype(np.int64) ** n)


def test_float16_square():
    data = make_model([h.make_node("Pow", ["x", "e"], ["y"])], [("x", np.float16, [2, 3])], ["y"],
                      {"e": np.float16(2)})
    verify_levels(data, need_level=3)


def test_int32_refusals_name_the_reason():
    runtime = make_model([h.make_node("Pow", ["x", "e"], ["y"])], [("x", np.int32, [2, 3]), ("e", np.int32, [3])],
                         ["y"], opset=15)
    negative = make_model([h.make_node("Pow", ["x", "e"], ["y"])], [("x", np.int32, [2, 3])], ["y"],
                          {"e": np.int32(-1)}, opset=15)
    for data in (runtime, negative):
        u = convert(data, 8).unsupported[0]
        assert u.reason_code == "operand_type" and "non-negative integer exponent" in u.reason

"""ONNX Erf and Gelu (ops/erf.py): the erf composition against onnxruntime and against math.erf (the
error bound its docstring states), Gelu in both forms, the exact-GELU pattern as torch exports it, the NHWC
layout, float16, and the refused types."""
import math

import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import parity, run_converted, verify_levels

RNG = np.random.default_rng(9)
X = ("x", np.float32, [1, 2, 3, 5])


def erf_model(shape=(1, 2, 3, 5), dtype=np.float32):
    return make_model([h.make_node("Erf", ["x"], ["y"])], [("x", dtype, list(shape))], ["y"], opset=13)


def test_erf_matches_onnxruntime():
    r = verify_levels(erf_model(), need_level=3)[8]
    wide = [(4 * RNG.standard_normal((1, 2, 3, 5))).astype(np.float32)]
    assert not parity(r, erf_model(), inputs=wide)


def test_erf_error_bound():
    """Within 5.4e-7 of erf (float64) over [-6, 6] and exactly +-1 / 0 / NaN where erf is."""
    x = np.concatenate([np.linspace(-6, 6, 20001), [0.0, -0.0, 1e-30, -1e-30, 9.0, -40.0, np.inf, -np.inf, np.nan]])
    x = x.astype(np.float32)
    r = convert(erf_model((x.size,)), 8)
    got = run_converted(r, [x])[0].astype(np.float64)
    ref = np.array([math.erf(float(v)) for v in x])
    finite = np.isfinite(x)
    assert np.abs(got[finite] - ref[finite]).max() <= 5.4e-7
    np.testing.assert_array_equal(got[~finite][:2], [1.0, -1.0])
    assert np.isnan(got[-1])
    np.testing.assert_array_equal(got[[-5, -4]], [1.0, -1.0])  # erf(9), erf(-40)


def test_erf_after_conv_keeps_nhwc():
    w = RNG.normal(size=(2, 2, 1, 1)).astype(np.float32)
    data = make_model([h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Erf", ["c"], ["y"])], [X], ["y"],
                      {"w": w}, opset=13)
    r = verify_levels(data, need_level=3)[8]
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE") == 2  # input and output boundary


def test_erf_float16():
    verify_levels(erf_model(dtype=np.float16), need_level=3)


def test_erf_integer_is_refused():
    u = convert(erf_model(dtype=np.int32), 8).unsupported[0]
    assert u.reason_code == "operand_type" and "float" in u.reason


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_onnxruntime(approximate):
    data = make_model([h.make_node("Gelu", ["x"], ["y"], approximate=approximate)], [X], ["y"], opset=20)
    verify_levels(data, need_level=3 if approximate == "none" else 1)


def test_exact_gelu_pattern_as_torch_exports_it():
    """x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5 (torch.nn.GELU() at opsets below 20), in a rank-3 graph."""
    c = {"sqrt2": np.float32(1.4142135381698608), "one": np.float32(1.0), "half": np.float32(0.5)}
    nodes = [h.make_node("Div", ["x", "sqrt2"], ["d"]), h.make_node("Erf", ["d"], ["e"]),
             h.make_node("Add", ["e", "one"], ["e1"]), h.make_node("Mul", ["x", "e1"], ["m"]),
             h.make_node("Mul", ["m", "half"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 4, 8])], ["y"], c, opset=14)
    r = verify_levels(data, need_level=3)[8]
    wide = [(3 * RNG.standard_normal((2, 4, 8))).astype(np.float32)]
    assert not parity(r, data, inputs=wide)


def test_mish_wide_range():
    data = make_model([h.make_node("Mish", ["x"], ["y"])], [X], ["y"], opset=18)
    r = verify_levels(data, need_level=3)[8]
    wide = [(30 * RNG.standard_normal((1, 2, 3, 5))).astype(np.float32)]
    assert not parity(r, data, inputs=wide)


@pytest.mark.parametrize("op,attrs,opset", [("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20), ("Mish", {}, 18)])
def test_float16_activations(op, attrs, opset):
    data = make_model([h.make_node(op, ["x"], ["y"], **attrs)], [("x", np.float16, [1, 2, 3, 5])], ["y"], opset=opset)
    verify_levels(data, need_level=3)

"""ONNX CumSum (ops/cumsum.py): every axis, exclusive and reverse, extents that are and are not powers of
two, one element, NHWC operands after a Conv, float16 and int32, inf inputs, and the refusals; compared
with onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import parity, verify_levels

RNG = np.random.default_rng(17)


def model(shape, axis, dtype=np.float32, **attrs):
    return make_model([h.make_node("CumSum", ["x", "axis"], ["y"], **attrs)], [("x", dtype, shape)], ["y"],
                      {"axis": np.array(axis, np.int64)}, opset=14)


@pytest.mark.parametrize("attrs", [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_matches_onnxruntime(axis, attrs):
    verify_levels(model([3, 8, 7], axis, **attrs), need_level=3)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 33])
def test_extents(n):
    verify_levels(model([2, n], 1), need_level=3 if n > 1 else 1)  # one element: a copy (RESHAPE)
    verify_levels(model([2, n], 1, exclusive=1), need_level=3 if n > 1 else 1)


def test_after_conv_on_the_channel_axis():
    w = RNG.normal(size=(6, 2, 1, 1)).astype(np.float32)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("CumSum", ["c", "axis"], ["y"], reverse=1)]
    data = make_model(nodes, [("x", np.float32, [1, 2, 3, 4])], ["y"], {"w": w, "axis": np.array(1, np.int64)},
                      opset=14)
    r = verify_levels(data, need_level=3)[8]
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE") == 2  # the boundaries only


def test_float16():
    verify_levels(model([4, 6], 1, np.float16), need_level=3)


@pytest.mark.parametrize("attrs", [{}, {"exclusive": 1, "reverse": 1}])
def test_int32_is_exact(attrs):
    data = model([3, 9], 1, np.int32, **attrs)
    r = verify_levels(data, need_level=4)[8]
    big = [RNG.integers(-2 ** 30, 2 ** 30, size=(3, 9)).astype(np.int32)]  # sums wrap as onnxruntime's do
    assert not parity(r, data, inputs=big)


def test_inf_stays_where_it_is():
    data = model([1, 6], 1)
    r = convert(data, 8)
    x = np.array([[1.0, np.inf, 2.0, -3.0, 0.5, 4.0]], np.float32)
    from tests.converters.onnx.harness import run_converted
    np.testing.assert_array_equal(run_converted(r, [x])[0], np.cumsum(x, axis=1))


def test_refusals():
    runtime_axis = make_model([h.make_node("CumSum", ["x", "axis"], ["y"])], [("x", np.float32, [2, 3]),
                              ("axis", np.int32, [])], ["y"], opset=14)
    assert convert(runtime_axis, 8).unsupported[0].reason_code == "non_constant_operand"
    unknown = model(["n", 3], 1)
    assert convert(unknown, 8).unsupported[0].reason_code == "dynamic_shape"

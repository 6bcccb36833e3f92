"""Malformed ONNX quantization parameters and weights (scale 0, NaN, inf, huge, signaling NaN; zero points
that are not integers or far out of range; weights beyond float32) give a clean result or an error naming
the node and tensor -- never a numpy RuntimeWarning (turned into an error here)."""
import warnings

import numpy as np
import onnx
import pytest
from onnx import helper as h, numpy_helper

from converters.onnx import convert
from converters.source_graph import SourceError
from converters.onnx.authoring import make_model
from fuzz import targets

F32 = np.float32
# a signaling NaN: converting it to float64 raises the invalid flag (a quiet NaN does not)
SNAN = np.array([0x7F989AAE], np.uint32).view(np.float32)[0]


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def dequantize_model(zero_point, scale=F32(0.1), axis=None) -> bytes:
    """DequantizeLinear with a constant zero point of any type (written without shape inference, which
    would refuse the ill-typed ones)."""
    attrs = {} if axis is None else {"axis": axis}
    graph = h.make_graph([h.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], **attrs)], "t",
                         [h.make_tensor_value_info("x", onnx.TensorProto.INT8, [1, 4])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])],
                         [numpy_helper.from_array(np.asarray(scale), "s"),
                          numpy_helper.from_array(np.asarray(zero_point), "z")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def qlinear(op: str, x_scale, w_scale) -> bytes:
    rng = np.random.default_rng(0)
    inits = {"xs": F32(x_scale), "ws": F32(w_scale), "ys": F32(0.2), "xz": np.uint8(120), "yz": np.uint8(130),
             "wz": np.int8(0)}
    if op == "QLinearConv":
        inits["w"] = rng.integers(-100, 100, (4, 2, 3, 3)).astype(np.int8)
        node = h.make_node(op, ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=[1, 1, 1, 1])
        return make_model([node], [("x", np.uint8, [1, 2, 3, 5])], ["y"], inits)
    inits["w"] = rng.integers(-100, 100, (5, 3)).astype(np.int8)
    node = h.make_node(op, ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    return make_model([node], [("x", np.uint8, [2, 5])], ["y"], inits)


def behaves(data: bytes, tmp_path) -> str:
    """The fuzz target's checks (convert whole and partial, run every model built): no Finding."""
    return targets.check("onnx", data, tmp_path)[0]


@pytest.mark.parametrize("zp, says", [
    (F32(3.5), "holds 3.5, not an integer"),
    (F32(1e30), "far outside"),
    (np.float64(-1e300), "far outside"),
    (F32(np.nan), "not a finite number"),
    (F32(np.inf), "not a finite number"),
    (np.uint64(2 ** 64 - 1), "far outside"),   # would wrap to -1 (a valid int8 zero point) when cast
    (np.int64(-2 ** 63), "far outside"),
])
def test_bad_zero_point_is_a_source_error_naming_the_tensor(zp, says, tmp_path):
    data = dequantize_model(zp)
    with pytest.raises(SourceError, match=f"DequantizeLinear.*zero point 'z'.*{says}"):
        convert(data)
    assert behaves(data, tmp_path) == "rejected"


def test_bad_per_axis_zero_point(tmp_path):
    data = dequantize_model(np.array([0, 1e30, 0, 0], F32), np.full(4, 0.1, F32), axis=1)
    with pytest.raises(SourceError, match="zero point 'z' holds 1e\\+30"):
        convert(data)


def test_integral_float_zero_point_still_converts():
    assert convert(dequantize_model(F32(3.0))).complete


@pytest.mark.parametrize("scale", [0.0, -1.0, np.nan, np.inf, SNAN])
@pytest.mark.parametrize("op", ["DequantizeLinear", "QLinearAdd"])
def test_invalid_scale_is_an_unsupported_node(op, scale, tmp_path):
    if op == "DequantizeLinear":
        data = dequantize_model(np.int8(3), F32(scale))
    else:
        node = h.make_node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain="com.microsoft")
        data = make_model([node], [("a", np.uint8, [1, 4]), ("b", np.uint8, [1, 4])], [("y", np.uint8, [1, 4])],
                          {"as": F32(scale), "az": np.uint8(3), "bs": F32(0.1), "bz": np.uint8(3),
                           "ys": F32(0.1), "yz": np.uint8(3)}, ms_opset=1)
    (node,) = convert(data).unsupported
    assert "positive finite scale" in node.reason
    assert behaves(data, tmp_path) == "ok"


@pytest.mark.parametrize("op", ["QLinearConv", "QLinearMatMul"])
@pytest.mark.parametrize("scales", [(1e38, 1e38), (3e38, 2.0)])
def test_bias_scale_overflow_is_an_unsupported_node(op, scales, tmp_path):
    data = qlinear(op, *scales)
    (node,) = convert(data).unsupported
    assert node.reason_code == "quantization_type"
    assert "'xs'" not in node.reason  # the tensors are named, not their scale inputs
    assert "overflows float32" in node.reason and "'x'" in node.reason and "'w'" in node.reason
    assert behaves(data, tmp_path) == "ok"


@pytest.mark.parametrize("op", ["QLinearConv", "QLinearMatMul"])
@pytest.mark.parametrize("scales", [(1e-45, 1e-45), (1e-30, 1e-30), (1e38, 0.02)])
def test_tiny_and_large_scales_convert_and_run(op, scales, tmp_path):
    data = qlinear(op, *scales)
    assert convert(data).complete
    assert behaves(data, tmp_path) == "ok"


@pytest.mark.parametrize("alpha, value", [(0.0, np.inf), (1e300, 1.0), (2.0, np.nan)])
def test_gemm_weights_times_alpha_follow_ieee(alpha, value, tmp_path):
    b = np.arange(15, dtype=F32).reshape(5, 3)
    b[0, 0] = value
    data = make_model([h.make_node("Gemm", ["x", "b"], ["y"], alpha=alpha)], [("x", F32, [2, 5])], ["y"], {"b": b})
    result = convert(data)
    assert result.complete
    weights = [op.value for op in result.models[0].operands if (op.name or "").endswith("/fc_weights")]
    with np.errstate(all="ignore"):
        expected = (b * F32(alpha)).T
    assert len(weights) == 1 and np.array_equal(weights[0], expected, equal_nan=True)
    assert behaves(data, tmp_path) == "ok"


def test_float64_gemm_weights_beyond_float32(tmp_path):
    b = np.ones((5, 3))
    b[0, 0] = 1e300
    data = make_model([h.make_node("Gemm", ["x", "b"], ["y"], alpha=2.0)], [("x", np.float64, [2, 5])], ["y"],
                      {"b": b})
    convert(data, partial=True)
    assert behaves(data, tmp_path) == "ok"

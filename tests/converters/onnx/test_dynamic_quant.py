"""onnxruntime's dynamic quantization (quantize_dynamic: DynamicQuantizeLinear feeding ConvInteger /
MatMulInteger) in float32 holding the same integers (converters/onnx/dynamic.py): the run-time scale and
zero point computed as onnxruntime does, so the result matches onnxruntime within the float tolerance."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from tests.converters.onnx.harness import verify_levels

from tests.converters.onnx.ortq_models import float_model, ops_of, ort_quantized
from tests.converters.onnx.test_qdq_patterns import conv, weights


def model_convs():
    inits = {}
    nodes = [conv("x", "a", 3, 8, prefix="a", inits=inits), h.make_node("Relu", ["a"], ["r"]),
             conv("r", "y", 8, 4, prefix="b", inits=inits)]
    return float_model(nodes, [("x", [1, 3, 6, 6])], ["y"], inits), [("x", [1, 3, 6, 6])]


def model_matmuls():
    inits = {"w1": weights(16, 12), "b1": weights(12), "w2": weights(12, 5)}
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m"]), h.make_node("Add", ["m", "b1"], ["a"]),
             h.make_node("Relu", ["a"], ["r"]), h.make_node("MatMul", ["r", "w2"], ["y"])]
    return float_model(nodes, [("x", [1, 4, 16])], ["y"], inits), [("x", [1, 4, 16])]


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("make,integer_op", [(model_convs, "ConvInteger"), (model_matmuls, "MatMulInteger")])
def test_ort_dynamic_quantization(make, integer_op, per_channel):
    model, _ = make()
    data = ort_quantized(model, [], "dynamic", per_channel=per_channel)
    assert {"DynamicQuantizeLinear", integer_op} <= set(ops_of(data)), ops_of(data)
    r = verify_levels(data, levels=(8,), seeds=(0, 1, 2))
    assert "DEQUANTIZE" not in [o.code.name for o in r[8].model.operations]


def test_all_zero_input():
    """max(x, 0) - min(x, 0) = 0: onnxruntime's y_scale is 1 and y, y_zero_point 0 (no division by 0)."""
    model, inputs = model_convs()
    data = ort_quantized(model, inputs, "dynamic")
    r = convert(data, 8)
    from tests.converters.onnx.harness import parity
    assert parity(r, data, inputs=[np.zeros((1, 3, 6, 6), np.float32)]) == []


def test_dynamic_quantize_linear_read_elsewhere_is_refused():
    """A DynamicQuantizeLinear whose uint8 output is read by another op has no float form."""
    nodes = [h.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    data = float_model(nodes, [("x", [2, 3])], ["y"], {}, opset=13).SerializeToString()
    r = convert(data, 8, partial=True)
    assert "DynamicQuantizeLinear" in [n.op for n in r.unsupported]


def lstm_model(seq, bidirectional=False):
    hidden, inp, dirs = 8, 6, 2 if bidirectional else 1
    inits = {"w": weights(dirs, 4 * hidden, inp), "r": weights(dirs, 4 * hidden, hidden), "b": weights(dirs, 8 * hidden)}
    nodes = [h.make_node("LSTM", ["x", "w", "r", "b"], ["y", "yh", "yc"], hidden_size=hidden,
                         direction="bidirectional" if bidirectional else "forward")]
    return float_model(nodes, [("x", [seq, 1, inp])], ["y", "yh", "yc"], inits), [("x", [seq, 1, inp])]


def test_dynamic_quantize_lstm_sequence_converts_completely():
    model, inputs = lstm_model(5, True)
    r = convert(ort_quantized(model, inputs, "dynamic"), 8)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]

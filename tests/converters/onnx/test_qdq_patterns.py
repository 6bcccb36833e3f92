"""Every QDQ pattern onnxruntime.quantization.quantize_static emits converts and matches onnxruntime
(within one stored unit of the quantized output): int32 bias DequantizeLinear folded into the conv's or
Gemm's bias, per-tensor and per-channel weights, uint8 and int8 activations, fixed-output-scale
operators with the scale the QDQ graph asks for, pools whose input and output scales differ, shape
operators, and Q/DQ pairs left around a node onnxruntime does not quantize."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from tests.converters.onnx.harness import verify_levels

from tests.converters.onnx.ortq_models import float_model, ops_of, ort_quantized, quantized_outputs

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _own_weights():
    """Each test draws its weights from a fresh seed: the draws do not depend on which tests (here or in the
    modules that import weights / conv) ran before."""
    global RNG
    RNG = np.random.default_rng(5)


def weights(*shape, s=0.3):
    return RNG.normal(0, s, shape).astype(np.float32)


def conv(x, y, cin, cout, k=3, prefix="c", inits=None):
    inits[f"{prefix}w"], inits[f"{prefix}b"] = weights(cout, cin, k, k), weights(cout, s=0.2)
    return h.make_node("Conv", [x, f"{prefix}w", f"{prefix}b"], [y], pads=[k // 2] * 4)


def model_conv_relu():
    inits = {}
    nodes = [conv("x", "c", 3, 4, inits=inits), h.make_node("Relu", ["c"], ["y"])]
    return float_model(nodes, [("x", [1, 3, 6, 6])], ["y"], inits), [("x", [1, 3, 6, 6])]


def model_gemm(trans_b):
    inits = {"w": weights(6, 16) if trans_b else weights(16, 6), "b": weights(6)}
    nodes = [h.make_node("Gemm", ["x", "w", "b"], ["y"], transB=trans_b)]
    return float_model(nodes, [("x", [2, 16])], ["y"], inits), [("x", [2, 16])]


def model_matmul():
    inits = {"w": weights(16, 6)}
    return float_model([h.make_node("MatMul", ["x", "w"], ["y"])], [("x", [1, 3, 16])], ["y"], inits), \
        [("x", [1, 3, 16])]


def model_conv_gap_gemm():
    """mobilenet's head: Conv, GlobalAveragePool (its own output scale), Flatten, Gemm."""
    inits = {"fw": weights(5, 4), "fb": weights(5)}
    nodes = [conv("x", "c", 3, 4, inits=inits), h.make_node("Relu", ["c"], ["r"]),
             h.make_node("GlobalAveragePool", ["r"], ["g"]), h.make_node("Flatten", ["g"], ["f"]),
             h.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    return float_model(nodes, [("x", [1, 3, 6, 6])], ["y"], inits), [("x", [1, 3, 6, 6])]


def model_unary(op, **attrs):
    inits = {}
    nodes = [conv("x", "c", 3, 4, inits=inits), h.make_node(op, ["c"], ["y"], **attrs)]
    return float_model(nodes, [("x", [1, 3, 4, 4])], ["y"], inits), [("x", [1, 3, 4, 4])]


def model_binary(op):
    inits = {}
    nodes = [conv("x", "a", 3, 4, prefix="a", inits=inits), conv("x", "b", 3, 4, prefix="b", inits=inits)]
    nodes.append(h.make_node(op, ["a", "b"], ["y"], **({"axis": 1} if op == "Concat" else {})))
    return float_model(nodes, [("x", [1, 3, 4, 4])], ["y"], inits), [("x", [1, 3, 4, 4])]


def model_shapes():
    """Resize, Reshape and Transpose between convolutions."""
    inits = {"scales": np.array([1, 1, 2, 2], np.float32), "shape": np.array([1, 4, 8, 8], np.int64)}
    nodes = [conv("x", "a", 3, 4, prefix="a", inits=inits),
             h.make_node("Resize", ["a", "", "scales"], ["r"], mode="nearest", nearest_mode="floor",
                         coordinate_transformation_mode="asymmetric"),
             h.make_node("Reshape", ["r", "shape"], ["s"]), h.make_node("Transpose", ["s"], ["t"], perm=[0, 1, 3, 2]),
             conv("t", "y", 4, 2, prefix="b", inits=inits)]
    return float_model(nodes, [("x", [1, 3, 4, 4])], ["y"], inits), [("x", [1, 3, 4, 4])]


def model_unquantized_between():
    """Erf is not quantized by onnxruntime: a DQ before and a Q after it stay in the graph."""
    inits = {}
    nodes = [conv("x", "a", 3, 4, prefix="a", inits=inits), h.make_node("Erf", ["a"], ["e"]),
             conv("e", "y", 4, 2, prefix="b", inits=inits)]
    return float_model(nodes, [("x", [1, 3, 4, 4])], ["y"], inits), [("x", [1, 3, 4, 4])]


# case -> (model, NNAPI op in the conversion: per-channel weights, per-tensor weights)
MODELS = {
    "conv_relu": (model_conv_relu, "CONV_2D"),
    "gemm": (lambda: model_gemm(0), ("CONV_2D", "FULLY_CONNECTED")),
    "gemm_transb": (lambda: model_gemm(1), ("CONV_2D", "FULLY_CONNECTED")),
    "matmul": (model_matmul, ("CONV_2D", "FULLY_CONNECTED")),
    "conv_gap_gemm": (model_conv_gap_gemm, "AVERAGE_POOL_2D"),
    "sigmoid": (lambda: model_unary("Sigmoid"), "LOGISTIC"),
    "softmax": (lambda: model_unary("Softmax", axis=1), "SOFTMAX"),
    "tanh": (lambda: model_unary("Tanh"), "TANH"),
    "add": (lambda: model_binary("Add"), "ADD"),
    "mul": (lambda: model_binary("Mul"), "MUL"),
    "concat": (lambda: model_binary("Concat"), "CONCATENATION"),
    "resize_reshape_transpose": (model_shapes, "RESIZE_NEAREST_NEIGHBOR"),
    "unquantized_between": (model_unquantized_between, "QUANTIZE"),
}


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("case", sorted(MODELS))
def test_ort_qdq_pattern(case, per_channel, act):
    make, nnapi_op = MODELS[case]
    model, inputs = make()
    data = ort_quantized(model, inputs, "qdq", act, per_channel)
    assert "QuantizeLinear" in ops_of(data) and "DequantizeLinear" in ops_of(data)
    r = verify_levels(quantized_outputs(data), levels=(8,), seeds=(0, 1))
    ops = [o.code.name for o in r[8].model.operations]
    if isinstance(nnapi_op, tuple):  # FULLY_CONNECTED has no per-channel weights: a 1x1 CONV_2D
        nnapi_op = nnapi_op[0 if per_channel else 1]
    assert nnapi_op in ops, ops
    if case == "unquantized_between":  # the float Erf between a DEQUANTIZE and a QUANTIZE
        assert ops.count("DEQUANTIZE") == 1 and ops.count("QUANTIZE") == 2, ops


def test_int32_bias_dequantize_is_folded_into_the_conv():
    model, inputs = model_conv_relu()
    r = convert(ort_quantized(model, inputs, "qdq", "u8", True), 8)
    assert r.complete
    ops = [o.code.name for o in r.model.operations]
    assert "CONV_2D" in ops and ops.count("DEQUANTIZE") == 1, ops  # only the graph output's
    bias = [n for n in r.nodes if n.op == "DequantizeLinear" and not n.nnapi_ops]
    assert bias  # the constant DequantizeLinear nodes (weights, int32 bias) emit nothing

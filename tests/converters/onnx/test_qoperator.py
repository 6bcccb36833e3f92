"""The QOperator format of onnxruntime.quantization (QLinearConv, QLinearMatMul, QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu, QGemm)
converts completely and matches onnxruntime within one stored unit; the shapes behind the com.microsoft
ops, which ONNX shape inference cannot see through, are known to the converter (ms_shapes.py)."""
import numpy as np
import pytest
from onnx import helper as h

from tests.converters.onnx.harness import verify_levels

from tests.converters.onnx.ortq_models import float_model, ops_of, ort_quantized, quantized_outputs
from tests.converters.onnx.test_qdq_patterns import conv, weights

X = [("x", [1, 3, 6, 6])]


def chain(*tail, gap=False):
    """Conv -> tail ops (each reading the previous output) -> Conv, so a com.microsoft op sits between
    two QLinearConvs (the second needs the first's shape through it)."""
    inits = {}
    nodes, prev = [conv("x", "c0", 3, 4, prefix="a", inits=inits)], "c0"
    for k, (op, extra, attrs) in enumerate(tail):
        out = f"t{k}"
        nodes.append(h.make_node(op, [prev] + [e(inits) for e in extra], [out], **attrs))
        prev = out
    nodes.append(conv(prev, "y", 4, 2, k=1, prefix="b", inits=inits))
    return float_model(nodes, X, ["y"], inits)


def model_add_mul(op):
    inits = {}
    nodes = [conv("x", "a", 3, 4, prefix="a", inits=inits), conv("x", "b", 3, 4, prefix="b", inits=inits),
             h.make_node(op, ["a", "b"], ["s"]), conv("s", "y", 4, 2, prefix="c", inits=inits)]
    return float_model(nodes, X, ["y"], inits)


def model_concat():
    inits = {}
    nodes = [conv("x", "a", 3, 4, prefix="a", inits=inits), conv("x", "b", 3, 2, prefix="b", inits=inits),
             h.make_node("Concat", ["a", "b"], ["s"], axis=1), conv("s", "y", 6, 2, prefix="c", inits=inits)]
    return float_model(nodes, X, ["y"], inits)


def model_head():
    """Conv, GlobalAveragePool, Flatten, Gemm (QGemm), as the classifiers' heads."""
    inits = {"fw": weights(5, 4), "fb": weights(5)}
    nodes = [conv("x", "c", 3, 4, inits=inits), h.make_node("Relu", ["c"], ["r"]),
             h.make_node("GlobalAveragePool", ["r"], ["g"]), h.make_node("Flatten", ["g"], ["f"]),
             h.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    return float_model(nodes, X, ["y"], inits)


def model_matmul():
    inits = {"w": weights(6, 5)}
    nodes = [h.make_node("MatMul", ["x", "w"], ["y"])]
    return float_model(nodes, [("x", [2, 6])], ["y"], inits)


MODELS = {
    "add": (lambda: model_add_mul("Add"), "QLinearAdd", X),
    "mul": (lambda: model_add_mul("Mul"), "QLinearMul", X),
    "concat": (model_concat, "QLinearConcat", X),
    "head": (model_head, "QGemm", X),
    "gap": (model_head, "QLinearGlobalAveragePool", X),
    "average_pool": (lambda: chain(("AveragePool", [], {"kernel_shape": [2, 2], "strides": [2, 2]})),
                     "QLinearAveragePool", X),
    "sigmoid": (lambda: chain(("Sigmoid", [], {})), "QLinearSigmoid", X),
    "leaky_relu": (lambda: chain(("LeakyRelu", [], {"alpha": 0.1})), "QLinearLeakyRelu", X),
    "matmul": (model_matmul, "QLinearMatMul", [("x", [2, 6])]),
}


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("case", sorted(MODELS))
def test_ort_qoperator(case, act):
    make, qop, inputs = MODELS[case]
    data = ort_quantized(make(), inputs, "qop", act, per_channel=case != "matmul")
    assert qop in ops_of(data), ops_of(data)  # the pattern under test is really in the model
    verify_levels(quantized_outputs(data), levels=(8,), seeds=(0, 1))

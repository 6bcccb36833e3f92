"""Layer normalization as exporters below opset 17 write it out (ReduceMean, Sub, Pow, ReduceMean, Add,
Sqrt, Div, Mul, Add; torch.onnx.export of nn.LayerNorm), the RMSNorm variant, and LayerNormalization
without bias and in float16 (axes and ranks: test_layer_instance_norm.py); compared with onnxruntime at feature levels
1, 3, 4, 8. The pattern converts node by node to the same NNAPI operations as the composition of
LayerNormalization (ops/layer_instance_norm.py), with Pow(d, 2) as MUL."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(31)
D = 16


def reduce_mean(x, y, opset):
    if opset >= 18:
        return h.make_node("ReduceMean", [x, "axes"], [y], keepdims=1)
    return h.make_node("ReduceMean", [x], [y], axes=[-1], keepdims=1)


def params(opset):
    p = {"two": np.float32(2.0), "eps": np.float32(1e-5), "gamma": RNG.normal(size=D).astype(np.float32),
         "beta": RNG.normal(size=D).astype(np.float32)}
    if opset >= 18:
        p["axes"] = np.array([-1], np.int64)
    return p


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_exported_layer_norm_pattern(opset):
    nodes = [reduce_mean("x", "mean", opset), h.make_node("Sub", ["x", "mean"], ["d"]),
             h.make_node("Pow", ["d", "two"], ["sq"]), reduce_mean("sq", "var", opset),
             h.make_node("Add", ["var", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["std"]),
             h.make_node("Div", ["d", "std"], ["n"]), h.make_node("Mul", ["n", "gamma"], ["s"]),
             h.make_node("Add", ["s", "beta"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 5, D])], ["y"], params(opset), opset=opset)
    r = verify_levels(data, need_level=3)[8]  # SQRT
    assert [o.code.name for o in r.model.operations] == ["MEAN", "SUB", "MUL", "MEAN", "ADD", "SQRT", "DIV", "MUL",
                                                         "ADD"]


def test_rms_norm_pattern():
    """x * 1 / sqrt(mean(x^2) + eps) * gamma (T5 / LLaMA style)."""
    one = {"one": np.float32(1.0)}
    nodes = [h.make_node("Pow", ["x", "two"], ["sq"]), reduce_mean("sq", "ms", 13),
             h.make_node("Add", ["ms", "eps"], ["me"]), h.make_node("Sqrt", ["me"], ["r"]),
             h.make_node("Div", ["one", "r"], ["inv"]), h.make_node("Mul", ["x", "inv"], ["n"]),
             h.make_node("Mul", ["n", "gamma"], ["y"])]
    p = dict(params(13), **one)
    del p["beta"]
    verify_levels(make_model(nodes, [("x", np.float32, [2, 5, D])], ["y"], p, opset=13), need_level=3)


def test_layer_normalization_without_bias_and_float16():
    g = RNG.normal(size=D).astype(np.float32)
    verify_levels(make_model([h.make_node("LayerNormalization", ["x", "g"], ["y"])], [("x", np.float32, [3, D])],
                             ["y"], {"g": g}, opset=17), need_level=3)
    verify_levels(make_model([h.make_node("LayerNormalization", ["x", "g"], ["y"])], [("x", np.float16, [3, D])],
                             ["y"], {"g": g.astype(np.float16)}, opset=17), need_level=3)

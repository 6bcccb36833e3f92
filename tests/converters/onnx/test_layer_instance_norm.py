"""LayerNormalization and InstanceNormalization (ops/layer_instance_norm.py), compared with onnxruntime."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(19)
X = ("x", np.float32, [2, 3, 4, 5])


@pytest.mark.parametrize("axis", [-1, 2, 1, -3])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm(axis, bias):
    shape = X[2][axis:]
    inits = {"g": RNG.random(shape).astype(np.float32) + 0.5}
    if bias:
        inits["b"] = RNG.normal(size=shape).astype(np.float32)
    node = h.make_node("LayerNormalization", ["x", "g"] + (["b"] if bias else []), ["y"], axis=axis, epsilon=1e-3)
    r = verify_levels(make_model([node], [X], ["y"], inits), need_level=3)[8]
    expected = ["MEAN", "SUB", "MUL", "MEAN", "ADD", "RSQRT", "MUL", "MUL"] + (["ADD"] if bias else [])
    assert r.nodes[0].nnapi_ops == expected


def test_layer_norm_run_time_scale_and_statistics_outputs():
    node = h.make_node("LayerNormalization", ["x", "g", "b"], ["y", "m", "inv"], axis=-2)
    data = make_model([node], [X, ("g", np.float32, [4, 5]), ("b", np.float32, [5])], ["y", "m", "inv"])
    verify_levels(data, need_level=3)


def test_layer_norm_after_conv():
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("LayerNormalization", ["c", "g"], ["y"])]
    data = make_model(nodes, [X], ["y"], {"w": RNG.normal(size=(3, 3, 1, 1)).astype(np.float32),
                                          "g": RNG.random(5).astype(np.float32)})
    verify_levels(data, need_level=3)


def test_layer_norm_rank5_is_reported():
    node = h.make_node("LayerNormalization", ["x", "g"], ["y"])
    data = make_model([node], [("x", np.float32, [1, 2, 3, 4, 5])], ["y"], {"g": np.ones(5, np.float32)})
    assert convert(data, 8).unsupported[0].reason_code == "rank"


@pytest.mark.parametrize("nhwc", [False, True])
def test_instance_norm_4d(nhwc):
    inits = {"s": RNG.random(3).astype(np.float32) + 0.5, "b": RNG.normal(size=3).astype(np.float32)}
    nodes = [h.make_node("InstanceNormalization", ["c" if nhwc else "x", "s", "b"], ["y"], epsilon=1e-4)]
    if nhwc:
        nodes.insert(0, h.make_node("Conv", ["x", "w"], ["c"]))
        inits["w"] = RNG.normal(size=(3, 3, 1, 1)).astype(np.float32)
    r = verify_levels(make_model(nodes, [X], ["y"], inits), need_level=3)[8]
    ops = [o for o in r.nodes[-1].nnapi_ops if o != "TRANSPOSE"]  # the boundary transposes
    assert ops == ["INSTANCE_NORMALIZATION", "MUL", "ADD"]


def test_instance_norm_run_time_scale_and_3d():
    data = make_model([h.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])],
                      [X, ("s", np.float32, [3]), ("b", np.float32, [3])], ["y"])
    verify_levels(data, need_level=3)
    data = make_model([h.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])],
                      [("x", np.float32, [2, 3, 7]), ("s", np.float32, [3]), ("b", np.float32, [3])], ["y"])
    verify_levels(data, need_level=3)

"""ONNX GatherElements (ops/gather_elements.py): every axis, negative and constant indices, indices
smaller than the data, run-time int32 indices from an ArgMax/TopK, NHWC data after a Conv, float16 /
int32 / quantized data, and the refusals; compared with onnxruntime."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(23)
SHAPE = [2, 3, 4]


def const_model(axis, ishape, dtype=np.float32, negative=False):
    n = SHAPE[axis]
    idx = RNG.integers(-n if negative else 0, n, size=ishape).astype(np.int64)
    return make_model([h.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)], [("x", dtype, SHAPE)], ["y"],
                      {"i": idx}, opset=13)


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_constant_indices(axis, negative):
    verify_levels(const_model(axis, [2, 3, 4], negative=negative), need_level=3)


def test_indices_smaller_than_data():
    verify_levels(const_model(1, [1, 5, 2]), need_level=3)


def test_runtime_indices_from_topk():
    """torch's gather(x, 1, topk(x).indices) pattern: the indices are a run-time int32 operand."""
    nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
             h.make_node("GatherElements", ["w", "i"], ["y"], axis=1)]
    data = make_model(nodes, [("x", np.float32, SHAPE), ("w", np.float32, SHAPE)], ["y"],
                      {"k": np.array([2], np.int64)}, opset=13)
    r = verify_levels(data, need_level=4, levels=(4, 8))[8]
    assert "GATHER" in [o.code.name for o in r.model.operations]


def test_runtime_negative_indices():
    """ArgMax - 4 gives indices in [-4, 0): counted from the end."""
    nodes = [h.make_node("ArgMax", ["x"], ["a"], axis=2), h.make_node("Sub", ["a", "four"], ["i"]),
             h.make_node("GatherElements", ["x", "i"], ["y"], axis=2)]
    data = make_model(nodes, [("x", np.float32, SHAPE)], ["y"], {"four": np.array([4], np.int64)}, opset=13)
    verify_levels(data, need_level=4, levels=(4, 8))


def test_nhwc_data_after_conv():
    w = RNG.normal(size=(3, 2, 1, 1)).astype(np.float32)
    idx = RNG.integers(0, 3, size=(1, 3, 2, 5)).astype(np.int64)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("GatherElements", ["c", "i"], ["y"], axis=1)]
    data = make_model(nodes, [("x", np.float32, [1, 2, 2, 5])], ["y"], {"w": w, "i": idx}, opset=13)
    verify_levels(data, need_level=3)


@pytest.mark.parametrize("dtype,level", [(np.float16, 3), (np.int32, 6)])
def test_other_data_types(dtype, level):
    verify_levels(const_model(2, [2, 3, 4], dtype), need_level=level)


def test_quantized_data():
    p = {"s": np.float32(0.05), "z": np.uint8(128), "i": RNG.integers(0, 3, size=(2, 3, 4)).astype(np.int64)}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("GatherElements", ["q", "i"], ["g"], axis=1),
             h.make_node("DequantizeLinear", ["g", "s", "z"], ["y"])]
    verify_levels(make_model(nodes, [("x", np.float32, SHAPE)], ["y"], p, opset=13), need_level=3)


def test_refusals():
    bad = make_model([h.make_node("GatherElements", ["x", "i"], ["y"], axis=1)], [("x", np.float32, SHAPE)], ["y"],
                     {"i": np.full((2, 3, 4), 3, np.int64)}, opset=13)
    u = convert(bad, 8).unsupported[0]
    assert u.reason_code == "invalid_node" and "outside" in u.reason
    unknown = make_model([h.make_node("GatherElements", ["x", "i"], ["y"], axis=0)], [("x", np.float32, ["n", 3])],
                         ["y"], {"i": np.zeros((1, 3), np.int64)}, opset=13)
    assert convert(unknown, 8).unsupported[0].reason_code == "dynamic_shape"

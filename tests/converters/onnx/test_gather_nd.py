"""ONNX GatherND (ops/gather_nd.py, converters/gather_nd.py): constant indices with negative entries, every
batch_dims, index tuples of every length, run-time int64 indices (a graph input, held as int32) with negative
entries, quantized data, NHWC data after a Conv, and the refusals; compared with onnxruntime."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import parity, random_inputs, verify_levels

RNG = np.random.default_rng(41)

# (data shape, indices shape, batch_dims)
CASES = [([2, 3, 4], [5, 2], 0), ([2, 3, 4], [2, 1], 1), ([2, 3, 4, 5], [2, 3, 1], 1), ([2, 3, 4], [3], 0),
         ([2, 3, 4], [2, 2, 3], 0), ([2, 3, 4, 5], [2, 3, 2], 2), ([6, 4], [3, 1], 0), ([2, 3, 4], [2, 4, 2], 1)]


def _indices(shape, ishape, b, rng=RNG):
    dims = shape[b:b + ishape[-1]]
    return np.stack([rng.integers(-d, d, size=ishape[:-1]) for d in dims], -1).astype(np.int64)


@pytest.mark.parametrize("shape,ishape,b", CASES)
def test_constant_indices(shape, ishape, b):
    data = make_model([h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)], [("x", np.float32, shape)], ["y"],
                      {"i": _indices(shape, ishape, b)}, opset=13)
    r = verify_levels(data, levels=(3, 8), need_level=3)[8]
    ops = [o.code.name for o in r.model.operations]  # the row indices are a constant
    assert ops.count("GATHER") == 1 and set(ops) <= {"GATHER", "RESHAPE"}


@pytest.mark.parametrize("shape,ishape,b", CASES)
def test_runtime_indices(shape, ishape, b):
    """int64 indices given at run time (held as int32): the row index is computed with SPLIT, LESS, SELECT,
    MUL and ADD, negative entries included."""
    data = make_model([h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)],
                      [("x", np.float32, shape), ("i", np.int64, ishape)], ["y"], opset=13)
    r = convert(data, 8)
    assert r.complete, [(u.op, u.reason) for u in r.unsupported]
    for seed in range(3):
        x = random_inputs(r.source.main, seed)[0]
        idx = _indices(shape, ishape, b, np.random.default_rng(seed))
        assert not parity(r, data, inputs=[x, idx]), seed
    assert not convert(data, 3).complete  # int32 arithmetic: feature level 4


def test_quantized_data_after_conv():
    """NHWC data (a Conv's output) is gathered in the ONNX layout; QDQ around it keeps the uint8 values."""
    w = RNG.normal(size=(4, 2, 1, 1)).astype(np.float32)
    p = {"w": w, "s": np.float32(0.05), "z": np.uint8(128), "i": _indices([1, 4, 3, 5], [2, 3], 0)}
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("QuantizeLinear", ["c", "s", "z"], ["q"]),
             h.make_node("GatherND", ["q", "i"], ["g"]), h.make_node("DequantizeLinear", ["g", "s", "z"], ["y"])]
    verify_levels(make_model(nodes, [("x", np.float32, [1, 2, 3, 5])], ["y"], p, opset=13), levels=(3, 8),
                  need_level=3)


def test_int32_data():
    data = make_model([h.make_node("GatherND", ["x", "i"], ["y"])], [("x", np.int32, [3, 4, 2])], ["y"],
                      {"i": _indices([3, 4, 2], [2, 2], 0)}, opset=13)
    verify_levels(data, levels=(6, 8), need_level=6)


def test_refusals():
    bad = make_model([h.make_node("GatherND", ["x", "i"], ["y"])], [("x", np.float32, [2, 3])], ["y"],
                     {"i": np.array([[1, 3]], np.int64)}, opset=13)
    u = convert(bad, 8).unsupported[0]
    assert u.reason_code == "invalid_node" and "outside" in u.reason
    unknown = make_model([h.make_node("GatherND", ["x", "i"], ["y"])], [("x", np.float32, ["n", 3])], ["y"],
                         {"i": np.zeros((1, 2), np.int64)}, opset=13)
    assert convert(unknown, 8).unsupported[0].reason_code == "dynamic_shape"


def test_bool_data_from_a_mask():
    """torch's mask[rows, cols] on a bool attention mask (the dynamo exporter's BERT): through uint8 0/1."""
    nodes = [h.make_node("Cast", ["m"], ["b"], to=9), h.make_node("GatherND", ["b", "i"], ["g"]),
             h.make_node("Cast", ["g"], ["y"], to=1)]
    data = make_model(nodes, [("m", np.int32, [2, 7])], ["y"], {"i": _indices([2, 7], [2, 5, 2], 0)}, opset=13)
    r = convert(data, 8)
    assert r.complete, [(u.op, u.reason) for u in r.unsupported]
    mask = np.random.default_rng(2).integers(0, 2, (2, 7)).astype(np.int32)
    assert not parity(r, data, inputs=[mask])

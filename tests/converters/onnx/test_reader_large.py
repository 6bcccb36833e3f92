"""Large initializers are taken out of the proto before shape inference (skeleton.strip): the
values, the inferred shapes and the conversion are unchanged, and text checks still see every tensor."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper as h, numpy_helper

from converters.onnx import convert, read
from converters.onnx.shapes import FOLD_LIMIT
from converters.source_graph import SourceError
from converters.running import run_converted


def _model(w: np.ndarray) -> onnx.ModelProto:
    """x [1, K] -> MatMul with a large W [K, N] -> Reshape to [N, 1] (shape a small constant) -> Relu."""
    k, n = w.shape
    nodes = [h.make_node("MatMul", ["x", "W"], ["y"]), h.make_node("Reshape", ["y", "shape"], ["r"]),
             h.make_node("Relu", ["r"], ["out"])]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                         [h.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                         [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array([n, 1], np.int64), "shape")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])


def test_large_initializer_values_and_inferred_shapes(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((128, 256)).astype(np.float32)
    assert w.size > FOLD_LIMIT
    path = tmp_path / "m.onnx"
    onnx.save(_model(w), path)
    src = read(str(path))
    graph = src.main
    t = {x.name: x for x in graph.tensors}
    np.testing.assert_array_equal(t["W"].data, w)
    assert list(t["y"].shape) == [1, 256] and list(t["r"].shape) == [256, 1]   # inferred through the detached W
    result = convert(str(path))
    x = rng.standard_normal((1, 128)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = run_converted(result, [x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_non_utf8_name_of_a_large_initializer_is_reported(tmp_path):
    proto = _model(np.zeros((128, 256), np.float32))
    raw = proto.SerializeToString().replace(b"\x0a\x01W", b"\x0a\x01\xff", 1)   # the initializer's name field
    with pytest.raises(SourceError, match="UTF-8"):
        read(raw)

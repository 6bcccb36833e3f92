"""The shape pass on the weightless skeleton (converters/onnx/skeleton.py): every shape the full model's
inference gives, the same values read back (initializers, Constant nodes, Constants inside If branches),
and SymbolicShapeInference only where onnx's inference leaves an extent unknown."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper as h, numpy_helper

from converters.onnx import convert, read, shapes, skeleton
from converters.running import run_converted

RNG = np.random.default_rng(7)
W = RNG.standard_normal((64, 48)).astype(np.float32)        # an initializer over FOLD_LIMIT elements
C = RNG.standard_normal((48, 40)).astype(np.float32)        # a Constant node's value
T = RNG.standard_normal((40, 40)).astype(np.float32)        # a Constant inside the then branch
E = RNG.standard_normal((40, 40)).astype(np.float32)        # ... and the else branch
SMALL = np.arange(6, dtype=np.float32).reshape(2, 3)        # small: stays in the skeleton


def _model(dynamic: bool) -> onnx.ModelProto:
    """x [N, 64] @ W @ C, reshaped to [N, 40] by a computed shape (Shape -> Gather -> Concat), then an If on a
    run-time condition whose branches multiply by their own Constant [40, 40]."""
    def branch(name, value):
        node = h.make_node("Constant", [], [f"{name}_w"], value=numpy_helper.from_array(value, f"{name}_w"))
        mm = h.make_node("MatMul", ["r", f"{name}_w"], [f"{name}_out"])
        return h.make_graph([node, mm], name, [], [h.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, None)])

    nodes = [
        h.make_node("MatMul", ["x", "W"], ["y"]),
        h.make_node("Constant", [], ["C"], value=numpy_helper.from_array(C, "C")),
        h.make_node("MatMul", ["y", "C"], ["z"]),
        h.make_node("Shape", ["x"], ["xs"]),
        h.make_node("Gather", ["xs", "zero"], ["n"], axis=0),
        h.make_node("Concat", ["n", "forty"], ["target"], axis=0),
        h.make_node("Reshape", ["z", "target"], ["r"]),
        h.make_node("ReduceSum", ["r"], ["total"], keepdims=0),
        h.make_node("Greater", ["total", "zero_f"], ["cond"]),
        h.make_node("If", ["cond"], ["out"], then_branch=branch("then", T), else_branch=branch("else", E)),
        h.make_node("Constant", [], ["s"], value=numpy_helper.from_array(SMALL, "s")),
        h.make_node("Identity", ["s"], ["small"]),
    ]
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([40], np.int64), "forty"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_f")]
    x = h.make_tensor_value_info("x", TensorProto.FLOAT, ["N" if dynamic else 2, 64])
    outs = [h.make_tensor_value_info("out", TensorProto.FLOAT, None),
            h.make_tensor_value_info("small", TensorProto.FLOAT, None)]
    return h.make_model(h.make_graph(nodes, "g", [x], outs, inits), opset_imports=[h.make_opsetid("", 13)])


def _shapes(proto: onnx.ModelProto) -> dict:
    """{tensor name: dims} of every typed value in every graph (dim_param kept as its name)."""
    found = {}

    def walk(g):
        for vi in list(g.value_info) + list(g.output):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                found[vi.name] = [d.dim_value if d.HasField("dim_value") else d.dim_param
                                  for d in vi.type.tensor_type.shape.dim]
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
    walk(proto.graph)
    return found


def test_strip_takes_the_large_values_and_leaves_types_and_dims():
    full = _model(False)
    stripped, detached = skeleton.strip(_model(False))
    assert len(detached) == 4   # W, C and the two branches' Constants; the small ones stay
    assert stripped.ByteSize() < full.ByteSize() - 4 * (W.nbytes + C.nbytes + T.nbytes + E.nbytes) // 5
    init = {t.name: t for t in stripped.graph.initializer}
    assert list(init["W"].dims) == [64, 48] and not init["W"].HasField("raw_data")
    assert np.frombuffer(detached[skeleton.key_of(init["W"])], np.float32).reshape(64, 48).tolist() == W.tolist()
    assert skeleton.key_of(init["zero"]) is None and init["zero"].HasField("raw_data")
    small = next(n for n in stripped.graph.node if n.output[0] == "s").attribute[0].t
    assert skeleton.key_of(small) is None


@pytest.mark.parametrize("dynamic", [False, True])
def test_the_skeleton_keeps_every_shape_the_full_model_gives(dynamic):
    full = shapes.infer(_model(dynamic))
    stripped, _ = skeleton.strip(_model(dynamic))
    lean = shapes.infer(stripped)
    want, got = _shapes(full), _shapes(lean)
    assert want == got
    assert want["r"] == (["N", 40] if dynamic else [2, 40]) and want["then_out"] == want["r"]


def test_symbolic_inference_reads_a_stripped_model():
    """onnxruntime's pass decodes every Constant and reads initializer values: on the skeleton, a stripped
    tensor is a known type and shape of unknown value, not a failure that loses the whole pass."""
    full = shapes._symbolic_inference(_model(True))
    stripped, _ = skeleton.strip(_model(True))
    lean = shapes._symbolic_inference(stripped)
    assert full is not None and lean is not None
    assert _shapes(lean) == _shapes(full)
    assert _shapes(lean)["z"] == ["N", 40]


def test_the_values_read_back_are_the_models(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(False), path)
    src = read(str(path))
    tensors = {t.name: t for g in src.graphs for t in g.tensors}
    for name, value in (("W", W), ("C", C), ("then_w", T), ("else_w", E), ("s", SMALL)):
        np.testing.assert_array_equal(tensors[name].data, value)
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = run_converted(convert(str(path)), [x])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_symbolic_inference_runs_only_where_onnx_leaves_an_extent_unknown(monkeypatch):
    calls = []
    real = shapes._symbolic_inference
    monkeypatch.setattr(shapes, "_symbolic_inference", lambda proto: calls.append(1) or real(proto))
    shapes.infer(skeleton.strip(_model(False))[0])
    assert calls == []   # static: onnx's rounds leave nothing unknown
    shapes.infer(skeleton.strip(_model(True))[0])
    assert calls   # N stays unknown: onnxruntime's pass is tried

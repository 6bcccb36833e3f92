"""nnapi bench on partial models: NNAPI partitions on the executor, CPU fallback nodes on the framework;
the pipeline's outputs are the framework's, and the output says how the model was split (no timing
assertions)."""
import json

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper as h

from converters.bench import bench, partial_pipeline
from converters.cli import main
from converters.load import importer
from converters.runners import run_litert
from converters.running import random_source_inputs
from converters.tflite.authoring import GraphBuilder


def _tflite_partial(path):
    """ADD -> LOG_SOFTMAX (NNAPI feature level 3) -> ADD: partial at feature level 1."""
    g = GraphBuilder()
    x = g.input("x", [1, 8], "FLOAT32")
    a, b, c = (g.tensor(n, [1, 8]) for n in "abc")
    g.op("ADD", [x, x], [a], "AddOptions")
    g.op("LOG_SOFTMAX", [a], [b], "LogSoftmaxOptions")
    g.op("ADD", [b, x], [c], "AddOptions")
    g.output(c)
    path.write_bytes(g.finish())
    return path


def _onnx_partial(path):
    """Relu -> Det (no NNAPI counterpart: a CPU fallback node) -> Sigmoid."""
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Det", ["r"], ["d"]), h.make_node("Sigmoid", ["d"], ["y"])]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
                         [h.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path.write_bytes(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]).SerializeToString())
    return path


def test_tflite_pipeline_gives_the_frameworks_outputs(tmp_path):
    path = str(_tflite_partial(tmp_path / "m.tflite"))
    imp = importer("tflite")
    source = imp.read(path)
    result = imp.convert(path, feature_level=1, partial=True)
    assert not result.complete
    run, spent, compiled, segments = partial_pipeline(path, "tflite", "litert", 1, source, result)
    assert len(compiled) == 2 and len(segments) == 1
    x = random_source_inputs(source.main, 0)
    np.testing.assert_allclose(run(x)[0], run_litert(open(path, "rb").read(), x)[0], rtol=1e-6, atol=1e-6)
    assert len(spent["nnapi"]) == len(spent["framework"]) == 1
    r = bench(path, vs="litert", runs=2, warmup=1, feature_level=1)
    assert r["partial"]["partitions"] == 2 and r["partial"]["fallback_nodes"] == 1
    assert r["partial"]["framework"] == "litert" and r["ratio"] > 0


def test_onnx_partial_bench_cli(tmp_path, capsys):
    path = _onnx_partial(tmp_path / "m.onnx")
    imp = importer("onnx")
    source = imp.read(str(path))
    result = imp.convert(str(path), partial=True)
    assert not result.complete
    run, _, _, _ = partial_pipeline(str(path), "onnx", "onnxruntime", 1, source, result)
    x = random_source_inputs(source.main, 0)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x[0]})[0]
    np.testing.assert_allclose(run(x)[0], want, rtol=1e-6, atol=1e-6)
    out = tmp_path / "bench.json"
    assert main(["bench", str(path), "--vs", "onnxruntime", "--runs", "2", "--warmup", "1", "--format", "json",
                 "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["partial"]["fallback_nodes"] == len(result.fallback_nodes) and r["partial"]["framework"] == "onnxruntime"
    assert main(["bench", str(path), "--runs", "2", "--warmup", "1"]) == 0
    assert "partial model: " in capsys.readouterr().out
    assert main(["bench", str(path), "--runs", "2", "--profile"]) == 3

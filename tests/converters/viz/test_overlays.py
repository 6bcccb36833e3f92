"""Coverage and parity as Model Explorer node data: every key names a node the way Model Explorer's
own adapters draw it (asked of those adapters), the values follow the report, and the file is the
same with and without model_explorer.node_data_builder."""
import json
import subprocess
import sys

import onnx
import pytest
from onnx import TensorProto, helper

from converters.cli import main
from converters.viz import overlays

ZOO = "tests/zoo/models"
KWS = f"{ZOO}/tf/kws_conv1d_int8.tflite"
RESNET = f"{ZOO}/torch/resnet_small_fixed_op13.onnx"


def tflite_adapter_graph(path) -> dict:
    """The main graph as Model Explorer's built-in TFLite adapter draws it. Asked in a child process: the
    adapter's C++ library (TensorFlow's MLIR) grows this process by half a gigabyte of address space, which
    every process later forked from it inherits under its memory limit (tests/robustness)."""
    code = ("import json, sys, ai_edge_model_explorer_adapter as a; "
            "print(a.ConvertFlatbufferDirectlyToJson(a.VisualizeConfig(), sys.argv[1]))")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[0]["subgraphs"][0]


def tflite_tensor_names(graph) -> set:
    """The `tensor_name` of every op node's outputs."""
    return {a["value"] for n in graph["nodes"] if n["label"] != "pseudo_const"
            for m in n.get("outputsMetadata", []) for a in m["attrs"] if a["key"] == "tensor_name"}


def tflite_node_labels(graph) -> dict:
    """{node id: label}."""
    return {n["id"]: n["label"] for n in graph["nodes"]}


def onnx_node_ids(path) -> dict:
    """{output tensor name: node id} as model-explorer-onnx draws the main graph."""
    from model_explorer_onnx.main import ONNXAdapter
    graph = ONNXAdapter().convert(str(path), {})["graphs"][0]
    ids = {}
    for n in graph.nodes:
        for m in n.outputsMetadata:
            for a in m.attrs:
                if a.key == "__tensor_tag":
                    ids[a.value] = n.id
    return ids


def coverage_files(tmp_path, model, *extra):
    out = tmp_path / "cov.json"
    assert main(["coverage", str(model), "--format", "model-explorer", "-o", str(out), *extra]) == 0
    return {s: json.loads(overlays.facet_path(out, s).read_text()) for s in ("", "ops", "level", "partition")}


def test_tflite_coverage_overlay_keys_are_the_adapters_tensor_names(tmp_path):
    files = coverage_files(tmp_path, KWS, "--feature-level", "2")
    status = files[""]["results"]
    assert set(status) <= tflite_tensor_names(tflite_adapter_graph(KWS)) and len(status) == 14  # every node, each one drawn
    assert main(["coverage", KWS, "--feature-level", "2", "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    by_name = {n["outputs"][0]["name"]: n for n in report["nodes"]}
    for key, r in status.items():
        n = by_name[key]
        assert files["level"]["results"][key]["value"] == n["min_feature_level"]
        if not n["supported"]:
            assert r == {"value": f"unsupported: {n['reason_code']}", "bgColor": overlays.STATUS_COLORS["unsupported"]}
            assert files["ops"]["results"][key]["value"] == "CPU fallback"
            assert files["partition"]["results"][key]["value"] == -1
        else:
            assert r["value"] == ("lowered" if len(n["nnapi_ops"]) > 1 else "supported")
            assert files["ops"]["results"][key]["value"] == " + ".join(n["nnapi_ops"])
            assert files["partition"]["results"][key]["value"] >= 0
    # FULLY_CONNECTED becomes RESHAPE + CONV_2D + RESHAPE: lowered, not one operation
    assert {r["value"] for r in files["partition"]["results"].values()} == {-1, 0, 1, 2}  # 3 partitions
    fc = next(k for k, n in by_name.items() if n["op"] == "FULLY_CONNECTED")
    assert status[fc]["value"] == "unsupported: feature_level_too_low"  # at level 2
    assert coverage_files(tmp_path, KWS)[""]["results"][fc]["value"] == "lowered"  # at level 8
    levels = files["level"]
    assert levels["thresholds"][0] == {"value": 2, "bgColor": "#1b5e20"}
    assert levels["hideAggregatedStats"] == ["sum", "avg"]


def test_tflite_operators_without_outputs_are_keyed_by_the_adapters_node_id(tmp_path):
    from tests.converters.tflite.state_models import accumulator
    path = tmp_path / "acc.tflite"
    path.write_bytes(accumulator())
    status = coverage_files(tmp_path, path)[""]["results"]
    report_path = tmp_path / "r.json"
    assert main(["coverage", str(path), "--format", "json", "-o", str(report_path)]) == 0
    nodes = json.loads(report_path.read_text())["nodes"]
    outputless = [n for n in nodes if not n["outputs"]]
    assert {n["op"] for n in outputless} >= {"ASSIGN_VARIABLE"}
    graph = tflite_adapter_graph(path)
    labels, names = tflite_node_labels(graph), tflite_tensor_names(graph)
    assert len(status) == len(nodes) and set(status) <= names | set(labels)
    for n in outputless:  # the adapter's node of that id is that very operator
        assert labels[str(n["index"])] == n["op"].lower()


def test_onnx_coverage_overlay_keys_are_model_explorer_onnx_node_ids(tmp_path):
    files = coverage_files(tmp_path, RESNET)
    ids = onnx_node_ids(RESNET)
    status = files[""]["results"]
    model = onnx.load(RESNET)
    assert set(status) == {ids[n.output[0]] for n in model.graph.node} and len(status) == len(model.graph.node)
    kinds = {ids[n.output[0]]: n.op_type for n in model.graph.node}
    # fused into Conv/Add, and the overlay says so
    assert {status[k]["value"] for k, op in kinds.items() if op == "Relu"} == {"absorbed (fused activation)"}
    assert {status[k]["value"] for k, op in kinds.items() if op == "Conv"} <= {"supported", "lowered"}


def test_unnamed_and_repeated_onnx_node_names_are_keyed_as_model_explorer_onnx_names_them(tmp_path, monkeypatch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["b"], name="twice"),
             helper.make_node("Neg", ["b"], ["z"]), helper.make_node("Abs", ["z"], ["y"], name="twice")]
    path = tmp_path / "unnamed.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)]),
              path)
    status = coverage_files(tmp_path, path)[""]["results"]
    ids = onnx_node_ids(path)
    assert set(status) == {ids["a"], ids["b"], ids["y"], ids["z"]} and len(status) == 4
    # without model-explorer-onnx, its naming rule redone gives the same keys
    monkeypatch.setitem(sys.modules, "model_explorer_onnx.main", None)
    assert coverage_files(tmp_path, path)[""]["results"] == status


def test_the_file_is_the_same_without_node_data_builder(tmp_path, monkeypatch):
    with_builder = coverage_files(tmp_path, KWS, "--feature-level", "1")
    monkeypatch.setitem(sys.modules, "model_explorer", None)  # import model_explorer raises ImportError
    with pytest.raises(ImportError):
        import model_explorer  # noqa: F401
    without = coverage_files(tmp_path, KWS, "--feature-level", "1")
    assert with_builder == without
    assert without[""]["name"] == "NNAPI coverage: kws_conv1d_int8.tflite"
    assert without[""]["showExpandedSummaryOnGroupNode"] is True


def test_parity_overlay_is_each_nodes_error_over_its_tolerance(tmp_path):
    out, rep = tmp_path / "err.json", tmp_path / "parity.json"
    assert main(["parity", RESNET, "--layerwise", "--format", "model-explorer", "-o", str(out)]) == 0
    assert main(["parity", RESNET, "--layerwise", "--format", "json", "-o", str(rep)]) == 0
    data, report = json.loads(out.read_text()), json.loads(rep.read_text())
    ids = onnx_node_ids(RESNET)
    expected = {}
    for e in report["layers"]:
        key = ids[e["source_tensor"]]
        expected[key] = max(expected.get(key, 0.0), e["max_abs_error"] / e["allowed"])
    assert {k: v["value"] for k, v in data["results"].items()} == pytest.approx(expected)
    assert len(expected) >= 10 and all(v <= 1 for v in expected.values())  # the model passes
    assert [t["value"] for t in data["thresholds"]][:4] == [0.01, 0.1, 0.5, 1.0]


def test_parity_overlay_of_an_exact_tolerance_and_a_missing_output():
    report = {"model": "m.tflite", "layers": [
        {"source_tensor": "a", "max_abs_error": 0.0, "allowed": 0.0},
        {"source_tensor": "b", "max_abs_error": 1.0, "allowed": 0.0},        # integer output off by one
        {"source_tensor": "c", "max_abs_error": float("inf"), "allowed": 1e-5},  # shape differs
        {"source_tensor": "d", "max_abs_error": 2e-6, "allowed": 1e-5},
        {"source_tensor": "d", "max_abs_error": 5e-6, "allowed": 1e-5}]}   # two operations write d: the worse
    data = json.loads(overlays.parity_overlay(report, lambda names: names[0]))
    values = {k: v["value"] for k, v in data["results"].items()}
    assert values == pytest.approx({"a": 0.0, "b": 1e6, "c": 1e6, "d": 0.5})


def test_fail_under_still_applies(tmp_path):
    out = tmp_path / "cov.json"
    assert main(["coverage", KWS, "--feature-level", "2", "--format", "model-explorer", "-o", str(out),
                 "--fail-under", "0.5"]) == 2  # 6 of 14 nodes
    assert out.exists()


def test_model_explorer_format_refusals(tmp_path, capsys):
    assert main(["coverage", KWS, "--format", "model-explorer"]) == 3
    assert "give -o" in capsys.readouterr().err
    assert main(["coverage", KWS, RESNET, "--format", "model-explorer", "-o", str(tmp_path / "c.json")]) == 3
    assert "one model at a time" in capsys.readouterr().err
    assert main(["parity", RESNET, "--format", "model-explorer", "-o", str(tmp_path / "e.json")]) == 3
    assert "--layerwise" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())

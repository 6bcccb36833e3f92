"""Coverage reports: per-node results, per-level numbers and partitions for a model with
unsupported nodes in the middle; formats; batch mode; exit codes."""
import json

import numpy as np
import pytest

from converters.cli import main
from converters.coverage import build_report, read_source
from converters.tflite.authoring import GraphBuilder


def gapped_model(path):
    """SUB (level 2) -> CUMSUM (no NNAPI op) -> ADD (level 1) -> CUMSUM -> MUL: 3 partitions."""
    g = GraphBuilder()
    x = g.input("x<img>", [1, 3, 5, 2])  # a name that must be escaped in HTML
    y = g.input("y", [1, 3, 5, 2])
    axis = g.const("axis", np.array(3, np.int32))
    names = ["sub", "cum1", "add", "cum2", "mul"]
    t = {n: g.tensor(n, [1, 3, 5, 2]) for n in names}
    g.op("SUB", [x, y], [t["sub"]], "SubOptions")
    g.op("CUMSUM", [t["sub"], axis], [t["cum1"]], "CumsumOptions")
    g.op("ADD", [t["cum1"], y], [t["add"]], "AddOptions")
    g.op("CUMSUM", [t["add"], axis], [t["cum2"]], "CumsumOptions")
    g.op("MUL", [t["cum2"], x], [t["mul"]], "MulOptions")
    g.output(t["mul"])
    path.write_bytes(g.finish())


@pytest.fixture
def gapped(tmp_path):
    p = tmp_path / "gapped.tflite"
    gapped_model(p)
    return p


def test_per_node_per_level_and_partitions(gapped):
    r = build_report(read_source(gapped), feature_level=8)
    nodes = r["nodes"]
    assert [n["supported"] for n in nodes] == [True, False, True, False, True]
    assert nodes[0]["nnapi_ops"] == ["SUB"] and nodes[0]["min_feature_level"] == 2
    assert nodes[1]["reason_code"] == "unsupported_operator" and "CUMSUM" in nodes[1]["reason"]
    assert nodes[0]["inputs"][0] == {"name": "x<img>", "dtype": "float32", "shape": [1, 3, 5, 2], "constant": False}
    assert r["summary"] == {"nodes": 5, "supported_nodes": 3, "supported_fraction": 0.6, "macs": 0,
                            "supported_macs": 0, "supported_macs_fraction": 0.0, "partitions": 3,
                            "pins_needed": [], "value_dependent": [], "compute_nodes": 5,
                            "supported_compute_nodes": 3, "constant_nodes": 0, "supported_constant_nodes": 0}
    assert r["per_feature_level"]["1"]["supported_nodes"] == 2  # SUB needs level 2
    assert [b["op"] for b in r["per_feature_level"]["1"]["blocking_nodes"]] == ["SUB", "CUMSUM", "CUMSUM"]
    assert r["partitions"] == [{"nodes": [0], "inputs": ["x<img>", "y"], "outputs": ["sub"]},
                               {"nodes": [2], "inputs": ["cum1", "y"], "outputs": ["add"]},
                               {"nodes": [4], "inputs": ["cum2", "x<img>"], "outputs": ["mul"]}]
    assert r["fallback_nodes"] == [1, 3]


def test_formats_and_html_escaping(gapped, tmp_path, capsys):
    for fmt in ("text", "markdown", "json", "html"):
        out = tmp_path / f"r.{fmt}"
        assert main(["coverage", str(gapped), "--format", fmt, "-o", str(out)]) == 0
        text = out.read_text()
        assert "CUMSUM" in text
    html = (tmp_path / "r.html").read_text()
    assert "x<img>" not in html and "x&lt;img&gt;" in html and "<svg" in html and "http" not in html.split("<svg")[0]
    d = json.loads((tmp_path / "r.json").read_text())
    assert set(d) >= {"model", "format", "feature_level", "summary", "per_feature_level", "nodes", "partitions"}
    assert set(d["per_feature_level"]) == {str(k) for k in range(1, 9)}


def test_fail_under_and_invalid_model(gapped, tmp_path, capsys):
    assert main(["coverage", str(gapped), "--fail-under", "0.5"]) == 0
    assert main(["coverage", str(gapped), "--fail-under", "0.9"]) == 2
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"garbage" * 20)
    assert main(["coverage", str(bad)]) == 3
    assert "Traceback" not in capsys.readouterr().err


def test_batch_over_a_folder_keeps_going(gapped, tmp_path, capsys):
    (tmp_path / "broken.tflite").write_bytes(b"\0" * 64)
    out = tmp_path / "batch.json"
    assert main(["coverage", str(tmp_path), "--format", "json", "--jobs", "2", "-o", str(out)]) == 0
    rows = {r["model"].rsplit("/", 1)[-1]: r for r in json.loads(out.read_text())["models"]}
    assert rows["gapped.tflite"]["summary"]["supported_nodes"] == 3
    assert "not a TFLite flatbuffer" in rows["broken.tflite"]["error"]

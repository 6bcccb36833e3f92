"""Coverage counts what control flow holds: the nodes and MACs inside TFLite IF/WHILE bodies and ONNX If/Loop
branches count in the summary, the per-level table and the Model Explorer overlay. Expected counts by hand."""
import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from converters.cli import main
from converters.coverage import build_report, read_source

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def if_model(path):
    """y = If(c, then: x @ w1, else: relu(x @ w2)); x [2, 8], w [8, 4]: 2*4*8 = 64 MACs per branch."""
    w1 = helper.make_tensor("w1", TensorProto.FLOAT, [8, 4], np.ones(32, np.float32).tolist())
    w2 = helper.make_tensor("w2", TensorProto.FLOAT, [8, 4], np.full(32, 2, np.float32).tolist())
    out = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 4])  # noqa: E731
    then_g = helper.make_graph([helper.make_node("MatMul", ["x", "w1"], ["t"], name="then_mm")], "then", [],
                               [out("t")])
    else_g = helper.make_graph([helper.make_node("MatMul", ["x", "w2"], ["e0"], name="else_mm"),
                                helper.make_node("Relu", ["e0"], ["e"], name="else_relu")], "else", [], [out("e")])
    g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g,
                                            else_branch=else_g)],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
                                helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [out("y")], [w1, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_onnx_if_branches_count_in_summary_and_levels(tmp_path):
    p = tmp_path / "if.onnx"
    if_model(p)
    r = build_report(read_source(p), 8)
    s = r["summary"]
    assert (s["nodes"], s["supported_nodes"], s["macs"], s["supported_macs"]) == (4, 4, 128, 128)
    assert r["nodes"][0]["macs"] == 128 and r["nodes"][0]["nodes_inside"] == 3
    # NNAPI IF needs feature level 4: below it the If and the three nodes it holds stay on the CPU
    low = r["per_feature_level"]["3"]
    assert (low["nodes"], low["supported_nodes"], low["supported_macs"]) == (4, 0, 0)
    assert low["blocking_nodes"] == [{"index": 0, "op": "If", "reason_code": "feature_level_too_low", "macs": 128,
                                      "computes": True}]
    assert sorted(b["op"] for b in r["body_nodes"]) == ["MatMul", "MatMul", "Relu"]
    assert all(b["in_node"] == 0 and b["supported"] for b in r["body_nodes"])


def test_onnx_if_branches_in_the_model_explorer_overlay(tmp_path, capsys):
    p = tmp_path / "if.onnx"
    if_model(p)
    out = tmp_path / "cov.json"
    assert main(["coverage", str(p), "--format", "model-explorer", "-o", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    inside = {k: v["value"] for k, v in results.items() if k.endswith(("then_mm", "else_mm", "else_relu"))}
    assert len(inside) == 3 and set(inside.values()) == {"supported"}, results


def test_tflite_while_and_if_bodies_count():
    # samples/control_flow.tflite: main WHILE, IF; cond LESS; body ADD, MUL, ADD; then MUL; else SUB
    r = build_report(read_source(SAMPLES / "control_flow.tflite"), 8)
    assert (r["summary"]["nodes"], r["summary"]["supported_nodes"]) == (8, 8)
    assert [n["nodes_inside"] for n in r["nodes"]] == [4, 2]
    assert r["per_feature_level"]["3"]["supported_nodes"] == 0 and r["per_feature_level"]["3"]["nodes"] == 8
    from converters.coverage_render import render_html, render_text
    assert "holds 4 node(s) in its bodies" in render_html(r) and "WHILE (+4 nodes in its bodies)" in render_text(r)


def test_tflite_body_nodes_in_the_model_explorer_overlay(tmp_path, capsys):
    out = tmp_path / "cov.json"
    assert main(["coverage", str(SAMPLES / "control_flow.tflite"), "--format", "model-explorer", "-o", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    # keyed by output tensor names (the TFLite adapter's tensor_name): the main graph's and every body's
    assert {k: v["value"] for k, v in results.items()} == {
        k: "supported" for k in ("trips_done", "out", "continue", "i_next", "decayed", "acc_next", "doubled", "diff")}

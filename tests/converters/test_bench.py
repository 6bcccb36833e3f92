"""nnapi bench: the JSON fields exist and are consistent (no timing assertions)."""
import json
import os

import numpy as np

from converters.cli import main

from tests.converters.test_parity import three_op_model


def test_bench_json_fields(tmp_path):
    src = tmp_path / "m.tflite"
    three_op_model(src)
    out = tmp_path / "bench.json"
    assert main(["bench", str(src), "--vs", "litert", "--runs", "3", "--warmup", "1", "--format", "json",
                 "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    for key in ("model", "ours_ms_median", "reference", "reference_ms_median", "ratio", "macs", "gflops",
                "planned_peak_bytes"):
        assert key in r
    assert r["reference"] == "litert" and r["ratio"] > 0
    assert r["planned_peak_bytes"] == 2 * 1 * 3 * 5 * 2 * 4  # two float32 1x3x5x2 intermediates alive at once


def test_bench_profile_covers_every_operation(tmp_path):
    from pathlib import Path

    import nnapi
    from converters import tflite
    from converters.macs import graph_macs
    sample = Path(__file__).resolve().parents[2] / "samples" / "mobilenet_float.tflite"
    out = tmp_path / "bench.json"
    assert main(["bench", str(sample), "--profile", "--runs", "3", "--warmup", "1", "--format", "json",
                 "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    model = tflite.convert(str(sample)).model
    assert sorted(e["operation_index"] for e in r["profile"]) == list(range(len(model.operations)))
    assert [e["nnapi_op"] for e in sorted(r["profile"], key=lambda e: e["operation_index"])] == \
        [op.code.name for op in model.operations]
    ms = [e["ms"] for e in r["profile"]]
    assert ms == sorted(ms, reverse=True) and all(m >= 0 for m in ms)       # slowest first
    assert abs(sum(e["share"] for e in r["profile"]) - 1) < 1e-9
    assert abs(r["profile"][-1]["cumulative_share"] - 1) < 1e-9
    assert abs(r["profile_total_ms"] - sum(ms)) < 1e-9
    # every multiply-accumulate of the source graph is charged to exactly one operation
    assert sum(e["macs"] for e in r["profile"]) == sum(graph_macs(tflite.read(str(sample)).main)) == r["macs"]
    assert all(e["source_node"] for e in r["profile"])
    by_op = {e["nnapi_op"]: e["count"] for e in r["by_op"]}
    assert sum(by_op.values()) == len(model.operations)
    assert by_op == {c: [op.code.name for op in model.operations].count(c) for c in by_op}
    assert isinstance(model.operations[0].code, nnapi.OperationCode)


def test_bench_holds_the_executor_blas_to_the_thread_count(tmp_path):
    from threadpoolctl import threadpool_info
    src = tmp_path / "m.tflite"
    three_op_model(src)
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    for threads in sorted({1, min(2, max(before or [1]))}):   # a one-core BLAS cannot take 2
        out = tmp_path / f"bench{threads}.json"
        assert main(["bench", str(src), "--threads", str(threads), "--runs", "2", "--format", "json",
                     "-o", str(out)]) == 0
        r = json.loads(out.read_text())
        assert r["threads"] == threads and r["blas"]["threads"] == threads and r["blas"]["library"] and "architecture" in r["blas"] \
            and r["blas"]["coretype_env"] == os.environ.get("OPENBLAS_CORETYPE")
    # the limit is lifted afterwards
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before
    assert main(["bench", str(src), "--threads", "0"]) == 3


def test_bench_cpu_clock(tmp_path, capsys):
    src = tmp_path / "m.tflite"
    three_op_model(src)
    out = tmp_path / "bench.json"
    assert main(["bench", str(src), "--vs", "litert", "--runs", "3", "--warmup", "1", "--clock", "cpu",
                 "--format", "json", "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["clock"] == "cpu" and r["ours_ms_median"] > 0 and r["reference_ms_median"] > 0
    capsys.readouterr()
    assert main(["bench", str(src), "--clock", "cpu", "--threads", "2", "--runs", "1"]) == 3   # one thread only
    assert "--clock cpu times the calling thread only: use it with --threads 1, not 2" in capsys.readouterr().err


def test_bench_profile_times_the_operations_inside_if(tmp_path):
    """An ONNX If becomes NNAPI IF: the profile lists the operations of the branch that ran (once per
    invocation), with their subgraph, and their per-type summary; the IF row holds their time."""
    import onnx
    from onnx import TensorProto as TP, helper as h
    from converters.onnx.authoring import make_model
    out_info = [h.make_tensor_value_info("t", TP.FLOAT, [1, 4])]
    then_g = h.make_graph([h.make_node("Add", ["x", "k"], ["t"])], "then", [], out_info)
    else_g = h.make_graph([h.make_node("Mul", ["x", "s"], ["t"])], "else", [], out_info)
    nodes = [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["c"]),
             h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    src = tmp_path / "if.onnx"
    src.write_bytes(make_model(nodes, [("x", np.float32, [1, 4])], ["y"],
                               {"zero": np.float32(0.0), "k": np.ones((1, 4), np.float32)}, opset=13))
    out = tmp_path / "bench.json"
    assert main(["bench", str(src), "--profile", "--runs", "4", "--warmup", "1", "--format", "json", "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    assert "IF" in [e["nnapi_op"] for e in r["by_op"]]
    inside = r["subgraph_profile"]
    assert len(inside) == 1 and inside[0]["nnapi_op"] in ("ADD", "MUL") and inside[0]["calls"] == 1.0
    assert inside[0]["subgraph"] in (0, 1) and inside[0]["ms"] > 0
    assert r["subgraph_by_op"] == [{"nnapi_op": inside[0]["nnapi_op"], "count": 1, "ms": inside[0]["ms"],
                                    "share": inside[0]["share"]}]
    if_row = next(e for e in r["profile"] if e["nnapi_op"] == "IF")
    assert if_row["ms"] >= inside[0]["ms"] * 0.5   # (medians against a mean: the IF holds the branch's time)

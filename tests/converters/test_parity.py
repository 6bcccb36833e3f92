"""Parity checks: pass on a faithful conversion; fail and localize when one weight
of one operation inside a saved NNAPI model is altered."""
import hashlib
import json

import numpy as np
import pytest

from converters.cli import main
from converters.parity import check
from converters.tflite.authoring import GraphBuilder
from nnapi.serialize import HEADER, HEADER_SIZE
from tests.conftest import ROOT


def three_op_model(path):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    c = g.const("gain", np.linspace(0.5, 2, 10, dtype=np.float32).reshape(1, 1, 5, 2))
    t = g.tensor("scaled", [1, 3, 5, 2])
    g.op("MUL", [x, c], [t], "MulOptions")
    d = g.const("offset", np.full((1, 1, 5, 2), 0.25, np.float32))
    u = g.tensor("shifted", [1, 3, 5, 2])
    g.op("ADD", [t, d], [u], "AddOptions", fused_activation_function="RELU6")
    v = g.tensor("out", [1, 3, 5, 2])
    g.op("SUB", [u, x], [v], "SubOptions")
    g.output(v)
    path.write_bytes(g.finish())


def alter_constant(path, operand_name, new_value):
    """Rewrite one constant's bytes inside a saved .nnapi file (keeping the file consistent)."""
    data = bytearray(path.read_bytes())
    magic, version, flags, meta_len, blob_offset, blob_len, _ = HEADER.unpack_from(data)
    meta = json.loads(bytes(data[HEADER_SIZE:HEADER_SIZE + meta_len]))
    (opnd,) = [o for o in meta["subgraphs"][0]["operands"] if o["name"] == operand_name]
    start = blob_offset + opnd["value"]["offset"]
    data[start:start + 4] = np.float32(new_value).tobytes()  # the first element
    digest = hashlib.sha256(bytes(data[HEADER_SIZE:HEADER_SIZE + meta_len]) + bytes(data[blob_offset:])).digest()
    data[:HEADER.size] = HEADER.pack(magic, version, flags, meta_len, blob_offset, blob_len, digest)
    path.write_bytes(bytes(data))


def test_faithful_conversion_passes_with_metrics(tmp_path):
    src = tmp_path / "m.tflite"
    three_op_model(src)
    report = check(str(src), samples=2, layerwise=True)
    d = report.as_dict()
    assert d["passed"] and d["samples"] == 2 and d["first_divergence"] is None
    (o,) = d["outputs"]
    assert o["name"] == "out" and o["shape"] == [1, 3, 5, 2] and o["cosine"] > 0.999999


def test_altered_weight_is_caught_and_localized(tmp_path, capsys):
    src, conv = tmp_path / "m.tflite", tmp_path / "m.nnapi"
    three_op_model(src)
    assert main(["convert", str(src), "-o", str(conv)]) == 0
    assert main(["parity", str(src), "--model", str(conv), "--layerwise"]) == 0
    capsys.readouterr()
    alter_constant(conv, "offset", 3.0)  # the ADD's second input
    out = tmp_path / "report.json"
    assert main(["parity", str(src), "--model", str(conv), "--layerwise", "--format", "json", "-o", str(out)]) == 1
    d = json.loads(out.read_text())
    assert d["passed"] is False
    fd = d["first_divergence"]
    assert fd["nnapi_op"] == "ADD" and fd["source_tensor"] == "shifted" and fd["operation_index"] == 1
    assert fd["inputs"][0]["source_tensor"] == "scaled" and fd["inputs"][0]["max_abs_error"] == 0


def test_quantized_outputs_get_lsb_histogram(tmp_path):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], "INT8", scale=0.05, zero_point=-4)
    y = g.input("y", [1, 3, 5, 2], "INT8", scale=0.05, zero_point=-4)
    o = g.tensor("sum", [1, 3, 5, 2], "INT8", scale=0.1, zero_point=2)
    g.op("ADD", [x, y], [o], "AddOptions")
    g.output(o)
    src = tmp_path / "q.tflite"
    src.write_bytes(g.finish())
    for level in (1, 4):  # level 1 exercises the int8 -> uint8 rewrite and its undoing
        d = check(str(src), feature_level=level, samples=2, layerwise=True).as_dict()
        (out,) = d["outputs"]
        assert d["passed"], d
        assert sum(out["lsb_histogram"].values()) == 60 and out["lsb_histogram"][">2"] == 0


def test_inputs_from_npz_and_bad_inputs(tmp_path, capsys):
    src = tmp_path / "m.tflite"
    three_op_model(src)
    np.savez(tmp_path / "in.npz", x=np.ones((1, 3, 5, 2), np.float32))
    assert main(["parity", str(src), "--inputs", str(tmp_path / "in.npz")]) == 0
    np.savez(tmp_path / "bad.npz", x=np.ones((1, 3, 5, 2), np.int32))
    assert main(["parity", str(src), "--inputs", str(tmp_path / "bad.npz")]) == 3
    assert "dtype" in capsys.readouterr().err


def test_partial_model_checks_each_partition(tmp_path):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    y = g.input("y", [1, 3, 5, 2])
    a = g.tensor("a", [1, 3, 5, 2])
    g.op("ADD", [x, y], [a], "AddOptions")
    b = g.tensor("b", [1, 3, 5, 2])
    axis = g.const("axis", np.array(3, np.int32))
    g.op("CUMSUM", [a, axis], [b], "CumsumOptions")  # NNAPI has no cumulative sum: a CPU fallback node
    c = g.tensor("c", [1, 3, 5, 2])
    g.op("MUL", [b, x], [c], "MulOptions")
    g.output(c)
    src = tmp_path / "p.tflite"
    src.write_bytes(g.finish())
    d = check(str(src), partial=True).as_dict()
    assert d["passed"] and [p["nodes"] for p in d["partitions"]] == [[0], [2]]
    assert main(["parity", str(src)]) == 2


SAMPLES = ROOT / "samples"


@pytest.mark.parametrize("sample", ["mobilenet_float", "mobilenet_uint8", "mobilenet_int8"])
@pytest.mark.parametrize("level", [1, 4])
def test_samples_match_litert(sample, level):
    """Float, uint8 and int8 samples at levels 1 and 4 (partitions where level 1 cannot run a node)."""
    d = check(str(SAMPLES / f"{sample}.tflite"), feature_level=level, samples=2, layerwise=True,
              partial=True).as_dict()
    assert d["passed"], d
    if d.get("partitions") is None:
        assert d["first_divergence"] is None and all(o["passed"] for o in d["outputs"])
    else:
        assert level == 1 and d["partitions"], "only level 1 may need partitions"


def test_multi_subgraph_sample_matches_litert():
    d = check(str(SAMPLES / "control_flow.tflite"), feature_level=4, samples=3).as_dict()
    assert d["passed"] and d["outputs"]


def test_fp16_weights_match_litert(tmp_path):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    w16 = g.const("w16", np.random.default_rng(0).normal(size=(4, 3, 3, 2)).astype(np.float16))
    w = g.tensor("w", [4, 3, 3, 2])
    g.op("DEQUANTIZE", [w16], [w])
    b = g.const("b", np.arange(4, dtype=np.float32))
    y = g.tensor("y", [1, 3, 5, 4])
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1)
    g.output(y)
    src = tmp_path / "fp16.tflite"
    src.write_bytes(g.finish())
    for level in (1, 4):
        d = check(str(src), feature_level=level, samples=2, layerwise=True).as_dict()
        assert d["passed"] and d["first_divergence"] is None, d


def test_partial_with_no_nnapi_partition_is_unsupported_not_pass(tmp_path, capsys):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    y = g.tensor("y", [1, 3, 5, 2])
    g.op("CUMSUM", [x, g.const("axis", np.array(3, np.int32))], [y], "CumsumOptions")
    g.output(y)
    src = tmp_path / "none.tflite"
    src.write_bytes(g.finish())
    assert main(["parity", str(src), "--partial"]) == 2
    assert "nothing to compare" in capsys.readouterr().err


def test_parity_of_a_saved_model_reports_the_level_it_needs(tmp_path):
    src, conv = tmp_path / "m.tflite", tmp_path / "m.nnapi"
    three_op_model(src)
    assert main(["convert", str(src), "-o", str(conv)]) == 0
    assert check(str(src), converted=str(conv)).as_dict()["feature_level"] == 2  # SUB needs level 2

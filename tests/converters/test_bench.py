"""nnapi bench: the JSON fields exist and are consistent (no timing assertions)."""
import json

from converters.cli import main

from .test_parity import three_op_model


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

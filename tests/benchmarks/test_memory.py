"""benchmarks/memory.py: a convert's peak RSS is its own, not the measuring process's (a spawned process's
ru_maxrss keeps the high-water mark of the one that spawned it), and --compare sees identical outputs."""
import json
from pathlib import Path

import numpy as np

from benchmarks.memory import ROOT, compare, convert_argv, main, run_convert

MODEL = ROOT / "samples" / "resnet_float.onnx"


def test_convert_peak_is_the_convert_process_own(tmp_path):
    big = np.ones(48 << 20)   # 384 MB touched in this process, then freed: its high-water mark stays
    del big
    code, peak = run_convert(convert_argv({"path": str(MODEL)}, tmp_path / "m.nnapi"), ROOT, tmp_path / "log",
                             tmp_path / "peak")
    assert code == 0 and (tmp_path / "m.nnapi").exists()
    assert 20 << 20 < peak < 300 << 20


def test_compare_with_the_same_tree_is_identical(tmp_path):
    row = compare({"id": "resnet", "path": str(MODEL)}, ROOT, tmp_path)
    assert row["identical"] and row["this"]["exit"] == row["other"]["exit"] == 0
    assert row["limit_bytes"] == 3 * MODEL.stat().st_size + (150 << 20)


def test_compare_command_writes_the_rows(tmp_path):
    reqs = tmp_path / "r.json"
    reqs.write_text(json.dumps([{"id": "resnet", "path": str(MODEL)}]))
    assert main(["--compare", str(ROOT), str(reqs), str(tmp_path / "out.json")]) == 0
    rows = json.loads(Path(tmp_path / "out.json").read_text())
    assert [r["id"] for r in rows] == ["resnet"] and rows[0]["identical"]

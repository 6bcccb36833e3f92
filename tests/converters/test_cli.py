"""The `nnapi` command line: demo, inspect, run, help, and exit codes."""
import json
import subprocess
import sys

import numpy as np

from converters.cli import main
from tests.conftest import ROOT

DEMO = ROOT / "samples" / "demo.nnapi"


def test_demo_runs_and_checks_its_result(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "1. convert" in out and "coverage per feature level" in out and "FL8:" in out
    assert out.rstrip().splitlines()[-1].startswith("PASS")


def test_installed_console_script_demo_works_from_another_directory(tmp_path):
    r = subprocess.run([sys.executable, "-c", "from converters.cli import main; raise SystemExit(main(['demo']))"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_inspect_text_names_parameters(capsys):
    assert main(["inspect", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert "MUL(fuse=RELU6)" in out and "feature level needed: 2" in out and "'x'" in out


def test_inspect_json(tmp_path):
    out = tmp_path / "m.json"
    assert main(["inspect", str(DEMO), "--format", "json", "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["feature_level"] == 2
    ops = d["subgraphs"][0]["operations"]
    assert [o["op"] for o in ops] == ["ADD", "MUL", "SUB"] and ops[1]["params"] == {"fuse": "RELU6"}


def test_run_writes_outputs(tmp_path, capsys):
    x = np.full((1, 3, 5, 2), 0.5, np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["run", str(DEMO), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz")]) == 0
    y = np.load(tmp_path / "out.npz")["y"]
    assert y.shape == (1, 3, 5, 2)


def test_invalid_model_exits_3_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.nnapi"
    bad.write_bytes(b"not a model at all" * 10)
    assert main(["inspect", str(bad)]) == 3
    err = capsys.readouterr().err
    assert "not an NNAPI model file" in err and "Traceback" not in err
    assert main(["inspect", str(tmp_path / "missing.nnapi")]) == 3


def test_every_subcommand_has_help():
    for cmd in ("convert", "run", "inspect", "coverage", "parity", "bench", "demo"):
        r = subprocess.run([sys.executable, "-m", "converters.cli", cmd, "--help"], cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 0 and "usage: nnapi " + cmd in r.stdout, (cmd, r.stderr)


def test_usage_errors_exit_3_not_2(capsys):
    import pytest
    for argv in (["convert", str(DEMO)], ["bogus"], ["coverage", str(DEMO), "--format", "pdf"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 3
    assert "usage: nnapi" in capsys.readouterr().err

"""The `nnapi` command line: demo, inspect, run, help, and exit codes."""
import json
import os
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
                       cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
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


def test_inspect_shows_dimensions_the_inputs_determine(tmp_path, capsys):
    # a [1, 3] input plus a [3] constant: the output declared [?, ?] is [1, 3] (numpy broadcasting)
    import nnapi
    from nnapi import OperandCode as C
    from nnapi import OperandType
    from nnapi import OperationCode as Op
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1, 3)))
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, (3,)))
    m.set_operand_value(b, np.ones(3, np.float32))
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(0))
    y = m.add_operand(OperandType(C.TENSOR_FLOAT32, (0, 0)), name="y")
    m.add_operation(Op.ADD, [x, b, fuse], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    nnapi.save(m, tmp_path / "m.nnapi")
    assert main(["inspect", str(tmp_path / "m.nnapi")]) == 0
    assert "TENSOR_FLOAT32[?x?] (inferred [1x3])" in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "m.nnapi"), "--format", "json", "-o", str(tmp_path / "m.json")]) == 0
    operand = json.loads((tmp_path / "m.json").read_text())["subgraphs"][0]["operands"][y]
    assert operand["dimensions"] == [0, 0] and operand["inferred_dimensions"] == [1, 3]


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


def test_missing_output_folder_is_a_clear_error_and_nothing_is_written(tmp_path, capsys):
    tflite = str(ROOT / "samples" / "demo.tflite")
    missing = tmp_path / "missing" / "dir"
    commands = [["convert", tflite, "-o", str(missing / "out.nnapi")],
                ["convert", tflite, "--partial", "-o", str(missing / "out.nnapi")],
                ["coverage", tflite, "-o", str(missing / "c.json")],
                ["parity", tflite, "-o", str(missing / "p.json")],
                ["run", str(DEMO), "-o", str(missing / "o.npz")],
                ["inspect", str(DEMO), "-o", str(missing / "i.txt")],
                ["bench", str(DEMO), "--runs", "1", "--warmup", "0", "-o", str(missing / "b.json")],
                ["export", str(DEMO), "-o", str(missing / "exp")]]
    for argv in commands:
        assert main(argv) == 3, argv
        err = capsys.readouterr().err
        assert "does not exist" in err and str(missing) in err and "internal error" not in err, (argv, err)
    assert not (tmp_path / "missing").exists()
    (tmp_path / "file").write_text("x")
    assert main(["inspect", str(DEMO), "-o", str(tmp_path / "file" / "i.txt")]) == 3
    assert "is not a folder" in capsys.readouterr().err

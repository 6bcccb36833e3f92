"""Batch coverage and parity (converters/batch.py): the same rows in the same order whether run here, in
--jobs processes or on a Dask cluster (a dask.distributed.LocalCluster on loopback); one model's failure is
one row; --dask without dask.distributed exits 4 with the pip command."""
import json
import shutil
import sys
from pathlib import Path

import pytest

from converters import batch
from converters.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ZOO = Path(__file__).resolve().parents[1] / "zoo" / "models"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    for src in (SAMPLES / "demo.tflite", SAMPLES / "resnet_qdq.onnx", SAMPLES / "mobilenet_int8.tflite",
                ZOO / "tf" / "resnet_small_float32.tflite"):
        shutil.copy(src, d / src.name)
    (d / "broken.onnx").write_bytes(b"not a model")
    return d


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] is in the test extra")
    # one in-process worker thread, reached over TCP on loopback as a remote cluster is
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                                  host="127.0.0.1", dashboard_address=":0") as c:
        yield c.scheduler_address


def _json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    assert out.out, out.err
    return code, json.loads(out.out)


def test_coverage_batch_is_the_same_locally_in_processes_and_on_dask(folder, cluster, capsys):
    argv = ["coverage", str(folder), "--format", "json"]
    code, here = _json(capsys, argv)
    assert code == 0
    names = [Path(r["model"]).name for r in here["models"]]
    assert names == sorted(names) and len(names) == 5  # the folder's models, in order
    broken = [r for r in here["models"] if "error" in r]
    assert [Path(r["model"]).name for r in broken] == ["broken.onnx"]
    assert all(r["summary"]["nodes"] > 0 for r in here["models"] if "error" not in r)
    assert _json(capsys, argv + ["--jobs", "2"]) == (0, here)
    assert _json(capsys, argv + ["--dask", cluster]) == (0, here)


def test_parity_batch_is_the_same_locally_and_on_dask(folder, cluster, capsys):
    argv = ["parity", str(folder / "demo.tflite"), str(folder / "broken.onnx"), str(folder / "mobilenet_int8.tflite"),
            "--format", "json"]
    code, here = _json(capsys, argv)
    rows = here["models"]
    assert here["report"] == "nnapi-parity-batch/1"
    assert [Path(r["model"]).name for r in rows] == ["demo.tflite", "broken.onnx", "mobilenet_int8.tflite"]
    assert rows[0]["passed"] and rows[0]["exit_code"] == 0 and rows[0]["outputs"]
    assert rows[1]["exit_code"] == 3 and "error" in rows[1]
    assert rows[2]["exit_code"] in (0, 1) and rows[2]["outputs"]
    assert code == max(r["exit_code"] for r in rows) == 3
    assert _json(capsys, argv + ["--dask", cluster]) == (code, here)
    text_code = main(argv[:-2])
    out = capsys.readouterr().out
    assert text_code == 3 and "demo.tflite" in out and "passed" in out and "INVALID_MODEL" in out


def test_a_task_that_raises_or_a_dead_worker_is_one_row(cluster):
    args = [("a.tflite",), ("b.tflite",), ("c.tflite",)]
    expected = [{"model": "a.tflite", "ok": True}, batch.error_row("b.tflite", "ValueError: b is bad"),
                {"model": "c.tflite", "ok": True}]
    assert batch.run(_flaky, args) == expected
    assert batch.run(_flaky, args, jobs=2) == expected
    assert batch.run(_flaky, args, dask=cluster) == expected
    dead = batch.run(_dies, [("x.onnx",), ("y.onnx",)], jobs=2)
    assert [r["model"] for r in dead] == ["x.onnx", "y.onnx"]
    assert all("the worker process failed" in r["error"] for r in dead)


def _flaky(name):
    if name.startswith("b"):
        raise ValueError("b is bad")
    return {"model": name, "ok": True}


def _dies(name):
    import os
    os._exit(9)  # the worker process is gone, as after an out-of-memory kill


def test_dask_missing_exits_4_with_the_pip_command(folder, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails as where it is not installed
    assert main(["coverage", str(folder), "--dask", "tcp://127.0.0.1:1"]) == 4
    err = capsys.readouterr().err
    assert 'pip install "nnapi-convert[scale]"' in err  # (the one wording: converters/dependencies.py)

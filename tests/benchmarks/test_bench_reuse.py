"""bench converts a model once when it is benched again with the same pins (benchmarks.run benches each model
against two references and profiles it), and again when the file or the pins change."""
import os
import shutil
from pathlib import Path

from converters import bench as bench_module
from converters import tflite
from converters.bench import bench

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "mobilenet_float.tflite"


def test_a_model_benched_again_is_not_converted_again(tmp_path, monkeypatch):
    calls = []
    real = tflite.convert

    def counting(*a, **k):
        calls.append(k.get("partial"))
        return real(*a, **k)

    monkeypatch.setattr(tflite, "convert", counting)
    monkeypatch.setattr(bench_module, "_LAST_CONVERSION", {})
    path = tmp_path / "m.tflite"
    shutil.copy(SAMPLE, path)
    bench(str(path), runs=1, warmup=0)
    assert bench(str(path), runs=1, warmup=0, profile=True)["profile"] and len(calls) == 1
    bench(str(path), runs=1, warmup=0, feature_level=7)
    assert len(calls) == 2            # other settings: converted again
    os.utime(path, ns=(1, 1))         # the file changed
    bench(str(path), runs=1, warmup=0, feature_level=7)
    assert len(calls) == 3


def test_bench_reports_the_operations_it_timed():
    model = tflite.convert(str(SAMPLE)).model
    assert bench(str(SAMPLE), runs=1, warmup=0)["operations"] == len(model.operations)

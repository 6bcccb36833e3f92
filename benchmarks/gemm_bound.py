"""How far any executor built on the same BLAS could beat onnx's ReferenceEvaluator on an ONNX CNN.

    python -m benchmarks.gemm_bound [MODEL.onnx ...]     (default: the ONNX samples and benchmark models)

For each model: the executor's median latency, the part of it spent inside
np.matmul (the convolutions' and Gemm's matrix products, which any numpy
executor must do and which the ReferenceEvaluator also hands to BLAS), and the
ReferenceEvaluator's median latency. `bound` = reference / GEMM time is the
largest ratio an executor could reach if everything but its matrix products
took no time at all. One thread, one process, medians.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def measure(path: Path, runs: int = 40) -> dict:
    from onnx.reference import ReferenceEvaluator

    from converters.load import importer
    from converters.running import random_source_inputs, to_nnapi_inputs
    from executor.runtime import RunState, compile_model
    imp = importer("onnx")
    source, result = imp.read(str(path)), imp.convert(str(path))
    raw = random_source_inputs(source.main, 0)
    inputs = to_nnapi_inputs(result, raw)
    compiled, state = compile_model(result.model), RunState(2.0)
    for _ in range(5):
        compiled.run(inputs, state)
    ours = _median_ms(lambda: compiled.run(inputs, state), runs)
    real, spent = np.matmul, [0.0]

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        out = real(*args, **kwargs)
        spent[0] += time.perf_counter() - t0
        return out
    np.matmul = timed
    try:
        for _ in range(runs):
            compiled.run(inputs, state)
    finally:
        np.matmul = real
    gemm = spent[0] / runs * 1e3
    feeds = {source.main.tensors[i].name: x for i, x in zip(source.main.inputs, raw)}
    session = ReferenceEvaluator(str(path))
    session.run(None, feeds)
    reference = _median_ms(lambda: session.run(None, feeds), max(3, runs // 5))
    return {"model": path.name, "ours_ms": ours, "ours_gemm_ms": gemm, "onnx_reference_ms": reference,
            "ratio": reference / ours, "bound": reference / gemm if gemm else float("inf")}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        paths = [Path(a) for a in argv]
    else:
        from benchmarks.models import write_all
        tmp = Path(tempfile.mkdtemp(prefix="nnapi_gemm_bound_"))
        paths = [ROOT / "samples" / "resnet_float.onnx"] + [p for p in write_all(tmp) if p.suffix == ".onnx"]
    print("| model | ours ms | ours in GEMM ms | onnx ReferenceEvaluator ms | reference / ours | bound: reference / GEMM |")
    print("|---|---|---|---|---|---|")
    for p in paths:
        r = measure(p)
        print(f"| {r['model']} | {r['ours_ms']:.2f} | {r['ours_gemm_ms']:.2f} | {r['onnx_reference_ms']:.2f} | "
              f"{r['ratio']:.1f}x | {r['bound']:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

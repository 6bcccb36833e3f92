"""Executor latency against LiteRT (built-in kernels without XNNPACK, and the
reference kernels) and, for ONNX models, onnxruntime and onnx's ReferenceEvaluator:
every model measured side by side in this one process at one thread, medians.

    python -m benchmarks.run [--runs N] [--warmup N] [--models-dir DIR] [MODEL ...]
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.run --zoo [--only SUBSTRING] [--runs N]
        [--no-held-out] [-o docs/benchmarks.md]
    python -m benchmarks.run --held-out [-o FILE]     # only the held-out models (benchmarks/held_out/)

Models: the given paths, else samples/*.tflite and samples/*.onnx plus the
authored benchmark models (benchmarks/models.py, written to --models). Prints
one table; ratios are ours / theirs (below 1 means the executor is faster).
With --zoo: every zoo model, then every held-out model (benchmarks/held_out/,
made by make_held_out.py and never used for tuning), against LiteRT built-in,
LiteRT XNNPACK and onnxruntime, written to docs/benchmarks.md (benchmarks/zoo.py
measures, benchmarks/report.py renders): per model the ratios and the verdict
against the performance issue's targets (below 1 ms of LiteRT: the overhead
rule, 15 us + 2.5 us per NNAPI operation over LiteRT), the profile of every
model over its target, the peak RSS of `convert` (limit 3x the file + 150 MB)
and of the executor; in the header the BLAS (and whether OPENBLAS_CORETYPE
forced its kernel set: unset it and OPENBLAS_L2_SIZE for a true measure, as
above) and the executor's own overhead per invocation and per operation
(benchmarks/overhead.py). About 20 minutes on a shared 2-core machine.
"""
from __future__ import annotations

import os

# one thread everywhere, set before numpy loads BLAS
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from converters.bench import timeit_ms

ROOT = Path(__file__).resolve().parent.parent


def _median_ms(fn, runs: int, warmup: int) -> float:
    return float(np.median(timeit_ms(fn, runs, warmup)))


def _onnx_reference_ms(path: Path, runs: int, warmup: int) -> float:
    """onnx.reference.ReferenceEvaluator on the same seeded inputs as `nnapi bench`."""
    from onnx.reference import ReferenceEvaluator

    from converters.load import importer
    from converters.running import random_source_inputs
    graph = importer("onnx").read(str(path)).main
    feeds = {graph.tensors[i].name: x for i, x in zip(graph.inputs, random_source_inputs(graph, 0))}
    sess = ReferenceEvaluator(str(path))
    return _median_ms(lambda: sess.run(None, feeds), runs, warmup)


def measure(path: Path, runs: int, warmup: int) -> dict:
    """One row: ours and the references' medians in ms (None where a reference does not apply or
    failed; `notes` says why)."""
    from converters.bench import bench
    row = {"model": path.name, "ours": None, "litert": None, "litert_ref": None, "onnxruntime": None,
           "onnx_ref": None, "notes": []}
    tflite = path.suffix == ".tflite"
    for vs, key in ([("litert", "litert"), ("litert-ref", "litert_ref")] if tflite else [("onnxruntime", "onnxruntime")]):
        try:
            r = bench(str(path), vs=vs, threads=1, runs=runs, warmup=warmup)
        except Exception as e:  # noqa: BLE001  (a model that cannot run is a note, not the end of the table)
            row["notes"].append(f"{vs}: {type(e).__name__}: {e}")
            continue
        row[key] = r["reference_ms_median"]
        row["ours"] = min(r["ours_ms_median"], row["ours"] or np.inf)
    if not tflite:
        try:
            row["onnx_ref"] = _onnx_reference_ms(path, max(3, runs // 4), 1)
        except Exception as e:  # noqa: BLE001
            row["notes"].append(f"onnx ReferenceEvaluator: {type(e).__name__}: {e}")
    return row


def _fmt(v, ratio=False) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}x" if ratio else f"{v:.2f}"


def table(rows) -> str:
    head = ["model", "ours ms", "LiteRT built-in ms", "LiteRT reference ms", "ours/built-in", "ours/reference",
            "onnxruntime ms", "onnx ReferenceEvaluator ms", "ours/onnxruntime", "ours/onnx-ref"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = [f"{r['model']}: {n}" for r in rows for n in r["notes"]]
    for r in rows:
        if r["ours"] is None:
            continue
        ratios = [r["ours"] / r[ref] if r[ref] else None for ref in ("litert", "litert_ref", "onnxruntime", "onnx_ref")]
        cells = [r["model"], _fmt(r["ours"]), _fmt(r["litert"]), _fmt(r["litert_ref"]),
                 _fmt(ratios[0], True), _fmt(ratios[1], True), _fmt(r["onnxruntime"]),
                 _fmt(r["onnx_ref"]), _fmt(ratios[2], True), _fmt(ratios[3], True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""] + [f"not measured: {n}" for n in dict.fromkeys(notes)])


def default_models(out_dir: Path) -> list[Path]:
    from .models import write_all
    samples = sorted((ROOT / "samples").glob("*.tflite")) + sorted((ROOT / "samples").glob("*.onnx"))
    return samples + write_all(out_dir)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--models-dir", type=Path, default=Path(tempfile.gettempdir()) / "nnapi-bench-models",
                    help="where the authored benchmark models are written (default: a temporary folder)")
    ap.add_argument("--zoo", action="store_true", help="time every zoo model (tests/zoo/manifest) and write "
                                                        "the table to --output")
    ap.add_argument("--held-out", action="store_true", help="time only the held-out models "
                                                            "(benchmarks/held_out/manifest) and write them to --output")
    ap.add_argument("--no-held-out", action="store_true", help="with --zoo: leave the held-out models out")
    ap.add_argument("--only", help="with --zoo or --held-out: only models whose id contains this")
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "benchmarks.md",
                    help="with --zoo or --held-out: the markdown file to write (default docs/benchmarks.md)")
    args = ap.parse_args(argv)
    if args.zoo or args.held_out:
        from .zoo import run_zoo
        command = "python -m benchmarks.run " + " ".join(argv if argv is not None else sys.argv[1:])
        if "OPENBLAS_CORETYPE" not in os.environ:
            command = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + command
        return run_zoo(args.only, args.runs, args.warmup, args.output, zoo=args.zoo,
                       held_out=args.held_out or not args.no_held_out, command=command)
    paths = args.models or default_models(args.models_dir)
    rows = [measure(p, args.runs, args.warmup) for p in paths]
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m benchmarks.run --zoo`: every zoo model (tests/zoo/manifest) timed in this one process at one
thread (CPU time), ours against LiteRT's built-in kernels, LiteRT with XNNPACK and onnxruntime, medians of --runs;
the table goes to docs/benchmarks.md (or --output). A script, not a test: machines differ, so only the
ratios of one run mean anything, and nothing asserts a time."""
from __future__ import annotations

import platform
import time
from pathlib import Path

import numpy as np

# (column, --vs) per source format
REFERENCES = {"tflite": [("litert", "litert"), ("litert_xnnpack", "litert-xnnpack")],
              "onnx": [("onnxruntime", "onnxruntime")]}
COLUMNS = ["litert", "litert_xnnpack", "onnxruntime"]
HEAD = ["model", "format", "ours ms", "LiteRT built-in ms", "LiteRT XNNPACK ms", "onnxruntime ms",
        "ours/built-in", "ours/XNNPACK", "ours/onnxruntime", "notes"]


def measure_zoo_model(model, runs: int, warmup: int) -> dict:
    """One row: medians in ms per reference (None where it does not apply or failed: `notes` says why)."""
    from converters.bench import bench
    from tests.zoo.fetch import model_path
    from tests.zoo.run import pins
    row = {"model": model.id, "format": model.format, "ours": None, **{c: None for c in COLUMNS}, "notes": []}
    try:
        path = model_path(model)
        shapes = pins(model, path) or None
    except Exception as e:  # noqa: BLE001  (a model that cannot be fetched is a note, not the end of the table)
        row["notes"].append(f"not fetched: {type(e).__name__}: {e}")
        return row
    ours = []
    for column, vs in REFERENCES[model.format]:
        try:
            r = bench(str(path), vs=vs, threads=1, runs=runs, warmup=warmup, input_shapes=shapes, clock="cpu")
        except Exception as e:  # noqa: BLE001
            row["notes"].append(f"{vs}: {type(e).__name__}: {' '.join(str(e).split())[:160]}")
            continue
        row[column] = r["reference_ms_median"]
        ours.append(r["ours_ms_median"])
        if r.get("partial"):
            q = r["partial"]
            row["notes"].append(f"partial: {q['fallback_nodes']} CPU fallback node(s) on {q['framework']}")
    row["ours"] = float(np.median(ours)) if ours else None   # ours is timed beside each reference
    row["notes"] = list(dict.fromkeys(row["notes"]))
    return row


def _cell(v, ratio=False) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}x" if ratio else f"{v:.3f}"


def markdown(rows, runs: int, warmup: int) -> str:
    lines = ["# Executor benchmarks on the zoo", "",
             f"Made by `python -m benchmarks.run --zoo` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
             f"({platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}): every zoo model "
             f"of tests/zoo/manifest in one process, one thread everywhere (OPENBLAS_NUM_THREADS=1, --threads 1), "
             f"medians of {runs} runs after {warmup} warm-up runs of the thread's CPU time (`nnapi bench --clock cpu`: "
             "on a shared machine elapsed times stretch long runs more than short ones). Ratios are ours / theirs (below 1: the executor "
             "is faster); only ratios from the same run compare, absolute times depend on the machine and its load. "
             "'ours' is the median of the executor's medians timed beside each reference. A partial model runs its "
             "CPU fallback nodes on the framework (see `nnapi bench`).", "",
             "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for r in rows:
        ratios = [r["ours"] / r[c] if r["ours"] and r[c] else None for c in COLUMNS]
        cells = [r["model"], r["format"], _cell(r["ours"]), *(_cell(r[c]) for c in COLUMNS),
                 *(_cell(x, True) for x in ratios), "; ".join(r["notes"]).replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run_zoo(only, runs: int, warmup: int, output: Path) -> int:
    from tests.zoo.manifest import load, select
    models = [m for m in select(load(), only) if m.expect != "none"]
    rows = []
    for k, m in enumerate(models, 1):
        rows.append(measure_zoo_model(m, runs, warmup))
        print(f"[{k}/{len(models)}] {m.id}: ours {_cell(rows[-1]['ours'])} ms", flush=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(markdown(rows, runs, warmup))
    print(f"wrote {output}")
    return 0

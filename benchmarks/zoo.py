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
        "ours/built-in", "ours/XNNPACK", "ours/onnxruntime", "target", "notes"]
# the performance issue's targets: (reference column, the ratio allowed) per kind of model; a TFLite model
# whose LiteRT built-in invocation takes under MIN_REFERENCE_MS is judged on per-invocation overhead instead
# (quantized ONNX models have no target of their own)
TARGETS = {"tflite-float": ("litert", 1.5), "tflite-quantized": ("litert", 2.0), "onnx-float": ("onnxruntime", 2.0)}
MIN_REFERENCE_MS = 1.0


def measure_zoo_model(model, runs: int, warmup: int) -> dict:
    """One row: medians in ms per reference (None where it does not apply or failed: `notes` says why)."""
    from converters.bench import bench
    from tests.zoo.fetch import model_path
    from tests.zoo.run import pins
    row = {"model": model.id, "format": model.format, "ours": None, **{c: None for c in COLUMNS}, "notes": [],
           "kind": "", "slowest": None}
    try:
        path = model_path(model)
        shapes = pins(model, path) or None
        row["kind"] = model.format + ("-float" if _float_activations(model.format, path, shapes) else "-quantized")
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
    if _verdict(row).startswith("over "):   # name the operation type holding it back, from a profile
        try:
            prof = bench(str(path), threads=1, runs=max(5, runs // 3), warmup=1, input_shapes=shapes, profile=True,
                         clock="cpu")
            top = prof["by_op"][0]
            row["slowest"] = f"{top['nnapi_op']} {100 * top['share']:.0f}% ({top['count']} ops)"
        except Exception as e:  # noqa: BLE001  (a partial model has no whole-model profile)
            row["notes"].append(f"no profile: {' '.join(str(e).split())[:120]}")
    row["notes"] = list(dict.fromkeys(row["notes"]))
    return row


def _float_activations(fmt: str, path, shapes) -> bool:
    from converters.load import importer
    from converters.parity_references import is_float_model
    return is_float_model(importer(fmt).read(str(path), shapes, None).main)


def _verdict(row) -> str:
    """within / over the target, with the slowest operation type when over; or why it has no ratio target."""
    if row["kind"] not in TARGETS:
        return "no target (quantized ONNX)" if row["kind"] == "onnx-quantized" else "-"
    column, allowed = TARGETS[row["kind"]]
    ref = row[column]
    if row["ours"] is None or ref is None:
        return "-"
    if column == "litert" and ref < MIN_REFERENCE_MS:
        return f"overhead rule (LiteRT < {MIN_REFERENCE_MS:g} ms)"
    ratio = row["ours"] / ref
    if ratio <= allowed:
        return f"within {allowed:g}x"
    return f"over {allowed:g}x" + (f": {row['slowest']}" if row.get("slowest") else "")


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
             "CPU fallback nodes on the framework (see `nnapi bench`). 'target': the performance issue's ratio "
             "(float TFLite 1.5x and quantized TFLite 2x LiteRT built-in when its invocation takes at least "
             f"{MIN_REFERENCE_MS:g} ms, else judged on per-invocation overhead; float ONNX 2x onnxruntime), and for a model "
             "over it the NNAPI operation type with the largest share of `nnapi bench --profile`.", "",
             "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for r in rows:
        ratios = [r["ours"] / r[c] if r["ours"] and r[c] else None for c in COLUMNS]
        cells = [r["model"], r["format"], _cell(r["ours"]), *(_cell(r[c]) for c in COLUMNS),
                 *(_cell(x, True) for x in ratios), _verdict(r), "; ".join(r["notes"]).replace("|", "/")]
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
    judged = [_verdict(r) for r in rows]
    print(f"{sum(v.startswith('within') for v in judged)} within target, {sum(v.startswith('over ') for v in judged)} "
          f"over, {sum(v.startswith('overhead') for v in judged)} on the overhead rule")
    print(f"wrote {output}")
    return 0

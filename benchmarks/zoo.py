"""`python -m benchmarks.run --zoo`: every zoo model (tests/zoo/manifest) and every held-out model
(benchmarks/held_out/manifest) timed in this one process at one thread (CPU time), ours against LiteRT's
built-in kernels, LiteRT with XNNPACK and onnxruntime, medians of --runs; the document goes to
docs/benchmarks.md (or --output; benchmarks/report.py renders it). A script, not a test: machines differ,
so only the ratios of one run mean anything, and nothing asserts a time.

First the executor's own overhead per invocation and per operation (benchmarks/overhead.py), then the memory
of `convert` and of the executor per model (benchmarks/memory.py, in a process of its own that has finished
before any model is timed: run beside the timings, its conversions of the large models competed for the
memory bandwidth and cache the timed kernels use, which the thread's CPU time does not hide)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .report import COLUMNS, markdown, verdict

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT_DIR = ROOT / "benchmarks" / "held_out"
# (column, --vs) per source format
REFERENCES = {"tflite": [("litert", "litert"), ("litert_xnnpack", "litert-xnnpack")],
              "onnx": [("onnxruntime", "onnxruntime")]}
# a model of more than SLOW_GFLOP is timed with a third of the runs (at least MIN_RUNS), so one slow model does
# not take minutes; medians of fewer long runs are as steady as of many short ones
SLOW_GFLOP, MIN_RUNS = 1.0, 10


@dataclass
class Entry:
    """A manifest model resolved: its file, pins and kind (or why it cannot be measured)."""
    model: object
    path: Path = None
    shapes: dict = None
    kind: str = ""
    error: str = ""
    macs: int = 0


def resolve(model, base: Path) -> Entry:
    """The manifest entry's file (committed under base, or fetched from its wheel), pins and kind."""
    from tests.zoo.run import pins
    try:
        path = _model_path(model, base)
        shapes = pins(model, path) or None
        graph = _read(model.format, path, shapes)
    except Exception as e:  # noqa: BLE001  (a model that cannot be fetched is a note, not the end of the table)
        return Entry(model, error=f"not fetched: {type(e).__name__}: {e}")
    from converters.macs import graph_macs
    from converters.parity_references import is_float_model
    return Entry(model, path, shapes, model.format + ("-float" if is_float_model(graph) else "-quantized"),
                 macs=int(sum(graph_macs(graph))))


def _model_path(model, base: Path) -> Path:
    from tests.zoo.fetch import ZOO_DIR, cache_dir, model_path
    if base == ZOO_DIR or not model.file:
        return model_path(model)
    path = base / model.file
    if not path.exists():
        raise FileNotFoundError(f"{model.id}: {path} is missing (regenerate it with {model.script})")
    if model.light:   # weights filled with seeded random values, as the zoo does
        from tests.zoo.light import materialise
        target = cache_dir() / "light" / (model.id.replace("/", "__") + ".onnx")
        if not target.exists() or target.stat().st_mtime < path.stat().st_mtime:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(materialise(path.read_bytes(), seed_text=model.id))
        path = target
    return path


def _read(fmt: str, path, shapes):
    from converters.load import importer
    return importer(fmt).read(str(path), shapes, None).main


def _one_line(e: Exception, n: int) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:n]}"


def runs_for(entry: Entry, runs: int) -> int:
    return runs if 2 * entry.macs <= SLOW_GFLOP * 1e9 else max(MIN_RUNS, runs // 3)


def measure_entry(entry: Entry, runs: int, warmup: int) -> tuple[dict, dict | None]:
    """One row (benchmarks/report.py; memory None) and the BLAS the executor ran on (None when nothing ran)."""
    from converters.bench import bench
    m = entry.model
    row = {"model": m.id, "format": m.format, "ours": None, **{c: None for c in COLUMNS}, "notes": [],
           "kind": entry.kind, "operations": None, "profile": None, "by_op": None, "memory": None}
    if entry.error:
        row["notes"].append(entry.error)
        return row, None
    ours, blas, runs = [], None, runs_for(entry, runs)
    for column, vs in REFERENCES[m.format]:
        try:
            r = bench(str(entry.path), vs=vs, threads=1, runs=runs, warmup=warmup, input_shapes=entry.shapes,
                      clock="cpu")
        except Exception as e:  # noqa: BLE001  (a model that cannot run is a note, not the end of the table)
            row["notes"].append(f"{vs}: {_one_line(e, 160)}")
            continue
        row[column], blas, row["operations"] = r["reference_ms_median"], r["blas"], r["operations"]
        ours.append(r["ours_ms_median"])
        if r.get("partial"):
            q = r["partial"]
            row["notes"].append(f"partial: {q['fallback_nodes']} CPU fallback node(s) on {q['framework']}")
    row["ours"] = float(np.median(ours)) if ours else None   # ours is timed beside each reference
    if verdict(row).status == "over":   # name the operation holding it back, from a profile
        try:
            prof = bench(str(entry.path), threads=1, runs=max(5, runs // 3), warmup=1, input_shapes=entry.shapes,
                         profile=True, clock="cpu")
            row.update(profile=prof["profile"], by_op=prof["by_op"], profile_total_ms=prof["profile_total_ms"],
                       subgraph_profile=prof.get("subgraph_profile"), subgraph_by_op=prof.get("subgraph_by_op"))
        except Exception as e:  # noqa: BLE001  (a partial model has no whole-model profile)
            row["notes"].append(f"no profile: {_one_line(e, 120)}")
    row["notes"] = list(dict.fromkeys(row["notes"]))
    return row, blas


class MemoryRun:
    """benchmarks/memory.py over every resolvable entry, in a subprocess (started, then waited for before the
    timing begins: see the module doc)."""

    def __init__(self, entries: list[Entry]):
        reqs = [{"id": e.model.id, "path": str(e.path), "input_shapes": e.shapes, "dims": e.model.dims,
                 "partial": e.model.expect == "partial"} for e in entries if not e.error]
        self.tmp = tempfile.TemporaryDirectory(prefix="nnapi-bench-")
        req, self.results = Path(self.tmp.name) / "requests.json", Path(self.tmp.name) / "results.json"
        req.write_text(json.dumps(reqs))
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.memory", str(req), str(self.results)],
                                     cwd=ROOT, stdout=subprocess.DEVNULL)

    def wait(self) -> dict:
        """{"baseline_rss_bytes", model id: memory row}."""
        if self.proc.wait() != 0:
            raise RuntimeError(f"benchmarks.memory exited {self.proc.returncode}")
        out = json.loads(self.results.read_text())
        self.tmp.cleanup()
        return {"baseline_rss_bytes": out["baseline_rss_bytes"], **{m["id"]: m for m in out["models"]}}


def blas_paragraph(blas: dict | None, environ=os.environ) -> str:
    """Which BLAS the executor ran on, and whether the environment forced its kernel set."""
    if not blas:
        return "BLAS: not reported (no model ran)."
    text = (f"Executor BLAS: {blas.get('library')} {blas.get('version')}, {blas.get('threads')} thread(s), "
            f"{blas.get('architecture')} kernels")
    forced = environ.get("OPENBLAS_CORETYPE")
    if forced:
        return (text + f", forced by the environment (OPENBLAS_CORETYPE={forced}"
                + (f", OPENBLAS_L2_SIZE={environ['OPENBLAS_L2_SIZE']}" if environ.get("OPENBLAS_L2_SIZE") else "")
                + "), not the set OpenBLAS would choose for this CPU; run with "
                "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` to measure its own choice.")
    return text + " (OpenBLAS's own choice for this CPU: OPENBLAS_CORETYPE unset)."


def header(command: str, runs: int, warmup: int, blas: dict | None, overhead: dict | None) -> list[str]:
    from .overhead import CHAIN_LENGTHS, ELEMENTS, summary
    from .report import MIN_REFERENCE_MS, OVERHEAD_BASE_US, OVERHEAD_PER_OP_US
    paras = [
        f"Made by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}): every model below in one process, one "
        "thread everywhere "
        f"(OPENBLAS_NUM_THREADS=1, --threads 1), medians of {runs} runs ({max(MIN_RUNS, runs // 3)} for a model of "
        f"more than {SLOW_GFLOP:g} GFLOP) after {warmup} warm-up runs of the thread's CPU time "
        "(`nnapi bench --clock cpu`: on a shared machine elapsed times stretch long runs more than short ones). "
        "Ratios are ours / theirs (below 1: the executor is faster); only ratios from the same run compare, "
        "absolute times depend on the machine and its load. 'ours' is the median of the executor's medians timed "
        "beside each reference. A partial model runs its CPU fallback nodes on the framework (see `nnapi bench`).",
        blas_paragraph(blas),
        "Targets (the performance issue): float TFLite ≤ 1.5x and quantized TFLite ≤ 2x LiteRT built-in when its "
        f"invocation takes at least {MIN_REFERENCE_MS:g} ms; float ONNX ≤ 2x onnxruntime; quantized ONNX has none. "
        f"Below {MIN_REFERENCE_MS:g} ms of LiteRT a model is judged on overhead: ours − LiteRT built-in ≤ "
        f"{OVERHEAD_BASE_US:g} µs + {OVERHEAD_PER_OP_US:g} µs × the NNAPI operations of the converted model. A "
        "model over its target names the operation type with the largest share of `nnapi bench --profile` and "
        "links to its profile below.",
    ]
    if overhead:
        paras.append(f"The executor's own overhead (`python -m benchmarks.overhead`: chains of N = {CHAIN_LENGTHS[0]}"
                     f"..{CHAIN_LENGTHS[-1]} operations on {ELEMENTS} float32 elements, median CPU time per "
                     f"invocation fitted as intercept + slope × N): {summary(overhead)}.")
    return paras


def _entries(manifest_dir: Path, base: Path, only) -> list[Entry]:
    from tests.zoo.manifest import load, select
    return [resolve(m, base) for m in select(load(manifest_dir), only) if m.expect != "none"]


def run_zoo(only, runs: int, warmup: int, output: Path, zoo: bool = True, held_out: bool = True,
            command: str = "python -m benchmarks.run --zoo") -> int:
    from tests.zoo.manifest import MANIFEST_DIR, ZOO_DIR
    from .overhead import measure as measure_overhead
    t0 = time.monotonic()
    groups = ([("Zoo models", "Every model of tests/zoo/manifest that converts at least partly.",
                _entries(MANIFEST_DIR, ZOO_DIR, only))] if zoo else []) + \
             ([("Held-out models", "Models of the zoo's families at other sizes, never used for tuning "
                "(benchmarks/held_out/, made by make_held_out.py), measured the same way.",
                _entries(HELD_OUT_DIR / "manifest", HELD_OUT_DIR, only))] if held_out else [])
    every = [e for _, _, entries in groups for e in entries]
    overhead = measure_overhead()
    print(f"memory of {len(every)} models (convert and executor), before the timings", flush=True)
    memory = MemoryRun(every).wait()
    sections, blas, k = [], None, 0
    for title, intro, entries in groups:
        rows = []
        for e in entries:
            k += 1
            row, ran_on = measure_entry(e, runs, warmup)
            rows.append(row)
            blas = blas or ran_on
            print(f"[{k}/{len(every)}] {e.model.id}: ours {row['ours'] if row['ours'] is None else round(row['ours'], 3)}"
                  f" ms, {verdict(row).text}", flush=True)
        sections.append((title, intro, rows))
    for _, _, rows in sections:
        for r in rows:
            r["memory"] = memory.get(r["model"])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(markdown(header(command, runs, warmup, blas, overhead), sections, memory["baseline_rss_bytes"]))
    from .report import counts
    for title, _, rows in sections:
        print(f"{title}: {counts(rows)}")
    print(f"wrote {output} in {(time.monotonic() - t0) / 60:.1f} min")
    return 0

"""One zoo model through the `nnapi` command line: coverage, convert, parity; the result as one row.

Each step calls `converters.cli.main` with the arguments a user would type, so the zoo measures
exactly what the CLI does. `python -m tests.zoo.run ID` runs one model and prints its row as JSON;
`tests.zoo` runs every model that way in its own process, so one model's crash or hang is one row.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from . import manifest
from .fetch import FetchError, model_file
from .manifest import ZooModel

LEVELS = ("8", "4", "3")


def _cli(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `nnapi ARGV`; an option the CLI lacks is its usage error."""
    from converters.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def pins(model: ZooModel, path: Path) -> dict:
    """The manifest's input shapes, plus the shapes its `dims` pins give inputs made only of pinned
    symbols and static extents (for `benchmarks.run --zoo`, which reads models without `dims`; the zoo
    itself passes the manifest's pins to the CLI as they are)."""
    shapes = {k: list(v) for k, v in model.input_shapes.items()}
    if model.dims and model.format == "onnx":
        import onnx
        graph = onnx.load(str(path), load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        for inp in graph.input:
            if inp.name in initializers or inp.name in shapes:
                continue
            dims = [d.dim_value if d.HasField("dim_value") else model.dims.get(d.dim_param)
                    for d in inp.type.tensor_type.shape.dim]
            if dims and any(not d.HasField("dim_value") for d in inp.type.tensor_type.shape.dim) and \
                    all(isinstance(d, int) and d > 0 for d in dims):
                shapes[inp.name] = dims
    return shapes


def _pin_args(model: ZooModel) -> list[str]:
    """The manifest's pins and feature level as the options every command takes (an option the CLI lacks
    is its usage error and fails the model: nothing is dropped silently)."""
    args = [a for name, dims in model.input_shapes.items()
            for a in ("--input-shape", f"{name}={','.join(map(str, dims))}")]
    args += [a for sym, n in model.dims.items() for a in ("--dim", f"{sym}={n}")]
    return args + ["--feature-level", str(model.feature_level)]


def _sample(model: ZooModel, graph, seed: int) -> dict:
    """One sample of named inputs: the manifest's values and ranges, seeded random ones elsewhere."""
    from converters.running import random_source_inputs
    shapes = {k: tuple(v) for k, v in model.input_shapes.items()}
    rng = np.random.default_rng(seed)
    named = {}
    for i, arr in zip(graph.inputs, random_source_inputs(graph, seed, shapes)):
        name = graph.tensors[i].name
        spec = model.inputs.get(name)
        if spec and "value" in spec:
            arr = np.full(arr.shape, spec["value"], dtype=arr.dtype)
        elif spec:
            lo, hi = spec["range"]
            if arr.dtype.kind in "iu":
                arr = rng.integers(int(lo), int(hi) + 1, size=arr.shape).astype(arr.dtype)
            else:
                arr = rng.uniform(lo, hi, size=arr.shape).astype(arr.dtype)
        named[name] = arr
    return named


def _inputs_file(model: ZooModel, path: Path, folder: Path, seed: int) -> str | None:
    """An .npz of `model.samples` seeded samples (along a leading axis when there are several) where the
    manifest fixes values or ranges, else None (parity draws its own seeded samples)."""
    if not model.inputs:
        return None
    from converters.coverage import read_source
    graph = read_source(str(path), model.input_shapes or None, model.dims or None).main
    samples = [_sample(model, graph, seed + k) for k in range(model.samples)]
    unknown = set(model.inputs) - set(samples[0])
    if unknown:
        raise manifest.ManifestError(f"{model.id}: inputs {sorted(unknown)} are not inputs of the model "
                                     f"(it has {sorted(samples[0])})")
    stacked = samples[0] if model.samples == 1 else {k: np.stack([s[k] for s in samples]) for k in samples[0]}
    target = folder / "inputs.npz"
    np.savez(target, **stacked)
    return str(target)


def _reasons(nodes: list) -> dict:
    return dict(Counter(n["reason_code"] for n in nodes if not n["supported"] and n.get("reason_code")))


def _worst_error(report: dict) -> tuple[float | None, float | None]:
    """The largest error over every output (or partition output), and the worst error as a ratio of its
    allowance: over those outputs or, under the local verdict, over the operations it judges (`allowed`
    bounds `max_abs_error` in both: stored units for integer tensors, values for float ones)."""
    outs = list(report.get("outputs") or [])
    for p in report.get("partitions") or []:
        outs += p.get("outputs") or []
    worst = max((o["max_abs_error"] for o in outs if o.get("max_abs_error") is not None), default=None)
    judged = report.get("local") or [] if (report.get("verdict") or {}).get("rule") == "local" else outs
    ratio = max((e["max_abs_error"] / e["allowed"] for e in judged
                 if e.get("max_abs_error") is not None and e.get("allowed")), default=None)
    return worst, ratio


def _last_line(text: str, path: Path) -> str:
    """The message a command ended with, the cache folder left out of the model's path."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].replace(str(path.parent) + "/", "")[:300] if lines else ""


def row_head(model: ZooModel, seed: int) -> dict:
    """What a row says about the model before anything runs (a failed run's row is only this)."""
    return {"id": model.id, "category": model.category, "format": model.format, "source": model.source,
            "licence": model.licence, "expect": model.expect, "expect_reasons": model.expect_reasons,
            "why": model.why, "known_gap": model.known_gap, "samples": model.samples,
            "feature_level": model.feature_level, "seed": seed,
            "status": "error", "error": None, "internal_error": False, "parity": "n/a"}


def run(model: ZooModel, seed: int = 0) -> dict:
    row = row_head(model, seed)
    try:
        with model_file(model) as path:
            _run_commands(model, path, seed, row)
    except (FetchError, OSError) as e:
        row["error"] = f"fetch: {e}"
    return row


def _run_commands(model: ZooModel, path: Path, seed: int, row: dict) -> None:
    """coverage, convert and parity of the file at `path`, filling `row`."""
    pin_args = _pin_args(model)
    with tempfile.TemporaryDirectory(prefix="nnapi-zoo-") as tmp:
        folder = Path(tmp)
        cov_json = folder / "coverage.json"
        t0 = time.perf_counter()
        code, _, err = _cli(["coverage", str(path), "--format", "json", "-o", str(cov_json)] + pin_args)
        row["coverage_seconds"] = round(time.perf_counter() - t0, 2)
        if code != 0:
            row["internal_error"] = "internal error" in err
            row["error"] = f"coverage exit {code}: {_last_line(err, path)}"
            return
        cov = json.loads(cov_json.read_text())
        summary = cov["summary"]
        row.update(nodes=summary["nodes"], supported_nodes=summary["supported_nodes"],
                   macs=summary["macs"], macs_fraction=summary["supported_macs_fraction"],
                   partitions=summary["partitions"], reasons=_reasons(cov["nodes"]),
                   pins_needed={p["input"]: p["nodes"] for p in summary.get("pins_needed") or []},
                   per_level={lv: {"supported_nodes": cov["per_feature_level"][lv]["supported_nodes"],
                                   "macs_fraction": cov["per_feature_level"][lv]["supported_macs_fraction"]}
                              for lv in LEVELS if lv in cov["per_feature_level"]})
        full = summary["supported_nodes"] == summary["nodes"]
        row["status"] = "full" if full else ("none" if summary["supported_nodes"] == 0 else "partial")

        # the conversion itself (timed): it must agree with coverage and never fail inside
        t0 = time.perf_counter()
        code, _, err = _cli(["convert", str(path), "-o", str(folder / "model.nnapi")]
                            + ([] if full else ["--partial"]) + pin_args)
        row["convert_seconds"] = round(time.perf_counter() - t0, 2)
        if code != 0:
            row["internal_error"] = "internal error" in err
            if row["status"] != "none" or row["internal_error"]:
                row["error"] = f"convert exit {code}: {_last_line(err, path)}"

        # parity against the source framework
        row["parity"], row["parity_error"], row["parity_ratio"] = "n/a", None, None
        if row["status"] == "none" or row["error"]:
            return
        try:
            inputs = _inputs_file(model, path, folder, seed)
        except Exception as e:  # noqa: BLE001 - reported as this model's row
            row["parity"], row["parity_message"] = "error", f"inputs: {type(e).__name__}: {e}"
            return
        par_json = folder / "parity.json"
        argv = ["parity", str(path), "--format", "json", "-o", str(par_json)]
        argv += [] if full else ["--partial"]
        argv += ["--inputs", inputs] if inputs else ["--samples", str(model.samples), "--seed", str(seed)]
        argv += ["--reference", model.reference] if model.reference else []
        argv += ["--steps", str(model.steps)] if model.steps > 1 else []
        t0 = time.perf_counter()
        code, _, err = _cli(argv + pin_args)
        row["parity_seconds"] = round(time.perf_counter() - t0, 2)
        if code in (0, 1) and par_json.exists():
            report = json.loads(par_json.read_text())
            row["parity"] = "pass" if report.get("passed") else "fail"
            row["parity_error"], row["parity_ratio"] = _worst_error(report)
            row["reference"] = report.get("reference")
            verdict = report.get("verdict") or {}
            row["verdict_rule"] = verdict.get("rule")
            row["drift"] = verdict.get("drift")
            row["end_to_end"] = report.get("end_to_end")
            row["local_worst_units"] = max((e["max_units"] for e in report.get("local") or []
                                            if e.get("max_units") is not None), default=None)
            row["tolerance_mode"] = (report.get("tolerance") or {}).get("mode")
        else:
            row["internal_error"] = row["internal_error"] or "internal error" in err
            row["parity"], row["parity_message"] = "error", f"parity exit {code}: {_last_line(err, path)}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.zoo.run", description="run one zoo model, print its row as JSON")
    p.add_argument("model_id", metavar="MODEL_ID")
    p.add_argument("--seed", type=int, default=0, help="seed of the first random sample (default 0)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    found = [m for m in manifest.load() if m.id == args.model_id]
    if not found:
        print(f"no zoo model with id {args.model_id!r}", file=sys.stderr)
        return 3
    print(json.dumps(run(found[0], args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One zoo model through the `nnapi` command line: coverage, convert, parity; the result as one row.

Each step calls `converters.cli.main` with the arguments a user would type, so the zoo measures
exactly what the CLI does. `python -m tests.zoo.run ID` runs one model and prints its row as JSON;
`tests.zoo` runs every model that way in its own process, so one model's crash or hang is one row.
"""
from __future__ import annotations

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
from .fetch import FetchError, model_path
from .manifest import ZooModel

LEVELS = ("8", "4", "3")


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from converters.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _cli_options() -> set:
    from converters.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {(cmd, opt) for cmd, p in sub.choices.items() for a in p._actions for opt in a.option_strings}


def pins(model: ZooModel, path: Path) -> dict:
    """The manifest's input shapes, plus the shapes its `dims` pins give inputs made only of pinned
    symbols and static extents (so that a CLI without `--dim` still gets the pins)."""
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


def _shape_args(shapes: dict, model: ZooModel, cmd: str, options: set) -> list[str]:
    args = [a for name, dims in shapes.items() for a in ("--input-shape", f"{name}={','.join(map(str, dims))}")]
    if (cmd, "--dim") in options:
        args += [a for sym, n in model.dims.items() for a in ("--dim", f"{sym}={n}")]
    return args


def _inputs_file(model: ZooModel, path: Path, shapes: dict, folder: Path) -> str | None:
    """An .npz of seeded inputs where the manifest fixes values or ranges, else None (parity draws)."""
    if not model.inputs:
        return None
    from converters.coverage import read_source
    from converters.running import random_source_inputs
    graph = read_source(str(path)).main
    tuple_shapes = {k: tuple(v) for k, v in shapes.items()}
    arrays = random_source_inputs(graph, 0, tuple_shapes)
    rng = np.random.default_rng(0)
    named = {}
    for i, arr in zip(graph.inputs, arrays):
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
    unknown = set(model.inputs) - set(named)
    if unknown:
        raise manifest.ManifestError(f"{model.id}: inputs {sorted(unknown)} are not inputs of the model "
                                     f"(it has {sorted(named)})")
    target = folder / "inputs.npz"
    np.savez(target, **named)
    return str(target)


def _reasons(nodes: list) -> dict:
    return dict(Counter(n["reason_code"] for n in nodes if not n["supported"] and n.get("reason_code")))


def _worst_error(report: dict) -> tuple[float | None, float | None]:
    """The largest error over every output (or partition output) and the ratio error / allowed."""
    outs = list(report.get("outputs") or [])
    for p in report.get("partitions") or []:
        outs += p.get("outputs") or []
    worst, ratio = None, None
    for o in outs:
        err, allowed = o.get("max_abs_error"), o.get("allowed")
        if err is None:
            continue
        worst = err if worst is None else max(worst, err)
        if allowed:
            r = err / allowed
            ratio = r if ratio is None else max(ratio, r)
    return worst, ratio


def _last_line(text: str, path: Path) -> str:
    """The message a command ended with, the cache folder left out of the model's path."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].replace(str(path.parent) + "/", "")[:300] if lines else ""


def run(model: ZooModel) -> dict:
    row = {"id": model.id, "category": model.category, "format": model.format, "source": model.source,
           "licence": model.licence, "expect": model.expect, "expect_reasons": model.expect_reasons,
           "why": model.why, "status": "error", "error": None, "internal_error": False}
    try:
        path = model_path(model)
    except (FetchError, OSError) as e:
        row["error"] = f"fetch: {e}"
        return row
    options = _cli_options()
    shapes = pins(model, path)
    with tempfile.TemporaryDirectory(prefix="nnapi-zoo-") as tmp:
        folder = Path(tmp)
        cov_json = folder / "coverage.json"
        t0 = time.perf_counter()
        code, _, err = _cli(["coverage", str(path), "--format", "json", "--feature-level", "all",
                             "-o", str(cov_json)] + _shape_args(shapes, model, "coverage", options))
        row["coverage_seconds"] = round(time.perf_counter() - t0, 2)
        if code != 0:
            row["internal_error"] = "internal error" in err
            row["error"] = f"coverage exit {code}: {_last_line(err, path)}"
            return row
        cov = json.loads(cov_json.read_text())
        summary = cov["summary"]
        row.update(nodes=summary["nodes"], supported_nodes=summary["supported_nodes"],
                   macs=summary["macs"], macs_fraction=summary["supported_macs_fraction"],
                   partitions=summary["partitions"], reasons=_reasons(cov["nodes"]),
                   pins_needed=summary.get("pins_needed"),
                   per_level={lv: {"supported_nodes": cov["per_feature_level"][lv]["supported_nodes"],
                                   "macs_fraction": cov["per_feature_level"][lv]["supported_macs_fraction"]}
                              for lv in LEVELS if lv in cov["per_feature_level"]})
        full = summary["supported_nodes"] == summary["nodes"]
        row["status"] = "full" if full else ("none" if summary["supported_nodes"] == 0 else "partial")

        # the conversion itself (timed): it must agree with coverage and never fail inside
        t0 = time.perf_counter()
        code, _, err = _cli(["convert", str(path), "-o", str(folder / "model.nnapi")]
                            + ([] if full else ["--partial"]) + _shape_args(shapes, model, "convert", options))
        row["convert_seconds"] = round(time.perf_counter() - t0, 2)
        if code != 0:
            row["internal_error"] = "internal error" in err
            if row["status"] != "none" or row["internal_error"]:
                row["error"] = f"convert exit {code}: {_last_line(err, path)}"

        # parity against the source framework
        row["parity"], row["parity_error"], row["parity_ratio"] = "n/a", None, None
        if row["status"] == "none" or row["error"]:
            return row
        try:
            inputs = _inputs_file(model, path, shapes, folder)
        except Exception as e:  # noqa: BLE001 - reported as this model's row
            row["parity"], row["parity_message"] = "error", f"inputs: {type(e).__name__}: {e}"
            return row
        par_json = folder / "parity.json"
        argv = ["parity", str(path), "--format", "json", "-o", str(par_json)]
        argv += [] if full else ["--partial"]
        argv += ["--inputs", inputs] if inputs else []
        if model.reference:
            argv += ["--reference", model.reference]
        if model.steps > 1 and ("parity", "--steps") in options:
            argv += ["--steps", str(model.steps)]
        t0 = time.perf_counter()
        code, _, err = _cli(argv + _shape_args(shapes, model, "parity", options))
        row["parity_seconds"] = round(time.perf_counter() - t0, 2)
        if code in (0, 1) and par_json.exists():
            report = json.loads(par_json.read_text())
            row["parity"] = "pass" if report.get("passed") else "fail"
            row["parity_error"], row["parity_ratio"] = _worst_error(report)
            row["reference"] = report.get("reference")
            verdict = report.get("verdict") or {}
            row["verdict_rule"] = verdict.get("rule")
            row["drift"] = verdict.get("drift")
            row["local_worst_units"] = max((e["max_units"] for e in report.get("local") or []
                                            if e.get("max_units") is not None), default=None)
            row["tolerance_mode"] = (report.get("tolerance") or {}).get("mode")
        else:
            row["internal_error"] = row["internal_error"] or "internal error" in err
            row["parity"], row["parity_message"] = "error", f"parity exit {code}: {_last_line(err, path)}"
    return row


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m tests.zoo.run MODEL_ID", file=sys.stderr)
        return 3
    found = [m for m in manifest.load() if m.id == argv[0]]
    if not found:
        print(f"no zoo model with id {argv[0]!r}", file=sys.stderr)
        return 3
    print(json.dumps(run(found[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

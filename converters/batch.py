"""Batch runs over many models (`nnapi coverage DIR ...`, `nnapi parity DIR ...`): one task per model, run in
this process, in N local worker processes (--jobs N), or on an existing Dask distributed cluster
(--dask ADDRESS). Whichever runs them, the rows are the same and in the order of the models; a model whose
task fails (or whose worker dies) is one error row, and the batch goes on.

On a cluster every worker imports this package (install the same nnapi-convert, with the runtimes parity
needs, on every worker) and opens the models by the paths given here (a filesystem the workers share).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable, Optional

from .dependencies import MissingDependency
from .exit_codes import EXIT_INTERNAL


def guarded(fn: Callable, args: tuple) -> dict:
    """fn(*args) with the BLAS held to one thread, or the model's error row when it raises (the batch never
    stops at one model). One thread everywhere: a float sum's rounding depends on how BLAS splits it, so rows
    are bit-identical wherever they run (Dask workers start with one BLAS thread), and the parallelism is the
    batch's own (--jobs, the cluster's workers)."""
    from threadpoolctl import threadpool_limits
    try:
        with threadpool_limits(limits=1):
            return fn(*args)
    except Exception as e:  # noqa: BLE001 - one model's failure is one row
        return error_row(args[0], f"{type(e).__name__}: {e}")


def error_row(model, message: str) -> dict:
    return {"model": str(model), "error": message, "error_kind": "internal_error"}


def run(fn: Callable, arg_tuples: list, jobs: int = 1, dask: Optional[str] = None) -> list:
    """[fn(*args) for args in arg_tuples], in that order, run as asked; a tqdm bar on a terminal."""
    total = len(arg_tuples)
    bar = None
    if sys.stderr.isatty() and total > 1:
        from tqdm import tqdm
        bar = tqdm(total=total, unit="model", file=sys.stderr, leave=False)

    def done(k: int) -> None:
        if bar is not None:
            bar.set_postfix_str(Path(str(arg_tuples[k][0])).name)
            bar.update(1)
    try:
        if dask:
            return _on_dask(fn, arg_tuples, dask, done)
        if jobs <= 1 or total <= 1:
            out = []
            for k, a in enumerate(arg_tuples):
                out.append(guarded(fn, a))
                done(k)
            return out
        return _in_processes(fn, arg_tuples, jobs, done)
    finally:
        if bar is not None:
            bar.close()


def _in_processes(fn, arg_tuples, jobs, done) -> list:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    results: list = [None] * len(arg_tuples)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(guarded, fn, a): k for k, a in enumerate(arg_tuples)}
        for fut in as_completed(futures):
            k = futures[fut]
            try:
                results[k] = fut.result()
            except Exception as e:  # noqa: BLE001 - the worker process died (out of memory, a crash)
                results[k] = error_row(arg_tuples[k][0], f"the worker process failed: {type(e).__name__}: {e}")
            done(k)
    return results


def _on_dask(fn, arg_tuples, address: str, done) -> list:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise MissingDependency("distributed", "by --dask") from None
    results: list = [None] * len(arg_tuples)
    with Client(address, set_as_default=False) as client:
        futures = [client.submit(guarded, fn, a, pure=False, key=f"nnapi-{k}-{Path(str(a[0])).name}")
                   for k, a in enumerate(arg_tuples)]
        index = {f.key: k for k, f in enumerate(futures)}
        for fut in as_completed(futures, loop=client.loop):  # (this client, not a process-wide default)
            k = index[fut.key]
            try:
                results[k] = fut.result()
            except Exception as e:  # noqa: BLE001 - the task's worker died or the result did not come back
                results[k] = error_row(arg_tuples[k][0], f"the Dask task failed: {type(e).__name__}: {e}")
            done(k)
    return results


# -- parity over many models ----------------------------------------------------------------------------------

def parity_row(path: str, options: dict) -> dict:
    """One model's parity as a batch row: the JSON report (README schema) with "model" the path given and
    "exit_code" what `nnapi parity MODEL` would exit with; or an error row with that exit code."""
    from . import parity
    from .parity_render import render_json
    from .source_graph import SourceError
    try:
        report = parity.check(path, **options)
    except MissingDependency as e:
        return {"model": str(path), "passed": False, "exit_code": 4, "error": str(e), "error_kind": "missing_dependency"}
    except parity.ParityError as e:
        kind = "unsupported" if e.exit_code == 2 else "invalid_model"
        return {"model": str(path), "passed": False, "exit_code": e.exit_code, "error": str(e), "error_kind": kind}
    except SourceError as e:
        return {"model": str(path), "passed": False, "exit_code": 3, "error": str(e), "error_kind": "invalid_model"}
    row = json.loads(render_json(report))
    row.update(model=str(path), exit_code=0 if report.passed else 1)
    return row


def parity_exit_code(rows: list) -> int:
    """The batch's exit code: the largest of the models' (a row without one is an internal error: 5)."""
    return max((r.get("exit_code", EXIT_INTERNAL) for r in rows), default=0)


def _worst(row: dict) -> str:
    outs = row.get("outputs") or []
    worst = max((o.get("max_abs_error") or 0.0 for o in outs), default=None)
    return "" if worst is None else f"{worst:.3g}"


def render_parity_batch(rows: list, fmt: str) -> str:
    """The batch as JSON ({"report": "nnapi-parity-batch/1", "models": rows}), a text table or an HTML table."""
    if fmt == "json":
        return json.dumps({"report": "nnapi-parity-batch/1", "models": rows}, indent=1)
    from .coverage_render import _html_table, _table
    headers = ["model", "result", "exit", "max |diff|", "error / verdict"]
    table = []
    for r in rows:
        if "error" in r:
            table.append((r["model"], r.get("error_kind", "error").upper(), r.get("exit_code", EXIT_INTERNAL), "",
                          r["error"]))
        else:
            table.append((r["model"], "passed" if r["passed"] else "MISMATCH", r["exit_code"], _worst(r),
                          (r.get("verdict") or {}).get("rule", "")))
    if fmt == "html":
        return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>NNAPI parity</title></head><body>"
                "<h1>NNAPI parity</h1>" + _html_table(headers, table) + "</body></html>")
    return "\n".join(_table(headers, table))

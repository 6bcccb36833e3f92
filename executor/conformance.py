"""Run the Android NNAPI CTS vectors through the public nnapi API and the executor.

    python -m executor.conformance PATH... [--json FILE] [--filter SUBSTRING]

PATH is a vector folder (searched recursively for *.json.gz / *.json) or a
file. Each case is built with nnapi.Model (CONSTANT_REFERENCE values through
an nnapi.Memory), compiled, executed and judged by the CTS rules described in
the vectors' README. Prints a per-operation-type table and ends with
`N passed, M failed, K skipped`; exits 1 when anything failed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

import nnapi
from nnapi import Compilation, Execution, Memory, Model, NnapiError, OperandCode, OperandType
from nnapi.operand import DTYPES

from .registry import missing_reason

C = OperandCode


# -- reading --------------------------------------------------------------------

def find_vector_files(paths: Iterable[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.name.endswith((".json.gz", ".json"))
                                and q.name != "index.json"))
        elif p.exists():
            files.append(p)
        else:
            raise FileNotFoundError(f"no such file or folder: {p}")
    return files


def read_cases(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data if isinstance(data, list) else [data]


# -- building -------------------------------------------------------------------

def _array(values, code: C, dims) -> np.ndarray:
    dt = DTYPES[code]
    arr = np.asarray(values, dtype=np.float64 if dt.kind == "f" else None)
    arr = arr.astype(dt)
    if dims and all(d > 0 for d in dims):
        arr = arr.reshape(dims)
    elif code in (C.FLOAT32, C.INT32, C.UINT32, C.BOOL, C.FLOAT16):
        arr = arr.reshape(())
    return arr


def build_model(case: dict, memories: list) -> Model:
    """Build the case's main model (and its referenced subgraphs) through the public API."""
    subgraphs = case.get("referenced", [])
    built: dict[int, Model] = {}

    def build(sg: dict, key: Optional[int]) -> Model:
        m = Model(name=sg.get("name"))
        for i, o in enumerate(sg["operands"]):
            code = C[o["type"]]
            m.add_operand(OperandType(code, o["dimensions"], o["scale"], o["zeroPoint"]), name=o.get("name"))
            cq = o.get("channelQuant")
            if cq and not o.get("channelQuantHidden"):
                m.set_operand_symm_per_channel_quant_params(i, cq["scales"], cq["channelDim"])
        for i, o in enumerate(sg["operands"]):
            life = o["lifetime"]
            code = C[o["type"]]
            if life == "CONSTANT_COPY":
                m.set_operand_value(i, _array(o["value"], code, o["dimensions"]))
            elif life == "CONSTANT_REFERENCE":
                arr = np.ascontiguousarray(_array(o["value"], code, o["dimensions"]))
                mem = Memory.from_buffer(bytearray(arr.tobytes()) + bytearray(8))
                memories.append(mem)
                m.set_operand_value_from_memory(i, mem, 0, arr.nbytes)
            elif life == "NO_VALUE":
                m.set_operand_value(i, None)
            elif life == "SUBGRAPH":
                k = int(o["value"][0])
                if k not in built:
                    built[k] = build(subgraphs[k], k)
                m.set_operand_value_from_model(i, built[k])
        for op in sg["operations"]:
            m.add_operation(nnapi.OperationCode[op["type"]], op["inputs"], op["outputs"])
        m.identify_inputs_and_outputs(sg["inputIndexes"], sg["outputIndexes"])
        if case.get("isRelaxed"):
            m.relax_computation_float32_to_float16(True)
        m.finish()
        return m

    return build(case["main"], None)


# -- judging --------------------------------------------------------------------

def _compare(actual: np.ndarray, expected: np.ndarray, tol: dict) -> Optional[str]:
    if tol["check"] == "bool":
        bad = np.flatnonzero(actual.reshape(-1).astype(bool) != expected.reshape(-1).astype(bool))
        return None if bad.size == 0 else f"{bad.size} bool elements differ, first at {bad[0]}"
    a = actual.reshape(-1).astype(np.float64)
    e = expected.reshape(-1).astype(np.float64)
    if np.isnan(a).any():
        return "NaN in output"
    diff = np.abs(a - e)
    limit = tol["atol"] + tol["rtol"] * np.abs(e)
    bad = np.flatnonzero(~(diff <= limit))
    if bad.size:
        j = bad[0]
        return (f"{bad.size}/{a.size} elements out of tolerance; first at {j}: got {a[j]!r}, expected {e[j]!r} "
                f"(max |diff| {diff.max():.3g})")
    return None


def _multinomial(case: dict, results: list[np.ndarray]) -> Optional[str]:
    logits = np.asarray(case["inputs"][0], dtype=np.float64)
    in_dims = case["main"]["operands"][case["main"]["inputIndexes"][0]]["dimensions"]
    logits = logits.reshape(in_dims)
    samples = results[0]
    tol = case.get("expectedMultinomialDistributionTolerance") or 0.025
    for b in range(logits.shape[0]):
        p = np.exp(logits[b] - logits[b].max())
        p /= p.sum()
        freq = np.bincount(samples[b].astype(np.int64), minlength=logits.shape[1])[: logits.shape[1]] / samples.shape[1]
        worst = np.abs(freq - p).max()
        if worst > tol:
            return f"batch {b}: class frequencies differ from softmax by {worst:.3f} > {tol}"
    return None


def run_case(case: dict) -> tuple[str, str]:
    """(status, message) for one case: passed / failed / error / skipped."""
    ops = set(case.get("operationTypes", []))
    for name in sorted(ops):
        reason = missing_reason(nnapi.OperationCode[name])
        if reason:
            return "skipped", reason
    memories: list = []
    main = case["main"]
    try:
        model = build_model(case, memories)
        comp = Compilation(model)
        comp.finish()
        ex = Execution(comp)
        for k, idx in enumerate(main["inputIndexes"]):
            o = main["operands"][idx]
            values = case["inputs"][k]
            if not values and (not o["dimensions"] or 0 in o["dimensions"] or
                               math.prod(o["dimensions"]) != 0) and len(values) == 0 and \
                    (math.prod(o["dimensions"] or [1]) != 0):
                ex.set_input(k, None)
                continue
            code = C[o["type"]]
            arr = _array(values, code, o["dimensions"])
            if not o["dimensions"] or 0 in o["dimensions"]:
                arr = arr.reshape(o["dimensions"]) if values == [] else arr
            ex.set_input(k, arr if arr.ndim or code not in _TENSORS else arr.reshape(-1))
        outs = []
        for k, idx in enumerate(main["outputIndexes"]):
            o = main["operands"][idx]
            code = C[o["type"]]
            n = len(case["outputs"][k])
            buf = np.zeros(max(n, 1) * 4 + 64, dtype=DTYPES[code])  # generous: shapes may be dynamic
            outs.append(buf)
            ex.set_output(k, buf)
        ex.compute()
    except NnapiError as e:
        if case.get("expectFailure"):
            return "passed", f"failed as expected: {e}"
        return "failed", str(e)
    if case.get("expectFailure"):
        return "failed", "expected a failure, but the model built, compiled and ran"
    if any(t["check"] == "multinomial" for t in case["ctsTolerance"]):
        dims = ex.get_output_operand_dimensions(0)
        res = [outs[0][: math.prod(dims)].reshape(dims)]
        msg = _multinomial(case, res)
        return ("failed", msg) if msg else ("passed", "")
    for k, idx in enumerate(main["outputIndexes"]):
        tol = case["ctsTolerance"][k]
        if tol["check"] == "ignored" or case["outputIsIgnored"][k]:
            continue
        o = main["operands"][idx]
        expected_dims = tuple(o["dimensions"])
        got_dims = tuple(ex.get_output_operand_dimensions(k))
        if expected_dims and got_dims != expected_dims:
            return "failed", f"output {k}: dimensions {list(got_dims)}, expected {list(expected_dims)}"
        n = math.prod(got_dims) if got_dims else 1
        actual = outs[k][:n]
        expected = _array(case["outputs"][k], C[o["type"]], None).reshape(-1)
        if expected.size != actual.size:
            return "failed", f"output {k}: {actual.size} elements, expected {expected.size}"
        msg = _compare(actual, expected, tol)
        if msg:
            return "failed", f"output {k}: {msg}"
    return "passed", ""


_TENSORS = frozenset(c for c in C if c.name.startswith("TENSOR"))


# -- command line ----------------------------------------------------------------

def run(paths, filter_: Optional[str] = None, json_out: Optional[str] = None, out=sys.stdout,
        progress: bool = False) -> dict:
    records = []
    per_op: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    start = time.monotonic()
    for path in find_vector_files(paths):
        for case in read_cases(path):
            if filter_ and filter_ not in case["id"]:
                continue
            try:
                status, message = run_case(case)
            except Exception as e:  # a crash in our code is a result too, never the end of the run
                status, message = "error", f"{type(e).__name__}: {e}"
            records.append({"id": case["id"], "status": status, "message": message})
            for op in case.get("operationTypes", []) or ["(none)"]:
                per_op[op][status] += 1
    counts = defaultdict(int)
    for r in records:
        counts[r["status"]] += 1
    passed = counts["passed"]
    failed = counts["failed"] + counts["error"]
    skipped = counts["skipped"]
    print(f"{'operation':32} {'passed':>7} {'failed':>7} {'skipped':>8}", file=out)
    for op in sorted(per_op):
        c = per_op[op]
        print(f"{op:32} {c['passed']:7d} {c['failed'] + c['error']:7d} {c['skipped']:8d}", file=out)
    for r in records:
        if r["status"] in ("failed", "error"):
            print(f"FAILED {r['id']}: {r['message']}", file=out)
    print(f"time: {time.monotonic() - start:.1f} s", file=out)
    print(f"{passed} passed, {failed} failed, {skipped} skipped", file=out)
    if json_out:
        tmp = Path(str(json_out) + ".tmp")
        tmp.write_text(json.dumps(records, indent=1))
        tmp.replace(json_out)
    return {"passed": passed, "failed": failed, "skipped": skipped, "records": records}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m executor.conformance",
                                 description="Run NNAPI CTS conformance vectors through the executor.")
    ap.add_argument("paths", nargs="+", metavar="PATH", help="vector folders or files (*.json.gz)")
    ap.add_argument("--json", metavar="FILE", help="write one record per case: id, status, message")
    ap.add_argument("--filter", metavar="SUBSTRING", help="only cases whose id contains SUBSTRING")
    ap.add_argument("--no-fast-paths", action="store_true",
                    help="run the plain kernels only (no compile-time fast paths): the semantics the fast paths "
                         "must agree with")
    args = ap.parse_args(argv)
    if args.no_fast_paths:
        from . import runtime
        runtime.FAST_PATHS = False
    try:
        result = run(args.paths, args.filter, args.json)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())

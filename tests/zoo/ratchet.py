"""The zoo's ratchet: what `baseline.json` records per model, and how a run is held to it.

Every recorded figure moves one way only. Exact figures (status, nodes off NNAPI, MAC share, partitions,
reason codes and pins needed with their node counts, parity pass, internal errors, the end-to-end
allowance) may not get worse at all. Measured errors may wander within a noise margin, `NOISE` below:
a figure is worse when `now > base * factor + slack`, and better (the baseline must then be tightened
in the same change) when `base > now * factor + slack`. tests/zoo/README.md says how the margins were
measured. `update` writes a run into the baseline and never loosens a figure unless the model is
named in `accepted` (`python -m tests.zoo --update-baseline --accept-regression MODEL`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from .manifest import ZOO_DIR

BASELINE = ZOO_DIR / "baseline.json"
_RANK = {"error": 0, "none": 1, "partial": 2, "full": 3}
_PARITY_RANK = {"n/a": 0, "error": 0, "fail": 1, "pass": 2}

# measured figure -> (factor, slack, what it is); lower is better for each
NOISE = {
    "error_ratio": (2.0, 0.1, "worst error / allowance"),
    "drift_units": (1.5, 2.0, "end-to-end drift, stored units"),
    "drift_error": (1.5, 1e-6, "end-to-end drift, max |error|"),
    "drift_cosine_gap": (1.5, 0.002, "1 - cosine of the drift"),
    "e2e_units": (1.5, 1.0, "end-to-end error against the kernels NNAPI shares, stored units"),
}


def _figure(x) -> Optional[float]:
    return None if x is None else float(f"{x:.4g}")


def entry(row: dict) -> dict:
    """The baseline entry of a run's row: every figure the ratchet holds."""
    drift = row.get("drift") or {}
    e2e = row.get("end_to_end") or {}
    cosine = drift.get("cosine")
    return {
        "status": row["status"], "internal_error": bool(row.get("internal_error")),
        "nodes": row.get("nodes"), "supported_nodes": row.get("supported_nodes"),
        "macs_fraction": row.get("macs_fraction"), "partitions": row.get("partitions"),
        "reasons": dict(sorted((row.get("reasons") or {}).items())),
        "pins_needed": dict(sorted((row.get("pins_needed") or {}).items())),
        "parity": row.get("parity", "n/a"), "samples": row.get("samples"),
        "error_ratio": _figure(row.get("parity_ratio")),
        "drift_units": _figure(drift.get("max_units")),
        "drift_error": _figure(drift.get("max_abs_error")) if drift.get("max_units") is None else None,
        "drift_cosine_gap": _figure(None if cosine is None else max(0.0, 1.0 - cosine)),
        "e2e_units": _figure(e2e.get("max_units")),
        "e2e_allowed_units": _figure(e2e.get("allowed_units")),
    }


def _off(e: dict) -> Optional[int]:
    if e.get("nodes") is None or e.get("supported_nodes") is None:
        return None
    return e["nodes"] - e["supported_nodes"]


def _counts(name: str, now: dict, base: dict, worse: list, better: list) -> None:
    """Per key (a reason code, an input needing pins) the node count may only fall."""
    for key in sorted(set(now) | set(base)):
        n, b = now.get(key, 0), base.get(key, 0)
        if n != b:
            (worse if n > b else better).append(f"{name} {key}: {n} nodes (baseline {b})")


def _lower(name: str, n, b, worse: list, better: list) -> None:
    if n is not None and b is not None and n != b:
        (worse if n > b else better).append(f"{name} {n} (baseline {b})")


def compare(row: dict, base: Optional[dict]) -> tuple[list[str], list[str]]:
    """(worse, better): each figure of `row` that moved beyond its margin from the baseline entry `base`."""
    if not base:
        return [], ["new model (no baseline entry yet)"]
    now = entry(row)
    worse, better = [], []
    if now["internal_error"] != bool(base.get("internal_error")):
        (worse if now["internal_error"] else better).append(
            f"internal error: {row.get('error') or row.get('parity_message')}" if now["internal_error"]
            else "no internal error any more")
    if _RANK[now["status"]] != _RANK[base["status"]]:
        (worse if _RANK[now["status"]] < _RANK[base["status"]] else better).append(
            f"status {base['status']} -> {now['status']}" + (f" ({row['error']})" if row.get("error") else ""))
    _lower("nodes off NNAPI", _off(now), _off(base), worse, better)
    mf, bmf = now["macs_fraction"], base.get("macs_fraction")
    if mf is not None and bmf is not None and abs(mf - bmf) > 1e-6:
        (worse if mf < bmf else better).append(f"MACs on NNAPI {mf:.2%} (baseline {bmf:.2%})")
    _lower("partitions", now["partitions"], base.get("partitions"), worse, better)
    for name, what in (("reasons", "reason"), ("pins_needed", "pins needed for")):
        if now["status"] == "error":   # a run that stopped early says nothing about reasons and pins
            continue
        if name not in base:           # an entry from before the figure was recorded
            better.append(f"{name} now recorded: record them")
        else:
            _counts(what, now[name], base[name], worse, better)
    rank, base_rank = _PARITY_RANK[now["parity"]], _PARITY_RANK[base.get("parity", "n/a")]
    if rank != base_rank:
        (worse if rank < base_rank else better).append(
            f"parity {now['parity']} (baseline {base.get('parity')})"
            + (f": {row['parity_message']}" if row.get("parity_message") and rank < base_rank else ""))
    if now["parity"] in ("pass", "fail"):   # the figures of a parity run that did not finish are absent
        for name, (factor, slack, what) in NOISE.items():
            n, b = now[name], base.get(name)
            if b is not None and n is None:
                worse.append(f"{what} no longer measured (baseline {b:g})")
            elif n is not None and b is None:
                better.append(f"{what} now measured ({n:g}): record it")
            elif n is not None and n > b * factor + slack:
                worse.append(f"{what} {n:g} (baseline {b:g}; the noise margin allows {b * factor + slack:.4g})")
            elif n is not None and b > n * factor + slack:
                better.append(f"{what} {n:g} (baseline {b:g}, beyond the noise margin)")
        _lower("end-to-end allowance (units)", now["e2e_allowed_units"], base.get("e2e_allowed_units"),
               worse, better)
    return worse, better


def update(rows: list[dict], base: dict, accepted: set, known: set) -> tuple[dict, list[str]]:
    """(the new baseline, refusals). A model whose figures got worse is refused unless it is in
    `accepted`; otherwise each measured figure keeps the tighter of the run and the baseline, so that
    drift within the noise margin never loosens it step by step. Entries of models not in `known`
    (the manifest) are dropped; models not run keep their entries."""
    data = {k: v for k, v in base.items() if k in known}
    refusals = []
    for row in rows:
        old = base.get(row["id"])
        worse, _ = compare(row, old)
        new = entry(row)
        if worse and row["id"] not in accepted:
            refusals.append(f"{row['id']}: " + "; ".join(worse))
            continue
        if old and row["id"] not in accepted:
            for name in NOISE:
                if new[name] is not None and old.get(name) is not None:
                    new[name] = min(new[name], old[name])
        data[row["id"]] = new
    return dict(sorted(data.items())), refusals


def load(path: Path = BASELINE) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def write(data: dict, path: Path = BASELINE) -> None:
    from .table import write_text
    write_text(path, json.dumps(data, indent=1) + "\n")

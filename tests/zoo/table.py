"""Zoo results: the baseline they are held to, and the `docs/zoo.md` table they are shown in."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from .manifest import ZOO_DIR

BASELINE = ZOO_DIR / "baseline.json"
_BASELINE_KEYS = ("status", "nodes", "supported_nodes", "macs_fraction", "parity", "internal_error")
_RANK = {"error": 0, "none": 1, "partial": 2, "full": 3}


def load_baseline(path: Path = BASELINE) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def baseline_entry(row: dict) -> dict:
    return {k: row.get(k) for k in _BASELINE_KEYS}


def write_baseline(rows: list[dict], path: Path = BASELINE, keep: dict | None = None) -> None:
    """Record `rows` (entries of models not run this time are kept from `keep`)."""
    data = dict(keep or {})
    data.update({r["id"]: baseline_entry(r) for r in rows})
    _atomic_text(path, json.dumps(dict(sorted(data.items())), indent=1) + "\n")


def _atomic_text(path: Path, text: str) -> None:
    from nnapi.serialize import atomic_write
    atomic_write(path, text.encode())


def _unsupported(entry: dict) -> int | None:
    if entry.get("nodes") is None or entry.get("supported_nodes") is None:
        return None
    return entry["nodes"] - entry["supported_nodes"]


def compare(row: dict, base: dict | None) -> tuple[list[str], list[str]]:
    """(regressions, improvements) of a result against its baseline entry."""
    if not base:
        return [], ["new model (no baseline entry yet)"]
    worse, better = [], []
    if row.get("internal_error") and not base.get("internal_error"):
        worse.append(f"internal error: {row.get('error') or row.get('parity_message')}")
    elif base.get("internal_error") and not row.get("internal_error"):
        better.append("no internal error any more")
    if _RANK[row["status"]] < _RANK[base["status"]]:
        worse.append(f"status {base['status']} -> {row['status']}" + (f" ({row['error']})" if row.get("error") else ""))
    elif _RANK[row["status"]] > _RANK[base["status"]]:
        better.append(f"status {base['status']} -> {row['status']}")
    now, then = _unsupported(row), _unsupported(base)
    if now is not None and then is not None:
        if now > then:
            worse.append(f"{now} nodes off NNAPI (baseline {then})")
        elif now < then:
            better.append(f"{now} nodes off NNAPI (baseline {then})")
    mf, bmf = row.get("macs_fraction"), base.get("macs_fraction")
    if mf is not None and bmf is not None:
        if mf < bmf - 1e-6:
            worse.append(f"MACs on NNAPI {mf:.1%} (baseline {bmf:.1%})")
        elif mf > bmf + 1e-6:
            better.append(f"MACs on NNAPI {mf:.1%} (baseline {bmf:.1%})")
    if base.get("parity") == "pass" and row.get("parity") != "pass":
        worse.append(f"parity {row.get('parity')} (baseline pass)"
                     + (f": {row['parity_message']}" if row.get("parity_message") else ""))
    elif base.get("parity") != "pass" and row.get("parity") == "pass":
        better.append(f"parity pass (baseline {base.get('parity')})")
    return worse, better


def meets_expectation(row: dict) -> bool:
    """Converted as fully as NNAPI allows and matching: the honest target of the manifest entry."""
    if row["status"] != row["expect"]:
        return False
    if row["expect"] == "partial" and row.get("reasons") != row.get("expect_reasons"):
        return False
    return row["expect"] == "none" or row.get("parity") == "pass"


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _reasons(r: dict) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in sorted((r.get("reasons") or {}).items())) or "–"


def _parity(r: dict) -> str:
    p = r.get("parity", "n/a")
    if r.get("verdict_rule") == "local" and r.get("drift"):
        d = r["drift"]
        bits = [f"local ≤{r['local_worst_units']:.3g}u" if r.get("local_worst_units") is not None else "local"]
        if d.get("max_units") is not None:
            bits.append(f"drift {d['max_units']:g}u")
        elif d.get("max_abs_error") is not None:
            bits.append(f"drift {d['max_abs_error']:.3g}")
        if d.get("cosine") is not None:
            bits.append(f"cos {d['cosine']:.4f}")
        if d.get("top1_agreement") is not None:
            bits.append(f"top-1 {d['top1_agreement']:.0%}")
        return f"{p} ({', '.join(bits)})"
    if r.get("parity_ratio") is not None:
        return f"{p} ({r['parity_error']:.3g}, {r['parity_ratio']:.2f}× allowed)"
    if p == "error":
        return f"error: {(r.get('parity_message') or '')[:90]}"
    return p


def _nodes(r: dict) -> str:
    if r.get("nodes") is None:
        return "–"
    return f"{r['supported_nodes']}/{r['nodes']}"


def _level(r: dict, lv: str) -> str:
    e = (r.get("per_level") or {}).get(lv)
    return "–" if e is None else _pct(e["macs_fraction"])


def render(rows: list[dict]) -> str:
    """docs/zoo.md: a summary, one table per category, and the gaps to the honest target."""
    by_status = Counter(r["status"] for r in rows)
    met = sum(meets_expectation(r) for r in rows)
    parity_pass = sum(r.get("parity") == "pass" for r in rows)
    internal = [r for r in rows if r.get("internal_error")]
    lines = [
        "# The model zoo",
        "",
        "Generated by `python -m tests.zoo` (do not edit). Each model runs through `nnapi coverage "
        "--feature-level all`, `nnapi convert` and `nnapi parity` (with `--partial` where coverage is partial),",
        "as a user would run them. The manifest is `tests/zoo/manifest/*.toml`; `expect` is the honest "
        "target (what NNAPI can express), and `tests/zoo/test_zoo.py` holds every model to",
        "`tests/zoo/baseline.json`, the last recorded result.",
        "",
        f"**{len(rows)} models**: {by_status['full']} convert fully, {by_status['partial']} partly, "
        f"{by_status['none']} not at all, {by_status['error']} stop with an error; "
        f"{parity_pass} pass parity; **{met} meet their target** (status as expected and parity passing); "
        f"{len(internal)} hit an internal error.",
        "",
        "Columns: nodes on NNAPI at feature level 8; the share of MACs on NNAPI at levels 8, 4 and 3; "
        "partitions; reason codes of the nodes left off NNAPI; the parity verdict with the worst absolute "
        "error and its ratio to the allowed error (quantized models: the local verdict's worst operation in "
        "stored units, then the end-to-end drift, cosine and top-1 agreement); conversion time "
        "(`nnapi convert`, seconds).",
        "",
    ]
    for category in sorted({r["category"] for r in rows}):
        group = [r for r in rows if r["category"] == category]
        lines += [f"## {category}", "",
                  "| model | source | expect | status | nodes | MACs L8 | L4 | L3 | parts | reasons | parity | convert s |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in group:
            status = r["status"] + (" ✓" if meets_expectation(r) else "")
            if r.get("error"):
                status += f" ({r['error'][:80]})"
            lines.append(f"| {r['id']} | {r['source']} | {r['expect']} | {status} | {_nodes(r)} | "
                         f"{_pct(r.get('macs_fraction'))} | {_level(r, '4')} | {_level(r, '3')} | "
                         f"{r.get('partitions', '–')} | {_reasons(r)} | {_parity(r)} | "
                         f"{r.get('convert_seconds', '–')} |")
        lines.append("")
    gaps = [r for r in rows if not meets_expectation(r)]
    lines += ["## Gaps to the target", "",
              "Each row is a bug or missing feature for a follow-up issue (shapes, operators, quantized "
              "models, parity), not an expectation.", ""]
    for r in gaps:
        what = r.get("error") or (f"{r['status']} ({_reasons(r)})" if r["status"] != r["expect"] else "")
        if r.get("parity") not in ("pass", "n/a") or (r["status"] != "none" and r.get("parity") == "n/a"):
            what = (what + "; " if what else "") + "parity " + _parity(r)
        lines.append(f"- `{r['id']}` (expect {r['expect']}): {what}")
    return "\n".join(lines) + "\n"

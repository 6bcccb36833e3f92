"""Text, markdown and HTML for lens reports: one lens's report is the coverage report with the lens
(and device) named; several lenses show side by side, per feature level and per node."""
from __future__ import annotations

import html

from .delegate_common import SDK_FOR_LEVEL
from ..coverage_render import LEVELS, WIDTH, _html_table, _md_table, _pct, _table, by_op, reason_lines, wrap


def lens_label(r: dict) -> str:
    if r.get("lens") == "tflite-delegate":
        o = r.get("delegate_options", {})
        on = ""
        if "device" in r:
            d, target = r["device"], r["delegate"].get("target_sdk")
            level = next((lv for lv, sdk in SDK_FOR_LEVEL.items() if sdk == target), None)
            on = f", on device {d['name']} (feature level {d['feature_level']}" + (
                f"; the delegate validates at feature level {level}, target sdk {target}"
                if target != r["delegate"]["android_sdk_version"] and level else "") + ")"
        return (f"lens tflite-delegate (LiteRT NNAPI delegate, android_sdk_version "
                f"{r['delegate']['android_sdk_version']}, max_number_delegated_partitions "
                f"{o.get('max_number_delegated_partitions')}{on})")
    if "device" in r:
        d = r["device"]
        asked = r.get("requested_feature_level")
        return (f"lens converter on device {d['name']} ({d['type']}, feature level {d['feature_level']}"
                + (f": below the {asked} asked for, so the report is at the device's level" if asked else "") + ")")
    return "lens converter" if "lens" in r else ""


def _names(r: dict) -> list:
    return list(r["lenses"])


def _level_rows(r: dict, verbose: bool = False):
    for lv in LEVELS:
        row = [lv]
        for name in _names(r):
            s = r["lenses"][name]["per_feature_level"][lv]
            row += [f"{s['supported_compute_nodes']}/{s['compute_nodes']}",
                    _pct(s["supported_macs_fraction"]) if s["macs"] else "-", str(s["partitions"])]
        yield row


def _reason(n: dict) -> str:
    return f"[{n['reason_code']}] {n['reason']}" if n["reason_code"] else ""


def _node_rows(r: dict, verbose: bool = False):
    lenses = [r["lenses"][k]["nodes"] for k in _names(r)]
    gains = {c["index"]: c["gain"] for c in r.get("comparison", [])}
    constant = {c["index"] for c in r.get("comparison", []) if not c["computes"]}
    for nodes in zip(*lenses):
        n0 = nodes[0]
        row = [str(n0["index"]), f"{n0['op']} v{n0['version']}" + (" (constant)" if n0["index"] in constant else "")]
        row += ["yes" if n["supported"] else "NO" for n in nodes]
        row.append(gains.get(n0["index"], ""))
        row += [_reason(n) for n in nodes]
        yield row


SHORT = {"tflite-delegate": "delegate", "converter": "converter"}   # lens names in column headers


def _headers(r: dict) -> tuple:
    names = [SHORT.get(k, k) for k in _names(r)]
    level = ["FL"] + [f"{k} {what}" for k in names for what in ("computing", "MACs", "parts")]
    nodes = ["#", "op"] + names + ["gain"] + [f"{k} reason" for k in names]
    return level, nodes


def _summary_lines(r: dict) -> list:
    out = []
    for name in _names(r):
        s = r["lenses"][name]["summary"]
        out.append(f"{name}: {s['supported_compute_nodes']}/{s['compute_nodes']} nodes that compute "
                   f"({_pct(s['supported_compute_nodes'] / s['compute_nodes'] if s['compute_nodes'] else 1.0)}), "
                   f"{_pct(s['supported_macs_fraction'])} of MACs, {s['partitions']} partition(s); "
                   f"{s['supported_nodes']}/{s['nodes']} nodes in all")
    if "comparison" not in r:
        return out
    cmp = r["comparison"]
    gained = [c for c in cmp if c["gain"] == "converter_only" and c["computes"]]
    lost = [c for c in cmp if c["gain"] == "delegate_only" and c["computes"]]
    macs = {name: _pct(r["lenses"][name]["summary"]["supported_macs_fraction"]) for name in _names(r)}
    out.append(f"nnapi convert + nnapi export run {len(gained)} node(s) that compute which the delegate leaves on "
               f"the CPU" + (": " + op_counts(gained) if gained else "")
               + f"; MACs on NNAPI: {', '.join(f'{k} {v}' for k, v in macs.items())}")
    if lost:
        out.append(f"the delegate runs {len(lost)} node(s) that compute which the converter leaves on the CPU: "
                   + op_counts(lost))
    weights = [c for c in cmp if not c["computes"] and c["gain"] != "both"]
    if weights:
        out.append(f"counted apart: {len(weights)} node(s) that only prepare constants ({op_counts(weights)}) run in "
                   f"one lens only: the converter folds weights into constants at conversion, the delegate leaves an "
                   f"fp16 weight DEQUANTIZE on the CPU and its delegated consumers read the fp16 constant")
    return out


def op_counts(entries: list, most: int = 4) -> str:
    """'5 x CUSTOM:TransformLandmarks (nodes 600, 604, ...), 3 x ...': entries grouped by op, largest group first."""
    groups = by_op(entries)
    parts = []
    for op, idx in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:most]:
        shown = ", ".join(map(str, idx[:3])) + (", ..." if len(idx) > 3 else "")
        parts.append(f"{len(idx)} x {op} (node{'s' if len(idx) > 1 else ''} {shown})")
    return ", ".join(parts) + (f", and {len(groups) - most} more op type(s)" if len(groups) > most else "")


def render_lenses(r: dict, fmt: str, verbose: bool = False) -> str:
    level_h, node_h = _headers(r)
    title = f"NNAPI coverage through {', '.join(_names(r))}: {r['model']} at feature level {r['feature_level']}"
    if fmt == "markdown":
        return "\n".join([f"# {title}", ""] + [f"- {x}" for x in _summary_lines(r)] + ["", "## Per feature level", ""]
                         + _md_table(level_h, _level_rows(r)) + ["", "## Nodes", ""]
                         + _md_table(node_h, _node_rows(r)))
    if fmt == "html":
        body = (f"<h1>{html.escape(title)}</h1><ul>"
                + "".join(f"<li>{html.escape(x)}</li>" for x in _summary_lines(r)) + "</ul>"
                + "<h2>Per feature level</h2>" + _html_table(level_h, _level_rows(r))
                + "<h2>Nodes</h2>" + _html_table(node_h, _node_rows(r)))
        style = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
                 "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#eee}")
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                f"<style>{style}</style></head><body>{body}</body></html>")
    width = 0 if verbose else WIDTH
    lines = [title, ""] + _summary_lines(r)
    reasons = []
    for name in [] if verbose else _names(r):
        found = reason_lines(r["lenses"][name]["nodes"])
        reasons += ["", f"{name} reasons (each once):"] + wrap(found) if found else []
    return "\n".join((lines if verbose else wrap(lines)) + [""] + _table(level_h, _level_rows(r), width) + [""]
                     + _table(node_h, _node_rows(r), width) + reasons
                     + ([] if verbose else ["", "(--verbose, --format json: every list in full)"]))

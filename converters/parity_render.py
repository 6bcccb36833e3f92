"""Render parity reports: text for terminals, JSON (stable schema), HTML with
per-output error histograms (inline SVG images; no network needed)."""
from __future__ import annotations

import html
import json
from typing import Optional

import numpy as np


def render_text(report) -> str:
    d = report.as_dict()
    lines = [f"{d['model']}: {'PASS' if d['passed'] else 'MISMATCH'} against {d['reference']} "
             f"({d['samples']} sample{'s' if d['samples'] != 1 else ''}"
             f"{' of ' + str(d['steps']) + ' steps' if d.get('steps', 1) > 1 else ''}, feature level {d['feature_level']})"]
    lines += coverage_lines(d)
    t = d.get("tolerance")
    if t:
        lines.append(f"  tolerance: {t['mode']} ({t['why']})" + (
            f"; spread over {', '.join(t['references'])}, factor {t['factor']:g}" if t.get("references") else ""))
    for o in d["outputs"] + d.get("state", []):
        extra = _lsb_text(o)
        what = f"state {o['variable']!r} ({o['name']!r})" if "variable" in o else f"output {o['name']!r}"
        lines.append(f"  {what} {o['dtype']}{o['shape']}: max |diff| {o['max_abs_error']:.3g} "
                     f"(allowed {o['allowed']:.3g}), max rel {o['max_rel_error']:.3g}, mean {o['mean_abs_error']:.3g}, "
                     f"cosine {o['cosine']:.6f}{extra} -> {'ok' if o['passed'] else state_verdict(o, d)}")
        if o.get("tolerance"):
            lines.append(f"    tolerance: {o['tolerance']}")
    for e in d.get("exact") or []:
        others = ", ".join(f"{k} {x:.3g}" for k, x in e.items() if k not in ("name", "ours"))
        lines.append(f"  distance from the float64 model at {e['name']!r}: ours {e.get('ours', float('nan')):.3g}"
                     + (f"; {others}" if others else ""))
    v = d.get("verdict")
    if v and v.get("reference_model"):
        hd = v.get("hybrid_drift") or {}
        lines.append(f"  reference model: {v['reference_model'].split(':')[0]} (NNAPI's arithmetic for the "
                     f"dynamic-range operators); LiteRT's hybrid kernels differ by up to "
                     f"{hd.get('max_abs_error') or 0:.3g} (cosine {hd.get('cosine') or 1:.6f})")
    if v and v["rule"] == "local":
        lines.append(f"  verdict: each operation on its own against {v['local_reference']} ({v['why'].split(':')[0]}): "
                     f"{v.get('summary', '')}")
    if d.get("local"):
        worst = sorted(d["local"], key=lambda e: (e["passed"], -(e["max_units"] if e["max_units"] is not None
                                                                 else e["max_abs_error"])))[:10]
        lines.append(f"  local errors (worst {len(worst)} of {len(d['local'])} operations):")
        for e in worst:
            err = f"{e['max_units']:g} unit(s)" if e["max_units"] is not None else f"{e['max_abs_error']:.3g}"
            lines.append(f"    operation {e['operation_index']} {e['nnapi_op']} -> {e['source_tensor']!r}: {err} "
                         f"(allowed {e['allowed']:.3g}) -> {'ok' if e['passed'] else 'MISMATCH'}")
    fd = d["first_divergence"]
    if d.get("localization"):
        lines.append(f"  layerwise: {d['localization']}")
    if fd:
        lines.append(f"  first divergence: operation {fd['operation_index']} ({fd['nnapi_op']}) writing "
                     f"{fd['source_tensor']!r}: max |diff| {fd['max_abs_error']:.3g} > {fd['allowed']:.3g}")
        for i in fd["inputs"]:
            lines.append(f"    its input {i['source_tensor']!r}: max |diff| {i['max_abs_error']:.3g}")
    if d.get("whole_model_run"):
        lines.append(f"  the framework cannot run the whole model ({d['whole_model_run']}); each "
                     + ("segment it can run" if any(p.get("segment") for p in d.get("partitions") or [])
                        else "partition") + " was extracted and run on its own")
    local = (d.get("verdict") or {}).get("rule") == "local"   # partition outputs are drift then
    for p in d.get("partitions") or []:
        kind = "segment" if p.get("segment") else "partition"
        state = "NOT CHECKED (" + p["unchecked"] + ")" if p.get("unchecked") else "ok" if p["passed"] else \
            "drift (the local verdict decides)" if local else "MISMATCH"
        lines.append(f"  {kind} {p['index']} (nodes {node_ranges(p['nodes'])}): {state}"
                     + (f", fed with {p['fed']}" if p.get("fed") else ""))
        for o in p["outputs"]:
            lines.append(f"    {o['name']!r}: max |diff| {o['max_abs_error']:.3g} (allowed {o['allowed']:.3g}), "
                         f"mean {o['mean_abs_error']:.3g}{_lsb_text(o)}")
    return "\n".join(lines)


def coverage_lines(d: dict) -> list:
    """What was checked and how: the reference actually used, the outputs compared and those not (with why),
    the custom nodes, the local pass's unjudged operations, the end-to-end bound, and why a verdict failed."""
    lines = []
    if d.get("reference_fallback"):
        lines.append(f"  reference: {d['reference_fallback']}")
    compared, unchecked = len(d["outputs"]), d.get("unchecked_outputs") or []
    if d.get("checked_by"):
        lines.append(f"  outputs: {compared} of {len(d['outputs']) + len(unchecked)} compared"
                     f" ({d['checked_by']})" if not d.get("partitions") or d["outputs"] else
                     f"  outputs: {d['checked_by']}")
    for u in unchecked:
        lines.append(f"  output {u['name']!r} NOT CHECKED: {u['why']}")
    for c in d.get("custom_nodes") or []:
        how = (f"{c['max_abs_error']:.3g} (allowed {c['allowed']:.3g}) -> {'ok' if c['passed'] else 'MISMATCH'}, "
               f"{c['checked_by']}" if c.get("checked_by") else f"not checked on its own: {c['why']}")
        lines.append(f"  custom node {c['node_index']} {c['op']} -> {c['tensor']!r}: {how}")
    if d.get("unjudged") is not None:
        harmless = sum(u["harmless"] for u in d["unjudged"])
        lines.append(f"  local pass: {len(d.get('local') or [])} operation(s) judged, {len(d['unjudged'])} not "
                     f"({harmless} harmless: only a lowering's temporaries)")
        for u in [u for u in d["unjudged"] if not u["harmless"]][:5]:
            lines.append(f"    operation {u['operation_index']} {u['nnapi_op']} NOT JUDGED: {u['why']}")
    e = d.get("end_to_end")
    if e:
        size = (f"{e['max_units']:g} unit(s) (allowed {e['allowed_units']})" if e.get("max_units") is not None
                else "no output has a quantization unit")
        lines.append(f"  end to end against {e['reference']}: {size} -> {'ok' if e['passed'] else 'MISMATCH'}")
    spread = ((d.get("verdict") or {}).get("drift") or {}).get("kernel_spread")
    if spread:
        lines.append(f"  drift from {d['reference']}: {spread['drift']:g}, the framework's own spread between "
                     f"{', '.join(spread['kernel_sets'])}: {spread['spread']:g} (in units of the outputs) -> "
                     + ("within it" if spread["within_spread"] else "BEYOND it"))
    for f in (d.get("verdict") or {}).get("failures") or []:
        lines.append(f"  fails: {f}")
    return lines


def node_ranges(nodes: list) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    parts, start = [], None
    for k, n in enumerate(nodes):
        if start is None:
            start = n
        if k + 1 == len(nodes) or nodes[k + 1] != n + 1:
            parts.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ", ".join(parts)


def state_verdict(o: dict, d: dict) -> str:
    """A state value beyond the tolerance is reported, not failed (see ParityReport.state); under the local
    verdict an output beyond its end-to-end tolerance is drift, reported beside the verdict."""
    if "variable" in o:
        return "beyond the output tolerance (state: reported, not gating)"
    if (d.get("verdict") or {}).get("rule") == "local":
        return "drift (end-to-end; the local verdict decides)"
    return "MISMATCH"


def _lsb_text(o: dict) -> str:
    h = o["lsb_histogram"]
    return "" if h is None else f", stored-unit diffs 0:{h['0']} 1:{h['1']} 2:{h['2']} >2:{h['>2']}"


def render_json(report) -> str:
    return json.dumps(report.as_dict(), indent=1)


def _histogram_svg(diffs) -> str:
    """A bar chart of |diff| counts over decades (0, <1e-7, ..., >=1e-1)."""
    if diffs is None or diffs.size == 0:
        return "<p>(no elements)</p>"
    edges = [0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, np.inf]
    labels = ["0", "<1e-7", "<1e-6", "<1e-5", "<1e-4", "<1e-3", "<1e-2", "<1e-1", ">=1e-1"]
    counts = [int((diffs == 0).sum())] + [int(((diffs > lo) & (diffs <= hi) if lo == 0 else
                                                (diffs >= lo) & (diffs < hi)).sum())
                                         for lo, hi in zip(edges[:-1], edges[1:])]
    top = max(counts) or 1
    bars = []
    for k, (lab, c) in enumerate(zip(labels, counts)):
        h = int(120 * c / top)
        x = 10 + k * 52
        bars.append(f'<rect x="{x}" y="{140 - h}" width="40" height="{h}" fill="#1565c0"/>'
                    f'<text x="{x}" y="155" font-size="10">{lab}</text>'
                    f'<text x="{x}" y="{135 - h}" font-size="10">{c}</text>')
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{20 + 52 * len(labels)}" height="165">{"".join(bars)}</svg>'


def _layers_svg(layers: list, first: Optional[dict]) -> str:
    """Error / allowed of every operation along the model (log scale), the tolerance line at 1, the first
    divergence marked; each point links to its row in the layer table."""
    if not layers:
        return ""
    width, height, left, top, bottom = 900, 260, 50, 15, 40
    lo, hi = -6.0, 2.0            # log10(error / allowed) shown from 1e-6 to 100
    n = len(layers)

    def xy(k: int, e: dict) -> tuple:
        ratio = e["max_abs_error"] / e["allowed"] if e["allowed"] else (0.0 if e["max_abs_error"] == 0 else 1e3)
        value = min(hi, max(lo, np.log10(ratio))) if ratio > 0 else lo
        x = left + (width - left - 10) * (k + 0.5) / n
        return x, top + (height - top - bottom) * (hi - value) / (hi - lo)

    y1 = xy(0, {"max_abs_error": 1.0, "allowed": 1.0})[1]
    parts = [f'<line x1="{left}" y1="{y1:.1f}" x2="{width - 10}" y2="{y1:.1f}" stroke="#c62828" '
             f'stroke-dasharray="6 4"/><text x="{width - 175}" y="{y1 - 4:.1f}" font-size="11" fill="#c62828">'
             f'tolerance (error = allowed)</text>']
    for decade in range(int(lo), int(hi) + 1, 2):
        y = top + (height - top - bottom) * (hi - decade) / (hi - lo)
        parts.append(f'<text x="4" y="{y + 4:.1f}" font-size="10">1e{decade:+d}</text>'
                     f'<line x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="#eee"/>')
    points = [xy(k, e) for k, e in enumerate(layers)]
    parts.append('<polyline fill="none" stroke="#1565c0" stroke-width="1.5" points="'
                 + " ".join(f"{x:.1f},{y:.1f}" for x, y in points) + '"/>')
    for (x, y), e in zip(points, layers):
        is_first = first is not None and e["operation_index"] == first["operation_index"]
        colour = "#c62828" if not e["passed"] else "#1565c0"
        parts.append(f'<a href="#op-{e["operation_index"]}"><circle cx="{x:.1f}" cy="{y:.1f}" '
                     f'r="{6 if is_first else 3}" fill="{colour}"><title>operation {e["operation_index"]} '
                     f'{html.escape(e["nnapi_op"])} -> {html.escape(e["source_tensor"])}: {e["max_abs_error"]:.3g} '
                     f'(allowed {e["allowed"]:.3g})</title></circle></a>')
        if is_first:
            parts.append(f'<text x="{x + 8:.1f}" y="{y - 8:.1f}" font-size="11" fill="#c62828">first divergence: '
                         f'operation {e["operation_index"]}</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="11">operations in execution order '
                 f'(1 to {n}); height: max |diff| / allowed</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="layers" width="{width}" height="{height}">'
            + "".join(parts) + "</svg>")


def _layer_table(layers: list) -> str:
    rows = "".join(f'<tr id="op-{e["operation_index"]}"><td>{e["operation_index"]}</td><td>{html.escape(e["nnapi_op"])}</td>'
                   f'<td>{html.escape(e["source_tensor"])}</td><td>{e["max_abs_error"]:.3g}</td><td>{e["allowed"]:.3g}</td>'
                   f'<td>{"ok" if e["passed"] else "MISMATCH"}</td></tr>' for e in layers)
    return ("<table><tr><th>operation</th><th>NNAPI op</th><th>source tensor</th><th>max |diff|</th>"
            f"<th>allowed</th><th></th></tr>{rows}</table>")


def render_html(report) -> str:
    d = report.as_dict()
    esc = html.escape
    parts = [f"<h1>Parity: {esc(d['model'])}</h1>",
             f"<p>{'PASS' if d['passed'] else 'MISMATCH'} against {esc(d['reference'])}, {d['samples']} sample(s) of {d.get('steps', 1)} step(s)</p>"]
    for o, raw in zip(d["outputs"], report.outputs):
        parts.append(f"<h2>{esc(o['name'])} {esc(o['dtype'])}{esc(str(o['shape']))}: "
                     f"{'ok' if o['passed'] else 'MISMATCH'}</h2>"
                     f"<p>max |diff| {o['max_abs_error']:.3g} (allowed {o['allowed']:.3g}), cosine {o['cosine']:.6f}</p>"
                     f"{_histogram_svg(raw.diffs)}")
    if d["first_divergence"]:
        fd = d["first_divergence"]
        parts.append(f"<h2>First divergence</h2><p>operation {fd['operation_index']} ({esc(fd['nnapi_op'])}) "
                     f"writing {esc(fd['source_tensor'])}: max |diff| {fd['max_abs_error']:.3g}</p>")
    layers = d.get("local") or d.get("layers")
    if layers:
        what = "each operation on its own (--local)" if d.get("local") else "each operation in the whole run"
        parts.append(f"<h2>Error along the model: {what}</h2>" + _layers_svg(layers, d["first_divergence"])
                     + _layer_table(layers))
    for p in d.get("partitions") or []:  # --partial: the whole model has no outputs of its own to show
        rows = "".join(f"<li>{esc(o['name'])} {esc(o['dtype'])}{esc(str(o['shape']))}: max |diff| "
                       f"{o['max_abs_error']:.3g} (allowed {o['allowed']:.3g}), mean {o['mean_abs_error']:.3g}, "
                       f"cosine {o['cosine']:.6f} &rarr; {'ok' if o['passed'] else 'MISMATCH'}</li>"
                       for o in p["outputs"])
        verdict = "NOT CHECKED: " + p["unchecked"] if p.get("unchecked") else "ok" if p["passed"] else "MISMATCH"
        parts.append(f"<h2>partition {p['index']} (nodes {esc(str(p['nodes']))}): "
                     f"{esc(verdict)}</h2><ul>{rows}</ul>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Parity</title><style>"
            "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;max-width:100%}"
            # long tensor names wrap anywhere, so they never push the error columns off the page
            "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px;overflow-wrap:anywhere}"
            "h1,h2,li,p{overflow-wrap:anywhere}</style></head><body>" + "".join(parts) + "</body></html>")


def render(report, fmt: str) -> str:
    return {"text": render_text, "json": render_json, "html": render_html}[fmt](report)

"""Render parity reports: text for terminals, JSON (stable schema), HTML with
per-output error histograms (inline SVG images; no network needed)."""
from __future__ import annotations

import html
import json

import numpy as np


def render_text(report) -> str:
    d = report.as_dict()
    lines = [f"{d['model']}: {'PASS' if d['passed'] else 'MISMATCH'} against {d['reference']} "
             f"({d['samples']} sample{'s' if d['samples'] != 1 else ''}, feature level {d['feature_level']})"]
    for o in d["outputs"]:
        extra = _lsb_text(o)
        lines.append(f"  output {o['name']!r} {o['dtype']}{o['shape']}: max |diff| {o['max_abs_error']:.3g} "
                     f"(allowed {o['allowed']:.3g}), max rel {o['max_rel_error']:.3g}, mean {o['mean_abs_error']:.3g}, "
                     f"cosine {o['cosine']:.6f}{extra} -> {'ok' if o['passed'] else 'MISMATCH'}")
        if o.get("tolerance"):
            lines.append(f"    tolerance: {o['tolerance']}")
    fd = d["first_divergence"]
    if fd:
        lines.append(f"  first divergence: operation {fd['operation_index']} ({fd['nnapi_op']}) writing "
                     f"{fd['source_tensor']!r}: max |diff| {fd['max_abs_error']:.3g} > {fd['allowed']:.3g}")
        for i in fd["inputs"]:
            lines.append(f"    its input {i['source_tensor']!r}: max |diff| {i['max_abs_error']:.3g}")
    for p in d.get("partitions") or []:
        lines.append(f"  partition {p['index']} (nodes {p['nodes']}): {'ok' if p['passed'] else 'MISMATCH'}")
        for o in p["outputs"]:
            lines.append(f"    {o['name']!r}: max |diff| {o['max_abs_error']:.3g} (allowed {o['allowed']:.3g}), "
                         f"mean {o['mean_abs_error']:.3g}{_lsb_text(o)}")
    return "\n".join(lines)


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


def render_html(report) -> str:
    d = report.as_dict()
    esc = html.escape
    parts = [f"<h1>Parity: {esc(d['model'])}</h1>",
             f"<p>{'PASS' if d['passed'] else 'MISMATCH'} against {esc(d['reference'])}, {d['samples']} sample(s)</p>"]
    for o, raw in zip(d["outputs"], report.outputs):
        parts.append(f"<h2>{esc(o['name'])} {esc(o['dtype'])}{esc(str(o['shape']))}: "
                     f"{'ok' if o['passed'] else 'MISMATCH'}</h2>"
                     f"<p>max |diff| {o['max_abs_error']:.3g} (allowed {o['allowed']:.3g}), cosine {o['cosine']:.6f}</p>"
                     f"{_histogram_svg(raw.diffs)}")
    if d["first_divergence"]:
        fd = d["first_divergence"]
        parts.append(f"<h2>First divergence</h2><p>operation {fd['operation_index']} ({esc(fd['nnapi_op'])}) "
                     f"writing {esc(fd['source_tensor'])}: max |diff| {fd['max_abs_error']:.3g}</p>")
    for p in d.get("partitions") or []:  # --partial: the whole model has no outputs of its own to show
        rows = "".join(f"<li>{esc(o['name'])} {esc(o['dtype'])}{esc(str(o['shape']))}: max |diff| "
                       f"{o['max_abs_error']:.3g} (allowed {o['allowed']:.3g}), mean {o['mean_abs_error']:.3g}, "
                       f"cosine {o['cosine']:.6f} &rarr; {'ok' if o['passed'] else 'MISMATCH'}</li>"
                       for o in p["outputs"])
        parts.append(f"<h2>partition {p['index']} (nodes {esc(str(p['nodes']))}): "
                     f"{'ok' if p['passed'] else 'MISMATCH'}</h2><ul>{rows}</ul>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Parity</title><style>"
            "body{font-family:sans-serif;margin:2em}</style></head><body>" + "".join(parts) + "</body></html>")


def render(report, fmt: str) -> str:
    return {"text": render_text, "json": render_json, "html": render_html}[fmt](report)

"""Render coverage reports as text, markdown or a self-contained HTML page.

Every string from a model file is escaped before it reaches HTML."""
from __future__ import annotations

import html
import json

from .coverage_graph import COLORS, render_graph
from .pins import sentences

LEVELS = [str(k) for k in range(1, 9)]


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def _level_rows(r: dict):
    for lv in LEVELS:
        s = r["per_feature_level"][lv]
        yield (lv, f"{s['supported_nodes']}/{s['nodes']}", _pct(s["supported_fraction"]),
               _pct(s["supported_macs_fraction"]) if s["macs"] else "-", str(s["partitions"]),
               ", ".join(f"{b['index']}:{b['op']}" for b in s["blocking_nodes"][:6])
               + (" ..." if len(s["blocking_nodes"]) > 6 else ""))


def absorbed_text(n: dict) -> str:
    """'absorbed into node 12 (fused activation)' for a node that emits no operation of its own, else ''."""
    a = n.get("absorbed")
    if not a:
        return ""
    return f"absorbed{'' if a['into'] is None else ' into node ' + str(a['into'])} ({a['how']})"


def _node_rows(r: dict):
    for n in r["nodes"]:
        yield (str(n["index"]), f"{n['op']} v{n['version']}", "yes" if n["supported"] else "NO",
               " ".join(n["nnapi_ops"]) or absorbed_text(n) or "-", str(n["min_feature_level"] or "-"),
               f"[{n['reason_code']}] {n['reason']}" if n["reason_code"] else "")


def _table(headers, rows) -> list[str]:
    rows = [tuple(map(str, r)) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def render_text(r: dict) -> str:
    if "error" in r:
        return f"{r['model']}: ERROR {r['error']}"
    s = r["summary"]
    from .lenses.lens_render import lens_label
    out = [f"{r['model']} ({r['format']}{', ' + lens_label(r) if 'lens' in r else ''}): "
           f"{s['supported_nodes']}/{s['nodes']} nodes "
           f"({_pct(s['supported_fraction'])}), {_pct(s['supported_macs_fraction'])} of {s['macs']:,} MACs on NNAPI "
           f"at feature level {r['feature_level']}, {s['partitions']} partition(s)"]
    if s.get("note"):
        out.append(f"note: {s['note']}")
    out += sentences(s) + [""]
    out += _table(["FL", "nodes", "fraction", "MACs", "partitions", "blocking nodes"], _level_rows(r))
    out += ["", f"nodes at feature level {r['feature_level']}:"]
    out += _table(["#", "op", "NNAPI", "becomes", "min FL", "reason"], _node_rows(r))
    out += ["", "partitions:"]
    for k, p in enumerate(r["partitions"]):
        out.append(f"  partition {k}: nodes {p['nodes']}, inputs {p['inputs']}, outputs {p['outputs']}")
    if r["fallback_nodes"]:
        out.append(f"  CPU fallback nodes: {r['fallback_nodes']}")
    return "\n".join(out)


def _md_table(headers, rows) -> list[str]:
    esc = lambda c: str(c).replace("|", "\\|")  # noqa: E731
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + \
        ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]


def render_markdown(r: dict) -> str:
    if "error" in r:
        return f"**{r['model']}**: error: {r['error']}"
    s = r["summary"]
    out = [f"# NNAPI coverage: {r['model']}", "",
           f"{s['supported_nodes']}/{s['nodes']} nodes ({_pct(s['supported_fraction'])}), "
           f"{_pct(s['supported_macs_fraction'])} of MACs, {s['partitions']} partition(s) at feature level "
           f"{r['feature_level']}.", ""]
    if s.get("note"):
        out += [f"Note: {s['note']}", ""]
    out += [f"- {line}" for line in sentences(s)] + ["", "## Per feature level", ""]
    out += _md_table(["FL", "nodes", "fraction", "MACs", "partitions", "blocking nodes"], _level_rows(r))
    out += ["", "## Nodes", ""]
    out += _md_table(["#", "op", "NNAPI", "becomes", "min FL", "reason"], _node_rows(r))
    out += ["", "## Partitions", ""]
    out += [f"- partition {k}: nodes {p['nodes']}; inputs {p['inputs']}; outputs {p['outputs']}"
            for k, p in enumerate(r["partitions"])]
    if r["fallback_nodes"]:
        out.append(f"- CPU fallback nodes: {r['fallback_nodes']}")
    return "\n".join(out)


def _html_table(headers, rows) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(r: dict) -> str:
    title = html.escape(f"NNAPI coverage: {r['model']}")
    if "error" in r:
        body = f"<h1>{title}</h1><p class='err'>{html.escape(r['error'])}</p>"
    else:
        s = r["summary"]
        legend = "".join(f'<span class="chip" style="background:{c}">{k}</span>' for k, c in COLORS.items())
        body = (f"<h1>{title}</h1><p>{s['supported_nodes']}/{s['nodes']} nodes "
                f"({_pct(s['supported_fraction'])}), {_pct(s['supported_macs_fraction'])} of MACs, "
                f"{s['partitions']} partition(s) at feature level {r['feature_level']}.</p>"
                + "".join(f"<p>{html.escape(line)}</p>" for line in sentences(s)) +
                f"<h2>Graph</h2><p>{legend} <span class='chip part'>partition</span></p>{render_graph(r)}"
                f"<h2>Per feature level</h2>"
                + _html_table(["FL", "nodes", "fraction", "MACs", "partitions", "blocking nodes"], _level_rows(r))
                + "<h2>Nodes</h2>" + _html_table(["#", "op", "NNAPI", "becomes", "min FL", "reason"], _node_rows(r))
                + "<h2>Partitions</h2>"
                + _html_table(["partition", "nodes", "inputs", "outputs"],
                              [(k, p["nodes"], ", ".join(p["inputs"]), ", ".join(p["outputs"]))
                               for k, p in enumerate(r["partitions"])])
                + f"<p>CPU fallback nodes: {html.escape(str(r['fallback_nodes']))}</p>")
    style = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}"
             "th{background:#eee}.chip{color:white;padding:2px 8px;border-radius:4px;margin-right:6px}"
             ".part{color:#1565c0;border:2px dashed #1565c0;background:none}.err{color:#c62828}"
             "figcaption{font-size:12px;color:#555}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{style}</style></head><body>{body}</body></html>")


def render_batch(reports: list, fmt: str) -> str:
    rows = []
    for r in reports:
        if "error" in r:
            rows.append((r["model"], "ERROR", "", "", "", r["error"]))
        else:
            s = r["summary"]
            rows.append((r["model"], f"{s['supported_nodes']}/{s['nodes']}", _pct(s["supported_fraction"]),
                         _pct(s["supported_macs_fraction"]), str(s["partitions"]), s.get("note", "")))
    headers = ["model", "nodes", "fraction", "MACs", "partitions", "error / note"]
    if fmt == "json":
        return json.dumps({"report": "nnapi-coverage-batch/1", "models": reports}, indent=1)
    if fmt == "markdown":
        return "\n".join(["# NNAPI coverage", ""] + _md_table(headers, rows))
    if fmt == "html":
        return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>NNAPI coverage</title></head><body>"
                "<h1>NNAPI coverage</h1>" + _html_table(headers, rows) + "</body></html>")
    return "\n".join(_table(headers, rows))


def render(r: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(r, indent=1)
    if "lenses" in r:  # several lenses side by side (converters/lenses/)
        from .lenses.lens_render import render_lenses
        return render_lenses(r, fmt)
    return {"text": render_text, "markdown": render_markdown, "html": render_html}[fmt](r)

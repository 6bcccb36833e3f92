"""Render coverage reports as text, markdown or a self-contained HTML page.

Every string from a model file is escaped before it reaches HTML."""
from __future__ import annotations

import html
import json
import textwrap

from .coverage_graph import COLORS, render_graph
from .pins import sentences

LEVELS = [str(k) for k in range(1, 9)]
WIDTH = 120        # columns the text report fits by default (--verbose: every list in full)
OPS_WIDTH = 40     # characters of a node's NNAPI operations before they are counted instead of listed


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def _level_rows(r: dict, verbose: bool = False):
    for lv in LEVELS:
        s = r["per_feature_level"][lv]
        yield (lv, f"{s['supported_nodes']}/{s['nodes']}", _pct(s["supported_fraction"]),
               _pct(s["supported_macs_fraction"]) if s["macs"] else "-", str(s["partitions"]),
               ", ".join(f"{b['index']}:{b['op']}" for b in s["blocking_nodes"]) if verbose
               else blocking_text(s["blocking_nodes"]))


def by_op(entries: list) -> dict:
    """{op: [node indexes]} of entries with "op" and "index", in the order the entries give them."""
    groups: dict = {}
    for e in entries:
        groups.setdefault(e["op"], []).append(e["index"])
    return groups


def blocking_text(entries: list, most: int = 4) -> str:
    """'CUSTOM:TransformLandmarks x5 (701, 702, ...), CONV_2D x2 (3, 9)': blocking nodes by op, in the order the
    list gives (those that block computation first), each op once with its count."""
    groups = by_op(entries)
    parts = [f"{op}{f' x{len(idx)}' if len(idx) > 1 else ''} ({', '.join(map(str, idx[:2]))}"
             f"{', ...' if len(idx) > 2 else ''})" for op, idx in list(groups.items())[:most]]
    return ", ".join(parts) + (f", +{len(groups) - most} more op(s)" if len(groups) > most else "")


def ops_text(ops: list, verbose: bool = False) -> str:
    """A node's NNAPI operations: listed, or when long '67 ops: MUL x21, ADD x12, SLICE x8, +9 types'."""
    listed = " ".join(ops)
    if verbose or len(listed) <= OPS_WIDTH:
        return listed
    counts: dict = {}
    for op in ops:
        counts[op] = counts.get(op, 0) + 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])
    text, shown = f"{len(ops)} ops:", 0
    for op, n in top:
        piece = f" {op}{f' x{n}' if n > 1 else ''},"
        if len(text) + len(piece) > OPS_WIDTH - 10 and shown:
            break
        text, shown = text + piece, shown + 1
    return text.rstrip(",") + (f", +{len(top) - shown} types" if shown < len(top) else "")


def ranges(indexes: list, most: int = 0) -> str:
    """'0-190, 198-711' for a sorted list of node indexes; with `most`, at most that many runs, then '... (N nodes)'."""
    out, start, prev = [], None, None
    for k in list(indexes) + [None]:
        if start is not None and (k is None or k != prev + 1):
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if start is None and k is not None:
            start = k
        prev = k
    if most and len(out) > most:
        return ", ".join(out[:most]) + f", ... ({len(indexes)} nodes)"
    return ", ".join(out)


def names_text(names: list, most: int = 3) -> str:
    """"'a', 'b', 'c' and 4 more": a boundary's tensor names, the first few."""
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def wrap(lines: list, width: int = WIDTH, long_words: bool = True) -> list:
    """Prose lines folded to `width` columns, continuation lines indented two more than the line; long_words=False
    keeps a word longer than a line whole."""
    out = []
    for line in lines:
        lead = " " * (len(line) - len(line.lstrip()))
        out += textwrap.wrap(line, width, initial_indent="", subsequent_indent=lead + "  ",
                             break_long_words=long_words, break_on_hyphens=False) or [""]
    return out


def reason_lines(nodes: list) -> list:
    """Each distinct reason once, with the nodes that give it: 'nodes 192-194 (CUSTOM:X): [code] why'."""
    by_reason: dict = {}
    for n in nodes:
        if n["reason_code"]:
            by_reason.setdefault(f"[{n['reason_code']}] {n['reason']}", []).append(n)
    out = []
    for why, ns in by_reason.items():
        ops = ", ".join(dict.fromkeys(n["op"] for n in ns))
        out.append(f"  node{'s' if len(ns) > 1 else ''} {ranges([n['index'] for n in ns], most=8)} ({ops}): {why}")
    return out


def absorbed_text(n: dict) -> str:
    """'absorbed into node 12 (fused activation)' for a node that emits no operation of its own, else ''."""
    a = n.get("absorbed")
    if not a:
        return ""
    return f"absorbed{'' if a['into'] is None else ' into node ' + str(a['into'])} ({a['how']})"


def _node_rows(r: dict, verbose: bool = False):
    for n in r["nodes"]:
        inside = f" (+{n['nodes_inside']} nodes in its bodies)" if n.get("nodes_inside") else ""
        yield (str(n["index"]), f"{n['op']} v{n['version']}", "yes" if n["supported"] else "NO",
               (ops_text(n["nnapi_ops"], verbose) + inside).strip() or absorbed_text(n) or "-",
               str(n["min_feature_level"] or "-"),
               f"[{n['reason_code']}] {n['reason']}" if n["reason_code"] else "")


def _table(headers, rows, width: int = 0) -> list[str]:
    """An aligned text table; with `width`, the widest columns are cut (ending '...') until a row fits it."""
    rows = [tuple(map(str, r)) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    while width and sum(widths) + 2 * (len(widths) - 1) > width:
        k = max(range(len(widths)), key=lambda i: widths[i])   # the widest gives one column at a time
        if widths[k] <= max(len(headers[k]), 12):
            break  # nothing left worth cutting
        widths[k] -= 1
    cut = lambda c, w: c if len(c) <= w else c[:w - 3] + "..."  # noqa: E731
    line = lambda cells: "  ".join(cut(c, w).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def render_text(r: dict, verbose: bool = False) -> str:
    """The text report, fitting WIDTH columns (long lists counted, long cells cut); verbose: every list in full."""
    if "error" in r:
        return f"{r['model']}: ERROR {r['error']}"
    s = r["summary"]
    from .lenses.lens_render import lens_label
    width = 0 if verbose else WIDTH
    head = [f"{r['model']} ({r['format']}{', ' + lens_label(r) if 'lens' in r else ''}): "
            f"{s['supported_nodes']}/{s['nodes']} nodes "
            f"({_pct(s['supported_fraction'])}), {_pct(s['supported_macs_fraction'])} of {s['macs']:,} MACs on NNAPI "
            f"at feature level {r['feature_level']}, {s['partitions']} partition(s)"]
    if s.get("note"):
        head.append(f"note: {s['note']}")
    head += sentences(s)
    out = (head if verbose else wrap(head)) + [""]
    out += _table(["FL", "nodes", "fraction", "MACs", "partitions", "blocking nodes"], _level_rows(r, verbose), width)
    out += ["", f"nodes at feature level {r['feature_level']}:"]
    out += _table(["#", "op", "NNAPI", "becomes", "min FL", "reason"], _node_rows(r, verbose), width)
    if not verbose and any(n["reason_code"] for n in r["nodes"]):
        out += ["", "reasons (each once):"] + wrap(reason_lines(r["nodes"]))
    out += ["", "partitions:"]
    tail = []
    for k, p in enumerate(r["partitions"]):
        if verbose:
            tail.append(f"  partition {k}: nodes {p['nodes']}, inputs {p['inputs']}, outputs {p['outputs']}")
        else:
            tail.append(f"  partition {k}: {len(p['nodes'])} node(s) ({ranges(p['nodes'], most=8)}); "
                        f"{len(p['inputs'])} input(s) {names_text(p['inputs'])}; "
                        f"{len(p['outputs'])} output(s) {names_text(p['outputs'])}")
    if r["fallback_nodes"]:
        tail.append(f"  CPU fallback nodes: {r['fallback_nodes'] if verbose else ranges(r['fallback_nodes'], most=8)}")
    out += tail if verbose else wrap(tail)
    if not verbose:
        out.append("(--verbose, --format json: every list in full)")
    return "\n".join(out)


def _md_table(headers, rows) -> list[str]:
    esc = lambda c: str(c).replace("|", "\\|")  # noqa: E731
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + \
        ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]


def render_markdown(r: dict, verbose: bool = False) -> str:
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
    out += _md_table(["FL", "nodes", "fraction", "MACs", "partitions", "blocking nodes"], _level_rows(r, verbose))
    out += ["", "## Nodes", ""]
    out += _md_table(["#", "op", "NNAPI", "becomes", "min FL", "reason"], _node_rows(r, verbose))
    out += ["", "## Partitions", ""]
    out += [f"- partition {k}: nodes {p['nodes']}; inputs {p['inputs']}; outputs {p['outputs']}"
            for k, p in enumerate(r["partitions"])]
    if r["fallback_nodes"]:
        out.append(f"- CPU fallback nodes: {r['fallback_nodes']}")
    return "\n".join(out)


def _html_table(headers, rows, row_ids=None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    ids = iter(row_ids or [])
    body = "".join((f"<tr id='{next(ids)}'>" if row_ids else "<tr>")
                   + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def attention_html(r: dict) -> str:
    """What needs attention, first on the page: the nodes left off NNAPI, grouped by reason, each a link that shows
    it in the graph (and, without script, goes to its row of the node table)."""
    off = [n for n in r["nodes"] if not n["supported"]]
    if not off:
        return "<section id='attention' class='ok'><h2>Every node runs on NNAPI</h2></section>"
    groups: dict = {}
    for n in off:
        groups.setdefault((n["reason_code"], n["reason"] or ""), []).append(n)
    items = "".join(
        f"<li><b>[{html.escape(code or '')}]</b> {html.escape(why)}<br>"
        + " ".join(f"<a class='goto' href='#node-{n['index']}' data-node='{n['index']}'>"
                   f"{n['index']}: {html.escape(n['op'])}</a>" for n in ns) + "</li>"
        for (code, why), ns in groups.items())
    return (f"<section id='attention'><h2>Needs attention: {len(off)} node(s) stay on the CPU</h2>"
            f"<p>Click a node to show it in the graph.</p><ul>{items}</ul></section>")


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
                + "".join(f"<p>{html.escape(line)}</p>" for line in sentences(s)) + attention_html(r) +
                "<h2>Graph</h2><p class='tools'><input id='search' type='search' size='40' "
                "placeholder='find a node: index, op, name or reason (Enter: next)' aria-label='find a node'> "
                f"<span id='hits'></span></p><p>{legend} <span class='chip part'>partition</span></p>{render_graph(r)}"
                f"<h2>Per feature level</h2>"
                + _html_table(["FL", "nodes", "fraction", "MACs", "partitions", "blocking nodes"], _level_rows(r))
                + "<h2>Nodes</h2>"
                + _html_table(["#", "op", "NNAPI", "becomes", "min FL", "reason"], _node_rows(r),
                              row_ids=[f"node-{n['index']}" for n in r["nodes"]])
                + "<h2>Partitions</h2>"
                + _html_table(["partition", "nodes", "inputs", "outputs"],
                              [(k, ranges(p["nodes"]), ", ".join(p["inputs"]), ", ".join(p["outputs"]))
                               for k, p in enumerate(r["partitions"])])
                + f"<p>CPU fallback nodes: {html.escape(ranges(r['fallback_nodes']) or 'none')}</p>")
    style = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left;overflow-wrap:anywhere}"
             "th{background:#eee}.chip{color:white;padding:2px 8px;border-radius:4px;margin-right:6px}"
             ".part{color:#1565c0;border:2px dashed #1565c0;background:none}.err{color:#c62828}"
             "figcaption{font-size:12px;color:#555}#attention{border-left:4px solid #c62828;padding:0 1em;"
             "background:#fff8f8}#attention.ok{border-color:#2e7d32;background:#f4fbf4}#attention li{margin:.4em 0}#attention a{margin-right:.8em}"
             "tr:target{background:#fff59d}.tools input{font-size:14px;padding:3px 6px}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{style}</style></head><body>{body}</body></html>")


def render_batch(reports: list, fmt: str, verbose: bool = False) -> str:
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
    return "\n".join(_table(headers, rows, 0 if verbose else WIDTH))


def render(r: dict, fmt: str, verbose: bool = False) -> str:
    if fmt == "json":
        return json.dumps(r, indent=1)
    if "lenses" in r:  # several lenses side by side (converters/lenses/)
        from .lenses.lens_render import render_lenses
        return render_lenses(r, fmt, verbose)
    if fmt == "html":
        return render_html(r)
    return {"text": render_text, "markdown": render_markdown}[fmt](r, verbose)

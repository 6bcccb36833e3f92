"""Layered (Sugiyama) layout of a model's node graph for the HTML coverage report.

The layout comes from grandalf (pure Python, a core dependency), else from Graphviz's `dot` where it is
installed, else from a plain fallback that says so: layers by longest path and one barycentre ordering pass.
Each connected component is laid out on its own and the components are placed side by side.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Optional

X_GAP, Y_GAP = 24, 34   # between boxes of one layer, between layers (pixels)


@dataclass
class Layout:
    engine: str                                   # what computed it, said in the page
    positions: dict = field(default_factory=dict)  # key -> (x, y) of the box centre
    paths: list = field(default_factory=list)      # (source key, target key, [(x, y), ...])
    width: float = 0.0
    height: float = 0.0
    seconds: float = 0.0


def layered_layout(keys: list, sizes: dict, edges: list, engine: Optional[str] = None) -> Layout:
    """Boxes `keys` of `sizes[key] = (w, h)`, directed `edges` (a, b) (a above b). `engine`: "grandalf",
    "dot" or "fallback" to force one (tests); default the first available."""
    start = time.perf_counter()
    edges = [(a, b) for a, b in dict.fromkeys(edges) if a != b and a in sizes and b in sizes]
    order = [engine] if engine else ["grandalf", "dot", "fallback"]
    for name in order:
        fn = {"grandalf": _grandalf, "dot": _dot, "fallback": _fallback}[name]
        layout = fn(keys, sizes, edges)
        if layout is not None:
            break
    else:
        raise RuntimeError(f"layout engine {engine!r} is not available")
    _normalise(layout, sizes)
    layout.seconds = time.perf_counter() - start
    return layout


def _components(keys, edges) -> list:
    """The weakly connected components, each in the order of `keys` (execution order)."""
    parent = {k: k for k in keys}

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k
    for a, b in edges:
        parent[find(a)] = find(b)
    groups: dict = {}
    for k in keys:
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


def _side_by_side(parts, sizes) -> Layout:
    """Place per-component layouts (positions, paths) left to right."""
    out, x0 = Layout(""), 0.0
    for positions, paths in parts:
        lo = min(x - sizes[k][0] / 2 for k, (x, _) in positions.items())
        hi = max(x + sizes[k][0] / 2 for k, (x, _) in positions.items())
        shift = x0 - lo
        out.positions.update({k: (x + shift, y) for k, (x, y) in positions.items()})
        out.paths += [(a, b, [(x + shift, y) for x, y in pts]) for a, b, pts in paths]
        x0 += hi - lo + 3 * X_GAP
    return out


def _normalise(layout: Layout, sizes) -> None:
    """Shift to a margin of 10 pixels and measure the drawing (boxes and routed edges)."""
    if not layout.positions:
        return
    corners = [(x - sizes[k][0] / 2, y - sizes[k][1] / 2, x + sizes[k][0] / 2, y + sizes[k][1] / 2)
               for k, (x, y) in layout.positions.items()]
    corners += [(x, y, x, y) for _, _, pts in layout.paths for x, y in pts]
    dx, dy = 10 - min(c[0] for c in corners), 10 - min(c[1] for c in corners)
    layout.positions = {k: (x + dx, y + dy) for k, (x, y) in layout.positions.items()}
    layout.paths = [(a, b, [(x + dx, y + dy) for x, y in pts]) for a, b, pts in layout.paths]
    layout.width = max(c[2] for c in corners) + dx + 10
    layout.height = max(c[3] for c in corners) + dy + 10


class _Box:  # grandalf's vertex view: w, h in; xy out
    def __init__(self, w, h):
        self.w, self.h, self.xy = w, h, (0.0, 0.0)


class _Route:  # grandalf's edge view: the routed polyline
    def __init__(self):
        self.points = []

    def setpath(self, points):
        self.points = [tuple(p) for p in points]


def _grandalf(keys, sizes, edges) -> Optional[Layout]:
    try:
        from grandalf.graphs import Edge, Graph, Vertex
        from grandalf.layouts import SugiyamaLayout
    except ImportError:
        return None
    parts = []
    for comp in _components(keys, edges):
        members = set(comp)
        vs = {k: Vertex(k) for k in comp}
        for k, v in vs.items():
            v.view = _Box(*sizes[k])
        es = []
        for a, b in edges:
            if a in members:
                e = Edge(vs[a], vs[b])
                e.view = _Route()
                es.append(e)
        g = Graph(list(vs.values()), es)
        positions, paths = {}, []
        for c in g.C:  # (one: the component is connected)
            sug = SugiyamaLayout(c)
            sug.xspace, sug.yspace = X_GAP, Y_GAP
            roots = [v for v in c.sV if not v.e_in()]
            sug.init_all(roots=roots or None)
            sug.draw(2)   # two ordering sweeps: crossings mostly settled, time linear in the model
            positions.update({v.data: v.view.xy for v in c.sV})
            paths += [(e.v[0].data, e.v[1].data, e.view.points or [e.v[0].view.xy, e.v[1].view.xy]) for e in c.sE]
        parts.append((positions, paths))
    out = _side_by_side(parts, sizes)
    out.engine = f"grandalf {_version('grandalf')} (Sugiyama layered layout)"
    return out


def _dot(keys, sizes, edges) -> Optional[Layout]:
    exe = shutil.which("dot")
    if exe is None:
        return None
    ids = {k: f"n{i}" for i, k in enumerate(keys)}
    back = {v: k for k, v in ids.items()}
    lines = ["digraph G {", f"nodesep={X_GAP / 72:.3f}; ranksep={Y_GAP / 72:.3f}; node [shape=box, fixedsize=true];"]
    lines += [f'{ids[k]} [width={sizes[k][0] / 72:.3f}, height={sizes[k][1] / 72:.3f}];' for k in keys]
    lines += [f"{ids[a]} -> {ids[b]};" for a, b in edges]
    lines.append("}")
    try:
        plain = subprocess.run([exe, "-Tplain"], input="\n".join(lines), capture_output=True, text=True,
                               timeout=300, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    out, height = Layout(""), 0.0
    version = subprocess.run([exe, "-V"], capture_output=True, text=True).stderr.strip()
    for line in plain.splitlines():
        f = line.split()
        if f and f[0] == "graph":
            height = float(f[3]) * 72
        elif f and f[0] == "node":
            out.positions[back[f[1]]] = (float(f[2]) * 72, height - float(f[3]) * 72)
        elif f and f[0] == "edge":
            n = int(f[3])
            pts = [(float(f[4 + 2 * j]) * 72, height - float(f[5 + 2 * j]) * 72) for j in range(n)]
            out.paths.append((back[f[1]], back[f[2]], pts))
    out.engine = f"Graphviz dot ({version or 'version unknown'})"
    return out


def _fallback(keys, sizes, edges) -> Layout:
    """Longest-path layers in execution order, one barycentre pass; straight edges."""
    preds: dict = {k: [] for k in keys}
    for a, b in edges:
        preds[b].append(a)
    rank = {}
    for k in keys:  # keys are in execution order: every producer comes first
        rank[k] = 1 + max((rank[p] for p in preds[k] if p in rank), default=-1)
    layers: dict = {}
    for k in keys:
        layers.setdefault(rank[k], []).append(k)
    xs, out, y = {}, Layout(""), 0.0
    for r in sorted(layers):
        row = layers[r]
        row.sort(key=lambda k: sum(xs[p] for p in preds[k]) / len(preds[k]) if preds[k] else 0.0)
        h = max(sizes[k][1] for k in row)
        x = 0.0
        for k in row:
            w = sizes[k][0]
            xs[k] = x + w / 2
            out.positions[k] = (x + w / 2, y + h / 2)
            x += w + X_GAP
        y += h + Y_GAP
    out.paths = [(a, b, [out.positions[a], out.positions[b]]) for a, b in edges]
    out.engine = ("fallback layout (grandalf is not installed and Graphviz's dot was not found): layers by "
                  "longest path, one ordering pass, straight edges; pip install grandalf for a real layout")
    return out


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return ""

"""The graph picture of the HTML coverage report: the model's nodes as a layered DAG (converters/graph_layout.py),
colored by status, partitions framed, folded constants as small badges on the node that reads them, the reason
on hover, zoom and pan. Self-contained: inline SVG and a few lines of script, no external resource.

Every string from a model file is escaped before it reaches HTML."""
from __future__ import annotations

import html

from .graph_layout import layered_layout

COLORS = {"supported": "#2e7d32", "lowered": "#f9a825", "unsupported": "#c62828", "absorbed": "#78909c"}
BOX_H, CHAR_W = 24, 7.2
_MARGIN = 20


def status(n: dict) -> str:
    if not n["supported"]:
        return "unsupported"
    if n.get("absorbed"):
        return "absorbed"
    return "lowered" if n["nnapi_ops"] != [n["op"]] and len(n["nnapi_ops"]) != 1 else "supported"


def folded_constant(n: dict) -> bool:
    """A node computed at conversion time: every output is a constant now (converters/folding.py)."""
    return n["supported"] and bool(n["outputs"]) and all(o.get("constant") for o in n["outputs"] if o.get("name"))


def _label(n: dict) -> str:
    if not n["supported"]:
        return f"{n['index']}: {n['op']} ({n['reason_code']})"
    ops = " + ".join(n["nnapi_ops"])
    return f"{n['index']}: {n['op']}" + (f" -> {ops}" if ops and ops != n["op"] else "")


def _hover(n: dict, badges: list) -> str:
    from .coverage_render import absorbed_text
    st = status(n)
    lines = [f"node {n['index']} {n['op']} ({n['name']})" if n.get("name") else f"node {n['index']} {n['op']}", st]
    if n["reason"]:
        lines.append(f"[{n['reason_code']}] {n['reason']}")
    if n["nnapi_ops"]:
        lines.append("NNAPI: " + " ".join(n["nnapi_ops"]) + (f" (feature level {n['min_feature_level']})"
                                                              if n["min_feature_level"] else ""))
    if n.get("nodes_inside"):
        lines.append(f"holds {n['nodes_inside']} node(s) in its bodies, counted with it")
    if n.get("absorbed"):
        lines.append(absorbed_text(n))
    if n.get("note"):
        lines.append(n["note"])
    if badges:
        lines.append(f"reads {len(badges)} folded constant node(s): "
                     + ", ".join(f"{b['index']} {b['op']}" for b in badges[:8]) + (" ..." if len(badges) > 8 else ""))
    return "\n".join(lines)


def graph_parts(r: dict):
    """(shown nodes, edges between shown nodes, badges: shown node index -> folded nodes it reads)."""
    nodes = r["nodes"]
    shown = [n for n in nodes if not folded_constant(n)]
    producer = {o["name"]: n["index"] for n in shown for o in n["outputs"] if o.get("name")}
    edges = []
    for n in shown:
        for t in n["inputs"]:
            p = producer.get(t.get("name"))
            if p is not None and not t.get("constant"):
                edges.append((p, n["index"]))
    ids = {n["index"] for n in shown}
    badges: dict = {}
    for n in nodes:
        if folded_constant(n):
            into = (n.get("absorbed") or {}).get("into")
            if into in ids:
                badges.setdefault(into, []).append(n)
    return shown, edges, badges


def render_graph(r: dict) -> str:
    """The <figure> with the SVG graph, the layout engine said under it, and the zoom/pan script."""
    shown, edges, badges = graph_parts(r)
    sizes = {n["index"]: (min(360.0, 16 + CHAR_W * len(_label(n)[:48])), float(BOX_H)) for n in shown}
    layout = layered_layout([n["index"] for n in shown], sizes, edges)
    part_of = {k: i for i, p in enumerate(r["partitions"]) for k in p["nodes"]}
    frames = []
    for i, p in enumerate(r["partitions"]):
        boxes = [(layout.positions[k], sizes[k]) for k in p["nodes"] if k in layout.positions]
        if not boxes:
            continue
        x0 = min(x - w / 2 for (x, _), (w, _) in boxes) - 6
        y0 = min(y - h / 2 for (_, y), (_, h) in boxes) - 6
        x1 = max(x + w / 2 for (x, _), (w, _) in boxes) + 6
        y1 = max(y + h / 2 for (_, y), (_, h) in boxes) + 6
        frames.append(f'<g class="partition"><rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" '
                      f'height="{y1 - y0:.1f}" rx="8" fill="#1565c0" fill-opacity="0.04" stroke="#1565c0" '
                      f'stroke-dasharray="6 3" stroke-width="1.5"/><text x="{x0 + 4:.1f}" y="{y0 - 3:.1f}" '
                      f'font-size="11" fill="#1565c0">partition {i}</text></g>')
    lines = []
    for a, b, pts in layout.paths:
        d = " ".join(f"{'M' if j == 0 else 'L'}{x:.1f},{y:.1f}" for j, (x, y) in enumerate(pts))
        lines.append(f'<path d="{d}" fill="none" stroke="#90a4ae" stroke-width="1.2" marker-end="url(#arrow)"/>')
    boxes = []
    for n in shown:
        k = n["index"]
        (x, y), (w, h) = layout.positions[k], sizes[k]
        st, extra = status(n), badges.get(k, [])
        badge = (f'<circle cx="{x + w / 2:.1f}" cy="{y - h / 2:.1f}" r="8" fill="#eceff1" stroke="#78909c"/>'
                 f'<text class="badge" x="{x + w / 2:.1f}" y="{y - h / 2 + 4:.1f}" font-size="10" '
                 f'text-anchor="middle" fill="#37474f">{len(extra)}</text>') if extra else ""
        dash = ' stroke="#37474f" stroke-dasharray="3 2"' if st == "absorbed" else ""
        boxes.append(f'<g class="node {st}" data-index="{k}" data-partition="{part_of.get(k, "")}">'
                     f'<title>{html.escape(_hover(n, extra))}</title>'
                     f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" rx="4" '
                     f'fill="{COLORS[st]}"{dash}/><text x="{x - w / 2 + 8:.1f}" y="{y + 4:.1f}" font-size="12" '
                     f'fill="white">{html.escape(_label(n)[:48])}</text>{badge}</g>')
    folded = sum(len(v) for v in badges.values())
    hidden = len(r["nodes"]) - len(shown)
    caption = (f"{len(shown)} nodes drawn; {hidden} folded constant node(s) hidden"
               + (f", {folded} of them shown as a count badge on the node that reads them" if folded else "")
               + f". Layout: {layout.engine}, {layout.seconds:.2f} s. Scroll to zoom, drag to pan, "
                 f"double-click to fit the whole graph; hover a node for its reason.")
    w, h = max(layout.width, 100.0) + 2 * _MARGIN, max(layout.height, 40.0) + 2 * _MARGIN  # (frame labels)
    svg = (f'<svg id="graph" xmlns="http://www.w3.org/2000/svg" viewBox="{-_MARGIN} {-_MARGIN} {w:.0f} {h:.0f}" '
           f'data-width="{w:.0f}" data-height="{h:.0f}" data-margin="{_MARGIN}" role="img" aria-label="graph" '
           f'style="width:100%;height:{min(900, max(200, h)):.0f}px;border:1px solid #ddd;cursor:grab">'
           '<style>.node.hit rect{stroke:#ffd600;stroke-width:4}.node.focus rect{stroke:#000;stroke-width:3}</style>'
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#90a4ae"/></marker></defs>'
           f'<g id="viewport">{"".join(frames)}{"".join(lines)}{"".join(boxes)}</g></svg>')
    return f'<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure><script>{_ZOOM_JS}</script>'


# first view: at 1:1 (labels at their 12 px), the first unsupported node near the top (30% down), else the top of the graph;
# the whole graph when it fits. Wheel zooms about the pointer, drag pans, double-click fits the whole graph: all by
# changing the SVG's viewBox. focus(k) (the report's "needs attention" links, the search box) centres node k.
_ZOOM_JS = """(function(){var s=document.getElementById('graph');if(!s)return;
var W=+s.dataset.width,H=+s.dataset.height,M=-s.dataset.margin,v=[M,M,W,H];
function set(){s.setAttribute('viewBox',v.map(function(a){return a.toFixed(1)}).join(' '))}
function box(g){var r=g.querySelector('rect');return [+r.getAttribute('x')+r.getAttribute('width')/2,
+r.getAttribute('y')+r.getAttribute('height')/2]}
function centre(c){var b=s.getBoundingClientRect();v=[c[0]-b.width/2,c[1]-b.height*0.3,b.width,b.height];set()}
var nodes=[].slice.call(s.querySelectorAll('g.node')),b=s.getBoundingClientRect();
if(b.width>0&&(W>b.width||H>b.height)){var first=s.querySelector('g.node.unsupported');
if(!first){first=nodes.slice().sort(function(a,c){return box(a)[1]-box(c)[1]})[0]}
if(first){var c=box(first);c[1]=first.classList.contains('unsupported')?c[1]:M+b.height*0.3;centre(c)}}
function focus(k){var g=s.querySelector('g.node[data-index="'+k+'"]');if(!g)return false;
nodes.forEach(function(n){n.classList.remove('focus')});g.classList.add('focus');
s.scrollIntoView({block:'center'});centre(box(g));return true}
window.nnapiFocusNode=focus;
[].forEach.call(document.querySelectorAll('a.goto'),function(a){a.addEventListener('click',function(e){
if(focus(a.dataset.node))e.preventDefault()})});
var q=document.getElementById('search'),hits=[],at=-1,out=document.getElementById('hits');
if(q){q.addEventListener('input',function(){var t=q.value.trim().toLowerCase();at=-1;
hits=t?nodes.filter(function(n){return n.dataset.index===t||n.textContent.toLowerCase().indexOf(t)>=0}):[];
nodes.forEach(function(n){n.classList.toggle('hit',hits.indexOf(n)>=0)});
if(out)out.textContent=t?hits.length+' node(s) match':''});
q.addEventListener('keydown',function(e){if(e.key!=='Enter'||!hits.length)return;at=(at+1)%hits.length;
focus(hits[at].dataset.index)})}
function pt(e){var r=s.getBoundingClientRect(),k=Math.max(v[2]/r.width,v[3]/r.height);
return [v[0]+(e.clientX-r.left)*k,v[1]+(e.clientY-r.top)*k,k]}
s.addEventListener('wheel',function(e){e.preventDefault();var p=pt(e),f=e.deltaY<0?0.8:1.25;
v=[p[0]-(p[0]-v[0])*f,p[1]-(p[1]-v[1])*f,v[2]*f,v[3]*f];set()},{passive:false});
var drag=null;s.addEventListener('mousedown',function(e){drag=pt(e);s.style.cursor='grabbing'});
window.addEventListener('mouseup',function(){drag=null;s.style.cursor='grab'});
s.addEventListener('mousemove',function(e){if(!drag)return;var r=s.getBoundingClientRect(),
k=Math.max(v[2]/r.width,v[3]/r.height);v[0]=drag[0]-(e.clientX-r.left)*k;v[1]=drag[1]-(e.clientY-r.top)*k;set()});
s.addEventListener('dblclick',function(){v=[M,M,W,H];set()});})();"""

"""The HTML coverage graph: a layered DAG layout (grandalf; Graphviz dot where installed; the stated fallback),
and the page drawn by headless Chromium puts a branching zoo model's nodes in more than one column, frames
the partition, hides folded constants behind badges and carries each node's reason in its hover text."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from converters.coverage import report_for_path
from converters.coverage_graph import graph_parts
from converters.coverage_render import render
from converters.graph_layout import layered_layout

from tests.converters.test_coverage_html import CHROMIUM, FLAGS

ZOO = Path(__file__).resolve().parents[1] / "zoo" / "models"
DIAMOND = ([0, 1, 2, 3, 4], [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
ENGINES = ["grandalf", "fallback"] + (["dot"] if shutil.which("dot") else [])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_diamond_is_drawn_with_its_branches_side_by_side(engine):
    keys, edges = DIAMOND
    sizes = {k: (80.0, 20.0) for k in keys}
    lay = layered_layout(keys, sizes, edges, engine=engine)
    pos = lay.positions
    assert engine.replace("fallback", "fallback layout") in lay.engine.lower().replace("graphviz ", "")
    assert abs(pos[1][1] - pos[2][1]) < 1 and abs(pos[1][0] - pos[2][0]) >= 80  # one layer, not overlapping
    assert pos[0][1] < pos[1][1] < pos[3][1] < pos[4][1]  # every edge points down
    assert {(a, b) for a, b, _ in lay.paths} == set(edges)
    for a, b, pts in lay.paths:
        assert len(pts) >= 2
    assert all(10 - 1e-6 <= x - 40 and 10 - 1e-6 <= y - 10 for x, y in pos.values())
    assert lay.width >= max(x for x, _ in pos.values()) + 40


def test_unconnected_components_sit_side_by_side():
    keys, edges = [0, 1, 2, 3], [(0, 1), (2, 3)]
    lay = layered_layout(keys, {k: (50.0, 20.0) for k in keys}, edges, engine="grandalf")
    (x0, _), (x2, _) = lay.positions[0], lay.positions[2]
    assert abs(x0 - x2) >= 50


def test_the_fallback_says_what_it_is():
    lay = layered_layout(DIAMOND[0], {k: (10.0, 10.0) for k in DIAMOND[0]}, DIAMOND[1], engine="fallback")
    assert "grandalf is not installed" in lay.engine and "pip install grandalf" in lay.engine


@pytest.fixture(scope="module")
def resnet():
    return report_for_path(str(ZOO / "tf" / "resnet_small_float32.tflite"), 8)


def test_folded_constants_are_badges_and_absorbed_nodes_stay(resnet):
    shown, edges, badges = graph_parts(resnet)
    nodes = resnet["nodes"]
    assert len(shown) == len(nodes)  # float32 weights: nothing folded in this model
    page = render(resnet, "html")
    pad = next(n for n in nodes if n["op"] == "PAD" and n["absorbed"])
    assert f"absorbed into node {pad['absorbed']['into']} (pad folded into convolution)" in page
    assert page.count('class="node ') == len(shown) and page.count('class="partition"') == len(resnet["partitions"])
    assert "Layout: grandalf" in page
    f16 = report_for_path(str(ZOO / "tf" / "mobilenet_v2_float16.tflite"), 8)
    shown, _, badges = graph_parts(f16)
    folded = [n for n in f16["nodes"] if n["op"] == "DEQUANTIZE"]
    assert len(shown) == len(f16["nodes"]) - len(folded)
    assert sum(len(v) for v in badges.values()) == len(folded)
    assert f"{len(folded)} folded constant node(s) hidden" in render(f16, "html")


MEASURE = """<script>window.addEventListener('load',function(){var xs={},n=0,g=document.querySelectorAll('g.node');
g.forEach(function(e){var r=e.querySelector('rect').getBoundingClientRect();xs[Math.round((r.left+r.right)/10)]=1;n++});
var p=document.createElement('pre');p.id='measured';p.textContent=JSON.stringify({nodes:n,columns:Object.keys(xs).length,
frames:document.querySelectorAll('g.partition').length});document.body.appendChild(p)});</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (CI installs Debian's chromium in .ci/run)")
def test_chromium_lays_a_branching_model_out_in_several_columns(resnet, tmp_path):
    page = tmp_path / "resnet.html"
    page.write_text(render(resnet, "html").replace("</body>", MEASURE + "</body>"))
    common = FLAGS + [f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,900"]
    dom = subprocess.run([CHROMIUM, *common, "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="measured">(.*?)</pre>', dom)
    assert m, "the page's script did not run"
    measured = json.loads(m.group(1).replace("&quot;", '"'))
    assert measured["nodes"] == len(resnet["nodes"]) and measured["frames"] == 1
    assert measured["columns"] > 1, "the residual branches are drawn in one column"

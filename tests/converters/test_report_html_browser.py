"""The HTML reports in headless Chromium at 1400 px wide: the coverage report opens on what needs attention (links
to each unsupported node, which show it in the graph), with labels legible at the first zoom and a search box; the
parity report keeps its error columns on the page however long the tensor names. (.ci/run installs Debian's
chromium so CI runs these; elsewhere they skip with the reason.)"""
import onnx
import pytest
from onnx import TensorProto, helper

from converters.cli import main

from tests.converters.viz.cdp import CHROMIUM, Browser

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (CI installs Debian's chromium in .ci/run)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium-profile"), width=1400, height=1000)
    yield b
    b.close()


def wide_model(path, branches=80, refused=(3, 71)):
    """x -> 80 parallel Relu branches -> Sum: a graph far wider than the page; the branches in `refused` are an
    ai.onnx.ml Binarizer, which NNAPI lacks."""
    nodes = [helper.make_node("Binarizer", ["x"], [f"b{k}"], domain="ai.onnx.ml", name=f"refused_{k}")
             if k in refused else helper.make_node("Relu", ["x"], [f"b{k}"], name=f"branch_{k}")
             for k in range(branches)]
    nodes.append(helper.make_node("Sum", [f"b{k}" for k in range(branches)], ["y"], name="total"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]),
              path)


def visible_in_graph(browser, index) -> bool:
    return browser.evaluate(f"""(() => {{ const s = document.getElementById('graph').getBoundingClientRect();
        const r = document.querySelector('#graph g.node[data-index="{index}"] rect').getBoundingClientRect();
        return r.left >= s.left && r.right <= s.right && r.top >= s.top && r.bottom <= s.bottom; }})()""")


def test_coverage_html_opens_on_what_needs_attention(tmp_path, browser):
    model, page = tmp_path / "wide.onnx", tmp_path / "cov.html"
    wide_model(model)
    assert main(["coverage", str(model), "--format", "html", "-o", str(page)]) == 0
    browser.open(page.as_uri())
    assert browser.wait_for("document.readyState === 'complete' && !!document.querySelector('#graph g.node')")
    # the summary of what needs attention comes before the graph, with a link per unsupported node
    links = browser.evaluate("[...document.querySelectorAll('#attention a.goto')].map(a => a.dataset.node)")
    assert sorted(map(int, links)) == [3, 71]
    assert browser.evaluate("document.getElementById('attention').getBoundingClientRect().bottom"
                            " < document.getElementById('graph').getBoundingClientRect().top")
    # labels at the first zoom are drawn at their 12 px (the old first view fit the whole width: about 3 px here)
    heights = browser.evaluate("[...document.querySelectorAll('#graph g.node text')].slice(0, 5)"
                               ".map(t => t.getBoundingClientRect().height)")
    assert min(heights) >= 10, heights
    assert visible_in_graph(browser, 3)          # the first unsupported node is in the first view
    assert not visible_in_graph(browser, 71)     # the other is one click away
    assert browser.click("document.querySelector('#attention a.goto[data-node=\"71\"]')")
    assert browser.wait_for("!!document.querySelector('#graph g.node.focus')")
    assert visible_in_graph(browser, 71)
    # the search box marks the nodes it finds
    browser.evaluate("(() => { const q = document.getElementById('search'); q.value = 'binarizer';"
                     " q.dispatchEvent(new Event('input')); })()")
    assert browser.evaluate("document.querySelectorAll('#graph g.node.hit').length") == 2
    assert "2 node(s) match" in browser.evaluate("document.getElementById('hits').textContent")
    (tmp_path / "coverage.png").write_bytes(browser.screenshot())


def test_parity_html_keeps_error_columns_on_the_page(tmp_path, browser):
    long = "encoder/" + "very_long_scope_name/" * 12 + "output"    # 266 characters, no space to break at
    g = helper.make_graph([helper.make_node("Relu", ["x"], [long]), helper.make_node("Neg", [long], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model, page = tmp_path / "long.onnx", tmp_path / "parity.html"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)
    assert main(["parity", str(model), "--layerwise", "--format", "html", "-o", str(page)]) == 0
    browser.open(page.as_uri())
    assert browser.wait_for("document.readyState === 'complete' && !!document.querySelector('table')")
    right = browser.evaluate("Math.max(...[...document.querySelectorAll('table td, table th')]"
                             ".map(c => c.getBoundingClientRect().right))")
    assert right <= 1400, f"table cells reach {right} px on a 1400 px page"
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1400

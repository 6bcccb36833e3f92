"""`nnapi view` in a real browser: Model Explorer's server started on a loopback port with a zoo model
and the coverage overlay, the page loaded in headless Chromium (WebGL in software), checked for a
rendered graph, node data attached to the source nodes, and a screenshot that is not blank and shows
the overlay's colours on the graph. (.ci/run installs Debian's chromium, so CI always runs this;
elsewhere it skips with the reason.)"""
import io
import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from converters.cli import main
from converters.viz.overlays import STATUS_COLORS

from .cdp import CHROMIUM, Browser

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (CI installs Debian's chromium in .ci/run)")

ROOT = Path(__file__).resolve().parents[3]
KWS = "tests/zoo/models/tf/kws_conv1d_int8.tflite"
RESNET = "tests/zoo/models/torch/resnet_small_fixed_op13.onnx"
# a row's status, with where an absorbed node went in brackets ("absorbed (fused activation)")
STATUS_ROW = re.compile(r"^\d+\t[^\t]+\t.*\b(supported|lowered|absorbed|unsupported: [a-z_]+)(?: \([^)\n]*\))?$", re.M)


# a Material icon button is an element whose only text is the icon's name
FIND_ICON = ("const icon = name => [...document.querySelectorAll('*')].find(e => e.children.length == 0 "
             "&& e.textContent.trim() == name);")


def rgb(color: str) -> tuple:
    return tuple(int(color[k:k + 2], 16) for k in (1, 3, 5))


@contextmanager
def model_explorer(*args):
    """`nnapi view ARGS --no-browser` on a free loopback port; yields the page address it prints."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "converters.cli", "view", *args, "--no-browser",
                             "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    log, url = "", None
    try:
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            try:
                log += lines.get(timeout=1)
            except queue.Empty:
                assert proc.poll() is None, f"nnapi view exited {proc.returncode}:\n{log}"
                continue
            m = re.search(r"http://127\.0\.0\.1:\d+/\S*", log)
            url = m.group(0) if m else None
        assert url, f"no server address printed:\n{log}"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


def show(browser, url) -> tuple[str, np.ndarray]:
    """Load the page, wait for the graph, expand every layer; (page text, the graph canvas as RGB pixels)."""
    browser.open(url)
    text = browser.wait_for("document.body && /op node count\\s+\\d+/.test(document.body.innerText) "
                            "&& document.body.innerText", timeout=45)
    assert text, "Model Explorer never showed the graph"
    assert browser.evaluate(f"(() => {{ {FIND_ICON} const b = icon('unfold_more_double'); if (b) b.click(); "
                            "return !!b; })()"), "no 'expand all layers' button"
    time.sleep(2)  # the layout of the expanded layers runs in a web worker
    return browser.evaluate("document.body.innerText"), canvas_pixels(browser)


def canvas_pixels(browser) -> np.ndarray:
    """The graph canvas of a screenshot, as RGB pixels."""
    box = browser.evaluate("JSON.stringify([...document.querySelectorAll('canvas')].map(c => { "
                           "const r = c.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }))")
    x, y, w, h = max(json.loads(box), key=lambda r: r[2] * r[3])
    from PIL import Image
    shot = np.asarray(Image.open(io.BytesIO(browser.screenshot())).convert("RGB")).astype(int)
    return shot[int(y):int(y + h), int(x):int(x + w)]


def not_blank(pixels: np.ndarray) -> None:
    colors = {tuple(p) for p in pixels[::5, ::5].reshape(-1, 3)}
    assert pixels.size and pixels.std() > 5 and len(colors) > 20, "the graph canvas is blank"


def painted(pixels: np.ndarray, color: str) -> int:
    """How many canvas pixels are within a small distance of an overlay colour."""
    return int((np.abs(pixels - np.array(rgb(color))).sum(axis=2) < 30).sum())


def test_coverage_overlay_over_the_tflite_graph(browser):
    with model_explorer(KWS, "--coverage", "--feature-level", "2") as url:
        text, canvas = show(browser, url)
    assert re.search(r"op node count\s+16\b", text)  # 14 operators, the inputs and outputs nodes
    assert "NNAPI coverage: kws_conv1d_int8.tflite" in text
    rows = STATUS_ROW.findall(text)
    assert len(rows) == 14, text  # every operator carries its status
    assert rows.count("supported") == 6 and rows.count("unsupported: feature_level_too_low") == 8
    not_blank(canvas)
    assert painted(canvas, STATUS_COLORS["supported"]) > 100, "no green (supported) node on the graph"
    assert painted(canvas, STATUS_COLORS["unsupported"]) > 100, "no red (unsupported) node on the graph"


def test_coverage_overlay_over_the_onnx_graph(browser):
    with model_explorer(RESNET, "--coverage", "--parity") as url:
        text, canvas = show(browser, url)
    assert re.search(r"op node count\s+\d+", text) and "NNAPI coverage: resnet_small_fixed_op13.onnx" in text
    # the page names a node data file by its own name only once it has loaded it
    assert "parity error / tolerance: resnet_small_fixed_op13.onnx" in text
    rows = STATUS_ROW.findall(text)
    assert len(rows) == 22, text  # every ONNX node, keyed by model-explorer-onnx's node ids
    # the 7 Relus fuse into their Conv or Add, the Flatten folds into the Gemm's FULLY_CONNECTED; the first
    # Conv also transposes the NCHW input
    assert (rows.count("absorbed"), rows.count("lowered"), rows.count("supported")) == (8, 1, 13)
    not_blank(canvas)
    assert painted(canvas, STATUS_COLORS["supported"]) > 100
    assert painted(canvas, STATUS_COLORS["absorbed"]) > 100


def test_nnapi_model_through_the_adapter(browser, tmp_path):
    converted, cov = tmp_path / "kws.nnapi", tmp_path / "cov.json"
    assert main(["convert", KWS, "-o", str(converted)]) == 0
    assert main(["coverage", KWS, "--format", "model-explorer", "-o", str(cov)]) == 0
    # the source model's overlay (keyed by source tensor names) attaches to the converted graph too
    with model_explorer(str(converted), "--node-data", str(cov)) as url:
        text, canvas = show(browser, url)
        assert re.search(r"feature level needed\s+4", text) and re.search(r"operations\s+16\b", text)
        assert len(STATUS_ROW.findall(text)) == 14, text
        not_blank(canvas)
        assert painted(canvas, STATUS_COLORS["supported"]) > 100
        # the overlay removed (its delete button in the node data panel): the same graph without the colours
        assert browser.click("document.querySelector('.action-icons-container .icon-container.action')"), \
            "no button that removes the overlay"
        time.sleep(1)
        plain = canvas_pixels(browser)
    not_blank(plain)
    assert painted(plain, STATUS_COLORS["supported"]) == 0

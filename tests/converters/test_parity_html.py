"""The parity HTML report draws the error along the model (inline SVG) and renders in headless Chromium."""
import subprocess
from pathlib import Path

import pytest

import nnapi
from converters import tflite
from converters.cli import main

from tests.converters.test_coverage_html import CHROMIUM, FLAGS, png_pixels
from tests.converters.test_parity import alter_constant

SAMPLE = str(Path(__file__).resolve().parents[2] / "samples" / "mobilenet_float.tflite")


def _altered_report(tmp_path) -> Path:
    saved = tmp_path / "m.nnapi"
    nnapi.save(tflite.convert(SAMPLE).model, saved)
    alter_constant(saved, "pw1/w", 400.0)                 # one weight of the second pointwise conv
    page = tmp_path / "parity.html"
    # RELU6 and the pooled softmax hide the change at the output (exit 0); layerwise still finds it
    assert main(["parity", SAMPLE, "--model", str(saved), "--layerwise", "--format", "html",
                 "-o", str(page)]) in (0, 1)
    return page


def test_the_html_report_plots_every_operation_and_marks_the_first_divergence(tmp_path):
    text = _altered_report(tmp_path).read_text()
    model = tflite.convert(SAMPLE).model
    assert text.count("<circle") == len(model.operations)                 # one point per operation
    assert 'class="layers"' in text and "tolerance (error = allowed)" in text
    (pw1,) = [k for k, op in enumerate(model.operations)
              if any(model.operands[i].name == "pw1/w" for i in op.inputs)]
    assert f"first divergence: operation {pw1}" in text
    assert f'href="#op-{pw1}"' in text and f'id="op-{pw1}"' in text       # the point links to its table row


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (CI installs Debian's chromium in .ci/run)")
def test_the_html_report_renders_in_chromium(tmp_path):
    page = _altered_report(tmp_path)
    shot = tmp_path / "shot.png"
    common = FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run([CHROMIUM, *common, f"--screenshot={shot}", "--window-size=1000,1400", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    width, height, rows, channels = png_pixels(shot.read_bytes())
    colors = {row[x:x + 3] for row in rows[::5] for x in range(0, width * channels, channels * 5)}
    assert len(colors) > 20, "the screenshot is blank"
    assert any(abs(c[0] - 198) + abs(c[1] - 40) + abs(c[2] - 40) < 40 for c in colors), \
        "no red (tolerance line or divergence) in the picture"
    dom = subprocess.run([CHROMIUM, *common, "--dump-dom", page.as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert "mobilenet_float.tflite" in dom and "first divergence" in dom

"""The coverage HTML page renders in headless Chromium: a non-blank screenshot, and the
rendered document carries the model name. (.ci/run installs Debian's chromium so CI always
runs this; elsewhere it skips with the reason.)"""
import shutil
import struct
import subprocess
import zlib

import pytest

from converters.cli import main

from tests.converters.test_coverage import gapped_model

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def png_pixels(data: bytes):
    """(width, height, rows of bytes) of an 8-bit RGB/RGBA non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b, c = prev[x], prev[x - channels] if x >= channels else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, channels


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (CI installs Debian's chromium in .ci/run)")
def test_coverage_html_renders_in_chromium(tmp_path):
    model = tmp_path / "gapped_model.tflite"
    gapped_model(model)
    page = tmp_path / "report.html"
    assert main(["coverage", str(model), "--format", "html", "-o", str(page)]) == 0
    shot = tmp_path / "shot.png"
    common = FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run([CHROMIUM, *common, f"--screenshot={shot}", "--window-size=900,700", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    width, height, rows, channels = png_pixels(shot.read_bytes())
    assert (width, height) == (900, 700)
    colors = {row[x:x + 3] for row in rows[::7] for x in range(0, width * channels, channels * 7)}
    assert len(colors) > 20, "the screenshot is blank"
    assert (46, 125, 50) in colors or any(abs(c[0] - 46) + abs(c[1] - 125) + abs(c[2] - 50) < 40 for c in colors), \
        "no supported-node (green) box in the picture"
    dom = subprocess.run([CHROMIUM, *common, "--dump-dom", page.as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert "gapped_model.tflite" in dom and "x&lt;img&gt;" in dom

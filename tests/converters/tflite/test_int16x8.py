"""int16x8 models (int16 activations, int8 weights): NNAPI has no 16-bit quantized activations, so
nothing converts; every node says so in one reason and the coverage report in one note."""
import numpy as np

from converters.coverage import build_report
from converters.coverage_render import render_text
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder
from converters.tflite.reader import read_tflite as read


def int16x8_model() -> bytes:
    """float -> int16 (QUANTIZE), an int16 requantization (QUANTIZE), CONV_2D, DEQUANTIZE -> float."""
    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", [1, 4, 4, 2])
    q = g.tensor("q", [1, 4, 4, 2], "INT16", scale=1 / 4096, zero_point=0)
    g.op("QUANTIZE", [x], [q])
    r = g.tensor("r", [1, 4, 4, 2], "INT16", scale=1 / 2048, zero_point=0)
    g.op("QUANTIZE", [q], [r], version=2)
    w = g.const("w", rng.integers(-127, 128, (3, 1, 1, 2)).astype(np.int8), scale=[0.01, 0.02, 0.03], axis=0)
    b = g.const("b", np.zeros(3, np.int64), scale=[0.01 / 2048, 0.02 / 2048, 0.03 / 2048], axis=0)
    y = g.tensor("y", [1, 4, 4, 3], "INT16", scale=1 / 1024, zero_point=0)
    g.op("CONV_2D", [r, w, b], [y], "Conv2DOptions", version=4, padding="SAME", stride_w=1, stride_h=1)
    out = g.tensor("out", [1, 4, 4, 3])
    g.op("DEQUANTIZE", [y], [out], version=2)
    g.output(out)
    return g.finish()


def test_int16x8_nodes_have_one_clear_reason():
    result = convert(int16x8_model(), feature_level=8)
    assert [n.supported for n in result.nodes] == [False] * 4
    for n in result.nodes:  # no internal error (the int16 requantization used to raise KeyError)
        assert n.reason_code == "quantization_type", (n.op, n.reason)
        assert "int16 activation" in n.reason and "NNAPI has no 16-bit quantized activations" in n.reason


def test_int16x8_coverage_note():
    report = build_report(read(int16x8_model()))
    note = report["summary"]["note"]
    assert note.startswith("int16x8 quantization:") and "(4 of 4 nodes)" in note
    assert f"note: {note}" in " ".join(render_text(report).split())   # (the text wraps prose at 120 columns)
    assert len([n for n in report["nodes"] if "int16 activation" in n["reason"]]) == 4


def test_int8_model_has_no_int16_note():
    g = GraphBuilder()
    x = g.input("x", [1, 4], "INT8", scale=0.1, zero_point=0)
    y = g.tensor("y", [1, 4], "INT8", scale=0.2, zero_point=1)
    g.op("QUANTIZE", [x], [y], version=2)
    g.output(y)
    assert "note" not in build_report(read(g.finish()))["summary"]

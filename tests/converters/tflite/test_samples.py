"""The TFLite samples (python -m samples.make_tflite_samples) convert completely at feature
level 8 and match LiteRT; the script regenerates them byte for byte."""
from pathlib import Path

import pytest

from samples import make_tflite_samples

from tests.converters.tflite.harness import assert_matches_litert

SAMPLES = Path(make_tflite_samples.__file__).resolve().parent
NAMES = ["mobilenet_float.tflite", "mobilenet_uint8.tflite", "mobilenet_int8.tflite", "lstm_float.tflite",
         "control_flow.tflite"]


@pytest.mark.parametrize("name", NAMES)
def test_sample_converts_and_matches_litert(name):
    data = (SAMPLES / name).read_bytes()
    assert len(data) < 300 * 1024
    result = assert_matches_litert(data, 8, seeds=(0, 1, 2))
    assert result.complete and result.model is not None


def test_samples_are_reproducible():
    assert make_tflite_samples.build_all() == {n: (SAMPLES / n).read_bytes() for n in NAMES}


def test_sample_ops():
    from converters.tflite import read
    ops = {name: {n.op for g in read((SAMPLES / name).read_bytes()).graphs for n in g.nodes} for name in NAMES}
    assert ops["mobilenet_int8.tflite"] == {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "FULLY_CONNECTED",
                                            "SOFTMAX"}
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in ops["lstm_float.tflite"]
    assert {"WHILE", "IF", "MUL", "ADD", "SUB", "LESS"} <= ops["control_flow.tflite"]

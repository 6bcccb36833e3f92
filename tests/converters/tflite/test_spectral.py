"""TFLite RFFT2D with COMPLEX_ABS / REAL / IMAG -> NNAPI DFT products, against LiteRT (which
computes the FFT in double precision), and the RFFT2D uses NNAPI cannot take."""
import numpy as np
import pytest

from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert


def _rfft_model(x_shape, fft_length, readers=("COMPLEX_ABS", "REAL", "IMAG")):
    g = GraphBuilder()
    x = g.input("x", x_shape)
    length = g.const("fft_length", np.asarray(fft_length, np.int32))
    k = fft_length[1] // 2 + 1
    out_shape = [*x_shape[:-2], fft_length[0], k]
    spectrum = g.tensor("spectrum", out_shape, "COMPLEX64")
    g.op("RFFT2D", [x, length], [spectrum], "Rfft2dOptions")
    outs = []
    for op in readers:
        y = g.tensor(op.lower(), out_shape)
        g.op(op, [spectrum], [y])
        outs.append(y)
    g.output(*outs)
    return g.finish()


@pytest.mark.parametrize("x_shape,fft_length", [
    ((3, 1, 16), (1, 16)),       # frames of audio: a 1-D RFFT per frame
    ((2, 3, 6), (4, 8)),         # zero padding on both axes
    ((1, 4, 16), (2, 8)),        # cropping on both axes
    ((1, 2, 5, 4), (8, 4)),      # two batch axes
])
def test_rfft2d_consumers_match_litert(x_shape, fft_length):
    result = assert_matches_litert(_rfft_model(x_shape, fft_length), 8, seeds=(0, 1, 2))
    ops = {n.op: n.nnapi_ops for n in result.nodes}
    assert ops["RFFT2D"] == [] and "FULLY_CONNECTED" in ops["REAL"] and "SQRT" in ops["COMPLEX_ABS"]
    assert result.nodes[0].min_feature_level == 1 and max(n.min_feature_level for n in result.nodes) == 3


def test_rfft2d_large_inputs_stay_within_the_documented_bound():
    """Inputs in [-1000, 1000): the error scales with sum |x| as the docstring bounds it."""
    data = _rfft_model((2, 1, 256), (1, 256), readers=("REAL", "IMAG"))
    x = (np.random.default_rng(5).random((2, 1, 256)) * 2000 - 1000).astype(np.float32)
    result = convert(data)
    from converters.runners import run_litert
    from converters.running import run_converted
    ref, got = run_litert(data, [x]), run_converted(result, [x])
    n, u = 256, 2.0 ** -24
    bound = (n + 1) * u / (1 - (n + 1) * u) * np.abs(x).sum(axis=-1, keepdims=True)
    for r, g in zip(ref, got):
        assert (np.abs(r - g) <= bound + np.abs(r) * u).all()


def _spectrum_reshaped(with_abs: bool) -> bytes:
    """RFFT2D of [1, 8] read by a RESHAPE (a complex tensor NNAPI cannot hold), and by COMPLEX_ABS."""
    g = GraphBuilder()
    x = g.input("x", [1, 8])
    length = g.const("fft_length", np.asarray([1, 8], np.int32))
    spectrum = g.tensor("spectrum", [1, 5], "COMPLEX64")
    g.op("RFFT2D", [x, length], [spectrum], "Rfft2dOptions")
    outs = []
    if with_abs:
        outs.append(g.tensor("abs", [1, 5]))
        g.op("COMPLEX_ABS", [spectrum], outs[-1:])
    outs.append(g.tensor("y", [5, 1], "COMPLEX64"))
    g.op("RESHAPE", [spectrum, g.const("s", np.asarray([5, 1], np.int32))], outs[-1:])
    g.output(*outs)
    return g.finish()


def test_rfft2d_with_another_reader_is_reported():
    node = convert(_spectrum_reshaped(False)).nodes[0]
    assert node.reason_code == "operand_type" and "RESHAPE" in node.reason


def test_rfft2d_readers_fall_back_with_it():
    result = convert(_spectrum_reshaped(True), partial=True)
    assert [n.supported for n in result.nodes] == [False, False, False]
    assert result.nodes[1].reason_code == "operand_type" and "RESHAPE" in result.nodes[1].reason


def test_rfft2d_needs_power_of_two_lengths():
    node = convert(_rfft_model((1, 6), (1, 6))).nodes[0]
    assert node.reason_code == "unsupported_attribute" and "powers of 2" in node.reason

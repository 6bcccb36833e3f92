"""MediaPipe's custom operators -> NNAPI: Convolution2DTransposeBias against LiteRT with XNNPACK
(the only LiteRT path that runs it), TransformLandmarks against a hand computation of MediaPipe's
kernel (LiteRT has no kernel for it), and the custom operators reported with custom_operator."""
import flatbuffers.flexbuffers as flexbuffers
import numpy as np
import pytest

from converters.runners import run_converted
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from .tflite_harness import assert_matches_litert

SAME, VALID = 1, 2  # TfLitePadding


def _transpose_conv_bias(x_shape, w_shape, padding, stride_w, stride_h, seed=0):
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", x_shape)
    w = g.const("w", rng.standard_normal(w_shape).astype(np.float32))
    b = g.const("b", rng.standard_normal(w_shape[0]).astype(np.float32))
    total = lambda n, k, s: max(0, k - (n - 1) % s - 1) if padding == SAME else 0  # noqa: E731
    out_h = stride_h * (x_shape[1] - 1) + w_shape[1] - total(x_shape[1], w_shape[1], stride_h)
    out_w = stride_w * (x_shape[2] - 1) + w_shape[2] - total(x_shape[2], w_shape[2], stride_w)
    y = g.tensor("y", [x_shape[0], out_h, out_w, w_shape[0]])
    g.custom("Convolution2DTransposeBias", [x, w, b], [y],
             np.asarray([padding, stride_w, stride_h], "<i4").tobytes())
    g.output(y)
    return g.finish()


@pytest.mark.parametrize("x_shape,w_shape,padding,sw,sh", [
    ((1, 5, 6, 3), (4, 2, 2, 3), SAME, 2, 2),     # MediaPipe's selfie segmentation head
    ((1, 5, 6, 3), (2, 3, 3, 3), SAME, 2, 2),     # odd kernel: uneven padding
    ((2, 4, 3, 2), (3, 3, 2, 2), SAME, 1, 3),     # different strides, batch 2
    ((1, 4, 4, 2), (2, 3, 3, 2), VALID, 2, 1),
])
def test_convolution_2d_transpose_bias_matches_litert_xnnpack(x_shape, w_shape, padding, sw, sh):
    result = assert_matches_litert(_transpose_conv_bias(x_shape, w_shape, padding, sw, sh), 8,
                                   reference="litert-xnnpack")
    assert result.nodes[0].nnapi_ops == ["TRANSPOSE_CONV_2D"] and result.nodes[0].min_feature_level == 3


def test_convolution_2d_transpose_bias_refuses_bad_options():
    g = GraphBuilder()
    x = g.input("x", [1, 2, 2, 1])
    w, b = g.const("w", np.ones((1, 2, 2, 1), np.float32)), g.const("b", np.ones(1, np.float32))
    y = g.tensor("y", [1, 4, 4, 1])
    g.custom("Convolution2DTransposeBias", [x, w, b], [y], np.asarray([1, 0], "<i4").tobytes())
    g.output(y)
    node = convert(g.finish()).nodes[0]
    assert node.reason_code == "unsupported_attribute" and "8 bytes" in node.reason


def _mediapipe_transform_landmarks(points, matrix):
    """MediaPipe's TransformLandmarks v2 kernel, computed in float32 in its order."""
    m = matrix.reshape(16).astype(np.float32)
    x, y = points[..., 0], points[..., 1]
    zero, one = np.float32(0), np.float32(1)
    out = points.copy()
    out[..., 0] = ((m[0] * x + m[1] * y) + m[2] * zero) + m[3] * one
    out[..., 1] = ((m[4] * x + m[5] * y) + m[6] * zero) + m[7] * one
    return out


@pytest.mark.parametrize("dims", [2, 3])
def test_transform_landmarks_matches_mediapipe_kernel(dims):
    g = GraphBuilder()
    lm = g.input("landmarks", [1, 7, dims])
    m = g.input("matrix", [1, 4, 4])
    y = g.tensor("y", [1, 7, dims])
    g.custom("TransformLandmarks", [lm, m], [y], version=2)
    g.output(y)
    result = convert(g.finish())
    assert result.complete, result.unsupported
    rng = np.random.default_rng(3)
    points = (100 * rng.standard_normal((1, 7, dims))).astype(np.float32)
    matrix = rng.standard_normal((1, 4, 4)).astype(np.float32)
    got, = run_converted(result, [points, matrix])
    np.testing.assert_array_equal(got, _mediapipe_transform_landmarks(points, matrix))


def test_landmarks_to_transform_matrix_is_reported_by_name():
    g = GraphBuilder()
    lm = g.input("landmarks", [1, 468, 3])
    y = g.tensor("matrix", [1, 4, 4])
    g.custom("Landmarks2TransformMatrix", [lm], [y], bytes(flexbuffers.Dumps({"left_rotation_idx": 2})), version=2)
    g.output(y)
    node = convert(g.finish()).nodes[0]
    assert node.reason_code == "custom_operator" and "Landmarks2TransformMatrix" in node.reason


def test_unknown_custom_operator_is_custom_operator():
    g = GraphBuilder()
    x = g.input("x", [1, 4])
    y = g.tensor("y", [1, 4])
    g.custom("MyOwnOp", [x], [y])
    g.output(y)
    node = convert(g.finish()).nodes[0]
    assert node.reason_code == "custom_operator" and "MyOwnOp" in node.reason


def test_parity_and_bench_against_litert_xnnpack(tmp_path, capsys):
    from converters.cli import main
    path = tmp_path / "tconv.tflite"
    path.write_bytes(_transpose_conv_bias((1, 3, 3, 2), (2, 2, 2, 2), SAME, 2, 2))
    assert main(["parity", str(path), "--reference", "litert-xnnpack"]) == 0
    assert "PASS against litert-xnnpack" in capsys.readouterr().out
    assert main(["parity", str(path), "--reference", "litert"]) == 3  # no built-in kernel for the custom op
    assert main(["bench", str(path), "--vs", "litert-xnnpack", "--runs", "2", "--warmup", "0"]) == 0
    assert "litert-xnnpack" in capsys.readouterr().out

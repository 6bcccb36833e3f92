"""MediaPipe's custom operators -> NNAPI: Convolution2DTransposeBias against LiteRT with XNNPACK
(the only LiteRT path that runs it), TransformLandmarks against a hand computation of MediaPipe's
kernel (LiteRT has no kernel for it), and the custom operators reported with custom_operator."""
import flatbuffers.flexbuffers as flexbuffers
import numpy as np
import pytest

from converters.running import run_converted
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert

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


def _pool_params(padding, sw, sh, fw, fh, activation=0):
    """TfLitePoolParams: padding, strides, window, activation, then the kernel-computed padding."""
    return np.asarray([padding, sw, sh, fw, fh, activation, 0, 0, 0, 0], "<i4").tobytes()


def _argmax_model(x_shape, padding, sw, sh, fw, fh, activation=0, unpool=False):
    g = GraphBuilder()
    x = g.input("x", x_shape)
    ext = lambda n, k, s: -(-n // s) if padding == SAME else (n - k + s) // s  # noqa: E731
    out = [x_shape[0], ext(x_shape[1], fh, sh), ext(x_shape[2], fw, sw), x_shape[3]]
    v, i = g.tensor("values", out), g.tensor("indices", out)
    g.custom("MaxPoolingWithArgmax2D", [x], [v, i], _pool_params(padding, sw, sh, fw, fh, activation))
    if not unpool:
        g.output(v, i)
        return g.finish()
    u = g.tensor("unpooled", [out[0], out[1] * fh, out[2] * fw, out[3]])
    g.custom("MaxUnpooling2D", [v, i], [u], _pool_params(padding, sw, sh, fw, fh))
    g.output(v, u)
    return g.finish()


def _mediapipe_argmax(x, padding, sw, sh, fw, fh, activation=0):
    """MediaPipe's MaxPoolingWithArgmax2D kernel, loop for loop (expected values by hand)."""
    b, h, w, c = x.shape
    ext = lambda n, k, s: -(-n // s) if padding == SAME else (n - k + s) // s  # noqa: E731
    oh, ow = ext(h, fh, sh), ext(w, fw, sw)
    pt, pl = max(((oh - 1) * sh + fh - h) // 2, 0), max(((ow - 1) * sw + fw - w) // 2, 0)
    lo, hi = {1: (0, np.inf), 2: (-1, 1), 3: (0, 6)}.get(activation, (-np.inf, np.inf))
    lo, hi = max(lo, np.finfo(np.float32).min), min(hi, np.finfo(np.float32).max)
    vals, idx = np.zeros((b, oh, ow, c), np.float32), np.zeros((b, oh, ow, c), np.float32)
    for n, oy, ox, ch in np.ndindex(b, oh, ow, c):
        best, by, bx = np.finfo(np.float32).min, 0, 0
        for fy, fx in np.ndindex(fh, fw):
            iy, ix = oy * sh - pt + fy, ox * sw - pl + fx
            if 0 <= iy < h and 0 <= ix < w and x[n, iy, ix, ch] > best:
                best, by, bx = x[n, iy, ix, ch], fy, fx
        vals[n, oy, ox, ch] = min(max(best, lo), hi)
        idx[n, oy, ox, ch] = np.float32(by * fw + bx) + np.float32(0.1)
    return vals, idx


@pytest.mark.parametrize("x_shape,padding,sw,sh,fw,fh", [
    ((1, 4, 6, 2), VALID, 2, 2, 2, 2),
    ((2, 5, 7, 3), SAME, 3, 3, 3, 3),
    ((2, 5, 7, 3), SAME, 2, 2, 3, 3),   # XNNPACK takes only stride = window: MediaPipe's kernel by hand
    ((1, 5, 6, 2), SAME, 1, 2, 2, 3),
])
def test_max_pooling_with_argmax_matches_litert_xnnpack_and_mediapipe(x_shape, padding, sw, sh, fw, fh):
    from converters.runners import run_litert
    data = _argmax_model(x_shape, padding, sw, sh, fw, fh)
    result = convert(data)
    assert result.complete, result.unsupported
    x = np.random.default_rng(1).standard_normal(x_shape).astype(np.float32)
    x[0, 0, 0, 0] = np.nan  # skipped by the kernel
    got_v, got_i = run_converted(result, [x])
    want_v, want_i = _mediapipe_argmax(x, padding, sw, sh, fw, fh)
    np.testing.assert_array_equal(got_v, want_v)
    np.testing.assert_array_equal(got_i, want_i)
    if (sw, sh) != (fw, fh):
        return
    x[0, 0, 0, 0] = 0.0
    ref_v, ref_i = run_litert(data, [x], "litert-xnnpack")
    got_v, got_i = run_converted(result, [x])
    np.testing.assert_array_equal(got_v, ref_v)
    if padding != VALID:
        return  # XNNPACK numbers positions of padded windows its own way (values agree, checked above)
    # XNNPACK stores the window position column-major as uint32 bits in the float tensor, MediaPipe's
    # kernel row-major as fy * fw + fx + 0.1: the same position
    k = ref_i.view(np.uint32)
    np.testing.assert_array_equal(got_i, ((k % fh) * fw + k // fh).astype(np.float32) + np.float32(0.1))


@pytest.mark.parametrize("activation", [1, 2, 3])
def test_max_pooling_with_argmax_clamps_to_the_activation(activation):
    data = _argmax_model((1, 4, 4, 2), VALID, 2, 2, 2, 2, activation)
    x = (8 * np.random.default_rng(2).standard_normal((1, 4, 4, 2))).astype(np.float32)
    x[0, 0, 0, 0] = np.inf
    got_v, got_i = run_converted(convert(data), [x])
    want_v, want_i = _mediapipe_argmax(x, VALID, 2, 2, 2, 2, activation)
    np.testing.assert_array_equal(got_v, want_v)
    np.testing.assert_array_equal(got_i, want_i)


@pytest.mark.parametrize("x_shape,f", [((1, 4, 6, 2), 2), ((2, 6, 3, 3), 3)])
def test_max_unpooling_of_argmax_matches_litert_xnnpack(x_shape, f):
    data = _argmax_model(x_shape, VALID, f, f, f, f, unpool=True)
    result = assert_matches_litert(data, 8, reference="litert-xnnpack")
    assert "DEPTH_TO_SPACE" in result.nodes[1].nnapi_ops


def test_max_unpooling_of_other_indices_is_reported():
    g = GraphBuilder()
    v, i = g.input("values", [1, 2, 2, 1]), g.input("indices", [1, 2, 2, 1])
    u = g.tensor("u", [1, 4, 4, 1])
    g.custom("MaxUnpooling2D", [v, i], [u], _pool_params(VALID, 2, 2, 2, 2))
    g.output(u)
    node = convert(g.finish()).nodes[0]
    assert node.reason_code == "custom_operator" and "MaxPoolingWithArgmax2D" in node.reason


def _mediapipe_transform_tensor_bilinear(x, matrix, oh, ow):
    """MediaPipe's TransformTensorBilinear v2 kernel, loop for loop, with its float / double mix."""
    f = np.float32
    m = matrix.reshape(16).astype(f)
    xt, yt = m[0:4].copy(), m[4:8].copy()
    xt[3] = f(np.float64(xt[3]) + (np.float64(xt[0]) * 0.5 + np.float64(xt[1]) * 0.5 - 0.5))
    yt[3] = f(np.float64(yt[3]) + (np.float64(yt[0]) * 0.5 + np.float64(yt[1]) * 0.5 - 0.5))
    _, h, w, c = x.shape
    out = np.zeros((1, oh, ow, c), f)

    def read(r, q, ch):
        return f(0) if r < 0 or q < 0 or r >= h or q >= w else x[0, r, q, ch]
    for oy, ox in np.ndindex(oh, ow):
        coord = np.array([ox, oy, 0, 1], f)
        tx = f(f(f(xt[0] * coord[0] + xt[1] * coord[1]) + xt[2] * coord[2]) + xt[3] * coord[3])
        ty = f(f(f(yt[0] * coord[0] + yt[1] * coord[1]) + yt[2] * coord[2]) + yt[3] * coord[3])
        if tx < 0 or tx > w - 1 or ty < 0 or ty > h - 1:
            continue
        fx, fy = int(np.floor(tx)), int(np.floor(ty))
        rx, ly = f(tx - np.floor(tx)), f(ty - np.floor(ty))
        for ch in range(c):
            q11, q21, q12, q22 = read(fy, fx, ch), read(fy, fx + 1, ch), read(fy + 1, fx, ch), read(fy + 1, fx + 1, ch)
            upper = f((1.0 - np.float64(rx)) * np.float64(q11) + np.float64(f(rx * q21)))
            lower = f((1.0 - np.float64(rx)) * np.float64(q12) + np.float64(f(rx * q22)))
            out[0, oy, ox, ch] = f(np.float64(f(ly * lower)) + (1.0 - np.float64(ly)) * np.float64(upper))
    return out


@pytest.mark.parametrize("angle,scale,shift", [(0.0, 1.0, (5.0, 4.0)), (0.4, 0.7, (3.0, -1.5)),
                                               (-1.1, 1.9, (-2.0, 4.0))])
def test_transform_tensor_bilinear_is_close_to_mediapipe_kernel(angle, scale, shift):
    h, w, c, oh, ow = 9, 11, 3, 6, 8
    g = GraphBuilder()
    x = g.input("x", [1, h, w, c])
    m = g.input("matrix", [1, 4, 4])
    y = g.tensor("y", [1, oh, ow, c])
    g.custom("TransformTensorBilinear", [x, m], [y],
             bytes(flexbuffers.Dumps({"output_height": oh, "output_width": ow})), version=2)
    g.output(y)
    result = convert(g.finish())
    assert result.complete, result.unsupported
    assert max(n.min_feature_level for n in result.nodes) == 4
    rng = np.random.default_rng(4)
    image = (10 * rng.standard_normal((1, h, w, c))).astype(np.float32)
    ca, sa = np.cos(angle) * scale, np.sin(angle) * scale
    matrix = np.array([[ca, -sa, 0, shift[0]], [sa, ca, 0, shift[1]], [0, 0, 1, 0], [0, 0, 0, 1]],
                      np.float32).reshape(1, 4, 4)
    got, = run_converted(result, [image, matrix])
    want = _mediapipe_transform_tensor_bilinear(image, matrix, oh, ow)
    assert (want == 0).any() and (want != 0).any()  # points inside and outside the input
    bound = 6 * 2.0 ** -24 * 4 * np.abs(image).max()  # the module docstring's bound for points inside
    np.testing.assert_allclose(got, want, rtol=0, atol=bound)


def _mediapipe_landmarks_to_matrix(points, o):
    """MediaPipe's Landmarks2TransformMatrix v2 kernel in float32 (numpy's float32 atan2 / cos / sin)."""
    f = np.float32
    p = points.reshape(-1, 3).astype(f)
    left, right = p[o["left_rotation_idx"]], p[o["right_rotation_idx"]]
    r = f(f(o["target_rotation_radians"]) - np.arctan2(f(right[1] - left[1]), f(right[0] - left[0])))
    c, s = np.cos(r), np.sin(r)
    sub = p[o["subset_idxs"]]
    xr, yr = f(c * sub[:, 0]) + f(-s * sub[:, 1]), f(s * sub[:, 0]) + f(c * sub[:, 1])
    x_lo, x_hi, y_lo, y_hi = xr.min(), xr.max(), yr.min(), yr.max()
    cx, cy = f(x_lo + x_hi) / f(2), f(y_lo + y_hi) / f(2)
    ci, si = np.cos(-r), np.sin(-r)
    crop_x, crop_y = f(ci * cx) + f(-si * cy), f(si * cx) + f(ci * cy)
    scale_x = f(f(o["scale_x"]) * f(x_hi - x_lo)) / f(o["output_width"])
    scale_y = f(f(o["scale_y"]) * f(y_hi - y_lo)) / f(o["output_height"])
    cr, sr = np.cos(-r), -np.sin(-r)
    m00, m01, m10, m11 = f(cr * scale_x), f(sr * scale_y), f(np.sin(-r) * scale_x), f(cr * scale_y)
    shx, shy = f(-(o["output_width"] / 2.0)), f(-(o["output_height"] / 2.0))
    return np.array([[m00, m01, 0, f(f(m00 * shx) + f(m01 * shy)) + crop_x],
                     [m10, m11, 0, f(f(m10 * shx) + f(m11 * shy)) + crop_y],
                     [0, 0, 1, 0], [0, 0, 0, 1]], f).reshape(1, 4, 4)


@pytest.mark.parametrize("target", [0.0, 1.2])
def test_landmarks_to_transform_matrix_is_close_to_mediapipe_kernel(target):
    options = {"left_rotation_idx": 3, "right_rotation_idx": 11, "output_height": 16, "output_width": 12,
               "scale_x": 1.5, "scale_y": 1.25, "subset_idxs": [3, 11, 0, 5, 7, 9, 2],  # odd: the last pairs itself
               "target_rotation_radians": target}
    g = GraphBuilder()
    lm = g.input("landmarks", [1, 20, 3])
    y = g.tensor("matrix", [1, 4, 4])
    g.custom("Landmarks2TransformMatrix", [lm], [y], bytes(flexbuffers.Dumps(options)), version=2)
    g.output(y)
    result = convert(g.finish())
    assert result.complete, result.unsupported
    rng = np.random.default_rng(6)
    for _ in range(5):
        points = (100 * rng.random((1, 20, 3))).astype(np.float32)
        got, = run_converted(result, [points])
        want = _mediapipe_landmarks_to_matrix(points, options)
        rotation = abs(target) + np.pi
        bound = 8 * 2.0 ** -24 * (1 + rotation) * np.abs(points).max()  # the module docstring's bound
        np.testing.assert_allclose(got, want, rtol=0, atol=bound)


def test_landmarks_to_transform_matrix_checks_its_options():
    g = GraphBuilder()
    lm = g.input("landmarks", [1, 468, 3])
    y = g.tensor("matrix", [1, 4, 4])
    g.custom("Landmarks2TransformMatrix", [lm], [y], bytes(flexbuffers.Dumps({"left_rotation_idx": 2})), version=2)
    g.output(y)
    node = convert(g.finish()).nodes[0]
    assert node.reason_code == "unsupported_attribute" and "subset_idxs" in node.reason


def test_litert_xnnpack_layerwise_and_partitions(tmp_path, capsys):
    """Under XNNPACK only the delegate's boundary tensors keep values: layerwise and per-partition
    checks use those (every partition boundary of this model is one)."""
    import json
    from converters.cli import main
    from tests.converters.test_coverage import gapped_model
    path = tmp_path / "tconv.tflite"
    path.write_bytes(_transpose_conv_bias((1, 3, 3, 2), (2, 2, 2, 2), SAME, 2, 2))
    assert main(["parity", str(path), "--reference", "litert-xnnpack", "--layerwise"]) == 0
    gapped = tmp_path / "gapped.tflite"
    gapped_model(gapped)
    capsys.readouterr()
    assert main(["parity", str(gapped), "--reference", "litert-xnnpack", "--partial", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reference"] == "litert-xnnpack" and len(report["partitions"]) == 3
    assert all(p["passed"] for p in report["partitions"])

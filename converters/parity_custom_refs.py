"""Independent numpy references for the MediaPipe custom operators that LiteRT's built-in kernels lack, so that
parity can chain the framework's segments around them and compare a model's outputs end to end.

Written from the semantics of MediaPipe's kernels (mediapipe/util/tflite/operations/*.cc), in their order of
float32 operations, double precision where the kernel computes in double; nothing here reuses the converter's
NNAPI compositions (converters/tflite/ops/mediapipe*.py): the point is a second, separate implementation.

- Convolution2DTransposeBias: every output starts at the bias, each input pixel adds input * filter to the
  output pixels its window covers (filter OHWI; SAME pads max(0, kernel - (extent - 1) % stride - 1) in total,
  the smaller half before); the input channels are summed by a float32 matrix product, not one at a time as
  the kernel does: another order of float32 additions, so within float32 rounding of the kernel.
- TransformLandmarks (version 2): (x, y) -> (m00 x + m01 y + m02 0 + m03, m10 x + m11 y + m12 0 + m13), z
  kept; the first batch only.
- TransformTensorBilinear (version 2): output pixel (x, y) samples the input at the first two matrix rows
  applied to (x, y, 0, 1), after the align-corners shift m[r][3] += m[r][0] / 2 + m[r][1] / 2 - 1 / 2 (in
  double); points outside [0, W - 1] x [0, H - 1] give 0, neighbours outside the input read 0; the bilinear
  blend typed as the kernel's expressions are ((1 - w) q in double, w q in float32), rounded to float32 per row
  and at the end.
- Landmarks2TransformMatrix (version 2): rotation r = target - atan2(dy, dx) of the left -> right landmark,
  the subset's landmarks rotated by r, their bounding box, its centre rotated back, and the 4x4 product
  shift(centre) * rotation(-r) * scale(scale_x w / out_w, scale_y h / out_h) * shift(-out_w / 2, -out_h / 2),
  each product a float32 sum over k in order.
- MaxPoolingWithArgmax2D: per window (TFLite's SAME / VALID output size and padding), the first strictly
  greater value in row-major order starting from the lowest float (NaNs never win), clamped to the fused
  activation's range, and its index in the window, fy * filter_width + fx + 0.1.
- MaxUnpooling2D: an output of the input's size times the filter's, zeros, each value written at the window
  position its index names (padding as TFLite computes it for that output); positions outside are skipped.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

F32 = np.float32


class NoReference(Exception):
    """The custom operator has no independent reference here, or its options cannot be read."""


def _flex_options(node) -> dict:
    import flatbuffers.flexbuffers as flexbuffers
    if not node.custom_options:
        return {}
    try:
        options = flexbuffers.Loads(node.custom_options)
    except Exception as e:  # noqa: BLE001 - flexbuffers raises assorted errors on malformed bytes
        raise NoReference(f"malformed custom options ({type(e).__name__})") from None
    return options if isinstance(options, dict) else {}


def _struct_options(node, names: tuple) -> dict:
    data = node.custom_options or b""
    if len(data) < 4 * len(names):
        raise NoReference(f"custom options hold {len(data)} bytes, {4 * len(names)} expected")
    return dict(zip(names, (int(v) for v in np.frombuffer(data[:4 * len(names)], "<i4"))))


def transpose_conv_bias(node, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    p = _struct_options(node, ("padding", "stride_width", "stride_height"))
    sh, sw = p["stride_height"], p["stride_width"]
    n, ih, iw, _ = x.shape
    oc, kh, kw, _ = w.shape
    pad_h = max(0, kh - (ih - 1) % sh - 1) if p["padding"] == 1 else 0   # 1: TfLitePadding SAME
    pad_w = max(0, kw - (iw - 1) % sw - 1) if p["padding"] == 1 else 0
    oh, ow = sh * (ih - 1) + kh - pad_h, sw * (iw - 1) + kw - pad_w
    out = np.empty((n, oh, ow, oc), F32)
    out[:] = b.astype(F32)
    top, left = pad_h // 2, pad_w // 2
    for y in range(ih):
        for xx in range(iw):
            for fy in range(kh):
                oy = y * sh - top + fy
                if not 0 <= oy < oh:
                    continue
                for fx in range(kw):
                    ox = xx * sw - left + fx
                    if 0 <= ox < ow:
                        # sum over input channels for every output channel: [n, ic] @ [ic, oc]
                        out[:, oy, ox, :] += (x[:, y, xx, :].astype(F32) @ w[:, fy, fx, :].astype(F32).T).astype(F32)
    return out


POOL_FIELDS = ("padding", "stride_width", "stride_height", "filter_width", "filter_height", "activation")
LOWEST = float(np.finfo(np.float32).min)
# TFLite's CalculateActivationRange for float: RELU, RELU_N1_TO_1, RELU6; anything else no clamp
ACTIVATION = {1: (0.0, float(np.finfo(np.float32).max)), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def _compute_padding(stride: int, in_size: int, filter_size: int, out_size: int) -> int:
    return max(0, ((out_size - 1) * stride + filter_size - in_size) // 2)


def max_pool_argmax(node, x: np.ndarray) -> list:
    p = _struct_options(node, POOL_FIELDS)
    sh, sw, fh, fw = p["stride_height"], p["stride_width"], p["filter_height"], p["filter_width"]
    n, ih, iw, c = x.shape
    size = {1: lambda i, f, s: (i + s - 1) // s, 2: lambda i, f, s: (i - f + s) // s}.get(p["padding"])
    if size is None or min(sh, sw, fh, fw) <= 0:
        raise NoReference(f"MaxPoolingWithArgmax2D options {p} are not a pooling the kernel runs")
    oh, ow = size(ih, fh, sh), size(iw, fw, sw)
    top, left = _compute_padding(sh, ih, fh, oh), _compute_padding(sw, iw, fw, ow)
    lo, hi = ACTIVATION.get(p["activation"], (-np.inf, np.inf))
    values, indices = np.empty((n, oh, ow, c), F32), np.empty((n, oh, ow, c), F32)
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                y0, x0 = oy * sh - top, ox * sw - left
                for ch in range(c):
                    best, at = LOWEST, 0
                    for fy in range(max(0, -y0), min(fh, ih - y0)):
                        for fx in range(max(0, -x0), min(fw, iw - x0)):
                            v = float(x[b, y0 + fy, x0 + fx, ch])
                            if v > best:
                                best, at = v, fy * fw + fx
                    values[b, oy, ox, ch] = min(max(best, lo), hi)
                    indices[b, oy, ox, ch] = F32(at) + F32(0.1)
    return [values, indices]


def max_unpooling(node, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    p = _struct_options(node, POOL_FIELDS)
    sh, sw, fh, fw = p["stride_height"], p["stride_width"], p["filter_height"], p["filter_width"]
    if min(sh, sw, fh, fw) <= 0:
        raise NoReference(f"MaxUnpooling2D options {p} are not an unpooling the kernel runs")
    n, ih, iw, c = x.shape
    oh, ow = ih * fh, iw * fw
    top, left = _compute_padding(sh, oh, fh, ih), _compute_padding(sw, ow, fw, iw)
    out = np.zeros((n, oh, ow, c), F32)
    for b in range(n):
        for y in range(ih):
            for xx in range(iw):
                for ch in range(c):
                    k = int(indices[b, y, xx, ch])   # the kernel's float -> int conversion: toward zero
                    oy, ox = y * sh - top + k // fw, xx * sw - left + k % fw
                    if 0 <= oy < oh and 0 <= ox < ow:
                        out[b, oy, ox, ch] = x[b, y, xx, ch]
    return out


def _dot4(row: np.ndarray, x, y) -> np.ndarray:
    """DotProduct of the matrix row with (x, y, 0, 1), float32 left to right."""
    acc = F32(row[0]) * x
    acc = (acc + F32(row[1]) * y).astype(F32)
    acc = (acc + F32(row[2]) * F32(0)).astype(F32)
    return (acc + F32(row[3])).astype(F32)


def transform_landmarks(node, landmarks: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    m = matrix.astype(F32).reshape(-1)
    out = landmarks.astype(F32).copy()
    x, y = out[0, :, 0].copy(), out[0, :, 1].copy()
    out[0, :, 0] = _dot4(m[0:4], x, y)
    out[0, :, 1] = _dot4(m[4:8], x, y)
    return out


def transform_tensor_bilinear(node, image: np.ndarray, matrix: np.ndarray, out_shape) -> np.ndarray:
    o = _flex_options(node)
    oh = int(o.get("output_height", out_shape[1]))
    ow = int(o.get("output_width", out_shape[2]))
    m = matrix.astype(F32).reshape(-1)
    rows = []
    for r in (m[0:4].copy(), m[4:8].copy()):   # the align-corners shift, evaluated in double
        r[3] = F32(float(r[3]) + (float(r[0]) * 0.5 + float(r[1]) * 0.5 - 0.5))
        rows.append(r)
    _, ih, iw, c = image.shape
    img = image[0].astype(F32)
    ys, xs = np.meshgrid(np.arange(oh, dtype=F32), np.arange(ow, dtype=F32), indexing="ij")
    tx, ty = _dot4(rows[0], xs, ys), _dot4(rows[1], xs, ys)
    out = np.zeros((1, oh, ow, c), F32)
    for oy in range(oh):
        for ox in range(ow):
            px, py = float(tx[oy, ox]), float(ty[oy, ox])
            if px < 0.0 or px > iw - 1 or py < 0.0 or py > ih - 1:
                continue
            fx, fy = int(np.floor(px)), int(np.floor(py))

            def at(h: int, w_: int) -> np.ndarray:
                if h < 0 or w_ < 0 or h >= ih or w_ >= iw:
                    return np.zeros(c, np.float64)
                return img[h, w_].astype(np.float64)
            right, lower = F32(px - fx), F32(py - fy)
            # (1.0 - w) * q is double, w * q float32 (both factors float), as the kernel's expressions are typed
            upper_v = ((1.0 - float(right)) * at(fy, fx) + (right * at(fy, fx + 1).astype(F32))).astype(F32)
            lower_v = ((1.0 - float(right)) * at(fy + 1, fx) + (right * at(fy + 1, fx + 1).astype(F32))).astype(F32)
            out[0, oy, ox] = ((lower * lower_v).astype(np.float64) + (1.0 - float(lower)) * upper_v).astype(F32)
    return out


def _matmul_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The kernels' matrix products: each entry a float32 sum over k, from 0, in order."""
    n, inner, mcols = a.shape[0], a.shape[1], b.shape[1]
    out = np.zeros((n, mcols), F32)
    for r in range(n):
        for col in range(mcols):
            s = F32(0)
            for k in range(inner):
                s = F32(s + F32(a[r, k] * b[k, col]))
            out[r, col] = s
    return out


def landmarks_to_transform_matrix(node, landmarks: np.ndarray) -> np.ndarray:
    o = _flex_options(node)
    try:
        left, right = int(o["left_rotation_idx"]), int(o["right_rotation_idx"])
        subset = [int(i) for i in o["subset_idxs"]]
        out_w, out_h = int(o["output_width"]), int(o["output_height"])
        scale_x, scale_y = F32(o["scale_x"]), F32(o["scale_y"])
    except (KeyError, TypeError, ValueError) as e:
        raise NoReference(f"Landmarks2TransformMatrix options lack {e}") from None
    target = F32(o.get("target_rotation_radians", 0.0))
    pts = landmarks.astype(F32).reshape(-1, 3)
    dy, dx = F32(pts[right, 1] - pts[left, 1]), F32(pts[right, 0] - pts[left, 0])
    rot = F32(target - F32(np.arctan2(dy, dx)))
    c, s = F32(np.cos(rot)), F32(np.sin(rot))
    rotation = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], F32)
    c_inv, s_inv = F32(np.cos(-rot)), F32(np.sin(-rot))
    inverse = np.array([[c_inv, -s_inv, 0], [s_inv, c_inv, 0], [0, 0, 1]], F32)
    chosen = np.array([[pts[i, 0], pts[i, 1], F32(1)] for i in subset], F32)
    rotated = _matmul_f32(rotation, chosen.T).T
    lo, hi = rotated[0].copy(), rotated[0].copy()
    for p in rotated[1:]:   # the kernel's strict comparisons, first landmark first
        hi[:2] = np.where(hi[:2] < p[:2], p[:2], hi[:2])
        lo[:2] = np.where(lo[:2] > p[:2], p[:2], lo[:2])
    width, height = F32(hi[0] - lo[0]), F32(hi[1] - lo[1])
    centre = lo.copy()
    centre[0], centre[1] = F32(F32(centre[0] + hi[0]) / F32(2)), F32(F32(centre[1] + hi[1]) / F32(2))
    centre = _matmul_f32(inverse, centre.reshape(3, 1)).reshape(3)
    r = F32(-rot)
    cr, sr = F32(np.cos(r)), F32(np.sin(r))
    sx, sy = F32(F32(scale_x * width) / F32(out_w)), F32(F32(scale_y * height) / F32(out_h))
    shift2_x, shift2_y = F32(-1.0 * (out_w / 2.0)), F32(-1.0 * (out_h / 2.0))
    t = np.eye(4, dtype=F32)
    for factor in ([[1, 0, 0, centre[0]], [0, 1, 0, centre[1]], [0, 0, 1, 0], [0, 0, 0, 1]],
                   [[cr, -sr, 0, 0], [sr, cr, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
                   [[sx, 0, 0, 0], [0, sy, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
                   [[1, 0, 0, shift2_x], [0, 1, 0, shift2_y], [0, 0, 1, 0], [0, 0, 0, 1]]):
        t = _matmul_f32(t, np.array(factor, F32))
    return t.reshape(1, 4, 4)


# custom operator name -> fn(node, input arrays..., [output shape]) -> output array
CUSTOM_REFERENCES: dict[str, Callable] = {
    "Convolution2DTransposeBias": transpose_conv_bias,
    "TransformLandmarks": transform_landmarks,
    "TransformTensorBilinear": transform_tensor_bilinear,
    "Landmarks2TransformMatrix": landmarks_to_transform_matrix,
    "MaxPoolingWithArgmax2D": max_pool_argmax,
    "MaxUnpooling2D": max_unpooling,
}
NEEDS_OUTPUT_SHAPE = {"TransformTensorBilinear"}


def run_custom(node, inputs: list, output_shape) -> list:
    """The custom node's outputs from its input arrays; NoReference when there is no reference for it."""
    op = node.op[len("CUSTOM:"):]
    fn = CUSTOM_REFERENCES.get(op)
    if fn is None:
        raise NoReference(f"parity has no independent reference for the custom operator {op}")
    version = getattr(node, "version", None)
    if op in ("TransformLandmarks", "TransformTensorBilinear", "Landmarks2TransformMatrix") and version not in (2, None):
        raise NoReference(f"{op} version {version}: the reference implements version 2")
    out = fn(node, *inputs, output_shape) if op in NEEDS_OUTPUT_SHAPE else fn(node, *inputs)
    return out if isinstance(out, list) else [out]

"""Parity's numpy references of MediaPipe's custom operators, each against values computed by hand from the
kernels' documented semantics (mediapipe/util/tflite/operations/*.cc)."""
from types import SimpleNamespace

import flatbuffers.flexbuffers as flexbuffers
import numpy as np
import pytest

from converters.parity_custom_refs import NoReference, run_custom


def _node(op: str, options: bytes = b"", version: int = 2):
    return SimpleNamespace(op=f"CUSTOM:{op}", custom_options=options, version=version)


def test_transpose_conv_bias_valid_places_each_pixel_times_the_filter_plus_the_bias():
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    w = np.array([1, 10, 100, 1000], np.float32).reshape(1, 2, 2, 1)   # OHWI
    node = _node("Convolution2DTransposeBias", np.array([2, 2, 2], "<i4").tobytes(), 1)  # VALID, stride 2x2
    (y,) = run_custom(node, [x, w, np.array([0.5], np.float32)], None)
    by_hand = np.array([[1, 10, 2, 20], [100, 1000, 200, 2000], [3, 30, 4, 40], [300, 3000, 400, 4000]]) + 0.5
    np.testing.assert_array_equal(y.reshape(4, 4), by_hand)


def test_transpose_conv_bias_same_crops_the_padding_smaller_half_first():
    # 2x2 input, 3x3 ones filter, stride 2: SAME pads max(0, 3 - 1 % 2 - 1) = 1 in total: 0 before, 1 after,
    # so the output is 2 * 1 + 3 - 1 = 4 wide; overlapping windows add at row / column 2
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    w = np.ones((1, 3, 3, 1), np.float32)
    node = _node("Convolution2DTransposeBias", np.array([1, 2, 2], "<i4").tobytes(), 1)
    y = run_custom(node, [x, w, np.zeros(1, np.float32)], None)[0].reshape(4, 4)
    by_hand = np.array([[1, 1, 3, 2], [1, 1, 3, 2], [4, 4, 10, 6], [3, 3, 7, 4]], np.float32)
    np.testing.assert_array_equal(y, by_hand)


def test_transform_landmarks_maps_xy_by_the_first_two_rows_and_keeps_z():
    m = np.array([[2, 0, 0, 1], [0, 3, 0, -1], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32).reshape(1, 4, 4)
    lm = np.array([[[1, 2, 7], [-1, 0.5, 8]]], np.float32)
    (y,) = run_custom(_node("TransformLandmarks"), [lm, m], None)
    np.testing.assert_array_equal(y, [[[3, 5, 7], [-1, 0.5, 8]]])


def test_transform_tensor_bilinear_identity_copies_and_a_half_scale_blends():
    image = np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1)   # rows 0..3, 4..7, 8..11
    eye = np.eye(4, dtype=np.float32).reshape(1, 4, 4)
    node = _node("TransformTensorBilinear", flexbuffers.Dumps({"output_height": 3, "output_width": 4}))
    np.testing.assert_array_equal(run_custom(node, [image, eye], (1, 3, 4, 1))[0], image)
    # x' = 0.5 x + (0 + 0.5 * 0.5 - 0.5) = 0.5 x - 0.25 (the align-corners shift), y' = y:
    # x = 0 -> -0.25, outside: 0; x = 1 -> 0.25: 0.75 * q0 + 0.25 * q1; x = 2 -> 0.75; x = 3 -> 1.25
    half = np.array([[0.5, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32).reshape(1, 4, 4)
    y = run_custom(node, [image, half], (1, 3, 4, 1))[0][0, :, :, 0]
    row0 = [0, 0.25, 0.75, 1.25]
    np.testing.assert_allclose(y, [row0, [0] + [v + 4 for v in row0[1:]], [0] + [v + 8 for v in row0[1:]]],
                               rtol=0, atol=1e-6)


def _matrix_node(left=0, right=1, subset=(0, 1, 2, 3), out=4):
    return _node("Landmarks2TransformMatrix", flexbuffers.Dumps({
        "left_rotation_idx": left, "right_rotation_idx": right, "subset_idxs": list(subset), "output_width": out,
        "output_height": out, "scale_x": 1.0, "scale_y": 1.0, "target_rotation_radians": 0.0}))


def test_landmarks_to_transform_matrix_without_rotation_is_shift_scale_shift():
    # left (0, 0) -> right (2, 0): angle 0; box x 0..2, y 0..4: size 2 x 4, centre (1, 2); output 4 x 4:
    # scale (2 / 4, 4 / 4), shift2 (-2, -2): row 0 = [0.5, 0, 0, 0.5 * -2 + 1], row 1 = [0, 1, 0, -2 + 2]
    lm = np.array([[[0, 0, 9], [2, 0, 9], [0, 4, 9], [2, 4, 9]]], np.float32)
    (y,) = run_custom(_matrix_node(), [lm], None)
    np.testing.assert_array_equal(y, [[[0.5, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]])


def test_landmarks_to_transform_matrix_with_a_quarter_turn():
    # left (0, 0) -> right (0, 2): atan2 = pi / 2, r = -pi / 2: rotated (x, y) -> (y, -x): box x 0..2, y -4..0,
    # size 2 x 4, centre (1, -2), rotated back: (2, 1); shift(2, 1) R(pi / 2) scale(0.5, 1) shift(-2, -2):
    # row 0 = [0, -1, 0, 0 * -2 + -1 * -2 + 2], row 1 = [0.5, 0, 0, 0.5 * -2 + 0 + 1]
    lm = np.array([[[0, 0, 0], [0, 2, 0], [4, 0, 0], [4, 2, 0]]], np.float32)
    (y,) = run_custom(_matrix_node(), [lm], None)
    np.testing.assert_allclose(y, [[[0, -1, 0, 4], [0.5, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]], rtol=0, atol=1e-6)


def _pool_options(padding, stride, window, activation=0) -> bytes:
    """TfLitePoolParams: padding (1 SAME, 2 VALID), stride w / h, filter w / h, activation, computed padding."""
    return np.array([padding, stride, stride, window, window, activation, 0, 0], "<i4").tobytes()


def test_max_pooling_with_argmax_keeps_the_first_largest_and_its_window_position():
    x = np.array([[1, 5, 2, 2],
                  [3, 5, 0, -1],
                  [-4, -2, 7, 7],
                  [-3, -5, 7, 9]], np.float32).reshape(1, 4, 4, 1)
    node = _node("MaxPoolingWithArgmax2D", _pool_options(2, 2, 2), 1)        # VALID, 2x2 windows, stride 2
    values, indices = run_custom(node, [x], None)
    # windows: [[1, 5], [3, 5]] -> 5 at (0, 1) (the first of the equal fives); [[2, 2], [0, -1]] -> 2 at (0, 0);
    # [[-4, -2], [-3, -5]] -> -2 at (0, 1); [[7, 7], [7, 9]] -> 9 at (1, 1): index fy * 2 + fx + 0.1
    np.testing.assert_array_equal(values.reshape(2, 2), [[5, 2], [-2, 9]])
    np.testing.assert_array_equal(indices.reshape(2, 2), np.float32([[1.1, 0.1], [1.1, 3.1]]))
    relu = _node("MaxPoolingWithArgmax2D", _pool_options(2, 2, 2, activation=1), 1)
    np.testing.assert_array_equal(run_custom(relu, [x], None)[0].reshape(2, 2), [[5, 2], [0, 9]])
    # SAME, 3x3 windows, stride 2 on 4x4: output 2x2, padding ((2 - 1) * 2 + 3 - 4) / 2 = 0, so the last
    # windows hang over the edge (rows / columns 2..3 only); the index counts in the 3-wide window:
    # (0, 0): 7 at (2, 2) -> 8; (0, 1): 7 at (2, 0) -> 6; (1, 0): 7 at (0, 2) -> 2; (1, 1): 9 at (1, 1) -> 4
    same = _node("MaxPoolingWithArgmax2D", _pool_options(1, 2, 3), 1)
    values, indices = run_custom(same, [x], None)
    np.testing.assert_array_equal(values.reshape(2, 2), [[7, 7], [7, 9]])
    np.testing.assert_array_equal(indices.reshape(2, 2), np.float32([[8.1, 6.1], [2.1, 4.1]]))


def test_max_unpooling_writes_each_value_where_its_index_points():
    values = np.array([5, 2, -2, 9], np.float32).reshape(1, 2, 2, 1)
    indices = np.float32([1.1, 0.1, 1.1, 3.1]).reshape(1, 2, 2, 1)
    (y,) = run_custom(_node("MaxUnpooling2D", _pool_options(2, 2, 2), 1), [values, indices], None)
    np.testing.assert_array_equal(y.reshape(4, 4), [[0, 5, 2, 0], [0, 0, 0, 0], [0, -2, 0, 0], [0, 0, 0, 9]])


def test_operators_without_a_reference_say_so():
    with pytest.raises(NoReference, match="no independent reference for the custom operator NoSuchOp"):
        run_custom(_node("NoSuchOp"), [], None)
    with pytest.raises(NoReference, match="version 1"):
        run_custom(_node("TransformLandmarks", version=1), [], None)

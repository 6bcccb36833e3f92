"""Shape inference of the convolution, pooling, resize, normalization and detection specs: hand-computed
cases for the forms the CTS vectors leave out (NCHW with dilation, transposed convolution's VALID and
SAME-with-output-shape forms, resize scales, fast-NMS SSD post-processing, ...), a cross-check of the
window geometry against what the executor's kernels produce at run time, and malformed operations
that must leave shapes unknown rather than raise."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import executor  # noqa: F401  (registers the numpy executor as nnapi's backend)
import nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.shapes import infer_shapes

F32, F16 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16
SCALAR = {int: C.INT32, bool: C.BOOL, float: C.FLOAT32}


class In:
    """A model input tensor of known (0 = unknown) or unknown-rank (None) dimensions."""

    def __init__(self, dims, code=F32):
        self.dims, self.code = dims, code


def _const(m, value):
    if isinstance(value, tuple):           # (code, value): a typed constant
        code, value = value
    elif isinstance(value, np.ndarray):
        code = {np.dtype(np.int32): C.TENSOR_INT32, np.dtype(np.float32): F32}[value.dtype]
    else:
        code = SCALAR[type(value)]
    arr = np.asarray(value)
    i = m.add_operand(OperandType(code, list(arr.shape) if arr.ndim else None))
    m.set_operand_value(i, arr.astype(nnapi.operand.DTYPES[code]) if arr.ndim else value)
    return i


def infer(code, inputs, out_ranks, out_code=F32):
    """The inferred Shapes of the operation's outputs (declared with unknown extents of the given ranks;
    an out_code per output may be given as a list)."""
    m = nnapi.Model()
    ins, model_inputs = [], []
    for x in inputs:
        if isinstance(x, In):
            i = m.add_operand(OperandType(x.code, list(x.dims) if x.dims is not None else None))
            model_inputs.append(i)
        else:
            i = _const(m, x)
        ins.append(i)
    codes = out_code if isinstance(out_code, list) else [out_code] * len(out_ranks)
    outs = [m.add_operand(OperandType(c, [0] * r)) for c, r in zip(codes, out_ranks)]
    m.add_operation(code, ins, outs)
    m.identify_inputs_and_outputs(model_inputs, outs)
    shapes = infer_shapes(m)
    return [shapes[o] for o in outs]


SAME, VALID = 1, 2


# -- convolutions --------------------------------------------------------------------

def test_conv_implicit_nchw_with_dilation():
    flt, bias = np.ones((4, 3, 3, 3), np.float32), np.zeros(4, np.float32)
    # NCHW input: 3 channels, 7 x 9; stride 2, dilation 2 (effective filter 5)
    same = infer(Op.CONV_2D, [In((1, 3, 7, 9)), flt, bias, SAME, 2, 2, 0, True, 2, 2], [4])
    valid = infer(Op.CONV_2D, [In((1, 3, 7, 9)), flt, bias, VALID, 2, 2, 0, True, 2, 2], [4])
    assert same == [(1, 4, 4, 5)]          # ceil(7 / 2), ceil(9 / 2)
    assert valid == [(1, 4, 2, 3)]         # (7 - 5 + 2) // 2, (9 - 5 + 2) // 2


def test_conv_explicit_keeps_unknown_extents_unknown():
    flt, bias = np.ones((4, 3, 2, 5), np.float32), np.zeros(4, np.float32)
    # pads left 1, right 0, top 2, bottom 1; stride w 2, h 1
    got = infer(Op.CONV_2D, [In((2, 0, 6, 5)), flt, bias, 1, 0, 2, 1, 2, 1, 0], [4])
    assert got == [(2, 0, 3, 4)]           # width (6 - 2 + 2 + 1) // 2
    unknown_filter = infer(Op.CONV_2D, [In((2, 5, 6, 5)), In((0, 3, 2, 5)), bias, 1, 0, 2, 1, 2, 1, 0], [4])
    assert unknown_filter == [(2, 6, 3, 0)]  # spatial extents from the filter's known taps


def test_depthwise_and_grouped_channel_counts():
    dw = infer(Op.DEPTHWISE_CONV_2D, [In((1, 5, 5, 3)), np.ones((1, 3, 3, 6), np.float32),
                                      np.zeros(6, np.float32), VALID, 1, 1, 2, 0], [4])
    assert dw == [(1, 3, 3, 6)]
    grouped = infer(Op.GROUPED_CONV_2D, [In((1, 4, 5, 5)), np.ones((6, 2, 2, 2), np.float32),
                                         np.zeros(6, np.float32), SAME, 2, 2, 2, 0, True], [4])
    assert grouped == [(1, 6, 3, 3)]       # NCHW input [1, 4, 5, 5]: 5 x 5 / stride 2, SAME


def test_transpose_conv_forms():
    flt, bias = np.ones((3, 3, 3, 2), np.float32), np.zeros(3, np.float32)
    x = In((1, 4, 5, 2))
    valid = infer(Op.TRANSPOSE_CONV_2D, [x, flt, bias, np.array([1, 1, 1, 3], np.int32), VALID, 2, 2, 0, False], [4])
    assert valid == [(1, 9, 11, 3)]        # (in - 1) x 2 + 3, the output shape tensor is not used
    same = infer(Op.TRANSPOSE_CONV_2D, [x, flt, bias, np.array([1, 8, 10, 3], np.int32), SAME, 2, 2, 0, False], [4])
    assert same == [(1, 8, 10, 3)]         # the requested extents
    unknown = infer(Op.TRANSPOSE_CONV_2D, [x, flt, bias, In((4,), C.TENSOR_INT32), SAME, 2, 2, 0, False], [4])
    assert unknown == [(1, 0, 0, 3)]       # SAME padding depends on the (non-constant) output shape
    # explicit: pads left 1 right 0 top 0 bottom 2, stride w 1 h 2, NCHW input [1, 2, 4, 5]
    explicit = infer(Op.TRANSPOSE_CONV_2D, [In((1, 2, 4, 5)), flt, bias, 1, 0, 0, 2, 1, 2, 0, True], [4])
    assert explicit == [(1, 3, 7, 6)]      # h (4 - 1) x 2 + 3 - 2, w (5 - 1) + 3 - 1


def test_fully_connected_flattens_the_input():
    w, b = np.ones((5, 6), np.float32), np.zeros(5, np.float32)
    assert infer(Op.FULLY_CONNECTED, [In((2, 3, 4)), w, b, 0], [2]) == [(4, 5)]
    assert infer(Op.FULLY_CONNECTED, [In((2, 0, 4)), w, b, 0], [2]) == [(0, 5)]
    assert infer(Op.FULLY_CONNECTED, [In(None), w, b, 0], [2]) == [(0, 5)]


# -- pooling and resizing -----------------------------------------------------------------

def test_pooling_forms_and_layouts():
    explicit = infer(Op.MAX_POOL_2D, [In((1, 2, 6, 7)), 1, 1, 0, 1, 2, 2, 3, 2, 0, True], [4])
    assert explicit == [(1, 2, 3, 4)]      # NCHW: h (6 - 2 + 2 + 1) // 2, w (7 - 3 + 2 + 2) // 2
    implicit = infer(Op.AVERAGE_POOL_2D, [In((3, 6, 7, 2)), SAME, 3, 2, 2, 2, 0], [4])
    assert implicit == [(3, 3, 3, 2)]      # ceil(6 / 2), ceil(7 / 3)
    l2 = infer(Op.L2_POOL_2D, [In((1, 6, 7, 2)), VALID, 1, 1, 7, 6, 0], [4])
    assert l2 == [(1, 1, 1, 2)]
    # a padding not smaller than the filter is rejected by the kernel: unknown
    assert infer(Op.MAX_POOL_2D, [In((1, 6, 7, 2)), 2, 0, 0, 0, 1, 1, 2, 2, 0], [4]) == [(1, 5, 0, 2)]


def test_resize_sizes_and_scales():
    sizes = infer(Op.RESIZE_BILINEAR, [In((1, 3, 4, 2)), 5, 7], [4])
    assert sizes == [(1, 7, 5, 2)]
    scales = infer(Op.RESIZE_NEAREST_NEIGHBOR, [In((1, 2, 3, 4)), 1.5, 2.0, True], [4])
    assert scales == [(1, 2, 6, 6)]        # NCHW: h floor(3 x 2.0), w floor(4 x 1.5)
    f16 = infer(Op.RESIZE_BILINEAR, [In((1, 3, 5, 2), F16), (C.FLOAT16, 0.7), (C.FLOAT16, 1.0)], [4], F16)
    assert f16 == [(1, 3, 3, 2)]           # floor(5 x float16(0.7) = 3.49...)
    unknown = infer(Op.RESIZE_BILINEAR, [In((1, 0, 4, 2)), 1.5, 2.0], [4])
    assert unknown == [(1, 0, 6, 2)]


# -- normalization ----------------------------------------------------------------------

def test_normalizations_keep_the_shape():
    assert infer(Op.SOFTMAX, [In((2, 0, 5)), 1.0, 1], [3]) == [(2, 0, 5)]
    assert infer(Op.LOG_SOFTMAX, [In((4, 5)), 1.0, -1], [2]) == [(4, 5)]
    assert infer(Op.L2_NORMALIZATION, [In((3, 2))], [2]) == [(3, 2)]
    assert infer(Op.LOCAL_RESPONSE_NORMALIZATION, [In((1, 2, 2, 6)), 2, 1.0, 1.0, 0.5], [4]) == [(1, 2, 2, 6)]
    assert infer(Op.INSTANCE_NORMALIZATION, [In((1, 2, 2, 6)), 1.0, 0.0, 1e-4, False], [4]) == [(1, 2, 2, 6)]


# -- detection -------------------------------------------------------------------------

I32 = C.TENSOR_INT32


def test_box_transform_and_value_dependent_nms():
    got = infer(Op.AXIS_ALIGNED_BBOX_TRANSFORM, [In((5, 4)), In((5, 12)), In((5,), I32), In((2, 2))], [2])
    assert got == [(5, 12)]
    nms = infer(Op.BOX_WITH_NMS_LIMIT, [In((5, 3)), In((5, 12)), In((5,), I32), 0.1, -1, 0, 0.5, 1.0, 0.3],
                [1, 2, 1, 1], [F32, F32, I32, I32])
    assert nms == [(0,), (0, 4), (0,), (0,)]   # how many boxes survive depends on the scores
    proposals = infer(Op.GENERATE_PROPOSALS,
                      [In((1, 2, 3, 4)), In((1, 2, 3, 16)), In((4, 4)), In((1, 2)), 1.0, 1.0, 10, 5, 0.5, 1.0, False],
                      [1, 2, 1], [F32, F32, I32])
    assert proposals == [(0,), (0, 4), (0,)]


def test_detection_postprocessing_slots():
    head = [In((2, 10, 3)), In((2, 10, 4)), In((10, 4)), 10.0, 10.0, 5.0, 5.0]
    tail = [0.0, 0.5, False]
    outs = [2, 3, 2, 1], [F32, F32, I32, I32]
    regular = infer(Op.DETECTION_POSTPROCESSING, head + [True, 3, 2, 4] + tail, *outs)
    assert regular == [(2, 3), (2, 3, 4), (2, 3), (2,)]
    fast = infer(Op.DETECTION_POSTPROCESSING, head + [False, 3, 2, 4] + tail, *outs)
    assert fast == [(2, 6), (2, 6, 4), (2, 6), (2,)]   # max_detections x max_classes_per_detection


def test_heatmap_and_region_pooling_layouts():
    nchw = infer(Op.HEATMAP_MAX_KEYPOINT, [In((3, 5, 4, 4)), In((3, 4)), True], [2, 3])
    assert nchw == [(3, 5), (3, 5, 2)]
    nhwc = infer(Op.HEATMAP_MAX_KEYPOINT, [In((0, 4, 4, 5)), In((3, 4)), False], [2, 3])
    assert nhwc == [(3, 5), (3, 5, 2)]     # the box count from the boxes
    align = infer(Op.ROI_ALIGN, [In((1, 6, 8, 8)), In((4, 4)), In((4,), I32), 2, 3, 1.0, 1.0, 0, 0, True], [4])
    assert align == [(4, 6, 2, 3)]
    pool = infer(Op.ROI_POOLING, [In((1, 8, 8, 6)), In((0, 4)), In((4,), I32), 2, 3, 1.0, 1.0, False], [4])
    assert pool == [(0, 2, 3, 6)]


# -- malformed operations: unknown, never an exception -----------------------------------------

def test_malformed_operations_leave_shapes_unknown():
    flt, bias = np.ones((4, 3, 3, 3), np.float32), np.zeros(4, np.float32)
    # a non-constant layout: positions unknown
    assert infer(Op.CONV_2D, [In((1, 7, 9, 3)), flt, bias, SAME, 1, 1, 0, In(None, C.BOOL)], [4]) == [(0, 0, 0, 0)]
    assert infer(Op.CONV_2D, [In((7, 9, 3)), flt, bias, SAME, 1, 1, 0], [4]) == [(0, 0, 0, 0)]
    assert infer(Op.CONV_2D, [In((1, 7, 9, 3)), flt, bias, 5, 1, 1, 0], [4]) == [(1, 0, 0, 4)]      # bad padding
    assert infer(Op.CONV_2D, [In((1, 7, 9, 3)), flt, bias, SAME, -1, 0, 0], [4]) == [(1, 0, 0, 4)]  # bad strides
    assert infer(Op.CONV_2D, [In((1, 2, 2, 3)), flt, bias, 0, 0, 0, 0, 1, 1, 0], [4]) == [(1, 0, 0, 4)]  # no fit
    assert infer(Op.AVERAGE_POOL_2D, [In((1, 6, 7, 2)), SAME, 0, 0, 2, 2, 0], [4]) == [(1, 0, 0, 2)]
    assert infer(Op.RESIZE_BILINEAR, [In((1, 3, 4, 2)), -5, 0], [4]) == [(1, 0, 0, 2)]
    assert infer(Op.RESIZE_BILINEAR, [In((1, 3, 4, 2)), float("inf"), float("nan")], [4]) == [(1, 0, 0, 2)]
    assert infer(Op.TRANSPOSE_CONV_2D, [In((1, 4, 5, 2)), np.ones((3, 3, 3, 2), np.float32),
                                        np.zeros(3, np.float32), np.array([1, 8], np.int32), SAME, 2, 2, 0,
                                        False], [4]) == [(1, 0, 0, 3)]                   # short output shape
    assert infer(Op.DETECTION_POSTPROCESSING,
                 [In((2, 10, 3)), In((2, 10, 4)), In((10, 4)), 10.0, 10.0, 5.0, 5.0, False, -3, 2, 4, 0.0, 0.5,
                  False], [2, 3, 2, 1], [F32, F32, I32, I32]) == [(2, 0), (2, 0, 4), (2, 0), (2,)]


# -- the geometry against the kernels -----------------------------------------------------------

def _run(model, x):
    comp = nnapi.Compilation(model)
    comp.finish()
    ex = nnapi.Execution(comp)
    ex.set_input(0, x)
    ex.set_output(0, np.zeros(1 << 12, np.float32))
    ex.compute()
    return ex.get_output_operand_dimensions(0)


def _model(code, x_shape, rest):
    m = nnapi.Model()
    x = m.add_operand(OperandType(F32, list(x_shape)))
    ins = [x] + [_const(m, v) for v in rest]
    out = m.add_operand(OperandType(F32, [0, 0, 0, 0]))
    m.add_operation(code, ins, [out])
    m.identify_inputs_and_outputs([x], [out])
    return m, out


CONV = [(h, k, s, d, p, nchw) for h, k, s, d, p, nchw in
        itertools.product((5, 8), (1, 3), (1, 2, 3), (1, 2), (SAME, VALID), (False, True))
        if (k - 1) * d + 1 <= h]


@pytest.mark.parametrize("h, k, s, d, padding, nchw", CONV)
def test_conv_and_pool_geometry_matches_the_kernels(h, k, s, d, padding, nchw):
    w = h + 1
    shape = (1, 2, h, w) if nchw else (1, h, w, 2)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    flt, bias = np.ones((3, k, k, 2), np.float32), np.zeros(3, np.float32)
    cases = [(Op.CONV_2D, [flt, bias, padding, s, s, 0, nchw, d, d]),
             (Op.CONV_2D, [flt, bias, 1, 0, 0, 1, s, s, 0, nchw, d, d]),
             (Op.MAX_POOL_2D, [padding, s, s, k, k, 0, nchw]),
             (Op.TRANSPOSE_CONV_2D, [flt, bias, 0, 1, 1, 0, s, s, 0, nchw])]
    for oh, ow in ((h * s, w * s), (h * s - 1, w * s + 1)):   # the second: more than the input covers
        requested = np.array((1, 3, oh, ow) if nchw else (1, oh, ow, 3), np.int32)
        cases.append((Op.TRANSPOSE_CONV_2D, [flt, bias, requested, padding, s, s, 0, nchw]))
    for code, rest in cases:
        m, out = _model(code, shape, rest)
        inferred = infer_shapes(m)[out]
        m.finish()
        assert inferred == _run(m, x), (code.name, rest)


@pytest.mark.parametrize("scale_w, scale_h", [(1.5, 0.7), (2.0, 3.3), (0.34, 1.0)])
def test_resize_scales_match_the_kernel(scale_w, scale_h):
    x = np.ones((1, 7, 9, 2), np.float32)
    m, out = _model(Op.RESIZE_BILINEAR, x.shape, [scale_w, scale_h])
    inferred = infer_shapes(m)[out]
    m.finish()
    assert inferred == _run(m, x)

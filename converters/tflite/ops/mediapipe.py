"""MediaPipe's TFLite custom operators (mediapipe/util/tflite/operations/) -> NNAPI.

Their options are either a C parameter struct (TfLiteTransposeConvParams, TfLitePoolParams: read
with a numpy structured dtype of the struct's int32 fields) or a flexbuffer map (read with
flatbuffers.flexbuffers). TfLitePadding is 1 = SAME, 2 = VALID (0 = unknown: MediaPipe's kernels
then pad nothing).

- Convolution2DTransposeBias -> TRANSPOSE_CONV_2D with explicit padding: exact, the same sums.
- TransformLandmarks (version 2) -> SLICE / MUL / ADD: exact, the same float operations in the
  kernel's order.
- MaxPoolingWithArgmax2D and MaxUnpooling2D: see mediapipe_pool.py.
- TransformTensorBilinear and Landmarks2TransformMatrix (version 2): see mediapipe_transform.py
  (float32 where the kernel uses double in places, cos / sin without atan2; bounds stated there).
"""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name
from .nn_common import require_rank, static_shape

SAME, VALID = 1, 2  # TfLitePadding
# TfLiteTransposeConvParams's leading fields (newer TFLite appends fields the MediaPipe kernel ignores)
TRANSPOSE_CONV_PARAMS = np.dtype([("padding", "<i4"), ("stride_width", "<i4"), ("stride_height", "<i4")])


def custom_op_name(node) -> str:
    return node.op[len("CUSTOM:"):]


def struct_options(node, dtype: np.dtype) -> dict:
    """The leading fields of a C parameter struct stored as the operator's custom options."""
    data = node.custom_options or b""
    if len(data) < dtype.itemsize:
        raise Unsupported(Reason.ATTRIBUTE, f"{custom_op_name(node)}: custom options hold {len(data)} bytes, its "
                                            f"parameter struct needs {dtype.itemsize}")
    record = np.frombuffer(data[:dtype.itemsize], dtype)[0]
    return {k: int(record[k]) for k in dtype.names}


def float32_only(ctx, node, tensors) -> None:
    """MediaPipe's kernels take float32 tensors only."""
    for i in tensors:
        if i < 0 or np.dtype(ctx.tensor(i).dtype) != np.float32:
            what = name(ctx, i) if i >= 0 else "(absent)"
            raise Unsupported(Reason.OPERAND_TYPE, f"{custom_op_name(node)}: tensor {what} must be float32 "
                                                   f"(MediaPipe's kernel takes float32 only)")


def _transpose_padding(padding: int, extent: int, kernel: int, stride: int) -> tuple:
    """(head, tail) padding of MediaPipe's transposed convolution along one axis: SAME pads
    max(0, kernel - (extent - 1) % stride - 1) in total, the smaller half first."""
    if padding != SAME:
        return 0, 0
    total = max(0, kernel - (extent - 1) % stride - 1)
    return total // 2, total - total // 2


@converter("tflite", "CUSTOM:Convolution2DTransposeBias", versions=(1, 1))
def convolution_2d_transpose_bias(node, ctx):
    """Convolution2DTransposeBias -> TRANSPOSE_CONV_2D (explicit padding, bias added), exact."""
    if len(node.inputs) != 3 or len(node.outputs) != 1:
        raise Unsupported(Reason.INVALID, f"Convolution2DTransposeBias has {len(node.inputs)} inputs and "
                                          f"{len(node.outputs)} outputs; it takes 3 and gives 1")
    x, w, b = node.inputs
    float32_only(ctx, node, [x, w, b, node.outputs[0]])
    params = struct_options(node, TRANSPOSE_CONV_PARAMS)
    sw, sh = params["stride_width"], params["stride_height"]
    if sw <= 0 or sh <= 0:
        raise Unsupported(Reason.ATTRIBUTE, f"Convolution2DTransposeBias {name(ctx, node.outputs[0])}: strides "
                                            f"{sw}x{sh} must be positive")
    if params["padding"] not in (0, SAME, VALID):
        raise Unsupported(Reason.ATTRIBUTE, f"Convolution2DTransposeBias {name(ctx, node.outputs[0])}: padding "
                                            f"{params['padding']} is not a TfLitePadding")
    in_shape = static_shape(ctx, x, "input")
    require_rank(ctx, x, {4}, "input")
    w_shape = require_rank(ctx, w, {4}, "filter")
    static_shape(ctx, w, "filter")
    if in_shape[3] != w_shape[3] or ctx.shape(b) != (w_shape[0],):
        raise Unsupported(Reason.INVALID, f"Convolution2DTransposeBias: input {name(ctx, x)} {list(in_shape)}, "
                                          f"filter {name(ctx, w)} {list(w_shape)} (OHWI) and bias {name(ctx, b)} "
                                          f"{list(ctx.shape(b))} disagree")
    top, bottom = _transpose_padding(params["padding"], in_shape[1], w_shape[1], sh)
    left, right = _transpose_padding(params["padding"], in_shape[2], w_shape[2], sw)
    ctx.emit_form(Op.TRANSPOSE_CONV_2D, "explicit", [ctx.output(node.outputs[0])], input=ctx.operand(x),
                  filter=ctx.operand(w), bias=ctx.operand(b), pad_left=ctx.i32(left), pad_right=ctx.i32(right),
                  pad_top=ctx.i32(top), pad_bottom=ctx.i32(bottom), stride_w=ctx.i32(sw), stride_h=ctx.i32(sh),
                  fuse=ctx.i32(0), layout=ctx.boolean(False))


def operand_slice(ctx, operand: int, begin, size, label: str) -> int:
    """SLICE of a float32 operand."""
    out = ctx.temp(OperandType(C.TENSOR_FLOAT32, list(size)), label)
    ctx.emit_form(Op.SLICE, "default", [out], input=operand, begin=ctx.const(np.asarray(begin, np.int32)),
                  size=ctx.const(np.asarray(size, np.int32)))
    return out


def binary(ctx, op: Op, a: int, b: int, shape, label: str, code: C = C.TENSOR_FLOAT32, fuse: bool = True) -> int:
    """A broadcasting binary operation into a new operand of `shape` (fuse: the op has a FuseCode input)."""
    out = ctx.temp(OperandType(code, list(shape)), label)
    ctx.emit_form(op, "default", [out], input1=a, input2=b, **({"fuse": ctx.i32(0)} if fuse else {}))
    return out


def matrix_rows_as_columns(ctx, matrix_i: int, label: str) -> list:
    """The first two rows of a 4x4 transform matrix tensor (16 floats, row-major) as four [1, 2]
    operands: column k holds (m[0][k], m[1][k])."""
    if int(np.prod(static_shape(ctx, matrix_i, "matrix"))) != 16:
        raise Unsupported(Reason.INVALID, f"transform matrix {name(ctx, matrix_i)} has shape "
                                          f"{list(ctx.shape(matrix_i))}, not 16 elements (4x4)")
    square = ctx.temp(OperandType(C.TENSOR_FLOAT32, [4, 4]), f"{label}/matrix")
    ctx.emit_form(Op.RESHAPE, "default", [square], input=ctx.operand(matrix_i),
                  shape=ctx.const(np.asarray([4, 4], np.int32)))
    rows = operand_slice(ctx, square, [0, 0], [2, 4], f"{label}/rows")
    cols = ctx.temp(OperandType(C.TENSOR_FLOAT32, [4, 2]), f"{label}/columns")
    ctx.emit_form(Op.TRANSPOSE, "default", [cols], input=rows, perm=ctx.const(np.asarray([1, 0], np.int32)))
    return [operand_slice(ctx, cols, [k, 0], [1, 2], f"{label}/column{k}") for k in range(4)]


def affine_xy(ctx, x: int, y: int, columns: list, shape, label: str) -> int:
    """(m00 x + m01 y + m02 * 0 + m03, m10 x + m11 y + m12 * 0 + m13) with shape `shape` (last
    extent 2), summed left to right as MediaPipe's DotProduct of (x, y, 0, 1) does."""
    acc = binary(ctx, Op.MUL, x, columns[0], shape, f"{label}/m0x")
    acc = binary(ctx, Op.ADD, acc, binary(ctx, Op.MUL, y, columns[1], shape, f"{label}/m1y"), shape,
                  f"{label}/sum1")
    z_term = binary(ctx, Op.MUL, columns[2], ctx.const(np.zeros(1, np.float32)), [1, 2], f"{label}/m2z")
    acc = binary(ctx, Op.ADD, acc, z_term, shape, f"{label}/sum2")
    return binary(ctx, Op.ADD, acc, columns[3], shape, f"{label}/sum3")


@converter("tflite", "CUSTOM:TransformLandmarks", versions=(2, 2))
def transform_landmarks(node, ctx):
    """TransformLandmarks v2: landmarks [1, N, 2|3] mapped by the first two rows of a 4x4 matrix
    -> SLICE / MUL / ADD (z kept), exact."""
    if len(node.inputs) != 2 or len(node.outputs) != 1:
        raise Unsupported(Reason.INVALID, "TransformLandmarks takes 2 inputs and gives 1 output")
    lm, m = node.inputs
    float32_only(ctx, node, [lm, m, node.outputs[0]])
    shape = static_shape(ctx, lm, "landmarks")
    if len(shape) != 3 or shape[0] != 1 or shape[2] not in (2, 3):
        raise Unsupported(Reason.RANK, f"TransformLandmarks: landmarks {name(ctx, lm)} {list(shape)} must be "
                                       f"[1, N, 2] or [1, N, 3] (the kernel writes the first batch only)")
    n, dims = shape[1], shape[2]
    label = ctx.tensor(node.outputs[0]).name
    columns = matrix_rows_as_columns(ctx, m, label)
    points = ctx.operand(lm)
    x = operand_slice(ctx, points, [0, 0, 0], [1, n, 1], f"{label}/x")
    y = operand_slice(ctx, points, [0, 0, 1], [1, n, 1], f"{label}/y")
    out = ctx.output(node.outputs[0])
    if dims == 2:
        xy = affine_xy(ctx, x, y, columns, [1, n, 2], label)
        ctx.emit_form(Op.RESHAPE, "default", [out], input=xy, shape=ctx.const(np.asarray(shape, np.int32)))
        return
    xy = affine_xy(ctx, x, y, columns, [1, n, 2], label)
    z = operand_slice(ctx, points, [0, 0, 2], [1, n, 1], f"{label}/z")
    ctx.emit_form(Op.CONCATENATION, "default", [out], inputs=[xy, z], axis=ctx.i32(2))

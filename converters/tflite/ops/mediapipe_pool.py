"""MediaPipe's MaxPoolingWithArgmax2D and MaxUnpooling2D (options: a TfLitePoolParams struct) ->
NNAPI compositions that repeat the kernels' own steps, so both are exact.

MaxPoolingWithArgmax2D walks each window in row-major order keeping the first strictly greater
value, starting from (lowest float, position 0): the composition pads the input with -inf (padded
positions are never greater, as the kernel skips them), takes each window position k as one
STRIDED_SLICE and runs the same update, m = SELECT(v_k > m, v_k, m) and idx = SELECT(v_k > m, k +
0.1, idx), so NaNs are skipped as in the kernel. The values are clamped to the fused activation's
range as the kernel does (MINIMUM with FLT_MAX even without one: +inf becomes FLT_MAX). The indices
output holds float(k) + 0.1f, k = fy * filter_width + fx, MediaPipe's kernel's encoding of the
position inside the window (LiteRT's XNNPACK delegate writes the same position column-major as
uint32 bits into the float tensor, numbers padded windows differently, and takes only stride =
window; each runtime's MaxUnpooling2D reads back its own encoding).

MaxUnpooling2D scatters each value to the window position its index names. NNAPI has no scatter,
so only the case where that is a per-window selection is converted: square windows with stride
equal to the window (windows tile the output, no padding) and indices produced by a
MaxPoolingWithArgmax2D of the same window (so every index is inside its window: the kernel
would write an outside index into a neighbouring window). Then output block k of each window is
SELECT(int(index) == k, value, 0), and DEPTH_TO_SPACE interleaves the blocks.
"""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op, PaddingCode
from nnapi.ops.geometry import implicit_padding

from ...registry import Reason, Unsupported, converter
from .common import name
from .mediapipe import SAME, VALID, custom_op_name, float32_only, struct_options
from .nn_common import require_rank, static_shape

# TfLitePoolParams's leading fields (the trailing `computed` padding is filled in by the kernel)
POOL_PARAMS = np.dtype([("padding", "<i4"), ("stride_width", "<i4"), ("stride_height", "<i4"),
                        ("filter_width", "<i4"), ("filter_height", "<i4"), ("activation", "<i4")])
LOWEST, HIGHEST = float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)
# CalculateActivationRange for float: kTfLiteActRelu, kTfLiteActReluN1To1, kTfLiteActRelu6; others none
ACTIVATION_RANGE = {1: (0.0, HIGHEST), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def pool_params(ctx, node) -> dict:
    p = struct_options(node, POOL_PARAMS)
    if min(p["stride_width"], p["stride_height"], p["filter_width"], p["filter_height"]) <= 0:
        raise Unsupported(Reason.ATTRIBUTE, f"{custom_op_name(node)} {name(ctx, node.outputs[0])}: strides "
                                            f"{p['stride_width']}x{p['stride_height']} and window "
                                            f"{p['filter_width']}x{p['filter_height']} must be positive")
    return p


def _window(padding: int, extent: int, kernel: int, stride: int) -> tuple:
    """(head, tail, output size) of MediaPipe's window along one axis: TFLite's ComputePadding, which is
    NNAPI's implicit SAME / VALID padding (nnapi/ops/geometry.py); an unknown padding gives output size 0."""
    if padding not in (SAME, VALID):
        return 0, 0, 0
    return implicit_padding(extent, stride, kernel, PaddingCode.SAME if padding == SAME else PaddingCode.VALID)


def _full(ctx, dims, value: float, label: str) -> int:
    """A float32 tensor of `dims` filled with `value` at run time (FILL: no large constant)."""
    out = ctx.temp(OperandType(C.TENSOR_FLOAT32, list(dims)), label)
    ctx.emit_form(Op.FILL, "default", [out], shape=ctx.const(np.asarray(dims, np.int32)), value=ctx.f32(value))
    return out


@converter("tflite", "CUSTOM:MaxPoolingWithArgmax2D", versions=(1, 1))
def max_pooling_with_argmax(node, ctx):
    """MaxPoolingWithArgmax2D -> PAD_V2(-inf), per window position STRIDED_SLICE + GREATER + SELECT,
    FILL for the index planes; exact (see the module docstring)."""
    if len(node.inputs) != 1 or len(node.outputs) != 2:
        raise Unsupported(Reason.INVALID, "MaxPoolingWithArgmax2D takes 1 input and gives 2 outputs")
    x = node.inputs[0]
    float32_only(ctx, node, [x, *node.outputs])
    p = pool_params(ctx, node)
    require_rank(ctx, x, {4}, "input")
    b, h, w, c = static_shape(ctx, x, "input")
    fw, fh, sw, sh = p["filter_width"], p["filter_height"], p["stride_width"], p["stride_height"]
    (top, bottom, oh), (left, right, ow) = _window(p["padding"], h, fh, sh), _window(p["padding"], w, fw, sw)
    if oh <= 0 or ow <= 0:
        raise Unsupported(Reason.ATTRIBUTE, f"MaxPoolingWithArgmax2D {name(ctx, node.outputs[0])}: padding "
                                            f"{p['padding']} gives an empty output")
    label = ctx.tensor(node.outputs[0]).name
    padded = ctx.temp(OperandType(C.TENSOR_FLOAT32, [b, h + top + bottom, w + left + right, c]), f"{label}/padded")
    ctx.emit_form(Op.PAD_V2, "default", [padded], input=ctx.operand(x),
                  paddings=ctx.const(np.asarray([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32)),
                  pad_value=ctx.f32(-np.inf))
    dims = [b, oh, ow, c]
    best, index = _full(ctx, dims, LOWEST, f"{label}/lowest"), _full(ctx, dims, 0.1, f"{label}/index0")
    for k in range(fh * fw):
        fy, fx = divmod(k, fw)
        v = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{label}/window{k}")
        ctx.emit_form(Op.STRIDED_SLICE, "default", [v], input=padded,
                      begin=ctx.const(np.asarray([0, fy, fx, 0], np.int32)),
                      end=ctx.const(np.asarray([b, fy + (oh - 1) * sh + 1, fx + (ow - 1) * sw + 1, c], np.int32)),
                      strides=ctx.const(np.asarray([1, sh, sw, 1], np.int32)),
                      begin_mask=ctx.i32(0), end_mask=ctx.i32(0), shrink_axis_mask=ctx.i32(0))
        greater = ctx.temp(OperandType(C.TENSOR_BOOL8, dims), f"{label}/greater{k}")
        ctx.emit_form(Op.GREATER, "default", [greater], input1=v, input2=best)
        new_best = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{label}/max{k}")
        ctx.emit_form(Op.SELECT, "default", [new_best], condition=greater, input1=v, input2=best)
        position = float(np.float32(k) + np.float32(0.1))  # the kernel's max_y * filter_width + max_x + 0.1f
        last = k == fh * fw - 1
        new_index = ctx.output(node.outputs[1]) if last else ctx.temp(OperandType(C.TENSOR_FLOAT32, dims),
                                                                      f"{label}/index{k}")
        ctx.emit_form(Op.SELECT, "default", [new_index], condition=greater,
                      input1=_full(ctx, dims, position, f"{label}/position{k}"), input2=index)
        best, index = new_best, new_index
    lo, hi = ACTIVATION_RANGE.get(p["activation"], (LOWEST, HIGHEST))
    if lo > LOWEST:
        clamped = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{label}/at_least")
        ctx.emit_form(Op.MAXIMUM, "default", [clamped], input1=best, input2=ctx.const(np.float32([lo])))
        best = clamped
    ctx.emit_form(Op.MINIMUM, "default", [ctx.output(node.outputs[0])], input1=best,
                  input2=ctx.const(np.float32([hi])))


def _argmax_source(ctx, indices_i: int):
    for n in ctx.graph.nodes:
        if n.op == "CUSTOM:MaxPoolingWithArgmax2D" and len(n.outputs) == 2 and n.outputs[1] == indices_i:
            return n
    return None


@converter("tflite", "CUSTOM:MaxUnpooling2D", versions=(1, 1))
def max_unpooling(node, ctx):
    """MaxUnpooling2D of a MaxPoolingWithArgmax2D's indices, square windows tiling the output ->
    CAST + EQUAL + SELECT per window position, CONCATENATION, DEPTH_TO_SPACE; exact."""
    if len(node.inputs) != 2 or len(node.outputs) != 1:
        raise Unsupported(Reason.INVALID, "MaxUnpooling2D takes 2 inputs and gives 1 output")
    x, indices = node.inputs
    float32_only(ctx, node, [x, indices, node.outputs[0]])
    p = pool_params(ctx, node)
    require_rank(ctx, x, {4}, "input")
    b, h, w, c = static_shape(ctx, x, "input")
    f = p["filter_width"]
    if not (p["filter_height"] == f == p["stride_width"] == p["stride_height"]):
        raise Unsupported(Reason.CUSTOM_OPERATOR,
                          f"custom operator MaxUnpooling2D with window {f}x{p['filter_height']} and strides "
                          f"{p['stride_width']}x{p['stride_height']}: only square windows that tile the output "
                          f"(stride = window) are a per-window selection; NNAPI has no scatter")
    source = _argmax_source(ctx, indices)
    if source is None or (pool_params(ctx, source)["filter_width"], pool_params(ctx, source)["filter_height"]) \
            != (f, f):
        raise Unsupported(Reason.CUSTOM_OPERATOR,
                          f"custom operator MaxUnpooling2D: indices {name(ctx, indices)} do not come from a "
                          f"MaxPoolingWithArgmax2D of the same {f}x{f} window, so they may point outside their "
                          f"window, where the kernel writes into a neighbour; NNAPI has no scatter")
    if ctx.shape(indices) != (b, h, w, c):
        raise Unsupported(Reason.INVALID, f"MaxUnpooling2D: indices {name(ctx, indices)} "
                                          f"{list(ctx.shape(indices))} and input {name(ctx, x)} [{b}, {h}, {w}, {c}] "
                                          f"differ in shape")
    label = ctx.tensor(node.outputs[0]).name
    dims = [b, h, w, c]
    position = ctx.temp(OperandType(C.TENSOR_INT32, dims), f"{label}/position")
    ctx.emit_form(Op.CAST, "default", [position], input=ctx.operand(indices))  # truncation, as the kernel's int
    zeros = _full(ctx, dims, 0.0, f"{label}/zeros")
    blocks = []
    for k in range(f * f):
        hit = ctx.temp(OperandType(C.TENSOR_BOOL8, dims), f"{label}/is{k}")
        ctx.emit_form(Op.EQUAL, "default", [hit], input1=position, input2=ctx.const(np.int32([k])))
        block = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{label}/block{k}")
        ctx.emit_form(Op.SELECT, "default", [block], condition=hit, input1=ctx.operand(x), input2=zeros)
        blocks.append(block)
    stacked = ctx.temp(OperandType(C.TENSOR_FLOAT32, [b, h, w, f * f * c]), f"{label}/blocks")
    ctx.emit_form(Op.CONCATENATION, "default", [stacked], inputs=blocks, axis=ctx.i32(3))
    ctx.emit_form(Op.DEPTH_TO_SPACE, "default", [ctx.output(node.outputs[0])], input=stacked,
                  block_size=ctx.i32(f), layout=ctx.boolean(False))

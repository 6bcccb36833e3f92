"""TFLite convolutions: CONV_2D (grouped when the filter has fewer input channels than the input),
DEPTHWISE_CONV_2D and TRANSPOSE_CONV -> NNAPI CONV_2D / GROUPED_CONV_2D / DEPTHWISE_CONV_2D /
TRANSPOSE_CONV_2D with implicit padding (TFLite's SAME/VALID are NNAPI's)."""
from __future__ import annotations

from nnapi import OperationCode as Op, PaddingCode
from nnapi.ops.geometry import implicit_padding

from ...registry import Reason, Unsupported, converter
from .common import name
from .hybrid import dequantize_hybrid
from .nn_common import (bias_operand, fuse_of, padding, positive_attrs, reject_float16, require_rank,
                        static_shape, weights_operand)


def _checked_weights(ctx, input_i: int, filter_i: int, bias_i: int) -> tuple:
    """(input shape, filter shape) of a 4-D convolution whose weights NNAPI can take as they are."""
    reject_float16(ctx, input_i, filter_i, bias_i)
    flt = ctx.tensor(filter_i)
    hybrid = dequantize_hybrid(ctx, input_i, filter_i)
    if flt.quant is not None and flt.quant.per_channel and ctx.tensor(input_i).quant is None and not hybrid:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"per-channel filter {name(ctx, filter_i)} with float input")
    require_rank(ctx, filter_i, {4}, "filter")
    return require_rank(ctx, input_i, {4}, "input"), static_shape(ctx, filter_i, "filter")


def _dilation(node, ctx) -> dict:
    """The optional dilation inputs: only when dilated, so undilated convolutions stay level 1."""
    dw, dh = positive_attrs(node, ctx, "dilation_w_factor", "dilation_h_factor")
    return {} if dw == dh == 1 else dict(layout=ctx.boolean(False), dilation_w=ctx.i32(dw), dilation_h=ctx.i32(dh))


def _window(node, ctx) -> dict:
    sw, sh = positive_attrs(node, ctx, "stride_w", "stride_h")
    return dict(padding=ctx.i32(padding(node, ctx)), stride_w=ctx.i32(sw), stride_h=ctx.i32(sh))


def _bias_index(node, k: int) -> int:
    return node.inputs[k] if len(node.inputs) > k else -1


@converter("tflite", "CONV_2D", versions=(1, 8))
def conv_2d(node, ctx):
    """CONV_2D; a filter with input_channels / groups channels becomes GROUPED_CONV_2D."""
    x, w, b = node.inputs[0], node.inputs[1], _bias_index(node, 2)
    in_shape, w_shape = _checked_weights(ctx, x, w, b)
    c_in, groups = in_shape[3], 1
    if c_in and c_in != w_shape[3]:
        if c_in % w_shape[3] or w_shape[0] % (c_in // w_shape[3]):
            raise Unsupported(Reason.INVALID, f"input {name(ctx, x)} has {c_in} channels, not a multiple of "
                                              f"filter {name(ctx, w)}'s {w_shape[3]} that divides its outputs")
        groups = c_in // w_shape[3]
    dilation = _dilation(node, ctx)
    if groups > 1 and dilation:
        raise Unsupported(Reason.ATTRIBUTE, f"grouped convolution {name(ctx, node.outputs[0])} with dilation: "
                                            f"NNAPI GROUPED_CONV_2D has no dilation")
    args = dict(input=ctx.operand(x), filter=weights_operand(ctx, w), bias=bias_operand(ctx, b, x, w, w_shape[0]),
                **_window(node, ctx))
    fuse, out, finish = ctx.activation(fuse_of(node, ctx), node.outputs[0])
    if groups == 1:
        ctx.emit_form(Op.CONV_2D, "implicit", [out], fuse=fuse, **args, **dilation)
    else:
        ctx.emit_form(Op.GROUPED_CONV_2D, "implicit", [out], groups=ctx.i32(groups), fuse=fuse,
                      layout=ctx.boolean(False), **args)
    finish()


@converter("tflite", "DEPTHWISE_CONV_2D", versions=(1, 7))
def depthwise_conv_2d(node, ctx):
    """DEPTHWISE_CONV_2D; the multiplier is taken from the shapes and checked against depth_multiplier."""
    x, w, b = node.inputs[0], node.inputs[1], _bias_index(node, 2)
    in_shape, w_shape = _checked_weights(ctx, x, w, b)
    c_in = in_shape[3]
    if not c_in or w_shape[3] % c_in:
        raise Unsupported(Reason.INVALID, f"filter {name(ctx, w)} has {w_shape[3]} channels, not a multiple of "
                                          f"input {name(ctx, x)}'s {c_in}")
    multiplier = w_shape[3] // c_in
    declared = node.attrs.get("depth_multiplier", 0)
    if declared not in (0, multiplier):  # 0: converters that leave it out (LiteRT uses the shapes)
        raise Unsupported(Reason.ATTRIBUTE, f"depth_multiplier {declared} disagrees with filter {name(ctx, w)} "
                                            f"({w_shape[3]} channels for {c_in} input channels)")
    fuse, out, finish = ctx.activation(fuse_of(node, ctx), node.outputs[0])
    ctx.emit_form(Op.DEPTHWISE_CONV_2D, "implicit", [out], input=ctx.operand(x), filter=weights_operand(ctx, w),
                  bias=bias_operand(ctx, b, x, w, w_shape[3]), multiplier=ctx.i32(multiplier), fuse=fuse,
                  **_window(node, ctx), **_dilation(node, ctx))
    finish()


def _transpose_padding_agrees(node, ctx, in_shape, out_shape) -> None:
    """NNAPI pads a transposed convolution by its actual input size; TFLite by the size a forward
    convolution of the output would have. They differ only when the input size is not that size."""
    if padding(node, ctx) != PaddingCode.SAME:
        return
    sw, sh = positive_attrs(node, ctx, "stride_w", "stride_h")
    for axis, stride in ((1, sh), (2, sw)):
        if in_shape[axis] != implicit_padding(out_shape[axis], stride, 1, PaddingCode.SAME)[2]:
            raise Unsupported(Reason.ATTRIBUTE,
                              f"SAME padding of {name(ctx, node.outputs[0])}: input extent {in_shape[axis]} is not "
                              f"ceil({out_shape[axis]} / stride {stride}), so NNAPI would pad differently")


@converter("tflite", "TRANSPOSE_CONV", versions=(1, 5))
def transpose_conv(node, ctx):
    """TRANSPOSE_CONV (inputs output_shape, weights, input, optional bias) -> TRANSPOSE_CONV_2D."""
    shape_i, w, x, b = node.inputs[0], node.inputs[1], node.inputs[2], _bias_index(node, 3)
    in_shape, w_shape = _checked_weights(ctx, x, w, b)
    out_shape = static_shape(ctx, node.outputs[0], "output")
    if in_shape[3] and in_shape[3] != w_shape[3]:
        raise Unsupported(Reason.INVALID, f"input {name(ctx, x)} has {in_shape[3]} channels, filter "
                                          f"{name(ctx, w)} expects {w_shape[3]}")
    _transpose_padding_agrees(node, ctx, in_shape, out_shape)
    fuse, out, finish = ctx.activation(fuse_of(node, ctx), node.outputs[0])
    ctx.emit_form(Op.TRANSPOSE_CONV_2D, "implicit", [out], input=ctx.operand(x), filter=weights_operand(ctx, w),
                  bias=bias_operand(ctx, b, x, w, w_shape[0]), output_shape=ctx.operand(shape_i), fuse=fuse,
                  layout=ctx.boolean(False), **_window(node, ctx))
    finish()

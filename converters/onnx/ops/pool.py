"""AveragePool, MaxPool, QLinearAveragePool (and QDQ) -> AVERAGE_POOL_2D / MAX_POOL_2D;
GlobalAveragePool, GlobalMaxPool -> a pool over the whole image (MEAN / REDUCE_MAX when the size is
unknown)."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op, PaddingCode

from ...registry import Reason, Unsupported
from ..common import MS_DOMAIN_VERSIONS, OPSET_MAX, explicit_pads, form_of, ints, onnx_op, rank_of, spatial_padding
from ..layout import NHWC
from ..quant import data_inputs


def pool2d(node, ctx, code, x: int, count_include_pad: bool = False) -> None:
    node = ctx.lifted(node)  # a 1-D pool is the 2-D one with H = 1
    rank_of(ctx, x, (4,))
    kernel = ints(node, "kernel_shape")
    if kernel is None or len(kernel) != 2:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: kernel_shape {kernel} is not 2-D")
    if ints(node, "dilations", [1, 1]) != [1, 1]:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: NNAPI pools have no dilation")
    if len([o for o in node.outputs if o >= 0]) > 1:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: the Indices output has no NNAPI counterpart")
    strides = ints(node, "strides", [1, 1])
    y = node.outputs[0]
    inp = ctx.operand_as(x, NHWC)
    padding = spatial_padding(ctx, node, x, y, kernel, strides)
    if count_include_pad:  # padded zeros count in the mean: pad explicitly, then pool VALID
        pt, pb, pl, pr, grown = explicit_pads(ctx, node, x, y, kernel, strides)
        if grown:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: ceil_mode with count_include_pad=1 (partial "
                                                f"windows' divisor) has no NNAPI equivalent")
        if pt or pb or pl or pr:
            n, h, w, c = ctx.model.operands[inp].type.dimensions
            padded = ctx.temp_like(x, "padded", dimensions=(n, h + pt + pb, w + pl + pr, c))  # x's quantization
            ctx.operand_perm[padded] = NHWC
            ctx.emit_form(Op.PAD, "default", [padded], input=inp,
                          paddings=ctx.const(np.asarray([[0, 0], [pt, pb], [pl, pr], [0, 0]], np.int32)))
            inp, padding = padded, {"padding": ctx.i32(PaddingCode.VALID)}
    fuse, out = ctx.fused_output(node)
    ctx.emit_form(code, form_of(padding), [out], input=inp, stride_w=ctx.i32(strides[1]),
                  stride_h=ctx.i32(strides[0]), filter_w=ctx.i32(kernel[1]), filter_h=ctx.i32(kernel[0]),
                  fuse=fuse, **padding)


@onnx_op("AveragePool", versions=(7, OPSET_MAX))
def average_pool(node, ctx):
    """AveragePool (pads, auto_pad, ceil_mode, count_include_pad) as AVERAGE_POOL_2D."""
    pool2d(node, ctx, Op.AVERAGE_POOL_2D, node.inputs[0], bool(node.attrs.get("count_include_pad", 0)))


@onnx_op("QLinearAveragePool", versions=MS_DOMAIN_VERSIONS)
def qlinear_average_pool(node, ctx):
    """com.microsoft QLinearAveragePool as a quantized AVERAGE_POOL_2D."""
    pool2d(node, ctx, Op.AVERAGE_POOL_2D, data_inputs(node)[0], bool(node.attrs.get("count_include_pad", 0)))


@onnx_op("MaxPool", versions=(7, OPSET_MAX))
def max_pool(node, ctx):
    """MaxPool (pads, auto_pad, ceil_mode; no Indices output, no dilation) as MAX_POOL_2D."""
    pool2d(node, ctx, Op.MAX_POOL_2D, node.inputs[0])


_GLOBAL = {"GlobalAveragePool": (Op.AVERAGE_POOL_2D, Op.MEAN), "GlobalMaxPool": (Op.MAX_POOL_2D, Op.REDUCE_MAX)}


@onnx_op("GlobalAveragePool", "GlobalMaxPool", versions=(1, OPSET_MAX))
def global_pool(node, ctx):
    """Global pools: one window over H x W (a reduction over the spatial axes when they are unknown)."""
    _global_pool(node, ctx, node.inputs[0], _GLOBAL[node.op])


@onnx_op("QLinearGlobalAveragePool", versions=MS_DOMAIN_VERSIONS)
def qlinear_global_average_pool(node, ctx):
    """com.microsoft QLinearGlobalAveragePool (NCHW) as a quantized global AVERAGE_POOL_2D (in float when
    the output has its own scale)."""
    if node.attrs.get("channels_last", 0):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: channels_last QLinearGlobalAveragePool")
    _global_pool(node, ctx, data_inputs(node)[0], _GLOBAL["GlobalAveragePool"])


def _global_pool(node, ctx, x: int, codes) -> None:
    node = ctx.lifted(node)  # [N, C, L] as [N, C, 1, L]
    rank_of(ctx, x, (4,))
    pool, reduce = codes
    _, _, h, w = ctx.source_shape(x)
    inp = ctx.operand_as(x, NHWC)
    out = ctx.output(node.outputs[0])
    if h and w:
        one = ctx.i32(1)
        ctx.emit_form(pool, "implicit", [out], input=inp, padding=ctx.i32(PaddingCode.VALID), stride_w=one,
                      stride_h=one, filter_w=ctx.i32(w), filter_h=ctx.i32(h), fuse=ctx.i32(0))
    else:
        ctx.emit_form(reduce, "default", [out], input=inp, axes=ctx.const(np.asarray([1, 2], np.int32)),
                      keep_dims=ctx.i32(1) if reduce == Op.MEAN else ctx.boolean(True))

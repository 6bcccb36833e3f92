"""BatchNormalization (when not folded into its Conv) as MUL + ADD with per-channel constants; LRN as
LOCAL_RESPONSE_NORMALIZATION over the channels."""
from __future__ import annotations

import numpy as np

from nnapi import FuseCode, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, known_rank, onnx_op, rank_of
from ..layout import NHWC


def channel_const(ctx, x: int, values: np.ndarray, name: str) -> int:
    """A float constant broadcasting `values` along tensor x's channel axis (ONNX axis 1) in its layout."""
    rank = len(known_rank(ctx, ctx.node, x))
    if rank < 2:
        raise Unsupported(Reason.RANK, f"{ctx.node.label()}: {ctx.tensor(x).name!r} has rank {rank}; the channel "
                                       f"axis 1 needs rank 2 or more")
    shape = [1] * rank
    shape[ctx.axis(x, 1)] = values.size
    return ctx.const(values.astype(np.float32).reshape(shape), name=name)


@onnx_op("BatchNormalization", versions=(7, OPSET_MAX))
def batch_norm(node, ctx):
    """Inference BatchNormalization: y = x * f + (B - mean * f), f = scale / sqrt(var + epsilon)."""
    x = node.inputs[0]
    if len([o for o in node.outputs if o >= 0]) > 1 or node.attrs.get("training_mode", 0):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: training-mode outputs")
    if ctx.tensor(x).quant is not None:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: quantized BatchNormalization")
    scale, beta, mean, var = (ctx.const_value(i, "BatchNormalization parameter").astype(np.float64)
                              for i in node.inputs[1:5])
    f = scale / np.sqrt(var + node.attrs.get("epsilon", 1e-5))
    name = ctx.tensor(node.outputs[0]).name
    scaled = ctx.temp_like(node.outputs[0], "scaled")
    ctx.emit_form(Op.MUL, "default", [scaled], input1=ctx.operand(x), input2=channel_const(ctx, x, f, f"{name}/f"),
                  fuse=ctx.i32(FuseCode.NONE))
    fuse, out = ctx.fused_output(node)
    ctx.emit_form(Op.ADD, "default", [out], input1=scaled,
                  input2=channel_const(ctx, x, beta - mean * f, f"{name}/shift"), fuse=fuse)


@onnx_op("LRN", versions=(7, OPSET_MAX))
def lrn(node, ctx):
    """LRN (odd size) as LOCAL_RESPONSE_NORMALIZATION: radius (size-1)/2, alpha / size."""
    x = node.inputs[0]
    rank_of(ctx, x, (4,))
    size = int(node.attrs["size"])
    if size % 2 == 0:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: even size {size} has an off-centre window")
    ctx.emit_form(Op.LOCAL_RESPONSE_NORMALIZATION, "default", [ctx.output(node.outputs[0])],
                  input=ctx.operand_as(x, NHWC), radius=ctx.i32((size - 1) // 2),
                  bias=ctx.f32(node.attrs.get("bias", 1.0)), alpha=ctx.f32(node.attrs.get("alpha", 1e-4) / size),
                  beta=ctx.f32(node.attrs.get("beta", 0.75)))

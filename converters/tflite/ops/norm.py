"""TFLite normalizations along the last axis: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION,
SOFTMAX (beta) and LOG_SOFTMAX.

Below feature level 3 NNAPI defines these only for some ranks (4-D; softmax also 2-D); other ranks
are reshaped to such a shape and back, which is exact since they work along the last axis."""
from __future__ import annotations

import math

from nnapi import OperationCode as Op
from nnapi.ops.normalization import ANY_RANK_LEVEL

from ...registry import Reason, Unsupported, converter
from .common import name, temp
from .nn_common import fuse_of, reshape_into, reshaped, static_shape

_MAX_RANK = 4


def _along_last_axis(node, ctx, code: Op, low_ranks: set, low_dims, **params) -> None:
    """Emit `code` on the node's input, reshaped to `low_dims(rows, channels)` when NNAPI cannot take
    its rank at this feature level."""
    x, y = node.inputs[0], node.outputs[0]
    shape = ctx.shape(x)
    ranks = low_ranks if ctx.feature_level < ANY_RANK_LEVEL else set(range(1, _MAX_RANK + 1))
    if len(shape) in ranks:
        ctx.emit_form(code, "default", [ctx.output(y)], input=ctx.operand(x), **params)
        return
    shape = static_shape(ctx, x, "input")
    rows, channels = math.prod(shape[:-1]), shape[-1]
    dims = low_dims(rows, channels) if ctx.feature_level < ANY_RANK_LEVEL else [rows, channels]
    inner = reshaped(ctx, ctx.operand(x), dims, f"{ctx.tensor(x).name}/{len(dims)}d")
    tmp = temp(ctx, y, dims, f"{len(dims)}d")
    ctx.emit_form(code, "default", [tmp], input=inner, **params)
    reshape_into(ctx, tmp, y)


def _image(rows: int, channels: int) -> list:
    return [1, 1, rows, channels]


def _matrix(rows: int, channels: int) -> list:
    return [rows, channels]


@converter("tflite", "L2_NORMALIZATION", versions=(1, 2))
def l2_normalization(node, ctx):
    """x / sqrt(sum(x^2)) along the last axis."""
    if fuse_of(node, ctx):
        # LiteRT's kernel accepts only NONE here, so a set activation is a malformed model
        raise Unsupported(Reason.FUSED_ACTIVATION, f"L2_NORMALIZATION {name(ctx, node.outputs[0])} has a fused "
                                                   f"activation, which LiteRT rejects")
    _along_last_axis(node, ctx, Op.L2_NORMALIZATION, {4}, _image)


@converter("tflite", "LOCAL_RESPONSE_NORMALIZATION", versions=(1, 1))
def local_response_normalization(node, ctx):
    """x / (bias + alpha * sum of x^2 over radius neighbouring channels) ^ beta."""
    a = node.attrs
    if a.get("radius", 0) < 0:
        raise Unsupported(Reason.ATTRIBUTE, f"radius {a['radius']} on {name(ctx, node.outputs[0])} is negative")
    _along_last_axis(node, ctx, Op.LOCAL_RESPONSE_NORMALIZATION, {4}, _image, radius=ctx.i32(a.get("radius", 0)),
                     bias=ctx.f32(a.get("bias", 0.0)), alpha=ctx.f32(a.get("alpha", 0.0)),
                     beta=ctx.f32(a.get("beta", 0.0)))


@converter("tflite", "SOFTMAX", versions=(1, 4))
def softmax(node, ctx):
    """exp(beta * (x - max)) / sum(...) along the last axis."""
    beta = node.attrs.get("beta", 1.0)
    if not beta > 0:
        raise Unsupported(Reason.ATTRIBUTE, f"beta {beta} of {name(ctx, node.outputs[0])}: NNAPI SOFTMAX needs a "
                                            f"positive beta")
    _along_last_axis(node, ctx, Op.SOFTMAX, {2, 4}, _matrix, beta=ctx.f32(beta))


@converter("tflite", "LOG_SOFTMAX", versions=(1, 2))
def log_softmax(node, ctx):
    """log(softmax(x)) along the last axis (NNAPI LOG_SOFTMAX with beta 1)."""
    ctx.emit_form(Op.LOG_SOFTMAX, "default", [ctx.output(node.outputs[0])], input=ctx.operand(node.inputs[0]),
                  beta=ctx.f32(1.0), axis=ctx.i32(-1))

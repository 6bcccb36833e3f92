"""LayerNormalization and InstanceNormalization.

LayerNormalization is the exact composition MEAN, SUB, MUL, MEAN, ADD epsilon, RSQRT, MUL, MUL scale,
ADD bias over the axes from `axis` on (ONNX layout; its Mean and InvStdDev outputs are the MEAN and
RSQRT results). InstanceNormalization of a 4-D tensor is INSTANCE_NORMALIZATION on the NHWC operand
(NNAPI's gamma and beta are scalars, so the per-channel scale and bias follow as MUL and ADD); other
ranks use the same composition over the spatial axes."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, axis_attr, onnx_op
from ..layout import NHWC
from .compose import Chain, require_float, reshaped
from .normalization import channel_const


def normalize(c: Chain, x: int, axes, eps: float, mean_out: int | None = None,
              inv_out: int | None = None) -> int:
    """(x - mean) * rsqrt(var + eps) over operand axes `axes` (kept); returns the normalized operand."""
    ctx = c.ctx
    dims = list(ctx.model.operands[x].type.dimensions)
    if len(dims) > 4:
        raise Unsupported(Reason.RANK, f"{c.node.label()}: MEAN takes rank 4 at most (rank {len(dims)})")
    kept = tuple(1 if k in axes else d for k, d in enumerate(dims))

    def mean(src, out):
        return c.op(Op.MEAN, out or c.temp(dims=kept), input=src,
                    axes=ctx.const(np.asarray(sorted(axes), np.int32)), keep_dims=ctx.i32(1))

    centred = c.binary(Op.SUB, x, mean(x, mean_out))
    var = mean(c.binary(Op.MUL, centred, centred), None)
    inv = c.unary(Op.RSQRT, c.binary(Op.ADD, var, c.scalar(eps), out=c.temp(dims=kept)),
                  out=inv_out or c.temp(dims=kept))
    return c.binary(Op.MUL, centred, inv)


def _optional_output(ctx, node, k: int) -> int | None:
    return ctx.output(node.outputs[k]) if k < len(node.outputs) and node.outputs[k] >= 0 else None


@onnx_op("LayerNormalization", versions=(17, OPSET_MAX))
def layer_norm(node, ctx):
    """LayerNormalization (axis, epsilon; optional Mean / InvStdDev outputs) as the exact composition."""
    x, y = node.inputs[0], node.outputs[0]
    require_float(ctx, node, x)
    rank = len(ctx.source_shape(x))
    axis = axis_attr(ctx, node, x, -1)
    c = Chain(ctx, node, y)  # the ONNX layout (LayerNormalization is in no layout table)
    normed = normalize(c, ctx.operand_as(x), range(axis, rank), float(node.attrs.get("epsilon", 1e-5)),
                       _optional_output(ctx, node, 1), _optional_output(ctx, node, 2))
    bias = node.inputs[2] if len(node.inputs) > 2 else -1
    out = ctx.output(y)
    scaled = c.binary(Op.MUL, normed, ctx.operand_as(node.inputs[1]), out=out if bias < 0 else None)
    if bias >= 0:
        c.binary(Op.ADD, scaled, ctx.operand_as(bias), out=out)


def _per_channel(ctx, node, x: int, i: int, name: str) -> int:
    """Tensor i ([C]) as an operand broadcasting along x's channel axis in x's operand layout."""
    if ctx.is_const(i):
        return channel_const(ctx, x, np.asarray(ctx.const_value(i), np.float32).ravel(), name)
    rank = len(ctx.source_shape(x))
    if ctx.axis(x, 1) == rank - 1:
        return ctx.operand(i)  # [C] already broadcasts along the last axis
    return reshaped(ctx, node, ctx.operand(i), (ctx.source_shape(i)[0],) + (1,) * (rank - 2))


@onnx_op("InstanceNormalization", versions=(7, OPSET_MAX))
def instance_norm(node, ctx):
    """INSTANCE_NORMALIZATION (4-D, NHWC) then MUL scale, ADD B; other ranks as the composition."""
    x, scale, bias, y = node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]
    require_float(ctx, node, x)
    eps = float(node.attrs.get("epsilon", 1e-5))
    rank = len(ctx.source_shape(x))
    c = Chain(ctx, node, y)
    if rank == 4 and ctx.perm_of(y) is not None and c.code == C.TENSOR_FLOAT32:  # float16 takes FLOAT16 scalars
        normed = c.op(Op.INSTANCE_NORMALIZATION, input=ctx.operand_as(x, NHWC), gamma=ctx.f32(1.0), beta=ctx.f32(0.0),
                      epsilon=ctx.f32(eps), layout=ctx.boolean(False))
    else:
        normed = normalize(c, ctx.operand_as(x, ctx.perm_of(y)), range(2, rank) if ctx.perm_of(y) is None
                           else range(1, rank - 1), eps)
    name = ctx.tensor(y).name
    scaled = c.binary(Op.MUL, normed, _per_channel(ctx, node, y, scale, f"{name}/scale"))
    c.binary(Op.ADD, scaled, _per_channel(ctx, node, y, bias, f"{name}/bias"), out=ctx.output(y))

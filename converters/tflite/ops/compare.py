"""TFLite MAXIMUM, MINIMUM, comparisons, LOGICAL_AND/OR/NOT, SELECT, SELECT_V2."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name, otype
from .unary_emit import broadcast, emit, is_quantized, same_quant, static_dims

_MIN_MAX = {"MAXIMUM": Op.MAXIMUM, "MINIMUM": Op.MINIMUM}
_COMPARE = {"EQUAL": Op.EQUAL, "NOT_EQUAL": Op.NOT_EQUAL, "GREATER": Op.GREATER,
            "GREATER_EQUAL": Op.GREATER_EQUAL, "LESS": Op.LESS, "LESS_EQUAL": Op.LESS_EQUAL}
_LOGICAL = {"LOGICAL_AND": Op.LOGICAL_AND, "LOGICAL_OR": Op.LOGICAL_OR, "LOGICAL_NOT": Op.LOGICAL_NOT}
# LiteRT compares quantized values rescaled to round((q - zp) * scale * 2^8): exact only when both
# inputs share the scale and distinct stored values stay distinct there
MIN_COMPARE_SCALE = 1.0 / 256


def _require_same_quant(ctx, node, tensors, why):
    if any(is_quantized(ctx, i) for i in tensors) and not same_quant(ctx, *tensors):
        names = ", ".join(name(ctx, i) for i in tensors)
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.op}: {names} have different quantization; {why}")


def _binary(ctx, node, op):
    emit(ctx, op, [ctx.operand(i) for i in node.inputs], ctx.output(node.outputs[0]))


@converter("tflite", "MAXIMUM", "MINIMUM", versions=(1, 4))
def max_min(node, ctx):
    """Broadcasting MAXIMUM / MINIMUM."""
    _require_same_quant(ctx, node, [*node.inputs, node.outputs[0]],
                        "LiteRT compares the stored values as they are while NNAPI requantizes")
    _binary(ctx, node, _MIN_MAX[node.op])


@converter("tflite", "EQUAL", versions=(1, 4))
@converter("tflite", "NOT_EQUAL", "GREATER_EQUAL", "LESS", versions=(1, 3))
@converter("tflite", "GREATER", "LESS_EQUAL", versions=(1, 2))
def compare(node, ctx):
    """Broadcasting comparisons into a bool tensor."""
    a, b = node.inputs
    if is_quantized(ctx, a):
        _require_same_quant(ctx, node, [a, b], "LiteRT rescales them in fixed point, NNAPI compares real values")
        scale = ctx.tensor(a).quant.scale
        if scale < MIN_COMPARE_SCALE:
            raise Unsupported(Reason.QUANTIZATION_TYPE,
                              f"{node.op}: scale {scale:g} of {name(ctx, a)} is below 1/256, where LiteRT's "
                              f"fixed-point rescaling merges neighbouring values and NNAPI does not")
    _binary(ctx, node, _COMPARE[node.op])


@converter("tflite", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT", versions=(1, 1))
def logical(node, ctx):
    """Broadcasting LOGICAL_AND / LOGICAL_OR, and LOGICAL_NOT."""
    _binary(ctx, node, _LOGICAL[node.op])


def _select_condition(ctx, node, cond_t, x_t):
    """SELECT (v1) with a rank-1 condition picks whole slices along dimension 0."""
    c_rank, x_rank = len(ctx.shape(cond_t)), len(ctx.shape(x_t))
    if node.op != "SELECT" or c_rank != 1 or x_rank <= 1:
        return ctx.operand(cond_t)
    if not ctx.is_const(cond_t):
        raise Unsupported(Reason.RANK, f"SELECT with rank-1 condition {name(ctx, cond_t)} on rank-{x_rank} "
                                       f"inputs needs a constant condition (NNAPI SELECT does not broadcast)")
    data = np.asarray(ctx.const_value(cond_t, "condition"), np.bool_).reshape((-1,) + (1,) * (x_rank - 1))
    return ctx.const(data)


@converter("tflite", "SELECT", versions=(1, 4))
@converter("tflite", "SELECT_V2", versions=(1, 2))
def select(node, ctx):
    """output = condition ? x : y; broadcast operands are materialized (NNAPI SELECT does not broadcast)."""
    cond_t, x_t, y_t = node.inputs
    out_t = node.outputs[0]
    _require_same_quant(ctx, node, [x_t, y_t, out_t], "LiteRT copies the stored values while NNAPI requantizes")
    cond = _select_condition(ctx, node, cond_t, x_t)
    x, y = ctx.operand(x_t), ctx.operand(y_t)
    out = ctx.output(out_t)
    if any(otype(ctx, o).dimensions != otype(ctx, out).dimensions for o in (cond, x, y)):
        dims = static_dims(ctx, out, node.op)
        cond, x, y = (broadcast(ctx, o, dims, node.op) for o in (cond, x, y))
    emit(ctx, Op.SELECT, [cond, x, y], out)

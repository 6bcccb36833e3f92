"""TFLite reductions and index selection: MEAN, SUM, REDUCE_MAX, REDUCE_MIN,
REDUCE_PROD, REDUCE_ANY, REDUCE_ALL, ARG_MAX, ARG_MIN, TOPK_V2.

Axes must be static. Below the NNAPI reduction's feature level, a MEAN or
REDUCE_MAX over the spatial axes (1, 2) of a 4-D tensor becomes a full-window
AVERAGE_POOL_2D / MAX_POOL_2D (level 1).

Index outputs: NNAPI writes int32 indices. A TFLite int64 index output
(ARG_MAX/ARG_MIN output_type INT64, TOPK_V2 int64 indices) is converted to an
int32 operand: every index of a tensor NNAPI can hold fits int32, so the values
are exact; the type change is recorded as a boundary rewrite (io_rewrites).
"""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name, require_arity, reshape, temp
from .movement_util import check_types, int_list, norm_axis, static_shape, true_rank

# TFLite op -> (NNAPI op, newest LiteRT version, quantized inputs allowed, pooling op for spatial axes)
_REDUCERS = {
    "MEAN": (Op.MEAN, 3, True, Op.AVERAGE_POOL_2D),
    "SUM": (Op.REDUCE_SUM, 2, False, None),
    "REDUCE_PROD": (Op.REDUCE_PROD, 2, False, None),
    "REDUCE_MAX": (Op.REDUCE_MAX, 3, True, Op.MAX_POOL_2D),
    "REDUCE_MIN": (Op.REDUCE_MIN, 3, True, None),
    "REDUCE_ANY": (Op.REDUCE_ANY, 1, False, None),
    "REDUCE_ALL": (Op.REDUCE_ALL, 1, False, None),
}


def _axes(ctx, node, i: int, rank: int) -> list[int]:
    return sorted({norm_axis(a, rank, f"{node.op} axis") for a in int_list(ctx, i, f"{node.op} axis")})


def _pool(ctx, node, code: Op, x: int, axes: list, keep: bool) -> bool:
    """A full-window pool for a reduction over axes (1, 2) of a 4-D tensor; False when it does not apply."""
    if code is None or axes != [1, 2] or true_rank(ctx, x) != 4:
        return False
    xq, oq = ctx.tensor(x).quant, ctx.tensor(node.outputs[0]).quant
    if xq is not None and (oq is None or (xq.scale, xq.zero_point) != (oq.scale, oq.zero_point)):
        return False  # pools keep the input's quantization
    n, h, w, c = static_shape(ctx, x)
    out = node.outputs[0]
    pooled = ctx.output(out) if keep else temp(ctx, out, [n, 1, 1, c], "pooled")
    zero, one = ctx.i32(0), ctx.i32(1)
    ctx.emit_form(code, "explicit", [pooled], input=ctx.operand(x), pad_left=zero, pad_right=zero, pad_top=zero,
                  pad_bottom=zero, stride_w=one, stride_h=one, filter_w=ctx.i32(w), filter_h=ctx.i32(h), fuse=zero)
    if not keep:
        reshape(ctx, pooled, ctx.output(out), [n, c])
    return True


def reduction(node, ctx):
    """MEAN / SUM / REDUCE_* over constant axes, keep_dims honoured."""
    check_types(ctx, node)
    code, _, quant_ok, pool = _REDUCERS[node.op]
    x = node.inputs[0]
    if ctx.tensor(x).quant is not None and not quant_ok:
        raise Unsupported(Reason.QUANTIZATION_TYPE,
                          f"{node.op} of quantized {name(ctx, x)}: NNAPI {code.name} has no quantized form, and a "
                          f"float round trip would not reproduce LiteRT's integer rescaling")
    rank = true_rank(ctx, x)
    axes = _axes(ctx, node, node.inputs[1], max(rank, 1))
    keep = bool(node.attrs.get("keep_dims", False))
    if ctx.feature_level < code.feature_level and _pool(ctx, node, pool, x, axes, keep):
        return
    keep_op = ctx.i32(int(keep)) if code == Op.MEAN else ctx.boolean(keep)
    ctx.emit_form(code, "default", [ctx.output(node.outputs[0])], input=ctx.operand(x),
                  axes=ctx.const(np.asarray(axes, np.int32)), keep_dims=keep_op)


for _op, (_code, _newest, _q, _p) in _REDUCERS.items():
    converter("tflite", _op, versions=(1, _newest))(reduction)


# -- index outputs --------------------------------------------------------------------------

def index_output(ctx, t: int) -> int:
    """The int32 operand for an index output tensor (int64 ones are narrowed, see the module doc)."""
    if np.dtype(ctx.tensor(t).dtype) != np.int64:
        return ctx.output(t)
    return ctx.bind_output(t, OperandType(C.TENSOR_INT32, ctx.shape(t)),
                           "int64 -> int32: NNAPI writes int32 indices (every index fits)")


@converter("tflite", "ARG_MAX", "ARG_MIN", versions=(1, 3))
def arg_select(node, ctx):
    """ARGMAX / ARGMIN along a constant axis (ties: the smallest index, as in LiteRT)."""
    check_types(ctx, node)
    x = node.inputs[0]
    axis = int_list(ctx, node.inputs[1], f"{node.op} axis")
    if len(axis) != 1:
        raise Unsupported(Reason.INVALID, f"{node.op} axis has {len(axis)} values, expected 1")
    a = norm_axis(axis[0], true_rank(ctx, x), f"{node.op} axis")
    code = Op.ARGMAX if node.op == "ARG_MAX" else Op.ARGMIN
    ctx.emit_form(code, "default", [index_output(ctx, node.outputs[0])], input=ctx.operand(x), axis=ctx.i32(a))


@converter("tflite", "TOPK_V2", versions=(1, 3))
def top_k(node, ctx):
    """TOPK_V2 with a constant k: values descending, ties by the smaller index."""
    check_types(ctx, node)
    require_arity(node, 2, 2)
    k = int_list(ctx, node.inputs[1], "TOPK_V2 k")
    if len(k) != 1:
        raise Unsupported(Reason.INVALID, f"TOPK_V2 k has {len(k)} values, expected 1")
    values, indices = node.outputs
    ctx.emit_form(Op.TOPK_V2, "default", [ctx.output(values), index_output(ctx, indices)],
                  input=ctx.operand(node.inputs[0]), k=ctx.i32(k[0]))

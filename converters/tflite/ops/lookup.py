"""TFLite lookups: GATHER, EMBEDDING_LOOKUP, HASHTABLE_LOOKUP."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name, reshape, temp
from .movement_util import check_types, norm_axis, reject_attr, true_rank


@converter("tflite", "GATHER", versions=(1, 8))
def gather(node, ctx):
    """GATHER along an axis with batch_dims 0 (level 3); EMBEDDING_LOOKUP for axis 0 and 1-D indices below it."""
    check_types(ctx, node)
    reject_attr(node, "batch_dims", lambda b: b == 0, "NNAPI GATHER has no batch dimensions")
    params, indices = node.inputs
    out = node.outputs[0]
    rank = true_rank(ctx, params)
    axis = norm_axis(node.attrs.get("axis", 0), rank, "GATHER axis")
    index_rank = true_rank(ctx, indices)
    if not ctx.has(Op.GATHER):
        if axis == 0 and index_rank == 1 and rank >= 2:
            ctx.emit_form(Op.EMBEDDING_LOOKUP, "default", [ctx.output(out)], lookups=ctx.operand(indices),
                          values=ctx.operand(params))
            return
        level = ctx.level_of(Op.GATHER)
        raise Unsupported(Reason.FEATURE_LEVEL, f"GATHER needs NNAPI feature level {level} (below it only axis 0 "
                                                f"with 1-D indices into a tensor of rank >= 2, as EMBEDDING_LOOKUP)",
                          level)
    if index_rank == 0:  # NNAPI holds the scalar index as [1]: gather, then drop that axis
        shape = list(ctx.shape(params))
        kept = shape[:axis] + [1] + shape[axis + 1:]
        mid = temp(ctx, out, kept, "gathered")
        ctx.emit_form(Op.GATHER, "default", [mid], input=ctx.operand(params), axis=ctx.i32(axis),
                      indices=ctx.operand(indices))
        reshape(ctx, mid, ctx.output(out), shape[:axis] + shape[axis + 1:] or [1])
        return
    ctx.emit_form(Op.GATHER, "default", [ctx.output(out)], input=ctx.operand(params), axis=ctx.i32(axis),
                  indices=ctx.operand(indices))


@converter("tflite", "EMBEDDING_LOOKUP", versions=(1, 5))
def embedding_lookup(node, ctx):
    """EMBEDDING_LOOKUP; the hybrid form (int8 values, float output) adds a DEQUANTIZE."""
    check_types(ctx, node)
    lookups, values = node.inputs
    out = node.outputs[0]
    vt, ot = ctx.tensor(values), ctx.tensor(out)
    if np.dtype(ot.dtype) != np.float32 or np.dtype(vt.dtype) == np.float32:
        ctx.emit_form(Op.EMBEDDING_LOOKUP, "default", [ctx.output(out)], lookups=ctx.operand(lookups),
                      values=ctx.operand(values))
        return
    # hybrid: LiteRT reads the values as int8 and multiplies by the scale, ignoring the zero point
    q = vt.quant
    if np.dtype(vt.dtype) != np.int8 or q is None or q.per_channel or q.zero_point != 0:
        raise Unsupported(Reason.QUANTIZATION_TYPE,
                          f"hybrid EMBEDDING_LOOKUP of {name(ctx, values)} ({vt.describe()}): only per-tensor int8 "
                          f"values with zero point 0 dequantize the way LiteRT does")
    rows = temp(ctx, values, ctx.shape(out), "rows")
    ctx.emit_form(Op.EMBEDDING_LOOKUP, "default", [rows], lookups=ctx.operand(lookups), values=ctx.operand(values))
    ctx.emit_form(Op.DEQUANTIZE, "default", [ctx.output(out)], input=rows)


@converter("tflite", "HASHTABLE_LOOKUP", versions=(1, 1))
def hashtable_lookup(node, ctx):
    """HASHTABLE_LOOKUP (both runtimes binary-search keys, so they must be sorted ascending)."""
    check_types(ctx, node)
    lookups, keys, values = node.inputs
    out, hits = node.outputs
    kt = ctx.tensor(keys)
    if kt.is_constant and np.any(np.diff(kt.data.reshape(-1).astype(np.int64)) < 0):
        # LiteRT's binary search then misses present keys; sorting them would change its result
        raise Unsupported(Reason.INVALID, f"HASHTABLE_LOOKUP keys {name(ctx, keys)} are not sorted ascending")
    if np.dtype(ctx.tensor(hits).dtype) != np.uint8:
        raise Unsupported(Reason.OPERAND_TYPE, f"HASHTABLE_LOOKUP hits {name(ctx, hits)} must be uint8")
    # hits are raw 0/1 bytes in LiteRT; NNAPI types them as quant8 with scale 1, zero point 0 (same bytes)
    hits_op = ctx.bind_output(hits, OperandType(C.TENSOR_QUANT8_ASYMM, ctx.shape(hits), 1.0, 0))
    ctx.emit_form(Op.HASHTABLE_LOOKUP, "default", [ctx.output(out), hits_op], lookups=ctx.operand(lookups),
                  keys=ctx.operand(keys), values=ctx.operand(values))

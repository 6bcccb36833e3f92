"""TFLite lookups: GATHER, GATHER_ND, EMBEDDING_LOOKUP, HASHTABLE_LOOKUP."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...gather_nd import emit_gather_nd
from ...registry import Reason, Unsupported, converter
from .common import name, reshape, temp
from .movement_util import check_types, norm_axis, reject_attr, static_shape, true_rank


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


@converter("tflite", "GATHER_ND", versions=(1, 5))
def gather_nd(node, ctx):
    """GATHER_ND as one GATHER of row indices into the flattened params (constant or run-time int32 indices).

    converters/gather_nd.py; LiteRT refuses negative indices, so a constant one is invalid."""
    check_types(ctx, node)
    params, indices = node.inputs
    shape, ishape = static_shape(ctx, params)[:true_rank(ctx, params)], static_shape(ctx, indices)
    if ctx.is_const(indices):
        idx = np.asarray(ctx.tensor(indices).data).astype(np.int64).reshape(ishape)
    else:
        idx = ctx.operand(indices)
        if ctx.model.operands[idx].type.code != C.TENSOR_INT32:
            raise Unsupported(Reason.OPERAND_TYPE, f"GATHER_ND indices {name(ctx, indices)} are not int32")
    emit_gather_nd(ctx, f"GATHER_ND {name(ctx, node.outputs[0])}", ctx.operand(params), shape, idx, ishape, 0,
                   ctx.output(node.outputs[0]), negative=False)


@converter("tflite", "EMBEDDING_LOOKUP", versions=(1, 5))
def embedding_lookup(node, ctx):
    """EMBEDDING_LOOKUP; hybrid (int8/int4 values, float output): DEQUANTIZE, with per-row scales MULtiplied in.

    The per-row and int4 forms are what AI Edge Quantizer writes (one scale per row, quantized dimension 0;
    int4 values two to a byte, unpacked to int8 at conversion)."""
    lookups, values = node.inputs
    out = node.outputs[0]
    vt, ot = ctx.tensor(values), ctx.tensor(out)
    int4 = getattr(vt, "tflite_type", None) == "INT4"
    if not int4:
        check_types(ctx, node)
    if not int4 and (np.dtype(ot.dtype) != np.float32 or np.dtype(vt.dtype) == np.float32):
        ctx.emit_form(Op.EMBEDDING_LOOKUP, "default", [ctx.output(out)], lookups=ctx.operand(lookups),
                      values=ctx.operand(values))
        return
    # hybrid: LiteRT reads the values as int8 (or int4) and multiplies by the scale (of the row, when
    # per-channel); it refuses a non-zero zero point
    q = vt.quant
    if (not int4 and np.dtype(vt.dtype) != np.int8) or q is None or any(z != 0 for z in q.zero_points):
        raise Unsupported(Reason.QUANTIZATION_TYPE,
                          f"hybrid EMBEDDING_LOOKUP of {name(ctx, values)} ({vt.describe()}): only int8 or int4 values "
                          f"with zero point 0 dequantize the way LiteRT does")
    if not (q.per_channel or int4):
        rows = temp(ctx, values, ctx.shape(out), "rows")
        ctx.emit_form(Op.EMBEDDING_LOOKUP, "default", [rows], lookups=ctx.operand(lookups), values=ctx.operand(values))
        ctx.emit_form(Op.DEQUANTIZE, "default", [ctx.output(out)], input=rows)
        return
    _table_hybrid(ctx, lookups, values, out, _int4_values(ctx, values) if int4 else np.asarray(vt.data))


def _int4_values(ctx, values: int) -> np.ndarray:
    """int8 values of a constant INT4 table as LiteRT's kernel reads them: two to a byte, low nibble first, two's
    complement, row r from byte floor(r * cols / 2) (with an odd row length a row after an odd one starts at
    the low nibble of the byte the previous row ended in, not at the packed order of the whole tensor)."""
    vt = ctx.tensor(values)
    rows, cols = (vt.shape[0], int(np.prod(vt.shape[1:]))) if vt.shape else (0, 0)
    packed = np.asarray(vt.data, np.uint8).reshape(-1) if vt.is_constant else np.zeros(0, np.uint8)
    if not rows or packed.size * 2 < rows * cols:
        raise Unsupported(Reason.OPERAND_TYPE, f"INT4 values {name(ctx, values)} must be a constant of "
                                               f"{(rows * cols + 1) // 2} bytes")
    nibbles = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(-1).astype(np.int8)
    starts = 2 * ((np.arange(rows) * cols) // 2)
    table = nibbles[starts[:, None] + np.arange(cols)]
    return ((table ^ 8) - 8).astype(np.int8).reshape(vt.shape)


def _table_hybrid(ctx, lookups: int, values: int, out: int, data: np.ndarray) -> None:
    """The rows looked up as int8 values (scale 1 with per-row scales, else the tensor's scale), DEQUANTIZEd;
    per-row scales are looked up from a [rows, 1, ...] float table and MULtiplied in: float(q) * scale[row],
    the single rounding LiteRT's kernel makes."""
    vt, q = ctx.tensor(values), ctx.tensor(values).quant
    shape = tuple(vt.shape)
    if not vt.is_constant or (q.per_channel and (q.axis != 0 or len(q.scales) != shape[0])):
        raise Unsupported(Reason.QUANTIZATION_TYPE,
                          f"hybrid EMBEDDING_LOOKUP of {name(ctx, values)} ({vt.describe()}): per-channel scales "
                          f"must be one per row of a constant table (quantized dimension 0)")
    zero = 128 if ctx.signed_as_unsigned() else 0  # int8 rides as uint8 + 128 below feature level 4
    code = C.TENSOR_QUANT8_ASYMM if zero else C.TENSOR_QUANT8_ASYMM_SIGNED
    scale = 1.0 if q.per_channel else q.scale
    table = ctx.const((data.astype(np.int16) + zero).astype(np.uint8 if zero else np.int8), code,
                      name=f"{vt.name}/int8_rows", scale=scale, zero_point=zero)
    out_shape = tuple(ctx.shape(out))
    picked = ctx.temp(OperandType(code, out_shape, scale, zero), f"{vt.name}/rows")
    ctx.emit_form(Op.EMBEDDING_LOOKUP, "default", [picked], lookups=ctx.operand(lookups), values=table)
    if not q.per_channel:
        ctx.emit_form(Op.DEQUANTIZE, "default", [ctx.output(out)], input=picked)
        return
    floats = ctx.temp(OperandType(C.TENSOR_FLOAT32, out_shape), f"{vt.name}/rows_float")
    ctx.emit_form(Op.DEQUANTIZE, "default", [floats], input=picked)
    unit = (1,) * (len(shape) - 1)
    scales = ctx.const(np.asarray(q.scales, np.float32).reshape((shape[0],) + unit), name=f"{vt.name}/row_scales")
    row_scales = ctx.temp(OperandType(C.TENSOR_FLOAT32, out_shape[:1] + unit), f"{vt.name}/picked_scales")
    ctx.emit_form(Op.EMBEDDING_LOOKUP, "default", [row_scales], lookups=ctx.operand(lookups), values=scales)
    ctx.emit_form(Op.MUL, "default", [ctx.output(out)], input1=floats, input2=row_scales, fuse=ctx.i32(0))


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

"""TFLite dense layers: FULLY_CONNECTED, BATCH_MATMUL and DENSIFY.

FULLY_CONNECTED with per-channel weights becomes a 1x1 CONV_2D (NNAPI's FULLY_CONNECTED has only
per-tensor weights); BATCH_MATMUL below feature level 6 becomes FULLY_CONNECTED when its right-hand
side is a constant matrix; DENSIFY of a sparse constant is folded into a dense constant before
conversion (converters/folding.py) and emits nothing."""
from __future__ import annotations

import math

import numpy as np

from nnapi import OperandType, OperationCode as Op, PaddingCode
from nnapi.ops import level_for

from ...folding import folder
from ...registry import Reason, Unsupported, converter
from .common import name, otype, temp
from .hybrid import dequantize_hybrid, hybrid_weights, is_hybrid
from .nn_common import (bias_operand, const_like, constant_array, constant_from, densify, fuse_of, fuse_operand,
                        reject_float16, require_rank, reshape_into, reshaped, static_shape,
                        weights_operand)

BATCH_MATMUL_LEVEL = level_for(Op.BATCH_MATMUL)


def _rows(ctx, x: int, depth: int) -> int:
    """The rows TFLite (and NNAPI) make of input x: its element count over the weights' depth."""
    count = math.prod(static_shape(ctx, x, "input"))
    if count % depth:
        raise Unsupported(Reason.INVALID, f"input {name(ctx, x)} has {count} elements, not a multiple of "
                                          f"the weights' {depth} columns")
    return count // depth


def _fc_result(ctx, node, rows: int, units: int):
    """(fuse, operand FULLY_CONNECTED writes, finish): the output itself when it is [rows, units],
    else a temporary RESHAPEd into it (keep_num_dims, rank-1 outputs)."""
    y = node.outputs[0]
    if tuple(ctx.shape(y)) == (rows, units):
        return ctx.activation(fuse_of(node, ctx), y)
    fuse = fuse_operand(node, ctx)
    tmp = temp(ctx, y, [rows, units], "fc_2d")
    return fuse, tmp, (lambda: reshape_into(ctx, tmp, y))


def _as_rows(ctx, x: int, rows: int, depth: int) -> int:
    """Input x as NNAPI FULLY_CONNECTED takes it: rank 2 to 4 as is, other ranks reshaped to [rows, depth]."""
    return ctx.operand(x) if len(ctx.shape(x)) in (2, 3, 4) else reshaped(ctx, ctx.operand(x), [rows, depth],
                                                                            f"{ctx.tensor(x).name}/rows")


@converter("tflite", "FULLY_CONNECTED", versions=(1, 14))
def fully_connected(node, ctx):
    """FULLY_CONNECTED (keep_num_dims, optional bias, per-tensor or per-channel 8-bit weights)."""
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 else -1
    if node.attrs.get("weights_format", 0):
        raise Unsupported(Reason.ATTRIBUTE, f"weights_format {node.attrs['weights_format']} of {name(ctx, w)}: "
                                            f"only DEFAULT weights are supported")
    reject_float16(ctx, x, w, b)
    units, depth = require_rank(ctx, w, {2}, "weights")
    rows = _rows(ctx, x, depth)
    q = ctx.tensor(w).quant
    if not dequantize_hybrid(ctx, x, w) and q is not None and q.per_channel:
        return _per_channel_fc(node, ctx, x, w, b, rows, units, depth)
    fuse, out, finish = _fc_result(ctx, node, rows, units)
    ctx.emit_form(Op.FULLY_CONNECTED, "default", [out], input=_as_rows(ctx, x, rows, depth),
                  weights=weights_operand(ctx, w), bias=bias_operand(ctx, b, x, w, units), fuse=fuse)
    finish()


def _per_channel_fc(node, ctx, x, w, b, rows, units, depth):
    """Per-channel weights: a 1x1 CONV_2D over [rows, 1, 1, depth] (same per-channel requantization)."""
    if ctx.tensor(w).quant.axis != 0:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"weights {name(ctx, w)} are quantized along axis "
                                                    f"{ctx.tensor(w).quant.axis}, not the output units")
    weights = constant_array(ctx, w, "per-channel weights")
    flt = const_like(ctx, w, np.asarray(weights).reshape(units, 1, 1, depth), f"{ctx.tensor(w).name}/1x1")
    image = reshaped(ctx, ctx.operand(x), [rows, 1, 1, depth], f"{ctx.tensor(x).name}/1x1")
    conv_out = temp(ctx, node.outputs[0], [rows, 1, 1, units], "1x1")
    ctx.emit_form(Op.CONV_2D, "implicit", [conv_out], input=image, filter=flt, bias=bias_operand(ctx, b, x, w, units),
                  padding=ctx.i32(PaddingCode.VALID), stride_w=ctx.i32(1), stride_h=ctx.i32(1),
                  fuse=fuse_operand(node, ctx))
    reshape_into(ctx, conv_out, node.outputs[0])


# -- BATCH_MATMUL ----------------------------------------------------------------------

def _rank_to(ctx, i: int, rank: int) -> int:
    """Operand of tensor i with leading 1s up to `rank` (NNAPI BATCH_MATMUL wants equal ranks)."""
    shape = ctx.shape(i)
    operand = weights_operand(ctx, i)
    if len(shape) == rank:
        return operand
    return reshaped(ctx, operand, (1,) * (rank - len(shape)) + tuple(shape), f"{ctx.tensor(i).name}/rank{rank}")


def _swap_last(ctx, operand: int, shape: tuple, label: str) -> int:
    """TRANSPOSE of the last two dimensions (adj_x below BATCH_MATMUL's level)."""
    perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
    t = otype(ctx, operand)
    out = ctx.temp(OperandType(t.code, [shape[p] for p in perm], t.scale, t.zero_point), label)
    ctx.emit_form(Op.TRANSPOSE, "default", [out], input=operand, perm=ctx.const(np.asarray(perm, np.int32)))
    return out


@converter("tflite", "BATCH_MATMUL", versions=(1, 4))
def batch_matmul(node, ctx):
    """BATCH_MATMUL (adj_x, adj_y); below feature level 6 a FULLY_CONNECTED when y is a constant matrix."""
    x, y = node.inputs[0], node.inputs[1]
    reject_float16(ctx, x, y)
    adj_x, adj_y = bool(node.attrs.get("adj_x")), bool(node.attrs.get("adj_y"))
    if ctx.feature_level < BATCH_MATMUL_LEVEL:
        return _matmul_as_fc(node, ctx, x, y, adj_x, adj_y)
    dequantize_hybrid(ctx, x, y)
    rank = max(len(ctx.shape(x)), len(ctx.shape(y)), 2)
    ctx.emit_form(Op.BATCH_MATMUL, "default", [ctx.output(node.outputs[0])], x=_rank_to(ctx, x, rank),
                  y=_rank_to(ctx, y, rank), adj_x=ctx.boolean(adj_x), adj_y=ctx.boolean(adj_y))


def _matmul_as_fc(node, ctx, x, y, adj_x, adj_y):
    """x @ y = FULLY_CONNECTED(x, weights = y^T) when y is constant with no batch extent (exact:
    the same products, and for 8-bit the same requantization by x_scale * y_scale / out_scale)."""
    why = f"BATCH_MATMUL {name(ctx, node.outputs[0])} below feature level {BATCH_MATMUL_LEVEL}"
    if not ctx.is_const(y):
        raise Unsupported(Reason.FEATURE_LEVEL, f"{why}: y {name(ctx, y)} is not a constant", BATCH_MATMUL_LEVEL)
    y_shape = static_shape(ctx, y, "y")
    if len(y_shape) < 2 or math.prod(y_shape[:-2]) != 1:
        raise Unsupported(Reason.FEATURE_LEVEL, f"{why}: y {name(ctx, y)} has batch dimensions {list(y_shape)}",
                          BATCH_MATMUL_LEVEL)
    matrix = np.asarray(constant_array(ctx, y, "y")).reshape(y_shape[-2:])
    weights = matrix if adj_y else matrix.T  # FULLY_CONNECTED weights are [units, depth]
    units, depth = weights.shape
    x_shape = static_shape(ctx, x, "x")
    lhs = ctx.operand(x)
    if adj_x:
        lhs = _swap_last(ctx, lhs, x_shape, f"{ctx.tensor(x).name}/adj")
    rows = math.prod(x_shape) // depth
    if len(x_shape) not in (2, 3, 4):
        lhs = reshaped(ctx, lhs, [rows, depth], f"{ctx.tensor(x).name}/rows")
    label = f"{ctx.tensor(y).name}/weights"
    if is_hybrid(ctx, x, y):  # a per-channel axis of y's last two dimensions moves with the transpose
        q = ctx.tensor(y).quant
        axis = None if not q.per_channel else (1 - (q.axis - len(y_shape) + 2) if not adj_y else q.axis - len(y_shape) + 2)
        w_operand = hybrid_weights(ctx, y, np.ascontiguousarray(weights), axis, label)
    else:
        w_operand = const_like(ctx, y, np.ascontiguousarray(weights), label)
    fuse, out, finish = _fc_result(ctx, node, rows, units)
    ctx.emit_form(Op.FULLY_CONNECTED, "default", [out], input=lhs, weights=w_operand,
                  bias=bias_operand(ctx, -1, x, y, units), fuse=fuse)
    finish()


# -- DENSIFY ---------------------------------------------------------------------------

def _sparse_input(node, ctx):
    src = node.inputs[0]
    if not ctx.is_const(src):
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"DENSIFY input {name(ctx, src)} is not a constant")
    if not getattr(ctx.tensor(src), "sparse", False):
        raise Unsupported(Reason.INVALID, f"DENSIFY input {name(ctx, src)} has no sparsity parameters")
    return ctx.tensor(src)


@folder("tflite", "DENSIFY", how="densify of weights")
def fold_densify(node, ctx):
    """A sparse constant densifies before conversion: its consumers then read a dense constant."""
    return [densify(_sparse_input(node, ctx)).reshape(ctx.tensor(node.outputs[0]).shape or (1,))]


@converter("tflite", "DENSIFY", versions=(1, 1))
def densify_op(node, ctx):
    """DENSIFY not folded (fold_densify): the dense value as the output's constant operand, nothing emitted."""
    t, out = _sparse_input(node, ctx), node.outputs[0]
    if out in ctx.graph.outputs:
        raise Unsupported(Reason.INVALID, f"DENSIFY output {name(ctx, out)} is a model output, which NNAPI cannot "
                                          f"make a constant")
    constant_from(ctx, out, densify(t))

"""Reductions other than ReduceMean, and ArgMax/ArgMin, TopK.

ReduceSum/Max/Min/Prod map to REDUCE_*; ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and
ReduceLogSumExp are exact compositions around REDUCE_SUM (LogSumExp subtracts the maximum first, as
onnxruntime does, so large inputs do not overflow). Axes come from the attribute before the opset that
made them an input (13 for ReduceSum, 18 for the others). ArgMax/ArgMin/TopK indices are int32 in NNAPI:
an int64 graph output is noted in io_rewrites."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, axes_of, axis_attr, const_ints, ints, known_rank, onnx_op
from .compose import Chain

DIRECT = {"ReduceSum": Op.REDUCE_SUM, "ReduceMax": Op.REDUCE_MAX, "ReduceMin": Op.REDUCE_MIN,
          "ReduceProd": Op.REDUCE_PROD}
BOOL_REDUCE = {"ReduceMax": Op.REDUCE_ANY, "ReduceMin": Op.REDUCE_ALL}  # max/min of bools: any/all
# (op applied before the sum, op applied after it)
COMPOSED = {"ReduceL1": (Op.ABS, None), "ReduceL2": (Op.MUL, Op.SQRT), "ReduceSumSquare": (Op.MUL, None),
            "ReduceLogSum": (None, Op.LOG), "ReduceLogSumExp": (Op.EXP, Op.LOG)}
AXES_INPUT_FROM = {"ReduceSum": 13}  # the others take axes as an input from opset 18
INDEX_NOTE = "int64 -> int32: NNAPI indices are int32"


def reduce_axes(node, ctx, x: int):
    """Sorted ONNX axes of a reduction, or None for noop_with_empty_axes with no axes."""
    rank = known_rank(ctx, x)
    if node.version >= AXES_INPUT_FROM.get(node.op, 18):
        axes = const_ints(ctx, node, 1, "axes")
    else:
        axes = ints(node, "axes")
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            return None
        axes = list(range(rank))
    if rank > 4:
        raise Unsupported(Reason.RANK, f"{node.label()}: NNAPI reductions take rank 4 at most (rank {rank}, "
                                       f"{ctx.tensor(x).name!r} {list(ctx.source_shape(x))})")
    return axes_of(ctx, node, x, axes)


def _reduce(ctx, code, src: int, out: int, x: int, axes, keep: bool) -> None:
    ctx.emit_form(code, "default", [out], input=src,
                  axes=ctx.const(np.asarray(sorted({ctx.axis(x, a) for a in axes}), np.int32)),
                  keep_dims=ctx.boolean(keep))


@onnx_op(*DIRECT, *COMPOSED, versions=(7, OPSET_MAX))
def reduce(node, ctx):
    """REDUCE_SUM/MAX/MIN/PROD over the remapped axes (keepdims); L1, L2, SumSquare, LogSum, LogSumExp as
    compositions with REDUCE_SUM."""
    x, y = node.inputs[0], node.outputs[0]
    axes = reduce_axes(node, ctx, x)
    keep = bool(node.attrs.get("keepdims", 1))
    if axes is None:
        if node.op in DIRECT:
            ctx.forward(x, y)
            return
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: noop_with_empty_axes on {node.op} (runtimes differ on "
                                            f"whether its elementwise part applies)")
    shape = ctx.tensor(x).shape or ()
    if any(shape[a] == 0 for a in axes if a < len(shape)):
        raise Unsupported(Reason.INVALID, f"{node.label()}: reduces an empty axis (NNAPI has no empty tensors)")
    if node.op in DIRECT:
        code = DIRECT[node.op]
        if ctx.nnapi_type(ctx.resolve(x))[0].code == C.TENSOR_BOOL8:
            code = BOOL_REDUCE.get(node.op, code)
        _reduce(ctx, code, ctx.operand(x), ctx.output(y), x, axes, keep)
        return
    if ctx.tensor(x).quant is not None or ctx.nnapi_type(ctx.resolve(x))[0].code != C.TENSOR_FLOAT32:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: {node.op} is composed exactly only for float32")
    before, after = COMPOSED[node.op]
    src, pre = ctx.operand(x), Chain(ctx, node, x)
    peak = None
    if node.op == "ReduceLogSumExp":  # exp(x - max) cannot overflow
        peak = pre.temp(dims=_kept_dims(ctx, x, axes))
        _reduce(ctx, Op.REDUCE_MAX, src, peak, x, axes, True)
        src = pre.binary(Op.SUB, src, peak)
    if before == Op.MUL:
        src = pre.binary(Op.MUL, src, src)
    elif before is not None:
        src = pre.unary(before, src)
    post = Chain(ctx, node, y)
    out = ctx.output(y)
    if after is None and peak is None:
        _reduce(ctx, Op.REDUCE_SUM, src, out, x, axes, keep)
        return
    if peak is None:
        total = post.temp()
        _reduce(ctx, Op.REDUCE_SUM, src, total, x, axes, keep)
        post.unary(after, total, out=out)
        return
    kept = _kept_dims(ctx, x, axes)  # log-sum-exp works on the kept-axes shape, then drops them
    total = pre.temp(dims=kept)
    _reduce(ctx, Op.REDUCE_SUM, src, total, x, axes, True)
    summed = pre.binary(Op.ADD, pre.unary(Op.LOG, total, out=pre.temp(dims=kept)), peak,
                        out=out if keep else pre.temp(dims=kept))
    if not keep:
        ctx.emit_form(Op.RESHAPE, "default", [out], input=summed,
                      shape=ctx.const(np.asarray(ctx.model.operands[out].type.dimensions, np.int32)))


def _kept_dims(ctx, x: int, axes) -> tuple:
    """Operand dimensions of tensor x reduced over `axes` with keepdims."""
    dims = list(ctx.model.operands[ctx.operand(x)].type.dimensions)
    for a in axes:
        dims[ctx.axis(x, a)] = 1
    return tuple(dims)


def _index_output(ctx, i: int, dims) -> int:
    note = INDEX_NOTE if i in ctx.graph.outputs else None
    return ctx.bind_output(i, OperandType(C.TENSOR_INT32, tuple(dims) or (1,)), note)


@onnx_op("ArgMax", "ArgMin", versions=(7, OPSET_MAX))
def arg_extreme(node, ctx):
    """ARGMAX / ARGMIN along an axis (ONNX layout); keepdims as a RESHAPE after (feature level 3)."""
    if node.attrs.get("select_last_index", 0):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: select_last_index=1 (NNAPI returns the first index)")
    x, y = node.inputs[0], node.outputs[0]
    shape = ctx.source_shape(x)
    axis = axis_attr(ctx, node, x, 0)
    code = Op.ARGMAX if node.op == "ArgMax" else Op.ARGMIN
    kept = [d for k, d in enumerate(shape) if k != axis]
    out_shape = ctx.source_shape(y)
    keep = bool(node.attrs.get("keepdims", 1))
    out = _index_output(ctx, y, out_shape)
    dst = out
    if keep and kept:  # NNAPI drops the axis (a rank-1 input gives shape [1], as keepdims does)
        dst = ctx.temp(OperandType(C.TENSOR_INT32, tuple(kept)), f"{ctx.tensor(y).name}/squeezed")
    ctx.emit_form(code, "default", [dst], input=ctx.operand_as(x), axis=ctx.i32(axis))
    if dst != out:
        ctx.emit_form(Op.EXPAND_DIMS, "default", [out], input=dst, axis=ctx.i32(axis))


@onnx_op("TopK", versions=(7, OPSET_MAX))
def topk(node, ctx):
    """TOPK_V2 along the last axis (constant K; sorted); largest=0 as TOPK_V2 of the negated input."""
    x, values, indices = node.inputs[0], node.outputs[0], node.outputs[1]
    shape = ctx.source_shape(x)
    axis = axis_attr(ctx, node, x, -1)
    if axis != len(shape) - 1:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: axis {axis} is not the last axis (TOPK_V2 works "
                                            f"along the last one)")
    if not node.attrs.get("sorted", 1):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: sorted=0 (TOPK_V2 output order is sorted)")
    k = ints(node, "k") if node.version < 10 else const_ints(ctx, node, 1, "K")
    src = ctx.operand_as(x)
    largest = bool(node.attrs.get("largest", 1))
    c = Chain(ctx, node, values)
    if not largest:
        if c.code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32):
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: largest=0 needs a float or int32 input")
        src = c.unary(Op.NEG, src, out=c.temp(dims=ctx.model.operands[src].type.dimensions))
    vals = ctx.output(values) if largest else c.temp()
    idx = _index_output(ctx, indices, ctx.source_shape(indices)) if indices >= 0 else \
        ctx.temp(OperandType(C.TENSOR_INT32, ctx.model.operands[vals].type.dimensions), "topk/indices")
    ctx.emit_form(Op.TOPK_V2, "default", [vals, idx], input=src, k=ctx.i32(k[0]))
    if not largest:
        c.unary(Op.NEG, vals, out=ctx.output(values))

"""Reductions other than ReduceMean, and ArgMax/ArgMin, TopK.

ReduceSum/Max/Min/Prod map to REDUCE_*; ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and
ReduceLogSumExp are exact compositions around REDUCE_SUM (LogSumExp subtracts the maximum first, as
onnxruntime does, so large inputs do not overflow). Axes come from the attribute before the opset that
made them an input (13 for ReduceSum, 18 for the others). ArgMax/ArgMin/TopK indices are int32 in NNAPI:
an int64 graph output is noted in io_rewrites ("int64 -> int32"; the caller widens it), and later nodes
read the int32 operand (OnnxContext.int32_indices)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, axes_of, axis_attr, const_ints, ints, known_rank, onnx_op
from .compose import Chain
from ...pins import pin_hint

DIRECT = {"ReduceSum": Op.REDUCE_SUM, "ReduceMax": Op.REDUCE_MAX, "ReduceMin": Op.REDUCE_MIN,
          "ReduceProd": Op.REDUCE_PROD}
BOOL_REDUCE = {"ReduceMax": Op.REDUCE_ANY, "ReduceMin": Op.REDUCE_ALL}  # max/min of bools: any/all
# (op applied before the sum, op applied after it)
COMPOSED = {"ReduceL1": (Op.ABS, None), "ReduceL2": (Op.MUL, Op.SQRT), "ReduceSumSquare": (Op.MUL, None),
            "ReduceLogSum": (None, Op.LOG), "ReduceLogSumExp": (Op.EXP, Op.LOG)}
AXES_INPUT_FROM = {"ReduceSum": 13}  # the others take axes as an input from opset 18


def reduce_axes(node, ctx, x: int):
    """Sorted ONNX axes of a reduction, or None for noop_with_empty_axes with no axes."""
    rank = len(known_rank(ctx, node, x))
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


@onnx_op("ArgMax", "ArgMin", versions=(7, OPSET_MAX))
def arg_extreme(node, ctx):
    """ARGMAX / ARGMIN along an axis (ONNX layout; feature level 3); keepdims as EXPAND_DIMS after;
    select_last_index=1 as the same op on the input reversed along the axis by a constant GATHER, and
    n - 1 - index (SUB, feature level 4)."""
    x, y = node.inputs[0], node.outputs[0]
    shape = known_rank(ctx, node, x)
    axis = axis_attr(ctx, node, x, 0)
    code = Op.ARGMAX if node.op == "ArgMax" else Op.ARGMIN
    kept = [d for k, d in enumerate(shape) if k != axis]
    keep = bool(node.attrs.get("keepdims", 1))
    last = bool(node.attrs.get("select_last_index", 0))
    out = ctx.output(y)
    src = ctx.operand_as(x)
    if last:
        n = shape[axis]
        if not n:
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: select_last_index needs the extent of axis "
                                                    f"{axis} ({pin_hint('it')})")
        rev = ctx.temp_like(x, "reversed", dimensions=tuple(shape))
        ctx.emit_form(Op.GATHER, "default", [rev], input=src, axis=ctx.i32(axis),
                      indices=ctx.const(np.arange(n - 1, -1, -1, dtype=np.int32)))
        src = rev
    index_type = OperandType(C.TENSOR_INT32, tuple(kept) or (1,))
    # NNAPI drops the axis (a rank-1 input gives shape [1], as keepdims does)
    expand = keep and kept
    dst = ctx.temp(index_type, f"{ctx.tensor(y).name}/arg") if expand or last else out
    ctx.emit_form(code, "default", [dst], input=src, axis=ctx.i32(axis))
    if last:
        flipped = ctx.temp(index_type, f"{ctx.tensor(y).name}/from_end") if expand else out
        ctx.emit_form(Op.SUB, "default", [flipped], input1=ctx.const(np.int32([shape[axis] - 1])), input2=dst,
                      fuse=ctx.i32(0))
        dst = flipped
    if expand:
        ctx.emit_form(Op.EXPAND_DIMS, "default", [out], input=dst, axis=ctx.i32(axis))


@onnx_op("TopK", versions=(7, OPSET_MAX))
def topk(node, ctx):
    """TOPK_V2 (constant K, sorted=1) along any axis (another than the last: swapped there by TRANSPOSE).

    Feature level 3. Along another axis than the last, that axis is swapped to the end by a TRANSPOSE before
    and after (float and quantized values; the int32 indices go back through CAST to float32 and TRANSPOSE,
    exact below 2**24, as NNAPI has no int32 TRANSPOSE); largest=0 as TOPK_V2 of the negated input. Ties keep
    the lower index first, as ONNX specifies."""
    x, values, indices = node.inputs[0], node.outputs[0], node.outputs[1]
    shape = known_rank(ctx, node, x)
    rank = len(shape)
    axis = axis_attr(ctx, node, x, -1)
    if not node.attrs.get("sorted", 1):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: sorted=0 (TOPK_V2 output order is sorted)")
    k = int(node.attrs["k"]) if node.version < 10 else const_ints(ctx, node, 1, "K")[0]
    if not k or shape[axis] and k > shape[axis]:
        raise Unsupported(Reason.INVALID, f"{node.label()}: K = {k} for an axis of extent {shape[axis]} (NNAPI "
                                          f"has no empty tensors)")
    swap = list(range(rank))
    swap[axis], swap[-1] = swap[-1], swap[axis]
    moved = axis != rank - 1
    c = Chain(ctx, node, values)
    if moved and c.code == C.TENSOR_INT32:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: int32 values along axis {axis} (not the last) "
                                               f"would need an int32 TRANSPOSE, which NNAPI lacks")
    src = ctx.operand_as(x, tuple(swap) if moved else None)
    src_dims = ctx.model.operands[src].type.dimensions
    out_dims = tuple(src_dims[:-1]) + (k,)
    if not node.attrs.get("largest", 1):
        if c.code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32):
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: largest=0 needs a float or int32 input")
        src = c.unary(Op.NEG, src, out=c.temp(dims=src_dims))
    vals = ctx.output(values) if node.attrs.get("largest", 1) and not moved else c.temp(dims=out_dims)
    idx_type = OperandType(C.TENSOR_INT32, out_dims)
    idx = ctx.output(indices) if indices >= 0 and not moved else \
        ctx.temp(idx_type, f"{ctx.tensor(values).name}/indices")
    ctx.emit_form(Op.TOPK_V2, "default", [vals, idx], input=src, k=ctx.i32(k))
    if not node.attrs.get("largest", 1):
        vals = c.unary(Op.NEG, vals, out=ctx.output(values) if not moved else c.temp(dims=out_dims))
    if not moved:
        return
    perm = ctx.const(np.asarray(swap, np.int32))  # a swap is its own inverse
    ctx.emit_form(Op.TRANSPOSE, "default", [ctx.output(values)], input=vals, perm=perm)
    if indices < 0:
        return
    as_float = ctx.temp(OperandType(C.TENSOR_FLOAT32, out_dims), f"{ctx.tensor(indices).name}/float")
    ctx.emit_form(Op.CAST, "default", [as_float], input=idx)
    back = ctx.temp(OperandType(C.TENSOR_FLOAT32, tuple(out_dims[p] for p in swap)),
                    f"{ctx.tensor(indices).name}/transposed")
    ctx.emit_form(Op.TRANSPOSE, "default", [back], input=as_float, perm=perm)
    ctx.emit_form(Op.CAST, "default", [ctx.output(indices)], input=back)

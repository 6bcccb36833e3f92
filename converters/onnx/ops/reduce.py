"""ReduceMean -> MEAN over the remapped axes."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, axes_of, const_ints, ints, known_rank, onnx_op


@onnx_op("ReduceMean", versions=(7, OPSET_MAX))
def reduce_mean(node, ctx):
    """ReduceMean (axes attribute or input, keepdims) as MEAN."""
    x = node.inputs[0]
    axes = ints(node, "axes") if node.version < 18 else const_ints(ctx, node, 1, "axes")
    if axes and ctx.tensor(x).shape is None and ctx.perm_of(x) is None:
        # unknown rank in the ONNX layout: MEAN takes the axes as given (it normalises negative ones itself)
        ctx.emit_form(Op.MEAN, "default", [ctx.output(node.outputs[0])], input=ctx.operand(x),
                      axes=ctx.const(np.asarray(sorted(set(axes)), np.int32)),
                      keep_dims=ctx.i32(int(node.attrs.get("keepdims", 1))))
        return
    rank = len(known_rank(ctx, node, x))
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            ctx.forward(x, node.outputs[0])
            return
        axes = list(range(rank))
    if rank > 4:
        raise Unsupported(Reason.RANK, f"{node.label()}: MEAN takes rank 4 at most ({ctx.tensor(x).name!r} has "
                                       f"rank {rank}: {list(ctx.source_shape(x))})")
    operand_axes = sorted({ctx.axis(x, a) for a in axes_of(ctx, node, x, axes)})
    ctx.emit_form(Op.MEAN, "default", [ctx.output(node.outputs[0])], input=ctx.operand(x),
                  axes=ctx.const(np.asarray(operand_axes, np.int32)),
                  keep_dims=ctx.i32(int(node.attrs.get("keepdims", 1))))

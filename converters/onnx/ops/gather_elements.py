"""GatherElements as one GATHER from the data flattened to 1-D: output element p reads flat index
base(p) + index(p) * stride(axis), where base(p) is the row-major offset of p's other coordinates (a
constant). Constant indices fold into one constant of flat indices (checked against the axis extent);
run-time int32 indices (ArgMax/TopK results, OnnxContext.int32_indices) become flat with LESS/ADD/SELECT
(negative indices count from the end), MUL and ADD (feature level 4). The data keeps its type (float32,
float16, int32, quantized: whatever GATHER takes); flattening int32 data is a RESHAPE of feature level 6.
Both shapes must be known."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op
from .compose import Chain, known_shape, reshaped


@onnx_op("GatherElements", versions=(11, OPSET_MAX))
def gather_elements(node, ctx):
    """GatherElements as GATHER of flat indices from the flattened data."""
    x, i, y = node.inputs[0], node.inputs[1], node.outputs[0]
    shape, ishape = known_shape(ctx, node, x), known_shape(ctx, node, i)
    rank = len(shape)
    if len(ishape) != rank or not rank:
        raise Unsupported(Reason.INVALID, f"{node.label()}: indices of rank {len(ishape)} for data of rank {rank}")
    axis = int(node.attrs.get("axis", 0))
    if not -rank <= axis < rank:
        raise Unsupported(Reason.INVALID, f"{node.label()}: axis {axis} for rank {rank}")
    axis %= rank
    if any(e > d for k, (e, d) in enumerate(zip(ishape, shape)) if k != axis):
        raise Unsupported(Reason.INVALID, f"{node.label()}: indices shape {list(ishape)} exceeds the data shape "
                                          f"{list(shape)} off the axis")
    n, size = shape[axis], int(np.prod(shape))
    if size >= 2 ** 31:
        raise Unsupported(Reason.INVALID, f"{node.label()}: {size} elements need int64 flat indices")
    strides = [int(np.prod(shape[k + 1:])) for k in range(rank)]
    grid = np.indices(ishape)
    base = sum(grid[k] * strides[k] for k in range(rank) if k != axis).astype(np.int64)
    data = ctx.operand_data(x)
    if rank > 1:
        data = reshaped(ctx, node, data, (size,))
    if ctx.is_const(i):
        idx = np.asarray(ctx.const_value(i, "indices")).astype(np.int64)
        if ((idx < -n) | (idx >= n)).any():
            raise Unsupported(Reason.INVALID, f"{node.label()}: an index is outside [-{n}, {n})")
        flat = ctx.const((base + np.where(idx < 0, idx + n, idx) * strides[axis]).astype(np.int32))
    else:
        src = ctx.operand_as(i)
        if ctx.model.operands[src].type.code != C.TENSOR_INT32:
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: indices {ctx.tensor(i).name!r} are not int32")
        c = Chain(ctx, node, i)
        below = c.binary(Op.LESS, src, c.scalar(0), out_code=C.TENSOR_BOOL8)
        fixed = c.select(below, c.binary(Op.ADD, src, c.scalar(n)), src)
        scaled = fixed if strides[axis] == 1 else c.binary(Op.MUL, fixed, c.scalar(strides[axis]))
        flat = scaled if not base.any() else c.binary(Op.ADD, scaled, ctx.const(base.astype(np.int32)))
    out = ctx.output(y)
    if ctx.model.operands[out].type.dimensions != tuple(ishape):
        raise Unsupported(Reason.INVALID, f"{node.label()}: output {ctx.tensor(y).name!r} is not shaped like the "
                                          f"indices {list(ishape)}")
    ctx.emit_form(Op.GATHER, "default", [out], input=data, axis=ctx.i32(0), indices=flat)

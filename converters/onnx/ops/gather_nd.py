"""GatherND as one GATHER of linear row indices from the data with its indexed axes flattened
(converters/gather_nd.py): constant indices (negative ones count from the end) or run-time int32 indices
(OnnxContext.int32_indices), any batch_dims. Both shapes must be known."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C

from ...gather_nd import emit_gather_nd
from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op
from .compose import known_shape


@onnx_op("GatherND", versions=(11, OPSET_MAX))
def gather_nd(node, ctx):
    """GatherND as GATHER of row indices (computed at conversion, or with int32 MUL/ADD at run time)."""
    x, i, y = node.inputs[0], node.inputs[1], node.outputs[0]
    shape, ishape = known_shape(ctx, node, x), known_shape(ctx, node, i)
    if ctx.is_const(i):
        indices = np.asarray(ctx.const_value(i, "indices")).astype(np.int64).reshape(ishape)
    else:
        indices = ctx.operand_as(i)
        if ctx.model.operands[indices].type.code != C.TENSOR_INT32:
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: indices {ctx.tensor(i).name!r} are not int32")
    emit_gather_nd(ctx, node.label(), ctx.operand_data(x), shape, indices, ishape,
                   int(node.attrs.get("batch_dims", 0)), ctx.output(y), negative=True)

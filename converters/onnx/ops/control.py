"""If -> NNAPI IF (feature level 4). The reader turns each branch into a graph of the SourceModel whose
inputs are the values the branches read from the enclosing graph (ONNX branches capture them
implicitly, NNAPI branches take them as explicit inputs, the same list for both); the branch models are
built like the main graph (ctx.build_subgraph) and passed as SUBGRAPH operands.

Loop becomes NNAPI WHILE in loop.py (int32 counter, a generated condition model, no scan outputs)."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ...tflite.ops.control import _check_arity, _subgraph_operand  # shared with TFLite's IF/WHILE
from ..common import OPSET_MAX, onnx_op

BRANCHES = (("then_branch", "then_model"), ("else_branch", "else_model"))


@onnx_op("If", versions=(7, OPSET_MAX))
def if_(node, ctx):
    """outputs = then_branch(captured) if cond else else_branch(captured), as IF."""
    cond = node.inputs[0]
    t = ctx.tensor(cond)
    if np.dtype(t.dtype) != np.bool_ or int(np.prod(ctx.shape(cond))) != 1:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: condition {t.name!r} must be one bool value "
                                               f"(NNAPI needs TENSOR_BOOL8 [1])")
    then_graph = ctx.graphs[node.subgraphs["then_branch"]]
    names = [then_graph.tensors[i].name for i in then_graph.inputs]
    by_name = {x.name: x.index for x in ctx.graph.tensors}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise Unsupported(Reason.INVALID, f"{node.label()}: the branches read {missing}, which the graph does not "
                                          f"have")
    models = {}
    for key, arg in BRANCHES:
        _check_arity(ctx, node, key, len(names), len(node.outputs))
        models[arg] = _subgraph_operand(ctx, node, key)
    inputs = [ctx.operand_as(by_name[n]) for n in names]  # branches take the ONNX layout
    ctx.emit_form(Op.IF, "default", [ctx.output(o) for o in node.outputs], condition=ctx.operand(cond),
                  inputs=inputs, **models)

"""Dynamic extents resolved before conversion (TFLite): a tensor whose
shape_signature has -1 entries gets the extents that the pinned input shapes
(--input-shape) and the static shapes of the graph determine.

The rules are the NNAPI op specs' shape inference (nnapi/shapes.py): each node
whose outputs have dynamic extents is converted on its own into a scratch
model whose inputs carry the shapes known so far, and the inferred dimensions
of the operands its output tensors map to become the tensors' shapes. Nodes
run in execution order (interleaved with constant folding, see
converters/folding.py), so a resolved shape feeds every later node. An extent
the specs cannot tell (a value-dependent one, or a node that does not convert)
stays dynamic.

TFLite's `shape` field holds a placeholder (usually 1) where the signature has
-1; the context reads those as unknown (0), and this pass replaces them by the
real extents, or keeps -1 in the signature where it cannot.
"""
from __future__ import annotations

import nnapi
from nnapi import NnapiError

from .registry import Unsupported


def _dynamic(t) -> bool:
    return (not t.is_constant and t.shape is not None and t.shape_signature is not None
            and len(t.shape_signature) == len(t.shape) and any(s < 0 for s in t.shape_signature))


def resolve_node_shapes(node, ctx, run_converter) -> None:
    """Give node's dynamic output tensors the extents the specs infer from its inputs' known shapes."""
    graph = ctx.graph
    outs = [o for o in node.outputs if 0 <= o < len(graph.tensors) and _dynamic(graph.tensors[o])]
    if not outs:
        return
    try:
        run_converter(node, ctx)
        shapes = nnapi.infer_shapes(ctx.model)
    except (Unsupported, NnapiError):
        return  # the node does not convert: its outputs stay dynamic, its check reports why
    for o in outs:
        dims = shapes.get(ctx.operand_of.get(o))
        t = graph.tensors[o]
        if dims is None or len(dims) != max(len(t.shape), 1):
            continue
        if not t.shape:  # a rank-0 tensor held as [1]: nothing to resolve
            continue
        signature = tuple(d if d else -1 for d in dims)
        t.shape = tuple(d if d else 1 for d in dims)  # the placeholder convention of TFLite's shape field
        t.shape_signature = None if all(dims) else signature

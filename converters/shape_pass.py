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

What stays dynamic is named for coverage (`name_extents`), as the ONNX reader names dim_params: each
dynamic extent of an input not pinned is an input dimension, every other extent left dynamic a symbol of
its own, which converters/pins.py ties to the input dimensions the node producing it reads, or to the
values that decide it (the count a WHERE keeps).

The bodies of IF and WHILE get the shapes of the node's inputs (`pin_bodies`), before
they are folded, so their shape arithmetic folds too (a Keras GRU's WHILE body). A
WHILE body keeps them only when its outputs then have the same shapes (the loop is
shape-invariant at these shapes): else the body is restored and stays dynamic.
"""
from __future__ import annotations

import copy

import nnapi
from nnapi import NnapiError

from .registry import Unsupported


def _dynamic(t) -> bool:
    return (not t.is_constant and t.shape is not None and t.shape_signature is not None
            and len(t.shape_signature) == len(t.shape) and any(s < 0 for s in t.shape_signature))


OUTPUT_SHAPES: dict = {}  # format -> fn(source, node, ctx): the framework's output shapes, or None


def resolve_node_shapes(node, ctx, run_converter, source=None) -> None:
    """Give node's dynamic output tensors the extents the specs infer from its inputs' known shapes; where the
    node does not convert, or the specs leave an extent unknown, the framework's (OUTPUT_SHAPES)."""
    graph = ctx.graph
    outs = [o for o in node.outputs if 0 <= o < len(graph.tensors) and _dynamic(graph.tensors[o])]
    if not outs:
        return
    try:
        run_converter(node, ctx)
        shapes = nnapi.infer_shapes(ctx.model)
        found = {o: shapes.get(ctx.operand_of.get(o)) for o in outs}
    except (Unsupported, NnapiError):
        found = {}  # the node does not convert: the framework may still tell its shapes
    ask = OUTPUT_SHAPES.get(getattr(source, "format", None))
    if ask is not None and not all(found.get(o) and all(found[o]) for o in outs):
        framework = ask(source, node, ctx)
        if framework is not None:
            found.update({o: dims for o, dims in zip(node.outputs, framework) if o in outs})
    for o in outs:
        dims = found.get(o)
        t = graph.tensors[o]
        if dims is None or len(dims) != max(len(t.shape), 1) or any(
                s >= 0 and d and s != d for s, d in zip(t.shape_signature, dims)):
            continue
        if not t.shape:  # a rank-0 tensor held as [1]: nothing to resolve
            continue
        signature = tuple(d if d else -1 for d in dims)
        t.shape = tuple(d if d else 1 for d in dims)  # the placeholder convention of TFLite's shape field
        t.shape_signature = None if all(dims) else signature


# the subgraph attributes of the TFLite control-flow builtins, with the position of their first body input
BODY_INPUTS = {"IF": 1, "WHILE": 0}
WHILE_BODY = "body_subgraph_index"


def pin_bodies(source, node, ctx, fold_graph) -> None:
    """Give the subgraphs of IF/WHILE node the static extents its inputs have where they declare dynamic ones,
    then fold them (`fold_graph(k)`); see the module doc. A body another node also runs keeps its own."""
    first = BODY_INPUTS.get(node.op)
    if first is None:
        return
    shapes = [ctx.shape(i) if i >= 0 else () for i in node.inputs[first:]]
    users = [k for g in source.graphs for n in g.nodes for k in n.subgraphs.values()]
    keys = sorted(node.subgraphs, key=lambda key: key != WHILE_BODY)  # the body first: its verdict decides
    for key in keys:
        k = node.subgraphs[key]
        if users.count(k) != 1 or not 0 <= k < len(source.graphs):
            continue
        original = source.graphs[k]
        trial = _with_input_shapes(original, shapes)
        if trial is None:
            continue
        source.graphs[k] = trial
        fold_graph(k)
        if node.op == "WHILE" and key == WHILE_BODY and not _invariant(trial, shapes):
            source.graphs[k] = original  # the loop changes these shapes: the body stays dynamic, cond as well
            fold_graph(k, again=True)
            return


def _with_input_shapes(graph, shapes: list):
    """A copy of graph whose dynamic inputs take the static extents in shapes, or None when none does."""
    if len(graph.inputs) != len(shapes):
        return None
    tensors = list(graph.tensors)
    changed = False
    for i, shape in zip(graph.inputs, shapes):
        t = tensors[i]
        if not _dynamic(t) or not all(shape) or len(shape) != len(t.shape) or any(
                s >= 0 and s != d for s, d in zip(t.shape_signature, shape)):
            continue
        t = tensors[i] = copy.copy(t)
        t.shape, t.shape_signature = tuple(shape), None
        changed = True
    if not changed:
        return None
    trial = copy.copy(graph)
    trial.__dict__ = {k: v for k, v in graph.__dict__.items() if not k.startswith("_")}  # no caches of the original
    trial.tensors = [copy.copy(t) for t in tensors]  # folding writes their data and shapes
    trial.nodes = [copy.copy(n) for n in graph.nodes]
    return trial


def _invariant(body, shapes: list) -> bool:
    """Every output of WHILE body has the static shape its input has (what the next iteration reads)."""
    for o, shape in zip(body.outputs, shapes):
        t = body.tensors[o]
        if t.shape is None or _dynamic(t) or tuple(t.shape or (1,)) != tuple(shape):
            return False
    return True


def name_extents(source, input_shapes) -> None:
    """Give the main graph's dynamic extents the symbols converters/pins.py reads (see the module doc)."""
    from .pins import UNNAMED
    graph = source.main
    where: dict = {}
    inputs = set(graph.inputs)
    for t in graph.tensors:
        if not _dynamic(t) or (t.index in inputs and t.name in (input_shapes or {})):
            continue
        names = []
        for axis, s in enumerate(t.shape_signature):
            if s >= 0:
                names.append(None)
            elif t.index in inputs:
                names.append(f"{UNNAMED}{len(where)}")
                where[names[-1]] = [(t.name, axis)]
            else:
                names.append(f"extent_{t.index}_{axis}")
        t.symbols = tuple(names)
    if where:
        source.metadata["input_symbols"] = where

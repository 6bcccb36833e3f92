"""Constant folding before conversion: nodes whose outputs are known from
constants (SHAPE, RANGE, FILL, ONE_HOT, DEQUANTIZE of a constant weight,
DENSIFY of a sparse weight, ...) are computed once, in execution order, and
their output tensors become constants of the source graph. Every later check,
conversion and coverage report then sees ordinary constant tensors, and a
folded node emits no NNAPI operation.

A folder is `fn(node, ctx) -> list of output arrays`, registered per source
format and op; it raises Unsupported when the node is not foldable (e.g. an
input known only at run time), and the node is then converted normally. Nodes
writing a graph output (or a state output) are not folded (NNAPI models cannot output constants).

The conversion-time evaluator: every other node whose inputs are all constants
(model constants, or outputs folded before it: a SHAPE of a tensor the pins make
static, say) is evaluated by its format's evaluator (`EVALUATORS`), with the
framework's own semantics:
- TFLite (converters/tflite/evaluate.py): the node converted on its own and run by
  the executor's kernels, which are conformant with NNAPI and so compute what the
  converted model would; where NNAPI has no such operation (int32 STRIDED_SLICE,
  REDUCE_PROD, CONCATENATION of shape values), LiteRT runs the node cut out into a
  one-operator model. Without LiteRT installed, such nodes stay as they are.
- ONNX (converters/onnx/ops/folded.py): onnx's reference evaluator (onnx.reference,
  always installed with onnx) on the one-node model, for float arithmetic too
  (weight normalisation g * v / ||v||, transposes and reshapes of weights).
Nodes run in execution order, each graph's (IF/WHILE bodies, If/Loop branches)
included, interleaved with the shape pass (TFLite: shape_pass.py; ONNX: onnx/shapes.py
evaluated the shape values already): a value folded here gives the next node a static
shape or a constant, so one pass in execution order reaches the fixed point.
A result larger than FOLD_MAX_BYTES is not materialised (large weights computed in
the graph stay operations); the node's `fold_refused` says so, and coverage shows it.
Random, stateful and control-flow nodes are never evaluated.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .registry import Unsupported
from .source_graph import SourceModel

FOLDERS: dict[tuple[str, str], Callable] = {}
FOLD_HOW: dict[tuple[str, str], str] = {}   # what coverage says a folded node became (default "folded constant")
EVALUATORS: dict[str, Callable] = {}        # format -> fn(source, node, ctx) -> output arrays, any node of constants
NOT_EVALUATED: dict[str, set] = {}          # format -> ops the evaluator never runs (random, stateful)
FOLD_MAX_BYTES = 16 << 20  # a value computed at conversion is materialised up to this size (16 MB)


def evaluator(fmt: str, never: tuple = ()):
    """Register fmt's conversion-time evaluator; `never`: ops it must not evaluate (random, stateful)."""
    def deco(fn):
        EVALUATORS[fmt] = fn
        NOT_EVALUATED[fmt] = set(never)
        return fn
    return deco


def _evaluable(source: SourceModel, graph, node) -> bool:
    """node has inputs, all of them constants, and no body, and its format's evaluator may run it."""
    ins = [t for t in node.inputs if t >= 0]
    return (source.format in EVALUATORS and node.op not in NOT_EVALUATED[source.format] and not node.subgraphs
            and not node.captured and bool(ins) and all(graph.tensors[t].is_constant for t in ins))


def _declared_bytes(graph, node) -> int:
    """The bytes node's outputs take by their declared static shapes (0 where an extent is unknown)."""
    total = 0
    for t in node.outputs:
        shape = graph.tensors[t].shape if t >= 0 else None
        if shape is not None and all(d > 0 for d in shape):
            total += int(np.prod(shape, dtype=np.int64)) * np.dtype(graph.tensors[t].dtype).itemsize
    return total


def _size(nbytes: int) -> str:
    return f"{nbytes / 2 ** 20:.1f} MB" if nbytes >= 1 << 20 else f"{nbytes} bytes"


def too_large(nbytes: int) -> str:
    return (f"computed from constants but not evaluated at conversion: its result, {_size(nbytes)}, exceeds the "
            f"{_size(FOLD_MAX_BYTES)} a folded constant may take, so it stays an operation")


def folder(fmt: str, *ops: str, how: str = "folded constant"):
    def deco(fn):
        for op in ops:
            FOLDERS[(fmt, op)] = fn
            FOLD_HOW[(fmt, op)] = how
        return fn
    return deco


def refused_upstream(graph, t: int):
    """The node too large to evaluate at conversion (`fold_refused`) that run-time tensor t is computed from, when
    t is computed from constants only (else None): why a weight computed in the graph is not a constant."""
    producer = {o: n for n in graph.nodes for o in n.outputs if o >= 0}
    todo, seen, found = [t], set(), None
    while todo:
        u = todo.pop()
        if u < 0 or u in seen or graph.tensors[u].is_constant:
            continue
        seen.add(u)
        n = producer.get(u)
        if n is None:  # a graph input: computed at run time anyway
            return None
        found = n if n.fold_refused else found
        todo.extend(n.inputs)
    return found


def fold_absorption(graph, node) -> dict:
    """{"into", "how"} of a folded node: into the one computed node its constant reaches (through other folded
    nodes), None when several or none read it."""
    key = sum(n.folded for n in graph.nodes)
    cached = graph.__dict__.get("_fold_readers")
    if cached is None or cached[0] != key:
        readers: dict = {}
        for n in graph.nodes:
            for t in n.inputs:
                readers.setdefault(t, []).append(n)
        cached = graph.__dict__["_fold_readers"] = (key, readers)
    readers = cached[1]
    live, todo, seen = set(), list(node.outputs), set()
    while todo:
        t = todo.pop()
        for n in readers.get(t, []):
            if n.index in seen:
                continue
            seen.add(n.index)
            if n.folded:
                todo.extend(n.outputs)
            else:
                live.add(n.index)
    return {"into": live.pop() if len(live) == 1 else None, "how": node.fold_how or "folded constant"}


def fold_source(source: SourceModel, make_context: Callable, after: Optional[Callable] = None,
                bodies: Optional[Callable] = None) -> None:
    """Fold every foldable node of every graph once (idempotent); `after(node, ctx)` runs on each node
    that is not folded, in execution order (e.g. the shape pass, whose shapes later folders read);
    `bodies(source, node, ctx, fold_graph)` runs before a node with subgraphs (IF/WHILE), so that the
    shapes its inputs have reach its bodies before they are folded (shape_pass.pin_bodies)."""
    if getattr(source, "folded", False):
        return
    source.folded = True
    done: set = set()

    def fold_graph(g: int, again: bool = False) -> None:
        """Fold graph g unless done (`again`: a body folded on trial, then restored, is folded afresh)."""
        if again or g not in done:
            done.add(g)
            _fold_graph(source, g, make_context, after, bodies, fold_graph)

    for g in range(len(source.graphs)):
        fold_graph(g)


def _fold_graph(source: SourceModel, g: int, make_context: Callable, after, bodies, fold_graph) -> None:
    graph = source.graphs[g]
    for node in graph.nodes:
        if bodies is not None and node.subgraphs and not node.folded:
            bodies(source, node, make_context(g), fold_graph)
        fn = FOLDERS.get((source.format, node.op))
        limited = fn is None and not node.folded and _evaluable(source, graph, node)
        if limited:  # the evaluator: a node of constants without a folder of its own
            fn = lambda node, ctx: EVALUATORS[source.format](source, node, ctx)  # noqa: E731
            if _declared_bytes(graph, node) > FOLD_MAX_BYTES:
                node.fold_refused, fn = too_large(_declared_bytes(graph, node)), None
        if fn is None or node.folded or any(t in graph.model_outputs for t in node.outputs):
            if after is not None and not node.folded:
                after(node, make_context(g))
            continue
        try:
            values = fn(node, make_context(g))
        except (Unsupported, ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError):
            values = None  # not foldable, or malformed: its converter checks it and reports it on the node
        if values is not None and limited and sum(np.asarray(v).nbytes for v in values) > FOLD_MAX_BYTES:
            node.fold_refused = too_large(sum(np.asarray(v).nbytes for v in values))
            values = None
        if values is None or len(values) != len(node.outputs):
            if after is not None:
                after(node, make_context(g))
            continue
        for t, value in zip(node.outputs, values):
            if t < 0:  # an output the node leaves out
                continue
            arr = np.array(value)  # an owned copy: folded data never aliases another tensor's
            arr.flags.writeable = False
            graph.tensors[t].data = arr
            graph.tensors[t].shape = arr.shape
            graph.tensors[t].shape_signature = None  # now static: a stale -1 must not read as dynamic
            graph.tensors[t].symbols = None
        node.folded = True
        node.fold_how = FOLD_HOW.get((source.format, node.op), "folded constant")

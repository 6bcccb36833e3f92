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
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .registry import Unsupported
from .source_graph import SourceModel

FOLDERS: dict[tuple[str, str], Callable] = {}
FOLD_HOW: dict[tuple[str, str], str] = {}   # what coverage says a folded node became (default "folded constant")


def folder(fmt: str, *ops: str, how: str = "folded constant"):
    def deco(fn):
        for op in ops:
            FOLDERS[(fmt, op)] = fn
            FOLD_HOW[(fmt, op)] = how
        return fn
    return deco


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


def fold_source(source: SourceModel, make_context: Callable, after: Optional[Callable] = None) -> None:
    """Fold every foldable node of every graph once (idempotent); `after(node, ctx)` runs on each node
    that is not folded, in execution order (e.g. the shape pass, whose shapes later folders read)."""
    if getattr(source, "folded", False):
        return
    source.folded = True
    for g, graph in enumerate(source.graphs):
        for node in graph.nodes:
            fn = FOLDERS.get((source.format, node.op))
            if fn is None or node.folded or any(t in graph.model_outputs for t in node.outputs):
                if after is not None and not node.folded:
                    after(node, make_context(g))
                continue
            try:
                values = fn(node, make_context(g))
            except (Unsupported, ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError):
                values = None  # not foldable, or malformed: its converter checks it and reports it on the node
            if values is None or len(values) != len(node.outputs):
                if after is not None:
                    after(node, make_context(g))
                continue
            for t, value in zip(node.outputs, values):
                arr = np.array(value)  # an owned copy: folded data never aliases another tensor's
                arr.flags.writeable = False
                graph.tensors[t].data = arr
                graph.tensors[t].shape = arr.shape
                graph.tensors[t].shape_signature = None  # now static: a stale -1 must not read as dynamic
                graph.tensors[t].symbols = None
            node.folded = True
            node.fold_how = FOLD_HOW.get((source.format, node.op), "folded constant")

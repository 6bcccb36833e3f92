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

from typing import Callable

import numpy as np

from .registry import Unsupported
from .source_graph import SourceModel

FOLDERS: dict[tuple[str, str], Callable] = {}


def folder(fmt: str, *ops: str):
    def deco(fn):
        for op in ops:
            FOLDERS[(fmt, op)] = fn
        return fn
    return deco


def fold_source(source: SourceModel, make_context: Callable) -> None:
    """Fold every foldable node of every graph once (idempotent)."""
    if getattr(source, "folded", False):
        return
    source.folded = True
    for g, graph in enumerate(source.graphs):
        for node in graph.nodes:
            fn = FOLDERS.get((source.format, node.op))
            if fn is None or node.folded or any(t in graph.model_outputs for t in node.outputs):
                continue
            try:
                values = fn(node, make_context(g))
            except (Unsupported, ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError):
                continue  # not foldable, or malformed: its converter checks it and reports it on the node
            if values is None or len(values) != len(node.outputs):
                continue
            for t, value in zip(node.outputs, values):
                arr = np.array(value)  # an owned copy: folded data never aliases another tensor's
                arr.flags.writeable = False
                graph.tensors[t].data = arr
                graph.tensors[t].shape = arr.shape
                graph.tensors[t].shape_signature = None  # now static: a stale -1 must not read as dynamic
                graph.tensors[t].symbols = None
            node.folded = True

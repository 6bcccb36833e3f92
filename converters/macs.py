"""Multiply-accumulate counts of source nodes, computed from tensor shapes.

Only ops that multiply-accumulate count (convolutions, fully connected,
matrix multiplies, recurrent cells); everything else is 0. Unknown extents
count as 1 in node_macs; node_macs_known says None instead. A control-flow
node (TFLite IF/WHILE, ONNX If/Loop/Scan) holds the MACs of its bodies: every
branch, and one iteration of a loop body."""
from __future__ import annotations

import math
from typing import Optional

from .source_graph import SourceGraph, SourceNode


def _shape(graph: SourceGraph, i: int) -> tuple:
    if i < 0:
        return ()
    s = graph.tensors[i].shape
    return tuple(max(d, 1) for d in s) if s else ()


def _prod(s) -> int:
    return math.prod(s) if s else 0


def node_macs(graph: SourceGraph, node: SourceNode) -> int:
    op, ins, outs = node.op, node.inputs, node.outputs
    try:
        out = _shape(graph, outs[0]) if outs else ()
        if op in ("CONV_2D",):  # TFLite filter [cout, kh, kw, cin]
            w = _shape(graph, ins[1])
            return _prod(out) * w[1] * w[2] * w[3]
        if op == "DEPTHWISE_CONV_2D":  # filter [1, kh, kw, cout]
            w = _shape(graph, ins[1])
            return _prod(out) * w[1] * w[2]
        if op == "TRANSPOSE_CONV":  # inputs: output_shape, weights [cout, kh, kw, cin], input
            w, x = _shape(graph, ins[1]), _shape(graph, ins[2])
            return _prod(x) * w[0] * w[1] * w[2]
        if op == "FULLY_CONNECTED":  # weights [units, in]
            w = _shape(graph, ins[1])
            return _prod(out) * w[-1]
        if op in ("BATCH_MATMUL", "MatMul", "Gemm", "QLinearMatMul", "MatMulInteger"):
            a = _shape(graph, ins[0])
            k = a[-1] if op != "Gemm" or not node.attrs.get("transA") else a[0]
            return _prod(out) * k
        if op in ("Conv", "QLinearConv", "ConvInteger"):  # ONNX weights [cout, cin/groups, kh, kw]
            w = _shape(graph, ins[3] if op == "QLinearConv" else ins[1])
            return _prod(out) * _prod(w[1:])
        if op == "ConvTranspose":  # weights [cin, cout/groups, kh, kw]
            w, x = _shape(graph, ins[1]), _shape(graph, ins[0])
            return _prod(x) * _prod(w[1:])
        if op in ("LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM",
                  "RNN", "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN", "SVDF", "GRU"):
            weights = [_prod(_shape(graph, i)) for i in ins[1:] if i >= 0 and graph.tensors[i].is_constant]
            steps = _shape(graph, ins[0])
            t = steps[0] * (steps[1] if len(steps) > 2 else 1)
            return sum(weights) * t
    except (IndexError, TypeError):
        return 0
    return 0


def graph_macs(graph: SourceGraph) -> list[int]:
    return [node_macs(graph, n) for n in graph.nodes]


def _known(graph: SourceGraph, i: int) -> bool:
    s = graph.tensors[i].shape if i >= 0 else ()
    return s is not None and all(d >= 0 for d in s)


def node_macs_known(graph: SourceGraph, node: SourceNode) -> Optional[int]:
    """node_macs, or None when the node multiplies over extents no shape fixes."""
    m = node_macs(graph, node)
    if m and not all(_known(graph, i) for i in (*node.inputs, *node.outputs)):
        return None
    return m


def body_nodes(source, node: SourceNode) -> list:
    """(graph, node) for every node inside the bodies a control-flow node runs, nested bodies included."""
    out, seen = [], set()
    todo = list(node.subgraphs.values())
    while todo:
        k = todo.pop(0)
        if k in seen or not 0 <= k < len(source.graphs):
            continue
        seen.add(k)
        g = source.graphs[k]
        for n in g.nodes:
            out.append((g, n))
            todo.extend(n.subgraphs.values())
    return out


def held_macs(source, graph: SourceGraph, node: SourceNode, known: bool = False):
    """A node's MACs with those of the bodies it runs; with known=True, None when any is unknown."""
    count = node_macs_known if known else node_macs
    parts = [count(graph, node)] + [count(g, n) for g, n in body_nodes(source, node)]
    return None if None in parts else sum(parts)


def source_macs(source, graph: Optional[SourceGraph] = None) -> list[int]:
    """Per node of `graph` (the main graph by default), its MACs with those of its bodies."""
    graph = graph or source.main
    return [held_macs(source, graph, n) for n in graph.nodes]


def model_macs(source, supported=None) -> Optional[int]:
    """The main graph's MACs with its bodies' (only the nodes `supported` marks, when given); None when a node
    that multiplies has extents no shape fixes."""
    graph = source.main
    keep = supported if supported is not None else [True] * len(graph.nodes)
    parts = [held_macs(source, graph, n, known=True) for n, k in zip(graph.nodes, keep) if k]
    return None if None in parts else int(sum(parts))

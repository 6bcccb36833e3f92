"""Rank reduction before conversion: NNAPI operations take tensors of rank 4 at
most, so a tensor of rank 5 or more whose extra axes have extent 1 (a leading
batch of 1 on a 5-D shuffle, an Unsqueeze before a Concat, ...) is rewritten
into the same data with those unit axes dropped, together with the attributes
of every node that touches it (a transpose's perm, a concatenation's or a
softmax's axis, a reshape's target, a broadcast constant's shape).

The rewrite is exact: dropping a unit axis keeps the row-major data, and a
tensor is only squeezed when every node that reads or writes it is one of the
kinds below and agrees with the axes dropped (its producer decides them, its
consumers must take them); otherwise it keeps its rank and its consumers
report it (reason `rank`, naming the dimensions). Graph inputs and outputs,
constants and tensors with dynamic extents keep their shapes. The source graph
holds the squeezed shapes afterwards (`SourceTensor.squeezed_from` keeps the
original), so every check, conversion and report sees one consistent graph.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .shuffle import transpose_perm as _perm
from .source_graph import SourceTensor

MAX_RANK = 4

# per format: ops that only move the row-major data (any squeeze of input and output), transposes, elementwise
# ops of one activation input, broadcasting ops, joins along an axis and softmaxes along an axis
RULES = {
    "onnx": dict(
        reshape={"Reshape", "Flatten", "Squeeze", "Unsqueeze"}, transpose={"Transpose"},
        unary={"Relu", "Sigmoid", "Tanh", "Abs", "Exp", "Log", "Neg", "Sqrt", "Elu", "LeakyRelu", "Identity",
               "Dropout", "Cast", "Floor", "Ceil", "Sin", "Cos", "Reciprocal", "HardSigmoid", "HardSwish", "Softplus",
               "Softsign", "Selu", "Celu", "Clip", "Not", "Sign", "Round", "Erf", "Gelu", "ThresholdedRelu"},
        broadcast={"Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Sum", "Equal", "Less", "Greater",
                   "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Mod", "PRelu", "Where"},
        join={"Concat"}, softmax={"Softmax", "LogSoftmax"}),
    "tflite": dict(
        reshape={"RESHAPE"}, transpose={"TRANSPOSE"},
        unary={"RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "ABS", "EXP", "LOG", "NEG", "SQRT", "RSQRT",
               "ELU", "LEAKY_RELU", "HARD_SWISH", "CAST", "FLOOR", "CEIL", "SIN", "COS", "SQUARE", "GELU",
               "LOGICAL_NOT", "SIGN", "ROUND", "QUANTIZE", "DEQUANTIZE"},
        broadcast={"ADD", "SUB", "MUL", "DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV",
                   "FLOOR_MOD", "EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL",
                   "LOGICAL_AND", "LOGICAL_OR", "SELECT_V2", "PRELU"},
        join={"CONCATENATION"}, softmax={"SOFTMAX", "LOG_SOFTMAX"}),
}


def _static(t) -> Optional[tuple]:
    if t.shape is None or t.is_constant or any(d <= 0 for d in t.shape):
        return None
    if t.shape_signature is not None and any(s < 0 for s in t.shape_signature):
        return None
    return tuple(t.shape)


def _free_drop(shape: tuple) -> Optional[frozenset]:
    """Unit axes to drop, leftmost first, until the rank is 4 (None when there are too few)."""
    units = [a for a, d in enumerate(shape) if d == 1]
    need = len(shape) - MAX_RANK
    return frozenset(units[:need]) if len(units) >= need else None


def _kind(rules: dict, op: str) -> Optional[str]:
    return next((k for k, ops in rules.items() if op in ops), None)


def _axis(graph, node, fmt: str, kind: str, rank: int) -> Optional[int]:
    """The node's axis (joins, softmaxes), normalised, or None when it has none known."""
    if fmt == "onnx":
        default = -1 if kind == "softmax" and node.version >= 13 else 1
        a = int(node.attrs.get("axis", default))
    else:
        a = -1 if kind == "softmax" else int(node.attrs.get("axis", 0))
    return a % rank if -rank <= a < rank else None


class _Plan:
    def __init__(self, graph, fmt: str):
        self.graph, self.fmt, self.rules = graph, fmt, RULES[fmt]
        outs = set(graph.inputs) | set(graph.outputs)
        self.candidates = {i for i, t in enumerate(graph.tensors)
                           if i not in outs and _static(t) is not None and len(t.shape) > MAX_RANK}
        self.producer = {o: n for n in graph.nodes for o in n.outputs if o >= 0}
        self.users: dict = {}
        for n in graph.nodes:
            for i in n.inputs:
                if i >= 0:
                    self.users.setdefault(i, []).append(n)

    def drops(self) -> dict:
        """tensor -> axes dropped, decided by each candidate's producer."""
        drop: dict = {}
        for node in self.graph.nodes:
            kind = _kind(self.rules, node.op)
            for o in node.outputs:
                if o not in self.candidates:
                    continue
                shape = self.graph.tensors[o].shape
                x = node.inputs[0] if node.inputs else -1
                if kind == "transpose" and x in drop:
                    perm = _perm(self.graph, node, self.fmt)
                    drop[o] = frozenset(j for j, p in enumerate(perm or ()) if p in drop[x]) if perm else None
                elif kind in ("unary", "softmax") and x in drop:
                    drop[o] = drop[x]
                elif kind in ("broadcast", "join"):
                    same = [drop[i] for i in node.inputs if i in drop and len(self.graph.tensors[i].shape) == len(shape)]
                    drop[o] = same[0] if same else _free_drop(shape)
                else:
                    drop[o] = _free_drop(shape)
                if drop[o] is None or len(shape) - len(drop[o]) > MAX_RANK:
                    del drop[o]
        return drop

    def accepts(self, node, drop: dict) -> bool:
        """Does `node` take the squeezes of its tensors (those in drop) exactly?"""
        g = self.graph
        kind = _kind(self.rules, node.op)
        ins = [i for i in node.inputs if i >= 0]
        outs = [o for o in node.outputs if o >= 0]
        touched = [t for t in ins + outs if t in drop]
        if not touched:
            return True
        if kind is None or node.folded:
            return False
        if kind == "reshape":  # only the data order counts; a TFLite shape input must be a constant we rewrite
            return self.fmt == "onnx" or len(node.inputs) < 2 or node.inputs[1] < 0 or g.tensors[node.inputs[1]].is_constant
        x, y = ins[0], outs[0]
        if kind == "transpose":
            perm = _perm(g, node, self.fmt)
            return (x in drop and y in drop and perm is not None
                    and drop[y] == frozenset(j for j, p in enumerate(perm) if p in drop[x]))
        rank = len(g.tensors[y].shape) if g.tensors[y].shape is not None else 0
        if y not in drop:
            return False
        if kind in ("unary", "softmax"):
            if x not in drop or drop[x] != drop[y]:
                return False
            return kind == "unary" or _axis(g, node, self.fmt, kind, rank) not in drop[y]
        for i in ins:
            t = g.tensors[i]
            r = len(t.shape) if t.shape is not None else None
            if r is None:
                return False
            if i in drop:
                if drop[i] != drop[y]:
                    return False
            elif r == rank:  # same rank, not squeezed: only a constant with unit extents there is rewritten
                if not t.is_constant or any(t.shape[a] != 1 for a in drop[y]):
                    return False
            elif any(a >= rank - r for a in drop[y]):  # right-aligned broadcasting: dropped axes must lie outside
                return False
        if kind == "join":
            return _axis(g, node, self.fmt, kind, rank) not in drop[y]
        return True


def squeeze_graph(graph, fmt: str) -> int:
    """Rewrite every squeezable tensor of rank > 4 of `graph` and the nodes touching it; the count rewritten."""
    if fmt not in RULES:
        return 0
    plan = _Plan(graph, fmt)
    if not plan.candidates:
        return 0
    while True:
        drop = plan.drops()
        refused = {t for node in graph.nodes if not plan.accepts(node, drop)
                   for t in list(node.inputs) + list(node.outputs) if t in drop}
        if not refused:
            break
        plan.candidates -= refused
    for node in graph.nodes:
        if any(t in drop for t in list(node.inputs) + list(node.outputs)):
            _rewrite(graph, fmt, node, drop, _kind(plan.rules, node.op))
    for t, axes in drop.items():
        tensor = graph.tensors[t]
        tensor.squeezed_from = tuple(tensor.shape)
        tensor.shape = tuple(d for a, d in enumerate(tensor.shape) if a not in axes)
        tensor.shape_signature = None
    return len(drop)


def _new_const(graph, like: SourceTensor, data: np.ndarray, suffix: str) -> int:
    """A constant tensor appended to the graph (the original may have other readers)."""
    t = SourceTensor(len(graph.tensors), f"{like.name}/{suffix}", tuple(data.shape), data.dtype, like.quant,
                     np.ascontiguousarray(data))
    t.data.flags.writeable = False
    graph.tensors.append(t)
    return t.index


def _kept_index(axes, rank: int) -> dict:
    """old axis -> new axis for the axes kept."""
    kept = [a for a in range(rank) if a not in axes]
    return {a: k for k, a in enumerate(kept)}


def _rewrite(graph, fmt: str, node, drop: dict, kind: str) -> None:
    x = node.inputs[0]
    y = node.outputs[0]
    rank = len(graph.tensors[y].shape)
    if kind == "reshape":
        if fmt == "tflite":
            target = [d for a, d in enumerate(graph.tensors[y].shape) if a not in drop.get(y, ())]
            if len(node.inputs) > 1 and node.inputs[1] >= 0:
                node.inputs[1] = _new_const(graph, graph.tensors[node.inputs[1]], np.asarray(target, np.int32),
                                            "squeezed")
            if node.attrs.get("new_shape"):
                node.attrs["new_shape"] = target
        return
    if kind == "transpose":
        perm = _perm(graph, node, fmt)
        new_in = _kept_index(drop[x], len(perm))
        reduced = [new_in[p] for p in perm if p not in drop[x]]
        if fmt == "onnx":
            node.attrs["perm"] = reduced
        else:
            node.inputs[1] = _new_const(graph, graph.tensors[node.inputs[1]], np.asarray(reduced, np.int32),
                                        "squeezed")
        return
    axes = drop[y]
    if kind in ("join", "softmax") and not (fmt == "tflite" and kind == "softmax"):
        a = _axis(graph, node, fmt, kind, rank)
        node.attrs["axis"] = _kept_index(axes, rank)[a]
    if kind in ("broadcast", "join"):
        for k, i in enumerate(node.inputs):
            t = graph.tensors[i] if i >= 0 else None
            if t is not None and i not in drop and t.is_constant and t.shape is not None and len(t.shape) == rank:
                data = np.asarray(t.data).reshape([d for a, d in enumerate(t.shape) if a not in axes])
                node.inputs[k] = _new_const(graph, t, data, "squeezed")

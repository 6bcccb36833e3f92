"""Graph-level fusion plans, computed once per graph before any node is converted.

Every node is still converted (and checked) on its own, so a fusion is a plan
both ends of which read:

* Activation fusion: Relu, Clip(0, 6), Clip(-1, 1) and Clip(0, inf) after an
  op that takes an NNAPI FuseCode become that code when the producer's output
  has no other consumer and is not a graph output. The producer writes the
  activation's output tensor; the activation node emits nothing.
* QDQ groups: DequantizeLinear -> op -> QuantizeLinear. The op (the "core")
  reads the quantized tensors behind its DequantizeLinear inputs and writes
  the QuantizeLinear's output directly (tensor aliases), so it is converted as
  a quantized op; the Q and DQ nodes then emit nothing.

Both are conditional (OnnxContext.absorbed / intact): the producer or core
must convert at the target feature level (the driver's per-node check) and
every other node between the group's first and last node must too, so the
group lies inside one partition; otherwise the nodes convert on their own and
--partial partitions stay consistent.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nnapi import FuseCode

# ops whose converters take a FuseCode (through ctx.fused_output)
FUSABLE = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "AveragePool", "MaxPool",
           "BatchNormalization", "QLinearConv", "QLinearAdd", "QLinearMul", "QLinearAveragePool", "Sum"}

# ops a DequantizeLinear -> op -> QuantizeLinear group converts as one quantized op
QDQ_CORES = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "AveragePool", "MaxPool",
             "GlobalAveragePool", "GlobalMaxPool", "Concat", "Sigmoid", "Softmax", "Relu", "Clip", "LeakyRelu",
             "PRelu", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Resize", "Pad", "Slice", "Split",
             "Gather", "DepthToSpace", "SpaceToDepth", "Min", "Max", "Sum", "Identity", "Tanh",
             "HardSwish", "ReduceMax", "ReduceMin", "Tile", "Expand"}

_CLIP_CODES = {(0.0, 6.0): FuseCode.RELU6, (-1.0, 1.0): FuseCode.RELU1, (0.0, float("inf")): FuseCode.RELU}


@dataclass
class FusionPlan:
    activation_of: dict = field(default_factory=dict)   # producer node -> (activation node, FuseCode)
    producer_of: dict = field(default_factory=dict)     # activation node -> producer node
    core_alias: dict = field(default_factory=dict)      # core node -> {float tensor: quantized tensor}
    core_members: dict = field(default_factory=dict)    # core node -> indexes of its DQ, core and Q nodes
    q_core: dict = field(default_factory=dict)          # QuantizeLinear node -> its core
    dq_cores: dict = field(default_factory=dict)        # DequantizeLinear node -> cores it feeds (all of its users)
    bn_fold: dict = field(default_factory=dict)         # Conv node -> BatchNormalization folded into its weights
    bn_into: dict = field(default_factory=dict)         # BatchNormalization node -> its Conv


def clip_bounds(node, graph):
    """(lo, hi) of a Relu/Clip with constant bounds, else None."""
    if node.op == "Relu":
        return 0.0, float("inf")
    if node.op != "Clip":
        return None
    if node.version < 11:
        return float(node.attrs.get("min", -np.inf)), float(node.attrs.get("max", np.inf))
    bounds = []
    for k, default in ((1, -np.inf), (2, np.inf)):
        i = node.inputs[k] if k < len(node.inputs) else -1
        if i < 0:
            bounds.append(float(default))
        elif graph.tensors[i].is_constant and graph.tensors[i].data.size == 1:
            bounds.append(float(graph.tensors[i].data.reshape(())))
        else:
            return None
    return tuple(bounds)


def fuse_code(node, graph):
    """The FuseCode equivalent of a Relu/Clip node, or None."""
    b = clip_bounds(node, graph)
    return None if b is None else _CLIP_CODES.get(tuple(b))


def _users(graph) -> dict:
    users: dict = {}
    for n in graph.nodes:
        for i in n.inputs:
            if i >= 0:
                users.setdefault(i, []).append(n)
    return users


def plan(graph) -> FusionPlan:
    from .common import accepted  # (common imports the registry; fusion is imported by context)
    p = FusionPlan()
    # nodes the driver reports unsupported up front (op, domain, opset) take part in no plan: their partner
    # would otherwise write or read a tensor across a CPU-fallback node
    # (nor do the nodes of a region split into slices, converters/split_pass.py: each converts per slice)
    ok = {n.index for n in graph.nodes if accepted(n) and n.index not in graph.split_nodes}
    users = _users(graph)
    outputs = set(graph.outputs)
    producers = {o: n for n in graph.nodes for o in n.outputs if o >= 0}

    def sole_user(t):
        u = users.get(t, [])
        return u[0] if len(u) == 1 and t not in outputs else None

    _qdq_groups(graph, p, producers, users, outputs, sole_user, ok)  # first: a quantized core's Relu stays an op
    _bn_folds(graph, p, producers, sole_user, ok)
    _activations(graph, p, producers, sole_user, ok)
    return p


def _qdq_groups(graph, p, producers, users, outputs, sole_user, ok) -> None:
    for n in graph.nodes:
        if n.op not in QDQ_CORES or not n.outputs or n.folded or n.index not in ok:
            continue
        alias, dqs = {}, []
        for i in n.inputs:
            if i < 0:
                continue
            src = producers.get(i)
            if (src is not None and src.op == "DequantizeLinear" and src.index in ok and src.inputs
                    and src.inputs[0] >= 0):
                alias[i] = src.inputs[0]
                dqs.append(src)
            elif np.dtype(graph.tensors[i].dtype).kind == "f":
                alias = None  # a float input outside the group: not a quantized op
                break
        qs = [sole_user(o) for o in n.outputs]
        if not alias or any(q is None or q.op != "QuantizeLinear" or q.index not in ok or not q.outputs
                            or q.outputs[0] < 0 for q in qs):
            continue
        for o, q in zip(n.outputs, qs):
            alias[o] = q.outputs[0]
            p.q_core[q.index] = n.index
        p.core_alias[n.index] = alias
        # a folded DequantizeLinear (of a constant) emits nothing wherever it is: not a member
        p.core_members[n.index] = frozenset([n.index] + [d.index for d in dqs if not d.folded]
                                            + [q.index for q in qs])
        for dq in dqs:
            p.dq_cores.setdefault(dq.index, set()).add(n.index)
    for dq in list(p.dq_cores):  # a DQ emits nothing only when every user is a core of a group
        out = graph.nodes[dq].outputs[0]
        if out in outputs or any(u.index not in p.core_alias for u in users.get(out, [])):
            del p.dq_cores[dq]


def _bn_folds(graph, p, producers, sole_user, ok) -> None:
    """Conv -> BatchNormalization with constant parameters: fold into the weights."""
    for n in graph.nodes:
        if (n.op != "BatchNormalization" or n.folded or len(n.outputs) != 1 or len(n.inputs) != 5
                or n.index not in ok):
            continue
        src = producers.get(n.inputs[0])
        if (src is not None and src.op == "Conv" and not src.folded and src.index not in p.core_alias
                and src.index in ok
                and sole_user(src.outputs[0]) is n and graph.tensors[src.inputs[1]].is_constant
                and all(graph.tensors[i].is_constant for i in n.inputs[1:5])
                and np.dtype(graph.tensors[n.outputs[0]].dtype) == np.float32):
            p.bn_fold[src.index] = n.index
            p.bn_into[n.index] = src.index


def _activations(graph, p, producers, sole_user, ok) -> None:
    """Relu/Clip after a float op with a FuseCode, as that op's only consumer."""
    for n in graph.nodes:
        code = fuse_code(n, graph)
        if code is None or n.index in p.core_alias or n.folded or not n.inputs or n.index not in ok:
            continue
        src = producers.get(n.inputs[0])
        if (src is None or src.op not in FUSABLE or src.folded
                or src.op == "Sum" and sum(i >= 0 for i in src.inputs) < 2  # one input: no ADD takes it
                or src.index in p.core_alias or src.index not in ok
                or len(src.outputs) != 1 or sole_user(n.inputs[0]) is not n
                or np.dtype(graph.tensors[n.inputs[0]].dtype) != np.float32):
            continue
        p.activation_of[src.index] = (n.index, code)
        p.producer_of[n.index] = src.index

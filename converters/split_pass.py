"""Rank reduction by splitting: a region of tensors of rank 5 or more that all hold one small axis (attention's
q, k, v axis: a ViT reshapes to [B, 17, 3, 4, 16], moves the 3 to the front and takes q, k and v out of it)
is held as one rank-4 tensor per slice of that axis, exactly, when converters/squeeze_pass.py found no unit
axis to drop and no axes to merge.

The region is a class of axes (squeeze_pass.Plan's union of the axes nodes treat as one) of extent n (at most
MAX_SLICES) in every tensor holding it at more than 1, such that:
- it enters through reshape-like nodes (Reshape, Flatten, Unsqueeze; TFLite RESHAPE) from tensors of rank
  <= 4 in which that axis is a block of one of their axes (the rows of [A, n, B] are a slice of an axis of
  the input: prod(input[:j]) == A and n divides input[j]), so slice i is a SLICE of the input, RESHAPEd;
- inside it, every node is a transpose, an elementwise op of one input, a broadcasting op or a per-tensor
  Q/DQ that does not act along the axis; their other run-time inputs do not hold it, their constant inputs
  are cut along it at conversion;
- it leaves only through nodes that pick slices of it: Gather of one constant index along it, a Slice of one
  index of it (torch's unbind as the dynamo exporter writes it), Split along it into pieces of 1 (a piece
  of extent 1 loses that axis, so only reshape-like nodes may read it);
- no graph input or output, unknown extent or per-channel quantization is in it.

Nothing is added to the graph's nodes: each node of the region gets the nodes it converts as (one per slice,
two for an entry: SLICE and RESHAPE; an identity for each slice an exit picks) in `graph.split_nodes` (with the
region's node indexes), which convert.run_converter converts in its place, over per-slice tensors appended to
the graph. Coverage, parity and partitions see the source nodes; the NNAPI model holds n rank-4 chains. A
region converts whole or not at all (`whole_regions`): the slices exist only inside it.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .rank_ops import ONNX_BROADCAST, ONNX_QDQ, ONNX_UNARY, TFLITE_BROADCAST, TFLITE_UNARY
from .registry import Unsupported
from .shuffle import transpose_perm
from .source_graph import SourceNode, SourceTensor
from .squeeze_pass import MAX_RANK, Plan

MAX_SLICES = 16  # each region node becomes one node per slice
# per format: transposes, elementwise ops (one input / broadcasting), picks of one index, splits, identity
FAMILY = {
    "onnx": ({"Transpose"}, ONNX_UNARY | ONNX_QDQ | ONNX_BROADCAST, {"Gather", "Slice"}, {"Split"}),
    "tflite": ({"TRANSPOSE"}, TFLITE_UNARY | TFLITE_BROADCAST, {"GATHER", "SLICE", "STRIDED_SLICE"},
               {"SPLIT", "SPLIT_V"}),
}


class _Region:
    """One class of axes split into n slices: the tensors holding it, the axis each holds it on, and the
    nodes that enter, carry and leave it."""

    def __init__(self, plan: Plan, c, n: int):
        self.plan, self.graph, self.c, self.n = plan, plan.graph, c, n
        self.axis = {t: a for t, a in plan.members[c]}
        self.tensors = {t for t, a in plan.members[c] if self.graph.tensors[t].shape[a] == n}
        self.pieces = {t for t, a in plan.members[c] if self.graph.tensors[t].shape[a] == 1}
        self.slices: dict = {}   # region tensor -> its n slice tensors
        self.parts: dict = {}    # node index -> the nodes it converts as


def _cut_shape(shape, axis: int) -> tuple:
    return tuple(d for k, d in enumerate(shape) if k != axis)


def split_graph(graph, fmt: str) -> int:
    """Split the regions of tensors beyond rank 4 described above; the count of regions split."""
    if fmt not in FAMILY:
        return 0
    if not any(t.rank is not None and t.rank > MAX_RANK and not t.is_constant for t in graph.tensors):
        return 0
    plan = Plan(graph, fmt)
    producer = {o: n for n in graph.nodes if not n.folded for o in n.outputs if o >= 0}
    consumers: dict = {}
    for n in graph.nodes:
        if not n.folded:
            for i in n.inputs:
                consumers.setdefault(i, []).append(n)
    descs = {n.index: d for n, d in plan.descs}
    boundary = set(graph.model_inputs) | set(graph.model_outputs)
    split, done = 0, set()
    for t in plan.tensors:
        tensor = graph.tensors[t]
        if t in done or (tensor.rank or 0) <= MAX_RANK:
            continue
        for a in sorted(range(tensor.rank), key=lambda k: tensor.shape[k]):  # the smallest axis first
            c = plan.cls(t, a)
            n = tensor.shape[a]
            if not 1 < n <= MAX_SLICES or c in plan.fixed_twice:
                continue
            region = _Region(plan, c, n)
            if _build(region, fmt, producer, consumers, descs, boundary):
                members = frozenset(region.parts)
                graph.split_nodes.update({k: (members, parts) for k, parts in region.parts.items()})
                done |= region.tensors
                split += 1
                break
    graph.__dict__.pop("_split_names", None)  # (_unique's names, for this pass only)
    return split


def whole_regions(graph, verdicts: list) -> list:
    """verdicts (one per node of graph) with every node of a split region unsupported when one of them is, or
    when a node between its first and last stays on the CPU (partitions are runs of nodes in graph order: the
    slices would have to cross a partition boundary, where only source tensors can)."""
    out = list(verdicts)
    regions = {region for region, _ in graph.split_nodes.values()}
    changed = True
    while changed:
        changed = False
        for members in regions:
            span = range(min(members), max(members) + 1)
            bad = [k for k in span if isinstance(out[k], Unsupported)]
            if not bad or all(isinstance(out[k], Unsupported) for k in members):
                continue
            first = out[bad[0]]
            for k in members - set(bad):
                out[k] = Unsupported(first.reason, f"{graph.nodes[k].label()} is converted slice by slice together "
                                                   f"with the nodes up to node {max(members)}, and node {bad[0]} is "
                                                   f"not converted: {first.detail}", first.feature_level_needed)
            changed = True
    return out


def _build(r: _Region, fmt: str, producer: dict, consumers: dict, descs: dict, boundary: set) -> bool:
    """Check region r and record its nodes' parts (graph untouched when it does not qualify)."""
    g = r.graph
    if not r.tensors or r.tensors & boundary or set(r.axis) != r.tensors | r.pieces:
        return False
    for t in r.tensors:
        x = g.tensors[t]
        q = x.quant
        if (x.rank - 1 > MAX_RANK or t not in producer or (q is not None and q.per_channel) or
                any(d <= 0 for d in x.shape)):
            return False
    nodes = {producer[t].index: producer[t] for t in r.tensors}
    nodes.update({n.index: n for t in r.tensors for n in consumers.get(t, [])})
    transposes, elementwise, picks, splits = FAMILY[fmt]
    kinds = {}
    for k, node in nodes.items():
        d = descs.get(k)
        outs = [o for o in node.outputs if o >= 0]
        writes = [o for o in outs if o in r.tensors]
        if d is None:
            return False
        if writes and d.free:
            kinds[k] = "entry" if node.inputs[0] not in r.tensors and _entry_axis(r, node) is not None else None
        elif writes and (node.op in transposes or node.op in elementwise):
            kinds[k] = "carry" if _carries(r, node, d) else None
        elif not writes and (node.op in picks or node.op in splits):
            kinds[k] = "exit" if _exits(r, node, consumers, descs, boundary) else None
        else:
            return False
        if kinds[k] is None:
            return False
    for t in r.tensors:
        shape = _cut_shape(g.tensors[t].shape, r.axis[t])
        quant = _moved_quant(g, t, producer, transposes)
        r.slices[t] = [_tensor(g, g.tensors[t], f"/slice{i}", shape, quant=quant) for i in range(r.n)]
    for t in r.pieces:  # pieces of 1 lose the split axis (only reshape-like nodes read them)
        p = g.tensors[t]
        p.squeezed_from = p.squeezed_from or tuple(p.shape)
        p.shape, p.shape_signature, p.symbols = _cut_shape(p.shape, r.axis[t]), None, None
    for k in sorted(nodes):
        node = nodes[k]
        r.parts[k] = {"entry": _entry, "carry": _carry, "exit": _exit}[kinds[k]](r, node, fmt)
    return True


# -- checks -------------------------------------------------------------------------------------------------

def _entry_axis(r: _Region, node) -> Optional[tuple]:
    """(axis j of the input, rows per slice m) when slice i of the reshape's output is input[..., i*m:(i+1)*m, ...]
    along j."""
    g = r.graph
    x, y = node.inputs[0], node.outputs[0]
    xs = g.tensors[x].shape
    if g.tensors[x].rank is None or g.tensors[x].rank > MAX_RANK or any(d <= 0 for d in xs) or g.tensors[x].is_constant:
        return None
    lead = math.prod(g.tensors[y].shape[:r.axis[y]])
    for j, d in enumerate(xs):
        if math.prod(xs[:j]) == lead and d % r.n == 0:
            return j, d // r.n
    return None


def _carries(r: _Region, node, d) -> bool:
    """A transpose or elementwise node that does not act along the split axis; its data tensors all hold it
    (run-time inputs that do not hold it are read whole by every slice)."""
    g = r.graph
    frame = node.outputs[0]
    if frame not in r.tensors:
        return False
    slot = d.slots[frame][r.axis[frame]]
    if slot in d.pinned:
        return False
    for t, slots in d.slots.items():
        if slot in slots and t not in r.tensors:
            return False
    for i in node.inputs:
        if i >= 0 and not g.tensors[i].is_constant and i not in d.slots:
            return False
    return all(o in r.tensors for o in node.outputs if o >= 0)


def _exits(r: _Region, node, consumers: dict, descs: dict, boundary: set) -> bool:
    """A pick of one constant index, or a split into pieces of 1, along the split axis; a piece is read only by
    reshape-like nodes."""
    g = r.graph
    x = node.inputs[0] if node.op not in ("SPLIT",) else node.inputs[1]
    if x not in r.tensors or any(i in r.tensors for i in node.inputs if i != x):
        return False
    d = descs[node.index]
    if d.pinned != frozenset({r.axis[x]}):  # (it acts along the split axis only: a slice cuts nothing else)
        return False
    outs = [o for o in node.outputs if o >= 0]
    if len(outs) != (1 if len(node.outputs) == 1 else r.n):
        return False
    if len(outs) == 1 and _picked_index(r, node, x) is None:
        return False
    for o in outs:
        if o in r.pieces and (o in boundary or not all(descs.get(c.index) is not None and descs[c.index].free
                                                       for c in consumers.get(o, []))):
            return False
        if o not in r.pieces and g.tensors[o].rank != g.tensors[x].rank - 1:
            return False
    return True


def _picked_index(r: _Region, node, x: int) -> Optional[int]:
    """The one index along the split axis that a Gather or a slice node (cutting nothing else) takes."""
    g = r.graph
    axis, rank = r.axis[x], g.tensors[x].rank
    ints = lambda k: (None if len(node.inputs) <= k or node.inputs[k] < 0 or not g.tensors[node.inputs[k]].is_constant
                      else [int(v) for v in np.asarray(g.tensors[node.inputs[k]].data).reshape(-1)])  # noqa: E731
    if node.op in ("Gather", "GATHER"):
        index = ints(1)
        return index[0] % r.n if index is not None and len(index) == 1 else None
    if node.op == "Slice":  # (the rank pass described it: constant bounds, only the split axis cut)
        if node.version < 10:
            starts, ends, axes = node.attrs.get("starts"), node.attrs.get("ends"), node.attrs.get("axes")
            steps = [1] * len(starts or ())
        else:
            starts, ends, axes, steps = ints(1), ints(2), ints(3), ints(4)
        axes = axes if axes is not None else list(range(len(starts or ())))
        steps = steps if steps is not None else [1] * len(axes)
        cut = [(s, e, st) for a, s, e, st in zip(axes, starts or (), ends or (), steps) if a % rank == axis]
    elif node.op == "SLICE":
        begin, size = ints(1), ints(2)
        cut = None if begin is None or size is None else [(begin[axis], begin[axis] + size[axis] if size[axis] >= 0
                                                           else r.n, 1)]
    else:  # STRIDED_SLICE without masks on the axis
        begin, end, strides = ints(1), ints(2), ints(3)
        masks = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
        if begin is None or end is None or strides is None or any(node.attrs.get(m, 0) >> axis & 1 for m in masks):
            return None
        cut = [(begin[axis], end[axis], strides[axis])]
    if not cut or len(cut) != 1:
        return None
    taken = range(r.n)[slice(*cut[0])]
    return taken[0] if len(taken) == 1 else None


# -- the parts ----------------------------------------------------------------------------------------------

def _moved_quant(g, t: int, producer: dict, transposes: set):
    """Tensor t's quantization; an 8-bit tensor the ONNX reader left without one (a reshape or transpose of a
    QuantizeLinear output, which QDQ fusion would have paired) has the one its data were moved from."""
    x = g.tensors[t]
    while x.quant is None and np.dtype(x.dtype) in (np.dtype(np.uint8), np.dtype(np.int8)):
        src = producer.get(x.index)
        if src is None or not (src.op in transposes or src.op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze")):
            break
        x = g.tensors[src.inputs[0]]
    return x.quant if x.quant is not None else g.tensors[t].quant


def _unique(g, name: str) -> str:
    """name, or name with the first free #k appended (a slice's tensors never take a source tensor's name)."""
    taken = g.__dict__.setdefault("_split_names", {t.name for t in g.tensors})
    unique = next(n for n in (f"{name}#{k}" if k else name for k in range(len(taken) + 1)) if n not in taken)
    taken.add(unique)
    return unique


def _tensor(g, like: SourceTensor, suffix: str, shape: tuple, quant=None) -> int:
    t = SourceTensor(len(g.tensors), _unique(g, f"{like.name}{suffix}"), tuple(int(d) for d in shape), like.dtype,
                     quant if quant is not None else like.quant)
    g.tensors.append(t)
    return t.index


def _const(g, name_like: SourceTensor, suffix: str, data: np.ndarray) -> int:
    t = SourceTensor(len(g.tensors), _unique(g, f"{name_like.name}{suffix}"), tuple(data.shape), data.dtype, None,
                     np.ascontiguousarray(data))
    t.data.flags.writeable = False
    g.tensors.append(t)
    return t.index


def _part(node, op: str, inputs: list, outputs: list, attrs: Optional[dict] = None, fmt: str = "onnx") -> SourceNode:
    version = 13 if fmt == "onnx" and op != node.op else (1 if op != node.op else node.version)
    return SourceNode(node.index, op, list(inputs), list(outputs), dict(node.attrs if attrs is None else attrs),
                      version, node.domain, node.name)


def _entry(r: _Region, node, fmt: str) -> list:
    g = r.graph
    x, y = node.inputs[0], node.outputs[0]
    j, m = _entry_axis(r, node)
    xt = g.tensors[x]
    cut = list(xt.shape)
    cut[j] = m
    parts = []
    for i, yi in enumerate(r.slices[y]):
        if tuple(cut) == g.tensors[yi].shape:
            xi = yi
        else:
            xi = _tensor(g, xt, f"/slice{i}", cut)
        if fmt == "onnx":
            bounds = [_const(g, xt, f"/slice{i}_{k}", np.asarray(v, np.int64))
                      for k, v in (("starts", [i * m]), ("ends", [(i + 1) * m]), ("axes", [j]))]
            parts.append(_part(node, "Slice", [x, *bounds], [xi], {}, fmt))
        else:
            begin = [0] * len(cut)
            begin[j] = i * m
            bounds = [_const(g, xt, f"/slice{i}_{k}", np.asarray(v, np.int32)) for k, v in (("begin", begin),
                                                                                           ("size", cut))]
            parts.append(_part(node, "SLICE", [x, *bounds], [xi], {}, fmt))
        if xi != yi:
            shape = list(g.tensors[yi].shape)
            dt = np.int64 if fmt == "onnx" else np.int32
            target = _const(g, g.tensors[y], f"/slice{i}_shape", np.asarray(shape, dt))
            parts.append(_part(node, "Reshape" if fmt == "onnx" else "RESHAPE", [xi, target], [yi],
                               {} if fmt == "onnx" else {"new_shape": shape}, fmt))
    return parts


def _cut_const(r: _Region, frame: int, t: int, i: int) -> int:
    """Constant input t of a node whose output is `frame`, as slice i reads it (right-aligned broadcasting)."""
    g = r.graph
    data = np.asarray(g.tensors[t].data)
    offset = g.tensors[frame].rank - data.ndim
    a = r.axis[frame] - offset
    if data.ndim == 0 or a < 0:
        return t
    return _const(g, g.tensors[t], f"/slice{i}", np.take(data, i if data.shape[a] > 1 else 0, axis=a))


def _carry(r: _Region, node, fmt: str) -> list:
    g = r.graph
    y = node.outputs[0]
    d_frame = r.axis[y]
    parts = []
    for i in range(r.n):
        ins = []
        for k, t in enumerate(node.inputs):
            if t in r.tensors:
                ins.append(r.slices[t][i])
            elif t >= 0 and g.tensors[t].is_constant and node.op in FAMILY[fmt][1] and _is_data_const(node, k, fmt):
                ins.append(_cut_const(r, y, t, i))
            else:
                ins.append(t)
        attrs = dict(node.attrs)
        if node.op in FAMILY[fmt][0]:
            x = node.inputs[0]
            perm = [p % g.tensors[x].rank for p in transpose_perm(g, node, fmt)]
            ax = r.axis[x]
            new = [p - (p > ax) for k, p in enumerate(perm) if k != d_frame]
            if fmt == "onnx":
                attrs["perm"] = new
            else:
                ins[1] = _const(g, g.tensors[node.inputs[1]], f"/slice{i}", np.asarray(new, np.int32))
        outs = [r.slices[o][i] if o in r.tensors else o for o in node.outputs]
        parts.append(SourceNode(node.index, node.op, ins, outs, attrs, node.version, node.domain, node.name))
    return parts


def _is_data_const(node, k: int, fmt: str) -> bool:
    """Is input k of an elementwise node a broadcast data input (not a Q/DQ scale or zero point, a Clip bound)?"""
    if fmt == "onnx":
        return node.op in ONNX_BROADCAST
    return node.op in TFLITE_BROADCAST


def _exit(r: _Region, node, fmt: str) -> list:
    g = r.graph
    x = node.inputs[0] if node.op != "SPLIT" else node.inputs[1]
    outs = [o for o in node.outputs if o >= 0]
    if len(outs) == 1 and node.op in FAMILY[fmt][2]:
        picked = [(r.slices[x][_picked_index(r, node, x)], outs[0])]
    else:
        picked = list(zip(r.slices[x], outs))
    parts = []
    for src, dst in picked:
        if fmt == "onnx":
            parts.append(_part(node, "Identity", [src], [dst], {}, fmt))
        else:
            shape = list(g.tensors[dst].shape)
            target = _const(g, g.tensors[dst], "/shape", np.asarray(shape, np.int32))
            parts.append(_part(node, "RESHAPE", [src, target], [dst], {"new_shape": shape}, fmt))
    return parts

"""Rank-5 tensors of data movement held as rank-4 operands: NNAPI's RESHAPE, TRANSPOSE and STRIDED_SLICE
stop at rank 4, but exporters write 5-D middles with a unit axis, e.g. attention's
Reshape [1, N, 3, heads, d] -> Transpose [2, 0, 3, 1, 4] -> Slice / Squeeze of q, k and v. Dropping a
size-1 axis keeps the row-major data, so such a tensor is held without it when it is produced and read
only by these ops (and is not a graph output); a Transpose moves the dropped axis with its perm, a Slice
keeps it. `plan(graph)` gives {tensor: dropped axis}: OnnxContext.nnapi_type gives those tensors rank-4
operands, and the converters in ops/shape.py address their axes without it."""
from __future__ import annotations

from typing import Optional

FAMILY = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice"}
REARRANGE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}  # row-major order kept: any unit axis may go


def plan(graph) -> dict:
    key = sum(n.folded for n in graph.nodes)
    cache = graph.__dict__.setdefault("_unit_axis_plans", {})
    if key not in cache:
        cache[key] = _plan(graph)
    return cache[key]


def _plan(graph) -> dict:
    readers: dict = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    drop: dict = {}
    for n in graph.nodes:
        if n.folded or n.op not in FAMILY or not n.inputs or n.inputs[0] < 0:
            continue
        x, y = n.inputs[0], n.outputs[0]
        t, xt = graph.tensors[y], graph.tensors[x]
        if (t.shape is None or len(t.shape) != 5 or any(d <= 0 for d in t.shape) or t.data is not None
                or y in graph.outputs or xt.shape is None or not (len(xt.shape) <= 4 or x in drop)
                or not all(r.op in FAMILY for r in readers.get(y, []))):
            continue
        u = _dropped_axis(n, t.shape, drop.get(x))
        if u is not None:
            drop[y] = u
    changed = True
    while changed:  # a reader that cannot take the rank-4 form (a Transpose to a 5-D tensor not held) undoes it
        changed = False
        for y in list(drop):
            if any(r.op not in REARRANGE and len(graph.tensors[r.outputs[0]].shape or ()) == 5
                   and r.outputs[0] not in drop for r in readers.get(y, [])):
                del drop[y]
                changed = True
    return drop


def _dropped_axis(node, shape, input_drop: Optional[int]) -> Optional[int]:
    if node.op in REARRANGE:
        return next((k for k, d in enumerate(shape) if d == 1), None)
    if input_drop is None:
        return None
    if node.op == "Transpose":
        perm = list(node.attrs.get("perm", range(4, -1, -1)))
        return perm.index(input_drop)
    return input_drop if shape[input_drop] == 1 else None  # Slice keeps the axis it does not cut


def without(dims, u: int) -> tuple:
    return tuple(d for k, d in enumerate(dims) if k != u)

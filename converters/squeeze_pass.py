"""Rank reduction before conversion: NNAPI operations take tensors of rank 4 at most, so the tensors of
rank 5 or more in a region of data movement and elementwise arithmetic (a YOLO head's [1, 3, 16, 16, 9]
decode between a Reshape in and a Reshape out, attention's qkv split, a 5-D softmax) are rewritten into
the same row-major data with fewer axes, together with the attributes of every node that touches them
(a transpose's perm, an axis, a slice's cuts, a reduction's axes, a broadcast constant, a reshape's target).
Both importers use it; how each operation relates its tensors' axes is in converters/rank_ops.py.

Axes are grouped into *classes*: two axes are one class when a node treats them as one axis (the
right-aligned axes of an elementwise op, the axis a transpose moves, the kept axes of a slice). Reshape-like
nodes only keep the row-major order, so they end a region. Two rewrites are exact:
- a class of extent 1 in every tensor is dropped (the data do not move);
- two classes that sit next to each other, in that order, in every tensor that holds either, are merged
  into one axis of their product extent, when no node acts along them and every broadcast input holds
  both at the full extent or both at 1 (constants are broadcast to fit).
A class is never changed when a node acts along it (concatenation, cut, reduction, softmax, per-axis
quantization), or when it reaches a graph input or output, a constant-shaped tensor's unknown extent, or a
node of another kind. Classes are dropped, then merged, only as far as tensors of rank > 4 need it.
Whatever keeps rank > 4 is reported by its consumers (reason `rank`, naming the dimensions).

The source graph holds the new shapes afterwards (`SourceTensor.squeezed_from` keeps the original, and the
tensors keep their names), so every check, conversion, coverage row and parity comparison sees one
consistent graph and maps it back to the source by reshaping row-major data.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .rank_ops import Axes, describe
from .source_graph import SourceTensor

MAX_RANK = 4


def _static(t) -> bool:
    if t.shape is None or any(d <= 0 for d in t.shape):
        return False
    return t.shape_signature is None or not any(s < 0 for s in t.shape_signature)


class _Classes:
    """Union-find over (tensor, axis) pairs: the classes of axes that nodes treat as one."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, k):
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


class Plan:
    """The decisions (classes dropped, classes merged) and what they make of each tensor."""

    def __init__(self, graph, fmt: str):
        self.graph, self.fmt = graph, fmt
        self.descs = [(n, describe(graph, n, fmt)) for n in graph.nodes if not n.folded]
        self.uf = _Classes()
        frozen_t = set(graph.model_inputs) | set(graph.model_outputs)
        for node, d in self.descs:
            data = set(d.slots) if d is not None else set()
            for t in list(node.inputs) + list(node.outputs):
                if t >= 0 and t not in data and not graph.tensors[t].is_constant:
                    frozen_t.add(t)  # read or written in a way the node's description does not cover
        self.tensors = sorted({t for _, d in self.descs if d is not None for t in d.slots})
        for t in self.tensors:
            tensor = graph.tensors[t]
            q = tensor.quant
            if not _static(tensor) or (q is not None and q.per_channel):
                frozen_t.add(t)
        for node, d in self.descs:
            if d is None or d.free:
                continue
            by_slot: dict = {}
            for t, slots in d.slots.items():
                for a, s in enumerate(slots):
                    by_slot.setdefault(s, []).append((t, a))
            for members in by_slot.values():
                for m in members[1:]:
                    self.uf.union(members[0], m)
        self.fixed_twice: set = set()
        self.members: dict = {}   # class -> its (tensor, axis) pairs
        self.holders: dict = {}   # class -> the tensors holding it
        self.members_of: dict = {}  # tensor -> its classes
        for t in self.tensors:
            for a in range(graph.tensors[t].rank or 0):
                c = self.uf.find((t, a))
                self.members.setdefault(c, []).append((t, a))
                self.holders.setdefault(c, []).append(t)
                if c in self.members_of.setdefault(t, set()):
                    self.fixed_twice.add(c)  # one class on two axes of a tensor (x + transpose(x)): kept
                self.members_of[t].add(c)
        self.fixed = self.fixed_twice | {self.uf.find((t, a)) for t in frozen_t & set(self.tensors)
                                         for a in range(graph.tensors[t].rank or 0)}
        for node, d in self.descs:
            if d is not None and not d.free:
                for t, slots in d.slots.items():
                    self.fixed |= {self.uf.find((t, a)) for a, s in enumerate(slots) if s in d.pinned}
        self.dropped: set = set()
        self.group: dict = {}   # class -> its group (a tuple of classes, in axis order)
        self.frozen_t = frozen_t
        self.names = {t.name for t in graph.tensors}  # new constants get names of their own

    # -- the layout the decisions give a tensor --------------------------------------------------------
    def cls(self, t: int, a: int):
        return self.uf.find((t, a))

    def runs(self, t: int) -> list:
        """[(group, [axes])] of tensor t: its new axes, each the run of old axes it holds."""
        out: list = []
        for a in range(self.graph.tensors[t].rank or 0):
            c = self.cls(t, a)
            if c in self.dropped:
                continue
            g = self.group.get(c, (c,))
            if out and out[-1][0] == g and c in self.group:  # (an ungrouped class is one axis)
                out[-1][1].append(a)
            else:
                out.append((g, [a]))
        return out

    def rank(self, t: int) -> int:
        return len(self.runs(t))

    def shape(self, t: int) -> tuple:
        dims = self.graph.tensors[t].shape
        return tuple(int(np.prod([dims[a] for a in axes])) for _, axes in self.runs(t))

    def axis(self, t: int, a: int) -> int:
        """The new axis of tensor t that holds its old axis a."""
        return next(k for k, (_, axes) in enumerate(self.runs(t)) if a in axes)

    def first_axis(self, t: int, j: int) -> int:
        return self.runs(t)[j][1][0]

    def changed(self, t: int) -> bool:
        return t in self.members_of and any(c in self.dropped or len(self.group.get(c, ())) > 1
                                            for c in self.members_of[t])

    # -- constants for rewritten attributes -----------------------------------------------------------
    def dtype(self, t: int):
        return np.asarray(self.graph.tensors[t].data).dtype

    def new_const(self, name: str, data: np.ndarray, like: Optional[SourceTensor] = None) -> int:
        """A constant appended to the graph (the original may have other readers)."""
        quant = like.quant if like is not None else None
        unique = next(n for n in (f"{name}/reranked{k or ''}" for k in range(len(self.names) + 1))
                      if n not in self.names)
        self.names.add(unique)
        t = SourceTensor(len(self.graph.tensors), unique, tuple(data.shape), data.dtype, quant,
                         np.ascontiguousarray(data))
        t.data.flags.writeable = False
        self.graph.tensors.append(t)
        return t.index

    def const(self, like: int, data: np.ndarray) -> int:
        old = self.graph.tensors[like]
        if np.asarray(old.data).ndim == 0 and data.size == 1:
            data = data.reshape(())
        return self.new_const(old.name, data, old)

    # -- decisions --------------------------------------------------------------------------------------
    def decide(self) -> None:
        for t in self.tensors:
            if t in self.frozen_t or (self.graph.tensors[t].rank or 0) <= MAX_RANK:
                continue
            while self.rank(t) > MAX_RANK and (self._drop_one(t) or self._merge_one(t)):
                pass

    def _unit(self, c) -> bool:
        return all(self.graph.tensors[t].shape[a] == 1 for t, a in self.members[c])

    def _drop_one(self, t: int) -> bool:
        for a in range(self.graph.tensors[t].rank):
            c = self.cls(t, a)
            if c not in self.dropped and c not in self.fixed and c not in self.group and self._unit(c):
                self.dropped.add(c)
                return True
        return False

    def _merge_one(self, t: int) -> bool:
        runs = self.runs(t)
        pairs = list(zip([g for g, _ in runs], [g for g, _ in runs[1:]]))
        # a merge that needs no constant broadcast first (it keeps the constants small)
        for strict in (True, False):
            for g1, g2 in pairs:
                if self._mergeable(g1, g2, strict):
                    g = g1 + g2
                    for c in g:
                        self.group[c] = g
                    return True
        return False

    def _mergeable(self, g1: tuple, g2: tuple, strict: bool) -> bool:
        classes = set(g1) | set(g2)
        if classes & self.fixed:
            return False
        order = list(g1) + list(g2)
        for u in {u for c in classes for u in self.holders.get(c, ())}:
            runs = self.runs(u)
            held = [k for k, (g, _) in enumerate(runs) if g in (g1, g2)]
            present = [self.cls(u, a) for k in held for a in runs[k][1]]
            if not held or held != list(range(held[0], held[0] + len(held))):
                return False  # something between the two
            if present == order:
                continue
            # a lower-rank broadcast input holds only the pair's last classes, as its first axes
            if held[0] != 0 or present != order[len(order) - len(present):]:
                return False
        return all(self._broadcast_ok(node, d, classes, strict) for node, d in self.descs
                   if d is not None and not d.free)

    def _broadcast_ok(self, node, d: Axes, classes: set, strict: bool) -> bool:
        """Each data tensor (and, when strict, each constant) holds the merged classes at the frame's extents
        or at 1 throughout (a broadcast input of lower rank holds the ones it lacks at 1)."""
        frame = self.graph.tensors[d.frame].shape
        frame_slots = d.slots.get(d.frame)
        if frame_slots is None:
            return True
        merged = {s: frame[a] for a, s in enumerate(frame_slots) if self.cls(d.frame, a) in classes}
        if not merged:
            return True
        held = [(self.graph.tensors[t].shape, slots) for t, slots in d.slots.items()]
        if strict:  # constants are right-aligned to the frame
            for k in d.consts:
                dims = self.graph.tensors[node.inputs[k]].shape or ()
                held.append((dims, tuple(range(len(frame) - len(dims), len(frame)))))
        for dims, slots in held:
            at = {s: dims[a] for a, s in enumerate(slots)}
            mine = [(at.get(s, 1), f) for s, f in merged.items()]
            if not (all(x == f for x, f in mine) or all(x == 1 for x, _ in mine)):
                return False
        return True

    # -- the rewrite ------------------------------------------------------------------------------------
    def regroup_const(self, d: Axes, t: int) -> np.ndarray:
        """A constant data input in the frame's new axes (right-aligned; broadcast where a merged group
        holds it partly at 1)."""
        data = np.asarray(self.graph.tensors[t].data)
        frame = self.graph.tensors[d.frame].shape
        data = data.reshape((1,) * (len(frame) - data.ndim) + data.shape)
        target = list(data.shape)
        for _, axes in self.runs(d.frame):
            mine = [data.shape[a] for a in axes]
            if len(axes) > 1 and not all(x == 1 for x in mine) and mine != [frame[a] for a in axes]:
                for a in axes:
                    target[a] = frame[a]
        data = np.broadcast_to(data, target)
        return data.reshape([int(np.prod([target[a] for a in axes])) for _, axes in self.runs(d.frame)])

    def apply(self) -> int:
        # (a broadcast input holding only part of a merged pair, at 1, keeps its shape: it is not rewritten)
        changed = [t for t in self.tensors if self.changed(t) and len(self.shape(t)) < self.graph.tensors[t].rank]
        if not changed:
            return 0
        touched = set(changed)
        for node, d in self.descs:
            if d is None or not touched & set(d.slots):
                continue
            if d.frame >= 0 and d.frame in touched:
                for k in d.consts:
                    node.inputs[k] = self.const(node.inputs[k], self.regroup_const(d, node.inputs[k]))
            if d.rewrite is not None:
                d.rewrite(self)
        shapes = {t: self.shape(t) for t in changed}
        for t, shape in shapes.items():
            tensor = self.graph.tensors[t]
            tensor.squeezed_from = tensor.squeezed_from or tuple(tensor.shape)
            tensor.shape, tensor.shape_signature, tensor.symbols = shape, None, None
        return len(changed)


def squeeze_graph(graph, fmt: str) -> int:
    """Rewrite the tensors of rank > 4 of `graph` (and the nodes touching them) into rank 4 where exact;
    the count of tensors rewritten."""
    if fmt not in ("onnx", "tflite"):
        return 0
    if not any(t.rank is not None and t.rank > MAX_RANK and not t.is_constant for t in graph.tensors):
        return 0
    plan = Plan(graph, fmt)
    plan.decide()
    return plan.apply()

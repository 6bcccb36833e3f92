"""Shared shape inference of the operation specs: `infer` functions for the common cases and helpers
for writing others. Unknown stays unknown: an unknown input rank gives an unknown output rank, an
unknown extent (0) an unknown extent."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .spec import OpView, Shape


def broadcast_extent(p: int, q: int) -> Optional[int]:
    """The broadcast of two extents (0 = unknown): the extent, 0 when unknown, None when they clash."""
    known = {p, q} - {0}
    big = known - {1}
    if len(big) > 1:
        return None
    if big:
        return big.pop()
    return 1 if p and q else 0


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """numpy-style broadcast of two Shapes (0 where unknown); None for an unknown rank. Extents that
    clash give 0 (the broadcast_output rule reports them)."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    return tuple(broadcast_extent(p, q) or 0 for p, q in zip(pa, pb))


def infer_same_as(input_name: str = "input", *outputs: str) -> Callable[[OpView], dict]:
    """Every output (default "output") has the shape of `input_name` (elementwise unary ops)."""
    names = outputs or ("output",)

    def infer(v: OpView) -> dict:
        return dict.fromkeys(names, v.dims(input_name))
    return infer


def infer_broadcast(a: str = "input1", b: str = "input2", out: str = "output") -> Callable[[OpView], dict]:
    """The output has the broadcast shape of inputs `a` and `b` (binary elementwise ops)."""
    def infer(v: OpView) -> dict:
        return {out: broadcast_shapes(v.dims(a), v.dims(b))}
    return infer


def const_ints(v: OpView, name: str) -> Optional[list]:
    """A constant integer input (scalar or tensor) as a flat list of Python ints, or None."""
    value = v.const(name)
    if value is None:
        return None
    return [int(x) for x in np.ravel(value)]


def normalize_axis(axis: int, rank: int) -> Optional[int]:
    """axis in [-rank, rank) as a non-negative index, or None when out of range."""
    a = axis + rank if axis < 0 else axis
    return a if 0 <= a < rank else None

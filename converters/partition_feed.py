"""What `nnapi parity --partial` feeds a partition, and when a partition cannot be checked.

A partition input that a CPU-fallback node writes may have an unknown rank in the converted model (an
NNAPI operand of dimensions (): "unspecified"), e.g. the output of an If the converter left on the CPU.
The framework's value of that tensor has its real shape and is fed as it is. A stand-in drawn at random
needs the shape, so a partition with such an input and no framework value is not checked: its report entry
says why (`unchecked`) and the report does not pass. No input ever reaches the executor as a rank-0 array
in place of a tensor of unknown rank.
"""
from __future__ import annotations

import numpy as np

from .running import random_array


class Unchecked(Exception):
    """The partition cannot be checked; the message says why."""


def stand_in(rng, tensor) -> np.ndarray:
    """Seeded values for a partition input no framework run gave: in the tensor's natural range, unknown
    extents drawn as 1; Unchecked when its rank is unknown."""
    if tensor.shape is None:
        raise Unchecked(f"its input {tensor.name!r} has an unknown rank and no framework value to feed it "
                        f"(pin the model's inputs so that shape inference reaches it)")
    dt = np.dtype(tensor.dtype)
    qrange = (np.iinfo(dt).min, np.iinfo(dt).max) if dt.kind in "iu" and tensor.quant is not None else None
    return random_array(rng, tuple(max(d, 1) for d in tensor.shape), dt, qrange)


def check_fed(model, tensors, inputs: list) -> None:
    """Unchecked when a fed array cannot stand for its partition input: its element count differs from the
    operand's known extents (`tensors`: the inputs' names, for the message)."""
    for k, (i, x) in enumerate(zip(model.inputs, inputs)):
        t = model.operands[i].type
        x = np.asarray(x)
        name = tensors[k] if k < len(tensors) else f"input {k}"
        if not t.is_tensor:
            continue
        dims = tuple(t.dimensions)
        if dims and all(dims) and x.size != int(np.prod(dims)):
            raise Unchecked(f"its input {name!r} is fed {x.size} values of shape {list(x.shape)}, the partition "
                            f"takes {list(dims)}")


def unchecked_entry(k: int, p, why: str) -> dict:
    return {"index": k, "nodes": p.nodes, "passed": False, "outputs": [], "fed": None,
            "unchecked": f"partition {k} cannot be checked: {why}"}

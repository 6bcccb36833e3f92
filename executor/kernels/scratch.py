"""Work arrays reused from run to run by prepared operations.

Nothing here registers a kernel.
"""
from __future__ import annotations

import threading

import numpy as np


class Scratch:
    """Work arrays kept from run to run, shared by a compiled model's prepared operations (they run one
    at a time, and no array outlives the call that took it), per thread as executions may overlap.
    Fresh large temporaries are costly: the allocator hands the pages back and every run faults them
    in again; reused ones are already mapped."""

    def __init__(self):
        self._local = threading.local()

    def get(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """The array for (name, shape, dtype): zeroed when first made, afterwards as its last user left it."""
        arrays = self._local.__dict__.setdefault("arrays", {})
        key = (name, shape, np.dtype(dtype))
        a = arrays.get(key)
        if a is None:
            a = arrays[key] = np.zeros(shape, dtype)
        return a

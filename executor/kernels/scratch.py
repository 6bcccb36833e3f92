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

    def get(self, name, shape: tuple, dtype) -> np.ndarray:
        """The array for (name, shape, dtype): zeroed when first made, afterwards as its last user left it.
        `name` is any hashable; `dtype` is used in the key as given (np.float32 and np.dtype("float32")
        name two arrays: only a little memory, and the lookup stays one dict access)."""
        local = self._local
        try:
            arrays = local.arrays
        except AttributeError:
            arrays = local.arrays = {}
        key = (name, shape, dtype)
        a = arrays.get(key)
        if a is None:
            a = arrays[key] = np.zeros(shape, dtype)
        return a

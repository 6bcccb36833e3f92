"""Reductions (MEAN, REDUCE_*): the plain kernels (reference.py) and the compile-time fast paths
(prepared.py)."""
from . import prepared, reference  # noqa: F401  (registration)

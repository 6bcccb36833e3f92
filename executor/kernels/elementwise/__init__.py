"""Elementwise binary operations (ADD, SUB, MUL, DIV, MAXIMUM, ...): the plain kernels (reference.py)
and the compile-time fast paths with their lookup tables (prepared.py)."""
from . import prepared, reference  # noqa: F401  (registration)

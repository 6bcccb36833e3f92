"""Numpy reference kernels, one module per op family (see executor/registry.py)."""

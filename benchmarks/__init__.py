"""Executor benchmarks: authored models (models.py) and the comparison table (run.py)."""

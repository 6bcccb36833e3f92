"""Shared pieces of the robustness tests: the mutation corpus and outcome checks."""
from __future__ import annotations

import tracemalloc

from fuzz import mutators, seeds, targets
from fuzz.fuzz_readers import make_input, seed_inputs

SEED = 20261129


def mutated_inputs(target: str, count: int, seed: int = SEED) -> list[tuple[int, str, bytes]]:
    """`count` reproducible inputs of a target (its seed models first, then mutations)."""
    corpus = seed_inputs(target)
    return [(k, *make_input(target, seed, k, corpus)) for k in range(count)]


def assert_behaves(target: str, cases, workdir) -> dict:
    """Every case gives success or the project's own error with a message; returns outcome counts."""
    counts = {"ok": 0, "rejected": 0}
    findings = []
    for k, name, data in cases:
        try:
            status, _ = targets.check(target, data, workdir)
            counts[status] += 1
        except targets.Finding as f:
            findings.append(f"input {k} (from {name}, seed {SEED}): {f}")
    assert not findings, f"{len(findings)} misbehaving inputs; first:\n{findings[0]}"
    return counts


def peak_memory(fn, *args) -> int:
    """Peak bytes allocated (Python and numpy) while running fn(*args); exceptions are swallowed."""
    tracemalloc.start()
    try:
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - only the memory matters here
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


__all__ = ["mutators", "seeds", "targets", "mutated_inputs", "assert_behaves", "peak_memory", "SEED"]

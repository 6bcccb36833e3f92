"""A subset of the mutation cases in a separate process with a per-input timeout and an
address-space limit (RLIMIT_AS): no signal (segfault, abort), no hang, no memory blow-up."""
import os
import signal
import time

import pytest

from fuzz import fuzz_readers, targets

from .helpers import mutated_inputs

PER_TARGET = {"nnapi": 300, "tflite": 150, "cli": 40}
TIMEOUT_S = 20.0
MEMORY_MB = 1024


@pytest.mark.parametrize("target", sorted(PER_TARGET))
def test_mutations_in_sandbox(target):
    # other inputs than the in-process tests see (seed + 1)
    cases = mutated_inputs(target, PER_TARGET[target], seed=7)
    results = fuzz_readers.run_batch(target, [data for _, _, data in cases], TIMEOUT_S, MEMORY_MB)
    bad = [(k, s, d) for (k, _, _), (s, d) in zip(cases, results) if s not in ("ok", "rejected")]
    assert not bad, f"{len(bad)} bad outcomes; first: input {bad[0][0]}: {bad[0][1]}: {bad[0][2]}"
    assert {s for s, _ in results} == {"ok", "rejected"}


# -- the sandbox itself notices what it is there for ---------------------------------

def _segfault(target, data, workdir):
    os.kill(os.getpid(), signal.SIGSEGV)


def _hang(target, data, workdir):
    time.sleep(60)


def _allocate(target, data, workdir):
    import numpy as np
    np.ones(1 << 31, np.uint8)  # 2 GB: beyond the address-space limit
    return "ok", ""


@pytest.mark.parametrize("fake,status", [(_segfault, "crash"), (_hang, "hang"), (_allocate, "finding")])
def test_sandbox_reports_crashes_hangs_and_memory(monkeypatch, fake, status):
    monkeypatch.setattr(targets, "check", fake)  # the worker is forked: it sees the fake
    results = fuzz_readers.run_batch("nnapi", [b"x", b"y"], timeout_s=1.0, memory_mb=MEMORY_MB)
    assert [s for s, _ in results] == [status, status], results
    if status == "crash":
        assert "SIGSEGV" in results[0][1]


def _faulthandler_state(target, data, workdir):
    import faulthandler
    return "ok", f"faulthandler enabled: {faulthandler.is_enabled()}"


def test_the_sandboxed_worker_does_not_inherit_faulthandler(monkeypatch):
    # pytest enables faulthandler; a forked worker that kept it would print "Fatal Python error:
    # Segmentation fault" and a traceback for every crash the sandbox exists to catch and report
    monkeypatch.setattr(targets, "check", _faulthandler_state)
    import faulthandler
    assert faulthandler.is_enabled()          # under pytest: the premise of this test
    results = fuzz_readers.run_batch("nnapi", [b"x"], timeout_s=5.0, memory_mb=MEMORY_MB)
    assert results == [("ok", "faulthandler enabled: False")]

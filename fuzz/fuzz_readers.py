"""Long-running fuzzer for the model readers and the CLI.

    python -m fuzz.fuzz_readers --target tflite|nnapi|cli|onnx --seconds N --out DIR [--seed S]
                                [--timeout SEC] [--memory-mb MB]

Mutates the seed models of fuzz.seeds (fuzz.mutators) and runs each input
through fuzz.targets in a worker process that has an address-space limit
(RLIMIT_AS) and is given a per-input timeout: a hang, a signal (segfault,
abort), running out of the memory limit, or any exception other than the
project's own error types is a finding. Each finding is saved to DIR as
<target>-<kind>-<seed>-<n>.bin (the input) and .txt (what happened, with the
traceback). Prints counts at the end; exits 1 when anything was found.

Reproduce one saved input:  python -m fuzz.fuzz_readers --target T --replay FILE.bin
"""
from __future__ import annotations

import argparse
import faulthandler
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from . import mutators, seeds, targets

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MEMORY_MB = 1024


def seed_inputs(target: str) -> list[tuple[str, bytes]]:
    if target == "tflite":
        return sorted(seeds.tflite_seeds().items())
    if target == "nnapi":
        return sorted(seeds.nnapi_seeds().items())
    if target == "onnx":
        return sorted(seeds.onnx_seeds().items())
    return sorted([("nnapi:" + k, v) for k, v in seeds.nnapi_seeds().items()]
                  + [("tflite:" + k, v) for k, v in seeds.tflite_seeds().items()]
                  + [("onnx:" + k, v) for k, v in seeds.onnx_seeds().items()])


def make_input(target: str, seed: int, k: int, corpus: list[tuple[str, bytes]]) -> tuple[str, bytes]:
    """Input k of a run: the seeds themselves first, then mutations (reproducible from (seed, k))."""
    name, data = corpus[k % len(corpus)]
    if k < len(corpus):
        return name, data
    rng = mutators.case_rng(seed, k)
    if data[:8] == b"NNAPIMDL":
        return name, mutators.mutate_nnapi(rng, data)
    if target == "onnx" or name.startswith("onnx:"):
        return name, mutators.mutate_onnx(rng, data)
    return name, mutators.mutate_tflite(rng, data)


# -- worker process --------------------------------------------------------------

def _worker(conn, target: str, memory_bytes: int, workdir: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a crash here is a finding the parent reports; a faulthandler inherited from the parent (pytest
    # enables one) would also dump "Fatal Python error" and a traceback onto the terminal
    faulthandler.disable()
    if memory_bytes:
        targets.set_memory_limit(memory_bytes)
    import warnings
    warnings.simplefilter("ignore")
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        if item is None:
            return
        k, data = item
        try:
            status, detail = targets.check(target, data, workdir)
        except targets.Finding as f:
            status, detail = "finding", str(f)
        except MemoryError as e:  # the address-space limit hit outside the checked calls
            status, detail = "finding", f"MemoryError: {e}"
        conn.send((k, status, detail))


class WorkerPool:
    """One sandboxed worker process (restarted after a hang or a crash)."""

    def __init__(self, target: str, timeout_s: float, memory_bytes: int):
        self.target, self.timeout_s, self.memory_bytes = target, timeout_s, memory_bytes
        self.ctx = mp.get_context("fork")
        self.workdir = tempfile.mkdtemp(prefix="nnapi-fuzz-")
        self.proc = None
        self.conn = None

    def _start(self):
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, self.target, self.memory_bytes, self.workdir),
                                     daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent

    def _kill(self):
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join()
        self.proc = None

    def run(self, k: int, data: bytes) -> tuple[str, str]:
        """(status, detail): status ok / rejected / finding / hang / crash."""
        if self.proc is None or not self.proc.is_alive():
            self._start()
        try:
            self.conn.send((k, data))
            if self.conn.poll(self.timeout_s):
                _, status, detail = self.conn.recv()
                return status, detail
            timed_out = True
        except (EOFError, BrokenPipeError, ConnectionResetError):
            timed_out = False  # the worker went away: find out how
        if timed_out:
            self._kill()
            return "hang", f"no answer within {self.timeout_s} s"
        self.proc.join(10)
        if self.proc.is_alive():
            self._kill()
            return "crash", "the worker closed its pipe"
        code = self.proc.exitcode
        self.proc = None
        if code is not None and code < 0:
            return "crash", f"worker killed by signal {signal.Signals(-code).name}"
        return "crash", f"worker exited with code {code}"

    def close(self):
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(2)
            except (BrokenPipeError, OSError):
                pass
        self._kill()
        for p in Path(self.workdir).glob("*"):
            p.unlink(missing_ok=True)
        os.rmdir(self.workdir)


def run_batch(target: str, inputs: list[bytes], timeout_s: float = DEFAULT_TIMEOUT_S,
              memory_mb: int = DEFAULT_MEMORY_MB) -> list[tuple[str, str]]:
    """Every input through the sandboxed worker; one (status, detail) per input."""
    pool = WorkerPool(target, timeout_s, memory_mb << 20)
    try:
        return [pool.run(k, data) for k, data in enumerate(inputs)]
    finally:
        pool.close()


# -- command line -----------------------------------------------------------------

BAD = ("finding", "hang", "crash")


def signature(status: str, detail: str) -> str:
    """What a finding is about: its first line and its innermost source line."""
    lines = detail.splitlines()
    frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")]
    return f"{status}: {lines[0][:160] if lines else ''}" + (f" @ {frames[-1]}" if frames else "")


def fuzz(target: str, seconds: float, out: Path, seed: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S,
         memory_mb: int = DEFAULT_MEMORY_MB, log=sys.stdout) -> Counter:
    out.mkdir(parents=True, exist_ok=True)
    corpus = seed_inputs(target)
    counts: Counter = Counter()
    sigs: Counter = Counter()
    pool = WorkerPool(target, timeout_s, memory_mb << 20)
    deadline = time.monotonic() + seconds
    k = 0
    try:
        while time.monotonic() < deadline:
            name, data = make_input(target, seed, k, corpus)
            status, detail = pool.run(k, data)
            counts[status] += 1
            if status in BAD:
                sig = signature(status, detail)
                sigs[sig] += 1
                if sigs[sig] <= 3:  # a few examples of each distinct finding
                    stem = out / f"{target}-{status}-{seed}-{k}"
                    stem.with_suffix(".bin").write_bytes(data)
                    stem.with_suffix(".txt").write_text(f"target {target}, seed model {name}, seed {seed}, "
                                                        f"input {k}\n{status}: {detail}\n")
                    print(f"[{k}] {sig}", file=log, flush=True)
            k += 1
    except KeyboardInterrupt:
        print("interrupted", file=log)
    finally:
        pool.close()
    counts["inputs"] = k
    print(f"target {target}: {k} inputs in {seconds:g} s: {counts['ok']} ok, {counts['rejected']} rejected, "
          f"{counts['finding']} findings, {counts['hang']} hangs, {counts['crash']} crashes; "
          f"{len(sigs)} distinct", file=log)
    for sig, n in sigs.most_common():
        print(f"  {n:5d}  {sig}", file=log)
    counts["distinct"] = len(sigs)
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.fuzz_readers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=targets.TARGETS, required=True)
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz (default 60)")
    ap.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="folder for crashing inputs")
    ap.add_argument("--seed", type=int, default=0, help="mutation seed (default 0)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per input")
    ap.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB, help="address space a worker may map beyond what it starts with (RLIMIT_AS)")
    ap.add_argument("--replay", type=Path, metavar="FILE", help="run one saved input in this process and show "
                                                                  "what happens")
    args = ap.parse_args(argv)
    if args.replay:
        with tempfile.TemporaryDirectory() as d:
            try:
                print(targets.check(args.target, args.replay.read_bytes(), d))
            except targets.Finding as f:
                print(f"finding: {f}")
                return 1
        return 0
    counts = fuzz(args.target, args.seconds, args.out, args.seed, args.timeout, args.memory_mb)
    return 1 if any(counts[s] for s in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())

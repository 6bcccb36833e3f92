"""Peak memory of `nnapi convert` and of the executor, per model, each in a process of its own.

    python -m benchmarks.memory REQUESTS.json RESULTS.json
    python -m benchmarks.memory --compare OTHER_TREE REQUESTS.json RESULTS.json

REQUESTS.json is a list of {"id", "path", "input_shapes", "dims", "partial"}; RESULTS.json gets one
entry per request: file_bytes, convert_exit, convert_peak_rss_bytes, operations (the NNAPI operations
written, over every partition of a partial model), partitions, and executor_peak_rss_bytes,
arena_bytes, planned_peak_bytes (a process that loads the converted model, compiles it and runs it
once on seeded inputs; `nnapi bench` reports the same three fields), or `error`.
With --compare, only `convert` runs, per request first with OTHER_TREE's code (a checkout of another
revision, e.g. `git worktree add /tmp/before main`) and then with this one's: each entry has
file_bytes, limit_bytes, and per side ("other", "this") exit and peak_rss_bytes, and `identical`
(both wrote the same files, byte for byte).

`convert` runs as `python -m converters.cli convert` (with --partial for a partial model), a process of
its own, whose peak resident set is its own VmHWM, read as it exits (PEAK_AT_EXIT): the kernel's
ru_maxrss of a spawned process also holds the high-water mark of the process that spawned it
(subprocess execs from a vfork, and exec keeps the old address space's peak), so it would count
whatever this process had loaded before. The executor runs in a forked child of this process, which
has imported converters.running first and loads no model itself; that child's peak comes from
os.wait4 and starts from this process's resident set at the fork. Both count the interpreter and its
modules and nothing of any other model. `baseline_rss_bytes` in the results is this process's
resident set before the first fork, the floor under the executor's numbers.
Benchmarks run this once, in a subprocess, before timing anything (forking a process that has
started LiteRT or onnxruntime thread pools is not safe).
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the convert rule of the performance issue (section 6): peak RSS < 3x the model file + 150 MB
CONVERT_RSS_FILE_FACTOR = 3
CONVERT_RSS_ALLOWANCE_BYTES = 150 << 20


def convert_rss_limit(file_bytes: int) -> int:
    return CONVERT_RSS_FILE_FACTOR * file_bytes + CONVERT_RSS_ALLOWANCE_BYTES


def _in_child(fn, result_path: Path) -> tuple[int, int]:
    """Run fn() in a forked child that writes fn's JSON result to result_path; (exit status, peak RSS bytes)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:   # the child: never returns into the caller's stack
        code = 70
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            out, code = fn()
            result_path.write_text(json.dumps(out))
        except BaseException as e:  # noqa: BLE001  (reported to the parent through the result file)
            result_path.write_text(json.dumps({"error": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"}))
        os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024   # Linux reports KiB


# `python -m converters.cli` that writes its own peak resident set (VmHWM, KiB) to $NNAPI_PEAK_FILE at exit
PEAK_AT_EXIT = """
import atexit, os, runpy, sys
def _peak():
    with open("/proc/self/status") as f:
        kib = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    with open(os.environ["NNAPI_PEAK_FILE"], "w") as f:
        f.write(kib)
atexit.register(_peak)
sys.argv[0] = "nnapi"
runpy.run_module("converters.cli", run_name="__main__", alter_sys=True)
"""


def convert_argv(req: dict, out: Path) -> list:
    """The `convert` command line of a request (the interpreter running PEAK_AT_EXIT)."""
    argv = [sys.executable, "-c", PEAK_AT_EXIT, "convert", req["path"], "-o", str(out)]
    argv += ["--partial"] if req.get("partial") else []
    argv += [a for name, dims in (req.get("input_shapes") or {}).items()
             for a in ("--input-shape", f"{name}={','.join(map(str, dims))}")]
    argv += [a for sym, n in (req.get("dims") or {}).items() for a in ("--dim", f"{sym}={n}")]
    return argv


def run_convert(argv: list, root: Path, log: Path, peak_file: Path) -> tuple[int, int]:
    """(exit code, peak RSS bytes) of a convert command line run with `root` importable."""
    env = {**os.environ, "NNAPI_PEAK_FILE": str(peak_file),
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    peak_file.unlink(missing_ok=True)
    with open(log, "wb") as err:
        code = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=root, env=env).returncode
    return code, int(peak_file.read_text()) * 1024 if peak_file.exists() else 0


def _convert(req: dict, out: Path, log: Path) -> tuple[int, int]:
    """`nnapi convert` as a process of its own: (exit code, its peak RSS bytes)."""
    return run_convert(convert_argv(req, out), ROOT, log, out.parent / "convert.peak")


def _converted_files(out: Path) -> list[Path]:
    """The .nnapi files `convert` wrote: one, or a partial model's partitions."""
    return [out] if out.exists() else sorted(out.parent.glob(out.stem + ".part*.nnapi"))


def _execute(files: list[Path]):
    import nnapi
    from converters.running import RunState, compile_model, planned_peak_bytes, random_inputs
    out = {"arena_bytes": 0, "planned_peak_bytes": 0, "operations": 0}
    for f in files:
        compiled = compile_model(nnapi.load(str(f)))
        out["operations"] += len(compiled.model.operations)
        ins = random_inputs(compiled.model)
        compiled.run(ins, RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S))   # the first run allocates all it keeps
        out["arena_bytes"] += compiled.plan.arena_bytes
        out["planned_peak_bytes"] = max(out["planned_peak_bytes"], planned_peak_bytes(compiled))
    return out, 0


def measure(req: dict, work: Path) -> dict:
    """One model's memory row (see the module docstring)."""
    row = {"id": req["id"], "file_bytes": Path(req["path"]).stat().st_size}
    out = work / "model.nnapi"
    for f in work.glob("*"):
        f.unlink()
    code, peak = _convert(req, out, work / "convert.log")
    row.update(convert_exit=code, convert_peak_rss_bytes=peak)
    files = _converted_files(out)
    if code != 0 or not files:
        last = (work / "convert.log").read_text(errors="replace").strip().splitlines()[-1:] or [""]
        row["error"] = f"convert exit {code}: {last[0][:200]}"
        return row
    row["partitions"] = len(files)
    code, peak = _in_child(lambda: _execute(files), work / "execute.json")
    result = json.loads((work / "execute.json").read_text())
    if code != 0 or "error" in result:
        row["error"] = "executor: " + result.get("error", f"exit {code}")
    else:
        row.update(executor_peak_rss_bytes=peak, **result)
    return row


def _written(folder: Path) -> dict:
    """{file name: sha256} of what a convert wrote into folder."""
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.glob("model*"))}


def compare(req: dict, other: Path, work: Path) -> dict:
    """One request's convert peak RSS with `other`'s code and with this tree's, and whether their outputs agree."""
    row = {"id": req["id"], "file_bytes": Path(req["path"]).stat().st_size}
    row["limit_bytes"] = convert_rss_limit(row["file_bytes"])
    written = []
    for side, root in (("other", other), ("this", ROOT)):
        for f in work.glob("*"):
            f.unlink()
        code, peak = run_convert(convert_argv(req, work / "model.nnapi"), root, work / "convert.log",
                                 work / "convert.peak")
        row[side] = {"exit": code, "peak_rss_bytes": peak}
        written.append(_written(work))
    row["identical"] = written[0] == written[1]
    return row


def _rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    other = None
    if len(args) == 4 and args[0] == "--compare":
        other, args = Path(args[1]).resolve(), args[2:]
    if len(args) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 3
    requests = json.loads(Path(args[0]).read_text())
    if other is not None:
        return _compare_all(requests, other, Path(args[1]))
    import converters.running  # noqa: F401  (imported once, before the executor's forks)
    results = {"baseline_rss_bytes": _rss_now(), "models": []}
    with tempfile.TemporaryDirectory(prefix="nnapi-bench-memory-") as tmp:
        for req in requests:
            results["models"].append(measure(req, Path(tmp)))
            print(f"memory {req['id']}: convert {results['models'][-1]['convert_peak_rss_bytes'] / 2**20:.0f} MB",
                  flush=True)
    Path(args[1]).write_text(json.dumps(results, indent=1))
    return 0


def _compare_all(requests: list, other: Path, out: Path) -> int:
    rows = []
    with tempfile.TemporaryDirectory(prefix="nnapi-bench-memory-") as tmp:
        for req in requests:
            r = compare(req, other, Path(tmp))
            rows.append(r)
            print(f"memory {r['id']}: convert {r['other']['peak_rss_bytes'] / 2**20:.1f} -> "
                  f"{r['this']['peak_rss_bytes'] / 2**20:.1f} MB (limit {r['limit_bytes'] / 2**20:.1f}), exit "
                  f"{r['other']['exit']}/{r['this']['exit']}, {'identical' if r['identical'] else 'DIFFERENT'} output",
                  flush=True)
            out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

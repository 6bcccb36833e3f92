"""What each fuzz target does with one input, and which outcomes are allowed.

`run_target(target, data, workdir)` returns ("ok" | "rejected", detail) when
the entry point behaved (success, or the project's own error type with a
message) and raises Finding when it did not (any other exception, an error
without a message, a CLI exit code outside 0/2/3 or a traceback on stderr).
Hangs, signals and memory blow-ups are caught by the process that runs this
one (fuzz.fuzz_readers / the subprocess tests) with a timeout and RLIMIT_AS.

The "onnx" target lays each input out in a model folder (onnx_layout) next to
the seed's external-data file, with a file outside the folder and a symlink to
it that no external-data location may reach; the "cli" target runs .onnx
inputs (recognised by content) through convert, convert --partial, coverage
and parity.
"""
from __future__ import annotations

import contextlib
import io
import os
import traceback
from pathlib import Path

import numpy as np

TARGETS = ("tflite", "nnapi", "cli", "onnx")
# inputs of a successfully loaded model are executed only when this small
MAX_EXEC_ELEMENTS = 1 << 16


class Finding(Exception):
    """An entry point misbehaved on an input; the message says how."""


def _require_message(e: BaseException, kind: str) -> tuple[str, str]:
    msg = str(e)
    if not msg.strip():
        raise Finding(f"{kind} without a message: {e!r}")
    return "rejected", f"{kind}: {msg[:300]}"


def _execute(model) -> str:
    """Compile and run a loaded/converted model with small seeded inputs (NnapiError allowed)."""
    import nnapi
    total = 0
    for i in list(model.inputs) + list(model.outputs):
        t = model.operands[i].type
        n = t.element_count()
        if n is None:
            return "not executed (dynamic shape)"
        total += n
    if total > MAX_EXEC_ELEMENTS:
        return "not executed (large)"
    rng = np.random.default_rng(0)
    comp = nnapi.Compilation(model)
    comp.finish()
    ex = nnapi.Execution(comp)
    ex.set_loop_timeout(0.2)
    for k, i in enumerate(model.inputs):
        t = model.operands[i].type
        shape = tuple(t.dimensions) if t.is_tensor else ()
        if t.dtype.kind == "f":
            arr = rng.standard_normal(shape).astype(t.dtype)
        elif t.dtype.kind == "b":
            arr = rng.integers(0, 2, shape).astype(bool)
        else:
            info = np.iinfo(t.dtype)
            arr = rng.integers(max(info.min, -8), min(info.max, 8) + 1, shape).astype(t.dtype)
        ex.set_input(k, arr)
    for k, o in enumerate(model.outputs):
        t = model.operands[o].type
        ex.set_output(k, np.zeros(t.dimensions if t.is_tensor else (), t.dtype))
    ex.compute()
    return "executed"


def run_nnapi(data: bytes, workdir: Path) -> tuple[str, str]:
    import nnapi
    from nnapi.serialize import to_bytes
    path = Path(workdir) / "input.nnapi"
    path.write_bytes(data)
    try:
        model = nnapi.load(path)
    except nnapi.NnapiError as e:
        if e.code != nnapi.ResultCode.BAD_DATA:
            raise Finding(f"nnapi.load raised {e.code.name} instead of BAD_DATA: {e}") from e
        return _require_message(e, "NnapiError")
    to_bytes(model)  # a loaded model can always be saved again
    try:
        return "ok", _execute(model)
    except nnapi.NnapiError as e:
        return _require_message(e, "NnapiError at run time")


def run_tflite(data: bytes, workdir: Path) -> tuple[str, str]:
    from converters.convert import ConversionError
    from converters.source_graph import SourceError
    from converters.tflite import convert, read
    try:
        read(data)
    except SourceError as e:
        return _require_message(e, "SourceError")
    try:
        return convert_and_execute(lambda partial: convert(data, partial=partial))
    except SourceError as e:
        return _require_message(e, "SourceError")
    except ConversionError as e:
        return _require_message(e, "ConversionError")


def convert_and_execute(convert_fn) -> tuple[str, str]:
    """Convert whole, then (if needed) with partial=True; every unsupported node must say why, and
    every model built must serialize and run or fail with NnapiError."""
    import nnapi
    from nnapi.serialize import to_bytes
    details = []
    for partial in (False, True):
        result = convert_fn(partial)
        if not result.complete:
            if not all(n.reason for n in result.unsupported):
                raise Finding("an unsupported node has no reason")
            details.append(f"{len(result.unsupported)} unsupported")
        for m in result.models:
            to_bytes(m)
            try:
                details.append(_execute(m))
            except nnapi.NnapiError as e:
                details.append(_require_message(e, "NnapiError at run time")[1])
        if result.complete:
            break
    return "ok", "; ".join(details)


# -- ONNX --------------------------------------------------------------------------

SECRET = b"SECRET-OUTSIDE-THE-MODEL-FOLDER!" * 4  # what an escaping external-data location would read


def onnx_layout(data: bytes, workdir: Path) -> Path:
    """Lay out one ONNX input as a user would have it; returns the model path.

    workdir/model/input.onnx        the input
    workdir/model/weights.bin       the external data of the "external" seed
    workdir/model/link.bin          a symlink to ../secret.bin (escapes the folder)
    workdir/secret.bin              outside the model folder: never to be read
    """
    from . import seeds
    folder = Path(workdir) / "model"
    folder.mkdir(parents=True, exist_ok=True)
    (Path(workdir) / "secret.bin").write_bytes(SECRET)
    (folder / seeds.ONNX_EXTERNAL_FILE).write_bytes(seeds.onnx_external_file())
    link = folder / "link.bin"
    if not link.is_symlink():
        os.symlink("../secret.bin", link)
    path = folder / "input.onnx"
    path.write_bytes(data)
    return path


def onnx_cleanup(workdir: Path) -> None:
    import shutil
    shutil.rmtree(Path(workdir) / "model", ignore_errors=True)


def _no_secret(source) -> None:
    """A model that was read must not hold the bytes of a file outside its folder."""
    for g in source.graphs:
        for t in g.tensors:
            if t.data is not None and np.asarray(t.data).dtype.kind != "O" and SECRET[:16] in np.asarray(t.data).tobytes():
                raise Finding(f"tensor {t.name!r} holds data read from outside the model folder")


def _onnx_source_error(e: Exception) -> tuple[str, str]:
    msg = str(e)
    if "external data" in msg and "leaves the model's folder" in msg and "'" not in msg:
        raise Finding(f"an external-data rejection that names neither tensor nor path: {msg}")
    return _require_message(e, "SourceError")


def run_onnx(data: bytes, workdir: Path) -> tuple[str, str]:
    """converters.onnx.read (bytes and path) and convert (whole, then partial), then execute the models.
    Allowed: success, SourceError, a result with unsupported nodes (each with a reason), NnapiError at
    run time, or a ConversionError whose message names the source node (inconsistent source shapes)."""
    from converters.convert import ConversionError
    from converters.onnx import convert, read
    from converters.source_graph import SourceError
    try:
        try:
            _no_secret(read(data))
        except SourceError as e:
            _onnx_source_error(e)
        path = onnx_layout(data, workdir)
        try:
            _no_secret(read(str(path)))
        except SourceError as e:
            return _onnx_source_error(e)
        try:
            return convert_and_execute(lambda partial: convert(str(path), partial=partial))
        except SourceError as e:
            return _onnx_source_error(e)
        except ConversionError as e:  # inconsistent source shapes/types: reported with the node, not a crash
            return _require_message(e, "ConversionError")
    finally:
        onnx_cleanup(workdir)


CLI_COMMANDS = {
    "nnapi": [["inspect", "{in}"], ["inspect", "{in}", "--format", "json"], ["run", "{in}"]],
    "tflite": [["convert", "{in}", "-o", "{out}.nnapi"], ["convert", "{in}", "--partial", "-o", "{out}.nnapi"],
               ["coverage", "{in}", "--format", "json"]],
    "onnx": [["convert", "{in}", "-o", "{out}.nnapi"], ["convert", "{in}", "--partial", "-o", "{out}.nnapi"],
             ["coverage", "{in}", "--format", "json"],
             ["parity", "{in}", "--samples", "1", "--partial", "--format", "json", "-o", "{out}.json"]],
}
ALLOWED_EXIT_CODES = (0, 2, 3)
# parity's own verdict: 1 = the converted model computes something else than onnxruntime (a mismatch,
# not a crash; the report goes to -o); reported in the detail
ALLOWED_EXIT_CODES_PARITY = (0, 1, 2, 3)
def run_cli_argv(argv: list[str]) -> tuple[int, str]:
    """converters.cli.main in this process; (exit code, stderr). An escaping exception is a Finding."""
    from converters import cli
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = cli.main(argv)
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 2
        except Exception as e:
            raise Finding(f"nnapi {' '.join(argv)}: uncaught {type(e).__name__}: {e}\n"
                          + traceback.format_exc()) from e
    return code, err.getvalue()


def _looks_like_onnx(data: bytes) -> bool:
    """An ONNX ModelProto (with a graph) rather than a .tflite flatbuffer without its identifier."""
    if data[4:8] == b"TFL3" or data[:1] != b"\x08":  # ModelProto starts with ir_version (field 1, varint)
        return False
    try:
        import onnx
        return onnx.ModelProto.FromString(data).HasField("graph")
    except Exception:  # noqa: BLE001 - not a protobuf
        return False


def run_cli(data: bytes, workdir: Path, kind: str | None = None) -> tuple[str, str]:
    """The CLI on one input: `kind` "nnapi", "tflite" or "onnx" (default: by the file's contents)."""
    if kind is None:
        kind = "nnapi" if data[:8] == b"NNAPIMDL" else "onnx" if _looks_like_onnx(data) else "tflite"
    if kind == "onnx":
        path = onnx_layout(data, workdir)
    else:
        path = Path(workdir) / f"input.{kind}"
        path.write_bytes(data)
    codes = []
    try:
        codes = _run_cli_commands(kind, path, workdir)
    finally:
        if kind == "onnx":
            onnx_cleanup(workdir)
    return ("ok" if all(c == 0 for c in codes) else "rejected"), f"exit codes {codes}"


def _run_cli_commands(kind: str, path: Path, workdir: Path) -> list[int]:
    codes = []
    for template in CLI_COMMANDS[kind]:
        argv = [a.format(**{"in": str(path), "out": str(Path(workdir) / "out")}) for a in template]
        code, err = run_cli_argv(argv)
        if code not in (ALLOWED_EXIT_CODES_PARITY if argv[0] == "parity" else ALLOWED_EXIT_CODES):
            raise Finding(f"nnapi {' '.join(argv)}: exit code {code}\n{err}")
        if "internal error" in err:  # the CLI's last-resort handler caught a bug
            raise Finding(f"nnapi {' '.join(argv)}: {err.strip()}")
        if "Traceback" in err:
            raise Finding(f"nnapi {' '.join(argv)}: traceback on stderr\n{err}")
        if code != 0 and not err.strip() and not (argv[0] == "parity" and code == 1):
            raise Finding(f"nnapi {' '.join(argv)}: exit code {code} with nothing on stderr")
        codes.append(code)
    for leftover in Path(workdir).glob(".*.tmp"):
        raise Finding(f"temporary file {leftover.name} left behind")
    return codes


def run_target(target: str, data: bytes, workdir) -> tuple[str, str]:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if target == "nnapi":
        return run_nnapi(data, workdir)
    if target == "tflite":
        return run_tflite(data, workdir)
    if target == "cli":
        return run_cli(data, workdir)
    if target == "onnx":
        return run_onnx(data, workdir)
    raise ValueError(f"unknown target {target!r}")


def check(target: str, data: bytes, workdir) -> tuple[str, str]:
    """run_target, with every exception other than a Finding turned into one (with its traceback)."""
    try:
        return run_target(target, data, workdir)
    except Finding:
        raise
    except Exception as e:  # noqa: BLE001 - that is exactly what we look for
        raise Finding(f"uncaught {type(e).__name__}: {e}\n" + traceback.format_exc()) from e
    finally:
        for p in Path(workdir).iterdir():
            with contextlib.suppress(OSError):
                p.unlink()


def set_memory_limit(limit_bytes: int) -> None:
    """Allow this process `limit_bytes` of address space beyond what it already maps: a forked worker
    inherits its parent's mappings (a test process that loaded onnxruntime, LiteRT, Model Explorer and
    Dask maps well over 1 GB), so an absolute limit would measure the parent, not the checked input."""
    import resource
    limit = _mapped_bytes() + limit_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _mapped_bytes() -> int:
    """The process's current address-space size (VmSize), 0 where /proc is not there."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


os.environ.setdefault("OMP_NUM_THREADS", "1")

"""The -o path of a command, checked before any work (exit 3, the path named): its folder exists, it is not
a folder itself (export: not a file), it is none of the command's inputs, and its extension is the one the
output's format implies. A mistake here would otherwise lose the user's data (`nnapi convert m.tflite -o
m.tflite` overwrote the model) or end a finished computation with an internal error."""
from __future__ import annotations

import os
from pathlib import Path

from .command_args import CliError

# model files: a report or an array file is never written under these names
MODEL_SUFFIXES = (".tflite", ".onnx", ".nnapi")
# the extension each written format implies, the first being the one suggested
FORMAT_SUFFIXES = {"json": (".json",), "html": (".html", ".htm"), "markdown": (".md", ".markdown"),
                   "model-explorer": (".json",)}
COMMAND_SUFFIXES = {"convert": (".nnapi",), "run": (".npz",)}
# the arguments that name a command's input files or folders
INPUT_ARGS = ("model", "models", "converted", "inputs", "node_data", "device_profile")


def expected_suffixes(args) -> tuple:
    """The extensions the -o file of this command and --format may have; () = any but a model's."""
    return COMMAND_SUFFIXES.get(args.command) or FORMAT_SUFFIXES.get(getattr(args, "format", None), ())


def input_paths(args) -> list[Path]:
    """Every existing file or folder the command reads."""
    found = []
    for name in INPUT_ARGS:
        value = getattr(args, name, None)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, (str, os.PathLike)) and Path(v).exists():
                found.append(Path(v))
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_output(args) -> None:
    """Raise CliError (exit 3) when args.output cannot or must not be written (see module doc)."""
    out = getattr(args, "output", None)
    if not out:
        return
    command = args.command
    p = Path(out)
    parent = p.parent
    what = "the folder that would hold the export folder" if command == "export" else "the output folder"
    if not parent.exists():
        raise CliError(f"-o {out}: {what} {str(parent)!r} does not exist (create it first)")
    if not parent.is_dir():
        raise CliError(f"-o {out}: {str(parent)!r} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"-o {out}: cannot write into the folder {str(parent)!r} (permission denied)")
    if command == "export":
        if p.exists() and not p.is_dir():
            raise CliError(f"-o {out} is a file; nnapi export writes a folder (give a folder path)")
    elif p.is_dir():
        raise CliError(f"-o {out} is a folder; give the path of the file to write"
                       + (f", e.g. {p / ('out' + expected_suffixes(args)[0])}" if expected_suffixes(args) else ""))
    outputs = [p]
    if command == "convert" and getattr(args, "partial", False):
        outputs.append(p.with_name(p.stem + ".partitions.json"))   # (converters/partitions_file.py)
    for source in input_paths(args):
        for o in outputs:
            if _same(o, source):
                raise CliError(f"-o {out} would overwrite {o if o == p else o.name}, an input of this command "
                               f"({source}); choose another output path")
        if command == "export" and source.is_file() and p.resolve() in source.resolve().parents:
            raise CliError(f"-o {out} holds the input {source}, which the export would replace; choose another "
                           f"folder")
    if command == "export":
        return
    expected = expected_suffixes(args)
    suffix = p.suffix.lower()
    fmt = getattr(args, "format", None)
    writes = f"a {fmt} report" if fmt and command not in COMMAND_SUFFIXES else {
        "convert": "an NNAPI model", "run": "the outputs as a numpy .npz archive"}.get(command, "a report")
    if expected and suffix not in expected:
        raise CliError(f"-o {out}: nnapi {command} writes {writes}, whose file name ends in {' or '.join(expected)} "
                       f"(not {suffix or 'no extension'}); use e.g. -o {p.with_suffix(expected[0])}")
    if not expected and suffix in MODEL_SUFFIXES:
        raise CliError(f"-o {out}: nnapi {command} writes {writes}, not a {suffix} model; choose a file name that "
                       f"does not look like a model (e.g. {p.with_suffix('.txt')})")

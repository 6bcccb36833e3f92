"""Export a converted model as Android NDK C code (`nnapi export --target c`).

    from converters.export import export_c
    paths = export_c("model.tflite", "out/", name="mobilenet", feature_level=4)

writes into the folder `out/`:

* `NAME_model.h` / `NAME_model.c`: C11 that rebuilds the model with the NDK's
  NeuralNetworks API, plus helpers to compile it and run one inference (the API
  is documented in the header);
* `NAME_weights.bin`: the constants larger than 128 bytes, each at a 64-byte
  aligned offset, memory-mapped by the C code at run time;
* `README.md`: the CMake lines and the minimum Android API level;
* `.nnapi-export.json`: a marker listing the files written (see below).

The folder is written atomically: everything goes into a temporary folder next
to it, which is then renamed into place, so an error or an interrupt never
leaves a half-written folder. An existing folder is only replaced when it is
empty, or when it was written by this exporter and holds nothing but the files
its marker lists; any other existing folder (or a file) is refused, so user
files are never deleted.

`converters/export/ndk/` holds a stand-in `NeuralNetworks.h` and a recording
shim library (`shim.c`) with which the generated C is compiled, run and
checked on a machine without Android (`converters.export.trace` reads the
shim's trace back into an `nnapi.Model`).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional, Union

import nnapi
from nnapi import Model

from .c_writer import is_identifier
from .generator import header_text, plan, readme_text, SourceWriter

__all__ = ["export_c", "ExportError", "generate_c", "MARKER", "NDK_DIR"]

MARKER = ".nnapi-export.json"
NDK_DIR = Path(__file__).resolve().parent / "ndk"

EXIT_UNSUPPORTED, EXIT_INVALID = 2, 3


class ExportError(Exception):
    """Why a model cannot be exported, with the CLI exit code (2 unsupported, 3 invalid)."""

    def __init__(self, message: str, exit_code: int = EXIT_INVALID, details: Optional[list] = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.details = list(details or [])


def generate_c(model: Model, name: str = "model") -> dict:
    """{file name: bytes} of the export of a finished model (nothing is written)."""
    if not is_identifier(name):
        raise ExportError(f"name {name!r} is not a valid C identifier prefix (letters, digits, _; not a keyword)")
    if not isinstance(model, Model) or not model.finished:
        raise ExportError("the model must be a finished nnapi.Model")
    layout = plan(model)
    files = {
        f"{name}_model.h": header_text(model, name, layout).encode(),
        f"{name}_model.c": SourceWriter(model, name, layout).text().encode(),
        f"{name}_weights.bin": bytes(layout.weights),
        "README.md": readme_text(model, name, layout).encode(),
    }
    files[MARKER] = json.dumps({"generator": "nnapi export --target c", "name": name,
                                "files": sorted(files)}, indent=1).encode()
    return files


def export_c(model_or_path: Union[Model, str, os.PathLike], out_dir, name: str = "model",
             feature_level: Optional[int] = None) -> list:
    """Export a model (an nnapi.Model, or a .nnapi/.tflite/.onnx path) as C into `out_dir`.

    A .tflite/.onnx is converted first (at `feature_level`, default 8) and must
    convert completely, else ExportError with exit code 2 listing the
    unsupported nodes. With `feature_level`, a model that needs a higher level
    is refused (exit code 2). Returns the paths written."""
    out = Path(out_dir)
    _check_target(out)
    model = _load(model_or_path, feature_level)
    if feature_level is not None:
        if not 1 <= int(feature_level) <= 8:
            raise ExportError(f"feature level {feature_level} is not in 1..8")
        needed = model.min_feature_level()
        if needed > int(feature_level):
            problems = [p for p in model.validate(int(feature_level)) if "needs feature level" in p]
            raise ExportError(f"the model needs NNAPI feature level {needed}, above the target {feature_level}",
                              EXIT_UNSUPPORTED, problems)
    files = generate_c(model, name)
    write_folder(out, files)
    return [out / f for f in sorted(files) if f != MARKER]


def _load(model_or_path, feature_level: Optional[int]) -> Model:
    if isinstance(model_or_path, Model):
        return model_or_path
    from ..load import detect_format, importer
    from ..source_graph import SourceError
    path = Path(model_or_path)
    if not path.exists():
        raise ExportError(f"{path}: no such file")
    try:
        fmt = detect_format(path)
        if fmt == "nnapi":
            return nnapi.load(path)
        result = importer(fmt).convert(str(path), feature_level=feature_level or 8, input_shapes=None, partial=False)
    except SourceError as e:
        raise ExportError(str(e)) from None
    except nnapi.NnapiError as e:
        raise ExportError(f"{path}: {e}") from None
    if not result.complete:
        lines = [f"node {n.index} {n.op} (v{n.version}) [{n.reason_code}]: {n.reason}" for n in result.unsupported]
        raise ExportError(f"{len(lines)} of {len(result.nodes)} nodes of {path} cannot be converted at feature level "
                          f"{feature_level or 8}", EXIT_UNSUPPORTED, lines)
    return result.model


# -- the folder ------------------------------------------------------------------------

def _exporter_files(folder: Path) -> Optional[set]:
    """The files a previous export wrote into `folder` (per its marker), or None when it has no valid marker."""
    try:
        doc = json.loads((folder / MARKER).read_text())
        files = doc["files"]
        if doc.get("generator") != "nnapi export --target c" or not all(isinstance(f, str) for f in files):
            return None
        return set(files) | {MARKER}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _check_target(out: Path) -> None:
    """Refuse an output path that is a file or a folder holding anything but a previous export."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ExportError(f"{out} exists and is not a folder (or is a symbolic link)")
    if not out.exists():
        return
    present = {p.name for p in out.iterdir()}
    if not present:
        return
    ours = _exporter_files(out)
    if ours is None:
        raise ExportError(f"{out} is not empty and was not written by nnapi export; refusing to overwrite it "
                          f"(choose another folder or empty it)")
    foreign = sorted(present - ours)
    if foreign:
        raise ExportError(f"{out} holds files that nnapi export did not write ({', '.join(foreign[:5])}"
                          f"{', ...' if len(foreign) > 5 else ''}); refusing to overwrite it")


def write_folder(out: Path, files: dict) -> None:
    """Write `files` as the folder `out`, atomically (temporary sibling folder + rename)."""
    out = Path(out)
    _check_target(out)
    if not out.parent.is_dir():
        raise ExportError(f"{out}: the folder {str(out.parent)!r} that would hold it does not exist")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    old = None
    try:
        for fname, data in files.items():
            with open(tmp / fname, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o755)
        _check_target(out)  # again: the folder may have changed while we wrote
        if out.exists() and any(out.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
            os.rename(out, old / "previous")
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old / "previous", out)  # put the previous export back
                raise
        else:
            os.rename(tmp, out)  # replaces an empty folder
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

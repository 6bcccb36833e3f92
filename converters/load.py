"""Open a source model by file type: .tflite (TFL3 flatbuffer) or .onnx."""
from __future__ import annotations

from pathlib import Path

from .source_graph import SourceError


def detect_format(path) -> str:
    p = Path(path)
    try:
        with open(p, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({e.strerror})") from None
    if head[4:8] == b"TFL3" or p.suffix.lower() == ".tflite":
        return "tflite"
    if p.suffix.lower() == ".onnx":
        return "onnx"
    if p.suffix.lower() == ".nnapi" or head == b"NNAPIMDL":
        return "nnapi"
    raise SourceError(f"{path}: unknown model type (expected .tflite or .onnx)")


def importer(fmt: str):
    """The importer module (with its `convert` function) of a source format."""
    if fmt == "tflite":
        from . import tflite
        return tflite
    if fmt == "onnx":
        from . import onnx as onnx_importer  # onnx is a required dependency: a failing import is a bug
        return onnx_importer
    raise SourceError(f"no importer for {fmt} models")


def parse_dims(specs) -> dict:
    """["batch=1", ...] -> {"batch": 1}: ONNX named dimensions (dim_param) to pin."""
    dims = {}
    for spec in specs or []:
        name, sep, value = spec.rpartition("=")
        if not sep or not name:
            raise ValueError(f"--dim {spec!r}: expected SYMBOL=N")
        try:
            dims[name] = int(value)
        except ValueError:
            raise ValueError(f"--dim {spec!r}: the extent must be an integer") from None
        if dims[name] <= 0:
            raise ValueError(f"--dim {spec!r}: the extent must be positive")
    return dims


def parse_input_shapes(specs) -> dict:
    """["name=1,224,224,3", ...] -> {"name": (1, 224, 224, 3)}."""
    shapes = {}
    for spec in specs or []:
        name, sep, dims = spec.rpartition("=")
        if not sep or not name:
            raise ValueError(f"--input-shape {spec!r}: expected NAME=D1,D2,...")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            raise ValueError(f"--input-shape {spec!r}: dimensions must be integers") from None
        if not shape or any(d <= 0 for d in shape):
            raise ValueError(f"--input-shape {spec!r}: dimensions must be positive")
        shapes[name] = shape
    return shapes

"""TFLite importer: `convert(path_or_bytes, feature_level=8, input_shapes=None, partial=False)`."""
from __future__ import annotations

from typing import Optional

from ..convert import ConversionResult, convert_source
from .reader import read_tflite

read = read_tflite


def convert(path_or_bytes, feature_level: int = 8, input_shapes: Optional[dict] = None,
            partial: bool = False) -> ConversionResult:
    """Convert a .tflite model (path or bytes) to NNAPI model(s) at `feature_level`.

    `input_shapes` pins dynamic input dimensions by input tensor name. The
    result holds per-node support, the complete model (when every node is
    supported) or, with `partial=True`, one model per NNAPI partition, and the
    mapping from NNAPI operands back to source tensors."""
    source = read_tflite(path_or_bytes)
    return convert_source(source, feature_level, input_shapes, partial)


from . import ops  # noqa: E402,F401  (registers the TFLite converters)

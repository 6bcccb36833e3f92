"""TFLite importer: `convert(path_or_bytes, feature_level=8, input_shapes=None, partial=False)` and `read`."""
from __future__ import annotations

from typing import Optional

from ..convert import SOURCE_PASSES, ConversionResult, convert_source
from ..source_graph import SourceError
from . import evaluate  # noqa: F401 (registers the conversion-time evaluator)
from .list_write import rewrite_list_writes
from .reader import read_tflite
from .variables import lower_variables



def read(path_or_bytes, input_shapes: Optional[dict] = None, dims: Optional[dict] = None):
    """The SourceModel of a .tflite model. `input_shapes` are applied at conversion (context.shape);
    TFLite marks dynamic extents with -1 in shape_signature and names none, so `dims` can pin nothing."""
    if dims:
        raise SourceError(f"--dim {next(iter(dims))}: TFLite models have no named dimensions (shape_signature "
                          f"marks dynamic extents with -1); pin the input with --input-shape NAME=DIMS")
    return read_tflite(path_or_bytes)


def select_signature(source, signature: Optional[str]):
    """Make the subgraph of signature `signature` the one converted (default: subgraph 0)."""
    if signature is None:
        return source
    keys = [s["key"] for s in source.signatures]
    for s in source.signatures:
        if s["key"] == signature:
            if not 0 <= s["subgraph"] < len(source.graphs):
                raise SourceError(f"signature {signature!r} refers to subgraph {s['subgraph']}, which does not exist")
            source.main_index = s["subgraph"]
            return source
    raise SourceError(f"the model has no signature {signature!r} (signatures: {', '.join(map(repr, keys)) or 'none'})")


def convert(path_or_bytes, feature_level: int = 8, input_shapes: Optional[dict] = None,
            partial: bool = False, signature: Optional[str] = None, dims: Optional[dict] = None) -> ConversionResult:
    """Convert a .tflite model (path or bytes) to NNAPI model(s) at `feature_level`.

    `input_shapes` pins dynamic input dimensions by input tensor name;
    `signature` picks the subgraph of a signature (default: subgraph 0). The
    result holds per-node support, the complete model (when every node is
    supported) or, with `partial=True`, one model per NNAPI partition, and the
    mapping from NNAPI operands back to source tensors."""
    source = select_signature(read(path_or_bytes, input_shapes, dims), signature)
    return convert_source(source, feature_level, input_shapes, partial)


SOURCE_PASSES["tflite"] = [lower_variables, rewrite_list_writes]  # resource variables -> state inputs and outputs

from . import ops  # noqa: E402,F401  (registers the TFLite converters)

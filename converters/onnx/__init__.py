"""ONNX importer: `convert(path_or_bytes, feature_level=8, input_shapes=None, partial=False)` and `read(path)`.

Pipeline: reader.py (protobuf -> SourceModel), quant.annotate (Q/DQ/QLinear
scales onto tensors), then the shared driver with OnnxContext (context.py),
which applies the layout plan (layout.py) and the fusion plans (fusion.py)
around the per-op converters in ops/.
"""
from __future__ import annotations

from typing import Optional

from ..convert import ConversionResult, convert_source
from ..source_graph import SourceModel
from . import context  # noqa: F401  (registers OnnxContext for "onnx")
from .quant import annotate
from .reader import read_onnx


def read(path_or_bytes, input_shapes: Optional[dict] = None) -> SourceModel:
    """The SourceModel of an .onnx model, with quantization parameters on the tensors."""
    source = read_onnx(path_or_bytes, input_shapes)
    for g in source.graphs:
        annotate(g)
    return source


def convert(path_or_bytes, feature_level: int = 8, input_shapes: Optional[dict] = None,
            partial: bool = False) -> ConversionResult:
    """Convert an .onnx model (path or bytes) to NNAPI model(s) at `feature_level`.

    `input_shapes` pins dynamic input dimensions by input name. NHWC operands
    are listed in result.operand_perm (operand = np.transpose(tensor, perm));
    graph inputs and outputs keep the ONNX layout from feature level 2."""
    source = read(path_or_bytes, input_shapes)
    return convert_source(source, feature_level, input_shapes, partial)


from . import ops  # noqa: E402,F401  (registers the ONNX converters)

"""ONNX importer: `convert(path_or_bytes, feature_level=8, input_shapes=None, partial=False, dims=None)` and
`read(path, input_shapes=None, dims=None)`.

Pipeline: shapes.py (the pins and shape inference on the protobuf's weightless
skeleton, skeleton.py), reader.py
(protobuf -> SourceModel), quant.annotate (Q/DQ/QLinear
scales onto tensors), then the shared driver with OnnxContext (context.py),
which applies the layout plan (layout.py) and the fusion plans (fusion.py)
around the per-op converters in ops/.

Adding an op: a function in the ops/ module of its family, registered with
`common.onnx_op("OpType", versions=(first opset, last))`. It reads inputs with
ctx.operand(i) (the operand in the tensor's planned layout), ctx.operand_as(i,
perm) when it needs a layout (layout.NHWC for spatial ops, None for the ONNX
order), ctx.axis(i, a) for axis attributes, ctx.fused_output(node) when the
NNAPI op has a FuseCode, and raises Unsupported naming the node. If the op
keeps its input's layout or is spatial, add it to the tables in layout.py
(ops in no table see the ONNX layout, which is always correct); if it takes a
FuseCode or converts quantized in QDQ form, to the sets in fusion.py.
"""
from __future__ import annotations

from typing import Optional

from ..convert import ConversionResult, convert_source
from ..source_graph import SourceModel
from . import context  # noqa: F401  (registers OnnxContext for "onnx")
from . import dynamic
from .quant import annotate
from .reader import read_onnx


def read(path_or_bytes, input_shapes: Optional[dict] = None, dims: Optional[dict] = None) -> SourceModel:
    """The SourceModel of an .onnx model, with quantization parameters on the tensors."""
    source = read_onnx(path_or_bytes, input_shapes, dims)
    for g in source.graphs:
        annotate(g)
        dynamic.plan(g)
    return source


def convert(path_or_bytes, feature_level: int = 8, input_shapes: Optional[dict] = None,
            partial: bool = False, dims: Optional[dict] = None) -> ConversionResult:
    """Convert an .onnx model (path or bytes) to NNAPI model(s) at `feature_level`.

    `input_shapes` pins input shapes by input name, `dims` named dimensions
    (dim_param, e.g. {"batch": 1}) wherever they appear. NHWC operands
    are listed in result.operand_perm (operand = np.transpose(tensor, perm));
    graph inputs and outputs keep the ONNX layout from feature level 2."""
    source = read(path_or_bytes, input_shapes, dims)
    return convert_source(source, feature_level, input_shapes, partial)


from . import ops  # noqa: E402,F401  (registers the ONNX converters)

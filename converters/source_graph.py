"""Format-neutral source graphs: what the TFLite and ONNX readers produce and
what the per-op converters read. Plain dataclasses; constant data are numpy
views into the model file (no copy of the weights)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np


@dataclass(frozen=True)
class Quant:
    """Affine quantization of a tensor: per tensor (one scale) or per axis."""

    scales: tuple
    zero_points: tuple
    axis: Optional[int] = None  # None: per tensor

    @property
    def per_channel(self) -> bool:
        return self.axis is not None and len(self.scales) > 1

    @property
    def scale(self) -> float:
        return float(self.scales[0])

    @property
    def zero_point(self) -> int:
        return int(self.zero_points[0])


@dataclass
class SourceTensor:
    index: int
    name: str
    shape: Optional[tuple]            # None: unknown rank; -1 entries: unknown extents
    dtype: np.dtype                   # numpy storage dtype
    quant: Optional[Quant] = None
    data: Optional[np.ndarray] = None  # constant value (a read-only view) or None
    is_variable: bool = False
    shape_signature: Optional[tuple] = None  # TFLite: -1 where the model leaves a dimension dynamic
    unsupported_type: Optional[str] = None   # a source type with no numpy/NNAPI equivalent (e.g. INT4)
    symbols: Optional[tuple] = None          # ONNX: per axis, the dim_param naming an unknown extent (or None)
    squeezed_from: Optional[tuple] = None    # the shape before unit axes were dropped (converters/squeeze_pass.py)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def rank(self) -> Optional[int]:
        return None if self.shape is None else len(self.shape)

    def describe(self) -> str:
        dims = self.shape
        if dims is not None and self.shape_signature is not None and len(self.shape_signature) == len(dims):
            dims = tuple(-1 if s < 0 else d for d, s in zip(dims, self.shape_signature))  # TFLite's placeholders
        shape = "?" if dims is None else "x".join("?" if d < 0 else str(d) for d in dims)
        q = ""
        if self.quant is not None:
            q = (f" per-channel(axis {self.quant.axis})" if self.quant.per_channel
                 else f" scale={self.quant.scale:g} zp={self.quant.zero_point}")
        return f"{self.name!r} {np.dtype(self.dtype).name}[{shape}]{q}"


@dataclass
class SourceNode:
    index: int
    op: str                          # TFLite builtin name (e.g. "CONV_2D") or ONNX op_type
    inputs: list                     # tensor indexes; -1 = optional input left out
    outputs: list
    attrs: dict = field(default_factory=dict)
    version: int = 1                 # TFLite op version or ONNX opset
    domain: str = ""                 # ONNX domain; "" for TFLite builtins
    name: str = ""
    subgraphs: dict = field(default_factory=dict)  # attribute name -> subgraph index (IF/WHILE bodies)
    captured: list = field(default_factory=list)   # tensors its bodies read from this graph (ONNX If/Loop)
    folded: bool = False             # computed at conversion time (converters/folding.py): emits nothing
    fold_note: str = ""              # why a folded node emits nothing, when not plain constant folding
    fold_how: str = ""               # coverage's short form of it ("dequantize of weights"; converters/folding.py)
    fold_refused: str = ""           # why a node of constants was not evaluated at conversion (too large)
    custom_options: Optional[bytes] = None   # TFLite custom operators' options (a flexbuffer)
    intermediates: list = field(default_factory=list)  # TFLite intermediate tensors (integer LSTM scales)

    def label(self) -> str:
        return f"node {self.index} ({self.op}{' ' + repr(self.name) if self.name else ''})"


@dataclass
class StateTensors:
    """A variable carried between invocations (TFLite resource variables; converters/tflite/variables.py):
    tensor `input` holds its value before an invocation, tensor `output` after it."""
    variable: str
    input: int
    output: int
    initial: np.ndarray              # the value before the first invocation, in the tensor's dtype


@dataclass
class SourceGraph:
    name: str
    tensors: list
    nodes: list
    inputs: list
    outputs: list
    state: list = field(default_factory=list)   # StateTensors: extra model inputs/outputs after these
    # node index -> (its region's node indexes, the nodes it converts as): a rank > 4 region split into slices
    # (converters/split_pass.py)
    split_nodes: dict = field(default_factory=dict)

    @property
    def model_inputs(self) -> list:
        """The tensors an NNAPI model of the whole graph takes: the inputs, then the state inputs."""
        return list(self.inputs) + [s.input for s in self.state]

    @property
    def model_outputs(self) -> list:
        """The tensors it returns: the outputs, then each state output not already among them."""
        out = list(self.outputs)
        return out + [t for t in dict.fromkeys(s.output for s in self.state) if t not in out]


@dataclass
class SourceModel:
    format: str                      # "tflite" or "onnx"
    graphs: list                     # every graph; graphs[main_index] is the one converted
    path: Optional[str] = None
    signatures: list = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    raw: Any = None                  # keeps the file buffer alive for zero-copy views
    main_index: int = 0              # TFLite: the subgraph of the chosen signature

    @property
    def main(self) -> SourceGraph:
        return self.graphs[self.main_index]


class SourceError(Exception):
    """The source model is malformed or cannot be read; the message names where."""

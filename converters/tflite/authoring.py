"""Author small .tflite models in memory with LiteRT's schema object API
(`ai_edge_litert.schema_py_generated`), for tests and sample scripts.

    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], "FLOAT32")
    w = g.const("w", np.ones((4, 1, 1, 2), np.float32))
    b = g.const("b", np.zeros(4, np.float32))
    y = g.tensor("y", [1, 3, 5, 4], "FLOAT32")
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1)
    g.output(y)
    data = g.finish()              # bytes of a .tflite file
"""
from __future__ import annotations

from typing import Optional, Sequence

import flatbuffers
import numpy as np

from ai_edge_litert import schema_py_generated as schema

_NP_TO_TFLITE = {
    np.dtype(np.float32): "FLOAT32", np.dtype(np.float16): "FLOAT16", np.dtype(np.int32): "INT32",
    np.dtype(np.uint8): "UINT8", np.dtype(np.int64): "INT64", np.dtype(np.bool_): "BOOL",
    np.dtype(np.int16): "INT16", np.dtype(np.int8): "INT8", np.dtype(np.float64): "FLOAT64",
    np.dtype(np.uint16): "UINT16", np.dtype(np.uint32): "UINT32",
}
_ENUMS = {
    "padding": schema.Padding, "fused_activation_function": schema.ActivationFunctionType,
    "weights_format": schema.FullyConnectedOptionsWeightsFormat, "combiner": schema.CombinerType,
    "type": schema.LSHProjectionType, "mode": schema.MirrorPadMode,
}


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w.capitalize() for w in rest)


class GraphBuilder:
    """Builds one or more subgraphs of a .tflite model."""

    def __init__(self, model: Optional["GraphBuilder"] = None, name: str = "main"):
        self.root = model or self
        if model is None:
            self.buffers = [schema.BufferT()]  # buffer 0: the empty buffer
            self.opcodes: dict = {}
            self.opcode_list: list = []
            self.subgraphs: list = []
            self.signatures: list = []
        self.sg = schema.SubGraphT()
        self.sg.tensors, self.sg.inputs, self.sg.outputs, self.sg.operators = [], [], [], []
        self.sg.name = name
        self.root.subgraphs.append(self)

    def subgraph(self, name: str) -> "GraphBuilder":
        """A further subgraph (IF/WHILE bodies); its index is `builder.index`."""
        return GraphBuilder(self.root, name)

    @property
    def index(self) -> int:
        return self.root.subgraphs.index(self)

    # -- tensors ---------------------------------------------------------------
    def tensor(self, name: str, shape: Sequence[int], type_: str = "FLOAT32", *, scale=None, zero_point=None,
               axis: int = 0, data: Optional[np.ndarray] = None, shape_signature=None) -> int:
        t = schema.TensorT()
        t.name = name
        t.shape = list(int(d) for d in shape)
        t.type = getattr(schema.TensorType, type_)
        t.buffer = 0
        if shape_signature is not None:
            t.shapeSignature = list(shape_signature)
        if scale is not None:
            q = schema.QuantizationParametersT()
            q.scale = list(np.atleast_1d(np.asarray(scale, np.float32)).tolist())
            zp = 0 if zero_point is None else zero_point
            q.zeroPoint = list(np.atleast_1d(np.asarray(zp, np.int64)).tolist())
            if len(q.zeroPoint) == 1 and len(q.scale) > 1:
                q.zeroPoint = q.zeroPoint * len(q.scale)
            q.quantizedDimension = axis
            t.quantization = q
        if data is not None:
            buf = schema.BufferT()
            buf.data = np.ascontiguousarray(data).reshape(-1).view(np.uint8).tolist()
            self.root.buffers.append(buf)
            t.buffer = len(self.root.buffers) - 1
        self.sg.tensors.append(t)
        return len(self.sg.tensors) - 1

    def input(self, name, shape, type_="FLOAT32", **q) -> int:
        i = self.tensor(name, shape, type_, **q)
        self.sg.inputs.append(i)
        return i

    def const(self, name, data: np.ndarray, type_: Optional[str] = None, **q) -> int:
        data = np.asarray(data)
        return self.tensor(name, data.shape, type_ or _NP_TO_TFLITE[data.dtype], data=data, **q)

    def output(self, *indexes: int) -> None:
        self.sg.outputs.extend(indexes)

    # -- operators -------------------------------------------------------------
    def _opcode(self, op: str, version: int, custom_code: Optional[str] = None) -> int:
        key = (op, version, custom_code)
        if key not in self.root.opcodes:
            oc = schema.OperatorCodeT()
            code = getattr(schema.BuiltinOperator, op)
            oc.builtinCode = code
            oc.deprecatedBuiltinCode = min(code, 127)
            oc.version = version
            oc.customCode = custom_code
            self.root.opcodes[key] = len(self.root.opcode_list)
            self.root.opcode_list.append(oc)
        return self.root.opcodes[key]

    def op(self, op: str, inputs: Sequence[int], outputs: Sequence[int], options: Optional[str] = None,
           version: int = 1, **fields) -> int:
        """Add a builtin operator; `options` names its options table (e.g. "Conv2DOptions"),
        `fields` are its fields in snake_case (enum fields by name, e.g. padding="SAME")."""
        o = schema.OperatorT()
        o.opcodeIndex = self._opcode(op, version)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if options:
            opts = getattr(schema, options + "T")()
            for k, v in fields.items():
                if isinstance(v, str) and k in _ENUMS:
                    v = getattr(_ENUMS[k], v)
                attr = _camel(k)
                if not hasattr(opts, attr):
                    raise AttributeError(f"{options} has no field {k!r}")
                setattr(opts, attr, v)
            o.builtinOptionsType = getattr(schema.BuiltinOptions, options)
            o.builtinOptions = opts
        self.sg.operators.append(o)
        return len(self.sg.operators) - 1

    def custom(self, custom_code: str, inputs: Sequence[int], outputs: Sequence[int], options: bytes = b"",
               version: int = 1) -> int:
        """Add a custom operator (CUSTOM with `custom_code`); `options` are its raw custom option bytes
        (a flexbuffer or a C parameter struct, as the operator defines)."""
        o = schema.OperatorT()
        o.opcodeIndex = self._opcode("CUSTOM", version, custom_code)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if options:
            o.customOptions = list(bytes(options))
            o.customOptionsFormat = schema.CustomOptionsFormat.FLEXBUFFERS
        self.sg.operators.append(o)
        return len(self.sg.operators) - 1

    def signature(self, key: str, inputs: dict, outputs: dict) -> None:
        """A signature of this subgraph: names -> tensor indexes of its inputs and outputs."""
        sd = schema.SignatureDefT()
        sd.signatureKey, sd.subgraphIndex = key, self.index

        def maps(d):
            out = []
            for name, idx in d.items():
                tm = schema.TensorMapT()
                tm.name, tm.tensorIndex = name, idx
                out.append(tm)
            return out
        sd.inputs, sd.outputs = maps(inputs), maps(outputs)
        self.root.signatures.append(sd)

    # -- output ----------------------------------------------------------------
    def finish(self) -> bytes:
        root = self.root
        m = schema.ModelT()
        m.version = 3
        m.operatorCodes = root.opcode_list
        m.subgraphs = [g.sg for g in root.subgraphs]
        m.buffers = root.buffers
        if root.signatures:
            m.signatureDefs = root.signatures
        m.description = "authored by converters.tflite.authoring"
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())

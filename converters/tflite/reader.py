"""Read a .tflite file into a SourceModel with the `tflite` package's
generated flatbuffer readers. Constant buffers become zero-copy numpy views
of the file bytes. Every index is bounds-checked and every shape's element
count is checked against the file size before anything is allocated; a
malformed file raises SourceError naming the subgraph, tensor or operator."""
from __future__ import annotations

import math
import re
import struct
from pathlib import Path
from typing import Optional, Union

import flatbuffers
import numpy as np
import tflite

from ..source_graph import Quant, SourceError, SourceGraph, SourceModel, SourceNode, SourceTensor

# tflite.TensorType -> numpy dtype (None: not representable here)
TENSOR_DTYPES = {
    0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 5: None, 6: np.bool_,
    7: np.int16, 8: np.complex64, 9: np.int8, 10: np.float64, 11: np.complex128, 12: np.uint64,
    13: None, 14: None, 15: np.uint32, 16: np.uint16, 17: None, 18: None,
}
TENSOR_TYPE_NAMES = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}

BUILTIN_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
_OPTIONS_CLASSES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_") and k != "NONE"}
_OPTIONS2_CLASSES = {v: k for k, v in vars(tflite.BuiltinOptions2).items() if not k.startswith("_") and k != "NONE"}
_SKIP_METHODS = {"Init", "GetRootAs"}
_READ_ERRORS = (struct.error, IndexError, ValueError, TypeError, AttributeError, UnicodeDecodeError,
                OverflowError, RecursionError)
MAX_DIM = 1 << 31
# The arity of each builtin's signature (the NumInputs/NumOutputs checks of its LiteRT kernel's
# Prepare): an operator with fewer inputs or outputs is malformed, whatever converter handles it.
# Most builtins write at least one output; the ones below do not have to (CALL_ONCE runs a
# subgraph, ASSIGN_VARIABLE and HASHTABLE_IMPORT write state, IF and WHILE may return nothing),
# and a custom operator's signature is its kernel's business.
_MIN_INPUTS = {
    **dict.fromkeys(("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "SQUARED_DIFFERENCE",
                     "FLOOR_DIV", "FLOOR_MOD", "LESS", "GREATER", "EQUAL", "NOT_EQUAL", "LESS_EQUAL",
                     "GREATER_EQUAL", "LOGICAL_AND", "LOGICAL_OR", "CONV_2D", "DEPTHWISE_CONV_2D",
                     "FULLY_CONNECTED", "PRELU", "MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD",
                     "REDUCE_ANY", "REDUCE_ALL", "PAD", "PADV2", "MIRROR_PAD", "TRANSPOSE", "GATHER", "SPLIT",
                     "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "ARG_MAX", "ARG_MIN", "TOPK_V2", "TILE",
                     "EXPAND_DIMS", "FILL", "BATCH_MATMUL", "EMBEDDING_LOOKUP", "REVERSE_V2",
                     "BROADCAST_TO", "GATHER_ND", "ASSIGN_VARIABLE"), 2),
    **dict.fromkeys(("TRANSPOSE_CONV", "SLICE", "SPLIT_V", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "SELECT",
                     "SELECT_V2", "HASHTABLE_LOOKUP", "HASHTABLE_FIND", "HASHTABLE_IMPORT"), 3),
    **dict.fromkeys(("READ_VARIABLE", "HASHTABLE_SIZE", "IF"), 1),
    "STRIDED_SLICE": 4,
}
_MIN_OUTPUTS = {"TOPK_V2": 2, "HASHTABLE_LOOKUP": 2,
                **dict.fromkeys(("CALL_ONCE", "ASSIGN_VARIABLE", "HASHTABLE_IMPORT", "IF", "WHILE"), 0)}


def _arity(name: str) -> tuple[int, int]:
    """(fewest inputs, fewest outputs) of builtin `name`'s signature."""
    if name.startswith(("CUSTOM:", "UNKNOWN_BUILTIN_")):
        return 0, 0
    return _MIN_INPUTS.get(name, 0), _MIN_OUTPUTS.get(name, 1)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _options(table, type_code: int, classes: dict) -> dict:
    """All fields of a builtin-options table as a dict with snake_case keys."""
    if table is None or type_code == 0:
        return {}
    cls_name = classes.get(type_code)
    if cls_name is None:
        return {"_unknown_options_type": type_code}
    cls = getattr(tflite, cls_name)
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    attrs = {}
    for name in dir(cls):
        if (name.startswith("_") or name in _SKIP_METHODS or name.startswith("GetRootAs")
                or name.endswith(("BufferHasIdentifier", "Length", "IsNone")) or not name[0].isupper()):
            continue
        method = getattr(obj, name)
        if name.endswith("AsNumpy"):
            value = method()
            attrs[_snake(name[: -len("AsNumpy")])] = (
                [] if isinstance(value, int) else np.asarray(value).tolist())
            continue
        if hasattr(cls, name + "AsNumpy"):
            continue  # vector field: read through its AsNumpy twin
        try:
            value = method()
        except TypeError:
            continue  # needs an argument: an element accessor
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, (int, float, str, bool)) or value is None:
            attrs[_snake(name)] = value
    return attrs


def read_tflite(source: Union[str, Path, bytes, bytearray, memoryview]) -> SourceModel:
    if isinstance(source, (str, Path)):
        path = str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise SourceError(f"{path}: cannot read ({e.strerror})") from None
    else:
        path, data = None, bytes(source)
    where = path or "<bytes>"
    if len(data) < 8:
        raise SourceError(f"{where}: {len(data)} bytes is too short for a .tflite file")
    if data[4:8] != b"TFL3":
        raise SourceError(f"{where}: not a TFLite flatbuffer (file identifier {data[4:8]!r} at offset 4, "
                          f"expected b'TFL3')")
    ctx = ["model header"]
    try:
        model = tflite.Model.GetRootAs(data, 0)
        return _read_model(model, data, where, path, ctx)
    except SourceError:
        raise
    except _READ_ERRORS as e:
        raise SourceError(f"{where}: malformed .tflite file while reading {ctx[-1]}: {type(e).__name__}: {e}") from None


def _buffers(model, data: bytes, where: str, ctx) -> list:
    out = []
    file = np.frombuffer(data, dtype=np.uint8)
    for b in range(model.BuffersLength()):
        ctx.append(f"buffer {b}")
        buf = model.Buffers(b)
        offset, size = buf.Offset(), buf.Size()
        if offset > 1:
            if offset + size > len(data):
                raise SourceError(f"{where}: buffer {b} at offset {offset} with {size} bytes lies beyond the "
                                  f"end of the file ({len(data)} bytes)")
            out.append(file[offset: offset + size])
        elif buf.DataLength():
            out.append(buf.DataAsNumpy())
        else:
            out.append(None)
        ctx.pop()
    return out


def _quant(t, n_dims: int) -> Optional[Quant]:
    q = t.Quantization()
    if q is None or q.ScaleLength() == 0:
        return None
    scales = tuple(float(s) for s in q.ScaleAsNumpy())
    zps = tuple(int(z) for z in q.ZeroPointAsNumpy()) if q.ZeroPointLength() else (0,) * len(scales)
    if len(zps) == 1 and len(scales) > 1:
        zps = zps * len(scales)
    axis = q.QuantizedDimension() if len(scales) > 1 else None
    return Quant(scales, zps, axis)


def _tensor(sg, j: int, buffers: list, where: str, label: str) -> SourceTensor:
    t = sg.Tensors(j)
    name = (t.Name() or b"").decode("utf-8", "replace")
    ttype = t.Type()
    dtype = TENSOR_DTYPES.get(ttype)
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    if t.ShapeIsNone() and t.HasRank() is False:
        shape = None
    signature = tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if t.ShapeSignatureLength() else None
    if shape is not None and any(d < -1 or d >= MAX_DIM for d in shape):
        raise SourceError(f"{where}: {label} tensor {j} ({name!r}) has invalid dimensions {list(shape)}")
    b = t.Buffer()
    if not 0 <= b < max(len(buffers), 1):
        raise SourceError(f"{where}: {label} tensor {j} ({name!r}) refers to buffer {b}, "
                          f"the file has {len(buffers)} buffers")
    raw = buffers[b] if b < len(buffers) else None
    data = None
    if raw is not None and raw.size and dtype is None:
        # a type numpy has no dtype for (STRING, INT4, ...): the raw bytes, which converters refuse by type
        data = raw.view(np.uint8)
        data.flags.writeable = False
    elif raw is not None and raw.size:
        itemsize = np.dtype(dtype).itemsize
        count = math.prod(shape) if shape else 1
        if t.Sparsity() is None and raw.size != count * itemsize:
            raise SourceError(f"{where}: {label} tensor {j} ({name!r}) shape {list(shape)} needs "
                              f"{count * itemsize} bytes, its buffer {b} has {raw.size}")
        if raw.size % itemsize:
            raise SourceError(f"{where}: {label} tensor {j} ({name!r}) buffer {b} size {raw.size} is not a "
                              f"multiple of {itemsize}")
        data = raw.view(dtype)
        if t.Sparsity() is None:
            data = data.reshape(shape)
        data.flags.writeable = False
    st = SourceTensor(j, name, shape, np.dtype(dtype) if dtype is not None else np.dtype(np.uint8),
                      _quant(t, len(shape or ())), data, bool(t.IsVariable()), signature)
    st.tflite_type = TENSOR_TYPE_NAMES.get(ttype, str(ttype))
    if dtype is None or st.tflite_type in ("UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "FLOAT64"):
        st.unsupported_type = st.tflite_type  # no NNAPI type: converters report the tensor
    st.sparse = t.Sparsity() is not None
    st.sparsity = t.Sparsity() if st.sparse else None
    return st


def _builtin_code_field(oc) -> int:
    """OperatorCode.builtin_code as stored. The tflite package's BuiltinCode() answers the
    deprecated_builtin_code field instead whenever builtin_code is below 127, which is wrong for files
    that set only builtin_code (AI Edge Quantizer's DEQUANTIZE: deprecated_builtin_code 0, builtin_code
    6); LiteRT takes the larger of the two fields, and so does _read_model."""
    o = oc._tab.Offset(10)   # the field's vtable slot in the tflite package's generated OperatorCode
    return oc._tab.Get(flatbuffers.number_types.Int32Flags, o + oc._tab.Pos) if o else 0


def _read_model(model, data: bytes, where: str, path, ctx) -> SourceModel:
    buffers = _buffers(model, data, where, ctx)
    opcodes = []
    for k in range(model.OperatorCodesLength()):
        ctx.append(f"operator code {k}")
        oc = model.OperatorCodes(k)
        code = max(_builtin_code_field(oc), oc.DeprecatedBuiltinCode())
        custom = oc.CustomCode()
        name = BUILTIN_NAMES.get(code, f"UNKNOWN_BUILTIN_{code}")
        if name == "CUSTOM":
            name = "CUSTOM:" + (custom.decode("utf-8", "replace") if custom else "?")
        opcodes.append((name, oc.Version()))
        ctx.pop()
    if model.SubgraphsLength() == 0:
        raise SourceError(f"{where}: the model has no subgraphs")
    graphs = []
    for s in range(model.SubgraphsLength()):
        ctx.append(f"subgraph {s}")
        sg = model.Subgraphs(s)
        label = f"subgraph {s}"
        n_tensors = sg.TensorsLength()
        tensors = []
        for j in range(n_tensors):
            ctx.append(f"subgraph {s} tensor {j}")
            tensors.append(_tensor(sg, j, buffers, where, label))
            ctx.pop()

        def check_indexes(values, what, optional=True):
            for v in values:
                if not (optional and v == -1) and not 0 <= v < n_tensors:
                    raise SourceError(f"{where}: {what} refers to tensor {v}, {label} has {n_tensors} tensors")
            return [int(v) for v in values]

        inputs = check_indexes(sg.InputsAsNumpy() if sg.InputsLength() else [], f"{label} inputs", False)
        outputs = check_indexes(sg.OutputsAsNumpy() if sg.OutputsLength() else [], f"{label} outputs", False)
        writer: dict = {}  # tensor -> the operator that writes it
        nodes = []
        for k in range(sg.OperatorsLength()):
            ctx.append(f"subgraph {s} operator {k}")
            op = sg.Operators(k)
            idx = op.OpcodeIndex()
            if not 0 <= idx < len(opcodes):
                raise SourceError(f"{where}: {label} operator {k} uses opcode index {idx}, the file has "
                                  f"{len(opcodes)} operator codes")
            name, version = opcodes[idx]
            attrs = _options(op.BuiltinOptions(), op.BuiltinOptionsType(), _OPTIONS_CLASSES)
            attrs.update(_options(op.BuiltinOptions2(), op.BuiltinOptions2Type(), _OPTIONS2_CLASSES))
            node = SourceNode(
                index=k, op=name, version=version,
                inputs=check_indexes(op.InputsAsNumpy() if op.InputsLength() else [], f"{label} operator {k} inputs"),
                outputs=check_indexes(op.OutputsAsNumpy() if op.OutputsLength() else [], f"{label} operator {k} outputs",
                                      False),
                attrs=attrs)
            if op.CustomOptionsLength():
                if op.CustomOptionsFormat() != 0:
                    raise SourceError(f"{where}: {label} operator {k} ({name}) custom options format "
                                      f"{op.CustomOptionsFormat()} is not FLEXBUFFERS")
                node.custom_options = bytes(op.CustomOptionsAsNumpy())
            node.intermediates = check_indexes(op.IntermediatesAsNumpy() if op.IntermediatesLength() else [],
                                               f"{label} operator {k} intermediates", False)
            need_in, need_out = _arity(name)
            if len(node.inputs) < need_in or len(node.outputs) < need_out:
                raise SourceError(f"{where}: {label} operator {k} ({name}) has {len(node.inputs)} inputs and "
                                  f"{len(node.outputs)} outputs; it needs at least {need_in} and {need_out}")
            if -1 in node.inputs[:need_in]:
                raise SourceError(f"{where}: {label} operator {k} ({name}) leaves out required input "
                                  f"{node.inputs.index(-1)} (-1)")
            for t in node.outputs:
                if t in writer:
                    raise SourceError(f"{where}: {label} tensor {t} is written by operators {writer[t]} and {k}")
                if t in inputs or tensors[t].is_constant:
                    raise SourceError(f"{where}: {label} operator {k} ({name}) writes tensor {t}, a "
                                      f"{'subgraph input' if t in inputs else 'constant'}")
                writer[t] = k
            for key in ("then_subgraph_index", "else_subgraph_index", "cond_subgraph_index", "body_subgraph_index"):
                if key in attrs:
                    v = attrs[key]
                    if not 0 <= v < model.SubgraphsLength():
                        raise SourceError(f"{where}: {label} operator {k} ({name}) {key} {v} out of range")
                    node.subgraphs[key] = v
            nodes.append(node)
            ctx.pop()
        for node in nodes:  # operators are stored in execution order: no cycles, no use before definition
            late = [t for t in node.inputs if writer.get(t, -1) >= node.index]
            if late:
                raise SourceError(f"{where}: {label} operator {node.index} ({node.op}) reads tensor {late[0]} "
                                  f"before operator {writer[late[0]]} writes it (a cycle, or operators out of "
                                  f"execution order)")
        graphs.append(SourceGraph((sg.Name() or b"").decode("utf-8", "replace") or f"subgraph{s}",
                                  tensors, nodes, inputs, outputs))
        ctx.pop()
    signatures = []
    for k in range(model.SignatureDefsLength()):
        sd = model.SignatureDefs(k)
        signatures.append({
            "key": (sd.SignatureKey() or b"").decode("utf-8", "replace"),
            "subgraph": sd.SubgraphIndex(),
            "inputs": {(sd.Inputs(i).Name() or b"").decode(): sd.Inputs(i).TensorIndex() for i in range(sd.InputsLength())},
            "outputs": {(sd.Outputs(i).Name() or b"").decode(): sd.Outputs(i).TensorIndex() for i in range(sd.OutputsLength())},
        })
    return SourceModel("tflite", graphs, path, signatures, {"version": model.Version()}, raw=data)

"""Read an .onnx model into a SourceModel with the `onnx` package.

- Shapes come from the shape pass (shapes.py: the pins in `input_shapes` and
  `dims`, then onnx's and onnxruntime's shape inference); unknown extents are
  -1 and keep their dim_param in SourceTensor.symbols.
- Initializers and Constant values are numpy views over their raw_data (no
  copy; large ones are taken out of the proto before the shape pass, which
  needs no weights: skeleton.py);
  external data is read only from files inside the model's folder.
- Constant nodes become constant tensors (they have no NNAPI counterpart).
- Every attribute is decoded to a plain Python value (TensorProto -> numpy,
  bytes -> str); subgraph attributes (If/Loop bodies) stay GraphProto for the
  control-flow converters.
- node.version is the opset the model imports for the node's domain.
- Nodes are put in topological order; a malformed protobuf, a dangling input,
  a cycle, a missing initializer or an unknown domain raise SourceError naming
  the node or tensor.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

import numpy as np
import onnx
from google.protobuf.message import Message
from onnx import TensorProto, helper, numpy_helper

from ..source_graph import SourceError, SourceGraph, SourceModel, SourceNode, SourceTensor
from . import branches, ms_shapes, shapes, skeleton

STANDARD_DOMAINS = ("", "ai.onnx")
# element types packed several to a byte: raw_data is not one element per itemsize (onnx unpacks them)
PACKED_TYPES = {getattr(TensorProto, n) for n in ("INT4", "UINT4", "FLOAT4E2M1", "INT2", "UINT2")
                if hasattr(TensorProto, n)}


def _np_dtype(elem_type: int, where: str) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        raise SourceError(f"{where}: unsupported ONNX element type {elem_type}") from None


class _Reader:
    def __init__(self, proto: onnx.ModelProto, where: str, folder: Optional[Path], detached: Optional[dict] = None):
        self.proto, self.where, self.folder = proto, where, folder
        self.detached = detached or {}   # skeleton.key_of(tensor) -> its raw bytes, taken out before the shape pass

    # -- constants ------------------------------------------------------------------
    def _external(self, t: TensorProto, label: str) -> memoryview:
        info = {e.key: e.value for e in t.external_data}
        loc = info.get("location", "")
        if self.folder is None:
            raise SourceError(f"{self.where}: {label} uses external data {loc!r}, which needs the model "
                              f"read from a file path")
        base = self.folder.resolve()
        try:
            target = (base / loc).resolve()  # resolves '..' and symlinks
        except (OSError, ValueError) as e:  # a NUL byte, a symlink loop
            raise SourceError(f"{self.where}: {label} external data location {loc!r} is not a usable path "
                              f"({e})") from None
        if not loc or Path(loc).is_absolute() or (base != target and base not in target.parents):
            raise SourceError(f"{self.where}: {label} external data location {loc!r} leaves the model's "
                              f"folder; only files inside {str(base)!r} are read")
        try:
            offset, length = int(info.get("offset", 0)), info.get("length")
            length = None if length is None else int(length)
            with open(target, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if offset < 0 or offset > size or (length is not None and (length < 0 or offset + length > size)):
                    raise SourceError(f"{self.where}: {label} external data {loc!r}: offset {offset} and length "
                                      f"{length} do not fit in its {size} bytes")
                f.seek(offset)
                data = f.read(-1 if length is None else length)
        except (OSError, ValueError) as e:
            raise SourceError(f"{self.where}: {label} external data {loc!r} cannot be read ({e})") from None
        return memoryview(data)

    def array(self, t: TensorProto, label: str) -> np.ndarray:
        dtype = _np_dtype(t.data_type, f"{self.where}: {label}")
        shape = tuple(int(d) for d in t.dims)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if any(d < 0 for d in shape):
            raise SourceError(f"{self.where}: {label} has negative dimensions {list(shape)}")
        if t.data_location == TensorProto.EXTERNAL:
            if t.data_type in PACKED_TYPES:
                raise SourceError(f"{self.where}: {label} stores packed sub-byte data externally; not supported")
            raw = self._external(t, label)
        elif t.HasField("raw_data"):
            raw = t.raw_data
        elif skeleton.key_of(t) is not None:
            raw = self.detached[skeleton.key_of(t)]
        else:
            raw = None
        if raw is not None and dtype.kind != "O" and t.data_type not in PACKED_TYPES:
            if len(raw) != count * dtype.itemsize:
                raise SourceError(f"{self.where}: {label} shape {list(shape)} needs {count * dtype.itemsize} "
                                  f"bytes of {dtype.name}, it has {len(raw)}")
            arr = np.frombuffer(raw, dtype=dtype).reshape(shape)  # a view, no copy
        else:
            try:
                arr = numpy_helper.to_array(t)
            except Exception as e:  # onnx raises several types for inconsistent typed fields
                raise SourceError(f"{self.where}: {label} cannot be decoded: {e}") from None
            if arr.size != count:
                raise SourceError(f"{self.where}: {label} shape {list(shape)} has {count} elements, "
                                  f"its data has {arr.size} (missing initializer data?)")
        if arr.flags.writeable:
            arr.flags.writeable = False
        return arr

    def attr_value(self, a: onnx.AttributeProto, label: str):
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            return v.decode("utf-8", "replace")
        if isinstance(v, TensorProto):
            return self.array(v, f"{label} attribute {a.name!r}")
        if isinstance(v, list):
            return [x.decode("utf-8", "replace") if isinstance(x, bytes)
                    else self.array(x, f"{label} attribute {a.name!r}") if isinstance(x, TensorProto) else x
                    for x in v]
        return v  # int, float, GraphProto (kept for If/Loop), or list of GraphProto

    # -- graph ----------------------------------------------------------------------
    def read(self) -> SourceModel:
        opsets = {}
        for o in self.proto.opset_import:
            opsets[o.domain or ""] = int(o.version)
        if "ai.onnx" in opsets:
            opsets.setdefault("", opsets["ai.onnx"])
        # a model of only ai.onnx.ml (or training-domain) nodes imports no default opset: valid ONNX, and its
        # nodes are then refused one by one (no converter serves those domains)
        self.subgraphs: list = []  # If/Loop bodies: graphs 1.. of the SourceModel
        if not self.proto.graph.output:
            raise SourceError(f"{self.where}: the graph has no outputs")
        graph = self.read_graph(self.proto.graph, opsets)
        meta = {"ir_version": self.proto.ir_version, "opsets": opsets, "producer": self.proto.producer_name}
        return SourceModel("onnx", [graph] + self.subgraphs, self.where if self.folder else None, metadata=meta,
                           raw=self.proto)

    def read_graph(self, g: onnx.GraphProto, opsets: dict) -> SourceGraph:
        types = {}  # tensor name -> TypeProto.tensor_type
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            if vi.type.HasField("tensor_type"):
                have = types.get(vi.name)
                if have is not None and have.HasField("shape") and not vi.type.tensor_type.HasField("shape"):
                    continue  # a shapeless declaration (e.g. a graph input listed as an output) adds nothing
                types[vi.name] = vi.type.tensor_type
        tensors: list[SourceTensor] = []
        index: dict[str, int] = {}

        def add(name: str, data=None) -> int:
            if name in index:
                return index[name]
            if data is not None:
                t = SourceTensor(len(tensors), name, tuple(data.shape), data.dtype, data=data)
            else:
                tt = types.get(name)
                known = tt is not None and tt.elem_type
                dtype = _np_dtype(tt.elem_type, f"tensor {name!r}") if known else np.dtype(np.float32)
                shape = symbols = None
                if tt is not None and tt.HasField("shape"):
                    shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else -1
                                  for d in tt.shape.dim)
                    symbols = tuple(d.dim_param or None for d in tt.shape.dim)
                t = SourceTensor(len(tensors), name, shape, dtype,
                                 symbols=symbols if symbols and any(symbols) else None)
            tensors.append(t)
            index[name] = t.index
            return t.index

        for init in g.initializer:
            if init.name in index:
                raise SourceError(f"{self.where}: initializer {init.name!r} is defined twice")
            add(init.name, self.array(init, f"initializer {init.name!r}"))
        for sp in g.sparse_initializer:
            raise SourceError(f"{self.where}: sparse initializer {sp.values.name!r} is not supported")
        inputs = [add(vi.name) for vi in g.input if vi.name not in index]  # inputs with initializers are constants

        producer: dict[str, int] = {}
        nodes_in = []
        for k, n in enumerate(g.node):
            label = f"node {k} ({n.op_type}{' ' + repr(n.name) if n.name else ''})"
            domain = n.domain or ""
            if domain not in opsets:
                raise SourceError(f"{self.where}: {label} uses domain {n.domain!r}, which the model does not "
                                  f"import (opsets: {sorted(opsets)})")
            attrs = {a.name: self.attr_value(a, label) for a in n.attribute}
            for o in n.output:
                if o and (o in producer or o in index):
                    raise SourceError(f"{self.where}: {label} output {o!r} is already produced elsewhere")
                if o:
                    producer[o] = k
            nodes_in.append((k, n, label, domain, attrs))

        order = self._topological(nodes_in, producer, index)
        nodes = []
        for k in order:
            _, n, label, domain, attrs = nodes_in[k]
            if n.op_type == "Constant" and domain in STANDARD_DOMAINS:
                add(n.output[0], self._constant(attrs, label))
                if n.output[0] not in {vi.name for vi in g.output}:
                    continue  # a graph output stays a node: NNAPI needs an operation to write it
            ins = [add(x) if x else -1 for x in n.input]
            outs = [add(x) if x else -1 for x in n.output]
            nodes.append(SourceNode(len(nodes), n.op_type, ins, outs, attrs, opsets[domain], domain, n.name))
            if _bodies_of(n):
                nodes[-1].subgraphs = self._bodies(
                    n, opsets, types, lambda x: tensors[index[x]].data if x in index else None)
                nodes[-1].captured = [index[x] for x in _captured(n) if x in index]
        outputs = []
        for vi in g.output:
            if vi.name not in index:
                raise SourceError(f"{self.where}: graph output {vi.name!r} is not produced by any node, "
                                  f"graph input or initializer")
            outputs.append(index[vi.name])
        return SourceGraph(g.name or "main", tensors, nodes, inputs, outputs)

    def _bodies(self, n, opsets: dict, types: dict, constant) -> dict:
        """Read node n's graph attributes (If branches, Loop body) as graphs of the SourceModel: attribute
        name -> graph index. Each takes its own inputs, then the values the node's bodies read from
        enclosing scopes (one list for all bodies, so If's branches accept the same inputs); captured
        constants become initializers of the body."""
        captured = _captured(n)
        found = {}
        for a in n.attribute:
            if a.type != onnx.AttributeProto.GRAPH:
                continue
            body = onnx.GraphProto()
            body.CopyFrom(a.g)
            for name in captured:
                if constant(name) is not None:
                    try:
                        body.initializer.append(numpy_helper.from_array(np.asarray(constant(name)), name))
                    except Exception:  # noqa: BLE001 (a type onnx cannot write back): passed in at run time
                        pass
                vi = body.input.add()
                vi.name = name
                if name in types:  # the enclosing graph's type and shape
                    vi.type.tensor_type.CopyFrom(types[name])
            self.subgraphs.append(None)  # reserve the index: nested bodies are read (and appended) first
            k = len(self.subgraphs)
            self.subgraphs[k - 1] = self.read_graph(body, opsets)
            found[a.name] = k
        return found

    def _topological(self, nodes_in, producer: dict, known: dict) -> list:
        """Node order where every input is produced first; SourceError on a dangling input or a cycle."""
        graph_inputs = set(known)
        waiting, users = {}, {}
        for k, n, label, _, _ in nodes_in:
            deps = set()
            for x in list(n.input) + _captured(n):  # a body's captured values are inputs too
                if not x or x in graph_inputs:
                    continue
                if x not in producer:
                    raise SourceError(f"{self.where}: {label} input {x!r} is not produced by any node, graph "
                                      f"input or initializer")
                deps.add(producer[x])
            waiting[k] = len(deps)
            for d in deps:
                users.setdefault(d, []).append(k)
        ready = [k for k, c in waiting.items() if c == 0]
        ready.reverse()
        order = []
        while ready:
            k = ready.pop()
            order.append(k)
            for u in reversed(users.get(k, [])):
                waiting[u] -= 1
                if waiting[u] == 0:
                    ready.append(u)
        if len(order) != len(nodes_in):
            stuck = next(k for k, c in waiting.items() if c > 0)
            raise SourceError(f"{self.where}: {nodes_in[stuck][2]} is part of a cycle (its inputs depend on "
                              f"its own outputs)")
        return order

    def _constant(self, attrs: dict, label: str) -> np.ndarray:
        for key, dtype in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                           ("value_int", np.int64), ("value_ints", np.int64)):
            if key in attrs:
                arr = np.asarray(attrs[key], dtype=dtype)
                arr.flags.writeable = False
                return arr
        raise SourceError(f"{self.where}: {label} has no supported value attribute ({sorted(attrs)})")


# TensorProto fields that hold bulk values, never text: not visited (listing them copies the data)
_BULK_FIELDS = {"raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"}


def _set_fields(msg):
    """msg.ListFields(), without a TensorProto's bulk value fields."""
    if not isinstance(msg, TensorProto):
        return msg.ListFields()
    fields = []
    for fd in msg.DESCRIPTOR.fields:
        if fd.name in _BULK_FIELDS:
            continue
        value = getattr(msg, fd.name)
        repeated = getattr(fd, "is_repeated", None)
        repeated = fd.label == fd.LABEL_REPEATED if repeated is None else repeated
        if (len(value) if repeated else (msg.HasField(fd.name) if fd.type == fd.TYPE_MESSAGE else value != fd.default_value)):
            fields.append((fd, value))
    return fields


def _check_strings(msg, where: str, path: str = "model") -> None:
    """SourceError naming the field when a string field is not UTF-8 (protobuf then hands out bytes)."""
    for fd, value in _set_fields(msg):
        if fd.type == fd.TYPE_MESSAGE:
            single = isinstance(value, Message)
            for k, v in enumerate([value] if single else value):
                _check_strings(v, where, f"{path}.{fd.name}" if single else f"{path}.{fd.name}[{k}]")
        elif fd.type == fd.TYPE_STRING:
            for v in ([value] if isinstance(value, (str, bytes)) else value):
                if isinstance(v, bytes):
                    raise SourceError(f"{where}: {path}.{fd.name} is not valid UTF-8 text ({v[:40]!r})")


def _bodies_of(n) -> list:
    return [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]


def _captured(n) -> list:
    """Names node n's bodies read from enclosing scopes, in order of first use."""
    names: list = []
    for g in _bodies_of(n):
        local = {vi.name for vi in g.input} | {t.name for t in g.initializer} | {o for m in g.node for o in m.output}
        for m in g.node:
            for x in list(m.input) + _captured(m):
                if x and x not in local and x not in names:
                    names.append(x)
    return names


def read_onnx(source: Union[str, Path, bytes, bytearray, memoryview],
              input_shapes: Optional[dict] = None, dims: Optional[dict] = None) -> SourceModel:
    """A SourceModel of an .onnx file (path) or its bytes; `input_shapes` pins input shapes by input name,
    `dims` named dimensions (dim_param) wherever they appear (shapes.py)."""
    if isinstance(source, (str, Path)):
        where, folder = str(source), Path(source).parent
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise SourceError(f"{where}: cannot read ({e.strerror})") from None
    else:
        where, folder, data = "<bytes>", None, bytes(source)
    try:
        proto = onnx.ModelProto.FromString(data)
    except Exception as e:  # google.protobuf DecodeError and friends
        raise SourceError(f"{where}: not a valid ONNX protobuf ({type(e).__name__}: {e})") from None
    del data   # (the file's bytes: as large as the model)
    if not proto.HasField("graph"):
        raise SourceError(f"{where}: the ONNX model has no graph")
    _check_strings(proto, where)
    shapes.pin(proto, input_shapes, dims)
    dynamic = shapes.name_input_dims(proto)
    proto, detached = skeleton.strip(proto)   # the shape pass needs no weights (skeleton.py)
    resolved: list = []
    proto = branches.resolve(proto, log=resolved)  # Ifs the pinned shapes decide become the branch they take
    inferred = ms_shapes.complete(shapes.infer(proto))  # onnx's inference stops at com.microsoft quantized ops
    try:
        model = _Reader(inferred, where, folder, detached).read()
        model.metadata["input_symbols"] = dynamic  # dim_param -> [(input, axis)] still dynamic
        if resolved:
            model.metadata["resolved_ifs"] = resolved  # (branches.py) one sentence per If replaced
        return model
    except SourceError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise SourceError(f"{where}: malformed ONNX model: {type(e).__name__}: {e}") from None

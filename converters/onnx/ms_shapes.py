"""Output shapes of the com.microsoft quantized operators onnxruntime.quantization emits (QLinearAdd,
QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearGlobalAveragePool,
QLinearAveragePool, QLinearConcat, QGemm, DynamicQuantizeLSTM). ONNX shape inference has no schema for
them and stops there, so every later shape (QLinearConv's input included) would be lost: `complete`
declares their output shapes and runs ONNX inference again, until nothing new is learnt."""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper

from nnapi import PaddingCode
from nnapi.ops.geometry import explicit_out_size, implicit_padding

MS = "com.microsoft"


def _known(shapes: dict, name: str):
    s = shapes.get(name)
    return s if s is not None and all(isinstance(d, int) and d >= 0 for d in s) else None


def _pool(node, x, attrs, channels_last):
    """QLinearAveragePool: AveragePool's arithmetic (pads, strides, auto_pad, ceil_mode)."""
    spatial = x[1:-1] if channels_last else x[2:]
    k = attrs.get("kernel_shape")
    if not k or len(k) != len(spatial):
        return None
    strides = attrs.get("strides", [1] * len(k))
    pads = attrs.get("pads", [0] * 2 * len(k))
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    rnd = math.ceil if attrs.get("ceil_mode", 0) else math.floor
    out = []
    for d, (n, kk, s) in enumerate(zip(spatial, k, strides)):
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(implicit_padding(n, s, kk, PaddingCode.SAME)[2])
        elif auto == "VALID":
            out.append(explicit_out_size(n, s, kk, 0, 0))
        elif rnd is math.floor:
            out.append(explicit_out_size(n, s, kk, pads[d], pads[d + len(k)]))
        else:  # ONNX's ceil_mode: the last partial window counts
            out.append(rnd((n + pads[d] + pads[d + len(k)] - kk) / s) + 1)
    return [x[0], *out, x[-1]] if channels_last else [x[0], x[1], *out]


def _infer(node, shapes: dict, attrs: dict):
    """{output name: shape} of one com.microsoft node, or {} when its input shapes are unknown."""
    ins = list(node.input)
    op = node.op_type
    if op in ("QLinearAdd", "QLinearMul"):
        a, b = _known(shapes, ins[0]), _known(shapes, ins[3]) if len(ins) > 3 else None
        return {} if a is None or b is None else {node.output[0]: list(np.broadcast_shapes(tuple(a), tuple(b)))}
    if op in ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax"):
        x = _known(shapes, ins[0])
        return {} if x is None else {node.output[0]: list(x)}
    if op == "QLinearGlobalAveragePool":
        x = _known(shapes, ins[0])
        if x is None or len(x) < 3:
            return {}
        ones = [1] * (len(x) - 2)
        return {node.output[0]: [x[0], *ones, x[-1]] if attrs.get("channels_last", 0) else [x[0], x[1], *ones]}
    if op == "QLinearAveragePool":
        x = _known(shapes, ins[0])
        out = None if x is None or len(x) < 3 else _pool(node, x, attrs, attrs.get("channels_last", 0))
        return {} if out is None else {node.output[0]: out}
    if op == "QLinearConcat":  # Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input
        xs = [_known(shapes, ins[k]) for k in range(2, len(ins), 3)]
        if not xs or any(x is None for x in xs) or len({len(x) for x in xs}) != 1:
            return {}
        axis = attrs.get("axis", 0) % len(xs[0])
        out = list(xs[0])
        out[axis] = sum(x[axis] for x in xs)
        return {node.output[0]: out}
    if op == "QGemm":
        a, b = _known(shapes, ins[0]), _known(shapes, ins[3])
        if a is None or b is None or len(a) != 2 or len(b) != 2:
            return {}
        m = a[1] if attrs.get("transA", 0) else a[0]
        n = b[0] if attrs.get("transB", 0) else b[1]
        return {node.output[0]: [m, n]}
    if op == "DynamicQuantizeLSTM":  # X [seq, batch, input]; W [dirs, input, 4*hidden]
        x, w = _known(shapes, ins[0]), _known(shapes, ins[1])
        if x is None or w is None or len(x) != 3 or len(w) != 3:
            return {}
        dirs, hidden = w[0], w[2] // 4
        outs = [[x[0], dirs, x[1], hidden], [dirs, x[1], hidden], [dirs, x[1], hidden]]
        return {o: s for o, s in zip(node.output, outs) if o}
    return {}


def _elem_type(node, proto_types: dict, inits: dict) -> int:
    """The element type of a QLinear output: its zero point's (uint8 when absent); float32 otherwise."""
    zp = {"QLinearAdd": 7, "QLinearMul": 7, "QLinearSigmoid": 4, "QLinearLeakyRelu": 4, "QLinearSoftmax": 4,
          "QLinearGlobalAveragePool": 4, "QLinearAveragePool": 4, "QLinearConcat": 1, "QGemm": 8}.get(node.op_type)
    if zp is None:
        return TensorProto.FLOAT
    if zp >= len(node.input) or not node.input[zp]:
        return TensorProto.FLOAT if node.op_type == "QGemm" else TensorProto.UINT8  # QGemm without y: float
    name = node.input[zp]
    if name in inits:
        return inits[name].data_type
    return proto_types.get(name, TensorProto.UINT8)


def complete(proto: onnx.ModelProto) -> onnx.ModelProto:
    """proto (already through ONNX shape inference) with the shapes behind com.microsoft nodes filled in."""
    nodes = [n for n in proto.graph.node if n.domain == MS]
    if not nodes:
        return proto
    inits = {i.name: i for i in proto.graph.initializer}
    # declared shapes with symbolic extents (an export's dynamic axes) would stay symbolic when inference
    # merges what it learns behind these nodes: with every input static (pinned), let inference derive
    # them instead (with a dynamic input, the declared ranks are all there is)
    def static(v):
        tt = v.type.tensor_type
        return tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim)

    if all(static(v) for v in proto.graph.input if v.name not in inits):
        for v in [v for v in proto.graph.value_info if v.type.tensor_type.HasField("shape") and not static(v)]:
            proto.graph.value_info.remove(v)
    try:
        proto = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 (inference is best effort, as in the reader)
        pass
    for _ in range(len(nodes) + 1):
        shapes, types = {}, {}
        for v in list(proto.graph.input) + list(proto.graph.value_info) + list(proto.graph.output):
            tt = v.type.tensor_type
            if tt.HasField("shape"):
                shapes[v.name] = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
            types[v.name] = tt.elem_type
        for i in inits.values():
            shapes[i.name] = list(i.dims)
            types[i.name] = i.data_type
        added = False
        for n in nodes:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            for name, shape in _infer(n, shapes, attrs).items():
                if _known(shapes, name) is None:
                    for old in [v for v in proto.graph.value_info if v.name == name]:
                        proto.graph.value_info.remove(old)
                    proto.graph.value_info.append(
                        helper.make_tensor_value_info(name, _elem_type(n, types, inits), shape))
                    shapes[name] = shape
                    added = True
        if not added:
            return proto
        try:
            proto = onnx.shape_inference.infer_shapes(proto)
        except Exception:  # noqa: BLE001 (inference is best effort, as in the reader)
            return proto
    return proto


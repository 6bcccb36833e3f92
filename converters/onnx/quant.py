"""ONNX quantization as tensor annotations.

ONNX carries scales and zero points as operands of QuantizeLinear,
DequantizeLinear and the QLinear* ops. `annotate` copies them onto the
SourceTensors they describe (SourceTensor.quant), so every converter sees a
quantized tensor exactly as in TFLite and one converter serves the float,
QLinear and QDQ forms of an op (the QLinear ops list which inputs are data).
"""
from __future__ import annotations

import numpy as np

from nnapi.bias_scale import bias_scale

from ..source_graph import Quant, SourceError

# op -> (annotated tensors as (tensor position, scale position, zero-point position, is_output),
#        data input positions the plain converter reads)
QLINEAR = {
    "QLinearConv": ([(0, 1, 2, False), (3, 4, 5, False), (0, 6, 7, True)], (0, 3, 8)),
    "QLinearMatMul": ([(0, 1, 2, False), (3, 4, 5, False), (0, 6, 7, True)], (0, 3)),
    "QLinearAdd": ([(0, 1, 2, False), (3, 4, 5, False), (0, 6, 7, True)], (0, 3)),
    "QLinearMul": ([(0, 1, 2, False), (3, 4, 5, False), (0, 6, 7, True)], (0, 3)),
    "QLinearSigmoid": ([(0, 1, 2, False), (0, 3, 4, True)], (0,)),
    "QLinearAveragePool": ([(0, 1, 2, False), (0, 3, 4, True)], (0,)),
    "QLinearGlobalAveragePool": ([(0, 1, 2, False), (0, 3, 4, True)], (0,)),
    "QLinearLeakyRelu": ([(0, 1, 2, False), (0, 3, 4, True)], (0,)),
    "QGemm": ([(0, 1, 2, False), (3, 4, 5, False), (0, 7, 8, True)], (0, 3, 6)),
    "QuantizeLinear": ([(0, 1, 2, True)], (0,)),
    "DequantizeLinear": ([(0, 1, 2, False)], (0,)),
}


def _spec(node):
    """QLINEAR's entry for node; QLinearConcat's depends on its arity (Y_scale, Y_zero_point, then
    X, X_scale, X_zero_point per input)."""
    if node.op == "QLinearConcat":
        xs = range(2, len(node.inputs) - 2, 3)
        return [(k, k + 1, k + 2, False) for k in xs] + [(0, 0, 1, True)], tuple(xs)
    return QLINEAR.get(node.op)


def data_inputs(node) -> list:
    """The tensors a converter treats as the op's inputs (QLinear ops drop their scale/zp operands)."""
    spec = _spec(node)
    if spec is None:
        return list(node.inputs)
    return [node.inputs[k] if k < len(node.inputs) else -1 for k in spec[1]]


def runtime_parameter(graph, node):
    """(what, tensor name) of the first scale or zero point of a Q/DQ/QLinear node computed at run time,
    or None. Such a node has no NNAPI form (quantization is a property of an operand): it is left
    unannotated, and its converter refuses it (OnnxContext.convert_node)."""
    spec = _spec(node)
    for _, sp, zp, _ in (spec[0] if spec else ()):
        for pos, what in ((sp, "scale"), (zp, "zero point")):
            if pos < len(node.inputs) and node.inputs[pos] >= 0 and not graph.tensors[node.inputs[pos]].is_constant:
                return what, graph.tensors[node.inputs[pos]].name
    return None


def _const(graph, node, pos, what):
    """The constant tensor at input `pos` (None when absent)."""
    if pos >= len(node.inputs) or node.inputs[pos] < 0:
        return None
    t = graph.tensors[node.inputs[pos]]
    if not t.is_constant:
        raise SourceError(f"{node.label()}: {what} {t.name!r} must be a constant")
    if np.asarray(t.data).dtype.kind in "USOc":
        raise SourceError(f"{node.label()}: {what} {t.name!r} has element type {np.asarray(t.data).dtype}, "
                          f"not a number")
    return t


# no NNAPI operand stores a zero point beyond int32; anything beyond this is rejected before the int64 cast
# (which would wrap a huge uint64 silently, and warn on a float NaN, inf or one beyond int64)
ZERO_POINT_LIMIT = 2 ** 62


def _zero_points(node, t) -> np.ndarray:
    """The zero points of tensor t as int64; they must be integers (a float zero point, legal only for
    float8 types, must hold whole numbers)."""
    v = np.asarray(t.data).ravel()
    if v.dtype.kind == "f":
        v = v.astype(np.float64)
        if not np.isfinite(v).all():
            raise SourceError(f"{node.label()}: zero point {t.name!r} is not a finite number")
        if (v != np.floor(v)).any():
            bad = v[v != np.floor(v)][0]
            raise SourceError(f"{node.label()}: zero point {t.name!r} holds {bad:g}, not an integer")
    if v.size and (v.max() >= ZERO_POINT_LIMIT or v.min() <= -ZERO_POINT_LIMIT):
        bad = v.max() if v.max() >= ZERO_POINT_LIMIT else v.min()
        raise SourceError(f"{node.label()}: zero point {t.name!r} holds {bad:g}, far outside any quantized "
                          f"type's range")
    return v.astype(np.int64)


def _quant(graph, node, sp, zp, axis_attr, rank):
    scale_t = _const(graph, node, sp, "scale")
    if scale_t is None:
        raise SourceError(f"{node.label()}: scale input {sp} is absent")
    zero_t = _const(graph, node, zp, "zero point")
    zero = None if zero_t is None else zero_t.data
    with np.errstate(invalid="ignore"):  # a signaling NaN scale stays NaN (the converter reports it)
        scales = np.asarray(scale_t.data, np.float64).ravel()
    zeros = np.zeros(scales.shape, np.int64) if zero_t is None else _zero_points(node, zero_t)
    if scales.size == 1 and zeros.size == 1:
        return Quant((float(scales[0]),), (int(zeros[0]),)), (None if zero is None else zero.dtype)
    if isinstance(axis_attr, bool) or not isinstance(axis_attr, (int, np.integer)):
        raise SourceError(f"{node.label()}: axis attribute {axis_attr!r} is not an integer")
    if rank and not -rank <= axis_attr < rank:
        raise SourceError(f"{node.label()}: axis {axis_attr} is out of range for rank {rank}")
    if zeros.size not in (1, scales.size):
        raise SourceError(f"{node.label()}: {scales.size} scales but {zeros.size} zero points")
    axis = axis_attr % rank if rank else 0
    if zeros.size == 1:
        zeros = np.repeat(zeros, scales.size)
    return Quant(tuple(float(s) for s in scales), tuple(int(z) for z in zeros), axis), \
        (None if zero is None else zero.dtype)


def annotate(graph) -> None:
    """Set tensor.quant (and the quantized dtype) from Q/DQ/QLinear operands; biases get scale x scale."""
    for node in graph.nodes:
        spec = _spec(node)
        block = node.attrs.get("block_size", 0)
        if spec is not None and (isinstance(block, bool) or not isinstance(block, (int, np.integer))):
            raise SourceError(f"{node.label()}: block_size attribute {block!r} is not an integer")
        if spec is None or block or runtime_parameter(graph, node):
            continue  # blocked quantization (opset 21), run-time scales: the converter reports them
        ios, _ = spec
        for tpos, sp, zp, is_out in ios:
            tensors = node.outputs if is_out else node.inputs
            if tpos >= len(tensors) or tensors[tpos] < 0:
                continue
            t = graph.tensors[tensors[tpos]]
            axis = node.attrs.get("axis", 1) if node.op in ("QuantizeLinear", "DequantizeLinear") else 0
            q, zdtype = _quant(graph, node, sp, zp, axis, t.rank or 0)
            if is_out and zdtype is not None:
                t.dtype = np.dtype(zdtype)  # the zero point's type is the output's (also for com.microsoft ops)
            if t.quant is None:
                t.quant = q
        _infer_shape(graph, node)
        bias_at = {"QLinearConv": 8, "QGemm": 6}.get(node.op)  # int32, scale x_scale * w_scale
        if bias_at is not None and len(node.inputs) > bias_at and node.inputs[bias_at] >= 0:
            x, w = graph.tensors[node.inputs[0]].quant, graph.tensors[node.inputs[3]].quant
            b = graph.tensors[node.inputs[bias_at]]
            scales = tuple(float(s) for s in np.atleast_1d(bias_scale(x.scale, np.asarray(w.scales))))
            b.quant = Quant(scales, (0,) * len(scales), 0 if len(scales) > 1 else None)


def _infer_shape(graph, node) -> None:
    """Output shapes of the elementwise com.microsoft QLinear ops, which ONNX shape inference skips."""
    out = graph.tensors[node.outputs[0]]
    if out.shape is not None or node.op not in ("QLinearAdd", "QLinearMul", "QLinearSigmoid"):
        return
    shapes = [graph.tensors[node.inputs[k]].shape for k in _spec(node)[1]]
    if all(s is not None and -1 not in s for s in shapes):
        out.shape = tuple(np.broadcast_shapes(*shapes))

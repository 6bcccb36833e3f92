"""DynamicQuantizeLinear, MatMulInteger and ConvInteger of onnxruntime's dynamic quantization, in float32
holding the same integers (converters/onnx/dynamic.py); the float form of com.microsoft DynamicQuantizeLSTM
(dynamic_quant_lstm.py converts it)."""
from __future__ import annotations

import dataclasses

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op
from ..dynamic import INTEGER_OPS
from ..layout import NHWC
from .conv import conv2d
from .gemm import fully_connected
from .runtime_quant import RuntimeQuantizer


def _float_form(ctx, node, y: int) -> None:
    if np.dtype(ctx.tensor(y).dtype) != np.float32:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: only DynamicQuantizeLinear outputs read by "
                                               f"MatMulInteger/ConvInteger convert (in float)")


@onnx_op("DynamicQuantizeLinear", versions=(11, OPSET_MAX))
def dynamic_quantize_linear(node, ctx):
    """DynamicQuantizeLinear in float32 holding the uint8 values (y, y_zero_point) and y_scale, in
    onnxruntime's arithmetic (runtime_quant.py: its scale is 1 for an all-zero x, ties round to even)."""
    if len(node.outputs) != 3 or not node.inputs:
        raise Unsupported(Reason.INVALID, f"{node.label()}: DynamicQuantizeLinear has one input and three outputs")
    x, (y, s, zp) = node.inputs[0], node.outputs
    _float_form(ctx, node, y)
    shape = ctx.source_shape(x)
    if not shape or not all(shape):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: needs x's shape")
    q = RuntimeQuantizer(ctx, ctx.tensor(y).name)
    flat = q.temp((int(np.prod(shape)),), "flat")
    ctx.emit_form(Op.RESHAPE, "default", [flat], input=ctx.operand_as(x), shape=ctx.const(np.asarray([-1], np.int32)))
    zero_point = ctx.output(zp)
    if tuple(ctx.model.operands[zero_point].type.dimensions) != (1,):
        raise Unsupported(Reason.RANK, f"{node.label()}: y_zero_point is not a scalar")
    scale, zero_point = q.parameters(flat, (1,), "x", scale_out=ctx.output(s), zp_out=zero_point)
    xs = ctx.operand_as(x, ctx.perm_of(y))
    dims = ctx.model.operands[xs].type.dimensions
    q.op(Op.ADD, q.minus_zero_point(xs, dims, scale, zero_point, "y"), zero_point, dims, "y", ctx.output(y))


def small_integers(*arrays) -> bool:
    """8- or 16-bit integers: their differences are integers below 2^17, which float32 holds exactly."""
    return all(a.dtype.kind in "iu" and a.dtype.itemsize <= 2 for a in arrays)


def _minus_zero_point(ctx, node, w: int, zp_pos: int, axis: int, order: str = "K") -> np.ndarray:
    """Integer weights w minus their zero points (per tensor, or per slice along `axis`): float32 when both are
    8- or 16-bit integers (each difference is an integer below 2^17, which float32 holds exactly; the readers
    take float32, and a float64 copy of a large B is twice its size again), else float64; in memory `order`
    (numpy's: "F" lays a matrix out as its transpose's rows, FULLY_CONNECTED's weights, so no copy is made)."""
    data = ctx.const_value(w, "weights")
    has_zp = zp_pos < len(node.inputs) and node.inputs[zp_pos] >= 0
    zp = ctx.const_value(node.inputs[zp_pos], "weight zero point").ravel() if has_zp else np.zeros(1, data.dtype)
    dtype = np.float32 if small_integers(data, zp) else np.float64
    data = data.astype(dtype, order=order)
    if not has_zp:
        return data
    zp = zp.astype(dtype)
    if zp.size == 1:
        data -= zp[0]   # (in place: the same differences, one copy fewer)
        return data
    if zp.size != data.shape[axis]:
        raise Unsupported(Reason.INVALID, f"{node.label()}: {zp.size} weight zero points for "
                                          f"{data.shape[axis]} channels")
    shape = [1] * data.ndim
    shape[axis] = zp.size
    data -= zp.reshape(shape)
    return data


def _x_operand(ctx, node, x: int):
    """(tensor, operand) of ConvInteger's / MatMulInteger's A minus its zero point, in float32."""
    _float_form(ctx, node, x)
    zp_pos = INTEGER_OPS[node.op]
    zp = node.inputs[zp_pos] if zp_pos < len(node.inputs) else -1
    xs = ctx.operand_as(x, NHWC if node.op == "ConvInteger" else None)
    if zp < 0:
        return xs
    dims = ctx.model.operands[xs].type.dimensions
    out = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{ctx.tensor(x).name}/minus_zero_point")
    ctx.emit_form(Op.SUB, "default", [out], input1=xs, input2=ctx.operand(zp), fuse=ctx.i32(0))
    return out


@onnx_op("ConvInteger", versions=(10, OPSET_MAX))
def conv_integer(node, ctx):
    """ConvInteger of a DynamicQuantizeLinear output: the float Conv with weights w - w_zero_point."""
    if len(node.inputs) < 2 or len(ctx.source_shape(node.inputs[1]) or ()) != 4:
        raise Unsupported(Reason.RANK, f"{node.label()}: only 2-D convolutions map to NNAPI (4-D weights)")
    x = node.inputs[0]
    conv2d(node, ctx, x, node.inputs[1], -1, w_values=_minus_zero_point(ctx, node, node.inputs[1], 3, 0),
           x_operand=_x_operand(ctx, node, x))


@onnx_op("MatMulInteger", versions=(10, OPSET_MAX))
def matmul_integer(node, ctx):
    """MatMulInteger of a DynamicQuantizeLinear output by a constant 2-D B: FULLY_CONNECTED with float
    weights B - b_zero_point (per column)."""
    x, b = node.inputs[0], node.inputs[1]
    if not ctx.is_const(b) or len(ctx.source_shape(b)) != 2:
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: B must be a constant matrix")
    fully_connected(node, ctx, x, b, a_operand=_x_operand(ctx, node, x),
                    b_values=_minus_zero_point(ctx, node, b, 3, 1, order="F"))


def _dequantized_weight(ctx, node, k: int, scale_at: int, name: str) -> int:
    """A float32 constant tensor of DynamicQuantizeLSTM's quantized W or R ([dirs, rows, 4 * hidden],
    scales and zero points per direction or per direction and column) as ONNX LSTM's [dirs, 4 * hidden,
    rows]; made once per graph."""
    made = ctx.graph.__dict__.setdefault("_dequantized_lstm", {})
    key = (node.index, k)
    if key not in made:
        q = ctx.const_value(node.inputs[k], name)
        scale = ctx.const_value(node.inputs[scale_at], f"{name}_scale")
        zp_in = node.inputs[scale_at + 1] if scale_at + 1 < len(node.inputs) else -1
        zp = np.zeros(scale.shape, q.dtype) if zp_in < 0 else ctx.const_value(zp_in, f"{name}_zero_point")
        # float32 arithmetic gives the float64 result's float32 rounding when q - zp is an integer below 2^17 and
        # the scale a float32: their product (at most 41 significant bits) is exact in float64, and float32's
        # multiply rounds the same exact product once; half the memory of float64 on a large W
        dtype = np.float32 if small_integers(q, zp) and scale.dtype in (np.float32, np.float16) else np.float64
        q, scale, zp = q.astype(dtype), scale.astype(dtype), zp.astype(dtype)
        if q.ndim != 3 or scale.size not in (q.shape[0], q.shape[0] * q.shape[2]) or zp.size != scale.size:
            raise Unsupported(Reason.INVALID, f"{node.label()}: {name} {list(q.shape)} with {scale.size} scales "
                                              f"and {zp.size} zero points")
        shape = (q.shape[0], 1, 1 if scale.size == q.shape[0] else q.shape[2])
        q -= zp.reshape(shape)   # (in place: the same arithmetic, without two more copies of q)
        q *= scale.reshape(shape)
        values = np.ascontiguousarray(q.transpose(0, 2, 1), dtype=np.float32)
        src = ctx.graph.tensors[node.inputs[k]]
        values.flags.writeable = False
        made[key] = len(ctx.graph.tensors)
        ctx.graph.tensors.append(dataclasses.replace(src, index=made[key], name=f"{src.name}/dequantized",
                                                     dtype=np.dtype(np.float32), quant=None, data=values,
                                                     shape=values.shape))
    return made[key]


def float_lstm(ctx, node):
    """DynamicQuantizeLSTM as an ONNX LSTM node on the dequantized W and R (the float form: it does not round X
    and each step's h to uint8 as onnxruntime does, so each gate's pre-activation differs by at most
    (x_scale / 2) * sum|W row| + (h_scale / 2) * sum|R row| per step, compounding through the recurrence).
    dynamic_quant_lstm.py reads the node through it and falls back to it where float32 cannot hold the
    integer products."""
    ins = list(node.inputs) + [-1] * (12 - len(node.inputs))
    return dataclasses.replace(node, op="LSTM", domain="", version=14,
                               inputs=[ins[0], _dequantized_weight(ctx, node, 1, 8, "W"),
                                       _dequantized_weight(ctx, node, 2, 10, "R"), *ins[3:8]])

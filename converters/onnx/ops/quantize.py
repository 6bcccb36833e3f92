"""QuantizeLinear -> QUANTIZE, DequantizeLinear -> DEQUANTIZE (per tensor; scales and zero points are
on the tensors, see quant.py). Inside a QDQ group they emit nothing (fusion.py)."""
from __future__ import annotations

import math

import numpy as np

from nnapi import OperationCode as Op

from ...folding import folder
from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op


@onnx_op("QuantizeLinear", "DequantizeLinear", versions=(10, OPSET_MAX))
def quantize(node, ctx):
    """QuantizeLinear / DequantizeLinear as QUANTIZE / DEQUANTIZE."""
    x, y = node.inputs[0], node.outputs[0]
    if node.attrs.get("block_size", 0):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: blocked quantization")
    q = ctx.tensor(y if node.op == "QuantizeLinear" else x).quant
    if q is not None and q.per_channel and node.op == "QuantizeLinear":
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: per-axis QuantizeLinear")
    code = Op.QUANTIZE if node.op == "QuantizeLinear" else Op.DEQUANTIZE
    ctx.emit_form(code, "default", [ctx.output(y)], input=ctx.operand(x))


@folder("onnx", "DequantizeLinear", how="dequantize of weights")
def dequantize_constant(node, ctx) -> list:
    """A DequantizeLinear of a constant (weights, int32 biases) is a float constant: a float consumer reads
    it as such, and a QDQ core reads the quantized constant behind it (fusion.py) either way."""
    ins = [node.inputs[k] if k < len(node.inputs) else -1 for k in range(3)]
    if node.attrs.get("block_size", 0) or not all(i < 0 or ctx.is_const(i) for i in ins) or ins[1] < 0:
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: an input is computed at run time")
    x = np.asarray(ctx.tensor(ins[0]).data)
    scale = np.asarray(ctx.tensor(ins[1]).data)
    zero = np.zeros((), np.int64) if ins[2] < 0 else np.asarray(ctx.tensor(ins[2]).data)
    if x.dtype.kind not in "iub" or scale.dtype.kind != "f":
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: not an integer-to-float dequantization")
    if scale.size > 1:  # per axis: scales and zero points along `axis`
        shape = [1] * x.ndim
        shape[node.attrs.get("axis", 1) % x.ndim] = scale.size
        scale, zero = scale.reshape(shape), zero.reshape(shape if zero.size > 1 else ())
    # as onnxruntime: the integer difference rounded to the scale's type, then one product in that type
    return [(x.astype(np.int64) - zero.astype(np.int64)).astype(scale.dtype) * scale]


FLOAT32_MAX = 3.4028234663852886e38


def check_bias_scale(ctx, node, x: int, w: int) -> None:
    """A quantized conv/matmul's bias has scale input scale x weight scale, stored as float32: refuse
    finite scales whose product is beyond float32 (the bias scale would be inf). Non-finite or
    non-positive scales are left to the operand checks, which name the operand."""
    xq, wq = ctx.tensor(x).quant, ctx.tensor(w).quant
    if xq is None or wq is None:
        return
    for ws in wq.scales:
        if math.isfinite(xq.scale) and math.isfinite(ws) and abs(xq.scale * ws) > FLOAT32_MAX:
            raise Unsupported(Reason.QUANTIZATION_TYPE,
                              f"{node.label()}: bias scale = scale of {ctx.tensor(x).name!r} ({xq.scale:g}) x scale "
                              f"of {ctx.tensor(w).name!r} ({ws:g}) overflows float32")

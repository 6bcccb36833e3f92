"""QuantizeLinear -> QUANTIZE, DequantizeLinear -> DEQUANTIZE (per tensor; scales and zero points are
on the tensors, see quant.py). Inside a QDQ group they emit nothing (fusion.py)."""
from __future__ import annotations

import math

from nnapi import OperationCode as Op

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

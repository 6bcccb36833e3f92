"""QuantizeLinear -> QUANTIZE, DequantizeLinear -> DEQUANTIZE (per tensor; scales and zero points are
on the tensors, see quant.py). Inside a QDQ group they emit nothing (fusion.py)."""
from __future__ import annotations

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

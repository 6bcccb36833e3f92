"""Variadic elementwise ops: Sum, Mean, Max, Min of one or more broadcasting inputs.

N inputs become a left-to-right chain of N-1 binary NNAPI ops (ADD / MAXIMUM / MINIMUM), each partial
result shaped as the broadcast of the inputs so far; Mean is the Sum times 1/N. A single input is the
identity. A Relu/Clip after a Sum of two or more inputs becomes the last ADD's FuseCode (fusion.py).
Element types: Sum and Mean float32 and float16 (ONNX defines them for floats only; another type is
refused), Sum also quantized in a QDQ group; Max and Min float32, float16, int32 (feature level 3) and
quantized in a QDQ group (the partial results take the output's quantization, which ADD, MAXIMUM and
MINIMUM allow to differ from the inputs')."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperationCode as Op
from nnapi.ops.inference import broadcast_shapes

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op
from .compose import Chain
from .elementwise import broadcast_inputs

CHAINED = {"Sum": Op.ADD, "Mean": Op.ADD, "Max": Op.MAXIMUM, "Min": Op.MINIMUM}
FLOAT_CODES = (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16)


@onnx_op("Sum", "Mean", "Max", "Min", versions=(6, OPSET_MAX))
def variadic(node, ctx):
    """Chains of ADD (Sum; Mean then MUL by 1/N), MAXIMUM (Max), MINIMUM (Min); one input is the identity."""
    ins = [i for i in node.inputs if i >= 0]
    y = node.outputs[0]
    if not ins:
        raise Unsupported(Reason.INVALID, f"{node.label()}: {node.op} has no inputs")
    c = Chain(ctx, node, y)
    quantized = ctx.quantized_core(node.index)
    if node.op in ("Sum", "Mean") and c.code not in FLOAT_CODES and not (quantized and node.op == "Sum"):
        raise Unsupported(Reason.OPERAND_TYPE if ctx.tensor(y).quant is None else Reason.QUANTIZATION_TYPE,
                          f"{node.label()}: {node.op} of {c.code.name} tensors (ONNX defines it for floats)")
    if len(ins) == 1:
        ctx.forward(ins[0], y)
        return
    operands = broadcast_inputs(node, ctx, ins)
    code = CHAINED[node.op]
    acc, dims = operands[0], ctx.model.operands[operands[0]].type.dimensions
    last = len(operands) - 1
    for k, nxt in enumerate(operands[1:], 1):
        dims = broadcast_shapes(dims, ctx.model.operands[nxt].type.dimensions)
        named = {"input1": acc, "input2": nxt}
        if k == last and node.op == "Sum":
            fuse, out = ctx.fused_output(node)
            ctx.emit_form(code, "default", [out], fuse=fuse, **named)
            return
        dst = ctx.output(y) if k == last and node.op != "Mean" else c.temp(dims=dims)
        acc = c.op(code, dst, **named)
    if node.op == "Mean":
        c.binary(Op.MUL, acc, c.scalar(1.0 / len(operands)), out=ctx.output(y))

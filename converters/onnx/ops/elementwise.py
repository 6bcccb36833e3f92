"""Broadcasting binary ops: Add, Sub, Mul, Div (FuseCode), Pow, PRelu, Min, Max; QLinearAdd,
QLinearMul (com.microsoft) and QDQ Add/Mul as the quantized ADD/MUL."""
from __future__ import annotations

from nnapi import OperandCode as C, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import MS_DOMAIN_VERSIONS, OPSET_MAX, onnx_op
from ..quant import data_inputs
from .compare import truncated_div

ARITHMETIC = {"Add": Op.ADD, "Sub": Op.SUB, "Mul": Op.MUL, "Div": Op.DIV, "QLinearAdd": Op.ADD,
              "QLinearMul": Op.MUL}
# ops without a FuseCode: (NNAPI op, its two argument names)
PLAIN = {"Pow": (Op.POW, "base", "exponent"), "PRelu": (Op.PRELU, "input", "alpha"),
         "Min": (Op.MINIMUM, "input1", "input2"), "Max": (Op.MAXIMUM, "input1", "input2")}


def _inputs(node, ctx, tensors):
    """Operands of the inputs, in the output's layout."""
    out = node.outputs[0]
    perm, rank = ctx.perm_of(out), len(ctx.source_shape(out))
    return [ctx.broadcast_operand(i, perm, rank) for i in tensors]


@onnx_op("Add", "Sub", "Mul", "Div", versions=(7, OPSET_MAX))
def arithmetic(node, ctx):
    """Broadcasting ADD/SUB/MUL/DIV; a following Relu/Clip becomes the FuseCode."""
    a, b = _inputs(node, ctx, node.inputs[:2])
    if node.op == "Div" and ctx.model.operands[a].type.code == C.TENSOR_INT32:  # ONNX truncates, NNAPI floors
        truncated_div(node, ctx, a, b)
        return
    fuse, out = ctx.fused_output(node)
    ctx.emit_form(ARITHMETIC[node.op], "default", [out], input1=a, input2=b, fuse=fuse)


@onnx_op("QLinearAdd", "QLinearMul", versions=MS_DOMAIN_VERSIONS)
def qlinear_arithmetic(node, ctx):
    """com.microsoft QLinearAdd / QLinearMul as quantized ADD / MUL."""
    a, b = _inputs(node, ctx, data_inputs(node))
    fuse, out = ctx.fused_output(node)
    ctx.emit_form(ARITHMETIC[node.op], "default", [out], input1=a, input2=b, fuse=fuse)


@onnx_op("Pow", "PRelu", "Min", "Max", versions=(7, OPSET_MAX))
def plain_binary(node, ctx):
    """POW, PRELU, MINIMUM, MAXIMUM (Min/Max of more than two inputs as a chain)."""
    code, first, second = PLAIN[node.op]
    ins = [i for i in node.inputs if i >= 0]
    if len(ins) < 2:
        raise Unsupported(Reason.INVALID, f"{node.label()}: needs two inputs for {code.name}")
    operands = _inputs(node, ctx, ins)
    out = ctx.output(node.outputs[0])
    acc = operands[0]
    for k, nxt in enumerate(operands[1:], 1):
        dst = out if k == len(operands) - 1 else ctx.temp_like(node.outputs[0], f"partial{k}")
        ctx.emit_form(code, "default", [dst], **{first: acc, second: nxt})
        acc = dst

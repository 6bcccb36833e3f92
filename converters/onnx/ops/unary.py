"""Elementwise unary math (Floor, Abs, Exp, Log, Neg, Sin, Sqrt), Cast, and the ops that vanish
(Identity, Dropout in inference)."""
from __future__ import annotations

from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op

MATH = {"Floor": Op.FLOOR, "Abs": Op.ABS, "Exp": Op.EXP, "Log": Op.LOG, "Neg": Op.NEG, "Sin": Op.SIN,
        "Sqrt": Op.SQRT}


@onnx_op(*MATH, versions=(7, OPSET_MAX))
def math(node, ctx):
    """FLOOR, ABS, EXP, LOG, NEG, SIN, SQRT."""
    ctx.emit_form(MATH[node.op], "default", [ctx.output(node.outputs[0])], input=ctx.operand(node.inputs[0]))


@onnx_op("Identity", versions=(7, OPSET_MAX))
def identity(node, ctx):
    """Identity: the output is the input operand (a RESHAPE copy when it is a graph output)."""
    ctx.forward(node.inputs[0], node.outputs[0])


@onnx_op("Dropout", versions=(7, OPSET_MAX))
def dropout(node, ctx):
    """Dropout in inference is the identity; its mask output has no NNAPI counterpart."""
    mask = node.outputs[1] if len(node.outputs) > 1 else -1
    if mask >= 0 and (mask in ctx.graph.outputs or any(mask in n.inputs for n in ctx.graph.nodes)):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: the mask output is used")
    if len(node.inputs) > 2 and node.inputs[2] >= 0:
        mode = ctx.const_value(node.inputs[2], "training_mode")
        if bool(mode.reshape(-1)[0]):
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: training_mode=True is random")
    ctx.forward(node.inputs[0], node.outputs[0])


@onnx_op("Cast", versions=(7, OPSET_MAX))
def cast(node, ctx):
    """Cast as CAST (feature level 3); a cast to the same NNAPI type is the identity."""
    x, y = node.inputs[0], node.outputs[0]
    if ctx.nnapi_type(ctx.resolve(x))[0].code == ctx.nnapi_type(ctx.resolve(y))[0].code and not ctx.is_const(x):
        ctx.forward(x, y)
        return
    ctx.emit_form(Op.CAST, "default", [ctx.output(y)], input=ctx.operand(x))

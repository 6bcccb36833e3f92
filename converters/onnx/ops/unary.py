"""Elementwise unary math (Floor, Abs, Exp, Log, Neg, Sin, Sqrt), Cast, and the ops that vanish
(Identity, Dropout in inference)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
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
    """Cast as CAST (level 3), the identity to the same type; bool: SELECT(x, 1, 0) from it, NOT_EQUAL(x, 0) to it.

    NNAPI CAST has no bool form. SELECT does not broadcast, so its 1 and 0 are constants of the output's
    (static) shape; NOT_EQUAL(x, 0) makes NaN true, as ONNX does."""
    x, y = node.inputs[0], node.outputs[0]
    src, dst = ctx.nnapi_type(ctx.resolve(x))[0].code, ctx.nnapi_type(ctx.resolve(y))[0].code
    if src == dst and not ctx.is_const(x):
        ctx.forward(x, y)
        return
    if C.TENSOR_BOOL8 in (src, dst):
        _cast_bool(node, ctx, x, y, src == C.TENSOR_BOOL8)
        return
    ctx.emit_form(Op.CAST, "default", [ctx.output(y)], input=ctx.operand(x))


def _cast_bool(node, ctx, x: int, y: int, from_bool: bool) -> None:
    """Cast between bool and a number type, compared or selected on the stored values (a quantized tensor's
    stored value is not its ONNX value, so those are refused)."""
    number = y if from_bool else x
    if ctx.tensor(number).quant is not None:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: Cast between bool and quantized "
                                               f"{ctx.tensor(number).name!r}")
    otype = ctx.nnapi_type(ctx.resolve(number))[0]
    if not from_bool:
        zero = ctx.const(np.zeros(1, otype.dtype), otype.code, scale=otype.scale, zero_point=otype.zero_point)
        ctx.emit_form(Op.NOT_EQUAL, "default", [ctx.output(y)], input1=ctx.operand(x), input2=zero)
        return
    out = ctx.output(y)
    dims = ctx.model.operands[out].type.dimensions
    if not dims or 0 in dims:  # SELECT does not broadcast: its 1 and 0 need the output's shape
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: Cast from bool needs the static shape of "
                                                f"{ctx.tensor(y).name!r}, has {list(dims)}")
    one, zero = (ctx.const(np.full(dims, v, otype.dtype), otype.code, scale=otype.scale, zero_point=otype.zero_point)
                 for v in (1, 0))
    ctx.emit_form(Op.SELECT, "default", [out], condition=ctx.operand_as(x, ctx.perm_of(y)), input1=one, input2=zero)

"""Comparisons, logic, Where and Mod: Equal, Less, Greater, LessOrEqual, GreaterOrEqual (EQUAL, LESS, ...),
And, Or, Xor, Not (LOGICAL_AND, LOGICAL_OR, NOT_EQUAL on bools, LOGICAL_NOT), Where (SELECT, operands
broadcast first: SELECT does not broadcast), IsNaN (NOT_EQUAL(x, x): only NaN differs from itself), IsInf
(EQUAL with an infinity, of ABS(x) when both signs count), Mod with fmod=0 on int32 (a - b * floor(a / b); NNAPI's
int32 DIV rounds toward negative infinity), and the truncating int32 Div ONNX specifies (used by
elementwise.py). All feature level 3 (int32 Mod and Div: 4)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op
from .compose import Chain, broadcast_to, known_shape, require_float

BINARY = {"Equal": Op.EQUAL, "Less": Op.LESS, "Greater": Op.GREATER, "LessOrEqual": Op.LESS_EQUAL,
          "GreaterOrEqual": Op.GREATER_EQUAL, "And": Op.LOGICAL_AND, "Or": Op.LOGICAL_OR, "Xor": Op.NOT_EQUAL}
# first opset of each op's present form (Equal/Less/Greater changed types at 7; *OrEqual appeared at 12)
FIRST = {"LessOrEqual": 12, "GreaterOrEqual": 12}


def operands(node, ctx, tensors):
    """Operands of broadcasting inputs in the output's layout."""
    out = node.outputs[0]
    perm, rank = ctx.perm_of(out), len(ctx.source_shape(out))
    return [ctx.broadcast_operand(i, perm, rank) for i in tensors]


def _binary(node, ctx):
    """Broadcasting comparison / logic op with a bool output."""
    if node.op in ("And", "Or", "Xor"):
        for i in node.inputs[:2]:
            if ctx.nnapi_type(ctx.resolve(i))[0].code != C.TENSOR_BOOL8:
                raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: input {ctx.tensor(i).name!r} is not bool")
    a, b = operands(node, ctx, node.inputs[:2])
    ctx.emit_form(BINARY[node.op], "default", [ctx.output(node.outputs[0])], input1=a, input2=b)


for _op in BINARY:
    onnx_op(_op, versions=(FIRST.get(_op, 7), OPSET_MAX))(_binary)


@onnx_op("Not", versions=(1, OPSET_MAX))
def logical_not(node, ctx):
    """LOGICAL_NOT."""
    ctx.emit_form(Op.LOGICAL_NOT, "default", [ctx.output(node.outputs[0])], input=ctx.operand(node.inputs[0]))


@onnx_op("IsNaN", versions=(9, OPSET_MAX))
def is_nan(node, ctx):
    """NOT_EQUAL(x, x): true exactly where x is NaN (float tensors)."""
    x = node.inputs[0]
    require_float(ctx, node, x)
    src = ctx.operand(x)
    ctx.emit_form(Op.NOT_EQUAL, "default", [ctx.output(node.outputs[0])], input1=src, input2=src)


@onnx_op("IsInf", versions=(10, OPSET_MAX))
def is_inf(node, ctx):
    """IsInf as EQUAL(x, +inf), EQUAL(x, -inf), or EQUAL(ABS(x), +inf) for both signs (float tensors).

    With neither sign detected, EQUAL with NaN: false everywhere."""
    x, y = node.inputs[0], node.outputs[0]
    require_float(ctx, node, x)
    pos, neg = bool(node.attrs.get("detect_positive", 1)), bool(node.attrs.get("detect_negative", 1))
    c, src = Chain(ctx, node, x), ctx.operand(x)
    if pos and neg:
        src = c.unary(Op.ABS, src)
    c.binary(Op.EQUAL, src, c.scalar(np.inf if pos else -np.inf if neg else np.nan), out=ctx.output(y))


@onnx_op("Where", versions=(9, OPSET_MAX))
def where(node, ctx):
    """SELECT(condition, x, y) with each input broadcast to the output's shape (constants materialised,
    run-time tensors TILEd)."""
    y = node.outputs[0]
    shape = known_shape(ctx, node, y)
    perm = ctx.perm_of(y)
    cond, a, b = (broadcast_to(ctx, node, i, shape, perm) for i in node.inputs[:3])
    ctx.emit_form(Op.SELECT, "default", [ctx.output(y)], condition=cond, input1=a, input2=b)


@onnx_op("Mod", versions=(10, OPSET_MAX))
def mod(node, ctx):
    """fmod=0 on int32: a - b * DIV(a, b) (floor division: the result takes the divisor's sign, as ONNX's
    integer Mod does). Float Mod and fmod=1 are reported: a / b rounds, so no composition is exact."""
    if node.attrs.get("fmod", 0):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: fmod=1 (truncated remainder) is not mapped")
    c = Chain(ctx, node, node.outputs[0])
    if c.code != C.TENSOR_INT32:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: Mod of {c.code.name} is not exact in NNAPI "
                                               f"(only int32 with fmod=0)")
    a, b = operands(node, ctx, node.inputs[:2])
    q = c.binary(Op.DIV, a, b)
    c.binary(Op.SUB, a, c.binary(Op.MUL, b, q), out=ctx.output(node.outputs[0]))


def truncated_div(node, ctx, a: int, b: int) -> None:
    """int32 a / b rounded toward zero (ONNX) from NNAPI's floor division: q + 1 where the remainder is
    non-zero and the signs of a and b differ."""
    c = Chain(ctx, node, node.outputs[0])
    q = c.binary(Op.DIV, a, b)
    r = c.binary(Op.SUB, a, c.binary(Op.MUL, b, q))
    zero, flag = c.scalar(0), C.TENSOR_BOOL8
    signs = c.binary(Op.NOT_EQUAL, c.binary(Op.LESS, a, zero, out_code=flag, out=c.temp(flag, _dims(ctx, a))),
                     c.binary(Op.LESS, b, zero, out_code=flag, out=c.temp(flag, _dims(ctx, b))), out_code=flag)
    inexact = c.binary(Op.NOT_EQUAL, r, zero, out_code=flag)
    c.select(c.binary(Op.LOGICAL_AND, inexact, signs, out_code=flag), c.binary(Op.ADD, q, c.scalar(1)), q,
             out=ctx.output(node.outputs[0]))


def _dims(ctx, operand: int) -> tuple:
    return tuple(ctx.model.operands[operand].type.dimensions)

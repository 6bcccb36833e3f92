"""Broadcasting binary ops: Add, Sub, Mul, Div (FuseCode), Pow, PRelu; QLinearAdd, QLinearMul
(com.microsoft) and QDQ Add/Mul as the quantized ADD/MUL. (Min, Max, Sum, Mean: variadic.py.)"""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import MS_DOMAIN_VERSIONS, OPSET_MAX, onnx_op
from ..quant import data_inputs
from .compare import truncated_div
from .compose import Chain

ARITHMETIC = {"Add": Op.ADD, "Sub": Op.SUB, "Mul": Op.MUL, "Div": Op.DIV, "QLinearAdd": Op.ADD,
              "QLinearMul": Op.MUL}
def broadcast_inputs(node, ctx, tensors):
    """Operands of the inputs, in the output's layout."""
    out = node.outputs[0]
    perm, rank = ctx.perm_of(out), len(ctx.source_shape(out))
    return [ctx.broadcast_operand(i, perm, rank) for i in tensors]


@onnx_op("Add", "Sub", "Mul", "Div", versions=(7, OPSET_MAX))
def arithmetic(node, ctx):
    """Broadcasting ADD/SUB/MUL/DIV; a following Relu/Clip becomes the FuseCode."""
    a, b = broadcast_inputs(node, ctx, node.inputs[:2])
    if node.op == "Div" and ctx.model.operands[a].type.code == C.TENSOR_INT32:  # ONNX truncates, NNAPI floors
        truncated_div(node, ctx, a, b)
        return
    fuse, out = ctx.fused_output(node)
    ctx.emit_form(ARITHMETIC[node.op], "default", [out], input1=a, input2=b, fuse=fuse)


@onnx_op("QLinearAdd", "QLinearMul", versions=MS_DOMAIN_VERSIONS)
def qlinear_arithmetic(node, ctx):
    """com.microsoft QLinearAdd / QLinearMul as quantized ADD / MUL."""
    a, b = broadcast_inputs(node, ctx, data_inputs(node))
    fuse, out = ctx.fused_output(node)
    ctx.emit_form(ARITHMETIC[node.op], "default", [out], input1=a, input2=b, fuse=fuse)


@onnx_op("PRelu", versions=(7, OPSET_MAX))
def prelu(node, ctx):
    """PRELU; the slope broadcasts unidirectionally (a constant [C, 1, 1] slope follows an NHWC input)."""
    x, slope = broadcast_inputs(node, ctx, node.inputs[:2])
    ctx.emit_form(Op.PRELU, "default", [ctx.output(node.outputs[0])], input=x, alpha=slope)


@onnx_op("Pow", versions=(7, OPSET_MAX))
def power(node, ctx):
    """POW; a constant exponent 1, 2, 3, 0.5, -1 as identity, MUL, SQRT, DIV; int32 bases as MULs.

    A constant exponent that is one value e: 1 is the identity, 2 and 3 are MULs (exact, feature
    level 1; int32 at level 4), 0.5 is SQRT, -1 is DIV 1 / x; int32 bases take other integer exponents in
    [0, 64] as MULs by repeated squaring (exact, wrapping; 0 as x * 0 + 1). Anything else on float tensors
    is POW (feature level 3) with the exponent in the base's type (a run-time int32 exponent through CAST)."""
    x, e, y = node.inputs[0], node.inputs[1], node.outputs[0]
    c = Chain(ctx, node, y)
    if ctx.is_const(e):
        values = np.asarray(ctx.const_value(e, "exponent"))
        if values.size and np.all(values == values.ravel()[0]) and ctx.source_shape(x) == ctx.source_shape(y):
            if _power_by_value(ctx, c, node, float(values.ravel()[0])):
                return
    if c.code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16):
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: Pow of {c.code.name} tensors needs a constant "
                                               f"non-negative integer exponent up to 64 (NNAPI POW is float only)")
    base, = broadcast_inputs(node, ctx, [x])
    if ctx.is_const(e):
        exponent = _exponent_const(ctx, c, e, y)
    elif ctx.nnapi_type(ctx.resolve(e))[0].code == c.code:
        exponent, = broadcast_inputs(node, ctx, [e])
    elif ctx.nnapi_type(ctx.resolve(e))[0].code == C.TENSOR_INT32:  # integer exponents: CAST is exact
        exponent, = broadcast_inputs(node, ctx, [e])
        dims = ctx.model.operands[exponent].type.dimensions
        exponent = c.op(Op.CAST, c.temp(dims=dims), input=exponent)
    else:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: run-time exponent {ctx.tensor(e).name!r} is not "
                                               f"{c.code.name} like the base")
    ctx.emit_form(Op.POW, "default", [ctx.output(y)], base=base, exponent=exponent)


def _power_by_value(ctx, c, node, value: float) -> bool:
    """Emit x ** value as exact ops when there is such a form; False when POW is needed."""
    x, y = node.inputs[0], node.outputs[0]
    src = ctx.operand(x)
    if value == 1:
        ctx.forward(x, y)
        return True
    if c.code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32):
        return False  # (quantized MUL rescales: not a power)
    if c.code == C.TENSOR_INT32 and value.is_integer() and 2 <= value <= 64 or value in (2, 3):
        _integer_power(c, src, int(value), ctx.output(y))
        return True
    if c.code == C.TENSOR_INT32:
        if value != 0:
            return False
        c.binary(Op.ADD, c.binary(Op.MUL, src, c.scalar(0)), c.scalar(1), out=ctx.output(y))  # x ** 0 == 1
        return True
    if value == 0.5:
        c.unary(Op.SQRT, src, out=ctx.output(y))
        return True
    if value == -1:
        c.binary(Op.DIV, c.scalar(1.0), src, out=ctx.output(y))
        return True
    return False


def _exponent_const(ctx, c, e: int, y: int) -> int:
    """Constant exponent e in the base's element type, laid out for output y (numpy broadcasting)."""
    data = np.asarray(ctx.const_value(e, "exponent")).astype(np.float16 if c.code == C.TENSOR_FLOAT16 else np.float32)
    perm, rank = ctx.perm_of(y), len(ctx.source_shape(y))
    if perm is not None and data.size > 1:
        data = np.transpose(data.reshape((1,) * (rank - data.ndim) + data.shape), perm)
    return ctx.const(np.ascontiguousarray(data.reshape(data.shape or (1,))), c.code)


def _integer_power(c, src: int, n: int, out: int) -> None:
    """out = src ** n (n >= 2) as MULs by repeated squaring (x ** 3 is (x * x) * x)."""
    result, square = None, src
    while True:
        if n & 1:
            result = square if result is None else c.binary(Op.MUL, result, square, out=out if n == 1 else None)
        n >>= 1
        if not n:
            return
        square = c.binary(Op.MUL, square, square, out=out if n == 1 and result is None else None)

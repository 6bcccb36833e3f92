"""Emission helpers shared by the elementwise converter families (activation,
unary*, compare): typed constants and temporaries, negation, requantization,
broadcasting by materialization, and the float detour for quantized tensors.
Registers no converter."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from nnapi import FuseCode, OperandCode as C, OperandType, OperationCode as Op
from nnapi.ops import level_for

from ...context import broadcast_data
from ...registry import Reason, Unsupported
from .common import name, otype

F32, F16, I32, B8 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32, C.TENSOR_BOOL8
Q8, Q8S = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED
FLOATS = (F32, F16)
QUANT8 = (Q8, Q8S)
DTYPES = {F32: np.float32, F16: np.float16, I32: np.int32, Q8: np.uint8, Q8S: np.int8, B8: np.bool_}
# the float detour's level: QUANTIZE (its end); NEG, MAXIMUM, comparisons and SELECT come with it
FLOAT_LEVEL = level_for(Op.QUANTIZE)
_FUSED = (Op.ADD, Op.SUB, Op.MUL, Op.DIV)

# a body emits the float (or native) computation of `out` from operand indexes `xs`
Body = Callable[[object, Sequence[int], int], None]


def is_quantized(ctx, i: int) -> bool:
    t = ctx.tensor(i)
    return t.quant is not None and np.dtype(t.dtype) in (np.dtype(np.uint8), np.dtype(np.int8))


def same_quant(ctx, *tensors: int) -> bool:
    """All tensors share scale(s) and zero point(s) (or all are unquantized)."""
    qs = {None if q is None else (q.scales, q.zero_points) for q in (ctx.tensor(i).quant for i in tensors)}
    return len(qs) == 1


def static_dims(ctx, operand: int, what: str) -> tuple:
    dims = otype(ctx, operand).dimensions
    if not dims or 0 in dims:
        raise Unsupported(Reason.DYNAMIC_SHAPE,
                          f"{what} needs the static shape of {ctx.model.operands[operand].name!r}")
    return tuple(dims)


def temp(ctx, like: int, suffix: str, code: Optional[C] = None, dims: Optional[tuple] = None) -> int:
    """A temporary with `like`'s type (optionally another code / shape; quantization kept)."""
    t = otype(ctx, like)
    code = t.code if code is None else code
    scale, zp = (t.scale, t.zero_point) if code in QUANT8 else (0.0, 0)
    label = f"{ctx.model.operands[like].name}/{suffix}"
    return ctx.temp(OperandType(code, t.dimensions if dims is None else dims, scale, zp), label)


def const_like(ctx, value, like: int, shape: tuple = (1,), code: Optional[C] = None) -> int:
    """A constant of `like`'s type holding `value` everywhere (quantized: value must be representable)."""
    t = otype(ctx, like)
    code = t.code if code is None else code
    if code in QUANT8:
        stored = round(value / t.scale) + t.zero_point
        lo, hi = np.iinfo(DTYPES[code]).min, np.iinfo(DTYPES[code]).max
        if not lo <= stored <= hi or (stored - t.zero_point) * t.scale != value:
            raise Unsupported(Reason.QUANTIZATION_TYPE, f"{value} is not exactly representable with the "
                                                        f"quantization of {ctx.model.operands[like].name!r}")
        return ctx.const(np.full(shape, stored, DTYPES[code]), code, scale=t.scale, zero_point=t.zero_point)
    return ctx.const(np.full(shape, value, DTYPES[code]), code)


def emit(ctx, op: Op, inputs: Sequence[int], out: int, fuse: FuseCode = FuseCode.NONE) -> int:
    """One NNAPI elementwise operation by its spec's argument names; returns `out`."""
    if op in _FUSED:
        ctx.emit_form(op, "default", [out], input1=inputs[0], input2=inputs[1], fuse=ctx.i32(fuse))
    elif op is Op.POW:
        ctx.emit_form(op, "default", [out], base=inputs[0], exponent=inputs[1])
    elif op is Op.SELECT:
        ctx.emit_form(op, "default", [out], condition=inputs[0], input1=inputs[1], input2=inputs[2])
    elif op is Op.PRELU:
        ctx.emit_form(op, "default", [out], input=inputs[0], alpha=inputs[1])
    elif len(inputs) == 2:
        ctx.emit_form(op, "default", [out], input1=inputs[0], input2=inputs[1])
    else:
        ctx.emit_form(op, "default", [out], input=inputs[0])
    return out


def step(ctx, op: Op, inputs: Sequence[int], like: int, suffix: str, code=None,
         fuse: FuseCode = FuseCode.NONE) -> int:
    """Emit `op` into a new temporary shaped like `like`; returns the temporary."""
    return emit(ctx, op, inputs, temp(ctx, like, suffix, code), fuse)


def dequantize(ctx, x: int) -> int:
    return step(ctx, Op.DEQUANTIZE, [x], x, "dequantized", F32)


def negate(ctx, x: int, out: int) -> int:
    """-x: NEG from feature level 3, else the exact MUL(x, -1) (floats)."""
    if ctx.feature_level >= FLOAT_LEVEL or otype(ctx, x).code not in FLOATS:
        return emit(ctx, Op.NEG, [x], out)
    return emit(ctx, Op.MUL, [x, const_like(ctx, -1.0, x)], out)


def requantize(ctx, x: int, out: int, fuse: FuseCode = FuseCode.NONE) -> int:
    """x re-expressed in out's quantization (clamped by `fuse`): ADD(x, 0) when the codes agree
    (feature level 1), else DEQUANTIZE + QUANTIZE."""
    if otype(ctx, x).code == otype(ctx, out).code:
        return emit(ctx, Op.ADD, [x, const_like(ctx, 0.0, x)], out, fuse)
    if fuse != FuseCode.NONE:
        raise ValueError("a fused clamp needs the ADD requantization (same operand codes)")
    return emit(ctx, Op.QUANTIZE, [dequantize(ctx, x)], out)


def broadcast(ctx, x: int, dims: tuple, what: str) -> int:
    """x materialized to `dims` (NNAPI SELECT does not broadcast): constants are expanded,
    computed tensors combined with a neutral full-shape constant."""
    t, opnd = otype(ctx, x), ctx.model.operands[x]
    if tuple(t.dimensions) == tuple(dims):
        return x
    if opnd.is_constant and opnd.value is not None:
        full = broadcast_data(np.asarray(opnd.value).reshape(t.dimensions), dims, f"{what}: {opnd.name!r}")
        return ctx.const(np.ascontiguousarray(full), t.code, scale=t.scale, zero_point=t.zero_point)
    out = temp(ctx, x, "broadcast", dims=dims)
    if t.code == B8:
        return emit(ctx, Op.LOGICAL_OR, [x, const_like(ctx, False, x, dims)], out)
    if t.code == I32:
        ctx.require(Op.ADD, f"{what}: broadcasting int32 {opnd.name!r} (ADD)", T=I32)
    return emit(ctx, Op.ADD, [x, const_like(ctx, 0.0, x, dims)], out)


def via_float(ctx, node, what: str, body: Body) -> None:
    """Quantized in, quantized out: DEQUANTIZE the inputs, compute `body` in float32, QUANTIZE
    (LiteRT's int8 tables are built the same way: quantize(f(dequantize(q))))."""
    out_t = node.outputs[0]
    for i in node.inputs:
        if i >= 0 and not is_quantized(ctx, i):
            raise Unsupported(Reason.OPERAND_TYPE, f"{what}: input {name(ctx, i)} is not quantized like the "
                                                   f"others")
    if not is_quantized(ctx, out_t):
        raise Unsupported(Reason.OPERAND_TYPE, f"{what}: output {name(ctx, out_t)} is not quantized")
    ctx.require_level(FLOAT_LEVEL, f"{what} on quantized {name(ctx, out_t)} (computed in float, then QUANTIZE)")
    xs = [dequantize(ctx, ctx.operand(i)) for i in node.inputs]
    out = ctx.output(out_t)
    y = temp(ctx, out, "float", F32)
    body(ctx, xs, y)
    emit(ctx, Op.QUANTIZE, [y], out)


def elementwise(ctx, node, what: str, body: Body, quantized: bool = True) -> None:
    """Float/int32/bool tensors: `body` writes the output directly. Quantized tensors go
    through `via_float` when `quantized`, else are reported."""
    if any(i >= 0 and is_quantized(ctx, i) for i in list(node.inputs) + list(node.outputs)):
        if not quantized:
            raise Unsupported(Reason.OPERAND_TYPE, f"{what} on quantized {name(ctx, node.outputs[0])} has no "
                                                   f"exact NNAPI form")
        via_float(ctx, node, what, body)
        return
    xs = [ctx.operand(i) for i in node.inputs]
    body(ctx, xs, ctx.output(node.outputs[0]))

"""TFLite type conversions: CAST, QUANTIZE, DEQUANTIZE (constant inputs folded), ZEROS_LIKE."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperationCode as Op

from ...folding import folder
from ...registry import Reason, Unsupported, converter
from .common import name, otype
from .unary_emit import const_like, emit, requantize, static_dims

_BOOL = np.dtype(np.bool_)


@converter("tflite", "CAST", versions=(1, 5))
def cast(node, ctx):
    """CAST between float32/float16/int32/uint8 (raw values); bool as comparisons and SELECT."""
    x_t, out_t = node.inputs[0], node.outputs[0]
    src, dst = np.dtype(ctx.tensor(x_t).dtype), np.dtype(ctx.tensor(out_t).dtype)
    for i, dt in ((x_t, src), (out_t, dst)):
        if dt == np.int8:
            # below level 4 int8 runs as uint8 + 128, and NNAPI CAST has no int8 pairs: raw values would change
            raise Unsupported(Reason.OPERAND_TYPE, f"CAST of int8 {name(ctx, i)}: NNAPI CAST has no int8 form")
    if (src == _BOOL) != (dst == _BOOL) and (ctx.tensor(x_t).quant or ctx.tensor(out_t).quant):
        # the bool compositions work on real values, CAST on stored ones
        raise Unsupported(Reason.OPERAND_TYPE, f"CAST between bool and quantized {name(ctx, x_t)} -> "
                                               f"{name(ctx, out_t)}")
    x, out = ctx.operand(x_t), ctx.output(out_t)
    if src == _BOOL and dst != _BOOL:
        dims = static_dims(ctx, out, "CAST from bool")
        emit(ctx, Op.SELECT, [x, const_like(ctx, 1, out, dims), const_like(ctx, 0, out, dims)], out)
    elif dst == _BOOL and src != _BOOL:
        emit(ctx, Op.NOT_EQUAL, [x, const_like(ctx, 0, x)], out)
    else:
        emit(ctx, Op.CAST, [x], out)


@converter("tflite", "QUANTIZE", versions=(1, 3))
def quantize(node, ctx):
    """float -> quantized: QUANTIZE; quantized -> quantized: a requantization."""
    x_t, out_t = node.inputs[0], node.outputs[0]
    x, out = ctx.operand(x_t), ctx.output(out_t)
    if ctx.tensor(x_t).quant is not None:
        requantize(ctx, x, out)
    else:
        emit(ctx, Op.QUANTIZE, [x], out)


def _dequantized(t) -> np.ndarray:
    """float32 values of a constant tensor, computed as LiteRT does: float(q - zp) * scale."""
    if getattr(t, "sparse", False):
        raise Unsupported(Reason.OPERAND_TYPE, f"DEQUANTIZE of sparse constant {t.name!r} (densify it first)")
    data = np.asarray(t.data)
    if data.dtype == np.float16:
        return data.astype(np.float32)
    q = t.quant
    if q is None:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"DEQUANTIZE input {t.name!r} has no quantization parameters")
    shape = [1] * data.ndim
    if q.per_channel:
        shape[q.axis] = -1
    scales = np.asarray(q.scales, np.float32).reshape(shape)
    zps = np.asarray(q.zero_points, np.int32).reshape(shape)
    return ((data.astype(np.int32) - zps).astype(np.float32) * scales).astype(np.float32)


@folder("tflite", "DEQUANTIZE", how="dequantize of weights")
def fold_dequantize(node, ctx):
    """A constant input (float16 or quantized weights) folds into a float32 constant before conversion."""
    x_t, out_t = node.inputs[0], node.outputs[0]
    if not ctx.is_const(x_t) or np.dtype(ctx.tensor(out_t).dtype) != np.float32:
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, "only constant inputs fold")
    return [_dequantized(ctx.tensor(x_t)).reshape(ctx.tensor(out_t).shape or (1,))]


@converter("tflite", "DEQUANTIZE", versions=(1, 5))
def dequantize(node, ctx):
    """DEQUANTIZE (float16: CAST) of a computed tensor; constant weights were folded before conversion
    (fold_dequantize), except when the result is a graph output."""
    x_t, out_t = node.inputs[0], node.outputs[0]
    out_tensor = ctx.tensor(out_t)
    if np.dtype(out_tensor.dtype) != np.float32:
        raise Unsupported(Reason.OPERAND_TYPE, f"DEQUANTIZE to {np.dtype(out_tensor.dtype).name} "
                                               f"{name(ctx, out_t)}: only float32 outputs convert")
    x = ctx.operand(x_t)
    op = Op.CAST if otype(ctx, x).code == C.TENSOR_FLOAT16 else Op.DEQUANTIZE
    emit(ctx, op, [x], ctx.output(out_t))


_ZERO = {C.TENSOR_FLOAT32: (C.FLOAT32, 0.0), C.TENSOR_FLOAT16: (C.FLOAT16, 0.0), C.TENSOR_INT32: (C.INT32, 0)}


@converter("tflite", "ZEROS_LIKE", versions=(1, 1))
def zeros_like(node, ctx):
    """FILL(shape, 0) (feature level 4); x * 0 would turn inf and NaN into NaN."""
    x_t, out_t = node.inputs[0], node.outputs[0]
    code = otype(ctx, ctx.operand(x_t)).code
    if code not in _ZERO:
        raise Unsupported(Reason.OPERAND_TYPE, f"ZEROS_LIKE of {code.name} {name(ctx, x_t)}: NNAPI FILL takes "
                                               f"float and int32 only")
    ctx.require(Op.FILL, f"ZEROS_LIKE {name(ctx, out_t)} (FILL)")
    out = ctx.output(out_t)
    shape = ctx.const(np.asarray(static_dims(ctx, out, "ZEROS_LIKE"), np.int32))
    ctx.emit_form(Op.FILL, "default", [out], shape=shape, value=ctx.scalar(*_ZERO[code]))

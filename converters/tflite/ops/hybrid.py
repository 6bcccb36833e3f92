"""TFLite dynamic-range ("hybrid") operators: float activations with constant int8 weights.

LiteRT's hybrid kernels quantize the activations at run time; NNAPI has no such operation, so
the weights are dequantized and the float operation runs, as LiteRT's NNAPI delegate does: a
DEQUANTIZE of the constant TENSOR_QUANT8_SYMM / TENSOR_QUANT8_SYMM_PER_CHANNEL weights from
feature level 3, float32 constants (dequantized at conversion) below. The float operation reads
four times the weight bytes; the node's conversion note says so. The results differ from
LiteRT's by its activation quantization (docs/quantized-arithmetic.md states the bound).
Registers no converter."""
from __future__ import annotations

from typing import Optional

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.ops import level_for

from ...registry import Reason, Unsupported
from .common import name

DEQUANTIZE_LEVEL = level_for(Op.DEQUANTIZE, T=C.TENSOR_QUANT8_SYMM_PER_CHANNEL)  # symmetric weights


def is_hybrid(ctx, input_i: int, weights_i: int) -> bool:
    """A float input meets 8-bit weights (the weights of a hybrid kernel)."""
    return (input_i >= 0 and weights_i >= 0 and np.dtype(ctx.tensor(input_i).dtype).kind == "f"
            and np.dtype(ctx.tensor(weights_i).dtype) in (np.dtype(np.int8), np.dtype(np.uint8)))


def _checked(ctx, w: int) -> tuple:
    """(scales, axis or None) of hybrid weights w: constant, int8, symmetric (LiteRT's hybrid
    kernels ignore the zero point, so only zero zero points mean the same on both sides)."""
    t = ctx.tensor(w)
    if not t.is_constant:
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"hybrid kernel: 8-bit weights {name(ctx, w)} are computed at "
                                                       f"run time; only constant weights are dequantized")
    q = t.quant
    if np.dtype(t.dtype) != np.int8 or q is None or any(z != 0 for z in q.zero_points):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"hybrid kernel: weights {name(ctx, w)} must be int8 with zero "
                                                    f"point 0 (LiteRT's hybrid kernels ignore the zero point)")
    scales = np.asarray(q.scales, np.float32)
    return scales, (int(q.axis) if q.per_channel else None)


def hybrid_weights(ctx, w: int, values: Optional[np.ndarray] = None, axis: Optional[int] = None,
                   label: str = "") -> int:
    """The float32 operand of int8 weights w: DEQUANTIZE of the constant from feature level 3,
    a float32 constant below. `values` (with per-channel `axis`) is a rearranged copy of w's int8
    data (e.g. transposed); by default w's own data and axis."""
    from .nn_common import constant_array  # nn_common imports this module
    scales, own_axis = _checked(ctx, w)
    data = np.asarray(constant_array(ctx, w, "hybrid weights") if values is None else values, np.int8)
    axis = own_axis if values is None or axis is None else axis
    label = label or ctx.tensor(w).name
    dims = list(data.shape) or [1]
    if ctx.feature_level >= DEQUANTIZE_LEVEL and data.ndim <= 4:
        if axis is None:
            q = ctx.model.add_operand(OperandType(C.TENSOR_QUANT8_SYMM, dims, float(scales[0]), 0), name=label)
        else:
            q = ctx.model.add_operand(OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, dims), name=label)
            ctx.model.set_operand_symm_per_channel_quant_params(q, [float(s) for s in scales], axis)
        ctx.model.set_operand_value(q, np.ascontiguousarray(data).reshape(dims))
        out = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{label}/dequantized")
        ctx.emit_form(Op.DEQUANTIZE, "default", [out], input=q)
        ctx.notes.append(f"int8 weights {label!r} dequantized by DEQUANTIZE for the float operation (hybrid kernel): "
                         f"{data.size} weight bytes become {4 * data.size} bytes of float32 at run time")
        return out
    shape = [1] * data.ndim
    if axis is not None:
        shape[axis] = -1
    value = data.astype(np.float32) * scales.reshape(shape)  # LiteRT's dequantization: q * scale
    why = (f"DEQUANTIZE of symmetric weights needs feature level {DEQUANTIZE_LEVEL}" if data.ndim <= 4
           else "NNAPI's DEQUANTIZE takes rank 4 at most")
    ctx.notes.append(f"int8 weights {label!r} stored as float32 constants for the float operation (hybrid kernel; "
                     f"{why}): {data.size} weight bytes become {4 * data.size}")
    return ctx.const(value.astype(np.float32).reshape(dims), name=f"{label}/dequantized")


def dequantize_hybrid(ctx, input_i: int, *weights: int) -> bool:
    """Make every 8-bit weights tensor a float input meets read as float32 (ctx.operand then returns
    the dequantized operand). Returns whether the node is hybrid."""
    hybrid = False
    for w in weights:
        if is_hybrid(ctx, input_i, w):
            hybrid = True
            if w not in ctx.operand_of:
                ctx.operand_of[w] = hybrid_weights(ctx, w)
    return hybrid


def float_values(ctx, w: int, what: str) -> np.ndarray:
    """The float32 values of a constant (int8 hybrid weights dequantized as LiteRT does)."""
    t = ctx.tensor(w)
    data = np.asarray(ctx.const_value(w, what))
    if np.dtype(t.dtype) == np.int8:
        scales, axis = _checked(ctx, w)
        shape = [1] * data.ndim
        if axis is not None:
            shape[axis] = -1
        return data.astype(np.float32) * scales.reshape(shape)
    return data.astype(np.float32)

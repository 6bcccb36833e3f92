"""L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION.

Float kernels compute in float64 and round once to the output type (float16
inputs included); the quantized L2 normalization follows TFLite's fixed-point
inverse square root bit for bit.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nnapi.codes import OperandCode as C, OperationCode as Op

from ..registry import kernel
from .common import QUANT8, QUANT_RANGE, from_nhwc, to_nhwc
from .fixedpoint import (inv_sqrt_multiplier, rounding_divide_by_pot,
                         saturating_rounding_doubling_high_mul as srdhm)


def resolve_axis(ctx, axis: int, rank: int) -> int:
    """An axis argument as a non-negative axis of a rank-`rank` tensor."""
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for a rank-{rank} input")
    return axis % rank


# -- L2_NORMALIZATION -------------------------------------------------------------

_L2_EPSILON = 1e-6  # the reference's floor on the norm (all-zero vectors map to zeros)


def _l2_float(x: np.ndarray, axis: int) -> np.ndarray:
    x64 = x.astype(np.float64)
    norm = np.sqrt(np.sum(x64 * x64, axis=axis, keepdims=True))
    return x64 / np.maximum(norm, _L2_EPSILON)


def _l2_quant(q: np.ndarray, zero_point: int, code, axis: int) -> np.ndarray:
    """128 * x / |x| in stored units, the output zero point being 128 (uint8) or 0 (int8)."""
    diff = q.astype(np.int64) - zero_point
    multiplier, shift = inv_sqrt_multiplier(np.sum(diff * diff, axis=axis, keepdims=True))
    scaled = rounding_divide_by_pot(srdhm(diff * 128, multiplier), shift)
    offset = 128 if code == C.TENSOR_QUANT8_ASYMM else 0
    lo, hi = QUANT_RANGE[code]
    return np.clip(scaled + offset, lo, hi)


@kernel(Op.L2_NORMALIZATION)
def l2_normalization(ctx):
    args = ctx.args
    inp = args.input
    x = inp.array
    axis = resolve_axis(ctx, args.axis, x.ndim)
    if inp.code in QUANT8:
        out = _l2_quant(x, inp.zero_point, inp.code, axis)
    else:
        out = _l2_float(x, axis)
    return [out.astype(ctx.out_type().dtype)]


# -- LOCAL_RESPONSE_NORMALIZATION -------------------------------------------------

def _window_sum(values: np.ndarray, axis: int, radius: int) -> np.ndarray:
    """Sum over [i - radius, i + radius] along `axis`, clipped at the edges (zero padding)."""
    pad = [(0, 0)] * values.ndim
    pad[axis] = (radius, radius)
    padded = np.pad(values, pad)
    return sliding_window_view(padded, 2 * radius + 1, axis=axis).sum(axis=-1)


@kernel(Op.LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(ctx):
    args = ctx.args
    x = args.input.array
    radius = args.radius
    bias, alpha, beta = float(args.bias), float(args.alpha), float(args.beta)
    axis = resolve_axis(ctx, args.axis, x.ndim)
    if radius < 0:
        ctx.fail(f"radius must not be negative, got {radius}")
    x64 = x.astype(np.float64)
    if x.size:
        radius = min(radius, x.shape[axis])  # a wider window sees nothing more
        x64 = x64 * np.power(bias + alpha * _window_sum(x64 * x64, axis, radius), -beta)
    return [x64.astype(ctx.out_type().dtype)]


# -- INSTANCE_NORMALIZATION -------------------------------------------------------

@kernel(Op.INSTANCE_NORMALIZATION)
def instance_normalization(ctx):
    args = ctx.args
    gamma, beta, epsilon = float(args.gamma), float(args.beta), float(args.epsilon)
    nchw = args.nchw
    x = args.input.array   # 4-D: the spec's rule
    x64 = to_nhwc(x, nchw).astype(np.float64)
    if x64.size:
        # statistics per batch and channel, over the spatial axes
        mean = x64.mean(axis=(1, 2), keepdims=True)
        centered = x64 - mean
        sigma = np.sqrt((centered * centered).mean(axis=(1, 2), keepdims=True) + epsilon)
        x64 = centered * gamma / sigma + beta
    return [from_nhwc(x64, nchw).astype(ctx.out_type().dtype)]

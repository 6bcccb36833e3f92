"""SOFTMAX and LOG_SOFTMAX along any axis.

Float inputs are computed in float64 and rounded once to the output type. The
quantized softmax is TFLite's fixed-point algorithm (inputs rescaled to Q5.26,
gemmlowp exp, sum in Q12.19, fixed-point reciprocal), giving the reference's
exact stored values with output scale 1/256.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op

from ..registry import kernel
from .common import QUANT8, QUANT_RANGE
from .fixedpoint import (
    count_leading_zeros32,
    exp_on_negative_values,
    one_over_one_plus_x,
    quantize_multiplier,
    rounding_divide_by_pot,
)
from .fixedpoint import saturating_rounding_doubling_high_mul as srdhm
from .normalization import max_rank_4, resolve_axis

_DIFF_INTEGER_BITS = 5     # input differences in Q5.26
_ACCUM_INTEGER_BITS = 12   # sum of exps in Q12.19


def _beta(ctx) -> float:
    beta = float(ctx.scalar(1))
    if not beta > 0:
        ctx.fail(f"beta must be positive, got {beta}")
    return beta


def _shifted_logits(x: np.ndarray, beta: float, axis: int) -> np.ndarray:
    """beta * (x - max(x)) along `axis`, in float64."""
    x64 = x.astype(np.float64)
    return (x64 - x64.max(axis=axis, keepdims=True)) * beta


def _input_multiplier(ctx, beta: float) -> tuple[int, int]:
    """beta * input scale in Q5.26 units per stored step, as (multiplier, left shift >= 0)."""
    real = min(beta * float(np.float32(ctx.inputs[0].scale)) * (1 << (31 - _DIFF_INTEGER_BITS)),
               (1 << 31) - 1.0)
    multiplier, left_shift = quantize_multiplier(real)
    if real <= 1.0 or left_shift < 0:
        ctx.fail(f"beta * input scale is too small for the quantized softmax ({real:g} in Q5.26)")
    return multiplier, left_shift


@lru_cache(maxsize=64)
def _exp_table(multiplier: int, left_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(exp in Q0, used) for every 8-bit difference d = x - max(x) in [-255, 0], indexed by -d: the
    fixed-point exp depends on nothing else, so it is worked out once per input multiplier."""
    # differences below -radius have exp() too small to matter: they give exactly 0
    radius = math.floor(((1 << _DIFF_INTEGER_BITS) - 1) * (1 << (31 - _DIFF_INTEGER_BITS))
                        / (1 << left_shift))
    diff = -np.arange(256, dtype=np.int64)
    used = diff >= -radius
    rescaled = srdhm(np.where(used, diff, 0) * (1 << left_shift), multiplier)
    exps = np.where(used, exp_on_negative_values(rescaled, _DIFF_INTEGER_BITS), 0)
    exps.flags.writeable = used.flags.writeable = False
    return exps, used


def _softmax_quant(q: np.ndarray, multiplier: int, left_shift: int, code, axis: int) -> np.ndarray:
    exp_table, used_table = _exp_table(multiplier, left_shift)
    index = q.max(axis=axis, keepdims=True).astype(np.intp) - q
    exps, used = exp_table[index], used_table[index]
    sums = np.sum(rounding_divide_by_pot(exps, _ACCUM_INTEGER_BITS), axis=axis, keepdims=True)
    headroom = count_leading_zeros32(sums)
    bits_over_unit = _ACCUM_INTEGER_BITS - headroom
    reciprocal = one_over_one_plus_x((sums << headroom) - (1 << 31))
    out = rounding_divide_by_pot(srdhm(reciprocal, exps), bits_over_unit + 31 - 8)
    lo, hi = QUANT_RANGE[code]
    if code == C.TENSOR_QUANT8_ASYMM_SIGNED:
        out = out - 128
    return np.where(used, np.clip(out, lo, hi), lo)


@kernel(Op.SOFTMAX)
def softmax(ctx):
    inp = ctx.inputs[0]
    x = inp.array
    max_rank_4(ctx, x)
    beta = _beta(ctx)
    axis = resolve_axis(ctx, 2, x.ndim)
    out_type = ctx.out_type()
    if x.size == 0:
        return [np.zeros(x.shape, dtype=out_type.dtype)]
    if inp.code in QUANT8:
        multiplier, left_shift = _input_multiplier(ctx, beta)
        return [_softmax_quant(x, multiplier, left_shift, inp.code, axis).astype(out_type.dtype)]
    e = np.exp(_shifted_logits(x, beta, axis))
    return [(e / e.sum(axis=axis, keepdims=True)).astype(out_type.dtype)]


@kernel(Op.LOG_SOFTMAX)
def log_softmax(ctx):
    x = ctx.inputs[0].array
    beta = _beta(ctx)
    axis = resolve_axis(ctx, 2, x.ndim)
    if x.size == 0:
        return [np.zeros(x.shape, dtype=ctx.out_type().dtype)]
    z = _shifted_logits(x, beta, axis)
    out = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return [out.astype(ctx.out_type().dtype)]

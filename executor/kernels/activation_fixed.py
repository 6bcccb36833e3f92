"""Fixed-point arithmetic of the quantized LOGISTIC, TANH and HARD_SWISH kernels.

These follow gemmlowp's fixedpoint.h and TFLite's reference kernels (which the
Android CPU driver runs), vectorized over int64 arrays that hold int32 (or
int16) raw values. A raw value of an F<k> number has 31 - k fractional bits.
No kernel is registered here; activation.py calls these. Scales the
fixed-point forms cannot represent raise ValueError (the Android driver fails
those executions too).
"""
from __future__ import annotations

import math

import numpy as np

from .common import QUANT_RANGE
from .fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    exp_on_negative_values,
    one_over_one_plus_x,
    quantize_multiplier,
    rounding_divide_by_pot,
    two_over_one_plus_x,
)
from .fixedpoint import saturating_multiply_by_pot as _mul_pot
from .fixedpoint import saturating_rounding_doubling_high_mul as _high_mul

_INPUT_INTEGER_BITS = 4     # inputs are rescaled to F4 (|x| < 16) before logistic/tanh
_F2_ONE = 1 << 29


def _logistic_f0(a):
    """gemmlowp::logistic of F4 raws -> F0 raws."""
    positive = a > 0
    e = exp_on_negative_values(np.where(positive, -a, a), _INPUT_INTEGER_BITS)
    result_pos = one_over_one_plus_x(e)                         # 1 / (1 + exp(-|a|))
    result = np.where(positive, result_pos, INT32_MAX - result_pos)
    return np.where(a == 0, 1 << 30, result)


def _tanh_f0(a):
    """gemmlowp::tanh of F4 raws -> F0 raws."""
    negative = a < 0
    n = np.where(negative, a, -a)
    # exp(2n): the raw of F4 n read as F5 is 2n
    t = _mul_pot(two_over_one_plus_x(exp_on_negative_values(n, _INPUT_INTEGER_BITS + 1)) - _F2_ONE, 2)
    return np.where(a == 0, 0, np.where(negative, -t, t))


# -- the quantized kernels ---------------------------------------------------------

def _sigmoid_like(q, in_scale: float, in_zp: int, out_zp: int, code, fn, out_frac_shift: int):
    """Shared LOGISTIC/TANH quantized path: rescale the input to F4, apply `fn`, requantize."""
    real = float(np.float32(in_scale)) * float(1 << (31 - _INPUT_INTEGER_BITS))
    multiplier, shift = quantize_multiplier(real)
    if shift < 0:
        raise ValueError(f"input scale {in_scale:g} is too small for the fixed-point kernel (below 2^-27)")
    # beyond this |input| the result saturates (TFLite's CalculateInputRadius)
    radius = math.floor(((1 << _INPUT_INTEGER_BITS) - 1) * float(1 << (31 - _INPUT_INTEGER_BITS))
                        / (1 << shift))
    centered = q.astype(np.int64) - in_zp
    inside = np.abs(centered) < radius
    rescaled = _high_mul(np.clip(np.where(inside, centered, 0) << shift, INT32_MIN, INT32_MAX), multiplier)
    out = rounding_divide_by_pot(fn(rescaled), out_frac_shift) + out_zp
    lo, hi = QUANT_RANGE[code]
    out = np.where(inside, out, np.where(centered < 0, lo, hi))
    return np.clip(out, lo, hi)


def logistic_quant(q, in_scale: float, in_zp: int, out_zp: int, code):
    """Output scale is 1/256: F0 (31 fractional bits) -> 8 fractional bits."""
    return _sigmoid_like(q, in_scale, in_zp, out_zp, code, _logistic_f0, 23)


def tanh_quant(q, in_scale: float, in_zp: int, out_zp: int, code):
    """Output scale is 1/128: F0 -> 7 fractional bits."""
    return _sigmoid_like(q, in_scale, in_zp, out_zp, code, _tanh_f0, 24)


def _int16_multiplier(real) -> tuple[int, int]:
    """QuantizeMultiplier then DownScaleInt32ToInt16Multiplier (TFLite's hard-swish params)."""
    m32, exponent = quantize_multiplier(float(real))
    if m32 >= INT32_MAX - (1 << 15):
        return (1 << 15) - 1, exponent
    return (m32 + (1 << 15)) >> 16, exponent


def hard_swish_quant(q, in_scale: float, in_zp: int, out_scale: float, out_zp: int, code):
    """TFLite reference HardSwish on int16 fixed point: x * reluish(x), reluish in [0, 1]."""
    f32 = np.float32
    hires_scale = f32(1.0 / 128.0) * f32(in_scale)
    out_mult, out_exp = _int16_multiplier(hires_scale / f32(out_scale))
    if out_exp > 0:
        raise ValueError(f"output scale {out_scale:g} must exceed input scale / 128 (TFLite's fixed-point "
                         f"hard swish)")
    relu_mult, relu_exp = _int16_multiplier(hires_scale / f32(3.0 / 32768.0))
    hires = (q.astype(np.int64) - in_zp) * (1 << 7)
    on_output_scale = _high_mul(hires, out_mult, bits=15)
    reluish = hires
    if relu_exp > 0:
        reluish = _mul_pot(reluish, relu_exp - 1, bits=15)
    reluish = _high_mul(reluish, relu_mult, bits=15)
    if relu_exp > 0:
        reluish = _mul_pot(reluish, 1, bits=15)
    elif relu_exp < 0:
        reluish = rounding_divide_by_pot(reluish, -relu_exp)
    reluish = (reluish + (1 << 15)) >> 1                        # [-1, 1] -> [0, 1]
    # SaturatingDoublingHighMul: the product's high half, truncated toward zero
    prod = reluish * on_output_scale
    pre_shift = np.where(prod >= 0, prod >> 15, -((-prod) >> 15))
    out = rounding_divide_by_pot(pre_shift, -out_exp) + out_zp
    lo, hi = QUANT_RANGE[code]
    return np.clip(out, lo, hi)

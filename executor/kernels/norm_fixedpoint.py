"""gemmlowp fixed-point arithmetic over numpy arrays, for the quantized softmax
and L2 normalization (TFLite/Android reference semantics, bit for bit).

Every array holds int32 raw values in int64 storage. A "Qk" value has k
integer bits: raw = real * 2^(31-k). Unlike the scalar helpers in common.py,
both operands (and shift exponents) may be arrays here.
"""
from __future__ import annotations

import numpy as np

from .common import INT32_MAX, INT32_MIN


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap_int32(x) -> np.ndarray:
    """Two's-complement wrap of int64 values to the int32 range (C int32 arithmetic)."""
    return (_i64(x) + (1 << 31)) % (1 << 32) - (1 << 31)


def srdhm(a, b) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul: round(a * b / 2^31), elementwise over arrays."""
    a, b = _i64(a), _i64(b)
    ab = a * b
    s = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    res = np.where(s >= 0, s >> 31, -((-s) >> 31))  # C division truncates toward zero
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, res)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """Round-half-away-from-zero x / 2^exponent with an array (or scalar) exponent >= 0."""
    x, e = _i64(x), _i64(exponent)
    mask = (np.int64(1) << e) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + ((x & mask) > threshold)


def saturating_multiply_by_pot(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT: x * 2^exponent, saturating up, rounding down."""
    x = _i64(x)
    if exponent <= 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def rounding_half_sum(a, b) -> np.ndarray:
    s = _i64(a) + _i64(b)
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))


def count_leading_zeros32(x) -> np.ndarray:
    """Leading zero bits of positive values as uint32 (exact: frexp gives the bit length)."""
    return 32 - np.frexp(_i64(x).astype(np.float64))[1]


# -- exp(x) for x <= 0 ----------------------------------------------------------

_EXP_MINUS_ONE_EIGHTH = 1895147668     # exp(-1/8) in Q0
_ONE_THIRD = 715827883                 # 1/3 in Q0
# exp(-2^k) in Q0 for k = -2..4: applied for every set bit of the remainder
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def _exp_on_quarter_interval(a) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0 in and out: Taylor series around -1/8."""
    x = a + (1 << 28)  # a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4_over_4 = saturating_multiply_by_pot(srdhm(x2, x2), -2)
    poly = saturating_multiply_by_pot(srdhm(x4_over_4 + x3, _ONE_THIRD) + x2, -1)
    return _EXP_MINUS_ONE_EIGHTH + srdhm(_EXP_MINUS_ONE_EIGHTH, x + poly)


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """gemmlowp exp_on_negative_values: Q`integer_bits` a <= 0 -> Q0 exp(a)."""
    a = _i64(a)
    frac_bits = 31 - integer_bits
    quarter = 1 << (frac_bits - 2)
    a_mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter
    result = _exp_on_quarter_interval(saturating_multiply_by_pot(a_mod_quarter_minus_quarter, integer_bits))
    remainder = a_mod_quarter_minus_quarter - a
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder & (1 << (frac_bits + exponent))) != 0
            result = np.where(bit, srdhm(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x(a) -> np.ndarray:
    """1 / (1 + a) for Q0 a in [0, 1): Newton-Raphson in Q2, result in Q0."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = 1515870810 + srdhm(half_denominator, -1010580540)   # 48/17 - 32/17 * d, Q2
    for _ in range(3):
        one_minus = (1 << 29) - srdhm(half_denominator, x)
        x = x + saturating_multiply_by_pot(srdhm(x, one_minus), 2)
    return saturating_multiply_by_pot(x, 1)


# -- 1 / sqrt(x) ------------------------------------------------------------------

def inv_sqrt_multiplier(x) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetInvSqrtQuantizedMultiplierExp(x, reverse_shift=-1) over an int array:
    (multiplier, right_shift) with 1/sqrt(x) ~= multiplier * 2^-31 * 2^-right_shift."""
    x = _i64(x)
    tiny = x <= 1  # 0 and 1 are answered as 1 (0 has no inverse square root)
    x = np.where(tiny, 4, x)
    shift = np.full(x.shape, 11, dtype=np.int64)
    while (big := x >= (1 << 29)).any():   # at most a handful of bit pairs
        x = np.where(big, x // 4, x)
        shift += big
    pairs = (count_leading_zeros32(x) - 1) // 2 - 1
    shift -= pairs
    x = x << (2 * pairs)
    half_input = saturating_multiply_by_pot(x >> 1, -1)     # Q3
    three_halves = (1 << 28) + (1 << 27)                    # 1.5 in Q3
    r = np.full(x.shape, 1 << 28, dtype=np.int64)           # 1.0 in Q3
    for _ in range(5):
        r3 = saturating_multiply_by_pot(srdhm(srdhm(r, r), r), 6)
        r = saturating_multiply_by_pot(srdhm(three_halves, r) - srdhm(half_input, r3), 3)
    r = srdhm(r, 1518500250)                                # * sqrt(2)/2
    r = np.where(shift < 0, wrap_int32(r << np.maximum(-shift, 0)), r)
    shift = np.maximum(shift, 0)
    return np.where(tiny, INT32_MAX, r), np.where(tiny, 0, shift)

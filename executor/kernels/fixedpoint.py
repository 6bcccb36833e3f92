"""gemmlowp / TFLite fixed-point arithmetic over numpy arrays, bit for bit: the one
home of these primitives for every kernel family.

Raw values are int32 (or int16 with bits=15) held in int64 arrays; multipliers,
shifts and exponents may be scalars or arrays broadcasting against the values
(per-channel requantization passes [C] arrays for [..., C] values).
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """Split a non-negative real multiplier into (int32 q31 multiplier, shift); real ~= m * 2^(shift-31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = round(q * (1 << 31))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:  # saturate like TFLite
        return INT32_MAX, 30
    return q_fixed, shift


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier per element: (multipliers, shifts) as int64 arrays."""
    pairs = [quantize_multiplier(float(r)) for r in np.ravel(reals)]
    return np.array([m for m, _ in pairs], np.int64), np.array([s for _, s in pairs], np.int64)


def trunc_div(x, d) -> np.ndarray:
    """C integer division (toward zero)."""
    return np.where(x >= 0, x // d, -((-x) // d))


def saturating_rounding_doubling_high_mul(a, b, bits: int = 31) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul: round(a * b / 2^bits), ties away from zero, elementwise;
    bits=31 for int32 raws, 15 for int16 raws. The one overflow case (min * min) saturates."""
    # the C form adds 2^(bits-1) (or 1 - 2^(bits-1) below zero) and truncates; both equal this floor.
    # For raws in range only min * min reaches 2^bits, so capping there is the saturation.
    return np.minimum((_i64(a) * _i64(b) + (1 << (bits - 1))) >> bits, (1 << bits) - 1)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """RoundingDivideByPOT: x / 2^exponent rounded half away from zero; exponent >= 0, scalar or array."""
    x, e = _i64(x), _i64(exponent)
    mask = (np.int64(1) << e) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + ((x & mask) > threshold)


def saturating_multiply_by_pot(x, exponent: int, bits: int = 31) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT: x * 2^exponent saturating to the raw range, or a rounding
    right shift for a negative exponent."""
    if exponent <= 0:
        return rounding_divide_by_pot(x, -exponent)
    return np.minimum(np.maximum(_i64(x) << exponent, -(1 << bits)), (1 << bits) - 1)  # (np.clip: slower)


def rounding_half_sum(a, b) -> np.ndarray:
    """RoundingHalfSum: (a + b + sign) / 2 truncated, i.e. floor((s + 1) / 2) for s >= 0, floor(s / 2) below."""
    s = _i64(a) + _i64(b)
    return (s + (s >= 0)) >> 1


def wrap_int32(x) -> np.ndarray:
    """Two's-complement wrap of int64 values to the int32 range (C int32 arithmetic)."""
    return (_i64(x) + (1 << 31)) % (1 << 32) - (1 << 31)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier: x * multiplier * 2^(shift-31) with the reference rounding
    (a saturating left shift first when shift > 0)."""
    x, shift = _i64(x), _i64(shift)
    left = np.maximum(shift, 0)
    if np.any(left):
        x = np.clip(x << left, INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), np.maximum(-shift, 0))


# -- gemmlowp transcendental helpers on int32 raws ("Qk": k integer bits, raw = real * 2^(31-k)) --

_EXP_MINUS_ONE_EIGHTH = 1895147668     # exp(-1/8) in Q0
_ONE_THIRD = 715827883                 # 1/3 in Q0
# exp(-2^k) in Q0 for k = -2..4: applied for every set bit of the remainder
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
              (2, 39332535), (3, 720401), (4, 242))


def _exp_on_quarter_interval(a) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0 in and out: Taylor series around -1/8."""
    srdhm = saturating_rounding_doubling_high_mul
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
    for exponent, multiplier in EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder & (1 << (frac_bits + exponent))) != 0
            result = np.where(bit, saturating_rounding_doubling_high_mul(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def two_over_one_plus_x(a) -> np.ndarray:
    """2 / (1 + a) in Q2 for Q0 a in [0, 1]: Newton-Raphson from the 48/17 - 32/17 x estimate."""
    srdhm = saturating_rounding_doubling_high_mul
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = 1515870810 + srdhm(half_denominator, -1010580540)
    for _ in range(3):
        one_minus = (1 << 29) - srdhm(half_denominator, x)
        x = x + saturating_multiply_by_pot(srdhm(x, one_minus), 2)
    return x


def one_over_one_plus_x(a) -> np.ndarray:
    """1 / (1 + a) in Q0 for Q0 a in [0, 1)."""
    return saturating_multiply_by_pot(two_over_one_plus_x(a), 1)


def count_leading_zeros32(x) -> np.ndarray:
    """Leading zero bits of positive values as uint32 (exact: frexp gives the bit length)."""
    return 32 - np.frexp(_i64(x).astype(np.float64))[1]


def inv_sqrt_multiplier(x) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetInvSqrtQuantizedMultiplierExp(x, reverse_shift=-1) over an int array:
    (multiplier, right_shift) with 1/sqrt(x) ~= multiplier * 2^-31 * 2^-right_shift."""
    srdhm = saturating_rounding_doubling_high_mul
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

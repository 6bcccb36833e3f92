"""Helpers shared by every kernel family: fixed-point requantization (the
TFLite/NNAPI rules), fuse codes, (de)quantization, padding and layout.

Nothing here registers a kernel.
"""
from __future__ import annotations

import math

import numpy as np

from nnapi.codes import FuseCode, OperandCode, PaddingCode

C = OperandCode
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

QUANT_RANGE = {
    C.TENSOR_QUANT8_ASYMM: (0, 255),
    C.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    C.TENSOR_QUANT8_SYMM: (-128, 127),
    C.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-128, 127),
    C.TENSOR_QUANT16_ASYMM: (0, 65535),
    C.TENSOR_QUANT16_SYMM: (-32768, 32767),
}
QUANT8 = (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED)


def is_quant(code) -> bool:
    return code in QUANT_RANGE


# -- fixed-point arithmetic (gemmlowp / TFLite reference semantics) ------------

def quantize_multiplier(real: float) -> tuple[int, int]:
    """Split a positive real multiplier into (int32 q31 multiplier, shift); real ~= m * 2^(shift-31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(round(q * (1 << 31)))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:  # saturate like TFLite
        return INT32_MAX, 30
    return q_fixed, shift


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul over int64 arrays holding int32 values."""
    a = np.asarray(a, dtype=np.int64)
    ab = a * np.int64(b)
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    s = ab + nudge
    # C integer division truncates toward zero
    res = np.where(s >= 0, s >> 31, -((-s) >> 31))
    if b == INT32_MIN:
        res = np.where(a == INT32_MIN, INT32_MAX, res)
    return res


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """Round-half-away-from-zero division by 2^exponent (gemmlowp RoundingDivideByPOT)."""
    x = np.asarray(x, dtype=np.int64)
    if exponent <= 0:
        return x
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier: x * multiplier * 2^shift with the reference rounding."""
    left = shift if shift > 0 else 0
    right = 0 if shift > 0 else -shift
    x = np.asarray(x, dtype=np.int64)
    if left:
        x = np.clip(x * (1 << left), INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right)


def requantize(acc: np.ndarray, real_multiplier: float, zero_point: int, code) -> np.ndarray:
    """int32 accumulator -> stored integers of `code` via the fixed-point multiplier."""
    m, s = quantize_multiplier(real_multiplier)
    out = multiply_by_quantized_multiplier(acc, m, s) + zero_point
    lo, hi = QUANT_RANGE[code]
    return np.clip(out, lo, hi)


# -- (de)quantization ---------------------------------------------------------

def dequantize(values: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    return (values.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """std::round semantics (halves away from zero), unlike numpy's half-to-even."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize(real: np.ndarray, scale: float, zero_point: int, code) -> np.ndarray:
    """Real values -> stored integers of `code` (round half away from zero, saturate)."""
    lo, hi = QUANT_RANGE[code]
    q = round_half_away(np.asarray(real, dtype=np.float64) / np.float64(np.float32(scale))) + zero_point
    return np.clip(q, lo, hi).astype(storage_dtype(code))


def storage_dtype(code) -> np.dtype:
    from nnapi.operand import DTYPES
    return DTYPES[OperandCode(code)]


# -- fuse codes ---------------------------------------------------------------

_FLOAT_FUSE = {
    FuseCode.NONE: (-np.inf, np.inf),
    FuseCode.RELU: (0.0, np.inf),
    FuseCode.RELU1: (-1.0, 1.0),
    FuseCode.RELU6: (0.0, 6.0),
}


def fuse_range(fuse: int, code=C.TENSOR_FLOAT32, scale: float = 0.0, zero_point: int = 0):
    """(low, high) clamp of a fuse code in the output's domain (quantized: stored units)."""
    try:
        lo_real, hi_real = _FLOAT_FUSE[FuseCode(fuse)]
    except ValueError:
        raise ValueError(f"invalid fuse code {fuse}") from None
    if not is_quant(code):
        return lo_real, hi_real
    qmin, qmax = QUANT_RANGE[code]

    def q(r):
        return zero_point + int(round_half_away(np.float64(np.float32(r)) / np.float64(np.float32(scale))))
    lo = qmin if lo_real == -np.inf else max(qmin, q(lo_real))
    hi = qmax if hi_real == np.inf else min(qmax, q(hi_real))
    return lo, hi


def apply_fuse(x: np.ndarray, fuse: int, code=C.TENSOR_FLOAT32, scale: float = 0.0, zero_point: int = 0):
    lo, hi = fuse_range(fuse, code, scale, zero_point)
    if lo == -np.inf and hi == np.inf:
        return x
    return np.clip(x, lo, hi)


# -- padding and layout ---------------------------------------------------------

def implicit_padding(in_size: int, stride: int, filter_size: int, padding: int, dilation: int = 1):
    """(pad_before, pad_after, out_size) for PaddingCode SAME/VALID, as the NNAPI header defines them."""
    eff = (filter_size - 1) * dilation + 1
    if padding == PaddingCode.SAME:
        out = (in_size + stride - 1) // stride
        total = max((out - 1) * stride + eff - in_size, 0)
        return total // 2, (total + 1) // 2, out
    if padding == PaddingCode.VALID:
        out = (in_size - eff + stride) // stride
        return 0, 0, max(out, 0)
    raise ValueError(f"invalid padding code {padding}")


def explicit_out_size(in_size: int, stride: int, filter_size: int, pad_before: int, pad_after: int,
                      dilation: int = 1) -> int:
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + stride + pad_before + pad_after) // stride


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.moveaxis(x, 1, -1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.moveaxis(x, -1, 1) if nchw else x

"""Helpers shared by every kernel family: requantization (on fixedpoint.py's
TFLite/NNAPI rules), fuse codes, (de)quantization, padding and layout.

Nothing here registers a kernel.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import FuseCode, OperandCode
from nnapi.operand import QUANT_RANGE  # noqa: F401  (the stored ranges, defined once)
# the padding / output-size rules are defined once, in nnapi/ops/geometry.py (the specs' shape inference
# uses them too); re-exported here under the kernels' names
from nnapi.ops.geometry import (explicit_out_size, implicit_padding,  # noqa: F401
                                transpose_implicit_padding, transpose_out_size)


try:  # the clip ufunc: np.clip calls it after checks that cost microseconds (only integer bounds need them)
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # pragma: no cover  (numpy < 2)
    from numpy.core.umath import clip as clip_ufunc

C = OperandCode

QUANT8 = (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED)


def is_quant(code) -> bool:
    return code in QUANT_RANGE


def requantize(acc: np.ndarray, real_multiplier: float, zero_point: int, code) -> np.ndarray:
    """int32 accumulator -> stored integers of `code` (as int64) via the fixed-point multiplier: the
    reference form of requantize.py's Requantizer (the accumulator is not clamped to int32 first)."""
    from .requantize import Requantizer   # (requantize.py imports this module)
    lo, hi = QUANT_RANGE[code]
    acc = np.asarray(acc)
    return Requantizer(0, [real_multiplier], zero_point, lo, hi, np.int64, acc_bound=0, reference=True)(acc).reshape(acc.shape)


# -- (de)quantization ---------------------------------------------------------

def dequantize(values: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    with np.errstate(over="ignore"):   # a huge scale gives inf, as float32 arithmetic defines
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

    def q(r):  # f / scale in float32, as CalculateActivationRangeQuantized (Android's and TFLite's) divides
        return zero_point + int(round_half_away(np.float64(np.float32(r) / np.float32(scale))))
    lo = qmin if lo_real == -np.inf else max(qmin, q(lo_real))
    hi = qmax if hi_real == np.inf else min(qmax, q(hi_real))
    return lo, hi


def apply_fuse(x: np.ndarray, fuse: int, code=C.TENSOR_FLOAT32, scale: float = 0.0, zero_point: int = 0):
    lo, hi = fuse_range(fuse, code, scale, zero_point)
    if lo == -np.inf and hi == np.inf:
        return x
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return clip_ufunc(x, lo, hi)   # what np.clip calls for floats, without its wrapper
    return np.clip(x, lo, hi)


# -- padding and layout ---------------------------------------------------------

def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.moveaxis(x, 1, -1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.moveaxis(x, -1, 1) if nchw else x

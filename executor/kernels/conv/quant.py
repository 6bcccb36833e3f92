"""Numeric domains shared by the convolution family (plain kernels reference.py, transpose.py and their
fast paths prepared.py): operands go into an accumulation domain and the accumulator comes back
out as the output operand's type. One rule each, used by the plain kernels and the fast paths alike:

* Float accumulation (FLOAT_ACCUMULATION): float32 products summed in float32 -- float16 operands
  widened to float32 first, the float64 mode's operands (parity --exact) kept in float64 -- then the
  bias added and the fuse clamp applied in that type, then the cast to the output type. The sums'
  order is the GEMM's (BLAS blocks them), so a plain kernel and a fast path agree within
  float_accumulation_bound (the classical gamma_K bound of a K-term float sum), not bit for bit.
* Quantized accumulation: zero-point-corrected integers held in float64 so the GEMMs run through
  BLAS, exact while every partial sum stays below 2**53 (`check_exact`; the fast paths prove the
  tighter 2**24 bound for float32 from the constant filter); the sum plus the int32 bias is
  requantized per output channel by requantize.py's Requantizer (the one requantizer: the plain
  kernels run its reference form, the fast paths its compiled forms, proven equal to it), with the
  TFLite fixed-point multiplier of real = float32(input_scale * filter_scale[c]) / output_scale.

Nothing here registers a kernel.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C

from ..common import fuse_range, is_quant
from ..requantize import Requantizer

# the largest |product| of two zero-point-corrected 8-bit values: 255 * 255
_MAX_PRODUCT = 255 * 255
_EXACT_LIMIT = 2 ** 53

# the type float convolutions accumulate in, by operand dtype (anything else: float32)
FLOAT_ACCUMULATION = {np.dtype(np.float64): np.dtype(np.float64)}
_UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0 ** -24, np.dtype(np.float64): 2.0 ** -53}


def float_accumulation_bound(abs_sum: np.ndarray, terms: int, dtype=np.float32) -> np.ndarray:
    """How far a float sum of `terms` products (any order) may be from the exact one, given
    abs_sum = sum |x * w| (+ |bias|): gamma = K u / (1 - K u) times abs_sum, u the unit roundoff, K the
    terms plus the bias; the plain kernels and the fast paths each stay within it of the exact sum."""
    k = (terms + 1) * _UNIT_ROUNDOFF[np.dtype(dtype)]
    return abs_sum * (k / (1 - k))


def check_exact(ctx, terms: int) -> None:
    """Fail rather than lose exactness when a float64 sum of `terms` products could pass 2**53."""
    if terms * _MAX_PRODUCT >= _EXACT_LIMIT:
        ctx.fail(f"a sum of {terms} quantized products cannot be accumulated exactly")


def acc_operand(value) -> np.ndarray:
    """Input or filter values in the accumulation domain: q - zero_point (float64), or the floats in
    their accumulation type (FLOAT_ACCUMULATION)."""
    if is_quant(value.code):
        return value.array.astype(np.float64) - value.zero_point
    return value.array.astype(FLOAT_ACCUMULATION.get(value.array.dtype, np.dtype(np.float32)), copy=False)


def filter_scales(ctx, flt, channels: int) -> np.ndarray:
    """One float32 scale per output channel: the per-channel scales, or the tensor scale repeated."""
    if flt.code != C.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return np.full(channels, flt.scale, dtype=np.float32)
    cq = flt.channel_quant
    if cq is None or len(cq.scales) != channels:
        ctx.fail(f"per-channel filter needs {channels} channel scales, has "
                 f"{'none' if cq is None else len(cq.scales)}")
    return cq.scales_array()


def finish(ctx, acc: np.ndarray, inp, flt, bias, fuse: int) -> np.ndarray:
    """Accumulator [..., channels] (channels last) + bias, fused, as the output operand's type."""
    out = ctx.out_type()
    try:
        lo, hi = fuse_range(fuse, out.code, out.scale, out.zero_point)
    except ValueError as e:
        ctx.fail(str(e))
    if not is_quant(out.code):
        res = acc + bias.array.astype(acc.dtype)
        return np.clip(res, lo, hi).astype(out.dtype)
    requant = Requantizer(bias.array, real_multipliers(ctx, inp.scale, flt, acc.shape[-1]), out.zero_point,
                          lo, hi, out.dtype, reference=True)
    return requant(np.rint(acc))


def real_multipliers(ctx, in_scale: float, flt, channels: int) -> np.ndarray:
    """Per output channel: float32(input_scale * filter_scale) / output_scale, in double (as Android does)."""
    product = np.float32(in_scale) * filter_scales(ctx, flt, channels)
    return product.astype(np.float64) / np.float64(ctx.out_type().scale)

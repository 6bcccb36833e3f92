"""Numeric domains shared by the convolution family (executor/kernels/conv.py,
conv_transpose.py): operands go into an exact accumulation domain and the
accumulator comes back out as the output operand's type.

* float16/float32 operands are accumulated in float64, then cast to the output type;
* quantized operands are accumulated as zero-point-corrected integers. They are
  held in float64 so the GEMMs run through BLAS, which is exact while every
  partial sum stays below 2**53 (`check_exact`); the int32 bias is added in
  int64 and the sum is requantized per output channel with the TFLite
  fixed-point multiplier (real = input_scale * filter_scale[c] / output_scale).

Nothing here registers a kernel.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C

from .common import fuse_range, is_quant
from .fixedpoint import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier, quantize_multiplier

# the largest |product| of two zero-point-corrected 8-bit values: 255 * 255
_MAX_PRODUCT = 255 * 255
_EXACT_LIMIT = 2 ** 53


def check_exact(ctx, terms: int) -> None:
    """Fail rather than lose exactness when a float64 sum of `terms` products could pass 2**53."""
    if terms * _MAX_PRODUCT >= _EXACT_LIMIT:
        ctx.fail(f"a sum of {terms} quantized products cannot be accumulated exactly")


def acc_operand(value) -> np.ndarray:
    """Input or filter values in the accumulation domain: real floats, or q - zero_point."""
    if is_quant(value.code):
        return value.array.astype(np.float64) - value.zero_point
    return value.array.astype(np.float64)


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
        res = acc + bias.array.astype(np.float64)
        return np.clip(res, lo, hi).astype(out.dtype)
    total = np.rint(acc).astype(np.int64) + bias.array.astype(np.int64)
    total = np.clip(total, INT32_MIN, INT32_MAX)  # the fixed-point multiply expects int32 values
    scaled = _requantize_channels(total, real_multipliers(ctx, inp.scale, flt, acc.shape[-1]))
    return np.clip(scaled + out.zero_point, lo, hi).astype(out.dtype)


def real_multipliers(ctx, in_scale: float, flt, channels: int) -> np.ndarray:
    """Per output channel: float32(input_scale * filter_scale) / output_scale, in double (as Android does)."""
    product = np.float32(in_scale) * filter_scales(ctx, flt, channels)
    return product.astype(np.float64) / np.float64(ctx.out_type().scale)


def _requantize_channels(total: np.ndarray, real: np.ndarray) -> np.ndarray:
    """Apply channel c's fixed-point multiplier to total[..., c]; one pass per distinct multiplier
    (a single pass unless the filter is per-channel)."""
    fixed = np.array([quantize_multiplier(float(r)) for r in real], dtype=np.int64).reshape(-1, 2)
    pairs, which = np.unique(fixed, axis=0, return_inverse=True)
    out = np.empty_like(total)
    for k, (multiplier, shift) in enumerate(pairs):
        sel = which.reshape(-1) == k
        out[..., sel] = multiply_by_quantized_multiplier(total[..., sel], int(multiplier), int(shift))
    return out

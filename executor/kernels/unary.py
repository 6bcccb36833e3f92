"""Elementwise unary math (FLOOR, ABS, NEG, EXP, LOG, SIN, SQRT, RSQRT), POW, CAST,
QUANTIZE and DEQUANTIZE; also the small float/requantize helpers the
activation and compare kernels share. QUANTIZE of float32 has a preparer
(PreparedQuantize: the kernel's float32 operations in place)."""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C, OperationCode as Op

from ..registry import kernel, prepare
from .common import QUANT8, QUANT_RANGE, dequantize, requantize, round_half_away
from .scratch import Scratch


# -- shared helpers -------------------------------------------------------------

def as_float32(value) -> np.ndarray:
    """float16 inputs are computed in float32 (and cast back by `float_result`)."""
    return value.array.astype(np.float32, copy=False)


def float_result(ctx, fn, *values, k: int = 0) -> np.ndarray:
    """Apply a float function to float inputs, in float32, ignoring IEEE warnings (NaN/inf are results)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(as_float32(v) for v in values))).astype(ctx.out_type(k).dtype)


def requantize_to(value, out_type) -> np.ndarray:
    """Stored integers of a quantized Value re-expressed in `out_type`'s scale/zero point (fixed point)."""
    q = value.array.astype(np.int64)
    if value.scale == out_type.scale and value.zero_point == out_type.zero_point:
        return q
    real = float(np.float32(value.scale)) / float(np.float32(out_type.scale))
    return requantize(q - value.zero_point, real, out_type.zero_point, out_type.code)


def quantize_float32(real: np.ndarray, out_type) -> np.ndarray:
    """Android's float quantization: round(x / scale) in float32, half away from zero, plus zero point."""
    lo, hi = QUANT_RANGE[out_type.code]
    with np.errstate(all="ignore"):
        q = round_half_away(real.astype(np.float32) / np.float32(out_type.scale)) + out_type.zero_point
    # Android clamps with std::min/std::max, which send NaN to the top of the range
    return np.where(np.isnan(q), hi, np.clip(q, lo, hi)).astype(out_type.dtype)


# -- math -----------------------------------------------------------------------

def _float_unary(code, fn):
    @kernel(code)
    def run(ctx):
        return [float_result(ctx, fn, ctx.args.input)]
    run.__name__ = code.name.lower()
    return run


_float_unary(Op.FLOOR, np.floor)
_float_unary(Op.EXP, np.exp)
_float_unary(Op.LOG, np.log)
_float_unary(Op.SIN, np.sin)
_float_unary(Op.SQRT, np.sqrt)


@kernel(Op.ABS, Op.NEG)
def abs_neg(ctx):
    x = ctx.args.input
    fn = np.abs if ctx.step.code == Op.ABS else np.negative
    if x.code == C.TENSOR_INT32:
        return [fn(x.array)]            # int32 wraps like C: |INT32_MIN| == -INT32_MIN == INT32_MIN
    return [float_result(ctx, fn, x)]


@kernel(Op.RSQRT)
def rsqrt(ctx):
    x = ctx.args.input
    if x.code not in QUANT8:
        return [float_result(ctx, lambda v: 1.0 / np.sqrt(v), x)]
    # as Android: dequantize, compute in float, quantize; inf (x == 0) and NaN (x < 0) saturate high
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.float32(1.0) / np.sqrt(dequantize(x.array, x.scale, x.zero_point))
    return [quantize_float32(res, ctx.out_type())]


@kernel(Op.POW)
def power(ctx):
    args = ctx.args
    return [float_result(ctx, np.power, args.base, args.exponent)]


# -- conversions ----------------------------------------------------------------

@kernel(Op.CAST)
def cast(ctx):
    """Convert element values (quantized operands as their raw integers), as Android's CAST does."""
    src = ctx.args.input.array
    dtype = ctx.out_type().dtype
    if src.dtype == dtype:
        return [src.copy()]
    if dtype.kind == "f":
        return [src.astype(dtype)]
    if src.dtype.kind == "f":
        src = np.trunc(np.nan_to_num(src.astype(np.float64), nan=0.0))   # C cast truncates toward zero
    info = np.iinfo(dtype)
    return [np.clip(src, info.min, info.max).astype(dtype)]


@kernel(Op.QUANTIZE)
def quantize_op(ctx):
    return [quantize_float32(as_float32(ctx.args.input), ctx.out_type())]


class PreparedQuantize:
    """QUANTIZE of a float32 input: quantize_float32's float32 operations in its order, in place in a
    reused buffer -- x / scale, round_half_away as floor(|v| + 0.5) with v's sign, + zero point -- then
    fmin / fmax, which send NaN to the top of the range as its where(isnan) does, cast into output
    0's buffer."""

    fresh_outputs = True

    def __init__(self, pctx):
        out = pctx.out_type()
        self.kernel = pctx.step.kernel
        self.scale, self.zero_point = np.float32(out.scale), out.zero_point
        self.lo, self.hi = (np.float32(v) for v in QUANT_RANGE[out.code])
        self.dtype = out.dtype
        self.scratch: Scratch = pctx.compiled.scratch

    def __call__(self, ctx):
        x = ctx.args.input
        if x is None or x.array.dtype != np.float32:
            return self.kernel(ctx)
        x = x.array
        v = self.scratch.get("quantize_v", x.shape, np.float32)
        r = self.scratch.get("quantize_r", x.shape, np.float32)
        with np.errstate(all="ignore"):
            np.divide(x, self.scale, out=v)
            np.abs(v, out=r)
            r += np.float32(0.5)
            np.floor(r, out=r)
            np.copysign(r, v, out=r)   # sign(v) * r, v = 0 aside (a signed zero, the same integer)
            r += np.float32(self.zero_point)
            np.fmin(r, self.hi, out=r)
            np.fmax(r, self.lo, out=r)
        out = ctx.output_buffer(0, x.shape, self.dtype)
        np.copyto(out, r, casting="unsafe")
        return [out]


@prepare(Op.QUANTIZE)
def prepare_quantize(pctx):
    bound = pctx.step.bound
    if bound.runtime != {"input"} or bound.operand("input").type.code != C.TENSOR_FLOAT32:
        return None
    return PreparedQuantize(pctx)


@kernel(Op.DEQUANTIZE)
def dequantize_op(ctx):
    x = ctx.args.input
    if x.code == C.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        cq = x.channel_quant
        if cq is None:
            ctx.fail("per-channel input has no channel scales")
        shape = [1] * x.array.ndim
        shape[cq.channel_dim] = -1
        real = x.array.astype(np.float32) * cq.scales_array().reshape(shape)
    else:
        real = dequantize(x.array, x.scale, x.zero_point)
    return [real.astype(ctx.out_type().dtype)]

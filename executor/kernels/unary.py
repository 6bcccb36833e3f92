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


def quantization_constants(out_type) -> tuple:
    """(scale, 0.5, zero point, lo, hi) of quantize_float32 as 0-d float32 arrays (numpy applies those
    faster than Python or numpy scalars; the values are the same float32 numbers)."""
    lo, hi = QUANT_RANGE[out_type.code]
    return tuple(np.array(v, np.float32) for v in (np.float32(out_type.scale), 0.5, out_type.zero_point, lo, hi))


def quantize_float32(real: np.ndarray, out_type, work: tuple = (None, None), out: np.ndarray = None,
                     constants: tuple = None) -> np.ndarray:
    """Android's float quantization: round(x / scale) in float32, half away from zero (std::round:
    floor(|q| + 0.5) with q's sign), plus zero point, clamped with std::min/std::max (which send NaN to
    the top of the range: fmin, then maximum). `work` (two float32 arrays of real's shape), `out` (the
    output dtype) and `constants` (quantization_constants) are given by QUANTIZE's fast path, which
    keeps them from run to run and runs under the executor's np.errstate; the kernels set their own."""
    if constants is None:
        with np.errstate(all="ignore"):
            return quantize_float32(real, out_type, work, out, quantization_constants(out_type))
    scale, half, zero_point, lo, hi = constants
    q = np.divide(real, scale, out=work[0])
    r = np.abs(q, out=work[1])
    r += half
    np.floor(r, out=r)
    np.copysign(r, q, out=r)
    r += zero_point
    np.fmin(r, hi, out=r)
    np.maximum(r, lo, out=r)
    if out is None:
        return r.astype(out_type.dtype)
    np.copyto(out, r, casting="unsafe")
    return out


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
    """QUANTIZE of a float32 or float16 tensor: quantize_float32 into work arrays and output 0's buffer
    (the kernel allocates each step's result); anything else goes to the kernel."""

    fresh_outputs = True

    def __init__(self, pctx, dtype):
        self.kernel = pctx.step.kernel
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        self.dtype, self.out_type = dtype, pctx.out_type()
        self.constants = quantization_constants(self.out_type)
        self.scratch = pctx.compiled.scratch

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.dtype != self.dtype:
            return self.kernel(ctx)
        shape = v.array.shape
        work = (self.scratch.get("quantize", shape, F32), self.scratch.get("quantize_rounded", shape, F32))
        out = ctx.output_buffer(0, shape, self.out_type.dtype)
        return [quantize_float32(v.array, self.out_type, work, out, self.constants)]


F32 = np.dtype(np.float32)


@prepare(Op.QUANTIZE)
def prepare_quantize(pctx):
    t = pctx.step.bound.operand("input").type
    if pctx.step.bound.runtime != {"input"} or not t.is_tensor or t.dtype not in (F32, np.dtype(np.float16)) \
            or pctx.out_type().code not in QUANT_RANGE:
        return None
    return PreparedQuantize(pctx, t.dtype)


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

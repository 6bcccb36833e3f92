"""SOFTMAX and LOG_SOFTMAX along any axis.

Float inputs are computed in float64 and rounded once to the output type
(float_softmax, in place in one float64 array). Its preparer (beta and axis constant) runs the same
float_softmax in float32, in the output buffer, with the sums of a last-axis softmax as one BLAS
product with a vector of ones (another order): within the fast paths' float bound, as the GEMMs
(tests/executor/test_fast_paths_agree.py), at about half the time of the float64 passes. The
quantized softmax is TFLite's fixed-point algorithm (inputs rescaled to Q5.26,
gemmlowp exp, sum in Q12.19, fixed-point reciprocal), giving the reference's
exact stored values with output scale 1/256. Its preparer (beta and axis
constant) works the per-row reciprocal out in Python integers, bit for bit the
numpy fixed-point functions, instead of some forty numpy calls per run; with
many rows (a softmax per pixel) it runs the kernel's vectorized functions on
the rows laid out [length, rows], so the reductions run along long rows.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op

from ..registry import kernel, prepare
from .common import QUANT8, QUANT_RANGE
from .fixedpoint import (
    count_leading_zeros32,
    exp_on_negative_values,
    one_over_one_plus_x,
    quantize_multiplier,
    rounding_divide_by_pot,
)
from .fixedpoint import saturating_rounding_doubling_high_mul as srdhm
from .normalization import resolve_axis

_DIFF_INTEGER_BITS = 5     # input differences in Q5.26
_ACCUM_INTEGER_BITS = 12   # sum of exps in Q12.19


def _beta(ctx, args) -> float:
    return float(args.beta)   # positive: the spec's rule (constant or fed at run time)


def _shifted_logits(x: np.ndarray, beta: float, axis: int) -> np.ndarray:
    """beta * (x - max(x)) along `axis`, in float64."""
    x64 = x.astype(np.float64)
    return (x64 - x64.max(axis=axis, keepdims=True)) * beta


def float_softmax(x: np.ndarray, beta: float, axis: int, work: np.ndarray, ones=None) -> np.ndarray:
    """exp(beta * (x - max(x))) / sum along `axis`, in work's dtype (the plain kernel's float64; the
    compiled path's float32), computed in `work` (an array of x's shape, overwritten) and returned
    there; the caller rounds it to the output type. beta 1 skips the multiplication (exact). `ones`
    (a vector of ones of the axis' length, for the last axis of a C-contiguous `work` only) makes the
    sums one matrix-vector product."""
    # x - max in work's dtype (the max is exact in any float type: x's own max, converted)
    np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True), out=work, dtype=work.dtype)
    if beta != 1.0:
        np.multiply(work, beta, out=work, dtype=work.dtype)
    np.exp(work, out=work)
    if ones is None:
        return np.divide(work, np.add.reduce(work, axis=axis, keepdims=True), out=work)
    rows = work.reshape(-1, ones.shape[0])
    np.divide(rows, np.matmul(rows, ones)[:, None], out=rows)
    return work


def _input_multiplier(ctx, scale: float, beta: float) -> tuple[int, int]:
    """beta * input scale in Q5.26 units per stored step, as (multiplier, left shift >= 0)."""
    real = min(beta * float(np.float32(scale)) * (1 << (31 - _DIFF_INTEGER_BITS)),
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
    args = ctx.args
    inp = args.input
    x = inp.array   # rank at most 4: the spec's rule
    beta = _beta(ctx, args)
    axis = resolve_axis(ctx, args.axis, x.ndim)
    out_type = ctx.out_type()
    if x.size == 0:
        return [np.zeros(x.shape, dtype=out_type.dtype)]
    if inp.code in QUANT8:
        multiplier, left_shift = _input_multiplier(ctx, inp.scale, beta)
        return [_softmax_quant(x, multiplier, left_shift, inp.code, axis).astype(out_type.dtype)]
    return [float_softmax(x, beta, axis, np.empty(x.shape, np.float64)).astype(out_type.dtype)]


@kernel(Op.LOG_SOFTMAX)
def log_softmax(ctx):
    args = ctx.args
    x = args.input.array
    beta = _beta(ctx, args)
    axis = resolve_axis(ctx, args.axis, x.ndim)
    if x.size == 0:
        return [np.zeros(x.shape, dtype=ctx.out_type().dtype)]
    z = _shifted_logits(x, beta, axis)
    out = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return [out.astype(ctx.out_type().dtype)]


# -- compiled quantized SOFTMAX -------------------------------------------------------------------
# The per-row part of the algorithm (the fixed-point reciprocal of the sum of exps: some 40 numpy calls
# on arrays of one element per row) in Python integers, bit for bit the numpy fixed-point functions:
# numpy's int64 arithmetic never overflows on these values, so unbounded integers give the same results.

_INT32_MAX = (1 << 31) - 1


def one_over_one_plus_x_int(a: int) -> int:
    """fixedpoint.one_over_one_plus_x on one Python int: SaturatingRoundingDoublingHighMul is
    min((a * b + 2^30) >> 31, INT32_MAX), SaturatingRoundingMultiplyByPOT a saturating left shift."""
    s = a + _INT32_MAX
    half_denominator = (s + (s >= 0)) >> 1
    x = 1515870810 + min((half_denominator * -1010580540 + (1 << 30)) >> 31, _INT32_MAX)
    for _ in range(3):
        one_minus = (1 << 29) - min((half_denominator * x + (1 << 30)) >> 31, _INT32_MAX)
        x += min(max(min((x * one_minus + (1 << 30)) >> 31, _INT32_MAX) << 2, -(1 << 31)), _INT32_MAX)
    return min(max(x << 1, -(1 << 31)), _INT32_MAX)


def reciprocal_of_sum(total: int) -> tuple[int, int]:
    """(reciprocal, right shift) of one row's sum of exps (Q12.19), as _softmax_quant works them out."""
    headroom = 32 - math.frexp(float(total))[1]    # count_leading_zeros32
    bits_over_unit = _ACCUM_INTEGER_BITS - headroom
    return one_over_one_plus_x_int((total << headroom) - (1 << 31)), bits_over_unit + 31 - 8


def reciprocals_of_sums(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """reciprocal_of_sum for an int64 array of row sums in [1, 2^31): one_over_one_plus_x_int's steps as
    in-place int64 passes (products below 2^63: exact), a third of the numpy fixed-point functions'
    passes and temporaries. The headroom is count_leading_zeros32's (frexp of the exact float64)."""
    exponent = np.frexp(sums.astype(np.float64))[1].astype(np.int64)   # headroom = 32 - exponent
    x = np.left_shift(sums, 32 - exponent)
    x -= 1 << 31                      # a in [0, 2^31)
    half = x                          # rounding_half_sum(a, INT32_MAX): a + INT32_MAX >= 0, so + 1, >> 1
    half += _INT32_MAX + 1
    half >>= 1
    x = half * -1010580540            # srdhm(half, -1010580540): <= 0, under its saturation
    x += 1 << 30
    x >>= 31
    x += 1515870810
    t = np.empty_like(x)
    for _ in range(3):
        np.multiply(half, x, out=t)   # one_minus = 2^29 - srdhm(half, x)
        t += 1 << 30
        t >>= 31
        np.minimum(t, _INT32_MAX, out=t)
        np.subtract(1 << 29, t, out=t)
        t *= x                        # x += saturating_multiply_by_pot(srdhm(x, one_minus), 2)
        t += 1 << 30
        t >>= 31
        np.minimum(t, _INT32_MAX, out=t)
        t <<= 2
        np.maximum(t, -(1 << 31), out=t)
        np.minimum(t, _INT32_MAX, out=t)
        x += t
    x <<= 1                           # saturating_multiply_by_pot(x, 1)
    np.maximum(x, -(1 << 31), out=x)
    np.minimum(x, _INT32_MAX, out=x)
    return x, exponent + 3            # shift: _ACCUM_INTEGER_BITS - headroom + 31 - 8


class PreparedSoftmax:
    """Quantized SOFTMAX with beta and axis constant: the exp tables (and the exps already divided for
    the Q12.19 sum) looked up once, the per-row reciprocal in Python integers when rows are few
    (vectorized over rows laid out [length, rows] when many).
    Results are new arrays or output 0's buffer (the plain kernel's are new): never the input."""

    fresh_outputs = True

    MAX_ROWS = 16   # beyond this many rows the vectorized reciprocal (_many_rows) is cheaper

    def __init__(self, pctx, multiplier: int, left_shift: int, axis: int, rank: int):
        self.kernel = pctx.step.kernel
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        t = pctx.step.bound.operand("input").type
        self.dtype, self.rank, self.axis = t.dtype, rank, axis
        self.exps, used = _exp_table(multiplier, left_shift)
        assert self.exps.min() >= 0 and self.exps.max() <= _INT32_MAX
        self.exps12 = rounding_divide_by_pot(self.exps, _ACCUM_INTEGER_BITS)
        self.lo, self.hi = QUANT_RANGE[t.code]
        self.offset = -128 if t.code == C.TENSOR_QUANT8_ASYMM_SIGNED else 0
        # an unused difference has exp 0, so the formula itself gives 0 + offset = lo there
        assert np.all(self.exps[~used] == 0) and self.offset == self.lo

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        x = None if v is None else v.array
        if x is None or x.dtype != self.dtype or x.ndim != self.rank or x.size == 0:
            return self.kernel(ctx)
        if self.axis != self.rank - 1:
            x = np.moveaxis(x, self.axis, -1)
        rows = x.size // x.shape[-1]
        if rows > self.MAX_ROWS:
            return self._many_rows(ctx, x)
        index = x.max(axis=-1, keepdims=True).astype(np.intp) - x
        exps = self.exps[index]
        sums = self.exps12[index].sum(axis=-1, keepdims=True)
        pairs = [reciprocal_of_sum(int(s)) for s in sums.reshape(-1)]
        if any(not 0 <= r <= _INT32_MAX or e < 3 for r, e in pairs):   # not the case for sums >= 1
            return self.kernel(ctx)
        if rows == 1:   # Python integers broadcast as they are
            (recips, shifts), = pairs
            half = 1 << (shifts - 1)
        else:
            recips = np.array([p[0] for p in pairs], np.int64).reshape(sums.shape)
            shifts = np.array([p[1] for p in pairs], np.int64).reshape(sums.shape)
            half = np.left_shift(1, shifts - 1)
        # rounding_divide_by_pot(srdhm(recips, exps), shifts) for exps >= 0, recips in [0, 2^31) and
        # shifts >= 3: both round half up there, and the product never reaches srdhm's saturation
        exps *= recips
        exps += 1 << 30
        exps >>= 31
        exps += half
        exps >>= shifts
        if self.offset:
            exps += self.offset
        np.minimum(exps, self.hi, out=exps)
        if self.axis != self.rank - 1:
            return [np.moveaxis(exps.astype(self.dtype), -1, self.axis)]
        out = ctx.output_buffer(0, exps.shape, self.dtype)
        np.copyto(out, exps, casting="unsafe")
        return [out]


    def _many_rows(self, ctx, x: np.ndarray):
        """Many rows (a per-pixel softmax over classes): the kernel's vectorized reciprocal, on the rows
        laid out [L, rows] so every reduction and table lookup runs along long rows, not L at a time."""
        length = x.shape[-1]
        xt = np.ascontiguousarray(x.reshape(-1, length).T)
        index = np.subtract(xt.max(axis=0), xt, dtype=np.intp)   # max - x, in [0, 255]
        exps = np.take(self.exps, index)
        sums = np.take(self.exps12, index).sum(axis=0)
        recips, shifts = reciprocals_of_sums(sums)
        if recips.min() < 0 or recips.max() > _INT32_MAX or shifts.min() < 3:   # (not for sums >= 1)
            return self.kernel(ctx)
        # as in __call__: rounding_divide_by_pot(srdhm(recips, exps), shifts) for these ranges
        exps *= recips
        exps += 1 << 30
        exps >>= 31
        exps += np.left_shift(1, shifts - 1)
        exps >>= shifts
        if self.offset:
            exps += self.offset
        np.minimum(exps, self.hi, out=exps)
        if self.axis != self.rank - 1:
            out = np.empty(x.shape, self.dtype)
            np.copyto(out.reshape(-1, length).T, exps, casting="unsafe")
            return [np.moveaxis(out, -1, self.axis)]
        out = ctx.output_buffer(0, x.shape, self.dtype)
        np.copyto(out.reshape(-1, length).T, exps, casting="unsafe")
        return [out]


class PreparedFloatSoftmax:
    """Float SOFTMAX with beta and axis constant: float_softmax in float32 -- in the output buffer for
    float32, in a float32 work array kept from run to run (Scratch) rounded once for float16 -- with
    the sums of a last-axis softmax as a product with ones. Rank over 4, empty or unexpected inputs go
    to the kernel."""

    fresh_outputs = True

    def __init__(self, pctx, beta: float, axis: int, dtype):
        self.kernel = pctx.step.kernel
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        self.beta, self.axis, self.dtype = beta, axis, dtype
        self.scratch = pctx.compiled.scratch
        self.ones: dict = {}   # axis length -> float32 ones

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.dtype != self.dtype or not 0 < v.array.ndim <= 4 or v.array.size == 0:
            return self.kernel(ctx)
        x = v.array
        axis = self.axis
        if not -x.ndim <= axis < x.ndim:
            return self.kernel(ctx)
        axis %= x.ndim
        ones = None
        if axis == x.ndim - 1:
            length = x.shape[-1]
            ones = self.ones.get(length)
            if ones is None:
                if len(self.ones) >= 16:   # (run-time shapes could otherwise grow it without end)
                    self.ones.clear()
                ones = self.ones[length] = np.ones(length, F32)
        out = ctx.output_buffer(0, x.shape, self.dtype)
        if self.dtype == F32:
            float_softmax(x, self.beta, axis, out, ones)
        else:
            work = self.scratch.get("softmax", x.shape, F32)
            np.copyto(out, float_softmax(x, self.beta, axis, work, ones), casting="unsafe")
        return [out]


F32 = np.dtype(np.float32)
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


@prepare(Op.SOFTMAX)
def prepare_softmax(pctx):
    bound = pctx.step.bound
    t = bound.operand("input").type
    if bound.runtime == {"input"} and t.dtype in _FLOAT_DTYPES and t.is_tensor and bound.constant("beta", "axis") \
            and pctx.out_type().code == t.code:
        beta = float(pctx.args.beta)
        return PreparedFloatSoftmax(pctx, beta, pctx.args.axis, t.dtype) if beta > 0 else None
    # a quantized input fed at run time, beta and the axis constants
    if bound.runtime != {"input"} or t.code not in QUANT8 or not bound.constant("beta", "axis") \
            or not t.dimensions or pctx.out_type().code != t.code:
        return None
    rank = len(t.dimensions)
    if rank > 4:
        return None
    args = pctx.args
    beta, axis = float(args.beta), args.axis
    if not beta > 0 or not -rank <= axis < rank:
        return None
    real = min(beta * float(np.float32(t.scale)) * (1 << (31 - _DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    multiplier, left_shift = quantize_multiplier(real)
    if real <= 1.0 or left_shift < 0:
        return None
    return PreparedSoftmax(pctx, multiplier, left_shift, axis % rank, rank)

"""Compiled MEAN and REDUCE_* with constant axes and keep_dims.

REDUCE_MAX, REDUCE_MIN, REDUCE_SUM, REDUCE_PROD, REDUCE_ALL and REDUCE_ANY (every type): per input
shape the axes and the output shape are worked out once, and a run is the plain kernel's own numpy
reduction (reference.REDUCERS: the same call over the same axes, so the same results bit for bit) into
the output buffer; the kernel parses the arguments, resolves the axes and copies its result on every
call, several times the reduction itself on the small tensors of a dynamic quantization's min/max.

Float (float32, float16 through float32): per input shape the axes, the kept and the output shapes
and the divisor are worked out once, and a run is reference.float_mean -- the plain kernel's sum and
division, the sum over the last axis alone as a product with ones (BLAS's order: within the fast
paths' float bound) -- into the output buffer (the kernel resolves the axes, counts, shapes and casts
on every call, several times the arithmetic of a layer norm's MEAN).

Quantized: the axes and keep_dims are constants, so per input shape the reduced axes and the count
are worked out once; a run is one integer sum of the raw values (int32 when count * 255 cannot
overflow it: no int64 copy of the input) and then, for counts up to TABLE_LIMIT / 255, a lookup in
the table of the kernel's own result (reference.quant_mean_of_sums, either case: the requantization,
or the truncating division of the same quantization) for every sum count values can have -- bit for
bit, and no per-run fixed-point passes (a layer norm's MEAN of 48 values is 12,241 sums). Larger
counts requantize with a Requantizer, the kernel's rule bit for bit ((sum of raw values) - count *
input zero point, the fixed-point multiplier input_scale / (count * output_scale), plus the output
zero point, clipped); their same-quantization case and anything unexpected at run time go to the
kernel."""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.reduce import reduced_shape

from ...registry import prepare
from ..common import QUANT8, QUANT_RANGE
from .reference import REDUCERS, float_mean, mean_divisor, quant_mean_of_sums, resolve_axes
from ..requantize import Requantizer

# input shapes remembered per operation
MAX_SHAPES = 16
# a quantized MEAN over at most this many distinct raw sums (count x 255 + 1) is a table by the sum
TABLE_LIMIT = 1 << 16


class _AxesReduction:
    """What every compiled reduction reads once: the kernel, the input's position (read by position at
    run time: cheaper than ctx.args), the constant axes and keep_dims (MEAN keeps for a positive
    INT32, REDUCE_* for a true BOOL: their kernels' rules), and the per-shape plans."""

    fresh_outputs = True

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        bound = pctx.step.bound
        self.x = bound.positions["input"]
        self.axes = pctx.args.axes.array
        self.keep = bound.consts["keep_dims"] > 0 if pctx.step.code == Op.MEAN else bool(bound.consts["keep_dims"])
        self.plans: dict = {}

    def _input(self, ctx):
        """The input array, or None when the kernel should run (an absent input, another dtype)."""
        x = ctx.inputs[self.x]
        return None if x is None or x.array.dtype != self.dtype else x.array


class PreparedQuantMean(_AxesReduction):
    def __init__(self, pctx):
        super().__init__(pctx)
        bound = pctx.step.bound
        self.in_type, self.out_type = bound.operand("input").type, pctx.out_type()
        self.dtype = self.in_type.dtype
        self.scratch = pctx.compiled.scratch
        self.same_quant = (self.out_type.scale, self.out_type.zero_point) == (self.in_type.scale, self.in_type.zero_point)

    def _plan(self, ctx, shape: tuple):
        axes = resolve_axes(ctx, self.axes, len(shape))
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        if count == 0 or count * 256 >= 2 ** 31:
            return None   # (the kernel reports an empty reduction; huge counts need its int64 sums)
        inp, out = self.in_type, self.out_type
        lo, hi = QUANT_RANGE[inp.code]
        if count * (hi - lo) < TABLE_LIMIT:   # every raw sum's mean, as the kernel computes it
            sums = np.arange(count * lo, count * hi + 1, dtype=np.int64)
            finish = (quant_mean_of_sums(sums, count, inp, out).astype(out.dtype), count * lo)
        elif self.same_quant:
            return None   # (the kernel's truncating division)
        else:
            lo, hi = QUANT_RANGE[out.code]
            finish = Requantizer(np.array([-count * inp.zero_point]), np.array([inp.scale / (count * out.scale)]),
                                 out.zero_point, lo, hi, out.dtype, count * 255, self.scratch)
        if len(self.plans) >= MAX_SHAPES:
            self.plans.clear()
        plan = self.plans[shape] = (axes, reduced_shape(shape, axes, self.keep), finish)
        return plan

    def __call__(self, ctx):
        x = self._input(ctx)
        if x is None:
            return self.kernel(ctx)
        shape = x.shape
        plan = self.plans.get(shape)
        if plan is None and (plan := self._plan(ctx, shape)) is None:
            return self.kernel(ctx)
        axes, out_shape, finish = plan
        total = x.sum(axis=axes, dtype=np.int32).reshape(out_shape)
        result = ctx.output_buffer(0, out_shape, self.out_type.dtype)
        if type(finish) is tuple:
            table, lowest = finish
            total -= lowest
            np.take(table, total, out=result, mode="clip")   # (indices are in range: "clip" is unbuffered)
        else:
            finish(total, result)
        return [result]


F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


class PreparedFloatMean(_AxesReduction):
    """reference.float_mean with the axes, shapes and divisor of each input shape worked out once."""

    def __init__(self, pctx, dtype):
        super().__init__(pctx)
        self.dtype = dtype

    def _plan(self, ctx, shape: tuple):
        axes = resolve_axes(ctx, self.axes, len(shape))
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        if count == 0:
            return None   # (the kernel reports an empty reduction, or gives an empty input's NaNs)
        if len(self.plans) >= MAX_SHAPES:
            self.plans.clear()
        kept = reduced_shape(shape, axes, True)
        ones = np.ones((shape[-1], 1), F32) if axes == (len(shape) - 1,) and count > 1 else None
        plan = self.plans[shape] = (axes, kept, reduced_shape(shape, axes, self.keep), mean_divisor(count), ones)
        return plan

    def __call__(self, ctx):
        x = self._input(ctx)
        if x is None:
            return self.kernel(ctx)
        plan = self.plans.get(x.shape)
        if plan is None and (plan := self._plan(ctx, x.shape)) is None:
            return self.kernel(ctx)
        axes, kept, out_shape, divisor, ones = plan
        result = ctx.output_buffer(0, out_shape, self.dtype)
        if self.dtype == F16:   # in float32, rounded to float16 once, as the kernel
            result[...] = float_mean(x.astype(F32), axes, divisor, ones=ones).reshape(out_shape)
        else:
            float_mean(x, axes, divisor, out=result.reshape(kept), ones=ones)
        return [result]


def _axes_constant(pctx) -> bool:
    """Only the input is fed at run time: the axes and keep_dims are constants."""
    bound = pctx.step.bound
    return bound.runtime == {"input"} and pctx.args.axes is not None and bound.consts.get("keep_dims") is not None


@prepare(Op.MEAN)
def prepare_mean(pctx):
    if not _axes_constant(pctx):
        return None
    inp, out = pctx.step.bound.operand("input").type, pctx.out_type()
    if inp.dtype in (F32, F16) and inp.code == out.code and inp.is_tensor:
        return PreparedFloatMean(pctx, inp.dtype)
    if inp.code not in QUANT8 or out.code not in QUANT8:
        return None
    return PreparedQuantMean(pctx)


class PreparedReduce(_AxesReduction):
    """REDUCE_* by reference.REDUCERS[code] over the axes planned per input shape, into output 0's
    buffer (for float16 sums and products, the kernel's float32 result rounded once into it)."""

    def __init__(self, pctx):
        super().__init__(pctx)
        self.reduce = REDUCERS[pctx.step.code]
        self.dtype = pctx.step.bound.operand("input").type.dtype

    def _plan(self, ctx, shape: tuple):
        axes = resolve_axes(ctx, self.axes, len(shape))
        if len(self.plans) >= MAX_SHAPES:
            self.plans.clear()
        plan = self.plans[shape] = (axes, reduced_shape(shape, axes, True), reduced_shape(shape, axes, self.keep))
        return plan

    def __call__(self, ctx):
        x = self._input(ctx)
        if x is None:
            return self.kernel(ctx)
        axes, kept, out_shape = self.plans.get(x.shape) or self._plan(ctx, x.shape)
        result = ctx.output_buffer(0, out_shape, self.dtype)
        np.copyto(result.reshape(kept), self.reduce(x, axes), casting="unsafe")
        return [result]


@prepare(*REDUCERS)
def prepare_reduce(pctx):
    if not _axes_constant(pctx):
        return None
    inp, out = pctx.step.bound.operand("input").type, pctx.out_type()
    if not inp.is_tensor or inp.dtype != out.dtype:
        return None
    return PreparedReduce(pctx)

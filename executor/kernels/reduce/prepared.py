"""Compiled MEAN with constant axes and keep_dims.

Float (float32, float16 through float32): per input shape the axes, the kept and the output shapes
and the divisor are worked out once, and a run is reference.float_mean -- the plain kernel's sum and
division -- into the output buffer (the kernel resolves the axes, counts, shapes and casts on every
call, several times the arithmetic of a layer norm's MEAN).

Quantized (reference.py's kernel, the requantizing case): the axes and keep_dims are
constants, so per input shape the reduced axes, the count and a Requantizer are worked out once; a
run is one integer sum (int32 when count * 255 cannot overflow it: no int64 copy of the input) and
the requantizer. The kernel's rule, bit for bit: (sum of raw values) - count * input zero point, the
fixed-point multiplier input_scale / (count * output_scale), plus the output zero point, clipped to
the output type's range. The same-quantization case (a truncating division), anything else and
anything unexpected at run time go to the kernel."""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.reduce import reduced_shape

from ...registry import prepare
from ..common import QUANT8, QUANT_RANGE
from .reference import float_mean, mean_divisor, resolve_axes
from ..requantize import Requantizer

# input shapes remembered per operation
MAX_SHAPES = 16


class PreparedQuantMean:
    fresh_outputs = True

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        bound = pctx.step.bound
        self.x = bound.positions["input"]   # (read by position at run time: cheaper than ctx.args)
        self.axes = pctx.args.axes.array
        self.keep = bound.consts["keep_dims"] > 0
        self.in_type, self.out_type = bound.operand("input").type, pctx.out_type()
        self.dtype = self.in_type.dtype
        self.plans: dict = {}
        self.scratch = pctx.compiled.scratch

    def _plan(self, ctx, shape: tuple):
        axes = resolve_axes(ctx, self.axes, len(shape))
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        if count == 0 or count * 256 >= 2 ** 31:
            return None   # (the kernel reports an empty reduction; huge counts need its int64 sums)
        inp, out = self.in_type, self.out_type
        lo, hi = QUANT_RANGE[out.code]
        requant = Requantizer(np.array([-count * inp.zero_point]), np.array([inp.scale / (count * out.scale)]),
                              out.zero_point, lo, hi, out.dtype, count * 255, self.scratch)
        if len(self.plans) >= MAX_SHAPES:
            self.plans.clear()
        plan = self.plans[shape] = (axes, reduced_shape(shape, axes, self.keep), requant)
        return plan

    def __call__(self, ctx):
        x = ctx.inputs[self.x]
        if x is None or x.array.dtype != self.dtype:
            return self.kernel(ctx)
        shape = x.array.shape
        plan = self.plans.get(shape)
        if plan is None and (plan := self._plan(ctx, shape)) is None:
            return self.kernel(ctx)
        axes, out_shape, requant = plan
        total = x.array.sum(axis=axes, dtype=np.int32)
        result = ctx.output_buffer(0, out_shape, requant.dtype)
        requant(total.reshape(out_shape), result)
        return [result]


F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


class PreparedFloatMean:
    """reference.float_mean with the axes, shapes and divisor of each input shape worked out once."""

    fresh_outputs = True

    def __init__(self, pctx, dtype):
        self.kernel = pctx.step.kernel
        bound = pctx.step.bound
        self.x = bound.positions["input"]   # (read by position at run time: cheaper than ctx.args)
        self.axes = pctx.args.axes.array
        self.keep = bound.consts["keep_dims"] > 0
        self.dtype = dtype
        self.plans: dict = {}

    def _plan(self, ctx, shape: tuple):
        axes = resolve_axes(ctx, self.axes, len(shape))
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        if count == 0:
            return None   # (the kernel reports an empty reduction, or gives an empty input's NaNs)
        if len(self.plans) >= MAX_SHAPES:
            self.plans.clear()
        kept = reduced_shape(shape, axes, True)
        plan = self.plans[shape] = (axes, kept, reduced_shape(shape, axes, self.keep), mean_divisor(count))
        return plan

    def __call__(self, ctx):
        x = ctx.inputs[self.x]
        if x is None or x.array.dtype != self.dtype:
            return self.kernel(ctx)
        x = x.array
        plan = self.plans.get(x.shape)
        if plan is None and (plan := self._plan(ctx, x.shape)) is None:
            return self.kernel(ctx)
        axes, kept, out_shape, divisor = plan
        result = ctx.output_buffer(0, out_shape, self.dtype)
        if self.dtype == F16:   # in float32, rounded to float16 once, as the kernel
            result[...] = float_mean(x.astype(F32), axes, divisor).reshape(out_shape)
        else:
            float_mean(x, axes, divisor, out=result.reshape(kept))
        return [result]


@prepare(Op.MEAN)
def prepare_mean(pctx):
    bound = pctx.step.bound
    if bound.runtime != {"input"} or pctx.args.axes is None or bound.consts.get("keep_dims") is None:
        return None
    inp, out = bound.operand("input").type, pctx.out_type()
    if inp.dtype in (F32, F16) and inp.code == out.code and inp.is_tensor:
        return PreparedFloatMean(pctx, inp.dtype)
    if inp.code not in QUANT8 or out.code not in QUANT8:
        return None
    if (out.scale, out.zero_point) == (inp.scale, inp.zero_point):
        return None   # the kernel's truncating division of the raw sum
    return PreparedQuantMean(pctx)

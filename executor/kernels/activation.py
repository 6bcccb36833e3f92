"""RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH and PRELU kernels."""
from __future__ import annotations

import numpy as np

from nnapi.codes import FuseCode, OperationCode as Op

from ..registry import kernel
from .activation_fixed import hard_swish_quant, logistic_quant, tanh_quant
from .common import QUANT8, QUANT_RANGE, fuse_range
from .fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from .unary import float_result, requantize_to

_RELU_FUSE = {Op.RELU: FuseCode.RELU, Op.RELU1: FuseCode.RELU1, Op.RELU6: FuseCode.RELU6}


@kernel(Op.RELU, Op.RELU1, Op.RELU6)
def relu(ctx):
    """Clamp in the output's domain (quantized: the real bounds quantized with the output's scale)."""
    x, out = ctx.args.input, ctx.out_type()
    fuse = _RELU_FUSE[ctx.step.code]
    if x.code in QUANT8:
        lo, hi = fuse_range(fuse, out.code, out.scale, out.zero_point)
        return [np.clip(requantize_to(x, out), lo, hi).astype(out.dtype)]
    lo, hi = fuse_range(fuse)
    return [np.clip(x.array, lo, hi).astype(out.dtype)]


def _fixed_point(ctx, fn, *args):
    """Run a fixed-point kernel; scales it cannot represent end the execution with OP_FAILED."""
    try:
        return fn(*args).astype(ctx.out_type().dtype)
    except ValueError as e:
        ctx.fail(str(e))


@kernel(Op.LOGISTIC)
def logistic(ctx):
    x, out = ctx.args.input, ctx.out_type()
    if x.code in QUANT8:
        return [_fixed_point(ctx, logistic_quant, x.array, x.scale, x.zero_point, out.zero_point, out.code)]
    return [float_result(ctx, lambda v: 1.0 / (1.0 + np.exp(-v)), x)]


@kernel(Op.TANH)
def tanh(ctx):
    x, out = ctx.args.input, ctx.out_type()
    if x.code in QUANT8:
        return [_fixed_point(ctx, tanh_quant, x.array, x.scale, x.zero_point, out.zero_point, out.code)]
    return [float_result(ctx, np.tanh, x)]


@kernel(Op.ELU)
def elu(ctx):
    args = ctx.args
    alpha = np.float32(args.alpha)
    return [float_result(ctx, lambda v: np.where(v > 0, v, alpha * np.expm1(v)), args.input)]


@kernel(Op.HARD_SWISH)
def hard_swish(ctx):
    x, out = ctx.args.input, ctx.out_type()
    if x.code in QUANT8:
        return [_fixed_point(ctx, hard_swish_quant, x.array, x.scale, x.zero_point, out.scale,
                             out.zero_point, out.code)]
    return [float_result(ctx, lambda v: v * np.clip(v + 3.0, 0.0, 6.0) / 6.0, x)]


@kernel(Op.PRELU)
def prelu(ctx):
    args = ctx.args
    x, alpha, out = args.input, args.alpha, ctx.out_type()   # shapes that broadcast: the spec's rule
    if x.code in QUANT8:
        return [_prelu_quant(x, alpha, out)]
    return [float_result(ctx, lambda v, a: np.where(v >= 0, v, v * a), x, alpha)]


def _prelu_quant(x, alpha, out) -> np.ndarray:
    """Positive inputs rescale by s_x/s_out; negative ones by s_x*s_alpha/s_out times (alpha - zp_alpha)."""
    sx, sa, so = (float(np.float32(s)) for s in (x.scale, alpha.scale, out.scale))   # float32 scales
    m_pos, s_pos = quantize_multiplier(sx / so)
    m_neg, s_neg = quantize_multiplier(sx * sa / so)
    xv = x.array.astype(np.int64) - x.zero_point
    av = alpha.array.astype(np.int64) - alpha.zero_point
    xv, av = np.broadcast_arrays(xv, av)
    res = np.where(xv >= 0, multiply_by_quantized_multiplier(xv, m_pos, s_pos),
                   multiply_by_quantized_multiplier(xv * av, m_neg, s_neg)) + out.zero_point
    lo, hi = QUANT_RANGE[out.code]
    return np.clip(res, lo, hi).astype(out.dtype)

"""onnxruntime's run-time uint8 quantization (GetQuantizationParameter + MlasQuantizeLinear, as its
DynamicQuantizeLinear and DynamicQuantizeLSTM kernels use them) in NNAPI float32 operations:

    lo = min(min v, 0), hi = max(max v, 0)
    scale = (hi - lo) / 255, or 1 when hi == lo
    zero point zp = round_half_even(min(0 - lo / scale, 255))   (the clamp at 0: it is >= 0 already)
    q - zp = round_half_even(clamp(v / scale, -zp, 255 - zp))

each step one IEEE float32 operation as onnxruntime evaluates it, so the integers are onnxruntime's.
round_half_even(v) is (v + 1.5 * 2^23) - 1.5 * 2^23: float32 addition rounds half to even, and the sum's
unit in the last place is 1 for |v| <= 2^22 (every operand here is clamped to [-255, 255] first).
"""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

ROUNDER = float(1.5 * 2 ** 23)


class RuntimeQuantizer:
    """Emits the operations above into one conversion, its constants made once."""

    def __init__(self, ctx, prefix: str):
        self.ctx, self.prefix = ctx, prefix
        self.consts: dict = {}

    def c(self, value: float, dims=(1,)) -> int:
        key = (tuple(dims), float(value))
        if key not in self.consts:
            self.consts[key] = self.ctx.const(np.full(dims, value, np.float32),
                                              name=f"{self.prefix}/const{len(self.consts)}")
        return self.consts[key]

    def temp(self, dims, name: str) -> int:
        return self.ctx.temp(OperandType(C.TENSOR_FLOAT32, tuple(int(d) for d in dims)), f"{self.prefix}/{name}")

    def op(self, code: Op, a: int, b: int, dims, name: str, out: int = -1) -> int:
        out = self.temp(dims, name) if out < 0 else out
        fuse = {"fuse": self.ctx.i32(0)} if code in (Op.ADD, Op.SUB, Op.MUL, Op.DIV) else {}
        self.ctx.emit_form(code, "default", [out], input1=a, input2=b, **fuse)
        return out

    def round_half_even(self, v: int, dims, name: str, out: int = -1) -> int:
        up = self.op(Op.ADD, v, self.c(ROUNDER), dims, f"{name}/shifted")
        return self.op(Op.SUB, up, self.c(ROUNDER), dims, name, out)

    def _scale(self, v: int, dims, name: str, scale_out: int = -1) -> tuple:
        """(scale, lo / scale) of v (of dims): float32 operands of shape [1] * rank."""
        ctx, one = self.ctx, (1,) * len(dims)
        axes = ctx.const(np.arange(len(dims), dtype=np.int32))
        hi, lo = self.temp(one, f"{name}/max"), self.temp(one, f"{name}/min")
        ctx.emit_form(Op.REDUCE_MAX, "default", [hi], input=v, axes=axes, keep_dims=ctx.boolean(True))
        ctx.emit_form(Op.REDUCE_MIN, "default", [lo], input=v, axes=axes, keep_dims=ctx.boolean(True))
        hi = self.op(Op.MAXIMUM, hi, self.c(0.0), one, f"{name}/max0")
        lo = self.op(Op.MINIMUM, lo, self.c(0.0), one, f"{name}/min0")
        span = self.op(Op.SUB, hi, lo, one, f"{name}/span")
        empty = ctx.temp(OperandType(C.TENSOR_BOOL8, one), f"{self.prefix}/{name}/empty")
        ctx.emit_form(Op.EQUAL, "default", [empty], input1=span, input2=self.c(0.0, one))
        scale = self.temp(one, f"{name}/scale") if scale_out < 0 else scale_out
        ctx.emit_form(Op.SELECT, "default", [scale], condition=empty, input1=self.c(1.0, one),
                      input2=self.op(Op.DIV, span, self.c(255.0), one, f"{name}/span_255"))
        return scale, self.op(Op.DIV, lo, scale, one, f"{name}/min_scaled")

    def parameters(self, v: int, dims, name: str, scale_out: int = -1, zp_out: int = -1) -> tuple:
        """(scale, zero point) of v (of dims): float32 operands of shape [1] * rank."""
        one = (1,) * len(dims)
        scale, min_scaled = self._scale(v, dims, name, scale_out)
        zp = self.op(Op.SUB, self.c(0.0), min_scaled, one, f"{name}/zp_real")
        # the clamp's lower bound 0 needs no operation: lo <= 0 < scale, so 0 - lo / scale >= 0 (or NaN)
        zp = self.op(Op.MINIMUM, zp, self.c(255.0), one, f"{name}/zp_clamped")
        return scale, self.round_half_even(zp, one, f"{name}/zero_point", zp_out)

    def minus_zero_point(self, v: int, dims, scale: int, zp: int, name: str, out: int = -1) -> int:
        """q - zp of v quantized with (scale, zp): float32 integers in [-zp, 255 - zp]."""
        one = self.ctx.model.operands[zp].type.dimensions
        low = self.op(Op.SUB, self.c(0.0), zp, one, f"{name}/q_low")
        return self._clamped(v, dims, scale, low, self.op(Op.SUB, self.c(255.0), zp, one, f"{name}/q_high"), name, out)

    def _clamped(self, v: int, dims, scale: int, low: int, high: int, name: str, out: int = -1) -> int:
        ratio = self.op(Op.DIV, v, scale, dims, f"{name}/scaled")
        ratio = self.op(Op.MINIMUM, self.op(Op.MAXIMUM, ratio, low, dims, f"{name}/above"), high, dims,
                        f"{name}/clamped")
        return self.round_half_even(ratio, dims, f"{name}/q_minus_zp", out)

    def __call__(self, v: int, dims, name: str) -> tuple:
        """(q - zp, scale) of v, the zero point itself not needed: its negation -zp =
        round_half_even(max(lo / scale, -255)) exactly (0 - y is -y, min(-y, 255) is -max(y, -255), and
        rounding half to even is odd-symmetric), which is q - zp's lower bound; 255 - zp its upper one."""
        one = (1,) * len(dims)
        scale, min_scaled = self._scale(v, dims, name)
        low = self.round_half_even(self.op(Op.MAXIMUM, min_scaled, self.c(-255.0), one, f"{name}/neg_zp_clamped"),
                                   one, f"{name}/neg_zero_point")
        high = self.op(Op.ADD, self.c(255.0), low, one, f"{name}/q_high")
        return self._clamped(v, dims, scale, low, high, name), scale

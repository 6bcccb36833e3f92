"""Compiled elementwise operations on 8-bit quantized tensors: lookup tables.

An elementwise kernel's output element depends only on the input element(s)
and on parameters fixed at compilation (scales, zero points, fuse code). With
8-bit inputs that is a function of 256 values (unary) or 256 x 256 pairs
(binary), so the preparer runs the plain kernel once on every value and each
run is a table lookup: bit for bit the kernel's result, in one or two passes
instead of the kernel's dozens of fixed-point passes.

Nothing here changes what a kernel computes; it only tabulates it. The codes
that also have float/int32 fast paths are registered by elementwise_prepared.py
(one preparer per code), which asks `unary_table` / `binary_table` first.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ..registry import prepare
from .common import QUANT8

UNARY = (Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.HARD_SWISH, Op.DEQUANTIZE)
BINARY = (Op.ADD, Op.SUB, Op.MUL)
# the UNARY codes whose preparer lives here (the others: elementwise_prepared.py); ELU has no 8-bit form
UNARY_HERE = (Op.DEQUANTIZE,)
# below this many outputs a binary table (65536 kernel evaluations at compilation) does not pay
MIN_BINARY_OUTPUTS = 1024


def _all_values(dtype) -> np.ndarray:
    """The 256 values of an 8-bit type, ordered by their bit pattern (so uint8 views index them)."""
    return np.arange(256, dtype=np.uint8).view(dtype)


def _quant8_inputs(pctx, *names: str) -> bool:
    """Arguments `names` are run-time 8-bit quantized tensors, everything else constant or omitted."""
    bound = pctx.step.bound
    return bound.runtime == set(names) and all(bound.operand(n).type.code in QUANT8 for n in names)


class UnaryTable:
    fresh_outputs = True   # a table lookup (fancy indexing) makes a new array; so does the kernel

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        bound = pctx.step.bound
        self.dtype = bound.operand("input").type.dtype
        self.table = pctx.run_kernel({bound.positions["input"]: _all_values(self.dtype)})[0]

    def __call__(self, ctx):
        x = ctx.args.input
        if x is None or x.array.dtype != self.dtype:
            return self.kernel(ctx)
        return [self.table[x.array.view(np.uint8)]]


class BinaryTable:
    """table[a_bits * 256 + b_bits]; numpy broadcasting of the index is the operation's broadcasting."""

    fresh_outputs = True

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        bound = pctx.step.bound
        self.dtypes = (bound.operand("input1").type.dtype, bound.operand("input2").type.dtype)
        a, b = (_all_values(dt) for dt in self.dtypes)
        self.table = pctx.run_kernel({bound.positions["input1"]: np.repeat(a, 256),
                                      bound.positions["input2"]: np.tile(b, 256)})[0]

    def __call__(self, ctx):
        args = ctx.args
        a, b = args.input1, args.input2
        if a is None or b is None or (a.array.dtype, b.array.dtype) != self.dtypes:
            return self.kernel(ctx)
        high = np.left_shift(a.array.view(np.uint8), 8, dtype=np.uint16)
        return [self.table[np.bitwise_or(high, b.array.view(np.uint8))]]


def unary_table(pctx):
    """The table of a UNARY operation on a run-time 8-bit input, else None."""
    return UnaryTable(pctx) if _quant8_inputs(pctx, "input") else None


def binary_table(pctx):
    """The table of a BINARY operation on two run-time 8-bit inputs with enough outputs, else None."""
    dims = pctx.out_type().dimensions
    if not _quant8_inputs(pctx, "input1", "input2") or (dims and all(dims) and int(np.prod(dims)) < MIN_BINARY_OUTPUTS):
        return None
    return BinaryTable(pctx)


prepare(*UNARY_HERE)(unary_table)

"""Compiled elementwise operations on 8-bit quantized tensors: lookup tables.

An elementwise kernel's output element depends only on the input element(s)
and on parameters fixed at compilation (scales, zero points, fuse code). With
8-bit inputs that is a function of 256 values (unary) or 256 x 256 pairs
(binary), so the preparer runs the plain kernel once on every value and each
run is a table lookup: bit for bit the kernel's result, in one or two passes
instead of the kernel's dozens of fixed-point passes.

A binary operation with one constant operand (batch-norm ADD/MUL, PRELU's alpha) is a table per
constant element (ConstantOperandTable); one whose second input is a tabled unary operation of its
first (swish: x * logistic(x)) is a single table by x (SelfTable).

Nothing here changes what a kernel computes; it only tabulates it. The codes
that also have float/int32 fast paths are registered by elementwise/prepared.py
(one preparer per code), which asks `unary_table` / `binary_table` first.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ..registry import prepare
from .common import QUANT8

UNARY = (Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.HARD_SWISH, Op.DEQUANTIZE, Op.RSQRT)
BINARY = (Op.ADD, Op.SUB, Op.MUL)
# the UNARY codes whose preparer lives here (the others: elementwise/prepared.py); ELU has no 8-bit form
UNARY_HERE = (Op.DEQUANTIZE,)
# (a binary table costs 65536 kernel evaluations at compilation, about 2 ms; the kernel's dozens of
# int64 passes cost about 50 us a run even on a few hundred outputs, so every size gets one)
# a constant operand of at most this many elements gets 256 table entries per element
CONSTANT_LIMIT = 2048
# input shapes remembered per operation (their index offsets are kept expanded to the output shape)
MAX_SHAPES = 16


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
        return [np.take(self.table, x.array.view(np.uint8))]   # (np.take: faster than indexing)


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
        return [np.take(self.table, np.bitwise_or(high, b.array.view(np.uint8)))]


class ConstantOperandTable:
    """A binary elementwise operation of a run-time 8-bit input x and a constant c (n elements), e.g.
    ADD/MUL of batch-norm constants or PRELU's alpha: table[j * 256 + bits(x)] is the kernel on x
    against c's element j (the kernel run once on every x value against all of c). A run adds
    x's bits to the offsets j * 256 (expanded to the output shape once per input shape: numpy's
    broadcasting loop is slower than the add) and looks the sum up."""

    fresh_outputs = True

    def __init__(self, pctx, runtime: str, constant: str):
        self.kernel = pctx.step.kernel
        bound = pctx.step.bound
        self.runtime = bound.positions[runtime]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        self.dtype = bound.operand(runtime).type.dtype
        const = getattr(pctx.args, constant).array
        self.const_shape, n = const.shape, const.size
        values = _all_values(self.dtype).reshape((256,) + (1,) * const.ndim)
        out = pctx.run_kernel({self.runtime: values})[0]
        if out.shape != (256, *const.shape):
            raise ValueError("the kernel does not broadcast elementwise")   # (the kernel runs instead)
        self.table = np.ascontiguousarray(out.reshape(256, n).T).reshape(-1)
        self.index_dtype = np.dtype(np.uint16 if 256 * n <= 1 << 16 else np.int32)
        self.offsets = (np.arange(n, dtype=self.index_dtype) * 256).reshape(const.shape)
        self.plans: dict = {}
        self.scratch = pctx.compiled.scratch

    def _plan(self, shape: tuple):
        try:
            out_shape = np.broadcast_shapes(shape, self.const_shape)
        except ValueError:
            return None
        if len(self.plans) >= MAX_SHAPES:
            self.plans.clear()
        plan = self.plans[shape] = np.ascontiguousarray(np.broadcast_to(self.offsets, out_shape))
        return plan

    def __call__(self, ctx):
        x = ctx.inputs[self.runtime]
        if x is None or x.array.dtype != self.dtype:
            return self.kernel(ctx)
        offsets = self.plans.get(x.array.shape)
        if offsets is None and (offsets := self._plan(x.array.shape)) is None:
            return self.kernel(ctx)   # shapes that do not broadcast: the kernel reports them
        index = self.scratch.get("table_index", offsets.shape, self.index_dtype)
        np.add(x.array.view(np.uint8), offsets, out=index)
        return [np.take(self.table, index)]


def constant_operand_table(pctx, first: str, second: str):
    """The table of a binary elementwise operation on a run-time 8-bit input and a small constant
    tensor (arguments `first` and `second`, either order; any further arguments constant), else None."""
    bound, args = pctx.step.bound, pctx.args
    for r, k in ((first, second), (second, first)):
        c = args.get(k)
        if (bound.runtime == {r} and bound.operand(r).type.code in QUANT8 and c is not None
                and bound.operand(k).type.is_tensor and 0 < c.array.size <= CONSTANT_LIMIT):
            try:
                return ConstantOperandTable(pctx, r, k)
            except Exception:  # noqa: BLE001  (a constant the kernel refuses: it reports it at run time)
                return None
    return None


def unary_table(pctx):
    """The table of a UNARY operation on a run-time 8-bit input, else None."""
    return UnaryTable(pctx) if _quant8_inputs(pctx, "input") else None


class SelfTable:
    """A BINARY operation of x and u(x), u a tabled unary operation of the same x (swish: x * logistic(x)):
    the binary table read at (x, u[x]) for every x, so a run is one lookup by x. The u(x) operand is
    not read: the runtime skips the unary operation when nothing else reads its output
    (`unused_inputs`). Should the kernel have to run (an input of another dtype), the unary
    operation's kernel computes u(x) for it first."""

    fresh_outputs = True

    def __init__(self, kernel, position: int, other: int, dtype, table: np.ndarray, producer):
        """`position`, `other`: the input positions of x and u(x)."""
        self.kernel, self.position, self.other, self.dtype = kernel, position, other, dtype
        self.table, self.producer = table, producer
        self.unused_inputs = (other,)

    def __call__(self, ctx):
        x = ctx.inputs[self.position]
        if x is None or x.array.dtype != self.dtype:
            if x is not None and ctx.inputs[self.other] is None:
                inputs = list(ctx.inputs)   # (the runtime hands the inputs over as a tuple)
                inputs[self.other] = self._unary(ctx, x)
                ctx.inputs = inputs
            return self.kernel(ctx)
        return [np.take(self.table, x.array.view(np.uint8))]

    def _unary(self, ctx, x):
        from ..runtime import OpContext, Value   # (the runtime loads this module)
        step, compiled = self.producer, ctx.compiled
        inputs = [compiled.constants.get(i) for i in step.inputs]
        inputs[step.bound.positions["input"]] = x
        (u,) = step.kernel(OpContext(compiled, step, inputs, ctx.state))
        opnd = compiled.model.operands[step.outputs[0]]
        u = np.asarray(u, opnd.type.dtype)
        return Value(u, opnd.type.with_dimensions(u.shape), opnd.channel_quant)   # (np.take: faster than indexing)


def _self_table(pctx, binary: BinaryTable):
    """A SelfTable when one input is written by an operation prepared as a UnaryTable of the other."""
    steps, at = pctx.compiled.steps, pctx.step.bound.positions
    for k, (x_name, u_name) in enumerate((("input1", "input2"), ("input2", "input1"))):
        position, other = at[x_name], at[u_name]
        x, u = pctx.step.inputs[position], pctx.step.inputs[other]
        producer = next((s for s in steps if u in s.outputs), None)
        if (producer is None or type(producer.run) is not UnaryTable
                or producer.inputs[producer.bound.positions["input"]] != x):
            continue
        bits = np.arange(256)
        u_bits = producer.run.table.view(np.uint8).astype(np.intp)
        index = bits * 256 + u_bits if k == 0 else u_bits * 256 + bits   # (the table's index: input1's bits high)
        return SelfTable(pctx.step.kernel, position, other, binary.dtypes[k], binary.table[index], producer)
    return None


def binary_table(pctx):
    """The table of a BINARY operation on two run-time 8-bit inputs, else None."""
    if not _quant8_inputs(pctx, "input1", "input2"):
        return None
    table = BinaryTable(pctx)
    return _self_table(pctx, table) or table


@prepare(*UNARY_HERE)
def prepare_dequantize(pctx):
    return unary_table(pctx)

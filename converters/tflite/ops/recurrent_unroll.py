"""Unrolling a sequence op into per-step NNAPI ops: the exact lowering used when the
NNAPI sequence op is out of reach (below its feature level, or int8 LSTMs, which
NNAPI has only as the single-step QUANTIZED_LSTM).

Where the target level has SPLIT for the input's type (and the extents are known), the input
is made time-major [time * batch, features] (TRANSPOSE for a batch-major batch above 1, RESHAPE)
and cut into its steps by one SPLIT; the steps' outputs are joined by one CONCATENATION into
[time * batch, units] and given the output's shape back (RESHAPE, TRANSPOSE): four operations
or fewer instead of two per step. Below that level the input is cut with STRIDED_SLICE
(shrinking the time axis), each step's output gets the time axis back with RESHAPE and
CONCATENATION joins them. Every operation only moves values, each piece typed with its tensor's
own quantization, so no value is requantized and both forms give the same outputs."""
from __future__ import annotations

from typing import Callable

import numpy as np

from nnapi import OperandType, OperationCode as Op


def _vector(ctx, values) -> int:
    return ctx.const(np.asarray(values, np.int32))


def unroll(ctx, node, time_major: bool, step: Callable[[int, int, int], None]) -> None:
    """Emit `step(t, x_t, out_t)` for every time step t (in order) and assemble the output.

    x_t is the [batch, features] slice of input 0, out_t a [batch, units] operand the step must
    write, typed like output 0."""
    x, out = node.inputs[0], node.outputs[0]
    shape, out_shape = ctx.shape(x), ctx.shape(out)
    axis = 0 if time_major else 1
    x_type, out_type = ctx.model.operands[ctx.operand(x)].type, ctx.nnapi_type(out)[0]
    label = node.name or ctx.tensor(out).name
    if _splits(ctx, time_major, shape, out_shape, x_type, out_type):
        return _unroll_split(ctx, node, time_major, step, shape, out_shape, x_type, out_type, label)
    pieces = []
    for t in range(shape[axis]):
        begin, end = [0, 0, 0], list(shape)
        begin[axis], end[axis] = t, t + 1
        x_t = ctx.temp(OperandType(x_type.code, [d for k, d in enumerate(shape) if k != axis], x_type.scale,
                                   x_type.zero_point), f"{label}/input_step{t}")
        ctx.emit_form(Op.STRIDED_SLICE, "default", [x_t], input=ctx.operand(x), begin=_vector(ctx, begin),
                      end=_vector(ctx, end), strides=_vector(ctx, [1, 1, 1]), begin_mask=ctx.i32(0),
                      end_mask=ctx.i32(0), shrink_axis_mask=ctx.i32(1 << axis))
        step_dims = [d for k, d in enumerate(out_shape) if k != axis]
        out_t = ctx.temp(OperandType(out_type.code, step_dims, out_type.scale, out_type.zero_point),
                         f"{label}/output_step{t}")
        step(t, x_t, out_t)
        piece_dims = list(out_shape)
        piece_dims[axis] = 1
        piece = ctx.temp(OperandType(out_type.code, piece_dims, out_type.scale, out_type.zero_point),
                         f"{label}/output_step{t}/expanded")
        ctx.emit_form(Op.RESHAPE, "default", [piece], input=out_t, shape=_vector(ctx, piece_dims))
        pieces.append(piece)
    ctx.emit_form(Op.CONCATENATION, "default", [ctx.output(out)], inputs=pieces, axis=ctx.i32(axis))


def _like(otype: OperandType, dims) -> OperandType:
    return OperandType(otype.code, list(dims), otype.scale, otype.zero_point)


def _splits(ctx, time_major: bool, shape, out_shape, x_type, out_type) -> bool:
    """Whether the SPLIT form fits: known extents, more than one step, and the target level has the
    data movement it needs for both types (TRANSPOSE only for a batch-major batch above 1)."""
    if len(shape) != 3 or len(out_shape) != 3 or not all(d and d > 0 for d in list(shape) + list(out_shape)):
        return False
    steps, batch = (shape[0], shape[1]) if time_major else (shape[1], shape[0])
    moves = [Op.RESHAPE] + ([] if time_major or batch == 1 else [Op.TRANSPOSE])
    return steps > 1 and ctx.has(Op.SPLIT, T=x_type.code) and ctx.has(Op.CONCATENATION, T=out_type.code) \
        and all(ctx.has(code, T=t.code) for code in moves for t in (x_type, out_type))


def _unroll_split(ctx, node, time_major: bool, step, shape, out_shape, x_type, out_type, label) -> None:
    """unroll() with one SPLIT in and one CONCATENATION out (module docstring)."""
    steps, batch = (shape[0], shape[1]) if time_major else (shape[1], shape[0])
    features, units = shape[2], out_shape[2]
    swap = not time_major and batch > 1
    x = ctx.operand(node.inputs[0])
    if swap:
        tm = ctx.temp(_like(x_type, (steps, batch, features)), f"{label}/input_time_major")
        ctx.emit_form(Op.TRANSPOSE, "default", [tm], input=x, perm=_vector(ctx, [1, 0, 2]))
        x = tm
    rows = ctx.temp(_like(x_type, (steps * batch, features)), f"{label}/input_rows")
    ctx.emit_form(Op.RESHAPE, "default", [rows], input=x, shape=_vector(ctx, [steps * batch, features]))
    x_steps = [ctx.temp(_like(x_type, (batch, features)), f"{label}/input_step{t}") for t in range(steps)]
    ctx.emit_form(Op.SPLIT, "default", x_steps, input=rows, axis=ctx.i32(0), num_splits=ctx.i32(steps))
    pieces = []
    for t, x_t in enumerate(x_steps):
        out_t = ctx.temp(_like(out_type, (batch, units)), f"{label}/output_step{t}")
        step(t, x_t, out_t)
        pieces.append(out_t)
    joined = ctx.temp(_like(out_type, (steps * batch, units)), f"{label}/output_rows")
    ctx.emit_form(Op.CONCATENATION, "default", [joined], inputs=pieces, axis=ctx.i32(0))
    if not swap:   # [time * batch, units] holds the output's data order ([1, time, units] too)
        ctx.emit_form(Op.RESHAPE, "default", [ctx.output(node.outputs[0])], input=joined,
                      shape=_vector(ctx, list(out_shape)))
        return
    tm = ctx.temp(_like(out_type, (steps, batch, units)), f"{label}/output_time_major")
    ctx.emit_form(Op.RESHAPE, "default", [tm], input=joined, shape=_vector(ctx, [steps, batch, units]))
    ctx.emit_form(Op.TRANSPOSE, "default", [ctx.output(node.outputs[0])], input=tm, perm=_vector(ctx, [1, 0, 2]))

"""Unrolling a sequence op into per-step NNAPI ops: the exact lowering used when the
NNAPI sequence op is out of reach (below its feature level, or int8 LSTMs, which
NNAPI has only as the single-step QUANTIZED_LSTM).

The input is cut into time steps with STRIDED_SLICE (shrinking the time axis),
each step's output gets the time axis back with RESHAPE and CONCATENATION
joins them, all with the output's own quantization so no value is requantized."""
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

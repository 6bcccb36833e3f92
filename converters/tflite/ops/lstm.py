"""TFLite LSTMs -> NNAPI: LSTM (full kernel float / int8, basic kernel), UNIDIRECTIONAL_SEQUENCE_LSTM,
BIDIRECTIONAL_SEQUENCE_LSTM.

Variable state tensors become zero constants (recurrent_common.state_operand).
A sequence LSTM is unrolled into per-step LSTM / QUANTIZED_LSTM operations
when NNAPI's sequence op is out of reach: below its feature level (float),
or always for int8 (NNAPI has no integer sequence LSTM)."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op
from nnapi.ops import SPECS

from ...registry import Reason, Unsupported, converter
from .hybrid import float_values
from .lstm_basic import FULL, basic_lstm
from .lstm_integer import integer_args
from .recurrent_common import (GATES, LAYER_NORM, LAYER_NORM_FIRST, WEIGHTS, activation_code, check_merged_outputs,
                               clip_value, has_layer_norm, input_at, lstm_states, named_inputs, require_float, scratch)
from .recurrent_unroll import unroll


def _is_int8(ctx, node) -> bool:
    return np.dtype(ctx.tensor(node.inputs[0]).dtype) == np.int8


def _float_args(ctx, node, diagonal: bool = False) -> dict:
    """Weights (diagonal recurrent weights expanded), layer norm, activation and clips of a float LSTM."""
    require_float(ctx, node, range(1, 24))

    def weight(name, i):
        if diagonal and name.startswith("recurrent_to_"):
            # a [units] vector that multiplies h elementwise is the diagonal matrix
            values = float_values(ctx, i, "diagonal recurrent weights")
            return ctx.const(np.diag(values), name=ctx.tensor(i).name)
        return ctx.operand(i)
    named = {**named_inputs(ctx, node, 1, WEIGHTS, operand=weight), "activation": activation_code(ctx, node),
             "cell_clip": ctx.f32(clip_value(node, "cell_clip")), "proj_clip": ctx.f32(clip_value(node, "proj_clip"))}
    if has_layer_norm(node):
        named.update(named_inputs(ctx, node, LAYER_NORM_FIRST, LAYER_NORM))
    return named


def _step_emitter(ctx, node, integer: bool, named: dict):
    """step(t, x_t, out_t): one LSTM / QUANTIZED_LSTM step, chaining the states between calls."""
    state = lstm_states(ctx, node, 18)
    label = node.name or ctx.tensor(node.outputs[0]).name
    units = ctx.shape(node.inputs[6])[0]  # recurrent_to_forget_weights rows
    cifg = input_at(node, 1) < 0

    def step(t, x_t, out_t):
        h = ctx.temp(ctx.model.operands[state["output_state_in"]].type, f"{label}/output_state_{t}")
        c = ctx.temp(ctx.model.operands[state["cell_state_in"]].type, f"{label}/cell_state_{t}")
        if integer:
            ctx.emit_form(Op.QUANTIZED_LSTM, "default", [h, c, out_t], input=x_t, **state, **named)
        else:
            batch = ctx.model.operands[x_t].type.dimensions[0]
            buffer = scratch(ctx, (batch, units * (3 if cifg else 4)), f"{label}/scratch_{t}")
            ctx.emit_form(Op.LSTM, "default", [buffer, h, c, out_t], input=x_t, **state, **named)
        state.update(output_state_in=h, cell_state_in=c)
    return step


@converter("tflite", "LSTM", versions=(1, 4))
def lstm(node, ctx):
    """One LSTM step: full kernel (CIFG, peephole, projection, layer norm, clipping; float or int8) or basic."""
    if node.attrs.get("kernel_type", FULL) != FULL:
        return basic_lstm(node, ctx)
    integer = _is_int8(ctx, node)
    named = integer_args(ctx, node) if integer else _float_args(ctx, node)
    _step_emitter(ctx, node, integer, named)(0, ctx.operand(node.inputs[0]), ctx.output(node.outputs[0]))


@converter("tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM", versions=(1, 4))
def unidirectional_sequence_lstm(node, ctx):
    """An LSTM over a time-major or batch-major sequence (diagonal recurrent weights expanded)."""
    time_major = bool(node.attrs.get("time_major"))
    integer = _is_int8(ctx, node)
    if integer:
        named = integer_args(ctx, node)
    else:
        named = _float_args(ctx, node, diagonal=bool(node.attrs.get("diagonal_recurrent_tensors")))
    if integer or ctx.feature_level < min(c.level for c in SPECS[Op.UNIDIRECTIONAL_SEQUENCE_LSTM].type_cases):
        return unroll(ctx, node, time_major, _step_emitter(ctx, node, integer, named))
    ctx.emit_form(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, "default", [ctx.output(node.outputs[0])],
                  input=ctx.operand(node.inputs[0]), time_major=ctx.boolean(time_major),
                  **lstm_states(ctx, node, 18), **named)


@converter("tflite", "BIDIRECTIONAL_SEQUENCE_LSTM", versions=(1, 3))
def bidirectional_sequence_lstm(node, ctx):
    """Forward and backward LSTMs; merged or separate outputs; cross- or parallel-linked aux input."""
    require_float(ctx, node, range(1, 48))
    merge, time_major = bool(node.attrs.get("merge_outputs")), bool(node.attrs.get("time_major"))
    check_merged_outputs(node, merge)
    if merge and not time_major:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.op} merge_outputs with time_major=false: LiteRT's kernel leaves "
                                            f"part of the merged batch-major output unwritten (its values vary "
                                            f"between runs), so no conversion can match it")
    aux = ["aux_input"] + [f"fw_aux_input_to_{g}_weights" for g in GATES] + \
          [f"bw_aux_input_to_{g}_weights" for g in GATES]
    named = {**named_inputs(ctx, node, 1, WEIGHTS, "fw_"), **named_inputs(ctx, node, 18, WEIGHTS, "bw_"),
             **lstm_states(ctx, node, 35, "fw_"), **lstm_states(ctx, node, 37, "bw_"),
             **named_inputs(ctx, node, 39, aux), "activation": activation_code(ctx, node),
             "cell_clip": ctx.f32(clip_value(node, "cell_clip")), "proj_clip": ctx.f32(clip_value(node, "proj_clip")),
             "merge_outputs": ctx.boolean(merge), "time_major": ctx.boolean(time_major)}
    ctx.emit_form(Op.BIDIRECTIONAL_SEQUENCE_LSTM, "default", [ctx.output(o) for o in node.outputs],
                  input=ctx.operand(node.inputs[0]), **named)

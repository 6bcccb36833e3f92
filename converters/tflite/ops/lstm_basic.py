"""TFLite's basic LSTM kernel (LSTMOptions.kernel_type BASIC): inputs (input, previous
output, weights [4 * units, input + units], biases, previous cell state), outputs
(output, cell state, and two internal buffers). Float becomes NNAPI LSTM, uint8 /
int16 QUANTIZED_16BIT_LSTM; the stacked weights are split per gate."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperationCode as Op

from ...registry import Reason, Unsupported
from .recurrent_common import WEIGHTS, clip_value, omitted, scratch, tensor_used

FULL, BASIC = 0, 1  # LSTMOptions.kernel_type
TANH = 4
# TFLite's LstmCell stacks the gates as (input, new input = NNAPI's cell gate, forget, output)
_GATE_ROWS = {"input": 0, "cell": 1, "forget": 2, "output": 3}


def _check(node, ctx) -> None:
    for k in (2, 3):
        if tensor_used(ctx, node.outputs[k]):
            raise Unsupported(Reason.ATTRIBUTE, f"basic LSTM output {ctx.tensor(node.outputs[k]).name!r} "
                                                f"(an internal concatenation / activation buffer) is used")
    if node.attrs.get("fused_activation_function", TANH) != TANH or clip_value(node, "cell_clip") \
            or clip_value(node, "proj_clip"):
        raise Unsupported(Reason.ATTRIBUTE, "the basic LSTM kernel only supports TANH without clipping")


def _types(ctx, x, w, b) -> tuple:
    """(weight code, weight quantization, bias quantization) for a float or uint8 basic LSTM."""
    dt, wt, bt = np.dtype(ctx.tensor(x).dtype), ctx.tensor(w), ctx.tensor(b)
    if dt == np.float32:
        return C.TENSOR_FLOAT32, {}, {}
    if dt == np.uint8 and wt.quant is not None and bt.quant is not None:
        return (C.TENSOR_QUANT8_ASYMM, dict(scale=wt.quant.scale, zero_point=wt.quant.zero_point),
                dict(scale=bt.quant.scale, zero_point=0))
    raise Unsupported(Reason.QUANTIZATION_TYPE, f"basic LSTM input {ctx.tensor(x).name!r} is {dt.name}: NNAPI has "
                                                f"float and uint8 basic LSTMs only")


def basic_lstm(node, ctx):
    x, prev_h, w, b, prev_c = node.inputs[:5]
    _check(node, ctx)
    code, wq, bq = _types(ctx, x, w, b)
    weights, bias = ctx.const_value(w, "basic LSTM weights"), ctx.const_value(b, "basic LSTM bias")
    n_in, units = ctx.shape(x)[1], weights.shape[0] // 4
    split = n_in
    if code == C.TENSOR_QUANT8_ASYMM:
        # Android's reference QUANTIZED_16BIT_LSTM (which the CTS vectors, hence drivers, follow) lays
        # each gate out as [recurrent | input] yet multiplies it with [input, prev_output]; so TFLite's
        # [input | recurrent] rows go in split at `units` and swapped, which needs input size == units
        if n_in != units:
            raise Unsupported(Reason.ATTRIBUTE, f"basic LSTM input {ctx.tensor(x).name!r} has {n_in} features and "
                                                f"{units} units: NNAPI's QUANTIZED_16BIT_LSTM reference pairs the "
                                                f"weights with the inputs reliably only when they are equal")
        split = units
    wname, bname = ctx.tensor(w).name, ctx.tensor(b).name
    named = {}
    for gate, row in _GATE_ROWS.items():
        rows = slice(row * units, (row + 1) * units)
        first, second = weights[rows, :split], weights[rows, split:]
        if code == C.TENSOR_QUANT8_ASYMM:
            first, second = second, first
        named[f"input_to_{gate}_weights"] = ctx.const(first, code, f"{wname}/input_to_{gate}", **wq)
        named[f"recurrent_to_{gate}_weights"] = ctx.const(second, code, f"{wname}/recurrent_to_{gate}", **wq)
        named[f"{gate}_gate_bias"] = ctx.const(bias[rows], C.TENSOR_INT32 if bq else C.TENSOR_FLOAT32,
                                               f"{bname}/{gate}", **bq)
    h_out, c_out = ctx.output(node.outputs[0]), ctx.output(node.outputs[1])
    if code == C.TENSOR_QUANT8_ASYMM:
        ctx.emit_form(Op.QUANTIZED_16BIT_LSTM, "default", [c_out, h_out], input=ctx.operand(x),
                      prev_cell_state=ctx.operand(prev_c), prev_output=ctx.operand(prev_h), **named)
        return
    label = node.name or node.op
    for name in WEIGHTS[8:11] + WEIGHTS[15:]:  # no peepholes, no projection
        named[name] = omitted(ctx, f"{label}/{name}")
    batch = ctx.shape(x)[0]
    outs = [scratch(ctx, (batch, 4 * units), f"{label}/scratch_buffer"), h_out, c_out,
            scratch(ctx, (batch, units), f"{label}/output")]
    ctx.emit_form(Op.LSTM, "default", outs, input=ctx.operand(x), output_state_in=ctx.operand(prev_h),
                  cell_state_in=ctx.operand(prev_c), activation=ctx.i32(TANH), cell_clip=ctx.f32(0.0),
                  proj_clip=ctx.f32(0.0), **named)

"""The arguments of NNAPI QUANTIZED_LSTM for TFLite's fully integer (8x8_16) LSTM kernel:
int8 activations and weights, int16 cell state / peepholes / layer norms, int32 biases.

The gate and hidden-state scales live in the operator's five intermediate
tensors (SourceNode.intermediates)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperationCode as Op
from nnapi.ops import SPECS

from ...registry import Reason, Unsupported
from .recurrent_common import (GATES, LAYER_NORM, LAYER_NORM_FIRST, WEIGHTS, clip_value, has_layer_norm,
                               named_inputs)

NO_LAYER_NORM_GATE_SCALE = 2.0 ** -12  # TFLite's gate scale when the LSTM has no layer norm
# 8-bit weights are NNAPI TENSOR_QUANT8_SYMM; peepholes, biases and layer norms keep their types
_SYMM8_WEIGHTS = {n for n in WEIGHTS if n.startswith(("input_to_", "recurrent_to_"))} | {"projection_weights"}


def _absent_type(name: str) -> tuple:
    """The (code, scale) QUANTIZED_LSTM declares an omitted input with."""
    if name in _SYMM8_WEIGHTS:
        return C.TENSOR_QUANT8_SYMM, 1.0
    if name.endswith("_bias"):
        return C.TENSOR_INT32, 0.0
    return C.TENSOR_QUANT16_SYMM, 1.0  # peepholes and layer norm weights


def _symm8(ctx, i: int) -> int:
    """An int8 weight constant as TENSOR_QUANT8_SYMM (TFLite stores it as int8 with zero point 0)."""
    t = ctx.tensor(i)
    if t.quant is None or t.quant.per_channel or t.quant.zero_point != 0 or np.dtype(t.dtype) != np.int8:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"integer LSTM weights {t.name!r} must be int8, per-tensor, "
                                                    f"zero point 0")
    return ctx.const(ctx.const_value(i, "integer LSTM weights"), C.TENSOR_QUANT8_SYMM, t.name, t.quant.scale)


def _intermediates(ctx, node) -> list:
    inter = list(node.intermediates)
    if len(inter) != 5 or any(ctx.tensor(i).quant is None for i in inter[4:]):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"integer {node.op} {ctx.tensor(node.outputs[0]).name!r} needs "
                                                    f"5 intermediate tensors (gate and quantized hidden scales), has "
                                                    f"{len(inter)}")
    return inter


def integer_args(ctx, node) -> dict:
    """QUANTIZED_LSTM's weights, layer norms, clips and scales by name (states excluded)."""
    # below the op's level int8 tensors would become uint8, which QUANTIZED_LSTM does not take
    ctx.require_level(min(case.level for case in SPECS[Op.QUANTIZED_LSTM].type_cases), f"int8 {node.op}")
    inter = _intermediates(ctx, node)
    out_q, state_q = ctx.tensor(node.outputs[0]).quant, ctx.tensor(node.inputs[18]).quant
    if out_q != state_q:
        # TFLite copies the int8 output state into the output as stored values
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"int8 {node.op} output {ctx.tensor(node.outputs[0]).name!r} "
                                                    f"is quantized unlike its output state")
    layer_norm = has_layer_norm(node)
    named = named_inputs(ctx, node, 1, WEIGHTS, absent_type=_absent_type,
                         operand=lambda name, i: _symm8(ctx, i) if name in _SYMM8_WEIGHTS else ctx.operand(i))
    named.update(named_inputs(ctx, node, LAYER_NORM_FIRST, LAYER_NORM, absent_type=_absent_type))
    for gate, i in zip(GATES, inter[:4]):
        q = ctx.tensor(i).quant
        named[f"{gate}_intermediate_scale"] = ctx.f32(q.scale if layer_norm and q is not None
                                                      else NO_LAYER_NORM_GATE_SCALE)
    hidden = ctx.tensor(inter[4]).quant
    named.update(cell_clip=ctx.f32(clip_value(node, "cell_clip")), proj_clip=ctx.f32(clip_value(node, "proj_clip")),
                 hidden_state_zero_point=ctx.i32(hidden.zero_point), hidden_state_scale=ctx.f32(hidden.scale))
    return named

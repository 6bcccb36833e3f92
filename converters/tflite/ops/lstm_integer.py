"""The arguments of NNAPI QUANTIZED_LSTM for TFLite's fully integer (8x8_16) LSTM kernel:
int8 activations and weights, int16 cell state / peepholes / layer norms, int32 biases.

The gate and hidden-state scales live in the operator's five intermediate
tensors (SourceNode.intermediates)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperationCode as Op
from nnapi.ops import SPECS
from nnapi.ops.recurrent import QLSTM_MAX_CELL_SHIFT, QLSTM_MIN_TANH_CELL_SHIFT, qlstm_cell_shift

from ...registry import Reason, Unsupported
from .recurrent_common import (GATES, LAYER_NORM, LAYER_NORM_FIRST, WEIGHTS, clip_value, has_layer_norm,
                               input_at, named_inputs)

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
    label = f"integer {node.op} {ctx.tensor(node.outputs[0]).name!r}"
    if len(inter) != 5 or any(ctx.tensor(i).quant is None for i in inter[4:]):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label} needs 5 intermediate tensors (gate and quantized "
                                                    f"hidden scales), has {len(inter)}")
    unquantized = [ctx.tensor(i).name for i in inter[:4] if ctx.tensor(i).quant is None]
    if has_layer_norm(node) and unquantized:
        # LiteRT's preparation stops at the first one and runs with the scales it had not yet set
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label}: layer normalization needs quantized gate "
                                                    f"intermediates; {unquantized[0]!r} has no quantization")
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
    _check_defined(ctx, node)
    layer_norm = has_layer_norm(node)
    named = named_inputs(ctx, node, 1, WEIGHTS, absent_type=_absent_type,
                         operand=lambda name, i: _symm8(ctx, i) if name in _SYMM8_WEIGHTS else ctx.operand(i))
    named.update(named_inputs(ctx, node, LAYER_NORM_FIRST, LAYER_NORM, absent_type=_absent_type))
    for gate, i in zip(GATES, inter[:4]):
        q = ctx.tensor(i).quant
        named[f"{gate}_intermediate_scale"] = ctx.f32(q.scale if layer_norm and q is not None
                                                      else NO_LAYER_NORM_GATE_SCALE)
    hidden = ctx.tensor(inter[4]).quant
    # LiteRT feeds a projection the hidden state minus its zero point, clamped to int8, and adds zero point x
    # row sums to its bias (b/246629213); QUANTIZED_LSTM adds its hidden zero point and subtracts zero point
    # x row sums: with the zero point negated, the same values clamped alike
    projected = input_at(node, 16) >= 0
    named.update(cell_clip=ctx.f32(clip_value(node, "cell_clip")), proj_clip=ctx.f32(clip_value(node, "proj_clip")),
                 hidden_state_zero_point=ctx.i32(-hidden.zero_point if projected else hidden.zero_point),
                 hidden_state_scale=ctx.f32(hidden.scale))
    return named


def _check_defined(ctx, node) -> None:
    """A cell state scale QUANTIZED_LSTM takes, and parameters LiteRT computes a defined result for."""
    t = ctx.tensor(node.inputs[19])
    shift = None if t.quant is None else qlstm_cell_shift(t.quant.scale)
    if shift is None:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"integer {node.op} cell state {t.name!r}: scale "
                                                    f"{t.quant.scale if t.quant else None} is not a power of two at "
                                                    f"most 2^{QLSTM_MAX_CELL_SHIFT}, which NNAPI's QUANTIZED_LSTM needs")
    units, out_size = ctx.shape(node.inputs[6])   # recurrent_to_forget_weights
    label = f"integer {node.op} {ctx.tensor(node.outputs[0]).name!r}"
    if out_size != units and any(input_at(node, k) >= 0 for k in (9, 10, 11)):
        # LiteRT, as QUANTIZED_LSTM, applies peepholes with the output size as their length (nnapi.ops.recurrent)
        if out_size > units:
            raise Unsupported(Reason.ATTRIBUTE, f"{label}: peephole weights with an output size {out_size} above the "
                                                f"number of units {units}: LiteRT's kernel reads past "
                                                f"them")
        rows = ctx.shape(node.inputs[0])[0]
        if node.op != "LSTM" and not node.attrs.get("time_major") and rows != 1:
            raise Unsupported(Reason.ATTRIBUTE, f"{label}: with a projection to fewer outputs than units, LiteRT "
                                                f"applies the peepholes to each batch row of a batch-major sequence "
                                                f"alone, but to the batch as one (flattened) row otherwise, as "
                                                f"QUANTIZED_LSTM does: no conversion of {rows} batch-major rows "
                                                f"can match it")
    if shift < QLSTM_MIN_TANH_CELL_SHIFT and input_at(node, 1) < 0:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label} cell state {t.name!r}: with CIFG and a scale "
                                                    f"below 2^{QLSTM_MIN_TANH_CELL_SHIFT} LiteRT's kernel reads a "
                                                    f"buffer it never wrote (its results vary between runs), so no "
                                                    f"conversion can match it")

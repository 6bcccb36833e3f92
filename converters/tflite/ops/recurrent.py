"""TFLite basic RNNs, SVDF and LSH_PROJECTION -> NNAPI (the LSTMs are in lstm.py).

TFLite keeps recurrent state in variable tensors that start at zero; one
NNAPI execution is one invocation of a fresh interpreter, so the state
inputs become zero constants (recurrent_common.state_operand) and the
NNAPI state outputs are scratch operands. Quantized variants have no NNAPI
counterpart and are reported; hybrid ones (int8 weights, float input) run in
float on dequantized weights (hybrid.py)."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op
from nnapi.ops import SPECS

from ...registry import Reason, Unsupported, converter
from .recurrent_common import (activation_code, check_merged_outputs, input_at, optional_operand, require_float,
                               scratch, starts_at_zero, state_operand)
from .common import require_arity
from .hybrid import is_hybrid
from .recurrent_unroll import unroll


def _rnn_cell(ctx, node, first: int, prefix: str = "") -> dict:
    """weights, recurrent weights, bias and hidden state at inputs[first:first + 4], by NNAPI name."""
    w, r, b, h = node.inputs[first:first + 4]
    names = ("weights", "recurrent_weights", "bias")
    named = {f"{prefix}{n}": ctx.operand(i) for n, i in zip(names, (w, r, b))}
    named[f"{prefix}hidden_state" if prefix else "hidden_state_in"] = state_operand(ctx, h)
    return named


def _state_scratch(ctx, node, k: int, what: str) -> int:
    return scratch(ctx, ctx.shape(node.inputs[k]), f"{node.name or node.op}/{what}")


@converter("tflite", "RNN", versions=(1, 3))
def rnn(node, ctx):
    """One basic RNN step: h = act(W x + R h + b)."""
    require_arity(node, 5)
    require_float(ctx, node, (1, 2, 3))
    named = _rnn_cell(ctx, node, 1)
    out = ctx.output(node.outputs[0])
    ctx.emit_form(Op.RNN, "default", [_state_scratch(ctx, node, 4, "hidden_state_out"), out],
                  input=ctx.operand(node.inputs[0]), activation=activation_code(ctx, node), **named)


@converter("tflite", "UNIDIRECTIONAL_SEQUENCE_RNN", versions=(1, 3))
def unidirectional_sequence_rnn(node, ctx):
    """A basic RNN over a time-major or batch-major sequence (unrolled into RNN steps below its level)."""
    require_arity(node, 5)
    require_float(ctx, node, (1, 2, 3))
    named = dict(_rnn_cell(ctx, node, 1), activation=activation_code(ctx, node))
    time_major = bool(node.attrs.get("time_major"))
    if ctx.feature_level < min(c.level for c in SPECS[Op.UNIDIRECTIONAL_SEQUENCE_RNN].type_cases):
        return unroll(ctx, node, time_major, _rnn_steps(ctx, node, named))
    ctx.emit_form(Op.UNIDIRECTIONAL_SEQUENCE_RNN, "default", [ctx.output(node.outputs[0])],
                  input=ctx.operand(node.inputs[0]), time_major=ctx.i32(int(time_major)), **named)


def _rnn_steps(ctx, node, named: dict):
    """step(t, x_t, out_t) for unroll(): one RNN step, chaining the hidden state."""
    named = dict(named)
    label = node.name or ctx.tensor(node.outputs[0]).name

    def step(t, x_t, out_t):
        h = ctx.temp(ctx.model.operands[named["hidden_state_in"]].type, f"{label}/hidden_state_{t}")
        ctx.emit_form(Op.RNN, "default", [h, out_t], input=x_t, **named)
        named["hidden_state_in"] = h
    return step


@converter("tflite", "BIDIRECTIONAL_SEQUENCE_RNN", versions=(1, 3))
def bidirectional_sequence_rnn(node, ctx):
    """Forward and backward basic RNNs; merged or separate outputs; cross- or parallel-linked aux input."""
    require_arity(node, 9)
    require_float(ctx, node, (1, 2, 3, 5, 6, 7, 9, 10, 11))
    merge, time_major = bool(node.attrs.get("merge_outputs")), bool(node.attrs.get("time_major"))
    width = ctx.shape(node.inputs[0])[-1]
    aux_width = ctx.shape(node.inputs[9])[-1] if input_at(node, 10) >= 0 else None
    if is_hybrid(ctx, node.inputs[0], node.inputs[1]):
        if aux_width is not None:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.op} with int8 weights and an aux input "
                                                f"{ctx.tensor(node.inputs[9]).name!r}: LiteRT's hybrid kernel then "
                                                f"reads memory it never wrote (its results vary between runs), so "
                                                f"no conversion can match it")
        steps = ctx.shape(node.inputs[0])[0]
        if time_major and steps != 1:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.op} time-major with int8 weights: LiteRT's hybrid kernel "
                                                f"runs the {steps}-step sequence {steps} times over, carrying the "
                                                f"hidden states, so no conversion of the one pass can match it")
    if time_major and aux_width is not None and aux_width != width:
        aux = ctx.tensor(node.inputs[9]).name
        raise Unsupported(Reason.ATTRIBUTE, f"{node.op} time-major with an aux input {aux!r} of {aux_width} features, "
                                            f"not the input's {width}: LiteRT's kernel steps through it by the "
                                            f"input's width (misaligned rows, or reads past its end), so no "
                                            f"conversion can match it")
    named = {**_rnn_cell(ctx, node, 1, "fw_"), **_rnn_cell(ctx, node, 5, "bw_")}
    for k, name in ((9, "aux_input"), (10, "fw_aux_weights"), (11, "bw_aux_weights")):
        named[name] = optional_operand(ctx, node, k, name)
    check_merged_outputs(node, merge)
    outs = [ctx.output(o) for o in node.outputs]
    ctx.emit_form(Op.BIDIRECTIONAL_SEQUENCE_RNN, "default", outs, input=ctx.operand(node.inputs[0]),
                  activation=activation_code(ctx, node), time_major=ctx.boolean(time_major),
                  merge_outputs=ctx.boolean(merge), **named)


@converter("tflite", "SVDF", versions=(1, 4))
def svdf(node, ctx):
    """Rank-limited 1-D convolution over time (float only: integer SVDF has no NNAPI form)."""
    require_arity(node, 5)
    require_float(ctx, node, (1, 2, 3))
    if not starts_at_zero(ctx, node.inputs[4]):
        # TFLite stores the full window of the last `memory` activations, Android's SVDF the
        # window shifted by one step: only the all-zero initial state means the same to both
        raise Unsupported(Reason.ATTRIBUTE, f"SVDF state {ctx.tensor(node.inputs[4]).name!r} is not a zero-initialised "
                                            f"variable: NNAPI lays the SVDF state out one step shifted")
    rank = int(node.attrs.get("rank", 0))
    filters = ctx.shape(node.inputs[2])[0]
    if rank <= 0 or filters % rank:
        raise Unsupported(Reason.ATTRIBUTE, f"SVDF rank {rank} must be positive and divide the {filters} filters "
                                            f"of {ctx.tensor(node.inputs[2]).name!r}")
    named = dict(input=ctx.operand(node.inputs[0]), weights_feature=ctx.operand(node.inputs[1]),
                 weights_time=ctx.operand(node.inputs[2]), bias=optional_operand(ctx, node, 3, "bias"),
                 state_in=state_operand(ctx, node.inputs[4]))
    out = ctx.output(node.outputs[0])
    ctx.emit_form(Op.SVDF, "default", [_state_scratch(ctx, node, 4, "state_out"), out],
                  rank=ctx.i32(rank), activation=activation_code(ctx, node), **named)


# TFLite LSHProjectionType -> NNAPI type: TFLite's SPARSE adds the per-hash-function
# offset i << num_bits, which is NNAPI's SPARSE (3), not the deprecated 1
_LSH_TYPES = {1: 3, 2: 2}


@converter("tflite", "LSH_PROJECTION", versions=(1, 1))
def lsh_projection(node, ctx):
    """Sign bits of seeded Fingerprint64 hashes of each input row (sparse or dense)."""
    kind = node.attrs.get("type", 0)
    if kind not in _LSH_TYPES:
        raise Unsupported(Reason.ATTRIBUTE, f"LSH_PROJECTION type {kind} is neither SPARSE (1) nor DENSE (2)")
    hash_t, x = ctx.tensor(node.inputs[0]), ctx.tensor(node.inputs[1])
    if np.dtype(hash_t.dtype) != np.float32:
        raise Unsupported(Reason.OPERAND_TYPE, f"hash tensor {hash_t.name!r} must be float32")
    if np.dtype(x.dtype) == np.int8:
        # the hash reads the stored bytes: no uint8 rewrite and no signed NNAPI variant keep them
        raise Unsupported(Reason.OPERAND_TYPE, f"LSH_PROJECTION input {x.name!r} is int8, which NNAPI's "
                                               f"LSH_PROJECTION does not accept")
    out = ctx.output(node.outputs[0])
    ctx.emit_form(Op.LSH_PROJECTION, "default", [out], hash=ctx.operand(node.inputs[0]),
                  input=ctx.operand(node.inputs[1]), weight=optional_operand(ctx, node, 2, "weight"),
                  type=ctx.i32(_LSH_TYPES[kind]))

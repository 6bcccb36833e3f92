"""Recurrent operations: RNN, SVDF, the LSTM variants and their sequence forms.

Type variables: "T" is the float tensor type of every data operand, "S" the
float scalar type of the clipping thresholds (FLOAT32 with float32 tensors,
FLOAT16 with float16 tensors).
"""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .base import Form, OpSpec, TypeCase, arg, opt, output_ranks, rank_in

_FLOAT = [TypeCase(1, T=C.TENSOR_FLOAT32, S=C.FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16, S=C.FLOAT16)]
_FLOAT_FL3 = [TypeCase(3, T=C.TENSOR_FLOAT32, S=C.FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16, S=C.FLOAT16)]
_GATES = ("input", "forget", "cell", "output")


def _t(name, omittable=False):
    return arg(name, "T", omittable=omittable)


def _lstm_weights(prefix=""):
    """The 18 per-direction LSTM weight operands (inputs 1..17 of LSTM), CIFG/peephole/projection omittable."""
    ins = [_t(f"{prefix}input_to_{g}_weights", omittable=g == "input") for g in _GATES]
    ins += [_t(f"{prefix}recurrent_to_{g}_weights", omittable=g == "input") for g in _GATES]
    ins += [_t(f"{prefix}cell_to_{g}_weights", omittable=True) for g in ("input", "forget", "output")]
    ins += [_t(f"{prefix}{g}_gate_bias", omittable=g == "input") for g in _GATES]
    ins += [_t(f"{prefix}projection_weights", omittable=True), _t(f"{prefix}projection_bias", omittable=True)]
    return ins


def _layer_norm(prefix="", level=3):
    return [opt(f"{prefix}{g}_layer_norm_weights", "T", level=level, omittable=True) for g in _GATES]


def _layer_norm_level(*prefixes):
    """Layer normalization (present layer-norm weights) needs feature level 3."""
    def rule(v):
        return 3 if any(v.has(f"{p}{g}_layer_norm_weights") for p in prefixes for g in _GATES) else 1
    return rule


_CLIPS = [arg("activation", C.INT32), arg("cell_clip", "S"), arg("proj_clip", "S")]


def _bidirectional_output_ranks(v):
    """Outputs [fw_output, bw_output (absent when merge_outputs), state outputs...]: the sequence
    outputs have rank 3, the states rank 2. Outputs are positional, so the names of the form do not
    apply once bw_output is left out."""
    merge = v.const("merge_outputs")
    outs = [v.model.operands[i] for i in v.model.operations[v.index].outputs]
    if merge is None:
        expected = [3]
    else:
        expected = [3] + ([] if merge else [3]) + [2] * len(outs)
    for k, (o, want) in enumerate(zip(outs, expected)):
        r = o.type.rank
        if r is not None and r != want:
            yield f"output {k} has rank {r}, expected {want}"


def _all_or_no_layer_norm(*prefixes):
    """The layer-normalization inputs come as a group: all four per direction (some may be omitted
    operands) or none (the NDK takes 23 or 27 LSTM inputs, nothing in between)."""
    def rule(v):
        for p in prefixes:
            present = [g for g in _GATES if f"{p}{g}_layer_norm_weights" in v._in]
            if present and len(present) != len(_GATES):
                yield (f"{len(present)} of the 4 {p}layer normalization weight inputs are given; "
                       f"give all four (omitted ones as NO_VALUE) or none")
    return rule

register(OpSpec(
    code=Op.LSTM,
    forms=[Form("default",
                [_t("input")] + _lstm_weights() + [_t("output_state_in"), _t("cell_state_in")] + _CLIPS
                + _layer_norm(),
                [_t("scratch_buffer"), _t("output_state_out"), _t("cell_state_out"), _t("output")])],
    type_cases=_FLOAT,
    rules=[rank_in("input", (2,)), rank_in("output_state_in", (2,)), rank_in("cell_state_in", (2,)),
           _all_or_no_layer_norm(""),
           *output_ranks(scratch_buffer=2, output_state_out=2, cell_state_out=2, output=2)],
    level_rules=[_layer_norm_level("")],
    doc="one LSTM time step; CIFG, peephole, projection, clipping and (level 3) layer normalization",
))

register(OpSpec(
    code=Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
    forms=[Form("default",
                [_t("input")] + _lstm_weights() + [_t("output_state_in"), _t("cell_state_in")] + _CLIPS
                + [arg("time_major", C.BOOL)] + _layer_norm(),
                [_t("output"), opt("output_state_out", "T", level=4), opt("cell_state_out", "T", level=4)])],
    type_cases=_FLOAT_FL3,
    rules=[rank_in("input", (3,)), _all_or_no_layer_norm(""),
           *output_ranks(output=3, output_state_out=2, cell_state_out=2)],
    doc="an LSTM over a [time, batch, input] (or batch-major) sequence",
))

register(OpSpec(
    code=Op.BIDIRECTIONAL_SEQUENCE_LSTM,
    forms=[Form("default",
                [_t("input")] + _lstm_weights("fw_") + _lstm_weights("bw_")
                + [_t("fw_output_state_in"), _t("fw_cell_state_in"), _t("bw_output_state_in"),
                   _t("bw_cell_state_in"), _t("aux_input", omittable=True)]
                + [_t(f"fw_aux_input_to_{g}_weights", omittable=True) for g in _GATES]
                + [_t(f"bw_aux_input_to_{g}_weights", omittable=True) for g in _GATES]
                + _CLIPS + [arg("merge_outputs", C.BOOL), arg("time_major", C.BOOL)]
                + _layer_norm("fw_") + _layer_norm("bw_"),
                [_t("fw_output"), opt("bw_output", "T"),
                 opt("fw_output_state_out", "T", level=4), opt("fw_cell_state_out", "T", level=4),
                 opt("bw_output_state_out", "T", level=4), opt("bw_cell_state_out", "T", level=4)])],
    type_cases=_FLOAT_FL3,
    rules=[rank_in("input", (3,)), _all_or_no_layer_norm("fw_", "bw_"),
           _bidirectional_output_ranks],
    doc="forward and backward LSTMs over one sequence, optional auxiliary input, merged or separate outputs",
))

_RNN_ARGS = [_t("input"), _t("weights"), _t("recurrent_weights"), _t("bias"), _t("hidden_state_in"),
             arg("activation", C.INT32)]

register(OpSpec(
    code=Op.RNN,
    forms=[Form("default", _RNN_ARGS, [_t("hidden_state_out"), _t("output")])],
    type_cases=[TypeCase(1, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16)],
    rules=[rank_in("input", (2,)), rank_in("hidden_state_in", (2,)),
           *output_ranks(hidden_state_out=2, output=2)],
    doc="one basic RNN step: h = activation(W x + R h + b)",
))

register(OpSpec(
    code=Op.UNIDIRECTIONAL_SEQUENCE_RNN,
    forms=[Form("default", _RNN_ARGS + [arg("time_major", C.INT32)],
                [_t("output"), opt("hidden_state_out", "T", level=4)])],
    type_cases=[TypeCase(3, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16)],
    rules=[rank_in("input", (3,)), *output_ranks(output=3, hidden_state_out=2)],
    doc="a basic RNN over a sequence",
))

register(OpSpec(
    code=Op.BIDIRECTIONAL_SEQUENCE_RNN,
    forms=[Form("default",
                [_t("input"), _t("fw_weights"), _t("fw_recurrent_weights"), _t("fw_bias"), _t("fw_hidden_state"),
                 _t("bw_weights"), _t("bw_recurrent_weights"), _t("bw_bias"), _t("bw_hidden_state"),
                 _t("aux_input", omittable=True), _t("fw_aux_weights", omittable=True),
                 _t("bw_aux_weights", omittable=True), arg("activation", C.INT32), arg("time_major", C.BOOL),
                 arg("merge_outputs", C.BOOL)],
                [_t("fw_output"), opt("bw_output", "T"), opt("fw_hidden_state_out", "T", level=4),
                 opt("bw_hidden_state_out", "T", level=4)])],
    type_cases=[TypeCase(3, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16)],
    rules=[rank_in("input", (3,)), _bidirectional_output_ranks],
    doc="forward and backward basic RNNs over one sequence",
))

register(OpSpec(
    code=Op.SVDF,
    forms=[Form("default",
                [_t("input"), _t("weights_feature"), _t("weights_time"), _t("bias", omittable=True),
                 _t("state_in"), arg("rank", C.INT32), arg("activation", C.INT32)],
                [_t("state_out"), _t("output")])],
    type_cases=[TypeCase(1, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16)],
    rules=[rank_in("input", (2,)), rank_in("state_in", (2,)), *output_ranks(state_out=2, output=2)],
    doc="singular value decomposition filter: a rank-limited 1-D convolution over time",
))


# -- quantized LSTMs ---------------------------------------------------------------

def _fixed_quant(*checks):
    """Each check is (argument name, scale, zero point) that the NNAPI docs fix."""
    def rule(v):
        for name, scale, zp in checks:
            for o in v.inputs(name) + v.outputs(name):
                if o is None or o.is_omitted:
                    continue
                if abs(o.type.scale - scale) > 1e-9 * max(1.0, scale) or o.type.zero_point != zp:
                    yield (f"{name} must have scale {scale:g} and zero point {zp}, "
                           f"got scale {o.type.scale:g} zero point {o.type.zero_point}")
    return rule


def _q16_weights_share_quant(v):
    names = [f"{k}_to_{g}_weights" for k in ("input", "recurrent") for g in _GATES]
    quants = {(v.input(n).type.scale, v.input(n).type.zero_point) for n in names if v.input(n) is not None}
    if len(quants) > 1:
        yield "all weights must share one scale and zero point"
    w = v.input("input_to_input_weights")
    inp = v.input("input")
    if w is None or inp is None:
        return
    expected = inp.type.scale * w.type.scale
    for g in _GATES:
        b = v.input(f"{g}_gate_bias")
        if b is not None and (b.type.zero_point != 0 or abs(b.type.scale - expected) > 1e-6 * expected):
            yield f"{g}_gate_bias must have zero point 0 and scale input scale x weights scale = {expected:g}"


register(OpSpec(
    code=Op.QUANTIZED_16BIT_LSTM,
    forms=[Form("default",
                [arg("input", C.TENSOR_QUANT8_ASYMM)]
                + [arg(f"{k}_to_{g}_weights", C.TENSOR_QUANT8_ASYMM) for k in ("input", "recurrent") for g in _GATES]
                + [arg(f"{g}_gate_bias", C.TENSOR_INT32) for g in _GATES]
                + [arg("prev_cell_state", C.TENSOR_QUANT16_SYMM), arg("prev_output", C.TENSOR_QUANT8_ASYMM)],
                [arg("cell_state_out", C.TENSOR_QUANT16_SYMM), arg("output", C.TENSOR_QUANT8_ASYMM)])],
    type_cases=[TypeCase(3)],
    rules=[rank_in("input", (2,)),
           _fixed_quant(("input", 1 / 128, 128), ("prev_output", 1 / 128, 128), ("output", 1 / 128, 128),
                        ("prev_cell_state", 2 ** -11, 0), ("cell_state_out", 2 ** -11, 0)),
           _q16_weights_share_quant, *output_ranks(cell_state_out=2, output=2)],
    doc="one uint8/int16 LSTM step with gemmlowp fixed-point gates (TFLite's quantized LstmCell)",
))

_W8, _Q16, _I32 = C.TENSOR_QUANT8_SYMM, C.TENSOR_QUANT16_SYMM, C.TENSOR_INT32

register(OpSpec(
    code=Op.QUANTIZED_LSTM,
    forms=[Form("default",
                [arg("input", C.TENSOR_QUANT8_ASYMM_SIGNED)]
                + [arg(f"input_to_{g}_weights", _W8, omittable=g == "input") for g in _GATES]
                + [arg(f"recurrent_to_{g}_weights", _W8, omittable=g == "input") for g in _GATES]
                + [arg(f"cell_to_{g}_weights", _Q16, omittable=True) for g in ("input", "forget", "output")]
                + [arg(f"{g}_gate_bias", _I32, omittable=g == "input") for g in _GATES]
                + [arg("projection_weights", _W8, omittable=True), arg("projection_bias", _I32, omittable=True),
                   arg("output_state_in", C.TENSOR_QUANT8_ASYMM_SIGNED), arg("cell_state_in", _Q16)]
                + [arg(f"{g}_layer_norm_weights", _Q16, omittable=True) for g in _GATES]
                + [arg("cell_clip", C.FLOAT32), arg("proj_clip", C.FLOAT32)]
                + [arg(f"{g}_intermediate_scale", C.FLOAT32) for g in _GATES]
                + [arg("hidden_state_zero_point", C.INT32), arg("hidden_state_scale", C.FLOAT32)],
                [arg("output_state_out", C.TENSOR_QUANT8_ASYMM_SIGNED), arg("cell_state_out", _Q16),
                 arg("output", C.TENSOR_QUANT8_ASYMM_SIGNED)])],
    type_cases=[TypeCase(4)],
    rules=[rank_in("input", (2,)), *output_ranks(output_state_out=2, cell_state_out=2, output=2)],
    doc="one int8/int16 LSTM step with integer layer normalization (TFLite's fully integer LSTM)",
))

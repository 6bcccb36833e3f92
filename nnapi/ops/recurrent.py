"""Recurrent operations: RNN, SVDF, the LSTM variants and their sequence forms.

Type variables: "T" is the float tensor type of every data operand, "S" the
float scalar type of the clipping thresholds (FLOAT32 with float32 tensors,
FLOAT16 with float16 tensors).
"""
from __future__ import annotations

import math

from ..bias_scale import bias_scale, bias_scale_matches
from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .rules import output_ranks, rank_in
from .spec import Form, OpSpec, TypeCase, arg, opt

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


# -- shape inference ------------------------------------------------------------------
# Sizes come from whichever operands carry them (the executor's kernels check that they
# agree): an extent is known when every operand that gives it agrees, else 0. Omittable
# operands that are model inputs are not trusted for sizes: the caller may pass them empty
# at execution (that is how the CTS gives CIFG and projection-less LSTMs), whatever their
# declared dimensions.

def _ext(v, name: str, axis: int) -> int:
    """Extent `axis` of input `name` (0 when absent, omitted, of unknown rank or too low a rank)."""
    d = v.dims(name)
    return d[axis] if d is not None and -len(d) <= axis < len(d) else 0


def _agree(*extents) -> int:
    """The one extent every known (non-zero) candidate gives, 0 when none is known or they clash."""
    known = {int(e) for e in extents if e}
    return known.pop() if len(known) == 1 else 0


def _may_be_empty(v, name: str) -> bool:
    """An omittable operand a caller can still leave empty at execution (a model input)."""
    return v._in.get(name) in v.model.inputs


def _sure_ext(v, name: str, axis: int) -> int:
    """_ext of an omittable input, 0 when it is a model input that may be passed empty."""
    return 0 if _may_be_empty(v, name) else _ext(v, name, axis)


def _cifg(v, prefix: str = ""):
    """True (no input gate: input_to_input_weights omitted), False, or None when that is only decided
    at execution (a model input that may be passed empty)."""
    name = f"{prefix}input_to_input_weights"
    if not v.has(name):
        return True
    if _may_be_empty(v, name):
        return None
    d = v.dims(name)
    return False if d and all(d) else None


def _lstm_sizes(v, prefix: str = "", state_in: str = "output_state_in", cell_in: str = "cell_state_in"):
    """(num_units, output_size) of one LSTM direction from its weights, biases and states."""
    p = prefix
    gates = ("forget", "cell", "output")
    units = _agree(*(_ext(v, f"{p}input_to_{g}_weights", 0) for g in gates),
                   *(_ext(v, f"{p}recurrent_to_{g}_weights", 0) for g in gates),
                   *(_ext(v, f"{p}{g}_gate_bias", 0) for g in gates),
                   _ext(v, f"{p}{cell_in}", 1))
    out = _agree(*(_ext(v, f"{p}recurrent_to_{g}_weights", 1) for g in gates),
                 _ext(v, f"{p}{state_in}", 1),
                 _sure_ext(v, f"{p}projection_weights", 0), _sure_ext(v, f"{p}projection_bias", 0))
    return units, out


def lstm_weight_shapes(prefix: str, units: int, out: int, input_size: int) -> list:
    """[(argument name, expected shape)] of one LSTM direction's weights and biases (0 = not known): the
    one statement of these shapes, which the spec checks on declared operands and the executor's kernels
    on run-time values (executor/kernels/recurrent/lstm.py check_lstm)."""
    p, shapes = prefix, []
    for g in _GATES:
        shapes += [(f"{p}input_to_{g}_weights", (units, input_size)), (f"{p}recurrent_to_{g}_weights", (units, out)),
                   (f"{p}{g}_gate_bias", (units,)), (f"{p}{g}_layer_norm_weights", (units,))]
    shapes += [(f"{p}cell_to_{g}_weights", (units,)) for g in ("input", "forget", "output")]
    return shapes + [(f"{p}projection_weights", (out, units)), (f"{p}projection_bias", (out,))]


def _lstm_weights_fit(prefix: str = "", input_from_aux: bool = False):
    """Declared weights fit the sizes the other operands give (unknown extents pass), the input gate is
    all there or all omitted (CIFG), and without a projection the output size is the number of units.
    Operands a caller may still pass empty at execution are the kernel's to check. `input_from_aux`:
    the direction may read aux_input instead (the bidirectional LSTM's backward one)."""
    def rule(v):
        p = prefix
        units, out = _lstm_sizes(v, p)
        input_size = 0 if input_from_aux and v.has("aux_input") else _ext(v, "input", -1)
        for name, expected in lstm_weight_shapes(p, units, out, input_size):
            d = None if not v.has(name) or _may_be_empty(v, name) else v.dims(name)
            if d and (len(d) != len(expected) or any(a and b and a != b for a, b in zip(d, expected))):
                yield f"{name} has shape {list(d)}, expected {['?' if not e else e for e in expected]}"
        gate = [f"{p}input_to_input_weights", f"{p}recurrent_to_input_weights", f"{p}input_gate_bias"]
        if not any(_may_be_empty(v, n) for n in gate) and len({v.has(n) for n in gate}) > 1:
            yield f"{p}input gate: input and recurrent weights and bias come together, or none of them (CIFG)"
        projection = f"{p}projection_weights"
        if not v.has(projection) and not _may_be_empty(v, projection) and units and out and out != units:
            yield f"{p}without projection the output size {out} must equal the number of units {units}"
    return rule


def _sequence_layout(v, states: tuple):
    """(d0, d1, batch) of a [time, batch, ...] or [batch, time, ...] input: the outputs keep the input's
    first two extents whatever the layout; the batch is the one time_major names (or the states')."""
    d = v.dims("input")
    d0, d1 = (d[0], d[1]) if d is not None and len(d) == 3 else (0, 0)
    tm = v.const("time_major")
    from_input = 0 if tm is None else (d1 if tm else d0)
    return d0, d1, _agree(from_input, *(_ext(v, s, 0) for s in states))


def _by_position(v, shapes: list) -> dict:
    """Map Shapes to the operation's outputs by position (the bidirectional ops leave bw_output out when
    merging, so the form's later names shift)."""
    names = [a.name for a in v.form.outputs if a.name in v._out]
    return dict(zip(names, shapes))


def _merged(v, n_states: int) -> bool:
    """merge_outputs: the constant, else what the output count implies (1 or 1 + states when merged)."""
    m = v.const("merge_outputs")
    return bool(m) if m is not None else len(v._out) in (1, 1 + n_states)


def _infer_lstm(v):
    units, out = _lstm_sizes(v)
    batch = _agree(_ext(v, "input", 0), _ext(v, "output_state_in", 0), _ext(v, "cell_state_in", 0))
    cifg = _cifg(v)
    gates = 0 if cifg is None else (3 if cifg else 4)
    return {"scratch_buffer": (batch, units * gates), "output_state_out": (batch, out),
            "cell_state_out": (batch, units), "output": (batch, out)}


def _infer_unidirectional_lstm(v):
    units, out = _lstm_sizes(v)
    d0, d1, batch = _sequence_layout(v, ("output_state_in", "cell_state_in"))
    return {"output": (d0, d1, out), "output_state_out": (batch, out), "cell_state_out": (batch, units)}


def _infer_bidirectional_lstm(v):
    fw_units, fw_out = _lstm_sizes(v, "fw_")
    bw_units, bw_out = _lstm_sizes(v, "bw_")
    d0, d1, batch = _sequence_layout(v, ("fw_output_state_in", "fw_cell_state_in", "bw_output_state_in",
                                         "bw_cell_state_in"))
    if _merged(v, 4):
        seqs = [(d0, d1, fw_out + bw_out if fw_out and bw_out else 0)]
    else:
        seqs = [(d0, d1, fw_out), (d0, d1, bw_out)]
    states = [(batch, fw_out), (batch, fw_units), (batch, bw_out), (batch, bw_units)]
    return _by_position(v, seqs + states)


def _rnn_units(v, prefix: str = "", state: str = "hidden_state_in") -> int:
    p = prefix
    return _agree(_ext(v, f"{p}weights", 0), _ext(v, f"{p}recurrent_weights", 0),
                  _ext(v, f"{p}recurrent_weights", 1), _ext(v, f"{p}bias", 0), _ext(v, f"{p}{state}", 1))


def _infer_rnn(v):
    units = _rnn_units(v)
    batch = _agree(_ext(v, "input", 0), _ext(v, "hidden_state_in", 0))
    return {"hidden_state_out": (batch, units), "output": (batch, units)}


def _infer_unidirectional_rnn(v):
    units = _rnn_units(v)
    d0, d1, batch = _sequence_layout(v, ("hidden_state_in",))
    return {"output": (d0, d1, units), "hidden_state_out": (batch, units)}


def _infer_bidirectional_rnn(v):
    fw, bw = _rnn_units(v, "fw_", "hidden_state"), _rnn_units(v, "bw_", "hidden_state")
    d0, d1, batch = _sequence_layout(v, ("fw_hidden_state", "bw_hidden_state"))
    seqs = [(d0, d1, fw + bw if fw and bw else 0)] if _merged(v, 2) else [(d0, d1, fw), (d0, d1, bw)]
    return _by_position(v, seqs + [(batch, fw), (batch, bw)])


def _infer_svdf(v):
    """state [batch, memory_size * num_filters], output [batch, num_filters / rank]."""
    filters = _agree(_ext(v, "weights_feature", 0), _ext(v, "weights_time", 0))
    memory = _ext(v, "weights_time", 1)
    rank = v.const("rank")
    units_from_rank = filters // rank if filters and isinstance(rank, int) and rank > 0 and filters % rank == 0 \
        else 0
    units = _agree(units_from_rank, _sure_ext(v, "bias", 0))
    batch = _agree(_ext(v, "input", 0), _ext(v, "state_in", 0))
    return {"state_out": (batch, _agree(filters * memory, _ext(v, "state_in", 1))), "output": (batch, units)}


def _infer_quantized_16bit_lstm(v):
    """Every output is [batch, output_size]; the weights are [output_size, ...]."""
    size = _agree(*(_ext(v, f"{k}_to_{g}_weights", 0) for k in ("input", "recurrent") for g in _GATES),
                  *(_ext(v, f"{g}_gate_bias", 0) for g in _GATES),
                  _ext(v, "prev_cell_state", 1), _ext(v, "prev_output", 1))
    batch = _agree(_ext(v, "input", 0), _ext(v, "prev_cell_state", 0), _ext(v, "prev_output", 0))
    return {"cell_state_out": (batch, size), "output": (batch, size)}


def _infer_quantized_lstm(v):
    units, out = _lstm_sizes(v)
    batch = _agree(_ext(v, "input", 0), _ext(v, "output_state_in", 0), _ext(v, "cell_state_in", 0))
    return {"output_state_out": (batch, out), "cell_state_out": (batch, units), "output": (batch, out)}



register(OpSpec(
    code=Op.LSTM,
    forms=[Form("default",
                [_t("input")] + _lstm_weights() + [_t("output_state_in"), _t("cell_state_in")] + _CLIPS
                + _layer_norm(),
                [_t("scratch_buffer"), _t("output_state_out"), _t("cell_state_out"), _t("output")])],
    type_cases=_FLOAT,
    rules=[rank_in("input", (2,)), rank_in("output_state_in", (2,)), rank_in("cell_state_in", (2,)),
           _all_or_no_layer_norm(""), _lstm_weights_fit(),
           *output_ranks(scratch_buffer=2, output_state_out=2, cell_state_out=2, output=2)],
    level_rules=[_layer_norm_level("")],
    infer=_infer_lstm,
    value_dependent={"scratch_buffer": "its width is 3 x num_units with CIFG, 4 x num_units without, and CIFG "
                                       "is decided at execution when input_to_input_weights is a model input "
                                       "(a caller may pass it empty)"},
    doc="one LSTM time step; CIFG, peephole, projection, clipping and (level 3) layer normalization",
))

register(OpSpec(
    code=Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
    forms=[Form("default",
                [_t("input")] + _lstm_weights() + [_t("output_state_in"), _t("cell_state_in")] + _CLIPS
                + [arg("time_major", C.BOOL)] + _layer_norm(),
                [_t("output"), opt("output_state_out", "T", level=4), opt("cell_state_out", "T", level=4)])],
    type_cases=_FLOAT_FL3,
    rules=[rank_in("input", (3,)), _all_or_no_layer_norm(""), _lstm_weights_fit(),
           *output_ranks(output=3, output_state_out=2, cell_state_out=2)],
    infer=_infer_unidirectional_lstm,
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
    rules=[rank_in("input", (3,)), _all_or_no_layer_norm("fw_", "bw_"), _lstm_weights_fit("fw_"),
           _lstm_weights_fit("bw_", input_from_aux=True), _bidirectional_output_ranks],
    infer=_infer_bidirectional_lstm,
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
    infer=_infer_rnn,
    doc="one basic RNN step: h = activation(W x + R h + b)",
))

register(OpSpec(
    code=Op.UNIDIRECTIONAL_SEQUENCE_RNN,
    forms=[Form("default", _RNN_ARGS + [arg("time_major", C.INT32)],
                [_t("output"), opt("hidden_state_out", "T", level=4)])],
    type_cases=[TypeCase(3, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16)],
    rules=[rank_in("input", (3,)), *output_ranks(output=3, hidden_state_out=2)],
    infer=_infer_unidirectional_rnn,
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
    infer=_infer_bidirectional_rnn,
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
    infer=_infer_svdf,
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
    for g in _GATES:
        b = v.input(f"{g}_gate_bias")
        if b is not None and (b.type.zero_point != 0 or not bias_scale_matches(b.type.scale, inp.type.scale,
                                                                                 w.type.scale)):
            yield (f"{g}_gate_bias must have zero point 0 and scale input scale x weights scale = "
                   f"{bias_scale(inp.type.scale, w.type.scale):g}")


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
    infer=_infer_quantized_16bit_lstm,
    doc="one uint8/int16 LSTM step with gemmlowp fixed-point gates (TFLite's quantized LstmCell)",
))

_W8, _Q16, _I32 = C.TENSOR_QUANT8_SYMM, C.TENSOR_QUANT16_SYMM, C.TENSOR_INT32

# QUANTIZED_LSTM's cell state scale is 2^shift with shift <= -9 (Android's reference checks both). Its tanh
# of the cell state takes 15 + shift integer bits and has cases for 0 to 6 only: below 2^-15 it writes
# nothing, and the hidden state multiplies the output gate by what that buffer held, the input gate
# (1 - forget gate with CIFG).
QLSTM_MAX_CELL_SHIFT = -9
QLSTM_MIN_TANH_CELL_SHIFT = -15


def qlstm_cell_shift(scale: float):
    """The shift of a QUANTIZED_LSTM cell state scale 2^shift (a power of two within 1e-3 in log2, like the
    reference's CheckedLog2), or None when the scale is not one or is above 2^-9."""
    if not scale > 0:
        return None
    log2 = math.log2(scale)
    shift = round(log2)
    return shift if abs(log2 - shift) < 1e-3 and shift <= QLSTM_MAX_CELL_SHIFT else None


def _qlstm_peephole_length(v):
    """Android's reference (as LiteRT's integer LSTM) applies the peepholes with the output size as their
    length, walking the flattened [batch, units] gate and cell state: with a projection to fewer outputs
    than units, element k < batch x output size takes peephole weight k mod output size and the others
    none; to more, it reads past the weights."""
    units, out = _lstm_sizes(v)
    if units and out and out > units and any(v.has(f"cell_to_{g}_weights") for g in ("input", "forget", "output")):
        yield (f"peephole weights with an output size {out} above the number of units {units}: the reference reads "
               f"past them")


def _qlstm_cell_scale(v):
    for name in ("cell_state_in", "cell_state_out"):
        for o in v.inputs(name) + v.outputs(name):
            if o is not None and not o.is_omitted and qlstm_cell_shift(o.type.scale) is None:
                yield f"{name} scale {o.type.scale:g} must be a power of two at most 2^{QLSTM_MAX_CELL_SHIFT}"


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
    rules=[rank_in("input", (2,)), _qlstm_cell_scale, _qlstm_peephole_length,
           *output_ranks(output_state_out=2, cell_state_out=2, output=2)],
    infer=_infer_quantized_lstm,
    doc="one int8/int16 LSTM step with integer layer normalization (TFLite's fully integer LSTM)",
))

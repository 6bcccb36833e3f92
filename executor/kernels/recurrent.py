"""Float recurrent kernels: RNN, UNIDIRECTIONAL/BIDIRECTIONAL_SEQUENCE_RNN, SVDF,
LSTM, UNIDIRECTIONAL/BIDIRECTIONAL_SEQUENCE_LSTM.

Float16 models are computed in float32 and cast back. Sequences loop over time
steps; every step is a handful of batched matmuls. The quantized LSTMs are in
recurrent_quant.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from nnapi.codes import OperationCode as Op

from ..registry import kernel

_GATES = ("input", "forget", "cell", "output")
_LAYER_NORM_EPSILON = 1e-8  # the Android/TFLite MeanStddevNormalization epsilon


# -- shared helpers ----------------------------------------------------------------

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# NNAPI activation codes allowed by the recurrent ops (FuseCode values plus TANH/SIGMOID)
_ACTIVATIONS = {
    0: lambda x: x,
    1: lambda x: np.maximum(x, 0.0),
    2: lambda x: np.clip(x, -1.0, 1.0),
    3: lambda x: np.clip(x, 0.0, 6.0),
    4: np.tanh,
    6: _sigmoid,
}


def _activation(ctx, index):
    code = ctx.scalar(index)
    fn = _ACTIVATIONS.get(code)
    if fn is None:
        ctx.fail(f"unsupported activation function {code}")
    return fn


def _f(ctx, i) -> Optional[np.ndarray]:
    """Input `i` as float32 (computation precision), or None when absent/omitted/empty."""
    v = ctx.inputs[i] if i < len(ctx.inputs) else None
    if v is None or v.array.size == 0:  # omitted model inputs may arrive as empty buffers
        return None
    return v.array.astype(np.float32)


def _out(ctx, k, array):
    return np.asarray(array).astype(ctx.out_type(k).dtype)


def _dense(x, w):
    """x [batch, n] times w [units, n] transposed; None weights contribute nothing."""
    return 0.0 if w is None or x is None else x @ w.T


def _time_major(x, time_major: bool):
    return x if time_major else np.swapaxes(x, 0, 1)


def _check_shapes(ctx, pairs):
    """Fail with a clear message when an operand's size does not fit (instead of a matmul error)."""
    for name, arr, shape in pairs:
        if arr is not None and tuple(arr.shape) != tuple(shape):
            ctx.fail(f"{name} has shape {list(arr.shape)}, expected {list(shape)}")


# -- RNN -----------------------------------------------------------------------------

def _rnn_step(x, h, w, r, b, act, aux=None, aux_w=None):
    return act(x @ w.T + _dense(aux, aux_w) + h @ r.T + b)


def _rnn_sequence(x, h, w, r, b, act, reverse=False, aux=None, aux_w=None):
    """Run a basic RNN over time-major x [time, batch, input]; (outputs [time, batch, units], last h)."""
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    out = np.empty((x.shape[0], x.shape[1], w.shape[0]), np.float32)
    for t in steps:
        h = _rnn_step(x[t], h, w, r, b, act, None if aux is None else aux[t], aux_w)
        out[t] = h
    return out, h


def _check_rnn(ctx, x, w, r, b, h, prefix=""):
    units = w.shape[0]
    _check_shapes(ctx, [(f"{prefix}weights", w, (units, x.shape[-1])),
                        (f"{prefix}recurrent_weights", r, (units, units)), (f"{prefix}bias", b, (units,)),
                        (f"{prefix}hidden_state", h, (x.shape[-2], units))])


@kernel(Op.RNN)
def rnn(ctx):
    x, w, r, b, h = (_f(ctx, i) for i in range(5))
    _check_rnn(ctx, x, w, r, b, h)
    h = _rnn_step(x, h, w, r, b, _activation(ctx, 5))
    return [_out(ctx, 0, h), _out(ctx, 1, h)]


@kernel(Op.UNIDIRECTIONAL_SEQUENCE_RNN)
def unidirectional_sequence_rnn(ctx):
    x, w, r, b, h = (_f(ctx, i) for i in range(5))
    time_major = bool(ctx.scalar(6))
    x = _time_major(x, time_major)
    _check_rnn(ctx, x, w, r, b, h)
    out, h = _rnn_sequence(x, h, w, r, b, _activation(ctx, 5))
    results = [_out(ctx, 0, _time_major(out, time_major))]
    if len(ctx.outputs) > 1:
        results.append(_out(ctx, 1, h))
    return results


@kernel(Op.BIDIRECTIONAL_SEQUENCE_RNN)
def bidirectional_sequence_rnn(ctx):
    x = _f(ctx, 0)
    fw, bw = [_f(ctx, i) for i in range(1, 5)], [_f(ctx, i) for i in range(5, 9)]
    aux, fw_aux_w, bw_aux_w = _f(ctx, 9), _f(ctx, 10), _f(ctx, 11)
    act, time_major, merge = _activation(ctx, 12), bool(ctx.scalar(13)), bool(ctx.scalar(14))
    x = _time_major(x, time_major)
    aux = None if aux is None else _time_major(aux, time_major)
    bw_x, fw_aux, bw_aux = _link_aux(x, aux, fw_aux_w is not None or bw_aux_w is not None)
    _check_rnn(ctx, x, *fw, prefix="fw_")
    _check_rnn(ctx, bw_x, *bw, prefix="bw_")
    fw_out, fw_h = _rnn_sequence(x, fw[3], *fw[:3], act, aux=fw_aux, aux_w=fw_aux_w)
    bw_out, bw_h = _rnn_sequence(bw_x, bw[3], *bw[:3], act, reverse=True, aux=bw_aux, aux_w=bw_aux_w)
    return _bidirectional_results(ctx, fw_out, bw_out, [fw_h], [bw_h], merge, time_major)


def _link_aux(x, aux, has_aux_weights: bool):
    """(backward input, forward aux input, backward aux input) for the three NNAPI linking modes.

    No aux input: both directions read `x`. Cross-linking (aux input and aux weights): both
    read `x` plus their weighted aux input. Parallel linking (aux input, no aux weights):
    the backward direction reads the aux input instead of `x`.
    """
    if aux is None:
        return x, None, None
    if not has_aux_weights:
        return aux, None, None
    return x, aux, aux


def _bidirectional_results(ctx, fw_out, bw_out, fw_states, bw_states, merge, time_major):
    """Outputs in NNAPI order: fw (or merged) output, bw output unless merged, then the final states."""
    if merge:
        seq = [np.concatenate([fw_out, bw_out], axis=-1)]
    else:
        seq = [fw_out, bw_out]
    arrays = [_time_major(s, time_major) for s in seq] + list(fw_states) + list(bw_states)
    if len(ctx.outputs) != len(seq) and len(ctx.outputs) != len(arrays):
        ctx.fail(f"{len(ctx.outputs)} outputs do not fit merge_outputs={merge}")
    return [_out(ctx, k, a) for k, a in enumerate(arrays[:len(ctx.outputs)])]


# -- SVDF ----------------------------------------------------------------------------

@kernel(Op.SVDF)
def svdf(ctx):
    x, w_feature, w_time, bias, state = (_f(ctx, i) for i in range(5))
    rank, act = ctx.scalar(5), _activation(ctx, 6)
    filters, memory = w_time.shape
    batch = x.shape[0]
    if rank <= 0 or filters % rank:
        ctx.fail(f"rank {rank} must be positive and divide the {filters} filters")
    units = filters // rank
    _check_shapes(ctx, [("weights_feature", w_feature, (filters, x.shape[1])),
                        ("bias", bias, (units,)), ("state_in", state, (batch, filters * memory))])
    # Android's layout: per filter, the last memory-1 feature activations and a trailing 0 slot.
    # The newest activation takes that slot for this step's output; the stored state then
    # shifts left by one and zero-fills the slot again.
    state = state.reshape(batch, filters, memory)
    window = np.concatenate([state[:, :, :-1], (x @ w_feature.T)[:, :, None]], axis=2)
    per_filter = np.einsum("bfm,fm->bf", window, w_time)
    out = per_filter.reshape(batch, units, rank).sum(axis=2)
    if bias is not None:
        out = out + bias
    new_state = np.concatenate([window[:, :, 1:], np.zeros((batch, filters, 1), np.float32)], axis=2)
    return [_out(ctx, 0, new_state.reshape(batch, filters * memory)), _out(ctx, 1, act(out))]


# -- LSTM ----------------------------------------------------------------------------

@dataclass
class LstmCell:
    """One direction's LSTM parameters, keyed by gate name; None for absent optional parts."""

    input_w: dict
    recurrent_w: dict
    peephole: dict
    bias: dict
    projection_w: Optional[np.ndarray]
    projection_b: Optional[np.ndarray]
    layer_norm: dict
    aux_w: dict
    activation: object
    cell_clip: float
    proj_clip: float

    @property
    def cifg(self) -> bool:
        """Coupled input/forget gate: no input gate weights, input gate = 1 - forget gate."""
        return self.input_w["input"] is None

    @property
    def units(self) -> int:
        return self.input_w["forget"].shape[0]

    @property
    def output_size(self) -> int:
        return self.recurrent_w["forget"].shape[1]


def read_lstm_cell(ctx, first, ln_first=None, aux_first=None, act=20, clips=(21, 22)) -> LstmCell:
    """Gather an LstmCell from the NNAPI input layout starting at `first` (input_to_input_weights)."""
    def g(start):
        return {name: _f(ctx, start + k) for k, name in enumerate(_GATES)}
    peep = {name: _f(ctx, first + 8 + k) for k, name in enumerate(("input", "forget", "output"))}
    none = dict.fromkeys(_GATES)
    return LstmCell(
        input_w=g(first), recurrent_w=g(first + 4), peephole=peep, bias=g(first + 11),
        projection_w=_f(ctx, first + 15), projection_b=_f(ctx, first + 16),
        layer_norm=g(ln_first) if ln_first is not None and ln_first < len(ctx.inputs) else none,
        aux_w=g(aux_first) if aux_first is not None else none,
        activation=_activation(ctx, act),
        cell_clip=float(ctx.scalar(clips[0], 0.0)), proj_clip=float(ctx.scalar(clips[1], 0.0)))


def _check_lstm(ctx, cell: LstmCell, batch: int, input_size: int, prefix=""):
    n, out = cell.units, cell.output_size
    shapes = []
    for gname in _GATES:
        shapes += [(f"{prefix}input_to_{gname}_weights", cell.input_w[gname], (n, input_size)),
                   (f"{prefix}recurrent_to_{gname}_weights", cell.recurrent_w[gname], (n, out)),
                   (f"{prefix}{gname}_gate_bias", cell.bias[gname], (n,)),
                   (f"{prefix}{gname}_layer_norm_weights", cell.layer_norm[gname], (n,))]
    shapes += [(f"{prefix}cell_to_{k}_weights", v, (n,)) for k, v in cell.peephole.items()]
    shapes += [(f"{prefix}projection_weights", cell.projection_w, (out, n)),
               (f"{prefix}projection_bias", cell.projection_b, (out,))]
    _check_shapes(ctx, shapes)
    for gname in ("forget", "cell", "output"):
        if any(d[gname] is None for d in (cell.recurrent_w, cell.bias)):
            ctx.fail(f"{prefix}{gname} gate weights and bias are required")
    if cell.input_w["input"] is not None and (cell.recurrent_w["input"] is None or cell.bias["input"] is None):
        ctx.fail(f"{prefix}input gate needs input, recurrent weights and bias together (or none: CIFG)")
    if cell.projection_w is None and out != n:
        ctx.fail(f"{prefix}without projection the output size {out} must equal the number of units {n}")


def _normalize(x):
    """Per-row mean/stddev normalization (LSTM layer norm, before the per-unit weights)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = np.maximum((x * x).mean(axis=-1, keepdims=True) - mean * mean, 0.0)
    return (x - mean) / np.sqrt(var + _LAYER_NORM_EPSILON)


def _gate(cell: LstmCell, name, x, h, c, aux, fn):
    """fn(W x + R h + A aux + peephole * c [layer-normalized] + bias)."""
    pre = _dense(x, cell.input_w[name]) + _dense(h, cell.recurrent_w[name]) + _dense(aux, cell.aux_w[name])
    if name != "cell" and cell.peephole.get(name) is not None:
        pre = pre + cell.peephole[name] * c
    if cell.layer_norm[name] is not None:
        pre = _normalize(pre) * cell.layer_norm[name]
    return fn(pre + cell.bias[name])


def lstm_step(cell: LstmCell, x, h, c, aux=None):
    """One LSTM step for a batch: returns (output/new h, new cell state)."""
    forget = _gate(cell, "forget", x, h, c, aux, _sigmoid)
    in_gate = 1.0 - forget if cell.cifg else _gate(cell, "input", x, h, c, aux, _sigmoid)
    c_new = forget * c + in_gate * _gate(cell, "cell", x, h, c, aux, cell.activation)
    if cell.cell_clip > 0:
        c_new = np.clip(c_new, -cell.cell_clip, cell.cell_clip)
    out = _gate(cell, "output", x, h, c_new, aux, _sigmoid) * cell.activation(c_new)
    if cell.projection_w is not None:
        out = out @ cell.projection_w.T
        if cell.projection_b is not None:
            out = out + cell.projection_b
        if cell.proj_clip > 0:
            out = np.clip(out, -cell.proj_clip, cell.proj_clip)
    return out.astype(np.float32), c_new.astype(np.float32)


def lstm_sequence(cell: LstmCell, x, h, c, reverse=False, aux=None):
    """Time-major x [time, batch, input] -> (outputs [time, batch, output_size], last h, last c)."""
    out = np.empty((x.shape[0], x.shape[1], cell.output_size), np.float32)
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        h, c = lstm_step(cell, x[t], h, c, None if aux is None else aux[t])
        out[t] = h
    return out, h, c


@kernel(Op.LSTM)
def lstm(ctx):
    x, h, c = _f(ctx, 0), _f(ctx, 18), _f(ctx, 19)
    cell = read_lstm_cell(ctx, 1, ln_first=23)
    _check_lstm(ctx, cell, x.shape[0], x.shape[1])
    h_new, c_new = lstm_step(cell, x, h, c)
    scratch = np.zeros((x.shape[0], cell.units * (3 if cell.cifg else 4)), np.float32)
    return [_out(ctx, 0, scratch), _out(ctx, 1, h_new), _out(ctx, 2, c_new), _out(ctx, 3, h_new)]


@kernel(Op.UNIDIRECTIONAL_SEQUENCE_LSTM)
def unidirectional_sequence_lstm(ctx):
    time_major = bool(ctx.scalar(23))
    x, h, c = _time_major(_f(ctx, 0), time_major), _f(ctx, 18), _f(ctx, 19)
    cell = read_lstm_cell(ctx, 1, ln_first=24)
    _check_lstm(ctx, cell, x.shape[1], x.shape[2])
    out, h, c = lstm_sequence(cell, x, h, c)
    return [_out(ctx, k, a) for k, a in enumerate([_time_major(out, time_major), h, c][:len(ctx.outputs)])]


@kernel(Op.BIDIRECTIONAL_SEQUENCE_LSTM)
def bidirectional_sequence_lstm(ctx):
    merge, time_major = bool(ctx.scalar(51)), bool(ctx.scalar(52))
    x = _time_major(_f(ctx, 0), time_major)
    aux = _f(ctx, 39)
    aux = None if aux is None else _time_major(aux, time_major)
    clips = dict(act=48, clips=(49, 50))
    fw = read_lstm_cell(ctx, 1, ln_first=53, aux_first=40, **clips)
    bw = read_lstm_cell(ctx, 18, ln_first=57, aux_first=44, **clips)
    has_aux_w = any(w is not None for w in list(fw.aux_w.values()) + list(bw.aux_w.values()))
    bw_x, fw_aux, bw_aux = _link_aux(x, aux, has_aux_w)
    _check_lstm(ctx, fw, x.shape[1], x.shape[2], "fw_")
    _check_lstm(ctx, bw, bw_x.shape[1], bw_x.shape[2], "bw_")
    fw_out, fw_h, fw_c = lstm_sequence(fw, x, _f(ctx, 35), _f(ctx, 36), aux=fw_aux)
    bw_out, bw_h, bw_c = lstm_sequence(bw, bw_x, _f(ctx, 37), _f(ctx, 38), reverse=True, aux=bw_aux)
    return _bidirectional_results(ctx, fw_out, bw_out, [fw_h, fw_c], [bw_h, bw_c], merge, time_major)

"""Float RNN kernels: RNN, UNIDIRECTIONAL/BIDIRECTIONAL_SEQUENCE_RNN, SVDF.

Float16 models are computed in float32 and cast back. The RNNs stack their
weights (StackedRnn): the input projection of every time step is one GEMM
before the loop, then one recurrent GEMM per step. The plain kernels stack per
call; prepared.py stacks constant weights once at compilation and
runs the same functions. The LSTMs are in lstm.py, the quantized LSTMs in
quant.py, the shared helpers in common.py.
"""
from __future__ import annotations


import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import kernel
from .common import (
    ACTIVATIONS,
    ACTIVATIONS_INTO,
    as_float32,
    as_output,
    aux_fits,
    bidirectional_results,
    cast_output,
    check_shapes,
    checked_activation,
    float32_output,
    link_aux,
    sequence_output,
    store_sequence,
    time_major_view,
    time_steps,
)


# -- RNN -----------------------------------------------------------------------------

class StackedRnn:
    """A basic RNN's weights laid out for x @ w: h = act(x W^T + aux A^T + h R^T + b)."""

    def __init__(self, w, r, b, act_code: int, aux_w=None):
        self.units, self.input_size = w.shape
        self.w = np.ascontiguousarray(w.T, np.float32)
        self.r = np.ascontiguousarray(r.T, np.float32)
        self.b = np.asarray(b, np.float32)
        self.aux_w = None if aux_w is None else np.ascontiguousarray(aux_w.T, np.float32)
        self.act = ACTIVATIONS_INTO[act_code]

    def fits(self, x, h, aux=None) -> bool:
        """x [time, batch, input], h [batch, units] (and aux) are what these weights take."""
        return (x.ndim == 3 and x.shape[2] == self.input_size and x.shape[0] > 0 and x.shape[1] > 0
                and h.shape == (x.shape[1], self.units) and aux_fits(x, aux, self.aux_w))


def run_rnn(p: StackedRnn, x, h, seq, reverse=False, aux=None):
    """Time-major x [time, batch, input] -> seq [time, batch, units] (C-contiguous, written here);
    returns the last hidden state (a view of seq). The input projection of all steps goes straight
    into seq; each step adds h R^T to its slice and activates it in place."""
    steps, batch = x.shape[:2]
    flat = seq.reshape(steps * batch, p.units)
    np.dot(x.reshape(steps * batch, -1), p.w, out=flat)
    if aux is not None and p.aux_w is not None:
        flat += aux.reshape(steps * batch, -1) @ p.aux_w
    flat += p.b
    rec = np.empty((batch, p.units), np.float32)
    h = np.ascontiguousarray(h, np.float32)
    r, act = p.r, p.act
    for t in time_steps(steps, reverse):
        np.dot(h, r, out=rec)
        h = seq[t]
        h += rec
        act(h, h)
    return h


def _check_rnn(ctx, x, w, r, b, h, prefix=""):
    units = w.shape[0]
    check_shapes(ctx, [(f"{prefix}weights", w, (units, x.shape[-1])),
                        (f"{prefix}recurrent_weights", r, (units, units)), (f"{prefix}bias", b, (units,)),
                        (f"{prefix}hidden_state", h, (x.shape[-2], units))])


def rnn_outputs(ctx, p: StackedRnn, x, h):
    """RNN (one step of a batch): [hidden state out, output], both the new h."""
    out = float32_output(ctx, 1, h.shape)
    run_rnn(p, x[None], h, out[None])
    state = float32_output(ctx, 0, h.shape)
    np.copyto(state, out)
    return [as_output(ctx, 0, state), as_output(ctx, 1, out)]


def unidirectional_rnn_outputs(ctx, p: StackedRnn, x, h, time_major: bool):
    x = time_major_view(x, time_major)
    buf, seq = sequence_output(ctx, 0, time_major, x.shape[0], x.shape[1], p.units)
    last = run_rnn(p, x, h, seq)
    store_sequence(buf, seq, time_major)
    results = [as_output(ctx, 0, buf)]
    if len(ctx.outputs) > 1:
        state = float32_output(ctx, 1, last.shape)
        np.copyto(state, last)
        results.append(as_output(ctx, 1, state))
    return results


def bidirectional_rnn_outputs(ctx, fw: StackedRnn, bw: StackedRnn, x, aux, fw_h, bw_h, time_major, merge):
    """x, aux as given (batch-major unless time_major); aux None when omitted."""
    x = time_major_view(x, time_major)
    aux = None if aux is None else time_major_view(aux, time_major)
    has_aux_w = fw.aux_w is not None or bw.aux_w is not None
    bw_x, fw_aux, bw_aux = link_aux(x, aux, has_aux_w)
    steps, batch = x.shape[:2]
    fw_seq = np.empty((steps, batch, fw.units), np.float32)
    bw_seq = np.empty((steps, batch, bw.units), np.float32)
    fw_last = run_rnn(fw, x, fw_h, fw_seq, aux=fw_aux)
    bw_last = run_rnn(bw, bw_x, bw_h, bw_seq, reverse=True, aux=bw_aux)
    return bidirectional_results(ctx, fw_seq, bw_seq, [fw_last], [bw_last], merge, time_major)


def _rnn_args(args, prefix=""):
    """(weights, recurrent weights, bias, hidden state) of one direction, as float32."""
    return [as_float32(getattr(args, prefix + n)) for n in ("weights", "recurrent_weights", "bias")] + [
        as_float32(getattr(args, prefix + ("hidden_state" if prefix else "hidden_state_in")))]


@kernel(Op.RNN)
def rnn(ctx):
    args = ctx.args
    x, (w, r, b, h) = as_float32(args.input), _rnn_args(args)
    _check_rnn(ctx, x, w, r, b, h)
    return rnn_outputs(ctx, StackedRnn(w, r, b, checked_activation(ctx, args.activation)), x, h)


@kernel(Op.UNIDIRECTIONAL_SEQUENCE_RNN)
def unidirectional_sequence_rnn(ctx):
    args = ctx.args
    x, (w, r, b, h) = as_float32(args.input), _rnn_args(args)
    time_major = bool(args.time_major)
    _check_rnn(ctx, time_major_view(x, time_major), w, r, b, h)
    return unidirectional_rnn_outputs(ctx, StackedRnn(w, r, b, checked_activation(ctx, args.activation)), x, h,
                                      time_major)


@kernel(Op.BIDIRECTIONAL_SEQUENCE_RNN)
def bidirectional_sequence_rnn(ctx):
    args = ctx.args
    x = as_float32(args.input)
    fw, bw = _rnn_args(args, "fw_"), _rnn_args(args, "bw_")
    aux, fw_aux_w, bw_aux_w = (as_float32(args.aux_input), as_float32(args.fw_aux_weights),
                               as_float32(args.bw_aux_weights))
    act = checked_activation(ctx, args.activation)
    time_major, merge = bool(args.time_major), bool(args.merge_outputs)
    x_tm = time_major_view(x, time_major)
    aux_tm = None if aux is None else time_major_view(aux, time_major)
    bw_x = link_aux(x_tm, aux_tm, fw_aux_w is not None or bw_aux_w is not None)[0]
    _check_rnn(ctx, x_tm, *fw, prefix="fw_")
    _check_rnn(ctx, bw_x, *bw, prefix="bw_")
    fw_p, bw_p = StackedRnn(*fw[:3], act, fw_aux_w), StackedRnn(*bw[:3], act, bw_aux_w)
    return bidirectional_rnn_outputs(ctx, fw_p, bw_p, x, aux, fw[3], bw[3], time_major, merge)


# -- SVDF ----------------------------------------------------------------------------

@kernel(Op.SVDF)
def svdf(ctx):
    args = ctx.args
    x, w_feature, w_time, bias, state = (as_float32(getattr(args, n)) for n in
                                         ("input", "weights_feature", "weights_time", "bias", "state_in"))
    rank, act = args.rank, ACTIVATIONS[checked_activation(ctx, args.activation)]
    filters, memory = w_time.shape
    batch = x.shape[0]
    if rank <= 0 or filters % rank:
        ctx.fail(f"rank {rank} must be positive and divide the {filters} filters")
    units = filters // rank
    check_shapes(ctx, [("weights_feature", w_feature, (filters, x.shape[1])),
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
    return [cast_output(ctx, 0, new_state.reshape(batch, filters * memory)), cast_output(ctx, 1, act(out))]

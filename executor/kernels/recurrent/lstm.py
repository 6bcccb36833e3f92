"""Float LSTM kernels: LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM.

Float16 models are computed in float32 and cast back. The LSTMs stack their
weights (StackedLstm): the input projection of every time step is one GEMM
before the loop, and each step is one recurrent GEMM into the stacked
pre-activations followed by in-place ufuncs on slices of it. The plain kernels
stack per call; prepared.py stacks constant weights once at
compilation and runs the same functions. A bidirectional LSTM whose two
directions have the same structure runs them as one loop (DirectionPair):
the same number of numpy calls per step as one direction.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from nnapi.codes import OperationCode as Op
from nnapi.ops.recurrent import lstm_weight_shapes

from ...registry import kernel
from ..common import clip_ufunc
from .common import (
    ACTIVATIONS_INTO,
    GATES,
    LAYER_NORM_EPSILON,
    ONE,
    as_float32,
    as_output,
    aux_fits,
    bidirectional_results,
    check_shapes,
    checked_activation,
    float32_output,
    link_aux,
    sequence_output,
    sigmoid_of_negated,
    stack_transposed,
    store_sequence,
    time_major_view,
    time_steps,
)


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
    activation: int   # NNAPI activation code
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


def read_lstm_cell(ctx, prefix: str = "") -> LstmCell:
    """Gather one direction's LstmCell by argument name (`prefix` "fw_" / "bw_" for the bidirectional
    LSTM); absent optional parts (CIFG input gate, peepholes, projection, layer norm, aux) are None."""
    args = ctx.args

    def weights(pattern):
        return {g: as_float32(args.get(prefix + pattern.format(g))) for g in GATES}
    return LstmCell(
        input_w=weights("input_to_{}_weights"), recurrent_w=weights("recurrent_to_{}_weights"),
        peephole={g: as_float32(args.get(f"{prefix}cell_to_{g}_weights")) for g in ("input", "forget", "output")},
        bias=weights("{}_gate_bias"),
        projection_w=as_float32(args.get(prefix + "projection_weights")),
        projection_b=as_float32(args.get(prefix + "projection_bias")),
        layer_norm=weights("{}_layer_norm_weights"), aux_w=weights("aux_input_to_{}_weights"),
        activation=checked_activation(ctx, args.activation),
        cell_clip=float(args.get("cell_clip", 0.0)), proj_clip=float(args.get("proj_clip", 0.0)))


def check_lstm(ctx, cell: LstmCell, batch: int, input_size: int, prefix=""):
    """What depends on run-time values: the weights' shapes (a caller may feed them, or pass omitted
    ones empty), the required gates and CIFG. Declared shapes are the spec's rules already."""
    for gname in ("forget", "cell", "output"):
        if any(d[gname] is None for d in (cell.input_w, cell.recurrent_w, cell.bias)):
            ctx.fail(f"{prefix}{gname} gate weights and bias are required")
    n, out = cell.units, cell.output_size
    # the spec's shape table (nnapi/ops/recurrent.py), here on the values given at run time
    args = ctx.args
    check_shapes(ctx, [(name, as_float32(args.get(name)), shape)
                       for name, shape in lstm_weight_shapes(prefix, n, out, input_size)])
    aux = [w for w in cell.aux_w.values() if w is not None]
    check_shapes(ctx, [(f"{prefix}aux_input_to_{g}_weights", w, (n, aux[0].shape[-1]))
                        for g, w in cell.aux_w.items()] if aux else [])
    if cell.input_w["input"] is not None and (cell.recurrent_w["input"] is None or cell.bias["input"] is None):
        ctx.fail(f"{prefix}input gate needs input, recurrent weights and bias together (or none: CIFG)")
    if cell.projection_w is None and out != n:
        ctx.fail(f"{prefix}without projection the output size {out} must equal the number of units {n}")


def _layer_norm_into(x, weights, bias):
    """x = normalize(x) * weights + bias in place (x + bias for a gate without layer norm weights):
    per-row mean/stddev normalization (LSTM layer norm)."""
    if weights is not None:
        mean = x.mean(axis=-1, keepdims=True)
        var = np.maximum((x * x).mean(axis=-1, keepdims=True) - mean * mean, 0.0)
        x -= mean
        x /= np.sqrt(var + LAYER_NORM_EPSILON)
        x *= weights
    x += bias


def _clip_bounds(clip: float):
    """(-clip, clip) as float32, or None when clipping is off (0)."""
    return (np.float32(-clip), np.float32(clip)) if clip > 0 else None


class StackedLstm:
    """One direction's LSTM weights stacked gate after gate in the order [input,] forget, output, cell
    (the sigmoid gates first, so they activate together) and laid out for x @ w: [input, G*units]
    input (and aux input) weights, [output size, G*units] recurrent weights, [G*units] bias.

    Without layer norm the bias joins the input projection; with it, it is added per gate after
    the normalization, as the plain formula does.

    The sigmoid gates' weights, biases and peepholes are stored negated: their pre-activations come
    out negated (exactly: negation commutes with every rounding here, layer norm included), and
    sigmoid(z) = 1 / (1 + exp(-z)) then takes one pass less."""

    def __init__(self, cell: LstmCell):
        n, self.output_size, self.cifg = cell.units, cell.output_size, cell.cifg
        self.units = n
        gates = ("forget", "output", "cell") if self.cifg else ("input", "forget", "output", "cell")
        self.gate_index = {g: k for k, g in enumerate(gates)}
        self.width = len(gates) * n
        self.input_size = cell.input_w["forget"].shape[1]
        self.w = stack_transposed([(cell.input_w[g], n) for g in gates], self.input_size)
        self.r = stack_transposed([(cell.recurrent_w[g], n) for g in gates], self.output_size)
        aux = [w for w in cell.aux_w.values() if w is not None]
        self.aux_w = stack_transposed([(cell.aux_w[g], n) for g in gates], aux[0].shape[1]) if aux else None
        self.bias = np.concatenate([cell.bias[g] for g in gates]).astype(np.float32)
        sig = (len(gates) - 1) * n   # the sigmoid gates' columns (the cell gate is last)
        for m in (self.w, self.r, self.aux_w, self.bias[None]):
            if m is not None:
                np.negative(m[:, :sig], out=m[:, :sig])
        self.layer_norm = any(cell.layer_norm[g] is not None for g in gates)
        self.ln = {g: cell.layer_norm[g] for g in gates}
        self.gate_bias = {g: self.bias[k * n:(k + 1) * n] for k, g in enumerate(gates)}
        self.peephole = {g: None if cell.peephole[g] is None else -np.asarray(cell.peephole[g], np.float32)
                         for g in ("input", "forget", "output") if g in gates}
        both = [self.peephole.get(g) for g in ("input", "forget")]
        self.peep_if = None if any(w is None for w in both) else np.stack(both)
        # the output gate waits for the new cell state when its peephole or its layer norm needs it
        self.late_output = self.peephole["output"] is not None or self.layer_norm
        self.early_width = (self.gate_index["output"] if self.late_output else self.gate_index["cell"]) * n
        self.proj_w = None if cell.projection_w is None else np.ascontiguousarray(cell.projection_w.T, np.float32)
        self.proj_b = cell.projection_b
        self.lane_units = (n,)
        self.act = ACTIVATIONS_INTO[cell.activation]
        self.cell_clip = _clip_bounds(cell.cell_clip)
        self.proj_clip = _clip_bounds(cell.proj_clip)

    def fits(self, x, h, c, aux=None) -> bool:
        """x [time, batch, input], h [batch, output size], c [batch, units] (and aux) are what these
        weights take."""
        return (x.ndim == 3 and x.shape[2] == self.input_size and x.shape[0] > 0 and x.shape[1] > 0
                and h.shape == (x.shape[1], self.output_size) and c.shape == (x.shape[1], self.units)
                and aux_fits(x, aux, self.aux_w))

    def input_projection(self, x, aux=None) -> np.ndarray:
        """Time-major x [time, batch, input] -> [time, batch, G*units]: x W^T (+ aux A^T) (+ bias)
        for every step in one GEMM."""
        steps, batch = x.shape[:2]
        xp = np.dot(x.reshape(steps * batch, -1), self.w)
        if aux is not None and self.aux_w is not None:
            xp += aux.reshape(steps * batch, -1) @ self.aux_w
        if not self.layer_norm:
            xp += self.bias
        return xp.reshape(steps, batch, self.width)


def run_lstm(p, xp, h, c, seq, reverse=False):
    """The LSTM loop over input projections xp [time, batch, G*units] (StackedLstm.input_projection).
    h [batch, output size]: the initial output state (read only); c [batch, *lane units]: the cell
    state, updated in place; seq [time, batch, output size] (C-contiguous) receives each step's
    output. Returns the last output (a view of seq). A DirectionPair runs its two directions as two
    lanes: its units and output size are per lane (`lane_units` is [2, units], else [units]).

    Per step: pre = h R^T + xp[t] (negated for the sigmoid gates, see StackedLstm); i, f (, o) +=
    peephole * c; [layer norm + bias per gate]; sigmoid/activation in place; c = f*c + i*g; clip;
    o += peephole * c_new; h = o * act(c) [@ P^T + b, clip]. Every array is made before the loop:
    the views below alias `pre`, `work` and `c`. Ufuncs get `out` positionally: on arrays this small
    the call is most of the cost, and the keyword parsing is a tenth of it.

    For a batch of 1 the gates and the cell state share one buffer, [input (CIFG: 1 - forget), forget,
    output, cell gate, cell state], so that c f and i g are one multiply of [g, c] by [i, f] (the same
    products) and the new state one add: a call less per step."""
    steps, batch = xp.shape[:2]
    lane_units = p.lane_units
    gates = len(p.gate_index)
    paired = batch == 1   # (a larger batch would leave the GEMM's rows strided in the shared buffer)
    if paired:
        slots = np.empty((batch, 5) + lane_units, np.float32)
        width = slots[0, 0].size
        pre = slots.reshape(batch, -1)[:, (4 - gates) * width:4 * width]   # the stacked gates end at slot 4
        c_out, c = c, slots[:, 4]
        np.copyto(c, c_out)
        state_pair, gate_pair = slots[:, 3:5], slots[:, 0:2]
    else:
        pre = np.empty((batch, p.width), np.float32)
    by_gate = pre.reshape((batch, gates) + lane_units)
    gate = {name: by_gate[:, k] for name, k in p.gate_index.items()}
    forget, cell, out_gate = gate["forget"], gate["cell"], gate["output"]
    work = np.empty((batch,) + lane_units, np.float32)
    # the input gate, or where CIFG's 1 - forget goes
    in_gate = slots[:, 0] if paired else gate.get("input", work)
    early = pre[:, :p.early_width]   # the sigmoid gates activated before the new cell state
    # peepholes on the old cell state: input and forget in one pass when both exist (adjacent in pre)
    if p.peep_if is not None:
        early_peeps = [(by_gate[:, :2], p.peep_if, c[:, None], np.empty((batch, 2) + lane_units, np.float32))]
    else:
        early_peeps = [(gate[name], p.peephole[name], c, work) for name in ("input", "forget")
                       if p.peephole.get(name) is not None]
    layer_norm = p.layer_norm
    ln_early = [(gate[name], p.ln[name], p.gate_bias[name]) for name in p.gate_index if name != "output"]
    out_peep, late_output = p.peephole["output"], p.late_output
    act, r, proj_w, proj_b = p.act, p.r, p.proj_w, p.proj_b
    cell_clip, proj_clip = p.cell_clip, p.proj_clip
    h = np.ascontiguousarray(h, np.float32)
    # each step's output as the elementwise operations see it (lanes apart) when it is o * act(c)
    seq_lanes = seq.reshape((steps, batch) + lane_units) if proj_w is None else None
    flat_work = work.reshape(batch, -1)
    for t in time_steps(steps, reverse):
        np.dot(h, r, pre)
        np.add(pre, xp[t], pre)
        for view, weights, state, tmp in early_peeps:
            np.multiply(state, weights, tmp)
            np.add(view, tmp, view)
        if layer_norm:
            for view, weights, bias in ln_early:
                _layer_norm_into(view, weights, bias)
        sigmoid_of_negated(early)
        act(cell, cell)
        if p.cifg:   # input gate = 1 - forget gate
            np.subtract(ONE, forget, in_gate)
        if paired:
            np.multiply(state_pair, gate_pair, state_pair)   # [g, c] *= [i, f]
        else:
            np.multiply(cell, in_gate, cell)
            np.multiply(c, forget, c)
        np.add(c, cell, c)
        if cell_clip is not None:
            clip_ufunc(c, *cell_clip, c)
        if late_output:
            if out_peep is not None:
                np.multiply(c, out_peep, work)
                np.add(out_gate, work, out_gate)
            if layer_norm:
                _layer_norm_into(out_gate, p.ln["output"], p.gate_bias["output"])
            sigmoid_of_negated(out_gate)
        h = seq[t]
        if proj_w is None:
            h_lanes = seq_lanes[t]
            act(c, h_lanes)
            np.multiply(h_lanes, out_gate, h_lanes)
        else:
            act(c, work)
            np.multiply(work, out_gate, work)
            np.dot(flat_work, proj_w, h)
            if proj_b is not None:
                np.add(h, proj_b, h)
            if proj_clip is not None:
                clip_ufunc(h, *proj_clip, h)
    if paired:
        np.copyto(c_out, c)
    return h


class DirectionPair:
    """A bidirectional LSTM's two StackedLstm of the same structure run as one loop of two lanes:
    the pre-activations laid out gate by gate, each gate [fw units | bw units], so every elementwise
    pass covers both directions; the recurrent (and projection) weights block-diagonal, so one GEMM
    of [fw h | bw h] makes both directions' products (the other blocks' zeros add nothing); the
    backward direction's steps fed in reverse order. Per-gate vectors are [2, units]."""

    KEYS = ("units", "cifg", "gate_index", "layer_norm", "late_output", "act", "cell_clip", "proj_clip")

    def __init__(self, fw: StackedLstm, bw: StackedLstm):
        for k in self.KEYS:
            setattr(self, k, getattr(fw, k))
        n, gates = fw.units, len(fw.gate_index)
        self.lane_units = (2, n)
        self.width, self.early_width = 2 * fw.width, 2 * fw.early_width
        self.output_size = 2 * fw.output_size
        self.r = _block_diagonal(fw.r, bw.r, gates)
        self.proj_w = None if fw.proj_w is None else _block_diagonal(fw.proj_w, bw.proj_w, 1)
        self.proj_b = None if fw.proj_b is None else np.concatenate([fw.proj_b, bw.proj_b]).astype(np.float32)
        self.peep_if = None if fw.peep_if is None else np.stack([fw.peep_if, bw.peep_if], axis=1)
        self.peephole = {g: _lanes(w, bw.peephole[g]) for g, w in fw.peephole.items()}
        self.ln = {g: _lanes(w, bw.ln[g]) for g, w in fw.ln.items()}
        self.gate_bias = {g: _lanes(b, bw.gate_bias[g]) for g, b in fw.gate_bias.items()}

    @staticmethod
    def fits(fw: StackedLstm, bw: StackedLstm) -> bool:
        """The two directions have the same structure (sizes, gates and optional parts)."""
        def parts(p):
            return ([getattr(p, k) for k in DirectionPair.KEYS + ("output_size", "width")]
                    + [x is None for x in (p.proj_w, p.proj_b, p.peep_if)]
                    + [(g, w is None) for g, w in sorted(p.peephole.items())]
                    + [(g, w is None) for g, w in sorted(p.ln.items())])
        return parts(fw) == parts(bw)

    def lanes(self, fw_cols: np.ndarray, bw_cols: np.ndarray) -> np.ndarray:
        """[..., G*units] of each direction -> [..., G*2*units] in the pair's gate-major layout."""
        lead, gates = fw_cols.shape[:-1], len(self.gate_index)
        return np.stack([fw_cols.reshape(lead + (gates, self.units)), bw_cols.reshape(lead + (gates, self.units))],
                        axis=-2).reshape(lead + (self.width,))


def _lanes(a, b):
    return None if a is None else np.stack([a, b])


def _block_diagonal(fw: np.ndarray, bw: np.ndarray, gates: int) -> np.ndarray:
    """[rows, G*n] weights of each direction -> [2*rows, G*2*n]: fw rows feed the fw lane of every
    gate, bw rows the bw lane, zeros elsewhere."""
    rows, cols = fw.shape
    n = cols // gates
    out = np.zeros((2, rows, gates, 2, n), np.float32)
    out[0, :, :, 0] = fw.reshape(rows, gates, n)
    out[1, :, :, 1] = bw.reshape(rows, gates, n)
    return out.reshape(2 * rows, gates * 2 * n)


def run_pair(pair: DirectionPair, fw_xp, bw_xp, fw_h, fw_c, bw_h, bw_c):
    """Both directions in one loop: (fw sequence, bw sequence, fw last h, bw last h, fw c, bw c), the
    sequences [time, batch, output size] in time order."""
    steps, batch = fw_xp.shape[:2]
    xp = pair.lanes(fw_xp, bw_xp[::-1])   # bw runs from the end
    c = np.stack([fw_c, bw_c], axis=1)    # [batch, 2, units]
    seq = np.empty((steps, batch, pair.output_size), np.float32)
    last = run_lstm(pair, xp, np.concatenate([fw_h, bw_h], axis=-1), c, seq)
    half = pair.output_size // 2
    return seq[:, :, :half], seq[::-1, :, half:], last[:, :half], last[:, half:], c[:, 0], c[:, 1]


def _cell_state(ctx, k, c0) -> np.ndarray:
    """The running cell state, starting as c0: output k's buffer when that output exists."""
    c = float32_output(ctx, k, c0.shape) if k < len(ctx.outputs) else np.empty(c0.shape, np.float32)
    np.copyto(c, c0)
    return c


def lstm_outputs(ctx, p: StackedLstm, x, h, c):
    """LSTM (one step of a batch): [scratch buffer (zeros), output state, cell state, output]."""
    c = _cell_state(ctx, 2, c)
    out = float32_output(ctx, 3, h.shape)
    run_lstm(p, p.input_projection(x[None]), h, c, out[None])
    scratch = float32_output(ctx, 0, (x.shape[0], p.width))
    scratch.fill(0)
    state = float32_output(ctx, 1, h.shape)
    np.copyto(state, out)
    return [as_output(ctx, k, a) for k, a in enumerate((scratch, state, c, out))]


def unidirectional_lstm_outputs(ctx, p: StackedLstm, x, h, c, time_major: bool):
    """[output sequence, final output state, final cell state][:number of outputs]."""
    x = time_major_view(x, time_major)
    steps, batch = x.shape[:2]
    c = _cell_state(ctx, 2, c)
    buf, seq = sequence_output(ctx, 0, time_major, steps, batch, p.output_size)
    last = run_lstm(p, p.input_projection(x), h, c, seq)
    store_sequence(buf, seq, time_major)
    results = [as_output(ctx, 0, buf)]
    if len(ctx.outputs) > 1:
        state = float32_output(ctx, 1, last.shape)
        np.copyto(state, last)
        results += [as_output(ctx, 1, state), as_output(ctx, 2, c)][:len(ctx.outputs) - 1]
    return results


def bidirectional_lstm_outputs(ctx, fw: StackedLstm, bw: StackedLstm, x, aux, states, time_major, merge,
                               pair: Optional[DirectionPair] = None):
    """x, aux as given (batch-major unless time_major), aux None when omitted; states: the initial
    (fw h, fw c, bw h, bw c). With `pair` (fw and bw as a DirectionPair) both run in one loop."""
    x = time_major_view(x, time_major)
    aux = None if aux is None else time_major_view(aux, time_major)
    bw_x, fw_aux, bw_aux = link_aux(x, aux, fw.aux_w is not None or bw.aux_w is not None)
    steps, batch = x.shape[:2]
    fw_h, fw_c, bw_h, bw_c = states
    fw_xp, bw_xp = fw.input_projection(x, fw_aux), bw.input_projection(bw_x, bw_aux)
    if pair is not None:
        fw_seq, bw_seq, fw_h, bw_h, fw_c, bw_c = run_pair(pair, fw_xp, bw_xp, fw_h, fw_c, bw_h, bw_c)
        return bidirectional_results(ctx, fw_seq, bw_seq, [fw_h, fw_c], [bw_h, bw_c], merge, time_major)
    fw_c, bw_c = fw_c.copy(), bw_c.copy()
    fw_seq = np.empty((steps, batch, fw.output_size), np.float32)
    bw_seq = np.empty((steps, batch, bw.output_size), np.float32)
    fw_h = run_lstm(fw, fw_xp, fw_h, fw_c, fw_seq)
    bw_h = run_lstm(bw, bw_xp, bw_h, bw_c, bw_seq, reverse=True)
    return bidirectional_results(ctx, fw_seq, bw_seq, [fw_h, fw_c], [bw_h, bw_c], merge, time_major)


def _checked_stack(ctx, cell: LstmCell, x, prefix="") -> StackedLstm:
    """x time-major [time, batch, input] (or [batch, input])."""
    check_lstm(ctx, cell, x.shape[-2], x.shape[-1], prefix)
    return StackedLstm(cell)


def lstm_state(args, prefix: str = "") -> tuple:
    """(x, output state, cell state) of an LSTM as float32 (the bidirectional one: a direction's states)."""
    return (as_float32(args.input), as_float32(getattr(args, prefix + "output_state_in")),
            as_float32(getattr(args, prefix + "cell_state_in")))


@kernel(Op.LSTM)
def lstm(ctx):
    x, h, c = lstm_state(ctx.args)
    p = _checked_stack(ctx, read_lstm_cell(ctx), x)
    return lstm_outputs(ctx, p, x, h, c)


@kernel(Op.UNIDIRECTIONAL_SEQUENCE_LSTM)
def unidirectional_sequence_lstm(ctx):
    time_major = bool(ctx.args.time_major)
    x, h, c = lstm_state(ctx.args)
    p = _checked_stack(ctx, read_lstm_cell(ctx), time_major_view(x, time_major))
    return unidirectional_lstm_outputs(ctx, p, x, h, c, time_major)


@kernel(Op.BIDIRECTIONAL_SEQUENCE_LSTM)
def bidirectional_sequence_lstm(ctx):
    args = ctx.args
    merge, time_major = bool(args.merge_outputs), bool(args.time_major)
    x, aux = as_float32(args.input), as_float32(args.aux_input)
    fw, bw = read_lstm_cell(ctx, "fw_"), read_lstm_cell(ctx, "bw_")
    has_aux_w = any(w is not None for w in list(fw.aux_w.values()) + list(bw.aux_w.values()))
    x_tm = time_major_view(x, time_major)
    bw_x = link_aux(x_tm, None if aux is None else time_major_view(aux, time_major), has_aux_w)[0]
    fw_p, bw_p = _checked_stack(ctx, fw, x_tm, "fw_"), _checked_stack(ctx, bw, bw_x, "bw_")
    states = [*lstm_state(args, "fw_")[1:], *lstm_state(args, "bw_")[1:]]
    pair = DirectionPair(fw_p, bw_p) if DirectionPair.fits(fw_p, bw_p) else None
    return bidirectional_lstm_outputs(ctx, fw_p, bw_p, x, aux, states, time_major, merge, pair)

"""Compiled float RNNs and LSTMs: the weights stacked once; the integer LSTM (QUANTIZED_LSTM)
compiled and its activations tabulated (PreparedQuantizedLstm).

When every weight, bias and parameter of a float32 RNN or LSTM operation is a
constant (the usual case), the preparers read and check them once and build
the StackedRnn / StackedLstm that the plain kernels (recurrent.py, lstm.py) build on
every call; each run then only reads the run-time inputs (the sequence, the
states, an aux input) and calls the same functions as the kernels. Anything
that does not fit the stacked weights at run time goes to the plain kernel,
which reports the problem.

Nothing registers a kernel here.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op

from ...registry import prepare
from .lstm import (
    DirectionPair,
    StackedLstm,
    check_lstm,
    bidirectional_lstm_outputs,
    lstm_outputs,
    read_lstm_cell,
    unidirectional_lstm_outputs,
)
from .quant import QLstmCell, gate_logistic, gate_tanh, int16_table, qlstm_activations, qlstm_results
from .rnn import (
    StackedRnn,
    bidirectional_rnn_outputs,
    rnn_outputs,
    unidirectional_rnn_outputs,
)
from .common import (
    as_float32,
    checked_activation,
    link_aux,
    time_major_view,
)


def _supported(pctx, runtime: tuple) -> bool:
    """Float32 input and outputs; only the arguments named in `runtime` may be run-time values."""
    bound = pctx.step.bound
    return (bound.operand("input").type.code == C.TENSOR_FLOAT32
            and all(o.type.code == C.TENSOR_FLOAT32 for o in pctx.outputs)
            and bound.runtime <= set(runtime))


def _stacked_lstm(pctx, prefix="") -> StackedLstm:
    """The checked, stacked cell (NnapiError, i.e. no preparation, when its weights do not fit)."""
    cell = read_lstm_cell(pctx, prefix)
    check_lstm(pctx, cell, 0, cell.input_w["forget"].shape[1], prefix)
    return StackedLstm(cell)


def _stacked_rnn(pctx, prefix="", aux_w=None) -> StackedRnn:
    args = pctx.args
    w, r, b = (as_float32(args.get(prefix + n)) for n in ("weights", "recurrent_weights", "bias"))
    units = w.shape[0]
    if r.shape != (units, units) or b.shape != (units,) or (aux_w is not None and aux_w.shape[0] != units):
        raise ValueError("RNN weights of different sizes")
    return StackedRnn(w, r, b, checked_activation(pctx, args.activation), aux_w)


class _Prepared:
    # every output is an output buffer or a cast of one, on the plain kernel's path too
    fresh_outputs = True
    RUNTIME: tuple = ()   # the run-time arguments a run reads, by name

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        # their input positions, looked up once (a run indexes ctx.inputs: cheaper than ctx.args)
        self.at = tuple(pctx.step.bound.positions.get(n) for n in self.RUNTIME)

    def floats(self, ctx) -> list:
        """The RUNTIME arguments as float32 arrays (None when absent, omitted or empty)."""
        inputs = ctx.inputs
        return [None if p is None else as_float32(inputs[p]) for p in self.at]


class PreparedLstm(_Prepared):
    RUNTIME = ("input", "output_state_in", "cell_state_in")

    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_lstm(pctx)

    def __call__(self, ctx):
        x, h, c = self.floats(ctx)
        if x is None or h is None or c is None or not self.cell.fits(x[None], h, c):
            return self.kernel(ctx)
        return lstm_outputs(ctx, self.cell, x, h, c)


class PreparedUnidirectionalLstm(_Prepared):
    RUNTIME = PreparedLstm.RUNTIME

    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_lstm(pctx)
        self.time_major = bool(pctx.args.get("time_major"))

    def __call__(self, ctx):
        x, h, c = self.floats(ctx)
        if x is None or h is None or c is None or not self.cell.fits(time_major_view(x, self.time_major), h, c):
            return self.kernel(ctx)
        return unidirectional_lstm_outputs(ctx, self.cell, x, h, c, self.time_major)


class PreparedBidirectionalLstm(_Prepared):
    RUNTIME = ("input", "aux_input", "fw_output_state_in", "fw_cell_state_in", "bw_output_state_in",
               "bw_cell_state_in")

    def __init__(self, pctx):
        super().__init__(pctx)
        self.fw = _stacked_lstm(pctx, "fw_")
        self.bw = _stacked_lstm(pctx, "bw_")
        self.pair = DirectionPair(self.fw, self.bw) if DirectionPair.fits(self.fw, self.bw) else None
        args = pctx.args
        self.merge, self.time_major = bool(args.get("merge_outputs")), bool(args.get("time_major"))

    def __call__(self, ctx):
        x, aux, *states = self.floats(ctx)
        if x is None or any(s is None for s in states):
            return self.kernel(ctx)
        tm = self.time_major
        x_tm = time_major_view(x, tm)
        aux_tm = None if aux is None else time_major_view(aux, tm)
        bw_x, fw_aux, bw_aux = link_aux(x_tm, aux_tm, self.fw.aux_w is not None or self.bw.aux_w is not None)
        if not (self.fw.fits(x_tm, *states[:2], fw_aux) and self.bw.fits(bw_x, *states[2:], bw_aux)):
            return self.kernel(ctx)
        return bidirectional_lstm_outputs(ctx, self.fw, self.bw, x, aux, states, tm, self.merge, self.pair)


class PreparedRnn(_Prepared):
    RUNTIME = ("input", "hidden_state_in")

    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_rnn(pctx)

    def __call__(self, ctx):
        x, h = self.floats(ctx)
        if x is None or h is None or not self.cell.fits(x[None], h):
            return self.kernel(ctx)
        return rnn_outputs(ctx, self.cell, x, h)


class PreparedUnidirectionalRnn(_Prepared):
    RUNTIME = PreparedRnn.RUNTIME

    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_rnn(pctx)
        self.time_major = bool(pctx.args.get("time_major"))

    def __call__(self, ctx):
        x, h = self.floats(ctx)
        if x is None or h is None or not self.cell.fits(time_major_view(x, self.time_major), h):
            return self.kernel(ctx)
        return unidirectional_rnn_outputs(ctx, self.cell, x, h, self.time_major)


class PreparedBidirectionalRnn(_Prepared):
    RUNTIME = ("input", "aux_input", "fw_hidden_state", "bw_hidden_state")

    def __init__(self, pctx):
        super().__init__(pctx)
        args = pctx.args
        self.fw = _stacked_rnn(pctx, "fw_", as_float32(args.get("fw_aux_weights")))
        self.bw = _stacked_rnn(pctx, "bw_", as_float32(args.get("bw_aux_weights")))
        self.time_major, self.merge = bool(args.get("time_major")), bool(args.get("merge_outputs"))

    def __call__(self, ctx):
        x, aux, fw_h, bw_h = self.floats(ctx)
        if x is None or fw_h is None or bw_h is None:
            return self.kernel(ctx)
        tm = self.time_major
        x_tm = time_major_view(x, tm)
        aux_tm = None if aux is None else time_major_view(aux, tm)
        bw_x, fw_aux, bw_aux = link_aux(x_tm, aux_tm, self.fw.aux_w is not None or self.bw.aux_w is not None)
        if not (self.fw.fits(x_tm, fw_h, fw_aux) and self.bw.fits(bw_x, bw_h, bw_aux)):
            return self.kernel(ctx)
        return bidirectional_rnn_outputs(ctx, self.fw, self.bw, x, aux, fw_h, bw_h, tm, self.merge)


class PreparedQuantizedLstm(_Prepared):
    """QUANTIZED_LSTM with constant weights: the QLstmCell built once (its requantizations compiled),
    and its activations (functions of an int16 raw) tabulated over every int16 value, so a step is
    the plain step with table lookups for the fixed-point logistic and tanh: one lookup for all the
    stacked gates (the logistic and the gate tanh tables end to end, each column offset into its own)."""

    RUNTIME = ("input", "output_state_in", "cell_state_in")
    _tables: dict = {}   # cell_shift -> (gate logistic and tanh tables joined, cell tanh table), shared

    def __init__(self, pctx):
        super().__init__(pctx)
        bound = pctx.step.bound
        self.cell = cell = QLstmCell(pctx.args, *(bound.operand(n).type for n in self.RUNTIME), _refuse, compiled=True)
        shift = cell.cell_shift
        if shift not in self._tables:
            tanh_cell = qlstm_activations(cell)[2]
            self._tables[shift] = (np.concatenate([int16_table(gate_logistic), int16_table(gate_tanh)]),
                                   None if tanh_cell is None else int16_table(tanh_cell))
        joined, cell_table = self._tables[shift]
        offsets = 32768 + 65536 * cell.tanh_columns.astype(np.int64)
        self.acts = (lambda a, _: np.take(joined, a + offsets), _lookup(joined),
                     None if cell_table is None else _lookup(cell_table))
        self.dtypes = tuple(bound.operand(n).type.dtype for n in self.RUNTIME)

    def __call__(self, ctx):
        inputs = ctx.inputs
        vals = [None if p is None else inputs[p] for p in self.at]
        if any(v is None or v.array.dtype != dt for v, dt in zip(vals, self.dtypes)):
            return self.kernel(ctx)
        x, h, c = (v.array.astype(np.int64) for v in vals)
        if not self.cell.fits(x, h, c):
            return self.kernel(ctx)
        return qlstm_results(*self.cell.step(x, h, c, *self.acts))


def _refuse(message):
    """A constant operand QLstmCell rejects: no preparation (the plain kernel reports it at run time)."""
    raise ValueError(message)


def _lookup(table):
    return lambda a: np.take(table, a + 32768)


# (operation, prepared class: its RUNTIME names the run-time arguments it takes)
_PREPARED = (
    (Op.LSTM, PreparedLstm),
    (Op.UNIDIRECTIONAL_SEQUENCE_LSTM, PreparedUnidirectionalLstm),
    (Op.BIDIRECTIONAL_SEQUENCE_LSTM, PreparedBidirectionalLstm),
    (Op.RNN, PreparedRnn),
    (Op.UNIDIRECTIONAL_SEQUENCE_RNN, PreparedUnidirectionalRnn),
    (Op.BIDIRECTIONAL_SEQUENCE_RNN, PreparedBidirectionalRnn),
)


@prepare(Op.QUANTIZED_LSTM)
def prepare_quantized_lstm(pctx):
    return PreparedQuantizedLstm(pctx) if pctx.step.bound.runtime <= set(PreparedQuantizedLstm.RUNTIME) else None


def _register(code, cls):
    @prepare(code)
    def prepare_recurrent(pctx):
        return cls(pctx) if _supported(pctx, cls.RUNTIME) else None
    return prepare_recurrent


for _code, _cls in _PREPARED:
    _register(_code, _cls)

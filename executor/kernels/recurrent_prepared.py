"""Compiled float RNNs and LSTMs: the weights stacked once.

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

from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op

from ..registry import prepare
from .recurrent.lstm import (
    StackedLstm,
    check_lstm,
    bidirectional_lstm_outputs,
    lstm_outputs,
    read_lstm_cell,
    unidirectional_lstm_outputs,
)
from .recurrent.rnn import (
    StackedRnn,
    bidirectional_rnn_outputs,
    rnn_outputs,
    unidirectional_rnn_outputs,
)
from .recurrent.common import (
    activation_code,
    float_input,
    link_aux,
    time_major_view,
)


def _supported(pctx, runtime: tuple) -> bool:
    """Float32 input and outputs; only the inputs at positions `runtime` may be run-time values."""
    return (pctx.operand(0).type.code == C.TENSOR_FLOAT32
            and all(o.type.code == C.TENSOR_FLOAT32 for o in pctx.outputs)
            and not any(pctx.is_runtime(i) for i in range(len(pctx.inputs)) if i not in runtime))


def _stacked_lstm(pctx, prefix="") -> StackedLstm:
    """The checked, stacked cell (NnapiError, i.e. no preparation, when its weights do not fit)."""
    cell = read_lstm_cell(pctx, prefix)
    check_lstm(pctx, cell, 0, cell.input_w["forget"].shape[1], prefix)
    return StackedLstm(cell)


def _stacked_rnn(pctx, first: int, act: int, aux_w=None) -> StackedRnn:
    w, r, b = (float_input(pctx, i) for i in range(first, first + 3))
    units = w.shape[0]
    if r.shape != (units, units) or b.shape != (units,) or (aux_w is not None and aux_w.shape[0] != units):
        raise ValueError("RNN weights of different sizes")
    return StackedRnn(w, r, b, activation_code(pctx, act), aux_w)


class _Prepared:
    # every output is an output buffer or a cast of one, on the plain kernel's path too
    fresh_outputs = True

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel


class PreparedLstm(_Prepared):
    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_lstm(pctx)

    def __call__(self, ctx):
        x, h, c = float_input(ctx, 0), float_input(ctx, 18), float_input(ctx, 19)
        if x is None or h is None or c is None or not self.cell.fits(x[None], h, c):
            return self.kernel(ctx)
        return lstm_outputs(ctx, self.cell, x, h, c)


class PreparedUnidirectionalLstm(_Prepared):
    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_lstm(pctx)
        self.time_major = bool(pctx.scalar(23))

    def __call__(self, ctx):
        x, h, c = float_input(ctx, 0), float_input(ctx, 18), float_input(ctx, 19)
        if x is None or h is None or c is None or not self.cell.fits(time_major_view(x, self.time_major), h, c):
            return self.kernel(ctx)
        return unidirectional_lstm_outputs(ctx, self.cell, x, h, c, self.time_major)


class PreparedBidirectionalLstm(_Prepared):
    def __init__(self, pctx):
        super().__init__(pctx)
        self.fw = _stacked_lstm(pctx, "fw_")
        self.bw = _stacked_lstm(pctx, "bw_")
        self.merge, self.time_major = bool(pctx.scalar(51)), bool(pctx.scalar(52))

    def __call__(self, ctx):
        x, aux = float_input(ctx, 0), float_input(ctx, 39)
        states = [float_input(ctx, i) for i in range(35, 39)]
        if x is None or any(s is None for s in states):
            return self.kernel(ctx)
        tm = self.time_major
        x_tm = time_major_view(x, tm)
        aux_tm = None if aux is None else time_major_view(aux, tm)
        bw_x, fw_aux, bw_aux = link_aux(x_tm, aux_tm, self.fw.aux_w is not None or self.bw.aux_w is not None)
        if not (self.fw.fits(x_tm, *states[:2], fw_aux) and self.bw.fits(bw_x, *states[2:], bw_aux)):
            return self.kernel(ctx)
        return bidirectional_lstm_outputs(ctx, self.fw, self.bw, x, aux, states, tm, self.merge)


class PreparedRnn(_Prepared):
    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_rnn(pctx, 1, 5)

    def __call__(self, ctx):
        x, h = float_input(ctx, 0), float_input(ctx, 4)
        if x is None or h is None or not self.cell.fits(x[None], h):
            return self.kernel(ctx)
        return rnn_outputs(ctx, self.cell, x, h)


class PreparedUnidirectionalRnn(_Prepared):
    def __init__(self, pctx):
        super().__init__(pctx)
        self.cell = _stacked_rnn(pctx, 1, 5)
        self.time_major = bool(pctx.scalar(6))

    def __call__(self, ctx):
        x, h = float_input(ctx, 0), float_input(ctx, 4)
        if x is None or h is None or not self.cell.fits(time_major_view(x, self.time_major), h):
            return self.kernel(ctx)
        return unidirectional_rnn_outputs(ctx, self.cell, x, h, self.time_major)


class PreparedBidirectionalRnn(_Prepared):
    def __init__(self, pctx):
        super().__init__(pctx)
        self.fw = _stacked_rnn(pctx, 1, 12, float_input(pctx, 10))
        self.bw = _stacked_rnn(pctx, 5, 12, float_input(pctx, 11))
        self.time_major, self.merge = bool(pctx.scalar(13)), bool(pctx.scalar(14))

    def __call__(self, ctx):
        x, aux, fw_h, bw_h = float_input(ctx, 0), float_input(ctx, 9), float_input(ctx, 4), float_input(ctx, 8)
        if x is None or fw_h is None or bw_h is None:
            return self.kernel(ctx)
        tm = self.time_major
        x_tm = time_major_view(x, tm)
        aux_tm = None if aux is None else time_major_view(aux, tm)
        bw_x, fw_aux, bw_aux = link_aux(x_tm, aux_tm, self.fw.aux_w is not None or self.bw.aux_w is not None)
        if not (self.fw.fits(x_tm, fw_h, fw_aux) and self.bw.fits(bw_x, bw_h, bw_aux)):
            return self.kernel(ctx)
        return bidirectional_rnn_outputs(ctx, self.fw, self.bw, x, aux, fw_h, bw_h, tm, self.merge)


# (operation, prepared class, positions of the run-time inputs it takes)
_PREPARED = (
    (Op.LSTM, PreparedLstm, (0, 18, 19)),
    (Op.UNIDIRECTIONAL_SEQUENCE_LSTM, PreparedUnidirectionalLstm, (0, 18, 19)),
    (Op.BIDIRECTIONAL_SEQUENCE_LSTM, PreparedBidirectionalLstm, (0, 35, 36, 37, 38, 39)),
    (Op.RNN, PreparedRnn, (0, 4)),
    (Op.UNIDIRECTIONAL_SEQUENCE_RNN, PreparedUnidirectionalRnn, (0, 4)),
    (Op.BIDIRECTIONAL_SEQUENCE_RNN, PreparedBidirectionalRnn, (0, 4, 8, 9)),
)


def _register(code, cls, runtime):
    @prepare(code)
    def prepare_recurrent(pctx):
        return cls(pctx) if _supported(pctx, runtime) else None
    return prepare_recurrent


for _code, _cls, _runtime in _PREPARED:
    _register(_code, _cls, _runtime)

"""LSTM, GRU and RNN unrolled over the time steps into NNAPI operations: the ONNX formulas step by step.

The input sequence is made time-major ([seq, batch, input]) and projected for every step at once (one
FULLY_CONNECTED per direction and gate group, the W and the step-invariant biases folded in, SPLIT into
[1, batch, width] steps). Each step adds the recurrent FULLY_CONNECTED of the previous hidden state
(flattened to [batch, hidden]), splits the gates, adds peepholes, clips the pre-activations to
[-clip, clip] (MINIMUM / MAXIMUM), and applies the node's activations (GRU's z and r, which share
theirs, in one pass before the split). The steps' hidden states are
concatenated into Y; the last ones are Y_h (and the last cell states Y_c).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported
from .recurrent import Activation, Recurrent, const, direction_state, emit, output, reshape_into, temp
from ...pins import pin_hint

NONE = 0  # FuseCode


def binary(ctx, rec, code: Op, a: int, b: int, shape, name: str) -> int:
    fuse = {"fuse": ctx.i32(NONE)} if code in (Op.ADD, Op.SUB, Op.MUL, Op.DIV) else {}
    return emit(ctx, rec, code, shape, name, input1=a, input2=b, **fuse)


def filled(ctx, rec: Recurrent, value: float, shape=(1,)) -> int:
    """A constant of `shape` filled with value, made once per node (steps share it)."""
    key = (tuple(shape), float(value))
    if key not in rec.constants:
        rec.constants[key] = const(ctx, rec, np.full(shape, value), f"const{len(rec.constants)}")
    return rec.constants[key]


def activate(ctx, rec: Recurrent, a: Activation, x: int, shape, name: str) -> int:
    """ONNX recurrent activation `a` of x (onnxruntime's formulas for the parametrised ones)."""
    unary = {"relu": Op.RELU, "tanh": Op.TANH, "sigmoid": Op.LOGISTIC}
    if a.name in unary:
        return emit(ctx, rec, unary[a.name], shape, name, input=x)
    c = lambda v: filled(ctx, rec, v)  # noqa: E731
    b = lambda code, p, q, what: binary(ctx, rec, code, p, q, shape, f"{name}/{what}")  # noqa: E731
    if a.name == "affine":            # alpha x + beta
        return b(Op.ADD, b(Op.MUL, x, c(a.alpha), "scaled"), c(a.beta), "out")
    if a.name == "leakyrelu":         # x >= 0 ? x : alpha x
        return emit(ctx, rec, Op.PRELU, shape, name, input=x, alpha=c(a.alpha))
    if a.name == "thresholdedrelu":   # x > alpha ? x : 0
        cond = ctx.temp(OperandType(C.TENSOR_BOOL8, tuple(shape)), f"{name}/above")
        ctx.emit_form(Op.GREATER, "default", [cond], input1=x, input2=c(a.alpha))
        return emit(ctx, rec, Op.SELECT, shape, name, condition=cond, input1=x, input2=filled(ctx, rec, 0.0, shape))
    if a.name == "scaledtanh":        # alpha tanh(beta x)
        inner = emit(ctx, rec, Op.TANH, shape, f"{name}/tanh", input=b(Op.MUL, x, c(a.beta), "scaled"))
        return b(Op.MUL, inner, c(a.alpha), "out")
    if a.name == "hardsigmoid":       # max(0, min(1, alpha x + beta))
        lin = b(Op.ADD, b(Op.MUL, x, c(a.alpha), "scaled"), c(a.beta), "linear")
        return b(Op.MAXIMUM, b(Op.MINIMUM, lin, c(1.0), "upper"), c(0.0), "out")
    if a.name == "elu":               # x >= 0 ? x : alpha (exp(x) - 1)
        alpha = ctx.scalar(C.FLOAT32 if rec.code == C.TENSOR_FLOAT32 else C.FLOAT16, a.alpha)
        return emit(ctx, rec, Op.ELU, shape, name, input=x, alpha=alpha)
    if a.name == "softsign":          # x / (1 + |x|)
        mag = emit(ctx, rec, Op.ABS, shape, f"{name}/abs", input=x)
        return b(Op.DIV, x, b(Op.ADD, mag, c(1.0), "denominator"), "out")
    if a.name == "softplus":          # log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), which cannot overflow
        mag = emit(ctx, rec, Op.ABS, shape, f"{name}/abs", input=x)
        neg = emit(ctx, rec, Op.NEG, shape, f"{name}/neg", input=mag)
        e = emit(ctx, rec, Op.EXP, shape, f"{name}/exp", input=neg)
        log = emit(ctx, rec, Op.LOG, shape, f"{name}/log", input=b(Op.ADD, e, c(1.0), "one_plus"))
        return b(Op.ADD, emit(ctx, rec, Op.RELU, shape, f"{name}/relu", input=x), log, "out")
    raise Unsupported(Reason.ATTRIBUTE, f"{rec.node.label()}: activation {a.name!r}")


def clipped(ctx, rec: Recurrent, x: int, shape, name: str) -> int:
    """x clipped to [-clip, clip] (ONNX clips every gate's pre-activation), or x without clip."""
    if not rec.clip:
        return x
    upper = binary(ctx, rec, Op.MINIMUM, x, filled(ctx, rec, rec.clip), shape, f"{name}/clip_upper")
    return binary(ctx, rec, Op.MAXIMUM, upper, filled(ctx, rec, -rec.clip), shape, f"{name}/clipped")


def gate(ctx, rec: Recurrent, a: Activation, pre: int, shape, name: str) -> int:
    return activate(ctx, rec, a, clipped(ctx, rec, pre, shape, name), shape, name)


@dataclass
class Dense:
    """The constant operands of one FULLY_CONNECTED, made once and used by every step."""

    weights: int
    bias: int
    width: int


def dense(ctx, rec: Recurrent, weights: np.ndarray, bias, name: str) -> Dense:
    """weights [width, columns] and bias [width] (zeros when None) as FULLY_CONNECTED operands."""
    width = weights.shape[0]
    bias = np.zeros(width) if bias is None else bias
    return Dense(const(ctx, rec, weights, f"{name}/w"), const(ctx, rec, bias, f"{name}/b"), width)


def fully_connected(ctx, rec: Recurrent, x: int, layer: Dense, rows: int, name: str) -> int:
    """x (flattened to [rows, columns]) @ weights^T + bias: [rows, width]."""
    return emit(ctx, rec, Op.FULLY_CONNECTED, (rows, layer.width), name, input=x, weights=layer.weights,
                bias=layer.bias, fuse=ctx.i32(NONE))


def projections(ctx, rec: Recurrent, x_tm: int, weights: np.ndarray, bias: np.ndarray, name: str) -> list:
    """Per time step, [1, batch, width] = x_t @ weights^T + bias, from one FULLY_CONNECTED over all steps."""
    seq, batch, width = rec.seq, rec.batch, weights.shape[0]
    flat = fully_connected(ctx, rec, x_tm, dense(ctx, rec, weights, bias, name), seq * batch, f"{name}/all_steps")
    shaped = temp(ctx, rec, (seq, batch, width), f"{name}/by_step")
    reshape_into(ctx, flat, shaped)
    if seq == 1:
        return [shaped]
    steps = [temp(ctx, rec, (1, batch, width), f"{name}/t{t}") for t in range(seq)]
    ctx.emit_form(Op.SPLIT, "default", steps, input=shaped, axis=ctx.i32(0), num_splits=ctx.i32(seq))
    return steps


def split_gates(ctx, rec: Recurrent, pre: int, count: int, name: str) -> list:
    step = (1, rec.batch, rec.hidden)
    parts = [temp(ctx, rec, step, f"{name}/gate{k}") for k in range(count)]
    ctx.emit_form(Op.SPLIT, "default", parts, input=pre, axis=ctx.i32(2), num_splits=ctx.i32(count))
    return parts


def with_peephole(ctx, rec: Recurrent, pre: int, state: int, weight, shape, name: str) -> int:
    """pre + weight * state (an LSTM gate's peephole), or pre without peepholes."""
    if weight is None:
        return pre
    return binary(ctx, rec, Op.ADD, pre, binary(ctx, rec, Op.MUL, state, weight, shape, f"{name}/peephole"), shape,
                  f"{name}/peeped")


# -- one direction per op -----------------------------------------------------------

def lstm_direction(ctx, rec: Recurrent, d: int, x_tm: int, order) -> tuple:
    n, step = rec.hidden, (1, rec.batch, rec.hidden)
    f_act, g_act, h_act = rec.activations[d]
    tag = f"d{d}"
    xs = projections(ctx, rec, x_tm, rec.w[d], rec.b[d, :4 * n] + rec.b[d, 4 * n:], f"{tag}/x")
    h = direction_state(ctx, rec, "h", d, step, f"{tag}/h0")
    c = direction_state(ctx, rec, "c", d, step, f"{tag}/c0")
    p_i = p_o = p_f = None
    if rec.peepholes is not None:   # P is (i, o, f)
        p_i, p_o, p_f = (const(ctx, rec, rec.peepholes[d, k * n:(k + 1) * n], f"{tag}/P{k}") for k in range(3))
    one = filled(ctx, rec, 1.0)
    recurrent = dense(ctx, rec, rec.r[d], None, f"{tag}/R")
    hs = {}
    for t in order:
        s = f"{tag}/t{t}"
        pre = binary(ctx, rec, Op.ADD, xs[t], fully_connected(ctx, rec, h, recurrent, rec.batch, f"{s}/hR"),
                     (1, rec.batch, 4 * n), f"{s}/pre")
        i_pre, o_pre, f_pre, c_pre = split_gates(ctx, rec, pre, 4, s)
        i = gate(ctx, rec, f_act, with_peephole(ctx, rec, i_pre, c, p_i, step, f"{s}/i"), step, f"{s}/i")
        if rec.input_forget:  # onnxruntime couples the forget gate to the input gate: f = 1 - i
            f = binary(ctx, rec, Op.SUB, one, i, step, f"{s}/f")
        else:
            f = gate(ctx, rec, f_act, with_peephole(ctx, rec, f_pre, c, p_f, step, f"{s}/f"), step, f"{s}/f")
        g = gate(ctx, rec, g_act, c_pre, step, f"{s}/g")
        c = binary(ctx, rec, Op.ADD, binary(ctx, rec, Op.MUL, f, c, step, f"{s}/fc"),
                   binary(ctx, rec, Op.MUL, i, g, step, f"{s}/ig"), step, f"{s}/c")
        o = gate(ctx, rec, f_act, with_peephole(ctx, rec, o_pre, c, p_o, step, f"{s}/o"), step, f"{s}/o")
        h = binary(ctx, rec, Op.MUL, o, activate(ctx, rec, h_act, c, step, f"{s}/hc"), step, f"{s}/h")
        hs[t] = h
    return hs, h, c


def gru_direction(ctx, rec: Recurrent, d: int, x_tm: int, order) -> tuple:
    n, step = rec.hidden, (1, rec.batch, rec.hidden)
    f_act, g_act = rec.activations[d]
    tag = f"d{d}"
    wb, rb = rec.b[d, :3 * n], rec.b[d, 3 * n:]
    lbr = rec.linear_before_reset
    xzr = projections(ctx, rec, x_tm, rec.w[d, :2 * n], wb[:2 * n] + rb[:2 * n], f"{tag}/x_zr")
    xh = projections(ctx, rec, x_tm, rec.w[d, 2 * n:], wb[2 * n:] + (0 if lbr else rb[2 * n:]), f"{tag}/x_h")
    h = direction_state(ctx, rec, "h", d, step, f"{tag}/h0")
    one = filled(ctx, rec, 1.0)
    r_zr = dense(ctx, rec, rec.r[d, :2 * n], None, f"{tag}/R_zr")
    r_h = dense(ctx, rec, rec.r[d, 2 * n:], rb[2 * n:] if lbr else None, f"{tag}/R_h")
    hs = {}
    for t in order:
        s = f"{tag}/t{t}"
        zr = binary(ctx, rec, Op.ADD, xzr[t], fully_connected(ctx, rec, h, r_zr, rec.batch, f"{s}/hR_zr"),
                    (1, rec.batch, 2 * n), f"{s}/pre_zr")
        # z and r share their activation: one elementwise pass over both, then the split
        z, r = split_gates(ctx, rec, gate(ctx, rec, f_act, zr, (1, rec.batch, 2 * n), f"{s}/zr"), 2, s)
        if lbr:   # r (h Rh + Rbh)
            rec_h = binary(ctx, rec, Op.MUL, r, fully_connected(ctx, rec, h, r_h, rec.batch, f"{s}/hR_h"), step,
                           f"{s}/r_hR")
        else:     # (r h) Rh
            rh = binary(ctx, rec, Op.MUL, r, h, step, f"{s}/rh")
            rec_h = fully_connected(ctx, rec, rh, r_h, rec.batch, f"{s}/rhR")
        cand = gate(ctx, rec, g_act, binary(ctx, rec, Op.ADD, xh[t], rec_h, step, f"{s}/pre_h"), step, f"{s}/h~")
        keep = binary(ctx, rec, Op.SUB, one, z, step, f"{s}/1-z")
        h = binary(ctx, rec, Op.ADD, binary(ctx, rec, Op.MUL, keep, cand, step, f"{s}/new"),
                   binary(ctx, rec, Op.MUL, z, h, step, f"{s}/kept"), step, f"{s}/h")
        hs[t] = h
    return hs, h, None


def rnn_direction(ctx, rec: Recurrent, d: int, x_tm: int, order) -> tuple:
    n, step = rec.hidden, (1, rec.batch, rec.hidden)
    (f_act,) = rec.activations[d]
    tag = f"d{d}"
    xs = projections(ctx, rec, x_tm, rec.w[d], rec.b[d, :n] + rec.b[d, n:], f"{tag}/x")
    h = direction_state(ctx, rec, "h", d, step, f"{tag}/h0")
    recurrent = dense(ctx, rec, rec.r[d], None, f"{tag}/R")
    hs = {}
    for t in order:
        s = f"{tag}/t{t}"
        pre = binary(ctx, rec, Op.ADD, xs[t], fully_connected(ctx, rec, h, recurrent, rec.batch, f"{s}/hR"),
                     step, f"{s}/pre")
        h = gate(ctx, rec, f_act, pre, step, f"{s}/h")
        hs[t] = h
    return hs, h, None


DIRECTION = {"LSTM": lstm_direction, "GRU": gru_direction, "RNN": rnn_direction}


# -- outputs ----------------------------------------------------------------------

def write_states(ctx, rec: Recurrent, pieces: list, key: str) -> None:
    """Y_h / Y_c from each direction's [1, batch, hidden]: [dirs, batch, hidden] (layout 0) or
    [batch, dirs, hidden] (layout 1)."""
    out = output(ctx, rec, key)
    if len(pieces) == 1:
        reshape_into(ctx, pieces[0], out)   # [1, b, h] and [b, 1, h] hold the same data order
        return
    if rec.layout == 0:
        ctx.emit_form(Op.CONCATENATION, "default", [out], inputs=pieces, axis=ctx.i32(0))
        return
    joined = emit(ctx, rec, Op.CONCATENATION, (2, rec.batch, rec.hidden), f"{key}/joined", inputs=pieces,
                  axis=ctx.i32(0))
    ctx.emit_form(Op.TRANSPOSE, "default", [out], input=joined, perm=ctx.const(np.asarray((1, 0, 2), np.int32)))


def write_sequence(ctx, rec: Recurrent, per_dir: list) -> None:
    """Y from each direction's steps: [seq, dirs, batch, hidden] (layout 0) or [batch, seq, dirs, hidden]."""
    out = output(ctx, rec, "Y")
    seq, b, n = rec.seq, rec.batch, rec.hidden
    joined = []
    for d, hs in enumerate(per_dir):
        steps = [hs[t] for t in range(seq)]
        if len(per_dir) == 1 and rec.layout == 0:
            if seq == 1:
                reshape_into(ctx, steps[0], out)
            else:
                seq_d = emit(ctx, rec, Op.CONCATENATION, (seq, b, n), "Y/steps", inputs=steps, axis=ctx.i32(0))
                reshape_into(ctx, seq_d, out)
            return
        seq_d = temp(ctx, rec, (seq, 1, b, n), f"Y/d{d}")
        if seq == 1:
            reshape_into(ctx, steps[0], seq_d)
        else:
            flat = emit(ctx, rec, Op.CONCATENATION, (seq, b, n), f"Y/d{d}/steps", inputs=steps, axis=ctx.i32(0))
            reshape_into(ctx, flat, seq_d)
        joined.append(seq_d)
    dirs = len(per_dir)
    if rec.layout == 0:
        ctx.emit_form(Op.CONCATENATION, "default", [out], inputs=joined, axis=ctx.i32(1))
        return
    y_tm = joined[0] if dirs == 1 else emit(ctx, rec, Op.CONCATENATION, (seq, dirs, b, n), "Y/time_major",
                                            inputs=joined, axis=ctx.i32(1))
    ctx.emit_form(Op.TRANSPOSE, "default", [out], input=y_tm, perm=ctx.const(np.asarray((2, 0, 1, 3), np.int32)))


def unroll(ctx, rec: Recurrent) -> None:
    if not (rec.seq > 0 and rec.batch > 0):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{rec.node.label()}: unrolling needs the sequence length and "
                                                f"the batch size ({pin_hint('them')})")
    x = ctx.operand_as(rec.x, None)
    if rec.layout == 1:
        x_tm = emit(ctx, rec, Op.TRANSPOSE, (rec.seq, rec.batch, rec.input_size), "X/time_major", input=x,
                    perm=ctx.const(np.asarray((1, 0, 2), np.int32)))
    else:
        x_tm = x
    directions(ctx, rec, lambda d, order: DIRECTION[rec.node.op](ctx, rec, d, x_tm, order))


def directions(ctx, rec: Recurrent, run) -> None:
    """Each direction's steps by run(d, time order) -> ({t: h}, last h, last c), then Y, Y_h and Y_c."""
    per_dir, last_h, last_c = [], [], []
    for d, direction in enumerate(rec.directions):
        order = range(rec.seq) if direction == "forward" else range(rec.seq - 1, -1, -1)
        hs, h, c = run(d, order)
        per_dir.append(hs)
        last_h.append(h)
        last_c.append(c)
    if "Y" in rec.outputs:
        write_sequence(ctx, rec, per_dir)
    if "Y_h" in rec.outputs:
        write_states(ctx, rec, last_h, "Y_h")
    if "Y_c" in rec.outputs:
        write_states(ctx, rec, last_c, "Y_c")

"""com.microsoft DynamicQuantizeLSTM as onnxruntime's CPU kernel computes it (DynamicQuantizeLSTM -> LSTMBase ->
UniDirectionalLstm with uint8 GEMMs), unrolled over the time steps in NNAPI float32 operations that hold
onnxruntime's integers:

- X (the whole sequence, once per node) and, before every recurrent product, the previous h are quantized to
  uint8 with a run-time per-tensor scale (runtime_quant.py).
- The integer products sum (q - zp) (w - w_zp) are FULLY_CONNECTED on float32 integers, exact while every
  column's 255 * sum |w - w_zp| < 2^24 (checked; otherwise the float form of dynamic_quant.py, noted).
- acc * float32(scale * w_scale) (per tensor or per gate column) for X, the same for h added to it, then the
  bias Wb + Rb: each an NNAPI MUL / ADD that rounds in float32 where onnxruntime's output processor does (it
  multiplies and adds without fusing them).
- Gates, cell and h in onnxruntime's order: i, f (or 1 - i), g, c = c_prev f + i g, o, h = h(c) o.

What differs is only the activations: onnxruntime evaluates sigmoid and tanh
with MLAS's rational approximations (MlasComputeLogistic / MlasComputeTanh), a few float32 ulps from the
functions NNAPI's LOGISTIC and TANH define; the rule and its test are in docs/quantized-arithmetic.md and
tests/converters/onnx/test_dynamic_quant_lstm.py. onnxruntime with more than one intra-op thread and a batch
of 2 or more quantizes h per chunk of batch rows; the whole batch here is its one-thread arithmetic (parity's
reference runs one thread).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import MS_DOMAIN_VERSIONS, onnx_op
from .recurrent import Recurrent, const, direction_state, emit, read, reshape_into, temp
from .runtime_quant import RuntimeQuantizer
from .unrolled import activate, clipped, directions, split_gates, with_peephole
from ...pins import pin_hint

EXACT_SUM = 2 ** 24   # float32 holds every integer below it


@dataclasses.dataclass
class Integer:
    """One direction's quantized W or R: the integers w - w_zp as NNAPI weights [4 * hidden, rows] and the
    scale per tensor [1] or per gate column [4 * hidden]."""

    weights: np.ndarray
    scale: np.ndarray


def _integer_weights(ctx, node, k: int, scale_at: int, name: str) -> list:
    """Per direction, DynamicQuantizeLSTM input k ([dirs, rows, 4 * hidden]) with its scales and zero points;
    the differences in float32 when q and the zero points are 8- or 16-bit integers (exact there: integers
    below 2^17; half the memory of float64 on a large W), else float64."""
    from .dynamic_quant import small_integers
    q = ctx.const_value(node.inputs[k], name)
    scale = np.asarray(ctx.const_value(node.inputs[scale_at], f"{name}_scale"), np.float32)
    zp_in = node.inputs[scale_at + 1] if scale_at + 1 < len(node.inputs) else -1
    zp = np.zeros(scale.shape, q.dtype) if zp_in < 0 else ctx.const_value(zp_in, f"{name}_zero_point")
    dtype = np.float32 if small_integers(q, zp) else np.float64
    q, zp = q.astype(dtype), zp.astype(dtype)
    dirs, cols = q.shape[0], q.shape[2]
    per_dir = scale.reshape(dirs, -1)
    zps = zp.reshape(dirs, -1)
    return [Integer((q[d] - zps[d][None, :]).T, per_dir[d]) for d in range(dirs)] \
        if per_dir.shape[1] in (1, cols) else []


def _exact(parts: list) -> bool:
    """Every integer product of a uint8 operand (|q - zp| <= 255) with these weights, and each partial sum,
    is held exactly by float32."""
    return all(255.0 * np.abs(p.weights).sum(axis=1, dtype=np.float64).max() < EXACT_SUM for p in parts)


def _integer_operands(ctx, rec: Recurrent, part: Integer, name: str) -> tuple:
    """(weights, zero bias, scale) operands of `part`, made once per node: every unrolled step reads the
    same ones (one copy of R in the model, not one per time step)."""
    key = ("integer", id(part))
    made = rec.constants.get(key)
    if made is None or made[0] is not part:
        made = rec.constants[key] = (part, const(ctx, rec, part.weights, f"{name}/w_int"),
                                     const(ctx, rec, np.zeros(part.weights.shape[0]), f"{name}/zero_bias"),
                                     const(ctx, rec, part.scale, f"{name}/w_scale"))
    return made[1:]


def _product(ctx, rec, q: RuntimeQuantizer, a: int, a_scale: int, part: Integer, rows: int, dims, name: str,
             weights_name: str) -> int:
    """float32(acc) * float32(a_scale * w_scale), acc = a @ part.weights^T, of dims ([..., 4 * hidden])."""
    width = part.weights.shape[0]
    weights, zero_bias, w_scale = _integer_operands(ctx, rec, part, weights_name)
    acc = emit(ctx, rec, Op.FULLY_CONNECTED, (rows, width), f"{name}/acc", input=a, weights=weights,
               bias=zero_bias, fuse=ctx.i32(0))
    rank1 = (1,) * (len(dims) - 1)
    mult = q.op(Op.MUL, a_scale, w_scale, rank1 + (part.scale.size,), f"{name}/multiplier")
    if tuple(dims[:-2]) == rank1[:-1] and dims[-2] == rows:
        # acc [rows, width] times the rank-`dims` multiplier broadcasts to dims itself (no RESHAPE)
        return q.op(Op.MUL, acc, mult, dims, name)
    shaped = temp(ctx, rec, dims, f"{name}/acc_shaped")
    reshape_into(ctx, acc, shaped)
    return q.op(Op.MUL, shaped, mult, dims, name)


def _zero_state(ctx, rec: Recurrent, key: str) -> bool:
    t = rec.initial[key]
    return t < 0 or (ctx.is_const(t) and not np.asarray(ctx.const_value(t)).any())


def _direction(ctx, rec: Recurrent, q: RuntimeQuantizer, d: int, xq: tuple, w: Integer, r: Integer, bias, order):
    n, b, seq = rec.hidden, rec.batch, rec.seq
    step, wide = (1, b, n), (1, b, 4 * n)
    f_act, g_act, h_act = rec.activations[d]
    tag = f"d{d}"
    px = _product(ctx, rec, q, xq[0], xq[1], w, seq * b, (seq, b, 4 * n), f"{tag}/xW", f"{tag}/W")
    if seq > 1:
        steps = [temp(ctx, rec, wide, f"{tag}/xW/t{t}") for t in range(seq)]
        ctx.emit_form(Op.SPLIT, "default", steps, input=px, axis=ctx.i32(0), num_splits=ctx.i32(seq))
        px = steps
    else:
        px = [px]
    h = direction_state(ctx, rec, "h", d, step, f"{tag}/h0")
    c = direction_state(ctx, rec, "c", d, step, f"{tag}/c0")
    skip_first = _zero_state(ctx, rec, "h")   # a zero h quantizes to zeros: onnxruntime adds 0 to xW
    b_all = None if bias is None else const(ctx, rec, bias[d], f"{tag}/bias")
    b_gate = None if bias is None else [const(ctx, rec, bias[d, k * n:(k + 1) * n], f"{tag}/bias{k}") for k in range(4)]
    peep = None if rec.peepholes is None else \
        [const(ctx, rec, rec.peepholes[d, k * n:(k + 1) * n], f"{tag}/P{k}") for k in range(3)]   # i, o, f
    hs = {}
    for k, t in enumerate(order):
        s = f"{tag}/t{t}"
        pre = px[t]
        if not (k == 0 and skip_first):
            hq, h_scale = q(h, step, f"{s}/h_quant")
            pre = q.op(Op.ADD, _product(ctx, rec, q, hq, h_scale, r, b, wide, f"{s}/hR", f"{tag}/R"), pre, wide, f"{s}/sum")
        if peep is None and b_all is not None:
            pre = q.op(Op.ADD, pre, b_all, wide, f"{s}/pre")
        if peep is None:
            # no peepholes: every gate's pre-activation is final here; i, o and f share their activation,
            # applied in one pass over all four gates before the split (g's column of it goes unused)
            pre = clipped(ctx, rec, pre, wide, f"{s}/pre")
            i, o, f, _ = split_gates(ctx, rec, activate(ctx, rec, f_act, pre, wide, f"{s}/iof"), 4, f"{s}/act")
            g = activate(ctx, rec, g_act, split_gates(ctx, rec, pre, 4, s)[3], step, f"{s}/g")
            if rec.input_forget:
                f = q.op(Op.SUB, q.c(1.0), i, step, f"{s}/f")
            c = q.op(Op.ADD, q.op(Op.MUL, c, f, step, f"{s}/cf"), q.op(Op.MUL, i, g, step, f"{s}/ig"), step, f"{s}/c")
        else:
            i_pre, o_pre, f_pre, g_pre = split_gates(ctx, rec, pre, 4, s)

            def finish(x, gate: int, p, state, name):   # + peephole, + bias, clip (onnxruntime's order)
                if p is not None:
                    x = with_peephole(ctx, rec, x, state, p, step, name)
                if b_gate is not None:
                    x = q.op(Op.ADD, x, b_gate[gate], step, f"{name}/biased")
                return clipped(ctx, rec, x, step, name)

            i = activate(ctx, rec, f_act, finish(i_pre, 0, peep[0], c, f"{s}/i"), step, f"{s}/i")
            if rec.input_forget:
                f = q.op(Op.SUB, q.c(1.0), i, step, f"{s}/f")
            else:
                f = activate(ctx, rec, f_act, finish(f_pre, 2, peep[2], c, f"{s}/f"), step, f"{s}/f")
            g = activate(ctx, rec, g_act, finish(g_pre, 3, None, c, f"{s}/g"), step, f"{s}/g")
            c = q.op(Op.ADD, q.op(Op.MUL, c, f, step, f"{s}/cf"), q.op(Op.MUL, i, g, step, f"{s}/ig"), step,
                     f"{s}/c")
            o = activate(ctx, rec, f_act, finish(o_pre, 1, peep[1], c, f"{s}/o"), step, f"{s}/o")
        h = q.op(Op.MUL, activate(ctx, rec, h_act, c, step, f"{s}/hc"), o, step, f"{s}/h")
        hs[t] = h
    return hs, h, c


def convert_quantized(ctx, node, rec: Recurrent, w: list, r: list) -> None:
    """The unrolled integer-exact composition (module docstring) of a DynamicQuantizeLSTM read as `rec`."""
    if not (rec.seq > 0 and rec.batch > 0):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: unrolling needs the sequence length and the batch "
                                                f"size ({pin_hint('them')})")
    x = ctx.operand_as(rec.x, None)
    q = RuntimeQuantizer(ctx, node.name or node.op)
    xq = q(x, (rec.seq, rec.batch, rec.input_size), "X/quant")
    ins = list(node.inputs) + [-1] * (12 - len(node.inputs))
    bias = None
    if ins[3] >= 0:   # onnxruntime adds Wb + Rb, summed in float32
        raw = np.asarray(ctx.const_value(ins[3], "B"), np.float32)
        bias = raw[:, :4 * rec.hidden] + raw[:, 4 * rec.hidden:]
    directions(ctx, rec, lambda d, order: _direction(ctx, rec, q, d, xq, w[d], r[d], bias, order))


@onnx_op("DynamicQuantizeLSTM", versions=MS_DOMAIN_VERSIONS)
def dynamic_quantize_lstm(node, ctx):
    """com.microsoft DynamicQuantizeLSTM in onnxruntime's integer arithmetic (module docstring); the float LSTM
    on dequantized weights where float32 cannot hold its integer products exactly."""
    from .dynamic_quant import float_lstm
    ins = list(node.inputs) + [-1] * (12 - len(node.inputs))
    if any(ins[k] < 0 for k in (0, 1, 2, 8, 9, 10, 11)):
        raise Unsupported(Reason.INVALID, f"{node.label()}: DynamicQuantizeLSTM needs X, W, R and the scales and "
                                          f"zero points of W and R")
    lstm = float_lstm(ctx, node)
    rec = read(lstm, ctx)
    if rec.dtype != np.float32:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: X is {rec.dtype.name}; DynamicQuantizeLSTM is float32")
    w, r = _integer_weights(ctx, node, 1, 8, "W"), _integer_weights(ctx, node, 2, 10, "R")
    if len(w) != len(rec.directions) or len(r) != len(rec.directions):
        raise Unsupported(Reason.INVALID, f"{node.label()}: W / R scales are neither per direction nor per direction "
                                          f"and gate column")
    if not _exact(w + r):
        ctx.notes.append(f"{node.label()}: float32 cannot hold its integer products exactly (255 * sum |w| >= 2^24 "
                         f"in a column); converted as the float LSTM on dequantized weights, which does not round X "
                         f"and h to uint8 as onnxruntime does")
        from .recurrent import lstm_rnn
        lstm_rnn(lstm, ctx)
        return
    convert_quantized(ctx, node, rec, w, r)

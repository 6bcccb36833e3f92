"""The quantized LSTMs, bit-exact with Android's reference driver:

* QUANTIZED_16BIT_LSTM: one uint8/int16 step with gemmlowp's 16-bit fixed-point
  gate math (TFLite's legacy quantized LstmCell);
* QUANTIZED_LSTM: one int8/int16 step with integer layer normalization (TFLite's
  fully integer LSTM as Android's QLSTM runs it).

Fixed-point values are int16 raw integers held in int64 numpy arrays; a value
with `ib` integer bits means raw * 2^-(15 - ib). The helpers below reproduce
gemmlowp's FixedPoint<int16_t, ib> operations including its wrap-around and
saturation points.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import kernel
from ..fixedpoint import (
    EXP_BARREL,
    inv_sqrt_multiplier,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_multiply_by_pot,
    saturating_rounding_doubling_high_mul,
)
from ..fixedpoint import rounding_half_sum as _half_sum
from ..fixedpoint import trunc_div as _trunc_div

_I16_MIN, _I16_MAX = -(1 << 15), (1 << 15) - 1
_ONE_F0 = _I16_MAX          # 1.0 with 0 integer bits saturates to the largest raw value
_STATE_INTEGER_BITS = 4     # cell state scale 2^-11
_GATE_INTEGER_BITS = 3      # the fully connected output is int16 with scale 2^-12


# -- int16 fixed-point primitives --------------------------------------------------

def _wrap(x):
    """C int16 arithmetic wraps; keep the raw values in int16 range."""
    return ((np.asarray(x, np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def _sat(x):
    return np.clip(x, _I16_MIN, _I16_MAX)


def _mul(a, b):
    """Fixed-point product (int16 SaturatingRoundingDoublingHighMul); integer bits add up."""
    return saturating_rounding_doubling_high_mul(a, b, bits=15)


def _shift_sat(x, exponent: int):
    """SaturatingRoundingMultiplyByPOT (Rescale to fewer integer bits) on int16 raws."""
    return saturating_multiply_by_pot(x, exponent, bits=15)


def _const(q31: int) -> int:
    """gemmlowp's int32 fixed-point constants, rescaled to int16 with rounding."""
    return int(rounding_divide_by_pot(np.int64(q31), 16))


def _exp_on_interval_between_negative_one_quarter_and_0(a):
    """exp(a) for a in [-1/4, 0) (F0 in and out): a Taylor expansion around -1/8."""
    constant_term, one_third = _const(1895147668), _const(715827883)
    x = _wrap(a + (1 << 12))
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(_wrap(_mul(_wrap(x4_over_4 + x3), one_third) + x2), 1)
    return _sat(constant_term + _mul(constant_term, _wrap(x + poly)))


def _exp_on_negative_values(a, ib: int):
    """exp(a) for a <= 0 with `ib` integer bits, result with 0 integer bits."""
    frac = 15 - ib
    quarter = 1 << (frac - 2)
    a_mod_quarter_minus_quarter = _wrap((a & (quarter - 1)) - quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0(_shift_sat(a_mod_quarter_minus_quarter, ib))
    remainder = _wrap(a_mod_quarter_minus_quarter - a)
    for exponent, multiplier in EXP_BARREL:  # the int32 constants, rescaled by _const
        if ib > exponent:
            bit = (remainder & (1 << (frac + exponent))) != 0
            result = np.where(bit, _mul(result, _const(multiplier)), result)
    if ib > 5:  # below -32 the result underflows to 0
        result = np.where(a < -(32 << frac), 0, result)
    return np.where(a == 0, _ONE_F0, result)


def _newton_reciprocal(half_denominator):
    """x ~= 1 / half_denominator with 2 integer bits (three Newton-Raphson steps from 48/17 - 32/17 d)."""
    x = _wrap(_const(1515870810) + _mul(half_denominator, _const(-1010580540)))
    one_f2 = 1 << 13
    for _ in range(3):
        residual = _wrap(one_f2 - _mul(half_denominator, x))
        x = _wrap(x + _shift_sat(_mul(x, residual), 2))
    return x


def _one_over_one_plus_x(a):
    return _shift_sat(_newton_reciprocal(_half_sum(a, _ONE_F0)), 1)


def _one_minus_x_over_one_plus_x(a):
    return _shift_sat(_wrap(_newton_reciprocal(_half_sum(a, _ONE_F0)) - (1 << 13)), 2)


def fixed_logistic(a, ib: int):
    """gemmlowp::logistic on int16 raw values with `ib` integer bits; result has 0 integer bits."""
    a = np.asarray(a, np.int64)
    positive = a > 0
    abs_a = np.where(positive, a, _wrap(-a))
    on_positive = _one_over_one_plus_x(_exp_on_negative_values(_wrap(-abs_a), ib))
    result = np.where(positive, on_positive, _wrap(_ONE_F0 - on_positive))
    return np.where(a == 0, 1 << 14, result)


def fixed_tanh(a, ib: int):
    """gemmlowp::tanh on int16 raw values with `ib` integer bits; result has 0 integer bits."""
    a = np.asarray(a, np.int64)
    negative = a < 0
    neg_abs = np.where(negative, a, _wrap(-a))
    # tanh(|a|) = (1 - exp(-2|a|)) / (1 + exp(-2|a|)); doubling = one more integer bit, same raw
    t = _one_minus_x_over_one_plus_x(_exp_on_negative_values(neg_abs, ib + 1))
    return np.where(a == 0, 0, np.where(negative, _wrap(-t), t))


# -- QUANTIZED_16BIT_LSTM ------------------------------------------------------------

_Q16_GATE_ORDER = ("input", "cell", "forget", "output")  # the reference's concatenation order
_Q16_NNAPI_GATES = ("input", "forget", "cell", "output")


@kernel(Op.QUANTIZED_16BIT_LSTM)
def quantized_16bit_lstm(ctx):
    args = ctx.args
    x, prev_cell, prev_out = args.input, args.prev_cell_state, args.prev_output
    w_in = {g: getattr(args, f"input_to_{g}_weights") for g in _Q16_NNAPI_GATES}
    w_rec = {g: getattr(args, f"recurrent_to_{g}_weights") for g in _Q16_NNAPI_GATES}
    bias = {g: getattr(args, f"{g}_gate_bias") for g in _Q16_NNAPI_GATES}
    batch, out_size = prev_out.shape
    if x.shape[0] != batch or prev_cell.shape != (batch, out_size):
        ctx.fail(f"input {list(x.shape)}, prev_output {list(prev_out.shape)} and prev_cell_state "
                 f"{list(prev_cell.shape)} do not agree")
    for g in _Q16_NNAPI_GATES:
        if w_in[g].shape != (out_size, x.shape[1]) or w_rec[g].shape != (out_size, out_size):
            ctx.fail(f"{g} gate weights have shapes {list(w_in[g].shape)}, {list(w_rec[g].shape)}")

    # One fully connected layer for all four gates, int16 with 3 integer bits. Android's reference
    # lays each gate's weights out as [recurrent | input] columns but multiplies them with the
    # [input, prev_output] concatenation; the CTS expectations are generated that way, so we match it.
    weights = np.concatenate([np.concatenate([w_rec[g].array, w_in[g].array], axis=1) for g in _Q16_GATE_ORDER])
    weights = weights.astype(np.int64) - w_in["input"].zero_point
    concat = np.concatenate([x.array, prev_out.array], axis=1).astype(np.int64) - 128
    acc = concat @ weights.T + np.concatenate([bias[g].array for g in _Q16_GATE_ORDER]).astype(np.int64)
    m, s = quantize_multiplier(4096.0 * bias["input"].scale)
    fc = _sat(multiply_by_quantized_multiplier(acc, m, s))
    i_in, c_in, f_in, o_in = (fc[:, k * out_size:(k + 1) * out_size] for k in range(4))

    input_gate = fixed_logistic(i_in, _GATE_INTEGER_BITS)
    modulation = fixed_tanh(c_in, _GATE_INTEGER_BITS)
    forget_gate = fixed_logistic(f_in, _GATE_INTEGER_BITS)
    output_gate = fixed_logistic(o_in, _GATE_INTEGER_BITS)

    # new cell state with 4 integer bits: rescale input*modulation from 0 integer bits, add saturating
    kept = _mul(forget_gate, prev_cell.array.astype(np.int64))
    added = rounding_divide_by_pot(_mul(input_gate, modulation), _STATE_INTEGER_BITS)
    new_state = _sat(added + kept)
    # the reference clamps the state to 3 integer bits before its tanh
    activ = _mul(output_gate, fixed_tanh(_shift_sat(new_state, 1), _GATE_INTEGER_BITS))
    out = np.clip(rounding_divide_by_pot(activ, 8), -128, 127) + 128
    return [new_state.astype(np.int16), out.astype(np.uint8)]


# -- QUANTIZED_LSTM (int8 activations, int16 gates and cell state) ---------------------

_GATES = ("input", "forget", "cell", "output")
_LAYER_NORM_GUARD = 1 << 20  # the reference's variance overflow guard


def _f32_scale(*factors, divide_by=1.0) -> float:
    """An effective scale computed like the reference: float32 products and quotient."""
    prod = np.float32(1.0)
    for f in factors:
        prod = np.float32(prod * np.float32(f))
    return float(np.float32(prod / np.float32(divide_by)))


def _requant(acc, scale: float):
    m, s = quantize_multiplier(scale)
    return multiply_by_quantized_multiplier(acc, m, s)


def _layer_norm(gate, weights, bias, scale: float, variance_limit: int):
    """The reference's integer layer normalization of int16 gate pre-activations (per batch row)."""
    n = gate.shape[1]
    mean = _trunc_div(gate.sum(axis=1) * 1024, n)
    variance = (gate * gate).sum(axis=1) * (_LAYER_NORM_GUARD // n) - mean * mean
    variance = _trunc_div(variance, _LAYER_NORM_GUARD)
    variance = np.where(variance < 1, variance_limit, variance)
    m_ln, s_ln = quantize_multiplier(scale)
    m, right_shift = inv_sqrt_multiplier(variance)  # one inverse square root per batch row
    rescaled = multiply_by_quantized_multiplier(1024 * gate - mean[:, None], m[:, None], -right_shift[:, None])
    val = rescaled * weights + bias
    val = _trunc_div(val + np.where(val > 0, 512, -512), 1024)
    return _sat(multiply_by_quantized_multiplier(val, m_ln, s_ln + 12))


def _q(v):
    """An argument's Value as int64 raw values, or None when omitted."""
    return None if v is None or v.array.size == 0 else v.array.astype(np.int64)


def _per_gate(args, pattern, gates=_GATES):
    """{gate: (int64 values, scale)} of the arguments `pattern`.format(gate); (None, None) when omitted."""
    out = {g: (None, None) for g in _GATES}
    for g in gates:
        v = getattr(args, pattern.format(g))
        out[g] = (_q(v), None if _q(v) is None else v.scale)
    return out


class _QLstm:
    """The operands of one QUANTIZED_LSTM step, by gate, and the shared quantization facts."""

    def __init__(self, ctx):
        args = ctx.args
        self.x, self.h, self.c = _q(args.input), _q(args.output_state_in), _q(args.cell_state_in)
        self.x_q, self.h_q, self.c_q = args.input, args.output_state_in, args.cell_state_in
        self.w_in, self.w_rec = _per_gate(args, "input_to_{}_weights"), _per_gate(args, "recurrent_to_{}_weights")
        self.peep = _per_gate(args, "cell_to_{}_weights", ("input", "forget", "output"))
        self.bias = {g: v for g, (v, _) in _per_gate(args, "{}_gate_bias").items()}
        self.ln = _per_gate(args, "{}_layer_norm_weights")
        self.inter_scale = {g: getattr(args, f"{g}_intermediate_scale") for g in _GATES}
        # the cell state scale must be (within 1e-3 in log2, like the reference) a power of two
        log2 = np.log2(self.c_q.scale)
        self.cell_shift = int(np.round(log2))
        if abs(log2 - self.cell_shift) >= 1e-3 or self.cell_shift > -9:
            ctx.fail(f"cell state scale {self.c_q.scale} must be a power of two at most 2^-9")

    @property
    def cifg(self) -> bool:
        return self.w_in["input"][0] is None

    def gate(self, name, cell_state):
        """int16 pre-activation of one gate: input and recurrent matmuls, peephole, layer norm."""
        inter = self.inter_scale[name]
        (w, w_scale), (r, r_scale) = self.w_in[name], self.w_rec[name]
        ln, ln_scale = self.ln[name]
        # weights are symmetric: the activations' zero points fold into a per-row bias
        x_bias = -self.x_q.zero_point * w.sum(axis=1)
        if ln is None and self.bias[name] is not None:
            x_bias = x_bias + self.bias[name]  # without layer norm the gate bias joins the matmul
        acc = _sat(_requant(self.x @ w.T + x_bias, _f32_scale(w_scale, self.x_q.scale, divide_by=inter)))
        rec = self.h @ r.T - self.h_q.zero_point * r.sum(axis=1)
        acc = _sat(_requant(rec, _f32_scale(r_scale, self.h_q.scale, divide_by=inter)) + acc)
        peep, peep_scale = self.peep[name]
        if peep is not None:
            scale = _f32_scale(2.0 ** self.cell_shift, peep_scale, divide_by=inter)
            acc = _sat(_requant(peep * cell_state, scale) + acc)
        if ln is not None:
            # the reference's variance floor for an all-equal row: min(1, int(10000 * scale))
            acc = _layer_norm(acc, ln, self.bias[name], ln_scale, min(1, int(10000 * ln_scale)))
        return acc


def _check_qlstm(ctx, q: _QLstm):
    batch, n_in = q.x.shape
    units, n_out = q.w_rec["forget"][0].shape
    shapes = [("output_state_in", q.h, (batch, n_out)), ("cell_state_in", q.c, (batch, units))]
    for g in _GATES:
        shapes += [(f"input_to_{g}_weights", q.w_in[g][0], (units, n_in)),
                   (f"recurrent_to_{g}_weights", q.w_rec[g][0], (units, n_out)),
                   (f"{g}_gate_bias", q.bias[g], (units,)), (f"{g}_layer_norm_weights", q.ln[g][0], (units,)),
                   (f"cell_to_{g}_weights", q.peep[g][0], (units,))]
    proj_w, proj_b = _q(ctx.args.projection_weights), _q(ctx.args.projection_bias)
    shapes += [("projection_weights", proj_w, (n_out, units)), ("projection_bias", proj_b, (n_out,))]
    for name, arr, shape in shapes:
        if arr is not None and arr.shape != shape:
            ctx.fail(f"{name} has shape {list(arr.shape)}, expected {list(shape)}")
    if proj_w is None and n_out != units:
        ctx.fail(f"without projection the output size {n_out} must equal the number of units {units}")
    if q.cifg and (q.w_rec["input"][0] is not None or q.bias["input"] is not None):
        ctx.fail("CIFG: input gate weights and bias must all be omitted together")
    if not q.cifg and (q.w_rec["input"][0] is None or q.bias["input"] is None):
        ctx.fail("the input gate needs input and recurrent weights and a bias (or none of them: CIFG)")


@kernel(Op.QUANTIZED_LSTM)
def quantized_lstm(ctx):
    q = _QLstm(ctx)
    _check_qlstm(ctx, q)
    forget = fixed_logistic(q.gate("forget", q.c), 3)
    cell_in = fixed_tanh(q.gate("cell", q.c), 3)
    in_gate = _I16_MAX - forget if q.cifg else fixed_logistic(q.gate("input", q.c), 3)

    # new cell state, in the cell state's scale 2^cell_shift
    cell = _sat(_wrap(rounding_divide_by_pot(forget * q.c, 15))
                + _wrap(rounding_divide_by_pot(in_gate * cell_in, 30 + q.cell_shift)))
    args = ctx.args
    clip = args.get("cell_clip", 0.0)
    if clip > 0:
        qclip = int(min(max(np.float32(clip) / np.float32(q.c_q.scale), -32768.0), 32767.0))
        cell = np.clip(cell, -qclip, qclip)
    out_gate = fixed_logistic(q.gate("output", cell), 3)

    # hidden = output gate * tanh(cell), requantized to the hidden state's int8 scale
    hidden_zp, hidden_scale = args.hidden_state_zero_point, args.hidden_state_scale
    hidden_mult = float(np.float32(2.0 ** -15 / float(np.float32(hidden_scale)) * 2.0 ** -15))
    hidden = _requant(out_gate * fixed_tanh(cell, q.cell_shift + 15), hidden_mult) + hidden_zp
    hidden = np.clip(hidden, -128, 127)
    out = _projection(ctx, q, hidden, hidden_zp, hidden_scale)
    return [out.astype(np.int8), cell.astype(np.int16), out.astype(np.int8)]


def _projection(ctx, q, hidden, hidden_zp, hidden_scale):
    """Optional projection of the int8 hidden state to the output state's quantization."""
    args = ctx.args
    proj_w = _q(args.projection_weights)
    if proj_w is None:
        return hidden
    bias = _q(args.projection_bias)
    acc = hidden @ proj_w.T - hidden_zp * proj_w.sum(axis=1) + (0 if bias is None else bias)
    out_zp = q.h_q.zero_point
    out = np.clip(_requant(acc, _f32_scale(args.projection_weights.scale, hidden_scale, divide_by=q.h_q.scale)) + out_zp,
                  -128, 127)
    clip = args.get("proj_clip", 0.0)
    if clip > 0:
        qclip = int(min(max(np.float32(clip) / np.float32(q.h_q.scale), -128.0), 127.0))
        out = np.clip(out, -qclip, qclip)
    return out

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
from nnapi.ops.recurrent import QLSTM_MAX_CELL_SHIFT, QLSTM_MIN_TANH_CELL_SHIFT, qlstm_cell_shift

from ...registry import kernel
from ..common import clip_ufunc
from ..fixedpoint import (
    EXP_BARREL,
    INT32_MAX,
    INT32_MIN,
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
    return clip_ufunc(x, _I16_MIN, _I16_MAX)


def _mul(a, b):
    """Fixed-point product (int16 SaturatingRoundingDoublingHighMul); integer bits add up."""
    return saturating_rounding_doubling_high_mul(a, b, bits=15)


def _shift_sat(x, exponent: int):
    """SaturatingRoundingMultiplyByPOT (Rescale to fewer integer bits) on int16 raws."""
    return saturating_multiply_by_pot(x, exponent, bits=15)


def _rdbp(x, exponent: int):
    """RoundingDivideByPOT by a constant exponent >= 0 (fixedpoint.rounding_divide_by_pot's values, in
    fewer numpy calls): (x + half - [x < 0]) >> exponent, the arithmetic shift x >> 63 giving -[x < 0].
    For x >= 0 that is floor((x + half) / d), d = 2^e; for x < 0, floor((x + half - 1) / d) =
    -floor((-x + half) / d) (for integers, -floor(a / d) = floor((d - 1 - a) / d), and d - half = half):
    both round half away from zero."""
    if exponent <= 0:
        return rounding_divide_by_pot(x, exponent)
    t = np.right_shift(x, 63)
    t += x
    t += 1 << (exponent - 1)
    t >>= exponent
    return t


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
# the stacked gate order: the sigmoid gates first (input and forget activate together), cell last
_STACK = ("input", "forget", "output", "cell")
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
    """An argument's Value as int64 raw values, or None when omitted (or fed at run time to a preparer)."""
    return None if v is None or v.array.size == 0 else v.array.astype(np.int64)


def _int_matmul(a, b_t) -> np.ndarray:
    """a @ b_t of integer-valued arrays, exactly, as float64 (BLAS): every int8 x int8 sum this op
    can form is far below 2^53."""
    return np.dot(a.astype(np.float64), b_t)


class QLstmCell:
    """A QUANTIZED_LSTM's constant part, checked and laid out once: the present gates' weights
    stacked in _STACK order (transposed, float32 or float64 for the exact GEMM), the activations' zero points
    folded into per-column biases, each gate's requantization multipliers per column, the
    peepholes, layer norms, projection and the output requantization.

    `args` are the operation's arguments; `x_q`, `h_q`, `c_q` the input, output state and cell state
    operands' quantization (anything with .scale and .zero_point); `fail(message)` raises. The
    requantizations are the reference fixed-point ones, or with `compiled` their compiled form
    (requantize.Requantizer: proven equal, it reads the float64 GEMM results directly)."""

    def __init__(self, args, x_q, h_q, c_q, fail, compiled: bool = False):
        w_in = {g: _q(getattr(args, f"input_to_{g}_weights")) for g in _GATES}
        w_rec = {g: _q(getattr(args, f"recurrent_to_{g}_weights")) for g in _GATES}
        bias = {g: _q(getattr(args, f"{g}_gate_bias")) for g in _GATES}
        ln = {g: _q(getattr(args, f"{g}_layer_norm_weights")) for g in _GATES}
        peep = {g: _q(getattr(args, f"cell_to_{g}_weights")) for g in ("input", "forget", "output")}
        proj_w, proj_b = _q(args.projection_weights), _q(args.projection_bias)
        for name, table in (("input_to", w_in), ("recurrent_to", w_rec)):
            for g in ("forget", "cell", "output"):
                if table[g] is None:
                    fail(f"{name}_{g}_weights is required")
        self.cifg = w_in["input"] is None
        self.units, self.n_in = w_in["forget"].shape
        self.n_out = w_rec["forget"].shape[1]
        n = self.units
        shapes = [("projection_weights", proj_w, (self.n_out, n)), ("projection_bias", proj_b, (self.n_out,))]
        for g in _GATES:
            shapes += [(f"input_to_{g}_weights", w_in[g], (n, self.n_in)),
                       (f"recurrent_to_{g}_weights", w_rec[g], (n, self.n_out)),
                       (f"{g}_gate_bias", bias[g], (n,)), (f"{g}_layer_norm_weights", ln[g], (n,)),
                       (f"cell_to_{g}_weights", peep.get(g), (n,))]
        for name, arr, shape in shapes:
            if arr is not None and arr.shape != shape:
                fail(f"{name} has shape {list(arr.shape)}, expected {list(shape)}")
        if proj_w is None and self.n_out != n:
            fail(f"without projection the output size {self.n_out} must equal the number of units {n}")
        if self.n_out > n and any(p is not None for p in peep.values()):
            fail(f"peephole weights with an output size {self.n_out} above the number of units {n}: the reference "
                 f"reads past them")
        if self.cifg and (w_rec["input"] is not None or bias["input"] is not None):
            fail("CIFG: input gate weights and bias must all be omitted together")
        if not self.cifg and (w_rec["input"] is None or bias["input"] is None):
            fail("the input gate needs input and recurrent weights and a bias (or none of them: CIFG)")
        shift = qlstm_cell_shift(c_q.scale)
        if shift is None:
            fail(f"cell state scale {c_q.scale} must be a power of two at most 2^{QLSTM_MAX_CELL_SHIFT}")
        self.cell_shift = shift
        # below 2^-15 the reference's tanh of the cell state writes nothing (nnapi.ops.recurrent): the
        # output gate multiplies the input gate it left in that buffer
        self.cell_tanh_skipped = shift < QLSTM_MIN_TANH_CELL_SHIFT

        gates = [g for g in _STACK if not (self.cifg and g == "input")]
        self.at = {g: slice(k * n, (k + 1) * n) for k, g in enumerate(gates)}
        self.tanh_columns = np.repeat([g == "cell" for g in gates], n)
        inter = {g: float(getattr(args, f"{g}_intermediate_scale")) for g in gates}
        weight_scale = {g: getattr(args, f"input_to_{g}_weights").scale for g in gates}
        rec_scale = {g: getattr(args, f"recurrent_to_{g}_weights").scale for g in gates}
        # [x | h] @ both products side by side: the input weights [n_in, G*n] in the upper left block,
        # the recurrent ones [n_out, G*n] in the lower right, zeros elsewhere (adding nothing)
        self.width = len(gates) * n
        # float32 holds every partial sum exactly (integers below 2^24: |x w| <= 128 * 128 per term) when
        # the longer block is short enough; else float64 (below 2^53 for any size this op takes)
        exact32 = 128 * 128 * max(self.n_in, self.n_out) < 2 ** 24
        self.w = np.zeros((self.n_in + self.n_out, 2 * self.width), np.float32 if exact32 else np.float64)
        self.w[:self.n_in, :self.width] = np.concatenate([w_in[g] for g in gates]).T
        self.w[self.n_in:, self.width:] = np.concatenate([w_rec[g] for g in gates]).T
        # weights are symmetric: the activations' zero points fold into a per-row bias; without layer
        # norm the gate bias joins the input matmul's
        x_bias = [-x_q.zero_point * w_in[g].sum(axis=1) + (bias[g] if ln[g] is None and bias[g] is not None else 0)
                  for g in gates]
        h_bias = [-h_q.zero_point * w_rec[g].sum(axis=1) for g in gates]
        x_real = np.repeat([_f32_scale(weight_scale[g], x_q.scale, divide_by=inter[g]) for g in gates], n)
        h_real = np.repeat([_f32_scale(rec_scale[g], h_q.scale, divide_by=inter[g]) for g in gates], n)
        # (imported here: requantize.py's own imports reach the conv package, which imports it back)
        from ..requantize import Requantizer
        # both parts requantized side by side (int32 range); the input part then saturates to int16,
        # and the recurrent part is added to it before saturating again
        reference = not compiled
        self.req = Requantizer(np.concatenate(x_bias + h_bias), np.concatenate([x_real, h_real]), 0, INT32_MIN,
                               INT32_MAX, np.int64, acc_bound=128 * 128 * max(self.n_in, self.n_out),
                               reference=reference)
        # peepholes: (weights, (multiplier, shift)) per gate that has one
        self.peep = {g: (peep[g], quantize_multiplier(_f32_scale(2.0 ** self.cell_shift,
                                                                 getattr(args, f"cell_to_{g}_weights").scale,
                                                                 divide_by=inter[g])))
                     for g in ("input", "forget", "output") if g in gates and peep[g] is not None}
        # layer norms: (weights, bias, scale, variance floor) per gate that has one; the reference's
        # floor for an all-equal row is min(1, int(10000 * scale))
        self.ln = {}
        for g in gates:
            if ln[g] is not None:
                s = getattr(args, f"{g}_layer_norm_weights").scale
                self.ln[g] = (ln[g], bias[g], s, min(1, int(10000 * s)))
        self.late_output = "output" in self.peep or "output" in self.ln
        clip = float(args.get("cell_clip", 0.0))
        self.cell_clip = (int(min(max(np.float32(clip) / np.float32(c_q.scale), -32768.0), 32767.0))
                          if clip > 0 else None)
        # saturating to int16 then clipping to [-clip, clip] is clipping to their intersection
        self.cell_range = ((_I16_MIN, _I16_MAX) if self.cell_clip is None else
                           (max(_I16_MIN, -self.cell_clip), min(_I16_MAX, self.cell_clip)))
        # hidden = output gate * tanh(cell), requantized to the hidden state's int8 scale
        self.hidden_zp, hidden_scale = int(args.hidden_state_zero_point), float(args.hidden_state_scale)
        hidden_real = float(np.float32(2.0 ** -15 / float(np.float32(hidden_scale)) * 2.0 ** -15))
        self.hidden_req = Requantizer(np.zeros(n, np.int64), np.full(n, hidden_real), self.hidden_zp, -128, 127,
                                      np.int64, acc_bound=1 << 30, reference=reference)
        if compiled:   # one multiplier for every unit: the requantization is a step function of o * tanh(c)
            one = Requantizer(np.zeros(1, np.int64), [hidden_real], self.hidden_zp, -128, 127, np.int64,
                              reference=True)
            self.hidden_req = _StepTable(lambda p: one(p[:, None])[:, 0], -128, 127, _HIDDEN_PRODUCT_BOUND)
        self.proj = None
        if proj_w is not None:
            # the hidden state's zero point taken back out (LiteRT's arithmetic; Android's reference adds it
            # again, and only with a projection bias, so it departs from this when the zero point is not 0)
            proj_bias = -self.hidden_zp * proj_w.sum(axis=1) + (0 if proj_b is None else proj_b)
            mult = quantize_multiplier(_f32_scale(args.projection_weights.scale, hidden_scale, divide_by=h_q.scale))
            pclip = float(args.get("proj_clip", 0.0))
            # in output state units, as LiteRT (Android's reference divides by the projection weights' scale)
            qclip = int(min(max(np.float32(pclip) / np.float32(h_q.scale), -128.0), 127.0)) if pclip > 0 else None
            self.proj = (np.ascontiguousarray(proj_w.T, np.float64), proj_bias, mult, h_q.zero_point, qclip)

    def fits(self, x, h, c) -> bool:
        """x [batch, input], h [batch, output size], c [batch, units] are what this cell takes."""
        return (x.ndim == 2 and x.shape[1] == self.n_in and h.shape == (x.shape[0], self.n_out)
                and c.shape == (x.shape[0], self.units))

    def _peephole(self, acc, g, cell_state):
        if g in self.peep:
            w, (m, s) = self.peep[g]
            if self.n_out != self.units:
                w = self._projected_peephole(w, cell_state.shape[0])
            acc[:, self.at[g]] = _sat(multiply_by_quantized_multiplier(w * cell_state, m, s) + acc[:, self.at[g]])

    def _projected_peephole(self, w, batch: int) -> np.ndarray:
        """The reference's peephole weights per [batch, units] element when the output size differs from the
        units: it walks the flattened gate and cell state n_output values per batch row (its vector length
        argument is the output size), so element k < batch x n_output takes weight k mod n_output and the
        rest none (nnapi.ops.recurrent)."""
        k = np.arange(batch * self.units)
        return np.where(k < batch * self.n_out, w[k % self.n_out], 0).reshape(batch, self.units)

    def _layer_norm(self, acc, g):
        if g in self.ln:
            w, b, s, floor = self.ln[g]
            acc[:, self.at[g]] = _layer_norm(acc[:, self.at[g]], w, b, s, floor)

    def step(self, x, h, c, gates, logistic, tanh_cell):
        """One step on int64 raws x, h, c: (output state, new cell state) as int64 raws.
        `gates(acc, tanh_columns)`: the activations of the stacked gates' int16 raws (3 integer bits),
        tanh in the columns where tanh_columns is set (the cell gate), logistic in the others;
        `logistic`: one gate's; `tanh_cell`: tanh of the cell state's raws (cell_shift + 15 integer
        bits; None when cell_tanh_skipped)."""
        both = self.req(np.dot(np.concatenate([x, h], axis=1, dtype=self.w.dtype), self.w))
        acc = _sat(both[:, self.width:] + _sat(both[:, :self.width]))
        at = self.at
        for g in ("input", "forget", "cell"):
            if g in at:
                self._peephole(acc, g, c)
                self._layer_norm(acc, g)
        act = gates(acc, self.tanh_columns)   # (the output gate's column is final unless late_output)
        forget, cell_in = act[:, at["forget"]], act[:, at["cell"]]
        in_gate = _I16_MAX - forget if self.cifg else act[:, at["input"]]
        # new cell state, in the cell state's scale 2^cell_shift: the sum of two int16 terms (C int16
        # arithmetic wraps them; |gate x int16| < 2^30, so a term divided by 2^15 or more never wraps)
        added = _rdbp(in_gate * cell_in, 30 + self.cell_shift)
        cell = _rdbp(forget * c, 15)
        cell += added if self.cell_shift >= -15 else _wrap(added)
        clip_ufunc(cell, *self.cell_range, out=cell)   # int16 saturation, within it the cell clip
        if self.late_output:   # its peephole reads the new cell state; its layer norm follows that
            self._peephole(acc, "output", cell)
            self._layer_norm(acc, "output")
            out_gate = logistic(acc[:, at["output"]])
        else:
            out_gate = act[:, at["output"]]
        hidden = self.hidden_req(out_gate * (in_gate if self.cell_tanh_skipped else tanh_cell(cell)))
        return self._projection(hidden), cell

    def _projection(self, hidden):
        """Optional projection of the int8 hidden state to the output state's quantization."""
        if self.proj is None:
            return hidden
        w, bias, (m, s), out_zp, qclip = self.proj
        acc = _int_matmul(hidden, w).astype(np.int64) + bias
        out = np.clip(multiply_by_quantized_multiplier(acc, m, s) + out_zp, -128, 127)
        return out if qclip is None else np.clip(out, -qclip, qclip)


# |output gate x tanh(cell)|: both int16 raws with 0 integer bits, the gate's non-negative
_HIDDEN_PRODUCT_BOUND = 1 << 30


class _StepTable:
    """A non-decreasing integer function f on [-bound, bound] with values in [lo, hi], tabulated by its
    steps: a_n = min{p : f(p) >= n} for n = lo + 1 .. hi (found by bisection on f itself), so that
    f(p) = lo + #{n : a_n <= p}, one np.searchsorted. A requantization by a positive multiplier is
    such a function (each rounding in it is monotone)."""

    def __init__(self, f, lo: int, hi: int, bound: int):
        targets = np.arange(lo + 1, hi + 1, dtype=np.int64)
        below = np.full(targets.shape, -bound, np.int64)       # a_n >= below
        above = np.full(targets.shape, bound + 1, np.int64)    # a_n <= above (bound + 1: never reached)
        while np.any(below < above):
            mid = (below + above) >> 1
            reached = f(mid) >= targets
            above = np.where(reached, mid, above)
            below = np.where(reached, below, mid + 1)
        self.steps, self.lo = above, np.int64(lo)

    def __call__(self, p) -> np.ndarray:
        out = np.searchsorted(self.steps, p, side="right")
        out += self.lo
        return out


def int16_table(fn) -> np.ndarray:
    """fn on every int16 raw value, indexed by raw + 32768: an elementwise fixed-point function
    tabulated (the gate activations take saturated int16 raws only)."""
    return np.asarray(fn(np.arange(_I16_MIN, _I16_MAX + 1, dtype=np.int64)), np.int64)


def gate_logistic(a):
    return fixed_logistic(a, _GATE_INTEGER_BITS)


def gate_tanh(a):
    return fixed_tanh(a, _GATE_INTEGER_BITS)


def qlstm_activations(cell: QLstmCell) -> tuple:
    """The plain activations QLstmCell.step takes: the stacked gates', one gate's logistic, the cell's tanh
    (None when the cell skips it)."""
    shift = cell.cell_shift
    return (lambda a, tanh_columns: np.where(tanh_columns, gate_tanh(a), gate_logistic(a)), gate_logistic,
            None if cell.cell_tanh_skipped else lambda a: fixed_tanh(a, shift + 15))


def qlstm_results(out, cell) -> list:
    """QUANTIZED_LSTM's outputs: output state, cell state, output."""
    return [out.astype(np.int8), cell.astype(np.int16), out.astype(np.int8)]


@kernel(Op.QUANTIZED_LSTM)
def quantized_lstm(ctx):
    args = ctx.args
    x_q, h_q, c_q = args.input, args.output_state_in, args.cell_state_in
    q = QLstmCell(args, x_q, h_q, c_q, ctx.fail)
    x, h, c = _q(x_q), _q(h_q), _q(c_q)
    for name, arr, shape in (("output_state_in", h, (x.shape[0], q.n_out)),
                             ("cell_state_in", c, (x.shape[0], q.units))):
        if arr.shape != shape:
            ctx.fail(f"{name} has shape {list(arr.shape)}, expected {list(shape)}")
    out, cell = q.step(x, h, c, *qlstm_activations(q))
    return qlstm_results(out, cell)

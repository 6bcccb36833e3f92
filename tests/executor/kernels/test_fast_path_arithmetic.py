"""The executor's fast paths compute what the slow straightforward definitions compute:

* the folded fixed-point requantizer equals TFLite's MultiplyByQuantizedMultiplier
  (written out here with Python integers) on random and worst-case accumulators;
* quantized convolutions through float32/float64 GEMMs equal an int64 reference,
  bit for bit, including inputs and filters at the ends of their ranges;
* prepared and unprepared execution of the same model give identical outputs
  (quantized) or float32-close outputs (float);
* (the memory plan: tests/executor/test_memory_plan.py).

No timing here: CI does not time anything.
"""

import numpy as np
import pytest

import nnapi
from executor.kernels import fixedpoint as fp, requantize
from executor.kernels.conv.gemm import exact_dtype
from executor.kernels.requantize import Requantizer
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

RNG = np.random.default_rng(1234)


# -- the definitions, with Python integers ----------------------------------------------------------

def _srdhm_ref(a: int, b: int) -> int:
    if a == b == fp.INT32_MIN:
        return fp.INT32_MAX
    ab = a * b
    s = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    return s // (1 << 31) if s >= 0 else -((-s) // (1 << 31))  # C division truncates


def _rdbp_ref(x: int, e: int) -> int:
    if e == 0:
        return x
    mask = (1 << e) - 1
    rem, threshold = x & mask, (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > threshold else 0)


def _mbqm_ref(x: int, m: int, shift: int) -> int:
    if shift > 0:
        x = max(fp.INT32_MIN, min(fp.INT32_MAX, x << shift))
    return _rdbp_ref(_srdhm_ref(x, m), max(-shift, 0))


def test_srdhm_and_rounding_divide_match_the_c_definitions():
    a = np.concatenate([RNG.integers(fp.INT32_MIN, fp.INT32_MAX, 3000, endpoint=True),
                        [fp.INT32_MIN, fp.INT32_MAX, 0, -1, 1, -(1 << 30), 1 << 30]])
    b = np.concatenate([RNG.integers(fp.INT32_MIN, fp.INT32_MAX, 3000, endpoint=True),
                        [fp.INT32_MIN, fp.INT32_MIN, 7, 1 << 30, -(1 << 30), 1, -1]])
    got = fp.saturating_rounding_doubling_high_mul(a, b)
    assert got.tolist() == [_srdhm_ref(int(x), int(y)) for x, y in zip(a, b)]
    e = RNG.integers(0, 31, a.size)
    assert fp.rounding_divide_by_pot(a, e).tolist() == [_rdbp_ref(int(x), int(k)) for x, k in zip(a, e)]
    # RoundingHalfSum: (s + (s >= 0 ? 1 : -1)) / 2 with C truncation
    s = a // 2 + b // 2
    want = [(v + (1 if v >= 0 else -1)) // 2 if v >= 0 else -((-(v - 1)) // 2) for v in s.tolist()]
    assert fp.rounding_half_sum(a // 2, b // 2).tolist() == want
    # the int16 form saturates min * min too
    a16, b16 = a % (1 << 16) - (1 << 15), b % (1 << 16) - (1 << 15)
    a16[:2] = b16[:2] = -(1 << 15)
    got16 = fp.saturating_rounding_doubling_high_mul(a16, b16, bits=15).tolist()
    assert got16 == [(1 << 15) - 1 if x == y == -(1 << 15) else round_away(int(x) * int(y), 1 << 15)
                     for x, y in zip(a16, b16)]


def round_away(v: int, d: int) -> int:
    """The C form: (v + (v >= 0 ? d/2 : 1 - d/2)) / d, truncated."""
    s = v + (d // 2 if v >= 0 else 1 - d // 2)
    return s // d if s >= 0 else -((-s) // d)


@pytest.mark.parametrize("bound", [1000, 1 << 20, (1 << 24) - 1, fp.INT32_MAX, 1 << 40])
@pytest.mark.parametrize("left_shift", [False, True])
def test_requantizer_equals_the_reference(bound, left_shift):
    channels = 7
    # tiny, ordinary, exactly 2^-2 (q31 multiplier 2^30), zero, above one (a left shift), just below one
    reals = np.array([3e-7, 0.0123, 0.25, 0.0, 1.7 if left_shift else 0.7, 0.999999, 4e-3])
    bias = RNG.integers(-(1 << 20), 1 << 20, channels)
    if bound >= fp.INT32_MAX:  # acc + bias leaves the int32 range: the reference clamps it
        bias[0], bias[1] = fp.INT32_MAX, fp.INT32_MIN
    acc = RNG.integers(-bound, bound, (300, channels), endpoint=True)
    acc[:2] = [[bound] * channels, [-bound] * channels]
    modes = set()
    for zp, lo, hi, dtype in ((10, 0, 255, np.uint8), (0, 0, 255, np.uint8), (-128, -128, 127, np.int8), (3, -(1 << 40), 1 << 40, np.int64)):
        r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
        modes.add(r.mode)
        got = r(acc.astype(np.float64))
        total = [[max(fp.INT32_MIN, min(fp.INT32_MAX, int(v) + int(bias[c]))) for c, v in enumerate(row)]
                 for row in acc]
        want = [[min(hi, max(lo, _mbqm_ref(t, *fp.quantize_multiplier(float(reals[c]))) + zp))
                 for c, t in enumerate(row)] for row in total]
        assert got.dtype == np.dtype(dtype) and got.tolist() == want
    fitting = "float" if bound <= 1 << 20 else "int" if bound < fp.INT32_MAX else "reference"
    assert ("reference" if left_shift else fitting) in modes


def test_requantizer_picks_the_cheapest_exact_mode():
    def mode(bound, reals=(0.01, 0.002, 0.25)):
        return Requantizer(np.zeros(len(reals), np.int64), reals, 0, 0, 255, np.uint8, bound).mode
    assert mode(1 << 21) == "float"          # 2^21 * 2^31 < 2^53
    assert mode(1 << 23) == "int"
    assert mode(100, (1.5,)) == "reference"  # a left shift


def test_exact_dtype_bounds():
    assert exact_dtype(2 ** 24 - 1) == np.float32
    assert exact_dtype(2 ** 24) == np.float64
    assert exact_dtype(2 ** 53) is None


# -- convolutions: prepared vs unprepared vs int64 reference ----------------------------------------

def _model(code, x_type, flt, flt_type, bias, scalars, out_type, per_channel=None):
    m = nnapi.Model()
    x = m.add_operand(x_type)
    w = m.add_operand(flt_type)
    if per_channel is not None:
        m.set_operand_symm_per_channel_quant_params(w, *per_channel)
    m.set_operand_value(w, flt)
    bias_code = C.TENSOR_INT32 if x_type.code != C.TENSOR_FLOAT32 else C.TENSOR_FLOAT32
    b_scale = 0.0 if per_channel is not None or bias_code == C.TENSOR_FLOAT32 else x_type.scale * flt_type.scale
    b = m.add_operand(OperandType(bias_code, bias.shape, b_scale))
    m.set_operand_value(b, bias)
    idx = [x, w, b]
    for code_, value in scalars:
        i = m.add_operand(OperandType(code_))
        m.set_operand_value(i, np.asarray(value, dtype=np.bool_ if code_ == C.BOOL else np.int32))
        idx.append(i)
    out = m.add_operand(out_type)
    m.add_operation(code, idx, [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    return m


def _run_both(model, x):
    """(prepared output, plain-kernel output, the prepared callables)."""
    compiled = compile_model(model)
    prepared = [s.run for s in compiled.steps]
    assert all(p is not s.kernel for p, s in zip(prepared, compiled.steps)), "the operation was not prepared"
    fast = compiled.run([x], RunState(2.0))[0].array
    for s in compiled.steps:
        s.run = s.kernel
    slow = compiled.run([x], RunState(2.0))[0].array
    return fast, slow, prepared


def _int64_conv(xq, x_zp, wq, w_zp, bias, stride, pads, dilation, groups):
    """sum over taps of (x - zp)(w - zp) in int64, one tap at a time; x NHWC, w [O, kh, kw, C/groups]."""
    x = np.pad(xq.astype(np.int64) - x_zp, ((0, 0), pads[:2], pads[2:], (0, 0)))
    w = wq.astype(np.int64) - w_zp
    o, kh, kw, cg = w.shape
    oh = (x.shape[1] - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (x.shape[2] - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    acc = np.zeros((x.shape[0], oh, ow, o), np.int64)
    og = o // groups
    for i in range(kh):
        for j in range(kw):
            tap = x[:, i * dilation[0]: i * dilation[0] + (oh - 1) * stride[0] + 1: stride[0],
                    j * dilation[1]: j * dilation[1] + (ow - 1) * stride[1] + 1: stride[1]]
            for g in range(groups):
                acc[..., g * og:(g + 1) * og] += tap[..., g * cg:(g + 1) * cg] @ w[g * og:(g + 1) * og, i, j].T
    return acc + bias


def _requant_ref(acc, real, zp, lo, hi):
    out = np.empty_like(acc)
    for c in range(acc.shape[-1]):
        m, s = fp.quantize_multiplier(float(real[c]))
        out[..., c] = np.reshape([_mbqm_ref(max(fp.INT32_MIN, min(fp.INT32_MAX, int(v))), m, s)
                                  for v in acc[..., c].ravel()], acc.shape[:-1])
    return np.clip(out + zp, lo, hi)


Q8 = (C.TENSOR_QUANT8_ASYMM, 0, 255, np.uint8)
QS8 = (C.TENSOR_QUANT8_ASYMM_SIGNED, -128, 127, np.int8)


@pytest.mark.parametrize("case", ["conv", "strided_dilated", "grouped", "depthwise_x2", "depthwise_large",
                                  "depthwise_large_strided_dilated", "depthwise_strided_many", "worst_case",
                                  "shifted", "atrous_1x1", "clipped", "pieces"])
@pytest.mark.parametrize("qtype", [Q8, QS8])
def test_quantized_conv_fast_path_is_bit_identical(case, qtype):
    code_t, lo, hi, dt = qtype
    n, h, w, c, o, k = 2, 9, 8, 4, 6, 3
    if case == "depthwise_large":  # unit strides: one einsum over the padded rows (depthwise.py "rows")
        n, h, w = 1, 48, 50
    stride, pads, dil, groups = (1, 1), (1, 1, 1, 1), (1, 1), 1
    if case == "depthwise_large_strided_dilated":  # the column phases, 5x5 taps ("phases")
        n, h, w, k, stride, dil, pads = 1, 100, 104, 5, (2, 2), (1, 2), (2, 1, 4, 3)
    if case == "depthwise_strided_many":  # strided, many channels: one einsum over the windows ("windows")
        n, h, w, c, stride, pads = 1, 20, 22, 100, (2, 2), (0, 1, 1, 0)
    if case == "strided_dilated":
        stride, dil, pads = (2, 3), (2, 1), (2, 0, 1, 3)
    if case == "grouped":
        groups = 2
    if case == "shifted":   # a patch matrix above SHIFTED_MIN_BYTES: one GEMM per tap at full width
        n, h, w, c, o = 1, 48, 46, 64, 16
    if case == "atrous_1x1":   # dilated past the input: only the centre tap reads it (a 1x1 GEMM, unpadded)
        h, w, dil, pads = 5, 6, (5, 6), (5, 5, 6, 6)
    if case == "clipped":   # mostly padding: each tap's GEMM over only the outputs it reads the input for
        h, w, dil, pads, stride = 5, 6, (4, 3), (4, 4, 3, 3), (2, 1)
    if case == "pieces":   # a large patch matrix of few channels: im2col and GEMM a few output rows at a time
        n, h, w, c, o, stride = 1, 200, 180, 8, 4, (1, 2)
    per_channel = code_t == C.TENSOR_QUANT8_ASYMM_SIGNED
    x_zp = int(RNG.integers(lo, hi)) if case != "worst_case" else lo
    xq = RNG.integers(lo, hi, (n, h, w, c), endpoint=True).astype(dt)
    if case.startswith("depthwise"):
        flt_shape, o = (1, k, k, 2 * c), 2 * c
    else:
        flt_shape = (o, k, k, c // groups)
    if per_channel:
        wq = RNG.integers(-127, 127, flt_shape, endpoint=True).astype(np.int8)
        w_zp, axis = 0, 3 if case.startswith("depthwise") else 0
        scales = (0.001 + 0.01 * RNG.random(o)).astype(np.float32)
        flt_type = OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, flt_shape)
        pc = (scales, axis)
    else:
        wq = RNG.integers(lo, hi, flt_shape, endpoint=True).astype(dt)
        w_zp = int(RNG.integers(lo, hi))
        scales = np.full(o, 0.004, np.float32)
        flt_type, pc = OperandType(code_t, flt_shape, 0.004, w_zp), None
    if case == "worst_case":  # every product at its largest magnitude, same sign
        xq[:] = hi
        wq[:] = 127 if per_channel else lo
        if not per_channel:
            w_zp = hi
            flt_type = OperandType(code_t, flt_shape, 0.004, w_zp)
    # depthwise: output channel c*2 + m reads input channel c, i.e. c groups of one channel
    w_ohwc = wq[0].transpose(2, 0, 1)[..., None] if case.startswith("depthwise") else wq
    ref_groups = c if case.startswith("depthwise") else groups
    bias = RNG.integers(-5000, 5000, o).astype(np.int32)
    acc = _int64_conv(xq, x_zp, w_ohwc, w_zp, bias, stride, pads, dil, ref_groups)
    # an output scale that spreads the results over the range (not all saturated)
    x_scale, out_zp = 0.05, (lo + hi + 1) // 2
    out_scale = float(np.float32(x_scale * scales.mean() * max(acc.std(), 1.0) / 40))
    scalars = [(C.INT32, pads[2]), (C.INT32, pads[3]), (C.INT32, pads[0]), (C.INT32, pads[1]),
               (C.INT32, stride[1]), (C.INT32, stride[0])]
    fuse = 1 if case == "conv" else 0  # RELU once, else the whole output range
    if case.startswith("depthwise"):
        op, scalars = Op.DEPTHWISE_CONV_2D, scalars + [(C.INT32, 2), (C.INT32, fuse), (C.BOOL, False),
                                                       (C.INT32, dil[1]), (C.INT32, dil[0])]
    elif groups > 1:
        op, scalars = Op.GROUPED_CONV_2D, scalars + [(C.INT32, groups), (C.INT32, fuse), (C.BOOL, False)]
    else:
        op, scalars = Op.CONV_2D, scalars + [(C.INT32, fuse), (C.BOOL, False), (C.INT32, dil[1]), (C.INT32, dil[0])]
    x_type = OperandType(code_t, (n, h, w, c), x_scale, x_zp)
    oh = (h + pads[0] + pads[1] - (k - 1) * dil[0] - 1) // stride[0] + 1
    ow = (w + pads[2] + pads[3] - (k - 1) * dil[1] - 1) // stride[1] + 1
    out_type = OperandType(code_t, (n, oh, ow, o), out_scale, out_zp)
    model = _model(op, x_type, wq, flt_type, bias, scalars, out_type, pc)
    fast, slow, prepared = _run_both(model, xq)
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)
    from executor.kernels.conv.prepared import PreparedConv   # (the GEMM plans; depthwise.py has its own)
    plans = list(prepared[0].plans.values()) if isinstance(prepared[0], PreparedConv) else []
    assert [(p.shifted, p.clipped, p.kernel_hw, p.chunk > 0) for p in plans] == {
        "shifted": [(True, False, (3, 3), False)], "atrous_1x1": [(False, False, (1, 1), False)],
        # (the clipped form skips the padding's products, which are zero only without a folded zero point)
        "clipped": [(False, not getattr(prepared[0], "fill", 0), (3, 3), False)], "pieces": [(False, False, (3, 3), True)]}.get(
        case, [(False, False, (3, 3), False)] if plans else [])
    if case in ("conv", "worst_case"):   # one GEMM per filter row, two output pixels a GEMM row (gemm.row_taps)
        assert [p.rows[0] for p in plans] == [2]
    real = (np.float32(x_scale) * scales).astype(np.float64) / np.float64(np.float32(out_scale))
    # a fused RELU in stored units is [max(qmin, zero point), qmax]
    assert np.array_equal(fast, _requant_ref(acc, real, out_zp, max(lo, out_zp) if fuse else lo, hi))
    assert len(np.unique(fast)) > 10 or case == "worst_case" or fuse   # the outputs are not all saturated


@pytest.mark.parametrize("fuse", [0, 1])
def test_per_channel_conv_with_channels_missing_the_float32_proof(fuse):
    """A per-channel int8 CONV_2D (seeded: 6 of its 32 output channels have steps no float32 constants near
    the exact ones hit) runs the float32 requantization with those channels corrected
    (requantize_float32.Corrections), over an accumulator large enough for that form: bit-identical to the plain kernel and to
    the int64 convolution requantized by the Python-integer definition. With a fused RELU (no sign term)
    and without (the split form)."""
    rng = np.random.default_rng(3)
    n, h, w, c, o, x_zp, x_scale = 1, 32, 32, 16, 32, -7, 0.05
    xq = rng.integers(-128, 127, (n, h, w, c), endpoint=True).astype(np.int8)
    wq = rng.integers(-127, 127, (o, 3, 3, c), endpoint=True).astype(np.int8)
    scales = (0.001 + 0.01 * rng.random(o)).astype(np.float32)
    bias = rng.integers(-5000, 5000, o).astype(np.int32)
    acc = _int64_conv(xq, x_zp, wq, 0, bias, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    out_scale = float(np.float32(x_scale * scales.mean() * acc.std() / 40))
    scalars = [(C.INT32, 1)] * 6 + [(C.INT32, fuse), (C.BOOL, False), (C.INT32, 1), (C.INT32, 1)]
    model = _model(Op.CONV_2D, OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (n, h, w, c), x_scale, x_zp), wq,
                   OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, wq.shape), bias, scalars,
                   OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (n, h, w, o), out_scale, 3), (scales, 0))
    fast, slow, prepared = _run_both(model, xq)
    requant = prepared[0].epilogue.requant
    assert requant.f32 is not None and requant.exact is not None and requant.exact.channels.size >= 2
    assert acc.size >= requantize.CORRECTED_MIN and requant.needs_sign == (not fuse)
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)
    real = (np.float32(x_scale) * scales).astype(np.float64) / np.float64(np.float32(out_scale))
    assert np.array_equal(fast, _requant_ref(acc, real, 3, 3 if fuse else -128, 127))


def test_fully_connected_falls_back_to_float64_beyond_2_24():
    size, units = 1200, 3  # 1200 * 255 * 255 > 2**24: float32 sums could round
    x_type = OperandType(C.TENSOR_QUANT8_ASYMM, (2, size), 0.5, 0)
    wq = np.full((units, size), 255, np.uint8)
    wq[1] = RNG.integers(0, 256, size)
    flt_type = OperandType(C.TENSOR_QUANT8_ASYMM, (units, size), 0.01, 0)
    model = _model(Op.FULLY_CONNECTED, x_type, wq, flt_type, np.array([7, -9, 0], np.int32), [(C.INT32, 0)],
                   OperandType(C.TENSOR_QUANT8_ASYMM, (2, units), 4000.0, 1))
    xq = np.full((2, size), 255, np.uint8)
    xq[1] = RNG.integers(0, 256, size)
    fast, slow, prepared = _run_both(model, xq)
    assert prepared[0].weights.dtype == np.float64
    assert np.array_equal(fast, slow)
    acc = xq.astype(np.int64) @ wq.astype(np.int64).T + np.array([7, -9, 0])
    real = np.full(units, np.float64(np.float32(0.5) * np.float32(0.01)) / np.float64(np.float32(4000.0)))
    assert np.array_equal(fast, _requant_ref(acc, real, 1, 0, 255))


def test_float_conv_prepared_matches_the_plain_kernel_nchw():
    n, c, h, w, o = 1, 3, 7, 6, 5
    x = RNG.standard_normal((n, c, h, w)).astype(np.float32)
    flt = RNG.standard_normal((o, 3, 3, c)).astype(np.float32)
    bias = RNG.standard_normal(o).astype(np.float32)
    scalars = [(C.INT32, 1), (C.INT32, 2), (C.INT32, 2), (C.INT32, 3)]  # SAME, strides 2, RELU6
    model = _model(Op.CONV_2D, OperandType(C.TENSOR_FLOAT32, (n, c, h, w)), flt,
                   OperandType(C.TENSOR_FLOAT32, flt.shape), bias, scalars + [(C.BOOL, True)],
                   OperandType(C.TENSOR_FLOAT32, (n, o, 4, 3)))
    fast, slow, _ = _run_both(model, x)
    assert fast.dtype == np.float32 and fast.shape == (n, o, 4, 3)
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-5)


def test_non_constant_filter_runs_the_plain_kernel():
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1, 4)))
    wt = m.add_operand(OperandType(C.TENSOR_FLOAT32, (2, 4)))
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, (2,)))
    m.set_operand_value(b, np.zeros(2, np.float32))
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(0))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1, 2)))
    m.add_operation(Op.FULLY_CONNECTED, [x, wt, b, fuse], [out])
    m.identify_inputs_and_outputs([x, wt], [out])
    m.finish()
    compiled = compile_model(m)
    assert compiled.steps[0].run is compiled.steps[0].kernel
    y = compiled.run([np.ones((1, 4), np.float32), np.eye(2, 4, dtype=np.float32)], RunState(2.0))[0].array
    assert y.tolist() == [[1.0, 1.0]]


# -- the memory plan ----------------------------------------------------------------------------------

@pytest.mark.parametrize("qtype", [Q8, QS8])
def test_quantized_transpose_conv_fast_path_is_bit_identical(qtype):
    code_t, lo, hi, dt = qtype
    x_zp, w_zp = (lo + hi) // 2, (lo + hi + 1) // 2
    xq = RNG.integers(lo, hi, (1, 5, 4, 3), endpoint=True).astype(dt)
    wq = RNG.integers(lo, hi, (4, 3, 3, 3), endpoint=True).astype(dt)
    wq[0] = lo  # one filter at the end of the range
    pads, strides = (1, 0, 0, 1), (2, 1)   # explicit left, right, top, bottom; stride w, h
    scalars = [(C.INT32, p) for p in pads] + [(C.INT32, s) for s in strides] + [(C.INT32, 0), (C.BOOL, False)]
    out_hw = ((5 - 1) * strides[1] + 3 - pads[2] - pads[3], (4 - 1) * strides[0] + 3 - pads[0] - pads[1])
    model = _model(Op.TRANSPOSE_CONV_2D, OperandType(code_t, xq.shape, 0.05, x_zp), wq,
                   OperandType(code_t, wq.shape, 0.01, w_zp), RNG.integers(-900, 900, 4).astype(np.int32),
                   scalars, OperandType(code_t, (1, *out_hw, 4), 0.3, x_zp))
    fast, slow, prepared = _run_both(model, xq)
    assert prepared[0].weights.dtype == np.float32
    assert np.array_equal(fast, slow) and len(np.unique(fast)) > 10


def test_operations_sharing_work_arrays_keep_their_own_padding():
    """Two convolutions whose padded inputs have the same shape but sit differently in it (pads
    1,1,1,1 and 0,2,0,2 on 8x8): the shared work arrays must not leak one's data into the other's
    border. Compared with the plain kernels."""
    m = nnapi.Model()
    t = OperandType(C.TENSOR_QUANT8_ASYMM, (1, 8, 8, 3), 0.1, 100)
    x = m.add_operand(t)
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(0))
    prev = x
    for k, pads in enumerate([(1, 1, 1, 1), (0, 2, 0, 2), (1, 1, 1, 1)]):
        w = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, (3, 3, 3, 3), 0.02, 120))
        m.set_operand_value(w, RNG.integers(0, 256, (3, 3, 3, 3)).astype(np.uint8))
        b = m.add_operand(OperandType(C.TENSOR_INT32, (3,), 0.1 * 0.02))
        m.set_operand_value(b, RNG.integers(-500, 500, 3).astype(np.int32))
        scalars = []
        for v in (*pads, 1, 1):
            s = m.add_operand(OperandType(C.INT32))
            m.set_operand_value(s, np.int32(v))
            scalars.append(s)
        out = m.add_operand(t)
        m.add_operation(Op.CONV_2D, [prev, w, b, *scalars, fuse], [out])
        prev = out
    m.identify_inputs_and_outputs([x], [prev])
    m.finish()
    xq = RNG.integers(0, 256, (1, 8, 8, 3)).astype(np.uint8)
    fast, slow, _ = _run_both(m, xq)
    assert np.array_equal(fast, slow)


# -- 8-bit elementwise operations as lookup tables ---------------------------------------------------

@pytest.mark.parametrize("code", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("qtype", [Q8, QS8])
def test_quantized_binary_table_equals_the_kernel(code, qtype):
    code_t, lo, hi, dt = qtype
    m = nnapi.Model()
    a = m.add_operand(OperandType(code_t, (2, 16, 1, 40), 0.07, lo + 10))
    b = m.add_operand(OperandType(code_t, (16, 8, 1), 0.03, hi - 40))   # broadcast both ways
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(1))   # RELU
    out = m.add_operand(OperandType(code_t, (2, 16, 8, 40), 0.05, (lo + hi) // 2))
    m.add_operation(code, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    compiled = compile_model(m)
    assert compiled.steps[0].run is not compiled.steps[0].kernel
    xa = RNG.integers(lo, hi, (2, 16, 1, 40), endpoint=True).astype(dt)
    xb = RNG.integers(lo, hi, (16, 8, 1), endpoint=True).astype(dt)
    fast = compiled.run([xa, xb], RunState(2.0))[0].array
    compiled.steps[0].run = compiled.steps[0].kernel
    slow = compiled.run([xa, xb], RunState(2.0))[0].array
    assert fast.shape == (2, 16, 8, 40) and fast.dtype == slow.dtype and np.array_equal(fast, slow)


@pytest.mark.parametrize("code", [Op.LOGISTIC, Op.TANH, Op.RELU6, Op.DEQUANTIZE, Op.RSQRT])
def test_quantized_unary_table_equals_the_kernel(code):
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (4, 64), 0.06, -7))
    out_type = {Op.LOGISTIC: OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (4, 64), 1 / 256, -128),
                Op.TANH: OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (4, 64), 1 / 128, 0),
                Op.RELU6: OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (4, 64), 0.06, -7),
                Op.DEQUANTIZE: OperandType(C.TENSOR_FLOAT32, (4, 64)),
                # (x <= 0: inf and NaN saturate high)
                Op.RSQRT: OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (4, 64), 0.02, -128)}[code]
    out = m.add_operand(out_type)
    m.add_operation(code, [x], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    xq = np.arange(-128, 128).astype(np.int8).reshape(4, 64)   # every value
    fast, slow, prepared = _run_both(m, xq)
    assert prepared[0].table.shape == (256,)
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)


# -- compiled quantized SOFTMAX ------------------------------------------------------------------------

def test_softmax_integer_reciprocal_equals_the_numpy_fixed_point():
    """The per-row reciprocal in Python integers is fp.one_over_one_plus_x and the headroom as
    _softmax_quant computes them, for every sum a row can have (edges and random)."""
    from executor.kernels.softmax import one_over_one_plus_x_int, reciprocal_of_sum, reciprocals_of_sums
    # one Q12.19 unit per element at least (the max element's exp), at most 4096 units (2^31 raw)
    sums = np.concatenate([np.arange(1 << 19, (1 << 19) + 300), RNG.integers(1 << 19, 1 << 31, 3000),
                           [(1 << 20) - 1, 1 << 20, (1 << 30) - 1, 1 << 30, (1 << 31) - 1]]).astype(np.int64)
    headroom = fp.count_leading_zeros32(sums)
    want_recip = fp.one_over_one_plus_x((sums << headroom) - (1 << 31))
    want_shift = 12 - headroom + 31 - 8
    got = [reciprocal_of_sum(int(s)) for s in sums]
    assert [g[0] for g in got] == want_recip.tolist() and [g[1] for g in got] == want_shift.tolist()
    recips, shifts = reciprocals_of_sums(sums.copy())   # the vectorized form, for many rows
    assert recips.tolist() == want_recip.tolist() and shifts.tolist() == want_shift.tolist()
    a = np.concatenate([RNG.integers(0, 1 << 31, 2000), [0, 1, (1 << 31) - 1, 1 << 30]])
    assert [one_over_one_plus_x_int(int(v)) for v in a] == fp.one_over_one_plus_x(a).tolist()


def _softmax_model(code_t, shape, scale, zp, beta, axis=None):
    m = nnapi.Model()
    x = m.add_operand(OperandType(code_t, shape, scale, zp))
    b = m.add_operand(OperandType(C.FLOAT32))
    m.set_operand_value(b, np.float32(beta))
    idx = [x, b]
    if axis is not None:
        a = m.add_operand(OperandType(C.INT32))
        m.set_operand_value(a, np.int32(axis))
        idx.append(a)
    out = m.add_operand(OperandType(code_t, shape, 1 / 256, -128 if code_t == C.TENSOR_QUANT8_ASYMM_SIGNED else 0))
    m.add_operation(Op.SOFTMAX, idx, [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    return m


@pytest.mark.parametrize("qtype", [Q8, QS8])
@pytest.mark.parametrize("shape,axis,scale,beta", [((1, 10), None, 0.1, 1.0), ((3, 256), None, 0.05, 1.0),
                                                   ((2, 5, 7), 1, 0.5, 0.7), ((2, 3, 4, 9), 0, 1.0, 2.0),
                                                   ((4, 100), -1, 0.01, 1e-3 * 1000),
                                                   # more rows than MAX_ROWS: the [length, rows] form
                                                   ((1, 20, 20, 3), None, 0.1, 1.0), ((300, 7), -1, 0.05, 1.0),
                                                   ((2, 5, 80), 1, 0.5, 0.7), ((70, 256), None, 0.05, 1.0)])
def test_quantized_softmax_prepared_equals_the_kernel(qtype, shape, axis, scale, beta):
    code_t, lo, hi, dt = qtype
    model = _softmax_model(code_t, shape, scale, (lo + hi) // 2, beta, axis)
    xs = [RNG.integers(lo, hi, shape, endpoint=True).astype(dt),
          np.full(shape, lo, dt), np.full(shape, hi, dt)]          # every row flat: equal shares
    onehot = np.full(shape, lo, dt)
    onehot.reshape(-1)[::3] = hi                                  # differences of 255 (exp underflows to 0)
    xs.append(onehot)
    if shape[-1] == 256:
        xs.append(np.broadcast_to(np.arange(lo, hi + 1).astype(dt), shape).copy())   # every difference
    for x in xs:
        fast, slow, prepared = _run_both(model, x)
        assert type(prepared[0]).__name__ == "PreparedSoftmax"
        assert fast.dtype == slow.dtype and np.array_equal(fast, slow)


def test_quantized_softmax_many_rows_equals_the_kernel():
    model = _softmax_model(C.TENSOR_QUANT8_ASYMM, (200, 3), 0.1, 128, 1.0)
    x = RNG.integers(0, 256, (200, 3)).astype(np.uint8)
    fast, slow, prepared = _run_both(model, x)
    assert np.array_equal(fast, slow) and 200 > prepared[0].MAX_ROWS


# -- RESHAPE with a constant shape --------------------------------------------------------------------

def test_prepared_reshape_equals_the_kernel_and_reports_bad_shapes():
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (2, 0)))   # the size is known only at run time
    s = m.add_operand(OperandType(C.TENSOR_INT32, (2,)))
    m.set_operand_value(s, np.array([-1, 4], np.int32))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (0, 4)))
    m.add_operation(Op.RESHAPE, [x, s], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    compiled = compile_model(m)
    assert type(compiled.steps[0].run).__name__ == "PreparedReshape"
    for cols in (2, 6, 2):   # a new size, another one, then the first again (from the cache)
        a = RNG.standard_normal((2, cols)).astype(np.float32)
        y = compiled.run([a], RunState(2.0))[0].array
        assert np.array_equal(y, a.reshape(-1, 4))
    with pytest.raises(nnapi.NnapiError):
        compiled.run([np.zeros((1, 3), np.float32)], RunState(2.0))


# -- requantizer: one multiplier for every channel (the scalar form) ----------------------------------

@pytest.mark.parametrize("zp,lo,hi,dtype", [(10, 0, 255, np.uint8), (-128, -128, 127, np.int8), (5, 5, 200, np.uint8)])
def test_requantizer_with_a_shared_multiplier_equals_the_reference(zp, lo, hi, dtype):
    bound, channels = 1 << 20, 5
    reals = np.full(channels, 0.00731)
    bias = RNG.integers(-(1 << 16), 1 << 16, channels)
    r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
    assert r.mode == "float" and r.mf_scalar is not None
    acc = RNG.integers(-bound, bound, (40, 7, channels), endpoint=True)   # [rows, width, C]: the tiled form
    acc[0, 0], acc[0, 1] = bound, -bound
    got = r(acc.astype(np.float32 if bound < 1 << 24 else np.float64))
    m, s = fp.quantize_multiplier(float(reals[0]))
    want = [[[min(hi, max(lo, _mbqm_ref(int(v) + int(bias[c]), m, s) + zp)) for c, v in enumerate(px)]
             for px in row] for row in acc]
    assert got.dtype == np.dtype(dtype) and got.tolist() == want


# -- per-channel constants on long rows ---------------------------------------------------------------

def test_row_length_divides_and_is_long():
    from executor.kernels.conv.gemm import LONG_ROW, row_length
    for pixels, channels in [(4096, 32), (97, 5), (10007, 3), (1, 1), (3000, 64), (64 * 66 - 2, 16)]:
        length = row_length(pixels, channels)
        assert length % channels == 0 and (pixels * channels) % length == 0
        assert length >= min(LONG_ROW, pixels * channels)


# -- the runtime's per-step loop ------------------------------------------------------------------------

def test_runtime_rechecks_an_output_whose_shape_changes():
    """Outputs are wrapped without a check when their shape repeats; a new shape is still checked
    against the declaration, and a dynamic one gets its own type."""
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (0, 3)))
    s = m.add_operand(OperandType(C.TENSOR_INT32, (2,)))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (0, 0)))
    m.add_operation(Op.RESHAPE, [x, s], [out])
    m.identify_inputs_and_outputs([x, s], [out])
    m.finish()
    compiled = compile_model(m)
    for rows in (2, 2, 4):
        a = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        y = compiled.run([a, np.array([3, -1], np.int32)], RunState(2.0))[0]
        assert y.array.shape == (3, rows) and y.type.dimensions == (3, rows)
    m2 = nnapi.Model()
    x = m2.add_operand(OperandType(C.TENSOR_FLOAT32, (0, 3)))
    s = m2.add_operand(OperandType(C.TENSOR_INT32, (2,)))
    out = m2.add_operand(OperandType(C.TENSOR_FLOAT32, (3, 2)))   # declared: only 6 elements fit
    m2.add_operation(Op.RESHAPE, [x, s], [out])
    m2.identify_inputs_and_outputs([x, s], [out])
    m2.finish()
    compiled = compile_model(m2)
    shape = np.array([3, -1], np.int32)
    assert compiled.run([np.zeros((2, 3), np.float32), shape], RunState(2.0))[0].array.shape == (3, 2)
    with pytest.raises(nnapi.NnapiError):
        compiled.run([np.zeros((4, 3), np.float32), shape], RunState(2.0))


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("zp,lo,hi,dtype", [(0, 0, 255, np.uint8), (-128, -128, 127, np.int8), (7, 7, 180, np.uint8)])
def test_requantizer_on_every_accumulator_value(shared, zp, lo, hi, dtype):
    """Every integer accumulator up to the bound (so every rounding boundary of every output value),
    float32 as the GEMMs hand it over, against fixedpoint.py (checked above against the definitions)."""
    bound = 1 << 20
    reals = np.full(3, 0.0001731) if shared else np.array([0.0001731, 0.00093, 0.0000412])
    bias = np.array([12345, -54321, 0])
    r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
    assert r.mode == "float" and (r.mf_scalar is not None) == shared
    acc = np.arange(-bound, bound + 1, dtype=np.int64)
    got = r(np.stack([acc] * 3, axis=1).astype(np.float32))
    m, s = fp.quantize_multipliers(reals)
    want = np.clip(fp.multiply_by_quantized_multiplier(acc[:, None] + bias, m, s) + zp, lo, hi)
    assert got.dtype == np.dtype(dtype) and np.array_equal(got, want)


@pytest.mark.parametrize("reals", [[0.0001731] * 4, [0.0001731, 0.00093, 0.0021, 0.31], [0.0000412, 0.002, 0.1, 0.3]])
@pytest.mark.parametrize("zp,lo,hi,dtype", [(10, 0, 255, np.uint8), (-5, -128, 127, np.int8), (3, -100, 90, np.int8)])
def test_requantizer_sign_term_without_a_mask_on_every_accumulator_value(reals, zp, lo, hi, dtype):
    """A clamp below the zero point (no fused RELU) keeps RoundingDivideByPOT's [y < 0] term, which
    Requantizer._split computes without a mask where every shift keeps 31 + e <= 44 (a multiplier of
    4.12e-5 has e = 14: the masked form instead): every integer accumulator up to the bound, against
    fixedpoint.py."""
    bound = 1 << 20
    reals = np.array(reals)
    bias = np.array([12345, -54321, 0, 7])
    r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
    assert r.mode == "float" and r.needs_sign and (r.split is None) == (reals.min() < 1e-4)
    acc = np.arange(-bound, bound + 1, dtype=np.int64)
    got = r(np.stack([acc] * 4, axis=1).astype(np.float32))
    m, s = fp.quantize_multipliers(reals)
    want = np.clip(fp.multiply_by_quantized_multiplier(acc[:, None] + bias, m, s) + zp, lo, hi)
    assert got.dtype == np.dtype(dtype) and np.array_equal(got, want)
    small = r(np.stack([acc[:1000]] * 4, axis=1).astype(np.float32))   # (the few-values path too)
    assert np.array_equal(small, want[:1000])


@pytest.mark.parametrize("qtype,x_zp", [(Q8, 128), (QS8, -128), (Q8, 0), (QS8, 5)])
@pytest.mark.parametrize("nchw", [False, True])
def test_padded_input_zero_point_forms(qtype, x_zp, nchw):
    """x - zero point as the GEMM type: the top-bit flip (uint8 - 128, int8 + 128), the plain cast and
    the subtracting cast, with a padded border, NHWC and NCHW, against the int64 reference."""
    code_t, lo, hi, dt = qtype
    xq = RNG.integers(lo, hi, (1, 7, 6, 5), endpoint=True).astype(dt)
    xq[0, 0, 0] = lo
    xq[0, -1, -1] = hi
    wq = RNG.integers(lo, hi, (4, 3, 3, 5), endpoint=True).astype(dt)
    w_zp = (lo + hi) // 2
    bias = RNG.integers(-2000, 2000, 4).astype(np.int32)
    pads = (1, 2, 1, 0)
    acc = _int64_conv(xq, x_zp, wq, w_zp, bias, (1, 1), pads, (1, 1), 1)
    out_scale = float(np.float32(0.05 * 0.01 * max(acc.std(), 1.0) / 40))
    scalars = [(C.INT32, pads[2]), (C.INT32, pads[3]), (C.INT32, pads[0]), (C.INT32, pads[1]), (C.INT32, 1),
               (C.INT32, 1), (C.INT32, 0), (C.BOOL, nchw)]
    x_shape, out_shape = (1, 7, 6, 5), (1, 8, 5, 4)
    if nchw:
        x_shape, out_shape = (1, 5, 7, 6), (1, 4, 8, 5)
    out_zp = (lo + hi + 1) // 2
    model = _model(Op.CONV_2D, OperandType(code_t, x_shape, 0.05, x_zp), wq, OperandType(code_t, wq.shape, 0.01, w_zp),
                   bias, scalars, OperandType(code_t, out_shape, out_scale, out_zp))
    from executor.kernels.conv import gemm
    fast, slow, _ = _run_both(model, xq.transpose(0, 3, 1, 2) if nchw else xq)
    assert np.array_equal(fast, slow)
    flip_at = gemm.FLIP_MIN_SIZE
    try:   # the same with the top-bit flip on this small input
        gemm.FLIP_MIN_SIZE = 0
        flipped, _, _ = _run_both(model, xq.transpose(0, 3, 1, 2) if nchw else xq)
    finally:
        gemm.FLIP_MIN_SIZE = flip_at
    assert np.array_equal(flipped, fast)
    real = np.full(4, np.float64(np.float32(0.05) * np.float32(0.01)) / np.float64(np.float32(out_scale)))
    want = _requant_ref(acc, real, out_zp, lo, hi)
    assert np.array_equal(fast.transpose(0, 2, 3, 1) if nchw else fast, want)


@pytest.mark.parametrize("qtype", [Q8, QS8])
@pytest.mark.parametrize("fuse", [0, 3])
def test_global_average_pool_quant_equals_the_kernel(qtype, fuse):
    code_t, lo, hi, dt = qtype
    m = nnapi.Model()
    x = m.add_operand(OperandType(code_t, (2, 5, 3, 7), 0.1, (lo + hi) // 2))
    idx = [x]
    for v in (0, 0, 0, 0, 1, 1, 3, 5, fuse):   # explicit padding 0, strides 1, filter 3 x 5, fuse
        i = m.add_operand(OperandType(C.INT32))
        m.set_operand_value(i, np.int32(v))
        idx.append(i)
    out = m.add_operand(OperandType(code_t, (2, 1, 1, 7), 0.1, (lo + hi) // 2))
    m.add_operation(Op.AVERAGE_POOL_2D, idx, [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    xs = [RNG.integers(lo, hi, (2, 5, 3, 7), endpoint=True).astype(dt), np.full((2, 5, 3, 7), lo, dt),
          np.full((2, 5, 3, 7), hi, dt)]
    xs[0][0, :, :, 0] = lo   # sums at both ends, and ties (sum = count/2 away from a multiple)
    xs[0][1, :, :, 1] = hi
    for xq in xs:
        fast, slow, _ = _run_both(m, xq)
        assert fast.dtype == slow.dtype and np.array_equal(fast, slow)


# -- requantizer: the integer clip, the output buffer -------------------------------------------------

@pytest.mark.parametrize("reals,int_dtype", [((0.0001731, 0.00093, 0.0000412), np.int16),
                                             ((0.0301, 0.0093, 0.047), np.int32)])
@pytest.mark.parametrize("zp,lo,hi,dtype", [(0, 0, 255, np.uint8), (-128, -128, 127, np.int8), (7, 7, 180, np.uint8),
                                            (-3, -100, 90, np.int8)])
def test_requantizer_integer_clip_into_a_buffer(reals, int_dtype, zp, lo, hi, dtype):
    """The float64 values cast to int16 (or int32 when |t| may pass 2^15) and clipped there, written into
    a given buffer: every accumulator value up to the bound against fixedpoint.py."""
    bound = 1 << 20
    bias = np.array([12345, -54321, 0])
    r = Requantizer(bias, np.array(reals), zp, lo, hi, dtype, bound)
    assert r.mode == "float" and r.int_dtype == np.dtype(int_dtype)
    acc = np.arange(-bound, bound + 1, dtype=np.int64)
    m, s = fp.quantize_multipliers(reals)
    want = np.clip(fp.multiply_by_quantized_multiplier(acc[:, None] + bias, m, s) + zp, lo, hi)
    acc3 = np.stack([acc] * 3, axis=1).astype(np.float32)
    out = np.full(acc3.shape, 1, dtype)
    got = r(acc3, out)
    assert got is out and np.array_equal(got, want)
    strided = np.zeros((acc3.shape[0], 6), np.float32)[:, ::2]   # not contiguous: no long rows
    strided[...] = acc3
    assert np.array_equal(r(strided, np.empty(acc3.shape, dtype)), want)
    assert np.array_equal(r(acc3), want)   # no buffer: a new array
    # small accumulators (the path with the fewest calls: clipped in float64, then a truncating cast),
    # every value again, in pieces of at most SMALL values
    from executor.kernels.requantize import SMALL
    rows = SMALL // 3
    for start in range(0, acc3.shape[0], rows):
        piece = acc3[start: start + rows]
        out = np.empty(piece.shape, dtype)
        assert r(piece, out) is out and np.array_equal(out, want[start: start + rows])


@pytest.mark.parametrize("bound,mode", [(1 << 20, "float"), (1 << 23, "int"), (100, "reference")])
def test_requantizer_writes_every_mode_into_the_buffer(bound, mode):
    reals = (1.5,) if mode == "reference" else (0.01, 0.002, 0.25)
    r = Requantizer(np.arange(len(reals)) * 1000, reals, 3, 0, 255, np.uint8, bound)
    assert r.mode == mode
    acc = RNG.integers(-bound, bound, (50, len(reals)), endpoint=True).astype(np.float64)
    out = np.empty(acc.shape, np.uint8)
    assert r(acc, out) is out and np.array_equal(out, r(acc))


def _recording_buffers(monkeypatch):
    """Every array OpContext.output_buffer hands out, in order."""
    from executor.runtime import OpContext
    handed = []
    original = OpContext.output_buffer

    def output_buffer(self, k, shape, dtype):
        a = original(self, k, shape, dtype)
        handed.append(a)
        return a
    monkeypatch.setattr(OpContext, "output_buffer", output_buffer)
    return handed


@pytest.mark.parametrize("case", ["conv1x1", "conv3x3", "depthwise_large", "float_conv1x1", "fc", "float_fc"])
def test_prepared_convs_compute_into_the_output_buffer(case, monkeypatch):
    """NHWC results land in output 0's buffer, equal the plain kernel's, and never share the input's
    memory (fresh_outputs)."""
    handed = _recording_buffers(monkeypatch)
    code_t, lo, hi, dt = Q8
    quant = not case.startswith("float")
    h, w, c, o, k = (40, 30, 4, 4, 3) if case == "depthwise_large" else (5, 6, 8, 3, 3 if case == "conv3x3" else 1)
    x = RNG.integers(lo, hi, (1, h, w, c), endpoint=True).astype(dt)
    if quant:
        x_type, f_type = OperandType(code_t, x.shape, 0.05, 3), (code_t, 0.01, 128)
        b = RNG.integers(-2000, 2000, o).astype(np.int32)
    else:
        x = x.astype(np.float32)
        x_type, f_type, b = OperandType(C.TENSOR_FLOAT32, x.shape), (C.TENSOR_FLOAT32, 0.0, 0), np.zeros(o, np.float32)
    wq = RNG.integers(0, 255, (1, k, k, o) if case == "depthwise_large" else (o, k, k, c), endpoint=True)
    wq = wq.astype(np.uint8 if quant else np.float32)
    flt_type = OperandType(f_type[0], wq.shape, f_type[1], f_type[2])
    pad = k // 2
    scalars = [(C.INT32, pad)] * 4 + [(C.INT32, 1), (C.INT32, 1)]
    if case == "depthwise_large":
        scalars.append((C.INT32, 1))
    scalars.append((C.INT32, 0))
    out_shape = (1, h, w, o)
    op = Op.DEPTHWISE_CONV_2D if case == "depthwise_large" else Op.CONV_2D
    if case.endswith("fc"):
        x = x.reshape(h * w, c)
        x_type = x_type.with_dimensions(x.shape)
        wq, flt_type, out_shape = wq.reshape(o, c), flt_type.with_dimensions((o, c)), (h * w, o)
        op, scalars = Op.FULLY_CONNECTED, [(C.INT32, 0)]
    out_type = OperandType(code_t, out_shape, 0.3, 5) if quant else OperandType(C.TENSOR_FLOAT32, out_shape)
    model = _model(op, x_type, wq, flt_type, b, scalars, out_type)
    fast, slow, prepared = _run_both(model, x)
    assert prepared[0].fresh_outputs
    assert np.array_equal(fast, slow) if quant else np.allclose(fast, slow, rtol=1e-6, atol=1e-3)
    assert np.shares_memory(fast, handed[0]) and not np.shares_memory(fast, x)


def test_prepared_pool_and_softmax_compute_into_the_output_buffer(monkeypatch):
    handed = _recording_buffers(monkeypatch)
    code_t, lo, hi, dt = Q8
    m = nnapi.Model()
    x = m.add_operand(OperandType(code_t, (1, 4, 4, 6), 0.1, 128))
    idx = [x]
    for v in (0, 0, 0, 0, 1, 1, 4, 4, 0):   # a global average pool
        i = m.add_operand(OperandType(C.INT32))
        m.set_operand_value(i, np.int32(v))
        idx.append(i)
    pooled = m.add_operand(OperandType(code_t, (1, 1, 1, 6), 0.1, 128))
    m.add_operation(Op.AVERAGE_POOL_2D, idx, [pooled])
    beta = m.add_operand(OperandType(C.FLOAT32))
    m.set_operand_value(beta, np.float32(1.0))
    out = m.add_operand(OperandType(code_t, (1, 1, 1, 6), 1 / 256, 0))
    m.add_operation(Op.SOFTMAX, [pooled, beta], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    xq = RNG.integers(lo, hi, (1, 4, 4, 6), endpoint=True).astype(dt)
    compiled = compile_model(m)
    assert all(s.run.fresh_outputs for s in compiled.steps)
    trace = {}
    got = compiled.run([xq], RunState(2.0, trace))[0].array
    assert len(handed) == 2 and np.shares_memory(got, handed[1])
    assert np.shares_memory(trace[(id(m), pooled)].array, handed[0])
    fast, slow, _ = _run_both(m, xq)
    assert np.array_equal(fast, slow)


# -- requantizer: the proven float32 form --------------------------------------------------------------

@pytest.mark.parametrize("dtype,zp,lo,hi", [(np.uint8, 0, 0, 255), (np.uint8, 12, 12, 200), (np.int8, -128, -128, 127),
                                            (np.int8, -5, -5, 100)])
def test_float32_requantization_is_used_only_where_proven_exact(dtype, zp, lo, hi):
    """Over random requantizers (1-3 channels), every accumulator value in range: where the float32 form
    was chosen it equals fixedpoint.py exactly -- also where the nearest float32 constants would be wrong
    and nudged ones were found. Both kinds must occur, so the test can fail either way."""
    rng = np.random.default_rng(17)
    proven = nudged = 0
    for _ in range(60):
        bound = int(rng.integers(1000, 1 << 15))
        channels = int(rng.integers(1, 4))
        reals = rng.uniform(0.5, 3.0, channels) * (hi - lo) / bound
        bias = rng.integers(-bound // 4, bound // 4, channels)
        r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
        if r.mode != "float" or r.int_dtype is None:
            continue
        acc = np.arange(-bound, bound + 1, dtype=np.int64)
        m, s = fp.quantize_multipliers(reals)
        want = np.clip(fp.multiply_by_quantized_multiplier(acc[:, None] + bias, m, s) + zp, lo, hi)
        off = 128 if np.dtype(dtype) == np.int8 else 0
        naive = np.clip(np.floor(acc[:, None].astype(np.float32) * r.mf.astype(np.float32)
                                 + r.cf.astype(np.float32)), lo + off, hi + off) - off
        acc32 = np.repeat(acc[:, None], channels, axis=1).astype(np.float32)
        if r.f32 is not None:
            proven += 1
            assert np.array_equal(r(acc32, np.empty(acc32.shape, dtype)), want)
            nudged += not np.array_equal(naive, want)
    assert proven >= 5 and nudged >= 1


def test_float32_requantization_corrected_where_no_float32_constants_are_exact():
    """A requantizer (found by a seeded search) whose steps no float32 constants near the exact ones hit
    all: the float32 form runs with corrections at the missed accumulator values (equal to the definition
    on every value: test_requantize_float32.py). Independently of the check: the nearest float32 constants
    do miss a step, at the first accumulator whose exact result (the Python-integer definition) reaches n,
    or just below it."""
    bound, real, bias = 1619100, 0.00011142975939564552, 602
    r = Requantizer(np.array([bias]), np.array([real]), 0, 0, 255, np.uint8, bound)
    assert r.mode == "float" and r.int_dtype is not None and r.f32 is not None and r.exact is not None
    m, s = int(fp.quantize_multipliers([real])[0][0]), int(fp.quantize_multipliers([real])[1][0])
    mf, cf = np.float32(r.mf[0]), np.float32(r.cf[0])
    missed = 0
    for n in range(1, 181):
        lo, hi = -bound, bound + 1   # binary search: the definition is non-decreasing in the accumulator
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _mbqm_ref(mid + bias, m, s) >= n else (mid + 1, hi)
        if -bound < lo <= bound:
            missed += bool(np.floor(np.float32(lo) * mf + cf) < n or np.floor(np.float32(lo - 1) * mf + cf) >= n)
    assert missed > 0


@pytest.mark.parametrize("dtype,zp", [(np.float32, 0), (np.uint8, 128), (np.int8, 3)])
def test_pad_hw_of_a_channels_first_view_copies_each_plane(dtype, zp):
    """gemm.pad_hw on an NCHW array seen as NHWC (a transpose's view, few channels) copies it one channel
    plane at a time: the same padded values as np.pad of the contiguous NHWC array."""
    from executor.kernels.conv import gemm
    from executor.kernels.scratch import Scratch
    nchw = (RNG.standard_normal((1, 3, 40, 50)) * 50).astype(dtype)
    view = nchw.transpose(0, 2, 3, 1)
    assert view.size >= gemm.FLIP_MIN_SIZE and view.strides[3] > view.strides[2]
    got = gemm.pad_hw(view, (1, 2, 3, 0), Scratch(), np.float32, zp)
    want = np.pad(np.ascontiguousarray(view).astype(np.float32) - zp, ((0, 0), (1, 2), (3, 0), (0, 0)))
    assert got.dtype == np.float32 and np.array_equal(got, want)

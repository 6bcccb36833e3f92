"""DEPTHWISE_CONV_2D's fast path (executor/kernels/conv/depthwise.py) in each of its forms ("rows",
"phases", "windows"), for 3x3, 5x5 and 7x7 filters, unit and larger strides, dilation, multipliers,
batches, NCHW and padding or none: float results within float_accumulation_bound of the exact sum
(float64, the test's own tap loops), quantized ones bit for bit equal to the plain kernel and to an
int64 reference requantized by TFLite's formula."""
from collections import Counter

import numpy as np
import pytest

from executor.kernels.conv.depthwise import PreparedDepthwise, row_bands
from executor.kernels.conv.quant import float_accumulation_bound
import nnapi
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op
from tests.executor.test_fast_paths_agree import _cases_by_op, _check_case
from tests.executor.kernels.test_fast_path_arithmetic import _int64_conv, _model, _requant_ref, _run_both

RNG = np.random.default_rng(2207)

# (n, h, w, c, k, strides (h, w), dilations (h, w), multiplier, pads (top, bottom, left, right), form)
CASES = {
    "3x3": (2, 13, 11, 6, 3, (1, 1), (1, 1), 1, (1, 1, 1, 1), "rows"),
    "5x5 dilated": (1, 17, 15, 5, 5, (1, 1), (2, 2), 1, (3, 1, 0, 4), "rows"),
    "7x7": (1, 12, 14, 4, 7, (1, 1), (1, 1), 1, (3, 3, 3, 3), "rows"),
    "3x3 valid": (1, 9, 10, 8, 3, (1, 1), (1, 2), 1, (0, 0, 0, 0), "rows"),
    "3x3 height stride": (1, 15, 9, 5, 3, (2, 1), (1, 1), 2, (1, 0, 1, 1), "rows"),
    "3x3 stride 2": (2, 15, 16, 7, 3, (2, 2), (1, 1), 1, (0, 1, 1, 0), "phases"),
    "5x5 stride 2": (1, 20, 19, 6, 5, (2, 2), (1, 1), 1, (1, 2, 2, 2), "phases"),
    "7x7 stride 2 dilated": (1, 29, 31, 3, 7, (2, 2), (2, 2), 2, (3, 3, 6, 0), "phases"),
    "3x3 width stride": (1, 8, 17, 4, 3, (1, 2), (1, 1), 1, (1, 1, 1, 1), "phases"),
    "5x5 stride 3 dilated": (1, 23, 26, 3, 5, (3, 3), (1, 2), 3, (2, 2, 4, 3), "phases"),
    "3x3 stride 2 many channels": (1, 9, 10, 64, 3, (2, 2), (1, 1), 3, (1, 1, 0, 1), "windows"),
    "5x5 stride 2 many channels": (2, 11, 9, 200, 5, (2, 2), (2, 1), 1, (2, 2, 2, 2), "windows"),
    # a streaming layer's window (valid padding, one output pixel): the einsum reads the input itself
    "3x3 valid to one pixel": (1, 3, 3, 64, 3, (1, 1), (1, 1), 1, (0, 0, 0, 0), "rows"),
    # two rows under a 5x5 filter: each output row sums the two or three filter rows that meet the input
    "5x5 on two rows": (2, 2, 40, 96, 5, (1, 1), (1, 1), 1, (2, 2, 2, 2), "rows"),
    "5x5 stride 2 on three rows": (1, 3, 64, 64, 5, (2, 2), (1, 1), 1, (2, 2, 2, 2), "phases"),
    # tiny strided layers (a 1-D keyword spotter's): the windows' one einsum, whatever the channels
    "3x3 stride 2 tiny": (1, 5, 9, 8, 3, (2, 2), (1, 1), 1, (1, 1, 1, 1), "windows"),
    "3x3 stride 2 one row": (1, 1, 49, 32, 3, (2, 2), (1, 1), 1, (1, 1, 1, 1), "windows"),
}


def _build(code, x, flt, flt_type, bias, case, nchw, out_type_args=(), per_channel=None, fuse=0):
    n, h, w, c, k, (sh, sw), (dh, dw), m, (pt, pb, pl, pr), _ = case
    oh = (h + pt + pb - (k - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (k - 1) * dw - 1) // sw + 1
    scalars = [(C.INT32, pl), (C.INT32, pr), (C.INT32, pt), (C.INT32, pb), (C.INT32, sw), (C.INT32, sh), (C.INT32, m),
               (C.INT32, fuse), (C.BOOL, nchw), (C.INT32, dw), (C.INT32, dh)]
    x_dims = (n, c, h, w) if nchw else (n, h, w, c)
    out_dims = (n, c * m, oh, ow) if nchw else (n, oh, ow, c * m)
    in_q, out_q = out_type_args or ((), ())
    model = _model(Op.DEPTHWISE_CONV_2D, OperandType(code, x_dims, *in_q), flt, flt_type, bias, scalars,
                   OperandType(code, out_dims, *out_q), per_channel)
    return model, (x.transpose(0, 3, 1, 2) if nchw else x)


def _forms(model, x) -> set:
    compiled = compile_model(model)
    compiled.run([x], RunState(2.0))
    return {p.form for p in compiled.steps[0].run.plans.values() if p is not None}


def _exact(x64, w64, bias64, case):
    """(exact sums, sums of |terms|), NHWC, in float64: one tap at a time over the padded input."""
    n, h, w, c, k, (sh, sw), (dh, dw), m, (pt, pb, pl, pr), _ = case
    xp = np.pad(np.repeat(x64, m, axis=3), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (xp.shape[1] - (k - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (k - 1) * dw - 1) // sw + 1
    exact = np.zeros((n, oh, ow, c * m)) + bias64
    abs_sum = np.zeros_like(exact) + np.abs(bias64)
    for i in range(k):
        for j in range(k):
            tap = xp[:, i * dh: i * dh + (oh - 1) * sh + 1: sh, j * dw: j * dw + (ow - 1) * sw + 1: sw] * w64[i, j]
            exact += tap
            abs_sum += np.abs(tap)
    return exact, abs_sum


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_float_depthwise_within_the_bound(name, nchw):
    case = CASES[name]
    n, h, w, c, k, _, _, m, _, form = case
    # magnitudes over several decades, both signs: cancellation makes the bound matter
    x = (RNG.standard_normal((n, h, w, c)) * 10.0 ** RNG.integers(-2, 3, (n, h, w, c))).astype(np.float32)
    flt = (RNG.standard_normal((1, k, k, c * m)) * 10.0 ** RNG.integers(-2, 3, (1, k, k, c * m))).astype(np.float32)
    bias = RNG.standard_normal(c * m).astype(np.float32)
    model, xin = _build(C.TENSOR_FLOAT32, x, flt, OperandType(C.TENSOR_FLOAT32, flt.shape), bias, case, nchw)
    assert _forms(model, xin) == {form}
    fast, slow, _ = _run_both(model, xin)
    exact, abs_sum = _exact(x.astype(np.float64), flt[0].astype(np.float64), bias.astype(np.float64), case)
    if nchw:
        exact, abs_sum = exact.transpose(0, 3, 1, 2), abs_sum.transpose(0, 3, 1, 2)
    bound = float_accumulation_bound(abs_sum, k * k) + np.spacing(np.abs(exact).astype(np.float32))  # + the cast
    for got in (fast, slow):
        assert got.dtype == np.float32 and got.shape == exact.shape
        assert np.all(np.abs(got.astype(np.float64) - exact) <= bound)


QUANT_CASES = ["3x3", "7x7", "3x3 height stride", "3x3 stride 2", "5x5 stride 2", "7x7 stride 2 dilated",
               "5x5 stride 3 dilated", "3x3 stride 2 many channels", "3x3 valid", "3x3 valid to one pixel",
               "5x5 on two rows", "5x5 stride 2 on three rows"]


@pytest.mark.parametrize("zero_point", ["random", "flip"])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("name", QUANT_CASES)
def test_quantized_depthwise_is_bit_identical(name, per_channel, zero_point):
    """Per-channel int8 filters with int8 activations (the input zero point folded into the bias: a
    plain cast, padding with the zero point), or per-tensor uint8 ones with uint8 activations (the zero
    point subtracted; 128 on inputs of at least FLIP_MIN_SIZE values takes the top-bit flip)."""
    case = CASES[name]
    n, h, w, c, k, strides, dil, m, pads, form = case
    if zero_point == "flip":   # enough values for the flip (FLIP_MIN_SIZE)
        n, h, w = n, h + 12, w + 12
        case = (n, h, w, *case[3:])
    code, lo, hi, dt = ((C.TENSOR_QUANT8_ASYMM_SIGNED, -128, 127, np.int8) if per_channel
                        else (C.TENSOR_QUANT8_ASYMM, 0, 255, np.uint8))
    x_zp = (lo if dt == np.int8 else 128) if zero_point == "flip" else int(RNG.integers(lo, hi))
    o = c * m
    xq = RNG.integers(lo, hi, (n, h, w, c), endpoint=True).astype(dt)
    xq[0, :2] = hi   # the ends of the range
    xq[-1, -2:] = lo
    if per_channel:
        wq = RNG.integers(-127, 127, (1, k, k, o), endpoint=True).astype(np.int8)
        w_zp, scales = 0, (0.001 + 0.01 * RNG.random(o)).astype(np.float32)
        flt_type, pc = OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, wq.shape), (scales, 3)
    else:
        wq = RNG.integers(lo, hi, (1, k, k, o), endpoint=True).astype(dt)
        w_zp, scales = int(RNG.integers(lo, hi)), np.full(o, 0.004, np.float32)
        flt_type, pc = OperandType(code, wq.shape, 0.004, w_zp), None
    wq[..., 0] = hi if per_channel else lo   # a channel of extreme weights
    bias = RNG.integers(-4000, 4000, o).astype(np.int32)
    # output channel c*m + j reads input channel c: c groups of m filters
    acc = _int64_conv(xq, x_zp, wq[0].transpose(2, 0, 1)[..., None], w_zp, bias, strides, pads, dil, c)
    x_scale, out_zp = 0.05, (lo + hi + 1) // 2
    out_scale = float(np.float32(x_scale * scales.mean() * max(acc.std(), 1.0) / 40))
    for nchw in (False, True):
        model, xin = _build(code, xq, wq, flt_type, bias, case, nchw, (((x_scale, x_zp)), (out_scale, out_zp)), pc)
        assert _forms(model, xin) == {form}
        fast, slow, prepared = _run_both(model, xin)
        assert prepared[0].fill in ((x_zp, 0) if per_channel else (0,))   # (quant_domain may keep it unfolded)
        assert fast.dtype == slow.dtype == dt and np.array_equal(fast, slow)
        got = fast.transpose(0, 2, 3, 1) if nchw else fast
        real = (np.float32(x_scale) * scales).astype(np.float64) / np.float64(np.float32(out_scale))
        assert np.array_equal(got, _requant_ref(acc, real, out_zp, lo, hi))
    assert len(np.unique(fast)) > 10   # not all saturated


def _plans(model, x) -> list:
    compiled = compile_model(model)
    compiled.run([x], RunState(2.0))
    return [p for p in compiled.steps[0].run.plans.values() if p is not None]


def test_row_bands_skip_the_filter_rows_on_padding():
    """Hand-worked bands (r0, r1, i0, i1): a 5x5 filter over 2 rows padded by 2 reads input rows r + i - 2,
    so output row 0 needs filter rows 2..3 and row 1 rows 1..2; cheap differences are merged into one
    band; a non-finite (or non-skippable) row keeps every band whole."""
    every = np.ones(5, bool)
    assert row_bands(2, 2, 5, 2, 1, 1, every, 100_000) == [(0, 1, 2, 4), (1, 2, 1, 3)]
    assert row_bands(2, 2, 5, 2, 1, 1, every, 100) == [(0, 2, 1, 4)]   # merging costs 200 products
    assert row_bands(7, 7, 5, 2, 1, 1, every, 40_000) == [(0, 1, 2, 5), (1, 2, 1, 5), (2, 5, 0, 5), (5, 6, 0, 4),
                                                           (6, 7, 0, 3)]
    # stride 2, dilation 2, 3 rows, pad 2 on top: output row r reads input rows 2r + 2i - 2
    assert row_bands(3, 2, 3, 2, 2, 2, np.ones(3, bool), 100_000) == [(0, 1, 1, 3), (1, 2, 0, 2)]
    # no filter row meets the input (a dilated filter taller than it): nothing summed
    assert row_bands(1, 1, 3, 4, 1, 3, np.ones(3, bool), 100_000) == [(0, 1, 0, 0)]
    assert row_bands(2, 2, 5, 2, 1, 1, np.array([True, True, True, True, False]), 100_000) == [(0, 2, 0, 5)]


def test_streaming_and_edge_band_plans():
    """The plans the cases above rely on: the one-pixel window reads the input itself (float; int8 with
    its zero point folded), the two-row layer sums its output rows in two bands unless a filter row on
    the padding has an infinite weight, which then gives the plain kernel's NaN."""
    n, h, w, c, k = CASES["3x3 valid to one pixel"][:5]
    x = RNG.standard_normal((n, h, w, c)).astype(np.float32)
    flt = RNG.standard_normal((1, k, k, c)).astype(np.float32)
    model, xin = _build(C.TENSOR_FLOAT32, x, flt, OperandType(C.TENSOR_FLOAT32, flt.shape), np.zeros(c, np.float32),
                        CASES["3x3 valid to one pixel"], False)
    assert [p.direct for p in _plans(model, xin)] == [True]
    case = CASES["5x5 on two rows"]
    n, h, w, c, k = case[:5]
    x = RNG.standard_normal((n, h, w, c)).astype(np.float32)
    flt = RNG.standard_normal((1, k, k, c)).astype(np.float32)
    bias = RNG.standard_normal(c).astype(np.float32)
    model, xin = _build(C.TENSOR_FLOAT32, x, flt, OperandType(C.TENSOR_FLOAT32, flt.shape), bias, case, False)
    assert [[band[:2] for band in p.views] for p in _plans(model, xin)] == [[(0, 1), (1, 2)]]
    case3 = CASES["5x5 stride 2 on three rows"]
    x3 = RNG.standard_normal(case3[:4]).astype(np.float32)
    flt3 = RNG.standard_normal((1, 5, 5, case3[3])).astype(np.float32)
    model3, xin3 = _build(C.TENSOR_FLOAT32, x3, flt3, OperandType(C.TENSOR_FLOAT32, flt3.shape),
                          np.zeros(case3[3], np.float32), case3, False)
    assert [[band[:2] for band in p.views] for p in _plans(model3, xin3)] == [[(0, 1), (1, 2)]]
    flt[0, 0, 1, 5] = np.inf   # filter row 0 only ever meets padding: 0 * inf is NaN in every output row
    model, xin = _build(C.TENSOR_FLOAT32, x, flt, OperandType(C.TENSOR_FLOAT32, flt.shape), bias, case, False)
    assert [[band[:2] for band in p.views] for p in _plans(model, xin)] == [[(0, 2)]]
    fast, slow, _ = _run_both(model, xin)
    assert np.isnan(slow[..., 5]).all() and np.array_equal(np.isnan(fast), np.isnan(slow))


def test_chained_layers_share_the_work_arrays():
    """Three depthwise layers of one model, run twice: the first two copy inputs of the same shape with
    the same padding (one shared buffer), the third a strided copy; every run gives the plain kernel's
    integers, so no layer finds another's values where it expects padding."""
    m = nnapi.Model()
    shape = (1, 14, 13, 8)
    x = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, shape, 0.05, 100))
    current = x
    layers = [(3, 1, 1), (5, 1, 1), (3, 2, 1)]   # (filter size, stride, padding on every side)
    for k, s, p in layers:
        h, w = shape[1], shape[2]
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        shape = (1, oh, ow, 8)
        flt = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, (1, k, k, 8), 0.01, 120))
        m.set_operand_value(flt, RNG.integers(0, 256, (1, k, k, 8)).astype(np.uint8))
        bias = m.add_operand(OperandType(C.TENSOR_INT32, (8,), (0.05 if current == x else 0.2) * 0.01))
        m.set_operand_value(bias, RNG.integers(-2000, 2000, 8).astype(np.int32))
        idx = [current, flt, bias]
        for v in (p, p, p, p, s, s, 1, 0):
            i = m.add_operand(OperandType(C.INT32))
            m.set_operand_value(i, np.int32(v))
            idx.append(i)
        current = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, shape, 0.2, 128))
        m.add_operation(Op.DEPTHWISE_CONV_2D, idx, [current])
    m.identify_inputs_and_outputs([x], [current])
    m.finish()
    fast, plain = compile_model(m), compile_model(m, fast_paths=False)
    assert all(s.run is not s.kernel for s in fast.steps)
    for _ in range(2):
        xq = RNG.integers(0, 256, (1, 14, 13, 8)).astype(np.uint8)
        a, b = (cm.run([xq], RunState(2.0))[0].array for cm in (fast, plain))
        assert np.array_equal(a, b) and len(np.unique(a)) > 10


def test_the_conformance_cases_agree_in_both_strided_forms(monkeypatch):
    """Every CTS DEPTHWISE_CONV_2D case agrees with the plain kernel (the meta-test's rule, on the case's
    inputs and random ones), and between them they take the unit-width-stride and the phase forms (no CTS
    case has the channels for "windows": the tests above cover it)."""
    forms = set()
    plan = PreparedDepthwise._plan

    def recording(self, ctx, shape):
        p = plan(self, ctx, shape)
        forms.add(p.form if p is not None else None)
        return p

    monkeypatch.setattr(PreparedDepthwise, "_plan", recording)
    problems: list = []
    for case in _cases_by_op(None)[Op.DEPTHWISE_CONV_2D]:
        _check_case(case, RNG, Counter(), problems, set())
    assert not problems, "\n".join(problems[:20])
    assert {"rows", "phases"} <= forms

"""The requantizer's proven float32 forms (executor/kernels/requantize.py _try_float32) against
fixedpoint.py's MultiplyByQuantizedMultiplier (itself checked against the Python-integer definitions in
test_perf_paths.py), on every accumulator value up to the bound:

* the split form, for a clamp below the zero point (no fused RELU: RoundingDivideByPOT's sign term);
* the plain form with a fused RELU / RELU6 clamp;
* per-tensor (one multiplier) and per-channel multipliers, int8 and uint8 outputs;
* extreme multipliers: a q31 multiplier of exactly 2^30, tiny and near-one reals, a zero channel;
* accumulator bounds past float64's 2^53 numerator limit (the "int" mode), where float32 still holds
  the accumulators and the step check still proves the constants;
* the clamp on int16 (values below 2^15) against the float32 clamp;
* channels no float32 constants prove, corrected at their missed accumulator values.

Each test also asserts which form was chosen, so it fails if the form it checks is not the one run.
"""
import numpy as np
import pytest

from executor.kernels import fixedpoint as fp
from executor.kernels import requantize as rq
from executor.kernels.requantize import Requantizer

RNG = np.random.default_rng(2024)


def _want(acc: np.ndarray, bias, reals, zp: int, lo: int, hi: int) -> np.ndarray:
    m, s = fp.quantize_multipliers(reals)
    x = np.clip(acc[:, None] + np.asarray(bias, np.int64), fp.INT32_MIN, fp.INT32_MAX)
    return np.clip(fp.multiply_by_quantized_multiplier(x, m, s) + zp, lo, hi)


def _every_value(r: Requantizer, bound: int, channels: int) -> tuple[np.ndarray, np.ndarray]:
    acc = np.arange(-bound, bound + 1, dtype=np.int64)
    acc32 = np.repeat(acc[:, None], channels, axis=1).astype(np.float32)
    return acc, r(acc32, np.empty(acc32.shape, r.dtype))


# (dtype, zero point, lo, hi): clamps below the zero point (the sign term) and above it (RELU, RELU6)
SIGNED = [(np.uint8, 128, 0, 255), (np.uint8, 3, 0, 255), (np.int8, -3, -128, 127), (np.int8, 5, -100, 90),
          (np.int8, 120, -128, 127)]
RELU = [(np.uint8, 7, 7, 255), (np.int8, -128, -128, 127), (np.int8, -20, -20, 100), (np.uint8, 0, 0, 255)]


@pytest.mark.parametrize("dtype,zp,lo,hi", SIGNED)
@pytest.mark.parametrize("reals", [[0.00731] * 4, [0.0041, 0.0123, 0.0078125, 0.031]])
def test_split_float32_form_on_every_accumulator_value(dtype, zp, lo, hi, reals):
    bound = 1 << 16
    bias = np.array([1234, -4321, 0, 77])
    r = Requantizer(bias, np.array(reals), zp, lo, hi, dtype, bound)
    assert r.needs_sign and r.f32 is not None and len(r.f32[1]) == 2   # the split float32 form
    acc, got = _every_value(r, bound, 4)
    assert got.dtype == np.dtype(dtype) and np.array_equal(got, _want(acc, bias, reals, zp, lo, hi))
    _assert_clamp_on_int16_agrees(r, bound, 4, got)


def _assert_clamp_on_int16_agrees(r: Requantizer, bound: int, channels: int, got: np.ndarray) -> None:
    """`got` (every accumulator value) came from the int16 clamps; the float32 clamps give the same."""
    assert r.clamps16 is not None and got.size >= rq.NARROW_MIN
    clamps16, r.clamps16 = r.clamps16, None
    try:
        assert np.array_equal(_every_value(r, bound, channels)[1], got)
    finally:
        r.clamps16 = clamps16


@pytest.mark.parametrize("dtype,zp,lo,hi", RELU)
@pytest.mark.parametrize("reals", [[0.0052] * 3, [0.0052, 0.0191, 0.00391]])
def test_relu_float32_form_on_every_accumulator_value(dtype, zp, lo, hi, reals):
    bound = 1 << 16
    bias = np.array([-999, 31337, 5])
    r = Requantizer(bias, np.array(reals), zp, lo, hi, dtype, bound)
    assert not r.needs_sign and r.f32 is not None and len(r.f32[1]) == 1
    acc, got = _every_value(r, bound, 3)
    assert np.array_equal(got, _want(acc, bias, reals, zp, lo, hi))
    _assert_clamp_on_int16_agrees(r, bound, 3, got)


@pytest.mark.parametrize("dtype,zp,lo,hi", SIGNED[:3] + RELU[:2])
def test_extreme_multipliers(dtype, zp, lo, hi):
    """A real of exactly 2^-8 (q31 multiplier 2^30), one just below a power of two (multiplier near
    2^31), a tiny one (a shift of 21), a near-one real (no shift, so no sign term) and a zero channel."""
    reals = np.array([2.0 ** -8, 0.0078124, 3e-7, 0.9993, 0.0])
    bound = 1 << 14
    bias = np.array([100, -100, 1 << 20, 3, 17])
    r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
    acc, got = _every_value(r, bound, len(reals))
    assert np.array_equal(got, _want(acc, bias, reals, zp, lo, hi))
    assert r.f32 is not None


@pytest.mark.parametrize("dtype,zp,lo,hi", [(np.int8, -2, -128, 127), (np.uint8, 0, 0, 255)])
def test_float32_form_past_the_float64_numerator_limit(dtype, zp, lo, hi):
    """A bound of 1.5 * 2^22 with a multiplier near 2^31: the float64 form's numerators pass 2^53 (the
    int64 mode otherwise); float32 holds every accumulator and the step check proves the constants.
    Checked on every accumulator where the output is not saturated (and well beyond), the extremes and
    a random spread over the whole bound."""
    bound, reals, bias = 3 << 21, np.array([0.0077999]), np.array([-5000])
    r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
    assert r.mode == "int" and r.f32 is not None and r.clamps16 is None   # (values up to 49000: float32 clamps)
    unsaturated = int(300 / reals[0])
    acc = np.concatenate([np.arange(-unsaturated, unsaturated + 1) - bias[0], [-bound, bound, -bound + 1, bound - 1],
                          RNG.integers(-bound, bound, 100000, endpoint=True)]).astype(np.int64)
    want = _want(acc, bias, reals, zp, lo, hi)
    assert len(np.unique(want)) == hi - lo + 1
    assert np.array_equal(r(acc[:, None].astype(np.float32)), want)
    # a float64 accumulator (a GEMM past float32's exact range) takes the int64 mode, equally exact
    assert np.array_equal(r(acc[:, None].astype(np.float64)), want)


@pytest.mark.parametrize("dtype,zp,lo,hi", [SIGNED[0], SIGNED[2], RELU[1]])
def test_float32_form_used_only_where_proven(dtype, zp, lo, hi):
    """Random requantizers (bounds up to 2^20, two channels below 2^18): whichever form each one picks equals the
    definition on every accumulator value; both the plain float32 form and the corrected one (channels whose
    steps no nearby constants hit, fixed at their missed accumulator values) must occur."""
    rng = np.random.default_rng(99)
    plain = corrected = 0
    for _ in range(10):
        bound = int(rng.integers(1000, 1 << 20))
        channels = 1 + (bound < 1 << 18)
        reals = rng.uniform(0.3, 3.0, channels) * 255 / bound
        bias = rng.integers(-bound // 4, bound // 4, channels)
        r = Requantizer(bias, reals, zp, lo, hi, dtype, bound)
        assert r.f32 is not None
        plain += r.exact is None
        corrected += r.exact is not None
        acc, got = _every_value(r, bound, channels)
        assert np.array_equal(got, _want(acc, bias, reals, zp, lo, hi))
    assert plain >= 3 and corrected >= 1


# one channel whose steps no float32 constants near the exact ones all hit (a seeded search; see
# test_fast_path_arithmetic.py, which shows the nearest constants miss a step)
MISSING = (1619100, 0.00011142975939564552, 602)
MISSING_SMALL = (96991, 0.004557893627192605, -10277)   # (a smaller bound: a faster test)


@pytest.mark.parametrize("dtype,zp,lo,hi", [(np.uint8, 0, 0, 255), (np.int8, -3, -128, 127), (np.int8, 7, 7, 127)])
def test_corrected_channels_on_every_accumulator_value(dtype, zp, lo, hi):
    """Per-channel multipliers and per-channel bounds where one channel of four misses the float32 proof:
    the float32 form runs with that channel corrected at its missed accumulator values (the other
    channels proven as before). Every accumulator value of each channel's range, on the corrected form
    (a large accumulator) and on the float64 form a small one takes (requantize.CORRECTED_MIN), equals
    the definition; without the correction the values differ exactly at the missed ones."""
    bound, real, b = MISSING_SMALL
    bounds = np.array([20000, bound, 30000, 5000])
    reals = np.array([0.0061, real, 0.0042, 0.0153])
    bias = np.array([-3000, b, 12345, 0])
    r = Requantizer(bias, reals, zp, lo, hi, dtype, bounds)
    assert r.f32 is not None and r.exact is not None and list(r.exact.channels) == [1]
    acc = np.clip(np.arange(-bound, bound + 1, dtype=np.int64)[:, None], -bounds, bounds)
    want = _want_columns(acc, bias, reals, zp, lo, hi)
    got = r(acc.astype(np.float32), np.empty(acc.shape, dtype))
    assert np.array_equal(got, want)
    missed = r.exact.values[r.exact.values != 0.5].astype(np.int64)
    assert missed.size
    # the same values as a conv's [N, H, W, C] accumulator (a strided one too: an NCHW view)
    rows = acc.shape[0] // 6 * 6
    nhwc = acc[:rows].reshape(1, 2, rows // 2, 4)
    assert np.array_equal(r(nhwc.astype(np.float32)), want[:rows].reshape(nhwc.shape))
    strided = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2)).astype(np.float32).transpose(0, 2, 3, 1)
    assert np.array_equal(r(strided), want[:rows].reshape(nhwc.shape))
    fix, r.exact = r.exact, None
    uncorrected = r(acc.astype(np.float32), np.empty(acc.shape, dtype))
    r.exact = fix
    wrong = uncorrected != want
    assert not wrong[:, [0, 2, 3]].any() and set(acc[wrong[:, 1], 1]) == set(missed)
    # a small accumulator (below CORRECTED_MIN) takes the float64 form: the same values
    few = np.concatenate([acc[np.isin(acc[:, 1], missed)], acc[::100]])
    assert few.size < rq.CORRECTED_MIN
    assert np.array_equal(r(few.astype(np.float32)), _want_columns(few, bias, reals, zp, lo, hi))


def _want_columns(acc: np.ndarray, bias, reals, zp: int, lo: int, hi: int) -> np.ndarray:
    """The definition for accumulators [N, C] (each column its channel's)."""
    m, s = fp.quantize_multipliers(reals)
    x = np.clip(acc + np.asarray(bias, np.int64), fp.INT32_MIN, fp.INT32_MAX)
    return np.clip(fp.multiply_by_quantized_multiplier(x, m, s) + zp, lo, hi)


def test_too_many_missing_channels_keep_the_float64_form():
    """More than EXACT_SHARE of the channels missing the proof: the whole operation stays on the float64 form,
    equal to the definition."""
    bound, real, b = MISSING
    r = Requantizer(np.array([b, b]), np.array([real, real]), 0, 0, 255, np.uint8, bound)
    assert r.f32 is None and r.mode == "float"
    acc = np.arange(-bound, bound + 1, 7, dtype=np.int64)
    got = r(np.repeat(acc[:, None], 2, axis=1).astype(np.float32))
    assert np.array_equal(got, _want(acc, [b, b], [real, real], 0, 0, 255))

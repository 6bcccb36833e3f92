"""The requantizer: the "int32 accumulator + bias -> output integers" step of one operation, for the
plain kernels (conv_quant.finish, common.requantize: the reference form, reference=True) and the fast
paths (conv/prepared.py, reduce/prepared.py: a compiled form) alike:

    clip(MultiplyByQuantizedMultiplier(clamp_int32(acc + bias), M[c], shift[c]) + zero_point, lo, hi)

for integer-valued accumulators acc [..., C], bit for bit as TFLite computes it.

The reference rounds twice: with x = acc + bias, a = x * M and e = -shift >= 0,
y = floor((a + 2^30) / 2^31) (SaturatingRoundingDoublingHighMul), then
floor((y + 2^(e-1) - [y < 0]) / 2^e) (RoundingDivideByPOT, for e > 0). As the
inner floor can be taken out, that is one floor:

    floor((a + 2^30 + 2^(30+e) - 2^31 [y < 0]) / 2^(31+e)),  y < 0  <=>  x <= tau = floor((-2^30 - 1) / M)

At compile time the accumulator bound picks the cheapest exact way to evaluate it:

* "float": every numerator below 2^53, so float64 holds it exactly; the division
  by 2^(31+e) is folded into the constants (scaling by a power of two is exact)
  and the float accumulator is read directly: widen, multiply, add, then (8-bit
  outputs) a truncating cast to int16/int32, the clip there and the cast to the
  output (cheaper than clipping float64 values), over long rows with the
  per-channel constants repeated, the multiplier a float64 scalar when every
  channel shares it; within it, a float32 form (multiply, add, clamp, cast: half
  the memory traffic) where a compile-time check proves it gives the same
  clamped integers for every accumulator value in the bound (_try_float32: both
  are monotone, so agreeing on both sides of every output step suffices) --
  often with per-tensor filters, rarely with many per-channel ones;
* "int": the numerator fits int64: the same formula in in-place int64 passes;
* "reference": fixedpoint.py as is (a channel shifts left, i.e. multiplier >= 1, or reference=True).

The compiled forms are proven equal to the reference one (tests/executor/kernels/test_fast_path_arithmetic.py checks
them against TFLite's MultiplyByQuantizedMultiplier written out in Python integers).
"""
from __future__ import annotations

import numpy as np

from .common import clip_ufunc as _clip
from .fixedpoint import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier, quantize_multipliers
from .conv.gemm import ChannelRows
from .scratch import Scratch


# accumulators of at most this many values take the paths with the fewest numpy calls
SMALL = 4096


def _steps_agree(a: np.ndarray, steps: np.ndarray, acc_bound: int, mf: np.ndarray, cf: np.ndarray) -> np.ndarray:
    """Per row of constants (mf, cf: float32 columns), whether g(acc) = floor(fl32(fl32(acc * mf) + cf))
    steps to each n in `steps` at the accumulator a_n where the exact formula does (`a`: a_n clipped to
    [-acc_bound, acc_bound + 1]). A step below the range means f >= n on all of it, so g(lowest) >= n
    must hold; one above it (a_n = acc_bound + 1), g(highest) < n."""
    g_at = np.floor(np.minimum(a, acc_bound).astype(np.float32) * mf + cf)
    g_below = np.floor(np.maximum(a - 1, -acc_bound).astype(np.float32) * mf + cf)
    reached = a <= acc_bound                  # f steps to n inside the range
    starts_above = a == -acc_bound            # f >= n from the lowest value on
    ok = np.where(reached, g_at >= steps, g_at < steps) & ((g_below < steps) | starts_above)
    return ok.all(axis=-1)


def _nudged_constants(a: np.ndarray, steps: np.ndarray, acc_bound: int, mf, cf, top: int):
    """float32 (mf, cf) within a few rounding units of the given ones that pass _steps_agree for one
    channel (the closest such pair), or None."""
    mfs = np.array([np.float32(mf)], np.float32)
    for _ in range(3):   # mf and its neighbours up to 3 float32 steps away
        mfs = np.unique(np.concatenate([mfs, np.nextafter(mfs, np.float32(0)), np.nextafter(mfs, np.float32(1))]))
    unit = np.spacing(np.float32(top)) / np.float32(4)   # below the rounding unit of the largest g
    cfs = np.float32(cf) + unit * np.arange(-8, 9, dtype=np.float32)
    mf_grid, cf_grid = (g.reshape(-1, 1) for g in np.meshgrid(mfs, cfs))
    ok = _steps_agree(a[None, :], steps, acc_bound, mf_grid, cf_grid)
    if not ok.any():
        return None
    distance = np.abs(mf_grid[:, 0] - np.float32(mf)) / np.float32(mf) + np.abs(cf_grid[:, 0] - np.float32(cf))
    best = np.flatnonzero(ok)[np.argmin(distance[ok])]
    return mf_grid[best, 0], cf_grid[best, 0]


class Requantizer:
    """One operation's requantization: bias [C], real multipliers [C] (input scale x filter scale /
    output scale), the output zero point, the fused clamp [lo, hi] in stored units, the output dtype and
    a bound on |acc| proven at compile time."""

    def __init__(self, bias, real_multipliers, zero_point: int, lo: int, hi: int, dtype,
                 acc_bound: float = np.inf, scratch: Scratch = None, reference: bool = False):
        self.bias = np.asarray(bias, np.int64)
        self.m, self.shift = quantize_multipliers(real_multipliers)
        self.zero_point, self.lo, self.hi, self.dtype = int(zero_point), int(lo), int(hi), np.dtype(dtype)
        self.scratch = scratch or Scratch()
        x_bound = float(acc_bound) + float(np.abs(self.bias).max(initial=0))
        self.clamp = x_bound > INT32_MAX
        self.mode = "reference"
        if not reference and not np.any(self.shift > 0):
            self._fold(min(x_bound, 2.0 ** 31), float(acc_bound))

    def _fold(self, x_bound: float, acc_bound: float) -> None:
        e = -self.shift
        self.k = 31 + e
        # numerator constants per channel (Python ints: exact), zero point included
        c = [(1 << 30) + ((1 << (30 + int(ei))) if ei > 0 else 0) + self.zero_point * (1 << (31 + int(ei)))
             for ei in e]
        self.sign = np.where(e > 0, np.int64(1) << 31, 0)   # the [y < 0] term only exists when e > 0
        # where y < 0 the result without the term is already <= zero_point: a clamp at or above the
        # zero point (a fused RELU, RELU6) makes the term irrelevant
        self.needs_sign = bool(np.any(self.sign)) and self.lo < self.zero_point
        m = np.maximum(self.m, 1)
        self.tau1 = np.where(self.m > 0, -(((1 << 30) + m) // m), INT32_MIN - 1) + 1
        self.plain_sign = bool(np.all(self.tau1 == 0))   # M > 2^30 everywhere: y < 0 iff x < 0
        m_max = float(self.m.max(initial=0))
        # "float" reads the accumulator itself, so the bias joins the constants
        offset = -int(np.iinfo(self.dtype).min) if self.dtype.kind == "i" and self.dtype.itemsize == 1 else 0
        c_float = [ci + int(b) * int(mi) + (offset << int(ki)) for ci, b, mi, ki in zip(c, self.bias, self.m, self.k)]
        if not self.clamp and acc_bound * m_max + max(abs(v) for v in c_float) + 2.0 ** 31 < 2.0 ** 53:
            self.mode = "float"
            scale = np.ldexp(1.0, -self.k)
            self.mf, self.cf = self.m * scale, np.array(c_float, np.float64) * scale
            self.sf = self.sign * scale
            self.threshold = (self.tau1 - self.bias).astype(np.float64)   # acc < this  <=>  x <= tau
            self.offset = offset
            # the sign term without a mask (_split): N's constants, t - (sf + Z - 256)
            z = self.zero_point + offset
            self.split_c = self.sf + (z - 256)
            self.tiled = ChannelRows(self.mf, self.cf, self.threshold, self.sf, self.split_c)
            # one multiplier for every channel (per-tensor filters): a scalar, which numpy applies
            # several times faster than a broadcast row (the same float64 value either way)
            # (a numpy float64: a Python float would let numpy multiply a float32 accumulator in float32)
            self.mf_scalar = self.mf[0] if self.mf.size and np.all(self.mf == self.mf[0]) else None
            # an 8-bit output whose clamp, offset included, lies in [0, 255]: the float64 values are cast
            # to the narrowest integer type that holds every |t| (below 2^22: t < 2^53 / 2^31) and clipped there
            self.int_dtype = None
            if self.dtype.itemsize == 1 and self.lo + offset >= 0 and self.hi + offset <= 255:
                t_bound = float(np.max(acc_bound * self.mf + np.abs(self.cf) + np.abs(self.sf), initial=0))
                self.int_dtype = np.dtype(np.int16 if t_bound < 2.0 ** 15 - 2 else np.int32)
            self.split = None
            # t - split_c is exact where it matters, in [n_lo - 1, n_hi + 1] within [0, 257]: a multiple of
            # 2^-k below 2^9 has at most 9 + k <= 53 bits (outside, rounding, monotone, keeps the clip's result)
            split_exact = int(self.k.max(initial=0)) <= 44
            if self.needs_sign and self.int_dtype is not None and self.lo <= self.zero_point <= self.hi \
                    and split_exact:
                # (P and N below are cast from t and t - split_c: |values| up to t_bound + 512)
                small_ints = t_bound + 512 < 2.0 ** 15 - 2
                self.split = (np.dtype(np.int16 if small_ints else np.int32),
                              (z, self.hi + offset), (self.lo + offset - z + 256, 256))
            self.f32 = None
            if self.int_dtype is not None and not self.needs_sign and acc_bound < 2.0 ** 24:
                self._try_float32(c_float, int(acc_bound))
        elif x_bound * m_max + max(abs(v) for v in c) + 2.0 ** 31 < 2.0 ** 62:
            self.mode = "int"
            self.c = np.array(c, np.int64)

    def _try_float32(self, c_float: list, acc_bound: int) -> None:
        """Use float32 arithmetic, g(acc) = floor(fl32(fl32(acc * mf32) + cf32)), where it provably gives
        the exact f(acc) = floor((acc * M + C) / 2^k) once both are clamped to [lo, hi] (offset included),
        for every integer |acc| <= acc_bound (float32 holds those exactly). g is non-decreasing in acc
        (float rounding is monotone, the multipliers positive), and so is f: they agree everywhere when g
        steps where f does, i.e. at each f-step a_n = min{acc: f(acc) >= n} inside the clamp,
        g(a_n) >= n and g(a_n - 1) < n. Those two points per step and channel are checked here. Where
        the nearest float32 constants miss a step (an exact value within float32 rounding of an integer),
        constants a few units of rounding away are tried: any that pass the same check are as exact."""
        if not np.all(self.m > 0):
            return
        mf32, cf32 = self.mf.astype(np.float32), self.cf.astype(np.float32)
        if not (np.all(mf32 > 0) and np.all(np.isfinite(cf32))):
            return
        lo, hi = self.lo + self.offset, self.hi + self.offset
        if max(abs(c) for c in c_float) >= 2 ** 61 or int(self.k.max()) + 8 >= 62:
            return   # the step positions below are computed in int64
        steps = np.arange(lo + 1, hi + 1, dtype=np.int64)
        m, k = self.m.astype(np.int64)[:, None], self.k.astype(np.int64)[:, None]
        c = np.array(c_float, np.int64)[:, None]
        # a_n = ceil((n * 2^k - C) / M) per channel and step
        a = np.clip(-((c - (steps << k)) // m), -acc_bound, acc_bound + 1)
        agree = _steps_agree(a, steps, acc_bound, mf32[:, None], cf32[:, None])
        for ch in np.flatnonzero(~agree):
            nudged = _nudged_constants(a[ch], steps, acc_bound, mf32[ch], cf32[ch], hi)
            if nudged is None:
                return
            mf32[ch], cf32[ch] = nudged
        scalar = bool(np.all(mf32 == mf32[0]))
        self.f32 = (ChannelRows(cf32) if scalar else ChannelRows(mf32, cf32), mf32[0] if scalar else None)

    def __call__(self, acc, out: np.ndarray = None) -> np.ndarray:
        """The requantized acc; written into `out` (acc's shape, the output dtype) when given."""
        if type(acc) is not np.ndarray:
            acc = np.asarray(acc)
        if self.mode == "float":
            return self._float(acc, out)
        x = self.scratch.get("x", acc.shape, np.int64)
        np.copyto(x, acc, casting="unsafe")
        x += self.bias
        if self.clamp:
            _clip(x, INT32_MIN, INT32_MAX, out=x)
        if self.mode == "int":
            self._int(x)
        else:
            x = multiply_by_quantized_multiplier(x, self.m, self.shift) + self.zero_point
        _clip(x, self.lo, self.hi, out=x)
        if out is None:
            return x.astype(self.dtype)
        np.copyto(out, x, casting="unsafe")
        return out

    def _rows(self, acc: np.ndarray):
        """acc as [rows, L] with the per-channel constants repeated to length L (gemm.ChannelRows), when
        acc [..., C] is contiguous: numpy then broadcasts long rows instead of C values at a time."""
        return self.tiled(acc)

    def _float32(self, acc: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The proven float32 form (see _try_float32): multiply, add, clamp, truncating cast (the floor:
        the clamp keeps values non-negative) -- half the memory traffic of the float64 passes."""
        rows, mf32 = self.f32
        if mf32 is None:
            acc2, mf, cf = rows(acc)
        else:
            (acc2, cf), mf = rows(acc), mf32
        t = self.scratch.get("t32", acc2.shape, np.float32)
        np.multiply(acc2, mf, out=t)
        t += cf
        _clip(t, self.lo + self.offset, self.hi + self.offset, out=t)
        return self._store(t, out)

    def _store(self, values: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write clamped non-negative 8-bit values (offset included; floats are truncated, which is their
        floor there) into the contiguous `out`, back from the offset 128 of int8 by flipping the top bit."""
        stored = out.reshape(values.shape).view(np.uint8)
        np.copyto(stored, values, casting="unsafe")
        if self.offset:
            np.bitwise_xor(stored, np.uint8(0x80), out=stored)
        return out

    def _float(self, acc: np.ndarray, out: np.ndarray = None) -> np.ndarray:
        if self.f32 is not None and acc.dtype == np.float32:
            if out is None or not out.flags.c_contiguous:
                out = np.empty(acc.shape, self.dtype)
            return self._float32(acc, out)
        shape = acc.shape
        acc, mf, cf, threshold, sf, split_c = self._rows(acc)
        t = self.scratch.get("t", acc.shape, np.float64)
        small = acc.size <= SMALL
        # (a large float32 accumulator is widened by a plain copy first: numpy's mixed-type multiply is
        # slower per element; on small ones the call saved counts more)
        if acc.dtype == t.dtype or small:
            np.multiply(acc, mf if self.mf_scalar is None else self.mf_scalar, out=t)
        else:
            np.copyto(t, acc)
            t *= mf if self.mf_scalar is None else self.mf_scalar
        t += cf
        if self.split is not None and not small:   # (on few values the masked form takes fewer calls)
            if out is None or not out.flags.c_contiguous:
                out = np.empty(shape, self.dtype)
            return self._split(t, split_c, out)
        if self.needs_sign:
            mask = self.scratch.get("mask", acc.shape, np.bool_)
            np.less(acc, threshold, out=mask)
            correction = self.scratch.get("correction", acc.shape, np.float64)
            np.multiply(mask, sf, out=correction)   # (a masked ufunc is many times slower)
            t -= correction
        off = self.offset
        if self.int_dtype is not None and small and out is not None and out.flags.c_contiguous:
            # clipped to [lo + off, hi + off] within [0, 255], the truncating cast is the floor: two calls
            # instead of the three of the integer clip below (the same values: see there)
            _clip(t, self.lo + off, self.hi + off, out=t)
            return self._store(t, out)
        if self.int_dtype is not None:
            # t -> integers (a truncating cast: the floor for t >= 0, and below 0 both clip to lo + off >= 0),
            # clipped there: cheaper than clipping the float64 values and casting those
            ints = self.scratch.get("ints", t.shape, self.int_dtype)
            np.copyto(ints, t, casting="unsafe")
            _clip(ints, self.lo + off, self.hi + off, out=ints)
            if out is None or not out.flags.c_contiguous:   # (a reshape must be a view of it)
                out = np.empty(shape, self.dtype)
            return self._store(ints, out)
        t = t.reshape(shape)
        _clip(t, self.lo + off, self.hi + off, out=t)
        np.floor(t, out=t)
        result = (t - off).astype(self.dtype) if off else t.astype(self.dtype)
        if out is None:
            return result
        np.copyto(out, result)
        return out

    def _split(self, t: np.ndarray, split_c, out: np.ndarray) -> np.ndarray:
        """The sign term without a mask, for Z = zero point + offset within the clamp [L, H]:
        f = floor(t - s [y < 0]) clipped to [L, H] equals clip(floor(t), Z, H) + clip(floor(t - s), L, Z) - Z.
        y < 0 exactly where t < T0 = t(first accumulator with y = 0), and there y = 0 gives
        frac(T0) in [1/2, 1/2 + s) (s = 2^-e <= 1/2 where the term exists), so floor(T0 - s) = floor(T0) = Z:
        where y >= 0, floor(t) >= Z and floor(t - s) >= Z (the second clip gives Z); where y < 0,
        floor(t) <= Z and floor(t - s) <= Z (the first gives Z). With no term (s = 0) it is the clip
        split at Z. The second part is computed shifted by 256 (non-negative, so the truncating casts
        are floors within the clips) and the sum is taken mod 256 straight into the 8-bit output."""
        dtype, (p_lo, p_hi), (n_lo, n_hi) = self.split
        t2 = self.scratch.get("t2", t.shape, np.float64)
        np.subtract(t, split_c, out=t2)
        p = self.scratch.get("p", t.shape, dtype)
        n = self.scratch.get("n", t.shape, dtype)
        np.copyto(p, t, casting="unsafe")
        np.copyto(n, t2, casting="unsafe")
        _clip(p, dtype.type(p_lo), dtype.type(p_hi), out=p)
        _clip(n, dtype.type(n_lo), dtype.type(n_hi), out=n)
        stored = out.reshape(t.shape).view(np.uint8)
        np.add(p, n, out=stored, casting="unsafe")
        if self.offset:
            np.bitwise_xor(stored, np.uint8(0x80), out=stored)
        return out

    def _int(self, x: np.ndarray) -> None:
        """In place: x <- the requantized values (zero point included)."""
        neg = None
        if self.needs_sign:
            neg = self.scratch.get("neg", x.shape, np.int64)
            np.right_shift(x if self.plain_sign else x - self.tau1, 63, out=neg)   # -1 where y < 0, else 0
            neg *= self.sign
        x *= self.m
        x += self.c
        if neg is not None:
            x += neg
        x >>= self.k

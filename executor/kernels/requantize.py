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

* float32 (before either mode below, for float32 accumulators below 2^24 and 8-bit outputs): multiply,
  add, clamp, cast (half the float64 passes' memory traffic) where a compile-time check proves it gives
  the same clamped integers for every accumulator value in the bound (_try_float32: both are monotone,
  so agreeing on both sides of every output step suffices); with the sign term (a clamp below the zero
  point) split at the zero point into two such parts -- most channels pass, and for the few that no
  nearby constants make pass, the accumulator values where they miss are worked out at compile time
  and corrected after the passes (Corrections);
* "float": every numerator below 2^53, so float64 holds it exactly; the division
  by 2^(31+e) is folded into the constants (scaling by a power of two is exact)
  and the float accumulator is read directly: widen, multiply, add, then (8-bit
  outputs) a truncating cast to int16/int32, the clip there and the cast to the
  output (cheaper than clipping float64 values), over long rows with the
  per-channel constants repeated, the multiplier a float64 scalar when every
  channel shares it;
* "int": the numerator fits int64: the same formula in in-place int64 passes;
* "reference": fixedpoint.py as is (a channel shifts left, i.e. multiplier >= 1, or reference=True).

The compiled forms are proven equal to the reference one (tests/executor/kernels/test_fast_path_arithmetic.py checks
them against TFLite's MultiplyByQuantizedMultiplier written out in Python integers).
"""
from __future__ import annotations

import numpy as np

from .common import clip_ufunc as _clip
from .fixedpoint import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier, quantize_multipliers
from .requantize_float32 import Corrections, exact_steps, missed_values, nudged_constants, steps_agree
from .scratch import Scratch


# accumulators of at most this many values take the paths with the fewest numpy calls
SMALL = 4096
# the float32 form is kept while at most this share of channels needs corrections (Corrections: their
# accumulators are gathered and compared with each missed value)
EXACT_SHARE = 0.25
# corrected float32 forms (Corrections) run on accumulators of at least this many values; on fewer, the
# correction's fixed cost passes what the float32 passes save over the float64 ones
CORRECTED_MIN = 32768
# the float32 form clamps on int16 (Requantizer.clamps16) for accumulators of at least this many values (on
# fewer, the extra call costs more than the cheaper passes save)
NARROW_MIN = 8192
# int8 results are computed offset by 128 (non-negative, so truncating casts floor) and flipped back
_TOP_BIT = np.uint8(0x80)


class Requantizer:
    """One operation's requantization: bias [C], real multipliers [C] (input scale x filter scale /
    output scale), the output zero point, the fused clamp [lo, hi] in stored units, the output dtype and
    a bound on |acc| proven at compile time: one for all channels, or one per channel [C] (the float32
    form is proven per channel, and a tighter bound leaves fewer steps to prove)."""

    def __init__(self, bias, real_multipliers, zero_point: int, lo: int, hi: int, dtype,
                 acc_bound=np.inf, scratch: Scratch = None, reference: bool = False):
        self.bias = np.asarray(bias, np.int64)
        self.m, self.shift = quantize_multipliers(real_multipliers)
        self.zero_point, self.lo, self.hi, self.dtype = int(zero_point), int(lo), int(hi), np.dtype(dtype)
        self.scratch = scratch or Scratch()
        self.channel_bounds = np.broadcast_to(np.asarray(acc_bound, np.float64), self.m.shape)
        acc_bound = float(self.channel_bounds.max(initial=0))
        x_bound = acc_bound + float(np.abs(self.bias).max(initial=0))
        self.clamp = x_bound > INT32_MAX
        self.mode = "reference"
        self.f32 = None
        self.exact = None   # the float32 form's corrections (Corrections), if it has any
        if not reference and not np.any(self.shift > 0):
            self._fold(min(x_bound, 2.0 ** 31), acc_bound)

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
        elif x_bound * m_max + max(abs(v) for v in c) + 2.0 ** 31 < 2.0 ** 62:
            self.mode = "int"
            self.c = np.array(c, np.int64)
        # an 8-bit output whose clamp, offset included, lies in [0, 255] and accumulators float32 holds
        # exactly: the proven float32 form (either mode above stays for float64 accumulators)
        self.offset = offset
        if self.dtype.itemsize == 1 and self.lo + offset >= 0 and self.hi + offset <= 255 and acc_bound < 2.0 ** 24:
            self._try_float32(c_float, self.channel_bounds.astype(np.int64))

    def _try_float32(self, c_float: list, bounds: np.ndarray) -> None:
        """Use float32 arithmetic, g(acc) = floor(fl32(fl32(acc * mf32) + cf32)), where it provably gives
        the exact f(acc) = floor((acc * M + C - sign [y < 0]) / 2^k) once both are clamped to [lo, hi]
        (offset included), for every integer |acc| <= acc_bound (float32 holds those exactly). g is
        non-decreasing in acc (float rounding is monotone, the multipliers non-negative), and so is f:
        they agree everywhere when g steps where f does, i.e. at each f-step a_n = min{acc: f(acc) >= n}
        inside the clamp, g(a_n) >= n and g(a_n - 1) < n. Those two points per step and channel are
        checked here. Where the nearest float32 constants miss a step (an exact value within float32
        rounding of an integer), constants a few units of rounding away are tried: any that pass the
        same check are as exact.

        With the sign term (a clamp below the zero point Z, no fused RELU) f is not one affine floor:
        it is split at Z as in _split, f = clip(f, Z, H) + clip(f, L, Z) - Z, and each part is one
        (P: steps above Z, computed shifted down by Z; N: steps up to Z, the constant less 2^-e), both
        from the one product acc * mf32.

        A channel that no nearby constants prove (about one in twenty on real per-channel convolutions: an
        exact step value within float32 rounding of an integer) keeps its nearest constants, and the few
        accumulator values where they give another result than f are found here (missed_values) and
        corrected at run time (Corrections, on accumulators of CORRECTED_MIN values or more; smaller ones
        take the float64 form). Past EXACT_SHARE of the channels, or a step missed by more than a few
        values, the whole operation stays on the float64/int64 forms."""
        if self.clamp or not np.all(self.m >= 0):
            return
        lo, hi = self.lo + self.offset, self.hi + self.offset
        z = self.zero_point + self.offset
        if self.needs_sign and not lo <= z <= hi:
            return
        if max(abs(c) for c in c_float) >= 2 ** 61 or int(self.k.max()) + 8 >= 62:
            return   # the step positions below are computed in int64
        scale = np.ldexp(1.0, -self.k)
        mf = self.m * scale
        cf = np.array(c_float, np.float64) * scale
        mf32 = mf.astype(np.float32)
        if not (np.all(np.isfinite(cf.astype(np.float32))) and np.all((mf32 > 0) == (self.m > 0))):
            return
        col = (lambda v: np.asarray(v, np.int64)[:, None])
        acc_bound = col(bounds)
        threshold = col(self.tau1 - self.bias) if self.needs_sign else -acc_bound - 1
        a = exact_steps(col(self.m), col(self.k), col(c_float), col(self.sign), threshold, lo, hi, acc_bound)
        steps = np.arange(lo + 1, hi + 1, dtype=np.int64)
        if self.needs_sign:   # (part, steps compared, constants before rounding to float32)
            parts = [(a[:, z - lo:], steps[z - lo:] - z, cf - z), (a[:, :z - lo], steps[:z - lo], cf - self.sign * scale)]
        else:
            parts = [(a, steps, cf)]
        consts = [p[2].astype(np.float32) for p in parts]
        agree = np.ones(self.m.size, bool)
        for (pa, ps, _), c32 in zip(parts, consts):
            agree &= steps_agree(pa, ps, acc_bound, mf32[:, None], c32[:, None])
        misses = {}   # channel -> {accumulator: exact - float32 result}
        for ch in np.flatnonzero(~agree):
            parts_ch = [(pa[ch], ps, c32[ch]) for (pa, ps, _), c32 in zip(parts, consts)]
            nudged = nudged_constants(parts_ch, int(bounds[ch]), mf32[ch], hi)
            if nudged is not None:
                mf32[ch] = nudged[0]
                for c32, v in zip(consts, nudged[1]):
                    c32[ch] = v
                continue
            missed = missed_values(parts_ch, int(bounds[ch]), mf32[ch])
            if missed is None or len(misses) >= EXACT_SHARE * self.m.size:
                return
            misses[ch] = missed
        if misses:
            self.exact = Corrections(misses)
        scalar = bool(np.all(mf32 == mf32[0]))
        bounds = [(0.0, float(hi - z)), (float(lo), float(z))] if self.needs_sign else [(float(lo), float(hi))]
        # (the multiplier, the constants per part, as they broadcast over [..., C]), the clamps
        self.f32 = ((None, mf32[0] if scalar else mf32, consts), bounds)
        self.plans32: dict = {}
        # every |t| of every part below 2^15 (a product and a sum each rounded up by at most a unit in the
        # last place): the values are cast to int16 first, truncating, and clamped there -- cheaper than a
        # float32 clamp -- the same integers, as the clamps' lower ends are >= 0 (see _float32)
        reach = self.channel_bounds * mf32.astype(np.float64)
        t_bound = max(float(np.max(reach + np.abs(c32.astype(np.float64)), initial=0)) for c32 in consts)
        self.clamps16 = [(np.int16(a), np.int16(b)) for a, b in bounds] \
            if t_bound * (1 + 2.0 ** -20) + 2 < 2.0 ** 15 else None

    def __call__(self, acc, out: np.ndarray = None) -> np.ndarray:
        """The requantized acc; written into `out` (acc's shape, the output dtype) when given."""
        if type(acc) is not np.ndarray:
            acc = np.asarray(acc)
        if self.f32 is not None and acc.dtype == np.float32 and (self.exact is None or acc.size >= CORRECTED_MIN):
            if out is None or not out.flags.c_contiguous:
                out = np.empty(acc.shape, self.dtype)
            return self._float32(acc, out)
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

    def _plan32(self, shape: tuple) -> tuple:
        """(row shape, multiplier, constants) for contiguous accumulators of `shape`: [rows, L] with the
        per-channel values repeated to L (gemm.row_length: long rows, which numpy runs several times
        faster than C values at a time), made once per shape."""
        flat, _ = self.f32
        _, mf, consts = flat
        c = shape[-1] if shape else 0
        pixels = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) >= 2 else 0
        plan = flat
        if pixels and c == self.m.size:
            length = row_length(pixels, c)
            reps = length // c
            plan = ((-1, length), mf if np.ndim(mf) == 0 else np.tile(mf, reps), [np.tile(k, reps) for k in consts])
        if len(self.plans32) >= 64:   # (dynamic shapes could otherwise grow it without end)
            self.plans32.clear()
        self.plans32[shape] = plan
        return plan

    def _float32(self, acc: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The proven float32 form (see _try_float32) into the contiguous `out`: multiply, add, clamp,
        truncating cast (the floor: the clamp keeps values non-negative) -- half the memory traffic of
        the float64 passes -- or, for values below 2^15, the truncating cast to int16 and the clamp
        there. Split at the zero point (the sign term): the P and N parts each added and clamped, cast
        and summed."""
        if acc.flags.c_contiguous:
            plan = self.plans32.get(acc.shape)
            if plan is None:
                plan = self._plan32(acc.shape)
        else:
            plan = self.f32[0]
        rows, mf, consts = plan
        acc_in = acc
        if rows is not None:
            acc = acc.reshape(rows)
        bounds = self.f32[1]
        scratch = self.scratch
        t = scratch.get("t32", acc.shape, np.float32)
        np.multiply(acc, mf, out=t)
        stored = out.view(np.uint8).reshape(acc.shape)
        clamps16 = self.clamps16
        if clamps16 is not None and acc.size >= NARROW_MIN:
            # trunc(t) clamped to [a, b] with a >= 0 is floor(t) clamped there: where t >= 0 the two agree,
            # and where t < 0 both are below a
            p16 = scratch.get("p16", acc.shape, np.int16)
            if len(consts) == 1:
                t += consts[0]
                np.copyto(p16, t, casting="unsafe")
                _clip(p16, *clamps16[0], out=p16)
            else:
                n = scratch.get("n32", acc.shape, np.float32)
                np.add(t, consts[1], out=n)
                t += consts[0]
                n16 = scratch.get("n16", acc.shape, np.int16)
                np.copyto(p16, t, casting="unsafe")
                np.copyto(n16, n, casting="unsafe")
                _clip(p16, *clamps16[0], out=p16)
                _clip(n16, *clamps16[1], out=n16)
                p16 += n16
            np.copyto(stored, p16, casting="unsafe")
        elif len(consts) == 1:
            t += consts[0]
            _clip(t, *bounds[0], out=t)
            np.copyto(stored, t, casting="unsafe")
        else:
            n = scratch.get("n32", acc.shape, np.float32)
            np.add(t, consts[1], out=n)
            t += consts[0]
            _clip(t, *bounds[0], out=t)
            _clip(n, *bounds[1], out=n)
            p8 = scratch.get("p8", acc.shape, np.uint8)
            np.copyto(p8, t, casting="unsafe")
            np.copyto(stored, n, casting="unsafe")
            stored += p8
        if self.offset:
            np.bitwise_xor(stored, _TOP_BIT, out=stored)
        if self.exact is not None:
            self._exact_channels(acc_in, out)
        return out

    def _exact_channels(self, acc: np.ndarray, out: np.ndarray) -> None:
        """Correct the float32 results of the channels with missed accumulator values (missed_values)
        where the accumulator is one of them: the channels' accumulators gathered, compared with those
        values, and (seldom) the hits corrected."""
        fix = self.exact
        # (as [k, pixels] rows, compared with each value a row at a time: numpy's inner loop is then long)
        cols = acc.reshape(-1, acc.shape[-1]).T[fix.channels]
        hits = np.equal(cols, fix.values[:, :, None])
        if not hits.any():
            return
        js, chs, rows = np.nonzero(hits)
        flat = out.reshape(-1, out.shape[-1])
        where = (rows, fix.channels[chs])
        flat[where] = flat[where].astype(np.int16) + fix.deltas[js, chs]

    def _store(self, values: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write clamped non-negative 8-bit values (offset included; floats are truncated, which is their
        floor there) into the contiguous `out`, back from the offset 128 of int8 by flipping the top bit."""
        stored = out.reshape(values.shape).view(np.uint8)
        np.copyto(stored, values, casting="unsafe")
        if self.offset:
            np.bitwise_xor(stored, np.uint8(0x80), out=stored)
        return out

    def _float(self, acc: np.ndarray, out: np.ndarray = None) -> np.ndarray:
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


# (last: importing conv.gemm runs the conv package, whose kernels import the Requantizer defined above)
from .conv.gemm import ChannelRows, row_length  # noqa: E402

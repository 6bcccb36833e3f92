"""The float32 form's compile-time proof for the requantizer (requantize.py): where the float32 multiply,
add, clamp and cast give the reference's clamped integers for every accumulator value within the bound.
Both are monotone in the accumulator, so agreeing on both sides of every output step suffices
(steps_agree, at the exact steps exact_steps finds); a channel that misses gets nearby float32
constants tried (nudged_constants), and where none pass, the few accumulator values it misses are
listed (missed_values) for the run-time correction (Corrections).
"""
from __future__ import annotations

import numpy as np

# how far (in accumulator values) a missed step may lie from the exact one for missed_values to correct it
MISS_REACH = 8


def steps_agree(a: np.ndarray, steps: np.ndarray, acc_bound: int, mf: np.ndarray, cf: np.ndarray) -> np.ndarray:
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


def nudged_constants(parts: list, acc_bound: int, mf, top: int):
    """float32 (mf, [cf per part]) within a few rounding units of the given ones that pass steps_agree
    for one channel, every part (a, steps, cf) with the same mf (the parts share the product), the
    closest such constants; or None."""
    mfs = np.array([np.float32(mf)], np.float32)
    for _ in range(3):   # mf and its neighbours up to 3 float32 steps away
        mfs = np.unique(np.concatenate([mfs, np.nextafter(mfs, np.float32(0)), np.nextafter(mfs, np.float32(1))]))
    mfs = mfs[np.argsort(np.abs(mfs - np.float32(mf)), kind="stable")]
    unit = np.spacing(np.float32(top)) / np.float32(4)   # below the rounding unit of the largest g
    offsets = unit * np.arange(-8, 9, dtype=np.float32)
    offsets = offsets[np.argsort(np.abs(offsets), kind="stable")]
    for mf_try in mfs:
        found = []
        for a, steps, cf in parts:
            cfs = (np.float32(cf) + offsets)[:, None]
            ok = steps_agree(a[None, :], steps, acc_bound, np.full(cfs.shape, mf_try, np.float32), cfs)
            if not ok.any():
                break
            found.append(cfs[np.flatnonzero(ok)[0], 0])
        else:
            return mf_try, found
    return None


def exact_steps(m, k, c, sign, threshold, lo: int, hi: int, acc_bound: int) -> np.ndarray:
    """a[ch, j]: the first accumulator (clipped to [-acc_bound, acc_bound + 1]) where the exact result
    f(acc) = floor((acc * M + C - sign [acc < threshold]) / 2^k) reaches n = lo + 1 + j, per channel
    (int64 columns m, k, c, sign, threshold). f is non-decreasing: at the threshold the numerator grows by
    M + sign. A channel with M = 0 is constant."""
    steps = np.arange(lo + 1, hi + 1, dtype=np.int64)
    m1 = np.maximum(m, 1)
    target = (steps << k) - c
    plain = -((-target) // m1)                       # ceil((n 2^k - C) / M): the formula above the threshold
    signed = -((-(target + sign)) // m1)             # ... and below it
    a = np.where(plain >= threshold, plain, np.minimum(signed, threshold))
    a = np.where(m > 0, a, np.where((c >> k) >= steps, -acc_bound, acc_bound + 1))
    return np.clip(a, -acc_bound, acc_bound + 1)


def missed_values(parts: list, acc_bound: int, mf) -> dict:
    """For one channel whose float32 constants miss steps (steps_agree): every accumulator in
    [-acc_bound, acc_bound] where g (those constants, every part (a, steps, cf) clamped as _float32 does)
    differs from the exact f, with f - g there; None when a missed step lies more than a few values away.
    Both are non-decreasing, so f(acc) counts the steps n with a_n <= acc and g those with b_n <= acc,
    b_n = min{acc: g(acc) >= n}: they differ exactly between a_n and b_n (+1 where a_n <= acc < b_n, -1
    where b_n <= acc < a_n), and the check proves b_n = a_n at every step it passes."""
    missed: dict = {}
    window = np.arange(-MISS_REACH, MISS_REACH + 1)
    mf = np.float32(mf)
    for a, steps, cf in parts:
        ok = steps_agree(a[:, None], steps[:, None], acc_bound, np.full((a.size, 1), mf), np.full((a.size, 1), cf))
        for a_n, n in zip(a[~ok], steps[~ok]):
            accs = np.clip(int(a_n) + window, -acc_bound, acc_bound)
            g = np.floor(accs.astype(np.float32) * mf + np.float32(cf))
            reached = np.flatnonzero(g >= n)
            if reached.size:
                b_n = int(accs[reached[0]])
                if reached[0] == 0 and accs[0] > -acc_bound:
                    return None   # g reached n before the window: farther than a few values
            elif accs[-1] == acc_bound:
                b_n = acc_bound + 1   # g never reaches n in range
            else:
                return None
            lo_, hi_, sign = (int(a_n), b_n, 1) if a_n < b_n else (b_n, int(a_n), -1)
            for v in range(lo_, hi_):
                missed[v] = missed.get(v, 0) + sign
    return {v: d for v, d in missed.items() if d}


class Corrections:
    """The channels [k] with missed accumulator values and those values [most, k] (float32, padded with
    0.5, which no integer accumulator equals) with their corrections [most, k] (int16)."""

    def __init__(self, misses: dict):
        self.channels = np.array(sorted(misses), np.intp)
        most = max(1, max(len(m) for m in misses.values()))
        self.values = np.full((most, self.channels.size), 0.5, np.float32)
        self.deltas = np.zeros((most, self.channels.size), np.int16)
        for i, ch in enumerate(self.channels):
            for j, (v, d) in enumerate(sorted(misses[ch].items())):
                self.values[j, i], self.deltas[j, i] = v, d

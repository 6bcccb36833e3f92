"""EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION (with farmhash Fingerprint64) and RANDOM_MULTINOMIAL."""
from __future__ import annotations

import math

import numpy as np

from nnapi.codes import OperationCode as Op

from ..registry import kernel


# -- EMBEDDING_LOOKUP / HASHTABLE_LOOKUP -------------------------------------------

@kernel(Op.EMBEDDING_LOOKUP)
def embedding_lookup(ctx):
    args = ctx.args
    lookups = args.lookups.array.astype(np.int64).reshape(-1)
    values = args.values.array
    bad = lookups[(lookups < 0) | (lookups >= values.shape[0])]
    if bad.size:
        ctx.fail(f"lookup value {int(bad[0])} is out of range [0, {values.shape[0]})")
    return [values[lookups]]


@kernel(Op.HASHTABLE_LOOKUP)
def hashtable_lookup(ctx):
    args = ctx.args
    lookups = args.lookups.array.reshape(-1)
    keys = args.keys.array.reshape(-1)
    values = args.values.array   # one row per key: the spec's rule
    if np.any(keys[1:] < keys[:-1]):
        ctx.fail("keys must be sorted in ascending order")
    out = np.zeros((lookups.size,) + values.shape[1:], dtype=values.dtype)  # a miss gives zeros
    hits = np.zeros(lookups.size, dtype=np.uint8)
    if keys.size:
        row = np.minimum(np.searchsorted(keys, lookups), keys.size - 1)
        hit = keys[row] == lookups
        out[hit] = values[row[hit]]
        hits[hit] = 1
    return [out, hits]


# -- farmhash Fingerprint64 ----------------------------------------------------------
#
# Android's LSH_PROJECTION hashes (seed, input row) byte strings with farmhash's
# Fingerprint64 (the "na" variant's Hash64); its outputs are sign bits of sums
# of these hashes, so the CTS checks them bit-exactly. The hash below works on
# uint64 numpy arrays, which wrap modulo 2**64 like the C++ code, vectorized
# over many keys of one length (the length selects the code path).

_MASK = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F


def _u(value: int) -> np.uint64:
    return np.uint64(value & _MASK)


def _rotate(v: np.ndarray, shift: int) -> np.ndarray:
    """Rotate right (farmhash's Rotate64)."""
    return (v >> _u(shift)) | (v << _u(64 - shift)) if shift else v


def _shift_mix(v: np.ndarray) -> np.ndarray:
    return v ^ (v >> _u(47))


def _hash_len16(u: np.ndarray, v: np.ndarray, mul) -> np.ndarray:
    a = _shift_mix((u ^ v) * mul)
    b = _shift_mix((v ^ a) * mul)
    return b * mul


class _Keys:
    """Little-endian word reads at one offset of every key (a (count, length) uint8 array)."""

    def __init__(self, keys: np.ndarray):
        self.keys = keys

    def u64(self, offset: int) -> np.ndarray:
        return np.ascontiguousarray(self.keys[:, offset:offset + 8]).view("<u8").reshape(-1).astype(np.uint64)

    def u32(self, offset: int) -> np.ndarray:
        return np.ascontiguousarray(self.keys[:, offset:offset + 4]).view("<u4").reshape(-1).astype(np.uint64)

    def byte(self, offset: int) -> np.ndarray:
        return self.keys[:, offset].astype(np.uint64)


def _len_0_to_16(s: _Keys, n: int, count: int) -> np.ndarray:
    mul = _u(K2 + 2 * n)
    if n >= 8:
        a = s.u64(0) + _u(K2)
        b = s.u64(n - 8)
        c = _rotate(b, 37) * mul + a
        d = (_rotate(a, 25) + b) * mul
        return _hash_len16(c, d, mul)
    if n >= 4:
        return _hash_len16(_u(n) + (s.u32(0) << _u(3)), s.u32(n - 4), mul)
    if n > 0:
        y = s.byte(0) + (s.byte(n >> 1) << _u(8))
        z = _u(n) + (s.byte(n - 1) << _u(2))
        return _shift_mix(y * _u(K2) ^ z * _u(K0)) * _u(K2)
    return np.full(count, K2, dtype=np.uint64)


def _len_17_to_32(s: _Keys, n: int) -> np.ndarray:
    mul = _u(K2 + 2 * n)
    a = s.u64(0) * _u(K1)
    b = s.u64(8)
    c = s.u64(n - 8) * mul
    d = s.u64(n - 16) * _u(K2)
    return _hash_len16(_rotate(a + b, 43) + _rotate(c, 30) + d, a + _rotate(b + _u(K2), 18) + c, mul)


def _len_33_to_64(s: _Keys, n: int) -> np.ndarray:
    mul = _u(K2 + 2 * n)
    a = s.u64(0) * _u(K2)
    b = s.u64(8)
    c = s.u64(n - 8) * mul
    d = s.u64(n - 16) * _u(K2)
    y = _rotate(a + b, 43) + _rotate(c, 30) + d
    z = _hash_len16(y, a + _rotate(b + _u(K2), 18) + c, mul)
    e = s.u64(16) * mul
    f = s.u64(24)
    g = (y + s.u64(n - 32)) * mul
    h = (z + s.u64(n - 24)) * mul
    return _hash_len16(_rotate(e + f, 43) + _rotate(g, 30) + h, e + _rotate(f + a, 18) + g, mul)


def _weak_len32(s: _Keys, offset: int, a: np.ndarray, b: np.ndarray):
    """WeakHashLen32WithSeeds over the 32 bytes at `offset`: a pair of uint64 arrays."""
    w, x, y, z = (s.u64(offset + 8 * i) for i in range(4))
    a = a + w
    b = _rotate(b + a + z, 21)
    c = a
    a = a + x + y
    b = b + _rotate(a, 44)
    return a + z, b + c


def _len_over_64(s: _Keys, n: int, count: int) -> np.ndarray:
    """The 64-bytes-per-step loop (steps run over blocks; each step is vectorized over keys)."""
    def const(v):
        return np.full(count, v & _MASK, dtype=np.uint64)
    seed = 81
    x = const(seed) * _u(K2) + s.u64(0)
    y = const(seed * K1 + 113)
    z = _shift_mix(y * _u(K2) + _u(113)) * _u(K2)
    v = (const(0), const(0))
    w = (const(0), const(0))
    for pos in range(0, ((n - 1) // 64) * 64, 64):
        x = _rotate(x + y + v[0] + s.u64(pos + 8), 37) * _u(K1)
        y = _rotate(y + v[1] + s.u64(pos + 48), 42) * _u(K1)
        x = x ^ w[1]
        y = y + v[0] + s.u64(pos + 40)
        z = _rotate(z + w[0], 33) * _u(K1)
        v = _weak_len32(s, pos, v[1] * _u(K1), x + w[0])
        w = _weak_len32(s, pos + 32, z + w[1], y + s.u64(pos + 16))
        x, z = z, x
    mul = _u(K1) + ((z & _u(0xFF)) << _u(1))
    last = n - 64
    w0 = w[0] + _u((n - 1) & 63)
    v0 = v[0] + w0
    w0 = w0 + v0
    x = _rotate(x + y + v0 + s.u64(last + 8), 37) * mul
    y = _rotate(y + v[1] + s.u64(last + 48), 42) * mul
    x = x ^ (w[1] * _u(9))
    y = y + v0 * _u(9) + s.u64(last + 40)
    z = _rotate(z + w0, 33) * mul
    v = _weak_len32(s, last, v[1] * mul, x + w0)
    w = _weak_len32(s, last + 32, z + w[1], y + s.u64(last + 16))
    x, z = z, x
    return _hash_len16(_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _u(K0) + z,
                       _hash_len16(v[1], w[1], mul) + x, mul)


def fingerprint64(keys: np.ndarray) -> np.ndarray:
    """farmhash Fingerprint64 of each row of a (count, length) uint8 array, as uint64."""
    keys = np.ascontiguousarray(keys, dtype=np.uint8)
    count, n = keys.shape
    s = _Keys(keys)
    with np.errstate(over="ignore"):
        if n <= 16:
            return _len_0_to_16(s, n, count)
        if n <= 32:
            return _len_17_to_32(s, n)
        if n <= 64:
            return _len_33_to_64(s, n)
        return _len_over_64(s, n, count)


# -- LSH_PROJECTION ---------------------------------------------------------------------

_SPARSE_DEPRECATED, _DENSE, _SPARSE = 1, 2, 3


def _lsh_keys(seeds: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Every (seed, row) key: the seed's float32 bytes then the row's bytes, shape (seeds, rows, bytes)."""
    seed_bytes = seeds.astype(np.float32).reshape(-1, 1).view(np.uint8)
    s, r = seed_bytes.shape[0], rows.shape[0]
    return np.concatenate([np.broadcast_to(seed_bytes[:, None, :], (s, r, 4)),
                           np.broadcast_to(rows[None, :, :], (s, r, rows.shape[1]))], axis=-1)


def _lsh_bits(hash_fns: np.ndarray, inp: np.ndarray, weight) -> np.ndarray:
    """Sign bit of sum_i weight[i] * (double)int64(Fingerprint64(seed, row i)), per seed: (num_hash, num_bits)."""
    rows = np.ascontiguousarray(inp).reshape(inp.shape[0], math.prod(inp.shape[1:])).view(np.uint8)
    keys = _lsh_keys(hash_fns.reshape(-1), rows)
    signed = fingerprint64(keys.reshape(-1, keys.shape[-1])).view(np.int64).astype(np.float64)
    terms = signed.reshape(keys.shape[:2])
    if weight is not None:
        terms = terms * weight.astype(np.float64)[None, :]
    # the reference adds the rows one after another; a running sum keeps that order
    score = np.cumsum(terms, axis=1)[:, -1] if terms.shape[1] else np.zeros(terms.shape[0])
    return (score > 0).astype(np.int64).reshape(hash_fns.shape)


@kernel(Op.LSH_PROJECTION)
def lsh_projection(ctx):
    args = ctx.args
    hash_fns, inp = args.hash.array, args.input.array
    weight = args.weight.array.reshape(-1) if args.has("weight") else None
    kind = args.type   # the shapes and the type: the spec's rules
    bits = _lsh_bits(hash_fns, inp, weight)
    if kind == _DENSE:
        return [bits.reshape(-1).astype(np.int32)]
    num_hash, num_bits = bits.shape
    # the first bit is the most significant one of each signature
    signature = (bits << np.arange(num_bits - 1, -1, -1, dtype=np.int64)).sum(axis=1)
    if kind == _SPARSE:  # offsets keep the functions' signatures apart
        signature = signature + np.arange(num_hash, dtype=np.int64) * (1 << num_bits)
    return [signature.astype(np.uint32).view(np.int32)]  # wraps like the reference's int32


# -- RANDOM_MULTINOMIAL ------------------------------------------------------------------

def _generator(seeds: np.ndarray) -> np.random.Generator:
    """Seeded from the two seeds; both zero means "random", as the NNAPI docs say."""
    if not seeds.any():
        return np.random.default_rng()
    return np.random.default_rng([int(s) & 0xFFFFFFFF for s in seeds])


@kernel(Op.RANDOM_MULTINOMIAL)
def random_multinomial(ctx):
    args = ctx.args
    logits = args.input.array.astype(np.float64)
    samples = args.sample_count
    seeds = args.seeds.array.reshape(-1)
    if logits.ndim != 2 or samples < 0 or seeds.size != 2:
        ctx.fail(f"needs 2-D logits, a non-negative sample count and 2 seeds; got logits {list(logits.shape)}, "
                 f"{samples} samples, {seeds.size} seeds")
    batches, classes = logits.shape
    # non-finite logits get probability 0, like the reference
    safe = np.where(np.isfinite(logits), logits, -np.inf)
    peak = safe.max(axis=1, keepdims=True, initial=-np.inf)
    cdf = np.cumsum(np.exp(safe - np.where(np.isfinite(peak), peak, 0.0)), axis=1)
    if batches and samples and (classes == 0 or not np.all(cdf[:, -1] > 0)):
        ctx.fail("every batch row needs a finite logit to sample from")
    cdf /= np.where(cdf[:, -1:] > 0, cdf[:, -1:], 1.0)
    return [_sample(cdf, _generator(seeds).random((batches, samples)))]


def _sample(cdf: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """Class index per uniform draw: the first class whose normalized cdf exceeds it, row by row.

    One searchsorted serves every row: row b is shifted by 2b, so rows occupy
    disjoint increasing ranges [2b, 2b + 1] whatever the rounding; a draw that
    still lands past its row's end is clamped to the row's last class with
    non-zero probability.
    """
    batches, classes = cdf.shape
    offset = 2.0 * np.arange(batches)[:, None]
    found = np.searchsorted((cdf + offset).reshape(-1), (uniform + offset).reshape(-1), side="right")
    index = found.reshape(uniform.shape) - np.arange(batches)[:, None] * classes
    # the first class reaching the row's total is its last class with non-zero probability
    last = np.argmax(cdf >= cdf[:, -1:], axis=1)[:, None] if classes else 0
    return np.minimum(index, last).astype(np.int32)

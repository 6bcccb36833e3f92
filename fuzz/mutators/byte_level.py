"""Byte-level mutators for any file: bit flips, interesting integers, truncation, duplicated / removed /
overwritten byte ranges, appended garbage; and the reproducible rng of one fuzz case."""
from __future__ import annotations

import random
import struct

INTERESTING32 = [0, 1, -1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF,
                 -0x80000000, 0xFFFFFFFF, 1 << 20, 1 << 28]
INTERESTING_INTS = [0, -1, -2, 1, 2, 3, 7, 255, 256, -128, 127, 65535, 65536, 1 << 31, -(1 << 31),
                    (1 << 31) - 1, 1 << 32, 1 << 40, 1 << 62, 1 << 63, 1 << 64, -(1 << 63), 10 ** 30]
INTERESTING_FLOATS = [0.0, -0.0, -1.0, 1e-45, 1e38, 3.4e38, 1e300, float("nan"), float("inf"), float("-inf")]


def bit_flip(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        p = rng.randrange(len(b))
        b[p] ^= 1 << rng.randrange(8)
    return bytes(b)


def interesting_byte(rng, data):
    b = bytearray(data)
    b[rng.randrange(len(b))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF))
    return bytes(b)


def interesting_int32(rng, data):
    b = bytearray(data)
    if len(b) < 4:
        return bit_flip(rng, data)
    p = rng.randrange(0, len(b) - 3)
    if rng.random() < 0.7:
        p -= p % 4  # flatbuffers and the .nnapi header are 4-byte aligned
    v = rng.choice(INTERESTING32 + [len(data), len(data) - p, -len(data)])
    b[p:p + 4] = struct.pack("<I", v & 0xFFFFFFFF)
    return bytes(b)


def truncate(rng, data):
    return data[:rng.randrange(len(data))]


def _range(rng, data):
    a = rng.randrange(len(data))
    n = rng.choice((1, 2, 4, 8, 16, 64, 256))
    return a, min(len(data), a + n)


def duplicate_range(rng, data):
    a, e = _range(rng, data)
    at = rng.randrange(len(data) + 1)
    return data[:at] + data[a:e] + data[at:]


def remove_range(rng, data):
    a, e = _range(rng, data)
    return data[:a] + data[e:]


def overwrite_range(rng, data):
    a, e = _range(rng, data)
    return data[:a] + bytes(rng.randrange(256) for _ in range(e - a)) + data[e:]


def append_garbage(rng, data):
    return data + bytes(rng.randrange(256) for _ in range(rng.choice((1, 7, 64, 1000))))


BYTE_MUTATORS = [bit_flip, interesting_byte, interesting_int32, truncate, duplicate_range, remove_range,
                 overwrite_range, append_garbage]


def mutate_bytes(rng: random.Random, data: bytes, rounds: int | None = None) -> bytes:
    for _ in range(rounds or rng.choice((1, 1, 1, 2, 3))):
        if not data:
            break
        data = rng.choice(BYTE_MUTATORS)(rng, data)
    return data


def case_rng(seed: int, k: int) -> random.Random:
    """The rng of mutation k of a fuzz run with `seed` (reproducible in any order)."""
    return random.Random(seed * 1_000_003 + k)

"""Deterministic mutators for .tflite and .nnapi files.

Every mutator takes a `random.Random` and bytes and returns new bytes, so a
(seed, iteration) pair always reproduces the same input. Three kinds:

* byte level (any file): bit flips, interesting integers, truncation,
  duplicated / removed / overwritten byte ranges;
* .nnapi structural: the JSON metadata or header fields changed and the
  checksum recomputed, so that the input gets past the checksum to the model
  checks (out-of-range indexes, huge or negative dimensions and sizes, wrong
  value lengths, NaN/Inf/zero/negative scales, zero points out of range,
  cycles, self-loops, subgraph reference cycles);
* .tflite structural: the flatbuffer unpacked with LiteRT's object API, one
  field changed (the same list of defects), and packed again.
"""
from __future__ import annotations

import hashlib
import json
import random
import struct

INTERESTING32 = [0, 1, -1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF,
                 -0x80000000, 0xFFFFFFFF, 1 << 20, 1 << 28]
INTERESTING_INTS = [0, -1, -2, 1, 2, 3, 7, 255, 256, -128, 127, 65535, 65536, 1 << 31, -(1 << 31),
                    (1 << 31) - 1, 1 << 32, 1 << 40, 1 << 62, 1 << 63, 1 << 64, -(1 << 63), 10 ** 30]
INTERESTING_FLOATS = [0.0, -0.0, -1.0, 1e-45, 1e38, 3.4e38, 1e300, float("nan"), float("inf"), float("-inf")]


# -- byte level ------------------------------------------------------------------

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


# -- .nnapi ------------------------------------------------------------------------

def nnapi_split(data: bytes):
    """(header fields, metadata dict, blob bytes) of a valid .nnapi file."""
    from nnapi.serialize import HEADER, HEADER_SIZE
    magic, version, flags, meta_len, blob_off, blob_len, digest = HEADER.unpack_from(data)
    meta = json.loads(data[HEADER_SIZE:HEADER_SIZE + meta_len])
    return (magic, version, flags), meta, data[blob_off:blob_off + blob_len]


def nnapi_join(fields, meta, blob: bytes, meta_bytes: bytes | None = None, fix=True, **override) -> bytes:
    """A .nnapi file from parts, with a correct checksum and offsets unless overridden."""
    from nnapi.serialize import ALIGN, HEADER, HEADER_SIZE
    magic, version, flags = fields
    if meta_bytes is None:
        meta_bytes = json.dumps(meta, separators=(",", ":")).encode()  # NaN/Infinity allowed on purpose
    blob_off = (HEADER_SIZE + len(meta_bytes) + ALIGN - 1) // ALIGN * ALIGN
    digest = hashlib.sha256(meta_bytes + blob).digest()
    vals = dict(magic=magic, version=version, flags=flags, meta_len=len(meta_bytes), blob_off=blob_off,
                blob_len=len(blob), digest=digest)
    vals.update(override)
    header = HEADER.pack(vals["magic"], vals["version"] & 0xFFFFFFFF, vals["flags"] & 0xFFFFFFFF,
                         vals["meta_len"] % (1 << 64), vals["blob_off"] % (1 << 64), vals["blob_len"] % (1 << 64),
                         vals["digest"])
    out = bytearray(header.ljust(HEADER_SIZE, b"\0")) + meta_bytes
    out += b"\0" * max(0, blob_off - len(out))
    return bytes(out) + blob


def _leaves(obj, path=()):
    """Every (path, value) in a JSON document, containers included."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            yield from _leaves(v, path + (k,))


def _set(doc, path, value):
    if not path:
        return value
    cur = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return doc


def _weird_value(rng, old):
    choice = rng.random()
    if isinstance(old, bool) or old is None:
        return rng.choice([True, False, None, 0, 1, "x", [], {}])
    if isinstance(old, int):
        if choice < 0.6:
            return rng.choice(INTERESTING_INTS + [old + 1, old - 1, -old])
        return rng.choice([None, "1", 1.5, float("nan"), [old], {}])
    if isinstance(old, float):
        if choice < 0.7:
            return rng.choice(INTERESTING_FLOATS + [-old, old * 1e30])
        return rng.choice([None, "0.5", 1, [old]])
    if isinstance(old, str):
        return rng.choice(["", "\u0000", "x" * 1000, None, 5, []])
    if isinstance(old, list):
        r = rng.random()
        if r < 0.3 and old:
            return old[:-1]
        if r < 0.5 and old:
            return old + [old[-1]]
        if r < 0.6:
            return []
        if r < 0.7:
            return old + [rng.choice(INTERESTING_INTS)]
        if r < 0.8:
            return list(reversed(old))
        return rng.choice([None, {}, 0, "[]", [[[]]]])
    if isinstance(old, dict):
        r = rng.random()
        if r < 0.4 and old:
            k = rng.choice(list(old))
            return {key: v for key, v in old.items() if key != k}
        return rng.choice([None, [], 0, {}])
    return None


def _nnapi_graph_defect(rng, meta):
    """A targeted structural defect: cycles, self-loops, index/size/scale abuse."""
    subs = meta["subgraphs"]
    sg = subs[rng.randrange(len(subs))]
    ops, opnds = sg["operations"], sg["operands"]
    kind = rng.randrange(12)
    if kind == 0 and ops:  # self-loop: an operation reads its own output
        op = rng.choice(ops)
        op["inputs"][rng.randrange(len(op["inputs"]))] = op["outputs"][0]
    elif kind == 1 and len(ops) >= 2:  # cycle between two operations
        a, b = rng.sample(range(len(ops)), 2)
        ops[a]["inputs"][0] = ops[b]["outputs"][0]
        ops[b]["inputs"][0] = ops[a]["outputs"][0]
    elif kind == 2 and ops:  # operand index out of range / negative
        op = rng.choice(ops)
        lst = op[rng.choice(("inputs", "outputs"))]
        if lst:
            lst[rng.randrange(len(lst))] = rng.choice([len(opnds), len(opnds) + 1000, -1, 1 << 40])
    elif kind == 3 and opnds:  # huge / negative / zero dimensions
        o = rng.choice(opnds)
        if o["dims"]:
            o["dims"][rng.randrange(len(o["dims"]))] = rng.choice([0, -1, 1 << 31, 1 << 40, 10 ** 12])
        else:
            o["dims"] = [1 << 20] * rng.randrange(1, 9)
    elif kind == 4 and opnds:  # scale abuse
        rng.choice(opnds)["scale"] = rng.choice(INTERESTING_FLOATS)
    elif kind == 5 and opnds:  # zero point out of range
        rng.choice(opnds)["zero_point"] = rng.choice([-129, 256, 65536, -1, 1 << 40])
    elif kind == 6:  # value region abuse
        consts = [o for o in opnds if o.get("value")]
        if consts:
            v = rng.choice(consts)["value"]
            key = rng.choice(("offset", "length"))
            v[key] = rng.choice([-1, v[key] + 1, v[key] - 1, 1 << 62, 0, 1 << 31])
    elif kind == 7:  # subgraph reference abuse (including self reference)
        refs = [o for s in subs for o in s["operands"] if o.get("subgraph") is not None]
        if refs:
            rng.choice(refs)["subgraph"] = rng.choice([0, len(subs), -1, 1 << 40])
        else:
            meta["main"] = rng.choice([1, -1, len(subs)])
    elif kind == 8 and opnds:  # per-channel quantization abuse
        o = rng.choice(opnds)
        o["channel_quant"] = {"scales": rng.choice([[], [0.0], [float("nan")], [1.0] * 1000, [-1.0]]),
                              "channel_dim": rng.choice([0, 3, -1, 99])}
    elif kind == 9:  # model inputs/outputs abuse
        key = rng.choice(("inputs", "outputs"))
        sg[key] = rng.choice([[], [len(opnds)], [-1], sg[key] + sg[key], [o for op in ops for o in op["outputs"]]])
    elif kind == 10 and opnds:  # type code / lifetime abuse
        o = rng.choice(opnds)
        key = rng.choice(("code", "lifetime"))
        o[key] = rng.choice([-1, 11, 99, 10000, 0, 6, 5, 2])
    elif kind == 11 and ops:  # operation code abuse / duplicated operation
        if rng.random() < 0.5:
            rng.choice(ops)["code"] = rng.choice([-1, 105, 10000, 1 << 40, 0, 101, 82])
        else:
            ops.append(json.loads(json.dumps(rng.choice(ops))))
    return meta


def mutate_nnapi(rng: random.Random, data: bytes) -> bytes:
    """One mutation of a valid .nnapi file (byte level, structural or header)."""
    r = rng.random()
    if r < 0.25:
        return mutate_bytes(rng, data)  # mostly stopped by the checksum
    fields, meta, blob = nnapi_split(data)
    if r < 0.45:
        doc = _nnapi_graph_defect(rng, meta)
        return nnapi_join(fields, doc, blob)
    if r < 0.75:
        items = list(_leaves(meta))
        path, old = items[rng.randrange(len(items))]
        doc = _set(meta, path, _weird_value(rng, old))
        return nnapi_join(fields, doc, blob)
    if r < 0.85:  # byte-level damage of metadata or blob with a recomputed checksum
        from nnapi.serialize import HEADER_SIZE
        meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
        if rng.random() < 0.5 or not blob:
            meta_bytes = mutate_bytes(rng, meta_bytes) or b"{}"
        else:
            blob = mutate_bytes(rng, blob)
        return nnapi_join(fields, None, blob, meta_bytes=meta_bytes)
    # header fields with a valid checksum
    key = rng.choice(("version", "flags", "meta_len", "blob_off", "blob_len", "magic"))
    if key == "magic":
        val = rng.choice([b"NNAPIMDM", b"\0" * 8, b"TFL3TFL3"])
    else:
        val = rng.choice(INTERESTING_INTS + [len(data), len(data) + 64, 127, 129])
        val = val % (1 << (32 if key in ("version", "flags") else 64))
    return nnapi_join(fields, meta, blob, **{key: val})


# -- .tflite -----------------------------------------------------------------------

def _tfl_defect(rng, m):
    import numpy as np
    sg = rng.choice(m.subgraphs)
    tensors, ops = sg.tensors, sg.operators or []
    n = len(tensors)
    kind = rng.randrange(14)
    if kind == 0 and ops:  # self-loop
        op = rng.choice(ops)
        op.inputs = np.array(list(op.inputs[:-1]) + [op.outputs[0]], np.int32)
    elif kind == 1 and len(ops) >= 2:  # cycle
        a, b = rng.sample(range(len(ops)), 2)
        ia, ib = list(ops[a].inputs), list(ops[b].inputs)
        ia[0], ib[0] = ops[b].outputs[0], ops[a].outputs[0]
        ops[a].inputs, ops[b].inputs = np.array(ia, np.int32), np.array(ib, np.int32)
    elif kind == 2 and ops:  # tensor index out of range
        op = rng.choice(ops)
        key = rng.choice(("inputs", "outputs"))
        lst = list(getattr(op, key))
        if lst:
            lst[rng.randrange(len(lst))] = rng.choice([n, n + 100, -2, -1, 0x7FFFFFFF, -0x80000000])
            setattr(op, key, np.array(lst, np.int32))
    elif kind == 3:  # huge / negative / zero dimensions
        t = rng.choice(tensors)
        shape = list(t.shape) if t.shape is not None else []
        if shape and rng.random() < 0.7:
            shape[rng.randrange(len(shape))] = rng.choice([0, -1, -2, 1 << 30, 0x7FFFFFFF, -0x80000000])
        else:
            shape = [rng.choice([1, 2, 65536, 1 << 30])] * rng.randrange(0, 12)
        t.shape = np.array(shape, np.int32)
    elif kind == 4:  # buffer index out of range
        rng.choice(tensors).buffer = rng.choice([len(m.buffers), len(m.buffers) + 7, 0xFFFFFFFF, 0])
    elif kind == 5:  # wrong buffer length
        full = [b for b in m.buffers if b.data is not None and len(b.data)]
        if full:
            b = rng.choice(full)
            d = np.asarray(b.data, np.uint8)
            b.data = rng.choice([d[:-1], d[:1], np.concatenate([d, d]), d[: len(d) // 2], np.zeros(0, np.uint8)])
    elif kind == 6:  # scale abuse
        qs = [t for t in tensors if t.quantization is not None and t.quantization.scale is not None]
        if qs:
            q = rng.choice(qs).quantization
            s = np.array(q.scale, np.float32)
            s[rng.randrange(len(s))] = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e-45])
            if rng.random() < 0.2:
                s = np.concatenate([s, s])
            q.scale = s
    elif kind == 7:  # zero point out of range
        qs = [t for t in tensors if t.quantization is not None and t.quantization.zeroPoint is not None]
        if qs:
            q = rng.choice(qs).quantization
            z = np.array(q.zeroPoint, np.int64)
            z[rng.randrange(len(z))] = rng.choice([-129, 128, 256, 1 << 40, -(1 << 40)])
            q.zeroPoint = z
            if rng.random() < 0.3:
                q.quantizedDimension = rng.choice([-1, 4, 99])
    elif kind == 8:  # tensor type abuse
        rng.choice(tensors).type = rng.choice([5, 8, 11, 13, 14, 17, 18, 50, 127])
    elif kind == 9 and ops:  # opcode index abuse
        rng.choice(ops).opcodeIndex = rng.choice([len(m.operatorCodes), 1 << 31, 0xFFFFFFFF])
    elif kind == 10:  # graph inputs / outputs abuse
        key = rng.choice(("inputs", "outputs"))
        setattr(sg, key, np.array(rng.choice([[], [n], [-1], [0, 0], list(range(n))]), np.int32))
    elif kind == 11 and ops:  # builtin code abuse
        oc = rng.choice(m.operatorCodes)
        oc.builtinCode = rng.choice([0, 32, 200, 1 << 20, -1])
        oc.deprecatedBuiltinCode = rng.choice([0, 127, -1, 32])
    elif kind == 12 and ops:  # duplicated operator: two writers of one tensor
        op = rng.choice(ops)
        sg.operators = list(ops) + [op]
    elif kind == 13 and ops:  # options abuse
        op = rng.choice(ops)
        if op.builtinOptions is not None:
            for attr in vars(op.builtinOptions):
                if rng.random() < 0.5:
                    setattr(op.builtinOptions, attr, rng.choice([-1, 0, 99, 1 << 30, -(1 << 31)]))
        else:
            op.builtinOptionsType = rng.choice([1, 50, 200])
    return m


def mutate_tflite(rng: random.Random, data: bytes) -> bytes:
    """One mutation of a valid .tflite file: byte level or structural (flatbuffer object API)."""
    if rng.random() < 0.5:
        return mutate_bytes(rng, data)
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema
    m = schema.ModelT.InitFromPackedBuf(data, 0)
    for _ in range(rng.choice((1, 1, 2))):
        m = _tfl_defect(rng, m)
    b = flatbuffers.Builder(1024)
    try:
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
    except (struct.error, OverflowError, ValueError, TypeError):
        return mutate_bytes(rng, data)  # a value the flatbuffer encoder itself cannot write
    return bytes(b.Output())


def case_rng(seed: int, k: int) -> random.Random:
    """The rng of mutation k of a fuzz run with `seed` (reproducible in any order)."""
    return random.Random(seed * 1_000_003 + k)


""".nnapi structural mutators: the JSON metadata or header fields changed and the checksum recomputed, so
that the input gets past the checksum to the model checks. Each graph defect is one function in
GRAPH_DEFECTS (out-of-range indexes, huge or negative dimensions and sizes, wrong value lengths,
NaN/Inf/zero/negative scales, zero points out of range, cycles, self-loops, subgraph reference cycles)."""
from __future__ import annotations

import hashlib
import json
import random

from .byte_level import INTERESTING_FLOATS, INTERESTING_INTS, mutate_bytes


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


# -- graph defects (one is drawn per structural mutation)

def self_loop(rng, meta, sg, ops, opnds):
    """Self-loop: an operation reads its own output."""
    if not ops:
        return
    op = rng.choice(ops)
    op["inputs"][rng.randrange(len(op["inputs"]))] = op["outputs"][0]


def cycle(rng, meta, sg, ops, opnds):
    """Cycle between two operations."""
    if len(ops) < 2:
        return
    a, b = rng.sample(range(len(ops)), 2)
    ops[a]["inputs"][0] = ops[b]["outputs"][0]
    ops[b]["inputs"][0] = ops[a]["outputs"][0]


def operand_index_out_of_range(rng, meta, sg, ops, opnds):
    """Operand index out of range / negative."""
    if not ops:
        return
    op = rng.choice(ops)
    lst = op[rng.choice(("inputs", "outputs"))]
    if lst:
        lst[rng.randrange(len(lst))] = rng.choice([len(opnds), len(opnds) + 1000, -1, 1 << 40])


def bad_dimensions(rng, meta, sg, ops, opnds):
    """Huge / negative / zero dimensions."""
    if not opnds:
        return
    o = rng.choice(opnds)
    if o["dims"]:
        o["dims"][rng.randrange(len(o["dims"]))] = rng.choice([0, -1, 1 << 31, 1 << 40, 10 ** 12])
    else:
        o["dims"] = [1 << 20] * rng.randrange(1, 9)


def bad_scale(rng, meta, sg, ops, opnds):
    """Scale abuse."""
    if not opnds:
        return
    rng.choice(opnds)["scale"] = rng.choice(INTERESTING_FLOATS)


def zero_point_out_of_range(rng, meta, sg, ops, opnds):
    """Zero point out of range."""
    if not opnds:
        return
    rng.choice(opnds)["zero_point"] = rng.choice([-129, 256, 65536, -1, 1 << 40])


def value_region_abuse(rng, meta, sg, ops, opnds):
    """Value region abuse."""
    consts = [o for o in opnds if o.get("value")]
    if consts:
        v = rng.choice(consts)["value"]
        key = rng.choice(("offset", "length"))
        v[key] = rng.choice([-1, v[key] + 1, v[key] - 1, 1 << 62, 0, 1 << 31])


def subgraph_reference_abuse(rng, meta, sg, ops, opnds):
    """Subgraph reference abuse (including self reference)."""
    subs = meta["subgraphs"]
    refs = [o for s in subs for o in s["operands"] if o.get("subgraph") is not None]
    if refs:
        rng.choice(refs)["subgraph"] = rng.choice([0, len(subs), -1, 1 << 40])
    else:
        meta["main"] = rng.choice([1, -1, len(subs)])


def channel_quant_abuse(rng, meta, sg, ops, opnds):
    """Per-channel quantization abuse."""
    if not opnds:
        return
    o = rng.choice(opnds)
    o["channel_quant"] = {"scales": rng.choice([[], [0.0], [float("nan")], [1.0] * 1000, [-1.0]]),
                          "channel_dim": rng.choice([0, 3, -1, 99])}


def model_io_abuse(rng, meta, sg, ops, opnds):
    """Model inputs/outputs abuse."""
    key = rng.choice(("inputs", "outputs"))
    sg[key] = rng.choice([[], [len(opnds)], [-1], sg[key] + sg[key], [o for op in ops for o in op["outputs"]]])


def type_code_or_lifetime_abuse(rng, meta, sg, ops, opnds):
    """Type code / lifetime abuse."""
    if not opnds:
        return
    o = rng.choice(opnds)
    key = rng.choice(("code", "lifetime"))
    o[key] = rng.choice([-1, 11, 99, 10000, 0, 6, 5, 2])


def operation_code_abuse(rng, meta, sg, ops, opnds):
    """Operation code abuse / duplicated operation."""
    if not ops:
        return
    if rng.random() < 0.5:
        rng.choice(ops)["code"] = rng.choice([-1, 105, 10000, 1 << 40, 0, 101, 82])
    else:
        ops.append(json.loads(json.dumps(rng.choice(ops))))


GRAPH_DEFECTS = [self_loop, cycle, operand_index_out_of_range, bad_dimensions, bad_scale,
                 zero_point_out_of_range, value_region_abuse, subgraph_reference_abuse, channel_quant_abuse,
                 model_io_abuse, type_code_or_lifetime_abuse, operation_code_abuse]


def graph_defect(rng, meta):
    """A targeted structural defect of one subgraph: cycles, self-loops, index/size/scale abuse."""
    subs = meta["subgraphs"]
    sg = subs[rng.randrange(len(subs))]
    GRAPH_DEFECTS[rng.randrange(len(GRAPH_DEFECTS))](rng, meta, sg, sg["operations"], sg["operands"])
    return meta


def mutate_nnapi(rng: random.Random, data: bytes) -> bytes:
    """One mutation of a valid .nnapi file (byte level, structural or header)."""
    r = rng.random()
    if r < 0.25:
        return mutate_bytes(rng, data)  # mostly stopped by the checksum
    fields, meta, blob = nnapi_split(data)
    if r < 0.45:
        doc = graph_defect(rng, meta)
        return nnapi_join(fields, doc, blob)
    if r < 0.75:
        items = list(_leaves(meta))
        path, old = items[rng.randrange(len(items))]
        doc = _set(meta, path, _weird_value(rng, old))
        return nnapi_join(fields, doc, blob)
    if r < 0.85:  # byte-level damage of metadata or blob with a recomputed checksum
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

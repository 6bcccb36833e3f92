"""Deterministic mutators for .tflite, .nnapi and .onnx files.

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
  field changed (the same list of defects), and packed again;
* .onnx structural: the ModelProto parsed with the onnx package, one to three
  defects (dangling inputs, cycles, missing/mis-sized initializers, huge and
  negative dims, unknown domains and ops, absurd attributes, bad Q/DQ scales
  and zero points, external data escaping the model folder, opset_import
  edge cases), and serialized again.
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



# -- .onnx -------------------------------------------------------------------------

# external-data locations that must never be read (fuzz.targets lays out the files they point at:
# ../secret.bin outside the model folder and link.bin, a symlink to it, inside)
ONNX_ESCAPES = ["../secret.bin", "/etc/hostname", "link.bin", "sub/../../secret.bin", "./../secret.bin",
                "..", ".", "", "/", "missing.bin", "weights.bin\0.txt", "..\\secret.bin", "//etc/hostname",
                "weights.bin/../../secret.bin"]


def _onnx_scales_and_zero_points(g):
    """(scale initializers, zero-point initializers) read by QuantizeLinear/DequantizeLinear nodes."""
    inits = {t.name: t for t in g.initializer}
    scales, zps = [], []
    for n in g.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
            if len(n.input) > 1 and n.input[1] in inits:
                scales.append(inits[n.input[1]])
            if len(n.input) > 2 and n.input[2] in inits:
                zps.append(inits[n.input[2]])
    return scales, zps


def _onnx_count(t) -> int:
    """Element count of an initializer's dims, or 0 when it is absurd (negative or too big to build)."""
    n = 1
    for d in t.dims:
        if d < 0 or n * d > 4096:
            return 0
        n *= d
    return n


def _onnx_set_values(t, values, data_type=None):
    """Replace an initializer's data with `values` (numpy) keeping or changing its element type."""
    import numpy as np
    from onnx import helper
    if data_type is not None:
        t.data_type = data_type
    dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
    arr = np.asarray(values).astype(dtype)
    t.raw_data = arr.tobytes()
    del t.dims[:]
    t.dims.extend(arr.shape)


def _onnx_attr_abuse(rng, n):
    from onnx import helper
    abusive = {
        "kernel_shape": [[-3, -3], [0, 0], [1 << 30, 1 << 30], [3], [3, 3, 3], []],
        "strides": [[0, 0], [-1, -1], [1 << 40, 1], [1]],
        "pads": [[1 << 30] * 4, [-5, -5, -5, -5], [1, 1], [0] * 8, [1 << 62] * 4],
        "dilations": [[0, 0], [-2, -2], [1 << 31, 1 << 31]],
        "group": [0, -1, 1000, 1 << 40],
        "axis": [99, -99, 1 << 40, -(1 << 62)],
        "axes": [[99], [0, 0], [-99], []],
        "transA": [7, -1], "transB": [7, -1],
        "alpha": [float("nan"), float("inf"), -1e38], "beta": [float("nan"), 0.0, float("-inf")],
        "auto_pad": ["BOGUS", "SAME_UPPER", "VALID", ""],
        "ceil_mode": [1, 5, -1],
        "storage_order": [1, 7],
        "perm": [[0, 0, 1, 1], [5, 4, 3, 2], []],
        "saturate": [0, 5],
        "block_size": [-1, 0, 1 << 30],
        "output_dtype": [0, 999, 3],
    }
    r = rng.random()
    if r < 0.6 and n.attribute:
        a = rng.choice(list(n.attribute))
        if a.name in abusive:
            v = rng.choice(abusive[a.name])
        elif a.type == a.INT:
            v = rng.choice(INTERESTING_INTS[:20])
        elif a.type == a.INTS:
            v = [rng.choice(INTERESTING_INTS[:20]) for _ in range(rng.randrange(0, 6))]
        elif a.type == a.FLOAT:
            v = rng.choice(INTERESTING_FLOATS)
        else:
            v = rng.choice([0, "x", [1.5], 3.5])
        n.attribute.remove(a)
        n.attribute.append(helper.make_attribute(a.name, v))
    elif r < 0.8:  # an attribute the op may not expect, with an absurd value
        name = rng.choice(sorted(abusive))
        for a in list(n.attribute):
            if a.name == name:
                n.attribute.remove(a)
        n.attribute.append(helper.make_attribute(name, rng.choice(abusive[name])))
    else:  # a wrongly typed attribute (a string / tensor / graph where an int is expected)
        name = n.attribute[0].name if n.attribute and rng.random() < 0.7 else rng.choice(sorted(abusive))
        for a in list(n.attribute):
            if a.name == name:
                n.attribute.remove(a)
        kind = rng.randrange(4)
        if kind == 0:
            v = "oops"
        elif kind == 1:
            import numpy as np
            from onnx import numpy_helper
            v = numpy_helper.from_array(np.array([1, 2, 3], np.int64))
        elif kind == 2:
            v = helper.make_graph([], "empty", [], [])
        else:
            v = [1.5, float("nan")]
        n.attribute.append(helper.make_attribute(name, v))


def _onnx_defect(rng, m):
    """One targeted structural defect of an onnx.ModelProto (in place)."""
    import numpy as np
    from onnx import TensorProto, helper
    g = m.graph
    nodes, inits = g.node, g.initializer
    kind = rng.randrange(18)
    if kind == 0 and nodes:  # dangling node input
        n = rng.choice(nodes)
        if n.input:
            n.input[rng.randrange(len(n.input))] = rng.choice(["nowhere", "y_missing", " ", "x\0"])
        else:
            n.input.append("nowhere")
    elif kind == 1 and nodes:  # self-loop
        n = rng.choice(nodes)
        if n.input:
            n.input[rng.randrange(len(n.input))] = n.output[0]
    elif kind == 2 and len(nodes) >= 2:  # cycle
        a, b = rng.sample(range(len(nodes)), 2)
        if nodes[a].input and nodes[b].input:
            nodes[a].input[0], nodes[b].input[0] = nodes[b].output[0], nodes[a].output[0]
    elif kind == 3 and inits:  # missing initializer or missing initializer data
        t = rng.choice(inits)
        if rng.random() < 0.5:
            inits.remove(t)
        else:
            t.ClearField("raw_data")
            for f in ("float_data", "int32_data", "int64_data", "double_data"):
                t.ClearField(f)
            if rng.random() < 0.3:
                t.data_location = TensorProto.EXTERNAL
    elif kind == 4 and inits:  # wrong initializer size / raw_data length
        t = rng.choice(inits)
        r = rng.random()
        if r < 0.4 and t.raw_data:
            d = t.raw_data
            t.raw_data = rng.choice([d[:-1], d[:1], d + d, d[: len(d) // 2], b"", d + b"\0"])
        elif r < 0.7 and t.dims:
            t.dims[rng.randrange(len(t.dims))] += rng.choice([1, -1, 5])
        else:
            t.dims.append(rng.choice([2, 0, 7]))
    elif kind == 5:  # huge dims (initializer or declared tensor)
        huge = rng.choice([1 << 31, 1 << 40, (1 << 63) - 1, 10 ** 12, 65536])
        if inits and rng.random() < 0.5:
            t = rng.choice(inits)
            if t.dims:
                t.dims[rng.randrange(len(t.dims))] = huge
            else:
                t.dims.extend([huge])
        else:
            vis = [vi for vi in list(g.input) + list(g.output) + list(g.value_info) if vi.type.HasField("tensor_type")]
            if vis:
                dims = rng.choice(vis).type.tensor_type.shape.dim
                if dims and rng.random() < 0.7:
                    dims[rng.randrange(len(dims))].dim_value = huge
                else:
                    for _ in range(rng.randrange(1, 9)):
                        dims.add().dim_value = rng.choice([huge, 1 << 20])
    elif kind == 6:  # negative / zero dims, symbolic dims
        vis = [vi for vi in list(g.input) + list(g.output) if vi.type.HasField("tensor_type")]
        if inits and rng.random() < 0.4:
            t = rng.choice(inits)
            if t.dims:
                t.dims[rng.randrange(len(t.dims))] = rng.choice([-1, -(1 << 40), 0])
        elif vis:
            dims = rng.choice(vis).type.tensor_type.shape.dim
            if dims:
                d = dims[rng.randrange(len(dims))]
                if rng.random() < 0.6:
                    d.dim_value = rng.choice([-1, -7, 0, -(1 << 62)])
                else:
                    d.dim_param = rng.choice(["N", "", "batch"])
    elif kind == 7 and nodes:  # unknown domains / ops, or another known op in the wrong place
        n = rng.choice(nodes)
        r = rng.random()
        if r < 0.3:
            n.domain = rng.choice(["com.evil", "ai.onnx.ml", "com.microsoft", "ai.onnx"])
            if rng.random() < 0.5:
                m.opset_import.append(helper.make_opsetid(n.domain, rng.choice([1, 99])))
        elif r < 0.6:
            n.op_type = rng.choice(["Frobnicate", "", "conv", "Loop", "If", "Scan", "Constant", "Identity"])
        else:
            n.op_type = rng.choice(["Conv", "Gemm", "MatMul", "Add", "MaxPool", "AveragePool", "Flatten", "Relu",
                                    "QuantizeLinear", "DequantizeLinear", "QLinearConv", "Reshape", "Softmax",
                                    "Transpose", "Concat", "BatchNormalization", "Resize", "ConvTranspose"])
    elif kind == 8 and nodes:  # absurd attributes
        _onnx_attr_abuse(rng, rng.choice(nodes))
    elif kind == 9:  # scale abuse in QuantizeLinear/DequantizeLinear
        scales, _ = _onnx_scales_and_zero_points(g)
        if scales:
            t = rng.choice(scales)
            bad = rng.choice([0.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e-45, 3.4e38])
            n = max(1, _onnx_count(t))
            vals = np.full(n, 0.05, np.float32)
            vals[rng.randrange(n)] = bad
            dims = tuple(t.dims) if _onnx_count(t) else (n,)
            shape = rng.choice([dims, (n + 1,), (n, 1), ()]) if rng.random() < 0.3 else dims
            vals = np.resize(vals, shape)
            _onnx_set_values(t, vals, rng.choice([None, None, TensorProto.FLOAT16, TensorProto.DOUBLE]))
    elif kind == 10:  # zero-point abuse in QuantizeLinear/DequantizeLinear
        _, zps = _onnx_scales_and_zero_points(g)
        if zps:
            t = rng.choice(zps)
            r = rng.random()
            n = _onnx_count(t)
            if r < 0.4:  # out of range for the declared type: int32_data holds uint8/int8 values in ONNX
                t.ClearField("raw_data")
                del t.int32_data[:]
                t.int32_data.extend([rng.choice([300, -129, 256, 1 << 30, -(1 << 31)])] * max(n, 1))
            elif r < 0.7:  # another element type (int32 / int16 / float / uint16 zero point)
                _onnx_set_values(t, np.full(n, rng.choice([300, -1, 70000, 128]), np.int64).reshape(
                    tuple(t.dims)) if n else [], rng.choice([TensorProto.INT32, TensorProto.INT16, TensorProto.FLOAT,
                                                             TensorProto.UINT16, TensorProto.INT4]))
            else:  # wrong count (per-channel zero points of another length)
                _onnx_set_values(t, np.zeros(rng.choice([0, 2, 5, 7]), helper.tensor_dtype_to_np_dtype(t.data_type)))
    elif kind == 11 and inits:  # external data escaping the model folder / offset and length abuse
        ext = [t for t in inits if t.data_location == TensorProto.EXTERNAL]
        t = rng.choice(ext) if ext and rng.random() < 0.8 else rng.choice(inits)
        if t.data_location != TensorProto.EXTERNAL:
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "weights.bin"), ("offset", "16")):
                e = t.external_data.add()
                e.key, e.value = k, v
        info = {e.key: e for e in t.external_data}
        r = rng.random()
        if r < 0.6:
            if "location" not in info:
                info["location"] = t.external_data.add()
                info["location"].key = "location"
            info["location"].value = rng.choice(ONNX_ESCAPES)
        else:
            key = rng.choice(["offset", "length", "checksum", "basepath"])
            if key not in info:
                info[key] = t.external_data.add()
                info[key].key = key
            info[key].value = rng.choice(["-1", "-16", str(1 << 62), str(1 << 70), "abc", "", "1e3", "0x10",
                                          "17", "0", "1000000"])
    elif kind == 12:  # opset_import edge cases
        r = rng.random()
        ops = m.opset_import
        if r < 0.25:
            del ops[:]
        elif r < 0.5 and ops:
            ops[0].version = rng.choice([0, 1, 6, 7, 10, 22, 99, 10 ** 6, -1, 1 << 62])
        elif r < 0.7:
            ops.append(helper.make_opsetid(rng.choice(["", "ai.onnx", "com.evil"]), rng.choice([1, 13, 99])))
        elif ops:
            ops[0].domain = rng.choice(["ai.onnx", "com.evil", "ai.onnx.ml"])
    elif kind == 13:  # graph inputs / outputs abuse
        r = rng.random()
        if r < 0.25 and g.output:
            g.output[0].name = rng.choice(["nowhere", g.input[0].name if g.input else "x", ""])
        elif r < 0.45 and g.output:
            g.output.append(g.output[0])
        elif r < 0.6 and g.input:
            g.input.remove(g.input[0])
        elif r < 0.8:
            vis = list(g.input) + list(g.output)
            if vis:
                vi = rng.choice(vis)
                if rng.random() < 0.5:
                    vi.type.tensor_type.elem_type = rng.choice([0, 8, 9, 16, 23, 999, 3, 7])
                else:
                    vi.type.tensor_type.ClearField("shape")
        elif inits:  # an initializer that is also a graph input, with another declared shape
            t = rng.choice(inits)
            g.input.append(helper.make_tensor_value_info(t.name, TensorProto.FLOAT, [rng.choice([1, 3, 99])]))
    elif kind == 14 and inits:  # initializer element type abuse
        t = rng.choice(inits)
        t.data_type = rng.choice([0, 8, 9, 10, 16, 17, 21, 22, 23, 999, 11, 7, 12])
    elif kind == 15 and nodes:  # duplicated node (two producers) / removed node / reordered nodes
        r = rng.random()
        if r < 0.4:
            g.node.append(rng.choice(nodes))
        elif r < 0.7:
            g.node.remove(rng.choice(nodes))
        else:
            order = list(nodes)
            rng.shuffle(order)
            del g.node[:]
            g.node.extend(order)
    elif kind == 16 and nodes:  # input / output count abuse, optional (empty) inputs
        n = rng.choice(nodes)
        r = rng.random()
        if r < 0.3 and n.input:
            del n.input[rng.randrange(len(n.input)):]
        elif r < 0.55:
            n.input.extend([rng.choice([n.input[0] if n.input else "x", ""])] * rng.randrange(1, 4))
        elif r < 0.75 and n.input:
            n.input[rng.randrange(len(n.input))] = ""
        else:
            n.output.append(rng.choice(["extra", "", n.output[0]]))
    elif kind == 17:  # Constant nodes with odd values
        v = rng.choice([helper.make_tensor("c", TensorProto.FLOAT, [0], []),
                        helper.make_tensor("c", TensorProto.FLOAT, [2], [float("nan"), float("inf")]),
                        helper.make_tensor("c", TensorProto.INT64, [1], [1 << 62]),
                        helper.make_tensor("c", TensorProto.STRING, [1], [b"x"])])
        target = rng.choice(list(inits)) if inits else None
        if target is not None and rng.random() < 0.7:  # replace an initializer by a Constant node
            name = target.name
            inits.remove(target)
            g.node.insert(0, helper.make_node("Constant", [], [name], value=v))
        else:
            attr = rng.choice(["value", "value_float", "value_ints", "sparse_value", "value_string"])
            val = {"value": v, "value_float": float("nan"), "value_ints": [], "value_string": "s",
                   "sparse_value": helper.make_sparse_tensor(v, helper.make_tensor("i", TensorProto.INT64, [0], []),
                                                             [0])}[attr]
            g.node.insert(0, helper.make_node("Constant", [], ["const_out"], **{attr: val}))
            if nodes and nodes[-1].input:
                nodes[-1].input[0] = "const_out"
    return m


def mutate_onnx(rng: random.Random, data: bytes) -> bytes:
    """One mutation of a valid .onnx file: byte level on the protobuf or structural (onnx protobuf API)."""
    r = rng.random()
    if r < 0.3:
        return mutate_bytes(rng, data)
    import warnings

    import onnx
    m = onnx.ModelProto.FromString(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numpy overflow in casts of absurd values: intended
                m = _onnx_defect(rng, m)
        except (ValueError, TypeError, OverflowError, IndexError, KeyError):  # a value protobuf refuses
            pass
    try:
        out = m.SerializeToString()
    except Exception:  # noqa: BLE001 - protobuf's EncodeError and friends: fall back to bytes
        return mutate_bytes(rng, data)
    if r > 0.9:  # structural then byte-level damage
        out = mutate_bytes(rng, out) or out
    return out

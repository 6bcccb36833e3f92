""".tflite structural mutators: the flatbuffer unpacked with LiteRT's object API, one or two defects (each
a function in DEFECTS), and packed again."""
from __future__ import annotations

import random
import struct

import numpy as np

from .byte_level import mutate_bytes


def self_loop(rng, m, sg, tensors, ops):
    """Self-loop."""
    if not ops:
        return
    op = rng.choice(ops)
    op.inputs = np.array(list(op.inputs[:-1]) + [op.outputs[0]], np.int32)


def cycle(rng, m, sg, tensors, ops):
    """Cycle."""
    if len(ops) < 2:
        return
    a, b = rng.sample(range(len(ops)), 2)
    ia, ib = list(ops[a].inputs), list(ops[b].inputs)
    ia[0], ib[0] = ops[b].outputs[0], ops[a].outputs[0]
    ops[a].inputs, ops[b].inputs = np.array(ia, np.int32), np.array(ib, np.int32)


def tensor_index_out_of_range(rng, m, sg, tensors, ops):
    """Tensor index out of range."""
    n = len(tensors)
    if not ops:
        return
    op = rng.choice(ops)
    key = rng.choice(("inputs", "outputs"))
    lst = list(getattr(op, key))
    if lst:
        lst[rng.randrange(len(lst))] = rng.choice([n, n + 100, -2, -1, 0x7FFFFFFF, -0x80000000])
        setattr(op, key, np.array(lst, np.int32))


def bad_dimensions(rng, m, sg, tensors, ops):
    """Huge / negative / zero dimensions."""
    t = rng.choice(tensors)
    shape = list(t.shape) if t.shape is not None else []
    if shape and rng.random() < 0.7:
        shape[rng.randrange(len(shape))] = rng.choice([0, -1, -2, 1 << 30, 0x7FFFFFFF, -0x80000000])
    else:
        shape = [rng.choice([1, 2, 65536, 1 << 30])] * rng.randrange(0, 12)
    t.shape = np.array(shape, np.int32)


def buffer_index_out_of_range(rng, m, sg, tensors, ops):
    """Buffer index out of range."""
    rng.choice(tensors).buffer = rng.choice([len(m.buffers), len(m.buffers) + 7, 0xFFFFFFFF, 0])


def wrong_buffer_length(rng, m, sg, tensors, ops):
    """Wrong buffer length."""
    full = [b for b in m.buffers if b.data is not None and len(b.data)]
    if full:
        b = rng.choice(full)
        d = np.asarray(b.data, np.uint8)
        b.data = rng.choice([d[:-1], d[:1], np.concatenate([d, d]), d[: len(d) // 2], np.zeros(0, np.uint8)])


def bad_scale(rng, m, sg, tensors, ops):
    """Scale abuse."""
    qs = [t for t in tensors if t.quantization is not None and t.quantization.scale is not None]
    if qs:
        q = rng.choice(qs).quantization
        s = np.array(q.scale, np.float32)
        s[rng.randrange(len(s))] = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e-45])
        if rng.random() < 0.2:
            s = np.concatenate([s, s])
        q.scale = s


def zero_point_out_of_range(rng, m, sg, tensors, ops):
    """Zero point out of range."""
    qs = [t for t in tensors if t.quantization is not None and t.quantization.zeroPoint is not None]
    if qs:
        q = rng.choice(qs).quantization
        z = np.array(q.zeroPoint, np.int64)
        z[rng.randrange(len(z))] = rng.choice([-129, 128, 256, 1 << 40, -(1 << 40)])
        q.zeroPoint = z
        if rng.random() < 0.3:
            q.quantizedDimension = rng.choice([-1, 4, 99])


def tensor_type_abuse(rng, m, sg, tensors, ops):
    """Tensor type abuse."""
    rng.choice(tensors).type = rng.choice([5, 8, 11, 13, 14, 17, 18, 50, 127])


def opcode_index_abuse(rng, m, sg, tensors, ops):
    """Opcode index abuse."""
    if not ops:
        return
    rng.choice(ops).opcodeIndex = rng.choice([len(m.operatorCodes), 1 << 31, 0xFFFFFFFF])


def graph_io_abuse(rng, m, sg, tensors, ops):
    """Graph inputs / outputs abuse."""
    n = len(tensors)
    key = rng.choice(("inputs", "outputs"))
    setattr(sg, key, np.array(rng.choice([[], [n], [-1], [0, 0], list(range(n))]), np.int32))


def builtin_code_abuse(rng, m, sg, tensors, ops):
    """Builtin code abuse."""
    if not ops:
        return
    oc = rng.choice(m.operatorCodes)
    oc.builtinCode = rng.choice([0, 32, 200, 1 << 20, -1])
    oc.deprecatedBuiltinCode = rng.choice([0, 127, -1, 32])


def duplicated_operator(rng, m, sg, tensors, ops):
    """Duplicated operator: two writers of one tensor."""
    if not ops:
        return
    op = rng.choice(ops)
    sg.operators = list(ops) + [op]


def options_abuse(rng, m, sg, tensors, ops):
    """Options abuse."""
    if not ops:
        return
    op = rng.choice(ops)
    if op.builtinOptions is not None:
        for attr in vars(op.builtinOptions):
            if rng.random() < 0.5:
                setattr(op.builtinOptions, attr, rng.choice([-1, 0, 99, 1 << 30, -(1 << 31)]))
    else:
        op.builtinOptionsType = rng.choice([1, 50, 200])


DEFECTS = [self_loop, cycle, tensor_index_out_of_range, bad_dimensions, buffer_index_out_of_range,
           wrong_buffer_length, bad_scale, zero_point_out_of_range, tensor_type_abuse, opcode_index_abuse,
           graph_io_abuse, builtin_code_abuse, duplicated_operator, options_abuse]


def defect(rng, m):
    """One targeted structural defect of a tflite ModelT (in place) in one of its subgraphs."""
    sg = rng.choice(m.subgraphs)
    DEFECTS[rng.randrange(len(DEFECTS))](rng, m, sg, sg.tensors, sg.operators or [])
    return m


def mutate_tflite(rng: random.Random, data: bytes) -> bytes:
    """One mutation of a valid .tflite file: byte level or structural (flatbuffer object API)."""
    if rng.random() < 0.5:
        return mutate_bytes(rng, data)
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema
    m = schema.ModelT.InitFromPackedBuf(data, 0)
    for _ in range(rng.choice((1, 1, 2))):
        m = defect(rng, m)
    b = flatbuffers.Builder(1024)
    try:
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
    except (struct.error, OverflowError, ValueError, TypeError):
        return mutate_bytes(rng, data)  # a value the flatbuffer encoder itself cannot write
    return bytes(b.Output())

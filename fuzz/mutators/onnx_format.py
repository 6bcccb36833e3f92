""".onnx structural mutators: the ModelProto parsed with the onnx package, one to three defects (each a
function in DEFECTS: dangling inputs, cycles, missing/mis-sized initializers, huge and negative dims,
unknown domains and ops, absurd attributes, bad Q/DQ scales and zero points, external data escaping the
model folder, opset_import edge cases), and serialized again."""
from __future__ import annotations

import random

import numpy as np

from .byte_level import INTERESTING_FLOATS, INTERESTING_INTS, mutate_bytes

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
            from onnx import numpy_helper
            v = numpy_helper.from_array(np.array([1, 2, 3], np.int64))
        elif kind == 2:
            v = helper.make_graph([], "empty", [], [])
        else:
            v = [1.5, float("nan")]
        n.attribute.append(helper.make_attribute(name, v))


# -- defects (one to three are drawn per structural mutation)

def dangling_input(rng, m, g, nodes, inits):
    """Dangling node input."""
    if not nodes:
        return
    n = rng.choice(nodes)
    if n.input:
        n.input[rng.randrange(len(n.input))] = rng.choice(["nowhere", "y_missing", " ", "x\0"])
    else:
        n.input.append("nowhere")


def self_loop(rng, m, g, nodes, inits):
    """Self-loop."""
    if not nodes:
        return
    n = rng.choice(nodes)
    if n.input:
        n.input[rng.randrange(len(n.input))] = n.output[0]


def cycle(rng, m, g, nodes, inits):
    """Cycle."""
    if len(nodes) < 2:
        return
    a, b = rng.sample(range(len(nodes)), 2)
    if nodes[a].input and nodes[b].input:
        nodes[a].input[0], nodes[b].input[0] = nodes[b].output[0], nodes[a].output[0]


def missing_initializer(rng, m, g, nodes, inits):
    """Missing initializer or missing initializer data."""
    from onnx import TensorProto
    if not inits:
        return
    t = rng.choice(inits)
    if rng.random() < 0.5:
        inits.remove(t)
    else:
        t.ClearField("raw_data")
        for f in ("float_data", "int32_data", "int64_data", "double_data"):
            t.ClearField(f)
        if rng.random() < 0.3:
            t.data_location = TensorProto.EXTERNAL


def wrong_initializer_size(rng, m, g, nodes, inits):
    """Wrong initializer size / raw_data length."""
    if not inits:
        return
    t = rng.choice(inits)
    r = rng.random()
    if r < 0.4 and t.raw_data:
        d = t.raw_data
        t.raw_data = rng.choice([d[:-1], d[:1], d + d, d[: len(d) // 2], b"", d + b"\0"])
    elif r < 0.7 and t.dims:
        t.dims[rng.randrange(len(t.dims))] += rng.choice([1, -1, 5])
    else:
        t.dims.append(rng.choice([2, 0, 7]))


def huge_dims(rng, m, g, nodes, inits):
    """Huge dims (initializer or declared tensor)."""
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


def negative_or_symbolic_dims(rng, m, g, nodes, inits):
    """Negative / zero dims, symbolic dims."""
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


def unknown_or_misplaced_op(rng, m, g, nodes, inits):
    """Unknown domains / ops, or another known op in the wrong place."""
    from onnx import helper
    if not nodes:
        return
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


def absurd_attributes(rng, m, g, nodes, inits):
    """Absurd attributes."""
    if not nodes:
        return
    _onnx_attr_abuse(rng, rng.choice(nodes))


def qdq_scale_abuse(rng, m, g, nodes, inits):
    """Scale abuse in QuantizeLinear/DequantizeLinear."""
    from onnx import TensorProto
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


def qdq_zero_point_abuse(rng, m, g, nodes, inits):
    """Zero-point abuse in QuantizeLinear/DequantizeLinear."""
    from onnx import TensorProto, helper
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


def external_data_abuse(rng, m, g, nodes, inits):
    """External data escaping the model folder / offset and length abuse."""
    from onnx import TensorProto
    if not inits:
        return
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


def opset_import_abuse(rng, m, g, nodes, inits):
    """Opset_import edge cases."""
    from onnx import helper
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


def graph_io_abuse(rng, m, g, nodes, inits):
    """Graph inputs / outputs abuse."""
    from onnx import TensorProto, helper
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


def initializer_type_abuse(rng, m, g, nodes, inits):
    """Initializer element type abuse."""
    if not inits:
        return
    t = rng.choice(inits)
    t.data_type = rng.choice([0, 8, 9, 10, 16, 17, 21, 22, 23, 999, 11, 7, 12])


def node_order_abuse(rng, m, g, nodes, inits):
    """Duplicated node (two producers) / removed node / reordered nodes."""
    if not nodes:
        return
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


def node_arity_abuse(rng, m, g, nodes, inits):
    """Input / output count abuse, optional (empty) inputs."""
    if not nodes:
        return
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


def odd_constant_nodes(rng, m, g, nodes, inits):
    """Constant nodes with odd values."""
    from onnx import TensorProto, helper
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


DEFECTS = [dangling_input, self_loop, cycle, missing_initializer, wrong_initializer_size, huge_dims,
           negative_or_symbolic_dims, unknown_or_misplaced_op, absurd_attributes, qdq_scale_abuse,
           qdq_zero_point_abuse, external_data_abuse, opset_import_abuse, graph_io_abuse,
           initializer_type_abuse, node_order_abuse, node_arity_abuse, odd_constant_nodes]


def defect(rng, m):
    """One targeted structural defect of an onnx.ModelProto (in place)."""
    g = m.graph
    DEFECTS[rng.randrange(len(DEFECTS))](rng, m, g, g.node, g.initializer)
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
                m = defect(rng, m)
        except (ValueError, TypeError, OverflowError, IndexError, KeyError):  # a value protobuf refuses
            pass
    try:
        out = m.SerializeToString()
    except Exception:  # noqa: BLE001 - protobuf's EncodeError and friends: fall back to bytes
        return mutate_bytes(rng, data)
    if r > 0.9:  # structural then byte-level damage
        out = mutate_bytes(rng, out) or out
    return out

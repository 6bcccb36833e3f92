"""Single-op TFLite models and seeded inputs for the elementwise converter tests
(activations, unary math, comparisons, casts)."""
import numpy as np

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

SHAPE = [1, 3, 5, 2]          # distinct extents per dimension
LEVELS = [1, 3, 4, 8]
TYPES = {
    "float32": ("FLOAT32", {}),
    "float16": ("FLOAT16", {}),
    "uint8": ("UINT8", dict(scale=0.05, zero_point=120)),
    "int8": ("INT8", dict(scale=0.04, zero_point=-3)),
    "int32": ("INT32", {}),
    "bool": ("BOOL", {}),
}
_NP = {"FLOAT32": np.float32, "UINT8": np.uint8, "INT8": np.int8, "INT32": np.int32, "BOOL": np.bool_,
       "FLOAT16": np.float16}


def op_model(op, in_types, out_type, options=None, out_q=None, in_shapes=None, consts=None, version=1,
             out_shape=None, **fields):
    """One `op` node; `in_types` are TYPES keys or (tflite type, quantization) pairs (one graph
    input each, unless `consts[k]` gives the stored data of constant input k); `out_q` overrides
    the output quantization (`out_type` may be a pair too)."""
    g = GraphBuilder()
    ins = []
    for k, type_name in enumerate(in_types):
        dt, q = TYPES[type_name] if isinstance(type_name, str) else type_name
        shape = (in_shapes or {}).get(k, SHAPE)
        if consts and k in consts:
            ins.append(g.const(f"c{k}", np.asarray(consts[k], _NP[dt]).reshape(shape), dt, **q))
        else:
            ins.append(g.input(f"x{k}", shape, dt, **q))
    dt, q = TYPES[out_type] if isinstance(out_type, str) else out_type
    out = g.tensor("out", out_shape or SHAPE, dt, **(q if out_q is None else out_q))
    g.op(op, ins, [out], options, version=version, **fields)
    g.output(out)
    return g.finish()


def seeded_inputs(data, seed=0, low=-4.0, high=4.0):
    """Inputs spanning negative and positive values (the harness default is [0, 1))."""
    from converters.tflite import read
    graph = read(data).main
    rng = np.random.default_rng(seed)
    arrays = []
    for i in graph.inputs:
        t = graph.tensors[i]
        dt = np.dtype(t.dtype)
        if dt.kind == "f":
            arrays.append(rng.uniform(low, high, t.shape).astype(dt))
        elif dt == np.bool_:
            arrays.append(rng.integers(0, 2, t.shape).astype(bool))
        elif t.quant is not None:
            info = np.iinfo(dt)
            arrays.append(rng.integers(info.min, info.max + 1, t.shape).astype(dt))
        else:
            arrays.append(rng.integers(int(low), int(high) + 1, t.shape).astype(dt))
    return arrays


def check_levels(data, need, inputs=None, levels=LEVELS, expect_ops=None):
    """At each level: below `need` the node reports feature_level_too_low, from it on it matches LiteRT."""
    inputs = inputs if inputs is not None else seeded_inputs(data)
    for level in levels:
        if level < need:
            node = unsupported_reason(data, level)
            assert node.reason_code == "feature_level_too_low", (level, node.reason)
            continue
        result = assert_matches_litert(data, level, inputs=inputs)
        if expect_ops is not None and level == levels[-1]:
            assert result.nodes[0].nnapi_ops == expect_ops

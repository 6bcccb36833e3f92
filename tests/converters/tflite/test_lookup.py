"""TFLite lookups (GATHER with run-time indices, EMBEDDING_LOOKUP, HASHTABLE_LOOKUP) and the
statically folded builtins (SHAPE, RANK, RANGE, FILL, ONE_HOT) -> NNAPI, compared with LiteRT."""
import numpy as np
import pytest

from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import unsupported_reason
from tests.converters.tflite.ops_common import LEVELS, TYPES, check_levels, ints

# values rows: the harness draws int32 inputs from [0, 4), so 4 rows cover every lookup
ROWS = np.arange(4 * 5 * 2).reshape(4, 5, 2)
VALUES = {"float32": (ROWS / 7).astype(np.float32), "uint8": (ROWS * 3).astype(np.uint8),
          "int8": (ROWS * 3 - 100).astype(np.int8), "int32": (ROWS - 20).astype(np.int32)}


def lookup_model(op, type_name, out_type=None, value_q=None, **options):
    dt, q = TYPES[type_name]
    q = value_q if value_q is not None else q
    odt, oq = TYPES[out_type or type_name]
    g = GraphBuilder()
    idx = g.input("indices", [3], "INT32")
    values = g.const("values", VALUES[type_name], dt, **q)
    out = g.tensor("out", [3, 5, 2], odt, **(oq if out_type else q))
    if op == "GATHER":
        g.op(op, [values, idx], [out], "GatherOptions", **options)
    else:
        g.op(op, [idx, values], [out])
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("op,type_name,need", [
    ("EMBEDDING_LOOKUP", "float32", 1), ("EMBEDDING_LOOKUP", "uint8", 3), ("EMBEDDING_LOOKUP", "int8", 3),
    ("EMBEDDING_LOOKUP", "int32", 3), ("GATHER", "float32", 1), ("GATHER", "uint8", 3), ("GATHER", "int8", 3),
    ("GATHER", "int32", 3)])
def test_runtime_indices(op, type_name, need, level):
    check_levels(lookup_model(op, type_name), need, level)


@pytest.mark.parametrize("level", LEVELS)
def test_hybrid_embedding_lookup(level):
    data = lookup_model("EMBEDDING_LOOKUP", "int8", out_type="float32", value_q=dict(scale=0.25, zero_point=0))
    result = check_levels(data, 3, level)
    if result is not None:
        assert result.nodes[0].nnapi_ops == ["EMBEDDING_LOOKUP", "DEQUANTIZE"]


def test_hybrid_embedding_lookup_with_zero_point_is_reported():
    data = lookup_model("EMBEDDING_LOOKUP", "int8", out_type="float32", value_q=dict(scale=0.25, zero_point=3))
    node = unsupported_reason(data, 8)
    assert node.reason_code == "quantization_type" and "'values'" in node.reason


def gather_nd_model(params_shape, idx_shape, type_name="float32", const_idx=None):
    """GATHER_ND of float32 / quantized params by run-time int32 indices (the harness draws them from [0, 4))
    or by constant ones."""
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    params = g.input("params", params_shape, dt, **q)
    idx = g.input("indices", idx_shape, "INT32") if const_idx is None else g.const("indices", const_idx)
    k = idx_shape[-1]
    out = g.tensor("out", [*idx_shape[:-1], *params_shape[k:]], dt, **q)
    g.op("GATHER_ND", [params, idx], [out], "GatherNdOptions")
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", (3, 4, 8))
@pytest.mark.parametrize("params_shape,idx_shape", [([4, 4, 3], [2, 2]), ([4, 5, 4], [3, 1]), ([4, 4, 4], [2, 2, 3]),
                                                    ([4, 6], [2])])
def test_gather_nd(params_shape, idx_shape, level):
    const = np.random.default_rng(5).integers(0, 4, idx_shape).astype(np.int32)
    check_levels(gather_nd_model(params_shape, idx_shape, const_idx=const), 3, level)
    # one index component is the row itself; more need int32 MUL / ADD (feature level 4)
    check_levels(gather_nd_model(params_shape, idx_shape), 3 if idx_shape[-1] == 1 else 4, level)


@pytest.mark.parametrize("type_name", ["uint8", "int8", "int32"])
def test_gather_nd_types(type_name):
    check_levels(gather_nd_model([4, 4, 3], [2, 2], type_name), 4, 8)


def test_gather_nd_out_of_range_is_reported():
    node = unsupported_reason(gather_nd_model([4, 4, 3], [1, 2], const_idx=np.array([[1, -1]], np.int32)), 8)
    assert node.reason_code == "invalid_node" and "outside" in node.reason


def per_row_model(table, axis=0):
    """EMBEDDING_LOOKUP of int8 rows with one scale per row (AI Edge Quantizer's hybrid form), float output."""
    g = GraphBuilder()
    idx = g.input("indices", [3], "INT32")
    scales = np.linspace(0.03, 2.5, table.shape[axis]).astype(np.float32)
    values = g.const("values", table, "INT8", scale=scales, zero_point=0, axis=axis)
    out = g.tensor("out", [3, *table.shape[1:]], "FLOAT32")
    g.op("EMBEDDING_LOOKUP", [idx, values], [out])
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("shape", [(4, 10), (4, 5, 2), (4, 3, 2, 2)])
def test_per_row_hybrid_embedding_lookup(shape, level):
    table = (np.arange(np.prod(shape)).reshape(shape) * 37 % 255 - 127).astype(np.int8)
    result = check_levels(per_row_model(table), 3, level)
    if result is not None:
        assert result.nodes[0].nnapi_ops == ["EMBEDDING_LOOKUP", "DEQUANTIZE", "EMBEDDING_LOOKUP", "MUL"]


@pytest.mark.parametrize("level", (3, 4, 8))
@pytest.mark.parametrize("per_row", [True, False])
@pytest.mark.parametrize("shape", [(4, 6), (4, 5), (4, 3, 3)])
def test_int4_hybrid_embedding_lookup(shape, per_row, level):
    """INT4 values two to a byte (low nibble first; with an odd row length LiteRT starts row r at byte
    floor(r * cols / 2)), per-row or per-tensor scales: unpacked to an int8 table at conversion."""
    vals = np.random.default_rng(7).integers(-8, 8, size=shape).astype(np.int8)
    nibbles = vals.reshape(-1).astype(np.uint8) & 0xF
    nibbles = np.concatenate([nibbles, np.zeros(len(nibbles) % 2, np.uint8)])
    packed = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)
    g = GraphBuilder()
    idx = g.input("indices", [3], "INT32")
    scale = np.linspace(0.03, 2.5, shape[0]).astype(np.float32) if per_row else 0.37
    values = g.tensor("values", shape, "INT4", scale=scale, zero_point=0, axis=0, data=packed)
    out = g.tensor("out", [3, *shape[1:]], "FLOAT32")
    g.op("EMBEDDING_LOOKUP", [idx, values], [out])
    g.output(out)
    check_levels(g.finish(), 3, level)


def test_per_channel_hybrid_off_the_rows_is_reported():
    table = (np.arange(40).reshape(4, 10) - 20).astype(np.int8)
    node = unsupported_reason(per_row_model(table, axis=1), 8)
    assert node.reason_code == "quantization_type" and "one per row" in node.reason


def hashtable_model(type_name, keys=(0, 1, 3, 7)):
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    lookups = g.input("lookups", [4], "INT32")
    keys = g.const("keys", ints(*keys))
    values = g.const("values", VALUES[type_name][:, :, 0], dt, **q)
    out = g.tensor("out", [4, 5], dt, **q)
    hits = g.tensor("hits", [4], "UINT8")
    g.op("HASHTABLE_LOOKUP", [lookups, keys, values], [out, hits])
    g.output(out, hits)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", ["float32", "int32", "uint8"])
def test_hashtable_lookup(type_name, level):
    check_levels(hashtable_model(type_name), 1, level)


def test_unsorted_hashtable_keys_are_reported():
    # LiteRT binary-searches unsorted keys too (and misses): no sorted table reproduces that
    node = unsupported_reason(hashtable_model("float32", keys=(3, 0, 7, 1)), 8)
    assert node.reason_code == "invalid_node" and "'keys'" in node.reason


# -- folded builtins -----------------------------------------------------------------------

def shape_then_reshape():
    """RESHAPE y to SHAPE(x): the shape is folded and feeds RESHAPE as a constant."""
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    y = g.input("y", [3, 10])
    shape = g.tensor("shape", [4], "INT32")
    out = g.tensor("out", [1, 3, 5, 2])
    g.op("SHAPE", [x], [shape], "ShapeOptions", out_type=2)
    g.op("RESHAPE", [y, shape], [out])
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
def test_shape_folds_into_a_constant(level):
    result = check_levels(shape_then_reshape(), 1, level)
    assert result.nodes[0].nnapi_ops == []  # SHAPE emits nothing
    assert result.nodes[1].nnapi_ops == ["RESHAPE"]


def folded_output_model(op, type_name="float32"):
    """A folded builtin whose result is a graph output (NNAPI needs one copying op there)."""
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    if op in ("SHAPE", "RANK"):
        out = g.tensor("out", [4] if op == "SHAPE" else [], type_name)
        g.op(op, [x], [out], "ShapeOptions" if op == "SHAPE" else None,
             **({"out_type": 4 if type_name == "INT64" else 2} if op == "SHAPE" else {}))
        g.output(out)
        return g.finish()
    if op == "RANGE":
        ins = [g.const(n, np.asarray(v, np.float32)) for n, v in (("start", 0.5), ("limit", 3.2), ("delta", 0.5))]
        out = g.tensor("out", [6], "FLOAT32")
        g.op(op, ins, [out])
    elif op == "FILL":
        out = g.tensor("out", [3, 5], "FLOAT32")
        g.op(op, [g.const("dims", ints(3, 5)), g.const("value", np.asarray(1.5, np.float32))], [out])
    else:  # ONE_HOT along axis 0, float on/off values
        ins = [g.const("indices", ints(0, 2, -1, 1)), g.const("depth", np.asarray(3, np.int32)),
               g.const("on", np.asarray(2.0, np.float32)), g.const("off", np.asarray(-1.0, np.float32))]
        out = g.tensor("out", [3, 4], "FLOAT32")
        g.op(op, ins, [out], "OneHotOptions", axis=0)
    # an ADD with the input keeps x a real model input (LiteRT and NNAPI both need one)
    x_out = g.tensor("x_out", [1, 3, 5, 2])
    g.op("ADD", [x, x], [x_out], "AddOptions")
    g.output(out, x_out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("op,type_name,need", [
    ("SHAPE", "INT32", 4), ("SHAPE", "INT64", 4), ("RANK", "INT32", 4), ("RANGE", "float32", 1),
    ("FILL", "float32", 1), ("ONE_HOT", "float32", 1)])
def test_folded_graph_output(op, type_name, need, level):
    check_levels(folded_output_model(op, type_name), need, level)


def test_fold_needs_static_inputs():
    g = GraphBuilder()
    dims = g.input("dims", [2], "INT32")
    out = g.tensor("out", [-1, -1], shape_signature=[-1, -1])
    g.op("FILL", [dims, g.const("value", np.asarray(1.0, np.float32))], [out])
    g.output(out)
    node = unsupported_reason(g.finish(), 8)
    assert node.reason_code == "non_constant_operand" and "'dims'" in node.reason


def test_folded_shape_of_dynamic_input_is_reported():
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], shape_signature=[-1, 3, 5, 2])
    shape = g.tensor("shape", [4], "INT32")
    g.op("SHAPE", [x], [shape], "ShapeOptions", out_type=2)
    g.output(shape)
    result = convert(g.finish(), feature_level=8)
    assert result.unsupported[0].reason_code == "dynamic_shape"

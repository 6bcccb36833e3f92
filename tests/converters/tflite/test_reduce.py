"""TFLite reductions, ARG_MAX/ARG_MIN and TOPK_V2 -> NNAPI, compared with LiteRT at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason
from tests.converters.tflite.ops_common import LEVELS, TYPES, X, check_levels, ints, need_for, one_op

SHAPE = [2, 3, 5, 4]


def _reduced(axes, keep):
    axes = {a % 4 for a in axes}
    return [1 if d in axes else n for d, n in enumerate(SHAPE)] if keep else \
        [n for d, n in enumerate(SHAPE) if d not in axes]


def reduce_model(op, type_name, axes, keep, out_q=None):
    return one_op(op, SHAPE, [_reduced(axes, keep)], type_name, [X, ints(*axes)], "ReducerOptions",
                  out_q=out_q, keep_dims=keep)


# (op, axes, keep_dims) -> {type: lowest level}; spatial MEAN / REDUCE_MAX become pools below their level
REDUCTIONS = {
    ("MEAN", (1, 2), True): dict(float32=1, uint8=1),
    ("MEAN", (1, 2), False): dict(float32=1, uint8=1),
    ("MEAN", (-1,), False): dict(float32=2, uint8=2),
    ("MEAN", (0, 3), True): dict(float32=2, uint8=2),
    ("SUM", (1,), False): dict(float32=3),
    ("REDUCE_PROD", (2,), True): dict(float32=3),
    ("REDUCE_MAX", (1, 2), True): dict(float32=1, uint8=1),
    ("REDUCE_MAX", (0, -1), False): dict(float32=3, uint8=3),
    ("REDUCE_MIN", (1, 3), False): dict(float32=3, uint8=3),
    ("REDUCE_ANY", (1, 2), False): dict(bool=3),
    ("REDUCE_ALL", (0, 3), True): dict(bool=3),
}
PARAMS = [(key, t) for key, needs in REDUCTIONS.items()
          for t in (("float32", "uint8", "int8") if "uint8" in needs else tuple(needs))]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("key,type_name", PARAMS, ids=[f"{k[0]}-{'_'.join(map(str, k[1]))}-{k[2]}-{t}"
                                                      for k, t in PARAMS])
def test_reduction_matches_litert(key, type_name, level):
    op, axes, keep = key
    check_levels(reduce_model(op, type_name, axes, keep), need_for(REDUCTIONS[key], type_name), level)


@pytest.mark.parametrize("level", [1, 3, 4, 8])
@pytest.mark.parametrize("type_name", ["uint8", "int8"])
@pytest.mark.parametrize("axes", [(-1,), (1, 2)])
def test_quantized_mean_with_its_own_output_scale(type_name, axes, level):
    q = dict(TYPES[type_name][1])
    q = dict(scale=q["scale"] * 0.5, zero_point=q["zero_point"] + 5)
    check_levels(reduce_model("MEAN", type_name, axes, False, out_q=q), 2, level)


@pytest.mark.parametrize("op", ["SUM", "REDUCE_PROD"])
def test_quantized_sum_and_prod_are_reported(op):
    node = unsupported_reason(reduce_model(op, "uint8", (1,), False), 8)
    assert node.reason_code == "quantization_type" and "'x'" in node.reason


def test_spatial_mean_below_level_2_is_a_pool():
    result = check_levels(reduce_model("MEAN", "float32", (1, 2), False), 1, 1)
    assert result.nodes[0].nnapi_ops == ["AVERAGE_POOL_2D", "RESHAPE"]


# -- ARG_MAX / ARG_MIN / TOPK_V2 --------------------------------------------------------------

@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("op,type_name,index_type", [
    ("ARG_MAX", "float32", "INT32"), ("ARG_MAX", "uint8", "INT64"), ("ARG_MAX", "int8", "INT32"),
    ("ARG_MIN", "float32", "INT64"), ("ARG_MIN", "uint8", "INT32"), ("ARG_MIN", "int8", "INT64")])
def test_arg_select(op, type_name, index_type, level):
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    x = g.input("x", SHAPE, dt, **q)
    out = g.tensor("out", [2, 5, 4], index_type)
    options = "ArgMaxOptions" if op == "ARG_MAX" else "ArgMinOptions"
    g.op(op, [x, g.const("axis", ints(-3))], [out], options, output_type=2 if index_type == "INT32" else 4)
    g.output(out)
    result = check_levels(g.finish(), 3, level)
    if result is not None and index_type == "INT64":
        assert "int64 -> int32" in result.io_rewrites["out"]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8"])
def test_topk(type_name, level):
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    x = g.input("x", [3, 5, 7], dt, **q)
    values = g.tensor("values", [3, 5, 4], dt, **q)
    indices = g.tensor("indices", [3, 5, 4], "INT32")
    g.op("TOPK_V2", [x, g.const("k", ints(4))], [values, indices])
    g.output(values, indices)
    # distinct values per row: LiteRT's tie order is not specified
    row = np.arange(7) * (0.1 if type_name == "float32" else 17)
    data = g.finish()
    rng = np.random.default_rng(0)
    x_value = np.stack([rng.permutation(row) for _ in range(15)]).reshape(3, 5, 7)
    x_value = (x_value - 60).astype(np.int8) if type_name == "int8" else x_value.astype(np.dtype(type_name))
    if level < 3:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    assert_matches_litert(data, level, inputs=[x_value])

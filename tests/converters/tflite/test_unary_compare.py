"""TFLite unary math, binary math, comparisons, logical ops, SELECT, casts and
(de)quantization -> NNAPI, compared with LiteRT at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest

from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.elementwise_models import SHAPE, check_levels, op_model, seeded_inputs
from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

POSITIVE_U8 = dict(scale=0.05, zero_point=0)      # quantized inputs with non-negative real values
POSITIVE_I8 = dict(scale=0.04, zero_point=-128)

# (op, type) -> (lowest feature level, NNAPI ops at level 8 or None)
UNARY = {
    ("EXP", "float32"): (3, ["EXP"]), ("EXP", "int8"): (3, ["DEQUANTIZE", "EXP", "QUANTIZE"]),
    ("LOG", "float32"): (3, ["LOG"]), ("LOG", "int8"): (3, None),
    ("SIN", "float32"): (3, ["SIN"]),
    ("SQRT", "float32"): (3, ["SQRT"]), ("SQRT", "int8"): (3, None),
    ("RSQRT", "float32"): (3, ["RSQRT"]), ("RSQRT", "int8"): (3, ["RSQRT"]),
    ("FLOOR", "float32"): (1, ["FLOOR"]), ("CEIL", "float32"): (1, ["NEG", "FLOOR", "NEG"]),
    ("ABS", "float32"): (1, ["ABS"]), ("ABS", "int8"): (3, None), ("ABS", "int32"): (4, ["ABS"]),
    ("NEG", "float32"): (1, ["NEG"]), ("NEG", "int32"): (3, ["NEG"]),
    ("SQUARE", "float32"): (1, ["MUL"]),
    ("ROUND", "float32"): (3, None),
    ("SIGN", "float32"): (3, None), ("SIGN", "int32"): (3, None),
}
_POSITIVE_ONLY = {"LOG", "SQRT", "RSQRT"}
_VERSION = {("ABS", "int8"): 2, ("ABS", "int32"): 5, ("EXP", "int8"): 2, ("LOG", "int8"): 2,
            ("RSQRT", "int8"): 2, ("SIGN", "int32"): 2}


@pytest.mark.parametrize("op,type_name", sorted(UNARY))
def test_unary(op, type_name):
    need, ops = UNARY[(op, type_name)]
    q = None
    if type_name == "int8":
        q = POSITIVE_I8 if op in _POSITIVE_ONLY else dict(scale=0.04, zero_point=-3)
    in_t = ("INT8", q) if q else type_name
    out_q = dict(scale=0.03, zero_point=-20) if type_name == "int8" else None
    data = op_model(op, [in_t], type_name, out_q=out_q, version=_VERSION.get((op, type_name), 1))
    inputs = seeded_inputs(data, low=0.05 if op in _POSITIVE_ONLY else -4.0, high=4.0)
    check_levels(data, need, inputs=inputs, expect_ops=ops)


def test_round_is_half_to_even():
    data = op_model("ROUND", ["float32"], "float32")
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -0.49999997, 1e9 + 0.5, 7.0, -3.2, 2.7, 0.0,
                  4.5, -4.5, 8388609.0, -8388609.0, 0.75, -0.75, 1.25, -1.25, 5.5, 6.5, 1e-30, -1e-30,
                  123.5, 124.5, -123.5, -124.5], np.float32).reshape(SHAPE)
    assert_matches_litert(data, 3, inputs=[x])


BINARY = {
    ("POW", "float32"): 3,
    ("SQUARED_DIFFERENCE", "float32"): 1, ("SQUARED_DIFFERENCE", "int8"): 3, ("SQUARED_DIFFERENCE", "int32"): 4,
    ("FLOOR_DIV", "float32"): 2, ("FLOOR_DIV", "int32"): 4,
    ("FLOOR_MOD", "int32"): 4,
}


@pytest.mark.parametrize("op,type_name", sorted(BINARY))
def test_binary_math(op, type_name):
    out_q = dict(scale=0.2, zero_point=-128) if type_name == "int8" else None
    data = op_model(op, [type_name, type_name], type_name, out_q=out_q, in_shapes={1: [1, 1, 5, 2]},
                    version=2 if type_name == "int8" else 1)
    inputs = seeded_inputs(data, low=0.1 if op == "POW" else -4.0, high=3.0 if op == "POW" else 4.0)
    if op in ("FLOOR_DIV", "FLOOR_MOD"):
        y = inputs[1]
        inputs[1] = np.where(np.abs(y) < 0.5, y + np.asarray(3, y.dtype), y).astype(y.dtype)   # no division by 0
    check_levels(data, BINARY[(op, type_name)], inputs=inputs)


@pytest.mark.parametrize("op,type_name", [("POW", "int32"), ("FLOOR_MOD", "float32")])
def test_binary_math_without_exact_nnapi_form(op, type_name):
    node = unsupported_reason(op_model(op, [type_name, type_name], type_name), 8)
    assert node.reason_code == "operand_type"


@pytest.mark.parametrize("type_name,need,n", [("float32", 1, 3), ("int32", 4, 2)])
def test_add_n(type_name, need, n):
    check_levels(op_model("ADD_N", [type_name] * n, type_name), need)


def test_int8_neg_is_reported():
    # LiteRT negates the stored int8 values, ignoring scale and zero point
    node = unsupported_reason(op_model("NEG", ["int8"], "int8"), 8)
    assert node.reason_code == "operand_type"


# -- MAXIMUM / MINIMUM, comparisons, logical, SELECT ------------------------------------------

@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8", "int32"])
def test_max_min(op, type_name):
    data = op_model(op, [type_name, type_name], type_name, in_shapes={1: [1, 1, 5, 2]},
                    version=2 if type_name == "int8" else 1)
    check_levels(data, 3, expect_ops=[op])


def test_max_with_another_output_scale_is_reported():
    data = op_model("MAXIMUM", ["uint8", "uint8"], "uint8", out_q=dict(scale=0.1, zero_point=0))
    assert unsupported_reason(data, 8).reason_code == "quantization_type"


def _half_equal(data, seed=0):
    """Inputs where about half the elements of the second input equal the first."""
    x, y = seeded_inputs(data, seed)
    mask = np.random.default_rng(seed + 7).integers(0, 2, y.shape).astype(bool)
    return [x, np.where(mask, x.reshape(y.shape) if x.shape == y.shape else y, y).astype(y.dtype)]


COMPARISONS = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8", "int32"])
def test_comparisons(op, type_name):
    data = op_model(op, [type_name, type_name], "bool", version=2 if type_name == "int8" else 1)
    check_levels(data, 3, inputs=_half_equal(data), expect_ops=[op])


@pytest.mark.parametrize("op", ["EQUAL", "NOT_EQUAL"])
def test_bool_equality(op):
    check_levels(op_model(op, ["bool", "bool"], "bool", in_shapes={1: [1, 3, 1, 2]}), 3)


def test_comparison_broadcasts():
    check_levels(op_model("GREATER", ["float32", "float32"], "bool", in_shapes={1: [5, 1]}), 3)


@pytest.mark.parametrize("in1,in2", [(dict(scale=0.05, zero_point=120), dict(scale=0.04, zero_point=120)),
                                     (dict(scale=0.002, zero_point=0), dict(scale=0.002, zero_point=0))])
def test_quantized_comparisons_litert_rescales_are_reported(in1, in2):
    data = op_model("LESS", [("UINT8", in1), ("UINT8", in2)], "bool")
    assert unsupported_reason(data, 8).reason_code == "quantization_type"


@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
def test_logical_binary(op):
    check_levels(op_model(op, ["bool", "bool"], "bool", in_shapes={1: [1, 1, 5, 2]}), 3, expect_ops=[op])


def test_logical_not():
    check_levels(op_model("LOGICAL_NOT", ["bool"], "bool"), 3, expect_ops=["LOGICAL_NOT"])


@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8", "int32"])
def test_select(type_name):
    data = op_model("SELECT", ["bool", type_name, type_name], type_name, version=2 if type_name == "int8" else 1)
    check_levels(data, 3, expect_ops=["SELECT"])


def test_select_v2_broadcasts_condition_and_constant():
    data = op_model("SELECT_V2", ["bool", "float32", "float32"], "float32", in_shapes={0: [1, 1, 5, 1], 2: [2]},
                    consts={2: [-1.0, 2.0]})
    check_levels(data, 3, expect_ops=["LOGICAL_OR", "SELECT"])


@pytest.mark.parametrize("type_name,need", [("uint8", 3), ("int32", 4)])
def test_select_v2_broadcasts_computed_inputs(type_name, need):
    data = op_model("SELECT_V2", ["bool", type_name, type_name], type_name, in_shapes={1: [1, 1, 5, 2]})
    check_levels(data, need, expect_ops=["ADD", "SELECT"])


def test_select_rank1_constant_condition_picks_batches():
    shape = [3, 5, 2]
    data = op_model("SELECT", ["bool", "float32", "float32"], "float32", in_shapes={0: [3], 1: shape, 2: shape},
                    consts={0: [True, False, True]}, out_shape=shape)
    check_levels(data, 3)


def test_select_with_different_quantization_is_reported():
    data = op_model("SELECT", ["bool", "uint8", ("UINT8", dict(scale=0.1, zero_point=3))], "uint8")
    assert unsupported_reason(data, 8).reason_code == "quantization_type"


# -- CAST, QUANTIZE, DEQUANTIZE, ZEROS_LIKE ---------------------------------------------------

CASTS = [("float32", "int32", 1), ("int32", "float32", 1), ("float16", "float32", 5), ("float32", "float16", 5),
         ("bool", "float32", 1), ("float32", "bool", 1), ("int32", "bool", 1), ("uint8", "float32", 1)]


@pytest.mark.parametrize("src,dst,version", CASTS)
def test_cast(src, dst, version):
    data = op_model("CAST", [src], dst, version=version)
    check_levels(data, 3, inputs=seeded_inputs(data, low=-100, high=100))


def test_cast_to_bool_of_nan_inf_and_zeros():
    """NOT_EQUAL(x, 0): NaN and infinities are true, -0.0 is false, as in LiteRT."""
    x = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-30, -2.0, 0.5, 0.0, np.nan] * 3, np.float32)
    assert_matches_litert(op_model("CAST", ["float32"], "bool"), 8, inputs=[x.reshape(SHAPE)])


def test_cast_of_int8_is_reported():
    node = unsupported_reason(op_model("CAST", ["int8"], "float32", version=3), 8)
    assert node.reason_code == "operand_type"


QUANTIZES = [("float32", "uint8", None, 3), ("float32", "int8", None, 3),
             ("uint8", "int8", dict(scale=0.05, zero_point=-8), 1),     # uint8 -> int8 (LiteRT's +-128 case)
             ("int8", "int8", dict(scale=0.07, zero_point=10), 1),
             ("uint8", "uint8", dict(scale=0.03, zero_point=100), 1)]


@pytest.mark.parametrize("src,dst,out_q,need", QUANTIZES)
def test_quantize(src, dst, out_q, need):
    data = op_model("QUANTIZE", [src], dst, out_q=out_q)
    check_levels(data, need, inputs=seeded_inputs(data, low=-6.0, high=6.0))


@pytest.mark.parametrize("src,need,version", [("uint8", 1, 1), ("int8", 1, 2)])
def test_dequantize_runtime(src, need, version):
    check_levels(op_model("DEQUANTIZE", [src], "float32", version=version), need, expect_ops=["DEQUANTIZE"])


def test_dequantize_runtime_float16_is_a_cast():
    check_levels(op_model("DEQUANTIZE", ["float16"], "float32", version=3), 3, expect_ops=["CAST"])


def _folded_weight_model(weight, type_, version, **q):
    """x + DEQUANTIZE(constant w): the DEQUANTIZE folds into a float32 constant."""
    g = GraphBuilder()
    x = g.input("x", SHAPE, "FLOAT32")
    w = g.const("w", weight, type_, **q)
    w32 = g.tensor("w32", list(weight.shape), "FLOAT32")
    g.op("DEQUANTIZE", [w], [w32], version=version)
    out = g.tensor("out", SHAPE, "FLOAT32")
    g.op("ADD", [x, w32], [out], "AddOptions")
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("kind", ["float16", "int8_per_channel", "uint8"])
def test_dequantize_of_constant_weights_is_folded(kind):
    rng = np.random.default_rng(3)
    if kind == "float16":
        data = _folded_weight_model(rng.uniform(-2, 2, (1, 1, 5, 2)).astype(np.float16), "FLOAT16", 3)
    elif kind == "int8_per_channel":
        data = _folded_weight_model(rng.integers(-127, 128, (1, 1, 5, 2)).astype(np.int8), "INT8", 5,
                                    scale=[0.02, 0.03], zero_point=0, axis=3)
    else:
        data = _folded_weight_model(rng.integers(0, 256, (1, 1, 5, 2)).astype(np.uint8), "UINT8", 1,
                                    scale=0.02, zero_point=128)
    for level in (1, 4, 8):
        result = assert_matches_litert(data, level, inputs=seeded_inputs(data))
        assert [n.nnapi_ops for n in result.nodes] == [[], ["ADD"]]
        assert [o.code.name for o in result.model.operations] == ["ADD"]


def test_dequantize_of_a_constant_model_output_is_computed():
    g = GraphBuilder()
    w = g.const("w", np.array([[1.5, -2.25]], np.float16), "FLOAT16")
    out = g.tensor("out", [1, 2], "FLOAT32")
    g.op("DEQUANTIZE", [w], [out], version=3)
    g.output(out)
    result = convert(g.finish(), feature_level=3)
    assert result.complete and result.nodes[0].nnapi_ops == ["CAST"]


@pytest.mark.parametrize("type_name", ["float32", "int32"])
def test_zeros_like(type_name):
    check_levels(op_model("ZEROS_LIKE", [type_name], type_name), 4, expect_ops=["FILL"])


def test_elementwise_chain():
    """sqrt(|x|) where x > 0.5, else ceil(x), then CAST to int32."""
    g = GraphBuilder()
    x = g.input("x", SHAPE, "FLOAT32")
    half = g.const("half", np.array([0.5], np.float32))
    t = {name: g.tensor(name, SHAPE, "FLOAT32") for name in ("abs", "sqrt", "ceil", "picked")}
    cond = g.tensor("cond", SHAPE, "BOOL")
    out = g.tensor("out", SHAPE, "INT32")
    g.op("ABS", [x], [t["abs"]])
    g.op("SQRT", [t["abs"]], [t["sqrt"]])
    g.op("CEIL", [x], [t["ceil"]])
    g.op("GREATER", [x, half], [cond])
    g.op("SELECT_V2", [cond, t["sqrt"], t["ceil"]], [t["picked"]])
    g.op("CAST", [t["picked"]], [out])
    g.output(out)
    check_levels(g.finish(), 3)


@pytest.mark.parametrize("op,version", [("DEQUANTIZE", 7), ("EQUAL", 5), ("GELU", 3), ("CAST", 8)])
def test_newer_versions_are_reported(op, version):
    out = "bool" if op == "EQUAL" else "float32"
    ins = ["float32", "float32"] if op == "EQUAL" else ["uint8" if op == "DEQUANTIZE" else "float32"]
    assert unsupported_reason(op_model(op, ins, out, version=version), 8).reason_code == "operator_version"

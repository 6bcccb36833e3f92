"""TFLite activations -> NNAPI, compared with LiteRT at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.elementwise_models import SHAPE, check_levels, op_model
from tests.converters.tflite.harness import unsupported_reason

# (op, type) -> lowest feature level (int8 below level 4 runs as uint8)
CLAMPS = {(op, t): 1 for op in ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")
          for t in ("float32", "uint8", "int8")}


@pytest.mark.parametrize("op,type_name", sorted(CLAMPS))
def test_clamps(op, type_name):
    check_levels(op_model(op, [type_name], type_name), CLAMPS[(op, type_name)])


@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_0_TO_1"])
@pytest.mark.parametrize("type_name,out_q", [("uint8", dict(scale=0.03, zero_point=10)),
                                             ("int8", dict(scale=0.025, zero_point=-100))])
def test_clamps_requantize_to_the_output_scale(op, type_name, out_q):
    check_levels(op_model(op, [type_name], type_name, out_q=out_q), 1, levels=[1, 4])


SIGMOIDS = [("LOGISTIC", "float32", None, 1), ("LOGISTIC", "uint8", dict(scale=1 / 256, zero_point=0), 1),
            ("LOGISTIC", "int8", dict(scale=1 / 256, zero_point=-128), 1),
            ("TANH", "float32", None, 1), ("TANH", "uint8", dict(scale=1 / 128, zero_point=128), 3),
            ("TANH", "int8", dict(scale=1 / 128, zero_point=0), 3)]


@pytest.mark.parametrize("op,type_name,out_q,need", SIGMOIDS)
def test_logistic_tanh(op, type_name, out_q, need):
    check_levels(op_model(op, [type_name], type_name, out_q=out_q), need)


@pytest.mark.parametrize("level", (3, 4, 8))
@pytest.mark.parametrize("type_name,out_q", [("int8", dict(scale=0.0035, zero_point=-32)),
                                             ("uint8", dict(scale=0.01, zero_point=100))])
def test_tanh_with_another_output_scale_runs_in_float(type_name, out_q, level):
    """PT2E int8 models give TANH their own output scale, which LiteRT takes and NNAPI's TANH does not."""
    check_levels(op_model("TANH", [type_name], type_name, out_q=out_q), 3, levels=(level,),
                 expect_ops=["DEQUANTIZE", "TANH", "QUANTIZE"])


def test_logistic_with_another_output_scale_is_reported():
    data = op_model("LOGISTIC", ["uint8"], "uint8", out_q=dict(scale=1 / 128, zero_point=0))
    assert unsupported_reason(data, 8).reason_code == "quantization_type"


@pytest.mark.parametrize("op,type_name,need,ops_at_8", [
    ("ELU", "float32", 3, ["ELU"]), ("ELU", "int8", 3, ["DEQUANTIZE", "ELU", "QUANTIZE"]),
    ("HARD_SWISH", "float32", 1, ["HARD_SWISH"]), ("HARD_SWISH", "uint8", 3, ["HARD_SWISH"]),
    ("HARD_SWISH", "int8", 3, ["HARD_SWISH"]),
])
def test_elu_hard_swish(op, type_name, need, ops_at_8):
    out_q = dict(scale=0.03, zero_point=-60) if type_name == "int8" else None
    check_levels(op_model(op, [type_name], type_name, out_q=out_q), need, expect_ops=ops_at_8)


# stored alpha values of shape [1, 1, 2] and their quantization
PRELU_ALPHA = {"float32": ([0.25, -0.5], "FLOAT32", {}),
               "uint8": ([133, 138], "UINT8", dict(scale=0.05, zero_point=128)),
               "int8": ([1, -2], "INT8", dict(scale=0.25, zero_point=0))}


@pytest.mark.parametrize("type_name,need", [("float32", 1), ("uint8", 3), ("int8", 3)])
def test_prelu_constant_alpha(type_name, need):
    stored, dt, q = PRELU_ALPHA[type_name]
    data = op_model("PRELU", [type_name, (dt, q)], type_name, in_shapes={1: [1, 1, 2]}, consts={1: stored})
    check_levels(data, need)


def test_prelu_runtime_alpha_float():
    data = op_model("PRELU", ["float32", "float32"], "float32", in_shapes={1: [1, 5, 2]})
    check_levels(data, 1)


@pytest.mark.parametrize("type_name,alpha,need", [("float32", 0.2, 1), ("float32", -1.5, 1),
                                                   ("uint8", 0.2, 3), ("int8", 0.3, 3), ("int8", -0.5, 3)])
def test_leaky_relu(type_name, alpha, need):
    check_levels(op_model("LEAKY_RELU", [type_name], type_name, "LeakyReluOptions", alpha=alpha), need)


@pytest.mark.parametrize("type_name,need", [("float32", 1), ("uint8", 3), ("int8", 3)])
def test_gelu_tanh_approximation(type_name, need):
    check_levels(op_model("GELU", [type_name], type_name, "GeluOptions", version=1 if type_name == "float32" else 2,
                          approximate=True), need)


@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8"])
def test_gelu_erf_form_is_the_erf_composition(type_name):
    """TensorFlow's default GELU (approximate=False): 0.5 x (1 + erf(x / sqrt 2)) on the A&S erf composition,
    within the float tolerance of LiteRT's kernel; ABS/EXP/NEG/LESS/SELECT need feature level 3."""
    data = op_model("GELU", [type_name], type_name, "GeluOptions", version=1 if type_name == "float32" else 2,
                    approximate=False)
    check_levels(data, 3)


def test_newer_version_is_reported():
    node = unsupported_reason(op_model("RELU", ["float32"], "float32", version=4), 8)
    assert node.reason_code == "operator_version"


def test_prelu_per_channel_alpha_is_reported():
    alpha = ("INT8", dict(scale=[0.1, 0.2], zero_point=0, axis=2))
    data = op_model("PRELU", ["int8", alpha], "int8", in_shapes={1: [1, 1, 2]}, consts={1: [1, -2]})
    node = unsupported_reason(data, 8)
    assert node.reason_code == "quantization_type" and "'c1'" in node.reason


def test_int16_relu_is_reported():
    data = op_model("RELU", [("INT16", dict(scale=0.001, zero_point=0))], ("INT16", dict(scale=0.001, zero_point=0)),
                    version=3)
    node = unsupported_reason(data, 8)
    assert node.reason_code == "quantization_type" and "int16 activation" in node.reason


def test_prelu_with_float16_alpha_through_dequantize():
    g = GraphBuilder()
    x = g.input("x", SHAPE, "FLOAT32")
    alpha16 = g.const("alpha16", np.array([[[0.25, -0.5]]], np.float16), "FLOAT16")
    alpha = g.tensor("alpha", [1, 1, 2], "FLOAT32")
    g.op("DEQUANTIZE", [alpha16], [alpha], version=3)
    out = g.tensor("out", SHAPE, "FLOAT32")
    g.op("PRELU", [x, alpha], [out])
    g.output(out)
    check_levels(g.finish(), 1)


def test_quantized_activation_chain():
    """QUANTIZE -> RELU6 (own output scale) -> HARD_SWISH -> LOGISTIC -> DEQUANTIZE."""
    g = GraphBuilder()
    x = g.input("x", SHAPE, "FLOAT32")
    q = g.tensor("q", SHAPE, "INT8", scale=0.05, zero_point=-10)
    r = g.tensor("r", SHAPE, "INT8", scale=6 / 255, zero_point=-128)
    h = g.tensor("h", SHAPE, "INT8", scale=0.03, zero_point=-100)
    s = g.tensor("s", SHAPE, "INT8", scale=1 / 256, zero_point=-128)
    out = g.tensor("out", SHAPE, "FLOAT32")
    g.op("QUANTIZE", [x], [q])
    g.op("RELU6", [q], [r], version=2)
    g.op("HARD_SWISH", [r], [h])
    g.op("LOGISTIC", [h], [s], version=2)
    g.op("DEQUANTIZE", [s], [out], version=2)
    g.output(out)
    check_levels(g.finish(), 3)


def test_gelu_erf_form_on_negative_and_large_inputs():
    from tests.converters.tflite.harness import assert_matches_litert
    data = op_model("GELU", ["float32"], "float32", "GeluOptions", approximate=False)
    x = np.linspace(-6.0, 6.0, int(np.prod(SHAPE)), dtype=np.float32).reshape(SHAPE)
    assert_matches_litert(data, 8, inputs=[x])

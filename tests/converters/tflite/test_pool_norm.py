"""TFLite AVERAGE/MAX/L2_POOL_2D, RESIZE_BILINEAR/NEAREST_NEIGHBOR, L2_NORMALIZATION,
LOCAL_RESPONSE_NORMALIZATION, SOFTMAX and LOG_SOFTMAX -> NNAPI, compared with LiteRT at feature
levels 1, 3, 4, 8."""
import numpy as np
import pytest

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

LEVELS = [1, 3, 4, 8]
TYPES = {
    "float32": ("FLOAT32", {}),
    "uint8": ("UINT8", dict(scale=0.05, zero_point=120)),
    "int8": ("INT8", dict(scale=0.04, zero_point=-3)),
}
# fixed output quantization of the normalizations, per type
L2_OUT = {"uint8": dict(scale=1 / 128, zero_point=128), "int8": dict(scale=1 / 128, zero_point=0)}
SOFTMAX_OUT = {"uint8": dict(scale=1 / 256, zero_point=0), "int8": dict(scale=1 / 256, zero_point=-128)}


def single_op(op, type_name, in_shape, out_shape, options=None, out_q=None, extra_inputs=(), version=1, **fields):
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    x = g.input("x", in_shape, dt, **q)
    extra = [g.const(f"in{k}", v) for k, v in enumerate(extra_inputs)]
    y = g.tensor("y", out_shape, dt, **(q if out_q is None else out_q.get(type_name, {})))
    g.op(op, [x] + extra, [y], options, version=version, **fields)
    g.output(y)
    return g.finish()


def needed(type_name, level, float_level=1, quant_level=1):
    """The feature level a node needs: int8 is rewritten to uint8 below level 4, signed from 4."""
    if type_name == "float32":
        return float_level
    return max(quant_level, 4) if type_name == "int8" and level >= 4 else quant_level


def check(data, type_name, level, float_level=1, quant_level=1, ops=None):
    need = needed(type_name, level, float_level, quant_level)
    if level < need:
        node = unsupported_reason(data, level)
        assert node.reason_code == "feature_level_too_low", node.reason
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].min_feature_level == need
    if ops is not None:
        assert result.nodes[0].nnapi_ops == ops


# -- pooling ---------------------------------------------------------------------------------

POOL_CASES = [("AVERAGE_POOL_2D", "float32"), ("AVERAGE_POOL_2D", "uint8"), ("AVERAGE_POOL_2D", "int8"),
              ("MAX_POOL_2D", "float32"), ("MAX_POOL_2D", "uint8"), ("MAX_POOL_2D", "int8"),
              ("L2_POOL_2D", "float32")]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("op,type_name", POOL_CASES)
def test_pool_same_padding(op, type_name, level):
    data = single_op(op, type_name, [1, 5, 7, 2], [1, 3, 3, 2], "Pool2DOptions",
                     version=2 if type_name == "int8" else 1, padding="SAME", stride_w=3, stride_h=2,
                     filter_width=3, filter_height=2, fused_activation_function="RELU6")
    check(data, type_name, level, ops=[op])


@pytest.mark.parametrize("op,type_name", POOL_CASES[::2])
def test_pool_valid_padding(op, type_name):
    data = single_op(op, type_name, [2, 4, 5, 3], [2, 2, 2, 3], "Pool2DOptions",
                     version=2 if type_name == "int8" else 1, padding="VALID", stride_w=2, stride_h=1,
                     filter_width=2, filter_height=3)
    check(data, type_name, 8)


def test_pool_fused_tanh_is_reported():
    data = single_op("MAX_POOL_2D", "float32", [1, 3, 5, 2], [1, 3, 5, 2], "Pool2DOptions", padding="SAME",
                     stride_w=1, stride_h=1, filter_width=1, filter_height=1, fused_activation_function="TANH")
    assert unsupported_reason(data, 8).reason_code == "fused_activation"


# -- resizing --------------------------------------------------------------------------------

RESIZE_OPTIONS = {"RESIZE_BILINEAR": "ResizeBilinearOptions",
                  "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions"}
# (float level, quantized level) without corner flags; the flags need level 4
RESIZE_LEVELS = {"RESIZE_BILINEAR": (1, 3), "RESIZE_NEAREST_NEIGHBOR": (3, 3)}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", list(TYPES))
@pytest.mark.parametrize("op", list(RESIZE_OPTIONS))
def test_resize(op, type_name, level):
    data = single_op(op, type_name, [1, 3, 5, 2], [1, 7, 4, 2], RESIZE_OPTIONS[op],
                     extra_inputs=[np.array([7, 4], np.int32)], version=2 if type_name == "int8" else 1)
    float_level, quant_level = RESIZE_LEVELS[op]
    check(data, type_name, level, float_level, quant_level, ops=[op])


@pytest.mark.parametrize("level", [3, 4])
@pytest.mark.parametrize("flag", ["align_corners", "half_pixel_centers"])
@pytest.mark.parametrize("op,type_name", [("RESIZE_BILINEAR", "float32"), ("RESIZE_BILINEAR", "uint8"),
                                          ("RESIZE_NEAREST_NEIGHBOR", "float32"), ("RESIZE_NEAREST_NEIGHBOR", "int8")])
def test_resize_corner_flags_need_level_4(op, type_name, flag, level):
    data = single_op(op, type_name, [2, 3, 5, 2], [2, 6, 9, 2], RESIZE_OPTIONS[op],
                     extra_inputs=[np.array([6, 9], np.int32)], version=3, **{flag: True})
    check(data, type_name, level, 4, 4)


def test_resize_runtime_size_is_reported():
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    size = g.input("size", [2], "INT32")
    y = g.tensor("y", [1, 6, 10, 2])
    g.op("RESIZE_BILINEAR", [x, size], [y], "ResizeBilinearOptions")
    g.output(y)
    node = unsupported_reason(g.finish(), 8)
    assert node.reason_code == "non_constant_operand" and "'size'" in node.reason


# -- normalization ---------------------------------------------------------------------------

@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", list(TYPES))
def test_l2_normalization(type_name, level):
    data = single_op("L2_NORMALIZATION", type_name, [1, 3, 5, 2], [1, 3, 5, 2], "L2NormOptions", out_q=L2_OUT,
                     version=2 if type_name == "int8" else 1)
    check(data, type_name, level, quant_level=3, ops=["L2_NORMALIZATION"])


@pytest.mark.parametrize("level", [1, 3])
def test_l2_normalization_other_rank_is_reshaped_below_level_3(level):
    data = single_op("L2_NORMALIZATION", "float32", [3, 5, 2], [3, 5, 2], "L2NormOptions")
    result = assert_matches_litert(data, level)
    ops = ["RESHAPE", "L2_NORMALIZATION", "RESHAPE"] if level < 3 else ["L2_NORMALIZATION"]
    assert result.nodes[0].nnapi_ops == ops


@pytest.mark.parametrize("level", [1, 8])
def test_local_response_normalization(level):
    data = single_op("LOCAL_RESPONSE_NORMALIZATION", "float32", [1, 3, 5, 6], [1, 3, 5, 6],
                     "LocalResponseNormalizationOptions", radius=2, bias=1.5, alpha=0.3, beta=0.75)
    check(data, "float32", level, ops=["LOCAL_RESPONSE_NORMALIZATION"])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", list(TYPES))
def test_softmax(type_name, level):
    data = single_op("SOFTMAX", type_name, [1, 3, 5, 2], [1, 3, 5, 2], "SoftmaxOptions", out_q=SOFTMAX_OUT,
                     version=2 if type_name == "int8" else 1, beta=0.7)
    check(data, type_name, level, ops=["SOFTMAX"])


@pytest.mark.parametrize("level", [1, 3])
@pytest.mark.parametrize("type_name", ["float32", "int8"])
def test_softmax_rank_3_is_reshaped_below_level_3(type_name, level):
    data = single_op("SOFTMAX", type_name, [2, 3, 5], [2, 3, 5], "SoftmaxOptions", out_q=SOFTMAX_OUT,
                     version=2 if type_name == "int8" else 1, beta=1.3)
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == (["RESHAPE", "SOFTMAX", "RESHAPE"] if level < 3 else ["SOFTMAX"])


@pytest.mark.parametrize("level", LEVELS)
def test_log_softmax(level):
    data = single_op("LOG_SOFTMAX", "float32", [1, 3, 5, 2], [1, 3, 5, 2], "LogSoftmaxOptions")
    check(data, "float32", level, float_level=3, ops=["LOG_SOFTMAX"])


def test_quantized_log_softmax_is_reported():
    data = single_op("LOG_SOFTMAX", "int8", [2, 5], [2, 5], "LogSoftmaxOptions", version=2,
                     out_q={"int8": dict(scale=16 / 256, zero_point=127)})
    assert unsupported_reason(data, 8).reason_code == "operand_type"


def test_softmax_non_positive_beta_and_l2_activation_are_reported():
    data = single_op("SOFTMAX", "float32", [2, 5], [2, 5], "SoftmaxOptions", beta=0.0)
    node = unsupported_reason(data, 8)
    assert node.reason_code == "unsupported_attribute" and "beta" in node.reason
    data = single_op("L2_NORMALIZATION", "float32", [2, 5], [2, 5], "L2NormOptions", fused_activation_function="RELU")
    assert unsupported_reason(data, 8).reason_code == "fused_activation"

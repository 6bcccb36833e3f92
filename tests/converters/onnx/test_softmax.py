"""ONNX Softmax and LogSoftmax (ops/activation.py) on every axis: opset 13+ (one axis, in the ONNX layout
and on NHWC operands after a Conv) and opset < 13 (softmax over the flattened axes from `axis` on),
float32, float16 and quantized (QDQ Softmax); compared with onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(13)
SHAPE = [2, 3, 4, 5]


def level(op, opset, axis, rank=4, nhwc=False):
    """The feature level a conversion needs: LOG_SOFTMAX is level 3; SOFTMAX is level 1 after the RESHAPE to
    2-D (opset < 13, axis not the last) and along the operand's last axis of a rank-2 or rank-4 input (NHWC:
    the channels), else 3 (an axis argument)."""
    if op == "LogSoftmax":
        return 3
    if opset < 13 and axis % rank != rank - 1:
        return 1
    return 1 if rank in (2, 4) and axis % rank == (1 if nhwc else rank - 1) else 3


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_every_axis(op, axis, opset):
    data = make_model([h.make_node(op, ["x"], ["y"], axis=axis)], [("x", np.float32, SHAPE)], ["y"], opset=opset)
    verify_levels(data, need_level=level(op, opset, axis))


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [1, 2, -1])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_after_conv(op, axis, opset):
    """NHWC operands: one axis (opset 13), the flattened C, H, W as they lie (opset 11, axis 1) or the
    flattened H, W in the ONNX order (opset 11, axis 2: one TRANSPOSE back, feature level 2)."""
    w = RNG.normal(size=(3, 3, 1, 1)).astype(np.float32)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node(op, ["c"], ["y"], axis=axis)]
    data = make_model(nodes, [("x", np.float32, [1, 3, 4, 5])], ["y"], {"w": w}, opset=opset)
    need = level(op, opset, axis, nhwc=True)
    r = verify_levels(data, need_level=max(need, 2) if (opset, axis) == (11, 2) else need)[8]
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE") == 2  # the graph's input and output


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_rank_1_and_default_axis(op):
    verify_levels(make_model([h.make_node(op, ["x"], ["y"])], [("x", np.float32, [7])], ["y"], opset=13),
                  need_level=level(op, 13, -1, 1))
    verify_levels(make_model([h.make_node(op, ["x"], ["y"])], [("x", np.float32, [2, 3, 4])], ["y"], opset=9),
                  need_level=level(op, 9, 1, 3))  # opset < 13 default axis 1: over 3 x 4


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_float16(op):
    data = make_model([h.make_node(op, ["x"], ["y"], axis=1)], [("x", np.float16, [2, 3, 4])], ["y"], opset=13)
    verify_levels(data, need_level=3)


def test_quantized_softmax_non_last_axis():
    p = {"s": np.float32(0.05), "z": np.uint8(128), "so": np.float32(1 / 256), "zo": np.uint8(0)}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             h.make_node("Softmax", ["d"], ["sm"], axis=1), h.make_node("QuantizeLinear", ["sm", "so", "zo"], ["y"])]
    r = verify_levels(make_model(nodes, [("x", np.float32, [2, 3, 4])], ["y"], p, opset=13), need_level=3)[8]
    assert [o.code.name for o in r.model.operations] == ["QUANTIZE", "SOFTMAX"]


def test_unknown_extents_in_the_coerced_form_are_reported():
    data = make_model([h.make_node("Softmax", ["x"], ["y"], axis=1)], [("x", np.float32, ["n", 3, 4])], ["y"],
                      opset=11)
    u = convert(data, 8).unsupported[0]
    assert u.reason_code == "dynamic_shape" and "known extents" in u.reason


def test_integer_input_is_refused():
    data = make_model([h.make_node("LogSoftmax", ["x"], ["y"])], [("x", np.int32, [2, 3])], ["y"], opset=13)
    assert convert(data, 8).unsupported[0].reason_code == "operand_type"

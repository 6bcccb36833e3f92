"""ONNX Conv, ConvTranspose, pools -> NNAPI, compared with onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(7)
X = ("x", np.float32, [1, 2, 3, 5])  # N=1, C=2, H=3, W=5


def weights(*shape):
    return (RNG.normal(size=shape) * 0.5).astype(np.float32)


CONV_CASES = {
    "plain": (dict(), (4, 2, 3, 3), 1),
    "pads": (dict(pads=[1, 0, 1, 2]), (4, 2, 3, 3), 1),
    "same_upper": (dict(auto_pad="SAME_UPPER", strides=[2, 2]), (3, 2, 2, 3), 1),
    "same_lower": (dict(auto_pad="SAME_LOWER", strides=[1, 2]), (3, 2, 2, 2), 1),
    "valid_stride": (dict(auto_pad="VALID", strides=[1, 2]), (3, 2, 1, 2), 1),
    "dilated": (dict(dilations=[1, 2], pads=[0, 1, 0, 1]), (4, 2, 2, 2), 3),
    "depthwise": (dict(group=2, pads=[1, 1, 1, 1]), (4, 1, 3, 3), 1),
    "grouped": (dict(group=2), (4, 1, 1, 1), 1),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("bias", [True, False])
def test_conv_matches_onnxruntime(case, bias):
    attrs, wshape, need = CONV_CASES[case]
    inits = {"w": weights(*wshape)}
    ins = ["x", "w"]
    if bias:
        inits["b"] = weights(wshape[0])
        ins.append("b")
    data = make_model([h.make_node("Conv", ins, ["y"], **attrs)], [X], ["y"], inits)
    if case == "grouped":  # group 2 with 1 input channel per group is depthwise; 4 inputs make it grouped
        data = make_model([h.make_node("Conv", ins, ["y"], group=2)], [("x", np.float32, [1, 4, 3, 5])], ["y"],
                          dict(inits, w=weights(4, 2, 1, 1)))
        need = 3
    results = verify_levels(data, need_level=need)
    op = {"depthwise": "DEPTHWISE_CONV_2D", "grouped": "GROUPED_CONV_2D"}.get(case, "CONV_2D")
    assert op in results[8].nodes[0].nnapi_ops


def test_conv_padding_code_is_implicit_when_equivalent():
    data = make_model([h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [X], ["y"],
                      {"w": weights(3, 2, 3, 3)})
    conv = next(o for o in convert(data, 8).model.operations if o.code.name == "CONV_2D")
    assert len(conv.inputs) == 7  # input, filter, bias, padding code, stride_w, stride_h, fuse


def test_conv_relu_fuses_and_relu6_clip_fuses():
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Relu", ["c"], ["r"]),
             h.make_node("Conv", ["r", "w2"], ["c2"]), h.make_node("Clip", ["c2", "lo", "hi"], ["y"])]
    data = make_model(nodes, [X], ["y"], {"w": weights(3, 2, 1, 1), "w2": weights(2, 3, 1, 1),
                                         "lo": np.float32(0), "hi": np.float32(6)})
    r = verify_levels(data, levels=(8,))[8]
    assert [o.code.name for o in r.model.operations] == ["TRANSPOSE", "CONV_2D", "CONV_2D", "TRANSPOSE"]
    fuses = [r.model.operands[o.inputs[-1]].value.item() for o in r.model.operations if o.code.name == "CONV_2D"]
    assert fuses == [1, 3]  # RELU, RELU6


def test_relu_not_fused_when_producer_output_is_also_used():
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Relu", ["c"], ["r"]),
             h.make_node("Add", ["c", "r"], ["y"])]
    data = make_model(nodes, [X], ["y"], {"w": weights(2, 2, 1, 1)})
    r = verify_levels(data, levels=(8,))[8]
    assert "RELU" in [o.code.name for o in r.model.operations]


def test_conv_batchnorm_is_folded():
    c = 3
    inits = {"w": weights(c, 2, 3, 3), "s": RNG.random(c).astype(np.float32) + 0.5, "b": weights(c),
             "m": weights(c), "v": RNG.random(c).astype(np.float32) + 0.5}
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             h.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"], epsilon=1e-3)]
    r = verify_levels(make_model(nodes, [X], ["y"], inits))[8]
    assert [o.code.name for o in r.model.operations] == ["TRANSPOSE", "CONV_2D", "TRANSPOSE"]


CT_CASES = {
    "plain": dict(strides=[2, 2]),
    "pads": dict(strides=[2, 1], pads=[1, 0, 0, 1]),
    "output_padding": dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
    "same_upper": dict(strides=[2, 2], auto_pad="SAME_UPPER"),
    "same_lower": dict(strides=[2, 1], auto_pad="SAME_LOWER"),
}


@pytest.mark.parametrize("case", sorted(CT_CASES))
def test_conv_transpose_matches_onnxruntime(case):
    data = make_model([h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **CT_CASES[case])], [X], ["y"],
                      {"w": weights(2, 3, 3, 3), "b": weights(3)})
    verify_levels(data, need_level=3)


POOL_CASES = {
    "max": ("MaxPool", dict(kernel_shape=[2, 2])),
    "max_strided_pads": ("MaxPool", dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1])),
    "max_ceil": ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    "max_same_lower": ("MaxPool", dict(kernel_shape=[2, 3], auto_pad="SAME_LOWER")),
    "avg": ("AveragePool", dict(kernel_shape=[2, 3])),
    "avg_pads_excluded": ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    "avg_pads_included": ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    "avg_ceil": ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    "avg_same_upper": ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER")),
}


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool_matches_onnxruntime(case):
    op, attrs = POOL_CASES[case]
    data = make_model([h.make_node(op, ["x"], ["y"], **attrs)], [X], ["y"], opset=19)
    verify_levels(data, need_level=2 if "included" in case else 1)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool_matches_onnxruntime(op):
    verify_levels(make_model([h.make_node(op, ["x"], ["y"])], [X], ["y"]), need_level=1)


def test_ceil_mode_with_count_include_pad_is_reported():
    data = make_model([h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1,
                                   count_include_pad=1)], [X], ["y"])
    node = convert(data, 8).unsupported[0]
    assert node.reason_code == "unsupported_attribute" and "ceil_mode" in node.reason


def test_lrn_matches_onnxruntime():
    data = make_model([h.make_node("LRN", ["x"], ["y"], size=3, alpha=0.2, beta=0.6, bias=1.5)],
                      [("x", np.float32, [1, 4, 3, 5])], ["y"])
    verify_levels(data, need_level=1)


def test_conv_transpose_same_with_output_padding_is_reported():
    data = make_model([h.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER",
                                   output_padding=[1, 1])], [X], ["y"], {"w": weights(2, 3, 3, 3)})
    node = convert(data, 8).unsupported[0]
    assert node.reason_code == "unsupported_attribute" and "output_padding" in node.reason

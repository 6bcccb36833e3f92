"""converters/model_folds.py: a PAD of height and width read only by convolutions becomes their explicit
padding. Folded conversions match LiteRT / onnxruntime and give exactly the unfolded conversion's outputs."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper as h, numpy_helper

import converters.convert as driver
import executor.runtime as runtime
from converters.onnx import convert as convert_onnx
from tests.converters.onnx.harness import parity as onnx_parity
from converters.running import random_source_inputs, run_converted
from converters.tflite import convert as convert_tflite

from tests.converters.tflite.test_conv import Net
from tests.converters.tflite.harness import assert_matches_litert

CONV_OPTIONS = {"CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions"}


FOLDS = ("fold_pads_into_convolutions", "fold_reshape_chains", "fold_reshapes_into_fully_connected")


def _unfolded(convert, data, **kw):
    """The conversion without the folds (the driver's fold steps replaced by ones that fold nothing)."""
    saved = {name: getattr(driver, name) for name in FOLDS}
    for name in FOLDS:
        setattr(driver, name, lambda model, keep: [])
    try:
        return convert(data, **kw)
    finally:
        for name, fn in saved.items():
            setattr(driver, name, fn)


def _same_outputs(folded, unfolded, seeds=(0, 1)):
    """The plain kernels give identical outputs. So do the fast paths for integers; a float convolution's
    fast path may pick another GEMM form for another padding (its sums in another order, within the
    documented float bound), so float outputs agree to float32 rounding there."""
    for seed in seeds:
        x = random_source_inputs(folded.source.main, seed)
        saved, runtime.FAST_PATHS = runtime.FAST_PATHS, False
        try:
            plain = list(zip(run_converted(folded, x), run_converted(unfolded, x)))
        finally:
            runtime.FAST_PATHS = saved
        for a, b in plain:
            np.testing.assert_array_equal(a, b)
        for a, b in zip(run_converted(folded, x), run_converted(unfolded, x)):
            if a.dtype.kind == "f":
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(b).max(initial=0))))
            else:
                np.testing.assert_array_equal(a, b)


def _codes(result):
    return [op.code.name for op in result.model.operations]


def pad_conv_tflite(type_name, op, pads, padding, stride=1, dilation=1, readers=1, pad_value=None):
    """x [1, 7, 8, 3] -> PAD (or PADV2 with `pad_value`) -> `readers` convolutions (3x3 filters)."""
    net = Net(type_name)
    x = net.input([1, 7, 8, 3])
    g = net.g
    shape = [1, 7 + pads[1][0] + pads[1][1], 8 + pads[2][0] + pads[2][1], 3 + pads[3][0] + pads[3][1]]
    padded = net.act("padded", shape, q=net.in_q)
    inputs = [x, g.const("paddings", np.array(pads, np.int32))]
    if pad_value is not None:
        inputs.append(g.const("value", np.array([pad_value], np.float32 if type_name == "float32" else np.int8),
                              **net.in_q))
    g.op("PADV2" if pad_value is not None else "PAD", inputs, [padded])
    outs = []
    for k in range(readers):
        axis = 3 if op == "DEPTHWISE_CONV_2D" else 0
        w_shape = [1, 3, 3, shape[3]] if op == "DEPTHWISE_CONV_2D" else [4, 3, 3, shape[3]]
        w, scales = net.weights(f"w{k}", w_shape, axis)
        eff = 2 * dilation + 1
        size = [(n + stride - 1) // stride if padding == "SAME" else (n - eff + stride) // stride for n in shape[1:3]]
        y = net.act(f"y{k}", [1, *size, w_shape[axis]])
        opts = dict(padding=padding, stride_w=stride, stride_h=stride, dilation_w_factor=dilation,
                    dilation_h_factor=dilation, fused_activation_function="RELU")
        if op == "DEPTHWISE_CONV_2D":
            opts["depth_multiplier"] = 1
        g.op(op, [padded, w, net.bias(f"b{k}", w_shape[axis], scales)], [y], CONV_OPTIONS[op], **opts)
        outs.append(y)
    return net.finish(*outs)


SPATIAL = [[0, 0], [1, 2], [2, 1], [0, 0]]


@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8", "int8pc"])
@pytest.mark.parametrize("op,padding,stride,dilation", [
    ("DEPTHWISE_CONV_2D", "VALID", 2, 1), ("DEPTHWISE_CONV_2D", "SAME", 1, 2), ("CONV_2D", "SAME", 2, 1),
    ("CONV_2D", "VALID", 1, 1)])
def test_pad_folds_into_the_convolution(type_name, op, padding, stride, dilation):
    data = pad_conv_tflite(type_name, op, SPATIAL, padding, stride, dilation)
    folded = assert_matches_litert(data, 8)
    assert _codes(folded) == [op]
    pad_node = folded.nodes[0]
    assert pad_node.supported and f"folded into node 1 ({op}" in pad_node.note, pad_node.note
    assert pad_node.note.endswith("as its explicit padding")
    unfolded = _unfolded(convert_tflite, data)
    assert _codes(unfolded) == ["PAD", op]
    _same_outputs(folded, unfolded)


def test_pad_read_by_two_convolutions_folds_into_both():
    data = pad_conv_tflite("int8", "DEPTHWISE_CONV_2D", SPATIAL, "VALID", readers=2)
    folded = assert_matches_litert(data, 8)
    assert _codes(folded) == ["DEPTHWISE_CONV_2D", "DEPTHWISE_CONV_2D"]
    _same_outputs(folded, _unfolded(convert_tflite, data))


@pytest.mark.parametrize("why,pads,pad_value", [
    ("pads channels", [[0, 0], [1, 1], [1, 1], [0, 2]], None),
    ("pads with a value other than zero", SPATIAL, 0.5),
])
def test_pad_that_changes_values_is_kept(why, pads, pad_value):
    data = pad_conv_tflite("float32", "CONV_2D", pads, "VALID", pad_value=pad_value)
    result = assert_matches_litert(data, 8)
    assert _codes(result)[0] in ("PAD", "PAD_V2"), why
    assert "folded" not in result.nodes[0].note


def test_padv2_with_the_zero_point_folds():
    data = pad_conv_tflite("int8", "DEPTHWISE_CONV_2D", SPATIAL, "VALID", pad_value=-3)   # the input's zero point
    folded = assert_matches_litert(data, 8)
    assert _codes(folded) == ["DEPTHWISE_CONV_2D"]
    _same_outputs(folded, _unfolded(convert_tflite, data))


def test_pad_that_is_a_model_output_is_kept():
    net = Net("float32")
    x = net.input([1, 5, 5, 2])
    padded = net.act("padded", [1, 7, 7, 2])
    net.g.op("PAD", [x, net.g.const("p", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))], [padded])
    w, _ = net.weights("w", [3, 3, 3, 2])
    y = net.act("y", [1, 5, 5, 3])
    net.g.op("CONV_2D", [padded, w, net.bias("b", 3, None)], [y], "Conv2DOptions", padding="VALID",
             stride_w=1, stride_h=1)
    result = assert_matches_litert(net.finish(padded, y), 8)
    assert _codes(result) == ["PAD", "CONV_2D"]


def _onnx_pad_conv(pads, mode="constant", value=None, group=1, at_input=False):
    """x -> 1x1 Conv -> Pad -> 3x3 Conv, stride 2 -> Relu (NCHW); at_input: x -> Pad -> 3x3 Conv, strides
    (2, 1) -> Relu, converted as PAD -> TRANSPOSE (the NCHW input to NHWC) -> CONV_2D."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads"),
             numpy_helper.from_array(rng.standard_normal((4, 4 // group, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B")]
    if not at_input:
        inits.append(numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "W0"))
    pad_inputs = ["x" if at_input else "x0", "pads"]
    if value is not None:
        inits.append(numpy_helper.from_array(np.array(value, np.float32), "value"))
        pad_inputs.append("value")
    nodes = [h.make_node("Conv", ["x", "W0"], ["x0"], kernel_shape=[1, 1]),   # (NHWC from here on)
             h.make_node("Pad", pad_inputs, ["p"], mode=mode),
             h.make_node("Conv", ["p", "W", "B"], ["y"], kernel_shape=[3, 3], strides=[2, 1] if at_input else [2, 2],
                         group=group),
             h.make_node("Relu", ["y"], ["out"])][at_input:]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 10])],
                         [h.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]).SerializeToString()


@pytest.mark.parametrize("group", [1, 4])
def test_onnx_pad_folds_into_conv(group):
    data = _onnx_pad_conv([0, 0, 1, 2, 0, 0, 2, 1], group=group)
    folded = convert_onnx(data)
    assert "PAD" not in _codes(folded), _codes(folded)
    assert "folded into node 2 (Conv" in folded.nodes[1].note, folded.nodes[1].note
    assert onnx_parity(folded, data, seeds=(0, 1)) == []
    unfolded = _unfolded(convert_onnx, data)
    assert "PAD" in _codes(unfolded)
    _same_outputs(folded, unfolded)


def test_onnx_reflect_pad_is_kept():
    data = _onnx_pad_conv([0, 0, 1, 1, 0, 0, 1, 1], mode="reflect")
    result = convert_onnx(data)
    assert "folded into" not in result.nodes[1].note
    assert onnx_parity(result, data) == []


def test_tflite_reshape_folds_into_fully_connected():
    """[1, 2, 2, 3] -> RESHAPE [1, 12] -> FULLY_CONNECTED: the FULLY_CONNECTED flattens the 4-D input itself."""
    for type_name in ("float32", "int8"):
        net = Net(type_name)
        x = net.input([1, 2, 2, 3])
        flat = net.act("flat", [1, 12], q=net.in_q)
        net.g.op("RESHAPE", [x, net.g.const("shape", np.array([1, 12], np.int32))], [flat])
        w, scales = net.weights("w", [5, 12])
        y = net.act("y", [1, 5])
        net.g.op("FULLY_CONNECTED", [flat, w, net.bias("b", 5, scales)], [y], "FullyConnectedOptions")
        data = net.finish(y)
        folded = assert_matches_litert(data, 8)
        assert _codes(folded) == ["FULLY_CONNECTED"], type_name
        assert "folded into node 1 (FULLY_CONNECTED" in folded.nodes[0].note
        unfolded = _unfolded(convert_tflite, data)
        assert _codes(unfolded) == ["RESHAPE", "FULLY_CONNECTED"]
        _same_outputs(folded, unfolded)


def test_onnx_flatten_folds_into_gemm():
    rng = np.random.default_rng(1)
    nodes = [h.make_node("Conv", ["x", "W0"], ["c"], kernel_shape=[1, 1]), h.make_node("Flatten", ["c"], ["f"]),
             h.make_node("Gemm", ["f", "W", "B"], ["y"], transB=1)]
    inits = [numpy_helper.from_array(rng.standard_normal((3, 2, 1, 1)).astype(np.float32), "W0"),
             numpy_helper.from_array(rng.standard_normal((4, 3 * 2 * 2)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B")]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
                         [h.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]).SerializeToString()
    folded = convert_onnx(data)
    assert onnx_parity(folded, data, seeds=(0, 1)) == []
    unfolded = _unfolded(convert_onnx, data)
    assert len(folded.model.operations) < len(unfolded.model.operations), (_codes(folded), _codes(unfolded))
    _same_outputs(folded, unfolded)



@pytest.mark.parametrize("group", [1, 4])
def test_onnx_pad_before_the_layout_transpose_folds_into_conv(group):
    data = _onnx_pad_conv([0, 0, 1, 2, 0, 0, 2, 1], group=group, at_input=True)
    unfolded = _unfolded(convert_onnx, data)
    assert _codes(unfolded)[:3] == ["PAD", "TRANSPOSE", "DEPTHWISE_CONV_2D" if group == 4 else "CONV_2D"]
    folded = convert_onnx(data)
    assert "PAD" not in _codes(folded), _codes(folded)
    assert "moved past the TRANSPOSE" in folded.nodes[0].note, folded.nodes[0].note
    assert onnx_parity(folded, data, seeds=(0, 1)) == []
    _same_outputs(folded, unfolded)


@pytest.mark.parametrize("why,pads,value", [("pads the batch", [1, 0, 1, 1, 0, 0, 1, 1], None),
                                            ("pads with 1.0", [0, 0, 1, 1, 0, 0, 1, 1], 1.0)])
def test_onnx_pad_before_the_layout_transpose_that_changes_values_is_kept(why, pads, value):
    data = _onnx_pad_conv(pads, value=value, at_input=True)
    result = convert_onnx(data)
    assert "PAD" in _codes(result) or "PAD_V2" in _codes(result), why
    assert onnx_parity(result, data) == []


def _onnx_reshapes(nodes, inits, x_shape=(2, 3, 4)):
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                         [h.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                         [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in inits.items()])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]).SerializeToString()


def test_onnx_reshape_chain_folds_to_one_reshape():
    """x -> Reshape [6, 4] -> Reshape [4, 6] -> Relu: one RESHAPE, the same outputs."""
    data = _onnx_reshapes([h.make_node("Reshape", ["x", "s1"], ["a"]), h.make_node("Reshape", ["a", "s2"], ["b"]),
                           h.make_node("Relu", ["b"], ["y"])], {"s1": [6, 4], "s2": [4, 6]})
    folded, unfolded = convert_onnx(data), _unfolded(convert_onnx, data)
    assert _codes(unfolded) == ["RESHAPE", "RESHAPE", "RELU"]
    assert _codes(folded) == ["RESHAPE", "RELU"]
    assert "folded into node 1 (Reshape" in folded.nodes[0].note
    assert onnx_parity(folded, data, seeds=(0, 1)) == []
    _same_outputs(folded, unfolded)


def test_onnx_reshape_to_its_own_shape_folds_away():
    """x [2, 3, 4] -> Relu -> Reshape [2, 3, 4] -> Add x: the RESHAPE goes, the ADD reads the RELU."""
    data = _onnx_reshapes([h.make_node("Relu", ["x"], ["r"]), h.make_node("Reshape", ["r", "s"], ["a"]),
                           h.make_node("Add", ["a", "x"], ["y"])], {"s": [2, 3, 4]})
    folded, unfolded = convert_onnx(data), _unfolded(convert_onnx, data)
    assert _codes(unfolded) == ["RELU", "RESHAPE", "ADD"]
    assert _codes(folded) == ["RELU", "ADD"]
    assert onnx_parity(folded, data, seeds=(0, 1)) == []
    _same_outputs(folded, unfolded)


@pytest.mark.parametrize("why", ["model output", "another reader", "new shape"])
def test_reshapes_that_matter_are_kept(why):
    """A RESHAPE that is a model output, read by a non-RESHAPE after changing the shape, or feeding a
    Relu with a new shape stays."""
    if why == "model output":
        nodes = [h.make_node("Reshape", ["x", "s1"], ["y"])]
    elif why == "another reader":
        nodes = [h.make_node("Reshape", ["x", "s1"], ["a"]), h.make_node("Reshape", ["a", "s2"], ["b"]),
                 h.make_node("Relu", ["a"], ["c"]), h.make_node("Add", ["b", "c"], ["y"])]
    else:
        nodes = [h.make_node("Reshape", ["x", "s1"], ["a"]), h.make_node("Relu", ["a"], ["y"])]
    data = _onnx_reshapes(nodes, {"s1": [6, 4], "s2": [6, 4]})
    folded, unfolded = convert_onnx(data), _unfolded(convert_onnx, data)
    kept = _codes(folded).count("RESHAPE")
    assert kept == (_codes(unfolded).count("RESHAPE") - (1 if why == "another reader" else 0)), _codes(folded)
    assert kept >= 1
    assert onnx_parity(folded, data, seeds=(0, 1)) == []
    _same_outputs(folded, unfolded)

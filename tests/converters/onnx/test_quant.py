"""Quantized ONNX: QLinear* ops, QuantizeLinear/DequantizeLinear and QDQ groups -> quantized NNAPI ops,
compared with onnxruntime within one stored unit at feature levels 1, 3, 4, 8 (int8 becomes uint8 below
level 4)."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(11)
SHAPE = [1, 2, 3, 5]
ZP = {np.int8: (3, -5), np.uint8: (120, 130)}  # (input zero point, output zero point)


def qparams(dt, prefix, scale, zp):
    return {f"{prefix}s": np.float32(scale), f"{prefix}z": np.asarray(zp, dt)}


def qconv(dt, per_channel, group=1, cin=2, n=4, bias=True):
    ws = (RNG.random(n) * 0.02 + 0.01).astype(np.float32) if per_channel else np.float32(0.02)
    inits = {**qparams(dt, "x", 0.05, ZP[dt][0]), **qparams(dt, "y", 0.2, ZP[dt][1]),
             "w": RNG.integers(-100, 100, (n, cin // group, 3, 3)).astype(np.int8), "ws": ws,
             "wz": np.zeros(n, np.int8) if per_channel else np.int8(0),
             "b": RNG.integers(-500, 500, n).astype(np.int32)}
    node = h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + ["b"] * bias, ["y"],
                       pads=[1, 1, 1, 1], group=group)
    return make_model([node], [("x", dt, [1, cin, 3, 5])], ["y"], inits)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_qlinear_conv(dt, per_channel, bias):
    verify_levels(qconv(dt, per_channel, bias=bias), need_level=3 if per_channel else 1)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_qlinear_conv_depthwise(dt):
    r = verify_levels(qconv(dt, True, group=2, n=4), need_level=3)
    assert "DEPTHWISE_CONV_2D" in r[8].nodes[0].nnapi_ops


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_qlinear_matmul(dt):
    inits = {**qparams(dt, "a", 0.05, ZP[dt][0]), **qparams(np.int8, "b", 0.03, 0), **qparams(dt, "y", 0.3, ZP[dt][1]),
             "b": RNG.integers(-100, 100, (5, 3)).astype(np.int8)}
    node = h.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    verify_levels(make_model([node], [("a", dt, [2, 5])], ["y"], inits))


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_add_mul(dt, op):
    inits = {**qparams(dt, "a", 0.05, ZP[dt][0]), **qparams(dt, "b", 0.04, ZP[dt][1]),
             **qparams(dt, "y", 0.1 if op == "QLinearAdd" else 0.02, ZP[dt][0])}
    node = h.make_node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain="com.microsoft")
    data = make_model([node], [("a", dt, SHAPE), ("b", dt, [1, 1, 3, 5])], [("y", dt, SHAPE)], inits, ms_opset=1)
    verify_levels(data, need_level=1)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_qlinear_sigmoid_output_scale_1_256(dt):
    inits = {**qparams(dt, "x", 0.05, ZP[dt][0]), **qparams(dt, "y", 1 / 256, 0 if dt == np.uint8 else -128)}
    node = h.make_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
    verify_levels(make_model([node], [("x", dt, SHAPE)], [("y", dt, SHAPE)], inits, ms_opset=1), need_level=1)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_qlinear_sigmoid_other_output_scale_computes_in_float(dt):
    """LOGISTIC's output scale is fixed at 1/256: another scale is met in float (one rounding, as
    onnxruntime's table), not by requantizing the 1/256 result (two roundings)."""
    inits = {**qparams(dt, "x", 0.05, ZP[dt][0]), **qparams(dt, "y", 0.01, ZP[dt][1])}
    node = h.make_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
    r = verify_levels(make_model([node], [("x", dt, SHAPE)], [("y", dt, SHAPE)], inits, ms_opset=1),
                      levels=(4, 8))
    assert [o.code.name for o in r[8].model.operations] == ["DEQUANTIZE", "LOGISTIC", "QUANTIZE"]


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_qlinear_average_pool(dt):
    inits = {**qparams(dt, "x", 0.05, ZP[dt][0]), **qparams(dt, "y", 0.05, ZP[dt][0])}
    node = h.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                       kernel_shape=[2, 2], pads=[0, 0, 1, 1])
    data = make_model([node], [("x", dt, SHAPE)], [("y", dt, [1, 2, 3, 5])], inits, ms_opset=1)
    verify_levels(data, need_level=1)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_quantize_dequantize(dt):
    inits = qparams(dt, "q", 0.01, ZP[dt][0])
    nodes = [h.make_node("QuantizeLinear", ["x", "qs", "qz"], ["q"]),
             h.make_node("DequantizeLinear", ["q", "qs", "qz"], ["y"])]
    verify_levels(make_model(nodes, [("x", np.float32, SHAPE)], ["y"], inits, opset=13), need_level=3)
    verify_levels(make_model(nodes[:1], [("x", np.float32, SHAPE)], ["q"], inits, opset=13), need_level=3)


def qdq(name, dt, scale, zp, inits):
    """QuantizeLinear -> DequantizeLinear of tensor `name`: returns (nodes, dequantized name)."""
    inits.update(qparams(dt, name + "_", scale, zp))
    return [h.make_node("QuantizeLinear", [name, name + "_s", name + "_z"], [name + "_q"]),
            h.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"], [name + "_dq"])], name + "_dq"


def qdq_model(dt):
    """x -> Q/DQ -> Conv (DQ int8 per-channel weights, DQ int32 bias) -> Q/DQ -> Add(skip) -> Q/DQ
    -> GlobalAveragePool -> Q -> y: every core is a quantized NNAPI op."""
    inits = {}
    nodes, xdq = qdq("x", dt, 0.02, ZP[dt][0], inits)
    n = 2
    ws = (RNG.random(n) * 0.01 + 0.01).astype(np.float32)
    inits.update(w=RNG.integers(-100, 100, (n, 2, 3, 3)).astype(np.int8), ws=ws, wz=np.zeros(n, np.int8),
                 b=RNG.integers(-300, 300, n).astype(np.int32), bs=(ws * 0.02).astype(np.float32),
                 bz=np.zeros(n, np.int32))
    nodes += [h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["w_dq"], axis=0),
              h.make_node("DequantizeLinear", ["b", "bs", "bz"], ["b_dq"], axis=0),
              h.make_node("Conv", [xdq, "w_dq", "b_dq"], ["c"], pads=[1, 1, 1, 1])]
    more, cdq = qdq("c", dt, 0.05, ZP[dt][1], inits)
    nodes += more + [h.make_node("Add", [cdq, xdq], ["s"])]
    more, sdq = qdq("s", dt, 0.06, ZP[dt][0], inits)
    nodes += more + [h.make_node("GlobalAveragePool", [sdq], ["g"])]
    inits.update(qparams(dt, "g_", 0.06, ZP[dt][0]))
    nodes.append(h.make_node("QuantizeLinear", ["g", "g_s", "g_z"], ["y"]))
    return make_model(nodes, [("x", np.float32, SHAPE)], ["y"], inits, opset=13)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_qdq_groups_become_quantized_ops(dt):
    data = qdq_model(dt)
    results = verify_levels(data, levels=(3, 4, 8), need_level=3)  # per-channel weights need level 3
    ops = [o.code.name for o in results[8].model.operations]
    assert ops == ["QUANTIZE", "TRANSPOSE", "CONV_2D", "ADD", "AVERAGE_POOL_2D", "RESHAPE"], ops
    assert "DEQUANTIZE" not in ops


def test_qdq_core_unsupported_falls_back_consistently():
    """A QDQ core that cannot convert leaves its Q and DQ nodes converting on their own (--partial)."""
    inits = {}
    nodes, xdq = qdq("x", np.uint8, 0.02, 128, inits)
    nodes += [h.make_node("Hardmax", [xdq], ["e"])]  # no NNAPI mapping at all
    more, _ = qdq("e", np.uint8, 0.02, 128, inits)
    data = make_model(nodes + more, [("x", np.float32, SHAPE)], ["e_dq"], inits, opset=13)
    r = convert(data, 8, partial=True)
    assert [n.op for n in r.unsupported] == ["Hardmax"]
    assert len(r.partitions) == 2 and all(p.model is not None for p in r.partitions)


def test_quantized_softmax_output_scale():
    dt = np.uint8
    inits = {}
    nodes, xdq = qdq("x", dt, 0.05, 128, inits)
    nodes.append(h.make_node("Softmax", [xdq], ["s"], axis=-1))
    more, _ = qdq("s", dt, 1 / 256, 0, inits)
    data = make_model(nodes + more, [("x", np.float32, SHAPE)], ["s_dq"], inits, opset=13)
    r = verify_levels(data, need_level=3)
    assert "SOFTMAX" in [o.code.name for o in r[8].model.operations]


def test_qdq_group_cut_by_a_fallback_node_converts_in_float():
    """An unsupported node between a DQ and its core would split the group across partitions: the core
    then converts in float with standalone QUANTIZE/DEQUANTIZE, and every partition builds."""
    inits = qparams(np.uint8, "", 0.05, 128)
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "s", "z"], ["a"]),
             h.make_node("Hardmax", ["x"], ["hm"]),
             h.make_node("QuantizeLinear", ["hm", "s", "z"], ["hq"]),
             h.make_node("DequantizeLinear", ["hq", "s", "z"], ["b"]),
             h.make_node("Add", ["a", "b"], ["sum"]), h.make_node("QuantizeLinear", ["sum", "s", "z"], ["y"])]
    data = make_model(nodes, [("x", np.float32, SHAPE)], ["y"], inits, opset=13)
    r = convert(data, 8, partial=True)
    assert [n.op for n in r.unsupported] == ["Hardmax"]
    assert [n.nnapi_ops for n in r.nodes if n.op == "DequantizeLinear"] == [["DEQUANTIZE"]] * 2
    assert [p.nodes for p in r.partitions] == [[0, 1], [3, 4, 5, 6]] and all(p.model for p in r.partitions)


# op nodes reading "a_dq" and writing "o"; output scale (None: the input's); NNAPI op expected
QDQ_SINGLE = {
    "MaxPool": ([h.make_node("MaxPool", ["a_dq"], ["o"], kernel_shape=[2, 2])], None, "MAX_POOL_2D"),
    "AveragePool": ([h.make_node("AveragePool", ["a_dq"], ["o"], kernel_shape=[2, 3])], None, "AVERAGE_POOL_2D"),
    "Concat": ([h.make_node("Concat", ["a_dq", "a_dq"], ["o"], axis=1)], None, "CONCATENATION"),
    "Reshape": ([h.make_node("Reshape", ["a_dq", "shape"], ["o"])], None, "RESHAPE"),
    "Sigmoid": ([h.make_node("Sigmoid", ["a_dq"], ["o"])], (1 / 256, 0), "LOGISTIC"),
    "Relu": ([h.make_node("Relu", ["a_dq"], ["o"])], None, "RELU"),
    "Mul": ([h.make_node("Mul", ["a_dq", "a_dq"], ["o"])], (0.02, 100), "MUL"),
    "Transpose": ([h.make_node("Transpose", ["a_dq"], ["o"], perm=[0, 2, 3, 1])], None, "TRANSPOSE"),
}


@pytest.mark.parametrize("case", sorted(QDQ_SINGLE))
def test_qdq_single_op_is_quantized(case):
    nodes, out_q, nnapi_op = QDQ_SINGLE[case]
    inits = {"shape": np.array([1, 6, 5], np.int64)}
    pre, _ = qdq("a", np.uint8, 0.05, 120, inits)
    post, _ = qdq("o", np.uint8, *(out_q or (0.05, 120)), inits)
    data = make_model(pre + nodes + post[:1], [("a", np.float32, SHAPE)], ["o_q"], inits, opset=13)
    r = verify_levels(data, levels=(3, 4, 8), need_level=3)  # the uint8 output: within one stored unit
    ops = [o.code.name for o in r[8].model.operations]
    assert ops[0] == "QUANTIZE" and nnapi_op in ops and "DEQUANTIZE" not in ops, ops


@pytest.mark.parametrize("op", ["MatMul", "Gemm"])
def test_qdq_matmul_gemm_is_fully_connected(op):
    inits = {"w": RNG.integers(-100, 100, (5, 3)).astype(np.int8), "ws": np.float32(0.02), "wz": np.int8(0)}
    pre, adq = qdq("a", np.int8, 0.05, 3, inits)
    nodes = pre + [h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["w_dq"]), h.make_node(op, [adq, "w_dq"], ["o"])]
    post, _ = qdq("o", np.int8, 0.1, -2, inits)
    data = make_model(nodes + post[:1], [("a", np.float32, [2, 5])], ["o_q"], inits, opset=13)
    r = verify_levels(data, levels=(3, 4, 8), need_level=3)
    assert [o.code.name for o in r[8].model.operations] == ["QUANTIZE", "FULLY_CONNECTED"]


def test_uint8_per_channel_weights_are_reported():
    inits = {**qparams(np.uint8, "x", 0.05, 120), **qparams(np.uint8, "y", 0.2, 130),
             "w": RNG.integers(0, 255, (2, 2, 1, 1)).astype(np.uint8), "ws": np.float32([0.01, 0.02]),
             "wz": np.uint8([128, 128])}
    node = h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    n = convert(make_model([node], [("x", np.uint8, SHAPE)], ["y"], inits), 8).unsupported[0]
    assert n.reason_code == "quantization_type" and "'w'" in n.reason


def test_verify_levels_fails_when_no_level_converts():
    """A model refused at every level for lack of a feature was never compared: that is not a pass."""
    import onnx
    import pytest
    from onnx import TensorProto, helper

    from tests.converters.onnx.harness import ParityError, verify_levels
    graph = helper.make_graph([helper.make_node("HardSwish", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(data))
    with pytest.raises(ParityError, match="no feature level"):
        verify_levels(data, levels=(1, 2))       # HARD_SWISH needs feature level 4

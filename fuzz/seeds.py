"""Small valid seed models for the robustness fuzzers.

TFLite seeds are authored with converters.tflite.authoring.GraphBuilder;
.nnapi seeds are built with the public nnapi.Model API and nnapi.serialize.
Everything is deterministic (fixed values, no randomness) so that a mutation
index always means the same input.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import nnapi
from nnapi import FuseCode, OperandCode as C, OperandType, OperationCode as Op

REPO = Path(__file__).resolve().parent.parent


# -- TFLite ------------------------------------------------------------------------

def tflite_quant_conv() -> bytes:
    """int8 CONV_2D with per-channel weights -> RESHAPE -> CONCATENATION -> ADD."""
    from converters.tflite.authoring import GraphBuilder
    g = GraphBuilder()
    x = g.input("x", [1, 4, 4, 2], "INT8", scale=0.5, zero_point=1)
    w = g.const("w", np.arange(-6, 6, dtype=np.int8).reshape(3, 1, 2, 2)[:, :, :1, :].copy(),
                scale=[0.1, 0.2, 0.3], zero_point=0, axis=0)
    b = g.const("b", np.array([1, -2, 3], np.int32), scale=[0.05, 0.1, 0.15], zero_point=0, axis=0)
    y = g.tensor("y", [1, 4, 4, 3], "INT8", scale=0.25, zero_point=-3)
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU")
    shape = g.const("shape", np.array([1, 48], np.int32))
    r = g.tensor("r", [1, 48], "INT8", scale=0.25, zero_point=-3)
    g.op("RESHAPE", [y, shape], [r], "ReshapeOptions", new_shape=[1, 48])
    c = g.tensor("c", [1, 96], "INT8", scale=0.25, zero_point=-3)
    g.op("CONCATENATION", [r, r], [c], "ConcatenationOptions", axis=1)
    out = g.tensor("out", [1, 96], "INT8", scale=0.5, zero_point=0)
    g.op("ADD", [c, c], [out], "AddOptions")
    g.output(out)
    return g.finish()


def tflite_float_chain() -> bytes:
    """Float ADD/MUL/SUB/DIV chain with constants and broadcasting (fully convertible)."""
    from converters.tflite.authoring import GraphBuilder
    g = GraphBuilder()
    a = g.input("a", [1, 3, 5, 2])
    b = g.input("b", [1, 3, 5, 2])
    k = g.const("k", np.array([0.5, 2.0], np.float32))
    t1 = g.tensor("t1", [1, 3, 5, 2])
    g.op("ADD", [a, b], [t1], "AddOptions", fused_activation_function="RELU6")
    t2 = g.tensor("t2", [1, 3, 5, 2])
    g.op("MUL", [t1, k], [t2], "MulOptions")
    t3 = g.tensor("t3", [1, 3, 5, 2])
    g.op("SUB", [t2, a], [t3], "SubOptions")
    out = g.tensor("out", [1, 3, 5, 2])
    g.op("DIV", [t3, k], [out], "DivOptions")
    g.output(out)
    return g.finish()


def tflite_seeds() -> dict[str, bytes]:
    return {"quant_conv": tflite_quant_conv(), "float_chain": tflite_float_chain()}


# -- .nnapi ------------------------------------------------------------------------

def nnapi_quant_conv_model() -> nnapi.Model:
    """QUANT8 CONV_2D with a per-channel filter (a blob constant > 128 bytes) and a bias."""
    m = nnapi.Model(name="qconv")
    x = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [1, 4, 4, 8], 0.5, 128), name="x")
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, [4, 3, 3, 8]), name="w")
    m.set_operand_symm_per_channel_quant_params(w, [0.1, 0.2, 0.3, 0.4], 0)
    b = m.add_operand(OperandType(C.TENSOR_INT32, [4]), name="b")
    params = [m.add_operand(OperandType(C.INT32)) for _ in range(4)]
    y = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [1, 4, 4, 4], 1.0, 100), name="y")
    m.set_operand_value(w, (np.arange(4 * 3 * 3 * 8) % 17 - 8).astype(np.int8).reshape(4, 3, 3, 8))
    m.set_operand_value(b, np.array([10, -20, 30, -40], np.int32))
    for p, v in zip(params, (1, 1, 1, 0)):  # SAME padding, stride 1, fuse NONE
        m.set_operand_value(p, np.int32(v))
    m.add_operation(Op.CONV_2D, [x, w, b] + params, [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def nnapi_while_model() -> nnapi.Model:
    """WHILE (i < n) i = i + 1, with cond and body subgraphs."""
    def scalar_tensor():
        return OperandType(C.TENSOR_INT32, [1])
    cond = nnapi.Model(name="cond")
    i = cond.add_operand(scalar_tensor(), name="i")
    n = cond.add_operand(scalar_tensor(), name="n")
    out = cond.add_operand(OperandType(C.TENSOR_BOOL8, [1]), name="go")
    cond.add_operation(Op.LESS, [i, n], [out])
    cond.identify_inputs_and_outputs([i, n], [out])
    cond.finish()
    body = nnapi.Model(name="body")
    i = body.add_operand(scalar_tensor(), name="i")
    n = body.add_operand(scalar_tensor(), name="n")
    one = body.add_operand(scalar_tensor(), name="one")
    fuse = body.add_operand(OperandType(C.INT32))
    i2 = body.add_operand(scalar_tensor(), name="i_next")
    body.set_operand_value(one, np.array([1], np.int32))
    body.set_operand_value(fuse, np.int32(FuseCode.NONE))
    body.add_operation(Op.ADD, [i, one, fuse], [i2])
    body.identify_inputs_and_outputs([i, n], [i2])
    body.finish()
    m = nnapi.Model(name="loop")
    c = m.add_operand(OperandType(C.SUBGRAPH), name="cond")
    bd = m.add_operand(OperandType(C.SUBGRAPH), name="body")
    i0 = m.add_operand(scalar_tensor(), name="i0")
    n0 = m.add_operand(scalar_tensor(), name="n")
    res = m.add_operand(scalar_tensor(), name="result")
    m.set_operand_value_from_model(c, cond)
    m.set_operand_value_from_model(bd, body)
    m.add_operation(Op.WHILE, [c, bd, i0, n0], [res])
    m.identify_inputs_and_outputs([i0, n0], [res])
    m.finish()
    return m


def nnapi_seeds() -> dict[str, bytes]:
    from nnapi.serialize import to_bytes
    return {
        "demo": (REPO / "samples" / "demo.nnapi").read_bytes(),
        "quant_conv": to_bytes(nnapi_quant_conv_model()),
        "while": to_bytes(nnapi_while_model()),
    }


# -- ONNX --------------------------------------------------------------------------

# the external-data file that the "external" seed reads next to the model (fuzz.targets writes it)
ONNX_EXTERNAL_FILE = "weights.bin"


def _onnx_model(nodes, inputs, outputs, inits, opset=13):
    import onnx
    from onnx import helper
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="fuzz-seed")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def onnx_conv_chain() -> bytes:
    """Conv -> Relu -> MaxPool -> Flatten -> Gemm (float, NCHW)."""
    from onnx import TensorProto as T, helper, numpy_helper
    w = numpy_helper.from_array((np.arange(4 * 3 * 3 * 3) % 7 - 3).astype(np.float32).reshape(4, 3, 3, 3) / 8, "w")
    b = numpy_helper.from_array(np.array([0.1, -0.2, 0.3, -0.4], np.float32), "b")
    fw = numpy_helper.from_array((np.arange(10 * 64) % 5 - 2).astype(np.float32).reshape(10, 64) / 16, "fw")
    fb = numpy_helper.from_array(np.linspace(-1, 1, 10).astype(np.float32), "fb")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"], "relu"),
        helper.make_node("MaxPool", ["r"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], "flatten", axis=1),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], "gemm", transB=1),
    ]
    return _onnx_model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
                       [helper.make_tensor_value_info("y", T.FLOAT, [1, 10])], [w, b, fw, fb]).SerializeToString()


def onnx_qdq_conv() -> bytes:
    """QDQ-quantized Conv: Q/DQ around the activation, per-channel int8 DQ weights, int32 DQ bias."""
    from onnx import TensorProto as T, helper, numpy_helper
    arr = numpy_helper.from_array
    inits = [
        arr(np.array(0.05, np.float32), "x_s"), arr(np.array(128, np.uint8), "x_zp"),
        arr((np.arange(3 * 2 * 3 * 3) % 11 - 5).astype(np.int8).reshape(3, 2, 3, 3), "wq"),
        arr(np.array([0.02, 0.03, 0.04], np.float32), "w_s"), arr(np.zeros(3, np.int8), "w_zp"),
        arr(np.array([10, -20, 30], np.int32), "bq"),
        arr(np.array([0.001, 0.0015, 0.002], np.float32), "b_s"), arr(np.zeros(3, np.int32), "b_zp"),
        arr(np.array(0.1, np.float32), "y_s"), arr(np.array(100, np.uint8), "y_zp"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["xq"], "qx"),
        helper.make_node("DequantizeLinear", ["xq", "x_s", "x_zp"], ["xd"], "dqx"),
        helper.make_node("DequantizeLinear", ["wq", "w_s", "w_zp"], ["wd"], "dqw", axis=0),
        helper.make_node("DequantizeLinear", ["bq", "b_s", "b_zp"], ["bd"], "dqb", axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "y_s", "y_zp"], ["cq"], "qc"),
        helper.make_node("DequantizeLinear", ["cq", "y_s", "y_zp"], ["y"], "dqc"),
    ]
    return _onnx_model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, [1, 2, 6, 6])],
                       [helper.make_tensor_value_info("y", T.FLOAT, [1, 3, 6, 6])], inits).SerializeToString()


def onnx_external_weights() -> np.ndarray:
    return (np.arange(6 * 4) % 9 - 4).astype(np.float32).reshape(6, 4) / 4


def onnx_external_file() -> bytes:
    """The contents of ONNX_EXTERNAL_FILE: 16 bytes of padding, then the MatMul weights."""
    return b"\0" * 16 + onnx_external_weights().tobytes()


def onnx_external() -> bytes:
    """MatMul -> Add whose weights live in ONNX_EXTERNAL_FILE next to the model (offset 16)."""
    from onnx import TensorProto as T, helper, numpy_helper
    w = T(name="w", data_type=T.FLOAT, dims=[6, 4])
    w.data_location = T.EXTERNAL
    for k, v in (("location", ONNX_EXTERNAL_FILE), ("offset", "16"), ("length", str(6 * 4 * 4))):
        e = w.external_data.add()
        e.key, e.value = k, v
    bias = numpy_helper.from_array(np.array([0.5, -0.5, 1.0, -1.0], np.float32), "bias")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], "matmul"),
             helper.make_node("Add", ["m", "bias"], ["y"], "add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [2, 6])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2, 4])], initializer=[w, bias])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="fuzz-seed")
    m.ir_version = 8
    return m.SerializeToString()


def onnx_seeds() -> dict[str, bytes]:
    return {"conv_chain": onnx_conv_chain(), "qdq_conv": onnx_qdq_conv(), "external": onnx_external()}

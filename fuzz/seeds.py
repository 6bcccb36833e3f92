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

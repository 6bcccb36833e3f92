"""ConvTranspose with output_padding and output_shape (output rows past the transposed convolution's
scatter, which only the bias reaches) against onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converters.onnx import convert
from tests.converters.onnx.harness import parity

RNG = np.random.default_rng(3)


def model(attrs, bias=True, relu=False, in_hw=(4, 5)) -> bytes:
    inits = [numpy_helper.from_array(RNG.standard_normal((3, 2, 3, 3)).astype(np.float32), "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(2).astype(np.float32), "b"))
        ins.append("b")
    nodes = [helper.make_node("ConvTranspose", ins, ["t" if relu else "y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["t"], ["y"]))
    g = helper.make_graph(nodes, "ct", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, *in_hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("attrs", [
    dict(strides=[2, 2], output_padding=[1, 1]),                          # torch output_padding, no pads
    dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),       # within the pads
    dict(strides=[3, 2], output_padding=[2, 1], pads=[0, 1, 1, 0]),       # past the pads on one side
    dict(strides=[3, 2], output_shape=[14, 12]),                          # larger than the scatter
    dict(strides=[2, 2], output_shape=[8, 10]),                           # smaller: cut
    dict(strides=[2, 2], output_shape=[9, 11], output_padding=[1, 1]),
    dict(strides=[2, 2], auto_pad="SAME_UPPER"),
    dict(strides=[2, 2], auto_pad="SAME_LOWER"),
])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_matches_onnxruntime(attrs, bias, relu):
    data = model(attrs, bias, relu)
    r = convert(data)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert not parity(r, data, seeds=(0, 1))


def grouped_model(cin, group, per_out, attrs, bias=True, kernel=(3, 3), in_hw=(4, 5), qdq=False) -> bytes:
    """ConvTranspose of `group` groups ([cin, per_out, kh, kw] weights); qdq: int8 weights and uint8
    activations through QuantizeLinear / DequantizeLinear (per-channel weight scales on axis 1)."""
    from converters.onnx.authoring import make_model
    w = RNG.standard_normal((cin, per_out, *kernel)).astype(np.float32)
    inits = {"w": w}
    ins = ["x", "w"]
    if bias:
        inits["b"] = RNG.standard_normal(per_out * group).astype(np.float32)
        ins.append("b")
    nodes = [helper.make_node("ConvTranspose", ins, ["y"], group=group, **attrs)]
    if qdq:
        ws = (np.abs(w).max(axis=(0, 2, 3)) / 127).astype(np.float32)
        inits.update(xs=np.float32(0.02), xz=np.uint8(128), ws=ws, wz=np.zeros(per_out, np.int8),
                     wq=np.clip(np.round(w / ws.reshape(1, -1, 1, 1)), -127, 127).astype(np.int8),
                     ys=np.float32(0.05), yz=np.uint8(120))
        del inits["w"]
        if bias:  # int32 bias at x_scale * w_scale, as quantizers write it
            bs = np.tile(0.02 * ws, group)
            inits["bq"] = np.round(inits.pop("b") / bs).astype(np.int32)
            inits["bs"] = bs.astype(np.float32)
            inits["bz"] = np.zeros(per_out * group, np.int32)
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
                 helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=1)]
        if bias:
            nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], axis=0))
        nodes += [helper.make_node("ConvTranspose", ["xd", *ins[1:]], ["t"], group=group, **attrs),
                  helper.make_node("QuantizeLinear", ["t", "ys", "yz"], ["y"])]
    # a uint8 output: compared with onnxruntime's (float arithmetic, then rounding) within the quantized tolerance
    return make_model(nodes, [("x", np.float32, [1, cin, *in_hw])], ["y"], inits, opset=13)


@pytest.mark.parametrize("cin,group,per_out", [(4, 2, 3), (6, 3, 1), (4, 4, 1), (4, 4, 2), (8, 2, 2)])
@pytest.mark.parametrize("attrs", [dict(strides=[2, 2]), dict(strides=[2, 1], pads=[1, 0, 1, 1]),
                                   dict(strides=[2, 2], output_padding=[1, 1]),
                                   dict(strides=[2, 2], dilations=[2, 1], pads=[1, 1, 0, 1])])
@pytest.mark.parametrize("bias", [True, False])
def test_grouped_matches_onnxruntime(cin, group, per_out, attrs, bias):
    """groups, depthwise-style groups (one input channel each) and dilations, against onnxruntime."""
    data = grouped_model(cin, group, per_out, attrs, bias)
    r = convert(data)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert not parity(r, data, seeds=(0, 1))
    ops = [o.code.name for o in r.model.operations]
    assert ops.count("TRANSPOSE_CONV_2D") == group and ops.count("CONCATENATION") == 1


def test_dilated_group_1():
    data = grouped_model(3, 1, 2, dict(strides=[1, 2], dilations=[2, 3]), kernel=(2, 3))
    r = convert(data)
    assert r.complete and not parity(r, data, seeds=(0, 1))
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE_CONV_2D") == 1


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("level", [3, 4, 8])
def test_grouped_quantized(bias, level):
    data = grouped_model(4, 2, 3, dict(strides=[2, 2], pads=[1, 1, 1, 1]), bias, qdq=True)
    r = convert(data, level)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    ops = [o.code.name for o in r.model.operations]
    assert ops.count("TRANSPOSE_CONV_2D") == 2 and "QUANTIZE" in ops
    assert not parity(r, data, seeds=(0, 1))

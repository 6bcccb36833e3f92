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

"""1-D spatial ops on rank-3 [N, C, L] tensors (Conv1d, 1-D MaxPool / AveragePool, global pools,
BatchNormalization and InstanceNormalization between them) convert as their 2-D NNAPI forms with H = 1 on
channels-last operands, checked against onnxruntime at several feature levels."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

R = np.random.default_rng(5)


def f(*shape):
    return (R.normal(size=shape) * 0.4).astype(np.float32)


def bn_params(c):
    return {"s": R.random(c).astype(np.float32) + .5, "bb": f(c), "m": f(c), "v": R.random(c).astype(np.float32) + .5}


def test_conv1d_chain_needs_no_transpose_inside():
    inits = {"w": f(6, 4, 3), "b": f(6), "w2": f(6, 3, 5), "is": f(6), "ib": f(6), **bn_params(6)}
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1], strides=[2], kernel_shape=[3]),
             h.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"]),
             h.make_node("Relu", ["bn"], ["r"]),
             h.make_node("MaxPool", ["r"], ["mp"], kernel_shape=[3], strides=[1], pads=[1, 1]),
             h.make_node("Conv", ["mp", "w2"], ["c2"], pads=[2, 2], group=2),
             h.make_node("BatchNormalization", ["c2", "s", "bb", "m", "v"], ["bn2"]),
             h.make_node("InstanceNormalization", ["bn2", "is", "ib"], ["inorm"]),
             h.make_node("AveragePool", ["inorm"], ["ap"], kernel_shape=[2], strides=[2], count_include_pad=1,
                         pads=[1, 0]),
             h.make_node("GlobalAveragePool", ["ap"], ["gap"])]
    data = make_model(nodes, [("x", np.float32, [2, 4, 17])], ["gap", "ap"], inits)
    results = verify_levels(data, levels=(2, 3, 8), need_level=3)
    r = results[8]
    assert all(n.supported for n in r.nodes)
    ops = [o.code.name for o in r.model.operations]
    assert "CONV_2D" in ops and "GROUPED_CONV_2D" in ops and "MAX_POOL_2D" in ops
    # one TRANSPOSE at the input boundary, one back for the 'ap' output; none between the 1-D ops
    assert ops.count("TRANSPOSE") == 2, ops
    assert [n.nnapi_ops for n in r.nodes if n.op == "BatchNormalization"] == [[], []]  # folded into the Convs


@pytest.mark.parametrize("attrs", [dict(auto_pad="SAME_UPPER", strides=[2]), dict(dilations=[2], pads=[2, 1]),
                                   dict(group=4)])
def test_conv1d_attributes(attrs):
    cin = 4
    w = f(8, 1 if attrs.get("group") else cin, 3)
    data = make_model([h.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3], **attrs)],
                      [("x", np.float32, [1, cin, 11])], ["y"], {"w": w})
    verify_levels(data, levels=(3, 8))


@pytest.mark.parametrize("node", [
    h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2], ceil_mode=1),
    h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[1], auto_pad="SAME_UPPER"),
    h.make_node("GlobalMaxPool", ["x"], ["y"]),
    h.make_node("GlobalAveragePool", ["x"], ["y"])])
def test_1d_pools(node):
    data = make_model([node, h.make_node("Relu", ["y"], ["z"])], [("x", np.float32, [2, 3, 10])], ["z"])
    verify_levels(data, levels=(1, 2, 8), need_level=1)  # level 1: the input arrives NLC (io_rewrites)


def test_rank3_batchnorm_and_instancenorm_on_a_graph_input():
    inits = {"is": f(3), "ib": f(3), **bn_params(3)}
    data = make_model([h.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["bn"]),
                       h.make_node("InstanceNormalization", ["bn", "is", "ib"], ["y"])],
                      [("x", np.float32, [2, 3, 7])], ["y"], inits)
    verify_levels(data, levels=(1, 2, 3, 8), need_level=3)  # RSQRT: level 3

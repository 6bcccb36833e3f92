"""ONNX reductions other than ReduceMean, ArgMax/ArgMin and TopK (ops/reduce_arg_topk.py), compared with
onnxruntime, in the ONNX layout and after a Conv (NHWC operands)."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(17)
X = ("x", np.float32, [2, 3, 4, 5])
CONV_W = {"w": RNG.normal(size=(3, 3, 1, 1)).astype(np.float32)}
OPS = ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
       "ReduceLogSumExp"]
AXES = [([2, 3], 1), ([1], 0), ([-1], 0), ([0, 2], 1), (None, 0)]


def reduce_node(op, x, axes, keep, opset):
    if axes is None:
        return [h.make_node(op, [x], ["y"], keepdims=keep)], {}
    if opset >= (13 if op == "ReduceSum" else 18):
        return [h.make_node(op, [x, "axes"], ["y"], keepdims=keep)], {"axes": np.array(axes, np.int64)}
    return [h.make_node(op, [x], ["y"], axes=axes, keepdims=keep)], {}


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("op", OPS)
def test_reductions(op, nhwc, opset):
    for axes, keep in AXES:
        nodes, inits = reduce_node(op, "c" if nhwc else "x", axes, keep, opset)
        if nhwc:
            nodes = [h.make_node("Conv", ["x", "w"], ["c"])] + nodes
            inits.update(CONV_W)
        verify_levels(make_model(nodes, [X], ["y"], inits, opset=opset), need_level=3)


def test_log_sum_exp_of_large_values_does_not_overflow():
    from tests.converters.onnx.harness import parity
    nodes, inits = reduce_node("ReduceLogSumExp", "x", [1, 3], 0, 17)
    data = make_model(nodes, [X], ["y"], inits, opset=17)
    assert not parity(convert(data, 8), data, inputs=[(200 * RNG.random((2, 3, 4, 5))).astype(np.float32)])


def test_reduce_log_sum():
    nodes = [h.make_node("Abs", ["x"], ["a"]), h.make_node("ReduceLogSum", ["a"], ["y"], axes=[1, 2], keepdims=0)]
    verify_levels(make_model(nodes, [X], ["y"], opset=13), need_level=3)


def test_noop_with_empty_axes_is_identity():
    data = make_model([h.make_node("ReduceSum", ["x", "axes"], ["r"], noop_with_empty_axes=1),
                       h.make_node("Relu", ["r"], ["y"])], [X], ["y"], {"axes": np.array([], np.int64)}, opset=13)
    assert [o.code.name for o in verify_levels(data)[8].model.operations] == ["RELU"]


def test_run_time_axes_are_reported():
    data = make_model([h.make_node("ReduceSum", ["x", "axes"], ["y"])], [X, ("axes", np.int64, [1])],
                      [("y", np.float32, None)], opset=13)
    assert convert(data, 8).unsupported[0].reason_code == "non_constant_operand"


def test_quantized_reduce_max():
    """DequantizeLinear -> ReduceMax -> QuantizeLinear converts as a quantized REDUCE_MAX."""
    s = {"s": np.float32(0.02), "z": np.int8(3)}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             h.make_node("ReduceMax", ["d"], ["r"], axes=[1], keepdims=0),
             h.make_node("QuantizeLinear", ["r", "s", "z"], ["y"])]
    r = verify_levels(make_model(nodes, [X], ["y"], s, opset=13), need_level=3)[8]
    assert [o.code.name for o in r.model.operations] == ["QUANTIZE", "REDUCE_MAX"]


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keep", [(0, 1), (1, 0), (-1, 1), (3, 0)])
def test_arg_extremes(op, axis, keep):
    data = make_model([h.make_node(op, ["x"], ["y"], axis=axis, keepdims=keep)], [X], ["y"], opset=13)
    r = verify_levels(data, need_level=3)[8]
    assert r.io_rewrites["y"].startswith("int64 -> int32")


def test_arg_max_after_conv():
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("ArgMax", ["c"], ["y"], axis=1)]
    verify_levels(make_model(nodes, [X], ["y"], CONV_W, opset=13), need_level=3)
    # (select_last_index, ties, int64 users: tests/converters/onnx/test_index_ops.py)


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("k", [1, 3])
def test_topk(k, largest):
    data = make_model([h.make_node("TopK", ["x", "k"], ["v", "i"], largest=largest)], [X], ["v", "i"],
                      {"k": np.array([k], np.int64)}, opset=13)
    verify_levels(data, need_level=3)


# (TopK on other axes: tests/converters/onnx/test_index_ops.py)


def test_reduce_mean_of_unknown_rank_keeps_negative_axes():
    """An input of unknown rank: MEAN gets the ONNX axes as given, so axis -1 stays the last axis whatever
    the rank turns out to be."""
    import numpy as np
    from onnx import helper as h

    from converters.onnx import convert
    from converters.onnx.authoring import make_model
    from tests.converters.onnx.harness import run_converted
    from converters.runners import run_onnxruntime
    data = make_model([h.make_node("ReduceMean", ["x"], ["y"], axes=[-1], keepdims=1)],
                      [("x", np.float32, None)], [("y", np.float32, None)], opset=13)
    r = convert(data)
    assert r.complete and [o.code.name for o in r.model.operations] == ["MEAN"]
    mean = r.model.operations[0]
    assert list(r.model.operands[mean.inputs[1]].value) == [-1]
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    (ref,), _ = run_onnxruntime(data, [x])
    (got,) = run_converted(r, [x])
    np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=1e-6, atol=1e-6)

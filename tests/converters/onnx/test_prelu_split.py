"""ONNX PRelu with broadcast slopes (ops/elementwise.py) and Split with a split attribute, a split input
(opset 13) and num_outputs (opset 18) (ops/shape.py): ONNX and NHWC layouts, float16, quantized (QDQ),
int32 Split, and the refusals; compared with onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(41)
SHAPE = [1, 3, 4, 5]
X = ("x", np.float32, SHAPE)


def conv(out="c"):
    return h.make_node("Conv", ["x", "w"], [out]), {"w": RNG.normal(size=(3, 3, 1, 1)).astype(np.float32)}


# slope shape -> constant?
SLOPES = {"channel": ([3, 1, 1], True), "width": ([5], True), "one": ([1], True), "full": (SHAPE, True),
          "runtime_full": (SHAPE, False), "runtime_width": ([5], False)}


# (a run-time lower-rank slope against an NHWC operand is refused: test_prelu_refusals)
@pytest.mark.parametrize("slope,nhwc", [(s, n) for s in sorted(SLOPES) for n in (False, True)
                                        if not (n and s == "runtime_width")])
def test_prelu_broadcast_slopes(slope, nhwc):
    shape, const = SLOPES[slope]
    value = (RNG.random(shape) * 0.5).astype(np.float32)
    inits = {"s": value} if const else {}
    ins = [X] + ([] if const else [("s", np.float32, shape)])
    nodes = [h.make_node("PRelu", ["x", "s"], ["y"])]
    if nhwc:
        c, w = conv()
        nodes = [c, h.make_node("PRelu", ["c", "s"], ["y"])]
        inits.update(w)
    verify_levels(make_model(nodes, ins, ["y"], inits, opset=16), need_level=3)


def test_prelu_float16():
    data = make_model([h.make_node("PRelu", ["x", "s"], ["y"])], [("x", np.float16, SHAPE)], ["y"],
                      {"s": np.full((3, 1, 1), 0.25, np.float16)}, opset=16)
    verify_levels(data, need_level=3)


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_prelu_quantized(dt):
    """DQ(x), DQ(slope constant) -> PRelu -> Q: one quantized PRELU."""
    zp = {np.uint8: (128, 120), np.int8: (0, -8)}[dt]
    p = {"s": np.float32(0.02), "z": dt(zp[0]), "so": np.float32(0.015), "zo": dt(zp[1]),
         "sq": RNG.integers(1, 60, size=(3, 1, 1)).astype(dt), "ss": np.float32(0.005), "sz": dt(zp[0])}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             h.make_node("DequantizeLinear", ["sq", "ss", "sz"], ["slope"]),
             h.make_node("PRelu", ["d", "slope"], ["p"]), h.make_node("QuantizeLinear", ["p", "so", "zo"], ["y"])]
    r = verify_levels(make_model(nodes, [X], ["y"], p, opset=16), need_level=3)[8]  # (int8 as uint8 below level 4)
    assert [o.code.name for o in r.model.operations] == ["QUANTIZE", "PRELU"]


def test_prelu_refusals():
    c, w = conv()
    lower = make_model([c, h.make_node("PRelu", ["c", "s"], ["y"])], [X, ("s", np.float32, [5])], ["y"], w, opset=16)
    assert convert(lower, 8).unsupported[0].reason_code == "rank"
    ints = make_model([h.make_node("PRelu", ["x", "s"], ["y"])], [("x", np.int32, [2, 3])], ["y"],
                      {"s": np.ones(3, np.int32)}, opset=16)
    assert convert(ints, 8).unsupported[0].reason_code == "operand_type"


SPLITS = {
    "attribute_uneven": (11, {"split": [1, 4]}, 3, None),
    "attribute_equal": (11, {}, 5, None),
    "input_uneven": (13, {}, 3, [2, 1, 2]),
    "num_outputs_even": (18, {"num_outputs": 5}, 5, None),
    "num_outputs_uneven": (18, {"num_outputs": 2}, 2, None),  # 5 -> 3 + 2
    "num_outputs_three": (18, {"num_outputs": 3}, 3, None),   # 5 -> 2 + 2 + 1
}


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("case", sorted(SPLITS))
def test_split(case, nhwc):
    opset, attrs, n, sizes = SPLITS[case]
    attrs = dict(attrs)
    if "split" in attrs:
        n = len(attrs["split"])
    outs = [f"y{k}" for k in range(n)]
    inits = {"sp": np.array(sizes, np.int64)} if sizes else {}
    src = "c" if nhwc else "x"
    nodes = [h.make_node("Split", [src, "sp"] if sizes else [src], outs, axis=3, **attrs)]
    if nhwc:
        c, w = conv()
        nodes.insert(0, c)
        inits.update(w)
    verify_levels(make_model(nodes, [X], outs, inits, opset=opset), need_level=3)


def test_split_int32_and_float16():
    for dt in (np.int32, np.float16):
        data = make_model([h.make_node("Split", ["x", "sp"], ["a", "b"], axis=1)], [("x", dt, [2, 5])], ["a", "b"],
                          {"sp": np.array([2, 3], np.int64)}, opset=13)
        verify_levels(data, need_level=3)


def test_split_refusals():
    bad_sum = make_model([h.make_node("Split", ["x", "sp"], ["a", "b"], axis=3)], [X],
                         [("a", np.float32, [1, 3, 4, 2]), ("b", np.float32, [1, 3, 4, 2])],
                         {"sp": np.array([2, 2], np.int64)}, opset=13)
    empty = make_model([h.make_node("Split", ["x", "sp"], ["a", "b"], axis=3)], [X],
                       [("a", np.float32, [1, 3, 4, 5]), ("b", np.float32, [1, 3, 4, 0])],
                       {"sp": np.array([5, 0], np.int64)}, opset=13)
    for data, words in ((bad_sum, "extent 5"), (empty, "empty part")):
        u = convert(data, 8).unsupported[0]
        assert u.reason_code == "invalid_node" and words in u.reason

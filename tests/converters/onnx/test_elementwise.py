"""ONNX elementwise, activation and normalization ops -> NNAPI, compared with onnxruntime at feature
levels 1, 3, 4, 8 (float32), in the ONNX layout and after a Conv (NHWC operands)."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(3)
X = ("x", np.float32, [1, 2, 3, 5])


def after_conv(node_fn, extra_inputs=(), inits=None):
    """x -> 1x1 Conv (so the op sees an NHWC operand) -> op -> y."""
    nodes = [h.make_node("Conv", ["x", "w"], ["c"])] + node_fn("c")
    return make_model(nodes, [X, *extra_inputs], ["y"], dict({"w": RNG.normal(size=(2, 2, 1, 1)).astype(np.float32)},
                                                            **(inits or {})))


BINARY = {"Add": 1, "Sub": 2, "Mul": 1, "Div": 2, "Min": 3, "Max": 3}
# second operand: (shape, constant?)
OPERANDS = {"same": ([1, 2, 3, 5], False), "row": ([5], False), "channel_const": ([2, 1, 1], True),
            "scalar_const": ([], True)}


# a run-time lower-rank operand against an NHWC tensor is reported (test below), not converted
@pytest.mark.parametrize("operand,nhwc", [(o, n) for o in sorted(OPERANDS) for n in (False, True)
                                          if not (n and o == "row")])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_matches_onnxruntime(op, operand, nhwc):
    shape, const = OPERANDS[operand]
    value = (RNG.random(shape) + 0.5).astype(np.float32)
    inits = {"b": value} if const else {}
    extra = [] if const else [("b", np.float32, shape)]
    if nhwc:
        data = after_conv(lambda c: [h.make_node(op, [c, "b"], ["y"])], extra, inits)
    else:
        data = make_model([h.make_node(op, ["x", "b"], ["y"])], [X, *extra], ["y"], inits)
    # a run-time NCHW operand meets an NHWC one: one TRANSPOSE (feature level 2)
    verify_levels(data, need_level=max(BINARY[op], 2) if nhwc and not const else BINARY[op])


def test_runtime_low_rank_operand_against_nhwc_is_reported():
    data = after_conv(lambda c: [h.make_node("Add", [c, "b"], ["y"])], [("b", np.float32, [5])])
    node = convert(data, 8).unsupported[0]
    assert node.reason_code == "rank" and "'b'" in node.reason


def test_add_relu_fuses():
    data = make_model([h.make_node("Add", ["x", "x2"], ["s"]), h.make_node("Relu", ["s"], ["y"])],
                      [X, ("x2", np.float32, [1, 2, 3, 5])], ["y"])
    r = verify_levels(data)[8]
    assert [o.code.name for o in r.model.operations] == ["ADD"]


def test_pow_prelu():
    # a constant exponent 2 is x * x (feature level 1; more Pow cases in test_pow.py)
    verify_levels(make_model([h.make_node("Pow", ["x", "e"], ["y"])], [X], ["y"], {"e": np.float32(2.0)}),
                  need_level=1)
    verify_levels(after_conv(lambda c: [h.make_node("PRelu", [c, "s"], ["y"])],
                             inits={"s": RNG.random((2, 1, 1)).astype(np.float32)}), need_level=3)


UNARY = {"Relu": 1, "Sigmoid": 1, "Tanh": 1, "Floor": 1, "Abs": 3, "Exp": 3, "Neg": 3, "Sin": 3, "Elu": 4,
         "LeakyRelu": 3, "Identity": 1}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_matches_onnxruntime(op):
    verify_levels(make_model([h.make_node(op, ["x"], ["y"])], [X], ["y"]), need_level=UNARY[op])


@pytest.mark.parametrize("op", ["Log", "Sqrt"])
def test_positive_domain_unary(op):
    data = make_model([h.make_node("Abs", ["x"], ["a"]), h.make_node("Add", ["a", "one"], ["p"]),
                       h.make_node(op, ["p"], ["y"])], [X], ["y"], {"one": np.float32(0.1)})
    verify_levels(data, need_level=3)


CLIPS = {"relu6": (0.0, 6.0, 1), "relu1": (-1.0, 1.0, 1), "relu": (0.0, None, 1), "general": (-0.3, 0.4, 3)}


@pytest.mark.parametrize("case", sorted(CLIPS))
@pytest.mark.parametrize("opset", [7, 13])
def test_clip_variants(case, opset):
    lo, hi, need = CLIPS[case]
    if opset < 11:
        attrs = dict(min=lo, **({"max": hi} if hi is not None else {}))
        node = h.make_node("Clip", ["x"], ["y"], **attrs)
        inits = {}
    else:
        node = h.make_node("Clip", ["x", "lo"] + (["hi"] if hi is not None else []), ["y"])
        inits = dict(lo=np.float32(lo), **({"hi": np.float32(hi)} if hi is not None else {}))
    verify_levels(make_model([node], [X], ["y"], inits, opset=opset), need_level=need)


def test_dropout_and_identity_vanish_inside_the_graph():
    data = make_model([h.make_node("Dropout", ["x"], ["d"]), h.make_node("Identity", ["d"], ["i"]),
                       h.make_node("Relu", ["i"], ["y"])], [X], ["y"], opset=13)
    r = verify_levels(data)[8]
    assert [o.code.name for o in r.model.operations] == ["RELU"]


def test_cast_float_to_int():
    data = make_model([h.make_node("Cast", ["x"], ["y"], to=6)], [X], ["y"])  # to INT32
    r = convert(data, 8)
    assert r.complete and r.nodes[0].nnapi_ops == ["CAST"] and r.nodes[0].min_feature_level == 3


@pytest.mark.parametrize("axis,opset", [(-1, 13), (1, 13), (1, 11), (3, 11)])
def test_softmax_axes_and_opsets(axis, opset):
    verify_levels(make_model([h.make_node("Softmax", ["x"], ["y"], axis=axis)], [X], ["y"], opset=opset))
    verify_levels(after_conv(lambda c: [h.make_node("Softmax", [c], ["y"], axis=axis)]) if opset >= 13 else
                  make_model([h.make_node("Softmax", ["x"], ["y"], axis=axis)], [X], ["y"], opset=opset))


def test_batchnorm_alone_is_mul_add():
    c = 2
    inits = {"s": RNG.random(c).astype(np.float32) + 0.5, "b": RNG.normal(size=c).astype(np.float32),
             "m": RNG.normal(size=c).astype(np.float32), "v": RNG.random(c).astype(np.float32) + 0.5}
    data = make_model([h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])], [X], ["y"], inits)
    r = verify_levels(data, need_level=1)[8]
    assert r.nodes[0].nnapi_ops == ["MUL", "ADD"]


def test_reduce_mean():
    for attrs in (dict(axes=[2, 3], keepdims=1), dict(axes=[1], keepdims=0), dict(axes=[-1], keepdims=0)):
        verify_levels(make_model([h.make_node("ReduceMean", ["x"], ["y"], **attrs)], [X], ["y"], opset=13),
                      need_level=2)
        verify_levels(after_conv(lambda c: [h.make_node("ReduceMean", [c], ["y"], **attrs)]), need_level=2)
    data = make_model([h.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)], [X], ["y"],
                      {"axes": np.array([1, 2], np.int64)}, opset=18)
    verify_levels(data, need_level=2)

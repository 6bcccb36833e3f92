"""ONNX variadic Sum, Mean, Max, Min (ops/variadic.py), compared with onnxruntime at feature levels
1, 3, 4, 8: one to four inputs, partial results that broadcast, after a Conv (NHWC operands), float16,
int32, quantized Max/Min in a QDQ group, and the types that are refused."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(18)
OPS = {"Sum": 1, "Mean": 1, "Max": 3, "Min": 3}  # lowest feature level (float32)


def names(n):
    return [f"x{k}" for k in range(n)]


@pytest.mark.parametrize("shapes", [
    [[2, 3, 5]] * 2,
    [[2, 3, 5]] * 3,
    [[5], [3, 1], [2, 3, 5], [1]],       # each partial result has its own broadcast shape
    [[2, 1, 5], [1, 3, 1], [2, 3, 5]],
])
@pytest.mark.parametrize("op", sorted(OPS))
def test_float_matches_onnxruntime(op, shapes):
    ins = [(n, np.float32, s) for n, s in zip(names(len(shapes)), shapes)]
    r = verify_levels(make_model([h.make_node(op, names(len(shapes)), ["y"])], ins, ["y"], opset=13),
                      need_level=OPS[op])[8]
    want = {"Sum": "ADD", "Mean": "ADD", "Max": "MAXIMUM", "Min": "MINIMUM"}[op]
    assert [o.code.name for o in r.model.operations].count(want) == len(shapes) - 1


@pytest.mark.parametrize("op", sorted(OPS))
def test_one_input_is_the_identity(op):
    data = make_model([h.make_node(op, ["x0"], ["y"])], [("x0", np.float32, [2, 3])], ["y"], opset=13)
    r = verify_levels(data, need_level=1)[8]
    assert [o.code.name for o in r.model.operations] == ["RESHAPE"]  # the graph output's copy


@pytest.mark.parametrize("op", sorted(OPS))
def test_after_conv_in_nhwc(op):
    """Inputs from two Convs and a per-channel constant: the chain runs on NHWC operands."""
    w = {"w": RNG.normal(size=(3, 2, 1, 1)).astype(np.float32), "v": RNG.normal(size=(3, 2, 1, 1)).astype(np.float32),
         "c": RNG.normal(size=(3, 1, 1)).astype(np.float32)}
    nodes = [h.make_node("Conv", ["x", "w"], ["a"]), h.make_node("Conv", ["x", "v"], ["b"]),
             h.make_node(op, ["a", "b", "c"], ["y"])]
    r = verify_levels(make_model(nodes, [("x", np.float32, [1, 2, 4, 5])], ["y"], w, opset=13),
                      need_level=OPS[op])[8]
    ops = [o.code.name for o in r.model.operations]
    assert ops.count("TRANSPOSE") == 2 and ops[-1] == "TRANSPOSE"  # the input and the graph output only


def test_sum_relu_fuses_into_the_last_add():
    ins = [(n, np.float32, [2, 3]) for n in names(3)]
    data = make_model([h.make_node("Sum", names(3), ["s"]), h.make_node("Relu", ["s"], ["y"])], ins, ["y"])
    r = verify_levels(data, need_level=1)[8]
    assert [o.code.name for o in r.model.operations] == ["ADD", "ADD"]
    assert r.model.operands[r.model.operations[-1].inputs[2]].value == 1  # FuseCode RELU


def test_one_input_sum_keeps_its_relu():
    data = make_model([h.make_node("Sum", ["x0"], ["s"]), h.make_node("Relu", ["s"], ["y"])],
                      [("x0", np.float32, [2, 3])], ["y"])
    r = verify_levels(data, need_level=1)[8]
    assert [o.code.name for o in r.model.operations] == ["RELU"]


@pytest.mark.parametrize("op", sorted(OPS))
def test_float16(op):
    ins = [(n, np.float16, s) for n, s in zip(names(3), [[2, 3], [3], [2, 3]])]
    verify_levels(make_model([h.make_node(op, names(3), ["y"])], ins, ["y"], opset=13), need_level=3)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_int32(op):
    ins = [(n, np.int32, s) for n, s in zip(names(3), [[2, 3], [3], [2, 3]])]
    verify_levels(make_model([h.make_node(op, names(3), ["y"])], ins, ["y"], opset=13), need_level=3)


@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_int32_sum_and_mean_are_refused(op):
    """ONNX defines Sum and Mean for floats only; an int32 one (a hand-made graph) is an operand-type refusal."""
    import onnx
    ins = [h.make_tensor_value_info(n, onnx.TensorProto.INT32, [2]) for n in names(2)]
    g = h.make_graph([h.make_node(op, names(2), ["y"])], "g", ins,
                     [h.make_tensor_value_info("y", onnx.TensorProto.INT32, [2])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    u = convert(m.SerializeToString(), 8).unsupported[0]
    assert u.reason_code == "operand_type" and op in u.reason


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
@pytest.mark.parametrize("op", ["Max", "Min", "Sum"])
def test_quantized_three_inputs(op, dt):
    """DequantizeLinear x3 -> Sum/Max/Min -> QuantizeLinear: a chain of quantized ADD/MAXIMUM/MINIMUM whose
    partial result takes the output's scale."""
    zp = {np.uint8: (128, 100), np.int8: (0, -20)}[dt]
    p = {"s": np.float32(0.02), "z": dt(zp[0]), "so": np.float32(0.03), "zo": dt(zp[1])}
    nodes = []
    for n in names(3):
        nodes += [h.make_node("QuantizeLinear", [n, "s", "z"], [n + "q"]),
                  h.make_node("DequantizeLinear", [n + "q", "s", "z"], [n + "d"])]
    nodes += [h.make_node(op, [n + "d" for n in names(3)], ["m"]),
              h.make_node("QuantizeLinear", ["m", "so", "zo"], ["y"])]
    ins = [(n, np.float32, [2, 3, 4]) for n in names(3)]
    r = verify_levels(make_model(nodes, ins, ["y"], p, opset=13), need_level=3)[8]  # (QUANTIZE)
    want = {"Max": "MAXIMUM", "Min": "MINIMUM", "Sum": "ADD"}[op]
    assert [o.code.name for o in r.model.operations][-2:] == [want] * 2


def test_bool_max_is_refused_with_a_reason():
    ins = [(n, np.bool_, [2]) for n in names(2)]
    u = convert(make_model([h.make_node("Max", names(2), ["y"])], ins, ["y"], opset=13), 8).unsupported
    assert u and u[0].reason_code == "operand_type"

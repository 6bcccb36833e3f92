"""ONNX activations and elementwise math composed from NNAPI ops (ops/activation_composed.py), compared with
onnxruntime at feature levels 1, 3, 4, 8, in the ONNX layout and after a Conv (NHWC operands)."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(11)
X = ("x", np.float32, [1, 2, 3, 5])


def model(node_fn, nhwc=False, opset=20, inputs=(X,)):
    """x -> op -> y, or x -> 1x1 Conv -> op -> y (the op then sees an NHWC operand)."""
    if not nhwc:
        return make_model(node_fn("x"), list(inputs), ["y"], opset=opset)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"])] + node_fn("c")
    return make_model(nodes, list(inputs), ["y"], {"w": RNG.normal(size=(2, 2, 1, 1)).astype(np.float32)},
                      opset=opset)


# op -> (attribute variants, minimum feature level)
CASES = {
    "HardSigmoid": ([{}, {"alpha": 0.3, "beta": 0.4}], 3),
    "HardSwish": ([{}], 4),
    "Softplus": ([{}], 3),
    "Softsign": ([{}], 3),
    "Selu": ([{}, {"alpha": 1.5, "gamma": 2.0}], 4),
    "Celu": ([{}, {"alpha": 0.5}], 3),
    "ThresholdedRelu": ([{}, {"alpha": 0.2}], 3),
    "Reciprocal": ([{}], 2),
    "Ceil": ([{}], 3),
    "Sign": ([{}], 3),
    "Gelu": ([{"approximate": "tanh"}], 1),
    "Mish": ([{}], 3),
}


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("op", sorted(CASES))
def test_matches_onnxruntime(op, nhwc):
    variants, need = CASES[op]
    for attrs in variants:
        data = model(lambda x, attrs=attrs: [h.make_node(op, [x], ["y"], **attrs)], nhwc)
        r = verify_levels(data, need_level=need)
        if nhwc:
            assert "TRANSPOSE" not in [o.code.name for o in r[8].model.operations[1:-1]]  # only the boundary transposes


def test_wide_range_softplus_and_celu_do_not_overflow():
    big = [(50 * (2 * RNG.random((1, 2, 3, 5)) - 1)).astype(np.float32)]
    for op in ("Softplus", "Celu", "Softsign"):
        data = model(lambda x, op=op: [h.make_node(op, [x], ["y"])])
        r = convert(data, 8)
        from tests.converters.onnx.harness import parity
        assert not parity(r, data, inputs=big), op


def test_round_half_to_even_is_exact():
    values = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.49, 2.51, 0.0, 8388609.0, -7.5, 1e9, 0.49999997],
                      np.float32).reshape(1, 2, 7)
    data = model(lambda x: [h.make_node("Round", [x], ["y"])], inputs=[("x", np.float32, [1, 2, 7])])
    r = convert(data, 3)
    assert r.complete
    from tests.converters.onnx.harness import run_converted
    np.testing.assert_array_equal(run_converted(r, [values])[0], np.round(values))
    verify_levels(data, need_level=3)


def test_gelu_tanh_pattern_converts_op_by_op():
    """The decomposed tanh approximation (as exporters write it) converts node by node."""
    c = {"k3": np.float32(0.044715), "s": np.float32(np.sqrt(2 / np.pi)), "one": np.float32(1.0),
         "half": np.float32(0.5), "three": np.float32(3.0)}
    nodes = [h.make_node("Pow", ["x", "three"], ["p"]), h.make_node("Mul", ["p", "k3"], ["pk"]),
             h.make_node("Add", ["x", "pk"], ["i"]), h.make_node("Mul", ["i", "s"], ["is"]),
             h.make_node("Tanh", ["is"], ["t"]), h.make_node("Add", ["t", "one"], ["t1"]),
             h.make_node("Mul", ["x", "t1"], ["xt"]), h.make_node("Mul", ["xt", "half"], ["y"])]
    verify_levels(make_model(nodes, [X], ["y"], c), need_level=1)  # Pow(x, 3) is two MULs


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_quantized_hard_swish(dt):
    """DequantizeLinear -> HardSwish -> QuantizeLinear converts as a quantized HARD_SWISH."""
    zp = {np.int8: (0, -10), np.uint8: (128, 100)}[dt]
    s = {"s": np.float32(0.05), "z": dt(zp[0]), "so": np.float32(0.03), "zo": dt(zp[1])}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             h.make_node("HardSwish", ["d"], ["hs"]), h.make_node("QuantizeLinear", ["hs", "so", "zo"], ["y"])]
    r = verify_levels(make_model(nodes, [X], ["y"], s, opset=20), need_level=4)[8]
    assert [o.code.name for o in r.model.operations] == ["QUANTIZE", "HARD_SWISH"]


def test_integer_inputs_are_reported():
    data = model(lambda x: [h.make_node("Softsign", [x], ["y"])], inputs=[("x", np.int32, [2, 3])])
    assert convert(data, 8).unsupported[0].reason_code == "operand_type"


def test_sign_int32():
    data = model(lambda x: [h.make_node("Sign", [x], ["y"])], inputs=[("x", np.int32, [2, 3])])
    r = convert(data, 8)
    assert r.complete
    from tests.converters.onnx.harness import run_converted
    v = np.array([[-3, 0, 2], [5, -1, 0]], np.int32)
    np.testing.assert_array_equal(run_converted(r, [v])[0], np.sign(v))

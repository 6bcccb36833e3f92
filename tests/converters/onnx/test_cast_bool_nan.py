"""ONNX Cast to and from bool (ops/unary.py: SELECT of 1 and 0, NOT_EQUAL with 0), IsNaN (NOT_EQUAL(x, x)) and
IsInf (ops/compare.py), on inputs holding NaN, infinities and zeros; compared with onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import parity, verify_levels

SPECIAL = np.array([[np.nan, 0.0, -0.0, 1.5], [-np.inf, np.inf, -2.0, 1e-30], [0.0, np.nan, 3.0, -1.0]],
                   np.float32)
TO = {np.float32: TP.FLOAT, np.float16: TP.FLOAT16, np.int32: TP.INT32, np.uint8: TP.UINT8, np.bool_: TP.BOOL}


def _check(data, inputs, level=8):
    r = convert(data, level)
    assert r.complete, [(u.op, u.reason) for u in r.unsupported]
    assert not parity(r, data, inputs=inputs)
    return r


@pytest.mark.parametrize("dst", [np.float32, np.float16, np.int32, np.uint8])
def test_cast_from_bool(dst):
    data = make_model([h.make_node("Cast", ["b"], ["y"], to=TO[dst])], [("b", np.bool_, [3, 4])], ["y"], opset=13)
    mask = np.array([[1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]], bool)
    r = _check(data, [mask])
    assert [o.code.name for o in r.model.operations] == ["SELECT"]
    verify_levels(data, levels=(3, 4, 8), need_level=3)


@pytest.mark.parametrize("src", [np.float32, np.float16, np.int32])
def test_cast_to_bool_nan_is_true(src):
    data = make_model([h.make_node("Cast", ["x"], ["y"], to=TP.BOOL)], [("x", src, [3, 4])], ["y"], opset=13)
    x = SPECIAL if src != np.int32 else np.array([[0, 1, -1, 7]] * 3, np.int32)
    r = _check(data, [x.astype(src)])
    assert [o.code.name for o in r.model.operations] == ["NOT_EQUAL"]


def test_attention_mask_from_comparison():
    """The pattern of attention masks: a comparison's bool, Cast to float, scaled and added to scores."""
    nodes = [h.make_node("Greater", ["m", "half"], ["b"]), h.make_node("Cast", ["b"], ["f"], to=TP.FLOAT),
             h.make_node("Mul", ["f", "big"], ["bias"]), h.make_node("Add", ["s", "bias"], ["y"])]
    data = make_model(nodes, [("m", np.float32, [1, 1, 1, 6]), ("s", np.float32, [1, 2, 6, 6])], ["y"],
                      {"half": np.array(0.0, np.float32), "big": np.array(-1e4, np.float32)}, opset=13)
    verify_levels(data, levels=(3, 8), need_level=3)


def test_cast_bool_round_trip_after_conv():
    """Bool tensors in the NHWC layout of a Conv's output: Cast to bool and back keeps the layout."""
    w = np.random.default_rng(3).normal(size=(4, 2, 1, 1)).astype(np.float32)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Relu", ["c"], ["r"]),
             h.make_node("Cast", ["r"], ["b"], to=TP.BOOL), h.make_node("Cast", ["b"], ["y"], to=TP.FLOAT)]
    data = make_model(nodes, [("x", np.float32, [1, 2, 3, 5])], ["y"], {"w": w}, opset=13)
    verify_levels(data, levels=(3, 8), need_level=3)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_isnan(dtype):
    data = make_model([h.make_node("IsNaN", ["x"], ["y"])], [("x", dtype, [3, 4])], ["y"], opset=13)
    r = _check(data, [SPECIAL.astype(dtype)])
    assert [o.code.name for o in r.model.operations] == ["NOT_EQUAL"]


@pytest.mark.parametrize("pos,neg", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf(pos, neg):
    data = make_model([h.make_node("IsInf", ["x"], ["y"], detect_positive=pos, detect_negative=neg)],
                      [("x", np.float32, [3, 4])], ["y"], opset=13)
    _check(data, [SPECIAL])


def test_refusals():
    q = make_model([h.make_node("IsNaN", ["x"], ["y"])], [("x", np.int32, [3])], ["y"], opset=13)
    u = convert(q, 8).unsupported[0]
    assert u.reason_code == "operand_type" and "'x'" in u.reason
    dyn = make_model([h.make_node("Cast", ["b"], ["y"], to=TP.FLOAT)], [("b", np.bool_, ["n", 4])], ["y"], opset=13)
    u = convert(dyn, 8).unsupported[0]
    assert u.reason_code == "dynamic_shape" and "'y'" in u.reason


@pytest.mark.parametrize("op,attrs,shape", [("Flatten", {"axis": 1}, None), ("Reshape", {}, [2, 1, 1, 6])])
def test_bool_mask_reshaped(op, attrs, shape):
    """A bool attention mask flattened or reshaped (RESHAPE takes no bool: uint8 0/1 and back), then used."""
    inits = {"s": np.array(shape, np.int64)} if shape else {}
    nodes = [h.make_node("Cast", ["m"], ["b"], to=TP.BOOL),
             h.make_node(op, ["b", "s"] if shape else ["b"], ["f"], **attrs),
             h.make_node("Where", ["f", "x", "neg"], ["y"])]
    inits["neg"] = np.array(-1e4, np.float32)
    x_shape = [2, 6] if not shape else shape
    data = make_model(nodes, [("m", np.int32, [2, 2, 3]), ("x", np.float32, x_shape)], ["y"], inits, opset=13)
    m = np.random.default_rng(1).integers(0, 2, (2, 2, 3)).astype(np.int32)
    x = np.random.default_rng(2).normal(size=x_shape).astype(np.float32)
    _check(data, [m, x])


def test_position_ids_from_a_mask_are_int32():
    """A run-time Cast to int64 (mask.long().cumsum(1) * mask, the position ids of padded text) is held as int32
    with a note, and so is what is computed from it, up to the embedding Gather."""
    emb = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32)
    nodes = [h.make_node("Greater", ["ids", "zero"], ["m"]), h.make_node("Cast", ["m"], ["mi"], to=TP.INT64),
             h.make_node("CumSum", ["mi", "ax"], ["cs"]), h.make_node("Mul", ["cs", "mi"], ["pos"]),
             h.make_node("Gather", ["emb", "pos"], ["y"]), h.make_node("Cast", ["ids"], ["t"], to=TP.INT64),
             h.make_node("Cast", ["t"], ["yt"], to=TP.FLOAT)]
    data = make_model(nodes, [("ids", np.float32, [2, 7])], ["y", "yt"],
                      {"zero": np.float32(0), "ax": np.array(1, np.int64), "emb": emb}, opset=13)
    x = (np.random.default_rng(1).normal(size=(2, 7)) * 3).astype(np.float32)  # (Cast to int64 truncates)
    r = _check(data, [x])
    assert any("int64 -> int32" in n.note for n in r.nodes if n.op == "Cast")

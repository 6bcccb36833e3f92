"""Einsum in its matmul shapes (ops/einsum.py), compared with onnxruntime."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from converters.onnx.runner import verify_levels

RNG = np.random.default_rng(29)
SIZES = {"b": 2, "h": 3, "i": 4, "j": 5, "k": 6, "q": 7, "d": 3}

EQUATIONS = ["bij,bjk->bik", "ij,jk->ik", "ij,kj->ik", "ji,jk->ik", "bji,bkj->bik", "bhqd,bhkd->bhqk",
             "bhqk,bhkd->bhqd", "ij,jk->ki", "bij,bjk->bki", "ik,jk", "bhid,bhjd->bhij", "bij,bjk->ik"]


def shapes(eq):
    lhs = eq.split("->")[0].split(",")
    return [[SIZES[ch] for ch in t] for t in lhs]


@pytest.mark.parametrize("eq", EQUATIONS)
def test_runtime_operands(eq):
    sa, sb = shapes(eq)
    data = make_model([h.make_node("Einsum", ["a", "b"], ["y"], equation=eq)],
                      [("a", np.float32, sa), ("b", np.float32, sb)], ["y"], opset=13)
    r = verify_levels(data, need_level=6)[8]
    assert "BATCH_MATMUL" in r.nodes[0].nnapi_ops


@pytest.mark.parametrize("eq", ["ij,jk->ik", "ij,kj->ik", "bij,jk->bik", "ji,jk->ki"])
def test_constant_right_operand_is_fully_connected(eq):
    sa, sb = shapes(eq)
    data = make_model([h.make_node("Einsum", ["a", "w"], ["y"], equation=eq)], [("a", np.float32, sa)], ["y"],
                      {"w": RNG.normal(size=sb).astype(np.float32)}, opset=13)
    r = verify_levels(data, need_level=2 if eq.startswith("ji") else 1)[8]  # a transposed operand: TRANSPOSE
    assert "FULLY_CONNECTED" in r.nodes[0].nnapi_ops


def test_adj_flags_avoid_transposes():
    data = make_model([h.make_node("Einsum", ["a", "b"], ["y"], equation="bhqd,bhkd->bhqk")],
                      [("a", np.float32, [2, 3, 7, 4]), ("b", np.float32, [2, 3, 5, 4])], ["y"], opset=13)
    assert convert(data, 8).nodes[0].nnapi_ops == ["BATCH_MATMUL"]


def test_transpose_only():
    data = make_model([h.make_node("Einsum", ["a"], ["y"], equation="ijk->kij")], [("a", np.float32, [2, 3, 4])],
                      ["y"], opset=13)
    verify_levels(data, need_level=2)


@pytest.mark.parametrize("eq,reason", [("ii->i", "unsupported_attribute"), ("ij->i", "unsupported_attribute"),
                                       ("...ij,...jk->...ik", "unsupported_attribute"),
                                       ("ij,jk,kl->il", "unsupported_attribute"),
                                       ("ij,k->ik", "unsupported_attribute")])
def test_unsupported_forms(eq, reason):
    lhs = eq.split("->")[0].split(",")
    ins = [(f"x{k}", np.float32, [3] * len(t.replace("...", "z"))) for k, t in enumerate(lhs)]
    data = make_model([h.make_node("Einsum", [n for n, _, _ in ins], ["y"], equation=eq)], ins,
                      [("y", np.float32, None)], opset=13)
    assert convert(data, 8).unsupported[0].reason_code == reason

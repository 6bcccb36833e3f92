"""Einsum (ops/einsum.py): matmul shapes, letters summed inside one operand, products without a
contraction, one-operand sums, ellipses; compared with onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

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


@pytest.mark.parametrize("eq,reason", [("ij,jk,kl->il", "unsupported_attribute")])
def test_unsupported_forms(eq, reason):
    lhs = eq.split("->")[0].split(",")
    ins = [(f"x{k}", np.float32, [3] * len(t.replace("...", "z"))) for k, t in enumerate(lhs)]
    data = make_model([h.make_node("Einsum", [n for n, _, _ in ins], ["y"], equation=eq)], ins,
                      [("y", np.float32, None)], opset=13)
    assert convert(data, 8).unsupported[0].reason_code == reason


# equation -> (operand shapes, lowest feature level, an NNAPI op it must use)
FORMS = {
    "ij->i": ([[4, 5]], 3, "REDUCE_SUM"),
    "ij->": ([[4, 5]], 3, "REDUCE_SUM"),
    "ijk->ki": ([[2, 3, 4]], 3, "REDUCE_SUM"),
    "bij,bjk->bk": ([[2, 4, 5], [2, 5, 6]], 6, "REDUCE_SUM"),
    "ij,k->ik": ([[4, 5], [6]], 3, "MUL"),
    "ij,ij->ij": ([[4, 5], [4, 5]], 1, "MUL"),
    "ij,ji->ij": ([[4, 5], [5, 4]], 2, "MUL"),
    "i,j->ij": ([[4], [5]], 1, "MUL"),
    "bi,bj->bij": ([[2, 4], [2, 5]], 1, "MUL"),
    "i,i->": ([[4], [4]], 3, "REDUCE_SUM"),
    "ij,ij->": ([[4, 5], [4, 5]], 3, "REDUCE_SUM"),
    "bij,bji->b": ([[2, 4, 5], [2, 5, 4]], 3, "REDUCE_SUM"),
    "...ij,...jk->...ik": ([[2, 3, 4, 5], [2, 3, 5, 6]], 6, "BATCH_MATMUL"),
    "...ij,...jk": ([[3, 4, 5], [3, 5, 6]], 6, "BATCH_MATMUL"),
    "bhqd,...kd->bhqk": ([[2, 3, 4, 5], [6, 5]], 6, "BATCH_MATMUL"),
    "...i->...": ([[2, 3, 4]], 3, "REDUCE_SUM"),
    "ii->i": ([[4, 4]], 3, "GATHER"),
    "ii": ([[4, 4]], 3, "GATHER"),
    "...ii->...i": ([[2, 3, 3]], 3, "GATHER"),
    "iij->ji": ([[3, 3, 5]], 3, "GATHER"),
    "iii->i": ([[3, 3, 3]], 3, "GATHER"),
    "bii,bij->bj": ([[2, 3, 3], [2, 3, 4]], 6, "GATHER"),
}


@pytest.mark.parametrize("eq", sorted(FORMS))
def test_forms_beyond_matmul(eq):
    shapes_, level, op = FORMS[eq]
    names = [f"x{k}" for k in range(len(shapes_))]
    ref = np.einsum(eq, *[np.zeros(s, np.float32) for s in shapes_])  # (output shape for onnx shape inference)
    data = make_model([h.make_node("Einsum", names, ["y"], equation=eq)],
                      [(n, np.float32, s) for n, s in zip(names, shapes_)], [("y", np.float32, list(ref.shape))],
                      opset=13)
    r = verify_levels(data, need_level=level)[8]
    assert op in r.nodes[0].nnapi_ops


def test_product_with_a_constant_operand():
    data = make_model([h.make_node("Einsum", ["a", "w"], ["y"], equation="bi,i->bi")], [("a", np.float32, [3, 4])],
                      ["y"], {"w": RNG.normal(size=4).astype(np.float32)}, opset=13)
    assert verify_levels(data, need_level=1)[8].nodes[0].nnapi_ops == ["MUL"]


@pytest.mark.parametrize("eq,sa,sb", [("...ij,...jk->...ik", [2, 4, 5], [1, 5, 6]),
                                      ("bij,bjk->bik", [1, 4, 5], [3, 5, 6]),
                                      ("ij,jk->ik", [4, 1], [5, 6]),        # a contracted letter of extent 1
                                      ("bi,bi->bi", [2, 1], [2, 5])])
def test_broadcast_letters(eq, sa, sb):
    ref = np.einsum(eq, np.zeros(sa), np.zeros(sb))
    data = make_model([h.make_node("Einsum", ["a", "b"], ["y"], equation=eq)],
                      [("a", np.float32, sa), ("b", np.float32, sb)], [("y", np.float32, list(ref.shape))], opset=13)
    verify_levels(data, levels=(6, 8))


def test_letters_that_do_not_broadcast_are_reported():
    data = make_model([h.make_node("Einsum", ["a", "b"], ["y"], equation="...ij,...jk->...ik")],
                      [("a", np.float32, [2, 4, 5]), ("b", np.float32, [3, 5, 6])], [("y", np.float32, [2, 4, 6])],
                      opset=13)
    assert convert(data, 8).unsupported[0].reason_code == "unsupported_attribute"


@pytest.mark.parametrize("eq", ["bij,bjk->bik", "ij,ij->ij", "ij->i", "i,i->"])
def test_float16(eq):
    sh = [[SIZES.get(ch, 4) for ch in t] for t in eq.split("->")[0].split(",")]
    names = [f"x{k}" for k in range(len(sh))]
    data = make_model([h.make_node("Einsum", names, ["y"], equation=eq)],
                      [(n, np.float16, s) for n, s in zip(names, sh)], ["y"], opset=13)
    verify_levels(data, need_level=6 if "k" in eq else 3)


def test_mixed_or_integer_types_are_refused():
    data = make_model([h.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")],
                      [("a", np.int32, [2, 3]), ("b", np.int32, [3, 4])], ["y"], opset=13)
    assert convert(data, 8).unsupported[0].reason_code == "operand_type"


def test_diagonal_of_unequal_extents_is_reported():
    data = make_model([h.make_node("Einsum", ["a"], ["y"], equation="ii->i")], [("a", np.float32, [3, 1])],
                      [("y", np.float32, [3])], opset=13)
    u = convert(data, 8).unsupported[0]
    assert u.reason_code == "invalid_node" and "diagonal" in u.reason

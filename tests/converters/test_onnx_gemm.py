"""ONNX Gemm and MatMul -> FULLY_CONNECTED (constant B) or BATCH_MATMUL (run-time B), compared with
onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from converters.onnx.runner import verify_levels

RNG = np.random.default_rng(9)


def m(*shape):
    return RNG.normal(size=shape).astype(np.float32)


GEMM = {
    "plain": (dict(), (5, 3), (3,)),
    "trans_b": (dict(transB=1), (3, 5), (3,)),
    "alpha_beta": (dict(alpha=0.5, beta=2.0), (5, 3), (1, 3)),
    "scalar_c": (dict(), (5, 3), ()),
    "no_c": (dict(), (5, 3), None),
    "trans_a": (dict(transA=1), (5, 3), (3,)),
}


@pytest.mark.parametrize("case", sorted(GEMM))
def test_gemm_matches_onnxruntime(case):
    attrs, bshape, cshape = GEMM[case]
    inits = {"b": m(*bshape)}
    ins = ["a", "b"]
    if cshape is not None:
        inits["c"] = m(*cshape)
        ins.append("c")
    ashape = [5, 2] if attrs.get("transA") else [2, 5]
    data = make_model([h.make_node("Gemm", ins, ["y"], **attrs)], [("a", np.float32, ashape)], ["y"], inits)
    r = verify_levels(data, need_level=2 if attrs.get("transA") else 1)
    assert "FULLY_CONNECTED" in r[8].nodes[0].nnapi_ops


def test_gemm_relu_fuses():
    data = make_model([h.make_node("Gemm", ["a", "b"], ["g"]), h.make_node("Relu", ["g"], ["y"])],
                      [("a", np.float32, [2, 5])], ["y"], {"b": m(5, 3)})
    r = verify_levels(data)[8]
    assert [o.code.name for o in r.model.operations] == ["FULLY_CONNECTED"]


def test_matmul_constant_2d_and_3d():
    verify_levels(make_model([h.make_node("MatMul", ["a", "b"], ["y"])], [("a", np.float32, [2, 5])], ["y"],
                             {"b": m(5, 3)}), need_level=1)
    verify_levels(make_model([h.make_node("MatMul", ["a", "b"], ["y"])], [("a", np.float32, [2, 3, 5])], ["y"],
                             {"b": m(5, 4)}), need_level=1)


def test_matmul_runtime_is_batch_matmul():
    data = make_model([h.make_node("MatMul", ["a", "b"], ["y"])],
                      [("a", np.float32, [2, 3, 5]), ("b", np.float32, [2, 5, 4])], ["y"])
    r = verify_levels(data, levels=(4, 8), need_level=6)
    assert r[8].nodes[0].nnapi_ops == ["BATCH_MATMUL"]
    assert convert(data, 4).unsupported[0].min_feature_level == 6

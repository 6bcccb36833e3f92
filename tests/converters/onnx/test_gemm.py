"""ONNX Gemm and MatMul -> FULLY_CONNECTED (constant B) or BATCH_MATMUL (run-time B), compared with
onnxruntime at feature levels 1, 3, 4, 8."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

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


@pytest.mark.parametrize("alpha,beta,c_kind,trans_b", [(0.125, 1.0, None, 0), (0.5, 2.0, "const", 1),
                                                        (1.0, 0.5, "runtime", 0), (2.0, 1.0, "row", 1)])
def test_gemm_with_runtime_b_alpha_and_c_matches_onnxruntime(alpha, beta, c_kind, trans_b):
    """Attention's scaled Gemm as torch exports it (run-time B): BATCH_MATMUL, MUL by alpha, ADD of beta * C."""
    from onnx import TensorProto, helper, numpy_helper

    from tests.converters.onnx.harness import verify_levels
    m, k, n = 3, 4, 5
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, k] if trans_b else [k, n])]
    names, inits = ["a", "b"], []
    if c_kind == "runtime":
        inputs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, n]))
        names.append("c")
    elif c_kind:
        shape = [n] if c_kind == "const" else [1, n]
        inits.append(numpy_helper.from_array(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32)
                                             .reshape(shape), "c"))
        names.append("c")
    node = helper.make_node("Gemm", names, ["y"], alpha=alpha, beta=beta, transB=trans_b)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                              initializer=inits)
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    results = verify_levels(data, levels=(5, 6, 8), need_level=6)
    assert [op.code.name for op in results[8].model.operations][0] == "BATCH_MATMUL"


def test_matmul_by_an_identity_of_an_initializer_is_a_constant_weight():
    """torch exports a weight two layers share as Identity(initializer): it folds, and MatMul is FULLY_CONNECTED."""
    from onnx import TensorProto, helper, numpy_helper

    from tests.converters.onnx.harness import verify_levels
    w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "w")
    nodes = [helper.make_node("Identity", ["w"], ["w_shared"]), helper.make_node("MatMul", ["x", "w_shared"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3])], initializer=[w])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    results = verify_levels(data, levels=(1, 8))
    assert "FULLY_CONNECTED" in [op.code.name for op in results[8].model.operations]

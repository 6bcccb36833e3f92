"""Tolerances that follow the data: a dequantized float output is judged in steps of its scale."""
import numpy as np

from converters.parity import check, dequantized_steps
from converters.tflite import read
from converters.tflite.authoring import GraphBuilder
from converters.tolerance import FLOAT32_ATOL, allowed_error, within_tolerance

SCALE = 0.05


def quantize_dequantize_model(path):
    g = GraphBuilder()
    x = g.input("x", [1, 8])
    q = g.tensor("q", [1, 8], "INT8", scale=SCALE, zero_point=3)
    g.op("QUANTIZE", [x], [q])
    y = g.tensor("y", [1, 8])
    g.op("DEQUANTIZE", [q], [y])
    g.output(y)
    path.write_bytes(g.finish())


def test_dequantized_outputs_get_one_step_of_their_scale(tmp_path):
    src = tmp_path / "qdq.tflite"
    quantize_dequantize_model(src)
    graph = read(str(src)).main
    (step,) = dequantized_steps(graph).values()
    assert step[0] == np.float32(SCALE) and "'q'" in step[1] and "DEQUANTIZE" in step[1]
    report = check(str(src), samples=2).as_dict()
    (out,) = report["outputs"]
    assert report["passed"]
    assert abs(out["allowed"] - (np.float32(SCALE) + FLOAT32_ATOL)) < 1e-12      # not 1e-5 + 1e-4 * max|ref|
    assert "step" in out["tolerance"] and "'q'" in out["tolerance"]
    # --atol replaces the rule; --max-lsb 2 allows two steps
    assert "--atol" in check(str(src), atol=1e-3).as_dict()["outputs"][0]["tolerance"]
    two = check(str(src), max_lsb=2).as_dict()["outputs"][0]
    assert abs(two["allowed"] - (2 * np.float32(SCALE) + FLOAT32_ATOL)) < 1e-12


def test_one_step_passes_and_two_steps_fail():
    ref = np.array([0.5, 1.0], np.float32)
    one = ref + np.float32(SCALE)
    two = ref + np.float32(2 * SCALE)
    assert within_tolerance(ref, one, False, step=SCALE)[0]
    assert not within_tolerance(ref, two, False, step=SCALE)[0]
    assert not within_tolerance(ref, one, False)[0]           # the plain float32 rule would call it a mismatch
    assert allowed_error(ref, False)[1].startswith("float32 default")
    assert allowed_error(ref.astype(np.int8), True)[1] == "1 stored unit(s)"


def test_onnx_dequantize_linear_outputs_get_one_step(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    inits = [numpy_helper.from_array(np.array(SCALE, np.float32), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "zp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], initializer=inits)
    path = tmp_path / "qdq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    from converters.onnx import read as read_onnx
    (step,) = dequantized_steps(read_onnx(str(path)).main).values()
    assert step[0] == np.float32(SCALE) and "DequantizeLinear" in step[1]
    out = check(str(path)).as_dict()["outputs"][0]
    assert out["passed"] and "step" in out["tolerance"]

"""Tensors of rank > 4 whose extra axes are unit axes convert with those axes dropped (squeeze_pass.py):
elementwise ops, Transpose, Softmax, Concat, broadcast constants and reshape chains through 5-D, in both
importers, checked against onnxruntime and LiteRT; what truly needs rank 5 is reported with its dimensions."""
import numpy as np
from onnx import helper as h

from converters.onnx import convert as convert_onnx
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels
from converters.tflite.authoring import GraphBuilder
from tests.converters.tflite.harness import assert_matches_litert

R = np.random.default_rng(7)


def onnx_chain():
    """[1, 3, 4, 5] -> Unsqueeze -> [1, 1, 3, 4, 5] -> Relu, Softmax(axis 2), Transpose, Mul by a
    [1, 1, 3, 1, 1] constant, Concat(axis 2) -> Reshape [1, 6, 5, 4] (graph output)."""
    inits = {"axes": np.asarray([0], np.int64), "k": R.normal(size=(1, 1, 3, 1, 1)).astype(np.float32),
             "shape": np.asarray([1, 6, 5, 4], np.int64)}
    nodes = [h.make_node("Unsqueeze", ["x", "axes"], ["u"]), h.make_node("Relu", ["u"], ["r"]),
             h.make_node("Softmax", ["r"], ["s"], axis=2),
             h.make_node("Transpose", ["s"], ["t"], perm=[0, 1, 2, 4, 3]),
             h.make_node("Mul", ["t", "k"], ["m"]), h.make_node("Concat", ["m", "t"], ["c"], axis=2),
             h.make_node("Reshape", ["c", "shape"], ["y"])]
    return make_model(nodes, [("x", np.float32, [1, 3, 4, 5])], ["y"], inits)


def test_onnx_unit_axes_are_squeezed_around_every_op():
    results = verify_levels(onnx_chain(), levels=(2, 4, 8))
    r = results[8]
    assert r.complete
    squeezed = {t.name: (t.squeezed_from, t.shape) for t in r.source.main.tensors if t.squeezed_from}
    assert squeezed["t"] == ((1, 1, 3, 5, 4), (1, 3, 5, 4)) and set(squeezed) == {"u", "r", "s", "t", "m", "c"}
    assert all(len(o.type.dimensions) <= 4 for o in r.model.operands)


def test_onnx_rank5_without_unit_axes_is_reported_with_its_dimensions():
    inits = {"shape": np.asarray([2, 3, 2, 2, 5], np.int64)}
    data = make_model([h.make_node("Reshape", ["x", "shape"], ["r"]), h.make_node("Relu", ["r"], ["y"])],
                      [("x", np.float32, [2, 6, 2, 5])], ["y"], inits)
    r = convert_onnx(data)
    reasons = {n.op: (n.reason_code, n.reason) for n in r.unsupported}
    assert reasons["Reshape"][0] == "rank" and "[2, 3, 2, 2, 5]" in reasons["Reshape"][1], reasons


def test_onnx_a_unit_axis_a_node_acts_along_is_kept():
    # Softmax along the unit axis: dropping it would change what the softmax normalises over, so it stays
    # and two other axes merge instead
    data = make_model([h.make_node("Unsqueeze", ["x", "axes"], ["u"]), h.make_node("Softmax", ["u"], ["s"], axis=0),
                       h.make_node("Squeeze", ["s", "axes"], ["y"])],
                      [("x", np.float32, [2, 3, 4, 5])], ["y"], {"axes": np.asarray([0], np.int64)})
    r = verify_levels(data, levels=(8,))[8]
    shapes = {t.name: t.shape for t in r.source.main.tensors if t.squeezed_from}
    assert shapes == {"u": (1, 6, 4, 5), "s": (1, 6, 4, 5)}, shapes


def test_tflite_unit_axes_are_squeezed():
    g = GraphBuilder()
    x = g.input("x", [1, 4, 6])
    r5 = g.tensor("r5", [1, 1, 2, 2, 6])
    g.op("RESHAPE", [x, g.const("s5", np.int32([1, 1, 2, 2, 6]))], [r5], "ReshapeOptions", new_shape=[1, 1, 2, 2, 6])
    t5 = g.tensor("t5", [1, 1, 2, 2, 6])
    g.op("TRANSPOSE", [r5, g.const("perm", np.int32([0, 1, 3, 2, 4]))], [t5])
    a5 = g.tensor("a5", [1, 1, 2, 2, 6])
    g.op("ADD", [t5, g.const("k", R.normal(size=(1, 1, 1, 1, 6)).astype(np.float32))], [a5], "AddOptions")
    s5 = g.tensor("s5t", [1, 1, 2, 2, 6])
    g.op("SOFTMAX", [a5], [s5], "SoftmaxOptions", beta=1.0)
    c5 = g.tensor("c5", [1, 1, 2, 2, 12])
    g.op("CONCATENATION", [s5, a5], [c5], "ConcatenationOptions", axis=4)
    y = g.tensor("y", [1, 4, 12])
    g.op("RESHAPE", [c5, g.const("s3", np.int32([1, 4, 12]))], [y])
    g.output(y)
    r = assert_matches_litert(g.finish(), 8)
    assert all(len(o.type.dimensions) <= 4 for o in r.model.operands)
    assert {t.name for t in r.source.main.tensors if t.squeezed_from} == {"r5", "t5", "a5", "s5t", "c5"}


def test_squeezed_partition_boundaries_pass_partial_parity(tmp_path):
    # level 1 has no SOFTMAX/TRANSPOSE: the squeezed 'r' and 't' cross partition boundaries
    from converters.parity import check
    path = tmp_path / "chain.onnx"
    path.write_bytes(onnx_chain())
    d = check(str(path), feature_level=1, partial=True).as_dict()
    assert d["passed"] and len(d["partitions"]) == 2
    assert all(p["passed"] for p in d["partitions"])


def test_coverage_reports_the_source_shapes_of_squeezed_tensors():
    from converters.coverage import build_report
    from converters.onnx import read
    report = build_report(read(onnx_chain()), 8)
    relu = next(n for n in report["nodes"] if n["op"] == "Relu")
    assert relu["supported"] and relu["outputs"][0]["shape"] == [1, 1, 3, 4, 5]

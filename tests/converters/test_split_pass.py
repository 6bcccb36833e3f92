"""The split of rank-5 regions with no unit axis (converters/split_pass.py): attention's q, k, v axis is held as
one rank-4 chain per slice, from the Reshape that makes it to the Gather / Split that takes q, k and v out, in
both importers; compared with onnxruntime (data movement bit for bit) and LiteRT. Regions that leave through
anything but a pick of slices keep their rank and are reported."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper as h

from converters.onnx import convert as convert_onnx
from converters.onnx.authoring import make_model
from converters.tflite.authoring import GraphBuilder
from tests.converters.onnx.harness import parity, run_converted
from tests.converters.tflite.harness import assert_matches_litert

R = np.random.default_rng(19)
I64 = lambda *v: np.asarray(v, np.int64)  # noqa: E731


def attention(b: int, unbind: str = "gather", n: int = 17, heads: int = 4, d: int = 16) -> bytes:
    """A timm ViT attention block: qkv = x @ w -> Reshape [b, n, 3, heads, d] -> Transpose [2, 0, 3, 1, 4] ->
    q, k, v (Gather of 0, 1, 2, or Split + Squeeze) -> softmax(q k^T * scale) v -> [b, n, heads * d]."""
    c = heads * d
    inits = {"w": (R.normal(size=(c, 3 * c)) / 8).astype(np.float32), "shape5": I64(b, n, 3, heads, d),
             "shape3": I64(b, n, c), "scale": np.array(d ** -0.5, np.float32)}
    nodes = [h.make_node("MatMul", ["x", "w"], ["qkv"]), h.make_node("Reshape", ["qkv", "shape5"], ["r5"]),
             h.make_node("Transpose", ["r5"], ["t5"], perm=[2, 0, 3, 1, 4])]
    if unbind == "gather":
        for i, name in enumerate("qkv"):
            inits[f"i{i}"] = np.array(i - 3 if i == 2 else i, np.int64)  # (v as index -1)
            nodes.append(h.make_node("Gather", ["t5", f"i{i}"], [name + "_"], axis=0))
    else:
        inits["ax0"] = I64(0)
        nodes.append(h.make_node("Split", ["t5"], ["q5", "k5", "v5"], axis=0))
        nodes += [h.make_node("Squeeze", [f"{x}5", "ax0"], [x + "_"]) for x in "qkv"]
    nodes += [h.make_node("Mul", ["q_", "scale"], ["qs"]), h.make_node("Transpose", ["k_"], ["kt"], perm=[0, 1, 3, 2]),
              h.make_node("MatMul", ["qs", "kt"], ["att"]), h.make_node("Softmax", ["att"], ["p"], axis=-1),
              h.make_node("MatMul", ["p", "v_"], ["o"]), h.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              h.make_node("Reshape", ["ot", "shape3"], ["y"])]
    return make_model(nodes, [("x", np.float32, [b, n, c])], ["y"], inits, opset=13)


def _complete_rank4(r):
    assert r.complete, [(u.op, u.reason) for u in r.unsupported]
    assert all(len(o.type.dimensions) <= 4 for o in r.model.operands)
    return [o.code.name for o in r.model.operations]


@pytest.mark.parametrize("unbind", ["gather", "split"])
@pytest.mark.parametrize("batch", [1, 2, 3])
def test_vit_attention_matches_onnxruntime(batch, unbind):
    data = attention(batch, unbind)
    r = convert_onnx(data, 8)
    ops = _complete_rank4(r)
    assert not parity(r, data, seeds=(0, 1))
    if batch > 1:  # no unit axis: q, k and v are sliced out of the qkv projection, one TRANSPOSE each
        assert ops.count("STRIDED_SLICE") == 3 and ops.count("TRANSPOSE") == 3 + 2
    graph = r.source.main
    assert len(r.nodes) == len(graph.nodes)  # coverage still counts the source's nodes


def test_region_with_elementwise_ops_is_bit_exact():
    """Relu, an Add of a constant holding the split axis (cut per slice) and of a run-time tensor that does not
    hold it, inside the region: data movement and exact arithmetic, equal to onnxruntime bit for bit."""
    bias = R.normal(size=(3, 1, 4, 1, 5)).astype(np.float32)
    nodes = [h.make_node("Reshape", ["x", "s5"], ["r"]), h.make_node("Relu", ["r"], ["a"]),
             h.make_node("Transpose", ["a"], ["t"], perm=[2, 0, 3, 1, 4]), h.make_node("Add", ["t", "bias"], ["u"]),
             h.make_node("Add", ["u", "z"], ["v"])]
    nodes += [h.make_node("Gather", ["v", f"i{k}"], [f"y{k}"], axis=0) for k in range(3)]
    inits = {"s5": I64(2, 6, 3, 4, 5), "bias": bias, **{f"i{k}": np.array(k, np.int64) for k in range(3)}}
    data = make_model(nodes, [("x", np.float32, [2, 6, 60]), ("z", np.float32, [4, 6, 5])],
                      ["y0", "y1", "y2"], inits, opset=13)
    r = convert_onnx(data, 8)
    _complete_rank4(r)
    feeds = {"x": R.normal(size=(2, 6, 60)).astype(np.float32), "z": R.normal(size=(4, 6, 5)).astype(np.float32)}
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = run_converted(r, list(feeds.values()))
    for a, b in zip(ref, got):
        assert np.array_equal(a, b.reshape(a.shape))


def test_region_that_leaves_through_a_reshape_keeps_its_rank():
    """A Reshape out of the transposed tensor reads all of it: nothing to split, the rank is reported."""
    nodes = [h.make_node("Reshape", ["x", "s5"], ["r"]), h.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4]),
             h.make_node("Reshape", ["t", "s3"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 6, 60])], ["y"], {"s5": I64(2, 6, 3, 4, 5), "s3": I64(3, 8, 30)},
                      opset=13)
    r = convert_onnx(data, 8)
    assert {u.reason_code for u in r.unsupported} == {"rank"}


def test_too_many_slices_keep_the_rank():
    nodes = [h.make_node("Reshape", ["x", "s5"], ["r"]), h.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4])]
    nodes += [h.make_node("Gather", ["t", "i"], ["y"], axis=0)]
    data = make_model(nodes, [("x", np.float32, [2, 3, 17 * 8])], ["y"], {"s5": I64(2, 3, 17, 2, 4),
                                                                          "i": np.array(1, np.int64)}, opset=13)
    assert {u.reason_code for u in convert_onnx(data, 8).unsupported} == {"rank"}


def tflite_attention(batch: int, unbind: str = "gather") -> bytes:
    """The TFLite form (litert-torch): RESHAPE [b, 17, 3, 4, 16] -> TRANSPOSE -> GATHER of 0, 1, 2 (or SPLIT into
    pieces of 1, each RESHAPEd) -> q * k, v."""
    g = GraphBuilder()
    x = g.input("x", [batch, 17, 192])
    r5 = g.tensor("r5", [batch, 17, 3, 4, 16])
    g.op("RESHAPE", [x, g.const("shape", np.asarray([batch, 17, 3, 4, 16], np.int32))], [r5], "ReshapeOptions",
         new_shape=[batch, 17, 3, 4, 16])
    t5 = g.tensor("t5", [3, batch, 4, 17, 16])
    g.op("TRANSPOSE", [r5, g.const("perm", np.asarray([2, 0, 3, 1, 4], np.int32))], [t5], "TransposeOptions")
    picks = [g.tensor(f"p{k}", [batch, 4, 17, 16]) for k in range(3)]
    if unbind == "gather":
        for k, p in enumerate(picks):
            g.op("GATHER", [t5, g.const(f"i{k}", np.asarray(k, np.int32))], [p], "GatherOptions", axis=0)
    else:
        pieces = [g.tensor(f"piece{k}", [1, batch, 4, 17, 16]) for k in range(3)]
        g.op("SPLIT", [g.const("axis", np.asarray(0, np.int32)), t5], pieces, "SplitOptions", num_splits=3)
        for k, (piece, p) in enumerate(zip(pieces, picks)):
            g.op("RESHAPE", [piece, g.const(f"s{k}", np.asarray([batch, 4, 17, 16], np.int32))], [p],
                 "ReshapeOptions", new_shape=[batch, 4, 17, 16])
    qk = g.tensor("qk", [batch, 4, 17, 16])
    g.op("MUL", [picks[0], picks[1]], [qk], "MulOptions")
    g.output(qk, picks[2])
    return g.finish()


@pytest.mark.parametrize("unbind", ["gather", "split"])
@pytest.mark.parametrize("batch", [1, 2])
def test_tflite_attention_matches_litert(batch, unbind):
    r = assert_matches_litert(tflite_attention(batch, unbind), 8)
    ops = _complete_rank4(r)
    if batch > 1:
        assert ops.count("TRANSPOSE") == 3


def test_quantized_region_matches_onnxruntime():
    """QDQ around the data movement (a quantized ViT): the region's Q/DQ convert per slice."""
    p = {"s5": I64(2, 6, 3, 4, 5), "s": np.float32(0.05), "z": np.uint8(128),
         **{f"i{k}": np.array(k, np.int64) for k in range(3)}}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), h.make_node("Reshape", ["q", "s5"], ["r"]),
             h.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4]),
             h.make_node("DequantizeLinear", ["t", "s", "z"], ["f"])]
    nodes += [h.make_node("Gather", ["f", f"i{k}"], [f"y{k}"], axis=0) for k in range(3)]
    data = make_model(nodes, [("x", np.float32, [2, 6, 60])], ["y0", "y1", "y2"], p, opset=13)
    r = convert_onnx(data, 8)
    _complete_rank4(r)
    assert not parity(r, data, seeds=(0, 1))


def test_split_region_passes_layerwise_parity_and_coverage(tmp_path):
    from converters.coverage import report_for_path
    from converters.parity import check
    path = tmp_path / "attention.onnx"
    path.write_bytes(attention(2))
    d = check(str(path), feature_level=8, layerwise=True).as_dict()
    assert d["passed"], d
    report = report_for_path(str(path), 8)
    assert len(report["nodes"]) == 13 and all(n["supported"] for n in report["nodes"])
    # without TRANSPOSE (level 1) the region's nodes stay on the CPU together: no partition reads a slice
    low = report_for_path(str(path), 1)
    region = [n for n in low["nodes"] if n["op"] == "Gather" or n["index"] in (1, 2)]
    assert len(region) == 5
    assert not any(n["supported"] for n in region), region
    assert {n["reason_code"] for n in region} == {"feature_level_too_low"}


def test_unbind_as_slices_matches_onnxruntime():
    """torch's qkv.unbind(0) as the dynamo exporter writes it: a Slice of one index and a Squeeze per slice; a
    Slice that also cuts another axis is not a pick of slices (the rank is reported)."""
    def model(cut_more: bool) -> bytes:
        nodes = [h.make_node("Reshape", ["x", "s5"], ["r"]),
                 h.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4])]
        inits = {"s5": I64(2, 6, 3, 4, 5), "ax": I64(0), "ax2": I64(0, 4)}
        for k in range(3):
            inits[f"b{k}"], inits[f"e{k}"] = (I64(k, 1), I64(k + 1, 4)) if cut_more else (I64(k), I64(k + 1))
            nodes += [h.make_node("Slice", ["t", f"b{k}", f"e{k}", "ax2" if cut_more else "ax"], [f"p{k}"]),
                      h.make_node("Squeeze", [f"p{k}", "ax"], [f"y{k}"])]
        return make_model(nodes, [("x", np.float32, [2, 6, 60])], ["y0", "y1", "y2"], inits, opset=13)
    data = model(False)
    r = convert_onnx(data, 8)
    _complete_rank4(r)
    assert not parity(r, data)
    assert {u.reason_code for u in convert_onnx(model(True), 8).unsupported} == {"rank"}


def test_a_cpu_node_inside_the_region_keeps_it_on_the_cpu(tmp_path):
    """Partitions are runs of nodes in graph order: a node NNAPI cannot run between the region's first and last
    node keeps the whole region on the CPU (slices never cross a partition boundary); partial parity holds."""
    from converters.parity import check
    nodes = [h.make_node("Reshape", ["x", "s5"], ["r"]), h.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4]),
             h.make_node("Gather", ["t", "i0"], ["y0"], axis=0), h.make_node("Trilu", ["y0"], ["w"]),
             h.make_node("Add", ["t", "w"], ["u"]),  # (in the region, after the Trilu)
             h.make_node("Gather", ["u", "i1"], ["y1"], axis=0), h.make_node("Gather", ["u", "i2"], ["y2"], axis=0),
             h.make_node("Relu", ["y2"], ["z"])]
    inits = {"s5": I64(2, 6, 3, 4, 5), **{f"i{k}": np.array(k, np.int64) for k in range(3)}}
    data = make_model(nodes, [("x", np.float32, [2, 6, 60])], ["y0", "y1", "z"], inits, opset=14)
    r = convert_onnx(data, 8)
    assert [u.index for u in r.unsupported] == list(range(7))
    assert {u.reason_code for u in r.unsupported} == {"unsupported_operator"}
    path = tmp_path / "cut.onnx"
    path.write_bytes(data)
    assert check(str(path), feature_level=8, partial=True).as_dict()["passed"]

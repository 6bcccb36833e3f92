"""The rank pass (converters/squeeze_pass.py, converters/rank_ops.py) on regions of rank-5 tensors with no
unit axis to drop: adjacent axes that every node treats alike are merged (a YOLO head at batch 2, QDQ-wrapped
data movement, reductions, softmax), in both importers. Data movement and exact arithmetic are compared with
onnxruntime bit for bit; what has no exact rank-4 form keeps its rank and is reported."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper as h

from converters.onnx import convert as convert_onnx
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import run_converted, verify_levels
from converters.tflite.authoring import GraphBuilder
from tests.converters.tflite.harness import assert_matches_litert

R = np.random.default_rng(11)
I64 = lambda *v: np.asarray(v, np.int64)  # noqa: E731


def _ort(data: bytes, feeds: dict) -> list:
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)


def assert_exact(data: bytes, feeds: dict, level: int = 8):
    """Convert fully, every operand of rank 4 at most, outputs bit-equal to onnxruntime's."""
    r = convert_onnx(data, feature_level=level)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert all(len(o.type.dimensions) <= 4 for o in r.model.operands)
    got = run_converted(r, list(feeds.values()))
    for ref, g in zip(_ort(data, feeds), got):
        assert np.array_equal(ref, g.reshape(ref.shape)), np.abs(ref - g.reshape(ref.shape)).max()
    return r


def yolo_head(batch: int, decode: str = "exact") -> bytes:
    """[batch, 27, 4, 4] -> Reshape [batch, 3, 9, 4, 4] -> Transpose [0, 1, 3, 4, 2] -> xy = slice * 2 - 0.5 +
    grid, wh = slice^2 * anchors, rest = slice -> Concat(-1) -> Reshape [batch, 48, 9] (decode "yolo": the
    Sigmoid and Pow of YOLOv5)."""
    grid = R.integers(0, 4, size=(1, 1, 4, 4, 2)).astype(np.float32)
    anchors = R.uniform(1, 9, size=(1, 3, 1, 1, 2)).astype(np.float32)
    inits = {"shape5": I64(batch, 3, 9, 4, 4), "shape3": I64(batch, 48, 9), "grid": grid, "anchors": anchors,
             "two": np.float32(2), "half": np.float32(0.5), "s0": I64(0), "e2": I64(2), "s2": I64(2), "e4": I64(4),
             "e9": I64(2 ** 62), "ax": I64(4), "ax_neg": I64(-1)}
    act = [h.make_node("Sigmoid", ["t"], ["a"])] if decode == "yolo" else [h.make_node("Identity", ["t"], ["a"])]
    power = (h.make_node("Pow", ["w2", "two"], ["wp"]) if decode == "yolo" else h.make_node("Mul", ["w2", "w2"], ["wp"]))
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]),
             h.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 3, 4, 2]), *act,
             h.make_node("Slice", ["a", "s0", "e2", "ax"], ["xy0"]),
             h.make_node("Mul", ["xy0", "two"], ["xy1"]), h.make_node("Sub", ["xy1", "half"], ["xy2"]),
             h.make_node("Add", ["xy2", "grid"], ["xy"]),
             h.make_node("Slice", ["a", "s2", "e4", "ax_neg"], ["w0"]),
             h.make_node("Mul", ["w0", "two"], ["w2"]), power, h.make_node("Mul", ["wp", "anchors"], ["wh"]),
             h.make_node("Slice", ["a", "e4", "e9", "ax"], ["rest"]),
             h.make_node("Concat", ["xy", "wh", "rest"], ["c"], axis=-1),
             h.make_node("Reshape", ["c", "shape3"], ["y"])]
    return make_model(nodes, [("x", np.float32, [batch, 27, 4, 4])], ["y"], inits)


def test_yolo_head_at_batch_2_merges_axes_and_matches_onnxruntime_exactly():
    data = yolo_head(2)
    r = assert_exact(data, {"x": R.normal(size=(2, 27, 4, 4)).astype(np.float32)})
    shapes = {t.name: (t.squeezed_from, t.shape) for t in r.source.main.tensors if t.squeezed_from}
    # the grid's rows and columns are one axis to every node (and the constants need no broadcast for it)
    assert shapes["t"] == ((2, 3, 4, 4, 9), (2, 3, 16, 9)), shapes
    assert shapes["xy"] == ((2, 3, 4, 4, 2), (2, 3, 16, 2))
    grid = next(t for t in r.source.main.tensors if t.name.startswith("grid/"))
    assert grid.shape == (1, 1, 16, 2)


def test_yolo_head_with_sigmoid_and_pow_matches_onnxruntime():
    results = verify_levels(yolo_head(2, "yolo"), levels=(3, 8))
    assert results[8].complete


def test_merged_tensors_pass_layerwise_and_partial_parity(tmp_path):
    from converters.parity import check
    path = tmp_path / "head.onnx"
    path.write_bytes(yolo_head(2, "yolo"))
    d = check(str(path), feature_level=8, layerwise=True).as_dict()
    assert d["passed"], d
    layers = {row["source_tensor"]: row for row in d["layers"]}
    assert {"r", "t", "a", "xy", "c"} <= set(layers) and all(row["passed"] for row in layers.values())
    # level 1 has no TRANSPOSE: the merged tensors cross partition boundaries
    d = check(str(path), feature_level=1, partial=True).as_dict()
    assert d["passed"] and len(d["partitions"]) >= 2, d


def test_qdq_wrapped_rank5_data_movement_is_seen_through():
    """The qkv split as onnxruntime's QDQ quantizer writes it: Q/DQ pairs around the 5-D Reshape and Transpose."""
    s, z = np.float32(0.02), np.int8(-3)
    inits = {"shape5": I64(1, 8, 1, 3, 16), "s": s, "z": z, "ax": I64(3)}

    def qdq(x, name):
        return [h.make_node("QuantizeLinear", [x, "s", "z"], [name + "_q"]),
                h.make_node("DequantizeLinear", [name + "_q", "s", "z"], [name])]
    nodes = [*qdq("x", "xd"), h.make_node("Reshape", ["xd", "shape5"], ["r"]), *qdq("r", "rd"),
             h.make_node("Transpose", ["rd"], ["t"], perm=[3, 1, 2, 0, 4]), *qdq("t", "td"),
             h.make_node("Squeeze", ["td", "ax"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [8, 48])], ["y"], inits)
    r = assert_exact(data, {"x": R.uniform(-2, 2, size=(8, 48)).astype(np.float32)})
    assert {t.name for t in r.source.main.tensors if t.squeezed_from} >= {"r", "rd_q", "rd", "t", "td_q", "td"}


@pytest.mark.parametrize("op,attrs", [("ReduceMax", dict(axes=[2], keepdims=0)),
                                      ("ReduceMax", dict(axes=[2], keepdims=1)),
                                      ("ArgMax", dict(axis=3, keepdims=0)),
                                      ("Softmax", dict(axis=2))])
def test_reductions_and_softmax_keep_their_axis_and_merge_the_others(op, attrs):
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]), h.make_node("Relu", ["r"], ["u"]),
             h.make_node(op, ["u"], ["m"], **attrs), h.make_node("Flatten", ["m"], ["y"], axis=1)]
    data = make_model(nodes, [("x", np.float32, [2, 3, 20, 6])], ["y"], {"shape5": I64(2, 3, 4, 5, 6)})
    feeds = {"x": R.normal(size=(2, 3, 20, 6)).astype(np.float32)}
    if op == "Softmax":
        verify_levels(data, levels=(8,))
        return
    assert_exact(data, feeds)


def test_old_softmax_keeps_the_flattened_tail():
    """Softmax before opset 13 works on [prod(:axis), prod(axis:)]: the head may merge, the tail stays."""
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]), h.make_node("Softmax", ["r"], ["s"], axis=2),
             h.make_node("Reshape", ["s", "shape4"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 3, 4, 30])], ["y"],
                      {"shape5": I64(2, 3, 4, 5, 6), "shape4": I64(2, 3, 4, 30)}, opset=11)
    r = verify_levels(data, levels=(8,))[8]
    s = next(t for t in r.source.main.tensors if t.name == "s")
    assert s.shape == (6, 4, 5, 6)


def test_a_computed_input_broadcast_in_part_keeps_the_rank():
    """z [3, 1, 5, 1] against [2, 3, 4, 5, 6]: every neighbouring pair is partly broadcast (or absent) in z."""
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]), h.make_node("Reshape", ["w", "shapez"], ["z"]),
             h.make_node("Add", ["r", "z"], ["a"]), h.make_node("Reshape", ["a", "shape4"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 3, 20, 6]), ("w", np.float32, [15])], ["y"],
                      {"shape5": I64(2, 3, 4, 5, 6), "shapez": I64(3, 1, 5, 1), "shape4": I64(2, 3, 20, 6)})
    r = convert_onnx(data)
    refused = {n.op: n.reason for n in r.unsupported}
    assert set(refused) == {"Reshape", "Add"} and "[2, 3, 4, 5, 6]" in refused["Add"], refused
    assert {n.reason_code for n in r.unsupported} == {"rank"}


def test_a_broadcast_input_at_one_over_a_pair_still_lets_it_merge():
    """z [3, 1, 1, 6]: the pair (4, 5) is 1 in z throughout, so it merges and z becomes [3, 1, 6]."""
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]), h.make_node("Reshape", ["w", "shapez"], ["z"]),
             h.make_node("Add", ["r", "z"], ["a"]), h.make_node("Reshape", ["a", "shape4"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 3, 20, 6]), ("w", np.float32, [18])], ["y"],
                      {"shape5": I64(2, 3, 4, 5, 6), "shapez": I64(3, 1, 1, 6), "shape4": I64(2, 3, 20, 6)})
    r = assert_exact(data, {"x": R.normal(size=(2, 3, 20, 6)).astype(np.float32),
                            "w": R.normal(size=(18,)).astype(np.float32)})
    z = next(t for t in r.source.main.tensors if t.name == "z")
    assert (z.squeezed_from, z.shape) == ((3, 1, 1, 6), (3, 1, 6))


def test_a_lower_rank_computed_input_at_one_on_the_pair_lets_it_merge():
    """z [1, 5, 6] is right-aligned to the last three axes of [1, 3, 4, 5, 6]: it lacks the axis of 3 and holds
    the axis of 4 at 1, so the pair (3, 4) merges with z unchanged (the first axis is the reduced one)."""
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]), h.make_node("ReduceMax", ["r"], ["m"], axes=[0]),
             h.make_node("Reshape", ["w", "shapez"], ["z"]), h.make_node("Add", ["m", "z"], ["a"]),
             h.make_node("Reshape", ["a", "shape4"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 3, 20, 6]), ("w", np.float32, [30])], ["y"],
                      {"shape5": I64(2, 3, 4, 5, 6), "shapez": I64(1, 5, 6), "shape4": I64(1, 3, 20, 6)})
    r = assert_exact(data, {"x": R.normal(size=(2, 3, 20, 6)).astype(np.float32),
                            "w": R.normal(size=(30,)).astype(np.float32)})
    shapes = {t.name: t.shape for t in r.source.main.tensors}
    assert shapes["m"] == (1, 12, 5, 6) and shapes["z"] == (1, 5, 6), shapes


def test_a_transpose_that_separates_every_pair_keeps_the_rank():
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]),
             h.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 4, 1, 3]),
             h.make_node("Reshape", ["t", "shape4"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [2, 3, 20, 6])], ["y"],
                      {"shape5": I64(2, 3, 4, 5, 6), "shape4": I64(4, 2, 6, 15)})
    r = convert_onnx(data)
    assert {n.reason_code for n in r.unsupported} == {"rank"}
    assert not any(t.squeezed_from for t in r.source.main.tensors)


def tflite_reduced(g: GraphBuilder, y: int) -> dict:
    """Finish the graph with output y; it converts fully in rank 4 and matches LiteRT. The new shapes."""
    g.output(y)
    r = assert_matches_litert(g.finish(), 8)
    assert all(len(o.type.dimensions) <= 4 for o in r.model.operands)
    return {t.name: t.shape for t in r.source.main.tensors if t.squeezed_from}


def test_tflite_yolo_head_at_batch_2_merges_axes():
    g = GraphBuilder()
    x = g.input("x", [2, 4, 4, 27])
    r5 = g.tensor("r5", [2, 4, 4, 3, 9])
    g.op("RESHAPE", [x, g.const("s5", np.int32([2, 4, 4, 3, 9]))], [r5], "ReshapeOptions", new_shape=[2, 4, 4, 3, 9])
    t5 = g.tensor("t5", [2, 3, 4, 4, 9])
    g.op("TRANSPOSE", [r5, g.const("perm", np.int32([0, 3, 1, 2, 4]))], [t5])
    a5 = g.tensor("a5", [2, 3, 4, 4, 9])
    g.op("LOGISTIC", [t5], [a5])
    xy = g.tensor("xy", [2, 3, 4, 4, 2])
    g.op("STRIDED_SLICE", [a5, g.const("b", np.int32([0, 0, 0, 0, 0])), g.const("e", np.int32([0, 0, 0, 0, 2])),
                           g.const("st", np.int32([1, 1, 1, 1, 1]))], [xy], "StridedSliceOptions",
         begin_mask=0b1111, end_mask=0b1111)
    wh = g.tensor("wh", [2, 3, 4, 4, 2])
    g.op("MUL", [xy, g.const("anchors", R.uniform(1, 9, size=(1, 3, 1, 1, 2)).astype(np.float32))], [wh],
         "MulOptions")
    rest = g.tensor("rest", [2, 3, 4, 4, 7])
    g.op("SLICE", [a5, g.const("sb", np.int32([0, 0, 0, 0, 2])), g.const("ss", np.int32([-1, -1, -1, -1, 7]))],
         [rest], "SliceOptions")
    c5 = g.tensor("c5", [2, 3, 4, 4, 9])
    g.op("CONCATENATION", [wh, rest], [c5], "ConcatenationOptions", axis=4)
    m4 = g.tensor("m4", [2, 4, 4, 9])
    g.op("MEAN", [c5, g.const("mean_axes", np.int32([1]))], [m4], "ReducerOptions", keep_dims=False)
    y = g.tensor("y", [2, 144])
    g.op("RESHAPE", [m4, g.const("s2", np.int32([2, 144]))], [y])
    shapes = tflite_reduced(g, y)
    # the rows and columns are neighbours in every tensor: one axis of 16
    assert shapes["r5"] == (2, 16, 3, 9) and shapes["t5"] == (2, 3, 16, 9), shapes
    assert shapes["c5"] == (2, 3, 16, 9) and shapes["m4"] == (2, 16, 9), shapes


def test_tflite_split_and_softmax_keep_their_axes_and_the_rest_merges():
    g = GraphBuilder()
    x = g.input("x", [2, 6, 20])
    r5 = g.tensor("r5", [2, 3, 2, 4, 5])
    g.op("RESHAPE", [x, g.const("s5", np.int32([2, 3, 2, 4, 5]))], [r5], "ReshapeOptions", new_shape=[2, 3, 2, 4, 5])
    parts = [g.tensor(f"p{k}", [2, 1, 2, 4, 5]) for k in range(3)]
    g.op("SPLIT", [g.const("axis", np.int32(1)), r5], parts, "SplitOptions", num_splits=3)
    s5 = g.tensor("s5t", [2, 1, 2, 4, 5])
    g.op("SOFTMAX", [parts[0]], [s5], "SoftmaxOptions", beta=1.0)
    a5 = g.tensor("a5", [2, 1, 2, 4, 5])
    g.op("ADD", [s5, parts[2]], [a5], "AddOptions")
    y = g.tensor("y", [2, 40])
    g.op("RESHAPE", [a5, g.const("s2", np.int32([2, 40]))], [y])
    shapes = tflite_reduced(g, y)
    assert shapes["r5"] == (2, 3, 8, 5) and shapes["a5"] == (2, 1, 8, 5), shapes


def random_region(seed: int) -> tuple:
    """A seeded 5-D region between two Reshapes: Transpose, Mul by a constant with random unit axes, Slice +
    Concat along one axis, ReduceMax over another (kept), elementwise Max with a computed broadcast input."""
    rng = np.random.default_rng(seed)
    dims = [int(d) for d in rng.integers(1, 4, size=5)]
    dims[rng.integers(5)] = 2  # one axis to cut in two
    perm = [int(p) for p in rng.permutation(5)]
    t_dims = [dims[p] for p in perm]
    cut = next(a for a in range(5) if t_dims[a] >= 2)
    red = int(rng.choice([a for a in range(5) if a != cut]))
    k_dims = [d if rng.random() < 0.5 else 1 for d in t_dims]
    z_dims = [d if rng.random() < 0.5 else 1 for d in t_dims][int(rng.integers(0, 3)):]
    size = int(np.prod(dims))
    inits = {"shape5": I64(*dims), "k": rng.normal(size=k_dims).astype(np.float32), "b0": I64(0), "b1": I64(1),
             "end": I64(2 ** 62), "axis": I64(cut), "zshape": I64(*z_dims), "flat": I64(1, -1)}
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]), h.make_node("Transpose", ["r"], ["t"], perm=perm),
             h.make_node("Mul", ["t", "k"], ["m"]), h.make_node("Slice", ["m", "b0", "b1", "axis"], ["lo"]),
             h.make_node("Slice", ["m", "b1", "end", "axis"], ["hi"]),
             h.make_node("Concat", ["hi", "lo"], ["c"], axis=cut),
             h.make_node("ReduceMax", ["c"], ["s"], axes=[red], keepdims=1),
             h.make_node("Reshape", ["w", "zshape"], ["z"]), h.make_node("Max", ["s", "z"], ["u"]),
             h.make_node("Reshape", ["u", "flat"], ["y"])]
    zn = int(np.prod(z_dims))
    data = make_model(nodes, [("x", np.float32, [size]), ("w", np.float32, [zn])], ["y"], inits)
    feeds = {"x": rng.normal(size=size).astype(np.float32), "w": rng.normal(size=zn).astype(np.float32)}
    return data, feeds


@pytest.mark.parametrize("seed", range(24))
def test_random_regions_convert_exactly_or_are_refused_for_rank(seed):
    data, feeds = random_region(seed)
    r = convert_onnx(data)
    if not r.complete:
        assert {n.reason_code for n in r.unsupported} == {"rank"}, [(n.op, n.reason) for n in r.unsupported]
        return
    assert_exact(data, feeds)


@pytest.mark.parametrize("weights", ["constant", "computed"])
def test_batched_matmul_merges_its_batch_axes(weights):
    """[2, 3, 4, 5, 6] @ [6, 7] (or a computed [1, 3, 4, 6, 7], broadcast over the first batch axis)."""
    inits = {"shape5": I64(2, 3, 4, 5, 6), "shape4": I64(2, 3, 20, 7)}
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"])]
    if weights == "constant":
        inits["b"] = R.normal(size=(6, 7)).astype(np.float32)
    else:
        inits["bshape"] = I64(1, 3, 4, 6, 7)
        nodes.append(h.make_node("Reshape", ["w", "bshape"], ["b"]))
    nodes += [h.make_node("MatMul", ["r", "b"], ["m"]), h.make_node("Reshape", ["m", "shape4"], ["y"])]
    ins = [("x", np.float32, [2, 3, 20, 6])] + ([("w", np.float32, [504])] if weights == "computed" else [])
    r = verify_levels(make_model(nodes, ins, ["y"], inits), levels=(8,))[8]
    m = next(t for t in r.source.main.tensors if t.name == "m")
    assert m.shape == ((2, 12, 5, 7) if weights == "computed" else (6, 4, 5, 7)), m.shape


def test_tflite_batch_matmul_with_adj_y_merges_its_batch_axes():
    g = GraphBuilder()
    x = g.input("x", [2, 3, 4, 30])
    w = g.input("w", [2, 3, 4, 42])
    a5 = g.tensor("a5", [2, 3, 4, 5, 6])
    g.op("RESHAPE", [x, g.const("sa", np.int32([2, 3, 4, 5, 6]))], [a5], "ReshapeOptions", new_shape=[2, 3, 4, 5, 6])
    b5 = g.tensor("b5", [2, 3, 4, 7, 6])
    g.op("RESHAPE", [w, g.const("sb", np.int32([2, 3, 4, 7, 6]))], [b5], "ReshapeOptions", new_shape=[2, 3, 4, 7, 6])
    m5 = g.tensor("m5", [2, 3, 4, 5, 7])
    g.op("BATCH_MATMUL", [a5, b5], [m5], "BatchMatMulOptions", adj_x=False, adj_y=True)
    y = g.tensor("y", [2, 3, 4, 35])
    g.op("RESHAPE", [m5, g.const("sy", np.int32([2, 3, 4, 35]))], [y])
    shapes = tflite_reduced(g, y)
    assert shapes == {"a5": (6, 4, 5, 6), "b5": (6, 4, 7, 6), "m5": (6, 4, 5, 7)}, shapes


def test_one_class_on_two_axes_of_a_tensor_stays_two_axes():
    """r + transpose(r) swapping two axes of 3: to the Add they are one axis, so each tensor holds that class
    twice; it is kept as it is while the unit axis still goes."""
    nodes = [h.make_node("Reshape", ["x", "shape5"], ["r"]),
             h.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]), h.make_node("Add", ["r", "t"], ["a"]),
             h.make_node("Reshape", ["a", "shape4"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [3, 3, 4, 5])], ["y"],
                      {"shape5": I64(1, 3, 3, 4, 5), "shape4": I64(3, 3, 4, 5)})
    r = assert_exact(data, {"x": R.normal(size=(3, 3, 4, 5)).astype(np.float32)})
    shapes = {t.name: t.shape for t in r.source.main.tensors if t.squeezed_from}
    assert shapes == {"r": (3, 3, 4, 5), "t": (3, 3, 4, 5), "a": (3, 3, 4, 5)}, shapes


@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_gather_by_a_constant_table_drops_the_unit_index_axes(dtype):
    """torch's mask[positions] with a [1, 1, 1, 16] position table (the TorchScript exporter's BERT): the Gather's
    rank-5 output loses its unit index axes (the table is reshaped to match); bool data through uint8."""
    table = R.permutation(16).reshape(1, 1, 1, 16).astype(np.int64)
    nodes = [h.make_node("Gather", ["m", "i"], ["g"], axis=0), h.make_node("Reshape", ["g", "s"], ["y"])]
    if dtype == np.bool_:
        nodes = [h.make_node("Greater", ["x", "zero"], ["m"])] + nodes
        inits = {"zero": np.float32(0)}
    else:
        nodes = [h.make_node("Relu", ["x"], ["m"])] + nodes
        inits = {}
    data = make_model(nodes, [("x", np.float32, [16, 1])], ["y"], {"i": table, "s": I64(2, 8), **inits}, opset=13)
    r = convert_onnx(data, 8)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert all(len(o.type.dimensions) <= 4 for o in r.model.operands)
    x = R.normal(size=(16, 1)).astype(np.float32)
    ref = _ort(data, {"x": x})[0]
    assert np.array_equal(ref, run_converted(r, [x])[0].reshape(ref.shape))

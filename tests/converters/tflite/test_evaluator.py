"""The conversion-time evaluator on TFLite models (converters/folding.py, converters/tflite/evaluate.py): shape
arithmetic of a dynamic batch pinned to 1 (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE, REDUCE_PROD of shape
vectors, int32 CONCATENATION inside a WHILE body), weights computed from constants, RESHAPE to [-1, n] after
the batch is pinned, and the folding limit. Every converted model is compared with LiteRT."""
import numpy as np

from converters import folding
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert

PIN = {"x": (1, 4, 4, 3)}


def _slice(g, src, begin, end, name, shrink=0, shape=()):
    out = g.tensor(name, shape, "INT32")
    g.op("STRIDED_SLICE", [src, g.const(f"{name}/b", np.array([begin], np.int32)),
                           g.const(f"{name}/e", np.array([end], np.int32)), g.const(f"{name}/s", np.array([1], np.int32))],
         [out], "StridedSliceOptions", shrink_axis_mask=shrink)
    return out


def flatten_model() -> bytes:
    """Keras 3's flatten of a dynamic batch: [batch, prod(shape[1:])] computed in the graph, then a dense
    head declared [-1, 18] and a RESHAPE to new_shape [-1, 18]."""
    g = GraphBuilder()
    x = g.input("x", [1, 4, 4, 3], "FLOAT32", shape_signature=[-1, 4, 4, 3])
    shp = g.tensor("shape", [4], "INT32")
    g.op("SHAPE", [x], [shp], "ShapeOptions", out_type=2)
    batch = _slice(g, shp, 0, 1, "batch", shrink=1)
    rest = _slice(g, shp, 1, 4, "rest", shape=[3])
    prod = g.tensor("prod", [], "INT32")
    g.op("REDUCE_PROD", [rest, g.const("axis", np.array([0], np.int32))], [prod], "ReducerOptions", keep_dims=False)
    packed = g.tensor("packed", [2], "INT32")
    g.op("PACK", [batch, prod], [packed], "PackOptions", values_count=2, axis=0)
    flat = g.tensor("flat", [1, 48], "FLOAT32", shape_signature=[-1, 48])
    g.op("RESHAPE", [x, packed], [flat])
    w = g.const("w", np.random.RandomState(0).randn(18, 48).astype(np.float32))
    y = g.tensor("y", [1, 18], "FLOAT32", shape_signature=[-1, 18])
    g.op("FULLY_CONNECTED", [flat, w, -1], [y], "FullyConnectedOptions")
    z = g.tensor("z", [1, 18], "FLOAT32", shape_signature=[-1, 18])
    g.op("RESHAPE", [y, g.const("new_shape", np.array([-1, 18], np.int32))], [z], "ReshapeOptions", new_shape=[-1, 18])
    g.output(z)
    return g.finish()


def test_shape_arithmetic_of_a_pinned_batch_folds():
    result = assert_matches_litert(flatten_model(), 8, input_shapes=PIN)
    ops = {n.op: n for n in result.nodes}
    for op in ("SHAPE", "STRIDED_SLICE", "REDUCE_PROD", "PACK"):  # int32 ops NNAPI lacks: evaluated by LiteRT
        assert ops[op].absorbed == {"into": 5, "how": "folded constant"}, op
    assert [o.code.name for o in result.model.operations] == ["FULLY_CONNECTED", "RESHAPE"]


def test_unpinned_batch_names_the_dynamic_extent():
    shape = convert(flatten_model()).nodes[0]
    assert shape.reason_code == "dynamic_shape"
    assert "float32[?x4x4x3]" in shape.reason  # the -1 of the signature, not the placeholder 1 of `shape`


def weight_norm_model(v_shape=(6, 2, 2, 3)) -> bytes:
    """CONV_2D weights w = g * v / ||v|| (per output channel), computed in the graph from constants."""
    rng = np.random.RandomState(1)
    g = GraphBuilder()
    x = g.input("x", [1, 5, 5, 3], "FLOAT32")
    v = g.const("v", rng.randn(*v_shape).astype(np.float32))
    gain = g.const("g", (rng.rand(v_shape[0], 1, 1, 1) + 0.5).astype(np.float32))
    sq = g.tensor("sq", v_shape, "FLOAT32")
    g.op("MUL", [v, v], [sq], "MulOptions")
    ss = g.tensor("ss", [v_shape[0], 1, 1, 1], "FLOAT32")
    g.op("SUM", [sq, g.const("axes", np.array([1, 2, 3], np.int32))], [ss], "ReducerOptions", keep_dims=True)
    norm = g.tensor("norm", [v_shape[0], 1, 1, 1], "FLOAT32")
    g.op("SQRT", [ss], [norm])
    unit = g.tensor("unit", v_shape, "FLOAT32")
    g.op("DIV", [v, norm], [unit], "DivOptions")
    w = g.tensor("mul", v_shape, "FLOAT32")
    g.op("MUL", [gain, unit], [w], "MulOptions")
    y = g.tensor("y", [1, 5, 5, v_shape[0]], "FLOAT32")
    g.op("CONV_2D", [x, w, g.const("b", np.zeros(v_shape[0], np.float32))], [y], "Conv2DOptions", padding="SAME",
         stride_w=1, stride_h=1)
    g.output(y)
    return g.finish()


def test_weight_normalisation_folds_into_conv_weights():
    result = assert_matches_litert(weight_norm_model(), 8)
    assert [o.code.name for o in result.model.operations] == ["CONV_2D"]
    assert all(n.absorbed == {"into": 5, "how": "folded constant"} for n in result.nodes[:5])


def test_a_result_beyond_the_folding_limit_stays_an_operation(monkeypatch):
    monkeypatch.setattr(folding, "FOLD_MAX_BYTES", 200)  # the weights are 6*2*2*3*4 = 288 bytes
    result = assert_matches_litert(weight_norm_model(), 8)
    first = result.nodes[0]  # MUL v*v: 288 bytes
    assert first.supported and first.absorbed is None and first.nnapi_ops == ["MUL"]
    assert "its result, 288 bytes, exceeds the 200 bytes a folded constant may take" in first.note
    assert result.complete  # NNAPI's float CONV_2D takes weights computed at run time
    assert [o.code.name for o in result.model.operations] == ["MUL", "REDUCE_SUM", "SQRT", "DIV", "MUL", "CONV_2D"]


def _while_model(limit: int, step) -> bytes:
    """for i in range(limit): x = step(body, x), x a [batch, 4] loop variable with a dynamic batch."""
    g = GraphBuilder()
    x = g.input("x", [1, 4], "FLOAT32", shape_signature=[-1, 4])
    cond, body = g.subgraph("cond"), g.subgraph("body")
    ci = cond.input("ci", [], "INT32")
    cond.input("cx", [1, 4], "FLOAT32", shape_signature=[-1, 4])
    more = cond.tensor("more", [], "BOOL")
    cond.op("LESS", [ci, cond.const("limit", np.array(limit, np.int32))], [more])
    cond.output(more)
    bi = body.input("bi", [], "INT32")
    nx = step(body, body.input("bx", [1, 4], "FLOAT32", shape_signature=[-1, 4]))
    ni = body.tensor("ni", [], "INT32")
    body.op("ADD", [bi, body.const("one", np.array(1, np.int32))], [ni], "AddOptions")
    body.output(ni, nx)
    outs = [g.tensor("i_out", [], "INT32"), g.tensor("x_out", [1, 4], "FLOAT32", shape_signature=[-1, 4])]
    g.op("WHILE", [g.const("i0", np.array(0, np.int32)), x], outs, "WhileOptions", cond_subgraph_index=cond.index,
         body_subgraph_index=body.index)
    g.output(outs[1])
    return g.finish()


def _double_through_cube(body, bx) -> int:
    """bx reshaped to [batch, 2, 2] through a shape computed from it (SHAPE -> STRIDED_SLICE -> int32
    CONCATENATION -> RESHAPE, as Keras 3's recurrent layers do), doubled, and reshaped back."""
    shp = body.tensor("bshape", [2], "INT32")
    body.op("SHAPE", [bx], [shp], "ShapeOptions", out_type=2)
    batch = _slice(body, shp, 0, 1, "bbatch", shape=[1])
    target = body.tensor("target", [3], "INT32")
    body.op("CONCATENATION", [batch, body.const("two_two", np.array([2, 2], np.int32))], [target],
            "ConcatenationOptions", axis=0)
    cube = body.tensor("cube", [1, 2, 2], "FLOAT32", shape_signature=[-1, 2, 2])
    body.op("RESHAPE", [bx, target], [cube])
    doubled = body.tensor("doubled", [1, 2, 2], "FLOAT32", shape_signature=[-1, 2, 2])
    body.op("ADD", [cube, cube], [doubled], "AddOptions")
    nx = body.tensor("nx", [1, 4], "FLOAT32", shape_signature=[-1, 4])
    body.op("RESHAPE", [doubled, body.const("back", np.array([-1, 4], np.int32))], [nx])
    return nx


def _concat_with_itself(body, bx) -> int:
    """The batch doubles each iteration: pinning the first shape into the body would be wrong from the second
    iteration on."""
    nx = body.tensor("nx", [2, 4], "FLOAT32", shape_signature=[-1, 4])
    body.op("CONCATENATION", [bx, bx], [nx], "ConcatenationOptions", axis=0)
    return nx


def test_shape_arithmetic_inside_a_while_body_folds():
    data = _while_model(3, _double_through_cube)
    result = assert_matches_litert(data, 8, input_shapes={"x": (1, 4)})
    body = result.model.referenced_models[-1]
    assert "CONCATENATION" not in [o.code.name for o in body.operations]
    folded = [n for n in result.source.graphs[2].nodes if n.folded]
    assert [n.op for n in folded] == ["SHAPE", "STRIDED_SLICE", "CONCATENATION"]


def test_a_while_body_that_changes_shapes_keeps_them_dynamic():
    result = convert(_while_model(2, _concat_with_itself), input_shapes={"x": (1, 4)})
    body = result.source.graphs[2]
    assert body.tensors[body.inputs[1]].shape_signature == (-1, 4)  # restored: not pinned to [1, 4]


def test_coverage_names_the_pin_a_dynamic_batch_waits_on():
    from converters.pins import for_result, sentences
    found = for_result(convert(flatten_model()))
    # SHAPE, REDUCE_PROD, RESHAPE, FULLY_CONNECTED (the STRIDED_SLICEs move their int32 values as float32)
    assert found["pins_needed"] == [{"input": "x", "axes": [0], "dims": [None], "input_shape": "?,4,4,3",
                                     "nodes": 4, "macs_fraction": 1.0}]
    assert sentences(found)[0].startswith("pin x (axis 0): 4 node(s) and 100% of MACs wait on it")
    assert not for_result(convert(flatten_model(), input_shapes=PIN))["pins_needed"]


def test_coverage_names_an_extent_that_values_decide():
    """WHERE keeps as many coordinates as there are true values: no pin fixes what follows it."""
    g = GraphBuilder()
    x = g.input("x", [6], "FLOAT32")
    positive = g.tensor("positive", [6], "BOOL")
    g.op("GREATER", [x, g.const("zero", np.array(0, np.float32))], [positive])
    where = g.tensor("where", [1, 1], "INT64", shape_signature=[-1, 1])
    g.op("WHERE", [positive], [where])
    picked = g.tensor("picked", [1], "FLOAT32", shape_signature=[-1])
    g.op("GATHER_ND", [x, where], [picked])
    count = g.tensor("count", [1], "INT32")
    g.op("SHAPE", [picked], [count], "ShapeOptions", out_type=2)
    g.output(count)
    from converters.pins import for_result
    found = for_result(convert(g.finish()))
    assert found["pins_needed"] == []
    assert [(v["tensor"], v["op"]) for v in found["value_dependent"]] == [("where", "WHERE")]


def test_shapes_the_converter_cannot_tell_come_from_litert():
    """Keras 3's embedding: SELECT_V2 declared [-1, 8] on token ids (run-time int32 data, not shape values); its
    converter needs the static output shape, which LiteRT tells from the pinned inputs (shape_pass.OUTPUT_SHAPES)."""
    g = GraphBuilder()
    tokens = g.input("tokens", [1, 8], "INT32", shape_signature=[-1, 8])
    negative = g.tensor("negative", [1, 8], "BOOL", shape_signature=[-1, 8])
    g.op("LESS", [tokens, g.const("zero", np.array(0, np.int32))], [negative])
    wrapped = g.tensor("wrapped", [1, 8], "INT32", shape_signature=[-1, 8])
    g.op("ADD", [tokens, g.const("vocab", np.array(10, np.int32))], [wrapped], "AddOptions")
    ids = g.tensor("ids", [1, 8], "INT32", shape_signature=[-1, 8])
    g.op("SELECT_V2", [negative, wrapped, tokens], [ids])
    emb = g.tensor("emb", [1, 8, 4], "FLOAT32", shape_signature=[-1, 8, 4])
    g.op("GATHER", [g.const("table", np.random.RandomState(2).randn(10, 4).astype(np.float32)), ids], [emb],
         "GatherOptions", axis=0)
    y = g.tensor("y", [1, 8, 3], "FLOAT32", shape_signature=[-1, 8, 3])
    g.op("FULLY_CONNECTED", [emb, g.const("w", np.random.RandomState(3).randn(3, 4).astype(np.float32)), -1], [y],
         "FullyConnectedOptions", keep_num_dims=True)
    g.output(y)
    tokens_in = [np.array([[1, -2, 3, -4, 5, 0, -10, 9]], np.int32)]
    result = assert_matches_litert(g.finish(), 8, inputs=tokens_in, input_shapes={"tokens": (1, 8)})
    assert result.source.main.tensors[ids].shape_signature is None  # resolved to [1, 8]


def test_int32_concatenation_computed_at_run_time():
    """NNAPI has no int32 CONCATENATION: a run-time one (a SLICE's begin at a loop counter) is GATHER, MUL, ADD."""
    g = GraphBuilder()
    a = g.input("a", [2, 1], "INT32")
    b = g.input("b", [2, 3], "INT32")
    y = g.tensor("y", [2, 6], "INT32")
    g.op("CONCATENATION", [a, b, g.const("c", np.array([[7, -8], [9, 2 ** 31 - 1]], np.int32))], [y],
         "ConcatenationOptions", axis=1)
    i = g.input("i", [], "INT32")
    begin = g.tensor("begin", [3], "INT32")
    g.op("PACK", [i, g.const("zero", np.array(0, np.int32)), i], [begin], "PackOptions", values_count=3, axis=0)
    g.output(y, begin)
    ins = [np.array([[-5], [6]], np.int32), np.array([[1, 2, 3], [-(2 ** 31), 5, 6]], np.int32), np.array(4, np.int32)]
    result = assert_matches_litert(g.finish(), 8, inputs=ins)
    assert "CONCATENATION" not in [o.code.name for o in result.model.operations]

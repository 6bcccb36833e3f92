"""TFLite IF / WHILE / TFLite_Detection_PostProcess -> NNAPI, compared with LiteRT.

IF and WHILE need NNAPI feature level 4; below it the reason is feature_level_too_low."""
import flatbuffers.flexbuffers as flexbuffers
import numpy as np
import pytest

from ai_edge_litert import schema_py_generated as schema
from converters.runners import run_litert
from converters.running import random_source_inputs, run_converted
from converters.tflite import convert, read
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

TYPES = {"float32": ("FLOAT32", {}), "uint8": ("UINT8", dict(scale=0.05, zero_point=120)),
         "int8": ("INT8", dict(scale=0.04, zero_point=-3))}
SHAPE = [1, 3, 5, 2]


def if_model(type_name="float32", passthrough=False):
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    cond = g.input("cond", [1], "BOOL")  # rank 0 trips runners.to_nnapi_inputs (see report)
    x, y = g.input("x", SHAPE, dt, **q), g.input("y", SHAPE, dt, **q)
    out = g.tensor("out", SHAPE, dt, **q)
    branches = []
    for name, op in (("then", "ADD"), ("else", "SUB")):
        s = g.subgraph(name)
        a, b = s.input("a", SHAPE, dt, **q), s.input("b", SHAPE, dt, **q)
        if passthrough and name == "else":
            s.output(a)
        else:
            r = s.tensor("r", SHAPE, dt, **q)
            s.op(op, [a, b], [r], "AddOptions" if op == "ADD" else "SubOptions", fused_activation_function="RELU6")
            s.output(r)
        branches.append(s.index)
    g.op("IF", [cond, x, y], [out], "IfOptions", then_subgraph_index=branches[0], else_subgraph_index=branches[1])
    g.output(out)
    return g.finish()


TYPES_AND_LEVELS = [(type_name, level) for type_name in sorted(TYPES) for level in (1, 3, 4, 8)]


def _too_low(data, level: int, needs: int) -> bool:
    """Whether `level` is below the `needs` of the model's node, which must then be reported as too low."""
    if level < needs:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
    return level < needs


@pytest.mark.parametrize("type_name, level", TYPES_AND_LEVELS)
def test_if(type_name, level):
    data = if_model(type_name)
    if _too_low(data, level, 4):
        return
    for flag in (False, True):  # both branches
        inputs = random_source_inputs(read(data).main, seed=int(flag))
        inputs[0] = np.array([flag])
        result = assert_matches_litert(data, level, inputs=inputs)
    assert result.nodes[0].nnapi_ops == ["IF"]


def _const(g, name, value, type_name):
    """A one-element constant `value` in the given type (quantized with the type's parameters)."""
    dt, q = TYPES[type_name]
    if not q:
        return g.const(name, np.full([1], value, np.float32))
    stored = round(value / q["scale"]) + q["zero_point"]
    return g.const(name, np.full([1], stored, np.uint8 if dt == "UINT8" else np.int8), **q)


def while_model(type_name="float32", passthrough=False):
    """i, acc, x0 = 0, x, x; while i < 3: i += 1; acc = acc * 0.5 + x0 (x0 carried along)."""
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    x = g.input("x", SHAPE, dt, **q)
    i0 = g.const("i0", np.array([0], np.int32))
    outs = [g.tensor("i_out", [1], "INT32"), g.tensor("acc_out", SHAPE, dt, **q), g.tensor("x_out", SHAPE, dt, **q)]
    cond = g.subgraph("cond")
    ci = cond.input("i", [1], "INT32")
    cond.input("a", SHAPE, dt, **q), cond.input("x", SHAPE, dt, **q)
    flag = cond.tensor("flag", [1], "BOOL")
    cond.op("LESS", [ci, cond.const("limit", np.array([3], np.int32))], [flag])
    cond.output(flag)
    body = g.subgraph("body")
    bi, ba, bx = body.input("i", [1], "INT32"), body.input("a", SHAPE, dt, **q), body.input("x", SHAPE, dt, **q)
    ni = body.tensor("ni", [1], "INT32")
    half, na = body.tensor("half", SHAPE, dt, **q), body.tensor("na", SHAPE, dt, **q)
    body.op("ADD", [bi, body.const("one", np.array([1], np.int32))], [ni], "AddOptions")
    body.op("MUL", [ba, _const(body, "half_c", 0.5, type_name)], [half], "MulOptions")
    body.op("ADD", [half, bx], [na], "AddOptions")
    if passthrough:
        body.output(ni, na, bx)
    else:
        nx = body.tensor("nx", SHAPE, dt, **q)
        body.op("ADD", [bx, _const(body, "zero", 0.0, type_name)], [nx], "AddOptions")
        body.output(ni, na, nx)
    g.op("WHILE", [i0, x, x], outs, "WhileOptions", cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(*outs)
    return g.finish()


@pytest.mark.parametrize("type_name, level", TYPES_AND_LEVELS)
def test_while(type_name, level):
    data = while_model(type_name)
    if _too_low(data, level, 4):
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == ["WHILE"]


@pytest.mark.parametrize("model", [if_model, while_model])
def test_passthrough(model):
    """A subgraph returning an input unchanged gets an identity operation (NNAPI models cannot)."""
    result = assert_matches_litert(model("float32", passthrough=True), 8)
    for sub in result.model.referenced_models:
        assert not set(sub.inputs) & set(sub.outputs)


# -- TFLite_Detection_PostProcess --------------------------------------------------------

ANCHORS, CLASSES = 6, 3


def _custom_op(g, name, inputs, outputs, options: dict):
    """GraphBuilder has no custom operators: add the operator code and the flexbuffer options by hand."""
    oc = schema.OperatorCodeT()
    oc.builtinCode = oc.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    oc.customCode, oc.version = name, 1
    g.root.opcode_list.append(oc)
    o = schema.OperatorT()
    o.opcodeIndex = len(g.root.opcode_list) - 1
    o.inputs, o.outputs = list(inputs), list(outputs)
    o.customOptions = list(flexbuffers.Dumps(options))
    o.customOptionsFormat = schema.CustomOptionsFormat.FLEXBUFFERS
    g.sg.operators.append(o)


def detection_model(type_name="float32", regular=False, background=1, max_detections=3):
    dt, q = TYPES[type_name]
    rng = np.random.default_rng(7)
    g = GraphBuilder()
    box_q = dict(scale=0.02, zero_point=q["zero_point"]) if q else {}
    boxes = g.input("boxes", [1, ANCHORS, 4], dt, **box_q)
    score_q = dict(scale=1 / 256, zero_point=q["zero_point"]) if q else {}
    scores = g.input("scores", [1, ANCHORS, CLASSES + background], dt, **score_q)
    centers = rng.random((ANCHORS, 2)) * 0.8 + 0.1
    sizes = rng.random((ANCHORS, 2)) * 0.3 + 0.2
    anchors = np.concatenate([centers, sizes], axis=1).astype(np.float32)
    if q:
        anchor_q = dict(scale=1 / 200, zero_point=q["zero_point"])
        stored = np.round(anchors * 200) + q["zero_point"]
        anchors = g.const("anchors", stored.astype(np.uint8 if dt == "UINT8" else np.int8), **anchor_q)
    else:
        anchors = g.const("anchors", anchors)
    per_detection = 1 if regular else 2
    slots = max_detections * per_detection
    outs = [g.tensor("det_boxes", [1, slots, 4]), g.tensor("det_classes", [1, slots]),
            g.tensor("det_scores", [1, slots]), g.tensor("num_det", [1])]
    _custom_op(g, "TFLite_Detection_PostProcess", [boxes, scores, anchors], outs, dict(
        max_detections=max_detections, max_classes_per_detection=per_detection, detections_per_class=2,
        use_regular_nms=regular, nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=CLASSES,
        y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0))
    g.output(*outs)
    return g.finish()


def assert_detections_match(data, level, per_box, seeds=(0, 1, 2)):
    """Like assert_matches_litert, but only the reported detections count: LiteRT leaves the
    slots past num_detections uninitialized, NNAPI zero-fills them."""
    result = convert(data, feature_level=level)
    assert result.complete, [(n.op, n.reason) for n in result.unsupported]
    for seed in seeds:
        ins = random_source_inputs(result.source.main, seed)
        ref, got = run_litert(data, ins), run_converted(result, ins)
        np.testing.assert_array_equal(got[3], ref[3])
        valid = int(ref[3][0]) * per_box  # fast NMS reports `per_box` classes per detected box
        for r, g in zip(ref[:3], got[:3]):
            np.testing.assert_allclose(g[:, :valid], r[:, :valid], rtol=1e-5, atol=1e-5)
    return result


@pytest.mark.parametrize("level", [1, 3, 4, 8])
@pytest.mark.parametrize("type_name,regular", [("float32", False), ("float32", True), ("uint8", False),
                                               ("uint8", True)])
def test_detection_postprocess(type_name, regular, level):
    data = detection_model(type_name, regular)
    if _too_low(data, level, 3):
        return
    result = assert_detections_match(data, level, 1 if regular else 2)
    assert "DETECTION_POSTPROCESSING" in result.nodes[0].nnapi_ops


def test_detection_int8_converts():
    """LiteRT's kernel rejects int8 inputs at run time, so there is no reference to compare with;
    the conversion dequantizes them (as uint8 below feature level 4)."""
    data = detection_model("int8", True)
    assert unsupported_reason(data, 1).reason_code == "feature_level_too_low"
    for level in (3, 4):
        result = convert(data, feature_level=level)
        assert result.complete and result.nodes[0].nnapi_ops[0] == "DEQUANTIZE"


def test_detection_without_background_column_is_reported():
    node = unsupported_reason(detection_model(background=0), 8)
    assert node.reason_code == "unsupported_attribute" and "'scores'" in node.reason


def test_while_int32_invariant():
    """An int32 loop invariant (the trip count) returned unchanged by the body: ADD of zero copies it."""
    g = GraphBuilder()
    limit = g.input("limit", [1], "INT32")
    outs = [g.tensor("i_out", [1], "INT32"), g.tensor("limit_out", [1], "INT32")]
    cond = g.subgraph("cond")
    ci, cl = cond.input("i", [1], "INT32"), cond.input("limit", [1], "INT32")
    flag = cond.tensor("flag", [1], "BOOL")
    cond.op("LESS", [ci, cl], [flag])
    cond.output(flag)
    body = g.subgraph("body")
    bi, bl = body.input("i", [1], "INT32"), body.input("limit", [1], "INT32")
    ni = body.tensor("ni", [1], "INT32")
    body.op("ADD", [bi, body.const("two", np.array([2], np.int32))], [ni], "AddOptions")
    body.output(ni, bl)
    g.op("WHILE", [g.const("i0", np.array([0], np.int32)), limit], outs, "WhileOptions",
         cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(*outs)
    result = assert_matches_litert(g.finish(), 8, inputs=[np.array([7], np.int32)])
    body_model = result.model.referenced_models[-1]
    assert [op.code.name for op in body_model.operations] == ["ADD", "ADD"]

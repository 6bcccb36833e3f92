"""If -> NNAPI IF with branches that capture values from the enclosing graph (ops/control.py and the
reader's subgraph reading) and Loop -> NNAPI WHILE (ops/loop.py), compared with onnxruntime; the Loop
forms NNAPI cannot express are reported with their reason codes."""
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(31)
X = ("x", np.float32, [1, 2, 3, 5])
SEEDS = range(6)  # inputs in [-1, 1): the sum's sign takes both branches


def branch(name, nodes, out, shape=(1, 2, 3, 5)):
    return h.make_graph(nodes, name, [], [h.make_tensor_value_info(out, TP.FLOAT, list(shape))])


def if_model(then_g, else_g, pre=(), inits=None, x="x"):
    nodes = list(pre) + [h.make_node("ReduceSum", [x], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["c"]),
                         h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return make_model(nodes, [X], ["y"], dict({"zero": np.float32(0.0)}, **(inits or {})), opset=13)


def test_branches_capturing_different_values():
    k = RNG.random((1, 2, 3, 5)).astype(np.float32)
    then_g = branch("then", [h.make_node("Add", ["x", "k"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Mul", ["x", "s"], ["e"])], "e")  # s: a run-time value of the graph
    r = verify_levels(if_model(then_g, else_g, inits={"k": k}), levels=(3, 4, 8), seeds=SEEDS, need_level=4)[8]
    assert [o.code.name for o in r.model.operations] == ["REDUCE_SUM", "GREATER", "IF"]


def test_branch_returning_a_captured_value_unchanged():
    then_g = branch("then", [h.make_node("Identity", ["x"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    verify_levels(if_model(then_g, else_g), levels=(3, 4, 8), seeds=SEEDS, need_level=4)


def test_captured_value_after_conv_is_passed_in_onnx_layout():
    conv = h.make_node("Conv", ["x", "w"], ["xc"])
    then_g = branch("then", [h.make_node("Relu", ["xc"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Sigmoid", ["xc"], ["e"])], "e")
    data = if_model(then_g, else_g, pre=[conv], inits={"w": RNG.normal(size=(2, 2, 1, 1)).astype(np.float32)}, x="xc")
    verify_levels(data, levels=(4, 8), seeds=SEEDS, need_level=4)


def test_nested_if():
    inner_then = branch("inner_then", [h.make_node("Abs", ["x"], ["it"])], "it")
    inner_else = branch("inner_else", [h.make_node("Neg", ["x"], ["ie"])], "ie")
    then_g = branch("then", [h.make_node("Less", ["s", "one"], ["c2"]),
                             h.make_node("If", ["c2"], ["t"], then_branch=inner_then, else_branch=inner_else)], "t")
    else_g = branch("else", [h.make_node("Mul", ["x", "x"], ["e"])], "e")
    verify_levels(if_model(then_g, else_g, inits={"one": np.float32(1.0)}), levels=(4, 8), seeds=SEEDS, need_level=4)


def test_branch_returning_a_constant():
    value = onnx.numpy_helper.from_array(RNG.random((1, 2, 3, 5)).astype(np.float32))
    then_g = branch("then", [h.make_node("Constant", [], ["t"], value=value)], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    verify_levels(if_model(then_g, else_g), levels=(4, 8), seeds=SEEDS, need_level=4)


def test_if_needs_feature_level_4():
    then_g = branch("then", [h.make_node("Relu", ["x"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    node = convert(if_model(then_g, else_g), 3).unsupported[0]
    assert node.op == "If" and node.reason_code == "feature_level_too_low"


def test_unsupported_branch_node_is_named():
    then_g = branch("then", [h.make_node("Acos", ["x"], ["t"])], "t")
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    node = convert(if_model(then_g, else_g), 8).unsupported[0]
    assert node.op == "If" and "Acos" in node.reason


# -- Loop -> WHILE -----------------------------------------------------------------------------------------

S = [2, 3]


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def loop_body(nodes, carried=(("acc", "acc2"),), cond_out="cond_out", scans=(), shape=S):
    """A Loop body: (i, cond_in, carried inputs) -> (cond_out, carried outputs, scan outputs), float carried."""
    ins = [vi("i", TP.INT64, []), vi("cond_in", TP.BOOL, [])] + [vi(a, TP.FLOAT, shape) for a, _ in carried]
    outs = [vi(cond_out, TP.BOOL, [])] + [vi(b, TP.FLOAT, shape) for _, b in carried] + \
        [vi(x, TP.FLOAT, [1] + list(shape)) for x in scans]
    return h.make_graph(nodes, "body", ins, outs)


KEEP_COND = h.make_node("Identity", ["cond_in"], ["cond_out"])


def counted_loop(body, trip=5, cond=True, outputs=("y",), extra_inits=None):
    inits = {"z": np.zeros(S, np.float32)}
    loop_in = ["M" if trip is not None else "", "c" if cond is not None else "", "z"]
    if trip is not None:
        inits["M"] = np.array(trip, np.int64)
    if cond is not None:
        inits["c"] = np.array(cond)
    node = h.make_node("Loop", loop_in, list(outputs), body=body)
    return make_model([node], [("x", np.float32, S)], list(outputs), dict(inits, **(extra_inits or {})), opset=13)


def test_counted_loop_accumulating_a_sum():
    """for i in range(5): acc += x (constant M, cond = true, x captured from the graph)."""
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"])])
    r = verify_levels(counted_loop(body), levels=(3, 4, 8), seeds=SEEDS, need_level=4)[8]
    assert [o.code.name for o in r.model.operations] == ["WHILE"]
    cond_model = r.model.operands[r.model.operations[0].inputs[0]].subgraph
    assert [o.code.name for o in cond_model.operations] == ["LESS", "LOGICAL_AND"]


def test_counted_loop_without_a_condition_input():
    """Loop(M, "", v) with cond_out = cond_in: the condition model is i < M alone."""
    body = loop_body([KEEP_COND, h.make_node("Mul", ["acc", "x"], ["acc2"])])
    data = counted_loop(body, trip=3, cond=None, extra_inits={"z": np.full(S, 0.5, np.float32)})
    r = verify_levels(data, levels=(4, 8), seeds=SEEDS, need_level=4)[8]
    cond_model = r.model.operands[r.model.operations[0].inputs[0]].subgraph
    assert [o.code.name for o in cond_model.operations] == ["LESS"]


def test_missing_condition_with_a_computed_cond_out_is_reported():
    """Without a condition input the spec ignores cond_out but onnxruntime stops on it: reported."""
    body = loop_body([h.make_node("Not", ["cond_in"], ["cond_out"]), h.make_node("Add", ["acc", "x"], ["acc2"])])
    node = convert(counted_loop(body, cond=None), 8).unsupported[0]
    assert node.op == "Loop" and node.reason_code == "unsupported_attribute" and "cond_out" in node.reason


def test_zero_trip_count_returns_the_initial_values():
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"])])
    verify_levels(counted_loop(body, trip=0, extra_inits={"z": np.ones(S, np.float32)}), levels=(4, 8), seeds=SEEDS,
                  need_level=4)


def test_condition_driven_loop():
    """while sum(v) < 100: v *= 2, the first condition computed by the graph (M absent)."""
    body = loop_body([h.make_node("Mul", ["v", "two"], ["v2"]), h.make_node("ReduceSum", ["v2"], ["s"], keepdims=0),
                      h.make_node("Less", ["s", "lim"], ["cond_out"])], carried=(("v", "v2"),))
    nodes = [h.make_node("Abs", ["x"], ["ax"]), h.make_node("Add", ["ax", "tenth"], ["x0"]),
             h.make_node("ReduceSum", ["x0"], ["s0"], keepdims=0), h.make_node("Less", ["s0", "lim"], ["c"]),
             h.make_node("Loop", ["", "c", "x0"], ["y"], body=body)]
    data = make_model(nodes, [("x", np.float32, S)], ["y"],
                      {"two": np.float32(2), "lim": np.float32(100), "tenth": np.float32(0.1)}, opset=13)
    r = verify_levels(data, levels=(3, 4, 8), seeds=SEEDS, need_level=4)[8]
    cond_model = r.model.operands[r.model.operations[-1].inputs[0]].subgraph
    assert [o.code.name for o in cond_model.operations] == ["LOGICAL_AND"]


def test_trip_count_and_condition_together():
    """At most 10 iterations, and stop early once max(v) >= 3: both limits bind for some inputs."""
    body = loop_body([h.make_node("Add", ["v", "x"], ["v2"]), h.make_node("ReduceMax", ["v2"], ["m"], keepdims=0),
                      h.make_node("Less", ["m", "three"], ["cond_out"])], carried=(("v", "v2"),))
    nodes = [h.make_node("Abs", ["x0"], ["x"]), h.make_node("Loop", ["M", "c", "z"], ["y"], body=body)]
    data = make_model(nodes, [("x0", np.float32, S)], ["y"],
                      {"M": np.array(10, np.int64), "c": np.array(True), "z": np.zeros(S, np.float32),
                       "three": np.float32(3)}, opset=13)
    verify_levels(data, levels=(4, 8), seeds=SEEDS, need_level=4)


def test_iteration_number_used_in_float_math_after_cast():
    """acc += x * float(i): the int64 iteration number is the int32 counter, Cast to float."""
    body = loop_body([KEEP_COND, h.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT),
                      h.make_node("Mul", ["x", "fi"], ["t"]), h.make_node("Add", ["acc", "t"], ["acc2"])])
    r = verify_levels(counted_loop(body, trip=4), levels=(3, 4, 8), seeds=SEEDS, need_level=4)[8]
    body_model = r.model.operands[r.model.operations[0].inputs[1]].subgraph
    assert "CAST" in [o.code.name for o in body_model.operations]


def test_iteration_number_compared_with_an_int64_constant():
    """cond_out = i < 2 (an int64 constant that fits int32): the loop stops after three iterations."""
    body = loop_body([h.make_node("Less", ["i", "two"], ["cond_out"]), h.make_node("Add", ["acc", "x"], ["acc2"])])
    verify_levels(counted_loop(body, trip=10, extra_inits={"two": np.array(2, np.int64)}), levels=(4, 8),
                  seeds=SEEDS, need_level=4)


def test_several_carried_values_and_a_pass_through():
    """Two carried values, one returned unchanged (an input that is also a body output)."""
    body = h.make_graph([KEEP_COND, h.make_node("Add", ["a", "b"], ["a2"])], "body",
                        [vi("i", TP.INT64, []), vi("cond_in", TP.BOOL, []), vi("a", TP.FLOAT, S),
                         vi("b", TP.FLOAT, S)],
                        [vi("cond_out", TP.BOOL, []), vi("a2", TP.FLOAT, S), vi("b", TP.FLOAT, S)])
    node = h.make_node("Loop", ["M", "c", "z", "x"], ["y", "w"], body=body)
    data = make_model([node], [("x", np.float32, S)], ["y", "w"],
                      {"M": np.array(3, np.int64), "c": np.array(True), "z": np.zeros(S, np.float32)}, opset=13)
    verify_levels(data, levels=(4, 8), seeds=SEEDS, need_level=4)


def test_loop_body_with_conv_keeps_the_onnx_layout_at_its_boundary():
    shape = [1, 2, 3, 4]
    body = loop_body([KEEP_COND, h.make_node("Conv", ["acc", "w"], ["c1"], pads=[1, 1, 1, 1]),
                      h.make_node("Relu", ["c1"], ["r"]), h.make_node("Add", ["r", "x"], ["acc2"])], shape=shape)
    node = h.make_node("Loop", ["M", "c", "x"], ["y"], body=body)
    w = (RNG.normal(size=(2, 2, 3, 3)) * 0.3).astype(np.float32)
    data = make_model([node], [("x", np.float32, shape)], ["y"],
                      {"M": np.array(3, np.int64), "c": np.array(True), "w": w}, opset=13)
    verify_levels(data, levels=(4, 8), seeds=SEEDS, need_level=4)


def test_nested_loop_reading_the_outer_graph():
    """An inner Loop (x added twice) in the body of an outer Loop (3 times): x captured through both bodies."""
    inner = h.make_graph([h.make_node("Identity", ["ci"], ["co"]), h.make_node("Add", ["b", "x"], ["b2"])], "inner",
                         [vi("j", TP.INT64, []), vi("ci", TP.BOOL, []), vi("b", TP.FLOAT, S)],
                         [vi("co", TP.BOOL, []), vi("b2", TP.FLOAT, S)])
    outer = loop_body([KEEP_COND, h.make_node("Loop", ["two", "", "acc"], ["acc2"], body=inner)])
    outer.initializer.append(onnx.numpy_helper.from_array(np.array(2, np.int64), "two"))
    verify_levels(counted_loop(outer, trip=3), levels=(4, 8), seeds=SEEDS, need_level=4)


def test_loop_inside_an_if_branch():
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"])])
    then_g = h.make_graph([h.make_node("Loop", ["M", "c", "z"], ["t"], body=body)], "then", [], [vi("t", TP.FLOAT, S)])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", TP.FLOAT, S)])
    nodes = [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["cc"]),
             h.make_node("If", ["cc"], ["y"], then_branch=then_g, else_branch=else_g)]
    data = make_model(nodes, [("x", np.float32, S)], ["y"], {"zero": np.float32(0), "M": np.array(3, np.int64),
                                                             "c": np.array(True), "z": np.zeros(S, np.float32)},
                      opset=13)
    verify_levels(data, levels=(4, 8), seeds=SEEDS, need_level=4)


def test_int64_loop_carried_value_is_reported():
    """Exporters often carry an int64 counter of their own: NNAPI has no type for it."""
    body = h.make_graph([KEEP_COND, h.make_node("Add", ["k", "one"], ["k2"]), h.make_node("Add", ["a", "x"], ["a2"])],
                        "body", [vi("i", TP.INT64, []), vi("cond_in", TP.BOOL, []), vi("k", TP.INT64, []),
                                 vi("a", TP.FLOAT, S)],
                        [vi("cond_out", TP.BOOL, []), vi("k2", TP.INT64, []), vi("a2", TP.FLOAT, S)])
    node = h.make_node("Loop", ["M", "c", "k0", "z"], ["kf", "y"], body=body)
    data = make_model([node], [("x", np.float32, S)], ["y"],
                      {"M": np.array(3, np.int64), "c": np.array(True), "z": np.zeros(S, np.float32),
                       "k0": np.array(0, np.int64), "one": np.array(1, np.int64)}, opset=13)
    node = convert(data, 8).unsupported[0]
    assert node.op == "Loop" and node.reason_code == "operand_type" and "'k' is int64" in node.reason


def test_loop_needs_feature_level_4():
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"])])
    node = convert(counted_loop(body), 3).unsupported[0]
    assert node.op == "Loop" and node.reason_code == "feature_level_too_low" and node.min_feature_level == 4


def test_loop_with_scan_outputs_is_reported():
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"]),
                      h.make_node("Unsqueeze", ["acc2", "ax0"], ["scan"])], scans=("scan",))
    body.initializer.append(onnx.numpy_helper.from_array(np.array([0], np.int64), "ax0"))
    node = convert(counted_loop(body, outputs=("y", "ys")), 8).unsupported[0]
    assert node.op == "Loop" and node.reason_code == "unsupported_attribute" and "scan output" in node.reason


def test_trip_count_beyond_int32_is_reported():
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"])])
    node = convert(counted_loop(body, trip=2 ** 40), 8).unsupported[0]
    assert node.op == "Loop" and node.reason_code == "operand_type" and "does not fit int32" in node.reason


def test_run_time_trip_count_is_reported():
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"])])
    node = h.make_node("Loop", ["M", "", "x"], ["y"], body=body)
    data = make_model([node], [("x", np.float32, S), ("M", np.int64, [])], ["y"], {}, opset=13)
    node = convert(data, 8).unsupported[0]
    assert node.op == "Loop" and node.reason_code == "non_constant_operand"


def test_loop_without_trip_count_or_condition_is_reported():
    body = loop_body([KEEP_COND, h.make_node("Add", ["acc", "x"], ["acc2"])])
    node = convert(counted_loop(body, trip=None, cond=None), 8).unsupported[0]
    assert node.op == "Loop" and node.reason_code == "unsupported_attribute" and "never ends" in node.reason


def test_iteration_number_in_int64_arithmetic_is_int32():
    """i + 1 stays int64 in ONNX; NNAPI holds it as int32, like the counter (M fits int32, so does i + 1)."""
    body = loop_body([KEEP_COND, h.make_node("Add", ["i", "one"], ["j"]),
                      h.make_node("Cast", ["j"], ["fj"], to=TP.FLOAT), h.make_node("Mul", ["x", "fj"], ["t"]),
                      h.make_node("Add", ["acc", "t"], ["acc2"])])
    verify_levels(counted_loop(body, extra_inits={"one": np.array(1, np.int64)}), levels=(8,))


def test_unsupported_body_node_is_named():
    body = loop_body([KEEP_COND, h.make_node("Acos", ["acc"], ["acc2"])])
    node = convert(counted_loop(body), 8).unsupported[0]
    assert node.op == "Loop" and "Acos" in node.reason

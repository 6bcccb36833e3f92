"""ONNX LSTM, GRU and RNN against onnxruntime: every direction and layout, several sizes, the attributes
(clip, input_forget, peepholes, activations with alpha/beta, linear_before_reset), initial states as
constants, inputs or absent, each output optional; the graphs torch.onnx.export writes for nn.LSTM / nn.GRU
(batch_first, bidirectional, two layers); and the refusals.

onnxruntime has no layout=1 kernels: a layout-1 node is checked against its layout-0 twin run on
transposed data (X and the initial states [batch, dirs, hidden] -> [dirs, batch, hidden], Y back from
[seq, dirs, batch, hidden] to [batch, seq, dirs, hidden])."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

from converters.onnx import convert
from tests.converters.onnx.harness import run_converted

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
STATES = {"LSTM": ("Y", "Y_h", "Y_c"), "GRU": ("Y", "Y_h"), "RNN": ("Y", "Y_h")}
SEQUENCE_LSTMS = {"UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM"}
SEQUENCE_RNNS = {"UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN"}


def recurrent_model(op, seq=3, batch=2, inp=4, hid=5, direction="forward", layout=0, initial="const",
                    peepholes=False, outputs=None, seed=0, runtime_weights=False, weight_scale=1.0, **attrs):
    """(model, feeds) of one LSTM / GRU / RNN node with seeded random weights (uniform in +-weight_scale) and
    inputs."""
    rng = np.random.default_rng(seed)
    g, dirs = GATES[op], 2 if direction == "bidirectional" else 1
    params = {"W": (dirs, g * hid, inp), "R": (dirs, g * hid, hid), "B": (dirs, 2 * g * hid)}
    if peepholes:
        params["P"] = (dirs, 3 * hid)
    arrays = {k: rng.uniform(-weight_scale, weight_scale, s).astype(np.float32) for k, s in params.items()}
    x_shape = (seq, batch, inp) if layout == 0 else (batch, seq, inp)
    s_shape = (dirs, batch, hid) if layout == 0 else (batch, dirs, hid)
    feeds = {"X": rng.uniform(-1, 1, x_shape).astype(np.float32)}
    inputs = ["X", "W", "R", "B", "", "h0", "c0" if op == "LSTM" else "", "P" if peepholes else ""]
    if initial == "none":
        inputs[5] = inputs[6] = ""
    for name in ("h0", "c0"):
        if name in inputs:
            value = rng.uniform(-1, 1, s_shape).astype(np.float32)
            (feeds if initial == "input" else arrays)[name] = value
    while inputs[-1] == "":
        inputs.pop()
    outs = [o if outputs is None or o in outputs else "" for o in STATES[op]]
    while outs[-1] == "":
        outs.pop()
    if layout:
        attrs["layout"] = 1
    node = h.make_node(op, inputs, outs, hidden_size=hid, direction=direction, **attrs)
    graph_in = [h.make_tensor_value_info("X", TP.FLOAT, x_shape)]
    graph_in += [h.make_tensor_value_info(k, TP.FLOAT, v.shape) for k, v in feeds.items() if k != "X"]
    if runtime_weights:
        feeds["W"] = arrays.pop("W")
        graph_in.append(h.make_tensor_value_info("W", TP.FLOAT, feeds["W"].shape))
    graph_out = [h.make_tensor_value_info(o, TP.FLOAT, None) for o in outs if o]
    graph = h.make_graph([node], "recurrent", graph_in, graph_out, [nh.from_array(v, k) for k, v in arrays.items()])
    model = onnx.shape_inference.infer_shapes(h.make_model(graph, opset_imports=[h.make_opsetid("", 14)]))
    onnx.checker.check_model(model)
    return model, feeds


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def reference(model, feeds) -> list:
    node = model.graph.node[0]
    if not any(a.name == "layout" and a.i == 1 for a in node.attribute):
        return _session(model).run(None, feeds)
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    kept = [a for a in twin.graph.node[0].attribute if a.name != "layout"]
    del twin.graph.node[0].attribute[:]
    twin.graph.node[0].attribute.extend(kept)
    del twin.graph.value_info[:]
    for vi in list(twin.graph.input) + list(twin.graph.output):
        vi.type.tensor_type.ClearField("shape")
    swap = lambda a: np.ascontiguousarray(np.swapaxes(a, 0, 1))  # noqa: E731
    for init in twin.graph.initializer:
        if init.name in ("h0", "c0"):
            init.CopyFrom(nh.from_array(swap(nh.to_array(init)), init.name))
    outs = _session(twin).run(None, {k: swap(v) for k, v in feeds.items()})
    names = [o.name for o in twin.graph.output]
    return [np.transpose(o, (2, 0, 1, 3)) if n == "Y" else swap(o) for n, o in zip(names, outs)]


def converted(model, feeds, level=8):
    """(outputs, emitted NNAPI op names) of the converted model on feeds."""
    result = convert(model.SerializeToString(), feature_level=level)
    assert result.complete, [(u.reason_code, u.reason) for u in result.unsupported]
    got = run_converted(result, [feeds[vi.name] for vi in model.graph.input])
    return got, {o.code.name for o in result.model.operations}


def assert_matches(model, feeds, level=8, rtol=1e-4, atol=1e-5) -> set:
    got, ops = converted(model, feeds, level)
    ref = reference(model, feeds)
    assert len(got) == len(ref)
    for k, (r, g) in enumerate(zip(ref, got)):
        assert np.asarray(g).shape == r.shape, f"output {k}"
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, err_msg=f"output {k}")
    return ops


SIZES = [(5, 1, 1, 3), (8, 3, 4, 2), (16, 2, 6, 7)]   # hidden, batch, seq, input


@pytest.mark.parametrize("hid, batch, seq, inp", SIZES)
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_directions_layouts_and_sizes(op, direction, layout, hid, batch, seq, inp):
    model, feeds = recurrent_model(op, seq, batch, inp, hid, direction, layout, seed=hid + batch)
    ops = assert_matches(model, feeds)
    if op != "GRU":
        assert ops & (SEQUENCE_LSTMS | SEQUENCE_RNNS), ops   # a plain LSTM / RNN is one NNAPI sequence op


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_linear_before_reset(lbr, direction):
    model, feeds = recurrent_model("GRU", 4, 2, 3, 6, direction, linear_before_reset=lbr, initial="input")
    assert_matches(model, feeds)


LSTM_ATTRS = [
    dict(clip=0.5),
    dict(clip=2.0, direction="bidirectional", layout=1),
    dict(input_forget=1),
    dict(input_forget=1, peepholes=True, direction="reverse"),
    dict(peepholes=True),
    dict(peepholes=True, direction="bidirectional", clip=1.0),
    dict(activations=["Sigmoid", "Relu", "Relu"]),
    dict(activations=["Sigmoid", "Sigmoid", "Sigmoid"], direction="reverse"),
    dict(activations=["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Relu", "Relu"], direction="bidirectional"),
    dict(activations=["HardSigmoid", "Relu", "Softsign"]),
    dict(activations=["LeakyRelu", "ThresholdedRelu", "ScaledTanh"], activation_alpha=[0.1, 0.3, 0.7],
         activation_beta=[1.2]),
    dict(activations=["Affine", "Elu", "Softplus"], activation_alpha=[0.5, 0.7], activation_beta=[0.1]),
    dict(activations=["Sigmoid", "LeakyRelu", "Elu"]),          # the defaults both agree on
    dict(activations=["HardSigmoid", "Tanh", "Tanh"], activation_alpha=[0.3], activation_beta=[0.4]),
]


@pytest.mark.parametrize("attrs", LSTM_ATTRS, ids=lambda a: "-".join(f"{k}={v}" for k, v in a.items()))
def test_lstm_attributes(attrs):
    attrs = dict(attrs)
    model, feeds = recurrent_model("LSTM", 4, 2, 3, 5, attrs.pop("direction", "forward"), attrs.pop("layout", 0),
                                   peepholes=attrs.pop("peepholes", False), **attrs)
    ops = assert_matches(model, feeds)
    if "clip" in attrs or "input_forget" in attrs or attrs.get("activations", ["Sigmoid"])[0] != "Sigmoid":
        assert not ops & SEQUENCE_LSTMS   # NNAPI's LSTMs clip the cell state, couple i = 1 - f: unrolled


@pytest.mark.parametrize("op, attrs", [
    ("GRU", dict(clip=0.3, direction="bidirectional")),
    ("RNN", dict(activations=["Relu", "Sigmoid"], direction="bidirectional")),   # one activation per op: unrolled
    ("RNN", dict(activations=["Sigmoid"], direction="reverse", layout=1)),
    ("GRU", dict(linear_before_reset=1, activations=["HardSigmoid", "Softsign"], layout=1, direction="reverse")),
    ("GRU", dict(activations=["Sigmoid", "Relu", "HardSigmoid", "Tanh"], direction="bidirectional")),
    ("RNN", dict(clip=0.2)),
    ("RNN", dict(activations=["Relu"])),
    ("RNN", dict(activations=["Sigmoid", "Affine"], direction="bidirectional", activation_alpha=[2.0],
                 activation_beta=[0.5])),
])
def test_gru_rnn_attributes(op, attrs):
    attrs = dict(attrs)
    model, feeds = recurrent_model(op, 4, 2, 3, 5, attrs.pop("direction", "forward"), attrs.pop("layout", 0), **attrs)
    assert_matches(model, feeds)


@pytest.mark.parametrize("initial", ["none", "const", "input"])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("op, direction", [("LSTM", "bidirectional"), ("LSTM", "forward"), ("GRU", "bidirectional"),
                                           ("RNN", "reverse"), ("LSTM", "reverse")])
def test_initial_states(op, direction, layout, initial):
    model, feeds = recurrent_model(op, 3, 2, 4, 5, direction, layout, initial=initial)
    assert_matches(model, feeds)


@pytest.mark.parametrize("outputs", [("Y",), ("Y_h",), ("Y_c",), ("Y", "Y_c"), ("Y_h", "Y_c")])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_outputs_are_each_optional(outputs, direction):
    model, feeds = recurrent_model("LSTM", 3, 2, 4, 5, direction, outputs=outputs)
    assert_matches(model, feeds)


@pytest.mark.parametrize("op", ["GRU", "RNN"])
def test_gru_rnn_state_output_alone(op):
    model, feeds = recurrent_model(op, 3, 2, 4, 5, "bidirectional", 1, outputs=("Y_h",))
    assert_matches(model, feeds)


def test_lstm_states_below_feature_level_4_are_unrolled():
    model, feeds = recurrent_model("LSTM", 3, 2, 4, 5, "bidirectional")
    assert not assert_matches(model, feeds, level=3) & SEQUENCE_LSTMS
    assert assert_matches(model, feeds, level=4) == SEQUENCE_LSTMS - {"UNIDIRECTIONAL_SEQUENCE_LSTM"} | {
        "CONCATENATION", "RESHAPE"}
    y_only, feeds = recurrent_model("LSTM", 3, 2, 4, 5, outputs=("Y",))
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in assert_matches(y_only, feeds, level=3)


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "RNN"])
def test_a_dynamic_sequence_length(op, direction, layout):
    model, feeds = recurrent_model(op, 4, 2, 3, 5, direction, layout)
    model.graph.input[0].type.tensor_type.shape.dim[layout].dim_param = "T"
    del model.graph.value_info[:]
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    model = onnx.shape_inference.infer_shapes(model)
    assert_matches(model, feeds)
    feeds["X"] = np.concatenate([feeds["X"]] * 2, axis=layout)   # another length, same converted model
    assert_matches(model, feeds)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_float16(op):
    model, feeds = recurrent_model(op, 4, 2, 3, 5, "bidirectional", clip=0.8)
    ref = reference(model, feeds)
    half = onnx.ModelProto()
    half.CopyFrom(model)
    for init in half.graph.initializer:
        init.CopyFrom(nh.from_array(nh.to_array(init).astype(np.float16), init.name))
    for vi in list(half.graph.input) + list(half.graph.output) + list(half.graph.value_info):
        vi.type.tensor_type.elem_type = TP.FLOAT16
    result = convert(half.SerializeToString())
    assert result.complete
    got = run_converted(result, [feeds["X"].astype(np.float16)])
    for r, g in zip(ref, got):
        np.testing.assert_allclose(np.asarray(g, np.float32).reshape(r.shape), r, atol=4e-3)


# -- what torch.onnx.export writes for nn.LSTM / nn.GRU -----------------------------------

def torch_like(op, layers=2, bidirectional=True, batch_first=True, h0="input", seq=5, batch=3, inp=4, hid=6,
               seed=0):
    """The graph torch.onnx.export (opset 14) writes for nn.LSTM / nn.GRU(inp, hid, num_layers=layers,
    batch_first, bidirectional): X transposed to time-major, per layer one node with Y, then
    Transpose(0, 2, 1, 3) + Reshape(0, 0, -1) (bidirectional) or Squeeze(1), slices of h0 (an input, a zero
    constant, zeros of the input's batch size made at run time -- Shape, Gather, Concat, ConstantOfShape --
    or none), h_n the Concat of the layers' Y_h, the output transposed back to batch-major."""
    rng = np.random.default_rng(seed)
    g, dirs = GATES[op], 2 if bidirectional else 1
    x_shape = (batch, seq, inp) if batch_first else (seq, batch, inp)
    ins = [h.make_tensor_value_info("x", TP.FLOAT, x_shape)]
    feeds = {"x": rng.uniform(-1, 1, x_shape).astype(np.float32)}
    inits, nodes = [], []
    const = lambda name, v: inits.append(nh.from_array(np.asarray(v), name)) or name  # noqa: E731
    states = ("h0", "c0") if op == "LSTM" else ("h0",)
    for s in states:
        shape = (layers * dirs, batch, hid)
        if h0 == "input":
            ins.append(h.make_tensor_value_info(s, TP.FLOAT, shape))
            feeds[s] = rng.uniform(-1, 1, shape).astype(np.float32)
        elif h0 == "zeros":
            const(s, np.zeros(shape, np.float32))
        elif h0 == "batch_zeros":
            nodes.append(h.make_node("Shape", ["x"], [f"{s}_xshape"]))
            nodes.append(h.make_node("Gather", [f"{s}_xshape", const(f"{s}_bat", np.array(0 if batch_first else 1))],
                                     [f"{s}_b"]))
            nodes.append(h.make_node("Unsqueeze", [f"{s}_b", const(f"{s}_ax", np.array([0]))], [f"{s}_b1"]))
            nodes.append(h.make_node("Concat", [const(f"{s}_ld", np.array([layers * dirs])), f"{s}_b1",
                                                const(f"{s}_hid", np.array([hid]))], [f"{s}_shape"], axis=0))
            nodes.append(h.make_node("ConstantOfShape", [f"{s}_shape"], [s]))
    cur = "x"
    if batch_first:
        nodes.append(h.make_node("Transpose", ["x"], ["x_tm"], perm=[1, 0, 2]))
        cur = "x_tm"
    h_outs = []
    for layer in range(layers):
        width = inp if layer == 0 else dirs * hid
        w = const(f"W{layer}", rng.uniform(-0.5, 0.5, (dirs, g * hid, width)).astype(np.float32))
        r = const(f"R{layer}", rng.uniform(-0.5, 0.5, (dirs, g * hid, hid)).astype(np.float32))
        b = const(f"B{layer}", rng.uniform(-0.5, 0.5, (dirs, 2 * g * hid)).astype(np.float32))
        node_in = [cur, w, r, b, ""]
        for s in states:
            if h0 == "none":
                break
            starts, ends = const(f"{s}_start{layer}", [layer * dirs]), const(f"{s}_end{layer}", [(layer + 1) * dirs])
            nodes.append(h.make_node("Slice", [s, starts, ends, const(f"{s}_axes{layer}", [0])], [f"{s}_{layer}"]))
            node_in.append(f"{s}_{layer}")
        outs = [f"y{layer}", f"yh{layer}"] + ([f"yc{layer}"] if op == "LSTM" else [])
        attrs = dict(hidden_size=hid, direction="bidirectional" if bidirectional else "forward")
        if op == "GRU":
            attrs["linear_before_reset"] = 1   # what torch's GRU computes
        nodes.append(h.make_node(op, node_in, outs, **attrs))
        if bidirectional:
            nodes.append(h.make_node("Transpose", [f"y{layer}"], [f"yt{layer}"], perm=[0, 2, 1, 3]))
            nodes.append(h.make_node("Reshape", [f"yt{layer}", const(f"shape{layer}", np.array([0, 0, -1]))],
                                     [f"out{layer}"]))
        else:
            nodes.append(h.make_node("Squeeze", [f"y{layer}", const(f"axes{layer}", np.array([1]))], [f"out{layer}"]))
        cur = f"out{layer}"
        h_outs.append(f"yh{layer}")
    nodes.append(h.make_node("Concat", h_outs, ["h_n"], axis=0))
    if batch_first:
        nodes.append(h.make_node("Transpose", [cur], ["output"], perm=[1, 0, 2]))
    else:
        nodes.append(h.make_node("Identity", [cur], ["output"]))
    outs = [h.make_tensor_value_info(n, TP.FLOAT, None) for n in ("output", "h_n")]
    model = h.make_model(h.make_graph(nodes, "torch_like", ins, outs, inits), opset_imports=[h.make_opsetid("", 14)])
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    return model, feeds


@pytest.mark.parametrize("h0", ["input", "zeros", "batch_zeros", "none"])
@pytest.mark.parametrize("batch_first, bidirectional", [(True, True), (False, True), (True, False), (False, False)])
@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_torch_export_form(op, batch_first, bidirectional, h0):
    model, feeds = torch_like(op, bidirectional=bidirectional, batch_first=batch_first, h0=h0)
    assert_matches(model, feeds)


# -- refusals ------------------------------------------------------------------------------

def reasons(model) -> set:
    result = convert(model.SerializeToString())
    return {u.reason_code for u in result.unsupported}


def test_run_time_weights_are_refused():
    model, _ = recurrent_model("LSTM", runtime_weights=True)
    assert reasons(model) == {"non_constant_operand"}


def test_partial_sequence_lens_are_refused_full_ones_convert():
    for lens, ok in (([3, 3], True), ([3, 1], False)):
        model, feeds = recurrent_model("GRU", 3, 2)
        node = model.graph.node[0]
        node.input[4] = "lens"
        model.graph.initializer.append(nh.from_array(np.array(lens, np.int32), "lens"))
        if ok:
            assert_matches(model, feeds)
        else:
            assert reasons(model) == {"unsupported_attribute"}


@pytest.mark.parametrize("activations", [["Sigmoid", "ThresholdedRelu", "Tanh"], ["Affine", "Tanh", "Tanh"],
                                         ["Sigmoid", "Tanh", "ScaledTanh"]])
def test_activation_defaults_the_spec_and_onnxruntime_disagree_on_are_refused(activations):
    model, _ = recurrent_model("LSTM", activations=activations)
    assert reasons(model) == {"unsupported_attribute"}


def test_unknown_batch_without_initial_state_is_refused_by_reason():
    model, _ = recurrent_model("LSTM", initial="none")
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "N"
    del model.graph.value_info[:]
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    assert reasons(onnx.shape_inference.infer_shapes(model)) == {"dynamic_shape"}


@pytest.mark.parametrize("op, attrs", [("LSTM", {}), ("LSTM", {"clip": 1.5}), ("GRU", {})])
@pytest.mark.parametrize("layout", [0, 1])
def test_without_hidden_size_or_declared_output_shapes(op, attrs, layout):
    """hidden_size is optional (R gives it); onnx then infers no output shapes. onnxruntime needs it, so
    the reference runs the model with it."""
    model, feeds = recurrent_model(op, 3, 2, 4, 5, "bidirectional", layout, **attrs)
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    node = bare.graph.node[0]
    kept = [a for a in node.attribute if a.name != "hidden_size"]
    del node.attribute[:]
    node.attribute.extend(kept)
    del bare.graph.value_info[:]
    for o in bare.graph.output:
        o.type.tensor_type.ClearField("shape")
    got, _ = converted(bare, feeds)
    for r, g in zip(reference(model, feeds), got):
        assert np.asarray(g).shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def test_batch_from_the_initial_states_when_x_leaves_it_open():
    """silero_vad's form: X [?, ?, input] with h, c [1, batch, hidden] inputs."""
    model, feeds = recurrent_model("LSTM", 4, 1, 3, 5, initial="input")
    for k in (0, 1):
        model.graph.input[0].type.tensor_type.shape.dim[k].dim_param = f"d{k}"
    del model.graph.value_info[:]
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in assert_matches(onnx.shape_inference.infer_shapes(model), feeds)


def test_unknown_rank_is_a_dynamic_shape():
    model, _ = recurrent_model("GRU")
    model.graph.input[0].type.tensor_type.ClearField("shape")
    del model.graph.value_info[:]
    assert reasons(model) == {"dynamic_shape"}


@pytest.mark.parametrize("given", ["h0", "c0"])
@pytest.mark.parametrize("clip", [None, 0.7])
def test_lstm_with_one_initial_state(given, clip):
    model, feeds = recurrent_model("LSTM", 3, 2, 4, 5, "bidirectional", initial="input",
                                   **({} if clip is None else {"clip": clip}))
    node = model.graph.node[0]
    other = "c0" if given == "h0" else "h0"
    node.input[list(node.input).index(other)] = ""
    keep = [vi for vi in model.graph.input if vi.name != other]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    del feeds[other]
    assert_matches(model, feeds)


@pytest.mark.parametrize("op, attrs", [("GRU", {}), ("LSTM", {"clip": 3.0}), ("LSTM", {}), ("RNN", {"clip": 0.9})])
def test_long_sequences(op, attrs):
    """50 steps of 32 units with torch's weight scale (1 / sqrt(hidden)); larger weights make these
    recurrences chaotic, where float32 rounding differences grow step by step in any two implementations."""
    model, feeds = recurrent_model(op, 50, 2, 16, 32, "bidirectional", weight_scale=32 ** -0.5, **attrs)
    assert_matches(model, feeds)

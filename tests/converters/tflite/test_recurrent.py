"""TFLite LSTM / RNN / SVDF / LSH_PROJECTION -> NNAPI, compared with LiteRT at feature levels 1, 3, 4, 8.

State tensors are TFLite variable tensors (zero on a fresh interpreter). Extents
are distinct: batch 2, input 3, cell units 4, projection 5, time 6."""
import numpy as np
import pytest

from converters.convert import convert_source
from converters.source_graph import Quant
from converters.tflite import read
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

B, I, U, P, T = 2, 3, 4, 5, 6
LEVELS = [1, 3, 4, 8]
GATES = ("input", "forget", "cell", "output")


def _rng(seed=0):
    return np.random.default_rng(seed)


def _w(rng, *shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _variable(g, name, shape, type_="FLOAT32", **q):
    i = g.tensor(name, shape, type_, **q)
    g.sg.tensors[i].isVariable = True
    return i


def _lstm_weights(g, rng, prefix, n_in, cifg=False, peephole=False, projection=False):
    """The 17 weight inputs of one direction (-1 where absent)."""
    out_size = P if projection else U
    ins = [-1 if cifg and gate == "input" else g.const(f"{prefix}i2{gate}", _w(rng, U, n_in)) for gate in GATES]
    ins += [-1 if cifg and gate == "input" else g.const(f"{prefix}r2{gate}", _w(rng, U, out_size)) for gate in GATES]
    ins += [g.const(f"{prefix}c2{gate}", _w(rng, U)) if peephole and not (cifg and gate == "input") else -1
            for gate in ("input", "forget", "output")]
    ins += [-1 if cifg and gate == "input" else g.const(f"{prefix}b{gate}", _w(rng, U, scale=0.1)) for gate in GATES]
    ins += [g.const(f"{prefix}proj", _w(rng, P, U)), g.const(f"{prefix}projb", _w(rng, P, scale=0.1))] \
        if projection else [-1, -1]
    return ins, out_size


def lstm_model(op="LSTM", cifg=False, peephole=False, projection=False, layer_norm=False, clip=0.0,
               time_major=False, activation="TANH", version=1, diagonal=False):
    rng = _rng()
    g = GraphBuilder()
    seq = op != "LSTM"
    in_shape = ([T, B, I] if time_major else [B, T, I]) if seq else [B, I]
    x = g.input("x", in_shape)
    weights, out_size = _lstm_weights(g, rng, "", I, cifg, peephole, projection)
    if diagonal:  # recurrent weights as [units] vectors (UNIDIRECTIONAL_SEQUENCE_LSTM version 4)
        for k in range(4, 8):
            t = g.sg.tensors[weights[k]]
            t.shape = [U]
            g.root.buffers[t.buffer].data = _w(rng, U).view(np.uint8).tolist()
    states = [_variable(g, "h", [B, out_size]), _variable(g, "c", [B, U])]
    ln = [-1 if cifg and gate == "input" else g.const(f"ln{gate}", 1 + _w(rng, U, scale=0.1)) for gate in GATES] \
        if layer_norm else []
    out = g.tensor("out", in_shape[:-1] + [out_size])
    options = dict(fused_activation_function=activation, cell_clip=clip, proj_clip=clip)
    if seq:
        options.update(time_major=time_major, diagonal_recurrent_tensors=diagonal)
    g.op(op, [x] + weights + states + ln, [out], "LSTMOptions" if op == "LSTM" else "UnidirectionalSequenceLSTMOptions",
         version=version, **options)
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("variant", [dict(), dict(cifg=True, peephole=True), dict(projection=True, clip=0.3),
                                     dict(layer_norm=True, peephole=True)])
def test_lstm(variant, level):
    data = lstm_model(**variant)
    need = 3 if variant.get("layer_norm") else 1
    if level < need:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == ["LSTM"]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("variant", [dict(time_major=True), dict(cifg=True, projection=True, clip=0.5),
                                     dict(layer_norm=True, cifg=True), dict(diagonal=True, version=4)])
def test_unidirectional_sequence_lstm(variant, level):
    data = lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", **variant)
    if level < 3:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == ["UNIDIRECTIONAL_SEQUENCE_LSTM"]


UNROLLED = ["STRIDED_SLICE", "{}", "RESHAPE"] * T + ["CONCATENATION"]


@pytest.mark.parametrize("variant", [dict(time_major=True, peephole=True), dict(projection=True, clip=0.5),
                                     dict(layer_norm=True, cifg=True)])
def test_unidirectional_sequence_lstm_unrolled_at_level_2(variant):
    """Below UNIDIRECTIONAL_SEQUENCE_LSTM's level 3: STRIDED_SLICE (level 2) + LSTM steps + CONCATENATION."""
    data = lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", **variant)
    if variant.get("layer_norm"):  # layer-normalized LSTM steps need level 3 themselves
        assert unsupported_reason(data, 2).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, 2)
    assert result.nodes[0].nnapi_ops == [op.format("LSTM") for op in UNROLLED]


def bidi_lstm_model(merge=False, time_major=True, aux=None):
    rng = _rng(1)
    g = GraphBuilder()
    shape = [T, B, I] if time_major else [B, T, I]
    x = g.input("x", shape)
    fw, _ = _lstm_weights(g, rng, "fw", I, peephole=True)
    bw, _ = _lstm_weights(g, rng, "bw", I, cifg=True)
    states = [_variable(g, n, [B, U]) for n in ("fh", "fc", "bh", "bc")]
    aux_ins = [-1] * 9
    if aux:
        aux_ins[0] = g.input("aux", shape[:-1] + [2])
        if aux == "cross":
            aux_ins[1:5] = [g.const(f"fa{k}", _w(rng, U, 2)) for k in range(4)]
            aux_ins[5:9] = [-1] + [g.const(f"ba{k}", _w(rng, U, 2)) for k in range(3)]
        else:  # parallel linking: the backward direction reads aux instead of x
            g.sg.tensors[aux_ins[0]].shape = shape
    outs = [g.tensor("fw_out", shape[:-1] + [2 * U if merge else U])]
    if not merge:
        outs.append(g.tensor("bw_out", shape[:-1] + [U]))
    g.op("BIDIRECTIONAL_SEQUENCE_LSTM", [x] + fw + bw + states + aux_ins, outs, "BidirectionalSequenceLSTMOptions",
         fused_activation_function="TANH", merge_outputs=merge, time_major=time_major, cell_clip=2.0)
    g.output(*outs)
    return g.finish()


@pytest.mark.parametrize("level", [1, 3, 8])
@pytest.mark.parametrize("variant", [dict(), dict(merge=True), dict(time_major=False), dict(aux="cross"),
                                     dict(aux="parallel", merge=True)])
def test_bidirectional_sequence_lstm(variant, level):
    data = bidi_lstm_model(**variant)
    if level < 3:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    assert_matches_litert(data, level)


def test_bidirectional_lstm_merged_batch_major_is_reported():
    # LiteRT leaves part of this output unwritten (run-to-run differences)
    node = unsupported_reason(bidi_lstm_model(merge=True, time_major=False), 8)
    assert node.reason_code == "unsupported_attribute" and "time_major" in node.reason


def basic_lstm_model(quantized=False, n_in=I):
    """TFLite's basic kernel: stacked [4 * units, n_in + units] weights, (input, new input, forget, output)."""
    rng = _rng(2)
    g = GraphBuilder()
    if quantized:
        q8, q16 = dict(scale=1 / 128, zero_point=128), dict(scale=2 ** -11, zero_point=0)
        w_q = dict(scale=0.02, zero_point=130)
        x = g.input("x", [B, n_in], "UINT8", **q8)
        h = g.input("h", [B, U], "UINT8", **q8)
        w = g.const("w", rng.integers(80, 180, (4 * U, n_in + U)).astype(np.uint8), **w_q)
        b = g.const("b", rng.integers(-2000, 2000, 4 * U).astype(np.int32), scale=0.02 / 128, zero_point=0)
        c = g.input("c", [B, U], "INT16", **q16)
        outs = [g.tensor("h_out", [B, U], "UINT8", **q8), g.tensor("c_out", [B, U], "INT16", **q16),
                g.tensor("concat", [B, n_in + U], "UINT8", **q8),
                g.tensor("activ", [B, 4 * U], "INT16", scale=2 ** -12, zero_point=0)]
    else:
        x, h, c = g.input("x", [B, n_in]), g.input("h", [B, U]), g.input("c", [B, U])
        w, b = g.const("w", _w(rng, 4 * U, n_in + U)), g.const("b", _w(rng, 4 * U, scale=0.1))
        outs = [g.tensor("h_out", [B, U]), g.tensor("c_out", [B, U]), g.tensor("concat", [B, n_in + U]),
                g.tensor("activ", [B, 4 * U])]
    g.op("LSTM", [x, h, w, b, c], outs, "LSTMOptions", version=2, fused_activation_function="TANH", kernel_type=1)
    g.output(outs[0], outs[1])
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("quantized", [False, True])
def test_basic_lstm(quantized, level):
    data = basic_lstm_model(quantized, U if quantized else I)  # see test_basic_quantized_lstm_sizes
    need = 3 if quantized else 1
    if level < need:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == ["QUANTIZED_16BIT_LSTM" if quantized else "LSTM"]


def test_basic_quantized_lstm_sizes():
    # Android's QUANTIZED_16BIT_LSTM pairs [recurrent | input] weights with [input, output]
    node = unsupported_reason(basic_lstm_model(True, n_in=3), 8)
    assert node.reason_code == "unsupported_attribute" and "'x'" in node.reason


# -- RNNs and SVDF ---------------------------------------------------------------------

def rnn_model(op, time_major=False, merge=False, aux=False, activation="RELU"):
    rng = _rng(3)
    g = GraphBuilder()
    seq = op != "RNN"
    shape = ([T, B, I] if time_major else [B, T, I]) if seq else [B, I]
    x = g.input("x", shape)

    def cell(prefix):
        return [g.const(f"{prefix}w", _w(rng, U, I)), g.const(f"{prefix}r", _w(rng, U, U)),
                g.const(f"{prefix}b", _w(rng, U, scale=0.1)), _variable(g, f"{prefix}h", [B, U])]
    if op == "BIDIRECTIONAL_SEQUENCE_RNN":
        ins = [x] + cell("fw") + cell("bw")
        if aux:
            ins += [g.input("aux", shape[:-1] + [2]), g.const("fwa", _w(rng, U, 2)), g.const("bwa", _w(rng, U, 2))]
        else:
            ins += [-1, -1, -1]
        outs = [g.tensor("fw_out", shape[:-1] + [2 * U if merge else U])]
        if not merge:
            outs.append(g.tensor("bw_out", shape[:-1] + [U]))
        g.op(op, ins, outs, "BidirectionalSequenceRNNOptions", fused_activation_function=activation,
             time_major=time_major, merge_outputs=merge)
    else:
        outs = [g.tensor("out", shape[:-1] + [U])]
        if seq:
            g.op(op, [x] + cell(""), outs, "SequenceRNNOptions", fused_activation_function=activation,
                 time_major=time_major)
        else:
            g.op(op, [x] + cell(""), outs, "RNNOptions", fused_activation_function=activation)
    g.output(*outs)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("op,variant", [
    ("RNN", dict(activation="TANH")), ("RNN", dict(activation="RELU_N1_TO_1")),
    ("UNIDIRECTIONAL_SEQUENCE_RNN", dict(time_major=True)), ("UNIDIRECTIONAL_SEQUENCE_RNN", dict()),
    ("BIDIRECTIONAL_SEQUENCE_RNN", dict(time_major=True)),
    ("BIDIRECTIONAL_SEQUENCE_RNN", dict(merge=True, aux=True, activation="RELU6"))])
def test_rnn(op, variant, level):
    data = rnn_model(op, **variant)
    need = 1 if op == "RNN" else 3
    if level < need:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == [op]


@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_rnn_unrolled_at_level_2(time_major):
    result = assert_matches_litert(rnn_model("UNIDIRECTIONAL_SEQUENCE_RNN", time_major=time_major), 2)
    assert result.nodes[0].nnapi_ops == [op.format("RNN") for op in UNROLLED]


def svdf_model(rank=2, bias=True, activation="RELU"):
    rng = _rng(4)
    g = GraphBuilder()
    filters, memory = U * rank, 3
    x = g.input("x", [B, I])
    ins = [x, g.const("wf", _w(rng, filters, I)), g.const("wt", _w(rng, filters, memory)),
           g.const("b", _w(rng, U, scale=0.1)) if bias else -1, _variable(g, "state", [B, filters * memory])]
    out = g.tensor("out", [B, U])
    g.op("SVDF", ins, [out], "SVDFOptions", rank=rank, fused_activation_function=activation)
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("variant", [dict(), dict(rank=1, bias=False, activation="NONE")])
def test_svdf(variant, level):
    result = assert_matches_litert(svdf_model(**variant), level)
    assert result.nodes[0].nnapi_ops == ["SVDF"]


def test_svdf_state_from_a_graph_input_is_reported():
    data = svdf_model()
    source = read(data)
    state = next(t for t in source.main.tensors if t.name == "state")
    state.is_variable = False
    source.main.inputs.append(state.index)
    node = convert_source(source, 8).unsupported[0]
    assert node.reason_code == "unsupported_attribute" and "'state'" in node.reason


def test_sign_bit_activation_is_reported():
    node = unsupported_reason(rnn_model("RNN", activation="SIGN_BIT"), 8)
    assert node.reason_code == "fused_activation"


# -- LSH_PROJECTION ----------------------------------------------------------------------

def lsh_model(kind, input_type="FLOAT32", weight=True):
    rng = _rng(5)
    g = GraphBuilder()
    h = g.const("hash", rng.standard_normal((4, 3)).astype(np.float32))
    q = dict(scale=0.1, zero_point=3) if input_type == "UINT8" else {}
    x = g.input("x", [5, 2], input_type, **q)
    ins = [h, x] + ([g.const("weight", rng.random(5).astype(np.float32))] if weight else [])
    out = g.tensor("out", [4] if kind == "SPARSE" else [12], "INT32")
    g.op("LSH_PROJECTION", ins, [out], "LSHProjectionOptions", type=kind)
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", [1, 3, 8])
@pytest.mark.parametrize("kind,input_type,weight", [("DENSE", "FLOAT32", True), ("SPARSE", "FLOAT32", False),
                                                    ("SPARSE", "INT32", True), ("DENSE", "UINT8", False)])
def test_lsh_projection(kind, input_type, weight, level):
    data = lsh_model(kind, input_type, weight)
    need = 3 if kind == "SPARSE" else 1  # NNAPI SPARSE (with per-function offsets) is level 3
    if level < need:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == ["LSH_PROJECTION"]


# -- fully integer LSTM -----------------------------------------------------------------

def int8_lstm_model(layer_norm=True, cifg=False, projection=False, clip=0.0, op="LSTM", time_major=False, batch=B):
    """TFLite's 8x8_16 LSTM: int8 activations and weights, int16 cell state, five intermediates."""
    rng = _rng(6)
    g = GraphBuilder()
    out_size = P if projection else U
    q8 = dict(scale=1 / 128, zero_point=-2)
    lead = ([T, batch] if time_major else [batch, T]) if op != "LSTM" else [batch]
    x = g.input("x", lead + [I], "INT8", **q8)

    def w8(name, *shape):
        return g.const(name, rng.integers(-127, 128, shape).astype(np.int8), scale=0.004, zero_point=0)
    ins = [-1 if cifg and gate == "input" else w8(f"i2{gate}", U, I) for gate in GATES]
    ins += [-1 if cifg and gate == "input" else w8(f"r2{gate}", U, out_size) for gate in GATES]
    ins += [-1, -1, -1]  # no peephole
    ins += [-1 if cifg and gate == "input" else
            g.const(f"b{gate}", rng.integers(-3000, 3000, U).astype(np.int32), scale=1e-5, zero_point=0)
            for gate in GATES]
    ins += [w8("proj", P, U), -1] if projection else [-1, -1]
    ins += [_variable(g, "h", [batch, out_size], "INT8", scale=1 / 128, zero_point=0),
            _variable(g, "c", [batch, U], "INT16", scale=2 ** -11, zero_point=0)]
    if layer_norm:
        ins += [-1 if cifg and gate == "input" else
                g.const(f"ln{gate}", rng.integers(8000, 24000, U).astype(np.int16), scale=2 ** -14, zero_point=0)
                for gate in GATES]
    inter = [g.tensor(f"inter_{gate}", [0], "INT16", scale=0.0005 + 0.0001 * k, zero_point=0)
             for k, gate in enumerate(GATES)]
    inter.append(g.tensor("hidden", [0], "INT8", scale=1 / 128, zero_point=0))
    out = g.tensor("out", lead + [out_size], "INT8", scale=1 / 128, zero_point=0)
    options = dict(fused_activation_function="TANH", cell_clip=clip, proj_clip=clip)
    if op == "LSTM":
        k = g.op(op, [x] + ins, [out], "LSTMOptions", version=3, **options)
    else:
        k = g.op(op, [x] + ins, [out], "UnidirectionalSequenceLSTMOptions", version=3, time_major=time_major,
                 **options)
    g.sg.operators[k].intermediates = inter
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("variant", [dict(), dict(cifg=True, clip=0.5), dict(layer_norm=False),
                                     dict(projection=True)])
def test_int8_lstm(variant, level):
    data = int8_lstm_model(**variant)
    if level < 4:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == ["QUANTIZED_LSTM"]


# the steps cut by one SPLIT of the time-major rows and joined by one CONCATENATION (recurrent_unroll.py)
SPLIT_IN = {"batch-major": ["TRANSPOSE", "RESHAPE", "SPLIT"], "time-major": ["RESHAPE", "SPLIT"]}
SPLIT_OUT = {"batch-major": ["CONCATENATION", "RESHAPE", "TRANSPOSE"], "time-major": ["CONCATENATION", "RESHAPE"]}
INT8_SEQUENCES = {"batch-major": dict(), "time-major": dict(time_major=True, cifg=True, layer_norm=False),
                  "batch-major, batch 1": dict(batch=1, layer_norm=False)}


@pytest.mark.parametrize("level", [3, 4, 8])
@pytest.mark.parametrize("name", INT8_SEQUENCES)
def test_int8_unidirectional_sequence_lstm_unrolled(name, level):
    """NNAPI has no integer sequence LSTM: one QUANTIZED_LSTM per step, between one SPLIT and one
    CONCATENATION (a batch of 1 needs no TRANSPOSE: its batch-major rows are time-major)."""
    variant = INT8_SEQUENCES[name]
    data = int8_lstm_model(op="UNIDIRECTIONAL_SEQUENCE_LSTM", **variant)
    if level < 4:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    layout = "batch-major" if variant.get("batch", B) > 1 and not variant.get("time_major") else "time-major"
    assert result.nodes[0].nnapi_ops == SPLIT_IN[layout] + ["QUANTIZED_LSTM"] * T + SPLIT_OUT[layout]


@pytest.mark.parametrize("name", INT8_SEQUENCES)
def test_split_unrolling_gives_the_sliced_outputs(name, monkeypatch):
    """The SPLIT / CONCATENATION form and the per-step STRIDED_SLICE / RESHAPE form (what the
    converter emitted before, and still does below SPLIT's level) give identical outputs."""
    from converters.running import random_source_inputs, run_converted
    from converters.tflite import convert
    from converters.tflite.ops import recurrent_unroll
    data = int8_lstm_model(op="UNIDIRECTIONAL_SEQUENCE_LSTM", **INT8_SEQUENCES[name])
    split = convert(data, feature_level=8)
    monkeypatch.setattr(recurrent_unroll, "_splits", lambda *a: False)
    sliced = convert(data, feature_level=8)
    assert "STRIDED_SLICE" in sliced.nodes[0].nnapi_ops and "STRIDED_SLICE" not in split.nodes[0].nnapi_ops
    for seed in range(3):
        ins = random_source_inputs(split.source.main, seed)
        for a, b in zip(run_converted(split, ins), run_converted(sliced, ins)):
            assert a.dtype == b.dtype and np.array_equal(a, b)


# -- what is reported --------------------------------------------------------------------

def test_newer_version_is_reported():
    node = unsupported_reason(lstm_model(version=5), 8)
    assert node.reason_code == "operator_version" and "5" in node.reason


@pytest.mark.parametrize("op", ["RNN", "SVDF"])
def test_quantized_rnn_and_svdf_are_reported(op):
    """NNAPI's RNN and SVDF are float only: integer variants are reported, not approximated (hybrid
    ones, int8 weights with a float input, convert: test_hybrid.py)."""
    source = read(rnn_model("RNN") if op == "RNN" else svdf_model())
    # the same graph with uint8 weights, which no LiteRT hybrid kernel defines
    w = next(t for t in source.main.tensors if t.is_constant)
    w.dtype, w.quant, w.data = np.dtype(np.uint8), Quant((0.01,), (128,)), np.zeros(w.shape, np.uint8)
    node = convert_source(source, 8).unsupported[0]
    assert node.reason_code == "quantization_type" and repr(w.name) in node.reason

"""The integer recurrent kernels against LiteRT's reference kernels (BUILTIN_REF) over seeded sweeps of
shapes, structures and the quantization parameters TensorFlow's calibrator produces (int8_lstm_models.py).

The fully integer LSTM (UNIDIRECTIONAL_SEQUENCE_LSTM unrolled into QUANTIZED_LSTM steps, and the
one-step LSTM), stored unit for stored unit, over units, input width, steps, batch, time-major,
projection, peepholes, CIFG, layer normalisation, clipping and calibration ranges; the quantized basic
LSTM (QUANTIZED_16BIT_LSTM) over sizes, batch and weight quantization (its cell state within a derived
bound, see BASIC); the hybrid RNN and LSTM families (int8 weights, float activations) over sizes. Each
case runs the converted model with the compile-time fast paths and with the plain kernels. Parameters
for which LiteRT's own result is undefined are refused with the reason, and the sweeps check which."""
import numpy as np
import pytest

from converters.runners import run_litert
from converters.running import run_converted
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite import test_recurrent as rec
from tests.converters.tflite.harness import assert_matches_litert
from tests.converters.tflite.int8_lstm_models import LstmCase, int8_lstm, stored_inputs
from tests.converters.tflite.test_hybrid import check_hybrid, hybridize, recurrent_bound

REFERENCE = "litert-ref"


def _sweep(count: int = 56) -> list:
    """Seeded cases spread over every axis (CORNERS: the combinations that once differed)."""
    rng = np.random.default_rng(2030)
    ranges = [(-1.0, 1.0), (0.0, 6.0), (-0.05, 0.05), (-8.0, 2.0), (-3.0, 3.0)]
    cases = []
    for k in range(count):
        units = int(rng.choice([1, 2, 4, 7, 16, 33]))
        projection = int(rng.choice([0, 0, 0, max(1, units // 2), units + 3]))
        op = "LSTM" if rng.random() < 0.2 else "UNIDIRECTIONAL_SEQUENCE_LSTM"
        cases.append(LstmCase(
            units=units, n_in=int(rng.choice([1, 3, 8, 20])), steps=int(rng.choice([1, 3, 7])),
            batch=int(rng.choice([1, 1, 2, 3])), projection=projection, peephole=bool(rng.random() < 0.4),
            cifg=bool(rng.random() < 0.3), layer_norm=bool(rng.random() < 0.4), time_major=bool(rng.random() < 0.3),
            op=op, input_range=ranges[int(rng.integers(len(ranges)))], weight_std=float(rng.choice([0.1, 0.5, 2.0])),
            cell_clip=float(rng.choice([0.0, 0.0, 0.5])),
            proj_clip=float(rng.choice([0.0, 0.2])) if projection else 0.0,
            seed=k))
    return cases


CORNERS = {
    # the Keras text classifier's shape: untrained embeddings leave a cell state scale below 2^-15
    "small cell state (tanh skipped)": LstmCase(units=32, n_in=32, steps=20, input_range=(-0.05, 0.05), weight_std=0.3,
                                                bias_std=0.0),
    "projection, hidden zero point saturating": LstmCase(units=4, projection=3, steps=5),
    "projection, peepholes, layer norm": LstmCase(projection=2, peephole=True, layer_norm=True),
    "time-major peepholes, projection, batch 3": LstmCase(peephole=True, projection=3, batch=3, time_major=True),
    "one step, peepholes, projection, batch 3": LstmCase(peephole=True, projection=3, batch=3, op="LSTM"),
    "CIFG, layer norm, peepholes": LstmCase(cifg=True, layer_norm=True, peephole=True, batch=2),
    "CIFG, large cell state": LstmCase(cifg=True, peephole=True, input_range=(-3.0, 3.0), weight_std=2.0),
    "clipping": LstmCase(projection=5, proj_clip=0.3, cell_clip=0.5, weight_std=2.0, input_range=(-3.0, 3.0)),
}

# (what LiteRT leaves undefined, the reason code and words of the refusal)
REFUSED = {
    "CIFG below 2^-15": ("quantization_type", "reads a buffer it never wrote"),
    "peephole, more outputs": ("unsupported_attribute", "reads past them"),
    "peephole, batch-major rows": ("unsupported_attribute", "each batch row"),
}


def _refusal(reason: str):
    """Which REFUSED entry the converter's reason is (None: none of them)."""
    return next((k for k, (_, words) in REFUSED.items() if words in reason), None)


def _compare(case: LstmCase, monkeypatch) -> str:
    """'equal' or the REFUSED key; asserts LiteRT's reference and the executor agree to the stored unit."""
    import executor.runtime as runtime
    data = int8_lstm(case)
    result = convert(data, feature_level=8)
    if not result.complete:
        node = result.unsupported[0]
        key = _refusal(node.reason)
        assert key is not None and node.reason_code == REFUSED[key][0], (case, node.reason_code, node.reason)
        return key
    for data_seed in range(2):
        for full_range in (False, True):
            x = stored_inputs(case, data_seed, full_range)
            want = run_litert(data, [x], REFERENCE)[0]
            for fast in (True, False):
                monkeypatch.setattr(runtime, "FAST_PATHS", fast)
                got = run_converted(result, [x])[0].reshape(want.shape)
                diff = np.abs(want.astype(np.int64) - got.astype(np.int64))
                assert diff.max() == 0, (f"{case}\ninputs seed {data_seed}, full range {full_range}, fast paths "
                                         f"{fast}: {int(diff.max())} units\nlitert-ref {want.ravel()[:12]}\n"
                                         f"executor   {got.ravel()[:12]}")
    return "equal"


def test_int8_lstm_sweep(monkeypatch):
    """Every case equal to LiteRT's reference kernels or refused for a reason LiteRT's kernel gives; most
    are compared, and the compared ones cover every axis."""
    cases = _sweep()
    outcome = [_compare(c, monkeypatch) for c in cases]
    compared = [c for c, o in zip(cases, outcome) if o == "equal"]
    assert len(compared) >= 2 / 3 * len(cases), outcome
    covered = {"projection": any(c.projection for c in compared), "peephole": any(c.peephole for c in compared),
               "cifg": any(c.cifg for c in compared), "layer_norm": any(c.layer_norm for c in compared),
               "time_major": any(c.time_major and c.batch > 1 for c in compared),
               "batch": any(c.batch > 1 and not c.time_major for c in compared),
               "one step": any(c.op == "LSTM" for c in compared), "clip": any(c.cell_clip for c in compared),
               "width 33": any(c.units == 33 for c in compared)}
    assert all(covered.values()), covered


@pytest.mark.parametrize("name", list(CORNERS))
def test_int8_lstm_corner(name, monkeypatch):
    assert _compare(CORNERS[name], monkeypatch) == "equal"


def test_small_cell_state_scale_multiplies_the_input_gate():
    """Below 2^-15 the kernels' tanh of the cell state writes nothing and the hidden state is output gate x
    input gate: the corner above is really there (its cell state scale is below 2^-15)."""
    from converters.tflite import read
    graph = read(int8_lstm(CORNERS["small cell state (tanh skipped)"])).main
    cell = next(t for t in graph.tensors if t.name == "c")
    assert cell.quant.scale < 2 ** -15


@pytest.mark.parametrize("name, case", [
    ("CIFG below 2^-15", LstmCase(cifg=True, input_range=(-0.05, 0.05), weight_std=0.1)),
    ("peephole, more outputs", LstmCase(peephole=True, projection=6)),
    ("peephole, batch-major rows", LstmCase(peephole=True, projection=3, batch=3)),
])
def test_undefined_in_litert_is_refused(name, case):
    """LiteRT reads an unwritten buffer (CIFG with a cell state scale below 2^-15), reads past the peephole
    weights (output size above the units), or applies peepholes per row of a batch-major sequence where
    QUANTIZED_LSTM applies them to the flattened batch: each refused, saying so."""
    node = convert(int8_lstm(case), feature_level=8).unsupported[0]
    assert _refusal(node.reason) == name and node.reason_code == REFUSED[name][0], node.reason


# -- the quantized basic LSTM (QUANTIZED_16BIT_LSTM) -------------------------------------------------

def basic_quantized_lstm(units: int, batch: int, w_scale: float, w_zp: int, seed: int) -> bytes:
    """TFLite's quantized basic LSTM kernel: uint8 1/128 activations, int16 2^-11 cell state, stacked
    [4 x units, 2 x units] uint8 weights (input width = units, as QUANTIZED_16BIT_LSTM pairs them)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    q8, q16 = dict(scale=1 / 128, zero_point=128), dict(scale=2 ** -11, zero_point=0)
    x, h = g.input("x", [batch, units], "UINT8", **q8), g.input("h", [batch, units], "UINT8", **q8)
    w = g.const("w", rng.integers(0, 256, (4 * units, 2 * units)).astype(np.uint8), scale=w_scale, zero_point=w_zp)
    b = g.const("b", rng.integers(-40000, 40000, 4 * units).astype(np.int32), scale=w_scale / 128, zero_point=0)
    c = g.input("c", [batch, units], "INT16", **q16)
    outs = [g.tensor("h_out", [batch, units], "UINT8", **q8), g.tensor("c_out", [batch, units], "INT16", **q16),
            g.tensor("concat", [batch, 2 * units], "UINT8", **q8),
            g.tensor("activ", [batch, 4 * units], "INT16", scale=2 ** -12, zero_point=0)]
    g.op("LSTM", [x, h, w, b, c], outs, "LSTMOptions", version=2, fused_activation_function="TANH", kernel_type=1)
    g.output(outs[0], outs[1])
    return g.finish()


BASIC = [(1, 1, 0.02, 128), (4, 3, 0.005, 100), (9, 2, 0.05, 140), (16, 1, 0.001, 128), (5, 4, 0.1, 0),
         (12, 3, 0.002, 90)]
# LiteRT's basic LSTM requantizes its fully connected gates in its GEMM (cpu_backend_gemm), whose results
# are within 1 unit (2^-12) of the exact value but not always the nearest, as Android's reference (and the
# executor) round. One unit moves a logistic gate by at most 2^-12 / 4 (2 units of 2^-15, plus 1 of rounding)
# and the tanh gate by 2^-12 (8 units, plus 1); the new cell state (units of 2^-11) then by at most
# (3 + 9) / 16 + 1 from input x modulation and 3 x 16 / 16 + 1 from forget x previous state (|state| <= 16):
# 6 units. The output state, uint8 1/128, has never differed.
BASIC_CELL_UNITS = 6


@pytest.mark.parametrize("units, batch, w_scale, w_zp", BASIC)
def test_basic_quantized_lstm_sweep(units, batch, w_scale, w_zp, monkeypatch):
    import executor.runtime as runtime
    data = basic_quantized_lstm(units, batch, w_scale, w_zp, seed=units)
    result = convert(data, feature_level=8)
    assert result.complete and result.nodes[0].nnapi_ops == ["QUANTIZED_16BIT_LSTM"]
    rng = np.random.default_rng(units + 100)
    for _ in range(5):
        ins = [rng.integers(0, 256, (batch, units)).astype(np.uint8),
               rng.integers(0, 256, (batch, units)).astype(np.uint8),
               rng.integers(-32768, 32768, (batch, units)).astype(np.int16)]
        want_h, want_c = run_litert(data, ins, REFERENCE)
        for fast in (True, False):
            monkeypatch.setattr(runtime, "FAST_PATHS", fast)
            got_h, got_c = (g.reshape(w.shape) for g, w in zip(run_converted(result, ins), (want_h, want_c)))
            assert np.array_equal(want_h, got_h), (fast, want_h.ravel()[:8], got_h.ravel()[:8])
            cell_units = int(np.abs(want_c.astype(np.int64) - got_c).max())
            assert cell_units <= BASIC_CELL_UNITS, (fast, cell_units)


def _redim(model, i, dims):
    import dataclasses
    model.operands[i].type = dataclasses.replace(model.operands[i].type, dimensions=tuple(dims))


def test_quantized_lstm_spec_states_the_cell_scale_and_peephole_rules():
    """NNAPI's QUANTIZED_LSTM spec flags what Android's reference refuses or reads past: a cell state scale
    that is no power of two at most 2^-9, and peepholes with an output size above the units."""
    import dataclasses
    from nnapi.ops import SPECS
    from nnapi.validate import operation_problems
    model = convert(int8_lstm(LstmCase(op="LSTM", peephole=True, projection=3)), feature_level=8).model
    assert operation_problems(model) == []
    op = next(o for o in model.operations if o.code.name == "QUANTIZED_LSTM")
    cell = model.operands[op.inputs[19]]
    for scale in (2.0 ** -8, 3e-5):
        cell.type = dataclasses.replace(cell.type, scale=scale)
        assert any("cell_state_in scale" in p and "power of two" in p for p in operation_problems(model)), scale
    cell.type = dataclasses.replace(cell.type, scale=2.0 ** -20)   # below 2^-15 is allowed: the tanh is skipped
    assert operation_problems(model) == []
    # the projection widened to 6 outputs, above the 4 units
    arg = {a.name: op.inputs[k] for k, a in enumerate(SPECS[op.code].forms[0].inputs)}
    for name in ("recurrent_to_input_weights", "recurrent_to_forget_weights", "recurrent_to_cell_weights",
                 "recurrent_to_output_weights"):
        _redim(model, arg[name], (4, 6))
    _redim(model, arg["projection_weights"], (6, 4))
    _redim(model, arg["projection_bias"], (6,))
    _redim(model, arg["output_state_in"], (1, 6))
    for i in op.outputs:
        if model.operands[i].type.dimensions[-1] == 3:
            _redim(model, i, (1, 6))
    assert any("output size 6 above the number of units 4" in p for p in operation_problems(model))


# -- the hybrid recurrent kernels (int8 weights, float activations) ------------------------------------

# (batch, input width, units, projection, steps): the builders of test_recurrent read these module sizes
HYBRID_SIZES = [(1, 1, 1, 2, 1), (3, 5, 7, 3, 4), (2, 8, 16, 9, 10)]
_PEEPHOLES = [f"{d}c2{g}" for d in ("", "fw") for g in ("input", "forget", "output")]
# name -> the model for the k-th size (its peepholes, where it has them, int8 too)
HYBRID = {
    "RNN": lambda k: rec.rnn_model("RNN", activation=("TANH", "RELU", "RELU6")[k]),
    "UNIDIRECTIONAL_SEQUENCE_RNN": lambda k: rec.rnn_model("UNIDIRECTIONAL_SEQUENCE_RNN", time_major=k != 1),
    # (batch-major, without merge_outputs, with which LiteRT's hybrid kernel crashes the process, and without
    # an aux input: test_hybrid_bidirectional_rnn_is_refused)
    "BIDIRECTIONAL_SEQUENCE_RNN": lambda k: rec.rnn_model("BIDIRECTIONAL_SEQUENCE_RNN"),
    "LSTM": lambda k: rec.lstm_model(**[dict(), dict(cifg=True, peephole=True, projection=True),
                                        dict(layer_norm=True, peephole=True, clip=0.5)][k]),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": lambda k: rec.lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", time_major=k != 1,
                                                             **[dict(), dict(projection=True, peephole=True),
                                                                dict(layer_norm=True, cifg=True)][k]),
    "BIDIRECTIONAL_SEQUENCE_LSTM": lambda k: rec.bidi_lstm_model(merge=k == 1, aux="cross" if k == 2 else None),
}


@pytest.mark.parametrize("k", range(len(HYBRID_SIZES)))
@pytest.mark.parametrize("name", list(HYBRID))
def test_hybrid_recurrent_sweep(name, k, monkeypatch):
    """Each hybrid recurrent kernel at several sizes: equal to LiteRT's reference float kernels on the
    dequantized twin, within test_hybrid's stated bound of its reference hybrid kernel."""
    for attr, value in zip("BIUPT", HYBRID_SIZES[k]):
        monkeypatch.setattr(rec, attr, value)
    check_hybrid(HYBRID[name](k), [8], recurrent_bound(rec.T), vectors=_PEEPHOLES, reference=REFERENCE)


@pytest.mark.parametrize("width", [2, 3])
def test_time_major_bidirectional_rnn_aux_input(width, monkeypatch):
    """LiteRT's time-major BIDIRECTIONAL_SEQUENCE_RNN steps through the aux input by the input's width: with
    an aux input as wide as the input (2 features) the conversion equals LiteRT's reference kernels; with a
    narrower one (the input has 3) LiteRT reads past it and the node is refused, saying so."""
    monkeypatch.setattr(rec, "I", width)
    data = rec.rnn_model("BIDIRECTIONAL_SEQUENCE_RNN", time_major=True, aux=True)
    if width == 2:
        assert_matches_litert(data, 8, reference=REFERENCE)
    else:
        node = convert(data, feature_level=8).unsupported[0]
        assert node.reason_code == "unsupported_attribute" and "'aux'" in node.reason and "input's width" in node.reason


@pytest.mark.parametrize("variant, words", [(dict(aux=True), "never wrote"),
                                           (dict(time_major=True), "times over")])
def test_hybrid_bidirectional_rnn_is_refused(variant, words):
    """LiteRT's hybrid BIDIRECTIONAL_SEQUENCE_RNN gives different results on every run with an aux input,
    and runs a time-major sequence max_time times over (its outer loop repeats the whole sequence): both
    refused (the float kernel is converted: test_recurrent)."""
    hybrid, _ = hybridize(rec.rnn_model("BIDIRECTIONAL_SEQUENCE_RNN", **variant))
    node = convert(hybrid, feature_level=8).unsupported[0]
    assert node.reason_code == "unsupported_attribute" and words in node.reason, node.reason

"""com.microsoft DynamicQuantizeLSTM in onnxruntime's integer arithmetic (converters/onnx/ops/dynamic_quant_lstm.py)
and DynamicQuantizeLinear's run-time quantization (runtime_quant.py), against onnxruntime itself.

The rule (docs/quantized-arithmetic.md, converters/parity_local.recurrent_steps): the integers and float32
roundings are onnxruntime's; only sigmoid / tanh differ (MLAS's approximations, a few ulps), so one step from a
zero state agrees to float32 ulps, and a sequence agrees within one flipped uint8 unit of h through one step:
2 * max|R| * unit, unit = (max(h, 0) - min(h, 0)) / 255 of onnxruntime's h."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper as h

from converters.onnx import convert
from converters.runners import run_onnxruntime

from tests.converters.onnx.harness import run_converted

from tests.converters.onnx.ortq_models import float_model, ops_of, ort_quantized

RNG = np.random.default_rng(7)


def lstm(seq, batch, hidden=16, inp=12, bidirectional=False, states=False, s=0.15, s_r=0.15):
    dirs = 2 if bidirectional else 1
    inits = {"w": RNG.normal(0, s, (dirs, 4 * hidden, inp)).astype(np.float32),
             "r": RNG.normal(0, s_r, (dirs, 4 * hidden, hidden)).astype(np.float32),
             "b": RNG.normal(0, s, (dirs, 8 * hidden)).astype(np.float32)}
    ins = [("x", [seq, batch, inp])] + ([("h0", [dirs, batch, hidden]), ("c0", [dirs, batch, hidden])] if states
                                        else [])
    node = h.make_node("LSTM", ["x", "w", "r", "b", "", *(["h0", "c0"] if states else [])], ["y", "yh", "yc"],
                       hidden_size=hidden, direction="bidirectional" if bidirectional else "forward")
    return float_model([node], ins, ["y", "yh", "yc"], inits), ins


def feeds(ins, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _, shape in ins]


def max_r(data) -> float:
    """max |R| dequantized as onnxruntime stores it (int8 q * scale; zero points 0 for int8)."""
    m = onnx.load_from_string(data)
    node = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
    init = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    q, scale = init[node.input[2]].astype(np.float64), init[node.input[10]].astype(np.float64)
    return float((np.abs(q) * scale.reshape(q.shape[0], 1, -1)).max())


def errors(data, result, x):
    ref, _ = run_onnxruntime(data, x)
    got = run_converted(result, x)
    return ref, [np.abs(r.astype(np.float64) - g.reshape(r.shape)).max() for r, g in zip(ref, got)]


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_one_step_from_zero_state_agrees_to_float32_ulps(bidirectional, per_channel):
    """From h = c = 0 there is no recurrent product: X's quantization, the integer product, the scales and the bias
    are onnxruntime's, so Y differs only by the activations' ulps (the float form on dequantized weights is off by
    X's rounding, about x_scale / 2 * sum |W|)."""
    model, ins = lstm(1, 1, bidirectional=bidirectional)
    data = ort_quantized(model, ins, "dynamic", per_channel=per_channel)
    assert "DynamicQuantizeLSTM" in ops_of(data)
    r = convert(data, 8)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    for seed in range(3):
        _, errs = errors(data, r, feeds(ins, seed))
        assert max(errs) <= 1e-6, (seed, errs)


CASES = [dict(seq=12, batch=1), dict(seq=12, batch=1, bidirectional=True), dict(seq=8, batch=2, states=True),
         dict(seq=8, batch=1, bidirectional=True, states=True)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_sequence_within_one_flipped_unit_of_h(case):
    model, ins = lstm(**case)
    data = ort_quantized(model, ins, "dynamic", per_channel=True)
    r = convert(data, 8)
    assert r.complete
    bound_r = max_r(data)
    for seed in range(4):
        x = feeds(ins, seed)
        ref, errs = errors(data, r, x)
        y = ref[0]
        unit = (max(y.max(), 0) - min(y.min(), 0)) / 255
        allowed = 2 * bound_r * unit + 1e-5
        assert max(errs) <= allowed, (seed, errs, allowed)


def test_the_float_form_breaks_the_rule(monkeypatch):
    """The rule tells the integer arithmetic from the float LSTM on dequantized weights (the fallback where float32
    cannot hold the products): the float form leaves it on the same model and inputs. (X's rounding, which the
    float form skips, grows with the input width; the allowance with max|R|: 40 inputs, torch-like R.)"""
    from converters.onnx.ops import dynamic_quant_lstm
    model, ins = lstm(12, 1, inp=40, s_r=0.05)
    data = ort_quantized(model, ins, "dynamic", per_channel=True)
    monkeypatch.setattr(dynamic_quant_lstm, "_exact", lambda parts: False)
    r = convert(data, 8)
    assert r.complete and any("cannot hold its integer products" in (n.note or "") for n in r.nodes)
    x = feeds(ins, 0)
    ref, errs = errors(data, r, x)
    unit = (max(ref[0].max(), 0) - min(ref[0].min(), 0)) / 255
    assert max(errs) > 2 * max_r(data) * unit + 1e-5, errs


def test_parity_default_verdict_is_local_with_the_rule(tmp_path):
    from converters.parity import check
    model, ins = lstm(10, 1, bidirectional=True, states=True)
    path = tmp_path / "lstm.onnx"
    path.write_bytes(ort_quantized(model, ins, "dynamic"))
    report = check(str(path), samples=3)
    assert report.verdict["rule"] == "local", report.verdict
    assert report.passed
    lstm_entries = [e for e in report.local if e["source_tensor"] in ("y", "yh", "yc")]
    assert lstm_entries and all(e["max_units"] < 1 for e in lstm_entries), lstm_entries


def _dql_model(n):
    g = h.make_graph([h.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"]),
                      h.make_node("MatMulInteger", ["y", "w", "z"], ["acc"]),
                      h.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
                      h.make_node("Mul", ["accf", "s"], ["out"])], "g",
                     [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                     [h.make_tensor_value_info("out", TensorProto.FLOAT, [1, 1]),
                      h.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                     [onnx.numpy_helper.from_array(np.ones((n, 1), np.int8), "w")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)]).SerializeToString()


@pytest.mark.parametrize("x", [[0, 255, 0.5, 1.5, 2.5, 3.5], [0, 0, 0, 0, 0, 0], [-1, 1, 0.2, 0.3, 0.4, 0.5]],
                         ids=["ties", "zeros", "range"])
def test_dynamic_quantize_linear_is_onnxruntimes(x):
    """Ties round half to even (0.5 -> 0, 2.5 -> 2 with scale 1) and an all-zero x has scale 1, as in
    onnxruntime's kernel: the sums of y - zp and the scale are equal."""
    data = _dql_model(len(x))
    r = convert(data, 8)
    assert r.complete
    v = [np.asarray([x], np.float32)]
    ref, _ = run_onnxruntime(data, v)
    got = run_converted(r, v)
    assert np.array_equal(ref[0], got[0].reshape(ref[0].shape)), (ref, got)
    assert float(ref[1]) == float(np.asarray(got[1]).ravel()[0])

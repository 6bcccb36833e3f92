"""The stacked float RNN/LSTM kernels (executor/kernels/recurrent/rnn.py, lstm.py) and their compiled form
(recurrent/prepared.py): CTS vectors with the weights turned into constants (the prepared path),
and random models against an independent per-gate numpy formula in float64, with the weights as
constants (prepared) and as model inputs (the plain kernel)."""
import copy
from pathlib import Path

import numpy as np
import pytest

from executor.conformance import build_model, find_vector_files, read_cases, run_case
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from tests.executor.op_harness import OMIT, build, run, scalar

F32 = C.TENSOR_FLOAT32
CTS = Path(__file__).resolve().parents[1] / "data" / "nnapi-cts"
GATES = ("input", "forget", "cell", "output")

# positions of the inputs a preparer takes at run time (the sequence, the states, an aux input)
RUNTIME_INPUTS = {"LSTM": (0, 18, 19), "UNIDIRECTIONAL_SEQUENCE_LSTM": (0, 18, 19),
                  "BIDIRECTIONAL_SEQUENCE_LSTM": (0, 35, 36, 37, 38, 39), "RNN": (0, 4),
                  "UNIDIRECTIONAL_SEQUENCE_RNN": (0, 4), "BIDIRECTIONAL_SEQUENCE_RNN": (0, 4, 8, 9)}


def t(dims, code=F32):
    return OperandType(code, dims)


# -- CTS vectors through the prepared path ------------------------------------------------

def _with_constant_weights(case: dict) -> dict:
    """The case with every model input that feeds a recurrent op's weight position made a constant
    (an empty value: omitted), as a converted model has them."""
    case = copy.deepcopy(case)
    main = case["main"]
    weights, others = set(), set()
    for op in main["operations"]:
        runtime = RUNTIME_INPUTS.get(op["type"], range(len(op["inputs"])))
        for pos, i in enumerate(op["inputs"]):
            (others if pos in runtime else weights).add(i)
    indexes, inputs = [], []
    for idx, values in zip(main["inputIndexes"], case["inputs"]):
        if idx in weights and idx not in others:
            main["operands"][idx].update(lifetime="CONSTANT_COPY" if values else "NO_VALUE", value=values)
        else:
            indexes.append(idx)
            inputs.append(values)
    main["inputIndexes"], case["inputs"] = indexes, inputs
    return case


def _float32_cases():
    for path in find_vector_files([CTS]):
        for case in read_cases(path):
            ops = case.get("operationTypes", [])
            main = case["main"]
            first_input = main["operands"][main["operations"][0]["inputs"][0]]
            # float16 models and weights computed inside the model stay with the plain kernels
            if (any(o in RUNTIME_INPUTS for o in ops) and not case.get("expectFailure")
                    and "all_inputs_as_internal" not in case["variation"] and first_input["type"] == "TENSOR_FLOAT32"):
                yield case


def test_cts_vectors_pass_through_the_prepared_kernels():
    seen = set()
    for case in _float32_cases():
        case = _with_constant_weights(case)
        steps = compile_model(build_model(case, [])).steps
        recurrent = [s for s in steps if s.code.name in RUNTIME_INPUTS]
        assert all(type(s.run).__name__.startswith("Prepared") for s in recurrent), case["id"]
        assert run_case(case) == ("passed", ""), case["id"]
        seen.update(s.code.name for s in recurrent)
    assert seen == set(RUNTIME_INPUTS)


# -- an independent formula ------------------------------------------------------------------

ACT = {0: lambda v: v, 1: lambda v: np.maximum(v, 0), 4: np.tanh, 6: lambda v: 1 / (1 + np.exp(-v))}


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def reference_lstm(w, x, h, c, act=4, reverse=False, aux=None):
    """Time-major x [time, batch, input] -> (outputs [time, batch, out], h, c) in float64, gate by gate.
    `w`: dict of the weights by NNAPI name (None: absent)."""
    x, h, c = (np.asarray(a, np.float64) for a in (x, h, c))
    outs = np.zeros((x.shape[0], x.shape[1], h.shape[1]))

    def gate(name, xt, auxt, cs):
        z = xt @ w[f"input_to_{name}"].T + h @ w[f"recurrent_to_{name}"].T
        if auxt is not None and w.get(f"aux_to_{name}") is not None:
            z = z + auxt @ w[f"aux_to_{name}"].T
        if name != "cell" and w.get(f"cell_to_{name}") is not None:
            z = z + w[f"cell_to_{name}"] * cs
        if w.get(f"{name}_layer_norm") is not None:
            z = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-8) * w[f"{name}_layer_norm"]
        return z + w[f"{name}_bias"]

    for k in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        auxt = None if aux is None else aux[k]
        f = sigmoid(gate("forget", x[k], auxt, c))
        i = 1 - f if w["input_to_input"] is None else sigmoid(gate("input", x[k], auxt, c))
        c = f * c + i * ACT[act](gate("cell", x[k], auxt, c))
        if w["cell_clip"]:
            c = np.clip(c, -w["cell_clip"], w["cell_clip"])
        y = sigmoid(gate("output", x[k], auxt, c)) * ACT[act](c)
        if w["projection"] is not None:
            y = y @ w["projection"].T + (0 if w["projection_bias"] is None else w["projection_bias"])
            if w["proj_clip"]:
                y = np.clip(y, -w["proj_clip"], w["proj_clip"])
        h = outs[k] = y
    return outs, h, c


def lstm_weights(rng, n_in, n, n_out, cifg=False, peephole=False, projection=False, layer_norm=False,
                 clip=0.0, aux_in=0):
    def r(*shape):
        return rng.uniform(-0.6, 0.6, shape).astype(np.float32)
    w = {}
    for g in GATES:
        absent = cifg and g == "input"
        w[f"input_to_{g}"] = None if absent else r(n, n_in)
        w[f"recurrent_to_{g}"] = None if absent else r(n, n_out)
        w[f"{g}_bias"] = None if absent else r(n)
        w[f"{g}_layer_norm"] = r(n) + 1 if layer_norm and not absent else None
        w[f"aux_to_{g}"] = r(n, aux_in) if aux_in and not absent else None
    for g in ("input", "forget", "output"):
        w[f"cell_to_{g}"] = r(n) if peephole and not (cifg and g == "input") else None
    w["projection"] = r(n_out, n) if projection else None
    w["projection_bias"] = r(n_out) if projection else None
    w["cell_clip"] = w["proj_clip"] = clip
    return w


def _spec(value, shape, as_input, model_inputs):
    """An op_harness operand spec for a weight: constant, omitted, or a model input (value appended)."""
    if value is None:
        return t(shape), OMIT
    if as_input:
        model_inputs.append(value)
        return t(list(value.shape)), None
    return t(list(value.shape)), value


def lstm_cell_specs(w, n_in, n, n_out, as_input, model_inputs):
    """Inputs 1..17 of an NNAPI LSTM (one direction)."""
    names = ([(f"input_to_{g}", [n, n_in]) for g in GATES] + [(f"recurrent_to_{g}", [n, n_out]) for g in GATES]
             + [(f"cell_to_{g}", [n]) for g in ("input", "forget", "output")] + [(f"{g}_bias", [n]) for g in GATES]
             + [("projection", [n_out, n]), ("projection_bias", [n_out])])
    return [_spec(w[k], shape, as_input, model_inputs) for k, shape in names]


def _is_prepared(model) -> bool:
    return type(compile_model(model).steps[0].run).__name__.startswith("Prepared")


LSTM_VARIANTS = [dict(), dict(peephole=True, projection=True, clip=0.75), dict(cifg=True, peephole=True),
                 dict(layer_norm=True, peephole=True, projection=True), dict(cifg=True, layer_norm=True, clip=0.5)]


@pytest.mark.parametrize("as_input", [False, True], ids=["prepared", "plain"])
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("variant", LSTM_VARIANTS, ids=lambda v: "-".join(v) or "basic")
def test_unidirectional_lstm_matches_the_formula(variant, time_major, as_input):
    rng = np.random.default_rng(len(variant) * 10 + time_major)
    steps, batch, n_in, n = 5, 3, 4, 6
    n_out = 3 if variant.get("projection") else n
    w = lstm_weights(rng, n_in, n, n_out, **variant)
    x = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    h0, c0 = (rng.uniform(-1, 1, (batch, k)).astype(np.float32) for k in (n_out, n))
    xin = x if time_major else np.ascontiguousarray(x.swapaxes(0, 1))
    model_inputs = [xin]
    ins = [(t(list(xin.shape)), None)] + lstm_cell_specs(w, n_in, n, n_out, as_input, model_inputs)
    model_inputs += [h0, c0]
    ins += [(t([batch, n_out]), None), (t([batch, n]), None), scalar(C.INT32, 4),
            scalar(C.FLOAT32, variant.get("clip", 0.0)), scalar(C.FLOAT32, variant.get("clip", 0.0)),
            scalar(C.BOOL, time_major)]
    ins += [_spec(w[f"{g}_layer_norm"], [n], as_input, model_inputs) for g in GATES]
    out_shape = [steps, batch, n_out] if time_major else [batch, steps, n_out]
    m = build(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [t(out_shape), t([batch, n_out]), t([batch, n])])
    assert _is_prepared(m) != as_input
    seq, h, c = run(m, *model_inputs)
    ref_seq, ref_h, ref_c = reference_lstm(w, x, h0, c0)
    np.testing.assert_allclose(seq if time_major else seq.swapaxes(0, 1), ref_seq, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(h, ref_h, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(c, ref_c, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("as_input", [False, True], ids=["prepared", "plain"])
def test_lstm_one_step_matches_the_formula(as_input):
    rng = np.random.default_rng(3)
    batch, n_in, n, n_out = 2, 3, 4, 2
    w = lstm_weights(rng, n_in, n, n_out, peephole=True, projection=True, layer_norm=True)
    x = rng.uniform(-1, 1, (batch, n_in)).astype(np.float32)
    h0, c0 = (rng.uniform(-1, 1, (batch, k)).astype(np.float32) for k in (n_out, n))
    model_inputs = [x]
    ins = [(t([batch, n_in]), None)] + lstm_cell_specs(w, n_in, n, n_out, as_input, model_inputs)
    model_inputs += [h0, c0]
    ins += [(t([batch, n_out]), None), (t([batch, n]), None), scalar(C.INT32, 4),
            scalar(C.FLOAT32, 0.0), scalar(C.FLOAT32, 0.0)]
    ins += [_spec(w[f"{g}_layer_norm"], [n], as_input, model_inputs) for g in GATES]
    m = build(Op.LSTM, ins, [t([batch, 4 * n]), t([batch, n_out]), t([batch, n]), t([batch, n_out])])
    assert _is_prepared(m) != as_input
    scratch, h, c, out = run(m, *model_inputs)
    _, ref_h, ref_c = reference_lstm(w, x[None], h0, c0)
    np.testing.assert_array_equal(scratch, 0)
    np.testing.assert_allclose(h, ref_h, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(out, ref_h, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(c, ref_c, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("as_input", [False, True], ids=["prepared", "plain"])
def test_bidirectional_lstm_cross_linked_aux_merged(as_input):
    rng = np.random.default_rng(5)
    steps, batch, n_in, n_aux, n, n_out = 4, 2, 3, 2, 5, 3
    fw = lstm_weights(rng, n_in, n, n_out, peephole=True, projection=True, aux_in=n_aux)
    bw = lstm_weights(rng, n_in, n, n_out, cifg=True, projection=True, aux_in=n_aux)
    x = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    aux = rng.uniform(-1, 1, (steps, batch, n_aux)).astype(np.float32)
    states = [rng.uniform(-1, 1, (batch, k)).astype(np.float32) for k in (n_out, n, n_out, n)]
    model_inputs = [np.ascontiguousarray(x.swapaxes(0, 1))]
    ins = [(t([batch, steps, n_in]), None)]
    ins += lstm_cell_specs(fw, n_in, n, n_out, as_input, model_inputs)
    ins += lstm_cell_specs(bw, n_in, n, n_out, as_input, model_inputs)
    ins += [(t(list(s.shape)), None) for s in states]
    model_inputs += states + [np.ascontiguousarray(aux.swapaxes(0, 1))]
    ins += [(t([batch, steps, n_aux]), None)]
    ins += [_spec(cell[f"aux_to_{g}"], [n, n_aux], as_input, model_inputs) for cell in (fw, bw) for g in GATES]
    ins += [scalar(C.INT32, 4), scalar(C.FLOAT32, 0.0), scalar(C.FLOAT32, 0.0), scalar(C.BOOL, True),
            scalar(C.BOOL, False)]
    ins += [(t([n]), OMIT)] * 8   # no layer norm
    m = build(Op.BIDIRECTIONAL_SEQUENCE_LSTM, ins, [t([batch, steps, 2 * n_out])])
    assert _is_prepared(m) != as_input
    (out,) = run(m, *model_inputs)
    ref_fw = reference_lstm(fw, x, states[0], states[1], aux=aux)[0]
    ref_bw = reference_lstm(bw, x, states[2], states[3], reverse=True, aux=aux)[0]
    np.testing.assert_allclose(out.swapaxes(0, 1), np.concatenate([ref_fw, ref_bw], axis=-1), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("as_input", [False, True], ids=["prepared", "plain"])
@pytest.mark.parametrize("variant", LSTM_VARIANTS, ids=lambda v: "-".join(v) or "basic")
def test_bidirectional_lstm_of_one_structure_runs_both_directions_at_once(variant, as_input):
    """Both directions with the same optional parts (the DirectionPair loop: gate-major lanes,
    block-diagonal recurrent weights), separate outputs and final states, against the formula."""
    from executor.kernels.recurrent import lstm as lstm_kernels
    rng = np.random.default_rng(7 + len(variant))
    steps, batch, n_in, n = 5, 2, 3, 4
    n_out = 3 if variant.get("projection") else n
    cells = [lstm_weights(rng, n_in, n, n_out, **variant) for _ in range(2)]
    x = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    states = [rng.uniform(-1, 1, (batch, k)).astype(np.float32) for k in (n_out, n, n_out, n)]
    model_inputs = [x]
    ins = [(t([steps, batch, n_in]), None)]
    for cell in cells:
        ins += lstm_cell_specs(cell, n_in, n, n_out, as_input, model_inputs)
    ins += [(t(list(s.shape)), None) for s in states]
    model_inputs += states
    ins += [(t([steps, batch, 1]), OMIT)] + [(t([n, 1]), OMIT)] * 8   # no aux input
    clip = variant.get("clip", 0.0)
    ins += [scalar(C.INT32, 4), scalar(C.FLOAT32, clip), scalar(C.FLOAT32, clip), scalar(C.BOOL, False),
            scalar(C.BOOL, True)]
    ins += [_spec(cell[f"{g}_layer_norm"], [n], as_input, model_inputs) for cell in cells for g in GATES]
    outs = [t([steps, batch, n_out])] * 2 + [t([batch, k]) for k in (n_out, n, n_out, n)]
    m = build(Op.BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs)
    assert _is_prepared(m) != as_input
    calls = []
    original = lstm_kernels.run_pair
    lstm_kernels.run_pair = lambda *a: calls.append(1) or original(*a)
    try:
        fw_seq, bw_seq, fw_h, fw_c, bw_h, bw_c = run(m, *model_inputs)
    finally:
        lstm_kernels.run_pair = original
    assert calls   # the paired loop ran
    ref_fw = reference_lstm(cells[0], x, states[0], states[1])
    ref_bw = reference_lstm(cells[1], x, states[2], states[3], reverse=True)
    for got, want in zip((fw_seq, fw_h, fw_c, bw_seq, bw_h, bw_c), ref_fw + ref_bw):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


# -- RNN family ---------------------------------------------------------------------------------

def reference_rnn(w, r, b, x, h, act, reverse=False):
    x, h = np.asarray(x, np.float64), np.asarray(h, np.float64)
    outs = np.zeros((x.shape[0], x.shape[1], w.shape[0]))
    for k in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        h = outs[k] = ACT[act](x[k] @ w.T + h @ r.T + b)
    return outs, h


def _rnn_specs(rng, n_in, n, as_input, model_inputs):
    w, r, b = (rng.uniform(-0.6, 0.6, s).astype(np.float32) for s in ((n, n_in), (n, n), (n,)))
    return (w, r, b), [_spec(a, None, as_input, model_inputs) for a in (w, r, b)]


@pytest.mark.parametrize("as_input", [False, True], ids=["prepared", "plain"])
@pytest.mark.parametrize("time_major,act", [(False, 1), (True, 4), (False, 6)])
def test_unidirectional_rnn_matches_the_formula(time_major, act, as_input):
    rng = np.random.default_rng(act)
    steps, batch, n_in, n = 6, 3, 4, 5
    x = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (batch, n)).astype(np.float32)
    model_inputs = [x if time_major else np.ascontiguousarray(x.swapaxes(0, 1))]
    (w, r, b), specs = _rnn_specs(rng, n_in, n, as_input, model_inputs)
    model_inputs.append(h0)
    ins = [(t(list(model_inputs[0].shape)), None)] + specs + [(t([batch, n]), None), scalar(C.INT32, act),
                                                              scalar(C.INT32, int(time_major))]
    out_shape = [steps, batch, n] if time_major else [batch, steps, n]
    m = build(Op.UNIDIRECTIONAL_SEQUENCE_RNN, ins, [t(out_shape), t([batch, n])])
    assert _is_prepared(m) != as_input
    seq, h = run(m, *model_inputs)
    ref_seq, ref_h = reference_rnn(w, r, b, x, h0, act)
    np.testing.assert_allclose(seq if time_major else seq.swapaxes(0, 1), ref_seq, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(h, ref_h, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("as_input", [False, True], ids=["prepared", "plain"])
def test_rnn_one_step_matches_the_formula(as_input):
    rng = np.random.default_rng(11)
    batch, n_in, n = 2, 3, 4
    x, h0 = rng.uniform(-1, 1, (batch, n_in)).astype(np.float32), rng.uniform(-1, 1, (batch, n)).astype(np.float32)
    model_inputs = [x]
    (w, r, b), specs = _rnn_specs(rng, n_in, n, as_input, model_inputs)
    model_inputs.append(h0)
    m = build(Op.RNN, [(t([batch, n_in]), None)] + specs + [(t([batch, n]), None), scalar(C.INT32, 4)],
              [t([batch, n]), t([batch, n])])
    assert _is_prepared(m) != as_input
    state, out = run(m, *model_inputs)
    ref = reference_rnn(w, r, b, x[None], h0, 4)[1]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(state, ref, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("as_input", [False, True], ids=["prepared", "plain"])
def test_bidirectional_rnn_parallel_linking_separate_outputs(as_input):
    # an aux input without aux weights: the backward direction reads the aux input instead of x
    rng = np.random.default_rng(13)
    steps, batch, n_in, n_aux, n = 5, 2, 3, 4, 3
    x = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    aux = rng.uniform(-1, 1, (steps, batch, n_aux)).astype(np.float32)
    fw_h, bw_h = (rng.uniform(-1, 1, (batch, n)).astype(np.float32) for _ in range(2))
    model_inputs = [x]
    fw, fw_specs = _rnn_specs(rng, n_in, n, as_input, model_inputs)
    model_inputs.append(fw_h)
    bw, bw_specs = _rnn_specs(rng, n_aux, n, as_input, model_inputs)
    model_inputs += [bw_h, aux]
    ins = ([(t([steps, batch, n_in]), None)] + fw_specs + [(t([batch, n]), None)] + bw_specs
           + [(t([batch, n]), None), (t([steps, batch, n_aux]), None), (t([n, n_aux]), OMIT), (t([n, n_aux]), OMIT),
              scalar(C.INT32, 1), scalar(C.BOOL, True), scalar(C.BOOL, False)])
    outs = [t([steps, batch, n]), t([steps, batch, n]), t([batch, n]), t([batch, n])]
    m = build(Op.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs)
    assert _is_prepared(m) != as_input
    fw_seq, bw_seq, fw_last, bw_last = run(m, *model_inputs)
    ref_fw, ref_fw_h = reference_rnn(*fw, x, fw_h, 1)
    ref_bw, ref_bw_h = reference_rnn(*bw, aux, bw_h, 1, reverse=True)
    for got, want in ((fw_seq, ref_fw), (bw_seq, ref_bw), (fw_last, ref_fw_h), (bw_last, ref_bw_h)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


# -- runs of one compiled model ------------------------------------------------------------------

def test_compiled_lstm_runs_do_not_leak_state():
    """Output buffers and work arrays are reused run after run: a run sees only its own inputs."""
    rng = np.random.default_rng(17)
    steps, batch, n_in, n = 4, 1, 3, 4
    w = lstm_weights(rng, n_in, n, n, peephole=True, clip=1.0)
    specs = lstm_cell_specs(w, n_in, n, n, False, [])
    ins = ([(t([batch, steps, n_in]), None)] + specs + [(t([batch, n]), None), (t([batch, n]), None),
           scalar(C.INT32, 4), scalar(C.FLOAT32, 1.0), scalar(C.FLOAT32, 0.0), scalar(C.BOOL, False)])
    m = build(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [t([batch, steps, n]), t([batch, n]), t([batch, n])])
    cm = compile_model(m)
    runs = [[rng.uniform(-1, 1, s).astype(np.float32) for s in ((batch, steps, n_in), (batch, n), (batch, n))]
            for _ in range(2)]
    first = [v.array.copy() for v in cm.run(runs[0], RunState(1.0))]
    cm.run(runs[1], RunState(1.0))
    again = [v.array.copy() for v in cm.run(runs[0], RunState(1.0))]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    ref_seq, ref_h, ref_c = reference_lstm(w, runs[0][0].swapaxes(0, 1), runs[0][1], runs[0][2])
    np.testing.assert_allclose(first[0].swapaxes(0, 1), ref_seq, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(first[2], ref_c, rtol=1e-5, atol=2e-6)

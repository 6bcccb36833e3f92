"""Fully integer (8x8_16) TFLite LSTMs quantized the way TensorFlow's converter quantizes a calibrated
float LSTM, for the sweep in test_int8_recurrent_sweep.py.

A float LSTM with seeded weights runs on calibration inputs (a numpy forward pass, used only to
choose quantization parameters, never as expected values); its observed ranges give:
int8 weights, symmetric per tensor (max |w| / 127); the input, output state and hidden state int8
asymmetric over [min(lo, 0), max(hi, 0)]; the cell state int16 with the power-of-two scale
2^ceil(log2 max|c|) / 2^15; peepholes and layer norm weights int16 symmetric (max |w| / 32767);
the gate biases int32 at input scale x weight scale (layer norm: layer norm scale / 1024); the
projection bias at projection scale x hidden scale; with layer norm, the four gate intermediates
int16 symmetric over the gate pre-activations."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from converters.tflite.authoring import GraphBuilder

GATES = ("input", "forget", "cell", "output")


@dataclass(frozen=True)
class LstmCase:
    units: int = 4
    n_in: int = 3
    steps: int = 5
    batch: int = 1
    projection: int = 0        # output size of the projection; 0: none
    peephole: bool = False
    cifg: bool = False
    layer_norm: bool = False
    time_major: bool = False
    op: str = "UNIDIRECTIONAL_SEQUENCE_LSTM"   # or "LSTM": one step
    input_range: tuple = (-1.0, 1.0)           # the calibration inputs' range
    weight_std: float = 0.5
    bias_std: float = 0.3      # gate biases ~ N(0, bias_std), the forget gate's + 1 (0: as Keras initialises them)
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    seed: int = 0

    @property
    def out_size(self) -> int:
        return self.projection or self.units


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _layer_norm(v, w, b):
    mean = v.mean(axis=-1, keepdims=True)
    return (v - mean) / np.sqrt(v.var(axis=-1, keepdims=True) + 1e-8) * w + b


def float_weights(case: LstmCase) -> dict:
    rng = np.random.default_rng(case.seed)
    u, n, s = case.units, case.n_in, case.weight_std
    w = {}
    for g in GATES:
        if case.cifg and g == "input":
            continue
        w[f"i2{g}"] = rng.normal(0, s, (u, n)) / np.sqrt(n)
        w[f"r2{g}"] = rng.normal(0, s, (u, case.out_size)) / np.sqrt(case.out_size)
        w[f"b{g}"] = rng.normal(0, case.bias_std, u) + (1.0 if g == "forget" else 0.0)
        if case.layer_norm:
            w[f"ln{g}"] = rng.uniform(0.5, 1.5, u)
        if case.peephole and g != "cell":
            w[f"c2{g}"] = rng.normal(0, 0.3, u)
    if case.projection:
        w["proj"] = rng.normal(0, s, (case.projection, u)) / np.sqrt(u)
        w["projb"] = rng.normal(0, 0.1, case.projection)
    return w


def float_lstm(case: LstmCase, w: dict, x: np.ndarray) -> dict:
    """Run the float LSTM over x [batch, steps, n_in]; the observed arrays (for their ranges)."""
    batch = x.shape[0]
    h, c = np.zeros((batch, case.out_size)), np.zeros((batch, case.units))
    seen = {k: [] for k in ("h", "c", "hidden", *(f"pre_{g}" for g in GATES))}
    for t in range(x.shape[1]):
        pre, act = {}, {}
        for g in ("forget", "cell", "output") if case.cifg else GATES:
            v = x[:, t] @ w[f"i2{g}"].T + h @ w[f"r2{g}"].T
            if f"c2{g}" in w and g != "output":
                v = v + c * w[f"c2{g}"]
            pre[g] = v
        for g in pre:
            if g == "output":
                continue
            v = _layer_norm(pre[g], w[f"ln{g}"], w[f"b{g}"]) if case.layer_norm else pre[g] + w[f"b{g}"]
            act[g] = np.tanh(v) if g == "cell" else _sigmoid(v)
        i_gate = 1.0 - act["forget"] if case.cifg else act["input"]
        c = act["forget"] * c + i_gate * act["cell"]
        if case.cell_clip:
            c = np.clip(c, -case.cell_clip, case.cell_clip)
        if "c2output" in w:
            pre["output"] = pre["output"] + c * w["c2output"]
        v = pre["output"]
        v = _layer_norm(v, w["lnoutput"], w["boutput"]) if case.layer_norm else v + w["boutput"]
        hidden = _sigmoid(v) * np.tanh(c)
        h = hidden @ w["proj"].T + w["projb"] if case.projection else hidden
        if case.projection and case.proj_clip:
            h = np.clip(h, -case.proj_clip, case.proj_clip)
        for k, a in (("h", h), ("c", c), ("hidden", hidden), *((f"pre_{g}", p) for g, p in pre.items())):
            seen[k].append(a)
    return {k: np.stack(v) for k, v in seen.items() if v}


def asymmetric(lo: float, hi: float) -> tuple:
    """(scale, zero point) of TFLite's int8 asymmetric quantization of the range [lo, hi]."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    return float(np.float32(scale)), int(np.clip(np.round(-128 - lo / scale), -128, 127))


def _symmetric(values, levels: int) -> float:
    return float(np.float32(max(float(np.abs(values).max()), 1e-8) / levels))


def calibration_inputs(case: LstmCase, count: int = 8) -> np.ndarray:
    rng = np.random.default_rng(case.seed + 1000)
    return rng.uniform(*case.input_range, (count * case.batch, case.steps, case.n_in))


def int8_lstm(case: LstmCase) -> bytes:
    """The case's LSTM, calibrated on calibration_inputs and quantized as TensorFlow's converter does."""
    w = float_weights(case)
    seen = float_lstm(case, w, calibration_inputs(case))
    x_q = asymmetric(*case.input_range)
    h_q = asymmetric(float(seen["h"].min()), float(seen["h"].max()))
    hidden_q = asymmetric(float(seen["hidden"].min()), float(seen["hidden"].max())) if case.projection else h_q
    cell_scale = 2.0 ** float(np.ceil(np.log2(max(float(np.abs(seen["c"]).max()), 2.0 ** -30)))) / 2 ** 15
    g = GraphBuilder()
    seq = case.op != "LSTM"
    lead = ([case.steps, case.batch] if case.time_major else [case.batch, case.steps]) if seq else [case.batch]
    x = g.input("x", lead + [case.n_in], "INT8", scale=x_q[0], zero_point=x_q[1])

    def int8_weights(name):
        s = _symmetric(w[name], 127)
        return g.const(name, np.clip(np.round(w[name] / s), -127, 127).astype(np.int8), scale=s, zero_point=0), s

    def int16_vector(name):
        s = _symmetric(w[name], 32767)
        return g.const(name, np.clip(np.round(w[name] / s), -32767, 32767).astype(np.int16), scale=s, zero_point=0), s

    def int32_bias(name, scale):
        return g.const(name, np.round(w[name] / scale).astype(np.int32), scale=float(np.float32(scale)), zero_point=0)

    present = [gt for gt in GATES if not (case.cifg and gt == "input")]
    i2, r2, ln = {}, {}, {}
    for gt in present:
        i2[gt] = int8_weights(f"i2{gt}")
    for gt in present:
        r2[gt] = int8_weights(f"r2{gt}")
    for gt in present:
        if case.layer_norm:
            ln[gt] = int16_vector(f"ln{gt}")
    ins = [i2[gt][0] if gt in i2 else -1 for gt in GATES] + [r2[gt][0] if gt in r2 else -1 for gt in GATES]
    ins += [int16_vector(f"c2{gt}")[0] if f"c2{gt}" in w else -1 for gt in ("input", "forget", "output")]
    ins += [-1 if gt not in i2 else
            int32_bias(f"b{gt}", ln[gt][1] / 1024 if case.layer_norm else x_q[0] * i2[gt][1]) for gt in GATES]
    if case.projection:
        proj, proj_scale = int8_weights("proj")
        ins += [proj, int32_bias("projb", proj_scale * hidden_q[0])]
    else:
        ins += [-1, -1]
    h_state = g.tensor("h", [case.batch, case.out_size], "INT8", scale=h_q[0], zero_point=h_q[1])
    c_state = g.tensor("c", [case.batch, case.units], "INT16", scale=cell_scale, zero_point=0)
    for i in (h_state, c_state):
        g.sg.tensors[i].isVariable = True
    ins += [h_state, c_state]
    ins += [ln[gt][0] if gt in ln else -1 for gt in GATES] if case.layer_norm else []
    inter = []
    for gt in GATES:
        if case.layer_norm:   # (CIFG has no input gate to calibrate: LiteRT only needs a quantization there)
            seen_gate = seen.get(f"pre_{gt}", seen["pre_forget"])
            inter.append(g.tensor(f"inter_{gt}", [0], "INT16", scale=_symmetric(seen_gate, 32767), zero_point=0))
        else:   # TensorFlow leaves them float without layer norm; the kernel then uses 2^-12
            inter.append(g.tensor(f"inter_{gt}", [0], "FLOAT32"))
    inter.append(g.tensor("hidden", [0], "INT8", scale=hidden_q[0], zero_point=hidden_q[1]))
    out = g.tensor("out", lead + [case.out_size], "INT8", scale=h_q[0], zero_point=h_q[1])
    options = dict(fused_activation_function="TANH", cell_clip=case.cell_clip, proj_clip=case.proj_clip)
    if seq:
        k = g.op(case.op, [x] + ins, [out], "UnidirectionalSequenceLSTMOptions", version=3,
                 time_major=case.time_major, **options)
    else:
        k = g.op(case.op, [x] + ins, [out], "LSTMOptions", version=3, **options)
    g.sg.operators[k].intermediates = inter
    g.output(out)
    return g.finish()


def stored_inputs(case: LstmCase, data_seed: int, full_range: bool) -> np.ndarray:
    """Stored int8 inputs: the calibration distribution quantized, or every int8 value equally likely."""
    rng = np.random.default_rng([case.seed, data_seed])
    seq = case.op != "LSTM"
    shape = (([case.steps, case.batch] if case.time_major else [case.batch, case.steps]) if seq else [case.batch]) \
        + [case.n_in]
    if full_range:
        return rng.integers(-128, 128, shape).astype(np.int8)
    scale, zp = asymmetric(*case.input_range)
    return np.clip(np.round(rng.uniform(*case.input_range, shape) / scale) + zp, -128, 127).astype(np.int8)

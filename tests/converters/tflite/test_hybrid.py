"""TFLite dynamic-range (hybrid) operators: float activations, constant int8 weights.

Each model is built in float, then its weight matrices are quantized to int8 (the hybrid model)
and, separately, replaced by exactly those dequantized values (the float twin). The conversion
must equal LiteRT's float kernels on the twin (what NNAPI computes: DEQUANTIZE, then the float
operation) and stay within the stated bound of LiteRT's hybrid kernels, which quantize the
activations at run time (docs/quantized-arithmetic.md, "Hybrid operators")."""
import flatbuffers
import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema

from converters.runners import run_litert

from converters.running import random_source_inputs, run_converted
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from . import test_recurrent as rec


def _pack(m) -> bytes:
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def hybridize(data: bytes, per_channel: dict = None, vectors=()) -> tuple:
    """(hybrid model, float twin): every float constant of rank >= 2 (and the vectors named, e.g.
    LSTM peepholes) quantized to symmetric int8 (per channel along per_channel[name] for the names
    given), the twin holding the dequantized values."""
    per_channel = per_channel or {}
    hyb, twin = (schema.ModelT.InitFromPackedBuf(data, 0) for _ in range(2))
    for t, t2 in zip(hyb.subgraphs[0].tensors, twin.subgraphs[0].tensors):
        buf = hyb.buffers[t.buffer].data if t.buffer else None
        name = t.name.decode() if isinstance(t.name, bytes) else t.name
        if buf is None or len(buf) == 0 or t.type != schema.TensorType.FLOAT32 or \
                (len(t.shape) < 2 and name not in vectors):
            continue
        w = np.asarray(buf, np.uint8).view(np.float32).reshape(t.shape)
        axis = per_channel.get(name)
        reduce = tuple(k for k in range(w.ndim) if k != axis) if axis is not None else None
        scales = np.maximum(np.abs(w).max(axis=reduce, keepdims=axis is not None), 1e-6).astype(np.float32) / 127
        q = np.clip(np.round(w / scales), -127, 127).astype(np.int8)
        hyb.buffers[t.buffer].data = q.reshape(-1).view(np.uint8).tolist()
        twin.buffers[t2.buffer].data = (q.astype(np.float32) * scales).astype(np.float32).reshape(-1) \
            .view(np.uint8).tolist()
        t.type = schema.TensorType.INT8
        t.quantization = schema.QuantizationParametersT()
        t.quantization.scale = np.ravel(scales).tolist()
        t.quantization.zeroPoint = [0] * np.size(scales)
        t.quantization.quantizedDimension = axis or 0
    return _pack(hyb), _pack(twin)


def input_step_bound(x: np.ndarray, rows_axis_last: bool = True) -> float:
    """Half a step of LiteRT's run-time input quantization: symmetric int8 per batch row, scale
    max|x| / 127 (the largest over the batch)."""
    return float(np.abs(x.reshape(x.shape[0], -1)).max(axis=1).max()) / 127 / 2


def check_hybrid(data, levels, bound, per_channel=None, seeds=(0, 1), ops=None, vectors=(), reference="litert"):
    """Converts at each level; equals LiteRT float on the twin; within `bound(inputs, twin bytes)`
    of LiteRT's hybrid kernel (`reference`: which LiteRT kernels). Returns the measured hybrid drift over
    the levels and seeds."""
    hybrid, twin = hybridize(data, per_channel, vectors)
    drift = 0.0
    for level in levels:
        result = convert(hybrid, feature_level=level)
        assert result.complete, [(n.op, n.reason) for n in result.unsupported]
        assert all("bytes" in n.note for n in result.nodes), [n.note for n in result.nodes]
        if ops is not None:
            assert [op for n in result.nodes for op in n.nnapi_ops] == ops(level)
        for seed in seeds:
            ins = random_source_inputs(result.source.main, seed)
            got = run_converted(result, ins)
            for r, g in zip(run_litert(twin, ins, reference), got):
                np.testing.assert_allclose(g.reshape(r.shape), r, rtol=1e-5, atol=1e-5)
            allowed = bound(ins, twin)
            for r, g in zip(run_litert(hybrid, ins, reference), got):
                err = float(np.abs(g.reshape(r.shape) - r).max())
                assert err <= allowed, f"level {level} seed {seed}: hybrid drift {err} > bound {allowed}"
                drift = max(drift, err)
    return drift


def weights_of(twin: bytes, name: str) -> np.ndarray:
    m = schema.ModelT.InitFromPackedBuf(twin, 0)
    for t in m.subgraphs[0].tensors:
        if (t.name.decode() if isinstance(t.name, bytes) else t.name) == name:
            return np.asarray(m.buffers[t.buffer].data, np.uint8).view(np.float32).reshape(t.shape)
    raise KeyError(name)


def matmul_bound(w_name: str, reduce_axes):
    """The bound of one hybrid product: every output sums |w| times the input's quantization error,
    so |hybrid - float| <= (s_x / 2) * max over outputs of sum |w| (plus float32 rounding)."""
    def bound(ins, twin):
        w = np.abs(weights_of(twin, w_name))
        return input_step_bound(ins[0]) * float(w.sum(axis=reduce_axes).max()) * (1 + 1e-4) + 1e-5
    return bound


def _dense_model(op, x_shape, w_shape, y_shape, options, **fields):
    rng = np.random.default_rng(7)
    g = GraphBuilder()
    x = g.input("x", x_shape)
    w = g.const("w", (0.5 * rng.standard_normal(w_shape)).astype(np.float32))
    ins = [x, w]
    if op == "TRANSPOSE_CONV":
        ins = [g.const("shape", np.asarray(y_shape, np.int32)), w, x]
    if op != "BATCH_MATMUL":
        ins.append(g.const("b", (0.1 * rng.standard_normal(y_shape[-1])).astype(np.float32)))
    y = g.tensor("y", y_shape)
    g.op(op, ins, [y], options, **fields)
    g.output(y)
    return g.finish()


DQ = lambda op: (lambda level: (["DEQUANTIZE"] if level >= 3 else []) + [op])  # noqa: E731

# op -> (model, per-channel axis of "w" or None, axes of w one output sums over, levels, emitted ops)
CASES = {
    "FULLY_CONNECTED": (lambda: _dense_model("FULLY_CONNECTED", [3, 6], [5, 6], [3, 5], "FullyConnectedOptions",
                                             fused_activation_function="RELU"), None, (1,), [1, 3, 8],
                        DQ("FULLY_CONNECTED")),
    "FULLY_CONNECTED_pc": (lambda: _dense_model("FULLY_CONNECTED", [2, 6], [4, 6], [2, 4], "FullyConnectedOptions"),
                           0, (1,), [3, 8], DQ("FULLY_CONNECTED")),
    "CONV_2D": (lambda: _dense_model("CONV_2D", [1, 5, 6, 3], [4, 3, 3, 3], [1, 5, 6, 4], "Conv2DOptions",
                                     padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU6"),
                0, (1, 2, 3), [1, 3, 8], DQ("CONV_2D")),
    "DEPTHWISE_CONV_2D": (lambda: _dense_model("DEPTHWISE_CONV_2D", [1, 5, 6, 3], [1, 3, 3, 6], [1, 3, 3, 6],
                                               "DepthwiseConv2DOptions", padding="SAME", stride_w=2, stride_h=2,
                                               depth_multiplier=2), 3, (0, 1, 2), [1, 3, 8], DQ("DEPTHWISE_CONV_2D")),
    "BATCH_MATMUL": (lambda: _dense_model("BATCH_MATMUL", [2, 3, 6], [6, 4], [2, 3, 4], "BatchMatMulOptions"),
                     None, (0,), [3, 8],
                     lambda level: ["DEQUANTIZE", "RESHAPE", "BATCH_MATMUL"] if level >= 6 else
                     ["DEQUANTIZE", "FULLY_CONNECTED", "RESHAPE"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hybrid_dense_and_conv(case):
    make, axis, reduce_axes, levels, ops = CASES[case]
    drift = check_hybrid(make(), levels, matmul_bound("w", reduce_axes), {"w": axis} if axis is not None else None,
                         ops=ops)
    assert drift > 0  # the bound is exercised: LiteRT's hybrid kernel really did quantize the input


def test_hybrid_note_states_the_weight_bytes():
    hybrid, _ = hybridize(CASES["FULLY_CONNECTED"][0]())
    low, high = (convert(hybrid, feature_level=k).nodes[0].note for k in (1, 8))
    assert "stored as float32 constants" in low and "30 weight bytes become 120" in low
    assert "DEQUANTIZE" in high and "30 weight bytes become 120 bytes of float32" in high


def test_hybrid_weights_with_a_zero_point_are_reported():
    hybrid, _ = hybridize(CASES["FULLY_CONNECTED"][0]())
    m = schema.ModelT.InitFromPackedBuf(hybrid, 0)
    next(t for t in m.subgraphs[0].tensors if t.name in (b"w", "w")).quantization.zeroPoint = [3]
    node = convert(_pack(m), feature_level=8).nodes[0]
    assert not node.supported and node.reason_code == "quantization_type" and "'w'" in node.reason


def recurrent_bound(steps: int):
    """Recurrent hybrid kernels quantize x and the hidden state every step; with activations that are
    1-Lipschitz, the drift stays below the per-step product bound times the steps, doubled for the
    recurrent path (a stated, tested allowance, not a proof: errors in the state can grow through a
    recurrent gain above 1). The hidden state's step is from its largest magnitude (at least 1: RELU
    states outgrow tanh's)."""
    def bound(ins, twin):
        m = schema.ModelT.InitFromPackedBuf(twin, 0)
        rows = 0.0
        for t in m.subgraphs[0].tensors:
            if t.buffer and len(t.shape) == 2 and m.buffers[t.buffer].data is not None \
                    and len(m.buffers[t.buffer].data):
                w = np.abs(np.asarray(m.buffers[t.buffer].data, np.uint8).view(np.float32).reshape(t.shape))
                rows = max(rows, float(w.sum(axis=1).max()))
        h_max = max([1.0] + [float(np.abs(y).max()) for y in run_litert(twin, ins)])
        return 2 * steps * max(input_step_bound(ins[0]), h_max / 127 / 2) * rows * 4 + 1e-5
    return bound


RECURRENT = {
    "RNN": (lambda: rec.rnn_model("RNN", activation="TANH"), 1, [1, 3, 8]),
    "UNIDIRECTIONAL_SEQUENCE_RNN": (lambda: rec.rnn_model("UNIDIRECTIONAL_SEQUENCE_RNN", time_major=True), rec.T,
                                    [2, 8]),
    # (batch-major: time-major, LiteRT's hybrid kernel runs the sequence T times over, and it is refused)
    "BIDIRECTIONAL_SEQUENCE_RNN": (lambda: rec.rnn_model("BIDIRECTIONAL_SEQUENCE_RNN"), rec.T, [8]),
    "LSTM": (lambda: rec.lstm_model(), 1, [1, 8]),
    "LSTM_projection": (lambda: rec.lstm_model(projection=True, cifg=True), 1, [8]),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (lambda: rec.lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", time_major=True), rec.T,
                                     [2, 8]),
    "BIDIRECTIONAL_SEQUENCE_LSTM": (lambda: rec.bidi_lstm_model(), rec.T, [8],
                                    [f"fwc2{g}" for g in ("input", "forget", "output")]),
    "SVDF": (lambda: rec.svdf_model(), 1, [1, 8]),
}


@pytest.mark.parametrize("case", list(RECURRENT))
def test_hybrid_recurrent(case):
    make, steps, levels, *vectors = RECURRENT[case]
    check_hybrid(make(), levels, recurrent_bound(steps), vectors=vectors[0] if vectors else ())


def test_convert_prints_the_weight_bytes_note(tmp_path, capsys):
    from converters.cli import main
    hybrid, _ = hybridize(CASES["CONV_2D"][0](), {"w": 0})
    src = tmp_path / "hybrid.tflite"
    src.write_bytes(hybrid)
    assert main(["convert", str(src), "-o", str(tmp_path / "out.nnapi"), "--feature-level", "2"]) == 0
    out = capsys.readouterr().out
    assert "note: node 0 (CONV_2D): int8 weights 'w' stored as float32 constants" in out
    assert "108 weight bytes become 432" in out

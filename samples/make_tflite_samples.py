"""Regenerate the TFLite sample models:  python -m samples.make_tflite_samples

Authored with converters.tflite.authoring.GraphBuilder and fixed seeds (no TensorFlow):

mobilenet_float.tflite  MobileNet-style: conv 3x3 s2 -> 3 x (depthwise 3x3 -> conv 1x1, relu6)
                        -> average pool -> fully connected -> softmax, input 1x32x32x3
mobilenet_uint8.tflite  the same, uint8 per-tensor quantized
mobilenet_int8.tflite   the same, int8 with per-channel weights
lstm_float.tflite       UNIDIRECTIONAL_SEQUENCE_LSTM (peephole, projection) over 8 steps -> fully connected
control_flow.tflite     WHILE (body multiplies and adds) then IF on a boolean input

The quantized MobileNets are calibrated on the float model's activation
ranges (LiteRT, seeded inputs in [0, 1)), so their outputs are not saturated.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from converters.tflite.authoring import GraphBuilder

HERE = Path(__file__).resolve().parent
IMAGE = (1, 32, 32, 3)
CLASSES = 10
# (depthwise stride, pointwise output channels) per MobileNet block, after the 3x3 s2 stem to 8 channels
BLOCKS = ((1, 16), (2, 24), (2, 32))
STEM = 8


# -- MobileNet --------------------------------------------------------------------------

def mobilenet_weights(seed: int = 2026) -> dict:
    """Float weights by tensor name (He-scaled so activations stay in a sensible range)."""
    rng = np.random.default_rng(seed)

    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    w = {"stem/w": he((STEM, 3, 3, 3), 27), "stem/b": (rng.standard_normal(STEM) * 0.1).astype(np.float32)}
    c = STEM
    for k, (_, out) in enumerate(BLOCKS):
        w[f"dw{k}/w"] = he((1, 3, 3, c), 9)
        w[f"dw{k}/b"] = (rng.standard_normal(c) * 0.1).astype(np.float32)
        w[f"pw{k}/w"] = he((out, 1, 1, c), c)
        w[f"pw{k}/b"] = (rng.standard_normal(out) * 0.1).astype(np.float32)
        c = out
    w["fc/w"] = he((CLASSES, c), c)
    w["fc/b"] = (rng.standard_normal(CLASSES) * 0.1).astype(np.float32)
    return w


def _activation_quant(lo: float, hi: float, mode: str) -> dict:
    """Asymmetric 8-bit parameters covering [lo, hi] (and 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = max(hi - lo, 1e-6) / 255.0
    zp = int(np.clip(round(-lo / scale), 0, 255))
    return dict(scale=float(scale), zero_point=zp if mode == "uint8" else zp - 128)


def _weight_const(g, name, w, mode, axis):
    """A float, uint8 per-tensor or int8 per-channel (symmetric, along `axis`) weight constant;
    returns (tensor index, weight scales)."""
    if mode == "float":
        return g.const(name, w), None
    if mode == "uint8":
        q = _activation_quant(float(w.min()), float(w.max()), "uint8")
        data = np.clip(np.round(w / q["scale"]) + q["zero_point"], 0, 255).astype(np.uint8)
        return g.const(name, data, **q), np.array([q["scale"]])
    moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    scales = np.maximum(np.abs(moved).max(axis=1), 1e-8) / 127.0
    shape = [1] * w.ndim
    shape[axis] = -1
    data = np.clip(np.round(w / scales.reshape(shape)), -127, 127).astype(np.int8)
    return g.const(name, data, scale=scales.astype(np.float32), zero_point=[0] * len(scales), axis=axis), scales


def _bias_const(g, name, b, mode, in_scale, w_scales):
    if mode == "float":
        return g.const(name, b)
    scales = (in_scale * w_scales).astype(np.float64)
    data = np.round(b / (scales if len(scales) > 1 else scales[0])).astype(np.int32)
    return g.const(name, data, scale=scales.astype(np.float32), zero_point=[0] * len(scales))


def build_mobilenet(mode: str = "float", ranges: dict | None = None) -> bytes:
    """mode: "float", "uint8" (per-tensor) or "int8" (per-channel weights); `ranges` (tensor name ->
    (min, max)) calibrates the quantized activations."""
    w = mobilenet_weights()
    dtype = {"float": "FLOAT32", "uint8": "UINT8", "int8": "INT8"}[mode]
    version = {"float": 1, "uint8": 1, "int8": 3}[mode]

    def act(name):
        return {} if mode == "float" else _activation_quant(*ranges[name], mode)

    g = GraphBuilder()

    def tensor(name, shape):
        return g.tensor(name, shape, dtype, **act(name))

    x = g.input("image", list(IMAGE), dtype, **act("image"))
    in_scale = act("image").get("scale")

    def conv(op, x, prefix, out_shape, stride, in_scale, options):
        wi, w_scales = _weight_const(g, f"{prefix}/w", w[f"{prefix}/w"], mode, 3 if op == "DEPTHWISE_CONV_2D" else 0)
        bi = _bias_const(g, f"{prefix}/b", w[f"{prefix}/b"], mode, in_scale, w_scales)
        y = tensor(prefix, out_shape)
        g.op(op, [x, wi, bi], [y], options, version=version, padding="SAME", stride_w=stride, stride_h=stride,
             fused_activation_function="RELU6", **({"depth_multiplier": 1} if op == "DEPTHWISE_CONV_2D" else {}))
        return y, act(prefix).get("scale")

    size = IMAGE[1] // 2
    y, s = conv("CONV_2D", x, "stem", [1, size, size, STEM], 2, in_scale, "Conv2DOptions")
    c = STEM
    for k, (stride, out) in enumerate(BLOCKS):
        size //= stride
        y, s = conv("DEPTHWISE_CONV_2D", y, f"dw{k}", [1, size, size, c], stride, s, "DepthwiseConv2DOptions")
        y, s = conv("CONV_2D", y, f"pw{k}", [1, size, size, out], 1, s, "Conv2DOptions")
        c = out
    pooled = g.tensor("pool", [1, 1, 1, c], dtype, **act(f"pw{len(BLOCKS) - 1}"))  # pooling keeps the quantization
    g.op("AVERAGE_POOL_2D", [y], [pooled], "Pool2DOptions", version=1 if mode != "int8" else 2, padding="VALID",
         stride_w=1, stride_h=1, filter_width=size, filter_height=size)
    fw, fw_scales = _weight_const(g, "fc/w", w["fc/w"], mode, 0)
    fb = _bias_const(g, "fc/b", w["fc/b"], mode, s, fw_scales)
    logits = tensor("logits", [1, CLASSES])
    g.op("FULLY_CONNECTED", [pooled, fw, fb], [logits], "FullyConnectedOptions", version=1 if mode != "int8" else 4)
    probs_q = {} if mode == "float" else dict(scale=1 / 256, zero_point=0 if mode == "uint8" else -128)
    probs = g.tensor("probs", [1, CLASSES], dtype, **probs_q)
    g.op("SOFTMAX", [logits], [probs], "SoftmaxOptions", version=1 if mode != "int8" else 2, beta=1.0)
    g.output(probs)
    return g.finish()


def calibrate(float_model: bytes, samples: int = 8, seed: int = 11) -> dict:
    """(min, max) of every tensor of the float model over seeded inputs in [0, 1)."""
    from converters.runners import litert_all_tensors
    from converters.tflite import read

    graph = read(float_model).main
    rng = np.random.default_rng(seed)
    ranges: dict = {}
    for _ in range(samples):
        _, tensors = litert_all_tensors(float_model, [rng.random(IMAGE).astype(np.float32)], graph=graph)
        for i, v in tensors.items():
            name = graph.tensors[i].name
            lo, hi = ranges.get(name, (np.inf, -np.inf))
            ranges[name] = (min(lo, float(v.min())), max(hi, float(v.max())))
    return ranges


# -- LSTM -------------------------------------------------------------------------------

def build_lstm(batch: int = 1, steps: int = 8, features: int = 4, units: int = 6, proj: int = 5) -> bytes:
    """[batch, steps, features] -> UNIDIRECTIONAL_SEQUENCE_LSTM (peephole, projection, cell clip) -> FC."""
    rng = np.random.default_rng(7)

    def rand(*shape, scale=0.4):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    g = GraphBuilder()
    x = g.input("sequence", [batch, steps, features])
    gates = ("input", "forget", "cell", "output")
    ins = [x] + [g.const(f"lstm/input_to_{k}", rand(units, features)) for k in gates]
    ins += [g.const(f"lstm/recurrent_to_{k}", rand(units, proj)) for k in gates]
    ins += [g.const(f"lstm/cell_to_{k}", rand(units, scale=0.1)) for k in ("input", "forget", "output")]
    ins += [g.const(f"lstm/{k}_bias", rand(units, scale=0.1) + (1.0 if k == "forget" else 0.0)) for k in gates]
    ins += [g.const("lstm/projection", rand(proj, units)), g.const("lstm/projection_bias", rand(proj, scale=0.1))]
    for name, shape in (("lstm/output_state", [batch, proj]), ("lstm/cell_state", [batch, units])):
        ins.append(g.tensor(name, shape))
        g.sg.tensors[ins[-1]].isVariable = True  # TFLite state: zero on a fresh interpreter
    seq = g.tensor("lstm/output", [batch, steps, proj])
    g.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [seq], "UnidirectionalSequenceLSTMOptions",
         fused_activation_function="TANH", cell_clip=3.0, proj_clip=0.0, time_major=False)
    out = g.tensor("scores", [batch, steps, 3])
    g.op("FULLY_CONNECTED", [seq, g.const("fc/w", rand(3, proj)), g.const("fc/b", rand(3, scale=0.1))], [out],
         "FullyConnectedOptions", keep_num_dims=True)
    g.output(out)
    return g.finish()


# -- control flow -----------------------------------------------------------------------

def build_control_flow(shape=(1, 4)) -> bytes:
    """acc = x; for i in range(5): acc = acc * 0.75 + x; then out = acc * 2 if flag else acc - x."""
    shape = list(shape)
    g = GraphBuilder()
    x = g.input("x", shape)
    flag = g.input("flag", [1], "BOOL")

    cond = g.subgraph("loop_cond")
    i = cond.input("i", [1], "INT32")
    cond.input("acc", shape), cond.input("x", shape)
    go = cond.tensor("continue", [1], "BOOL")
    cond.op("LESS", [i, cond.const("trips", np.array([5], np.int32))], [go])
    cond.output(go)

    body = g.subgraph("loop_body")
    i, acc, bx = body.input("i", [1], "INT32"), body.input("acc", shape), body.input("x", shape)
    i_next, decayed, acc_next = body.tensor("i_next", [1], "INT32"), body.tensor("decayed", shape), \
        body.tensor("acc_next", shape)
    body.op("ADD", [i, body.const("one", np.array([1], np.int32))], [i_next], "AddOptions")
    body.op("MUL", [acc, body.const("decay", np.array([0.75], np.float32))], [decayed], "MulOptions")
    body.op("ADD", [decayed, bx], [acc_next], "AddOptions")
    body.output(i_next, acc_next, bx)  # x is loop-invariant: returned unchanged

    then_g, else_g = g.subgraph("then_double"), g.subgraph("else_subtract")
    a, _ = then_g.input("acc", shape), then_g.input("x", shape)
    doubled = then_g.tensor("doubled", shape)
    then_g.op("MUL", [a, then_g.const("two", np.array([2.0], np.float32))], [doubled], "MulOptions")
    then_g.output(doubled)
    a, ex = else_g.input("acc", shape), else_g.input("x", shape)
    diff = else_g.tensor("diff", shape)
    else_g.op("SUB", [a, ex], [diff], "SubOptions")
    else_g.output(diff)

    loop_out = [g.tensor("trips_done", [1], "INT32"), g.tensor("acc", shape), g.tensor("x_after", shape)]
    g.op("WHILE", [g.const("i0", np.array([0], np.int32)), x, x], loop_out, "WhileOptions",
         cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    out = g.tensor("out", shape)
    g.op("IF", [flag, loop_out[1], x], [out], "IfOptions", then_subgraph_index=then_g.index,
         else_subgraph_index=else_g.index)
    g.output(out)
    return g.finish()


def build_all() -> dict:
    """File name -> model bytes, deterministic."""
    float_net = build_mobilenet("float")
    ranges = calibrate(float_net)
    return {"mobilenet_float.tflite": float_net,
            "mobilenet_uint8.tflite": build_mobilenet("uint8", ranges),
            "mobilenet_int8.tflite": build_mobilenet("int8", ranges),
            "lstm_float.tflite": build_lstm(),
            "control_flow.tflite": build_control_flow()}


def main() -> None:
    for name, data in build_all().items():
        (HERE / name).write_bytes(data)
        print(f"wrote {HERE / name} ({len(data)} bytes)")


if __name__ == "__main__":
    main()

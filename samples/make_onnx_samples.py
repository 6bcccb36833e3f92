"""Regenerate the ONNX sample models:  python -m samples.make_onnx_samples

Authored with onnx.helper and fixed seeds:

resnet_float.onnx  ResNet-style: conv-bn-relu stem (3 -> 16), a residual block (16), a strided residual
                   block (16 -> 32, 1x1 conv shortcut), global average pool, flatten, gemm (10 classes);
                   input 1x3x32x32 (NCHW)
resnet_qdq.onnx    the same network QDQ-quantized as quantization tools write it: batch norms folded into
                   the convolutions, int8 per-channel symmetric conv weights, per-tensor gemm weights,
                   int32 biases (scale = input scale x weight scale), QuantizeLinear/DequantizeLinear
                   around every conv, relu, add, pool, flatten and the gemm; activation scales from the
                   float network's ranges (onnxruntime, seeded inputs in [-1, 1)), rounded to 3
                   significant digits so that the bytes do not depend on the machine's rounding.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper as h
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
IMAGE = [1, 3, 32, 32]
CLASSES = 10
OPSET = 13
# convolutions: name -> (input channels, output channels, kernel, stride)
CONVS = {"stem": (3, 16, 3, 1), "b1c1": (16, 16, 3, 1), "b1c2": (16, 16, 3, 1), "b2c1": (16, 32, 3, 2),
         "b2c2": (32, 32, 3, 1), "b2sc": (16, 32, 1, 2)}


def parameters() -> dict:
    """Seeded weights: He-initialised convolutions with biases, batch norms, the classifier."""
    rng = np.random.default_rng(2026)
    p = {}
    for name, (cin, cout, k, _) in CONVS.items():
        p[f"{name}_w"] = (rng.normal(size=(cout, cin, k, k)) * np.sqrt(2 / (cin * k * k))).astype(np.float32)
        p[f"{name}_b"] = (rng.normal(size=cout) * 0.05).astype(np.float32)
        p[f"{name}_bn"] = [(rng.random(cout) * 0.5 + 0.75).astype(np.float32),   # scale
                           (rng.normal(size=cout) * 0.1).astype(np.float32),     # B
                           (rng.normal(size=cout) * 0.1).astype(np.float32),     # mean
                           (rng.random(cout) * 0.5 + 0.5).astype(np.float32)]    # var
    p["fc_w"] = (rng.normal(size=(CLASSES, 32)) * np.sqrt(1 / 32)).astype(np.float32)
    p["fc_b"] = (rng.normal(size=CLASSES) * 0.05).astype(np.float32)
    return p


def _model(nodes, inits: dict, name: str, out_type: int = onnx.TensorProto.FLOAT) -> bytes:
    graph = h.make_graph(nodes, name, [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, IMAGE)],
                         [h.make_tensor_value_info("y", out_type, [1, CLASSES])],
                         [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)], producer_name="samples.make_onnx_samples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _conv_attrs(name: str) -> dict:
    _, _, k, s = CONVS[name]
    return {"kernel_shape": [k, k], "pads": [k // 2] * 4, "strides": [s, s]}


# -- the float network ---------------------------------------------------------------------------------

def build_float(p: dict) -> bytes:
    nodes, inits = [], {}

    def conv_bn(name, x, relu):
        inits.update({f"{name}_w": p[f"{name}_w"], f"{name}_b": p[f"{name}_b"]})
        inits.update({f"{name}_bn{k}": v for k, v in enumerate(p[f"{name}_bn"])})
        nodes.append(h.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"], **_conv_attrs(name)))
        nodes.append(h.make_node("BatchNormalization", [f"{name}_c"] + [f"{name}_bn{k}" for k in range(4)],
                                 [f"{name}_n"]))
        if not relu:
            return f"{name}_n"
        nodes.append(h.make_node("Relu", [f"{name}_n"], [f"{name}_r"]))
        return f"{name}_r"

    def residual(prefix, x, shortcut):
        a = conv_bn(f"{prefix}c2", conv_bn(f"{prefix}c1", x, True), False)
        nodes.append(h.make_node("Add", [a, shortcut], [f"{prefix}_sum"]))
        nodes.append(h.make_node("Relu", [f"{prefix}_sum"], [f"{prefix}_out"]))
        return f"{prefix}_out"

    a0 = conv_bn("stem", "x", True)
    a1 = residual("b1", a0, a0)
    a2 = residual("b2", a1, conv_bn("b2sc", a1, False))
    inits.update(fc_w=p["fc_w"], fc_b=p["fc_b"])
    nodes += [h.make_node("GlobalAveragePool", [a2], ["pool"]), h.make_node("Flatten", ["pool"], ["flat"]),
              h.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], transB=1)]
    return _model(nodes, inits, "resnet_float")


# -- the QDQ network ---------------------------------------------------------------------------------

def _folded(p: dict, name: str):
    """Conv weights and bias with the batch norm folded in."""
    scale, beta, mean, var = (v.astype(np.float64) for v in p[f"{name}_bn"])
    f = scale / np.sqrt(var + 1e-5)
    w = p[f"{name}_w"].astype(np.float64) * f.reshape(-1, 1, 1, 1)
    return w, (p[f"{name}_b"] - mean) * f + beta


def _round3(x: float) -> float:
    return float(f"{x:.3g}")


class _Quantizer:
    """Writes the QDQ graph; `ranges` maps a float tensor name to its calibrated (min, max)."""

    def __init__(self, ranges: dict):
        self.ranges, self.nodes, self.inits, self.params = ranges, [], {}, {}

    def quantize(self, t: str, out: str, like: str = "") -> None:
        """QuantizeLinear of activation t into `out` (int8, asymmetric over t's range; `like` reuses
        another tensor's parameters)."""
        if like:
            self.params[t] = self.params[like]
        else:
            lo, hi = min(self.ranges[t][0], 0.0), max(self.ranges[t][1], 0.0)
            s = _round3((hi - lo) / 255 or 1.0)
            self.params[t] = (s, int(np.clip(round(-128 - lo / s), -128, 127)))
        s, z = self.params[t]
        self.inits.update({f"{t}_s": np.float32(s), f"{t}_z": np.int8(z)})
        self.nodes.append(h.make_node("QuantizeLinear", [t, f"{t}_s", f"{t}_z"], [out]))

    def act(self, t: str, like: str = "") -> str:
        """Q -> DQ of activation t; returns the dequantized tensor's name."""
        self.quantize(t, f"{t}_q", like)
        self.nodes.append(h.make_node("DequantizeLinear", [f"{t}_q", f"{t}_s", f"{t}_z"], [f"{t}_dq"]))
        return f"{t}_dq"

    def weights(self, name: str, w: np.ndarray, b: np.ndarray, x: str, per_channel: bool) -> tuple:
        """DQ of int8 symmetric weights (per output channel or per tensor) and of the int32 bias."""
        axes = tuple(range(1, w.ndim))
        peak = np.abs(w).max(axis=axes) if per_channel else np.abs(w).max()
        ws = np.asarray([_round3(v) for v in np.atleast_1d(peak / 127)], np.float32)
        ws = ws if per_channel else ws[0]
        wq = np.clip(np.round(w / (ws.reshape(-1, *[1] * (w.ndim - 1)) if per_channel else ws)), -127, 127)
        bs = (np.float32(self.params[x][0]) * ws).astype(np.float32)
        self.inits.update({f"{name}_wq": wq.astype(np.int8), f"{name}_ws": ws, f"{name}_wz": np.zeros_like(ws, np.int8),
                           f"{name}_bq": np.round(b / bs).astype(np.int32), f"{name}_bs": bs,
                           f"{name}_bz": np.zeros_like(bs, np.int32)})
        self.nodes += [h.make_node("DequantizeLinear", [f"{name}_wq", f"{name}_ws", f"{name}_wz"], [f"{name}_wdq"],
                                   axis=0),
                       h.make_node("DequantizeLinear", [f"{name}_bq", f"{name}_bs", f"{name}_bz"], [f"{name}_bdq"],
                                   axis=0)]
        return f"{name}_wdq", f"{name}_bdq"

    def op(self, op: str, ins: list, out: str, like: str = "", **attrs) -> str:
        self.nodes.append(h.make_node(op, ins, [out], **attrs))
        return self.act(out, like)


def build_qdq(p: dict, ranges: dict) -> bytes:
    """The float network's tensor names carry over: a conv's output is named after the batch norm folded
    into it, so the calibrated ranges apply; the logits are the float network's y."""
    q = _Quantizer(dict(ranges, logits=ranges["y"]))

    def conv(name, x, src, relu):
        """x is the DQ output of float tensor src; returns the DQ output of the conv (or its relu)."""
        w, b = _folded(p, name)
        wdq, bdq = q.weights(name, w, b, src, per_channel=True)
        y = q.op("Conv", [x, wdq, bdq], f"{name}_n", **_conv_attrs(name))
        if not relu:
            return y, f"{name}_n"
        return q.op("Relu", [y], f"{name}_r", like=f"{name}_n"), f"{name}_r"  # RELU keeps its input's scale

    def residual(prefix, x, src, shortcut=None):
        a, a_src = conv(f"{prefix}c1", x, src, True)
        c, _ = conv(f"{prefix}c2", a, a_src, False)
        if shortcut is None:  # the projection shortcut, written next to its Add
            shortcut, _ = conv(f"{prefix}sc", x, src, False)
        s = q.op("Add", [c, shortcut], f"{prefix}_sum")
        return q.op("Relu", [s], f"{prefix}_out", like=f"{prefix}_sum"), f"{prefix}_out"

    x = q.act("x")
    a0, a0_src = conv("stem", x, "x", True)
    a1, a1_src = residual("b1", a0, a0_src, a0)
    a2, a2_src = residual("b2", a1, a1_src)
    pool = q.op("GlobalAveragePool", [a2], "pool", like=a2_src)  # NNAPI pools keep their input's scale
    flat = q.op("Flatten", [pool], "flat", like="pool")
    wdq, bdq = q.weights("fc", p["fc_w"].astype(np.float64), p["fc_b"].astype(np.float64), "flat", per_channel=False)
    q.nodes.append(h.make_node("Gemm", [flat, wdq, bdq], ["logits"], transB=1))
    q.quantize("logits", "y")  # the output is the quantized logits (compared within one stored unit)
    return _model(q.nodes, q.inits, "resnet_qdq", onnx.TensorProto.INT8)


def calibrate(float_model: bytes, samples: int = 8) -> dict:
    """(min, max) of every tensor of the float network over seeded inputs in [-1, 1) (onnxruntime)."""
    import onnxruntime as ort
    m = onnx.load_from_string(float_model)
    names = [o for n in m.graph.node for o in n.output]
    del m.graph.output[:]
    m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    ranges = {"x": (-1.0, 1.0)}
    for _ in range(samples):
        outs = sess.run(names, {"x": (rng.random(IMAGE) * 2 - 1).astype(np.float32)})
        for n, v in zip(names, outs):
            lo, hi = ranges.get(n, (np.inf, -np.inf))
            ranges[n] = (min(lo, float(v.min())), max(hi, float(v.max())))
    return ranges


def build_all() -> dict:
    """File name -> model bytes, deterministic."""
    p = parameters()
    float_net = build_float(p)
    return {"resnet_float.onnx": float_net, "resnet_qdq.onnx": build_qdq(p, calibrate(float_net))}


def main() -> None:
    for name, data in build_all().items():
        tmp = HERE / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(HERE / name)  # atomic: never a half-written sample
        print(f"wrote {HERE / name} ({len(data)} bytes)")


if __name__ == "__main__":
    main()

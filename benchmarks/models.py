"""Benchmark models authored in memory until the samples directory has real ones:
a MobileNet-style .tflite network (float32, uint8, int8 with per-channel filters),
a ResNet-stem-style ONNX CNN (convolutions only) and a ResNet-18-shaped one.

    python -m benchmarks.models OUT_DIR     # writes every model, prints the paths

The quantized networks are the float network quantized the way the TFLite
converter would (per-tensor or per-channel filter scales from the weights,
ReLU6 activations on [0, 6]), so the arithmetic stays in realistic ranges.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

# (kind, output channels, stride); kind "conv" is a full 3x3 convolution, "dws" a depthwise
# 3x3 + pointwise 1x1 pair, as in MobileNet v1 (here at input 128x128, width 0.5).
MOBILENET = [("conv", 16, 2), ("dws", 32, 1), ("dws", 64, 2), ("dws", 64, 1), ("dws", 128, 2),
             ("dws", 128, 1), ("dws", 256, 2), ("dws", 256, 1), ("dws", 512, 2)]
INPUT_HW, CLASSES = 128, 100

# tflite type name and activation quantization (scale, zero point) per variant
_ACT = {"float32": ("FLOAT32", None), "uint8": ("UINT8", (6 / 255, 0)), "int8": ("INT8", (6 / 255, -128))}
_INPUT_Q = {"uint8": (1 / 255, 0), "int8": (1 / 255, -128)}


class _Net:
    """GraphBuilder plus the float weights and their quantization for one variant."""

    def __init__(self, variant: str, seed: int = 0):
        from converters.tflite.authoring import GraphBuilder
        self.g, self.variant = GraphBuilder(), variant
        self.type_name, self.act_q = _ACT[variant]
        self.rng = np.random.default_rng(seed)
        self.names = 0

    def _name(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    def act(self, shape, q=None):
        q = self.act_q if q is None else q
        kw = {} if q is None else {"scale": q[0], "zero_point": q[1]}
        return self.g.tensor(self._name("act"), shape, self.type_name, **kw)

    def filters(self, shape, axis: int, in_scale):
        """(filter tensor, bias tensor) with He-initialized float weights, quantized for the variant."""
        fan_in = int(np.prod(shape)) // shape[axis]
        w = (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        b = (0.1 * self.rng.standard_normal(shape[axis])).astype(np.float32)
        if self.variant == "float32":
            return self.g.const(self._name("w"), w), self.g.const(self._name("b"), b)
        other = tuple(i for i in range(w.ndim) if i != axis)
        if self.variant == "uint8":  # per-tensor asymmetric
            scale = np.float32(max(np.abs(w).max(), 1e-6) / 127)
            wq = np.clip(np.round(w / scale) + 128, 0, 255).astype(np.uint8)
            flt = self.g.const(self._name("w"), wq, scale=scale, zero_point=128)
            scales = np.full(shape[axis], scale, np.float32)
        else:  # int8 per channel, symmetric
            scales = (np.maximum(np.abs(w).max(axis=other), 1e-6) / 127).astype(np.float32)
            bshape = [1] * w.ndim
            bshape[axis] = -1
            wq = np.clip(np.round(w / scales.reshape(bshape)), -127, 127).astype(np.int8)
            flt = self.g.const(self._name("w"), wq, scale=scales, zero_point=0, axis=axis)
        bias_scale = (np.float32(in_scale) * scales).astype(np.float32)
        bq = np.round(b / bias_scale).astype(np.int32)
        if self.variant == "uint8":  # a per-tensor filter implies a per-tensor bias scale
            bias_scale = bias_scale[0]
        bias = self.g.const(self._name("b"), bq, scale=bias_scale, zero_point=0)
        return flt, bias


def mobilenet(variant: str = "float32", seed: int = 0) -> bytes:
    """A MobileNet-v1-style .tflite model (conv, depthwise, average pool, fully connected, softmax)."""
    net = _Net(variant, seed)
    in_q = _INPUT_Q.get(variant)
    x = net.g.input("input", [1, INPUT_HW, INPUT_HW, 3], net.type_name,
                    **({} if in_q is None else {"scale": in_q[0], "zero_point": in_q[1]}))
    scale, hw, ch = (in_q or (None,))[0], INPUT_HW, 3
    for kind, out_ch, stride in MOBILENET:
        hw = -(-hw // stride)
        if kind == "conv":
            w, b = net.filters([out_ch, 3, 3, ch], 0, scale)
            y = net.act([1, hw, hw, out_ch])
            net.g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=stride,
                     stride_h=stride, fused_activation_function="RELU6")
        else:
            w, b = net.filters([1, 3, 3, ch], 3, scale)
            d = net.act([1, hw, hw, ch])
            net.g.op("DEPTHWISE_CONV_2D", [x, w, b], [d], "DepthwiseConv2DOptions", padding="SAME",
                     stride_w=stride, stride_h=stride, depth_multiplier=1, fused_activation_function="RELU6")
            scale = (net.act_q or (None,))[0]
            w, b = net.filters([out_ch, 1, 1, ch], 0, scale)
            y = net.act([1, hw, hw, out_ch])
            net.g.op("CONV_2D", [d, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
                     fused_activation_function="RELU6")
        x, ch, scale = y, out_ch, (net.act_q or (None,))[0]
    pooled = net.act([1, 1, 1, ch])
    net.g.op("AVERAGE_POOL_2D", [x], [pooled], "Pool2DOptions", padding="VALID", stride_w=1, stride_h=1,
             filter_width=hw, filter_height=hw)
    flat = net.act([1, ch])
    shape = net.g.const("flat_shape", np.array([1, ch], np.int32))
    net.g.op("RESHAPE", [pooled, shape], [flat], "ReshapeOptions", new_shape=[1, ch])
    w, b = net.filters([CLASSES, ch], 0, scale)
    logit_q = {"uint8": (0.1, 128), "int8": (0.1, 0)}.get(variant)
    logits = net.act([1, CLASSES], logit_q)
    net.g.op("FULLY_CONNECTED", [flat, w, b], [logits], "FullyConnectedOptions")
    probs_q = None if net.act_q is None else (1 / 256, -128 if variant == "int8" else 0)
    probs = net.act([1, CLASSES], probs_q)
    net.g.op("SOFTMAX", [logits], [probs], "SoftmaxOptions", beta=1.0)
    net.g.output(probs)
    return net.g.finish()


def resnet_onnx(seed: int = 0, hw: int = 64, width: int = 32) -> bytes:
    """A ResNet-stem-style ONNX CNN: 3x3 convolutions with ReLU, two strided, a global average pool."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, ch, x = [], [], 3, "input"
    for k, (out_ch, stride) in enumerate([(width, 2), (width, 1), (2 * width, 2), (2 * width, 1),
                                          (4 * width, 2), (4 * width, 1)]):
        w = (rng.standard_normal((out_ch, ch, 3, 3)) * np.sqrt(2.0 / (9 * ch))).astype(np.float32)
        b = (0.1 * rng.standard_normal(out_ch)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{k}"), numpy_helper.from_array(b, f"b{k}")]
        nodes.append(helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"], pads=[1, 1, 1, 1],
                                      strides=[stride, stride], kernel_shape=[3, 3]))
        nodes.append(helper.make_node("Relu", [f"c{k}"], [f"r{k}"]))
        x, ch = f"r{k}", out_ch
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["output"]))
    graph = helper.make_graph(nodes, "resnet_stem",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, hw, hw])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, ch, 1, 1])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def resnet18_onnx(seed: int = 0, hw: int = 112, width: int = 32, classes: int = 100) -> bytes:
    """A ResNet-18-shaped ONNX CNN as exported from PyTorch: 7x7/2 convolution, BatchNormalization, ReLU,
    3x3/2 MaxPool, four stages of two basic blocks (1x1/2 projection shortcuts), global average pool,
    Flatten, Gemm."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = iter(range(10 ** 6))

    def conv_bn(x, cin, cout, k, stride, relu=True):
        n = next(count)
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (k * k * cin))).astype(np.float32)
        bn = [np.abs(1 + 0.1 * rng.standard_normal(cout)), 0.1 * rng.standard_normal(cout),
              0.1 * rng.standard_normal(cout), 1 + 0.1 * np.abs(rng.standard_normal(cout))]
        inits.append(numpy_helper.from_array(w, f"w{n}"))
        inits.extend(numpy_helper.from_array(v.astype(np.float32), f"bn{n}_{j}") for j, v in enumerate(bn))
        nodes.append(helper.make_node("Conv", [x, f"w{n}"], [f"c{n}"], pads=[k // 2] * 4, strides=[stride] * 2,
                                      kernel_shape=[k, k]))
        nodes.append(helper.make_node("BatchNormalization", [f"c{n}"] + [f"bn{n}_{j}" for j in range(4)],
                                      [f"n{n}"], epsilon=1e-5))
        if not relu:
            return f"n{n}"
        nodes.append(helper.make_node("Relu", [f"n{n}"], [f"r{n}"]))
        return f"r{n}"

    x = conv_bn("input", 3, width, 7, 2)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, ch = "pool", width
    for stage in range(4):
        out_ch = width * 2 ** stage
        for block in range(2):
            stride = 2 if stage and not block else 1
            y = conv_bn(conv_bn(x, ch, out_ch, 3, stride), out_ch, out_ch, 3, 1, relu=False)
            short = conv_bn(x, ch, out_ch, 1, stride, relu=False) if stride != 1 or ch != out_ch else x
            n = next(count)
            nodes.append(helper.make_node("Add", [y, short], [f"sum{n}"]))
            nodes.append(helper.make_node("Relu", [f"sum{n}"], [f"block{n}"]))
            x, ch = f"block{n}", out_ch
    fc_w = (rng.standard_normal((classes, ch)) / np.sqrt(ch)).astype(np.float32)
    inits += [numpy_helper.from_array(fc_w, "fc_w"), numpy_helper.from_array(np.zeros(classes, np.float32), "fc_b")]
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"]), helper.make_node("Flatten", ["gap"], ["flat"]),
              helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["output"], transB=1)]
    graph = helper.make_graph(nodes, "resnet18",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, hw, hw])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, classes])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def write_all(out_dir) -> list[Path]:
    """Write every benchmark model into `out_dir`; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for variant in _ACT:
        p = out / f"bench_mobilenet_{variant}.tflite"
        p.write_bytes(mobilenet(variant))
        paths.append(p)
    for name, make in (("bench_resnet_stem.onnx", resnet_onnx), ("bench_resnet18.onnx", resnet18_onnx)):
        p = out / name
        p.write_bytes(make())
        paths.append(p)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m benchmarks.models OUT_DIR")
    for path in write_all(sys.argv[1]):
        print(path)

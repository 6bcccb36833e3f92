"""Small float ONNX models quantized by onnxruntime.quantization itself (quantize_static in the QDQ and
QOperator formats, quantize_dynamic), so the tests see exactly the patterns onnxruntime emits."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper as h, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

ACTIVATIONS = {"u8": QuantType.QUInt8, "s8": QuantType.QInt8}


class _Samples(CalibrationDataReader):
    def __init__(self, feeds):
        self._it = iter(feeds)

    def get_next(self):
        return next(self._it, None)


def float_model(nodes, inputs, outputs, inits, opset=13) -> onnx.ModelProto:
    """A float32 model (inputs as (name, shape)), shapes inferred as quantize_static expects."""
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                         [h.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                         [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def ort_quantized(model: onnx.ModelProto, inputs, fmt: str = "qdq", act: str = "u8", per_channel: bool = True,
                  extra: dict | None = None, seed: int = 0) -> bytes:
    """The model quantized by onnxruntime: fmt "qdq" / "qop" (static, MinMax over 8 samples in [-1, 1)
    like the parity inputs) or "dynamic" (int8 weights)."""
    rng = np.random.default_rng(seed)
    feeds = [{n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in inputs} for _ in range(8)]
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "float.onnx"), os.path.join(d, "quant.onnx")
        onnx.save(model, src)
        if fmt == "dynamic":
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=per_channel,
                             extra_options=extra or {})
        else:
            quantize_static(src, dst, _Samples(feeds),
                            quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                            activation_type=ACTIVATIONS[act], weight_type=QuantType.QInt8,
                            per_channel=per_channel, extra_options=extra or {})
        with open(dst, "rb") as f:
            return f.read()


def ops_of(data: bytes) -> list:
    return [n.op_type for n in onnx.load_from_string(data).graph.node]


def quantized_outputs(data: bytes) -> bytes:
    """The model with each graph output's final DequantizeLinear removed, so the outputs are the quantized
    tensors and parity compares them within one stored unit (a float output would be held to the float
    tolerance, finer than one quantization step)."""
    model = onnx.load_from_string(data)
    outs = {o.name: o for o in model.graph.output}
    for node in list(model.graph.node):
        if node.op_type == "DequantizeLinear" and node.output[0] in outs:
            src = node.input[0]
            elem = next((v.type.tensor_type.elem_type for v in list(model.graph.value_info) if v.name == src), None)
            if elem is None:
                zp = next(i for i in model.graph.initializer if i.name == node.input[2])
                elem = zp.data_type
            model.graph.node.remove(node)
            outs[node.output[0]].CopyFrom(h.make_tensor_value_info(src, elem, None))
    return model.SerializeToString()

"""Light ONNX models: weights stored as ConstantOfShape fills become seeded random initializers.

onnx ships its model-zoo classifiers in this form (`onnx/backend/test/data/light/`), and the zoo's
large torch exports are committed the same way. Every ConstantOfShape whose shape is a constant and
whose output is a float tensor is replaced by an initializer of the same name, drawn by the role of
the tensor's first consumer, so that activations stay in a sane range through deep nets and
BatchNormalization statistics are random (a folding bug then shows):

- a BatchNormalization scale or variance: uniform [0.5, 1.5); its bias or mean: normal, sd 0.1;
- a Conv/ConvTranspose/Gemm/MatMul weight: normal with sd sqrt(2 / fan_in) (He);
- any other fill (biases, Mul/Add operands): normal, sd 0.05.

The seed comes from the model id and the tensor name, so a model materialises the same every time.
Random weights leave a classifier's softmax saturated or flat, which hides every error upstream, so
the last linear layer before a final Softmax is rescaled (one onnxruntime run on a seeded input)
to give logits of standard deviation 2.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
import onnx
from onnx import numpy_helper


def _seed(seed_text: str, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed_text}/{name}".encode()).digest()[:8], "little")


def _fan_in(op: str, slot: int, shape: tuple, node) -> int:
    if op in ("Conv", "ConvTranspose") and slot == 1 and len(shape) >= 2:
        per_channel = math.prod(shape[2:])
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        return max(1, (shape[0] // max(group, 1) if op == "ConvTranspose" else shape[1]) * per_channel)
    if op == "Gemm" and slot == 1 and len(shape) == 2:
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return shape[1] if trans_b else shape[0]
    if op == "MatMul" and slot == 1 and len(shape) >= 2:
        return shape[-2]
    return 0


def _values(rng, shape: tuple, dtype, consumer) -> np.ndarray:
    if consumer is not None:
        node, slot = consumer
        if node.op_type == "BatchNormalization":
            if slot in (1, 4):
                return rng.uniform(0.5, 1.5, shape).astype(dtype)
            return rng.normal(0.0, 0.1, shape).astype(dtype)
        fan_in = _fan_in(node.op_type, slot, shape, node)
        if fan_in:
            return rng.normal(0.0, math.sqrt(2.0 / fan_in), shape).astype(dtype)
    return rng.normal(0.0, 0.05, shape).astype(dtype)


def materialise(data: bytes, seed_text: str) -> bytes:
    """The serialized model with its float ConstantOfShape fills replaced by seeded initializers."""
    model = onnx.load_from_string(data)
    graph = model.graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    consumers = {}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            consumers.setdefault(name, (node, slot))
    keep, added = [], []
    for node in graph.node:
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        dtype = numpy_helper.to_array(value).dtype if value is not None else np.dtype(np.float32)
        if node.op_type != "ConstantOfShape" or node.input[0] not in constants or dtype.kind != "f":
            keep.append(node)
            continue
        shape = tuple(int(d) for d in constants[node.input[0]].reshape(-1))
        name = node.output[0]
        rng = np.random.default_rng(_seed(seed_text, name))
        added.append(numpy_helper.from_array(_values(rng, shape, dtype, consumers.get(name)), name))
    del graph.node[:]
    graph.node.extend(keep)
    graph.initializer.extend(added)
    # shape tensors that fed only the replaced fills are now unused: drop them (and their graph inputs)
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    unused = {t.name for t in graph.initializer if t.name not in used}
    kept = [t for t in graph.initializer if t.name not in unused]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    inputs = [i for i in graph.input if i.name not in unused]
    if model.ir_version < 4:  # before IR 4 every initializer is also listed as a graph input
        listed = {i.name for i in inputs}
        inputs += [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                   for t in added if t.name not in listed]
    del graph.input[:]
    graph.input.extend(inputs)
    _calibrate_head(model, {t.name for t in added})
    return model.SerializeToString()


def _calibrate_head(model, random_names: set, target_std: float = 2.0) -> None:
    """Scale the random weight and bias of the linear node feeding the final Softmax (through shape-only
    nodes) so that its output has standard deviation `target_std` on a seeded input."""
    graph = model.graph
    producer = {o: n for n in graph.node for o in n.output}
    softmax = [n for n in graph.node if n.op_type == "Softmax" and n.output[0] in {o.name for o in graph.output}]
    if not softmax:
        return
    name = softmax[0].input[0]
    while name in producer and producer[name].op_type in ("Reshape", "Flatten", "Squeeze", "Dropout", "Identity"):
        name = producer[name].input[0]
    linear = producer.get(name)
    if linear is None or linear.op_type not in ("Gemm", "Conv", "MatMul"):
        return
    import onnxruntime as ort
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {i.name: rng.random([d if isinstance(d, int) and d > 0 else 1 for d in i.shape]).astype(np.float32)
            for i in session.get_inputs()}
    logits = session.run([name], feed)[0].astype(np.float64)
    std = float(logits.std())
    if not np.isfinite(std) or std == 0.0:
        return
    factor = target_std / std
    for t in graph.initializer:
        if t.name in linear.input[1:] and t.name in random_names:
            t.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(t) * factor).astype(
                numpy_helper.to_array(t).dtype), t.name))

"""Standalone source sub-models of a set of nodes, so that the framework can run one NNAPI partition
of a model it cannot run whole (a custom operator it lacks, say).

- TFLite: LiteRT's schema object API (`schema_py_generated.ModelT`) keeps the model's tensors, buffers
  (those stored after the flatbuffer stay there), operator codes (with their versions) and other
  subgraphs, and keeps only the chosen operators of the main subgraph, whose inputs and outputs become
  the sub-model's. Signature definitions are dropped (they name the old inputs and outputs).
- ONNX: `onnx.utils.Extractor`, between the partition's boundary tensor names.
"""
from __future__ import annotations

from typing import Sequence


class ExtractError(ValueError):
    """The sub-model cannot be made; the message says why."""


def tflite_submodel(data: bytes, subgraph: int, nodes: Sequence[int], inputs: Sequence[int],
                    outputs: Sequence[int]) -> bytes:
    model, tail = tflite_object_model(data)
    sg = model.subgraphs[subgraph]
    sg.operators = [sg.operators[k] for k in nodes]
    sg.inputs, sg.outputs = list(inputs), list(outputs)
    model.signatureDefs = []
    return tflite_pack(model, tail)


def tflite_object_model(data: bytes):
    """(LiteRT's schema object `ModelT` of `data`, {buffer index: bytes}) for the buffers the file stores
    after the flatbuffer (Buffer.offset / size, as AI Edge Quantizer writes weights): the object API reads
    those fields but not the bytes they point at, so they are carried beside it for tflite_pack."""
    from ai_edge_litert import schema_py_generated as schema
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    tail = {}
    for k, b in enumerate(model.buffers or []):
        if (b.offset or 0) > 1:
            if b.offset + b.size > len(data):
                raise ExtractError(f"buffer {k} at offset {b.offset} with {b.size} bytes lies beyond the end of "
                                   f"the file ({len(data)} bytes)")
            tail[k] = bytes(data[b.offset: b.offset + b.size])
    return model, tail


def tflite_pack(model, tail: dict) -> bytes:
    """Serialise `model` (a ModelT) with the buffers in `tail` stored after the flatbuffer, each at a
    16-byte aligned offset, the layout LiteRT's own writers use (AI Edge Quantizer). The flatbuffer is
    packed twice: first with placeholder offsets to learn its length, then with the real ones (an
    offset field takes the same space whatever its value, so the length does not change)."""
    import flatbuffers

    def pack() -> bytes:
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())

    for k in tail:
        model.buffers[k].data, model.buffers[k].offset, model.buffers[k].size = None, 1, 1
    head = pack()
    if not tail:
        return head
    offsets, end = {}, _align16(len(head))
    for k, blob in tail.items():
        offsets[k], end = end, _align16(end + len(blob))
        model.buffers[k].offset, model.buffers[k].size = offsets[k], len(blob)
    head = pack()
    if _align16(len(head)) != min(offsets.values()):
        raise ExtractError("the flatbuffer changed length when its buffer offsets were filled in")
    out = bytearray(end)
    out[:len(head)] = head
    for k, blob in tail.items():
        out[offsets[k]: offsets[k] + len(blob)] = blob
    return bytes(out)


def _align16(n: int) -> int:
    return (n + 15) & ~15


def onnx_submodel(path: str, input_names: Sequence[str], output_names: Sequence[str]) -> bytes:
    import onnx
    import onnx.utils
    try:
        model = onnx.load(path)
        return onnx.utils.Extractor(model).extract_model(list(input_names), list(output_names)).SerializeToString()
    except Exception as e:  # onnx raises plain Exceptions for names it cannot trace
        raise ExtractError(f"onnx.utils.Extractor: {e}") from None


# the builtins LiteRT runs as hybrid kernels (int8 constant weights, float activations)
HYBRID_OPERATORS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "BATCH_MATMUL", "LSTM",
                    "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "RNN", "UNIDIRECTIONAL_SEQUENCE_RNN",
                    "BIDIRECTIONAL_SEQUENCE_RNN", "SVDF", "EMBEDDING_LOOKUP")


def tflite_float_twin(data: bytes):
    """The model with each constant int8 tensor that an operator with a float output reads (a dynamic-range
    model's weights) replaced by its dequantized float32 values: the arithmetic NNAPI computes for the
    hybrid operators (DEQUANTIZE of the weights, then the float operation). None when there is none."""
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema
    model, tail = tflite_object_model(data)
    floats, changed = (schema.TensorType.FLOAT32, schema.TensorType.FLOAT16), False
    hybrid = {getattr(schema.BuiltinOperator, n) for n in HYBRID_OPERATORS}
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    for sg in model.subgraphs:
        readers = {i for op in sg.operators if codes[op.opcodeIndex] in hybrid
                   and any(o >= 0 and sg.tensors[o].type in floats for o in op.outputs)
                   for i in op.inputs if i >= 0}
        for i in sorted(readers):
            t = sg.tensors[i]
            q = t.quantization
            raw = tail.get(t.buffer, model.buffers[t.buffer].data) if t.buffer < len(model.buffers) else None
            if t.type != schema.TensorType.INT8 or raw is None or not len(raw) or q is None or q.scale is None:
                continue
            stored = np.frombuffer(bytes(bytearray(raw)), np.int8).astype(np.float64).reshape(tuple(t.shape))
            scale = np.asarray(q.scale, np.float64)
            zero = np.asarray(q.zeroPoint if q.zeroPoint is not None and len(q.zeroPoint) else [0], np.float64)
            if scale.size > 1:   # per-channel: along quantizedDimension
                shape = [1] * stored.ndim
                shape[q.quantizedDimension] = scale.size
                scale, zero = scale.reshape(shape), (zero.reshape(shape) if zero.size > 1 else zero)
            values = ((stored - zero) * scale).astype(np.float32)
            buf = schema.BufferT()
            buf.data = np.frombuffer(values.tobytes(), np.uint8)
            model.buffers.append(buf)
            t.buffer, t.type, t.quantization = len(model.buffers) - 1, schema.TensorType.FLOAT32, None
            changed = True
    return tflite_pack(model, tail) if changed else None

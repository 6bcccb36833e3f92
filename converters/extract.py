"""Standalone source sub-models of a set of nodes, so that the framework can run one NNAPI partition
of a model it cannot run whole (a custom operator it lacks, say).

- TFLite: LiteRT's schema object API (`schema_py_generated.ModelT`) keeps the model's tensors, buffers,
  operator codes and other subgraphs, and keeps only the chosen operators of the main subgraph, whose
  inputs and outputs become the sub-model's. Signature definitions are dropped (they name the old
  inputs and outputs).
- ONNX: `onnx.utils.Extractor`, between the partition's boundary tensor names.
"""
from __future__ import annotations

from typing import Sequence


class ExtractError(ValueError):
    """The sub-model cannot be made; the message says why."""


def tflite_submodel(data: bytes, subgraph: int, nodes: Sequence[int], inputs: Sequence[int],
                    outputs: Sequence[int]) -> bytes:
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    if any(getattr(b, "offset", 0) > 1 for b in (model.buffers or [])):
        raise ExtractError("its weights are stored after the flatbuffer (buffer offsets), which the schema "
                           "object API does not carry")
    sg = model.subgraphs[subgraph]
    sg.operators = [sg.operators[k] for k in nodes]
    sg.inputs, sg.outputs = list(inputs), list(outputs)
    model.signatureDefs = []
    builder = flatbuffers.Builder(max(1024, len(data)))
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def onnx_submodel(path: str, input_names: Sequence[str], output_names: Sequence[str]) -> bytes:
    import onnx
    import onnx.utils
    try:
        model = onnx.load(path)
        return onnx.utils.Extractor(model).extract_model(list(input_names), list(output_names)).SerializeToString()
    except Exception as e:  # onnx raises plain Exceptions for names it cannot trace
        raise ExtractError(f"onnx.utils.Extractor: {e}") from None

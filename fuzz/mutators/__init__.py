"""Deterministic mutators for .tflite, .nnapi and .onnx files.

Every mutator takes a `random.Random` and bytes and returns new bytes, so a (seed, iteration) pair always
reproduces the same input. One module per kind, each structural defect a named function:

* byte_level.py (any file): bit flips, interesting integers, truncation, duplicated / removed /
  overwritten byte ranges;
* nnapi_format.py: the JSON metadata or header fields changed and the checksum recomputed
  (GRAPH_DEFECTS);
* tflite_format.py: the flatbuffer unpacked with LiteRT's object API, defects applied, packed again
  (DEFECTS);
* onnx_format.py: the ModelProto parsed with the onnx package, one to three defects, serialized again
  (DEFECTS).
"""
from .byte_level import BYTE_MUTATORS, INTERESTING_FLOATS, INTERESTING_INTS, case_rng, mutate_bytes  # noqa: F401
from .nnapi_format import GRAPH_DEFECTS, mutate_nnapi, nnapi_join, nnapi_split  # noqa: F401
from .onnx_format import ONNX_ESCAPES, mutate_onnx  # noqa: F401
from .tflite_format import mutate_tflite  # noqa: F401

"""The weightless skeleton of an ONNX model that the shape pass (shapes.py, branches.py) works on.

Shape inference needs a weight's type and dims, never its values: the values it propagates are
shapes, axes and indexes, small tensors (shapes.FOLD_LIMIT elements at most are evaluated). Yet
each onnx `infer_shapes` round serializes the model, parses it in C++ (copying every Constant
node's tensor once more) and parses the result back, and onnxruntime's SymbolicShapeInference
decodes every Constant to numpy: on a model whose weights are Constant nodes (Paddle exports) or
live inside If branches, most of convert's peak memory. So `strip` takes the raw bytes of every
large tensor (initializers and Constant values, in every graph and nested body) out of the proto
once, leaving the tensor in place with its type and dims and a key in its metadata_props (the key
travels with the tensor through the copies and renames of the shape pass and branches.py); the
reader takes the values from the returned dict by that key (`key_of`).
"""
from __future__ import annotations

from typing import Optional

import onnx
from onnx import TensorProto

from .shapes import FOLD_LIMIT

MARK = "nnapi.detached"   # metadata_props key of a stripped tensor; its value is the key into the dict
# 1-D integer tensors are shape-like: onnx's data propagation may parse a Constant's value as shape data
SHAPE_LIKE = (TensorProto.INT64, TensorProto.INT32)


def _elements(t: TensorProto) -> int:
    n = 1
    for d in t.dims:
        n *= int(d)
    return n


def _strippable(t: TensorProto) -> bool:
    return (t.HasField("raw_data") and t.data_location != TensorProto.EXTERNAL and _elements(t) > FOLD_LIMIT
            and not (t.data_type in SHAPE_LIKE and len(t.dims) <= 1) and key_of(t) is None)


def key_of(t: TensorProto) -> Optional[str]:
    """The key of a stripped tensor's values in strip()'s dict, or None for a tensor that has its data."""
    for p in t.metadata_props:
        if p.key == MARK:
            return p.value
    return None


def strip(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, dict]:
    """(proto's weightless skeleton, {key: raw bytes}) -- see the module doc. proto is changed in place;
    the skeleton is a compact copy, so the caller's proto (and its buffer) is freed when it drops it."""
    detached: dict = {}

    def take(t: TensorProto) -> None:
        if _strippable(t):
            key = str(len(detached))
            detached[key] = t.raw_data   # (one copy out of the protobuf; the reader views it, no more copies)
            t.ClearField("raw_data")
            t.metadata_props.add(key=MARK, value=key)

    def walk(g: onnx.GraphProto) -> None:
        for t in g.initializer:
            take(t)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR and n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                    take(a.t)
                elif a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for b in a.graphs:
                        walk(b)

    walk(proto.graph)
    if not detached:
        return proto, detached
    return onnx.ModelProto.FromString(proto.SerializeToString()), detached

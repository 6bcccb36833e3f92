"""Lookups, hashing and sampling: EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION, RANDOM_MULTINOMIAL."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .base import Form, OpSpec, TypeCase, arg, cases, fixed_output_quant, rank_in, same_quant
from .reduce import rank_at_least

# LSH_PROJECTION type parameter values
LSH_SPARSE_DEPRECATED, LSH_DENSE, LSH_SPARSE = 1, 2, 3

register(OpSpec(
    code=Op.EMBEDDING_LOOKUP,
    forms=[Form("default", [arg("lookups", C.TENSOR_INT32), arg("values", "T")], [arg("output", "T")])],
    type_cases=[TypeCase(1, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_INT32),
                TypeCase(3, T=C.TENSOR_QUANT8_ASYMM), TypeCase(4, T=C.TENSOR_FLOAT16),
                TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED)],
    rules=[rank_in("lookups", [1]), rank_at_least("values", 2), same_quant("values", "output")],
    doc="output[i] = values[lookups[i]]; an out-of-range lookup fails the execution",
))

register(OpSpec(
    code=Op.HASHTABLE_LOOKUP,
    forms=[Form("default", [arg("lookups", C.TENSOR_INT32), arg("keys", C.TENSOR_INT32), arg("values", "T")],
                [arg("output", "T"), arg("hits", C.TENSOR_QUANT8_ASYMM)])],
    type_cases=cases(1, "T", C.TENSOR_FLOAT32, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM),
    rules=[rank_in("lookups", [1]), rank_in("keys", [1]), same_quant("values", "output"),
           fixed_output_quant("hits", {C.TENSOR_QUANT8_ASYMM: (1.0, 0)})],
    doc="output[i] = values[j] where keys[j] == lookups[i] (keys sorted ascending), zeros and hits[i] = 0 "
        "on a miss",
))


def _lsh_type(v):
    t = v.const("type")
    if t is not None and t not in (LSH_SPARSE_DEPRECATED, LSH_DENSE, LSH_SPARSE):
        yield f"type {t} is not one of SPARSE_DEPRECATED (1), DENSE (2), SPARSE (3)"


def _lsh_type_level(v) -> int:
    """The SPARSE type with per-function offsets came with feature level 3."""
    return 3 if v.const("type") == LSH_SPARSE else 1


register(OpSpec(
    code=Op.LSH_PROJECTION,
    forms=[Form("default", [arg("hash", "H"), arg("input", "I"), arg("weight", "H", omittable=True),
                            arg("type", C.INT32)],
                [arg("output", C.TENSOR_INT32)])],
    type_cases=[TypeCase(1 if h == C.TENSOR_FLOAT32 else 3, H=h, I=i)
                for h in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16)
                for i in (C.TENSOR_FLOAT32, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM, C.TENSOR_FLOAT16)],
    rules=[rank_in("hash", [2]), rank_at_least("input", 1), rank_in("weight", [1]), _lsh_type],
    level_rules=[_lsh_type_level],
    doc="sign bits of weighted farmhash Fingerprint64(seed, input row) sums; sparse (signature per hash "
        "function) or dense (one bit per element) output",
))

register(OpSpec(
    code=Op.RANDOM_MULTINOMIAL,
    forms=[Form("default", [arg("input", "T"), arg("sample_count", C.INT32), arg("seeds", C.TENSOR_INT32)],
                [arg("output", C.TENSOR_INT32)])],
    type_cases=cases(3, "T", C.TENSOR_FLOAT32, C.TENSOR_FLOAT16),
    rules=[rank_in("input", [2]), rank_in("seeds", [1]), rank_in("output", [2])],
    doc="draws sample_count class indexes per batch row from softmax(logits), seeded by seeds",
))

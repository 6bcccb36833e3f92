"""Lookups, hashing and sampling: EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION, RANDOM_MULTINOMIAL."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .rules import fixed_output_quant, output_rank, rank_at_least, rank_in, same_quant
from .spec import Form, OpSpec, Shape, TypeCase, arg, cases


def _dims(o):
    return None if o is None or not o.type.dimensions else o.type.dimensions


def _lookup_shape(out_name="output"):
    """output [len(lookups), values' other dimensions...] (for every known extent)."""
    def rule(v):
        look, values, out = _dims(v.input("lookups")), _dims(v.input("values")), _dims(v.output(out_name))
        if out is None or values is None:
            return
        if len(out) != len(values):
            yield f"{out_name} has rank {len(out)}, expected the rank of values ({len(values)})"
            return
        expected = ((look[0] if look else 0),) + tuple(values[1:])
        if any(e and d and e != d for e, d in zip(expected, out)):
            yield (f"{out_name} has shape {list(out)}, expected [len(lookups), values' dimensions 1...] = "
                   f"{['?' if not e else e for e in expected]}")
    return rule


def _keys_match_values(v):
    keys, values = _dims(v.input("keys")), _dims(v.input("values"))
    if keys and values and keys[0] and values[0] and keys[0] != values[0]:
        yield f"keys has {keys[0]} entries, values has {values[0]} rows"


def _hits_shape(v):
    look, hits = _dims(v.input("lookups")), _dims(v.output("hits"))
    if hits is None:
        return
    if len(hits) != 1:
        yield f"hits has rank {len(hits)}, expected 1"
    elif look and look[0] and hits[0] and look[0] != hits[0]:
        yield f"hits has {hits[0]} elements, lookups has {look[0]}"

def _looked_up(v) -> Shape:
    """[len(lookups), values' dimensions 1...]: one row of values per lookup."""
    look, values = v.dims("lookups"), v.dims("values")
    if values is None:
        return None
    return ((look[0] if look and len(look) == 1 else 0),) + values[1:]


def _infer_hashtable(v):
    look = v.dims("lookups")
    return {"output": _looked_up(v), "hits": ((look[0] if look and len(look) == 1 else 0),)}


def _infer_lsh(v):
    """SPARSE (1, 3): one signature per hash function, [num_hash]; DENSE (2): one bit per hash function and
    seed, [num_hash * num_bits]."""
    h, kind = v.dims("hash"), v.const("type")
    if h is None or len(h) != 2 or kind not in (LSH_SPARSE_DEPRECATED, LSH_DENSE, LSH_SPARSE):
        return {"output": (0,)}
    return {"output": (h[0] * h[1] if kind == LSH_DENSE else h[0],)}


def _infer_multinomial(v):
    """[batches, sample_count]."""
    d, count = v.dims("input"), v.const("sample_count")
    batches = d[0] if d else 0
    return {"output": (batches, count if isinstance(count, int) and count > 0 else 0)}


# LSH_PROJECTION type parameter values
LSH_SPARSE_DEPRECATED, LSH_DENSE, LSH_SPARSE = 1, 2, 3

register(OpSpec(
    code=Op.EMBEDDING_LOOKUP,
    forms=[Form("default", [arg("lookups", C.TENSOR_INT32), arg("values", "T")], [arg("output", "T")])],
    type_cases=[TypeCase(1, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_INT32),
                TypeCase(3, T=C.TENSOR_QUANT8_ASYMM), TypeCase(4, T=C.TENSOR_FLOAT16),
                TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED)],
    rules=[rank_in("lookups", [1]), rank_at_least("values", 2), same_quant("values", "output"), _lookup_shape()],
    doc="output[i] = values[lookups[i]]; an out-of-range lookup fails the execution",
    infer=lambda v: {"output": _looked_up(v)},
))

register(OpSpec(
    code=Op.HASHTABLE_LOOKUP,
    forms=[Form("default", [arg("lookups", C.TENSOR_INT32), arg("keys", C.TENSOR_INT32), arg("values", "T")],
                [arg("output", "T"), arg("hits", C.TENSOR_QUANT8_ASYMM)])],
    type_cases=cases(1, "T", C.TENSOR_FLOAT32, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM),
    rules=[rank_in("lookups", [1]), rank_in("keys", [1]), same_quant("values", "output"),
           fixed_output_quant("hits", {C.TENSOR_QUANT8_ASYMM: (1.0, 0)}), _lookup_shape(), _hits_shape,
           _keys_match_values],
    doc="output[i] = values[j] where keys[j] == lookups[i] (keys sorted ascending), zeros and hits[i] = 0 "
        "on a miss",
    infer=_infer_hashtable,
))


def _lsh_type(v):
    t = v.const("type")
    if t is not None and t not in (LSH_SPARSE_DEPRECATED, LSH_DENSE, LSH_SPARSE):
        yield f"type {t} is not one of SPARSE_DEPRECATED (1), DENSE (2), SPARSE (3)"


def _lsh_shapes(v):
    """At most 32 bits per hash function (a signature is an int32); one weight per input row."""
    hash_dims, inp, weight = _dims(v.input("hash")), _dims(v.input("input")), _dims(v.input("weight"))
    if hash_dims and len(hash_dims) == 2 and hash_dims[1] > 32:
        yield f"hash has {hash_dims[1]} bits per function, at most 32"
    if weight and inp and weight[0] and inp[0] and weight[0] != inp[0]:
        yield f"weight has {weight[0]} elements, input has {inp[0]} rows"


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
    rules=[rank_in("hash", [2]), rank_at_least("input", 1), rank_in("weight", [1]), _lsh_type, _lsh_shapes,
           output_rank("output", 1)],
    level_rules=[_lsh_type_level],
    doc="sign bits of weighted farmhash Fingerprint64(seed, input row) sums; sparse (signature per hash "
        "function) or dense (one bit per element) output",
    infer=_infer_lsh,
))

register(OpSpec(
    code=Op.RANDOM_MULTINOMIAL,
    forms=[Form("default", [arg("input", "T"), arg("sample_count", C.INT32), arg("seeds", C.TENSOR_INT32)],
                [arg("output", C.TENSOR_INT32)])],
    type_cases=cases(3, "T", C.TENSOR_FLOAT32, C.TENSOR_FLOAT16),
    rules=[rank_in("input", [2]), rank_in("seeds", [1]), rank_in("output", [2])],
    doc="draws sample_count class indexes per batch row from softmax(logits), seeded by seeds",
    infer=_infer_multinomial,
))

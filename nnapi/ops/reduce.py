"""Reductions and index selection: MEAN, REDUCE_*, ARGMAX, ARGMIN, TOPK_V2."""
from __future__ import annotations

import numpy as np

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .base import (Form, OpSpec, TypeCase, arg, axes_in_range, cases, known_rank as _rank, output_rank,
                   rank_at_least, rank_at_most, same_quant)

_FLOATS = (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16)


# -- MEAN and REDUCE_* ------------------------------------------------------------

def _reduced_rank(v):
    """Output rank of a reduction with constant axes and keep_dims: the input's, less the reduced
    dimensions unless kept (at least 1: reducing every dimension gives shape [1])."""
    rank, axes, keep = _rank(v.input("input")), v.const("axes"), v.const("keep_dims")
    if rank is None or axes is None or keep is None:
        return None
    if keep:
        return rank
    axes = {int(a) % rank for a in np.ravel(axes) if -rank <= int(a) < rank}
    return max(1, rank - len(axes))


def _reduction(code, keep_type, type_cases, rules=(), doc=""):
    return register(OpSpec(
        code=code,
        forms=[Form("default", [arg("input", "T"), arg("axes", C.TENSOR_INT32), arg("keep_dims", keep_type)],
                    [arg("output", "T")])],
        type_cases=type_cases,
        rules=[rank_at_most("input", 4), axes_in_range("input", "axes"), output_rank("output", _reduced_rank),
               *rules],
        doc=doc,
    ))


# The NDK asks MEAN's quantized output to share the input's scale; Android's
# validator does not check it and the kernel requantizes, so no rule here.
_reduction(Op.MEAN, C.INT32,
           [TypeCase(2, T=C.TENSOR_FLOAT32), TypeCase(2, T=C.TENSOR_QUANT8_ASYMM),
            TypeCase(3, T=C.TENSOR_FLOAT16), TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED)],
           doc="mean over the given axes; keep_dims > 0 keeps them with length 1")

for _code, _verb in ((Op.REDUCE_ALL, "logical and"), (Op.REDUCE_ANY, "logical or")):
    _reduction(_code, C.BOOL, [TypeCase(3, T=C.TENSOR_BOOL8)], doc=f"{_verb} over the given axes")

for _code, _verb in ((Op.REDUCE_MAX, "maximum"), (Op.REDUCE_MIN, "minimum")):
    _reduction(_code, C.BOOL,
               cases(3, "T", *_FLOATS, C.TENSOR_QUANT8_ASYMM) + [TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED)],
               rules=[same_quant("input", "output")], doc=f"{_verb} over the given axes")

for _code, _verb in ((Op.REDUCE_PROD, "product"), (Op.REDUCE_SUM, "sum")):
    _reduction(_code, C.BOOL, cases(3, "T", *_FLOATS), doc=f"{_verb} over the given axes")


# -- ARGMAX / ARGMIN / TOPK_V2 --------------------------------------------------

_SELECTABLE = cases(3, "T", *_FLOATS, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM) + \
    [TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED)]

for _code, _verb in ((Op.ARGMAX, "largest"), (Op.ARGMIN, "smallest")):
    register(OpSpec(
        code=_code,
        forms=[Form("default", [arg("input", "T"), arg("axis", C.INT32)], [arg("output", C.TENSOR_INT32)])],
        type_cases=_SELECTABLE,
        rules=[rank_at_least("input", 1), axes_in_range("input", "axis"),
               # an (n - 1)-D output; a 1-D input gives shape [1]
               output_rank("output", lambda v: None if _rank(v.input("input")) is None
                           else max(1, _rank(v.input("input")) - 1))],
        doc=f"index of the {_verb} element along axis (ties: the smallest index)",
    ))

register(OpSpec(
    code=Op.TOPK_V2,
    forms=[Form("default", [arg("input", "T"), arg("k", C.INT32)],
                [arg("values", "T"), arg("indices", C.TENSOR_INT32)])],
    type_cases=_SELECTABLE,
    rules=[rank_at_least("input", 1), same_quant("input", "values"),
           output_rank("values", lambda v: _rank(v.input("input"))),
           output_rank("indices", lambda v: _rank(v.input("input")))],
    doc="the k largest values along the last axis, in descending order (ties: smaller index first), "
        "and their indices",
))

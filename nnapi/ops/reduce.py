"""Reductions and index selection: MEAN, REDUCE_*, ARGMAX, ARGMIN, TOPK_V2."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import const_ints, normalize_axis
from .rules import axes_in_range, known_rank as _rank, output_rank, rank_at_least, rank_at_most, same_quant
from .spec import Form, OpSpec, OpView, TypeCase, arg, cases

_FLOATS = (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16)


# -- MEAN and REDUCE_* ------------------------------------------------------------

def _const_int(v: OpView, name: str):
    """A constant scalar input as an int (bools as 0/1), or None."""
    values = const_ints(v, name)
    return values[0] if values is not None and len(values) == 1 else None


def _resolve_axes(axes, rank: int):
    """Constant axes (duplicates and negatives allowed) as a set of dimensions, None when one is out of range."""
    dims = [normalize_axis(a, rank) for a in axes]
    return None if None in dims else set(dims)


def reduced_shape(shape: tuple, axes: set, keep: bool) -> tuple:
    """Reduced dimensions become 1 (keep) or disappear; reducing every dimension without keep gives [1].
    (The executor's kernels/reduce.py shapes its results with it.)"""
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _infer_reduction(v: OpView) -> dict:
    shape, axes, keep = v.dims("input"), const_ints(v, "axes"), _const_int(v, "keep_dims")
    if not shape or keep is None:
        return {"output": None}
    keep = keep > 0     # MEAN's INT32 keep_dims retains the dimensions when positive
    if axes is None:
        # which dimensions go is unknown: a kept (or the only) dimension is 1 or unchanged
        return {"output": tuple(1 if d == 1 else 0 for d in shape) if keep or len(shape) == 1 else None}
    axes = _resolve_axes(axes, len(shape))
    return {"output": None if axes is None else reduced_shape(shape, axes, keep)}


def _reduced_rank(v: OpView):
    """For output_rank: the rank of the inferred output shape, or None."""
    shape = _infer_reduction(v)["output"]
    return None if shape is None else len(shape)


def _reduction(code, keep_type, type_cases, rules=(), doc=""):
    return register(OpSpec(
        code=code,
        forms=[Form("default", [arg("input", "T"), arg("axes", C.TENSOR_INT32), arg("keep_dims", keep_type)],
                    [arg("output", "T")])],
        type_cases=type_cases,
        rules=[rank_at_most("input", 4), axes_in_range("input", "axes"), output_rank("output", _reduced_rank),
               *rules],
        infer=_infer_reduction,
        value_dependent={"output": "which dimensions are reduced (and whether kept) is given by the values of "
                                   "axes and keep_dims, unknown when they are not constants"},
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


def _infer_arg_select(v: OpView) -> dict:
    """The input's shape without the axis dimension ([1] for a 1-D input)."""
    shape, axis = v.dims("input"), _const_int(v, "axis")
    if not shape:
        return {"output": None}
    if axis is None:
        return {"output": (0,) * (len(shape) - 1) or (1,)}
    axes = _resolve_axes([axis], len(shape))
    return {"output": None if axes is None else reduced_shape(shape, axes, keep=False)}


def _infer_topk(v: OpView) -> dict:
    """values and indices: the input's shape with the last extent k (unknown when k is not a valid constant)."""
    shape, k = v.dims("input"), _const_int(v, "k")
    if not shape:
        return {"values": None, "indices": None}
    last = shape[-1]
    if k is None or k < 1 or (last and k > last):
        k = 0
    out = shape[:-1] + (k,)
    return {"values": out, "indices": out}


for _code, _verb in ((Op.ARGMAX, "largest"), (Op.ARGMIN, "smallest")):
    register(OpSpec(
        code=_code,
        forms=[Form("default", [arg("input", "T"), arg("axis", C.INT32)], [arg("output", C.TENSOR_INT32)])],
        type_cases=_SELECTABLE,
        rules=[rank_at_least("input", 1), axes_in_range("input", "axis"),
               # an (n - 1)-D output; a 1-D input gives shape [1]
               output_rank("output", lambda v: None if _rank(v.input("input")) is None
                           else max(1, _rank(v.input("input")) - 1))],
        infer=_infer_arg_select,
        value_dependent={"output": "the dimension removed is given by the value of axis, unknown when it is "
                                   "not a constant"},
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
    infer=_infer_topk,
    value_dependent={name: "the last extent is the value of k, unknown when k is not a constant"
                     for name in ("values", "indices")},
    doc="the k largest values along the last axis, in descending order (ties: smaller index first), "
        "and their indices",
))

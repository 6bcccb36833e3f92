"""Shape operations that select or repeat elements: SLICE, STRIDED_SLICE, GATHER, TILE,
CHANNEL_SHUFFLE and REVERSE (the shape family's shared helpers and conventions are in
shape.py).
"""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import const_ints, infer_same_as, normalize_axis
from .rules import (axes_in_range, dims_fit, known_rank, length_is_rank, output_rank, rank_in, ranks_agree,
                    same_quant, same_shape)
from .shape import (DATA_TYPES, I32, OUTPUT_KEEPS_RANK, keeps_quant, mul_or_0, rank_limits, shape_op, shape_types,
                    splits_evenly, unknown, vectors)
from .spec import Form, OpSpec, arg, cases


# -- output ranks -------------------------------------------------------------------

def _strided_slice_rank(v):
    """STRIDED_SLICE: rank (n - k), k = the bits of shrink_axis_mask set among the n dimensions; at least 1:
    shrinking every dimension gives shape [1] (CTS strided_slice_b155662254)."""
    rank, mask = known_rank(v.input("input")), v.const("shrink_axis_mask")
    if rank is None or mask is None:
        return None
    return max(1, rank - (int(mask) & ((1 << rank) - 1)).bit_count())


def _gather_rank(v):
    """GATHER: an (n + k - 1)-D output for an n-D input and k-D indices."""
    n, k = known_rank(v.input("input")), known_rank(v.input("indices"))
    return None if n is None or not k else n + k - 1


# -- shape inference ------------------------------------------------------------------

def _infer_slice(v):
    d, begin, size = v.dims("input"), const_ints(v, "begin"), const_ints(v, "size")
    if d is None:
        return {"output": None}
    if size is None or len(size) != len(d):
        return {"output": unknown(len(d))}
    if begin is None or len(begin) != len(d):
        begin = [-1] * len(d)

    def extent(n, b, s):   # size -1 means "to the end": n - begin
        if s >= 0:
            return s
        return n - b if s == -1 and n and 0 <= b <= n else 0
    return {"output": tuple(extent(n, b, s) for n, b, s in zip(d, begin, size))}


def strided_range(n: int, begin: int, end: int, stride: int, begin_bit: bool, end_bit: bool) -> tuple[int, int]:
    """(start, count) of one dimension of extent n of a strided slice (TFLite's StridedSlice: negative
    indexes count from the end, then clamp; a set mask bit takes the whole range in the stride's
    direction). The executor's kernel uses it too. `stride` must not be 0."""
    forward = stride > 0

    def clamp(i):
        i = i + n if i < 0 else i
        return min(max(i, 0), n) if forward else min(max(i, -1), n - 1)
    start = (0 if forward else n - 1) if begin_bit else clamp(begin)
    stop = (n if forward else -1) if end_bit else clamp(end)
    return start, max(0, -(-(stop - start) // stride))


def _infer_strided_slice(v):
    d = v.dims("input")
    shrink = v.const("shrink_axis_mask")
    if d is None or not isinstance(shrink, int):
        return {"output": None}
    keep = [k for k in range(len(d)) if not shrink >> k & 1]
    params = [const_ints(v, n) for n in ("begin", "end", "strides")]
    masks = [v.const(n) for n in ("begin_mask", "end_mask")]
    if any(p is None or len(p) != len(d) for p in params) or not all(isinstance(m, int) for m in masks) \
            or 0 in params[2]:
        return {"output": unknown(len(keep) or 1)}
    (begin, end, strides), (bm, em) = params, masks
    out = [strided_range(d[k], begin[k], end[k], strides[k], bool(bm >> k & 1), bool(em >> k & 1))[1] if d[k] else 0
           for k in keep]
    return {"output": tuple(out) or (1,)}   # shrinking every dimension leaves shape [1]


def _infer_tile(v):
    d, mult = v.dims("input"), const_ints(v, "multiples")
    if d is None:
        return {"output": None}
    if mult is None or len(mult) != len(d):
        return {"output": unknown(len(d))}
    return {"output": tuple(mul_or_0(n, m) for n, m in zip(d, mult))}


def _infer_gather(v):
    d, idx, axis = v.dims("input"), v.dims("indices"), v.const("axis")
    if d is None or idx is None:
        return {"output": None}
    k = normalize_axis(axis, len(d)) if isinstance(axis, int) else None
    if k is None:
        return {"output": unknown(len(d) + len(idx) - 1)}
    return {"output": d[:k] + idx + d[k + 1:]}


# -- specs ----------------------------------------------------------------------------

shape_op(Op.SLICE, [arg("input", "T"), arg("begin", I32), arg("size", I32)], shape_types(3, i32=3),
    rules=[*vectors("begin", "size"), length_is_rank("begin"), length_is_rank("size"), OUTPUT_KEEPS_RANK,
           *keeps_quant()],
    doc="input[begin : begin + size] per dimension; size -1 means to the end",
    infer=_infer_slice, runtime="begin and size")

shape_op(Op.STRIDED_SLICE,
    [arg("input", "T"), arg("begin", I32), arg("end", I32), arg("strides", I32),
     arg("begin_mask", C.INT32), arg("end_mask", C.INT32), arg("shrink_axis_mask", C.INT32)], shape_types(2),
    rules=[*rank_limits("input", "output", max_rank=4), *vectors("begin", "end", "strides"),
           *(length_is_rank(n) for n in ("begin", "end", "strides")), output_rank("output", _strided_slice_rank),
           *keeps_quant()],
    doc="strided slice with begin/end/shrink-axis masks (TFLite semantics)",
    infer=_infer_strided_slice, runtime="begin, end and strides")

shape_op(Op.TILE, [arg("input", "T"), arg("multiples", I32)], shape_types(3, i32=3),
    rules=[*vectors("multiples"), length_is_rank("multiples"), OUTPUT_KEEPS_RANK, *keeps_quant()],
    doc="repeats the input multiples[i] times along dimension i",
    infer=_infer_tile, runtime="multiples")

shape_op(Op.GATHER, [arg("input", "T"), arg("axis", C.INT32), arg("indices", I32)], shape_types(3, i32=3),
    rules=[axes_in_range("input", "axis"), output_rank("output", _gather_rank), *keeps_quant()],
    doc="input.take(indices, axis); out-of-range indices fail",
    infer=_infer_gather)

shape_op(Op.CHANNEL_SHUFFLE, [arg("input", "T"), arg("num_groups", C.INT32), arg("axis", C.INT32)], shape_types(3),
    rules=[*rank_limits("input", "output", max_rank=4), axes_in_range("input", "axis"),
           splits_evenly("num_groups", "groups"), same_shape("input", "output"), *keeps_quant()],
    doc="output[k * groups + g] = input[g * group_size + k] along axis",
    infer=infer_same_as())


def _reverse_axis(v):
    axis = v.input("axis")
    if axis is not None and not dims_fit(axis.type.dimensions, (1,)):
        yield f"axis must have shape [1], got {list(axis.type.dimensions)}"
    value, r = v.const("axis"), known_rank(v.input("input"))
    if value is not None and r is not None and value.size == 1 and not 0 <= int(value.reshape(-1)[0]) < r:
        yield f"axis {int(value.reshape(-1)[0])} is out of range [0, {r})"


register(OpSpec(
    code=Op.REVERSE,
    forms=[Form("default", [arg("input", "T"), arg("axis", C.TENSOR_INT32)], [arg("output", "T")])],
    type_cases=cases(7, "T", *DATA_TYPES),
    rules=[same_quant("input", "output"), rank_in("input", range(1, 9)), ranks_agree("input", "output"),
           _reverse_axis],
    doc="output = input reversed along the one dimension given by axis",
    infer=infer_same_as(),
))

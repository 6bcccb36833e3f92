"""Tensor shape and data-movement operations: CONCATENATION, RESHAPE, SQUEEZE,
EXPAND_DIMS, TRANSPOSE, SLICE, STRIDED_SLICE, SPLIT, TILE, GATHER, CHANNEL_SHUFFLE,
FILL, RANK, PACK and REVERSE (the padding and depth/space/batch rearrangements
are in shape_space.py).

None of them computes new values (CONCATENATION may requantize), so unless the
NNAPI documentation says otherwise the output keeps the input's scale and zero
point. Output ranks follow from the input ranks (and from constant parameters:
SQUEEZE axes, STRIDED_SLICE shrink_axis_mask, the RESHAPE shape's length) and are
checked where known; constant axes must be in range. Value checks that need
run-time data (indices, block sizes, parameters fed at run time) are the
kernels' (executor/kernels/shape/reference.py, shape_space.py).

Shape inference (`infer`) follows the kernels' rules; the output extents that
parameter tensors set (shape, perm, paddings, begin/size, ...) are unknown when
those tensors are fed at run time, hence the `value_dependent` entries.
"""
from __future__ import annotations

import numpy as np

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import const_ints, infer_same_as, normalize_axis
from .rules import (axes_in_range, const_in, dims_fit, known_rank, length_is_rank, length_of, output_rank,
                    rank_at_most, rank_in, rank_of, ranks_agree, same_quant, same_shape)
from .spec import Form, OpSpec, TypeCase, arg, cases, opt

F32, F16, I32 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32
Q8, Q8S = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED


def shape_types(base: int, *, i32: int | None = None) -> list[TypeCase]:
    """T = float32 and quant8 at the operation's level, float16 at 3, quant8 signed at 4 (the usual list)."""
    out = [TypeCase(base, T=F32), TypeCase(base, T=Q8), TypeCase(max(3, base), T=F16), TypeCase(4, T=Q8S)]
    if i32 is not None:
        out.append(TypeCase(i32, T=I32))
    return out


_IO = [arg("output", "T")]


def shape_op(code, inputs, types, rules=(), level_rules=(), doc="", outputs=None, infer=None, runtime=None):
    """`runtime` names the parameter tensors whose values set the output extents: when they are fed at run
    time (not constants) those extents are value-dependent."""
    dependent = {"output": f"its extents are set by the values of {runtime}, unknown when fed at run time"} \
        if runtime else {}
    return register(OpSpec(code=code, forms=[Form("default", inputs, outputs or _IO)], type_cases=types,
                           rules=list(rules), level_rules=list(level_rules), doc=doc, infer=infer,
                           value_dependent=dependent))


def rank_limits(*names, max_rank=4, exact=None):
    """Tensor rank limits: exactly `exact`, or 1..max_rank."""
    return [rank_in(n, [exact]) if exact else rank_at_most(n, max_rank) for n in names]


def vectors(*names):
    """Parameter tensors (shape, perm, begin, ...) are 1-D."""
    return [rank_in(n, [1]) for n in names]


def matrix(name):
    return rank_in(name, [2])


def keeps_quant():
    """The output keeps input0's scale and zero point."""
    return [same_quant("input", "output")]


# -- level rules ------------------------------------------------------------------

def _concat_requantizes(v) -> int:
    """Quant8 inputs whose scale/zero point differ from the output's need feature level 3."""
    out = v.output("output")
    if out is None or out.type.code != Q8:
        return 1
    key = (out.type.scale, out.type.zero_point)
    return 3 if any((o.type.scale, o.type.zero_point) != key for o in v.inputs("inputs")) else 1


def _same_rank(name):
    def rule(v):
        ranks = {len(o.type.dimensions) for o in v.inputs(name) if o.type.dimensions}
        if len(ranks) > 1:
            yield f"{name} have different ranks {sorted(ranks)}"
    return rule


# -- output ranks -------------------------------------------------------------------
# (NNAPI documentation of each operation; None = not known from the model, not checked)

OUTPUT_KEEPS_RANK = output_rank("output", rank_of("input"))


def _squeezed_rank(v):
    """SQUEEZE: the input's rank less the listed axes, or less every size-1 dimension when axes is
    omitted or empty (then every extent must be known); at least 1: squeezing every dimension gives
    shape [1] (CTS squeeze_b155238914)."""
    inp = v.input("input")
    rank = known_rank(inp)
    if rank is None:
        return None
    if v.has("axes"):
        axes = v.const("axes")
        if axes is None:
            return None
        axes = np.ravel(axes)
    else:
        axes = ()
    if len(axes):
        squeezed = {int(a) % rank for a in axes if -rank <= int(a) < rank}
        want = rank - len(squeezed)
    elif all(inp.type.dimensions):
        want = sum(1 for d in inp.type.dimensions if d != 1)
    else:
        return None
    return max(1, want)


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
# Output shapes from the inputs' known dimensions and constant parameters (0 = unknown extent,
# None = unknown rank). Parameters given at run time leave the extents they set unknown.

def mul_or_0(*xs) -> int:
    """The product of known positive values, else 0 (unknown)."""
    out = 1
    for x in xs:
        if not x or x < 0:
            return 0
        out *= x
    return out


def div_or_0(a, b) -> int:
    """a / b when both are known and b divides a, else 0."""
    return a // b if a and b and a > 0 and b > 0 and a % b == 0 else 0


def padded(n, before, after) -> int:
    return n + before + after if n and n > 0 and before >= 0 and after >= 0 else 0


def unknown(rank) -> tuple:
    return (0,) * rank


def const_pairs(v, name: str, rows: int):
    """A constant [rows, 2] int tensor (paddings) as a list of (before, after), or None."""
    flat = const_ints(v, name)
    if flat is None or len(flat) != 2 * rows:
        return None
    return list(zip(flat[0::2], flat[1::2]))


def _infer_concat(v):
    shapes = [s for s in v.all_dims("inputs") if s is not None]
    if not shapes:
        return {"output": None}
    rank = len(shapes[0])
    shapes = [s for s in shapes if len(s) == rank]
    axis = v.const("axis")
    axis = normalize_axis(axis, rank) if isinstance(axis, int) else None
    if axis is None:
        return {"output": unknown(rank)}
    out = [next((s[d] for s in shapes if s[d]), 0) for d in range(rank)]
    along = [s[axis] if s is not None and len(s) == rank else 0 for s in v.all_dims("inputs")]
    out[axis] = sum(along) if all(along) else 0
    return {"output": tuple(out)}


def _infer_reshape(v):
    shape = const_ints(v, "shape")
    if shape is None:   # given at run time: its length is the rank
        sd = v.dims("shape")
        return {"output": unknown(sd[0]) if sd is not None and len(sd) == 1 and sd[0] else None}
    out = [d if d > 0 else 0 for d in shape]
    if shape.count(-1) == 1:
        d = v.dims("input")
        size = mul_or_0(*d) if d else 0
        out[shape.index(-1)] = div_or_0(size, mul_or_0(*(x for x in shape if x != -1)))
    return {"output": tuple(out)}


def _infer_squeeze(v):
    d = v.dims("input")
    if d is None:
        return {"output": None}
    axes = const_ints(v, "axes") if v.has("axes") else []
    if axes is None:   # given at run time: rank unknown
        return {"output": None}
    if axes:
        drop = {normalize_axis(a, len(d)) for a in axes}
    elif all(d):
        drop = {k for k, n in enumerate(d) if n == 1}
    else:   # which dimensions are 1 is not known
        return {"output": None}
    return {"output": tuple(n for k, n in enumerate(d) if k not in drop) or (1,)}


def _infer_expand_dims(v):
    d, axis = v.dims("input"), v.const("axis")
    if d is None:
        return {"output": None}
    k = normalize_axis(axis, len(d) + 1) if isinstance(axis, int) else None
    return {"output": unknown(len(d) + 1) if k is None else d[:k] + (1,) + d[k:]}


def _infer_transpose(v):
    d = v.dims("input")
    if d is None:
        return {"output": None}
    perm = const_ints(v, "perm") if v.has("perm") else []
    if not perm:   # omitted or empty: reversed (a run-time perm leaves the extents unknown)
        return {"output": unknown(len(d)) if perm is None else d[::-1]}
    if sorted(perm) != list(range(len(d))):
        return {"output": unknown(len(d))}
    return {"output": tuple(d[p] for p in perm)}


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


def _infer_split(v):
    d, parts = v.dims("input"), len(v.outputs("outputs"))
    if d is None:
        return {"outputs": [None] * parts}
    axis = v.const("axis")
    k = normalize_axis(axis, len(d)) if isinstance(axis, int) else None
    if k is None:
        return {"outputs": [unknown(len(d))] * parts}
    return {"outputs": [d[:k] + (div_or_0(d[k], parts),) + d[k + 1:]] * parts}


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

shape_op(Op.CONCATENATION, [arg("inputs", "T", repeated=True), arg("axis", C.INT32)], shape_types(1),
    rules=[*rank_limits("inputs", "output", max_rank=4), _same_rank("inputs"), output_rank("output", rank_of("inputs"))],
    level_rules=[_concat_requantizes],
    doc="output = inputs joined along axis; quant8 inputs are requantized to the output (level 3+)",
    infer=_infer_concat)

shape_op(Op.RESHAPE, [arg("input", "T"), arg("shape", I32)], shape_types(1, i32=6),
    rules=[*rank_limits("input", "output", max_rank=4), *vectors("shape"), output_rank("output", length_of("shape")),
           *keeps_quant()],
    doc="same data, new shape; one shape entry may be -1",
    infer=_infer_reshape, runtime="shape")

shape_op(Op.SQUEEZE, [arg("input", "T"), opt("axes", I32, omittable=True)], shape_types(2),
    rules=[*rank_limits("input", max_rank=4), *vectors("axes"), axes_in_range("input", "axes"),
           output_rank("output", _squeezed_rank), *keeps_quant()],
    doc="drops the listed size-1 dimensions (all of them when axes is omitted or empty)",
    infer=_infer_squeeze, runtime="axes")

shape_op(Op.EXPAND_DIMS, [arg("input", "T"), arg("axis", C.INT32)], shape_types(3, i32=3),
    rules=[axes_in_range("input", "axis", extra=1), output_rank("output", rank_of("input", 1)), *keeps_quant()],
    doc="inserts a size-1 dimension at axis in [-(n+1), n+1)",
    infer=_infer_expand_dims)

shape_op(Op.TRANSPOSE, [arg("input", "T"), opt("perm", I32, omittable=True)], shape_types(2),
    rules=[*rank_limits("input", "output", max_rank=4), *vectors("perm"), length_is_rank("perm"), OUTPUT_KEEPS_RANK,
           *keeps_quant()],
    doc="permutes dimensions (reverses them when perm is omitted)",
    infer=_infer_transpose, runtime="perm")

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

shape_op(Op.SPLIT, [arg("input", "T"), arg("axis", C.INT32), arg("num_splits", C.INT32)], shape_types(3, i32=3),
    outputs=[arg("outputs", "T", repeated=True)],
    rules=[axes_in_range("input", "axis"), output_rank("outputs", rank_of("input")), same_quant("input", "outputs")],
    doc="splits along axis into num_splits equal parts",
    infer=_infer_split)

shape_op(Op.TILE, [arg("input", "T"), arg("multiples", I32)], shape_types(3, i32=3),
    rules=[*vectors("multiples"), length_is_rank("multiples"), OUTPUT_KEEPS_RANK, *keeps_quant()],
    doc="repeats the input multiples[i] times along dimension i",
    infer=_infer_tile, runtime="multiples")

shape_op(Op.GATHER, [arg("input", "T"), arg("axis", C.INT32), arg("indices", I32)], shape_types(3, i32=3),
    rules=[axes_in_range("input", "axis"), output_rank("output", _gather_rank), *keeps_quant()],
    doc="input.take(indices, axis); out-of-range indices fail",
    infer=_infer_gather)

shape_op(Op.CHANNEL_SHUFFLE, [arg("input", "T"), arg("num_groups", C.INT32), arg("axis", C.INT32)], shape_types(3),
    rules=[*rank_limits("input", "output", max_rank=4), axes_in_range("input", "axis"), same_shape("input", "output"),
           *keeps_quant()],
    doc="output[k * groups + g] = input[g * group_size + k] along axis",
    infer=infer_same_as())


# -- FILL, RANK (feature level 4), PACK (6), REVERSE (7) --------------------------------------

# the data types of the later shape operations
DATA_TYPES = (C.TENSOR_FLOAT16, C.TENSOR_FLOAT32, C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_INT32)


def _infer_fill(v):
    """The output's extents are the values of `shape` (when constant); its rank is shape's length."""
    dims = const_ints(v, "shape")
    if dims is not None:
        return {"output": tuple(max(d, 0) for d in dims)}
    sd = v.dims("shape")
    return {"output": (0,) * sd[0] if sd is not None and len(sd) == 1 and sd[0] else None}


def _fill_shape(v):
    """The output has as many dimensions as `shape` has elements, and those extents when constant."""
    shape, out = v.input("shape"), v.output("output")
    if shape is None or out is None or not out.type.dimensions:
        return
    dims = out.type.dimensions
    if shape.type.dimensions and shape.type.dimensions[0] and len(dims) != shape.type.dimensions[0]:
        yield f"output has rank {len(dims)}, shape has {shape.type.dimensions[0]} elements"
        return
    value = v.const("shape")
    if value is not None and len(value.reshape(-1)) == len(dims) and any(
            d and int(e) != d for e, d in zip(value.reshape(-1), dims)):
        yield f"output has shape {list(dims)}, shape says {[int(e) for e in value.reshape(-1)]}"


register(OpSpec(
    code=Op.FILL,
    forms=[Form("default", [arg("shape", C.TENSOR_INT32), arg("value", "V")], [arg("output", "T")])],
    type_cases=[TypeCase(4, T=C.TENSOR_FLOAT16, V=C.FLOAT16), TypeCase(4, T=C.TENSOR_FLOAT32, V=C.FLOAT32),
                TypeCase(4, T=C.TENSOR_INT32, V=C.INT32)],
    rules=[rank_in("shape", (1,)), _fill_shape],
    doc="output of the given shape, every element = value",
    infer=_infer_fill,
    value_dependent={"output": "its extents are the values of shape, unknown when shape is fed at run time"},
))

register(OpSpec(
    code=Op.RANK,
    forms=[Form("default", [arg("input", "T")], [arg("output", C.INT32)])],
    type_cases=cases(4, "T", C.TENSOR_FLOAT16, C.TENSOR_FLOAT32, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM,
                     C.TENSOR_QUANT16_SYMM, C.TENSOR_BOOL8, C.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                     C.TENSOR_QUANT16_ASYMM, C.TENSOR_QUANT8_SYMM, C.TENSOR_QUANT8_ASYMM_SIGNED),
    doc="output = the number of dimensions of input (an INT32 scalar)",
    infer=lambda v: {"output": ()},
))


def _pack_axes(v):
    """PACK's axis may be 0 .. rank(inputs) (inclusive)."""
    r = next((known_rank(o) for o in v.inputs("inputs") if known_rank(o) is not None), None)
    return None if r is None else set(range(r + 1))


def _pack_shapes(v):
    dims = [o.type.dimensions for o in v.inputs("inputs") if o.type.dimensions]
    for d in dims[1:]:
        if not dims_fit(d, tuple(x or None for x in dims[0])):
            yield f"inputs must all have the same dimensions, got {list(dims[0])} and {list(d)}"
            return


def _pack_output(v):
    """The output is the inputs' shape with len(inputs) inserted at `axis`."""
    ins, out, axis = v.inputs("inputs"), v.output("output"), v.const("axis")
    if out is None or not out.type.dimensions or not isinstance(axis, int):
        return
    dims = out.type.dimensions
    if 0 <= axis < len(dims) and dims[axis] and dims[axis] != len(ins):
        yield f"output dimension {axis} is {dims[axis]}, expected the number of inputs ({len(ins)})"
        return
    first = next((o.type.dimensions for o in ins if o.type.dimensions), None)
    if first is not None and 0 <= axis <= len(first) and len(dims) == len(first) + 1:
        expected = first[:axis] + (len(ins),) + first[axis:]
        if any(e and d and e != d for e, d in zip(expected, dims)):
            yield f"output has shape {list(dims)}, expected {list(expected)}"


def _infer_pack(v):
    """The inputs' shape (every extent known in any input) with len(inputs) inserted at axis."""
    shapes = [s for s in v.all_dims("inputs") if s is not None]
    axis = v.const("axis")
    if not shapes or not isinstance(axis, int) or not 0 <= axis <= len(shapes[0]):
        return {"output": None if not shapes else (0,) * (len(shapes[0]) + 1)}
    rank = len(shapes[0])
    same = [next((s[d] for s in shapes if len(s) == rank and s[d]), 0) for d in range(rank)]
    return {"output": tuple(same[:axis]) + (len(v.inputs("inputs")),) + tuple(same[axis:])}


register(OpSpec(
    code=Op.PACK,
    forms=[Form("default", [arg("axis", C.INT32), arg("inputs", "T", repeated=True)], [arg("output", "T")])],
    type_cases=cases(6, "T", *DATA_TYPES),
    rules=[same_quant("inputs", "output"), _pack_shapes,
           ranks_agree("inputs", "output", 1), const_in("axis", _pack_axes, "is out of range [0, rank(inputs)]"),
           _pack_output],
    doc="output = the inputs stacked along a new dimension `axis`",
    infer=_infer_pack,
))


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

"""Tensor shape operations: CONCATENATION, RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE,
SPLIT, FILL, RANK and PACK, and the helpers the shape family shares (the slices,
gathers and repetitions are in shape_select.py, the padding and depth/space/batch
rearrangements in shape_space.py).

None of them computes new values (CONCATENATION may requantize), so unless the
NNAPI documentation says otherwise the output keeps the input's scale and zero
point. Output ranks follow from the input ranks (and from constant parameters:
SQUEEZE axes, STRIDED_SLICE shrink_axis_mask, the RESHAPE shape's length) and are
checked where known (the executor checks shapes known only at run time with
the same rules); constant axes must be in range. Value checks that need
run-time tensor data (indices, parameter tensors fed at run time) are the
kernels' (executor/kernels/shape/reference.py, space.py).

Shape inference (`infer`) follows the kernels' rules; the output extents that
parameter tensors set (shape, perm, paddings, begin/size, ...) are unknown when
those tensors are fed at run time, hence the `value_dependent` entries.
"""
from __future__ import annotations

import numpy as np

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import const_ints, normalize_axis
from .rules import (axes_in_range, const_in, dims_fit, known_rank, length_is_rank, length_of, output_rank,
                    rank_at_most, rank_in, rank_of, ranks_agree, same_quant)
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


def _concat_extents(v):
    """The inputs agree in every extent but the axis's, where known."""
    shapes = v.all_dims("inputs")
    axis = v.const("axis")
    known = [(k, s) for k, s in enumerate(shapes) if s]
    if not known or not isinstance(axis, int):
        return
    rank = len(known[0][1])
    axis = normalize_axis(axis, rank)
    if axis is None:
        return
    k0, base = known[0]
    for k, s in known[1:]:
        if len(s) == rank and any(a and b and a != b for d, (a, b) in enumerate(zip(s, base)) if d != axis):
            yield (f"input {k} has shape {list(s)}, incompatible with input {k0} {list(base)} outside axis {axis}")
            return


def _reshape_count(v):
    """A constant shape has entries >= 0 (at most one -1) whose product is the input's element count."""
    shape, d = const_ints(v, "shape"), v.dims("input")
    if shape is None:
        return
    if shape.count(-1) > 1 or any(x < -1 for x in shape):
        yield f"invalid shape {shape}: entries must be >= 0, with at most one -1"
        return
    if not d or not all(d):
        return
    size, known = int(np.prod(d, dtype=np.int64)), int(np.prod([x for x in shape if x != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or size % known:
            yield f"cannot infer the -1 of shape {shape} for {size} elements"
    elif known != size:
        yield f"shape {shape} has {known} elements, the input has {size}"


def splits_evenly(parts_name: str, what: str):
    """The constant scalar `parts_name` is at least 1 and divides the input's extent along `axis` (SPLIT's
    parts, CHANNEL_SHUFFLE's groups), where known."""
    def rule(v):
        parts, axis, d = v.const(parts_name), v.const("axis"), v.dims("input")
        if not isinstance(parts, int):
            return
        if parts < 1:
            yield f"{parts_name} {parts} must be at least 1"
            return
        k = normalize_axis(axis, len(d)) if d and isinstance(axis, int) else None
        if k is not None and d[k] and d[k] % parts:
            yield f"cannot split dimension {k} of size {d[k]} into {parts} {what}"
    return rule


def _split_outputs(v):
    parts, outputs = v.const("num_splits"), len(v.outputs("outputs"))
    if isinstance(parts, int) and parts != outputs:
        yield f"num_splits {parts} differs from the {outputs} outputs"


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


def _squeezes_unit_axes(v):
    """SQUEEZE's constant axes name dimensions of size 1 (where the input's extents are known)."""
    d = v.dims("input")
    axes = const_ints(v, "axes") if v.has("axes") else None
    if not d or not axes:
        return
    for a in axes:
        if -len(d) <= a < len(d) and d[a] not in (0, 1):
            yield f"cannot squeeze dimension {a % len(d)} of size {d[a]}"


def _perm_is_permutation(v):
    """TRANSPOSE's constant perm, when given, lists each dimension of the input once."""
    perm = const_ints(v, "perm") if v.has("perm") else None
    rank = known_rank(v.input("input"))
    if perm and rank is not None and len(perm) == rank and sorted(perm) != list(range(rank)):
        yield f"perm {perm} is not a permutation of 0..{rank - 1}"


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


def _infer_split(v):
    d, parts = v.dims("input"), len(v.outputs("outputs"))
    if d is None:
        return {"outputs": [None] * parts}
    axis = v.const("axis")
    k = normalize_axis(axis, len(d)) if isinstance(axis, int) else None
    if k is None:
        return {"outputs": [unknown(len(d))] * parts}
    return {"outputs": [d[:k] + (div_or_0(d[k], parts),) + d[k + 1:]] * parts}


# -- specs ----------------------------------------------------------------------------

shape_op(Op.CONCATENATION, [arg("inputs", "T", repeated=True), arg("axis", C.INT32)], shape_types(1),
    rules=[*rank_limits("inputs", "output", max_rank=4), _same_rank("inputs"), _concat_extents,
           output_rank("output", rank_of("inputs"))],
    level_rules=[_concat_requantizes],
    doc="output = inputs joined along axis; quant8 inputs are requantized to the output (level 3+)",
    infer=_infer_concat)

shape_op(Op.RESHAPE, [arg("input", "T"), arg("shape", I32)], shape_types(1, i32=6),
    rules=[*rank_limits("input", "output", max_rank=4), *vectors("shape"), output_rank("output", length_of("shape")),
           _reshape_count, *keeps_quant()],
    doc="same data, new shape; one shape entry may be -1",
    infer=_infer_reshape, runtime="shape")

shape_op(Op.SQUEEZE, [arg("input", "T"), opt("axes", I32, omittable=True)], shape_types(2),
    rules=[*rank_limits("input", max_rank=4), *vectors("axes"), axes_in_range("input", "axes"), _squeezes_unit_axes,
           output_rank("output", _squeezed_rank), *keeps_quant()],
    doc="drops the listed size-1 dimensions (all of them when axes is omitted or empty)",
    infer=_infer_squeeze, runtime="axes")

shape_op(Op.EXPAND_DIMS, [arg("input", "T"), arg("axis", C.INT32)], shape_types(3, i32=3),
    rules=[axes_in_range("input", "axis", extra=1), output_rank("output", rank_of("input", 1)), *keeps_quant()],
    doc="inserts a size-1 dimension at axis in [-(n+1), n+1)",
    infer=_infer_expand_dims)

shape_op(Op.TRANSPOSE, [arg("input", "T"), opt("perm", I32, omittable=True)], shape_types(2),
    rules=[*rank_limits("input", "output", max_rank=4), *vectors("perm"), length_is_rank("perm"), _perm_is_permutation,
           OUTPUT_KEEPS_RANK, *keeps_quant()],
    doc="permutes dimensions (reverses them when perm is omitted)",
    infer=_infer_transpose, runtime="perm")

shape_op(Op.SPLIT, [arg("input", "T"), arg("axis", C.INT32), arg("num_splits", C.INT32)], shape_types(3, i32=3),
    outputs=[arg("outputs", "T", repeated=True)],
    rules=[axes_in_range("input", "axis"), splits_evenly("num_splits", "equal parts"), _split_outputs,
           output_rank("outputs", rank_of("input")), same_quant("input", "outputs")],
    doc="splits along axis into num_splits equal parts",
    infer=_infer_split)

# -- FILL, RANK, PACK ----------------------------------------------------------------------

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

"""Tensor operations of feature levels 4-7: FILL, RANK (4), BATCH_MATMUL, PACK (6),
MIRROR_PAD, REVERSE (7)."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import broadcast_shapes, const_ints, infer_same_as
from .rules import rank_in, same_quant
from .spec import Form, OpSpec, TypeCase, arg, cases, opt

_DATA = (C.TENSOR_FLOAT16, C.TENSOR_FLOAT32, C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_INT32)


def _rank(operand):
    """Known rank of a tensor operand, or None."""
    return None if operand is None or operand.type.rank is None else operand.type.rank


def _dims_fit(dims: tuple, expected: tuple) -> bool:
    """Declared `dims` (0 = unknown, empty = unknown rank) fit `expected` (None entries = anything)."""
    if not dims:
        return True
    return len(dims) == len(expected) and all(d == 0 or e is None or d == e for d, e in zip(dims, expected))


def _same_rank(a: str, b: str, delta: int = 0):
    """rank(b) == rank(a) + delta when both are known."""
    def rule(v):
        for x in v.inputs(a) + v.outputs(a):
            for y in v.inputs(b) + v.outputs(b):
                rx, ry = _rank(x), _rank(y)
                if rx is not None and ry is not None and ry != rx + delta:
                    yield f"{b} has rank {ry}, expected rank of {a} ({rx}){f' + {delta}' if delta else ''}"
    return rule


def _const_in(name: str, allowed, what: str):
    """A constant scalar argument must be one of `allowed` (a set or a function of the view)."""
    def rule(v):
        value = v.const(name)
        ok = allowed(v) if callable(allowed) else allowed
        if value is not None and ok is not None and int(value) not in ok:
            yield f"{name} {value} {what}"
    return rule


# -- FILL, RANK (feature level 4) --------------------------------------------------

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


# -- BATCH_MATMUL, PACK (feature level 6) -------------------------------------------

def _infer_batch_matmul(v):
    """[batch..., rows of adj(x), columns of adj(y)]; the batch dimensions broadcast."""
    x, y = v.dims("x"), v.dims("y")
    if x is None or y is None or len(x) < 2 or len(y) < 2:
        return {"output": None}
    adj = [v.const(n) if v.has(n) else False for n in ("adj_x", "adj_y")]
    rows = 0 if adj[0] is None else x[-1] if adj[0] else x[-2]
    cols = 0 if adj[1] is None else y[-2] if adj[1] else y[-1]
    return {"output": broadcast_shapes(x[:-2], y[:-2]) + (rows, cols)}


register(OpSpec(
    code=Op.BATCH_MATMUL,
    forms=[Form("default", [arg("x", "T"), arg("y", "T"), opt("adj_x", C.BOOL), opt("adj_y", C.BOOL)],
                [arg("output", "T")])],
    # the NNAPI docs list no TENSOR_QUANT8_ASYMM here, only the signed variant
    type_cases=cases(6, "T", C.TENSOR_FLOAT16, C.TENSOR_FLOAT32, C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_INT32),
    rules=[rank_in("x", (2, 3, 4)), rank_in("y", (2, 3, 4)), rank_in("output", (2, 3, 4)),
           _same_rank("x", "y"), _same_rank("x", "output")],
    doc="output[..., :, :] = adj(x)[..., :, :] @ adj(y)[..., :, :], batch dimensions broadcast",
    infer=_infer_batch_matmul,
))


def _pack_axes(v):
    """PACK's axis may be 0 .. rank(inputs) (inclusive)."""
    r = next((_rank(o) for o in v.inputs("inputs") if _rank(o) is not None), None)
    return None if r is None else set(range(r + 1))


def _pack_shapes(v):
    dims = [o.type.dimensions for o in v.inputs("inputs") if o.type.dimensions]
    for d in dims[1:]:
        if not _dims_fit(d, tuple(x or None for x in dims[0])):
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
    type_cases=cases(6, "T", *_DATA),
    rules=[same_quant("inputs", "output"), _pack_shapes,
           _same_rank("inputs", "output", 1), _const_in("axis", _pack_axes, "is out of range [0, rank(inputs)]"),
           _pack_output],
    doc="output = the inputs stacked along a new dimension `axis`",
    infer=_infer_pack,
))


# -- MIRROR_PAD, REVERSE (feature level 7) -------------------------------------------

def _paddings_shape(v):
    pads, inp = v.input("paddings"), v.input("input")
    if pads is not None and not _dims_fit(pads.type.dimensions, (_rank(inp), 2)):
        yield f"paddings must have shape [rank(input), 2], got {list(pads.type.dimensions)}"


def _infer_mirror_pad(v):
    """Each dimension grows by its two paddings (when the paddings are constant)."""
    d, pads = v.dims("input"), const_ints(v, "paddings")
    if d is None:
        return {"output": None}
    if pads is None or len(pads) != 2 * len(d) or min(pads, default=0) < 0:
        return {"output": (0,) * len(d)}
    return {"output": tuple(n + b + a if n else 0 for n, b, a in zip(d, pads[0::2], pads[1::2]))}


register(OpSpec(
    code=Op.MIRROR_PAD,
    forms=[Form("default", [arg("input", "T"), arg("paddings", C.TENSOR_INT32), arg("mode", C.INT32)],
                [arg("output", "T")])],
    type_cases=cases(7, "T", *_DATA),
    rules=[same_quant("input", "output"), _same_rank("input", "output"), _paddings_shape,
           _const_in("mode", {0, 1}, "is not a mirror pad mode (0 REFLECT, 1 SYMMETRIC)")],
    doc="output = input padded with its mirror image (REFLECT excludes the edge, SYMMETRIC repeats it)",
    infer=_infer_mirror_pad,
    value_dependent={"output": "its extents grow by the values of paddings, unknown when fed at run time"},
))


def _reverse_axis(v):
    axis = v.input("axis")
    if axis is not None and not _dims_fit(axis.type.dimensions, (1,)):
        yield f"axis must have shape [1], got {list(axis.type.dimensions)}"
    value, r = v.const("axis"), _rank(v.input("input"))
    if value is not None and r is not None and value.size == 1 and not 0 <= int(value.reshape(-1)[0]) < r:
        yield f"axis {int(value.reshape(-1)[0])} is out of range [0, {r})"


register(OpSpec(
    code=Op.REVERSE,
    forms=[Form("default", [arg("input", "T"), arg("axis", C.TENSOR_INT32)], [arg("output", "T")])],
    type_cases=cases(7, "T", *_DATA),
    rules=[same_quant("input", "output"), rank_in("input", range(1, 9)), _same_rank("input", "output"),
           _reverse_axis],
    doc="output = input reversed along the one dimension given by axis",
    infer=infer_same_as(),
))

"""Helpers shared by the shape, data-movement, reduction and lookup converters
(shape.py, slicing.py, folded.py, reduce.py, lookup.py): static values and
shapes, axis handling, constant folding and the small emission patterns
(slice, concatenate, tile, gather) the lowerings are built from; naming, temporaries and
RESHAPE are in common.py."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...folding import folder as _shared_folder
from ...registry import Reason, Unsupported
from ...typed_moves import gather_const  # noqa: F401  (the movement converters import it from here)
from ...context import stored
from .common import adopt, name, otype, reshape, temp

# TFLite tensor types the context maps to NNAPI (others, e.g. INT4, read as raw bytes and must not pass)
_KNOWN_TYPES = {"FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "BOOL", "INT16", "INT8"}


def check_types(ctx, node) -> None:
    """Reject tensors whose TFLite type the reader could only keep as raw bytes."""
    for i in list(node.inputs) + list(node.outputs):
        if i < 0:
            continue
        t = ctx.tensor(i)
        kind = getattr(t, "tflite_type", None)
        if kind is not None and kind not in _KNOWN_TYPES:
            raise Unsupported(Reason.OPERAND_TYPE, f"tensor {t.name!r} has type {kind}, which NNAPI has no type for")


# -- static shapes and values -----------------------------------------------------------

def static_shape(ctx, i: int) -> tuple:
    """The fully known shape of tensor i (rank 0 reads as [1]), or DYNAMIC_SHAPE."""
    t = ctx.tensor(i)
    shape = ctx.shape(i)
    if t.shape is None or 0 in shape:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"tensor {t.name!r} has no static shape ({t.describe()})")
    return shape


def true_rank(ctx, i: int) -> int:
    """The source rank (0 for scalars, which NNAPI holds as [1])."""
    t = ctx.tensor(i)
    if t.shape is None:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"tensor {t.name!r} has unknown rank")
    return len(t.shape)


def folder(*ops: str):
    """Register a TFLite folder with the conversion-wide constant folding (converters/folding.py)."""
    return _shared_folder("tflite", *ops)


def static_value(ctx, i: int, what: str) -> np.ndarray:
    """The value of tensor i when known before run time: a constant of the model, or the output
    of a node folded before conversion (SHAPE, RANK, RANGE, FILL, ONE_HOT, DEQUANTIZE, ...)."""
    if i < 0:
        raise Unsupported(Reason.INVALID, f"{what} is absent")
    t = ctx.tensor(i)
    if t.is_constant:
        return np.asarray(t.data)
    raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{what} tensor {t.name!r} must be a constant")


def pairs(ctx, i: int, what: str) -> np.ndarray:
    """A constant [n, 2] tensor (paddings, crops) as int64 rows, or Unsupported naming its shape."""
    value = static_value(ctx, i, what)
    if value.ndim != 2 or value.shape[1] != 2:
        raise Unsupported(Reason.INVALID, f"{what} tensor {ctx.tensor(i).name!r} has shape {list(value.shape)}, "
                                          f"expected [n, 2]")
    return value.astype(np.int64)


def int_list(ctx, i: int, what: str) -> list[int]:
    return [int(v) for v in static_value(ctx, i, what).reshape(-1)]


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise Unsupported(Reason.INVALID, f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def reject_attr(node, key: str, ok, why: str) -> None:
    """Unsupported(ATTRIBUTE) when attribute `key` is present and not `ok(value)`."""
    if key in node.attrs and node.attrs[key] is not None and not ok(node.attrs[key]):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.op} {key}={node.attrs[key]!r}: {why}")


# -- constants ------------------------------------------------------------------------

def constant_type(ctx, t: int, array: np.ndarray) -> tuple[OperandType, np.ndarray]:
    """(NNAPI type, data) for a folded value of tensor t (int64 -> int32 when it fits)."""
    array = np.asarray(array)
    dims = array.shape or (1,)
    if array.dtype == np.int64:
        if array.size and np.abs(array).max() >= 2 ** 31:
            raise Unsupported(Reason.OPERAND_TYPE, f"tensor {name(ctx, t)}: int64 values do not fit int32")
        return OperandType(C.TENSOR_INT32, dims), array.astype(np.int32).reshape(dims)
    ttype, cq = ctx.nnapi_type(t)
    if cq is not None:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"tensor {name(ctx, t)} is per-channel")
    ttype = OperandType(ttype.code, dims, ttype.scale, ttype.zero_point)
    return ttype, stored(ttype.code, array).astype(ttype.dtype).reshape(dims)


def constant_output(ctx, t: int, array: np.ndarray) -> None:
    """Fold output tensor t into a constant operand: no operation is emitted, consumers read the
    constant. A graph output cannot be a constant in NNAPI, so there one copy is emitted."""
    ttype, data = constant_type(ctx, t, array)
    if t not in ctx.graph.outputs:
        idx = ctx.model.add_operand(ttype, name=ctx.tensor(t).name)
        ctx.model.set_operand_value(idx, data)
        adopt(ctx, t, idx)
        return
    value = ctx.const(data, ttype.code, f"{ctx.tensor(t).name}/folded", ttype.scale, ttype.zero_point)
    out = ctx.bind_output(t, ttype)
    if ttype.code == C.TENSOR_INT32:  # RESHAPE takes int32 only from level 6, ADD from level 4
        zero = ctx.const(np.zeros(1, np.int32), C.TENSOR_INT32, f"{ctx.tensor(t).name}/zero")
        ctx.emit_form(Op.ADD, "default", [out], input1=value, input2=zero, fuse=ctx.i32(0))
    else:
        reshape(ctx, value, out, data.shape)


# -- emission patterns ---------------------------------------------------------------------

def concat(ctx, parts: Sequence[int], axis: int, out: int) -> None:
    """CONCATENATION (int32 too: converters/typed_moves.py gives it its exact form)."""
    ctx.emit(Op.CONCATENATION, list(parts) + [ctx.i32(axis)], [out])


def strided_slice(ctx, x: int, out: int, begin, end, strides, end_mask: int = 0, shrink: int = 0,
                  int32_level: Optional[int] = None) -> None:
    """STRIDED_SLICE (level 2). It has no int32 form: for int32 tensors, `int32_level` names the level
    at which the caller's other emission takes over."""
    if int32_level is not None and otype(ctx, x).code == C.TENSOR_INT32:
        raise Unsupported(Reason.FEATURE_LEVEL, f"this slice of an int32 tensor needs NNAPI feature level "
                                                f"{int32_level}", int32_level)
    vec = lambda v: ctx.const(np.asarray(v, np.int32))  # noqa: E731
    ctx.emit_form(Op.STRIDED_SLICE, "default", [out], input=x, begin=vec(begin), end=vec(end), strides=vec(strides),
                  begin_mask=ctx.i32(0), end_mask=ctx.i32(end_mask), shrink_axis_mask=ctx.i32(shrink))


def slice_static(ctx, x: int, out: int, begin: Sequence[int], size: Sequence[int]) -> None:
    """x[begin : begin + size] (non-negative, in range): SLICE from level 3, else STRIDED_SLICE (level 2)."""
    if ctx.has(Op.SLICE):
        vec = lambda v: ctx.const(np.asarray(v, np.int32))  # noqa: E731
        ctx.emit_form(Op.SLICE, "default", [out], input=x, begin=vec(begin), size=vec(size))
    else:
        strided_slice(ctx, x, out, begin, [b + s for b, s in zip(begin, size)], [1] * len(begin),
                      int32_level=ctx.level_of(Op.SLICE))


def tile(ctx, like: int, x: int, shape: Sequence[int], multiples: Sequence[int], out: int) -> None:
    """np.tile(x, multiples) of a static-shape x: TILE from level 3, else one CONCATENATION of
    copies per repeated axis (level 1; exact, concatenation only moves values)."""
    if all(m == 1 for m in multiples):
        reshape(ctx, x, out, shape)  # nothing repeats: a copy
        return
    if ctx.has(Op.TILE):
        ctx.emit_form(Op.TILE, "default", [out], input=x, multiples=ctx.const(np.asarray(multiples, np.int32)))
        return
    if otype(ctx, x).code == C.TENSOR_INT32:
        ctx.require(Op.TILE, "TILE of an int32 tensor")
    if any(m < 1 for m in multiples):
        ctx.require(Op.TILE, "TILE with a zero multiple")
    shape = list(shape)
    axes = [a for a, m in enumerate(multiples) if m > 1]
    for k, a in enumerate(axes):
        shape[a] *= multiples[a]
        dst = out if k == len(axes) - 1 else temp(ctx, like, shape, f"tile{a}")
        concat(ctx, [x] * multiples[a], a, dst)
        x = dst

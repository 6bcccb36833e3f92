"""Values that NNAPI's data-movement operations cannot hold (RESHAPE, GATHER, TILE, CONCATENATION, TRANSPOSE,
slices, splits, ...), moved in a type they take:
- bool (no move takes TENSOR_BOOL8) as uint8 0/1 (scale 1, zero point 0): SELECT before, NOT_EQUAL 0 after;
  exact.
- int32 (CONCATENATION, STRIDED_SLICE, TRANSPOSE, SQUEEZE, ... take no TENSOR_INT32; ids and positions that
  were int64 in the model): CONCATENATION exactly as GATHER, MUL and ADD (feature level 4); the others as
  float32: CAST before and after, exact while |value| <= 2^24, which a note states.
These operations only copy values (PAD and SPACE_TO_BATCH_ND, which also write a fill value, are left out).
Both importers reach this through ConversionContext.emit, so every converter that moves a tensor gets it."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.ops import level_for

from .registry import Reason, Unsupported

MOVES = frozenset({Op.RESHAPE, Op.GATHER, Op.TILE, Op.CONCATENATION, Op.TRANSPOSE, Op.SLICE, Op.STRIDED_SLICE,
                   Op.SQUEEZE, Op.EXPAND_DIMS, Op.SPLIT, Op.BATCH_TO_SPACE_ND, Op.DEPTH_TO_SPACE,
                   Op.SPACE_TO_DEPTH, Op.REVERSE})
_B8, _I32, _U8, _F32 = C.TENSOR_BOOL8, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM, C.TENSOR_FLOAT32
FLOAT_EXACT = 2 ** 24  # every integer up to this magnitude is a float32
INT32_NOTE = (f"int32 values moved as float32 (NNAPI's {{op}} takes no TENSOR_INT32): exact while every "
              f"|value| <= {FLOAT_EXACT}")


def _moved_code(ctx, code: Op, i: int):
    """The code operand i moves as in `code` (None: it moves as it is): another when `code` never takes its
    type (one it takes from a later level stays a feature-level refusal)."""
    t = ctx.model.operands[i].type.code
    if t in (_B8, _I32) and level_for(code, T=t) is None:
        return _U8 if t == _B8 else _F32
    return None


def _data_inputs(code: Op, inputs: Sequence[int]) -> set:
    """Positions of the moved values: every input of CONCATENATION but its axis, else the first (the others
    are int32 parameters: shapes, perms, indices, axes)."""
    return set(range(len(inputs) - 1)) if code is Op.CONCATENATION else {0}


def needs_other_type(ctx, code: Op, inputs: Sequence[int], outputs: Sequence[int]) -> bool:
    """A move of bool or int32 values that the op never takes in that type."""
    if code not in MOVES:
        return False
    data = [inputs[k] for k in _data_inputs(code, inputs)] + list(outputs)
    return any(_moved_code(ctx, code, i) is not None for i in data if i >= 0)


def _moved_type(ctx, i: int, code) -> OperandType:
    opnd = ctx.model.operands[i]
    dims = tuple(opnd.type.dimensions)
    if code == _U8 and (not dims or not all(dims)):  # SELECT's constants take the full shape
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"bool operand {opnd.name!r} moves through uint8 0/1 (NNAPI's "
                                                f"data-movement operations take no TENSOR_BOOL8) and needs its "
                                                f"static shape, has {list(dims)}")
    return OperandType(code, dims, 1.0 if code == _U8 else 0.0, 0)


def _to(ctx, i: int, code) -> int:
    """Operand i in the moved type: a converted constant, or SELECT / CAST into a temporary."""
    model, opnd = ctx.model, ctx.model.operands[i]
    if opnd.is_constant and opnd.value is not None:
        values = np.asarray(opnd.value)
        if code == _U8:
            return ctx.const(values.astype(np.uint8), _U8, scale=1.0)
        return ctx.const(values.astype(np.float32), _F32)
    t = _moved_type(ctx, i, code)
    moved = ctx.temp(t, f"{opnd.name}/as_{'uint8' if code == _U8 else 'float32'}")
    if code == _U8:
        model.add_operation(Op.SELECT, [i, ctx.const(np.ones(t.dimensions, np.uint8), _U8, scale=1.0),
                                        ctx.const(np.zeros(t.dimensions, np.uint8), _U8, scale=1.0)], [moved])
    else:
        model.add_operation(Op.CAST, [i], [moved])
    return moved


def gather_const(ctx, x: int, axis: int, indices, out: int) -> None:
    """GATHER along axis by constant indices."""
    ctx.emit_form(Op.GATHER, "default", [out], input=x, axis=ctx.i32(axis),
                  indices=ctx.const(np.asarray(indices, np.int32)))


def concat_int32(ctx, parts: Sequence[int], axis: int, out: int) -> None:
    """NNAPI's CONCATENATION has no int32 form (the begin vector of a SLICE at a WHILE body's loop counter,
    Keras 3's recurrent layers): each part is gathered along axis to the output's extent (indices clamped into
    the part), multiplied by a 0/1 mask keeping its own span, and the terms added. Exact: one term of each sum is
    not zero. GATHER, MUL and ADD of int32 (level 4)."""
    ctx.require(Op.MUL, "int32 CONCATENATION (as GATHER, MUL and ADD)", T=_I32)
    dims = list(ctx.model.operands[out].type.dimensions)
    if any(len(ctx.model.operands[p].type.dimensions) != len(dims) for p in parts) or not 0 <= axis < len(dims):
        raise Unsupported(Reason.INVALID, f"CONCATENATION axis {axis} does not fit its operands' rank {len(dims)}")
    extents = [ctx.model.operands[p].type.dimensions[axis] for p in parts]
    if not all(dims) or not all(extents):
        raise Unsupported(Reason.DYNAMIC_SHAPE, "an int32 CONCATENATION needs static extents (NNAPI has no int32 "
                                                "CONCATENATION; it is built from GATHER, MUL and ADD)")
    if len(parts) == 1:
        gather_const(ctx, parts[0], axis, np.arange(extents[0]), out)
        return
    otype_ = OperandType(_I32, tuple(dims))
    total, start, acc = sum(extents), 0, None
    for k, (p, n) in enumerate(zip(parts, extents)):
        span = np.arange(total) - start  # the output positions, counted from this part's first
        gathered, term = ctx.temp(otype_, f"concat_int32/part{k}"), ctx.temp(otype_, f"concat_int32/term{k}")
        gather_const(ctx, p, axis, np.clip(span, 0, n - 1), gathered)
        mask_shape = [1] * len(dims)
        mask_shape[axis] = total
        mask = ((span >= 0) & (span < n)).astype(np.int32).reshape(mask_shape)
        ctx.emit_form(Op.MUL, "default", [term], input1=gathered, input2=ctx.const(mask), fuse=ctx.i32(0))
        if acc is not None:
            summed = out if k == len(parts) - 1 else ctx.temp(otype_, f"concat_int32/sum{k}")
            ctx.emit_form(Op.ADD, "default", [summed], input1=acc, input2=term, fuse=ctx.i32(0))
            term = summed
        acc = term
        start += n



def emit_in_other_type(ctx, code: Op, inputs: Sequence[int], outputs: Sequence[int]) -> int:
    """Emit `code` with each bool / int32 operand replaced by its moved copy; returns the move's index
    (an int32 CONCATENATION: its exact form, returning the last operation's index)."""
    model = ctx.model
    if code is Op.CONCATENATION and model.operands[outputs[0]].type.code == _I32:
        axis = model.operands[inputs[-1]].value
        concat_int32(ctx, list(inputs[:-1]), int(np.asarray(axis).ravel()[0]), outputs[0])
        return len(model.operations) - 1
    data = _data_inputs(code, inputs)
    moved_in = [i if k not in data or i < 0 or _moved_code(ctx, code, i) is None
                else _to(ctx, i, _moved_code(ctx, code, i)) for k, i in enumerate(inputs)]
    moved_out, back = [], []
    for o in outputs:
        c = _moved_code(ctx, code, o)
        if c is None:
            moved_out.append(o)
            continue
        moved = ctx.temp(_moved_type(ctx, o, c), f"{model.operands[o].name}/as_{'uint8' if c == _U8 else 'float32'}")
        moved_out.append(moved)
        back.append((moved, o, c))
    index = model.add_operation(code, moved_in, moved_out)
    for moved, o, c in back:
        if c == _U8:
            model.add_operation(Op.NOT_EQUAL, [moved, ctx.const(np.zeros(1, np.uint8), _U8, scale=1.0)], [o])
        else:
            model.add_operation(Op.CAST, [moved], [o])
    if any(c == _F32 for *_, c in back):
        note = INT32_NOTE.format(op=code.name)
        if note not in ctx.notes:
            ctx.notes.append(note)
    return index

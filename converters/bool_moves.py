"""Bool tensors through NNAPI's data-movement operations, none of which takes TENSOR_BOOL8 (RESHAPE,
GATHER, TILE, CONCATENATION, TRANSPOSE, slices, splits, ...): the values move as uint8 0/1 (scale 1,
zero point 0), SELECT before and NOT_EQUAL 0 after. Exact, since these operations only copy values
(PAD and SPACE_TO_BATCH_ND, which also write a fill value, are left out). Both importers reach it through
ConversionContext.emit, so every converter that moves a tensor gets it."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.ops import level_for

from .registry import Reason, Unsupported

MOVES = frozenset({Op.RESHAPE, Op.GATHER, Op.TILE, Op.CONCATENATION, Op.TRANSPOSE, Op.SLICE, Op.STRIDED_SLICE,
                   Op.SQUEEZE, Op.EXPAND_DIMS, Op.SPLIT, Op.BATCH_TO_SPACE_ND, Op.DEPTH_TO_SPACE,
                   Op.SPACE_TO_DEPTH, Op.REVERSE})
_B8, _U8 = C.TENSOR_BOOL8, C.TENSOR_QUANT8_ASYMM


def needs_uint8(model, code: Op, inputs: Sequence[int], outputs: Sequence[int]) -> bool:
    """A move of bool operands that the op's spec does not take as bool."""
    return code in MOVES and level_for(code, T=_B8) is None and \
        any(model.operands[i].type.code == _B8 for i in list(inputs) + list(outputs) if i >= 0)


def _as_uint8_type(ctx, i: int) -> OperandType:
    opnd = ctx.model.operands[i]
    dims = tuple(opnd.type.dimensions)
    if not dims or not all(dims):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"bool operand {opnd.name!r} moves through uint8 0/1 (NNAPI's "
                                                f"data-movement operations take no TENSOR_BOOL8) and needs its "
                                                f"static shape, has {list(dims)}")
    return OperandType(_U8, dims, 1.0, 0)


def emit_via_uint8(ctx, code: Op, inputs: Sequence[int], outputs: Sequence[int]) -> int:
    """Emit `code` with each bool operand replaced by its uint8 0/1 copy; returns the move's index."""
    model = ctx.model
    moved_in = []
    for i in inputs:
        opnd = model.operands[i] if i >= 0 else None
        if opnd is None or opnd.type.code != _B8:
            moved_in.append(i)
        elif opnd.is_constant and opnd.value is not None:
            moved_in.append(ctx.const(np.asarray(opnd.value).astype(np.uint8), _U8, scale=1.0, zero_point=0))
        else:
            t = _as_uint8_type(ctx, i)
            u8 = ctx.temp(t, f"{opnd.name}/as_uint8")
            model.add_operation(Op.SELECT, [i, ctx.const(np.ones(t.dimensions, np.uint8), _U8, scale=1.0),
                                            ctx.const(np.zeros(t.dimensions, np.uint8), _U8, scale=1.0)], [u8])
            moved_in.append(u8)
    moved_out, back = [], []
    for o in outputs:
        if model.operands[o].type.code != _B8:
            moved_out.append(o)
            continue
        u8 = ctx.temp(_as_uint8_type(ctx, o), f"{model.operands[o].name}/as_uint8")
        moved_out.append(u8)
        back.append((u8, o))
    index = model.add_operation(code, moved_in, moved_out)
    for u8, o in back:
        model.add_operation(Op.NOT_EQUAL, [u8, ctx.const(np.zeros(1, np.uint8), _U8, scale=1.0)], [o])
    return index

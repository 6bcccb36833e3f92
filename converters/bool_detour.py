"""Data movement of bool tensors, shared by both importers: NNAPI's RESHAPE, GATHER and TILE take no
TENSOR_BOOL8, so the values go through uint8 0/1 (SELECT of constant 1 and 0, of the input's static shape),
are moved, and come back as bool (NOT_EQUAL 0). Exact; feature level 3, where TENSOR_BOOL8 begins."""
from __future__ import annotations

from typing import Callable

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from .registry import Reason, Unsupported

_Q8 = dict(code=C.TENSOR_QUANT8_ASYMM, scale=1.0, zero_point=0)


def via_uint8(ctx, x: int, out: int, move: Callable[[int, int], None]) -> None:
    """Bool operand `out` from bool operand `x` by move(uint8 stand-in of x, uint8 stand-in of out)."""
    dims = tuple(ctx.model.operands[x].type.dimensions)
    if not dims or not all(dims):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"moving bool operand {ctx.model.operands[x].name!r} needs its "
                                                f"static shape, has {list(dims)}")
    as_u8 = ctx.temp(OperandType(_Q8["code"], dims, 1.0, 0), f"{ctx.model.operands[x].name}/as_uint8")
    ctx.emit_form(Op.SELECT, "default", [as_u8], condition=x, input1=ctx.const(np.ones(dims, np.uint8), **_Q8),
                  input2=ctx.const(np.zeros(dims, np.uint8), **_Q8))
    moved = ctx.temp(OperandType(_Q8["code"], tuple(ctx.model.operands[out].type.dimensions), 1.0, 0),
                     f"{ctx.model.operands[out].name}/as_uint8")
    move(as_u8, moved)
    ctx.emit_form(Op.NOT_EQUAL, "default", [out], input1=moved, input2=ctx.const(np.zeros(1, np.uint8), **_Q8))

"""Helpers every TFLite converter family uses (the family helpers movement_util.py, nn_common.py,
unary_emit.py and recurrent_common.py build on these): naming a tensor in a message, operand
types, temporaries shaped like a source tensor, RESHAPE to a constant shape, and constants in
the context's stored form. Registers nothing."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported


def name(ctx, i: int) -> str:
    """Source tensor i's name as messages quote it."""
    return repr(ctx.tensor(i).name)


def otype(ctx, operand: int) -> OperandType:
    """The type of NNAPI operand `operand`."""
    return ctx.model.operands[operand].type


def temp(ctx, like: int, shape: Sequence[int], suffix: str) -> int:
    """An intermediate operand with source tensor `like`'s type and quantization and the given shape."""
    return ctx.temp_like(like, suffix, dimensions=tuple(int(d) for d in shape) or (1,))


def reshape(ctx, x: int, out: int, shape: Sequence[int], int32_level: Optional[int] = None) -> None:
    """RESHAPE to a constant shape. It takes int32 only from a later level (the spec's type cases): for int32 tensors below it,
    `int32_level` names the level at which the caller's other emission takes over."""
    if int32_level is not None and otype(ctx, x).code == C.TENSOR_INT32 and not ctx.has(Op.RESHAPE, T=C.TENSOR_INT32):
        raise Unsupported(Reason.FEATURE_LEVEL, f"this reshape of an int32 tensor needs NNAPI feature level "
                                                f"{int32_level}", int32_level)
    if list(shape).count(0) == 1:  # one extent the source leaves unknown (a dynamic batch): RESHAPE infers it
        shape = [-1 if d == 0 else d for d in shape]
    ctx.emit_form(Op.RESHAPE, "default", [out], input=x, shape=ctx.const(np.asarray(shape, np.int32)))


def require_arity(node, inputs: int, outputs: int = 0, exact: bool = False) -> None:
    """Unsupported(INVALID) unless node has at least (`exact`: exactly) `inputs` input slots and `outputs`
    outputs (optional ones may be -1), so a malformed node is refused by name before any slot is read."""
    n_in, n_out = len(node.inputs), len(node.outputs)
    if n_in < inputs or n_out < outputs or (exact and n_in != inputs):
        raise Unsupported(Reason.INVALID, f"{node.label()} has {n_in} inputs and {n_out} outputs; {node.op} takes "
                                          f"{'' if exact else 'at least '}{inputs} inputs"
                                          + (f" and {outputs} outputs" if outputs else ""))


def adopt(ctx, t: int, operand: int) -> int:
    """Make `operand` the NNAPI operand of source tensor t (consumers' ctx.operand(t) returns it)."""
    ctx.operand_of[t] = operand
    ctx.tensor_of[operand] = t
    return operand

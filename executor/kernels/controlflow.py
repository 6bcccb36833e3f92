"""IF and WHILE: run referenced subgraphs (NNAPI feature level 4).

Values cross a subgraph boundary re-typed as the subgraph's own operands (same
code and quantization; the subgraph may leave dimensions unknown), keeping the
actual shape of the array. WHILE stops with MISSED_DEADLINE_TRANSIENT once it
has run longer than the execution's loop timeout.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

from nnapi.codes import OperationCode as Op, ResultCode

from ..registry import kernel
from ..runtime import Value


def _referenced_model(ctx, k: int):
    """The model of SUBGRAPH input `k`."""
    model = ctx.model.operands[ctx.step.inputs[k]].subgraph
    if model is None:
        ctx.fail(f"input {k} references no subgraph")
    return model


def _as_inputs_of(sub, values: Sequence[Optional[Value]]) -> list[Optional[Value]]:
    """Re-type `values` as the input operands of `sub` (a compiled subgraph), keeping each array's actual
    shape (the typed shapes are made once per shape: loops repeat them)."""
    model = sub.model
    out = []
    for idx, v in zip(model.inputs, values):
        if v is None:
            out.append(None)
            continue
        opnd = model.operands[idx]
        t = sub._shaped_type(idx, v.array.shape) if opnd.type.is_tensor else opnd.type
        out.append(Value(v.array, t, opnd.channel_quant or v.channel_quant))
    return out


def _run(ctx, model, values) -> list[Value]:
    sub = ctx.compiled.subgraph(model)
    outs = sub.run_values(_as_inputs_of(sub, values), ctx.state)
    for k, v in enumerate(outs):
        if v is None:
            ctx.fail(f"the referenced subgraph produced no value for its output {k}")
    return outs


def _truth(ctx, v: Optional[Value], what: str) -> bool:
    """The boolean held by a one-element TENSOR_BOOL8 value."""
    if v is None or v.array.size != 1:
        ctx.fail(f"{what} must hold exactly one boolean, got shape {None if v is None else list(v.shape)}")
    return bool(v.array.reshape(-1)[0])


@kernel(Op.IF)
def if_(ctx):
    branch = _referenced_model(ctx, 1 if _truth(ctx, ctx.inputs[0], "the condition") else 2)
    return [v.array for v in _run(ctx, branch, ctx.inputs[3:])]


@kernel(Op.WHILE)
def while_(ctx):
    cond, body = _referenced_model(ctx, 0), _referenced_model(ctx, 1)
    values = list(ctx.inputs[2:])  # input-output, then state-only, then input-only values
    carried = len(body.outputs)    # the body returns the input-output and state-only values
    timeout = ctx.state.loop_timeout_s
    start = time.monotonic()
    while _truth(ctx, _run(ctx, cond, values)[0], "the condition subgraph's output"):
        values[:carried] = _run(ctx, body, values)
        if time.monotonic() - start > timeout:
            ctx.fail(f"the loop ran longer than the loop timeout of {timeout:g} s",
                     code=ResultCode.MISSED_DEADLINE_TRANSIENT)
    return [v.array for v in values[:len(ctx.outputs)]]

"""IF and WHILE: run referenced subgraphs (NNAPI feature level 4).

Values cross a subgraph boundary re-typed as the subgraph's own operands (same
code and quantization; the subgraph may leave dimensions unknown), keeping the
actual shape of the array. WHILE stops with MISSED_DEADLINE_TRANSIENT once it
has run longer than the execution's loop timeout.

A loop runs its condition and body many times on the same shapes, so the
preparers resolve the compiled subgraphs once and each boundary (`Entry`)
keeps its input operands' facts and the shaped types it has made; the plain
kernels build the same objects on every call.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

from nnapi.codes import OperationCode as Op, ResultCode

from ..registry import kernel, prepare
from ..runtime import Value

# shaped types kept per subgraph input (dynamic shapes could otherwise grow the cache without end)
MAX_SHAPES = 64


class Entry:
    """Runs one compiled subgraph on Values re-typed as its input operands (each array keeps its actual
    shape; the typed shapes are made once per shape: loops repeat them)."""

    __slots__ = ("sub", "slots")

    def __init__(self, sub):
        self.sub = sub
        operands = sub.model.operands
        # per input: (operand index, is a tensor, declared type, channel quantization, shape -> type)
        self.slots = tuple((idx, operands[idx].type.is_tensor, operands[idx].type, operands[idx].channel_quant, {})
                           for idx in sub.model.inputs)

    def values(self, values: Sequence[Optional[Value]]) -> list[Optional[Value]]:
        out = []
        for (idx, tensor, otype, cq, types), v in zip(self.slots, values):
            if v is None:
                out.append(None)
                continue
            a = v.array
            if tensor:
                otype = types.get(a.shape)
                if otype is None:
                    if len(types) >= MAX_SHAPES:
                        types.clear()
                    otype = types[a.shape] = self.sub._shaped_type(idx, a.shape)
            out.append(Value(a, otype, cq or v.channel_quant))
        return out

    def run(self, ctx, values: Sequence[Optional[Value]]) -> list[Value]:
        outs = self.sub.run_values(self.values(values), ctx.state)
        if None in outs:
            ctx.fail(f"the referenced subgraph produced no value for its output {outs.index(None)}")
        return outs


def _referenced_model(ctx, name: str):
    """The model the SUBGRAPH argument `name` references, or None."""
    operand = ctx.step.bound.operand(name)
    return None if operand is None else operand.subgraph


def _truth(ctx, v: Optional[Value], what: str) -> bool:
    """The boolean held by a one-element TENSOR_BOOL8 value."""
    if v is None or v.array.size != 1:
        ctx.fail(f"{what} must hold exactly one boolean, got shape {None if v is None else list(v.shape)}")
    return bool(v.array.item())


class If:
    """Run the branch the condition selects on the inputs after it; its outputs are the IF's outputs."""

    def __init__(self, compiled, then_model, else_model):
        self.then, self.else_ = Entry(compiled.subgraph(then_model)), Entry(compiled.subgraph(else_model))

    def __call__(self, ctx):
        args = ctx.args
        branch = self.then if _truth(ctx, args.condition, "the condition") else self.else_
        return [v.array for v in branch.run(ctx, args.get("inputs", []))]


class While:
    """`inputs`: input-output, then state-only, then input-only values; the body returns the first two
    groups, the outputs are the input-output ones."""

    def __init__(self, compiled, cond_model, body_model, outputs: int):
        self.cond, self.body = Entry(compiled.subgraph(cond_model)), Entry(compiled.subgraph(body_model))
        self.carried = len(body_model.outputs)
        self.outputs = outputs

    def __call__(self, ctx):
        cond, body, carried = self.cond, self.body, self.carried
        values = list(ctx.args.inputs)
        timeout = ctx.state.loop_timeout_s
        start = time.monotonic()
        while _truth(ctx, cond.run(ctx, values)[0], "the condition subgraph's output"):
            values[:carried] = body.run(ctx, values)
            if time.monotonic() - start > timeout:
                ctx.fail(f"the loop ran longer than the loop timeout of {timeout:g} s",
                         code=ResultCode.MISSED_DEADLINE_TRANSIENT)
        return [v.array for v in values[:self.outputs]]


def _models(ctx, *names):
    """The models the SUBGRAPH arguments `names` reference; the kernel fails when one is missing, a
    preparer gives up."""
    models = [_referenced_model(ctx, name) for name in names]
    for name, model in zip(names, models):
        if model is None:
            ctx.fail(f"{name} references no subgraph")
    return models


@kernel(Op.IF)
def if_(ctx):
    return If(ctx.compiled, *_models(ctx, "then_model", "else_model"))(ctx)


@kernel(Op.WHILE)
def while_(ctx):
    return While(ctx.compiled, *_models(ctx, "cond_model", "body_model"), len(ctx.outputs))(ctx)


@prepare(Op.IF)
def prepare_if(pctx):
    return If(pctx.compiled, *_models(pctx, "then_model", "else_model"))


@prepare(Op.WHILE)
def prepare_while(pctx):
    return While(pctx.compiled, *_models(pctx, "cond_model", "body_model"), len(pctx.outputs))

"""Broadcasting binary arithmetic: ADD, SUB, MUL, DIV."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .base import Form, OpSpec, TypeCase, arg, rank_at_most

_ARGS = [arg("input1", "T"), arg("input2", "T"), arg("fuse", C.INT32)]


def broadcast_shape(v, a="input1", b="input2", out="output"):
    """The inputs broadcast against each other (numpy rules, aligned from the last dimension) and the
    output has the broadcast shape, for every extent that is known (0 = unknown, empty = unknown rank)."""
    x, y, o = v.input(a), v.input(b), v.output(out)
    if x is None or y is None or not x.type.dimensions or not y.type.dimensions:
        return
    dx, dy = x.type.dimensions, y.type.dimensions
    rank = max(len(dx), len(dy))
    dx, dy = (1,) * (rank - len(dx)) + dx, (1,) * (rank - len(dy)) + dy
    expected = []
    for p, q in zip(dx, dy):
        if p and q and p != q and 1 not in (p, q):
            yield f"{a} {list(x.type.dimensions)} and {b} {list(y.type.dimensions)} do not broadcast"
            return
        expected.append(0 if not p or not q else max(p, q) if 1 in (p, q) else p)
    if o is None or not o.type.dimensions:
        return
    do = o.type.dimensions
    if len(do) != rank or any(e and d and e != d for e, d in zip(expected, do)):
        yield (f"{out} has shape {list(do)}, the broadcast shape of {a} and {b} is "
               f"{['?' if not e else e for e in expected]}")


def _binary(code, cases, max_rank=4, doc=""):
    return register(OpSpec(
        code=code,
        forms=[Form("default", _ARGS, [arg("output", "T")])],
        type_cases=cases,
        rules=[rank_at_most("input1", max_rank), rank_at_most("input2", max_rank), broadcast_shape],
        doc=doc,
    ))


_binary(Op.ADD, [TypeCase(1, T=C.TENSOR_FLOAT32), TypeCase(1, T=C.TENSOR_QUANT8_ASYMM),
                 TypeCase(3, T=C.TENSOR_FLOAT16), TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED),
                 TypeCase(4, T=C.TENSOR_INT32)],
        doc="output = fuse(input1 + input2), numpy-style broadcasting")
_binary(Op.MUL, [TypeCase(1, T=C.TENSOR_FLOAT32), TypeCase(1, T=C.TENSOR_QUANT8_ASYMM),
                 TypeCase(3, T=C.TENSOR_FLOAT16), TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED),
                 TypeCase(4, T=C.TENSOR_INT32)],
        doc="output = fuse(input1 * input2)")
_binary(Op.SUB, [TypeCase(2, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_QUANT8_ASYMM),
                 TypeCase(3, T=C.TENSOR_FLOAT16), TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED),
                 TypeCase(4, T=C.TENSOR_INT32)],
        doc="output = fuse(input1 - input2)")
_binary(Op.DIV, [TypeCase(2, T=C.TENSOR_FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16),
                 TypeCase(4, T=C.TENSOR_INT32)],
        doc="output = fuse(input1 / input2); int32 rounds toward negative infinity")

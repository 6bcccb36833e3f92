"""Broadcasting binary arithmetic: ADD, SUB, MUL, DIV."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import infer_broadcast
from .rules import broadcast_output, rank_at_most
from .spec import Form, OpSpec, TypeCase, arg

_ARGS = [arg("input1", "T"), arg("input2", "T"), arg("fuse", C.INT32)]


def _binary(code, cases, max_rank=4, doc=""):
    return register(OpSpec(
        code=code,
        forms=[Form("default", _ARGS, [arg("output", "T")])],
        type_cases=cases,
        rules=[rank_at_most("input1", max_rank), rank_at_most("input2", max_rank),
               broadcast_output("input1", "input2")],
        infer=infer_broadcast("input1", "input2"),
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

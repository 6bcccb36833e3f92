"""MAXIMUM, MINIMUM, comparisons, LOGICAL_AND/OR/NOT and SELECT (broadcasting where NNAPI allows)."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import infer_broadcast, infer_same_as
from .rules import broadcast_output, same_shape
from .spec import Form, OpSpec, OpView, Shape, TypeCase, arg
from .unary import F16, F32, I32, Q8, Q8S, UNARY_FORM

B8 = C.TENSOR_BOOL8
_NUMERIC = [TypeCase(3, T=F32), TypeCase(3, T=F16), TypeCase(3, T=I32), TypeCase(3, T=Q8), TypeCase(4, T=Q8S)]
_BINARY = [arg("input1", "T"), arg("input2", "T")]
# the inputs broadcast (any rank: "Supported tensor rank: from 1") and the output has their broadcast shape
_BROADCAST = [broadcast_output("input1", "input2")]
_INFER_BROADCAST = infer_broadcast("input1", "input2")


def _common_shape(shapes) -> Shape:
    """The one shape of operands that must all have the same shape: the known rank and, per dimension,
    the extent any of them knows (0 when unknown or when they disagree; the same_shape rule reports it)."""
    known = [s for s in shapes if s is not None]
    if not known or any(len(s) != len(known[0]) for s in known):
        return None
    out = []
    for extents in zip(*known):
        seen = set(extents) - {0}
        out.append(seen.pop() if len(seen) == 1 else 0)
    return tuple(out)


def _infer_select(v: OpView) -> dict:
    return {"output": _common_shape([v.dims("condition"), v.dims("input1"), v.dims("input2")])}

for _code, _doc in ((Op.MAXIMUM, "max"), (Op.MINIMUM, "min")):
    register(OpSpec(
        code=_code, forms=[Form("default", _BINARY, [arg("output", "T")])],
        type_cases=_NUMERIC, rules=_BROADCAST, infer=_INFER_BROADCAST,
        doc=f"output = {_doc}(input1, input2), broadcasting; quantized output scale may differ",
    ))

for _code, _sym in ((Op.EQUAL, "=="), (Op.NOT_EQUAL, "!="), (Op.GREATER, ">"), (Op.GREATER_EQUAL, ">="),
                    (Op.LESS, "<"), (Op.LESS_EQUAL, "<=")):
    register(OpSpec(
        code=_code, forms=[Form("default", _BINARY, [arg("output", B8)])],
        type_cases=[TypeCase(3, T=B8)] + _NUMERIC, rules=_BROADCAST, infer=_INFER_BROADCAST,
        doc=f"output = input1 {_sym} input2, broadcasting; quantized inputs compare real values",
    ))

for _code, _doc in ((Op.LOGICAL_AND, "input1 && input2"), (Op.LOGICAL_OR, "input1 || input2")):
    register(OpSpec(code=_code, forms=[Form("default", _BINARY, [arg("output", "T")])],
                    type_cases=[TypeCase(3, T=B8)], rules=_BROADCAST, infer=_INFER_BROADCAST,
                    doc=f"output = {_doc}, broadcasting"))

register(OpSpec(code=Op.LOGICAL_NOT, forms=[UNARY_FORM], type_cases=[TypeCase(3, T=B8)],
                rules=[same_shape("input", "output")], infer=infer_same_as("input"), doc="output = !input"))

register(OpSpec(
    code=Op.SELECT,
    forms=[Form("default", [arg("condition", B8), arg("input1", "T"), arg("input2", "T")],
                [arg("output", "T")])],
    type_cases=_NUMERIC,
    rules=[same_shape("condition", "input1", "input2", "output")],
    infer=_infer_select,
    doc="output = condition ? input1 : input2 elementwise (same shapes); quantized inputs are "
        "requantized to the output's scale",
))

"""Elementwise unary math, CAST, QUANTIZE and DEQUANTIZE.

Also home of what this family's other spec modules (activation.py,
compare.py) share: the one-input form and the `unary` spec builder (the shape
rules `same_shape` and `broadcast_output` are in rules.py).
"""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import infer_broadcast, infer_same_as
from .rules import broadcast_output, rank_at_most, same_shape
from .spec import Form, OpSpec, TypeCase, arg, cases

F32, F16, I32 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32
Q8, Q8S = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED

UNARY_FORM = Form("default", [arg("input", "T")], [arg("output", "T")])


def unary(code, type_cases, rules=(), doc="", max_rank=None):
    """A one-input, same-type, same-shape elementwise operation (the output has the input's shape)."""
    base_rules = [same_shape("input", "output")]
    if max_rank:
        base_rules.append(rank_at_most("input", max_rank))
    return register(OpSpec(code=code, forms=[UNARY_FORM], type_cases=type_cases,
                           rules=base_rules + list(rules), infer=infer_same_as("input"), doc=doc))


_FLOATS = [TypeCase(3, T=F32), TypeCase(3, T=F16)]

unary(Op.FLOOR, [TypeCase(1, T=F32), TypeCase(3, T=F16)], max_rank=4, doc="output = floor(input)")
unary(Op.ABS, _FLOATS + [TypeCase(4, T=I32)], doc="output = |input|")
unary(Op.NEG, _FLOATS + [TypeCase(3, T=I32)], doc="output = -input")
unary(Op.EXP, _FLOATS, doc="output = exp(input)")
unary(Op.LOG, _FLOATS, doc="output = log(input)")
unary(Op.SIN, _FLOATS, doc="output = sin(input)")
unary(Op.SQRT, _FLOATS, doc="output = sqrt(input)")
unary(Op.RSQRT, _FLOATS + [TypeCase(7, T=Q8), TypeCase(7, T=Q8S)],
      doc="output = 1 / sqrt(input); quantized inputs (feature level 7) requantize to the output's scale")

register(OpSpec(
    code=Op.POW,
    forms=[Form("default", [arg("base", "T"), arg("exponent", "T")], [arg("output", "T")])],
    type_cases=_FLOATS,
    rules=[broadcast_output("base", "exponent")],
    infer=infer_broadcast("base", "exponent"),
    doc="output = base ** exponent, numpy-style broadcasting (output has the broadcast shape)",
))

# CAST: any pair among the four base types since level 3; identity casts of
# the other types since level 4. Quantized operands are cast as raw integers.
_CAST_BASE = (F16, F32, I32, Q8)
_CAST_IDENTITY_L4 = (C.TENSOR_BOOL8, C.TENSOR_QUANT16_ASYMM, C.TENSOR_QUANT16_SYMM, Q8S, C.TENSOR_QUANT8_SYMM)
register(OpSpec(
    code=Op.CAST,
    forms=[Form("default", [arg("input", "T")], [arg("output", "U")])],
    type_cases=[TypeCase(3, T=a, U=b) for a in _CAST_BASE for b in _CAST_BASE]
    + [TypeCase(4, T=c, U=c) for c in _CAST_IDENTITY_L4],
    rules=[same_shape("input", "output")],
    infer=infer_same_as("input"),
    doc="output = input converted to the output type (ignoring scale and zero point); "
        "float -> integer truncates toward zero and saturates",
))

register(OpSpec(
    code=Op.QUANTIZE,
    forms=[Form("default", [arg("input", "T")], [arg("output", "U")])],
    type_cases=cases(3, "T", F32, F16, U=Q8) + cases(4, "T", F32, F16, U=Q8S),
    rules=[same_shape("input", "output")],
    infer=infer_same_as("input"),
    doc="output = clamp(round(input / scale) + zeroPoint), rounding half away from zero",
))

register(OpSpec(
    code=Op.DEQUANTIZE,
    forms=[Form("default", [arg("input", "T")], [arg("output", "U")])],
    type_cases=[TypeCase(1, T=Q8, U=F32)]
    + [TypeCase(3, T=t, U=u) for t in (Q8, C.TENSOR_QUANT8_SYMM, C.TENSOR_QUANT8_SYMM_PER_CHANNEL)
       for u in (F32, F16)]
    + cases(4, "U", F32, F16, T=Q8S),
    rules=[same_shape("input", "output"), rank_at_most("input", 4)],
    infer=infer_same_as("input"),
    doc="output = (input - zeroPoint) * scale (per channel for TENSOR_QUANT8_SYMM_PER_CHANNEL)",
))
